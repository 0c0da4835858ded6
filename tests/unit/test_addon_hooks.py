"""The addon's hooks driven the way mitmproxy drives them.

The script is loaded once for this module (``tests/harness/``: ``tctx.script("addon/toolvocab.py")``,
never also imported as a module: a second module object would not be the one whose hooks run). Each
flow goes requestheaders → request → responseheaders → the ``response.stream`` callable over random
chunk splits (then ``b""``) → response, as in mitmproxy's proxy core (reference §2, §5).
"""

from __future__ import annotations

import asyncio
import copy
import gzip
import io
import json
import logging
import random
import zlib
from collections.abc import Callable
from pathlib import Path

import brotli
import orjson
import pytest
from mitmproxy import exceptions
from mitmproxy import flow as mflow
from mitmproxy import http
from mitmproxy import io as mio
from mitmproxy.net import encoding
from mitmproxy.proxy.layers import http as hl

import harness
import toolvocab.addons.state as state_module
import toolvocab.dialects.anthropic as anthropic_dialect
from harness.fixtures import env  # noqa: F401  (pytest fixtures)
from harness.fixtures import loaded  # noqa: F401
from toolvocab.dialects.sse import EventStreamRewriter
from toolvocab.dialects.sse import SSEParser

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "anthropic"
KEY = harness.KEY
HOST = "api.anthropic.com"


def fixture_json(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def events_of(data: bytes):
    parser = SSEParser()
    events = parser.feed(data)
    assert parser.flush() == b""
    return events


# -- harness (tests/harness/) -------------------------------------------------------------------

Env = harness.Env
random_chunks = harness.random_chunks
replay = harness.replay
#: Claude Code's request headers (after ``host``).
ANTHROPIC_HEADERS = [
    ("content-type", "application/json"),
    ("accept-encoding", "gzip, deflate, br, zstd"),
    ("anthropic-version", "2023-06-01"),
]


def make_flow(
    body: bytes | dict | list | None,
    *,
    path: str = "/v1/messages?beta=true",
    host: str = HOST,
    resp_type: str | None = "text/event-stream; charset=utf-8",
    **kw,
) -> http.HTTPFlow:
    """An Anthropic Messages flow from Claude Code (``harness.make_flow``)."""
    return harness.make_flow(body, host=host, path=path, headers=ANTHROPIC_HEADERS, resp_type=resp_type, **kw)


def request_json(f: http.HTTPFlow) -> dict:
    return orjson.loads(f.request.content)


def foreign_flow(**kw) -> http.HTTPFlow:
    kw.setdefault("upstream", fixture_bytes("stream-foreign-tool.sse"))
    return make_flow(fixture_json("request-claude-code.json"), **kw)


def tool_blocks(out: bytes) -> list[dict]:
    """(name, input) of each tool_use block in an Anthropic SSE answer, as a client assembles it."""
    blocks: dict[int, dict] = {}
    for event in events_of(out):
        data = event.json()
        if not isinstance(data, dict):
            continue
        if data.get("type") == "content_block_start" and data["content_block"].get("type") == "tool_use":
            blocks[data["index"]] = {"name": data["content_block"]["name"], "json": ""}
        elif data.get("type") == "content_block_delta" and data["delta"].get("type") == "input_json_delta":
            blocks[data["index"]]["json"] += data["delta"]["partial_json"]
    return [
        {"name": b["name"], "input": orjson.loads(b["json"]) if b["json"] else {}} for _, b in sorted(blocks.items())
    ]


FOREIGN_STREAM_TOOLS_BEFORE = [
    {"name": "shell", "input": {"cmd": "git log --oneline -3"}},
    {"name": "Bash", "input": {"command": "git status"}},
]
FOREIGN_STREAM_TOOLS_AFTER = [
    {"name": "Bash", "input": {"command": "git log --oneline -3"}},
    {"name": "Bash", "input": {"command": "git status"}},
]


# -- options ------------------------------------------------------------------------------------


def test_options_are_registered_with_defaults(env):
    assert env.tctx.options.toolvocab_mode == "auto"
    assert env.tctx.options.toolvocab_hosts is None
    assert env.addon.mode == "auto" and env.addon.hosts is None


def test_invalid_hosts_regex_is_an_options_error(env):
    env.configure(toolvocab_hosts=r"anthropic\.com$")
    with pytest.raises(exceptions.OptionsError, match="toolvocab_hosts"):
        env.configure(toolvocab_hosts="(unclosed")
    # rolled back to the previous, valid value
    assert env.tctx.options.toolvocab_hosts == r"anthropic\.com$"
    assert env.addon.hosts.pattern == r"anthropic\.com$"


def test_unknown_mode_is_an_options_error(env):
    with pytest.raises(exceptions.OptionsError):
        env.configure(toolvocab_mode="bogus")


# -- modes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_auto_mode_stream_repaired_and_sentence_added(env, seed):
    f = foreign_flow()
    original_request = fixture_json("request-claude-code.json")
    r = replay(env, f, seed)
    assert r.streamed == "callable"
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER
    # everything outside the repaired tool block arrives byte-identical
    upstream = fixture_bytes("stream-foreign-tool.sse")
    head = upstream[: upstream.index(b'event: content_block_start\ndata: {"type":"content_block_start","index":1')]
    tail = upstream[upstream.index(b'event: content_block_start\ndata: {"type":"content_block_start","index":2') :]
    assert r.out.startswith(head) and r.out.endswith(tail)
    # request: the sentence appended as a system block, nothing else changed
    sent = request_json(f)
    sentence = sent["system"][-1]["text"]
    assert sent["system"][:-1] == original_request["system"]
    for name in ("Bash", "Read", "ToolSearch", "mcp__tracker__open_ticket"):
        assert name in sentence
    assert {k: v for k, v in sent.items() if k != "system"} == {
        k: v for k, v in original_request.items() if k != "system"
    }
    assert f.request.headers["accept-encoding"] == "identity"
    assert f.request.headers["content-length"] == str(len(f.request.raw_content))
    # record
    rec = r.record
    assert rec["dialect"] == "anthropic" and rec["mode"] == "auto" and rec["skipped"] is None
    assert rec["declared"] == ["Bash", "Read", "ToolSearch", "mcp__tracker__open_ticket"]
    assert rec["prompt_sentence"] == sentence
    assert rec["prompt_names"] == ["Bash", "Read", "ToolSearch", "mcp__tracker__open_ticket"]
    assert rec["request_changed"] is True and rec["response_changed"] is True and rec["streamed"] is True
    shell, bash = rec["decisions"]
    assert (shell["name"], shell["action"], shell["step"], shell["target"]) == ("shell", "rename", "capability", "Bash")
    assert shell["reason"] and shell["arguments_after"] == {"command": "git log --oneline -3"}
    assert shell["call_id"] == "toolu_01FixSse00000000000000001"
    assert (bash["name"], bash["action"], bash["step"]) == ("Bash", "keep", "declared")
    assert rec["notes"] == []
    # marker and comment
    assert f.marked == ":wrench:"
    assert f.comment.startswith("changed: ") and "shell→Bash (capability)" in f.comment


def test_a_shell_call_is_left_when_the_agent_says_it_runs_on_windows(env):
    """Claude Code's environment block says Platform: win32: each agent runs its own shell there
    (Git Bash, PowerShell, cmd.exe), so Codex's shell argv is not made a Bash command line."""
    upstream = fixture_bytes("response-foreign-tool.json")
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    body["system"].append(
        {
            "type": "text",
            "text": "<env>\nWorking directory: C:\\repo\nPlatform: win32\nOS Version: Windows 11 Pro\n</env>",
        }
    )
    f = make_flow(body, upstream=upstream, resp_type="application/json")
    r = replay(env, f)
    assert r.out == upstream
    [decision] = [d for d in r.record["decisions"] if d["name"] == "shell"]
    assert decision["action"] == "leave" and "Windows" in decision["reason"]


#: Gemini CLI's and Qwen Code's own request shapes: the environment context (``My operating system
#: is: …``) in the first user turn, and the platform in the User-Agent, ``(win32; x64)`` on Windows.
SHELL_ARGV = {"command": ["bash", "-lc", "ls -la"]}
RUN_SHELL = {
    "name": "run_shell_command",
    "description": "Runs a shell command.",
    "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


def _gemini_cli(platform: str) -> tuple[bytes, http.HTTPFlow]:
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": f"Today's date is Friday.\nMy operating system is: {platform}\n"}]},
            {"role": "user", "parts": [{"text": "list the files"}]},
        ],
        "tools": [{"functionDeclarations": [RUN_SHELL]}],
    }
    upstream = orjson.dumps(
        {
            "candidates": [
                {
                    "content": {"role": "model", "parts": [{"functionCall": {"name": "shell", "args": SHELL_ARGV}}]},
                    "finishReason": "STOP",
                }
            ]
        }
    )
    headers = [
        ("content-type", "application/json"),
        ("user-agent", f"GeminiCLI/0.61.0/gemini-2.5-pro ({platform}; x64)"),
    ]
    return upstream, harness.make_flow(
        body,
        host="generativelanguage.googleapis.com",
        path="/v1beta/models/gemini-2.5-pro:generateContent",
        headers=headers,
        upstream=upstream,
        resp_type="application/json",
    )


def _qwen_code(platform: str) -> tuple[bytes, http.HTTPFlow]:
    body = {
        "model": "qwen3-coder-plus",
        "messages": [
            {"role": "system", "content": "You are Qwen Code."},
            {"role": "user", "content": f"My operating system is: {platform}\n"},
            {"role": "user", "content": "clean the build"},
        ],
        "tools": [{"type": "function", "function": RUN_SHELL}],
    }
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "exec_command", "arguments": '{"cmd": "rm -rf build"}'},
    }
    upstream = orjson.dumps(
        {
            "id": "c1",
            "object": "chat.completion",
            "created": 1,
            "model": "qwen3-coder-plus",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": None, "tool_calls": [call]},
                    "finish_reason": "tool_calls",
                }
            ],
        }
    )
    headers = [("content-type", "application/json"), ("user-agent", f"QwenCode/0.15.10 ({platform}; x64)")]
    return upstream, harness.make_flow(
        body,
        host="dashscope.aliyuncs.com",
        path="/compatible-mode/v1/chat/completions",
        headers=headers,
        upstream=upstream,
        resp_type="application/json",
    )


@pytest.mark.parametrize("client", [_gemini_cli, _qwen_code], ids=["gemini-cli", "qwen-code"])
def test_a_shell_call_is_left_when_the_user_agent_says_windows(env, client):
    """Gemini CLI and Qwen Code say they run on Windows in their User-Agent (``(win32; x64)``) and
    in the first user turn, not in a system text: a command line never moves between their
    shells there. On Linux the same answer is repaired (the control)."""
    upstream, f = client("win32")
    r = replay(env, f)
    assert r.out == upstream
    [decision] = r.record["decisions"]
    assert decision["action"] == "leave" and "Windows" in decision["reason"], decision
    upstream, f = client("linux")
    r = replay(env, f)
    assert r.out != upstream and b"run_shell_command" in r.out
    [decision] = r.record["decisions"]
    assert (decision["action"], decision["target"]) == ("rename", "run_shell_command"), decision


def test_auto_mode_json_answer_repaired(env):
    upstream = fixture_bytes("response-foreign-tool.json")
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    f = make_flow(
        body, upstream=upstream, resp_type="application/json", resp_headers=[("content-length", str(len(upstream)))]
    )
    r = replay(env, f)
    assert r.streamed == "buffered"
    answer = orjson.loads(r.out)
    assert answer["content"][1]["name"] == "Bash"
    assert answer["content"][1]["input"] == {"command": "git log --oneline -3"}
    assert answer["content"][0] == orjson.loads(upstream)["content"][0]
    assert r.record["response_changed"] is True and r.record["streamed"] is False
    assert f.response.headers["content-length"] == str(len(r.out))
    assert f.marked == ":wrench:"


@pytest.mark.parametrize(
    "repeat",
    [
        (b'"output_tokens": 40}', b'"output_tokens": 40, "output_tokens": 41}'),  # far from the call
        (b'"name": "shell"', b'"name": "Bash", "name": "shell"'),  # the call's own name
    ],
    ids=["usage", "call-name"],
)
@pytest.mark.parametrize("stream", [False, True], ids=["buffered", "stream-request"])
def test_a_json_answer_repeating_a_key_passes_as_it_came(env, repeat, stream):
    """Which of two values a client reads is its parser's choice: a JSON answer that repeats a key
    anywhere is never written again, though it holds a call the addon would repair; buffered, or
    to a stream request (read whole inside the stream callable)."""
    upstream = fixture_bytes("response-foreign-tool.json")
    assert upstream.count(repeat[0]) == 1
    upstream = upstream.replace(*repeat)
    body = fixture_json("request-claude-code.json")
    body["stream"] = stream
    f = make_flow(body, upstream=upstream, resp_type="application/json")
    r = replay(env, f)
    assert r.streamed == ("callable" if stream else "buffered")
    assert r.out == upstream
    assert r.record["response_changed"] is False
    assert any("could not be written back exactly" in n for n in r.record["notes"]), r.record["notes"]
    assert f.marked == ":warning:" and f.comment.startswith("passed through: the rewritten answer")
    # no call reached the client changed: the record decides none (the log line said shell→Bash)
    assert r.record["decisions"] == [] and r.record["calls_repaired"] == 0, r.record["decisions"]


