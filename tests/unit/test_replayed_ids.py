"""Replayed tool-call ids the upstream rejects get an alias on the way up, and only there.

Anthropic answers 400 ``tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`` for an id
another model produced (Kimi's ``functions.Bash:0``; maximhq/bifrost#5097).
"""

from __future__ import annotations

import copy
import json
import re

import orjson
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import harness
from harness.dialects import context
from harness.fixtures import env  # noqa: F401  (pytest fixtures)
from harness.fixtures import loaded  # noqa: F401
from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
from toolvocab.dialects.anthropic import AnthropicStream
from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.sse import SSEParser
from toolvocab.engine.ids import anthropic_accepts
from toolvocab.engine.ids import anthropic_accepts_all
from toolvocab.engine.ids import id_aliases
from toolvocab.engine.ids import responses_accepts
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import resolve
from toolvocab.engine.plan import Plan

#: The upstream's pattern as its validator applies it: the whole string (Python's ``$`` would also
#: match before a final newline, which Anthropic's pattern does not let through).
PATTERN = re.compile(r"[a-zA-Z0-9_-]+\Z")
TOOLS = Toolset([declared_tool("Bash", input_schema={"type": "object", "properties": {"command": {"type": "string"}}})])
BASH = {
    "name": "Bash",
    "description": "Run a command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
}


def resolver(call):
    return resolve(call, TOOLS)


def history(*ids: str) -> dict:
    """A request replaying one Bash call and its result per id."""
    messages: list[dict] = [{"role": "user", "content": [{"type": "text", "text": "look"}]}]
    for i in ids:
        messages.append(
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": i, "name": "Bash", "input": {"command": "ls"}}],
            }
        )
        messages.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": "a.txt"}]})
    return {"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": [BASH], "messages": messages}


def pairs(body: dict) -> list[tuple[str, str]]:
    uses = [b["id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in body["messages"] for b in m["content"] if b["type"] == "tool_result"]
    return list(zip(uses, results, strict=True))


# -- the alias --------------------------------------------------------------------------------


def test_a_rejected_id_gets_a_pattern_valid_alias_and_a_valid_one_none():
    got = id_aliases(["functions.Bash:0", "toolu_01A", "call-2"])
    assert list(got) == ["functions.Bash:0"]
    assert PATTERN.match(got["functions.Bash:0"]) and got["functions.Bash:0"].startswith("tvid_")


def test_the_alias_is_the_same_in_every_request():
    assert id_aliases(["functions.Bash:0"]) == id_aliases(["toolu_9", "functions.Bash:0", "x"])


def test_an_alias_never_lands_on_an_id_the_request_already_has():
    first = id_aliases(["functions.Bash:0"])["functions.Bash:0"]
    got = id_aliases(["functions.Bash:0", first])
    assert got["functions.Bash:0"] != first and PATTERN.match(got["functions.Bash:0"])


def test_an_empty_id_gets_no_alias():
    assert id_aliases(["", "ok"]) == {}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=12), st.from_regex(r"tvid_[0-9a-f]{24}", fullmatch=True)), max_size=8))
def test_aliases_are_valid_distinct_and_never_an_existing_id(ids):
    got = id_aliases(ids)
    for original, new in got.items():
        assert not PATTERN.match(original) and original
        assert PATTERN.match(new)
        assert new not in ids
    assert len(set(got.values())) == len(got)
    assert all(i in got for i in ids if i and not PATTERN.match(i))


#: Ids of Anthropic's class, some with one character from outside it or near its edge: every
#: ASCII character, Unicode letters and digits a ``\w`` or ``str.isalnum`` would take,
#: characters that case-fold into the class (the Kelvin sign, the long s), a lone surrogate.
_CLASS = st.text(alphabet="abcxyzABCXYZ0189_-", max_size=5)
_EDGE = st.sampled_from([chr(c) for c in range(128)] + ["é", "٣", "ß", "\u212a", "ſ", "\u0130", "\U0001f600", "\ud800"])
EDGE_IDS = st.lists(_CLASS | st.builds(lambda a, c, b: a + c + b, _CLASS, _EDGE, _CLASS), max_size=6)


