"""An answer the upstream keeps gains no call it never sent.

OpenAI's Responses API keeps a response unless the request says ``store: false`` (its default is
true), and a WebSocket connection keeps its last one even then (developers.openai.com/docs/
guides/websocket-mode). The next request may continue from it by ``previous_response_id``,
sending only outputs for the calls the client got: a call id toolvocab made up (a lifted call, a
``multi_tool_use.parallel`` part, a replaced empty id) would name nothing the upstream knows, and
the turn would fail with ``No tool call found for function call output``. So for a kept answer the
markup stays text, the wrapper whole, an empty id empty; with ``store: false`` over HTTP they are
lifted, expanded and replaced (the controls). Through the addon's hooks (``tests/harness``).
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from test_websocket_hook import Session
from test_websocket_hook import load_frames

import harness
from harness.fixtures import loaded  # noqa: F401  (pytest fixture)

READ = {
    "type": "function",
    "name": "read_file",
    "description": "Read a file",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    },
}
MARKUP = '<tool_call>\n{"name": "read_file", "arguments": {"path": "/repo/README.md"}}\n</tool_call>'
WRAPPER = json.dumps(
    {
        "tool_uses": [
            {"recipient_name": "functions.read_file", "parameters": {"path": "a"}},
            {"recipient_name": "functions.read_file", "parameters": {"path": "b"}},
        ]
    }
)
#: ``store`` in the request: absent (the API's default, kept), true (kept), false (not kept).
KEPT = [
    pytest.param({}, id="store-absent"),
    pytest.param({"store": True}, id="store-true"),
    # The response's items are added to the conversation when it completes, store false or not.
    pytest.param({"store": False, "conversation": "conv_1"}, id="conversation"),
]
NOT_KEPT = {"store": False}


@pytest.fixture
def addon(loaded):
    with harness.configured(loaded) as e:
        yield e.addon


def message(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call(name: str, arguments: str, call_id: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": "fc_1",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def run(addon, store: dict[str, Any], output: list[dict[str, Any]]) -> tuple[bytes, bytes]:
    """(what the upstream answered, what the client got) for one JSON Responses flow; its
    record's notes in ``NOTES``."""
    body = {"model": "m", "input": [{"role": "user", "content": "hi"}], "tools": [READ], **store}
    answer = orjson.dumps({"id": "resp_1", "object": "response", "status": "completed", "output": output})
    f = harness.json_flow(
        addon, body, answer, host="api.openai.com", path="/v1/responses", headers=[("content-type", "application/json")]
    )
    NOTES[:] = f.metadata[harness.KEY]["notes"]
    return answer, f.response.content


NOTES: list[str] = []


def output_of(content: bytes) -> list[dict[str, Any]]:
    return orjson.loads(content)["output"]


@pytest.mark.parametrize("store", KEPT)
def test_markup_in_a_kept_answer_stays_text(addon, store) -> None:
    upstream, got = run(addon, store, [message(MARKUP)])
    assert got == upstream
    assert [n for n in NOTES if n.startswith("the upstream keeps this response")], NOTES


def test_markup_in_an_answer_not_kept_is_lifted(addon) -> None:
    _, got = run(addon, NOT_KEPT, [message(MARKUP)])
    [item] = output_of(got)
    assert item["type"] == "function_call" and item["name"] == "read_file"
    assert not [n for n in NOTES if n.startswith("the upstream keeps this response")], NOTES


@pytest.mark.parametrize("store", KEPT)
def test_a_parallel_wrapper_in_a_kept_answer_stays_whole(addon, store) -> None:
    upstream, got = run(addon, store, [call("multi_tool_use.parallel", WRAPPER, "call_W")])
    assert got == upstream
    assert [n for n in NOTES if n.startswith("the upstream keeps this response")], NOTES


def test_a_parallel_wrapper_in_an_answer_not_kept_becomes_its_calls(addon) -> None:
    _, got = run(addon, NOT_KEPT, [call("multi_tool_use.parallel", WRAPPER, "call_W")])
    assert [(i["name"], i["call_id"]) for i in output_of(got)] == [("read_file", "call_W_0"), ("read_file", "call_W_1")]


@pytest.mark.parametrize("store", KEPT)
def test_an_empty_call_id_in_a_kept_answer_stays_empty(addon, store) -> None:
    _, got = run(addon, store, [call("Read", '{"file_path": "/repo/README.md", "limit": 100}', "")])
    [item] = output_of(got)
    assert item["name"] == "read_file" and item["call_id"] == ""  # renamed: the id is the upstream's


def test_an_empty_call_id_in_an_answer_not_kept_is_replaced(addon) -> None:
    _, got = run(addon, NOT_KEPT, [call("Read", '{"file_path": "/repo/README.md", "limit": 100}', "")])
    [item] = output_of(got)
    assert item["name"] == "read_file" and item["call_id"].startswith("tc_")


# -- Codex's WebSocket: the connection keeps its last response, store false or not ---------------


@pytest.fixture
def env(loaded):
    with harness.configured(loaded) as e, harness.capture_injections(e):
        yield e
    harness.websocket(e.module)._ws.clear()


