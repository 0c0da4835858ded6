"""A stream event whose JSON data repeats a key passes as it came.

Which of two values under one key a client reads is its JSON parser's choice; a rewrite keeps
only the last. So an event the rewriter reads (marker-bearing, or any event while a block is
held) that repeats a key stops the rewrite: what was held, that event and the rest of the stream
go out as they came, and the addon's record says why. Each dialect's stream below calls the
undeclared ``shell`` (which resolves to the declared ``Bash``): without a repeated key the call
is renamed (the control), with one anywhere in the call's events nothing changes.
"""

from __future__ import annotations

import json
import random

import pytest

import toolvocab.dialects as tvdialects
from harness.dialects import context
from toolvocab.dialects.sse import RepeatedKey
from toolvocab.dialects.sse import SSEEvent
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import resolve

TOOLS = Toolset(
    [
        declared_tool(
            "Bash",
            input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        )
    ]
)


class Resolver:
    """The engine's ladder over TOOLS (with ``.tools``, as the addon's resolver has)."""

    tools = TOOLS

    def __init__(self) -> None:
        self.decisions: list = []

    def __call__(self, call):
        decision = resolve(call, TOOLS)
        self.decisions.append(decision)
        return decision


def sse(obj: dict, name: bool = True) -> bytes:
    head = f"event: {obj['type']}\n" if name and "type" in obj else ""
    return (head + "data: " + json.dumps(obj) + "\n\n").encode()


def anthropic_events() -> list[bytes]:
    return [
        sse({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}}),
        sse(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
            }
        ),
        sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"command": "ls"}'},
            }
        ),
        sse({"type": "content_block_stop", "index": 0}),
        sse({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        sse({"type": "message_stop"}),
    ]


def chat_events() -> list[bytes]:
    def chunk(delta: dict, finish=None) -> bytes:
        return (
            "data: "
            + json.dumps(
                {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
                }
            )
            + "\n\n"
        ).encode()

    return [
        chunk({"role": "assistant"}),
        chunk(
            {
                "tool_calls": [
                    {"index": 0, "id": "call_1", "type": "function", "function": {"name": "shell", "arguments": ""}}
                ]
            }
        ),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command": "ls"}'}}]}),
        chunk({}, "tool_calls"),
        b"data: [DONE]\n\n",
    ]


def responses_events() -> list[bytes]:
    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "shell", "arguments": ""}
    done = {**item, "arguments": '{"command": "ls"}', "status": "completed"}
    return [
        sse({"type": "response.created", "sequence_number": 0, "response": {"id": "r", "output": []}}),
        sse({"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item}),
        sse(
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 2,
                "output_index": 0,
                "item_id": "fc_1",
                "delta": '{"command": "ls"}',
            }
        ),
        sse(
            {
                "type": "response.function_call_arguments.done",
                "sequence_number": 3,
                "output_index": 0,
                "item_id": "fc_1",
                "arguments": '{"command": "ls"}',
            }
        ),
        sse({"type": "response.output_item.done", "sequence_number": 4, "output_index": 0, "item": done}),
        sse({"type": "response.completed", "sequence_number": 5, "response": {"id": "r", "output": [done]}}),
    ]


def gemini_sse_events() -> list[bytes]:
    call = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"functionCall": {"name": "shell", "args": {"command": "ls"}}}]},
                "finishReason": "STOP",
            }
        ]
    }
    return [("data: " + json.dumps(call) + "\r\n\r\n").encode()]


STREAMS = {
    "anthropic": anthropic_events,
    "openai_chat": chat_events,
    "openai_responses": responses_events,
    "gemini": gemini_sse_events,
}
#: Indexes of the events that belong to the call (a repeated key there must stop the rewrite).
CALL_EVENTS = {"anthropic": [1, 2, 3], "openai_chat": [1, 2, 3], "openai_responses": [1, 2, 3, 4], "gemini": [0]}


