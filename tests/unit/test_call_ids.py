"""Deterministic call ids where an answer's tool call has none, an empty one, or a repeat."""

from __future__ import annotations

import json
import re

from harness.dialects import context
from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
from toolvocab.dialects.base import CallIds
from toolvocab.dialects.openai_responses import DIALECT as RESPONSES
from toolvocab.engine.ids import stable_call_id
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import resolve

TOOLS = Toolset([declared_tool("Bash", input_schema={"type": "object", "properties": {"command": {"type": "string"}}})])
TC = re.compile(r"^tc_[0-9a-f]{24}$")


def resolver(call):
    return resolve(call, TOOLS)


def test_call_ids_keep_good_ids_and_replace_missing_empty_and_repeated_ones():
    ids = CallIds("flow-1")
    assert ids.fix("call_a") is None
    assert ids.fix(None) == stable_call_id("flow-1", 1)
    assert ids.fix("") == stable_call_id("flow-1", 2)
    assert ids.fix("call_a") == stable_call_id("flow-1", 3)  # repeated within the answer
    assert ids.fix("call_b") is None


def test_ids_are_the_same_for_the_same_flow_and_differ_between_flows():
    assert stable_call_id("f", 0) == stable_call_id("f", 0)
    assert stable_call_id("f", 0) != stable_call_id("g", 0)
    assert TC.match(stable_call_id("f", 0))


def _anthropic_body(ids):
    return {
        "type": "message",
        "content": [
            {"type": "tool_use", "name": "Bash", "input": {"command": "ls"}, **({"id": i} if i is not None else {})}
            for i in ids
        ],
    }


def test_anthropic_json_tool_use_without_id_gets_a_stable_one():
    body = _anthropic_body([None, "toolu_1", "toolu_1"])
    assert ANTHROPIC.rewrite_response(body, context(resolver, flow_key="k"))
    got = [b["id"] for b in body["content"]]
    assert got == [stable_call_id("k", 0), "toolu_1", stable_call_id("k", 2)]


def test_anthropic_json_with_good_ids_is_untouched():
    body = _anthropic_body(["toolu_1", "toolu_2"])
    before = json.dumps(body)
    assert not ANTHROPIC.rewrite_response(body, context(resolver, flow_key="k"))
    assert json.dumps(body) == before


def _sse(events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def test_anthropic_stream_tool_use_with_empty_id_gets_a_stable_one():
    events = [
        {"type": "message_start", "message": {"id": "m", "content": []}},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "", "name": "Bash", "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"command":"ls"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    rw = ANTHROPIC.stream_rewriter(context(resolver, flow_key="k"))
    out = b"".join(rw.feed(_sse(events)) + rw.finish()).decode()
    starts = [
        json.loads(line[6:]) for line in out.splitlines() if line.startswith("data: ") and "content_block_start" in line
    ]
    assert starts[0]["content_block"]["id"] == stable_call_id("k", 0)
    assert '"partial_json": "{\\"command\\":\\"ls\\"}"' in out  # arguments untouched


def test_responses_function_call_without_call_id_gets_the_same_id_everywhere():
    item = {"id": "fc_1", "type": "function_call", "name": "Bash", "arguments": "", "status": "in_progress"}
    done = {**item, "arguments": '{"command":"ls"}', "status": "completed"}
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "item_id": "fc_1",
            "delta": '{"command":"ls"}',
        },
        {"type": "response.output_item.done", "output_index": 0, "item": done},
        {"type": "response.completed", "response": {"id": "r", "output": [done]}},
    ]
    rw = RESPONSES.stream_rewriter(context(resolver, flow_key="k"))
    out = b"".join(rw.feed(_sse(events)) + rw.finish()).decode()
    datas = [json.loads(line[6:]) for line in out.splitlines() if line.startswith("data: ")]
    expected = stable_call_id("k", 0)
    assert datas[0]["item"]["call_id"] == expected
    assert datas[2]["item"]["call_id"] == expected
    assert datas[3]["response"]["output"][0]["call_id"] == expected


def test_gemini_empty_or_repeated_ids_are_replaced_absent_ones_stay_absent():
    from toolvocab.dialects.gemini import DIALECT as GEMINI

    def part(**extra):
        return {"functionCall": {"name": "Bash", "args": {"command": "ls"}, **extra}}

    body = {"candidates": [{"content": {"role": "model", "parts": [part(), part(id=""), part(id="a"), part(id="a")]}}]}
    assert GEMINI.rewrite_response(body, context(resolver, flow_key="k"))
    calls = [p["functionCall"] for p in body["candidates"][0]["content"]["parts"]]
    assert "id" not in calls[0]
    assert calls[1]["id"] == stable_call_id("k", 1)
    assert calls[2]["id"] == "a"
    assert calls[3]["id"] == stable_call_id("k", 3)