@pytest.mark.parametrize("stream", [False, True])
def test_a_json_answer_repeating_a_key_still_gives_this_flows_aliases_back(env, stream):
    """The same answer under an alias this flow sent (``files.read`` has a dot): written as it
    came but for the alias, the client's own name in its place (the alias is this flow's
    invention: spelling only; which repeated value the client reads stays its parser's choice).
    Was: the alias reached the client, a tool it never declared."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    answer = (
        b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use",'
        b'"id":"toolu_01","name": "' + upstream_name.encode() + b'","input":{"path":"a"}},{"type":"tool_use",'
        b'"id":"toolu_02","name":"shell","input":{"command":["ls"]}}],"stop_reason":"tool_use",'
        b'"usage":{"input_tokens":1,"output_tokens":1},"usage":{"input_tokens":2,"output_tokens":2}}'
    )
    request = orjson.loads(_files_read_request())
    request["stream"] = stream
    f = make_flow(request, upstream=answer, resp_type="application/json")
    r = replay(env, f)
    assert r.out == answer.replace(upstream_name.encode(), b"files.read")  # shell left as sent
    assert r.record["decisions"] == [] and r.record["response_changed"] is True
    notes = [n for n in r.record["notes"] if "could not be written back exactly" in n]
    assert notes and notes[0].endswith(
        "the client got the answer as the upstream sent it but for names given back (files.read)"
    )


@pytest.mark.parametrize(
    "case", ["argument of another alias", "argument of the same alias", "remote mcp tool", "key in a string"]
)
def test_a_repeated_key_answer_gives_back_only_the_calls_names(env, case):
    """Only the names of the calls the dialect read go back, and only where the answer spells
    each as a ``"name"`` as often as its calls carry it: an argument called ``name`` (another
    tool's alias, or this call's), a remote MCP server's ``mcp_tool_use``, a ``"name"`` inside a
    string are never renamed (a changed argument, or another server's tool, is another call)."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    grammar = GRAMMARS["anthropic"]
    read_alias = alias("files.read", grammar, {"files.read", "files.write"})
    write_alias = alias("files.write", grammar, {"files.read", "files.write", read_alias})
    tool = {"name": "files.write", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    request = orjson.loads(_files_read_request())
    request["stream"] = False
    request["tools"].append(tool)
    inputs = {
        "argument of another alias": b'{"path":"a","name":"%s"}' % write_alias.encode(),
        "argument of the same alias": b'{"path":"a","name":"%s"}' % read_alias.encode(),
        "remote mcp tool": b'{"path":"a"}',
        "key in a string": b'{"path":"a","x\\"name": "%s"}' % read_alias.encode(),
    }
    extra = (
        b',{"type":"mcp_tool_use","id":"mcptoolu_01","name":"%s","server_name":"remote","input":{}}'
        % read_alias.encode()
        if case == "remote mcp tool"
        else b""
    )
    answer = (
        b'{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use",'
        b'"id":"toolu_01","name":"' + read_alias.encode() + b'","input":' + inputs[case] + b"}" + extra + b"],"
        b'"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1},"usage":{"input_tokens":2,"output_tokens":2}}'
    )
    f = make_flow(request, upstream=answer, resp_type="application/json")
    r = replay(env, f)
    assert read_alias.encode() in f.request.content and write_alias.encode() in f.request.content
    if case == "argument of another alias":
        assert r.out == answer.replace(b'"name":"%s"' % read_alias.encode(), b'"name":"files.read"', 1)
        assert write_alias.encode() in r.out  # the argument as sent
    else:
        assert r.out == answer  # the call's alias is spelled elsewhere too: nothing is renamed


def test_auto_mode_client_naming_all_tools_gets_no_sentence(env):
    body = fixture_json("request-claude-code.json")
    body["system"][0]["text"] += " Tools: Bash, Read, ToolSearch, mcp__tracker__open_ticket."
    raw = orjson.dumps(body)
    f = make_flow(raw, upstream=fixture_bytes("stream-declared-tool.sse"))
    r = replay(env, f)
    assert f.request.raw_content == raw
    assert r.out == fixture_bytes("stream-declared-tool.sse")
    assert r.record["prompt_sentence"] is None and r.record["request_changed"] is False
    assert r.record["response_changed"] is False
    assert [d["action"] for d in r.record["decisions"]] == ["keep"]
    assert not f.marked and not f.comment


@pytest.mark.parametrize("seed", range(5))
def test_repair_mode_repairs_answer_without_sentence(env, seed):
    env.configure(toolvocab_mode="repair")
    f = foreign_flow()
    raw_request = f.request.raw_content
    r = replay(env, f, seed)
    assert f.request.raw_content == raw_request
    assert f.request.headers["accept-encoding"] == "identity"
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER
    rec = r.record
    assert rec["mode"] == "repair" and rec["prompt_sentence"] is None and rec["prompt_names"] == []
    assert rec["request_changed"] is False and rec["response_changed"] is True
    assert [d["action"] for d in rec["decisions"]] == ["rename", "keep"]
    assert f.marked == ":wrench:"


@pytest.mark.parametrize("seed", range(5))
def test_observe_mode_changes_no_byte_but_records(env, seed):
    env.configure(toolvocab_mode="observe")
    f = foreign_flow(resp_headers=[("content-length", str(len(fixture_bytes("stream-foreign-tool.sse"))))])
    raw_request = f.request.raw_content
    req_headers = copy.deepcopy(f.request.headers)
    r = replay(env, f, seed)
    assert f.request.raw_content == raw_request
    assert f.request.headers == req_headers  # no anticomp either
    assert r.out == fixture_bytes("stream-foreign-tool.sse")
    rec = r.record
    assert rec["mode"] == "observe"
    assert rec["request_changed"] is False and rec["response_changed"] is False
    assert rec["prompt_sentence"] and rec["prompt_names"]  # what auto would add
    assert [(d["name"], d["action"], d["target"]) for d in rec["decisions"]] == [
        ("shell", "rename", "Bash"),
        ("Bash", "keep", "Bash"),
    ]
    assert f.marked == ":eyes:"
    assert "observe" in f.comment and "shell→Bash" in f.comment


def test_observe_mode_json_answer_unchanged(env):
    env.configure(toolvocab_mode="observe")
    upstream = fixture_bytes("response-foreign-tool.json")
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream, resp_type="application/json")
    r = replay(env, f)
    assert r.out == upstream
    assert r.record["decisions"][0]["action"] == "rename"
    assert r.record["response_changed"] is False
    assert f.marked == ":eyes:"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("to", ["observe", "off"])
def test_a_mode_set_while_a_request_is_upstream_leaves_its_answer_to_the_mode_it_was_sent_in(env, to, stream):
    """The request went up in ``auto`` with an alias (``files.read`` is no Anthropic tool name);
    the mode changes (mitmweb's options) before the answer: the answer still gets the client's
    name back, as the request was sent, and the record says what reached the client."""
    body = {
        "model": "m",
        "max_tokens": 10,
        "stream": stream,
        "tools": [
            {"name": "files.read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
        ],
        "messages": [{"role": "user", "content": "hi"}],
    }
    f = make_flow(body, response=False)
    harness.core(env.module).request(f)
    alias = orjson.loads(f.request.content)["tools"][0]["name"]
    assert alias != "files.read"
    env.configure(toolvocab_mode=to)
    block = {"type": "tool_use", "id": "toolu_1", "name": alias, "input": {"path": "a"}}
    if stream:
        upstream = b"".join(
            b"event: %s\ndata: %s\n\n" % (d["type"].encode(), orjson.dumps(d))
            for d in (
                {
                    "type": "message_start",
                    "message": {"id": "m1", "type": "message", "role": "assistant", "content": []},
                },
                {"type": "content_block_start", "index": 0, "content_block": {**block, "input": {}}},
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": '{"path": "a"}'},
                },
                {"type": "content_block_stop", "index": 0},
                {"type": "message_stop"},
            )
        )
        f.response = harness.answer(upstream, "text/event-stream")
    else:
        answer = {"id": "m1", "type": "message", "role": "assistant", "content": [block], "stop_reason": "tool_use"}
        f.response = harness.answer(orjson.dumps(answer), "application/json")
    core = harness.core(env.module)
    core.responseheaders(f)
    if stream:
        assert callable(f.response.stream)
        out = b"".join(f.response.stream(upstream)) + b"".join(f.response.stream(b""))
        f.response.content = b""
    core.response(f)
    if not stream:
        out = f.response.content
    record = f.metadata[KEY]
    assert alias.encode() not in out and b'"files.read"' in out
    assert record["mode"] == "auto" and record["response_changed"] is True
    assert f.marked == ":wrench:"


def test_off_mode_does_nothing(env, monkeypatch):
    """Nothing changed, nothing recorded; an event stream still streams as it arrives, as a flow
    of a host toolvocab leaves alone does (mitmproxy alone would hold it to its end)."""
    monkeypatch.setattr(env.addon.recorder, "mitmproxy_keeps", lambda: False)  # plain mitmdump
    env.configure(toolvocab_mode="off")
    f = foreign_flow()
    raw_request = f.request.raw_content
    req_headers = copy.deepcopy(f.request.headers)
    r = replay(env, f)
    assert KEY not in f.metadata
    assert r.streamed == "passthrough"  # streamed, no stream callable of toolvocab's
    assert r.out == fixture_bytes("stream-foreign-tool.sse")
    assert f.request.raw_content == raw_request and f.request.headers == req_headers
    assert not f.marked and not f.comment


LEFT_ALONE = {
    "mode off": ({"toolvocab_mode": "off"}, {}),
    "another host": ({"toolvocab_hosts": r"^api\.anthropic\.com$"}, {"host": "llm.internal.example"}),
    "no tools": ({}, {"body": {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "title?"}]}}),
}


@pytest.mark.parametrize("case", LEFT_ALONE, ids=list(LEFT_ALONE))
@pytest.mark.parametrize("ended", ["whole", "upstream gone"])
def test_a_saved_event_stream_toolvocab_leaves_alone_keeps_its_body(env, case, ended):
    """Something saves flows (the test master shows them): an event stream of a flow toolvocab
    leaves alone still streams as it arrives, byte for byte, and the saved flow keeps every byte
    that came, as mitmproxy keeps a body it buffered; nothing is recorded on it but what the
    request hook says of a request it does not handle."""
    options, flow_kw = LEFT_ALONE[case][0], dict(LEFT_ALONE[case][1])
    env.configure(**options)
    upstream = fixture_bytes("stream-foreign-tool.sse")
    body = flow_kw.pop("body", fixture_json("request-claude-code.json"))
    f = make_flow(body, upstream=upstream, **flow_kw)
    chunks = [upstream[i : i + 97] for i in range(0, len(upstream), 97)]
    if ended == "upstream gone":
        chunks = chunks[:3]
        f.error = mflow.Error("peer closed connection")
    r = replay(env, f, chunks=chunks)
    assert r.streamed == "callable"
    assert r.out == b"".join(chunks), "the client got every byte as it came"
    assert f.response.raw_content == b"".join(chunks), "the saved flow keeps what came"
    record = f.metadata.get(KEY)
    assert record is None or (record["skipped"] and not record["decisions"]), record


def test_a_kept_stream_holds_its_body_once(env):
    """The flow keeps the body; the stream callable it still holds keeps nothing after (mitmweb
    holds flows for the session: a body held twice is twice the memory)."""
    env.configure(toolvocab_mode="off")
    f = foreign_flow()
    replay(env, f)
    assert f.response.raw_content == fixture_bytes("stream-foreign-tool.sse")
    assert f.response.stream.kept is None


def test_an_answer_refused_before_any_byte_keeps_no_body(env):
    """mitmproxy refuses an answer at its headers (its length past ``body_size_limit``) after the
    responseheaders hook: the flow ends in an error before any byte came. The saved flow has no
    body, as in plain mitmproxy — not an empty one (which reads as an answer that had none)."""
    env.configure(toolvocab_mode="off")
    f = foreign_flow(upstream=b"")
    f.error = mflow.Error("Response body exceeds mitmproxy's body_size_limit.")
    r = replay(env, f, chunks=[])
    assert r.streamed == "callable"
    assert f.response.raw_content is None


@pytest.fixture
def size_options(env):
    """mitmproxy's ``stream_large_bodies`` and ``body_size_limit`` (its proxyserver addon declares
    them; the test context loads only toolvocab's), unset again after the test."""
    for name in ("stream_large_bodies", "body_size_limit"):
        if name not in env.tctx.options:
            env.tctx.options.add_option(name, str | None, None, "as mitmproxy's proxyserver declares it")
    yield env
    env.tctx.options.update(stream_large_bodies=None, body_size_limit=None)


