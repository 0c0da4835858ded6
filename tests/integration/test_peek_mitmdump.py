"""Plain mitmdump (no ``-w``, no UI), as a user runs it in front of an agent: a request the plan
leaves as sent is only peeked (``toolvocab.dialects.pipeline``), and read whole when its answer
would change.

Through a real ``mitmdump -s addon/toolvocab.py`` in reverse mode, mode ``repair`` (no prompt
sentence: nothing is written in the request), in front of the fake upstream:

* the official ``anthropic`` SDK, JSON and streamed: the upstream gets the client's bytes, the
  client gets the model's lowercase ``bash`` as its declared ``Bash``;
* the same request sent as raw bytes with a key repeated deep in its transcript (which no SDK
  writes): the upstream gets it as sent, and the client the answer as the upstream sent it
  (``bash``), JSON and streamed, with the record the request hook gives a request it leaves
  as sent.
"""

from __future__ import annotations

import base64
import json
import urllib.request

import pytest

import procs
import sdk

pytestmark = pytest.mark.integration

TOOLS = [
    {
        "name": "Bash",
        "description": "Run a command.",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
]
SYSTEM = "You are a coding agent. Use Bash for commands."
MESSAGES = [
    {"role": "user", "content": "What is the git status?"},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash", "input": {"command": "ls"}}],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "content": "README.md\nsrc\n" * 200}],
    },
    {"role": "assistant", "content": [{"type": "text", "text": "Two entries."}]},
    {"role": "user", "content": "Now the git status, please."},
]


@pytest.fixture(scope="module")
def plain():
    """The fake upstream answering ``bash {"command": "git status"}`` and a plain mitmdump in front
    of it (mode repair, nothing saved); both stopped by PID at the module's end."""
    fake = procs.start_fake_upstream(tool_name="bash", tool_args={"command": "git status"})
    px = None
    try:
        px = procs.start_mitmdump(fake.url, options={"toolvocab_mode": "repair"})
        yield fake, px
    finally:
        if px is not None:
            px.stop()
        fake.stop()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_the_sdk_gets_its_declared_name_and_the_upstream_the_clients_bytes(plain, stream):
    fake, px = plain
    before = len(fake.requests())
    client = sdk.anthropic_client(px.url)
    kwargs = dict(model="claude-test", max_tokens=100, system=SYSTEM, tools=TOOLS, messages=MESSAGES)
    if stream:
        with client.messages.stream(**kwargs) as s:
            message = s.get_final_message()
    else:
        message = client.messages.create(**kwargs)
    calls = [(b.name, b.input) for b in message.content if b.type == "tool_use"]
    assert calls == [("Bash", {"command": "git status"})]
    got = sdk.one_request(fake, before)
    sent = json.loads(base64.b64decode(got["body_b64"]))
    assert sent["system"] == SYSTEM and sent["tools"] == TOOLS and sent["messages"] == MESSAGES  # nothing added


def _raw_post(port: int, body: bytes, stream: bool) -> bytes:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/v1/messages",
        data=body,
        method="POST",
        headers={"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-test"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=20) as resp:
        assert resp.status == 200
        return resp.read()


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_a_key_repeated_deep_in_the_transcript_leaves_the_answer_as_sent(plain, stream):
    fake, px = plain
    before = len(fake.requests())
    body = json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 100,
            "stream": stream,
            "system": SYSTEM,
            "tools": TOOLS,
            "messages": MESSAGES,
        },
        separators=(",", ":"),
    ).encode()
    # the tool_result block repeats its is_error key: which one the upstream reads is its choice
    body = body.replace(b'"tool_use_id":"toolu_01"', b'"is_error":false,"tool_use_id":"toolu_01","is_error":true', 1)
    assert body.count(b'"is_error"') == 2
    out = _raw_post(px.port, body, stream)
    got = sdk.one_request(fake, before)
    assert base64.b64decode(got["body_b64"]) == body
    assert out == sdk.reply_bytes(got)  # the answer as the upstream sent it: "bash", not "Bash"
    assert b'"bash"' in out and b'"Bash"' not in out


def test_plain_mitmdump_logged_no_addon_error(plain):
    _, px = plain
    out = px.output()
    for marker in ("Addon error", "mitmproxy has crashed", "Traceback"):
        assert marker not in out, f"{marker!r} in mitmdump output:\n{out}"