def repeat_a_key(event: bytes, rnd: random.Random) -> bytes:
    """The event with one of its data's keys written twice (the copy first: a reader that keeps
    the last value still reads the original)."""
    head, _, rest = event.partition(b"data: ")
    keys = [k for k in json.loads(rest.split(b"\n", 1)[0])]
    key = rnd.choice(keys)
    needle = json.dumps(key).encode() + b": "
    at = rest.index(needle)
    return head + b"data: " + rest[:at] + needle + b'"other", ' + rest[at:]


def run(dialect: str, data: bytes, rnd: random.Random) -> tuple[bytes, object, Resolver]:
    resolver = Resolver()
    rw = tvdialects.by_name(dialect).stream_rewriter(context(resolver, flow_key="k"))
    out: list[bytes] = []
    i = 0
    while i < len(data):
        n = rnd.randint(1, 40)
        got = rw.feed(data[i : i + n])
        assert b"" not in got
        out += got
        i += n
    out += rw.finish()
    return b"".join(out), rw, resolver


@pytest.mark.parametrize("dialect", list(STREAMS))
def test_control_the_call_is_renamed_without_a_repeated_key(dialect: str) -> None:
    data = b"".join(STREAMS[dialect]())
    out, rw, _ = run(dialect, data, random.Random(0))
    assert out != data and b"Bash" in out and rw.error is None


@pytest.mark.parametrize("dialect", list(STREAMS))
@pytest.mark.parametrize("seed", range(6))
def test_a_repeated_key_in_a_call_event_leaves_the_stream_as_it_came(dialect: str, seed: int) -> None:
    rnd = random.Random(seed)
    events = STREAMS[dialect]()
    k = rnd.choice(CALL_EVENTS[dialect])
    events[k] = repeat_a_key(events[k], rnd)
    data = b"".join(events)
    out, rw, _ = run(dialect, data, rnd)
    assert out == data
    assert rw.error is not None and rw.error.startswith("RepeatedKey: ")


@pytest.mark.parametrize("dialect", ["anthropic", "openai_responses"])
def test_a_repeated_key_in_an_event_nobody_reads_costs_nothing_and_changes_nothing(dialect: str) -> None:
    # message_start / response.created before the call: not marker-bearing (anthropic) or read
    # for its response echo (responses); either way the call after it is still repaired when the
    # event is not read, and left when it is.
    events = STREAMS[dialect]()
    events[0] = repeat_a_key(events[0], random.Random(1))
    data = b"".join(events)
    out, rw, _ = run(dialect, data, random.Random(2))
    if dialect == "anthropic":
        assert b"Bash" in out and rw.error is None  # message_start is passed unparsed
        assert out.startswith(events[0])
    else:
        assert out == data and rw.error.startswith("RepeatedKey: ")  # response.created is read


def test_gemini_array_element_with_a_repeated_key_passes_as_it_came() -> None:
    call = {
        "candidates": [
            {"content": {"role": "model", "parts": [{"functionCall": {"name": "shell", "args": {"command": "ls"}}}]}}
        ]
    }
    plain = b"[" + json.dumps(call).encode() + b"]"
    out, rw, _ = run("gemini", plain, random.Random(3))
    assert b"Bash" in out  # control
    dup = plain.replace(b'"name": "shell"', b'"name": "other", "name": "shell"')
    out, rw, _ = run("gemini", dup, random.Random(3))
    assert out == dup and rw.error.startswith("RepeatedKey: ")


def test_json_raises_every_time_and_with_json_copies_do_not() -> None:
    event = SSEEvent.parse(b'data: {"a": 1, "a": 2}\n\n')
    for _ in range(2):
        with pytest.raises(RepeatedKey):
            event.json()
    assert not isinstance(RepeatedKey(), ValueError)
    assert SSEEvent.parse(b'data: {"a": 1, "b": {"a": 2}}\n\n').json() == {"a": 1, "b": {"a": 2}}
    assert SSEEvent.parse(b'data: {"a": 1}\n\n').with_json({"a": 3}).json() == {"a": 3}
    assert SSEEvent.parse(b'data: {"s": "\\": x"}\n\n').json() == {
        "s": '": x'
    }  # a colon after an escaped quote is no key