@pytest.mark.parametrize("option", ["stream_large_bodies", "body_size_limit"])
@pytest.mark.parametrize("length", [False, True], ids=["chunked", "content-length"])
@pytest.mark.parametrize("mode", ["off", "observe"])
def test_a_stream_past_the_users_size_limit_is_kept_only_by_toolvocab_for_its_own_flows(
    size_options, option, length, mode
):
    """mitmproxy keeps no body it streams past ``stream_large_bodies`` (nor one past
    ``body_size_limit``): an event stream of a flow toolvocab leaves alone (mode off) is kept no
    more than that. A flow toolvocab handles keeps its answer whole, whether toolvocab reads it or
    not (gzip in observe mode), as its read streams are: ``toolvocab replay`` starts from it."""
    env = size_options
    env.configure(toolvocab_mode=mode, **{option: "1k"})
    plain = fixture_bytes("stream-foreign-tool.sse")
    noise = b": " + random.Random(0).randbytes(2048).hex().encode() + b"\n\n"  # an SSE comment
    upstream = plain if mode == "off" else gzip.compress(plain + noise, mtime=0)
    assert len(upstream) > 1024
    headers = [("content-length", str(len(upstream)))] if length else []
    if mode == "observe":
        headers.append(("content-encoding", "gzip"))
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=headers)
    r = replay(env, f)
    assert r.out == upstream, "the client got every byte as it came"
    assert f.response.raw_content == (None if mode == "off" else upstream)


def test_a_stream_within_the_users_size_limit_is_kept(size_options):
    env = size_options
    env.configure(toolvocab_mode="off", stream_large_bodies="1m", body_size_limit="2m")
    f = foreign_flow()
    replay(env, f)
    assert f.response.raw_content == fixture_bytes("stream-foreign-tool.sse")


def test_toolvocab_record_alone_keeps_no_stream_it_does_not_write(env, monkeypatch, tmp_path):
    """``toolvocab_record`` writes only flows toolvocab handles: an event stream it leaves alone
    streams as with nothing saving, kept by no one."""
    monkeypatch.setattr(env.addon.recorder, "mitmproxy_keeps", lambda: False)
    env.configure(toolvocab_mode="off", toolvocab_record=str(tmp_path))
    f = foreign_flow()
    r = replay(env, f)
    assert r.streamed == "passthrough" and f.response.raw_content is None


def test_a_left_alone_encoded_stream_is_kept_as_it_came(env):
    """Kept as the upstream sent it: encoded, with its content-encoding, so that the saved flow
    decodes to the events (not encoded twice, nor stored decoded under the header)."""
    env.configure(toolvocab_mode="off")
    plain = fixture_bytes("stream-foreign-tool.sse")
    upstream = gzip.compress(plain)
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=[("content-encoding", "gzip")]
    )
    r = replay(env, f)
    assert r.out == upstream
    assert f.response.raw_content == upstream and f.response.content == plain


# -- hosts --------------------------------------------------------------------------------------


def test_hosts_regex_non_matching_host_untouched(env):
    env.configure(toolvocab_hosts=r"^api\.anthropic\.com$")
    f = foreign_flow(host="llm.internal.example")
    raw_request = f.request.raw_content
    req_headers = copy.deepcopy(f.request.headers)
    r = replay(env, f)
    assert KEY not in f.metadata
    assert r.out == fixture_bytes("stream-foreign-tool.sse")
    assert f.request.raw_content == raw_request and f.request.headers == req_headers


def test_hosts_regex_matching_host_handled(env):
    env.configure(toolvocab_hosts=r"anthropic\.com$")
    f = foreign_flow()
    r = replay(env, f)
    assert r.record["dialect"] == "anthropic"
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER


@pytest.mark.parametrize(
    "path",
    [
        "/v1/projects/demo/locations/us-east5/publishers/anthropic/models/claude-fixture-1:streamRawPredict",
        "/v1/messages",
    ],
)
def test_other_messages_paths_are_handled(env, path):
    r = replay(env, foreign_flow(path=path))
    assert r.record["dialect"] == "anthropic"
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER


# -- skipped flows ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "body,path,reason",
    [
        (b"model=claude&prompt=hi", "/v1/messages", "request body is not JSON"),
        (b"", "/v1/messages", "request has no body"),
        ([1, 2, 3], "/v1/messages", "not an LLM API request"),
        ({"model": "m", "messages": "hello"}, "/v1/messages", "not an LLM API request"),
        (
            {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
            "/v1/messages",
            "declares no tools",
        ),
        (
            {"model": "m", "messages": [], "tools": [{"name": "Bash"}]},
            "/v1/messages/count_tokens",
            "not an LLM API request",
        ),
        ({"model": "m", "messages": [], "tools": [{"name": "Bash"}]}, "/v1/complete", "(POST /v1/complete)"),
        ({"model": "m", "messages": [], "tools": 5}, "/v1/messages", ""),
    ],
)
def test_skipped_requests_pass_byte_identical_with_a_reason(env, body, path, reason):
    upstream = fixture_bytes("stream-foreign-tool.sse")
    f = make_flow(body, path=path, upstream=upstream)
    raw_request = f.request.raw_content
    req_headers = copy.deepcopy(f.request.headers)
    r = replay(env, f)
    assert f.request.raw_content == raw_request and f.request.headers == req_headers
    assert r.out == upstream
    # not rewritten, but an event stream is still streamed through rather than buffered, and
    # kept: the test master shows flows
    assert r.streamed == "callable" and f.response.raw_content == upstream
    rec = r.record
    assert rec is not None and rec["skipped"] and reason in rec["skipped"]
    assert rec["decisions"] == [] and not f.marked


def test_get_request_is_not_looked_at(env):
    f = make_flow(None, method="GET", path="/v1/models", upstream=b'{"data":[]}', resp_type="application/json")
    r = replay(env, f)
    assert r.out == b'{"data":[]}' and KEY not in f.metadata


def test_no_tools_record_names_the_dialect(env):
    f = make_flow({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}, upstream=b"")
    r = replay(env, f)
    assert r.record["dialect"] == "anthropic" and r.record["skipped"] == "the request declares no tools"


def test_non_json_answer_to_handled_request_passes_with_a_note(env):
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    upstream = b"<html>502 Bad Gateway</html>"
    f = make_flow(body, upstream=upstream, resp_type="text/html")
    r = replay(env, f)
    assert r.out == upstream
    assert r.record["skipped"] is None
    assert "answer body is not JSON; passed through" in r.record["notes"]


def test_an_answer_mitmproxy_streamed_and_stored_is_not_rewritten(env):
    """mitmproxy 12's ``store_streamed_bodies``: an answer streamed by another setting
    (``stream_large_bodies``) has its body stored before the response hook, as the client got it.
    The client has it already: rewriting the stored copy would make the saved flow, and its
    record, say the client got a repair it never got."""
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    upstream = fixture_bytes("response-foreign-tool.json")
    f = make_flow(body, upstream=upstream, resp_type="application/json")
    f.live = True
    response = f.response
    f.response = None
    env.addon.request(f)
    f.response = response
    env.addon.responseheaders(f)
    f.response.stream = True  # mitmproxy, after the hook: the body is larger than stream_large_bodies
    env.addon.response(f)  # the body stored as it streamed (store_streamed_bodies)
    assert f.response.raw_content == upstream
    record = f.metadata[KEY]
    assert record["response_changed"] is False and record["decisions"] == [], record
    assert any("streamed by another setting" in n for n in record["notes"]), record["notes"]


def test_a_left_alone_gemini_array_streams_and_is_kept(env):
    """Gemini's ``:streamGenerateContent`` JSON array (and Bedrock's frames) of a flow toolvocab
    leaves alone: streamed as it arrives also when something saves or shows flows (they were
    buffered then, so that mitmproxy kept them), and kept."""
    env.configure(toolvocab_mode="off")
    upstream = b'[{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}\r\n,{"candidates": []}]'
    f = harness.make_flow(
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
        host="generativelanguage.googleapis.com",
        path="/v1beta/models/gemini-2.5-pro:streamGenerateContent",
        headers=[("content-type", "application/json")],
        resp_type="application/json",
        upstream=upstream,
    )
    r = replay(env, f)
    assert r.streamed == "callable" and r.out == upstream and f.response.raw_content == upstream


def test_json_of_unexpected_shape_in_answer_passes(env):
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    upstream = b'{"content": "not a list", "tool_use": {"name": "shell"}}'
    f = make_flow(body, upstream=upstream, resp_type="application/json")
    r = replay(env, f)
    assert r.out == upstream and r.record["decisions"] == [] and r.record["response_changed"] is False


def test_upstream_error_status_passes_with_a_note(env):
    upstream = b'{"type":"error","error":{"type":"invalid_request_error","message":"bad"}}'
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream, resp_type="application/json", status=400)
    r = replay(env, f)
    assert r.out == upstream
    assert any("400" in n for n in r.record["notes"])


@pytest.mark.parametrize("seed", range(10))
def test_unknown_sse_event_types_pass_byte_identical(env, seed):
    upstream = fixture_bytes("stream-unknown-event.sse")
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream)
    r = replay(env, f, seed)
    assert r.out == upstream
    assert r.record["decisions"] == [] and r.record["notes"] == [] and r.record["response_changed"] is False


@pytest.mark.parametrize(
    "fixture", ["stream-server-tool-use.sse", "stream-error-after-200.sse", "stream-open-tool-block.sse"]
)
@pytest.mark.parametrize("seed", range(5))
def test_server_tools_errors_and_open_blocks_pass_byte_identical(env, fixture, seed):
    upstream = fixture_bytes(fixture)
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream)
    r = replay(env, f, seed)
    assert r.out == upstream
    assert r.record["response_changed"] is False


# -- what the answer turns out to be -------------------------------------------------------------


@pytest.mark.parametrize("seed", range(10))
def test_stream_request_answered_with_json_without_content_type(env, seed):
    # stream: true, no content-type: the stream callable sniffs JSON and rewrites it whole at the end
    upstream = b"\n  " + fixture_bytes("response-foreign-tool.json")
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream, resp_type=None)
    r = replay(env, f, seed)
    assert r.streamed == "callable"
    answer = orjson.loads(r.out)
    assert answer["content"][1]["name"] == "Bash"
    assert answer["content"][1]["input"] == {"command": "git log --oneline -3"}
    assert r.record["response_changed"] is True


@pytest.mark.parametrize("seed", range(5))
def test_stream_request_answered_with_json_content_type(env, seed):
    # buffered or sniffed inside the stream callable: either way the JSON answer is rewritten whole
    upstream = fixture_bytes("response-foreign-tool.json")
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream, resp_type="application/json")
    r = replay(env, f, seed)
    answer = orjson.loads(r.out)
    assert answer["content"][1]["name"] == "Bash"
    assert answer["content"][1]["input"] == {"command": "git log --oneline -3"}
    assert {k: v for k, v in answer.items() if k != "content"} == {
        k: v for k, v in orjson.loads(upstream).items() if k != "content"
    }
    assert r.record["response_changed"] is True


@pytest.mark.parametrize("seed", range(5))
def test_non_stream_request_answered_with_sse(env, seed):
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    f = make_flow(body, upstream=fixture_bytes("stream-foreign-tool.sse"))
    r = replay(env, f, seed)
    assert r.streamed == "callable"
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER


def test_non_stream_request_answered_with_untyped_sse_is_rewritten_buffered(env):
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    f = make_flow(body, upstream=fixture_bytes("stream-foreign-tool.sse"), resp_type=None)
    r = replay(env, f)
    assert r.streamed == "buffered"
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER
    assert r.record["response_changed"] is True


@pytest.mark.parametrize("seed", range(5))
def test_crlf_stream_repaired_with_crlf_framing(env, seed):
    upstream = fixture_bytes("stream-foreign-tool-crlf.sse")
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream)
    r = replay(env, f, seed)
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER
    assert b"\n" not in r.out.replace(b"\r\n", b"")


#: Each content-coding toolvocab reads as a stream arrives: the upstream's bytes of ``data``.
ENCODE = {
    "gzip": gzip.compress,
    "gzip, two members": lambda data: gzip.compress(data[:100]) + gzip.compress(data[100:]),
    "deflate": zlib.compress,
    "deflate, raw": lambda data: (lambda c: c.compress(data) + c.flush())(zlib.compressobj(wbits=-15)),
    "br": brotli.compress,
    "zstd": lambda data: encoding.encode(data, "zstd"),
}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("coding", sorted(ENCODE))
def test_an_encoded_stream_is_read_decoded_and_repaired(env, coding, seed):
    """The request asked for identity; an upstream that compresses its event stream anyway is
    read through a decoder, and the client gets it decoded, repaired, without the
    ``content-encoding`` it no longer has (the upstream's value kept for a replay). Was: passed
    through unread, no repair (nor any alias given back)."""
    plain = fixture_bytes("stream-foreign-tool.sse")
    f = make_flow(
        fixture_json("request-claude-code.json"),
        upstream=ENCODE[coding](plain),
        resp_headers=[("content-encoding", coding.split(",")[0])],
    )
    r = replay(env, f, seed)
    assert r.streamed == "callable"
    assert "content-encoding" not in f.response.headers
    assert f.metadata["toolvocab_headers"]["response"]["content-encoding"] == coding.split(",")[0]
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER
    # byte for byte what the same stream sent as it is gives the client
    assert r.out == replay(env, make_flow(fixture_json("request-claude-code.json"), upstream=plain), seed).out
    assert r.record["response_changed"] is True
    assert not any(n.startswith("passed through") for n in r.record["notes"]), r.record["notes"]


