"""Through a real mitmdump: what the request hook skips when nothing saves flows.

The transcript's tool errors are classified for whoever reads the record; plain mitmdump shows
no record, so it classifies nothing. With ``-w`` the saved record carries them, as before, and
an unchanged request goes upstream as the client's bytes either way.
"""

from __future__ import annotations

import base64
import json
import urllib.request

import pytest

import procs

pytestmark = pytest.mark.integration

BODY = json.dumps(
    {
        "model": "m",
        "max_tokens": 10,
        "system": "Use Bash.",
        "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
        "messages": [
            {"role": "user", "content": "hi"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "is_error": True,
                        "content": "<tool_use_error>Error: No such tool available: shell</tool_use_error>",
                    }
                ],
            },
        ],
    },
    indent=1,
).encode()  # spaces and newlines: a re-serialized body would not be these bytes


def _post(port: int) -> None:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/messages",
        data=BODY,
        method="POST",
        headers={"content-type": "application/json", "anthropic-version": "2023-06-01"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=20) as resp:
        assert resp.status == 200
        resp.read()


@pytest.mark.parametrize("saving", [True, False], ids=["save", "plain"])
def test_unchanged_request_goes_up_as_sent_and_errors_are_classified_when_saved(tmp_path, saving):
    fake = procs.start_fake_upstream(tool_name="Bash", tool_args={"command": "ls"})
    save = tmp_path / "flows.mitm" if saving else None
    px = procs.start_mitmdump(fake.url, save_path=save)
    try:
        _post(px.port)
        got = fake.wait_requests(1)
        assert base64.b64decode(got[0]["body_b64"]) == BODY
        if saving:
            flows = px.flows()
            record = flows[0].metadata["toolvocab"]
            assert record["request_changed"] is False
            assert [(e["kind"], e["client"], e["tool"]) for e in record["tool_errors"]] == [
                ("unknown_tool", "Claude Code", "shell")
            ]
    finally:
        px.stop()
        fake.stop()


#: A tool name the Anthropic grammar rejects (a dot): it goes up as an alias, in ``tools`` and in
#: the transcript's earlier calls alike.
DOTTED = "files.read"


@pytest.mark.parametrize("renamed", [False, True], ids=["sentence only", "sentence and a renamed tool"])
def test_large_changed_request_through_the_sdk_is_a_whole_write(renamed):
    """A Claude-Code-sized request (over 40 KB: the addon copies the top-level values its plan
    leaves alone from the client's bytes) sent by the official ``anthropic`` SDK through a real
    mitmdump: the upstream receives exactly what writing the whole changed body gives, the
    transcript as the client sent it unless a name in it is renamed, the system prompt with the
    sentence naming the tool it does not mention."""
    import orjson

    import sdk

    second = DOTTED if renamed else "Read"
    tools = [
        {
            "name": "Bash",
            "description": "Run a command.",
            "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
        },
        {
            "name": second,
            "description": "Read a file.",
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    ]
    system = [{"type": "text", "text": "You are a coding agent. Use Bash for commands."}]
    messages: list[dict] = [{"role": "user", "content": "Fix the test."}]
    for i in range(30):
        name = second if i % 3 == 0 else "Bash"
        args = {"path": f"src/f{i}.py"} if name == second else {"command": f"pytest -k t{i}"}
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Looking. " * 100},
                    {"type": "tool_use", "id": f"toolu_{i:04d}", "name": name, "input": args},
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i:04d}", "content": "line\n" * 200}],
            }
        )
    fake = procs.start_fake_upstream(tool_name="Bash", tool_args={"command": "ls"})
    px = procs.start_mitmdump(fake.url)
    try:
        client = sdk.anthropic_client(px.url)
        reply = client.messages.create(
            model="claude-test", max_tokens=100, system=system, tools=tools, messages=messages
        )
        assert reply.type == "message" and reply.content  # the SDK read the answer
        (got,) = fake.wait_requests(1)
        sent = base64.b64decode(got["body_b64"])
        assert len(sent) > 40_000
        up = orjson.loads(sent)
        assert sent == orjson.dumps(up)  # byte for byte a whole write of what it holds
        assert up["system"][:-1] == system
        sentence = up["system"][-1]["text"]
        names = [t["name"] for t in up["tools"]]
        if renamed:
            alias = names[1]
            assert alias != DOTTED and "." not in alias and alias in sentence
            replayed = [
                b["name"]
                for m in up["messages"]
                if isinstance(m["content"], list)
                for b in m["content"]
                if b["type"] == "tool_use"
            ]
            assert replayed == [alias if i % 3 == 0 else "Bash" for i in range(30)]
            for m_up, m_client in zip(up["messages"], messages):  # nothing else in the transcript moved
                if isinstance(m_client["content"], list):
                    for b_up, b_client in zip(m_up["content"], m_client["content"]):
                        assert {k: v for k, v in b_up.items() if k != "name"} == {
                            k: v for k, v in b_client.items() if k != "name"
                        }
        else:
            assert names == ["Bash", "Read"] and "Read" in sentence
            assert up["messages"] == messages
    finally:
        sdk.assert_no_addon_errors(px)
        fake.stop()
