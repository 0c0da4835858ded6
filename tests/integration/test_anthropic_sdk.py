"""The official ``anthropic`` SDK talks to tests/fake_upstream.py through a real mitmdump.

Each case checks what the SDK client received, what the upstream received (the fake's
request log), and, where it matters, the record the addon kept in ``flow.metadata["toolvocab"]``
(read back from the ``-w`` file after mitmdump stopped).
"""

from __future__ import annotations

import base64
import gzip
import json
import time
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Iterable

import anthropic
import httpx
import pytest

import procs
from sdk import anthropic_client
from sdk import assert_changed_flow
from sdk import assert_no_addon_errors
from sdk import decisions_named
from sdk import parse_sse
from sdk import record_of
from sdk import reply_bytes

pytestmark = pytest.mark.integration

needs_addon = pytest.mark.skipif(not procs.ADDON_SCRIPT.exists(), reason="addon/toolvocab.py does not exist yet")

# ------------------------------------------------------------------------------ tools
BASH = {
    "name": "Bash",
    "description": "Run a shell command and return what it printed.",
    "input_schema": {
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The command line to run."},
            "description": {"type": "string", "description": "What the command does, in a few words."},
        },
        "required": ["command"],
    },
}
READ = {
    "name": "Read",
    "description": "Read a text file and return its contents.",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string", "description": "Absolute path of the file."}},
        "required": ["file_path"],
    },
}
EDIT = {
    "name": "Edit",
    "description": "Replace one exact string in a file with another.",
    "input_schema": {
        "type": "object",
        "properties": {
            "file_path": {"type": "string"},
            "old_string": {"type": "string"},
            "new_string": {"type": "string"},
        },
        "required": ["file_path", "old_string", "new_string"],
    },
}
WRITE = {
    "name": "Write",
    "description": "Create or overwrite a file with the given content.",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
        "required": ["file_path", "content"],
    },
}
POWERSHELL = {
    "name": "PowerShell",
    "description": "Run a PowerShell command and return what it printed.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string"}},
        "required": ["command"],
    },
}
CODING_TOOLS = [BASH, READ, EDIT, WRITE]

MODEL = "claude-test-model"
SYSTEM = "You are a careful coding agent used in an offline test."
PROMPT = [{"role": "user", "content": "Please say hi from the shell."}]
TOOL_OUTPUT = "toolvocab-result-1234\n"

TRANSPORTS = ("json", "stream_helper", "create_stream")
CHUNK_SIZES = (0, 1, 7, 64)  # 0 = Content-Length body, no chunked transfer encoding


# ---------------------------------------------------------------------------- helpers
def normalize_block(block: Any) -> dict:
    d = block if isinstance(block, dict) else block.model_dump()
    if d.get("type") == "text":
        return {"type": "text", "text": d.get("text")}
    if d.get("type") == "tool_use":
        return {"type": "tool_use", "id": d.get("id"), "name": d.get("name"), "input": d.get("input")}
    return {k: v for k, v in d.items() if v is not None}


def accumulate(events: Iterable[dict]) -> tuple[list[dict], str | None]:
    """Build the content blocks of a message from Anthropic stream events (dicts)."""
    blocks: dict[int, dict] = {}
    partial: dict[int, list[str]] = {}
    stop_reason = None
    for ev in events:
        kind = ev.get("type")
        if kind == "content_block_start":
            blocks[ev["index"]] = dict(ev["content_block"])
            partial[ev["index"]] = []
        elif kind == "content_block_delta":
            delta = ev["delta"]
            if delta["type"] == "text_delta":
                blocks[ev["index"]]["text"] += delta["text"]
            elif delta["type"] == "input_json_delta":
                partial[ev["index"]].append(delta["partial_json"])
        elif kind == "content_block_stop":
            block = blocks[ev["index"]]
            if block.get("type") in ("tool_use", "server_tool_use"):
                text = "".join(partial[ev["index"]])
                block["input"] = json.loads(text) if text else {}
        elif kind == "message_delta":
            stop_reason = (ev.get("delta") or {}).get("stop_reason")
    return [normalize_block(blocks[i]) for i in sorted(blocks)], stop_reason


def message_from_bytes(body: bytes, content_type: str) -> tuple[list[dict], str | None]:
    if content_type.startswith("text/event-stream"):
        return accumulate(json.loads(d) for _, d in parse_sse(body) if d.startswith("{"))
    msg = json.loads(body)
    return [normalize_block(b) for b in msg["content"]], msg.get("stop_reason")