def test_an_alias_in_an_encoded_stream_is_given_back(env):
    """The upstream rejects ``files.read`` (a dot) and got an alias; its gzip stream calls the
    alias: the client gets its own name. Was: the alias reached the client (no tool it can run)."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    head, tail = _stalled_alias_stream(upstream_name)
    f = make_flow(
        _files_read_request(), upstream=gzip.compress(head + tail), resp_headers=[("content-encoding", "gzip")]
    )
    r = replay(env, f)
    assert upstream_name.encode() in f.request.content and upstream_name.encode() not in r.out
    assert tool_blocks(r.out) == [
        {"name": "files.read", "input": {"path": "a"}},
        {"name": "Read", "input": {"file_path": "/etc/hosts", "limit": 50}},
    ]


@pytest.mark.parametrize("saving", [True, False], ids=["saving", "not saving"])
@pytest.mark.parametrize("coding", ["compress", "x-unknown", "gzip, compress"])
def test_a_stream_in_a_coding_not_read_passes_through_unread(env, monkeypatch, coding, saving):
    """Streamed as it came; kept as it came when something saves or shows the flow (it had no
    body in a saved flow, or in mitmweb)."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: saving)
    upstream = gzip.compress(fixture_bytes("stream-foreign-tool.sse"))
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=[("content-encoding", coding)]
    )
    r = replay(env, f)
    assert r.streamed == ("callable" if saving else "passthrough")
    assert f.response.raw_content == (upstream if saving else None)
    assert r.out == upstream and f.response.headers["content-encoding"] == coding
    assert (
        f"passed through: the streamed answer is {coding}-encoded and cannot be read as it streams; the client got it as the upstream sent it"
        in r.record["notes"]
    )
    assert not any("stream_large_bodies" in n for n in r.record["notes"])  # the one reason, not a guess
    assert r.record["decisions"] == [] and r.record["response_changed"] is False
    assert f.marked == ":warning:" and f.comment.startswith(f"passed through: the streamed answer is {coding}-encoded")


def test_observe_mode_leaves_an_encoded_stream_as_it_came(env):
    """Observe changes no byte: the client asked for gzip (its header went up as it was) and gets
    it; the flow (the test master shows it, as mitmweb does) keeps it as it came."""
    env.configure(toolvocab_mode="observe")
    upstream = gzip.compress(fixture_bytes("stream-foreign-tool.sse"))
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=[("content-encoding", "gzip")]
    )
    r = replay(env, f)
    assert f.request.headers["accept-encoding"] == "gzip, deflate, br, zstd"
    assert r.streamed == "callable" and r.out == upstream and f.response.headers["content-encoding"] == "gzip"
    assert f.response.raw_content == upstream


def test_an_encoded_stream_for_a_request_that_repeats_a_key_passes_as_it_came(env, monkeypatch):
    """A peeked request is read whole before the headers go out when its answer is encoded: one
    that repeats a key leaves the answer as the upstream sent it, encoded (its reason in the record)."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)  # the peek
    monkeypatch.setattr(env.addon.recorder, "mitmproxy_keeps", lambda: False)  # plain mitmdump
    body = json.dumps(fixture_json("request-claude-code.json"))
    body = body.replace('"role": "user"', '"role": "user", "role": "user"', 1)
    upstream = gzip.compress(fixture_bytes("stream-foreign-tool.sse"))
    f = make_flow(body.encode(), upstream=upstream, resp_headers=[("content-encoding", "gzip")])
    r = replay(env, f)
    assert r.streamed == "passthrough" and r.out == upstream and f.response.headers["content-encoding"] == "gzip"
    assert "repeat" in r.record["skipped"], r.record


def _identity_out(env, seed: int = 0) -> bytes:
    """What the client gets of the foreign-tool stream sent as it is (no content-encoding)."""
    plain = fixture_bytes("stream-foreign-tool.sse")
    return replay(env, make_flow(fixture_json("request-claude-code.json"), upstream=plain), seed).out


@pytest.mark.parametrize(
    ("header", "encode"),
    [
        ("gzip, identity", gzip.compress),
        ("gzip,", gzip.compress),
        ("br, gzip", lambda data: gzip.compress(brotli.compress(data))),
        ("identity, identity", lambda data: data),
    ],
)
def test_a_list_of_codings_is_decoded_last_first(env, header, encode):
    """RFC 9110 §8.4: codings listed in the order applied; ``identity`` and empty entries are no
    coding. Was: any list passed through unread (an alias in it reached the client)."""
    upstream = encode(fixture_bytes("stream-foreign-tool.sse"))
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=[("content-encoding", header)]
    )
    r = replay(env, f, 1)
    assert "content-encoding" not in f.response.headers
    assert r.out == _identity_out(env, 1)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_a_stream_labelled_encoded_whose_bytes_are_not_is_read_as_it_came(env, coding, seed):
    """A server that labels a plain stream compressed: its first bytes do not decode, so every
    byte from the first (those a decoder took in before failing too) is read as it came, and
    repaired: the client, which gets no content-encoding, reads it as sent. Was: the bytes before
    the failing chunk were lost, and the rest passed unread (an alias reached the client)."""
    plain = fixture_bytes("stream-foreign-tool.sse")
    f = make_flow(fixture_json("request-claude-code.json"), upstream=plain, resp_headers=[("content-encoding", coding)])
    r = replay(env, f, seed, chunks=[plain[:1], plain[1:2], plain[2:300], plain[300:]])
    assert "content-encoding" not in f.response.headers
    assert r.out == _identity_out(env, seed)
    assert any(n.startswith(f"the answer is labelled {coding} but its first bytes are not") for n in r.record["notes"])


@pytest.mark.parametrize(
    "trailer", [b"\x00" * 8, b"\xff\xfe junk", b"\x1f\x8b\x08\x00" + b"\x00" * 12, b"\x1f"], ids=repr
)
@pytest.mark.parametrize("split", ["apart", "together"])
def test_bytes_after_the_end_of_an_encoded_stream_are_dropped(env, trailer, split):
    """Padding or junk after the last gzip member (or a bad second member): the client gets the
    stream decoded and repaired, nothing after it (as a client's own decoder drops them), and
    the record notes it. Was: the junk (and once the whole chunk's compressed bytes again)
    reached the client as plain text."""
    good = gzip.compress(fixture_bytes("stream-foreign-tool.sse"))
    upstream = good + trailer
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=[("content-encoding", "gzip")]
    )
    chunks = [good[:-20], good[-20:], trailer] if split == "apart" else [good[:-20], good[-20:] + trailer]
    r = replay(env, f, chunks=chunks)
    assert r.out == _identity_out(env)
    notes = r.record["notes"]
    if trailer != b"\x1f":  # a lone first byte of a next member: the body ended before it ended
        assert any(n.startswith("bytes after the last whole gzip member or frame are not gzip") for n in notes), notes
    assert not any(n.startswith("passed through") for n in notes), notes


def test_a_json_body_to_a_stream_request_with_padding_is_rewritten(env):
    """A ``stream: true`` request answered with a gzip JSON body and zero padding: the JSON is
    whole once decoded, and rewritten (an alias given back). Was: the buffered body went out as
    it came, alias and NUL bytes included."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": upstream_name, "input": {"path": "a"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    upstream = gzip.compress(orjson.dumps(answer)) + b"\x00" * 8
    f = make_flow(
        _files_read_request(),
        upstream=upstream,
        resp_type="application/json",
        resp_headers=[("content-encoding", "gzip")],
    )
    r = replay(env, f)
    got = orjson.loads(r.out)
    assert got["content"][0]["name"] == "files.read" and got["content"][0]["input"] == {"path": "a"}


@pytest.mark.parametrize("cut", [0.4, 0.7])
def test_a_stream_that_stops_decoding_ends_there_for_the_client(env, cut):
    """Bytes that stop decoding mid-member (a corrupt body the client could not have read
    either): the client gets what decoded before them, read as usual, and nothing undecoded; no
    exception escapes, and the record says why."""
    plain = fixture_bytes("stream-foreign-tool.sse")
    good = gzip.compress(plain)
    at = int(len(good) * cut)
    upstream = good[:at] + bytes(range(256)) * 4
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=[("content-encoding", "gzip")]
    )
    r = replay(env, f, chunks=[upstream[:at], upstream[at:]])
    assert bytes(range(256)) not in r.out and b"\x1f\x8b" not in r.out
    assert r.out.startswith(b"event: message_start")
    notes = r.record["notes"]
    assert any(n.startswith("passed through: the answer stopped decoding (gzip: ") for n in notes), notes


@pytest.mark.parametrize("cut_at", [b"g --oneline", b"git status"])
def test_a_call_cut_off_by_bytes_that_stop_decoding_is_not_completed(env, cut_at):
    """The last good member ends inside a call and the next breaks: the client gets the call as
    far as it came, unrepaired and not completed (a cut-off call is never completed), and the
    decoded bytes as the upstream sent them."""
    plain = fixture_bytes("stream-foreign-tool.sse")
    cut = plain.index(cut_at)
    upstream = gzip.compress(plain[:cut]) + b"\x1f\x8b\x08\x00" + bytes(range(256))
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=upstream, resp_headers=[("content-encoding", "gzip")]
    )
    r = replay(env, f, chunks=[upstream[:50], upstream[50:]])
    partial = plain[plain.rfind(b"\n\n", 0, cut) + 2 : cut]  # the event the cut falls in, as far as it came
    assert r.out.endswith(partial) and bytes(range(256)) not in r.out
    notes = r.record["notes"]
    assert any(n.startswith("bytes after the last whole gzip member or frame are not gzip") for n in notes), notes
    assert any(
        n.startswith("passed through: the rewrite reached the end of the stream before the tool call ")
        and n.endswith("content_block_stop; the client got the call as the upstream sent it")
        for n in notes
    ), notes


def test_compressed_bytes_that_decode_to_nothing_yet_are_not_a_stall(env):
    """A held call whose rest comes as a compressed frame in small pieces (none decodes until
    the frame is whole): the upstream is not silent, so the stall bound lets nothing go and the
    call is repaired. Was: released unrepaired as a stall ("no byte for 0.3 s")."""
    plain = fixture_bytes("stream-foreign-tool.sse")
    mid = plain.index(b"g --oneline")
    first = encoding.encode(plain[:mid], "zstd")
    second = encoding.encode(plain[mid:], "zstd")
    f = make_flow(
        fixture_json("request-claude-code.json"), upstream=first + second, resp_headers=[("content-encoding", "zstd")]
    )
    env.configure(toolvocab_hold_timeout="0.3")
    try:
        parts: list = [first]
        for piece in _split(second, max(1, len(second) // 8)):
            parts += [0.1, piece]
        out = asyncio.run(_drive_parts(env, f, [*parts, b""]))
    finally:
        env.configure(toolvocab_hold_timeout="30")
    assert tool_blocks(out) == FOREIGN_STREAM_TOOLS_AFTER
    assert not any("sent no byte" in n for n in f.metadata[KEY]["notes"]), f.metadata[KEY]["notes"]


@pytest.mark.parametrize("mode", ["auto", "repair"])
def test_handled_requests_ask_for_identity_encoding(env, mode):
    env.configure(toolvocab_mode=mode)
    f = foreign_flow()
    replay(env, f)
    assert f.request.headers["accept-encoding"] == "identity"


@pytest.mark.parametrize("http_version,chunked", [("HTTP/1.1", True), ("HTTP/2.0", False)])
def test_content_length_dropped_for_rewritten_streams(env, http_version, chunked):
    upstream = fixture_bytes("stream-foreign-tool.sse")
    f = foreign_flow(resp_headers=[("content-length", str(len(upstream)))], http_version=http_version)
    mgr = env.tctx.master.addons

    async def headers_only():
        await mgr.invoke_addon(env.module, hl.HttpRequestHook(f))
        f.response.stream = False
        await mgr.invoke_addon(env.module, hl.HttpResponseHeadersHook(f))

    asyncio.run(headers_only())
    assert callable(f.response.stream)
    assert "content-length" not in f.response.headers
    assert (f.response.headers.get("transfer-encoding") == "chunked") is chunked
    env.addon._states.pop(f.id, None)


# -- record persistence, error hook -------------------------------------------------------------


def roundtrip(f: http.HTTPFlow) -> http.HTTPFlow:
    buf = io.BytesIO()
    mio.FlowWriter(buf).add(f)
    buf.seek(0)
    [back] = list(mio.FlowReader(buf).stream())
    return back


@pytest.mark.parametrize("mode", ["auto", "observe"])
def test_record_survives_flow_file_roundtrip(env, mode):
    env.configure(toolvocab_mode=mode)
    f = foreign_flow()
    r = replay(env, f)
    back = roundtrip(f)
    assert back.metadata[KEY] == r.record
    assert back.marked == f.marked and back.comment == f.comment
    assert back.metadata[KEY]["decisions"][0]["arguments_before"] == {"cmd": "git log --oneline -3"}


def test_skip_record_survives_flow_file_roundtrip(env):
    f = make_flow(b"not json", upstream=b"x", resp_type="text/plain")
    replay(env, f)
    assert roundtrip(f).metadata[KEY] == f.metadata[KEY]


def test_error_hook_keeps_the_record(env):
    f = foreign_flow()
    mgr = env.tctx.master.addons

    async def run():
        await mgr.invoke_addon(env.module, hl.HttpRequestHook(f))
        f.response = None
        f.error = mflow.Error("client disconnected")
        await mgr.invoke_addon(env.module, hl.HttpErrorHook(f))

    asyncio.run(run())
    rec = f.metadata[KEY]
    assert rec["dialect"] == "anthropic"
    assert "flow ended with an error: client disconnected" in rec["notes"]
    # only the prompt sentence was added: a comment, no 🔧 (that marks tool changes)
    assert not f.marked and f.comment.startswith("prompt sentence only: ")
    assert f.id not in env.addon._states
    assert roundtrip(f).metadata[KEY] == rec


# -- exceptions never escape, bytes still arrive -------------------------------------------------


def _boom(*args, **kwargs):
    raise RuntimeError("injected")


@pytest.mark.parametrize("where", ["peek", "declarations", "declared_tools", "transcript_names"])
def test_exception_in_request_side_dialect_is_contained(env, monkeypatch, where):
    monkeypatch.setattr(anthropic_dialect.DIALECT, where, _boom)
    if where == "peek":
        # the peek is taken when nothing saves the flow and the request stays as sent
        monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)
        env.configure(toolvocab_mode="repair")
        env.addon.caches.writes.clear()  # a client whose last request was written is read whole
    env.addon.caches.toolsets.clear()  # declared_tools runs only for a tools section not seen yet
    f = foreign_flow()
    raw_request = f.request.raw_content
    r = replay(env, f)
    assert f.request.raw_content == raw_request
    assert r.out == fixture_bytes("stream-foreign-tool.sse")
    assert "internal error in the request hook (RuntimeError: injected)" in r.record["skipped"]
    # a give-up: the client got the answer unrepaired, and the flow says so
    assert f.marked == ":warning:" and f.comment.startswith("passed through: internal error in the request hook")


def test_exception_in_apply_request_is_contained(env, monkeypatch):
    monkeypatch.setattr(anthropic_dialect.DIALECT, "apply_request", _boom)
    f = foreign_flow()
    raw_request = f.request.raw_content
    r = replay(env, f)
    assert f.request.raw_content == raw_request
    assert r.out == fixture_bytes("stream-foreign-tool.sse")
    assert "internal error" in r.record["skipped"]


def test_exception_creating_stream_rewriter_is_contained(env, monkeypatch):
    monkeypatch.setattr(anthropic_dialect.DIALECT, "stream_rewriter", _boom)
    f = foreign_flow()
    r = replay(env, f)
    assert r.out == fixture_bytes("stream-foreign-tool.sse")
    assert any("RuntimeError: injected" in n for n in r.record["notes"])


@pytest.mark.parametrize("seed", range(10))
def test_exception_in_on_event_passes_the_stream_through(env, monkeypatch, seed):
    calls = {"n": 0}
    original = anthropic_dialect.AnthropicStream.on_event

    def flaky(self, event):
        calls["n"] += 1
        if calls["n"] == 4:
            raise RuntimeError("injected")
        return original(self, event)

    monkeypatch.setattr(anthropic_dialect.AnthropicStream, "on_event", flaky)
    f = foreign_flow()
    r = replay(env, f, seed)
    assert r.out == fixture_bytes("stream-foreign-tool.sse")
    assert any("RuntimeError: injected" in n for n in r.record["notes"])
    assert r.record["response_changed"] is False


def test_exception_in_buffered_json_rewrite_is_contained(env, monkeypatch):
    monkeypatch.setattr(anthropic_dialect.DIALECT, "rewrite_response", _boom)
    upstream = fixture_bytes("response-foreign-tool.json")
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    f = make_flow(body, upstream=upstream, resp_type="application/json")
    r = replay(env, f)
    assert r.streamed == "buffered"
    assert r.out == upstream
    assert any(
        n.startswith("passed through: internal error in the response hook (RuntimeError: injected)")
        for n in r.record["notes"]
    )
    assert f.marked == ":warning:"


def test_exception_in_streamed_json_rewrite_still_delivers_the_body(env, monkeypatch):
    monkeypatch.setattr(anthropic_dialect.DIALECT, "rewrite_response", _boom)
    upstream = fixture_bytes("response-foreign-tool.json")
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream, resp_type=None)
    r = replay(env, f)
    assert r.streamed == "callable"
    assert r.out == upstream  # got b""


@pytest.mark.parametrize("seed", range(3))
def test_exception_in_resolver_during_stream_still_delivers_every_byte(env, monkeypatch, seed):
    monkeypatch.setattr(state_module, "resolve", _boom)
    f = foreign_flow()
    r = replay(env, f, seed)
    assert r.out == fixture_bytes("stream-foreign-tool.sse")


def test_deeply_nested_tool_arguments_do_not_lose_stream_bytes(env):
    nested = "[" * 600 + "]" * 600
    partial = '{"cmd": "ls", "x": ' + nested + "}"
    upstream = fixture_bytes("stream-open-tool-block.sse").replace(
        b'"partial_json":"{\\"cmd\\": \\"make te"', b'"partial_json":' + orjson.dumps(partial)
    )
    upstream = upstream.replace(
        b"event: ping\n",
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\nevent: ping\n',
        1,
    )
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream)
    r = replay(env, f)
    assert r.out == upstream


