"""Empty arguments on the wire: ``""``, ``null`` and ``[]`` arguments for a
tool whose schema is an object reach the client as ``"{}"`` (``{}`` where the dialect carries
objects), JSON and streamed, in every dialect; and a Chat answer that carries tool calls ends
with ``finish_reason: "tool_calls"``.

Each dialect is checked on whole JSON answers and on streams fed whole and over random chunk
splits, for every empty form; the normal ``{}`` spellings (Anthropic's streamed ``input: {}``
with no or empty ``input_json_delta``, an absent Gemini ``args``) stay byte-identical. What the
client receives is read the way its SDK assembles it.
"""

from __future__ import annotations

import functools
import random
from typing import Any

import orjson
import pytest

from harness import random_chunks
from harness.dialects import Recorder
from harness.dialects import context
from harness.dialects import rewrite
from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
from toolvocab.dialects.base import JSONFrame
from toolvocab.dialects.gemini import DIALECT as GEMINI
from toolvocab.dialects.openai_chat import DIALECT as CHAT
from toolvocab.dialects.openai_responses import DIALECT as RESPONSES
from toolvocab.dialects.sse import SSEParser
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.plan import Plan

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}}
TOOLS = Toolset(
    [
        DeclaredTool(name="list_files", input_schema=SCHEMA),
        DeclaredTool(name="get_time", input_schema={"type": "object", "properties": {}}),
    ]
)
PLAN = Plan()
FLOW_KEY = "flow-empty-args"

#: Empty forms as a string-carrying dialect sends them (Chat, Responses): text or JSON value.
STRING_FORMS = [
    pytest.param("", id="empty-string"),
    pytest.param("   ", id="blank-string"),
    pytest.param("null", id="string-null"),
    pytest.param("[]", id="string-list"),
    pytest.param(None, id="json-null"),
    pytest.param([], id="json-list"),
]
#: Empty forms where the dialect carries objects (Anthropic input, Gemini args).
OBJECT_FORMS = [
    pytest.param("", id="empty-string"),
    pytest.param(None, id="json-null"),
    pytest.param([], id="json-list"),
]


#: The addon's per-flow resolver shape over TOOLS (callable, with ``tools``; keeps its decisions).
Resolver = functools.partial(Recorder, TOOLS)


def run(dialect: Any, data: bytes, seed: int | None) -> bytes:
    return rewrite(
        dialect,
        Resolver(),
        PLAN,
        [data] if seed is None else random_chunks(data, random.Random(seed), 1, 32),
        flow_key=FLOW_KEY,
    )


def sse(events: list[tuple[str | None, dict[str, Any]]]) -> bytes:
    out = b""
    for name, data in events:
        out += (f"event: {name}\n".encode() if name else b"") + b"data: " + orjson.dumps(data) + b"\n\n"
    return out


def parsed(out: bytes) -> list[Any]:
    parser = SSEParser()
    return [e.json() for e in parser.feed(out) + parser.close()]


SEEDS = [None, 1, 2, 3]

# -- Chat Completions ---------------------------------------------------------------------------


def chat_json(arguments: Any, finish: str = "stop", legacy: bool = False) -> dict[str, Any]:
    fn = {"name": "list_files", "arguments": arguments}
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if legacy:
        message["function_call"] = fn
    else:
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": fn}]
    return {
        "id": "chatcmpl-e",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
    }


@pytest.mark.parametrize("arguments", STRING_FORMS)
def test_chat_json_empty_arguments_become_an_empty_object(arguments: Any) -> None:
    body = chat_json(arguments)
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    call = body["choices"][0]["message"]["tool_calls"][0]
    assert call["function"] == {"name": "list_files", "arguments": "{}"}
    assert call["id"] == "call_1"
    assert body["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("arguments", STRING_FORMS)
def test_chat_json_legacy_function_call_empty_arguments_become_an_empty_object(arguments: Any) -> None:
    body = chat_json(arguments, finish="function_call", legacy=True)
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert body["choices"][0]["message"]["function_call"] == {"name": "list_files", "arguments": "{}"}
    assert body["choices"][0]["finish_reason"] == "function_call"


def test_chat_json_empty_object_and_absent_arguments_are_left() -> None:
    for body in (chat_json("{}", finish="tool_calls"), chat_json('{"path": "."}', finish="tool_calls")):
        before = orjson.dumps(body)
        assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        assert orjson.dumps(body) == before


def test_chat_json_absent_arguments_are_not_an_empty_form() -> None:
    body = chat_json(None, finish="tool_calls")
    del body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    before = orjson.dumps(body)
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


def test_chat_json_declared_call_with_stop_gets_finish_reason_tool_calls() -> None:
    body = chat_json('{"path": "src"}')
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] == '{"path": "src"}'


@pytest.mark.parametrize("finish", ["length", "content_filter", "tool_calls"])
def test_chat_json_finish_reason_other_than_stop_is_kept(finish: str) -> None:
    body = chat_json('{"path": "src"}', finish=finish)
    before = orjson.dumps(body)
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


def test_chat_json_stop_without_tool_calls_is_kept() -> None:
    for message in ({"role": "assistant", "content": "hi"}, {"role": "assistant", "content": "hi", "tool_calls": []}):
        body = {
            "id": "c",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        }
        before = orjson.dumps(body)
        assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        assert orjson.dumps(body) == before