def reply_content_type(record: dict) -> str:
    return next((v for k, v in record["reply"]["headers"] if k.lower() == "content-type"), "")


def upstream_message(record: dict) -> tuple[list[dict], str | None]:
    """What the fake upstream actually answered to ``record``."""
    return message_from_bytes(reply_bytes(record), reply_content_type(record))


@dataclass
class Received:
    blocks: list[dict]
    stop_reason: str | None
    event_types: list[str] = field(default_factory=list)
    text_delta_times: list[float] = field(default_factory=list)  # time.time() of each text delta
    end_time: float = 0.0


def ask(
    client: anthropic.Anthropic, transport: str, *, tools: list[dict], messages: list[dict], system: str = SYSTEM
) -> Received:
    kwargs = dict(model=MODEL, max_tokens=256, system=system, tools=tools, messages=messages)
    if transport == "json":
        msg = client.messages.create(**kwargs)
        return Received([normalize_block(b) for b in msg.content], msg.stop_reason, end_time=time.time())
    if transport == "stream_helper":
        types, times = [], []
        with client.messages.stream(**kwargs) as stream:
            for event in stream:
                types.append(event.type)
                if event.type == "text":
                    times.append(time.time())
            msg = stream.get_final_message()
        return Received([normalize_block(b) for b in msg.content], msg.stop_reason, types, times, time.time())
    if transport == "create_stream":
        events, types, times = [], [], []
        for event in client.messages.create(stream=True, **kwargs):
            d = event.model_dump()
            events.append(d)
            types.append(d["type"])
            if d["type"] == "content_block_delta" and d["delta"]["type"] == "text_delta":
                times.append(time.time())
        blocks, stop = accumulate(events)
        return Received(blocks, stop, types, times, time.time())
    raise ValueError(transport)


def system_text(body: dict) -> str:
    system = body.get("system")
    if isinstance(system, str):
        return system
    if isinstance(system, list):
        return "\n".join(b.get("text", "") for b in system if isinstance(b, dict))
    return ""


def check_forwarded_request(record: dict, *, tools: list[dict], messages: list[dict], md: dict | None = None) -> None:
    """The upstream got the client's request: same tools, same messages, system kept.

    The addon may add one sentence to the system prompt (``md["prompt_sentence"]``); nothing
    else may change.
    """
    body = record["body"]
    assert isinstance(body, dict), record
    assert record["path"].startswith("/v1/messages"), record["path"]
    assert body["model"] == MODEL
    assert body["tools"] == tools, "declared tools must reach the upstream unchanged"
    assert body["messages"] == messages, "the transcript must reach the upstream unchanged"
    sentence = (md or {}).get("prompt_sentence")
    if sentence:
        assert SYSTEM in system_text(body) and sentence in system_text(body), body.get("system")
    else:
        assert body.get("system") == SYSTEM, body.get("system")


def messages_flows(flows: list) -> list:
    return [f for f in flows if f.request.path.startswith("/v1/messages")]


def sent_messages(got: Received) -> list[dict]:
    """The follow-up transcript a client would send after running the tool."""
    assistant = []
    for b in got.blocks:
        if b["type"] == "text":
            assistant.append({"type": "text", "text": b["text"]})
        else:
            assistant.append({"type": "tool_use", "id": b["id"], "name": b["name"], "input": b["input"]})
    tool_use = next(b for b in got.blocks if b["type"] == "tool_use")
    return PROMPT + [
        {"role": "assistant", "content": assistant},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use["id"], "content": TOOL_OUTPUT}]},
    ]


def run_tool_turns(
    fake, px, transport: str, *, tools: list[dict], upstream_name: str, upstream_args: dict, chunk_sizes=CHUNK_SIZES
) -> list[tuple[int, Received, dict]]:
    """One first turn per chunk size; returns (chunk size, what the client got, upstream record)."""
    fake.config(tool_name=upstream_name, tool_args=upstream_args)
    client = anthropic_client(px.url)
    out = []
    for size in chunk_sizes:
        fake.config(chunk_size=size)
        before = len(fake.requests())
        got = ask(client, transport, tools=tools, messages=PROMPT)
        record = fake.wait_requests(before + 1)[before]
        out.append((size, got, record))
    return out