@pytest.mark.parametrize("resp_type", ["application/json", None])
def test_deeply_nested_arguments_in_json_answer_to_stream_request_keep_the_body(env, resp_type):
    answer = fixture_json("response-foreign-tool.json")
    answer["content"][1]["input"]["x"] = json.loads("[" * 600 + "]" * 600)
    upstream = json.dumps(answer).encode()
    f = make_flow(fixture_json("request-claude-code.json"), upstream=upstream, resp_type=resp_type)
    r = replay(env, f)
    assert r.out == upstream  # got b""


def test_deeply_nested_arguments_never_make_the_response_hook_raise(env):
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    answer = fixture_json("response-foreign-tool.json")
    # `bash` is the client's Bash modulo case: a lossless rename even when an argument fails the
    # schema (a deep list where Bash wants a string), as long as no key loses its meaning.
    answer["content"][1]["name"] = "bash"
    answer["content"][1]["input"] = {"command": json.loads("[" * 300 + "]" * 300)}
    upstream = json.dumps(answer).encode()
    f = make_flow(body, upstream=upstream, resp_type="application/json")
    r = replay(env, f)  # must not raise out of the response hook
    # The repair itself works at this depth; only the record cannot hold the arguments.
    assert json.loads(r.out)["content"][1]["name"] == "Bash"
    assert r.record["decisions"]
    assert r.record["decisions"][0]["arguments_before"] is None
    assert any("too deeply nested" in n for n in r.record["notes"])


def test_exception_out_of_rewriter_feed_still_delivers_every_byte(env, monkeypatch):
    calls = {"n": 0}
    original = EventStreamRewriter.feed

    def flaky(self, chunk):
        calls["n"] += 1
        if calls["n"] == 3:
            raise RuntimeError("injected")
        return original(self, chunk)

    monkeypatch.setattr(anthropic_dialect.AnthropicStream, "feed", flaky)
    f = foreign_flow()
    r = replay(env, f, seed=1)
    assert r.out == fixture_bytes("stream-foreign-tool.sse")


def test_whitespace_only_stream_body_is_delivered(env):
    f = make_flow(fixture_json("request-claude-code.json"), upstream=b"\n")
    r = replay(env, f)
    assert r.out == b"\n"  # got b""


def test_stream_failing_after_a_repair_still_records_the_change(env, monkeypatch):
    env.configure(toolvocab_mode="repair")
    original = anthropic_dialect.AnthropicStream.on_event

    def fail_at_message_delta(self, event):
        if b'"type":"message_delta"' in event.raw:
            raise RuntimeError("injected")
        return original(self, event)

    monkeypatch.setattr(anthropic_dialect.AnthropicStream, "on_event", fail_at_message_delta)
    # on_event sees only marker-bearing events: make message_delta one of them
    markers = anthropic_dialect.AnthropicStream.MARKERS
    monkeypatch.setattr(anthropic_dialect.AnthropicStream, "MARKERS", markers + (b'"type":"message_delta"',))
    f = foreign_flow()
    r = replay(env, f)
    assert tool_blocks(r.out) == FOREIGN_STREAM_TOOLS_AFTER  # the client did get the repair
    assert r.out.endswith(b'event: message_stop\ndata: {"type":"message_stop"}\n\n')
    assert any("RuntimeError: injected" in n for n in r.record["notes"])
    assert r.record["response_changed"] is True  # got False
    # got no marker; the give-up after the repair is the flow's state, the repair is in its comment
    assert f.marked == ":warning:" and "changed: shell→Bash (capability)" in f.comment


def test_gzip_json_answer_to_non_stream_request_is_repaired_and_stays_gzip(env):
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    plain = fixture_bytes("response-foreign-tool.json")
    upstream = gzip.compress(plain)
    f = make_flow(body, upstream=upstream, resp_type="application/json", resp_headers=[("content-encoding", "gzip")])
    r = replay(env, f)
    assert r.streamed == "buffered"
    assert f.response.headers["content-encoding"] == "gzip"
    answer = orjson.loads(gzip.decompress(r.out))
    assert answer["content"][1]["name"] == "Bash"
    assert r.record["response_changed"] is True


def _alias_json_answer() -> tuple[str, dict, dict]:
    """``(alias, request, answer)``: a non-stream request declaring ``files.read`` (sent upstream
    under ``alias``: Anthropic takes no dot) and a JSON answer calling the alias with
    ``{"path": "a"}``."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    request = orjson.loads(_files_read_request())
    request["stream"] = False
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": upstream_name, "input": {"path": "a"}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    return upstream_name, request, answer


@pytest.mark.parametrize(
    ("header", "encode"),
    [
        ("gzip", lambda data: gzip.compress(data) + b"JUNK"),
        ("gzip", lambda data: gzip.compress(data)[:-4]),
        ("identity, gzip", gzip.compress),
        ("br, gzip", lambda data: gzip.compress(brotli.compress(data))),
    ],
    ids=["junk-after-member", "cut-trailer", "identity-then-gzip", "br-then-gzip"],
)
def test_a_json_answer_mitmproxy_cannot_decode_whole_is_read_as_a_client_reads_it(env, header, encode):
    """A buffered answer whose coding mitmproxy reads only when it is all there (bytes after the
    gzip member, a cut trailer, a list of codings): a client's decoder (httpx's) reads it, so
    toolvocab reads it as its stream decoder does, and the client gets it repaired and decoded,
    ``content-encoding`` off (kept for a replay). Was: passed as "could not be decoded", and the
    client read the call under the alias this flow sent upstream."""
    upstream_name, request, answer = _alias_json_answer()
    upstream = encode(orjson.dumps(answer))
    f = make_flow(request, upstream=upstream, resp_type="application/json", resp_headers=[("content-encoding", header)])
    r = replay(env, f)
    assert r.streamed == "buffered"
    # mitmproxy 12 reads a gzip member with bytes after it or a cut trailer itself: the answer
    # is then written again under its coding; mitmproxy 11 does not, and toolvocab reads it
    coding = f.response.headers.get("content-encoding")
    got = orjson.loads(encoding.decode(r.out, coding) if coding else r.out)
    assert got["content"][0]["name"] == "files.read" and got["content"][0]["input"] == {"path": "a"}
    if coding is None:
        assert f.metadata["toolvocab_headers"]["response"]["content-encoding"] == header
    else:
        assert coding == header == "gzip"
    assert r.record["response_changed"] is True


def test_a_json_answer_mitmproxy_cannot_decode_and_nothing_changes_goes_as_it_came(env):
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    upstream = gzip.compress(orjson.dumps({"id": "m", "type": "message", "content": []})) + b"JUNK"
    f = make_flow(body, upstream=upstream, resp_type="application/json", resp_headers=[("content-encoding", "gzip")])
    r = replay(env, f)
    assert r.out == upstream and f.response.headers["content-encoding"] == "gzip"


# -- empty chunks, the stall bound, repeated keys -------------------------------------


async def _drive_parts(env: Env, f: http.HTTPFlow, parts: list[bytes | float]) -> bytes:
    """requestheaders → request → responseheaders → the stream callable over ``parts`` (a float
    is a pause, in seconds, on the running event loop) → response; what the client received."""
    mgr = env.tctx.master.addons
    await mgr.invoke_addon(env.module, hl.HttpRequestHeadersHook(f))
    await mgr.invoke_addon(env.module, hl.HttpRequestHook(f))
    f.response.stream = False
    await mgr.invoke_addon(env.module, hl.HttpResponseHeadersHook(f))
    stream = f.response.stream
    assert callable(stream)
    out: list[bytes] = []
    for part in parts:
        if isinstance(part, float):
            await asyncio.sleep(part)
            continue
        got = stream(part)
        assert b"" not in got
        out.extend(got)
    f.response.raw_content = None
    await mgr.invoke_addon(env.module, hl.HttpResponseHook(f))
    return b"".join(out)


def _split(data: bytes, n: int) -> list[bytes]:
    return [data[i : i + n] for i in range(0, len(data), n)]


@pytest.mark.parametrize("where", ["after_call", "inside_call"])
def test_an_empty_chunk_mid_stream_loses_and_repeats_nothing(env, where):
    # mitmproxy passes an empty HTTP/2 DATA frame to the callable as b"": the rewrite ends
    # there, and every later byte passes through as it came, exactly once.
    upstream = fixture_bytes("stream-foreign-tool.sse")
    marker = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'
    cut = upstream.index(marker) + (len(marker) if where == "after_call" else -20)
    parts = _split(upstream[:cut], 37) + [b""] + _split(upstream[cut:], 37) + [b"", b""]
    f = foreign_flow()
    out = asyncio.run(_drive_parts(env, f, parts))
    record = f.metadata[KEY]
    notes = " | ".join(record["notes"])
    assert "passed through: an empty chunk (an empty HTTP/2 DATA frame) ended the rewrite" in notes, notes
    assert f.marked == ":warning:"
    if where == "after_call":
        # the first call was complete at the empty chunk: repaired; the rest as it came
        head = upstream[:cut]
        assert out.endswith(upstream[cut:])
        assert tool_blocks(out[: len(out) - len(upstream) + cut])[0] == FOREIGN_STREAM_TOOLS_AFTER[0]
        assert b'"shell"' not in out[: len(out) - len(upstream) + cut] and b'"shell"' in head
    else:
        assert out == upstream  # the open call went out as it came at the empty chunk


@pytest.mark.parametrize("coding", ["identity", "gzip"])
@pytest.mark.parametrize("size", [7, 64])
def test_an_alias_after_an_empty_chunk_is_given_back(env, coding, size):
    """An empty HTTP/2 DATA frame mid-stream (mitmproxy passes it as ``b""``, as it does the
    end): the call after it is under the alias this flow sent upstream. It goes as it came but for
    that name, given back (a new rewriter of the flow, names only), and the record says so; a
    gzip stream that goes on after the empty chunk is not said to have ended before its end. Was:
    the alias reached the client (and, gzip, a false note)."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
        {"type": "ping"},
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": upstream_name, "input": {}},
        },
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "input_json_delta", "partial_json": '{"path": "a"}'},
        },
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    sse = [b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events]
    plain = b"".join(sse)
    head = len(sse[0]) + len(sse[1])
    if coding == "gzip":
        c = zlib.compressobj(wbits=31)
        first = c.compress(plain[:head]) + c.flush(zlib.Z_SYNC_FLUSH)
        body = first + c.compress(plain[head:]) + c.flush()
        cut, headers = len(first), [("content-encoding", "gzip")]
    else:
        body, cut, headers = plain, head, []
    f = make_flow(_files_read_request(), upstream=body, resp_headers=headers)
    parts = _split(body[:cut], size) + [b""] + _split(body[cut:], size) + [b""]
    out = asyncio.run(_drive_parts(env, f, parts))
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert tool_blocks(out) == [{"name": "files.read", "input": {"path": "a"}}]
    assert out == plain.replace(upstream_name.encode(), b"files.read")
    notes = f.metadata[KEY]["notes"]
    assert (
        "passed through: an empty chunk (an empty HTTP/2 DATA frame) ended the rewrite before the stream ended; "
        "the client got the bytes after it as the upstream sent them but for the names this flow sent upstream, "
        "given back in the events read whole after it"
    ) in notes, notes
    assert not any("ended before its end" in n for n in notes), notes