def test_a_parallel_wrapper_on_a_websocket_stays_whole(env) -> None:
    create, frames = load_frames()
    assert create.get("store") is False
    wrapped = json.loads(json.dumps(frames))
    for frame in wrapped:
        item = frame.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            item["name"] = "multi_tool_use.parallel"
            if item["arguments"]:
                item["arguments"] = WRAPPER
        if frame["type"] == "response.function_call_arguments.delta":
            frame["delta"] = WRAPPER if frame["sequence_number"] == 2 else ""
        if frame["type"] == "response.function_call_arguments.done":
            frame["arguments"] = WRAPPER
        if frame["type"] == "response.completed":
            for item in frame["response"]["output"]:
                item["name"], item["arguments"] = "multi_tool_use.parallel", WRAPPER
    s = Session(env)
    s.create(
        {
            **create,
            "tools": [
                *create["tools"],
                {**READ, "name": "read_file"},
            ],
        }
    )
    s.server(wrapped)
    delivered = [orjson.loads(f) for f in s.delivered()]
    items = [f["item"] for f in delivered if isinstance(f.get("item"), dict)]
    assert items and all(i["name"] == "multi_tool_use.parallel" and i["call_id"] == "call_fxws" for i in items)
    final = [f for f in delivered if f["type"] == "response.completed"][0]
    assert [i["call_id"] for i in final["response"]["output"]] == ["call_fxws"]
    s.end()
    assert any(n.startswith("the upstream keeps this response") for n in s.record["notes"]), s.record["notes"]


# -- a streamed answer: the stream, its response.completed echo and the record agree ---------------


@pytest.fixture
def streams(loaded):
    with harness.configured(loaded) as e:
        yield e


def _sse(events: list[dict[str, Any]]) -> bytes:
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


def _stream_of(item: dict[str, Any], *, raw_delta: bytes | None = None) -> bytes:
    """One output item streamed (added, its argument events, done) and the response.completed
    echo; ``raw_delta``: an argument event sent as these bytes (not JSON)."""
    added = {**item, "arguments": "", "status": "in_progress"}
    events = [
        {"type": "response.created", "sequence_number": 0, "response": {"id": "resp_1", "output": []}},
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": added},
    ]
    out = _sse(events)
    if raw_delta is not None:
        out += raw_delta
    else:
        out += _sse([{"type": "response.function_call_arguments.delta", "sequence_number": 2, "output_index": 0, "delta": item["arguments"]}])  # fmt: skip
    out += _sse(
        [
            {
                "type": "response.function_call_arguments.done",
                "sequence_number": 3,
                "output_index": 0,
                "arguments": item["arguments"],
            },  # fmt: skip
            {"type": "response.output_item.done", "sequence_number": 4, "output_index": 0, "item": item},
            {
                "type": "response.completed",
                "sequence_number": 5,
                "response": {"id": "resp_1", "status": "completed", "output": [item]},
            },  # fmt: skip
        ]
    )
    return out


def _streamed(e, upstream: bytes) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(items the stream gave the client, the echo's items, the record) of a store-false stream."""
    body = {"model": "m", "stream": True, "store": False, "input": [{"role": "user", "content": "hi"}], "tools": [READ]}
    f = harness.make_flow(
        body,
        host="api.openai.com",
        path="/v1/responses",
        headers=[("content-type", "application/json")],
        upstream=upstream,
        resp_type="text/event-stream",
    )
    r = harness.replay(e, f, 3)
    events = []
    for line in r.out.split(b"\n"):
        if line.startswith(b"data: {") and b"oops" not in line:  # the one argument event that is not JSON
            events.append(orjson.loads(line[6:]))
    items = [ev["item"] for ev in events if ev.get("type") == "response.output_item.done"]
    echo = [ev for ev in events if ev.get("type") == "response.completed"][0]["response"]["output"]
    return items, echo, r.record


def test_a_streamed_wrapper_without_an_item_id_stays_whole_in_the_stream_the_echo_and_the_record(streams) -> None:
    # Without an id, the echo cannot show the parts in the wrapper's place.
    wrapper = call("multi_tool_use.parallel", WRAPPER, "call_W")
    del wrapper["id"]
    items, echo, record = _streamed(streams, _stream_of(wrapper))
    assert [(i["name"], i["call_id"]) for i in items] == [("multi_tool_use.parallel", "call_W")]
    assert [(i["name"], i["call_id"]) for i in echo] == [("multi_tool_use.parallel", "call_W")]
    assert [d["name"] for d in record["decisions"]] == ["multi_tool_use.parallel"], record["decisions"]


def test_a_repair_the_stream_could_not_write_is_not_in_the_echo_or_the_record(streams) -> None:
    read = call("Read", '{"file_path": "/repo/README.md", "limit": 100}', "call_1")
    bad = b'event: response.function_call_arguments.delta\ndata: {"type": "response.function_call_arguments.delta", oops}\n\n'
    items, echo, record = _streamed(streams, _stream_of(read, raw_delta=bad))
    assert [i["name"] for i in items] == ["Read"] and [i["name"] for i in echo] == ["Read"]
    assert record["decisions"] == [], record["decisions"]
    assert any("could not be written" in n for n in record["notes"]), record["notes"]