# ------------------------------------------------------------------ harness self-check
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_harness_plain_mitmdump_passes_everything_through(fake_upstream, proxy, transport):
    """Without the addon (no ``-s``) the foreign name reaches the client unchanged."""
    px = proxy(script=None)
    for size, got, record in run_tool_turns(
        fake_upstream,
        px,
        transport,
        tools=CODING_TOOLS,
        upstream_name="bash",
        upstream_args={"command": "echo hi"},
        chunk_sizes=(0, 7),
    ):
        blocks, stop = upstream_message(record)
        assert got.blocks == blocks and got.stop_reason == stop == "tool_use", size
        assert got.blocks[1]["name"] == "bash"
        check_forwarded_request(record, tools=CODING_TOOLS, messages=PROMPT)
    flows = messages_flows(px.flows())
    assert len(flows) == 2 and all(f.response.status_code == 200 for f in flows)


# --------------------------------------------------------------------- repair cases
@needs_addon
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_foreign_bash_is_renamed_to_declared_Bash(fake_upstream, proxy, transport):
    px = proxy()
    client = anthropic_client(px.url)
    results = run_tool_turns(
        fake_upstream, px, transport, tools=CODING_TOOLS, upstream_name="bash", upstream_args={"command": "echo hi"}
    )
    followups = []
    for size, got, record in results:
        up_blocks, up_stop = upstream_message(record)
        assert up_blocks[1]["name"] == "bash"  # the fake really sent the foreign name
        assert got.stop_reason == up_stop == "tool_use", size
        assert got.blocks[0] == up_blocks[0], f"text block must be untouched (chunk {size})"
        assert got.blocks[1] == {
            "type": "tool_use",
            "id": up_blocks[1]["id"],
            "name": "Bash",
            "input": {"command": "echo hi"},
        }, f"chunk size {size}"
        assert len(got.blocks) == 2
        # Second turn: the client runs Bash and sends the result back.
        follow = sent_messages(got)
        before = len(fake_upstream.requests())
        final = ask(client, transport, tools=CODING_TOOLS, messages=follow)
        final_record = fake_upstream.wait_requests(before + 1)[before]
        fin_blocks, _ = upstream_message(final_record)
        assert final.blocks == fin_blocks and TOOL_OUTPUT in final.blocks[0]["text"], size
        followups.append((record, final_record, follow))

    flows = messages_flows(px.flows())
    assert len(flows) == 2 * len(CHUNK_SIZES), [f.request.path for f in flows]
    n = len(CHUNK_SIZES)  # all first turns ran first, then all follow-ups
    for i, (record, final_record, follow) in enumerate(followups):
        tool_flow, final_flow = flows[i], flows[n + i]
        md = record_of(tool_flow, "anthropic")
        assert md["mode"] not in ("off", "observe")
        assert set(md["declared"]) == {"Bash", "Read", "Edit", "Write"}
        assert md["skipped"] is None
        (decision,) = decisions_named(md, "bash")
        assert decision["target"] == "Bash" and decision["action"] in ("rename", "fit"), decision
        assert_changed_flow(tool_flow)
        check_forwarded_request(record, tools=CODING_TOOLS, messages=PROMPT, md=md)
        check_forwarded_request(
            final_record, tools=CODING_TOOLS, messages=follow, md=record_of(final_flow, "anthropic")
        )


@needs_addon
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_shell_with_argv_becomes_Bash_command_string(fake_upstream, proxy, transport):
    px = proxy()
    results = run_tool_turns(
        fake_upstream,
        px,
        transport,
        tools=CODING_TOOLS,
        upstream_name="shell",
        upstream_args={"command": ["bash", "-lc", "echo toolvocab-ok"]},
    )
    for size, got, record in results:
        up_blocks, _ = upstream_message(record)
        assert got.blocks[0] == up_blocks[0], size
        assert got.blocks[1] == {
            "type": "tool_use",
            "id": up_blocks[1]["id"],
            "name": "Bash",
            "input": {"command": "echo toolvocab-ok"},
        }, f"chunk size {size}"
    flows = messages_flows(px.flows())
    assert len(flows) == len(results)
    for flow, (_, _, record) in zip(flows, results):
        md = record_of(flow, "anthropic")
        (decision,) = decisions_named(md, "shell")
        assert decision["target"] == "Bash" and decision["action"] in ("rename", "fit"), decision
        assert_changed_flow(flow)
        check_forwarded_request(record, tools=CODING_TOOLS, messages=PROMPT, md=md)