CHAT_HEAD = {"id": "chatcmpl-e", "object": "chat.completion.chunk", "created": 1, "model": "m"}


def chat_stream(fragments: list[Any], finish: str = "stop", first_has_arguments: bool = True) -> bytes:
    """One call; ``fragments`` are the ``arguments`` values of its deltas (the first carries id
    and name)."""
    events = [
        {**CHAT_HEAD, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}
    ]
    for i, fragment in enumerate(fragments or [None]):
        tc: dict[str, Any] = {"index": 0}
        fn: dict[str, Any] = {}
        if i == 0:
            tc.update(id="call_1", type="function")
            fn["name"] = "list_files"
        if fragments and (i or first_has_arguments):
            fn["arguments"] = fragment
        tc["function"] = fn
        events.append({**CHAT_HEAD, "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]})
    events.append({**CHAT_HEAD, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return sse([(None, e) for e in events]) + b"data: [DONE]\n\n"


def chat_client_view(out: bytes) -> dict[str, Any]:
    """As the openai SDK assembles a streamed call: strings concatenated per index."""
    call: dict[str, str] = {"id": "", "name": "", "arguments": ""}
    finish = None
    for data in parsed(out):
        if not isinstance(data, dict):
            continue
        for choice in data.get("choices") or ():
            for tc in (choice.get("delta") or {}).get("tool_calls") or ():
                call["id"] += tc.get("id") or ""
                fn = tc.get("function") or {}
                call["name"] += fn.get("name") or ""
                call["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {**call, "finish_reason": finish}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "fragments",
    [
        pytest.param([""], id="one-empty"),
        pytest.param(["", ""], id="two-empty"),
        pytest.param([" "], id="blank"),
        pytest.param(["nu", "ll"], id="null-split"),
        pytest.param(["", "[", "]"], id="list-split"),
        pytest.param([None], id="json-null"),
        pytest.param([[]], id="json-list"),
    ],
)
def test_chat_stream_empty_arguments_become_an_empty_object(fragments: list[Any], seed: int | None) -> None:
    view = chat_client_view(run(CHAT, chat_stream(fragments), seed))
    assert view == {"id": "call_1", "name": "list_files", "arguments": "{}", "finish_reason": "tool_calls"}


@pytest.mark.parametrize("seed", SEEDS)
def test_chat_stream_declared_call_with_stop_changes_only_the_finish_reason(seed: int | None) -> None:
    upstream = chat_stream(['{"pa', 'th": "src"}'])
    out = run(CHAT, upstream, seed)
    before, after = parsed(upstream), parsed(out)
    assert len(before) == len(after)
    for b, a in zip(before[:-2], after[:-2]):
        assert a == b
    assert after[-2]["choices"][0]["finish_reason"] == "tool_calls"
    assert {**after[-2], "choices": [{**after[-2]["choices"][0], "finish_reason": "stop"}]} == before[-2]
    assert out.split(b"\n\n")[:-3] == upstream.split(b"\n\n")[:-3]  # every other event byte-identical


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("finish", ["length", "tool_calls"])
def test_chat_stream_finish_reason_other_than_stop_is_byte_identical(finish: str, seed: int | None) -> None:
    upstream = chat_stream(['{"path": "src"}'], finish=finish)
    assert run(CHAT, upstream, seed) == upstream


@pytest.mark.parametrize("seed", SEEDS)
def test_chat_stream_empty_object_is_byte_identical(seed: int | None) -> None:
    upstream = chat_stream(["{", "}"], finish="tool_calls")
    assert run(CHAT, upstream, seed) == upstream


@pytest.mark.parametrize("seed", SEEDS)
def test_chat_stream_absent_arguments_are_byte_identical(seed: int | None) -> None:
    upstream = chat_stream([], finish="tool_calls")
    assert b'"arguments"' not in upstream
    assert run(CHAT, upstream, seed) == upstream


def chat_legacy_stream(name: str, fragments: list[Any] | None, finish: str = "function_call") -> bytes:
    """A legacy ``delta.function_call`` stream: the name in the first delta, then the argument
    fragments (``None``: no ``arguments`` key anywhere)."""
    events = [
        {**CHAT_HEAD, "choices": [{"index": 0, "delta": {"role": "assistant", "content": None}, "finish_reason": None}]}
    ]
    first: dict[str, Any] = {"name": name}
    if fragments is not None:
        first["arguments"] = fragments[0] if fragments else ""
    events.append({**CHAT_HEAD, "choices": [{"index": 0, "delta": {"function_call": first}, "finish_reason": None}]})
    for fragment in (fragments or [])[1:]:
        events.append(
            {
                **CHAT_HEAD,
                "choices": [{"index": 0, "delta": {"function_call": {"arguments": fragment}}, "finish_reason": None}],
            }
        )
    events.append({**CHAT_HEAD, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    return sse([(None, e) for e in events]) + b"data: [DONE]\n\n"


def chat_legacy_view(out: bytes) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "", "arguments": None}
    finish = None
    for data in parsed(out):
        if not isinstance(data, dict):
            continue
        for choice in data.get("choices") or ():
            fc = (choice.get("delta") or {}).get("function_call") or {}
            call["name"] += fc.get("name") or ""
            if "arguments" in fc:
                call["arguments"] = (call["arguments"] or "") + (fc["arguments"] or "")
            finish = choice.get("finish_reason") or finish
    return {**call, "finish_reason": finish}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "fragments",
    [
        pytest.param([""], id="empty"),
        pytest.param(["", "nu", "ll"], id="null-split"),
        pytest.param([None], id="json-null"),
        pytest.param(["[", "]"], id="list-split"),
    ],
)
def test_chat_stream_legacy_function_call_empty_arguments_become_an_empty_object(
    fragments: list[Any], seed: int | None
) -> None:
    view = chat_legacy_view(run(CHAT, chat_legacy_stream("list_files", fragments), seed))
    assert view == {"name": "list_files", "arguments": "{}", "finish_reason": "function_call"}


@pytest.mark.parametrize("seed", SEEDS)
def test_chat_stream_legacy_function_call_foreign_name_is_renamed_with_its_arguments(seed: int | None) -> None:
    view = chat_legacy_view(run(CHAT, chat_legacy_stream("List_Files", ['{"pa', 'th": "src"}']), seed))
    assert view["name"] == "list_files"
    assert orjson.loads(view["arguments"]) == {"path": "src"}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    "fragments",
    [
        pytest.param(['{"pa', 'th": "src"}'], id="declared"),
        pytest.param(["{}"], id="empty-object"),
        pytest.param(None, id="absent"),
    ],
)
def test_chat_stream_legacy_function_call_that_needs_no_change_is_byte_identical(
    fragments: list[Any] | None, seed: int | None
) -> None:
    upstream = chat_legacy_stream("list_files", fragments)
    assert run(CHAT, upstream, seed) == upstream


def test_chat_stream_text_only_answer_keeps_stop() -> None:
    events = [
        {**CHAT_HEAD, "choices": [{"index": 0, "delta": {"content": "hello"}, "finish_reason": None}]},
        {**CHAT_HEAD, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]},
    ]
    upstream = sse([(None, e) for e in events]) + b"data: [DONE]\n\n"
    assert run(CHAT, upstream, None) == upstream


def test_chat_stream_second_choice_without_calls_keeps_stop() -> None:
    tc = {"index": 0, "id": "call_1", "type": "function", "function": {"name": "list_files", "arguments": ""}}
    events = [
        {**CHAT_HEAD, "choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]},
        {**CHAT_HEAD, "choices": [{"index": 1, "delta": {"content": "text"}, "finish_reason": None}]},
        {
            **CHAT_HEAD,
            "choices": [
                {"index": 0, "delta": {}, "finish_reason": "stop"},
                {"index": 1, "delta": {}, "finish_reason": "stop"},
            ],
        },
    ]
    out = parsed(run(CHAT, sse([(None, e) for e in events]) + b"data: [DONE]\n\n", None))
    finishes = {
        c["index"]: c["finish_reason"]
        for d in out
        if isinstance(d, dict)
        for c in d["choices"]
        if c.get("finish_reason")
    }
    assert finishes == {0: "tool_calls", 1: "stop"}


# -- Responses ----------------------------------------------------------------------------------


def responses_item(arguments: Any, status: str = "completed", with_arguments: bool = True) -> dict[str, Any]:
    item = {"id": "fc_1", "type": "function_call", "status": status, "call_id": "call_1", "name": "list_files"}
    if with_arguments:
        item["arguments"] = arguments
    return item


@pytest.mark.parametrize("arguments", STRING_FORMS)
def test_responses_json_empty_arguments_become_an_empty_object(arguments: Any) -> None:
    body = {"id": "resp_1", "object": "response", "status": "completed", "output": [responses_item(arguments)]}
    assert RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert body["output"][0] == {**responses_item("{}")}


@pytest.mark.parametrize(
    "item", [responses_item("{}"), responses_item(None, with_arguments=False), responses_item('{"path": "."}')]
)
def test_responses_json_empty_object_or_absent_arguments_are_left(item: dict[str, Any]) -> None:
    body = {"id": "resp_1", "object": "response", "status": "completed", "output": [item]}
    before = orjson.dumps(body)
    assert RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


def responses_stream(
    deltas: list[Any],
    done_arguments: Any,
    end: str | None = "response.completed",
    status: Any = "completed",
    after: bool = False,
) -> bytes:
    """A call to ``list_files`` whose arguments stream as ``deltas``, then (``after``) a message
    item, then the event ``end`` (``None``: the stream just stops) with a response of ``status``."""
    seq = iter(range(100))
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "response.created",
            {
                "type": "response.created",
                "sequence_number": next(seq),
                "response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": []},
            },
        ),
        (
            "response.output_item.added",
            {
                "type": "response.output_item.added",
                "sequence_number": next(seq),
                "output_index": 0,
                "item": responses_item("", status="in_progress"),
            },
        ),
    ]
    for delta in deltas:
        events.append(
            (
                "response.function_call_arguments.delta",
                {
                    "type": "response.function_call_arguments.delta",
                    "sequence_number": next(seq),
                    "item_id": "fc_1",
                    "output_index": 0,
                    "delta": delta,
                },
            )
        )
    events += [
        (
            "response.function_call_arguments.done",
            {
                "type": "response.function_call_arguments.done",
                "sequence_number": next(seq),
                "item_id": "fc_1",
                "output_index": 0,
                "arguments": done_arguments,
            },
        ),
        (
            "response.output_item.done",
            {
                "type": "response.output_item.done",
                "sequence_number": next(seq),
                "output_index": 0,
                "item": responses_item(done_arguments),
            },
        ),
    ]
    output = [responses_item(done_arguments)]
    if after:
        message = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed"}
        text = {"type": "output_text", "text": "Listing.", "annotations": []}
        for kind, item in (("added", {**message, "content": []}), ("done", {**message, "content": [text]})):
            event = {"type": f"response.output_item.{kind}", "sequence_number": next(seq), "output_index": 1}
            events.append((event["type"], {**event, "item": item}))
        output.append({**message, "content": [text]})
    if end == "error":
        events.append(("error", {"type": "error", "sequence_number": next(seq), "code": "server_error"}))
    elif end is not None:
        response = {"id": "resp_1", "object": "response", "status": status, "output": output}
        events.append((end, {"type": end, "sequence_number": next(seq), "response": response}))
    return sse(events)


