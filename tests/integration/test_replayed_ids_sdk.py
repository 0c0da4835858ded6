"""Tool-call ids Anthropic rejects in replayed history, through a real mitmdump with the official
``anthropic`` SDK.

A transcript another model produced carries ``tool_use.id: "functions.Bash:0"`` (Kimi's id form);
Anthropic answers 400 ``tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'``
(maximhq/bifrost#5097). The upstream must receive one valid alias in the ``tool_use`` and the same
in its ``tool_result``, a valid id untouched; the SDK's answer comes back as the upstream sent it,
and an answer that names the alias reaches the client under the client's own id.
"""

from __future__ import annotations

import json
import re

import pytest

from fakeup.anthropic import anthropic_message
from sdk import anthropic_client

pytestmark = pytest.mark.integration

ANTHROPIC_ID = re.compile(r"^[a-zA-Z0-9_-]+$")
TOOLS = [
    {
        "name": "Bash",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
]
KIMI_ID = "functions.Bash:0"
VALID_ID = "toolu_01valid"


def transcript() -> list[dict]:
    return [
        {"role": "user", "content": "List the files, then the git status."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": KIMI_ID, "name": "Bash", "input": {"command": "ls"}},
                {"type": "tool_use", "id": VALID_ID, "name": "Bash", "input": {"command": "git status"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": KIMI_ID, "content": "a.txt"},
                {"type": "tool_result", "tool_use_id": VALID_ID, "content": "clean"},
            ],
        },
    ]


def test_an_id_anthropic_rejects_goes_up_as_one_alias_and_comes_back_as_sent(fake_and_proxy):
    fake, px = fake_and_proxy
    before = len(fake.requests())
    answer = anthropic_message(
        "msg_1", "m", [{"type": "text", "text": "Done."}], "end_turn", {"input_tokens": 1, "output_tokens": 1}
    )
    fake.enqueue(json.dumps(answer).encode(), headers={"Content-Type": "application/json"})
    message = anthropic_client(px.url).messages.create(model="m", max_tokens=64, tools=TOOLS, messages=transcript())
    assert [b.text for b in message.content if b.type == "text"] == ["Done."]

    sent = fake.wait_requests(before + 1)[before]["body"]["messages"]
    use, kept = sent[1]["content"]
    result, kept_result = sent[2]["content"]
    assert ANTHROPIC_ID.match(use["id"]) and use["id"] != KIMI_ID, use["id"]
    assert result["tool_use_id"] == use["id"]  # the pair still pairs
    assert kept["id"] == VALID_ID and kept_result["tool_use_id"] == VALID_ID  # a valid id untouched
    assert KIMI_ID not in json.dumps(sent)
    alias = use["id"]

    # The same transcript next turn goes up under the same alias; an answer naming it (a
    # tool_use the upstream gives that id) reaches the client under the client's own id.
    before = len(fake.requests())
    echo = anthropic_message(
        "msg_2",
        "m",
        [{"type": "tool_use", "id": alias, "name": "Bash", "input": {"command": "ls"}}],
        "tool_use",
        {"input_tokens": 1, "output_tokens": 1},
    )
    fake.enqueue(json.dumps(echo).encode(), headers={"Content-Type": "application/json"})
    message = anthropic_client(px.url).messages.create(model="m", max_tokens=64, tools=TOOLS, messages=transcript())
    assert fake.wait_requests(before + 1)[before]["body"]["messages"][1]["content"][0]["id"] == alias
    assert [(b.name, b.id) for b in message.content if b.type == "tool_use"] == [("Bash", KIMI_ID)]


def test_a_responses_call_id_over_64_characters_goes_up_as_one_alias(fake_and_proxy):
    # OpenAI's Responses API: "Invalid 'input[8].call_id': string too long. Expected max 64, got 86."
    # (AstrBotDevs/AstrBot#7735).
    from sdk import openai_client

    fake, px = fake_and_proxy
    long_id = "call_" + "0123456789" * 8
    before = len(fake.requests())
    answer = {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": "m",
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "Done.", "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }
    fake.enqueue(json.dumps(answer).encode(), headers={"Content-Type": "application/json"})
    tools = [{"type": "function", "name": "Bash", "parameters": TOOLS[0]["input_schema"], "strict": False}]
    items = [
        {"role": "user", "content": "List the files."},
        {"type": "function_call", "call_id": long_id, "name": "Bash", "arguments": '{"command": "ls"}'},
        {"type": "function_call_output", "call_id": long_id, "output": "a.txt"},
    ]
    response = openai_client(px.url).responses.create(model="m", input=items, tools=tools)
    assert response.output_text == "Done."
    sent = fake.wait_requests(before + 1)[before]["body"]["input"]
    call, output = sent[1]["call_id"], sent[2]["call_id"]
    assert call == output and len(call) <= 64 and call != long_id
    assert long_id not in json.dumps(sent)