@needs_addon
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_declared_Read_with_path_gets_file_path(fake_upstream, proxy, transport):
    px = proxy()
    results = run_tool_turns(
        fake_upstream, px, transport, tools=CODING_TOOLS, upstream_name="Read", upstream_args={"path": "/tmp/x"}
    )
    for size, got, record in results:
        up_blocks, _ = upstream_message(record)
        assert got.blocks[0] == up_blocks[0], size
        assert got.blocks[1] == {
            "type": "tool_use",
            "id": up_blocks[1]["id"],
            "name": "Read",
            "input": {"file_path": "/tmp/x"},
        }, f"chunk size {size}"
    flows = messages_flows(px.flows())
    assert len(flows) == len(results)
    for flow, (_, _, record) in zip(flows, results):
        md = record_of(flow, "anthropic")
        (decision,) = decisions_named(md, "Read")
        assert decision["target"] == "Read" and decision["action"] == "fit", decision
        assert_changed_flow(flow)
        check_forwarded_request(record, tools=CODING_TOOLS, messages=PROMPT, md=md)


@needs_addon
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ambiguous_shell_is_left_alone(fake_upstream, proxy, transport):
    """``shell`` could be Bash or run_shell_command: guessing would be worse than leaving it.
    (PowerShell is not a candidate at all: it runs another shell's syntax.)"""
    other_shell = {**BASH, "name": "run_shell_command", "description": "Run a command in the shell."}
    tools = [BASH, other_shell, POWERSHELL, READ, WRITE]
    px = proxy()
    results = run_tool_turns(
        fake_upstream, px, transport, tools=tools, upstream_name="shell", upstream_args={"command": "echo hi"}
    )
    for size, got, record in results:
        up_blocks, up_stop = upstream_message(record)
        assert got.blocks == up_blocks and got.stop_reason == up_stop, f"chunk size {size}"
        assert got.blocks[1]["name"] == "shell"
    flows = messages_flows(px.flows())
    assert len(flows) == len(results)
    for flow, (_, _, record) in zip(flows, results):
        md = record_of(flow, "anthropic")
        (decision,) = decisions_named(md, "shell")
        assert decision["action"] == "leave", decision
        check_forwarded_request(record, tools=tools, messages=PROMPT, md=md)


@needs_addon
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_undeclared_mcp_tool_is_left_alone(fake_upstream, proxy, transport):
    tools = [READ, EDIT, WRITE]
    args = {"owner": "acme", "repo": "widgets", "title": "Fix retry backoff"}
    px = proxy()
    results = run_tool_turns(
        fake_upstream, px, transport, tools=tools, upstream_name="mcp__github__create_issue", upstream_args=args
    )
    for size, got, record in results:
        up_blocks, up_stop = upstream_message(record)
        assert got.blocks == up_blocks and got.stop_reason == up_stop, f"chunk size {size}"
        assert got.blocks[1]["name"] == "mcp__github__create_issue" and got.blocks[1]["input"] == args
    flows = messages_flows(px.flows())
    assert len(flows) == len(results)
    for flow, (_, _, record) in zip(flows, results):
        md = record_of(flow, "anthropic")
        (decision,) = decisions_named(md, "mcp__github__create_issue")
        assert decision["action"] == "leave", decision
        check_forwarded_request(record, tools=tools, messages=PROMPT, md=md)


# ------------------------------------------------------------- byte-identical pass-through
def raw_json_message(name: str, tool_id: str = "toolu_01RawJsonBytes0000000000") -> bytes:
    """A hand-formatted message (odd spacing and key order) so any re-serialisation shows."""
    return (
        b'{\n  "type": "message", "id": "msg_01RawJson",  "role": "assistant",\n'
        b'  "content": [ {"text": "Running it now \\u2014 caf\\u00e9.", "type": "text"},\n'
        b'    {"type": "tool_use", "name": "'
        + name.encode()
        + b'", "id": "'
        + tool_id.encode()
        + b'", "input": {"command": "echo hi",   "description": "Say hi"}} ],\n'
        b'  "model": "claude-test-model", "stop_reason": "tool_use", "stop_sequence": null,\n'
        b'  "usage": {"input_tokens": 12, "output_tokens": 7}\n}\n'
    )


