"""Empty arguments on the wire through a real mitmdump with the addon: an upstream
Chat answer whose call carries ``"arguments": ""`` and ``finish_reason: "stop"`` reaches the
official ``openai`` SDK as ``"{}"`` with ``finish_reason: "tool_calls"`` — JSON, streamed
(``create(stream=True)`` and the ``stream()`` helper), in transport chunks of 1, 7 and 64 bytes.

The SDK client and the run checks come from tests/sdk.py; SSE chunk builders and the SDK-side assembly from test_openai_sdk.py.
"""

from __future__ import annotations

import json

import pytest
from test_openai_sdk import CHAT_PROMPT
from test_openai_sdk import CHAT_TRANSPORTS
from test_openai_sdk import CHUNK_SIZES
from test_openai_sdk import DONE
from test_openai_sdk import JSON_HEADERS
from test_openai_sdk import MODEL
from test_openai_sdk import SSE_HEADERS
from test_openai_sdk import USAGE_CHUNK
from test_openai_sdk import ask_chat
from test_openai_sdk import delta_chunk
from test_openai_sdk import flows_on
from test_openai_sdk import fn_tool
from test_openai_sdk import needs_addon
from test_openai_sdk import tcd

from sdk import assert_no_addon_errors
from sdk import one_request
from sdk import openai_client
from sdk import record_of

pytestmark = pytest.mark.integration

LIST_DIR = fn_tool(
    "list_directory", "Lists a directory (the working directory by default).", {"path": {"type": "string"}}, []
)
TOOLS = [LIST_DIR]
CALL_ID = "call_tvEmpty0000000000001"


def upstream_reply(transport: str, size: int) -> dict:
    """The call with ``"arguments": ""`` and ``finish_reason: "stop"``, as ``transport`` wants it."""
    if transport == "json":
        body = {
            "id": "chatcmpl-tvEmpty01",
            "object": "chat.completion",
            "created": 1760000000,
            "model": MODEL,
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": CALL_ID, "type": "function", "function": {"name": "list_directory", "arguments": ""}}
                        ],
                    },
                    "logprobs": None,
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30},
        }
        return dict(body=json.dumps(body, indent=2).encode() + b"\n", headers=JSON_HEADERS, chunk_size=size)
    body = b"".join(
        [
            delta_chunk({"role": "assistant", "content": None}),
            delta_chunk({"tool_calls": [tcd(0, id=CALL_ID, type="function", name="list_directory", arguments="")]}),
            delta_chunk({}, "stop"),
            USAGE_CHUNK,
            DONE,
        ]
    )
    return dict(body=body, headers=SSE_HEADERS, chunk_size=size)


@needs_addon
@pytest.mark.parametrize("transport", CHAT_TRANSPORTS)
def test_chat_empty_arguments_reach_the_sdk_as_an_empty_object_with_finish_reason_tool_calls(
    fake_upstream, proxy, transport
):
    px = proxy()
    client = openai_client(px.url)
    for size in CHUNK_SIZES:
        before = len(fake_upstream.requests())
        fake_upstream.enqueue(**upstream_reply(transport, size))
        got = ask_chat(client, transport, tools=TOOLS)
        assert got.calls == [{"id": CALL_ID, "name": "list_directory", "arguments": "{}"}], (size, got.calls)
        assert got.finish_reason == "tool_calls", (size, got.finish_reason)
        record = one_request(fake_upstream, before)
        assert record["body"]["messages"][1:] == CHAT_PROMPT[1:]
    flows = flows_on(px.flows(), "/chat/completions")
    assert len(flows) == len(CHUNK_SIZES)
    for flow in flows:
        md = record_of(flow, "openai_chat")
        decision = next(d for d in md["decisions"] if d["name"] == "list_directory")
        assert decision["action"] == "fit" and decision["arguments_after"] == {}, decision
        assert any(c["op"] == "empty_to_object" for c in decision["arg_changes"]), decision
    assert_no_addon_errors(px)