def responses_client_view(out: bytes) -> dict[str, Any]:
    """Every place a Responses client reads a call's arguments."""
    view: dict[str, Any] = {"accumulated": None, "done": None, "item_done": None, "completed": None}
    for data in parsed(out):
        kind = data.get("type") if isinstance(data, dict) else None  # None: a comment
        if kind == "response.output_item.added":
            view["accumulated"] = data["item"]["arguments"]
        elif kind == "response.function_call_arguments.delta":
            view["accumulated"] += data["delta"]
        elif kind == "response.function_call_arguments.done":
            view["done"] = data["arguments"]
        elif kind == "response.output_item.done":
            view["item_done"] = data["item"]["arguments"]
        elif kind == "response.completed":
            view["completed"] = data["response"]["output"][0]["arguments"]
    return view


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("deltas", "done"),
    [
        pytest.param([], "", id="no-delta"),
        pytest.param([""], "", id="empty-delta"),
        pytest.param(["nu", "ll"], "null", id="null"),
        pytest.param(["[", "]"], "[]", id="list"),
        pytest.param([], None, id="json-null"),
    ],
)
def test_responses_stream_empty_arguments_become_an_empty_object(
    deltas: list[str], done: Any, seed: int | None
) -> None:
    out = run(RESPONSES, responses_stream(deltas, done), seed)
    view = responses_client_view(out)
    assert view["done"] == view["item_done"] == view["completed"] == "{}"
    assert view["accumulated"] == ("{}" if deltas else "")
    numbers = [d["sequence_number"] for d in parsed(out)]
    assert numbers == list(range(len(numbers)))