@settings(max_examples=500, deadline=None)
@given(EDGE_IDS)
@example(["toolu_1", "functions.Bash:0"])
@example(["ok", "\ud800"])
@example(["", "\u212a"])
def test_every_id_accepted_is_every_id_the_pattern_takes(ids):
    """``anthropic_accepts_all`` (one check over the ids joined) says yes exactly when no id gets
    an alias: each non-empty id matches Anthropic's ``^[a-zA-Z0-9_-]+$``."""
    expected = all(not i or re.fullmatch(r"[a-zA-Z0-9_-]+", i) for i in ids)
    assert anthropic_accepts_all(ids) is expected
    assert anthropic_accepts_all(ids) is (id_aliases(ids) == {})


@settings(max_examples=500, deadline=None)
@given(EDGE_IDS, st.lists(st.integers(60, 70).map(lambda n: "c" * n), max_size=3), st.randoms())
@example(["toolu_1", "functions.Bash:0"], [], None)
@example([], ["c" * 64, "c" * 65], None)
def test_the_one_check_over_all_ids_gives_what_the_check_of_each_gives(ids, long, rnd):
    """``id_aliases`` checks every id at once under the two rules it knows (Anthropic's pattern,
    the Responses API's 64 characters) and each id alone under any other: both give the same
    aliases, ``{}`` included, over ids of each rule's edge in any order."""
    ids = ids + long
    if rnd is not None:
        rnd.shuffle(ids)
    for accepts in (anthropic_accepts, responses_accepts):
        assert id_aliases(ids, accepts) == id_aliases(ids, lambda i, accepts=accepts: accepts(i))


# -- the request ------------------------------------------------------------------------------


def test_kimi_ids_in_history_are_aliased_at_both_ends_of_each_pair():
    body = history("functions.Bash:0", "toolu_01Ok")
    aliases = ANTHROPIC.alias_call_ids(body)
    got = pairs(body)
    alias = aliases["functions.Bash:0"]
    assert got == [(alias, alias), ("toolu_01Ok", "toolu_01Ok")]
    assert "messages" in ANTHROPIC.request_keys(history("functions.Bash:0"), Plan())


def test_valid_ids_leave_the_request_as_it_came():
    body = history("toolu_01A", "call_2-b")
    before = copy.deepcopy(body)
    assert ANTHROPIC.alias_call_ids(body) == {}
    assert not ANTHROPIC.apply_request(body, Plan())
    assert body == before
    assert "messages" not in ANTHROPIC.request_keys(body, Plan())


@settings(max_examples=100, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=10), min_size=1, max_size=5, unique=True))
def test_every_pair_still_pairs_and_every_sent_id_is_valid(ids):
    body = history(*ids)
    ANTHROPIC.alias_call_ids(body)
    for use, result in pairs(body):
        assert use == result and PATTERN.match(use)
    assert len({u for u, _ in pairs(body)}) == len(ids)


# -- the answer -------------------------------------------------------------------------------


def answer(call_id: str) -> dict:
    return {
        "type": "message",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": "ls"}}],
    }


def test_an_alias_in_the_answer_goes_back_to_the_clients_id():
    flow = context(resolver, flow_key="k", call_ids={"functions.Bash:0": "tvid_a97d15071f75fb2043da80d3"})
    body = answer("tvid_a97d15071f75fb2043da80d3")
    assert ANTHROPIC.rewrite_response(body, flow)
    assert body["content"][0]["id"] == "functions.Bash:0"


def test_a_fresh_id_in_the_answer_is_left():
    flow = context(resolver, flow_key="k", call_ids={"functions.Bash:0": "tvid_a97d15071f75fb2043da80d3"})
    body = answer("toolu_01New")
    before = json.dumps(body)
    assert not ANTHROPIC.rewrite_response(body, flow)
    assert json.dumps(body) == before


def _stream(call_id: str) -> bytes:
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "m",
                    "stop_reason": None,
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": call_id, "name": "Bash", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"command":"ls"}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(f"event: {e}\ndata: {json.dumps(d)}\n\n".encode() for e, d in events)


def _run_stream(raw: bytes, flow: FlowContext) -> bytes:
    rewriter = AnthropicStream(flow)
    parser = SSEParser()
    out = b"".join(b"".join(rewriter.on_event(e)) for e in parser.feed(raw))
    return out + b"".join(rewriter.at_end())