def test_an_empty_chunk_before_the_end_does_not_send_a_json_body_twice(env):
    # An HTTP/2 upstream that ends with an empty DATA frame: b"" (the frame), then b"" (the end).
    body = fixture_bytes("response-foreign-tool.json")
    once = foreign_flow(upstream=body, resp_type="application/json")
    single = asyncio.run(_drive_parts(env, once, _split(body, 50) + [b""]))
    twice = foreign_flow(upstream=body, resp_type="application/json")
    double = asyncio.run(_drive_parts(env, twice, _split(body, 50) + [b"", b""]))
    assert single != body  # the control: the call was repaired
    assert double == single


def test_a_held_block_is_released_when_the_upstream_stalls(env):
    # No proxy server in this context: the released bytes cannot be written to a client
    # connection, so they go out first with the next piece. Every byte exactly once, in order;
    # the stalled call goes as it came (the fixture's later call is the declared Bash).
    upstream = fixture_bytes("stream-foreign-tool.sse")
    cut = upstream.index(b"g --oneline")  # inside the held tool_use block
    env.configure(toolvocab_hold_timeout="0.2")
    try:
        f = foreign_flow()
        out = asyncio.run(_drive_parts(env, f, _split(upstream[:cut], 40) + [0.6] + _split(upstream[cut:], 40) + [b""]))
    finally:
        env.configure(toolvocab_hold_timeout="30")
    assert out == upstream
    notes = " | ".join(f.metadata[KEY]["notes"])
    assert "passed through: the upstream sent no byte for " in notes and "(toolvocab_hold_timeout 0.2)" in notes, notes
    assert f.marked == ":warning:" and f.comment.startswith("passed through: the upstream sent no byte for")
    # toolvocab replay has no timing: it skips such a flow, and knows it by this record
    from toolvocab.replay.flows import not_reproducible

    assert "toolvocab_hold_timeout" in (not_reproducible(f) or "")


def _stalled(env, f: http.HTTPFlow, head: bytes, tail: bytes) -> bytes:
    """What the client got of ``f``'s answer ``head + tail`` with the upstream silent for 0.6 s
    between them, under ``toolvocab_hold_timeout`` 0.2 (restored to 30 after)."""
    env.configure(toolvocab_hold_timeout="0.2")
    try:
        return asyncio.run(_drive_parts(env, f, _split(head, 40) + [0.6] + _split(tail, 40) + [b""]))
    finally:
        env.configure(toolvocab_hold_timeout="30")


def _anthropic_events(events: list[dict]) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)


def _stalled_alias_stream(upstream_name: str) -> tuple[bytes, bytes]:
    """An Anthropic stream, cut where it stalls: a call of ``upstream_name`` (this flow's alias
    of the client's ``files.read``) whose input comes in two pieces, the stall between them, then
    a call of Qwen Code's ``read_file`` with a limit (which means Claude Code's ``Read``: without
    one, the two read 1000 and 2000 lines)."""
    alias_block = {"type": "tool_use", "id": "toolu_01Xy", "name": upstream_name, "input": {}}
    read_block = {"type": "tool_use", "id": "toolu_01Xz", "name": "read_file", "input": {}}
    head = _anthropic_events(
        [
            {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
            {"type": "content_block_start", "index": 0, "content_block": alias_block},
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"path"'},
            },
        ]
    )
    tail = _anthropic_events(
        [
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": ': "a"}'},
            },
            {"type": "content_block_stop", "index": 0},
            {"type": "content_block_start", "index": 1, "content_block": read_block},
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"file_path": "/etc/hosts", "limit": 50}'},
            },
            {"type": "content_block_stop", "index": 1},
            {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
            {"type": "message_stop"},
        ]
    )
    return head, tail


def _files_read_request() -> bytes:
    tool = {"name": "files.read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    request = fixture_json("request-claude-code.json")
    return orjson.dumps({**request, "stream": True, "tools": [*request["tools"], tool]})


def test_a_stall_names_the_held_call_back_and_the_rewrite_goes_on(env):
    """The upstream rejects ``files.read`` (a dot): this flow sends it under an alias, and the
    model's call of the alias is held when the upstream stalls. The client gets it under its own
    name (an alias it never declared is no tool it can run), its input as sent; the stream after
    the stall is read as usual: the later ``read_file`` call is repaired to ``Read``. Was: the alias
    reached the client and nothing after the stall was repaired."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    head, tail = _stalled_alias_stream(upstream_name)
    f = make_flow(_files_read_request(), upstream=head + tail)
    out = _stalled(env, f, head, tail)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert tool_blocks(out) == [
        {"name": "files.read", "input": {"path": "a"}},
        {"name": "Read", "input": {"file_path": "/etc/hosts", "limit": 50}},
    ]
    notes = f.metadata[KEY]["notes"]
    assert any(
        n.startswith("passed through: the upstream sent no byte for ")
        and "(toolvocab_hold_timeout 0.2)" in n
        and "as the upstream sent them but for names given back (files.read)" in n
        and n.endswith("the rest of the stream read as usual")
        for n in notes
    ), notes
    assert len([n for n in notes if n.startswith("passed through: ")]) == 1, notes  # one note for the stall


def test_a_give_up_after_a_stall_is_still_noted(env):
    """The rewrite goes on after a stall; a later event that repeats a key stops it (the rest
    passes as it came) and the record says so, beside the stall's note. Was: the stall marked
    the rewriter's errors noted, so the later one went unsaid ("read as usual")."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    head, tail = _stalled_alias_stream(upstream_name)
    repeated = (
        b"event: content_block_start\n"
        b'data: {"type":"content_block_start","index":1,"index":1,"content_block":{"type":"text","text":""}}\n\n'
    )
    stop = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
    assert stop in tail
    tail = tail.replace(stop, stop + repeated, 1)
    f = make_flow(_files_read_request(), upstream=head + tail)
    out = _stalled(env, f, head, tail)
    assert out.endswith(tail[tail.index(repeated) :])  # from the repeated key on, as it came
    notes = f.metadata[KEY]["notes"]
    assert any("(toolvocab_hold_timeout 0.2)" in n for n in notes), notes
    assert any("an event's data repeats a key" in n for n in notes), notes


def _openai_stream_flow(body: dict, path: str, upstream: bytes) -> http.HTTPFlow:
    """A streamed OpenAI request of ``body`` to ``path`` on api.openai.com, answered ``upstream``."""
    return harness.make_flow(
        body,
        host="api.openai.com",
        path=path,
        headers=[("content-type", "application/json")],
        resp_type="text/event-stream",
        upstream=upstream,
    )


def _chat_chunk(delta: dict, finish: str | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"


#: After the stall: the rest of the call's arguments; its name repeated whole (some servers send
#: it on every delta); a legacy function_call's; a new call reusing index 0 with its own id.
AFTER_A_CHAT_STALL = ("alias", "name_in_pieces", "repeated", "legacy", "index_reused")


@pytest.mark.parametrize("case", AFTER_A_CHAT_STALL)
def test_a_chat_stall_gives_every_alias_back_and_passes_the_rest(env, case):
    """A Chat call held when the upstream stalls, under the alias this flow sent for
    ``files.read`` (a dot): the client gets its own name wherever the upstream sends the alias
    whole, in what was held and after; every other byte as it came (calls are assembled only
    at their choice's end, so nothing after the stall is a call known whole): a name in pieces
    (``Read`` | ``_file``) is left, and a new call at the same index keeps its id and its deltas
    (Was: the alias reached the SDK; then a repeated name, a legacy function_call kept it, and a
    new call's id and name were moved onto the tail of the call let go)."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    body: dict = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "read a"}]}
    if case == "legacy":
        body["functions"] = [{"name": "files.read", "parameters": schema}]
    else:
        body["tools"] = [{"type": "function", "function": {"name": "files.read", "parameters": schema}}]
    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})
    name = "Read" if case == "name_in_pieces" else upstream_name
    if case == "legacy":
        head = _chat_chunk({"role": "assistant", "function_call": {"name": name, "arguments": '{"pa'}})
        later = [_chat_chunk({"function_call": {"arguments": 'th": "a"}'}})]
    else:
        call = {"index": 0, "id": "call_a", "type": "function", "function": {"name": name, "arguments": '{"pa'}}
        head = _chat_chunk({"role": "assistant", "tool_calls": [call]})
        rest: dict = {"index": 0, "function": {"arguments": 'th": "a"}'}}
        if case == "name_in_pieces":
            rest["function"]["name"] = "_file"
        if case == "repeated":
            rest["function"]["name"] = upstream_name
        later = [_chat_chunk({"tool_calls": [rest]})]
        if case == "index_reused":
            again = {"index": 0, "id": "call_b", "type": "function", "function": {"name": "shell", "arguments": "{}"}}
            later.append(_chat_chunk({"tool_calls": [again]}))
    tail = b"".join(later) + _chat_chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    f = _openai_stream_flow(body, "/v1/chat/completions", head + tail)
    out = _stalled(env, f, head, tail)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert out == (head + tail).replace(upstream_name.encode(), b"files.read")
    notes = [n for n in f.metadata[KEY]["notes"] if n.startswith("passed through: ")]
    assert len(notes) == 1 and notes[0].endswith("the rest of the stream unrepaired but for names given back"), notes
    assert ("but for names given back (files.read)" in notes[0]) is (case != "name_in_pieces"), notes


def _chat_client_calls(out: bytes) -> list[dict]:
    """Each call of a Chat stream as the SDK assembles it: id, the name's pieces joined, the
    arguments joined; the chunks that could not be read are skipped."""
    calls: dict[int, dict] = {}
    for event in events_of(out):
        try:
            data = json.loads(event.data or "null", object_pairs_hook=_no_repeats)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        for choice in data.get("choices") or ():
            for call in (choice.get("delta") or {}).get("tool_calls") or ():
                got = calls.setdefault(call["index"], {"id": None, "name": "", "arguments": ""})
                got["id"] = call.get("id") or got["id"]
                got["name"] += (call.get("function") or {}).get("name") or ""
                got["arguments"] += (call.get("function") or {}).get("arguments") or ""
    return [calls[i] for i in sorted(calls)]


def _no_repeats(pairs):
    if len({k for k, _ in pairs}) != len(pairs):
        raise ValueError("a repeated key")
    return dict(pairs)


@pytest.mark.parametrize(
    "between", ["stall", "unreadable", "unreadable then stall", "other choice ends", "no choice", "upper case"]
)
def test_a_chat_alias_split_across_a_let_go_is_given_back_whole(env, between):
    """The alias this flow sent for ``files.read`` comes in two pieces (``files_`` |
    ``read_…``) and the rewrite lets go between them (a stall past the bound, or an event that
    cannot be read, or both): the first piece only begins an alias, so it is held on to its
    choice's end (not another choice's, nor a chunk of no choice) and the joined name given
    back, in whatever case the model spelled it; the event that could not be read keeps its
    place. Was: ``files_`` went out as it came, then ``read_…``: the client joined the alias."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    body: dict = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "read a"}]}
    body["tools"] = [{"type": "function", "function": {"name": "files.read", "parameters": schema}}]
    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})
    spelled = upstream_name.upper() if between == "upper case" else upstream_name
    first = {"index": 0, "id": "call_a", "type": "function", "function": {"name": spelled[:6], "arguments": ""}}
    head = _chat_chunk({"role": "assistant", "tool_calls": [first]})
    unreadable = b'data: {"choices": [], "x": 1, "x": 2}\n\n'
    second = {"index": 0, "function": {"name": spelled[6:], "arguments": '{"path": "a"}'}}
    tail = _chat_chunk({"tool_calls": [second]}) + _chat_chunk({}, "tool_calls") + b"data: [DONE]\n\n"
    if between.startswith("unreadable"):
        head += unreadable
    if between == "other choice ends":  # n=2: choice 1 ends between the pieces of choice 0's call
        other = {"index": 1, "delta": {"content": "hi"}, "finish_reason": "stop"}
        tail = (
            b"data: "
            + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [other]})
            + b"\n\n"
            + tail
        )
    if between == "no choice":
        tail = b'data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":null}\n\n' + tail
    f = _openai_stream_flow(body, "/v1/chat/completions", head + tail)
    out = replay(env, f, chunks=[head, tail]).out if between == "unreadable" else _stalled(env, f, head, tail)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert _chat_client_calls(out) == [{"id": "call_a", "name": "files.read", "arguments": '{"path": "a"}'}]
    assert spelled[:6].encode() not in out and spelled[6:].encode() not in out
    if between.startswith("unreadable"):
        assert out.index(unreadable) > out.index(b"files.read")  # in its place, after the first piece
    if between != "unreadable":
        notes = [n for n in f.metadata[KEY]["notes"] if n.startswith("passed through: the upstream sent no byte for ")]
        assert len(notes) == 1, f.metadata[KEY]["notes"]
        assert notes[0].endswith(
            " while a tool call was held (toolvocab_hold_timeout 0.2); nothing went to the client then; a call whose "
            "name so far only begins a name toolvocab sent upstream stays held, to be given back whole, and the rest "
            "of the stream unrepaired but for names given back"
        ), notes
    assert out.endswith(b"data: [DONE]\n\n")