@pytest.mark.parametrize("seed", SEEDS)
def test_responses_stream_empty_object_is_byte_identical(seed: int | None) -> None:
    upstream = responses_stream(["{", "}"], "{}")
    assert run(RESPONSES, upstream, seed) == upstream


@pytest.mark.parametrize(
    ("deltas", "done"), [pytest.param([], "", id="no-delta"), pytest.param(["nu", "ll"], "null", id="null")]
)
def test_responses_websocket_frames_empty_arguments_become_an_empty_object(deltas: list[str], done: Any) -> None:
    """Codex's WebSocket transport: one JSON event per frame, through the same rewriter."""
    rw = RESPONSES.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    frames = [JSONFrame(orjson.dumps(data)) for data in parsed(responses_stream(deltas, done))]
    out = [unit for frame in frames for unit in rw.on_unit(frame)] + rw.held_units()
    view = responses_client_view(sse([(None, unit.json()) for unit in out]))
    assert view["done"] == view["item_done"] == view["completed"] == "{}"
    assert [u.json()["sequence_number"] for u in out] == list(range(len(frames)))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("end", "status"),
    [
        ("response.incomplete", "incomplete"),
        ("response.failed", "failed"),
        ("response.completed", "cancelled"),
        ("response.done", None),
        ("response.done", "incomplete"),
        ("error", None),
        (None, None),
    ],
)
@pytest.mark.parametrize("after", [False, True], ids=["last", "text-after"])
def test_responses_stream_empty_arguments_of_a_response_cut_short_stay(
    end: str | None, status: Any, after: bool, seed: int | None
) -> None:
    """The call's ``output_item.done`` comes before the event that says how the response ended
    (``incomplete``, ``failed``, an ``error``, no end at all): the call waits for it, and its empty
    arguments stay as sent (the stream byte for byte: list_files is declared)."""
    upstream = responses_stream([], "", end=end, status=status, after=after)
    assert run(RESPONSES, upstream, seed) == upstream


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("end", ["response.completed", "response.done"])
def test_responses_stream_empty_arguments_followed_by_more_output_stay(end: str, seed: int | None) -> None:
    """A message after the call: how the response ends is not known when the call must go (its
    order kept), so its empty arguments stay as sent, as an Anthropic block's do when another
    block follows; nothing after it is held (the stream byte for byte)."""
    upstream = responses_stream(["nu", "ll"], "null", end=end, after=True)
    assert run(RESPONSES, upstream, seed) == upstream


@pytest.mark.parametrize("seed", SEEDS)
def test_responses_stream_empty_arguments_wait_past_a_comment_for_the_end(seed: int | None) -> None:
    """A keep-alive comment between the call and ``response.completed`` says nothing of the end:
    the call waits past it (the comment kept in its place) and becomes ``{}``."""
    upstream = responses_stream([], "")
    cut = upstream.index(b"event: response.completed")
    upstream = upstream[:cut] + b": keep-alive\n\n" + upstream[cut:]
    out = run(RESPONSES, upstream, seed)
    assert responses_client_view(out)["item_done"] == responses_client_view(out)["completed"] == "{}"
    assert out.index(b"output_item.done") < out.index(b": keep-alive") < out.index(b"response.completed")


