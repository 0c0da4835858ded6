"""Malformed argument JSON through a real mitmdump: lossless repairs reach the
SDK client as strict JSON; truncated arguments reach it exactly as the upstream sent them.

The fake upstream answers with hand-written bytes (``enqueue``), in 5-byte transport chunks so
events and argument text are split; the clients are the official ``openai`` (Chat Completions,
Responses) and ``anthropic`` SDKs.
"""

from __future__ import annotations

import json

import pytest

from fakeup.anthropic import anthropic_message
from fakeup.anthropic import message_events
from fakeup.openai_responses import response_events
from fakeup.wire import sse_bytes
from sdk import anthropic_client
from sdk import openai_client

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string"}, "recursive": {"type": "boolean"}},
    "required": ["command"],
}
SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}

# (id, argument text the upstream sends, what the client must parse, or None: the text as sent)
CASES = [
    ("trailing-comma", '{"command": "ls",}', {"command": "ls"}),
    ("python-literals", '{"command": "ls", "recursive": True}', {"command": "ls", "recursive": True}),
    ("code-fence", '```json\n{"command": "ls"}\n```', {"command": "ls"}),
    ("control-character", '{"command": "printf \'a\nb\'"}', {"command": "printf 'a\nb'"}),
    ("double-encoded", json.dumps('{"command": "ls"}'), {"command": "ls"}),
    ("control-token-after-json", '{"command": "ls"}<|call|>', {"command": "ls"}),  # mastra-ai/mastra PR #12823
    ("control-token-glued-to-a-key", '{"command</arg_key>": "ls"}', {"command": "ls"}),  # vllm-project/vllm PR #54971
    ("control-token-inside-a-value", '{"command": "ls <|call|>"}', None),
    ("truncated", '{"command": "rm -rf build/cac', None),
    ("single-quotes", "{'command': 'ls'}", None),
]


def chat_answer(args: str, stream: bool) -> tuple[bytes, dict]:
    if not stream:
        body = {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": args}}
                        ],
                    },
                }
            ],
        }
        return json.dumps(body).encode(), JSON
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    half = len(args) // 2
    events = [
        (
            None,
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "delta": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "Bash", "arguments": ""},
                                }
                            ],
                        },
                    }
                ],
            },
        ),
        (
            None,
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[:half]}}]}}
                ],
            },
        ),
        (
            None,
            {
                **base,
                "choices": [
                    {"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args[half:]}}]}}
                ],
            },
        ),
        (None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        (None, "[DONE]"),
    ]
    return sse_bytes(events), SSE


def responses_answer(args: str, stream: bool) -> tuple[bytes, dict]:
    item = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "Bash",
        "arguments": args,
        "status": "completed",
    }
    resp = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": [item],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    if not stream:
        return json.dumps(resp).encode(), JSON
    return sse_bytes(response_events(resp, args_pieces=1, in_progress=False)), SSE


def anthropic_stream(args: str) -> tuple[bytes, dict]:
    block = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": args}
    message = anthropic_message("msg_1", "m", [block], "tool_use", {"input_tokens": 1, "output_tokens": 5})
    # the argument text goes out as it is (json_text=str), in two input_json_delta events
    return sse_bytes(message_events(message, json_pieces=2, json_text=str, ping=False)), SSE


def chat_call(px, stream: bool, field: str) -> str:
    """The first tool call's ``field`` (``name`` or ``arguments``) as the ``openai`` SDK gives it:
    the message's, or the stream's deltas joined."""
    client = openai_client(px.url)
    kwargs = dict(
        model="m",
        messages=[{"role": "user", "content": "go"}],
        tools=[{"type": "function", "function": {"name": "Bash", "parameters": SCHEMA}}],
    )
    if not stream:
        return getattr(client.chat.completions.create(**kwargs).choices[0].message.tool_calls[0].function, field)
    got = ""
    for chunk in client.chat.completions.create(stream=True, **kwargs):
        for choice in chunk.choices:
            for tc in choice.delta.tool_calls or []:
                got += (getattr(tc.function, field) or "") if tc.function else ""
    return got


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("case", "args", "want"), CASES, ids=[c[0] for c in CASES])
def test_chat(fake_and_proxy, stream, case, args, want):
    fake, px = fake_and_proxy
    body, headers = chat_answer(args, stream)
    fake.enqueue(body, headers=headers, chunk_size=5)
    got = chat_call(px, stream, "arguments")
    if want is None:
        assert got == args  # left exactly as sent
    else:
        assert json.loads(got) == want and got != args


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(("case", "args", "want"), CASES, ids=[c[0] for c in CASES])
def test_responses(fake_and_proxy, stream, case, args, want):
    fake, px = fake_and_proxy
    body, headers = responses_answer(args, stream)
    fake.enqueue(body, headers=headers, chunk_size=5)
    client = openai_client(px.url)
    kwargs = dict(
        model="m", input="go", tools=[{"type": "function", "name": "Bash", "parameters": SCHEMA, "strict": False}]
    )
    if stream:
        final = None
        deltas = ""
        for event in client.responses.create(stream=True, **kwargs):
            if event.type == "response.function_call_arguments.delta":
                deltas += event.delta
            if event.type == "response.completed":
                final = event.response
        got = [o for o in final.output if o.type == "function_call"][0].arguments
        assert deltas == got  # the deltas a client appends agree with the item
    else:
        got = [o for o in client.responses.create(**kwargs).output if o.type == "function_call"][0].arguments
    if want is None:
        assert got == args
    else:
        assert json.loads(got) == want and got != args


@pytest.mark.parametrize(("case", "args", "want"), CASES, ids=[c[0] for c in CASES])
def test_anthropic_stream(fake_and_proxy, case, args, want):
    fake, px = fake_and_proxy
    body, headers = anthropic_stream(args)
    fake.enqueue(body, headers=headers, chunk_size=5)
    client = anthropic_client(px.url)
    partial = ""
    for event in client.messages.create(
        model="m",
        max_tokens=64,
        stream=True,
        messages=[{"role": "user", "content": "go"}],
        tools=[{"name": "Bash", "input_schema": SCHEMA}],
    ):
        if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
            partial += event.delta.partial_json
    if want is None:
        assert partial == args
    else:
        assert json.loads(partial) == want


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    ("name", "want"), [("Bash</arg_value>", "Bash"), ("Bash</foo>", "Bash</foo>"), ("Bash <|call|>x", "Bash <|call|>x")]
)
def test_chat_name_with_a_glued_control_token(fake_and_proxy, stream, name, want):
    # GLM's "name": "tool_12</arg_value>" (fw-ai-external/python-sdk#119): the family's token goes
    # when one declared name remains; another tag, or text after the token, stays as sent.
    fake, px = fake_and_proxy
    body, headers = chat_answer('{"command": "ls"}', stream)
    fake.enqueue(body.replace(b'"Bash"', json.dumps(name).encode()), headers=headers, chunk_size=5)
    assert chat_call(px, stream, "name") == want