def test_a_chat_alias_split_in_two_choices_across_a_stall_is_given_back_in_both(env):
    """n=2, each choice calling the alias in two pieces across a stall, choice 0 ending first:
    the hold lasts to the end of both choices, and each gets ``files.read``. Was: choice 0's end
    let choice 1's first piece go alone (the client joined the alias)."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    body = {"model": "m", "stream": True, "n": 2, "messages": [{"role": "user", "content": "read a"}]}
    body["tools"] = [{"type": "function", "function": {"name": "files.read", "parameters": schema}}]
    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})

    def chunk(choice: int, name: str | None = None, arguments: str = "", finish: str | None = None, **call) -> bytes:
        delta = (
            {"tool_calls": [{"index": 0, **call, "function": {"name": name, "arguments": arguments}}]} if name else {}
        )
        c = {"index": choice, "delta": delta, "finish_reason": finish}
        return b"data: " + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [c]}) + b"\n\n"

    head = chunk(0, upstream_name[:6], id="call_a", type="function") + chunk(
        1, upstream_name[:6], id="call_b", type="function"
    )
    tail = (
        chunk(0, upstream_name[6:], '{"path": "a"}')
        + chunk(0, finish="tool_calls")
        + chunk(1, upstream_name[6:], '{"path": "b"}')
        + chunk(1, finish="tool_calls")
        + b"data: [DONE]\n\n"
    )
    f = _openai_stream_flow(body, "/v1/chat/completions", head + tail)
    out = _stalled(env, f, head, tail)
    assert upstream_name[:6].encode() not in out and upstream_name[6:].encode() not in out
    assert out.count(b'"name":"files.read"') == 2 and out.endswith(b"data: [DONE]\n\n")


def test_a_stall_release_for_a_request_not_read_whole_changes_no_byte(env, monkeypatch):
    """As plain mitmdump runs it in repair mode (the request only peeked): no alias can be given
    back (an alias goes in a written request, read whole), so a release is the upstream's bytes.
    A rewriter whose release changed one anyway (made to, here) is overruled: every byte as it
    came, the rest passed through, and the note says so."""
    from toolvocab.dialects.anthropic import AnthropicStream

    real = AnthropicStream.let_go
    monkeypatch.setattr(
        AnthropicStream, "let_go", lambda self, why: [b.replace(b"shell", b"Shell") for b in real(self, why)]
    )
    upstream = fixture_bytes("stream-foreign-tool.sse")
    cut = upstream.index(b"g --oneline")
    env.configure(toolvocab_hold_timeout="0.2", toolvocab_mode="repair")
    saves = env.addon.recorder.saves_bodies
    env.addon.recorder.saves_bodies = lambda: False
    try:
        headers = [("content-type", "application/json"), ("user-agent", "claude-cli/2.1.197 (peeked here)")]
        f = harness.make_flow(
            fixture_json("request-claude-code.json"),
            host=HOST,
            path="/v1/messages",
            headers=headers,
            resp_type="text/event-stream",
            upstream=upstream,
        )
        out = asyncio.run(_drive_parts(env, f, _split(upstream[:cut], 40) + [0.6] + _split(upstream[cut:], 40) + [b""]))
    finally:
        env.addon.recorder.saves_bodies = saves
        env.configure(toolvocab_hold_timeout="30", toolvocab_mode="auto")
    assert out == upstream
    notes = f.metadata[KEY]["notes"]
    assert any(
        "(toolvocab_hold_timeout 0.2)" in n and n.endswith("the rest of the stream unrepaired") for n in notes
    ), notes
    assert not any("names given back" in n for n in notes), notes


def test_no_stall_release_for_pauses_shorter_than_the_bound(env):
    upstream = fixture_bytes("stream-foreign-tool.sse")
    cut = upstream.index(b"g --oneline")
    env.configure(toolvocab_hold_timeout="0.5")
    try:
        f = foreign_flow()
        # three pauses of 0.3 s: 0.9 s in all inside the block, but never 0.5 s without a byte
        parts = (
            _split(upstream[:cut], 40)
            + [0.3, upstream[cut : cut + 3], 0.3, upstream[cut + 3 : cut + 6], 0.3]
            + _split(upstream[cut + 6 :], 40)
            + [b""]
        )
        out = asyncio.run(_drive_parts(env, f, parts))
    finally:
        env.configure(toolvocab_hold_timeout="30")
    assert tool_blocks(out) == FOREIGN_STREAM_TOOLS_AFTER
    assert not any(n.startswith("passed through: ") for n in f.metadata[KEY]["notes"]), f.metadata[KEY]["notes"]
    assert f.marked == ":wrench:"


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "soon", ""])
def test_hold_timeout_must_be_a_number_of_seconds(env, value):
    with pytest.raises(exceptions.OptionsError):
        env.configure(toolvocab_hold_timeout=value)
    env.configure(toolvocab_hold_timeout="30")


def test_a_stream_event_repeating_a_key_is_noted_and_passes_as_it_came(env):
    upstream = fixture_bytes("stream-foreign-tool.sse")
    dup = upstream.replace(b'"name":"shell"', b'"name":"Bash","name":"shell"', 1)
    f = foreign_flow(upstream=dup)
    out = asyncio.run(_drive_parts(env, f, _split(dup, 29) + [b""]))
    assert out == dup
    notes = " | ".join(f.metadata[KEY]["notes"])
    assert "passed through: an event's data repeats a key" in notes, notes
    assert f.marked == ":warning:" and f.comment.startswith("passed through: an event's data repeats a key")


def test_a_repeated_key_while_an_alias_is_held_gives_the_client_its_own_name(env):
    """The upstream rejects ``files.read`` (a dot): this flow sends it under an alias, and the
    model's call of the alias is held when an event of it repeats a key. That event goes as it
    came; what was held, and every later event, as they came but for the alias, given back (an
    alias the client never declared is no tool it can run); nothing after it is repaired (the
    later ``read_file`` stays). The record says so. Was: the held start, with the alias, and the
    rest of the stream went as the upstream sent them."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    head, tail = _stalled_alias_stream(upstream_name)
    delta = b'"delta":{"type":"input_json_delta","partial_json":": \\"a\\"}"}'
    assert delta in tail
    tail = tail.replace(delta, b'"delta":{},' + delta, 1)  # the call's second piece repeats "delta"
    later = _anthropic_events(
        [
            {
                "type": "content_block_start",
                "index": 2,
                "content_block": {"type": "tool_use", "id": "t3", "name": upstream_name, "input": {}},
            }
        ]
    )
    cut = tail.index(b"event: message_delta")
    upstream = head + tail[:cut] + later + tail[cut:]
    f = make_flow(_files_read_request(), upstream=upstream)
    out = asyncio.run(_drive_parts(env, f, _split(upstream, 37) + [b""]))
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert out == upstream.replace(upstream_name.encode(), b"files.read")
    notes = f.metadata[KEY]["notes"]
    assert any(
        n.startswith("passed through: an event's data repeats a key")
        and n.endswith("but for the names this flow sent upstream, given back")
        for n in notes
    ), notes