@pytest.mark.parametrize("status", ["failed", "cancelled", "incomplete"])
@pytest.mark.parametrize("arguments", ["", "null", None])
def test_responses_json_empty_arguments_of_a_response_cut_short_stay(status: str, arguments: Any) -> None:
    body = {"id": "resp_1", "object": "response", "status": status, "output": [responses_item(arguments)]}
    before = orjson.dumps(body)
    RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before


def test_responses_websocket_frames_wait_for_the_end_and_a_failed_one_keeps_empty_arguments() -> None:
    """Frame by frame: after the call's ``output_item.done`` its frames are held (a stall
    releases them: :meth:`held_units` gives them as they came); ``response.failed`` leaves them."""
    frames = [
        JSONFrame(orjson.dumps(d)) for d in parsed(responses_stream([], "", end="response.failed", status="failed"))
    ]
    rw = RESPONSES.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    out = [unit for frame in frames[:-1] for unit in rw.on_unit(frame)]
    assert rw.has_held()
    assert [u.raw for u in out + rw.held_units()] == [f.raw for f in frames[:-1]]
    rw = RESPONSES.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    out = [unit for frame in frames for unit in rw.on_unit(frame)]
    assert [u.raw for u in out] == [f.raw for f in frames] and not rw.has_held()


def test_responses_stream_stall_after_the_call_lets_it_go_as_it_came() -> None:
    """The stall bound fires after the call's ``output_item.done``, before the response's end:
    the call goes as it came (its empty arguments are not written without the end), the rest is
    read as usual."""
    upstream = responses_stream([], "", after=True)
    events = upstream.split(b"\n\n")
    cut = next(k for k, e in enumerate(events) if b"msg_1" in e)
    head, tail = b"\n\n".join(events[:cut]) + b"\n\n", b"\n\n".join(events[cut:])
    rw = RESPONSES.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    out = b"".join(rw.feed(head))
    assert rw.has_held() and b"output_item.done" not in out
    out += b"".join(rw.let_go("the upstream sent no byte for 2.0 s"))
    out += b"".join(rw.feed(tail)) + b"".join(rw.finish())
    assert out == upstream
    assert rw.unrepaired == ["the upstream sent no byte for 2.0 s while the tool call list_files was held"]


# -- Anthropic ----------------------------------------------------------------------------------


def anthropic_block(value: Any, present: bool = True) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "list_files"}
    if present:
        block["input"] = value
    return block


@pytest.mark.parametrize("value", OBJECT_FORMS)
def test_anthropic_json_empty_input_becomes_an_empty_object(value: Any) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [anthropic_block(value)],
        "stop_reason": "tool_use",
    }
    assert ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert body["content"][0] == anthropic_block({})


@pytest.mark.parametrize(
    "block", [anthropic_block({}), anthropic_block({"path": "."}), anthropic_block('{"path": "."}')]
)
def test_anthropic_json_object_and_odd_inputs_are_left(block: dict[str, Any]) -> None:
    body = {"id": "msg_1", "type": "message", "role": "assistant", "content": [block], "stop_reason": "tool_use"}
    before = orjson.dumps(body)
    assert ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


