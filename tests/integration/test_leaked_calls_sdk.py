"""Tool calls leaked into answer text, through a real mitmdump with the addon, read by the
official SDKs: ``anthropic`` (Messages), ``openai`` (Chat Completions and Responses)
and ``google-genai`` (Gemini). An answer that is nothing but tool-call markup (Hermes JSON,
Llama ``<function=…>``, DeepSeek markers) reaches the SDK as the dialect's structured call; an
answer that quotes the same markup in prose, or names a tool nobody declared, reaches it
byte-identical. JSON and streamed; the fake upstream sends its hand-written bytes in 7-byte
transport chunks so markers and events are split.
"""

from __future__ import annotations

import json

import pytest
from google.genai import types

import procs
from fakeup.anthropic import anthropic_message
from fakeup.anthropic import message_events
from fakeup.openai_responses import response_events
from fakeup.wire import split_evenly
from fakeup.wire import sse_bytes
from sdk import anthropic_client
from sdk import genai_client
from sdk import openai_client

pytestmark = pytest.mark.integration

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
SSE = {"Content-Type": "text/event-stream"}
JSON = {"Content-Type": "application/json"}
CHUNK = 7

HERMES = '<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call>'
LLAMA = '<think>\nThe README first.\n</think>\n<function=read_file>{"path": "README.md"}</function>'
DEEPSEEK = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n"
    '{"path": "README.md"}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)
MINIMAX = '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="path">README.md</parameter>\n</invoke>\n</minimax:tool_call>'
DSML = (
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n'
    '<｜DSML｜parameter name="path" string="true">README.md</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
)
HARMONY = '<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path":"README.md"}<|call|>'
HARMONY_BARE = 'commentary to=functions.read_file json{"path":"README.md"}'
QWEN_NO_OPENER = "<function=read_file>\n<parameter=path>\nREADME.md\n</parameter>\n</function>\n</tool_call>"
LIFTED = {
    "hermes": HERMES,
    "llama": LLAMA,
    "deepseek": DEEPSEEK,
    "minimax": MINIMAX,
    "dsml": DSML,
    "harmony": HARMONY,
    "harmony-bare": HARMONY_BARE,
    "qwen-no-opener": QWEN_NO_OPENER,
}
KEPT = {
    "prose-quotes-markup": "Here is the format: " + HERMES,
    "undeclared-name": HERMES.replace("read_file", "delete_file"),
    "truncated": DEEPSEEK[:-12],
    "minimax-quoted": "MiniMax writes " + MINIMAX,
    "dsml-undeclared": DSML.replace("read_file", "delete_file"),
    "harmony-then-prose": HARMONY_BARE + " and then I read it.",
    # no API sends a lone surrogate in a call, and the anthropic SDK's stream reader refuses one
    "lone-surrogate": HERMES.replace("README.md", "README\\ud800.md"),
}
WANT = [("read_file", {"path": "README.md"})]
REASONING = {"llama": "<think>\nThe README first.\n</think>"}


# -- answers -------------------------------------------------------------------------------------


def anthropic_answer(text: str, stream: bool) -> tuple[bytes, dict]:
    message = anthropic_message(
        "msg_1", "m", [{"type": "text", "text": text}], "end_turn", {"input_tokens": 1, "output_tokens": 5}
    )
    if not stream:
        return json.dumps(message).encode(), JSON
    return sse_bytes(message_events(message, text_pieces=4)), SSE


def chat_answer(text: str, stream: bool) -> tuple[bytes, dict]:
    if not stream:
        body = {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        }
        return json.dumps(body).encode(), JSON
    base = {"id": "c1", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    events: list[tuple[str | None, dict | str]] = [
        (None, {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]})
    ]
    events += [(None, {**base, "choices": [{"index": 0, "delta": {"content": p}}]}) for p in split_evenly(text, 4)]
    events += [(None, {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}), (None, "[DONE]")]
    return sse_bytes(events), SSE


def responses_answer(text: str, stream: bool) -> tuple[bytes, dict]:
    part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
    msg = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [part]}
    resp = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": [msg],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    if not stream:
        return json.dumps(resp).encode(), JSON
    return sse_bytes(response_events(resp, text_pieces=4)), SSE


def gemini_answer(text: str, stream: bool) -> tuple[bytes, dict]:
    def resp(t: str, last: bool) -> dict:
        cand: dict = {"content": {"role": "model", "parts": [{"text": t}]}, "index": 0}
        if last:
            cand["finishReason"] = "STOP"
        return {
            "candidates": [cand],
            "modelVersion": "m",
            "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 9},
        }

    if not stream:
        return json.dumps(resp(text, True)).encode(), JSON
    ps = split_evenly(text, 4)
    return sse_bytes([(None, resp(p, i == len(ps) - 1)) for i, p in enumerate(ps)], eol="\r\n"), SSE


# -- clients -------------------------------------------------------------------------------------


def ask_anthropic(px: procs.MitmdumpHandle, stream: bool) -> tuple[str, list, str | None, bytes | None]:
    client = anthropic_client(px.url)
    kwargs = dict(
        model="m",
        max_tokens=64,
        messages=[{"role": "user", "content": "Read the README."}],
        tools=[{"name": "read_file", "input_schema": SCHEMA}],
    )
    if stream:
        with client.messages.stream(**kwargs) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    text = "".join(b.text for b in message.content if b.type == "text")
    calls = [(b.name, b.input, b.id) for b in message.content if b.type == "tool_use"]
    return text, calls, message.stop_reason, None