def raw_sse_message(name: str, *, extra_events: bytes = b"", tool_id: str = "toolu_01RawSseBytes00000000000") -> bytes:
    """A hand-written SSE stream (spacing variants, a comment line, unicode)."""
    return (
        b"event: message_start\n"
        b'data: {"type":"message_start","message":{"id":"msg_01RawSse","type":"message","role":"assistant",'
        b'"model":"claude-test-model","content":[],"stop_reason":null,"stop_sequence":null,'
        b'"usage":{"input_tokens":12,"output_tokens":1}}}\n\n'
        b": a comment line the proxy must keep\n\n"
        b'event: ping\ndata: {"type": "ping"}\n\n'
        b"event: content_block_start\n"
        b'data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n'
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Running it now \xe2\x80\x94 caf\xc3\xa9."}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n'
        + extra_events
        + b"event: content_block_start\n"
        b'data: {"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"'
        + tool_id.encode()
        + b'","name":"'
        + name.encode()
        + b'","input":{}}}\n\n'
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":""}}\n\n'
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\\"command\\": \\"ec"}}\n\n'
        b"event: content_block_delta\n"
        b'data: {"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"ho hi\\", \\"description\\": \\"Say hi\\"}"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'
        b"event: message_delta\n"
        b'data: {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":7}}\n\n'
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
    )


JSON_HEADERS = {"Content-Type": "application/json"}
SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}


def raw_via_sdk(client: anthropic.Anthropic, *, stream: bool, tools: list[dict]) -> tuple[int, bytes]:
    """(status, exact body bytes the SDK's HTTP client received)."""
    kwargs = dict(model=MODEL, max_tokens=256, system=SYSTEM, tools=tools, messages=PROMPT)
    if stream:
        with client.messages.with_streaming_response.create(stream=True, **kwargs) as resp:
            return resp.status_code, b"".join(resp.iter_bytes())
    resp = client.messages.with_raw_response.create(**kwargs)
    return resp.status_code, resp.http_response.content


@needs_addon
def test_declared_name_response_is_byte_identical(fake_upstream, proxy):
    px = proxy()
    client = anthropic_client(px.url)
    cases = []
    for stream in (False, True):
        body = raw_sse_message("Bash") if stream else raw_json_message("Bash")
        for size in CHUNK_SIZES:
            fake_upstream.enqueue(body, headers=SSE_HEADERS if stream else JSON_HEADERS, chunk_size=size)
            status, got = raw_via_sdk(client, stream=stream, tools=CODING_TOOLS)
            assert status == 200
            assert got == body, f"stream={stream} chunk={size}: bytes changed"
            cases.append(stream)
    # The SDK parses these bytes into a Bash call (sanity check of the hand-written samples).
    blocks, _ = message_from_bytes(raw_sse_message("Bash"), "text/event-stream")
    assert blocks[1] == {
        "type": "tool_use",
        "id": "toolu_01RawSseBytes00000000000",
        "name": "Bash",
        "input": {"command": "echo hi", "description": "Say hi"},
    }
    records = fake_upstream.requests()
    flows = messages_flows(px.flows())
    assert len(flows) == len(cases) == len(records)
    for flow, record in zip(flows, records):
        md = record_of(flow, "anthropic")
        for d in decisions_named(md, "Bash"):
            assert d["action"] == "keep" and d["target"] in ("Bash", None), d
        assert not [d for d in md["decisions"] if d["action"] in ("rename", "fit")], md["decisions"]
        if flow.marked:  # only the request may have changed (the prompt sentence)
            assert md["prompt_sentence"], "flow marked although neither request nor response changed"
        check_forwarded_request(record, tools=CODING_TOOLS, messages=PROMPT, md=md)