def anthropic_stream(start_input: Any, deltas: list[str], stop: Any = "tool_use", after: bool = False) -> bytes:
    events: list[tuple[str, dict[str, Any]]] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"id": "msg_1", "type": "message", "role": "assistant", "content": []},
            },
        ),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": anthropic_block(start_input)},
        ),
        ("ping", {"type": "ping"}),
    ]
    for partial in deltas:
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": partial},
                },
            )
        )
    events.append(("content_block_stop", {"type": "content_block_stop", "index": 0}))
    if after:  # a second block (a declared call) before the message_delta
        events += [
            (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_2", "name": "get_time", "input": {}},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ]
    events += [
        ("ping", {"type": "ping"}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    return sse(events)


def anthropic_client_input(out: bytes) -> Any:
    """As the anthropic SDK assembles a tool_use: the start's input, replaced by the parsed
    concatenation of the input_json_delta fragments when there are any."""
    start, buf = None, ""
    for data in parsed(out):
        if data.get("type") == "content_block_start":
            start = data["content_block"]["input"]
        elif data.get("type") == "content_block_delta" and data["delta"].get("type") == "input_json_delta":
            buf += data["delta"]["partial_json"]
    return orjson.loads(buf) if buf else start


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("start", "deltas"),
    [
        pytest.param(None, [], id="start-null"),
        pytest.param("", [], id="start-empty-string"),
        pytest.param([], [], id="start-list"),
        pytest.param({}, ["null"], id="delta-null"),
        pytest.param({}, ["[", "]"], id="delta-list"),
        pytest.param({}, ['""'], id="delta-empty-string"),
        pytest.param(None, ["", ""], id="start-null-empty-deltas"),
    ],
)
def test_anthropic_stream_empty_input_becomes_an_empty_object(start: Any, deltas: list[str], seed: int | None) -> None:
    out = run(ANTHROPIC, anthropic_stream(start, deltas), seed)
    assert anthropic_client_input(out) == {}
    blocks = [d for d in parsed(out) if d.get("type") == "content_block_start"]
    assert blocks[0]["content_block"]["input"] == {}


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(
    ("start", "deltas"),
    [
        pytest.param({}, [], id="normal-no-delta"),
        pytest.param({}, [""], id="normal-empty-delta"),
        pytest.param({}, ["", "{}"], id="normal-object-delta"),
        pytest.param({}, ['{"pa', 'th": "."}'], id="declared-arguments"),
    ],
)
def test_anthropic_stream_normal_empty_input_is_byte_identical(start: Any, deltas: list[str], seed: int | None) -> None:
    upstream = anthropic_stream(start, deltas)
    assert run(ANTHROPIC, upstream, seed) == upstream


# -- Gemini -------------------------------------------------------------------------------------


def gemini_answer(value: Any, present: bool = True) -> dict[str, Any]:
    call: dict[str, Any] = {"name": "list_files"}
    if present:
        call["args"] = value
    return {"candidates": [{"content": {"role": "model", "parts": [{"functionCall": call}]}, "finishReason": "STOP"}]}


def gemini_args(answer: Any) -> Any:
    return answer["candidates"][0]["content"]["parts"][0]["functionCall"].get("args", "absent")


@pytest.mark.parametrize("value", OBJECT_FORMS)
def test_gemini_json_empty_args_become_an_empty_object(value: Any) -> None:
    body = gemini_answer(value)
    assert GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert body == gemini_answer({})


@pytest.mark.parametrize("body", [gemini_answer({}), gemini_answer(None, present=False), gemini_answer({"path": "."})])
def test_gemini_json_object_or_absent_args_are_left(body: dict[str, Any]) -> None:
    before = orjson.dumps(body)
    assert GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("framing", ["sse", "array"])
@pytest.mark.parametrize("value", OBJECT_FORMS)
def test_gemini_stream_empty_args_become_an_empty_object(value: Any, framing: str, seed: int | None) -> None:
    first = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Listing."}]}}]}
    answers = [first, gemini_answer(value)]
    if framing == "sse":
        upstream = sse([(None, a) for a in answers])
        got = parsed(run(GEMINI, upstream, seed))
    else:
        upstream = b"[" + b",\r\n".join(orjson.dumps(a) for a in answers) + b"]"
        got = orjson.loads(run(GEMINI, upstream, seed))
    assert got == [first, gemini_answer({})]


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("framing", ["sse", "array"])
@pytest.mark.parametrize("answer", [gemini_answer({}), gemini_answer(None, present=False)])
def test_gemini_stream_object_or_absent_args_are_byte_identical(
    answer: dict[str, Any], framing: str, seed: int | None
) -> None:
    upstream = sse([(None, answer)]) if framing == "sse" else b"[" + orjson.dumps(answer) + b"]"
    assert run(GEMINI, upstream, seed) == upstream


# -- a call the engine leaves keeps its empty arguments -------------------------------------------


def test_chat_json_undeclared_tool_with_empty_arguments_is_left() -> None:
    body = chat_json("", finish="tool_calls")
    body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] = "frobnicate"
    before = orjson.dumps(body)
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


def test_responses_json_undeclared_tool_with_empty_arguments_is_left() -> None:
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [{**responses_item(""), "name": "frobnicate"}],
    }
    before = orjson.dumps(body)
    assert RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


@pytest.mark.parametrize("value", OBJECT_FORMS)
def test_anthropic_and_gemini_json_undeclared_tool_with_empty_arguments_is_left(value: Any) -> None:
    anthropic = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [{**anthropic_block(value), "name": "frobnicate"}],
    }
    gemini = gemini_answer(value)
    gemini["candidates"][0]["content"]["parts"][0]["functionCall"]["name"] = "frobnicate"
    for dialect, body in ((ANTHROPIC, anthropic), (GEMINI, gemini)):
        before = orjson.dumps(body)
        assert dialect.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        assert orjson.dumps(body) == before


# -- a tool that requires input, and an answer that was cut off ------------------------------------
# BR-22: {} only for a tool that requires nothing, so that the client reports the missing input;
# and never at the end of an answer that stopped before the call did (a truncated call is never
# completed).

REQUIRING = Toolset([DeclaredTool(name="list_files", input_schema={**SCHEMA, "required": ["path"]})])


def _chat_arguments_stay(body: dict[str, Any], resolver: Any, arguments: Any) -> None:
    CHAT.rewrite_response(body, context(resolver, PLAN, flow_key=FLOW_KEY))
    got = body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    # As sent; a JSON list is only written as the string the API specifies (BR-21), never as {}.
    assert got == (orjson.dumps(arguments).decode() if isinstance(arguments, list) else arguments)


@pytest.mark.parametrize("arguments", STRING_FORMS)
def test_chat_json_empty_arguments_stay_for_a_tool_that_requires_input(arguments: Any) -> None:
    _chat_arguments_stay(chat_json(arguments, finish="tool_calls"), Recorder(REQUIRING), arguments)


@pytest.mark.parametrize("arguments", STRING_FORMS)
def test_chat_json_empty_arguments_at_the_token_limit_stay(arguments: Any) -> None:
    _chat_arguments_stay(chat_json(arguments, finish="length"), Resolver(), arguments)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("ending", ["no-finish-reason", "length"])
def test_chat_stream_cut_off_keeps_empty_arguments_as_sent(seed: int | None, ending: str) -> None:
    data = chat_stream([""], finish="length")
    if ending == "no-finish-reason":
        data = data[
            : data.index(
                b'data: {"id":"chatcmpl-e","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"'
            )
        ]
    view = chat_client_view(run(CHAT, data, seed))
    assert view["arguments"] == "" and view["name"] == "list_files"


