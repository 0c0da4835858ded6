"""Tool-call markup in a Chat answer's text through a real mitmdump with the addon: an answer that only *mentions* a ``<tool_call>`` block (a sentence before it, an
example in backticks) reaches the ``openai`` SDK byte-identical, JSON and streamed; an answer
that is nothing but the markup becomes a real call with ``finish_reason: "tool_calls"``.

The SDK client and the run checks come from tests/sdk.py; SSE chunk builders and the SDK-side assembly from test_openai_sdk.py.
"""

from __future__ import annotations

import json

import pytest
from test_openai_sdk import CHAT_TRANSPORTS
from test_openai_sdk import CHUNK_SIZES
from test_openai_sdk import DONE
from test_openai_sdk import JSON_HEADERS
from test_openai_sdk import MODEL
from test_openai_sdk import READ_FILE
from test_openai_sdk import SSE_HEADERS
from test_openai_sdk import ask_chat
from test_openai_sdk import delta_chunk
from test_openai_sdk import flows_on
from test_openai_sdk import needs_addon
from test_openai_sdk import raw_chat

from sdk import assert_no_addon_errors
from sdk import openai_client

pytestmark = pytest.mark.integration

TOOLS = [READ_FILE]
MARKUP = "<tool_call>\n<function=read_file>\n<parameter=file_path>\n/x\n</parameter>\n</function>\n</tool_call>"
PROSE = {
    "sentence before": "I will not run " + MARKUP,
    "example in backticks": "Call it like this:\n```\n" + MARKUP + "\n```",
    "sentence after": MARKUP + "\nThat reads the file.",
}


def stream_body(text: str) -> bytes:
    pieces = [text[i : i + 9] for i in range(0, len(text), 9)]
    return b"".join(
        [delta_chunk({"role": "assistant", "content": ""})]
        + [delta_chunk({"content": p}) for p in pieces]
        + [delta_chunk({}, "stop"), DONE]
    )


def json_body(text: str) -> bytes:
    body = {
        "id": "chatcmpl-tvText01",
        "object": "chat.completion",
        "created": 1760000000,
        "model": MODEL,
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "logprobs": None, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30},
    }
    return json.dumps(body, indent=2).encode() + b"\n"


@needs_addon
def test_chat_text_that_mentions_markup_reaches_the_sdk_byte_identical(fake_upstream, proxy):
    px = proxy()
    client = openai_client(px.url)
    n = 0
    for stream in (True, False):
        for label, text in PROSE.items():
            body = stream_body(text) if stream else json_body(text)
            for size in CHUNK_SIZES:
                fake_upstream.enqueue(body=body, headers=SSE_HEADERS if stream else JSON_HEADERS, chunk_size=size)
                status, got = raw_chat(client, stream=stream, tools=TOOLS)
                assert status == 200 and got == body, f"stream={stream} {label} chunk={size}: bytes changed"
                n += 1
    assert len(flows_on(px.flows(), "/chat/completions")) == n
    assert_no_addon_errors(px)


@needs_addon
@pytest.mark.parametrize("transport", CHAT_TRANSPORTS)
def test_chat_text_that_is_only_markup_becomes_a_call(fake_upstream, proxy, transport):
    px = proxy()
    client = openai_client(px.url)
    for size in CHUNK_SIZES:
        body = json_body(MARKUP) if transport == "json" else stream_body(MARKUP)
        fake_upstream.enqueue(body=body, headers=JSON_HEADERS if transport == "json" else SSE_HEADERS, chunk_size=size)
        got = ask_chat(client, transport, tools=TOOLS)
        assert [(c["name"], json.loads(c["arguments"])) for c in got.calls] == [("read_file", {"file_path": "/x"})], (
            size
        )
        assert all(c["id"] for c in got.calls)
        assert not got.text, (size, got.text)
        assert got.finish_reason == "tool_calls", size
    assert_no_addon_errors(px)