@needs_addon
@pytest.mark.parametrize("mode", ["off", "observe"])
def test_mode_off_and_observe_change_nothing(fake_upstream, proxy, mode):
    px = proxy(options={"toolvocab_mode": mode})
    client = anthropic_client(px.url)
    fake_upstream.config(tool_name="bash", tool_args={"command": "echo hi"})
    records = []
    for stream in (False, True):
        for size in (0, 7):
            fake_upstream.config(chunk_size=size)
            before = len(fake_upstream.requests())
            status, got = raw_via_sdk(client, stream=stream, tools=CODING_TOOLS)
            record = fake_upstream.wait_requests(before + 1)[before]
            assert status == 200 and got == reply_bytes(record), f"mode={mode} stream={stream} chunk={size}"
            blocks, _ = message_from_bytes(got, "text/event-stream" if stream else "application/json")
            assert blocks[1]["name"] == "bash"
            records.append(record)
    # And through the SDK's parsers: the foreign name arrives unchanged.
    for transport in TRANSPORTS:
        got = ask(client, transport, tools=CODING_TOOLS, messages=PROMPT)
        assert got.blocks[1]["name"] == "bash" and got.blocks[1]["input"] == {"command": "echo hi"}
    flows = messages_flows(px.flows())
    assert len(flows) == len(records) + len(TRANSPORTS)
    for flow, record in zip(flows, records):
        if mode == "off":
            md = flow.metadata.get("toolvocab")
            if md is not None:
                assert md.get("mode") == "off", md
                assert not [d for d in md.get("decisions") or [] if d.get("action") in ("rename", "fit")], md
            assert record["body"]["tools"] == CODING_TOOLS and record["body"]["messages"] == PROMPT
            assert record["body"].get("system") == SYSTEM, "mode=off must not touch the request"
        else:
            md = record_of(flow, "anthropic")
            assert md["mode"] == "observe"
            (decision,) = decisions_named(md, "bash")
            assert decision["target"] == "Bash" and decision["action"] in ("rename", "fit"), decision
            assert record["body"]["tools"] == CODING_TOOLS and record["body"]["messages"] == PROMPT
            assert record["body"].get("system") == SYSTEM, "mode=observe must not touch the request"


@needs_addon
def test_non_llm_traffic_passes_through_byte_identical(fake_upstream, proxy):
    px = proxy()
    headers = {"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        # 1. A body that is not JSON, on the LLM path.
        odd_request = b'{"model": "claude-test-model", "tools": [{"name": "Bash"}], oops'
        odd_reply = b'{"type":"error","error":{"type":"invalid_request_error","message":"bad  json"}}'
        fake_upstream.enqueue(odd_reply, status=400, headers=JSON_HEADERS)
        r = http.post(
            "/v1/messages", content=odd_request, headers=dict(headers, **{"content-type": "application/json"})
        )
        assert r.status_code == 400 and r.content == odd_reply

        # 2. A non-LLM path carrying an LLM-looking request and a foreign tool name in the reply.
        other_request = json.dumps({"model": MODEL, "tools": CODING_TOOLS, "messages": PROMPT}, indent=3).encode()
        other_reply = raw_json_message("bash")
        fake_upstream.enqueue(other_reply, headers=JSON_HEADERS, chunk_size=7)
        r = http.post("/v1/other", content=other_request, headers=dict(headers, **{"content-type": "application/json"}))
        assert r.status_code == 200 and r.content == other_reply

        # 3. Same on a streaming non-LLM path.
        sse_reply = raw_sse_message("bash")
        fake_upstream.enqueue(sse_reply, headers=SSE_HEADERS, chunk_size=5)
        r = http.post(
            "/v1/other/stream", content=other_request, headers=dict(headers, **{"content-type": "application/json"})
        )
        assert r.status_code == 200 and r.content == sse_reply

        # 4. HEAD / and GET /v1/models.
        assert http.head("/").status_code == 200
        models = http.get("/v1/models", headers=headers)
        assert models.status_code == 200 and models.json()["data"]

    # 5. A request without tools (title generation) gets its plain text untouched.
    client = anthropic_client(px.url)
    before = len(fake_upstream.requests())
    resp = client.messages.with_raw_response.create(model=MODEL, max_tokens=32, messages=PROMPT)
    record = fake_upstream.wait_requests(before + 1)[before]
    assert resp.http_response.content == reply_bytes(record)
    assert resp.parse().content[0].text == "Fake title"

    records = fake_upstream.requests()
    assert base64.b64decode(records[0]["body_b64"]) == odd_request
    assert base64.b64decode(records[1]["body_b64"]) == other_request
    assert base64.b64decode(records[2]["body_b64"]) == other_request
    assert records[1]["path"] == "/v1/other" and records[2]["path"] == "/v1/other/stream"
    assert record["body"]["messages"] == PROMPT and "tools" not in record["body"]
    assert_no_addon_errors(px)


@needs_addon
def test_odd_sse_streams_pass_through_byte_identical(fake_upstream, proxy):
    px = proxy()
    client = anthropic_client(px.url)
    unknown = (
        b'event: future_event_type\ndata: {"type":"future_event_type","detail":{"name":"bash"}}\n\n'
        b'event: ping\ndata: {"type":"ping","cost":"0.0001"}\n\n'
    )
    malformed = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_x","type":"message",'
        b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
        b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_bl\n\n'
        b"data: not json at all\n\n"
        b'event: content_block_start\r\ndata: {"type":"content_block_start","index":0,'
        b'"content_block":{"type":"text","text":""}}\r\n\r\n'
        b"retry: 1000\nid: 7\n\n"
        b'event: message_stop\ndata: {"type":"message_stop"}\n\n'
        b"trailing bytes without a blank line"
    )
    error_after_200 = (
        b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_e","type":"message",'
        b'"role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,'
        b'"usage":{"input_tokens":1,"output_tokens":1}}}\n\n'
        b'event: ping\ndata: {"type":"ping"}\n\n'
        b'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n'
    )
    streams = {
        "unknown events + declared Bash": raw_sse_message("Bash", extra_events=unknown),
        "malformed": malformed,
        "error after 200": error_after_200,
    }
    for label, body in streams.items():
        for size in (0, 1, 7, 64):
            fake_upstream.enqueue(body, headers=SSE_HEADERS, chunk_size=size)
            status, got = raw_via_sdk(client, stream=True, tools=CODING_TOOLS)
            assert status == 200 and got == body, f"{label}, chunk {size}: bytes changed"

    # The SDK surfaces the in-stream error after HTTP 200.
    fake_upstream.enqueue(error_after_200, headers=SSE_HEADERS, chunk_size=7)
    with pytest.raises(anthropic.APIStatusError):
        ask(client, "create_stream", tools=CODING_TOOLS, messages=PROMPT)

    # Unknown events next to a foreign name: the name is repaired, the unknown event kept verbatim.
    fake_upstream.enqueue(raw_sse_message("bash", extra_events=unknown), headers=SSE_HEADERS, chunk_size=7)
    status, got = raw_via_sdk(client, stream=True, tools=CODING_TOOLS)
    assert status == 200 and unknown in got, got
    blocks, _ = message_from_bytes(got, "text/event-stream")
    assert blocks[1]["name"] == "Bash" and blocks[1]["input"] == {"command": "echo hi", "description": "Say hi"}
    assert_no_addon_errors(px)


