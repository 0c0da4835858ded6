"""A streamed tool call with an event that is not JSON is neither decided nor completed.

An Anthropic ``tool_use`` block and a Chat Completions tool call arrive in pieces; the rewriter
holds them until the call is whole. When one of those pieces is not JSON, what the call is cannot
be known (the lost piece may hold more of its arguments, a ``timeout`` in seconds…): the held
events, that event and the rest of the stream go to the client as the upstream sent them, and the
record holds no decision, only a note. Found by feeding each stream a broken event in every
position: before, the Chat rewriter renamed a call on the arguments it had when the broken chunk
came, and gave the deltas after a broken first chunk a new id and an empty name. Through the
addon's hooks (``tests/harness``), over generated argument splits and breakage.
"""

from __future__ import annotations

import os
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import harness
from harness.fixtures import loaded  # noqa: F401  (pytest fixture)

EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
#: Each a foreign call the addon repairs when its events are whole (checked below).
ARGUMENTS = ['{"command": ["ls", "-la"]}', '{"command": ["bash", "-lc", "make test"]}']
#: Data that is not JSON: a cut-off object, a bare word, a JavaScript-style object.
BROKEN = [b'{"type": "content_block_delta", "index": 0', b"oops", b"{index: 0}"]


def pieces(text: str, cuts: list[int]) -> list[str]:
    at = sorted({c % (len(text) + 1) for c in cuts})
    return [text[a:b] for a, b in zip([0, *at], [*at, len(text)], strict=True)]


def anthropic_stream(fragments: list[str]) -> list[bytes]:
    def ev(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"

    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "m"}
    block = {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}}
    return [
        ev({"type": "message_start", "message": message}),
        ev({"type": "content_block_start", "index": 0, "content_block": block}),
        *(
            ev({"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": f}})
            for f in fragments
        ),
        ev({"type": "content_block_stop", "index": 0}),
        ev({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}),
        ev({"type": "message_stop"}),
    ]


def chat_stream(fragments: list[str]) -> list[bytes]:
    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"

    first = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "shell", "arguments": ""}}
    return [
        chunk({"role": "assistant", "tool_calls": [first]}),
        *(chunk({"tool_calls": [{"index": 0, "function": {"arguments": f}}]}) for f in fragments),
        chunk({}, finish="tool_calls"),
        b"data: [DONE]\n\n",
    ]


def run(loaded, dialect: str, events: list[bytes]) -> tuple[bytes, dict[str, Any]]:
    """The stream through the addon's hooks as Claude Code's (``anthropic``) or OpenCode's
    (``chat``) request declaring ``Bash``: the bytes the client got, and the record."""
    if dialect == "anthropic":
        body = {
            "model": "m",
            "max_tokens": 5,
            "stream": True,
            "tools": [{"name": "Bash", "input_schema": SCHEMA}],
            "messages": [{"role": "user", "content": "x"}],
        }
        where = {"host": "api.anthropic.com", "path": "/v1/messages"}
        agent = "claude-cli/2.1.197 (external, sdk-cli)"
    else:
        body = {
            "model": "m",
            "stream": True,
            "tools": [{"type": "function", "function": {"name": "Bash", "parameters": SCHEMA}}],
            "messages": [{"role": "user", "content": "x"}],
        }
        where = {"host": "api.openai.com", "path": "/v1/chat/completions"}
        agent = "opencode/1.18.33"
    headers = [("content-type", "application/json"), ("user-agent", agent)]
    with harness.configured(loaded) as e:
        f = harness.make_flow(body, **where, headers=headers, upstream=b"".join(events), resp_type="text/event-stream")
        r = harness.replay(e, f)
    return r.out, r.record


STREAMS = {"anthropic": anthropic_stream, "chat": chat_stream}


@SETTINGS
@given(
    st.sampled_from(sorted(STREAMS)),
    st.sampled_from(ARGUMENTS),
    st.lists(st.integers(0, 60), max_size=3),
    st.data(),
)
def test_a_call_with_an_event_that_is_not_json_goes_on_as_it_came(loaded, dialect, arguments, cuts, data) -> None:
    events = STREAMS[dialect](pieces(arguments, cuts))
    out, record = run(loaded, dialect, events)
    assert b'"Bash"' in out and record["decisions"][0]["action"] == "rename", record  # whole: repaired
    # one event of the call (its start, a fragment, its end) is not JSON
    at = data.draw(st.integers(1 if dialect == "anthropic" else 0, len(events) - (4 if dialect == "anthropic" else 3)))
    head, _, tail = events[at].partition(b"data: ")
    broken = data.draw(st.sampled_from(BROKEN))
    events[at] = head + b"data: " + broken + b"\n\n"
    out, record = run(loaded, dialect, events)
    assert out == b"".join(events), out
    assert record["decisions"] == [], record["decisions"]
    if dialect == "chat" or at > 1:  # (a block whose start is not JSON is no call the rewriter saw)
        assert any(n.startswith("passed through") for n in record["notes"]), record["notes"]


@pytest.mark.parametrize("skipped", [b"event: ping\ndata: \n\n", b"event: keepalive\ndata: still working\n\n"])
def test_an_event_the_client_skips_unread_keeps_the_repair(loaded, skipped) -> None:
    # The anthropic SDKs skip a ping, and an event of a name they do not know, without reading
    # its data: the call around it is still read whole
    events = anthropic_stream(pieces(ARGUMENTS[0], [9]))
    events.insert(3, skipped)
    out, record = run(loaded, "anthropic", events)
    assert [d["action"] for d in record["decisions"]] == ["rename"], record
    assert b'"Bash"' in out and skipped in out


@pytest.mark.parametrize("repeated", [b'"type":"function",', b'"id":"call_1",'])
def test_a_type_or_id_repeated_on_every_delta_does_not_make_a_call_known(loaded, repeated) -> None:
    # some servers repeat "type" (or the id) on each delta; the call's first chunk, with its
    # name, was not JSON
    events = chat_stream(pieces(ARGUMENTS[0], [7]))
    events[0] = b'data: {"choices": [oops\n\n'
    marker = b'{"index":0,"function"'
    events[1:-2] = [e.replace(marker, b'{"index":0,' + repeated + b'"function"') for e in events[1:-2]]
    assert repeated in events[1]
    out, record = run(loaded, "chat", events)
    assert out == b"".join(events) and record["decisions"] == [], record
    assert any("without its name" in n for n in record["notes"]), record["notes"]