def _stream_ids(out: bytes) -> list[str]:
    parser = SSEParser()
    return [
        e.json()["content_block"]["id"]
        for e in parser.feed(out)
        if isinstance(e.json(), dict) and e.json().get("type") == "content_block_start"
    ]


def test_streamed_alias_goes_back_and_a_fresh_id_is_left():
    flow = context(resolver, flow_key="k", call_ids={"functions.Bash:0": "tvid_a97d15071f75fb2043da80d3"})
    assert _stream_ids(_run_stream(_stream("tvid_a97d15071f75fb2043da80d3"), flow)) == ["functions.Bash:0"]
    raw = _stream("toolu_01New")
    assert _run_stream(raw, flow) == raw


# -- through the addon ------------------------------------------------------------------------

HOST = "api.anthropic.com"
HEADERS = [("content-type", "application/json"), ("anthropic-version", "2023-06-01")]


def _flow(body: dict, upstream: bytes):
    return harness.make_flow(
        body, host=HOST, path="/v1/messages", headers=HEADERS, resp_type="application/json", upstream=upstream
    )


def test_the_upstream_gets_the_alias_and_the_client_its_own_ids(env):
    body = history("functions.Bash:0")
    upstream = orjson.dumps(answer("toolu_01New"))
    f = _flow(body, upstream)
    r = harness.replay(env, f)
    sent = orjson.loads(f.request.content)
    ((use, result),) = pairs(sent)
    assert use == result and PATTERN.match(use) and use != "functions.Bash:0"
    assert r.out == upstream
    assert r.record["request_changed"] is True
    # What a user debugging the flow sees: the alias in the record, the change in the comment.
    assert r.record["id_aliases"] == {"functions.Bash:0": use}
    assert "1 replayed id aliased upstream" in f.comment and f.comment.startswith("changed:")


def test_observe_mode_sends_the_clients_ids(env):
    env.configure(toolvocab_mode="observe")
    body = history("functions.Bash:0")
    f = _flow(body, orjson.dumps(answer("toolu_01New")))
    raw = f.request.content
    harness.replay(env, f)
    assert f.request.content == raw


# -- OpenAI Responses: a call_id over 64 characters --------------------------------------------
# "Invalid 'input[8].call_id': string too long. Expected max 64, got 86." (AstrBotDevs/AstrBot#7735)

from toolvocab.dialects.openai_responses import DIALECT as RESPONSES  # noqa: E402

LONG_ID = "call_" + "0123456789" * 8  # 85 characters


def responses_history(*ids: str) -> dict:
    items: list[dict] = [{"role": "user", "content": "look"}]
    for i in ids:
        items.append({"type": "function_call", "call_id": i, "name": "Bash", "arguments": '{"command":"ls"}'})
        items.append({"type": "function_call_output", "call_id": i, "output": "a.txt"})
    return {
        "model": "gpt-5",
        "input": items,
        "tools": [{"type": "function", "name": "Bash", "parameters": BASH["input_schema"]}],
    }


def test_a_responses_call_id_over_64_characters_is_aliased_at_both_ends():
    body = responses_history(LONG_ID, "call_ok")
    assert "input" in RESPONSES.request_keys(body, Plan())
    aliases = RESPONSES.alias_call_ids(body)
    sent = [i["call_id"] for i in body["input"] if "call_id" in i]
    assert sent[0] == sent[1] != LONG_ID and len(sent[0]) <= 64 and sent[2:] == ["call_ok", "call_ok"]
    assert aliases == {LONG_ID: sent[0]}


def test_responses_ids_of_64_characters_or_fewer_leave_the_request_as_it_came():
    body = responses_history("c" * 64, "call_ok")
    before = copy.deepcopy(body)
    assert RESPONSES.alias_call_ids(body) == {}
    assert not RESPONSES.apply_request(body, Plan())
    assert body == before


def test_a_responses_answer_naming_the_alias_gives_the_client_its_own_id():
    alias = id_aliases([LONG_ID], lambda i: len(i) <= 64)[LONG_ID]
    flow = context(resolver, flow_key="k", call_ids={LONG_ID: alias})
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": alias,
                "name": "Bash",
                "arguments": '{"command":"ls"}',
                "status": "completed",
            }
        ],
    }
    assert RESPONSES.rewrite_response(body, flow)
    assert body["output"][0]["call_id"] == LONG_ID