@needs_addon
def test_gzip_responses_stay_readable(fake_upstream, proxy):
    """An upstream that compresses anyway (the request asked for identity): the client gets a
    valid response, repaired (a stream read through a decoder, given to the client decoded)."""
    px = proxy()
    client = anthropic_client(px.url)
    for transport, body, headers in (
        ("json", raw_json_message("bash"), JSON_HEADERS),
        ("create_stream", raw_sse_message("bash"), SSE_HEADERS),
    ):
        fake_upstream.enqueue(gzip.compress(body), headers=dict(headers, **{"Content-Encoding": "gzip"}), chunk_size=11)
        got = ask(client, transport, tools=CODING_TOOLS, messages=PROMPT)
        assert got.blocks[0]["text"] == "Running it now \u2014 caf\u00e9."
        assert got.blocks[1]["name"] == "Bash", (transport, got.blocks)
        assert got.blocks[1]["input"] == {"command": "echo hi", "description": "Say hi"}


@needs_addon
def test_text_deltas_are_not_held_back(fake_upstream, proxy):
    """With a slow upstream, text reaches the client long before the stream ends."""
    px = proxy()
    client = anthropic_client(px.url)
    fake_upstream.config(tool_name="bash", tool_args={"command": "echo hi"}, chunk_size=64, chunk_delay=0.12)
    for transport in ("create_stream", "stream_helper"):
        before = len(fake_upstream.requests())
        got = ask(client, transport, tools=CODING_TOOLS, messages=PROMPT)
        record = fake_upstream.wait_requests(before + 1)[before]
        finished = record["reply"]["finished_at"]
        started = record["reply"]["started_at"]
        assert finished - started > 1.5, "the fake was not slow enough for this test to mean anything"
        assert got.text_delta_times, got.event_types
        assert got.text_delta_times[0] < finished - 1.0, (
            f"{transport}: first text delta arrived {finished - got.text_delta_times[0]:.2f}s before the "
            f"upstream finished; text is being held back"
        )
        assert got.text_delta_times[-1] < finished - 0.5, transport
        assert got.blocks[1]["name"] == "Bash", got.blocks