def ask_chat(px: procs.MitmdumpHandle, stream: bool) -> tuple[str, list, str | None]:
    client = openai_client(px.url)
    kwargs = dict(
        model="m",
        messages=[{"role": "user", "content": "Read the README."}],
        tools=[{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}],
    )
    if stream:
        with client.beta.chat.completions.stream(**kwargs) as s:
            completion = s.get_final_completion()
    else:
        completion = client.chat.completions.create(**kwargs)
    choice = completion.choices[0]
    calls = [(c.function.name, json.loads(c.function.arguments), c.id) for c in choice.message.tool_calls or []]
    return choice.message.content or "", calls, choice.finish_reason


def ask_responses(px: procs.MitmdumpHandle, stream: bool, store: bool | None = False) -> tuple[str, list, str | None]:
    """``store``: false (as Codex sends it: the answer is not kept, its markup may be lifted);
    ``None`` leaves it out (the API keeps the answer: nothing is lifted)."""
    client = openai_client(px.url)
    kwargs = dict(
        model="m",
        input="Read the README.",
        tools=[{"type": "function", "name": "read_file", "parameters": SCHEMA, "strict": False}],
    )
    if store is not None:
        kwargs["store"] = store
    if stream:
        # The SDK's stream accumulator checks output_index against what it has assembled.
        with client.responses.stream(**kwargs) as s:
            for _ in s:
                pass
            response = s.get_final_response()
    else:
        response = client.responses.create(**kwargs)
    calls = [(o.name, json.loads(o.arguments), o.call_id) for o in response.output if o.type == "function_call"]
    return response.output_text, calls, response.status


def ask_gemini(px: procs.MitmdumpHandle, stream: bool) -> tuple[str, list, str | None]:
    client = genai_client(px.url)
    decl = types.FunctionDeclaration(name="read_file", parameters_json_schema=SCHEMA)
    cfg = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[decl])],
        automatic_function_calling=types.AutomaticFunctionCallingConfig(disable=True),
    )
    text, calls, finish = "", [], None
    chunks = (
        client.models.generate_content_stream(model="gemini-x", contents="Read the README.", config=cfg)
        if stream
        else [client.models.generate_content(model="gemini-x", contents="Read the README.", config=cfg)]
    )
    for chunk in chunks:
        for cand in chunk.candidates or []:
            for part in (cand.content.parts if cand.content else None) or []:
                if part.text is not None:
                    text += part.text
                if part.function_call is not None:
                    calls.append((part.function_call.name, dict(part.function_call.args or {}), part.function_call.id))
            finish = cand.finish_reason.value if cand.finish_reason is not None else finish
    return text, calls, finish


DIALECTS = {
    "anthropic": (anthropic_answer, ask_anthropic, "tool_use", "end_turn"),
    "chat": (chat_answer, ask_chat, "tool_calls", "stop"),
    "responses": (responses_answer, ask_responses, "completed", "completed"),
    "gemini": (gemini_answer, ask_gemini, "STOP", "STOP"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("family", sorted(LIFTED))
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_markup_alone_reaches_the_sdk_as_a_call(fake_and_proxy, dialect, family, stream):
    fake, px = fake_and_proxy
    answer, ask, lifted_end, _ = DIALECTS[dialect]
    body, headers = answer(LIFTED[family], stream)
    fake.enqueue(body, headers=headers, chunk_size=CHUNK)
    text, calls, end = ask(px, stream)[:3]
    assert [(name, args) for name, args, _ in calls] == WANT
    if dialect != "gemini":
        assert all(call_id for _, _, call_id in calls)
    assert text.strip() == REASONING.get(family, "")
    assert end == lifted_end


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("case", sorted(KEPT))
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_markup_in_prose_or_unresolvable_reaches_the_sdk_as_text(fake_and_proxy, dialect, case, stream):
    fake, px = fake_and_proxy
    answer, ask, _, plain_end = DIALECTS[dialect]
    body, headers = answer(KEPT[case], stream)
    fake.enqueue(body, headers=headers, chunk_size=CHUNK)
    text, calls, end = ask(px, stream)[:3]
    assert calls == []
    assert text == KEPT[case]
    assert end == plain_end


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_markup_in_a_responses_answer_the_upstream_keeps_reaches_the_sdk_as_text(fake_and_proxy, stream):
    """No ``store: false``: the API keeps the response and a later request may continue from it
    by ``previous_response_id``, so no call it never sent may reach the client."""
    fake, px = fake_and_proxy
    body, headers = responses_answer(LIFTED["hermes"], stream)
    fake.enqueue(body, headers=headers, chunk_size=CHUNK)
    text, calls, end = ask_responses(px, stream, store=None)
    assert calls == [] and text == LIFTED["hermes"] and end == "completed"


#: A path holding each character ``str.splitlines()`` ends a line at that JSON may carry raw.
LINE_BREAKING_PATH = "a\u2028b\x85c\u2029d.md"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("dialect", sorted(DIALECTS))
def test_a_lifted_argument_holding_line_breaking_characters_reaches_the_sdk_exactly(fake_and_proxy, dialect, stream):
    """U+2028, U+0085 and U+2029 in a lifted call's argument: written raw in an event's ``data:``
    line, google-genai's line reader (``str.splitlines``) cut the line there and raised
    ``UnknownApiResponseError``; every SDK gets the argument as the markup gave it."""
    fake, px = fake_and_proxy
    answer, ask, lifted_end, _ = DIALECTS[dialect]
    body, headers = answer(HERMES.replace("README.md", LINE_BREAKING_PATH), stream)
    fake.enqueue(body, headers=headers, chunk_size=CHUNK)
    text, calls, end = ask(px, stream)[:3]
    assert [(name, args) for name, args, _ in calls] == [("read_file", {"path": LINE_BREAKING_PATH})]
    assert text.strip() == "" and end == lifted_end