@pytest.mark.parametrize("seed", SEEDS)
def test_chat_stream_empty_arguments_stay_for_a_tool_that_requires_input(seed: int | None) -> None:
    data = chat_stream([""], finish="tool_calls")
    out = rewrite(
        CHAT,
        Recorder(REQUIRING),
        PLAN,
        [data] if seed is None else random_chunks(data, random.Random(seed), 1, 32),
        flow_key=FLOW_KEY,
    )
    assert chat_client_view(out)["arguments"] == ""


@pytest.mark.parametrize("value", OBJECT_FORMS)
def test_anthropic_json_empty_input_of_the_last_block_at_max_tokens_stays(value: Any) -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "content": [anthropic_block(value)],
        "stop_reason": "max_tokens",
    }
    before = orjson.dumps(body)
    assert ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


@pytest.mark.parametrize("arguments", ["", "null"])
def test_responses_json_incomplete_item_keeps_empty_arguments(arguments: str) -> None:
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "id": "fc_1",
                "type": "function_call",
                "status": "incomplete",
                "call_id": "call_1",
                "name": "list_files",
                "arguments": arguments,
            }
        ],
    }
    RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert body["output"][0]["arguments"] == arguments


@pytest.mark.parametrize("arguments", ["", "null"])
def test_responses_json_incomplete_response_keeps_empty_arguments_of_a_completed_item(arguments: str) -> None:
    # The response was cut off (max_output_tokens) although the item says completed: the answer
    # may have stopped short of more input for it; {} is never written then.
    body = {
        "id": "resp_1",
        "object": "response",
        "status": "incomplete",
        "incomplete_details": {"reason": "max_output_tokens"},
        "output": [
            {
                "id": "fc_1",
                "type": "function_call",
                "status": "completed",
                "call_id": "call_1",
                "name": "list_files",
                "arguments": arguments,
            }
        ],
    }
    RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert body["output"][0]["arguments"] == arguments
    complete = {**body, "status": "completed", "incomplete_details": None}
    complete["output"] = [{**body["output"][0]}]
    RESPONSES.rewrite_response(complete, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert complete["output"][0]["arguments"] == "{}"  # the control: a complete answer's empty input is {}


# -- every stop but the model's own end leaves empty arguments as sent ------------------------------
# A truncated call is never completed, and a stop reason says whether the answer may have been cut:
# only the model's own end (Chat ``stop`` / ``tool_calls`` / ``function_call``, Anthropic
# ``end_turn`` / ``tool_use``, Gemini ``STOP``) lets empty arguments become ``{}``. Any other —
# a token or context limit, a content filter, a refusal, a server's own reason, a reason this
# project has never seen, or none — leaves them as the upstream sent them.

from hypothesis import given  # noqa: E402
from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

CHAT_ENDS = {"stop", "tool_calls", "function_call"}
ANTHROPIC_ENDS = {"end_turn", "tool_use"}
#: Reasons the APIs and servers document beside the natural ends, and values of other JSON types.
CHAT_CUTS = ["length", "content_filter", "insufficient_system_resource", "error", "max_tokens", None, 0, ["stop"]]
ANTHROPIC_CUTS = ["max_tokens", "refusal", "pause_turn", "model_context_window_exceeded", "stop_sequence", None]
GEMINI_CUTS = ["MAX_TOKENS", "SAFETY", "RECITATION", "MALFORMED_FUNCTION_CALL", "OTHER", "BLOCKLIST", None, "stop"]
#: Any JSON scalar or short string a server might put in the stop-reason field.
REASONS = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1), st.text(max_size=30))


def _chat_json_keeps(arguments: Any, finish: Any) -> bool:
    """The call's arguments as sent (a JSON list only written as the string the API specifies,
    BR-21), not ``"{}"``."""
    body = chat_json(arguments, finish=finish)
    CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    got = body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]
    assert got in ("{}", arguments, orjson.dumps(arguments).decode()), got
    return got != "{}"


def _anthropic_json_keeps(value: Any, stop: Any) -> bool:
    body = {"id": "msg_1", "type": "message", "role": "assistant", "content": [anthropic_block(value)]}
    body["stop_reason"] = stop
    before = orjson.dumps(body)
    ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    return orjson.dumps(body) == before


def _gemini_answer(value: Any, finish: Any) -> dict[str, Any]:
    answer = gemini_answer(value)
    if finish is None:
        del answer["candidates"][0]["finishReason"]
    else:
        answer["candidates"][0]["finishReason"] = finish
    return answer


def _gemini_json_keeps(value: Any, finish: Any) -> bool:
    body = _gemini_answer(value, finish)
    before = orjson.dumps(body)
    GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    return orjson.dumps(body) == before


@pytest.mark.parametrize("finish", CHAT_CUTS)
@pytest.mark.parametrize("arguments", STRING_FORMS)
def test_chat_json_empty_arguments_after_any_other_stop_stay(arguments: Any, finish: Any) -> None:
    assert _chat_json_keeps(arguments, finish)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("finish", ["content_filter", "insufficient_system_resource", "error"])
