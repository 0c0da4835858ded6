"""A JSON answer is read only when something in it can change (``Dialect.answer_may_change``):
a scan of its bytes for what a call, a name given back or lifted markup is spelled with, in any
way JSON can spell it. The property: whatever a dialect's ``rewrite_response`` changes, decides
or notes, the scan said "read" for its bytes — over answers written by several JSON writers,
one of which spells characters of every string and key as ``\\u`` escapes."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from test_addon_hooks import fixture_json
from test_addon_hooks import make_flow
from test_addon_hooks import replay
from test_text_calls_dialects import NEGATIVE
from test_text_calls_dialects import POSITIVE
from test_text_calls_dialects import TOOLS

from harness.dialects import Recorder
from harness.fixtures import env  # noqa: F401  (pytest fixtures)
from harness.fixtures import loaded  # noqa: F401
from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.openai_chat import DIALECT as CHAT
from toolvocab.dialects.textcalls import may_hold_markup_json
from toolvocab.engine.plan import Plan
from toolvocab.engine.wrapped import MARKUP_OPENERS

#: ``read_file`` goes upstream as ``read_file_up``: that name in an answer is given back.
PLAN = Plan(rename_map={"read_file": "read_file_up"})
OPENERS = [opener for opener, _ in MARKUP_OPENERS]

NAMES = st.sampled_from(["read_file", "read_file_up", "square_the_number", "shell", "Read", "multi_tool_use.parallel"])
TEXTS = st.one_of(
    st.text(max_size=30),
    st.sampled_from([p.values[0] for p in POSITIVE]),
    st.sampled_from([p.values[0] if hasattr(p, "values") else p for p in NEGATIVE]),
    st.tuples(st.text(max_size=8), st.sampled_from(OPENERS), st.text(max_size=8)).map("".join),
)
INPUTS = st.sampled_from([{"path": "README.md"}, {"input_num": 2}, {"command": ["ls"]}, {}, "{}", None])
IDS = st.sampled_from(["toolu_01", "call_1", "", "functions.read_file:0", None])


def _anthropic_block() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.builds(lambda t: {"type": "text", "text": t}, TEXTS),
        st.builds(lambda i, n, a: {"type": "tool_use", "id": i, "name": n, "input": a}, IDS, NAMES, INPUTS),
        st.builds(
            lambda n, with_id: {
                "type": "tool_search_tool_result",
                **({"tool_use_id": "srvtoolu_1"} if with_id else {}),  # a key that holds "tool_use"
                "content": {
                    "type": "tool_search_tool_search_result",
                    "tool_references": [{"type": "tool_reference", "tool_name": n}],
                },
            },
            NAMES,
            st.booleans(),
        ),
        st.builds(lambda t: {"type": "thinking", "thinking": t, "signature": "s"}, TEXTS),
        st.builds(lambda k, n: {"type": k, "name": n}, st.sampled_from(["server_tool_use", "image", "x"]), NAMES),
    )


ANTHROPIC_ANSWERS = st.builds(
    lambda blocks, stop: {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": blocks,
        "stop_reason": stop,
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
    st.lists(_anthropic_block(), max_size=3),
    st.sampled_from(["end_turn", "tool_use", "max_tokens", "stop_sequence", None]),
)
CHAT_CALLS = st.lists(
    st.builds(
        lambda i, n, a: {
            "id": i,
            "type": "function",
            "function": {"name": n, "arguments": a if isinstance(a, str) else json.dumps(a)},
        },
        IDS,
        NAMES,
        INPUTS,
    ),
    max_size=2,
)
CHAT_ANSWERS = st.builds(
    lambda text, calls, legacy, finish: {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": text,
                    **({"tool_calls": calls} if calls is not None else {}),
                    **({"function_call": {"name": legacy, "arguments": "{}"}} if legacy else {}),
                },
                "finish_reason": finish,
            }
        ],
    },
    st.none() | TEXTS,
    st.none() | CHAT_CALLS,
    st.none() | NAMES,
    st.sampled_from(["stop", "tool_calls", "length", None]),
)


def escaped(value: Any, rnd: random.Random) -> str:
    """``value`` as JSON text with each character of its strings and keys written as a ``\\u``
    escape, about half of them (RFC 8259 §7; a character past U+FFFF as its surrogate pair)."""
    if isinstance(value, str):
        out = []
        for ch in value:
            if rnd.random() < 0.5 or ch in '"\\' or ord(ch) < 0x20:
                units = ch.encode("utf-16-be")
                out.extend(f"\\u{units[i : i + 2].hex()}" for i in range(0, len(units), 2))
            else:
                out.append(ch)
        return '"' + "".join(out) + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{escaped(k, rnd)}:{escaped(v, rnd)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(escaped(v, rnd) for v in value) + "]"
    return json.dumps(value)


WRITERS = {
    "orjson": lambda v, rnd: orjson.dumps(v),
    "ascii": lambda v, rnd: json.dumps(v).encode(),
    "spaced": lambda v, rnd: json.dumps(v, ensure_ascii=False, indent=1).encode(),
    "escaped": lambda v, rnd: escaped(v, rnd).encode(),
}


def outcome(dialect: Any, raw: bytes) -> tuple[bool, bool]:
    """``(answer_may_change(raw), whether rewrite_response changed, decided or noted anything)``
    for the answer ``raw``, read as a client reads it, in a flow declaring :data:`TOOLS` with
    :data:`PLAN`."""
    body = json.loads(raw)
    before = copy.deepcopy(body)
    recorder, notes = Recorder(TOOLS, PLAN), []
    context = FlowContext(recorder, PLAN, TOOLS, "flow-screen", {}, note=notes.append)
    changed = dialect.rewrite_response(body, context)
    return dialect.answer_may_change(raw), bool(changed or recorder.calls or notes or body != before)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=ANTHROPIC_ANSWERS, writer=st.sampled_from(sorted(WRITERS)), seed=st.integers(0, 2**16))
def test_an_anthropic_answer_the_dialect_would_change_is_read(answer: dict, writer: str, seed: int) -> None:
    screen, acted = outcome(ANTHROPIC, WRITERS[writer](answer, random.Random(seed)))
    assert screen or not acted


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(answer=CHAT_ANSWERS, writer=st.sampled_from(sorted(WRITERS)), seed=st.integers(0, 2**16))
def test_a_chat_answer_the_dialect_would_change_is_read(answer: dict, writer: str, seed: int) -> None:
    screen, acted = outcome(CHAT, WRITERS[writer](answer, random.Random(seed)))
    assert screen or not acted


@pytest.mark.parametrize("opener", OPENERS)
def test_an_opener_is_written_as_its_own_bytes(opener: str) -> None:
    """The scan looks for each opener's UTF-8 bytes: no JSON writer may spell one otherwise but
    with a ``\\u`` escape, which the scan counts (no ``"``, ``\\``, ``/`` nor control character)."""
    assert not any(ch in '"\\/' or ord(ch) < 0x20 for ch in opener)
    assert orjson.dumps(opener)[1:-1] == opener.encode()
    assert json.dumps(opener, ensure_ascii=False)[1:-1] == opener


@pytest.mark.parametrize("text", [p.values[0] for p in POSITIVE])
@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_markup_that_lifts_is_read_however_written(text: str, writer: str) -> None:
    """Every family that lifts (written out in ``test_text_calls_dialects.py``), in each dialect
    and by each writer: read, and changed."""
    rnd = random.Random(7)
    anthropic = {"type": "message", "content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}
    chat = {"choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]}
    assert outcome(ANTHROPIC, WRITERS[writer](anthropic, rnd)) == (True, True)
    assert outcome(CHAT, WRITERS[writer](chat, rnd)) == (True, True)
    assert may_hold_markup_json(WRITERS[writer](text, rnd))


def test_a_type_spelled_with_escapes_is_read() -> None:
    """``tool\\u005fuse`` reads as ``tool_use``: a client runs it."""
    raw = b'{"type":"message","content":[{"type":"tool\\u005fuse","id":"toolu_1","name":"shell","input":{}}]}'
    assert outcome(ANTHROPIC, raw)[0] is True


@pytest.mark.parametrize(
    "raw",
    [
        b'{"type":"message","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn"}',
        b'{"type":"message","content":[{"type":"text","text":"a < b, and x => y\\n"}],"stop_reason":"end_turn"}',
        b'{"choices":[{"message":{"role":"assistant","content":"Done."},"finish_reason":"stop"}]}',
    ],
)
def test_an_answer_with_nothing_to_change_is_not_read(raw: bytes) -> None:
    dialect = CHAT if b"choices" in raw else ANTHROPIC
    assert outcome(dialect, raw) == (False, False)


@pytest.mark.parametrize("stream", [False, True], ids=["json-request", "stream-request-json-answer"])
def test_the_response_hook_reads_no_answer_without_a_call(env, monkeypatch, stream: bool) -> None:
    """Through the addon: an answer of text is passed as sent without ``rewrite_response``; an
    answer with a call (the same flow otherwise) is read and repaired. A request for a stream
    answered with JSON (read whole inside the stream callable) alike."""
    calls: list[bytes] = []
    real = type(ANTHROPIC).rewrite_response

    def counted(self, body, flow):
        calls.append(orjson.dumps(body))
        return real(self, body, flow)

    monkeypatch.setattr(type(ANTHROPIC), "rewrite_response", counted)
    body = fixture_json("request-claude-code.json")
    body["stream"] = stream
    text = b'{"id":"msg_1","type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn"}'
    call = text.replace(
        b'{"type":"text","text":"Done."}',
        b'{"type":"tool_use","id":"toolu_1","name":"shell","input":{"command":["ls"]}}',
    )
    plain = replay(env, make_flow(body, upstream=text, resp_type="application/json"))
    assert plain.out == text and calls == []
    assert plain.record["response_changed"] is False and plain.record["decisions"] == []
    repaired = replay(env, make_flow(body, upstream=call, resp_type="application/json"))
    assert len(calls) == 1
    assert orjson.loads(repaired.out)["content"][0]["name"] == "Bash"


#: Answers a strict reader refuses, or that a byte order mark or a repeated key keeps from being
#: written back as read; each opens an object (the stream callable reads a body that opens
#: otherwise as an event stream, not as JSON).
ODD_ANSWERS = [
    b'{"a": NaN}',
    b'{"type": "message", "content": [}',
    b"\xef\xbb\xbf"
    + orjson.dumps(
        {
            "type": "message",
            "content": [{"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": ["ls"]}}],
        }
    ),
    b'{"type":"message","type":"message","content":[{"type":"tool_use","id":"t1","name":"shell","input":{"command":["ls"]}}]}',
    b'{"content":[{"type":"tool_use","id":"t1","name":"read_file_up","input":{}}],"content":[]}',
    b'{"type":"message","type":"message","content":[{"type":"tool_use","id":"t1","name":"read","input":{"file_path":"/a"}}]}',
]


def _seen(result: Any) -> tuple[bytes, list[tuple[Any, ...]], list[str], Any]:
    record = result.record
    decisions = [(d["name"], d.get("target"), d["action"], d.get("arguments_after")) for d in record["decisions"]]
    return result.out, decisions, record["notes"], record.get("response_changed")


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    answer=ANTHROPIC_ANSWERS.map(lambda a: ("json", a)) | st.sampled_from(ODD_ANSWERS).map(lambda raw: ("raw", raw)),
    writer=st.sampled_from(sorted(WRITERS)),
    seed=st.integers(0, 2**16),
    repeated=st.booleans(),
    mode=st.sampled_from(["auto", "repair", "observe"]),
    saving=st.booleans(),
)
def test_a_stream_request_answered_with_json_is_read_as_a_buffered_answer(
    env, answer: tuple[str, Any], writer: str, seed: int, repeated: bool, mode: str, saving: bool
) -> None:
    """A request for a stream that the upstream answers with one JSON body (read whole inside
    the stream callable) and the same request buffered: the client gets the same bytes and the
    record the same decisions, notes and ``response_changed``, whatever the answer holds (a call
    to repair, a name given back, markup, nothing), however it is written, when a strict reader
    refuses it, when the request repeats a key (read whole only once the answer would change),
    in every mode, with something saving flows (the request read whole) or not (in ``repair``
    mode, peeked: a repeated key is found only once the answer would change)."""
    kind, value = answer
    raw = WRITERS[writer](value, random.Random(seed)) if kind == "json" else value
    env.configure(toolvocab_mode=mode)
    env.addon.recorder.saves_bodies = lambda: saving
    seen = []
    for stream in (False, True):
        body = fixture_json("request-claude-code.json")
        body["stream"] = stream
        content = orjson.dumps(body)
        if repeated:
            content = b'{"metadata":{},"metadata":{},' + content[1:]
        # both read the same way: peeked first (a client whose last request was written is read
        # whole at once, and a peeked request that repeats a key is refused only if its answer
        # would change: the record of an answer that would not differs by design)
        env.addon.caches.writes.clear()
        flow = make_flow(content, upstream=raw, resp_type="application/json")
        flow.id = "answer-read-once"  # a call without an id gets one made of the flow's
        seen.append(_seen(replay(env, flow, seed=seed)))
    assert seen[0] == seen[1]


def test_a_refused_stream_request_answered_with_json_passes_the_rest_as_sent(env) -> None:
    """A peeked request that repeats a key, for a stream the upstream answers with one JSON body
    holding a call to repair, then an empty chunk (an empty HTTP/2 DATA frame) and more bytes:
    the whole read refuses the change, so the record is the one a request left as sent gets, with
    no note about the bytes after the empty chunk, and the client gets every byte as it came.
    (``repair`` mode: in ``auto`` the prompt sentence has the request read whole at once.)"""
    env.configure(toolvocab_mode="repair")
    env.addon.recorder.saves_bodies = lambda: False  # plain mitmdump: the request is peeked
    env.addon.caches.writes.clear()  # (a client whose last request was written is read whole)
    body = fixture_json("request-claude-code.json")
    body["stream"] = True
    content = b'{"metadata":{},"metadata":{},' + orjson.dumps(body)[1:]
    answer = b'{"type":"message","content":[{"type":"tool_use","id":"t1","name":"read","input":{"file_path":"/a"}}]}'
    got = replay(env, make_flow(content, upstream=answer, resp_type="application/json"), chunks=[answer, b"", b"\n"])
    assert got.out == answer + b"\n"
    assert got.record["skipped"] == "request body repeats a key; passed through"
    assert got.record["notes"] == [] and got.record["decisions"] == []


@pytest.mark.parametrize("stream", [False, True], ids=["json-request", "stream-request-json-answer"])
def test_a_peeked_request_repeating_a_key_is_refused_before_an_unwritable_answer(env, stream: bool) -> None:
    """A peeked request that repeats a key, answered with a call to repair in an answer that
    repeats a key too (so the repair could not be written back): the request's whole read comes
    first, so the record is the one a request left as sent gets (no decision, no note, no
    marker), for a buffered answer and for a stream request answered with JSON alike (the stream
    callable said "could not be written back" instead, with a warning marker)."""
    env.configure(toolvocab_mode="repair")
    env.addon.recorder.saves_bodies = lambda: False  # plain mitmdump: the request is peeked
    env.addon.caches.writes.clear()
    body = fixture_json("request-claude-code.json")
    body["stream"] = stream
    content = b'{"metadata":{},"metadata":{},' + orjson.dumps(body)[1:]
    answer = b'{"type":"message","type":"message","content":[{"type":"tool_use","id":"t1","name":"read","input":{"file_path":"/a"}}]}'
    flow = make_flow(content, upstream=answer, resp_type="application/json")
    got = replay(env, flow)
    assert got.out == answer
    assert got.record["skipped"] == "request body repeats a key; passed through"
    assert got.record["notes"] == [] and got.record["decisions"] == []
    assert flow.marked == ""