def test_a_stall_after_an_unreadable_event_says_the_rest_is_names_only(env):
    """A Responses stream whose event repeats a key is read for this flow's aliases only from
    there on (a call is still held to its done, to give its name back in every event): a stall
    then lets that call go under the client's own name, and its note says the rest is unrepaired
    but for names given back, not "read as usual" (nothing after the repeated key is repaired)."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})
    schema = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
    body = {
        "model": "m",
        "stream": True,
        "input": "read a",
        "tools": [{"type": "function", "name": "files.read", "parameters": schema}],
    }

    def event(obj: dict) -> bytes:
        return b"event: %s\ndata: %s\n\n" % (obj["type"].encode(), orjson.dumps(obj))

    item = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": upstream_name, "arguments": ""}
    done = {**item, "arguments": '{"path":"a"}', "status": "completed"}
    head = (
        event({"type": "response.created", "sequence_number": 0, "response": {"id": "r", "output": []}})
        # a reasoning item's start, its type written twice: read (an output item), and not readable
        + b'event: response.output_item.added\ndata: {"type":"response.output_item.added","type":'
        + b'"response.output_item.added","sequence_number":1,"output_index":0,"item":{"type":"reasoning","id":"rs_1"}}\n\n'
        + event({"type": "response.output_item.added", "sequence_number": 2, "output_index": 1, "item": item})
    )
    tail = event({"type": "response.output_item.done", "sequence_number": 3, "output_index": 1, "item": done}) + event(
        {
            "type": "response.completed",
            "sequence_number": 4,
            "response": {"id": "r", "status": "completed", "output": [done]},
        }
    )
    f = _openai_stream_flow(body, "/v1/responses", head + tail)
    out = _stalled(env, f, head, tail)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert out == (head + tail).replace(upstream_name.encode(), b"files.read")
    notes = [n for n in f.metadata[KEY]["notes"] if n.startswith("passed through: the upstream sent no byte")]
    assert len(notes) == 1 and notes[0].endswith("the rest of the stream unrepaired but for names given back"), notes
    assert any(n.startswith("passed through: an event's data repeats a key") for n in f.metadata[KEY]["notes"])


def test_options_that_cannot_all_be_read_leave_every_flow_untouched(env, tmp_path):
    """A reloaded script's new addon configures every option at once; the profile file the
    options name is gone. Nothing of that update is kept and no flow is touched until an update
    succeeds: the host the user excluded (``toolvocab_hosts``) was rewritten when the hosts, read
    after the profile, were never applied."""
    from mitmproxy import exceptions

    from toolvocab.addons.core import ToolVocab

    profile = tmp_path / "p.toml"
    profile.write_text('[[profile]]\nname = "p"\n[profile.names]\nshell = "shell"\n')
    env.configure(toolvocab_profiles=str(profile), toolvocab_hosts=r"^only\.example$")
    try:
        profile.unlink()
        reloaded = ToolVocab(env.addon.recorder)  # what the reloaded script makes, configured with every option
        with pytest.raises(exceptions.OptionsError, match="toolvocab_profiles"):
            reloaded.configure({"toolvocab_mode", "toolvocab_profiles", "toolvocab_hosts", "toolvocab_hold_timeout"})
        f = foreign_flow()
        before = f.request.raw_content
        reloaded.request(f)
        assert f.request.raw_content == before and KEY not in f.metadata and not reloaded._states
        profile.write_text('[[profile]]\nname = "p"\n[profile.names]\nshell = "shell"\n')
        reloaded.configure({"toolvocab_mode"})  # any later update reads every option again
        assert reloaded.hosts is not None and reloaded.hosts.pattern == r"^only\.example$"
        reloaded.request(f)
        assert f.request.raw_content == before  # an excluded host: left alone
    finally:
        env.configure(toolvocab_profiles="", toolvocab_hosts="")


def test_a_bad_option_set_while_running_is_refused_and_repairs_go_on(env, tmp_path):
    """mitmweb's options: a bad value is refused and mitmproxy puts the old ones back; the addon
    keeps the settings it had and goes on repairing, even when the profile file it read at start
    is gone by then (re-reading every option on that roll-back stopped every repair)."""
    from mitmproxy import exceptions

    profile = tmp_path / "p.toml"
    profile.write_text('[[profile]]\nname = "p"\n[profile.names]\nshell = "shell"\n')
    env.configure(toolvocab_profiles=str(profile))
    try:
        profile.unlink()
        with pytest.raises(exceptions.OptionsError, match="toolvocab_hosts"):
            env.configure(toolvocab_hosts="(")
        assert env.addon.ready
        r = replay(env, foreign_flow())
        assert [d["action"] for d in r.record["decisions"]][0] == "rename"
        other = tmp_path / "q.toml"
        other.write_text('[[profile]]\nname = "q"\n[profile.names]\nshell = "shell"\n')
        with pytest.raises(exceptions.OptionsError):  # every option named, one bad: still only a refusal
            env.configure(
                toolvocab_mode="auto", toolvocab_profiles=str(other), toolvocab_hosts="(", toolvocab_hold_timeout="30"
            )
        assert env.addon.ready
        r = replay(env, foreign_flow())
        assert [d["action"] for d in r.record["decisions"]][0] == "rename"
        env.configure(toolvocab_mode="auto")  # a good update is taken
    finally:
        env.configure(toolvocab_profiles="", toolvocab_hosts="")


def test_a_mode_set_while_running_is_said_in_the_log(env, caplog):
    """Options set at start (``--set``) say nothing beyond the start line; a mode set once
    mitmproxy runs (mitmweb's options, the console's ``:set``) is said, with the one before."""
    caplog.set_level(logging.INFO)
    env.configure(toolvocab_mode="repair")  # not running yet: the start line says the mode
    env.configure(toolvocab_mode="auto")
    assert not [r for r in caplog.records if "from the next request" in r.getMessage()]
    env.addon.running()
    try:
        env.configure(toolvocab_mode="observe")
        env.configure(toolvocab_mode="observe")  # the same mode again: nothing new to say
        lines = [r.getMessage() for r in caplog.records if "from the next request" in r.getMessage()]
        assert lines == ["toolvocab: mode observe from the next request (was auto)"]
    finally:
        env.configure(toolvocab_mode="auto")
        env.addon._running = False


def test_redaction_off_is_said_at_start_and_a_change_later(env, caplog):
    caplog.set_level(logging.INFO)
    redaction = harness.addon(env.module, "ToolVocabRedaction")
    env.configure(toolvocab_redact="no")
    try:
        redaction.running()
        env.configure(toolvocab_redact="true")
        lines = [r.getMessage() for r in caplog.records if "toolvocab_redact" in r.getMessage()]
        assert lines == [
            "toolvocab: toolvocab_redact is off: flows saved from now on keep their credentials",
            "toolvocab: toolvocab_redact on from now on",
        ]
    finally:
        env.configure(toolvocab_redact="true")
        redaction._said = False


@pytest.mark.parametrize("status", [204, 205])
@pytest.mark.parametrize("mode", ["auto", "observe"])
def test_an_answer_with_no_body_keeps_its_framing(env, status, mode):
    """A 204 (or 205) to a streaming request has no body: made chunked, mitmproxy would write a
    terminating ``0\\r\\n\\r\\n`` the client reads as the start of its next response."""
    env.configure(toolvocab_mode=mode)
    try:
        f = foreign_flow()
        assert orjson.loads(f.request.content)["stream"] is True
        f.response = None
        core = harness.core(env.module)
        core.request(f)
        f.response = harness.answer(b"", None, [("content-length", "0")], status=status)
        core.responseheaders(f)
        assert f.response.headers.get("content-length") == "0" and "transfer-encoding" not in f.response.headers
        assert not callable(f.response.stream)
        core.response(f)
        assert f.response.raw_content == b""
    finally:
        env.configure(toolvocab_mode="auto")


def test_a_json_answer_labelled_gzip_whose_bytes_are_plain_goes_as_it_came(env):
    """A buffered answer labelled gzip whose bytes are plain JSON: no client's decoder reads it
    (httpx raises), so toolvocab does not either: it goes as the upstream sent it, and the record
    says why. (Reading it as it came gave the client a call it could not have read.)"""
    upstream_name, request, answer = _alias_json_answer()
    upstream = orjson.dumps(answer)
    f = make_flow(request, upstream=upstream, resp_type="application/json", resp_headers=[("content-encoding", "gzip")])
    r = replay(env, f)
    assert r.out == upstream and f.response.headers["content-encoding"] == "gzip"
    assert any(n.startswith("passed through: the answer body could not be decoded") for n in r.record["notes"])


def test_an_alias_an_empty_chunk_cuts_is_said_to_reach_the_client(env):
    """An empty HTTP/2 DATA frame inside the alias itself (``files_rea`` | ``d_601e4eb6``): the
    event's first part went out at the early end, so its name cannot be given back; the record
    says the alias reached the client, not that names were given back. (Was: "given back".)"""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    block = {"type": "tool_use", "id": "toolu_1", "name": upstream_name, "input": {}}
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    body = b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)
    cut = body.index(upstream_name.encode()) + 9
    f = make_flow(_files_read_request(), upstream=body)
    out = asyncio.run(_drive_parts(env, f, [body[:cut], b"", body[cut:], b""]))
    assert out == body  # as it came: the name's first part went out at the early end
    notes = f.metadata[KEY]["notes"]
    assert any(
        n.startswith("passed through: an empty chunk (an empty HTTP/2 DATA frame) ended the rewrite")
        and f"though {upstream_name} reached it as sent" in n
        for n in notes
    ), notes


@pytest.mark.parametrize(
    ("header", "encode"),
    [
        ("gzip", lambda data: gzip.compress(data[:40]) + gzip.compress(data[40:]) + b"JUNK"),
        ("gzip", lambda data: gzip.compress(data) + gzip.compress(b"x") + b"JUNK"),
        ("zstd", lambda data: encoding.encode(data, "zstd") + b"JUNK"),
        ("br", lambda data: brotli.compress(data) + b"JUNK"),
    ],
    ids=["two-members-halves", "two-members-json-then-x", "zstd-then-junk", "br-then-junk"],
)
def test_a_json_answer_clients_read_differently_goes_as_it_came(env, header, encode):
    """A buffered answer mitmproxy cannot decode whole, which clients' decoders read
    differently: several gzip members (httpx reads the first, other clients every one), bytes
    after a zstd frame or a br stream (httpx refuses them). No reading is the client's for sure:
    it goes as the upstream sent it, noted. (Reading it leniently gave the client, for the
    halves, a call httpx could not read.)"""
    body = fixture_json("request-claude-code.json")
    body["stream"] = False
    upstream = encode(fixture_bytes("response-foreign-tool.json"))
    f = make_flow(body, upstream=upstream, resp_type="application/json", resp_headers=[("content-encoding", header)])
    r = replay(env, f)
    assert f.response.headers["content-encoding"] == header
    if r.out != upstream:  # mitmproxy 12 reads one itself (the first member, as httpx does)
        assert header == "gzip" and orjson.loads(encoding.decode(r.out, header))["content"][1]["name"] == "Bash"


def _cut_alias_stream() -> tuple[str, Callable[[int], bytes], bytes, Callable[..., bytes]]:
    """``(alias of files.read, start(i): a content_block_start of the alias, message_start's
    event, event(kind, data))`` for the tests of an empty chunk inside an event."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})

    def start(index: int) -> bytes:
        block = {"type": "tool_use", "id": f"toolu_{index}", "name": upstream_name, "input": {}}
        return orjson.dumps({"type": "content_block_start", "index": index, "content_block": block})

    def event(kind: bytes, data: bytes) -> bytes:
        return b"event: %s\ndata: %s\n\n" % (kind, data)

    message_start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant"}}
    return upstream_name, start, event(b"message_start", orjson.dumps(message_start)), event


def _two_lines(data: bytes) -> bytes:
    """An event of two ``data:`` lines, a ping's and ``data`` (two JSON objects: no client reads
    them as one), and where its second line starts."""
    return b'event: content_block_start\ndata: {"type":"ping"}\ndata: %s\n\n' % data


def test_the_rest_of_an_event_an_empty_chunk_cuts_goes_as_it_came(env):
    """An empty HTTP/2 DATA frame between two ``data:`` lines of one event: the event's first
    line went out at the early end, so its second goes as it came too, though it reads as an
    event of its own; the names are given back in the events read whole after it. (Was: the name
    given back in the second line alone.)"""
    upstream_name, start, head, event = _cut_alias_stream()
    cut_event = _two_lines(start(0))
    rest = (
        event(b"content_block_stop", b'{"type":"content_block_stop","index":0}')
        + event(b"content_block_start", start(1))
        + event(b"content_block_stop", b'{"type":"content_block_stop","index":1}')
        + event(b"message_stop", b'{"type":"message_stop"}')
    )
    body = head + cut_event + rest
    cut = len(head) + cut_event.rindex(b"\ndata: ") + 1
    f = make_flow(_files_read_request(), upstream=body)
    out = asyncio.run(_drive_parts(env, f, [body[:cut], b"", body[cut:], b""]))
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert out == head + cut_event + rest.replace(upstream_name.encode(), b"files.read")
    assert any(f"though {upstream_name} reached it as sent" in n for n in f.metadata[KEY]["notes"])


def test_every_event_an_empty_chunk_cuts_goes_as_it_came(env):
    """A second empty chunk, inside another event, after the first: that event's rest goes as it
    came too (the give-back after the first early end ends at the second), and the record says
    the alias reached the client."""
    upstream_name, start, head, event = _cut_alias_stream()
    first, second = _two_lines(start(0)), _two_lines(start(1))
    stop = event(b"content_block_stop", b'{"type":"content_block_stop","index":0}')
    body = head + first + stop + second + event(b"message_stop", b'{"type":"message_stop"}')
    one = len(head) + first.rindex(b"\ndata: ") + 1
    two = len(head + first + stop) + second.rindex(b"\ndata: ") + 1
    f = make_flow(_files_read_request(), upstream=body)
    out = asyncio.run(_drive_parts(env, f, [body[:one], b"", body[one:two], b"", body[two:], b""]))
    assert out == body  # both events as they came: each had its first line out before a cut
    assert any(f"though {upstream_name} reached it as sent" in n for n in f.metadata[KEY]["notes"])


def test_an_alias_in_the_first_part_of_a_cut_event_is_said_to_reach_the_client(env):
    """The alias wholly in an event's first line, an empty chunk after it, a comment line to end
    the event: the line went out as it came at the early end, and the record says the alias
    reached the client (it said only that names were given back)."""
    upstream_name, start, head, event = _cut_alias_stream()
    cut_event = b"event: content_block_start\ndata: %s\n: keep\n\n" % start(0)
    body = head + cut_event + event(b"message_stop", b'{"type":"message_stop"}')
    cut = len(head) + cut_event.index(b": keep")
    f = make_flow(_files_read_request(), upstream=body)
    out = asyncio.run(_drive_parts(env, f, [body[:cut], b"", body[cut:], b""]))
    assert out == body
    assert any(f"though {upstream_name} reached it as sent" in n for n in f.metadata[KEY]["notes"])


def test_a_gemini_event_an_empty_chunk_cuts_is_read_line_by_line(env):
    """Gemini's rewriter reads an event's unterminated first part as an answer of its own at the
    early end (its client reads each ``data:`` line as one), so the rest of the event is read as
    events of their own too: both lines get the client's name."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files read", GRAMMARS["gemini"], {"files read"})
    call = orjson.dumps(
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"functionCall": {"name": upstream_name, "args": {}}}]}}
            ]
        }
    )
    body = b"data: %s\r\ndata: %s\r\n\r\n" % (call, call)
    request = {
        "contents": [{"role": "user", "parts": [{"text": "read a"}]}],
        "tools": [{"functionDeclarations": [{"name": "files read", "parametersJsonSchema": {"type": "object"}}]}],
    }
    f = harness.make_flow(
        request,
        host="generativelanguage.googleapis.com",
        path="/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
        headers=[("content-type", "application/json")],
        resp_type="text/event-stream",
        upstream=body,
    )
    cut = body.index(b"\r\ndata: ") + 2
    out = asyncio.run(_drive_parts(env, f, [body[:cut], b"", body[cut:], b""]))
    assert upstream_name.encode() in f.request.content
    assert out == body.replace(upstream_name.encode(), b"files read")