def test_chat_stream_empty_arguments_after_any_other_stop_stay(seed: int | None, finish: str) -> None:
    view = chat_client_view(run(CHAT, chat_stream([""], finish=finish), seed))
    assert view["arguments"] == "" and view["name"] == "list_files"


@pytest.mark.parametrize("stop", ANTHROPIC_CUTS)
@pytest.mark.parametrize("value", OBJECT_FORMS)
def test_anthropic_json_empty_input_after_any_other_stop_stays(value: Any, stop: Any) -> None:
    assert _anthropic_json_keeps(value, stop)


@pytest.mark.parametrize("finish", GEMINI_CUTS)
@pytest.mark.parametrize("value", OBJECT_FORMS)
def test_gemini_json_empty_args_after_any_other_stop_stay(value: Any, finish: Any) -> None:
    assert _gemini_json_keeps(value, finish)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("framing", ["sse", "array"])
@pytest.mark.parametrize("finish", ["MAX_TOKENS", "SAFETY", "MALFORMED_FUNCTION_CALL", None])
def test_gemini_stream_empty_args_after_any_other_stop_stay(finish: Any, framing: str, seed: int | None) -> None:
    # None: the call's chunk carries no finishReason; the stop comes (or not) in a later chunk.
    answers = [_gemini_answer(None, finish), {"candidates": [{"content": {"role": "model", "parts": []}}]}]
    if finish is None:
        answers[1]["candidates"][0]["finishReason"] = "STOP"
    if framing == "sse":
        upstream = sse([(None, a) for a in answers])
    else:
        upstream = b"[" + b",\r\n".join(orjson.dumps(a) for a in answers) + b"]"
    assert run(GEMINI, upstream, seed) == upstream


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("stop", ANTHROPIC_CUTS)
@pytest.mark.parametrize(
    ("start", "deltas"),
    [
        pytest.param(None, [], id="start-null"),
        pytest.param("", [], id="start-empty-string"),
        pytest.param([], [], id="start-list"),
        pytest.param({}, ["null"], id="delta-null"),
        pytest.param({}, ["[", "]"], id="delta-list"),
    ],
)
def test_anthropic_stream_empty_input_after_any_other_stop_stays(
    start: Any, deltas: list[str], stop: Any, seed: int | None
) -> None:
    """The block's stop comes before the message_delta that says how the answer ended: the
    block waits for it, and after any stop but the model's own end its input stays as sent
    (the stream byte for byte: list_files is declared, nothing else changes)."""
    upstream = anthropic_stream(start, deltas, stop=stop)
    assert run(ANTHROPIC, upstream, seed) == upstream


@pytest.mark.parametrize("seed", SEEDS)
def test_anthropic_stream_empty_input_followed_by_another_block_stays(seed: int | None) -> None:
    """Another block before the message_delta: how the answer ends is not known when the first
    block must go out (its order kept), so its input stays as sent."""
    upstream = anthropic_stream(None, [], stop="tool_use", after=True)
    assert run(ANTHROPIC, upstream, seed) == upstream


@settings(max_examples=200, deadline=None)
@given(reason=REASONS, arguments=st.sampled_from(["", "null", "[]", None]))
def test_property_empty_arguments_become_an_object_only_after_the_models_own_end(reason: Any, arguments: Any) -> None:
    """Over any stop reason: empty arguments change (to ``{}``) exactly when the reason is one of
    the dialect's natural ends, in Chat, Anthropic, Gemini and Responses alike (a Responses
    ``status``, in a JSON answer and in the ``response.done`` that ends a stream)."""
    assert _chat_json_keeps(arguments, reason) is (reason not in CHAT_ENDS)
    value = None if arguments in ("null", None) else ([] if arguments == "[]" else "")
    assert _anthropic_json_keeps(value, reason) is (reason not in ANTHROPIC_ENDS)
    assert _gemini_json_keeps(value, reason) is (reason != "STOP")
    stream = anthropic_stream(value, [], stop=reason)
    assert (run(ANTHROPIC, stream, 1) == stream) is (reason not in ANTHROPIC_ENDS)
    body = {"id": "resp_1", "object": "response", "status": reason, "output": [responses_item(arguments)]}
    before = orjson.dumps(body)
    RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert (orjson.dumps(body) == before) is (reason != "completed")
    stream = responses_stream([], arguments, end="response.done", status=reason)
    assert (run(RESPONSES, stream, 1) == stream) is (reason != "completed")


@settings(max_examples=200, deadline=None)
@given(
    status=st.one_of(st.sampled_from(["completed", "incomplete", "failed", "cancelled"]), REASONS),
    end=st.sampled_from(["response.completed", "response.done", "response.incomplete", "response.failed"]),
    after=st.booleans(),
    arguments=st.sampled_from(["", "null", "[]", None]),
)
def test_property_responses_empty_arguments_become_an_object_only_at_a_completed_end(
    status: Any, end: str, after: bool, arguments: Any
) -> None:
    """Over the event that ends a Responses stream, its status and what follows the call: the
    empty arguments change (to ``{}``) exactly when the call is the answer's last output and the
    response ends completed (``response.completed`` or ``response.done`` with status
    ``completed``; ``response.completed`` that gives no status string says so by its type)."""
    stream = responses_stream([], arguments, end=end, status=status, after=after)
    completed = status == "completed" if isinstance(status, str) or end == "response.done" else True
    natural = end in ("response.completed", "response.done") and completed
    assert (run(RESPONSES, stream, 1) != stream) is (natural and not after)
