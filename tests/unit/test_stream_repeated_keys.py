"""A stream event whose JSON data repeats a key passes as it came.

Which of two values under one key a client reads is its JSON parser's choice; a rewrite keeps
only the last. So an event the rewriter reads (marker-bearing, or any event while a block is
held) that repeats a key stops the rewrite: that event goes out as it came, and what was held
and the rest of the stream as they came but for the upstream aliases this flow sent, named back
(``EventStreamRewriter.give_back``: the client never gets a name it did not declare from an event
that can be read); the addon's record says why. Each dialect's stream below calls the
undeclared ``shell`` (which resolves to the declared ``Bash``): without a repeated key the call
is renamed (the control), with one anywhere in the call's events nothing changes. Then streams
that call a declared tool by the alias the request sent for it (``fs.read``, sent upstream as
``fs_read_4074bc02``), with a repeated key in any event: every alias in an event that can be read
is named back, the event that cannot be read goes as it came, and nothing else changes.
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
from toolvocab.engine.plan import Plan

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
    return run_with(Resolver(), dialect, data, rnd)


def run_with(resolver, dialect: str, data: bytes, rnd: random.Random) -> tuple[bytes, object, object]:
    """``data`` through a new stream rewriter of ``dialect`` in random chunks (the resolver's
    tools; ALIAS_PLAN for an AliasResolver)."""
    plan = ALIAS_PLAN if isinstance(resolver, AliasResolver) else None
    rw = tvdialects.by_name(dialect).stream_rewriter(context(resolver, plan, flow_key="k"))
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
    assert rw.error is None and rw.contained is not None and rw.contained.startswith("RepeatedKey: ")


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
        assert out == data and rw.contained.startswith("RepeatedKey: ")  # response.created is read


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
    assert out == dup and rw.error is None and rw.contained.startswith("RepeatedKey: ")


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


# -- an upstream alias this flow sent, and a repeated key ---------------------------------------

ALIAS = "fs_read_4074bc02"
ALIAS_TOOLS = Toolset(
    [
        declared_tool(
            "fs.read",
            input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
        )
    ]
)
ALIAS_PLAN = Plan(rename_map={"fs.read": ALIAS})


class AliasResolver:
    """The engine's ladder over ALIAS_TOOLS with ALIAS_PLAN's reverse map (the addon's resolver)."""

    tools = ALIAS_TOOLS

    def __call__(self, call):
        return resolve(call, ALIAS_TOOLS, ALIAS_PLAN.reverse_map)


def compact(obj: dict, event: bool = True) -> bytes:
    """An event as an upstream writes it compactly (as the rewriter writes a changed one)."""
    head = f"event: {obj['type']}\n" if event and "type" in obj else ""
    return (head + "data: " + json.dumps(obj, separators=(",", ":")) + "\n\n").encode()


def alias_anthropic() -> list[bytes]:
    out = [compact({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant"}})]
    for i in range(2):
        start = {"type": "tool_use", "id": f"toolu_{i}", "name": ALIAS, "input": {}}
        out += [
            compact({"type": "content_block_start", "index": i, "content_block": start}),
            compact(
                {
                    "type": "content_block_delta",
                    "index": i,
                    "delta": {"type": "input_json_delta", "partial_json": f'{{"path":"f{i}"}}'},
                }
            ),
            compact({"type": "content_block_stop", "index": i}),
        ]
    return out + [
        compact({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}),
        compact({"type": "message_stop"}),
    ]


def alias_chat() -> list[bytes]:
    def chunk(delta: dict, finish=None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return compact({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}, event=False)

    out = [chunk({"role": "assistant"})]
    for i in range(2):
        first = {"index": i, "id": f"call_{i}", "type": "function", "function": {"name": ALIAS, "arguments": ""}}
        out += [
            chunk({"tool_calls": [first]}),
            chunk({"tool_calls": [{"index": i, "function": {"arguments": f'{{"path":"f{i}"}}'}}]}),
        ]
    return out + [chunk({}, "tool_calls"), b"data: [DONE]\n\n"]


def alias_responses() -> list[bytes]:
    out = [compact({"type": "response.created", "sequence_number": 0, "response": {"id": "r", "output": []}})]
    done = []
    n = 1
    for i in range(2):
        item = {"type": "function_call", "id": f"fc_{i}", "call_id": f"call_{i}", "name": ALIAS, "arguments": ""}
        args = f'{{"path":"f{i}"}}'
        done.append({**item, "arguments": args, "status": "completed"})
        for event in (
            {"type": "response.output_item.added", "output_index": i, "item": item},
            {"type": "response.function_call_arguments.delta", "output_index": i, "item_id": f"fc_{i}", "delta": args},
            {
                "type": "response.function_call_arguments.done",
                "output_index": i,
                "item_id": f"fc_{i}",
                "arguments": args,
            },
            {"type": "response.output_item.done", "output_index": i, "item": done[-1]},
        ):
            out.append(compact({**event, "sequence_number": n}))
            n += 1
    completed = {"id": "r", "status": "completed", "output": done}
    return out + [compact({"type": "response.completed", "sequence_number": n, "response": completed})]


def alias_gemini() -> list[bytes]:
    def event(part: dict, finish: str | None = None) -> bytes:
        candidate = {"content": {"role": "model", "parts": [part]}, **({"finishReason": finish} if finish else {})}
        return compact({"candidates": [candidate]}, event=False)

    return [
        event({"functionCall": {"name": ALIAS, "args": {"path": "f0"}}}),
        event({"text": "and"}),
        event({"functionCall": {"name": ALIAS, "args": {"path": "f1"}}}, "STOP"),
    ]


ALIAS_STREAMS = {
    "anthropic": alias_anthropic,
    "openai_chat": alias_chat,
    "openai_responses": alias_responses,
    "gemini": alias_gemini,
}
NAMED = json.dumps(ALIAS).encode()


def repeat_first_key(event: bytes) -> bytes:
    """``event`` with its data's first key written twice (a dummy value first: a reader that keeps
    the last value still reads the original)."""
    head, _, rest = event.partition(b"data: {")
    return head + b"data: {" + rest[: rest.index(b":")] + b':"other",' + rest


@pytest.mark.parametrize("dialect", list(ALIAS_STREAMS))
def test_control_every_alias_is_named_back(dialect: str) -> None:
    events = ALIAS_STREAMS[dialect]()
    out, rw, _ = run_with(AliasResolver(), dialect, b"".join(events), random.Random(0))
    assert rw.error is None and rw.contained is None
    assert out == b"".join(events).replace(NAMED, b'"fs.read"')


@pytest.mark.parametrize("dialect", list(ALIAS_STREAMS))
@pytest.mark.parametrize("seed", range(12))
def test_a_repeated_key_anywhere_names_every_readable_alias_back(dialect: str, seed: int) -> None:
    """The event that repeats a key goes as it came (its alias too: it cannot be read); every
    other event as it came but for the alias, named back: before it (decided), held at it (let
    go) and after it (names only). Events drawn at random, split into random chunks."""
    rnd = random.Random(seed)
    events = ALIAS_STREAMS[dialect]()
    k = rnd.randrange(len(events))
    if b"data: {" not in events[k]:
        k = 0
    events[k] = repeat_first_key(events[k])
    out, rw, _ = run_with(AliasResolver(), dialect, b"".join(events), rnd)
    want = b"".join(e if i == k else e.replace(NAMED, b'"fs.read"') for i, e in enumerate(events))
    assert out == want
    # None: an event the rewriter passes unread (no marker, nothing held) cannot raise
    assert rw.error is None and (rw.contained is None or rw.contained.startswith("RepeatedKey: "))


@pytest.mark.parametrize("seed", range(8))
def test_a_gemini_array_names_every_readable_alias_back_after_a_repeated_key(seed: int) -> None:
    """The same over a bare JSON array (``streamGenerateContent`` without ``alt=sse``): the element
    that repeats a key (text or a call) goes as it came, every other one as it came but for the
    alias, named back; the bytes between elements as they came. Was: every element after the
    repeated key kept its alias."""
    rnd = random.Random(seed)
    elements = [e.removeprefix(b"data: ").removesuffix(b"\n\n") for e in alias_gemini()]
    if seed % 2:
        elements.insert(0, elements.pop(1))  # text first: read by the text watch (a call may follow)
    k = rnd.randrange(len(elements))
    elements[k] = repeat_first_key(b"data: " + elements[k]).removeprefix(b"data: ")
    data = b"[" + b",\n".join(elements) + b"]"
    out, rw, _ = run_with(AliasResolver(), "gemini", data, rnd)
    want = b"[" + b",\n".join(e if i == k else e.replace(NAMED, b'"fs.read"') for i, e in enumerate(elements)) + b"]"
    assert out == want
    assert rw.error is None and (rw.contained is None or rw.contained.startswith("RepeatedKey: "))


@pytest.mark.parametrize("pieces", [("fs_rea", "d_4074bc02"), ("fs", "_read_", "4074bc02")])
def test_a_chat_alias_held_in_pieces_is_given_back_whole_at_a_give_up(pieces: tuple[str, ...]) -> None:
    """A Chat call whose name comes in pieces across held chunks, which joined are this flow's
    alias, is let go (a chunk repeating a key): the client's name goes in the first piece and the
    later pieces carry none (a client joins the pieces, as the repaired calls are written). Was:
    the pieces went as they came, and the client joined them into the alias."""

    def chunk(delta: dict, finish=None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return compact({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}, event=False)

    first = {"index": 0, "id": "call_0", "type": "function", "function": {"name": pieces[0], "arguments": ""}}
    later = [{"index": 0, "function": {"name": p}} for p in pieces[1:]]
    events = [chunk({"role": "assistant"}), chunk({"tool_calls": [first]})]
    events += [chunk({"tool_calls": [c]}) for c in later]
    events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":"a"}'}}]})]
    events += [repeat_first_key(chunk({}, "tool_calls")), b"data: [DONE]\n\n"]
    out, rw, _ = run_with(AliasResolver(), "openai_chat", b"".join(events), random.Random(len(pieces)))
    want = list(events)
    want[1] = chunk({"tool_calls": [{**first, "function": {"name": "fs.read", "arguments": ""}}]})
    for i in range(len(later)):
        want[2 + i] = chunk({"tool_calls": [{"index": 0, "function": {}}]})
    assert out == b"".join(want)
    assert rw.unrepaired and rw.unrepaired[-1].endswith("; named back to fs.read"), rw.unrepaired


@pytest.mark.parametrize("end", [b"\n", b"", b"\r\n"])
def test_a_gemini_last_event_without_its_blank_line_is_read(end: bytes) -> None:
    """google-genai dispatches every ``data:`` line as it ends, the last one at the end of the
    stream with or without its blank line: such a last event is read as one (the alias in its
    call named back), its own line ending kept. Was: it went as it came, alias and all."""
    events = alias_gemini()
    last = events[-1].removesuffix(b"\n\n") + end
    data = b"".join(events[:-1]) + last
    out, rw, _ = run_with(AliasResolver(), "gemini", data, random.Random(len(end)))
    assert out == data.replace(NAMED, b'"fs.read"')
    assert rw.error is None


@pytest.mark.parametrize("seed", range(10))
def test_a_chat_alias_in_pieces_after_a_give_up_is_given_back_whole(seed: int) -> None:
    """After a give-up (a chunk repeating a key) Chat is read for this flow's aliases only; a
    later call whose name comes in pieces that join into the alias is held until its name can
    grow no more, then goes with the client's name in the first piece and none in the later ones.
    Its other chunks, and every other byte, as they came. Was: the pieces went as they came."""
    rnd = random.Random(seed)

    def chunk(delta: dict, finish=None) -> bytes:
        choice = {"index": 0, "delta": delta, "finish_reason": finish}
        return compact({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}, event=False)

    cuts = sorted(rnd.sample(range(1, len(ALIAS)), rnd.randint(1, 3)))
    pieces = [ALIAS[a:b] for a, b in zip([0, *cuts], [*cuts, len(ALIAS)])]
    first = {"index": 0, "id": "call_0", "type": "function", "function": {"name": pieces[0], "arguments": ""}}
    events = [chunk({"role": "assistant"}), repeat_first_key(chunk({"content": "ok"}))]
    events += [chunk({"tool_calls": [first]})]
    events += [chunk({"tool_calls": [{"index": 0, "function": {"name": p}}]}) for p in pieces[1:]]
    events += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"path":"a"}'}}]})]
    events += [chunk({}, "tool_calls"), b"data: [DONE]\n\n"]
    out, rw, _ = run_with(AliasResolver(), "openai_chat", b"".join(events), rnd)
    want = list(events)
    want[2] = chunk({"tool_calls": [{**first, "function": {"name": "fs.read", "arguments": ""}}]})
    for i in range(len(pieces) - 1):
        want[3 + i] = chunk({"tool_calls": [{"index": 0, "function": {}}]})
    assert out == b"".join(want)
    assert rw.error is None and rw.contained is not None


def _chat_chunk(delta: dict, finish=None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return compact({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}, event=False)


def _call(index: int, name: str, call_id: str | None = None, arguments: str | None = None) -> dict:
    fn: dict = {} if name is None else {"name": name}
    if arguments is not None:
        fn["arguments"] = arguments
    call: dict = {"index": index, **({"id": call_id, "type": "function"} if call_id else {}), "function": fn}
    return {"tool_calls": [call]}


CHAT_PIECES = {
    # two calls' pieces interleaved
    "interleaved": (
        [_call(0, "fs_rea", "c0"), _call(1, "fs_", "c1"), _call(0, "d_4074bc02"), _call(1, "read_4074bc02")],
        [_call(0, "fs.read", "c0"), _call(1, "fs.read", "c1"), _call(0, None), _call(1, None)],
    ),
    # arguments between the pieces
    "arguments_between": (
        [_call(0, "fs_rea", "c0"), _call(0, None, arguments='{"pa'), _call(0, "d_4074bc02", arguments='th":"a"}')],
        [_call(0, "fs.read", "c0"), _call(0, None, arguments='{"pa'), _call(0, None, arguments='th":"a"}')],
    ),
    # a legacy function_call's name in pieces
    "legacy": (
        [{"function_call": {"name": "fs_rea", "arguments": ""}}, {"function_call": {"name": "d_4074bc02"}}],
        [{"function_call": {"name": "fs.read", "arguments": ""}}, {"function_call": {}}],
    ),
}


@pytest.mark.parametrize("case", list(CHAT_PIECES))
def test_chat_aliases_in_pieces_after_a_give_up_are_given_back_whatever_comes_between(case: str) -> None:
    """While giving back, Chat holds from a name that only begins an alias to the choice's end:
    two calls' pieces interleaved, arguments between the pieces and a legacy function_call's
    pieces are all joined, each call's first piece getting the client's name. Was: the first
    other chunk let the pieces go as they came, and the SDK joined them into the alias."""
    sent, want = CHAT_PIECES[case]
    head = [_chat_chunk({"role": "assistant"}), repeat_first_key(_chat_chunk({"content": "ok"}))]
    tail = [_chat_chunk({}, "tool_calls"), b"data: [DONE]\n\n"]
    data = b"".join(head + [_chat_chunk(d) for d in sent] + tail)
    out, rw, _ = run_with(AliasResolver(), "openai_chat", data, random.Random(len(case)))
    assert out == b"".join(head + [_chat_chunk(d) for d in want] + tail)
    assert rw.error is None
