"""A tool name over 64 characters through a real mitmdump with the addon, driven by the ``openai`` SDK.

tests/fake_upstream.py runs with ``reject_long_names``: a Chat Completions or Responses request
declaring a name over 64 characters gets OpenAI's real 400 (``Invalid 'tools[N].function.name':
string too long. Expected a string with maximum length 64, but got a string with length L
instead.``, ``code: string_above_max_length``). Otherwise it answers a call to the first declared
tool matching ``re:^mcp__plugin_`` — the name it received, i.e. the alias.

* addon on: the request succeeds, the upstream saw only the alias (readable prefix + 8 hex, at
  most 64), and the SDK sees the original long name in the answer — JSON, streamed with
  ``stream=True`` and with the SDK's stream helper; the replayed call in the next turn goes up as
  the same alias;
* ``toolvocab_mode=off``: the SDK raises ``BadRequestError`` with the real error text;
* a bad ``toolvocab_profiles`` file: mitmdump exits non-zero and its output carries the
  ``OptionsError`` naming the file and line.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import openai
import pytest

import procs
from sdk import openai_client

pytestmark = pytest.mark.integration

LONG = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance_v2"  # 78 characters
assert len(LONG) > 70
#: What the addon sends for LONG (the alias shape the unit tests pin: 55 characters + _ + 8 hex of SHA-256).
ALIAS = LONG[:55] + "_" + hashlib.sha256(LONG.encode()).hexdigest()[:8]
ARGS = {"template_path": "cfn.yaml"}
MODEL = "gpt-test-model"
SYSTEM = "You are a careful coding agent used in an offline test."
LONG_ERROR = (
    f"Invalid 'tools[1].function.name': string too long. Expected a string with maximum length 64, "
    f"but got a string with length {len(LONG)} instead."
)
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "Bash",
            "description": "Run a command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
    {
        "type": "function",
        "function": {
            "name": LONG,
            "description": "Check a CloudFormation template.",
            "parameters": {
                "type": "object",
                "properties": {"template_path": {"type": "string"}},
                "required": ["template_path"],
            },
        },
    },
]
RESPONSES_TOOLS = [dict(t["function"], type="function") for t in CHAT_TOOLS]
PROMPT = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Check cfn.yaml."}]


@pytest.fixture
def rejecting(fake_upstream):
    fake_upstream.config(reject_long_names=True, tool_name="re:^mcp__plugin_", tool_args=ARGS)
    return fake_upstream


def assert_clean(px: procs.MitmdumpHandle) -> None:
    px.stop()
    out = px.output()
    for marker in (
        "Addon error",
        "mitmproxy has crashed",
        f'File "{procs.REPO / "toolvocab"}',
        f'File "{procs.REPO / "addon"}',
        "error in script",
    ):
        assert marker not in out, f"{marker!r} in mitmdump output:\n{out}"


def declared(body: dict) -> list[str]:
    return [t["function"]["name"] if "function" in t else t["name"] for t in body["tools"]]


def chat_stream_call(client: openai.OpenAI, messages: list[dict]) -> dict[str, Any]:
    acc: dict[str, Any] = {"id": None, "name": "", "arguments": "", "finish": None}
    for chunk in client.chat.completions.create(
        model=MODEL, messages=messages, tools=CHAT_TOOLS, stream=True, stream_options={"include_usage": True}
    ):
        for choice in chunk.choices:
            acc["finish"] = choice.finish_reason or acc["finish"]
            for tc in choice.delta.tool_calls or []:
                acc["id"] = acc["id"] or tc.id
                acc["name"] += tc.function.name or ""
                acc["arguments"] += tc.function.arguments or ""
    return acc


# ====================================================================== Chat Completions
@pytest.mark.parametrize("transport", ["json", "create_stream", "stream_helper"])
@pytest.mark.parametrize("chunk_size", [0, 7])
def test_chat_long_name_succeeds_and_the_sdk_sees_the_original(
    rejecting, proxy, transport: str, chunk_size: int
) -> None:
    rejecting.config(chunk_size=chunk_size)
    px = proxy()
    client = openai_client(px.url)
    if transport == "json":
        message = client.chat.completions.create(model=MODEL, messages=PROMPT, tools=CHAT_TOOLS).choices[0].message
        call = {
            "id": message.tool_calls[0].id,
            "name": message.tool_calls[0].function.name,
            "arguments": message.tool_calls[0].function.arguments,
        }
        assert len(message.tool_calls) == 1
    elif transport == "create_stream":
        call = chat_stream_call(client, PROMPT)
        assert call["finish"] == "tool_calls"
    else:
        with client.chat.completions.stream(model=MODEL, messages=PROMPT, tools=CHAT_TOOLS) as stream:
            names = [e.name for e in stream if e.type == "tool_calls.function.arguments.done"]
            final = stream.get_final_completion()
        tc = final.choices[0].message.tool_calls[0]
        call = {"id": tc.id, "name": tc.function.name, "arguments": tc.function.arguments}
        assert names == [LONG]
        assert tc.function.parsed_arguments is None or tc.function.parsed_arguments == ARGS
    assert call["name"] == LONG
    assert json.loads(call["arguments"]) == ARGS

    (record,) = rejecting.wait_requests(1)
    assert record["reply"]["status"] == 200, record["reply"]
    assert declared(record["body"]) == ["Bash", ALIAS], "the upstream must see the alias, never the long name"
    assert LONG not in json.dumps(record["body"])
    assert len(ALIAS) <= 64
    # the schema and description went up untouched
    assert record["body"]["tools"][1]["function"]["parameters"] == CHAT_TOOLS[1]["function"]["parameters"]
    assert record["body"]["tools"][1]["function"]["description"] == CHAT_TOOLS[1]["function"]["description"]

    # next turn: the client replays its call under the long name; the upstream sees the alias again
    messages = PROMPT + [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": call["id"], "type": "function", "function": {"name": LONG, "arguments": call["arguments"]}}
            ],
        },
        {"role": "tool", "tool_call_id": call["id"], "content": "compliant"},
    ]
    final = client.chat.completions.create(model=MODEL, messages=messages, tools=CHAT_TOOLS)
    assert final.choices[0].message.content.endswith("compliant")
    second = rejecting.wait_requests(2)[1]
    assert second["reply"]["status"] == 200
    assert second["body"]["messages"][2]["tool_calls"][0]["function"]["name"] == ALIAS
    assert LONG not in json.dumps(second["body"])

    flows = px.flows()
    records = [f.metadata["toolvocab"] for f in flows]
    assert all(r["rename_map"] == {LONG: ALIAS} for r in records)
    assert any(
        d["name"] == ALIAS and d["target"] == LONG and d["step"] == "reverse_map" for d in records[0]["decisions"]
    ), records[0]["decisions"]
    assert_clean(px)


def test_chat_mode_off_gets_openais_400(rejecting, proxy) -> None:
    px = proxy(options={"toolvocab_mode": "off"})
    client = openai_client(px.url)
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError) as info:
            if stream:
                chat_stream_call(client, PROMPT)
            else:
                client.chat.completions.create(model=MODEL, messages=PROMPT, tools=CHAT_TOOLS)
        err = info.value
        assert err.status_code == 400
        assert err.body["message"] == LONG_ERROR, err.body
        assert err.body["code"] == "string_above_max_length" and err.body["param"] == "tools[1].function.name"
    records = rejecting.wait_requests(2)
    assert [r["reply"]["status"] for r in records] == [400, 400]
    assert all(declared(r["body"])[1] == LONG for r in records)
    assert_clean(px)


def test_chat_without_the_addon_gets_openais_400(rejecting, proxy) -> None:
    """The harness itself: plain mitmdump forwards the long name and the fake rejects it."""
    px = proxy(script=None)
    with pytest.raises(openai.BadRequestError, match="string too long"):
        openai_client(px.url).chat.completions.create(model=MODEL, messages=PROMPT, tools=CHAT_TOOLS)


# ============================================================================ Responses
@pytest.mark.parametrize("stream", [False, True])
def test_responses_long_name_succeeds_and_the_sdk_sees_the_original(rejecting, proxy, stream: bool) -> None:
    px = proxy()
    client = openai_client(px.url)
    kwargs = dict(
        model=MODEL,
        instructions=SYSTEM,
        input="Check cfn.yaml.",
        tools=RESPONSES_TOOLS,
        tool_choice={"type": "function", "name": LONG},
    )
    if stream:
        events = list(client.responses.create(stream=True, **kwargs))
        types = [e.type for e in events]
        assert types[0] == "response.created" and types[-1] == "response.completed"
        added = next(e for e in events if e.type == "response.output_item.added")
        assert added.item.name == LONG
        assert [t.name for t in events[0].response.tools] == ["Bash", LONG]  # the echo in response.created
        response = events[-1].response
    else:
        response = client.responses.create(**kwargs)
    (item,) = [o for o in response.output if o.type == "function_call"]
    assert item.name == LONG and json.loads(item.arguments) == ARGS
    assert [t.name for t in response.tools] == ["Bash", LONG]  # the tools echo carries the client's names
    assert response.tool_choice.name == LONG

    (record,) = rejecting.wait_requests(1)
    assert record["reply"]["status"] == 200, record["reply"]
    assert declared(record["body"]) == ["Bash", ALIAS]
    assert record["body"]["tool_choice"] == {"type": "function", "name": ALIAS}
    assert LONG not in json.dumps(record["body"])
    px.stop()
    assert "Addon error" not in px.output()


def test_responses_mode_off_gets_openais_400(rejecting, proxy) -> None:
    px = proxy(options={"toolvocab_mode": "off"})
    with pytest.raises(openai.BadRequestError) as info:
        openai_client(px.url).responses.create(model=MODEL, input="Check cfn.yaml.", tools=RESPONSES_TOOLS)
    assert info.value.body["message"] == LONG_ERROR.replace("tools[1].function.name", "tools[1].name")
    assert info.value.body["code"] == "string_above_max_length"
    assert rejecting.wait_requests(1)[0]["reply"]["status"] == 400


# ========================================================================= bad profile file
def run_mitmdump_expecting_exit(profiles: Path, timeout: float = 40.0) -> tuple[int, str]:
    """Start mitmdump with the addon and ``toolvocab_profiles``; (exit code, output). Killed (and
    the test failed) if it is still running after ``timeout`` seconds."""
    argv = [
        str(procs.MITMDUMP),
        "-s",
        str(procs.ADDON_SCRIPT),
        "--mode",
        "reverse:http://127.0.0.1:9",
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(procs.free_port()),
        "--set",
        f"toolvocab_profiles={profiles}",
    ]
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        cwd=str(procs.REPO),
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, _ = proc.communicate(timeout=5)
        pytest.fail(f"mitmdump kept running with a bad profile file:\n{out.decode(errors='replace')}")
    return proc.returncode, out.decode(errors="replace")


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('[[profile]]\nname = "codex"\n\nmodel = "(gpt"\n', ":4: profile.0.model: Value error, invalid regex"),
        (
            '[[profile]]\nname = "codex"\n[profile.names]\nshell = 5\n',
            ":4: profile.0.names.shell: Input should be a valid string",
        ),
        ('[[profile]]\nname = "codex"\nmodel = "^gpt-5\n', ":3: TOML syntax error"),
    ],
    ids=["bad regex", "bad value", "TOML syntax"],
)
def test_bad_profile_file_stops_mitmdump_with_the_line(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text(text)
    start = time.monotonic()
    rc, out = run_mitmdump_expecting_exit(path)
    assert rc != 0, out
    assert f"OptionsError: toolvocab_profiles: {path}{where}" in out, out
    assert time.monotonic() - start < 40


def test_good_profile_file_starts(tmp_path: Path, fake_upstream, proxy) -> None:
    path = tmp_path / "profiles.toml"
    path.write_text('[[profile]]\nname = "codex"\nmodel = "^gpt-5"\n[profile.names]\nshell = "shell"\n')
    px = proxy(options={"toolvocab_profiles": str(path)})
    assert px.process.running()
    assert_clean(px)


def test_non_utf8_profile_file_stops_mitmdump_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[[profile]]\nname = "caf\xe9"\n')
    rc, out = run_mitmdump_expecting_exit(path)
    assert rc != 0
    assert f"OptionsError: toolvocab_profiles: {path}:2: " in out, out


def _sse(events: list[dict]) -> bytes:
    return b"".join(f"event: {e['type']}\ndata: {json.dumps(e, separators=(',', ':'))}\n\n".encode() for e in events)


def test_was_bug_responses_stream_done_event_names_the_alias(fake_upstream, proxy) -> None:
    px = proxy()
    item = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "arguments": json.dumps(ARGS),
        "call_id": "call_1",
        "name": ALIAS,
    }
    fake_upstream.enqueue(
        _sse(
            [
                {
                    "type": "response.output_item.added",
                    "sequence_number": 0,
                    "output_index": 0,
                    "item": dict(item, status="in_progress", arguments=""),
                },
                {
                    "type": "response.function_call_arguments.delta",
                    "sequence_number": 1,
                    "item_id": "fc_1",
                    "output_index": 0,
                    "delta": item["arguments"],
                },
                {
                    "type": "response.function_call_arguments.done",
                    "sequence_number": 2,
                    "item_id": "fc_1",
                    "output_index": 0,
                    "name": ALIAS,
                    "arguments": item["arguments"],
                },
                {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item},
            ]
        ),
        headers={"Content-Type": "text/event-stream"},
        chunk_size=9,
    )
    events = list(
        openai_client(px.url).responses.create(model=MODEL, input="Check cfn.yaml.", tools=RESPONSES_TOOLS, stream=True)
    )
    assert [e.item.name for e in events if e.type == "response.output_item.done"] == [LONG]
    (done,) = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert done.name == LONG, f"the SDK's done event names {done.name!r}"
