"""The official ``openai`` SDK talks to an upstream through a real mitmdump with the addon.

Chat Completions and Responses run over HTTP against tests/fake_upstream.py, which answers
with exact bytes written here (``enqueue``), in transport chunks of 1, 7 and 64 bytes so SSE
events, JSON and tool names are split. Responses over WebSocket (Codex's transport) runs
against a small WebSocket upstream started in the test (:class:`WSUpstream`), through
mitmdump's reverse mode, which carries the ``Upgrade: websocket`` request and the frames.

Each case checks what the SDK client received, what the upstream received (the fake's request
log) and, where it matters, the record the addon kept in ``flow.metadata["toolvocab"]`` (read
back from the ``-w`` file after mitmdump stopped).
"""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Iterable

import httpx
import openai
import pytest

import procs
from sdk import assert_changed_flow
from sdk import assert_no_addon_errors
from sdk import decisions_named
from sdk import one_request
from sdk import openai_client
from sdk import parse_sse
from sdk import record_of
from toolvocab.engine.ids import stable_call_id

pytestmark = pytest.mark.integration

needs_addon = pytest.mark.skipif(not procs.ADDON_SCRIPT.exists(), reason="addon/toolvocab.py does not exist yet")

MODEL = "gpt-test-model"
SYSTEM = "You are a careful coding agent used in an offline test."
CHUNK_SIZES = (1, 7, 64)
SSE_HEADERS = {"Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache"}
JSON_HEADERS = {"Content-Type": "application/json"}
TC_ID = re.compile(r"^tc_[0-9a-f]{24}$")


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def sse_blocks(data: bytes) -> list[bytes]:
    """The raw blocks of an LF-framed SSE body, each with its blank-line terminator."""
    return [b + b"\n\n" for b in data.split(b"\n\n") if b]


def flows_on(flows: list, suffix: str) -> list:
    return [f for f in flows if f.request.path.split("?", 1)[0].endswith(suffix)]


# =================================================================== Chat Completions
def fn_tool(name: str, description: str, properties: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


RUN_SHELL = fn_tool(
    "run_shell_command",
    "Executes a given shell command.",
    {"command": {"type": "string"}, "description": {"type": "string"}},
    ["command"],
)
READ_FILE = fn_tool("read_file", "Reads a file.", {"file_path": {"type": "string"}}, ["file_path"])
POWERSHELL = fn_tool("PowerShell", "Runs a PowerShell command.", {"command": {"type": "string"}}, ["command"])
CHAT_TOOLS = [RUN_SHELL, READ_FILE]
CHAT_PROMPT = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "Please say hi from the shell."}]
CHAT_TEXT = "Running it now \u2014 caf\u00e9."
ECHO_HI = '{"command":"echo hi"}'
CHAT_TRANSPORTS = ("json", "create_stream", "stream_helper")
STREAM_TRANSPORTS = ("create_stream", "stream_helper")


def chat_chunk(choices: list, usage: Any = None) -> bytes:
    return (
        b"data: "
        + dumps(
            {
                "id": "chatcmpl-tvStream01",
                "object": "chat.completion.chunk",
                "created": 1760000000,
                "model": MODEL,
                "system_fingerprint": "fp_tv",
                "choices": choices,
                "usage": usage,
            }
        )
        + b"\n\n"
    )


def delta_chunk(delta: dict, finish: str | None = None) -> bytes:
    return chat_chunk([{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}])


USAGE_CHUNK = chat_chunk([], usage={"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30})
DONE = b"data: [DONE]\n\n"


def tcd(index: int, **fields: Any) -> dict:
    """One ``delta.tool_calls[]`` entry holding exactly the given fields."""
    entry: dict[str, Any] = {"index": index}
    for key in ("id", "type"):
        if key in fields:
            entry[key] = fields[key]
    fn = {k: fields[k] for k in ("name", "arguments") if k in fields}
    if fn:
        entry["function"] = fn
    return entry


def split3(text: str) -> list[str]:
    a, b = len(text) // 3, 2 * len(text) // 3
    return [p for p in (text[:a], text[a:b], text[b:]) if p]


def conformant_call(index: int, name: str, args: str, call_id: str) -> list[list[dict]]:
    """OpenAI's own shape: id, type and full name in the first delta, then argument pieces."""
    return [[tcd(index, id=call_id, type="function", name=name, arguments="")]] + [
        [tcd(index, arguments=p)] for p in split3(args)
    ]


def chat_stream(tool_chunks: list[list[dict]], *, text: str | None = CHAT_TEXT, usage: bool = True) -> bytes:
    parts = [delta_chunk({"role": "assistant", "content": ""})]
    if text:
        parts.append(delta_chunk({"content": text}))
    parts += [delta_chunk({"tool_calls": entries}) for entries in tool_chunks]
    parts.append(delta_chunk({}, "tool_calls"))
    if usage:
        parts.append(USAGE_CHUNK)
    parts.append(DONE)
    return b"".join(parts)


def chat_json(calls: list[dict], *, text: str | None = CHAT_TEXT) -> bytes:
    """A hand-formatted (indented, non-ASCII escaped) completion so re-serialisation shows."""
    body = {
        "id": "chatcmpl-tvJson01",
        "object": "chat.completion",
        "created": 1760000000,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None, "tool_calls": calls},
                "logprobs": None,
                "finish_reason": "tool_calls",
            }
        ],
        "usage": {"prompt_tokens": 21, "completion_tokens": 9, "total_tokens": 30},
        "system_fingerprint": "fp_tv",
    }
    return json.dumps(body, indent=2).encode() + b"\n"


def json_call(name: str, args: Any, call_id: str | None = "call_tvJson0000000000000001", **extra: Any) -> dict:
    call: dict[str, Any] = {"type": "function", "function": {"name": name, "arguments": args}}
    if call_id is not None:
        call["id"] = call_id
    call.update(extra)
    return call


@dataclass
class ChatGot:
    calls: list[dict]  # {"id", "name", "arguments"} in index order
    text: str | None
    finish_reason: str | None
    usage: dict | None = None
    chunks: list[dict] = field(default_factory=list)  # stream transports: every chunk as the SDK parsed it
    event_types: list[str] = field(default_factory=list)


def _calls_from_message(message: Any) -> list[dict]:
    return [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments} for c in (message.tool_calls or [])
    ]


def ask_chat(
    client: openai.OpenAI, transport: str, *, tools: list[dict], messages: list[dict] = CHAT_PROMPT
) -> ChatGot:
    kwargs = dict(model=MODEL, messages=messages, tools=tools)
    if transport == "json":
        resp = client.chat.completions.create(**kwargs)
        choice = resp.choices[0]
        return ChatGot(
            _calls_from_message(choice.message),
            choice.message.content,
            choice.finish_reason,
            resp.usage.model_dump() if resp.usage else None,
        )
    if transport == "create_stream":
        acc: dict[int, dict] = {}
        text, finish, usage, chunks = "", None, None, []
        for chunk in client.chat.completions.create(stream=True, stream_options={"include_usage": True}, **kwargs):
            chunks.append(chunk.model_dump())
            if chunk.usage is not None:
                usage = chunk.usage.model_dump()
            for choice in chunk.choices:
                text += choice.delta.content or ""
                finish = choice.finish_reason or finish
                for tc in choice.delta.tool_calls or []:
                    # What a typical client does: keep the first id, concatenate name and arguments.
                    slot = acc.setdefault(tc.index, {"id": None, "name": "", "arguments": ""})
                    slot["id"] = slot["id"] or tc.id
                    if tc.function is not None:
                        slot["name"] += tc.function.name or ""
                        slot["arguments"] += tc.function.arguments or ""
        return ChatGot([acc[i] for i in sorted(acc)], text, finish, usage, chunks)
    if transport == "stream_helper":
        types = []
        with client.chat.completions.stream(stream_options={"include_usage": True}, **kwargs) as stream:
            for event in stream:
                types.append(event.type)
            final = stream.get_final_completion()
        choice = final.choices[0]
        return ChatGot(
            _calls_from_message(choice.message),
            choice.message.content,
            choice.finish_reason,
            final.usage.model_dump() if final.usage else None,
            event_types=types,
        )
    raise ValueError(transport)


def raw_chat(
    client: openai.OpenAI, *, stream: bool, tools: list[dict], messages: list[dict] = CHAT_PROMPT
) -> tuple[int, bytes]:
    """(status, exact body bytes the SDK's HTTP client received)."""
    kwargs = dict(model=MODEL, messages=messages, tools=tools)
    if stream:
        with client.chat.completions.with_streaming_response.create(stream=True, **kwargs) as resp:
            return resp.status_code, b"".join(resp.iter_bytes())
    resp = client.chat.completions.with_raw_response.create(**kwargs)
    return resp.status_code, resp.http_response.content


def chat_reply(transport: str, stream_calls: list[list[dict]], json_calls: list[dict], size: int) -> dict:
    """enqueue() kwargs answering ``transport`` with these calls, in ``size``-byte chunks."""
    if transport == "json":
        return dict(body=chat_json(json_calls), headers=JSON_HEADERS, chunk_size=size)
    return dict(body=chat_stream(stream_calls), headers=SSE_HEADERS, chunk_size=size)


def check_chat_request(record: dict, tools: list[dict], md: dict | None = None) -> None:
    """The upstream got the client's request: same tools and user turn; the system message
    gains at most the addon's one sentence."""
    body = record["body"]
    assert isinstance(body, dict), record
    assert record["path"] == "/v1/chat/completions", record["path"]
    assert body["model"] == MODEL
    assert body["tools"] == tools, "declared tools must reach the upstream unchanged"
    assert body["messages"][1:] == CHAT_PROMPT[1:]
    system = body["messages"][0]
    assert system["role"] == "system" and system["content"].startswith(SYSTEM), system
    sentence = (md or {}).get("prompt_sentence")
    if sentence:
        assert system["content"] == SYSTEM + "\n\n" + sentence, system
    else:
        assert system["content"] == SYSTEM


# ---------------------------------------------------------------------- chat: harness
@pytest.mark.parametrize("transport", CHAT_TRANSPORTS)
def test_chat_harness_plain_mitmdump_passes_foreign_name(fake_upstream, proxy, transport):
    """Without the addon the SDK sees the upstream's foreign name (the samples are valid)."""
    px = proxy(script=None)
    client = openai_client(px.url)
    fake_upstream.enqueue(
        **chat_reply(
            transport,
            conformant_call(0, "Bash", ECHO_HI, "call_tvBash01"),
            [json_call("Bash", ECHO_HI, "call_tvBash01")],
            7,
        )
    )
    got = ask_chat(client, transport, tools=CHAT_TOOLS)
    assert got.calls == [{"id": "call_tvBash01", "name": "Bash", "arguments": ECHO_HI}]
    assert got.text == CHAT_TEXT and got.finish_reason == "tool_calls"


# ------------------------------------------------------------------ chat: repair cases
@needs_addon
@pytest.mark.parametrize("transport", CHAT_TRANSPORTS)
def test_chat_foreign_Bash_becomes_run_shell_command(fake_upstream, proxy, transport):
    px = proxy()
    client = openai_client(px.url)
    records = []
    for size in CHUNK_SIZES:
        before = len(fake_upstream.requests())
        fake_upstream.enqueue(
            **chat_reply(
                transport,
                conformant_call(0, "Bash", ECHO_HI, "call_tvBash01"),
                [json_call("Bash", ECHO_HI, "call_tvBash01")],
                size,
            )
        )
        got = ask_chat(client, transport, tools=CHAT_TOOLS)
        assert len(got.calls) == 1, (size, got.calls)
        call = got.calls[0]
        assert call["id"] == "call_tvBash01" and call["name"] == "run_shell_command", (size, call)
        assert json.loads(call["arguments"]) == {"command": "echo hi"}, (size, call)
        assert got.text == CHAT_TEXT and got.finish_reason == "tool_calls", size
        assert got.usage and (got.usage["prompt_tokens"], got.usage["total_tokens"]) == (21, 30), got.usage
        records.append(one_request(fake_upstream, before))
    flows = flows_on(px.flows(), "/chat/completions")
    assert len(flows) == len(CHUNK_SIZES)
    for flow, record in zip(flows, records):
        md = record_of(flow, "openai_chat")
        assert set(md["declared"]) == {"run_shell_command", "read_file"}
        (decision,) = decisions_named(md, "Bash")
        assert decision["target"] == "run_shell_command" and decision["action"] in ("rename", "fit"), decision
        assert md["response_changed"] is True and md["streamed"] is (transport != "json"), md
        assert_changed_flow(flow)
        check_chat_request(record, CHAT_TOOLS, md)
        assert record["body"].get("stream", False) is (transport != "json")


NAME_SHAPES = {
    # label: (stream tool chunks, expected (id, name, arguments))
    "declared name split": (
        [
            [tcd(0, id="call_tvSplit01", type="function", name="run_she", arguments="")],
            [tcd(0, name="ll_command")],
            [tcd(0, arguments='{"command":')],
            [tcd(0, arguments='"echo hi"}')],
        ],
        ("call_tvSplit01", "run_shell_command", {"command": "echo hi"}),
    ),
    "foreign name split": (
        [
            [tcd(0, id="call_tvSplit02", type="function", name="Ba", arguments="")],
            [tcd(0, name="sh")],
            [tcd(0, arguments='{"command":')],
            [tcd(0, arguments='"echo hi"}')],
        ],
        ("call_tvSplit02", "run_shell_command", {"command": "echo hi"}),
    ),
    "foreign name repeated (Fireworks)": (
        [
            [tcd(0, id="chatcmpl-tool-aa62", type="function", name="Bash", arguments="")],
            [tcd(0, id="chatcmpl-tool-aa62", type="function", name="Bash", arguments='{"command":"ec')],
            [tcd(0, id="chatcmpl-tool-aa62", type="function", name="Bash", arguments='ho hi"}')],
        ],
        ("chatcmpl-tool-aa62", "run_shell_command", {"command": "echo hi"}),
    ),
    "declared name repeated (Fireworks)": (
        [
            [tcd(0, id="chatcmpl-tool-bb73", type="function", name="read_file", arguments="")],
            [tcd(0, id="chatcmpl-tool-bb73", type="function", name="read_file", arguments='{"file_path":')],
            [tcd(0, id="chatcmpl-tool-bb73", type="function", name="read_file", arguments='"/x"}')],
        ],
        ("chatcmpl-tool-bb73", "read_file", {"file_path": "/x"}),
    ),
    "empty name after the first": (
        [
            [tcd(0, id="call_tvEmpty01", type="function", name="Bash", arguments="")],
            [tcd(0, name="", arguments='{"command":')],
            [tcd(0, name="", arguments='"echo hi"}')],
        ],
        ("call_tvEmpty01", "run_shell_command", {"command": "echo hi"}),
    ),
}


@needs_addon
@pytest.mark.parametrize("transport", STREAM_TRANSPORTS)
def test_chat_stream_name_shapes_are_assembled(fake_upstream, proxy, transport):
    """Split, repeated and ``""`` names: the SDK's accumulated call is the declared one, once."""
    px = proxy()
    client = openai_client(px.url)
    cases = []
    for label, (chunks, expected) in NAME_SHAPES.items():
        for size in CHUNK_SIZES:
            fake_upstream.enqueue(body=chat_stream(chunks), headers=SSE_HEADERS, chunk_size=size)
            got = ask_chat(client, transport, tools=CHAT_TOOLS)
            want_id, want_name, want_args = expected
            assert len(got.calls) == 1, (label, size, got.calls)
            call = got.calls[0]
            assert (call["id"], call["name"]) == (want_id, want_name), (label, size, call)
            assert json.loads(call["arguments"]) == want_args, (label, size, call)
            assert got.text == CHAT_TEXT and got.finish_reason == "tool_calls", (label, size)
            cases.append(label)
    flows = flows_on(px.flows(), "/chat/completions")
    assert len(flows) == len(cases)
    for flow, label in zip(flows, cases):
        md = record_of(flow, "openai_chat")
        assert len(md["decisions"]) == 1, (label, md["decisions"])
        assert md["decisions"][0]["target"] == NAME_SHAPES[label][1][1], (label, md["decisions"])


@needs_addon
def test_chat_stream_repaired_call_has_one_name_and_one_id_on_the_wire(fake_upstream, proxy):
    """What the client receives for a repeated/split name: id, type and the full name once, in
    the first delta of the call; later deltas carry only arguments. Everything before the
    calls, the usage-only chunk and ``[DONE]`` are byte-identical."""
    px = proxy()
    client = openai_client(px.url)
    for label in ("foreign name split", "foreign name repeated (Fireworks)", "declared name repeated (Fireworks)"):
        chunks, (want_id, want_name, want_args) = NAME_SHAPES[label]
        body = chat_stream(chunks)
        for size in CHUNK_SIZES:
            fake_upstream.enqueue(body=body, headers=SSE_HEADERS, chunk_size=size)
            status, got = raw_chat(client, stream=True, tools=CHAT_TOOLS)
            assert status == 200
            up, down = sse_blocks(body), sse_blocks(got)
            assert down[:2] == up[:2], (label, size, "role/text chunks must be byte-identical")
            assert down[-3:] == up[-3:], (label, size, "finish, usage-only chunk and [DONE] must be byte-identical")
            entries = []
            for _, data in parse_sse(got)[2:-3]:
                for choice in json.loads(data)["choices"]:
                    entries += choice["delta"].get("tool_calls") or []
            assert entries, (label, size)
            first, rest = entries[0], entries[1:]
            assert first["id"] == want_id and first["type"] == "function", (label, size, first)
            assert first["function"]["name"] == want_name, (label, size, first)
            for entry in rest:
                assert "id" not in entry and "name" not in entry.get("function", {}), (label, size, entry)
                assert entry["index"] == 0
            args = "".join(e.get("function", {}).get("arguments") or "" for e in entries)
            assert json.loads(args) == want_args, (label, size, args)
    assert_no_addon_errors(px)


@needs_addon
@pytest.mark.parametrize("transport", CHAT_TRANSPORTS)
def test_chat_missing_and_empty_ids_get_stable_tc_ids(fake_upstream, proxy, transport):
    """Two calls, one without ``id`` and one with ``"id": ""``: each gets ``tc_`` + 24 hex,
    derived from the flow id and the call's position, distinct per call."""
    px = proxy()
    client = openai_client(px.url)
    stream_calls = [
        [tcd(0, type="function", name="Bash", arguments="")],
        [tcd(0, arguments=ECHO_HI)],
        [tcd(1, id="", type="function", name="read_file", arguments="")],
        [tcd(1, arguments='{"file_path":"/x"}')],
    ]
    json_calls = [json_call("Bash", ECHO_HI, None), json_call("read_file", '{"file_path":"/x"}', "")]
    got_ids = []
    for size in CHUNK_SIZES:
        fake_upstream.enqueue(**chat_reply(transport, stream_calls, json_calls, size))
        got = ask_chat(client, transport, tools=CHAT_TOOLS)
        assert [c["name"] for c in got.calls] == ["run_shell_command", "read_file"], (size, got.calls)
        assert [json.loads(c["arguments"]) for c in got.calls] == [{"command": "echo hi"}, {"file_path": "/x"}]
        ids = [c["id"] for c in got.calls]
        assert all(isinstance(i, str) and TC_ID.match(i) for i in ids), (size, ids)
        assert ids[0] != ids[1], ids
        got_ids.append(ids)
    assert len({i for ids in got_ids for i in ids}) == 2 * len(CHUNK_SIZES), "ids must differ between flows"
    flows = flows_on(px.flows(), "/chat/completions")
    assert len(flows) == len(CHUNK_SIZES)
    for flow, ids in zip(flows, got_ids):
        assert ids == [stable_call_id(flow.id, 0), stable_call_id(flow.id, 1)], (flow.id, ids)
        md = record_of(flow, "openai_chat")
        assert [d["name"] for d in md["decisions"]] == ["Bash", "read_file"]


@needs_addon
@pytest.mark.parametrize("transport", CHAT_TRANSPORTS)
def test_chat_arguments_object_becomes_string(fake_upstream, proxy, transport):
    """BR-21 (llama-server): ``arguments`` as a JSON object reaches the client as a string."""
    px = proxy()
    client = openai_client(px.url)
    stream_calls = [
        [tcd(0, id="call_tvObj01", type="function", name="read_file", arguments={"file_path": "/x"})],
        [tcd(1, id="call_tvObj02", type="function", name="Bash", arguments={"command": "echo hi"})],
    ]
    json_calls = [
        json_call("read_file", {"file_path": "/x"}, "call_tvObj01"),
        json_call("Bash", {"command": "echo hi"}, "call_tvObj02"),
    ]
    for size in CHUNK_SIZES:
        fake_upstream.enqueue(**chat_reply(transport, stream_calls, json_calls, size))
        got = ask_chat(client, transport, tools=CHAT_TOOLS)
        assert [(c["id"], c["name"]) for c in got.calls] == [
            ("call_tvObj01", "read_file"),
            ("call_tvObj02", "run_shell_command"),
        ], got.calls
        for c in got.calls:
            assert isinstance(c["arguments"], str), (size, c)
        assert [json.loads(c["arguments"]) for c in got.calls] == [{"file_path": "/x"}, {"command": "echo hi"}]


@needs_addon
def test_chat_usage_chunk_and_done_pass_unchanged(fake_upstream, proxy):
    """A repaired stream keeps the usage-only chunk and ``[DONE]`` verbatim; the SDK sees the usage."""
    px = proxy()
    client = openai_client(px.url)
    body = chat_stream(conformant_call(0, "Bash", ECHO_HI, "call_tvBash01"))
    for size in CHUNK_SIZES:
        fake_upstream.enqueue(body=body, headers=SSE_HEADERS, chunk_size=size)
        status, got = raw_chat(client, stream=True, tools=CHAT_TOOLS)
        assert status == 200 and got.endswith(USAGE_CHUNK + DONE), (size, got[-400:])
        assert b'"run_shell_command"' in got and b'"Bash"' not in got, size
        fake_upstream.enqueue(body=body, headers=SSE_HEADERS, chunk_size=size)
        streamed = ask_chat(client, "create_stream", tools=CHAT_TOOLS)
        assert streamed.chunks[-1]["choices"] == [] and streamed.usage["total_tokens"] == 30, streamed.chunks[-1]
        assert streamed.calls[0]["name"] == "run_shell_command"


@needs_addon
@pytest.mark.parametrize("transport", CHAT_TRANSPORTS)
def test_chat_ambiguous_and_unknown_names_are_left(fake_upstream, proxy, transport):
    px = proxy()
    client = openai_client(px.url)
    cases = [
        # two POSIX shells: not guessing (PowerShell is never a candidate for a POSIX name)
        (
            "Bash",
            [
                RUN_SHELL,
                fn_tool("execute_command", "Runs a CLI command.", {"command": {"type": "string"}}, ["command"]),
                POWERSHELL,
                READ_FILE,
            ],
            ECHO_HI,
        ),
        ("frobnicate", CHAT_TOOLS, '{"x":1}'),  # no capability
        ("mcp__github__create_issue", CHAT_TOOLS, '{"owner":"acme","repo":"widgets","title":"t"}'),
    ]
    for name, tools, args in cases:
        for size in (1, 64):
            fake_upstream.enqueue(
                **chat_reply(
                    transport,
                    conformant_call(0, name, args, "call_tvLeft01"),
                    [json_call(name, args, "call_tvLeft01")],
                    size,
                )
            )
            got = ask_chat(client, transport, tools=tools)
            assert got.calls == [{"id": "call_tvLeft01", "name": name, "arguments": args}], (name, size, got.calls)
    flows = flows_on(px.flows(), "/chat/completions")
    assert len(flows) == 2 * len(cases)
    for i, flow in enumerate(flows):
        name = cases[i // 2][0]
        md = record_of(flow, "openai_chat")
        (decision,) = decisions_named(md, name)
        assert decision["action"] == "leave", decision
        assert not md.get("response_changed"), md


@needs_addon
def test_chat_conformant_answers_are_byte_identical(fake_upstream, proxy):
    """A declared name in a conformant answer (and a name left alone) reaches the client
    byte-identical, JSON and SSE, whatever the chunking."""
    px = proxy()
    client = openai_client(px.url)
    streams = {
        "declared": chat_stream(
            conformant_call(0, "run_shell_command", '{"command":"echo hi","description":"Say hi"}', "call_tvDecl01")
            + conformant_call(1, "read_file", '{"file_path":"/x"}', "call_tvDecl02")
        ),
        "unknown": chat_stream(conformant_call(0, "frobnicate", '{"x":1}', "call_tvUnk01")),
        "text only": chat_stream([], usage=False).replace(b'"finish_reason":"tool_calls"', b'"finish_reason":"stop"'),
    }
    bodies = {
        "declared": chat_json(
            [
                json_call("run_shell_command", ECHO_HI, "call_tvDecl01"),
                json_call("read_file", '{"file_path":"/x"}', "call_tvDecl02"),
            ]
        ),
        "unknown": chat_json([json_call("frobnicate", '{"x":1}', "call_tvUnk01")]),
    }
    n = 0
    for stream, table in ((True, streams), (False, bodies)):
        for label, body in table.items():
            for size in (0,) + CHUNK_SIZES:
                fake_upstream.enqueue(body=body, headers=SSE_HEADERS if stream else JSON_HEADERS, chunk_size=size)
                status, got = raw_chat(client, stream=stream, tools=CHAT_TOOLS)
                assert status == 200 and got == body, f"stream={stream} {label} chunk={size}: bytes changed"
                n += 1
    flows = flows_on(px.flows(), "/chat/completions")
    assert len(flows) == n
    for flow in flows:
        md = record_of(flow, "openai_chat")
        assert not [d for d in md["decisions"] if d["action"] in ("rename", "fit")], md["decisions"]
    assert_no_addon_errors(px)


@needs_addon
def test_chat_mode_off_passes_foreign_name(fake_upstream, proxy):
    px = proxy(options={"toolvocab_mode": "off"})
    client = openai_client(px.url)
    stream_body = chat_stream(conformant_call(0, "Bash", ECHO_HI, "call_tvBash01"))
    json_body = chat_json([json_call("Bash", ECHO_HI, "call_tvBash01")])
    for stream, body, headers in ((True, stream_body, SSE_HEADERS), (False, json_body, JSON_HEADERS)):
        for size in CHUNK_SIZES:
            before = len(fake_upstream.requests())
            fake_upstream.enqueue(body=body, headers=headers, chunk_size=size)
            status, got = raw_chat(client, stream=stream, tools=CHAT_TOOLS)
            assert status == 200 and got == body, (stream, size)
            record = one_request(fake_upstream, before)
            assert record["body"]["messages"] == CHAT_PROMPT and record["body"]["tools"] == CHAT_TOOLS
    for transport in CHAT_TRANSPORTS:
        fake_upstream.enqueue(
            **chat_reply(
                transport,
                conformant_call(0, "Bash", ECHO_HI, "call_tvBash01"),
                [json_call("Bash", ECHO_HI, "call_tvBash01")],
                7,
            )
        )
        got = ask_chat(client, transport, tools=CHAT_TOOLS)
        assert got.calls == [{"id": "call_tvBash01", "name": "Bash", "arguments": ECHO_HI}], transport
    for flow in flows_on(px.flows(), "/chat/completions"):
        md = flow.metadata.get("toolvocab")
        assert md is None or not [d for d in md.get("decisions") or [] if d.get("action") in ("rename", "fit")], md
        assert not flow.marked


@needs_addon
def test_chat_non_json_bodies_pass_byte_identical(fake_upstream, proxy):
    px = proxy()
    headers = {"authorization": "Bearer sk-test", "content-type": "application/json"}
    odd_request = b'{"model": "gpt-test-model", "tools": [{"type": "function", "function": {"name": "Bash"}}], oops'
    odd_reply = (
        b'{"error": {"message": "We could not parse the JSON body of your request.", "type": "invalid_request_error"}}'
    )
    valid_request = json.dumps({"model": MODEL, "messages": CHAT_PROMPT, "tools": CHAT_TOOLS}, indent=1).encode()
    stream_request = json.dumps({"model": MODEL, "messages": CHAT_PROMPT, "tools": CHAT_TOOLS, "stream": True}).encode()
    garbage = b"upstream says: Bash is not JSON \xe2\x80\x94 <html>502</html>\n"
    half_json = b'{"id":"chatcmpl-x","choices":[{"index":0,"message":{"tool_calls":[{"function":{"name":"Bash"'
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        fake_upstream.enqueue(odd_reply, status=400, headers=JSON_HEADERS)
        r = http.post("/v1/chat/completions", content=odd_request, headers=headers)
        assert r.status_code == 400 and r.content == odd_reply
        for request, reply, ctype in (
            (valid_request, garbage, "text/plain"),
            (valid_request, half_json, "application/json"),
            (stream_request, garbage, "text/event-stream"),
            (stream_request, half_json, "application/json"),
        ):
            for size in (0, 7):
                fake_upstream.enqueue(reply, headers={"Content-Type": ctype}, chunk_size=size)
                r = http.post("/v1/chat/completions", content=request, headers=headers)
                assert r.status_code == 200 and r.content == reply, (request[-20:], reply[:20], size)
    records = fake_upstream.requests()
    assert base64.b64decode(records[0]["body_b64"]) == odd_request
    assert_no_addon_errors(px)


# ========================================================================== Responses
EXEC = {
    "type": "function",
    "name": "exec_command",
    "description": "Runs a command in a PTY and returns its output.",
    "strict": True,
    "parameters": {
        "type": "object",
        "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"}},
        "required": ["cmd"],
        "additionalProperties": False,
    },
}
UPDATE_PLAN = {
    "type": "function",
    "name": "update_plan",
    "description": "Updates the task plan.",
    "strict": False,
    "parameters": {
        "type": "object",
        "properties": {"plan": {"type": "array", "items": {"type": "object"}}},
        "required": ["plan"],
        "additionalProperties": False,
    },
}
APPLY_PATCH = {
    "type": "custom",
    "name": "apply_patch",
    "description": "Use the `apply_patch` tool to edit files. This is a FREEFORM tool, so do not wrap the patch in JSON.",
    "format": {
        "type": "grammar",
        "syntax": "lark",
        "definition": 'start: begin_patch hunk+ end_patch\nbegin_patch: "*** Begin Patch" LF\n',
    },
}
GITHUB_NS = {
    "type": "namespace",
    "name": "mcp__github__",
    "description": "Tools from the github MCP server.",
    "tools": [
        {
            "type": "function",
            "name": "create_issue",
            "description": "Create a new issue",
            "strict": False,
            "parameters": {
                "type": "object",
                "properties": {"owner": {"type": "string"}, "repo": {"type": "string"}, "title": {"type": "string"}},
                "required": ["owner", "repo", "title"],
            },
        }
    ],
}
WEB_SEARCH = {"type": "web_search"}
RESP_TOOLS = [EXEC, UPDATE_PLAN, APPLY_PATCH, GITHUB_NS, WEB_SEARCH]
INSTRUCTIONS = "You are Codex, based on GPT-5. You are running as a coding agent in an offline test."
RESP_INPUT = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Say hi from the shell."}]}
]
RESP_TEXT = "Running it now \u2014 caf\u00e9."
SHELL_ARGV = json.dumps({"command": ["bash", "-lc", "echo hi"]})
ISSUE_ARGS = '{"owner":"acme","repo":"widgets","title":"Fix retry backoff"}'
PATCH = "*** Begin Patch\n*** Update File: CHANGELOG.md\n@@\n+- fix retry backoff\n*** End Patch\n"
RESP_USAGE = {
    "input_tokens": 900,
    "input_tokens_details": {"cached_tokens": 0},
    "output_tokens": 12,
    "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 912,
}
RESP_TRANSPORTS = ("json", "create_stream", "stream_helper")


def msg_item(text: str, item_id: str = "msg_tv01") -> dict:
    return {
        "id": item_id,
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
    }


def fc_item(name: str, args: str, call_id: str, item_id: str, namespace: str | None = None) -> dict:
    item = {"id": item_id, "type": "function_call", "status": "completed", "arguments": args, "call_id": call_id}
    if namespace is not None:
        item["namespace"] = namespace
    item["name"] = name
    return item


def custom_item(name: str, text: str, call_id: str, item_id: str) -> dict:
    return {
        "id": item_id,
        "type": "custom_tool_call",
        "status": "completed",
        "call_id": call_id,
        "name": name,
        "input": text,
    }


def response_obj(status: str, output: list[dict], *, tools: list[dict] = RESP_TOOLS, usage: Any = None) -> dict:
    return {
        "id": "resp_tv01",
        "object": "response",
        "created_at": 1760000100,
        "status": status,
        "background": False,
        "error": None,
        "incomplete_details": None,
        "instructions": INSTRUCTIONS,
        "max_output_tokens": None,
        "model": MODEL,
        "output": output,
        "parallel_tool_calls": False,
        "previous_response_id": None,
        "reasoning": {"effort": "medium", "summary": "auto"},
        "store": False,
        "text": {"format": {"type": "text"}, "verbosity": "medium"},
        "tool_choice": "auto",
        "tools": tools,
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "user": None,
        "metadata": {},
    }


def responses_events(output: list[dict], *, tools: list[dict] = RESP_TOOLS) -> list[dict]:
    """The event sequence the Responses API streams for ``output`` (final items)."""
    evs: list[dict] = [
        {"type": "response.created", "response": response_obj("in_progress", [], tools=tools)},
        {"type": "response.in_progress", "response": response_obj("in_progress", [], tools=tools)},
    ]
    for i, item in enumerate(output):
        where = {"item_id": item["id"], "output_index": i}
        if item["type"] == "message":
            evs.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**item, "status": "in_progress", "content": []},
                }
            )
            part = item["content"][0]
            evs.append(
                {"type": "response.content_part.added", **where, "content_index": 0, "part": {**part, "text": ""}}
            )
            half = len(part["text"]) // 2
            for piece in (part["text"][:half], part["text"][half:]):
                evs.append(
                    {"type": "response.output_text.delta", **where, "content_index": 0, "delta": piece, "logprobs": []}
                )
            evs.append(
                {"type": "response.output_text.done", **where, "content_index": 0, "text": part["text"], "logprobs": []}
            )
            evs.append({"type": "response.content_part.done", **where, "content_index": 0, "part": part})
        elif item["type"] == "function_call":
            evs.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**item, "status": "in_progress", "arguments": ""},
                }
            )
            for piece in split3(item["arguments"]):
                evs.append({"type": "response.function_call_arguments.delta", **where, "delta": piece})
            evs.append({"type": "response.function_call_arguments.done", **where, "arguments": item["arguments"]})
        elif item["type"] == "custom_tool_call":
            evs.append(
                {
                    "type": "response.output_item.added",
                    "output_index": i,
                    "item": {**item, "status": "in_progress", "input": ""},
                }
            )
            for piece in split3(item["input"]):
                evs.append({"type": "response.custom_tool_call_input.delta", **where, "delta": piece})
            evs.append({"type": "response.custom_tool_call_input.done", **where, "input": item["input"]})
        evs.append({"type": "response.output_item.done", "output_index": i, "item": item})
    evs.append(
        {"type": "response.completed", "response": response_obj("completed", output, tools=tools, usage=RESP_USAGE)}
    )
    return [
        {"type": e["type"], "sequence_number": n, **{k: v for k, v in e.items() if k != "type"}}
        for n, e in enumerate(evs)
    ]


def responses_sse(output: list[dict], **kw: Any) -> bytes:
    return b"".join(
        b"event: " + e["type"].encode() + b"\ndata: " + dumps(e) + b"\n\n" for e in responses_events(output, **kw)
    )


def responses_json(output: list[dict]) -> bytes:
    return json.dumps(response_obj("completed", output, usage=RESP_USAGE), indent=2).encode()


def resp_reply(transport: str, output: list[dict], size: int) -> dict:
    if transport == "json":
        return dict(body=responses_json(output), headers=JSON_HEADERS, chunk_size=size)
    return dict(body=responses_sse(output), headers=SSE_HEADERS, chunk_size=size)


def norm_item(item: Any) -> dict:
    """The fields of an output item that matter here (from a model or a dict)."""
    d = item if isinstance(item, dict) else item.to_dict(warnings=False)
    if d.get("type") == "message":
        return {"type": "message", "text": "".join(p.get("text", "") for p in d.get("content") or [])}
    out = {k: d.get(k) for k in ("type", "namespace", "name", "call_id", "arguments", "input") if d.get(k) is not None}
    if "arguments" in out:
        out["arguments"] = json.loads(out["arguments"])
    return out


@dataclass
class RespGot:
    final: list[dict]  # output of the final response (json: the Response; streams: completed / helper's final)
    added: list[dict] = field(default_factory=list)  # output_item.added items
    done: list[dict] = field(default_factory=list)  # output_item.done items
    accumulated: dict[str, str] = field(default_factory=dict)  # item id -> added.arguments + deltas
    completed: list[dict] = field(default_factory=list)  # response.completed.response.output
    parsed_arguments: dict[str, Any] = field(default_factory=dict)  # helper: call name -> parsed_arguments
    event_types: list[str] = field(default_factory=list)


def ask_responses(
    client: openai.OpenAI, transport: str, *, tools: list[dict] = RESP_TOOLS, input: list[dict] = RESP_INPUT
) -> RespGot:
    kwargs = dict(model=MODEL, instructions=INSTRUCTIONS, input=input, tools=tools)
    if transport == "json":
        resp = client.responses.create(**kwargs)
        return RespGot([norm_item(o) for o in resp.output])
    got = RespGot([])
    if transport == "create_stream":
        events: Iterable[Any] = client.responses.create(stream=True, **kwargs)
        for ev in events:
            _collect_event(got, ev.to_dict(warnings=False))
        got.final = got.completed
        return got
    if transport == "stream_helper":
        with client.responses.stream(**kwargs) as stream:
            for ev in stream:
                _collect_event(got, ev.to_dict(warnings=False))
            final = stream.get_final_response()
        got.final = [norm_item(o) for o in final.output]
        for o in final.output:
            if o.type == "function_call":
                got.parsed_arguments[o.name] = getattr(o, "parsed_arguments", None)
        return got
    raise ValueError(transport)


def _collect_event(got: RespGot, ev: dict) -> None:
    kind = ev["type"]
    got.event_types.append(kind)
    if kind == "response.output_item.added":
        got.added.append({k: v for k, v in ev["item"].items() if k in ("type", "namespace", "name", "call_id")})
        if ev["item"]["type"] == "function_call":
            got.accumulated[ev["item"]["id"]] = ev["item"].get("arguments") or ""
    elif kind == "response.function_call_arguments.delta":
        got.accumulated[ev["item_id"]] += ev["delta"]
    elif kind == "response.output_item.done":
        got.done.append(norm_item(ev["item"]))
    elif kind == "response.completed":
        got.completed = [norm_item(o) for o in ev["response"]["output"]]


def raw_responses(client: openai.OpenAI, *, stream: bool, tools: list[dict] = RESP_TOOLS) -> tuple[int, bytes]:
    kwargs = dict(model=MODEL, instructions=INSTRUCTIONS, input=RESP_INPUT, tools=tools)
    if stream:
        with client.responses.with_streaming_response.create(stream=True, **kwargs) as resp:
            return resp.status_code, b"".join(resp.iter_bytes())
    resp = client.responses.with_raw_response.create(**kwargs)
    return resp.status_code, resp.http_response.content


def check_responses_request(record: dict, tools: list[dict] = RESP_TOOLS, md: dict | None = None) -> None:
    body = record["body"]
    assert isinstance(body, dict), record
    assert record["path"] == "/v1/responses", record["path"]
    assert body["tools"] == tools, "declared tools must reach the upstream unchanged"
    assert body["input"] == RESP_INPUT
    sentence = (md or {}).get("prompt_sentence")
    assert body["instructions"] == (INSTRUCTIONS + "\n\n" + sentence if sentence else INSTRUCTIONS), body[
        "instructions"
    ]


SHELL_OUTPUT = [msg_item(RESP_TEXT), fc_item("shell", SHELL_ARGV, "call_tvShell01", "fc_tvShell01")]
WANT_EXEC = {
    "type": "function_call",
    "name": "exec_command",
    "call_id": "call_tvShell01",
    "arguments": {"cmd": "echo hi"},
}
MCP_OUTPUT = [
    fc_item("mcp__github__create_issue", ISSUE_ARGS, "call_tvMcp01", "fc_tvMcp01"),
    custom_item("apply_patch", PATCH, "call_tvPatch01", "ctc_tvPatch01"),
]
WANT_MCP = [
    {
        "type": "function_call",
        "namespace": "mcp__github__",
        "name": "create_issue",
        "call_id": "call_tvMcp01",
        "arguments": json.loads(ISSUE_ARGS),
    },
    {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_tvPatch01", "input": PATCH},
]


@pytest.mark.parametrize("transport", RESP_TRANSPORTS)
def test_responses_harness_plain_mitmdump_passes_foreign_name(fake_upstream, proxy, transport):
    px = proxy(script=None)
    client = openai_client(px.url)
    fake_upstream.enqueue(**resp_reply(transport, SHELL_OUTPUT, 7))
    got = ask_responses(client, transport)
    assert got.final == [
        {"type": "message", "text": RESP_TEXT},
        {"type": "function_call", "name": "shell", "call_id": "call_tvShell01", "arguments": json.loads(SHELL_ARGV)},
    ]


@needs_addon
@pytest.mark.parametrize("transport", RESP_TRANSPORTS)
def test_responses_shell_argv_becomes_exec_command(fake_upstream, proxy, transport):
    px = proxy()
    client = openai_client(px.url)
    records = []
    for size in CHUNK_SIZES:
        before = len(fake_upstream.requests())
        fake_upstream.enqueue(**resp_reply(transport, SHELL_OUTPUT, size))
        got = ask_responses(client, transport)
        assert got.final == [{"type": "message", "text": RESP_TEXT}, WANT_EXEC], (size, got.final)
        if transport != "json":
            assert got.done == got.final, (size, got.done)
            assert got.added[1]["name"] == "exec_command" and "namespace" not in got.added[1], got.added
            assert json.loads(got.accumulated["fc_tvShell01"]) == {"cmd": "echo hi"}, got.accumulated
            assert got.event_types.count("response.completed") == 1
        if transport == "create_stream":
            assert got.completed == got.final
        if transport == "stream_helper":
            assert got.parsed_arguments == {"exec_command": {"cmd": "echo hi"}}, got.parsed_arguments
        records.append(one_request(fake_upstream, before))
    flows = flows_on(px.flows(), "/responses")
    assert len(flows) == len(CHUNK_SIZES)
    for flow, record in zip(flows, records):
        md = record_of(flow, "openai_responses")
        assert "exec_command" in md["declared"] and "mcp__github__create_issue" in md["declared"], md["declared"]
        (decision,) = decisions_named(md, "shell")
        assert decision["target"] == "exec_command" and decision["action"] in ("rename", "fit"), decision
        assert md["response_changed"] is True
        assert_changed_flow(flow)
        check_responses_request(record, md=md)


@needs_addon
@pytest.mark.parametrize("transport", RESP_TRANSPORTS)
def test_responses_flat_mcp_name_gets_its_namespace_and_custom_call_passes(fake_upstream, proxy, transport):
    px = proxy()
    client = openai_client(px.url)
    for size in CHUNK_SIZES:
        fake_upstream.enqueue(**resp_reply(transport, MCP_OUTPUT, size))
        got = ask_responses(client, transport)
        assert got.final == WANT_MCP, (size, got.final)
        if transport != "json":
            assert got.done == WANT_MCP, (size, got.done)
            assert got.added[0]["namespace"] == "mcp__github__" and got.added[0]["name"] == "create_issue", got.added
            assert json.loads(got.accumulated["fc_tvMcp01"]) == json.loads(ISSUE_ARGS)
    flows = flows_on(px.flows(), "/responses")
    assert len(flows) == len(CHUNK_SIZES)
    for flow in flows:
        md = record_of(flow, "openai_responses")
        (decision,) = decisions_named(md, "mcp__github__create_issue")
        assert decision["action"] in ("rename", "fit") and decision["target"] == "create_issue", decision
        assert decision.get("target_namespace") == "mcp__github__", decision
        (patch,) = decisions_named(md, "apply_patch")
        assert patch["action"] == "keep", patch


def sse_events(data: bytes) -> list[dict]:
    return [json.loads(d) for _, d in parse_sse(data)]


@needs_addon
def test_responses_repair_changes_only_the_call(fake_upstream, proxy):
    """Raw bytes of a repaired Responses answer. Stream: every event outside the renamed call
    (the ``tools`` echo in ``response.created`` included) is byte-identical; in the call's
    events only the name and arguments differ; ``response.completed`` differs only in
    ``output``. JSON: only ``output`` differs, the ``tools`` echo is unchanged."""
    px = proxy()
    client = openai_client(px.url)
    patch_item = custom_item("apply_patch", PATCH, "call_tvPatch01", "ctc_tvPatch01")
    up_json = responses_json(SHELL_OUTPUT + [patch_item])
    for size in CHUNK_SIZES:
        fake_upstream.enqueue(body=up_json, headers=JSON_HEADERS, chunk_size=size)
        status, got = raw_responses(client, stream=False)
        assert status == 200
        up, down = json.loads(up_json), json.loads(got)
        assert {k: v for k, v in down.items() if k != "output"} == {k: v for k, v in up.items() if k != "output"}
        assert down["tools"] == RESP_TOOLS
        assert down["output"][0] == up["output"][0] and down["output"][2] == up["output"][2], size
        assert norm_item(down["output"][1]) == WANT_EXEC, down["output"][1]
        assert {k: v for k, v in down["output"][1].items() if k not in ("name", "arguments")} == {
            k: v for k, v in up["output"][1].items() if k not in ("name", "arguments")
        }
    body = responses_sse(SHELL_OUTPUT + [patch_item])
    up_blocks, up_events = sse_blocks(body), sse_events(body)
    call_seqs = {
        e["sequence_number"]
        for e in up_events
        if e.get("item_id") == "fc_tvShell01" or (e.get("item") or {}).get("id") == "fc_tvShell01"
    }
    for size in CHUNK_SIZES:
        fake_upstream.enqueue(body=body, headers=SSE_HEADERS, chunk_size=size)
        status, got = raw_responses(client, stream=True)
        assert status == 200
        down_blocks, down_events = sse_blocks(got), sse_events(got)
        assert [e["type"] for e in down_events] == [e["type"] for e in up_events], size
        assert [e["sequence_number"] for e in down_events] == list(range(len(up_events))), size
        for up_raw, down_raw, up, down in zip(up_blocks, down_blocks, up_events, down_events):
            seq = up["sequence_number"]
            if seq in call_seqs:
                if "item" in up:
                    assert down["item"]["name"] == "exec_command", down
                    assert {k: v for k, v in down["item"].items() if k not in ("name", "arguments")} == {
                        k: v for k, v in up["item"].items() if k not in ("name", "arguments")
                    }, (up, down)
                continue
            if up["type"] == "response.completed":
                assert down["response"]["tools"] == RESP_TOOLS, "the tools echo must be unchanged"
                assert {k: v for k, v in down["response"].items() if k != "output"} == {
                    k: v for k, v in up["response"].items() if k != "output"
                }
                assert [norm_item(o) for o in down["response"]["output"]] == [
                    {"type": "message", "text": RESP_TEXT},
                    WANT_EXEC,
                    {"type": "custom_tool_call", "name": "apply_patch", "call_id": "call_tvPatch01", "input": PATCH},
                ]
                continue
            assert down_raw == up_raw, f"chunk {size}: event {seq} ({up['type']}) changed"
    assert_no_addon_errors(px)


@needs_addon
def test_responses_conformant_answers_are_byte_identical(fake_upstream, proxy):
    px = proxy()
    client = openai_client(px.url)
    output = [
        msg_item(RESP_TEXT),
        fc_item("exec_command", '{"cmd":"echo hi"}', "call_tvExec01", "fc_tvExec01"),
        fc_item("create_issue", ISSUE_ARGS, "call_tvMcp01", "fc_tvMcp01", namespace="mcp__github__"),
        custom_item("apply_patch", PATCH, "call_tvPatch01", "ctc_tvPatch01"),
    ]
    unknown = [fc_item("frobnicate", '{"x":1}', "call_tvUnk01", "fc_tvUnk01")]
    n = 0
    for stream in (True, False):
        for out in (output, unknown):
            body = responses_sse(out) if stream else responses_json(out)
            for size in (0,) + CHUNK_SIZES:
                fake_upstream.enqueue(body=body, headers=SSE_HEADERS if stream else JSON_HEADERS, chunk_size=size)
                status, got = raw_responses(client, stream=stream)
                assert status == 200 and got == body, f"stream={stream} {out[-1]['name']} chunk={size}: bytes changed"
                n += 1
    flows = flows_on(px.flows(), "/responses")
    assert len(flows) == n
    for flow in flows:
        md = record_of(flow, "openai_responses")
        assert not [d for d in md["decisions"] if d["action"] in ("rename", "fit")], md["decisions"]
    assert_no_addon_errors(px)


@needs_addon
def test_responses_mode_off_passes_foreign_name(fake_upstream, proxy):
    px = proxy(options={"toolvocab_mode": "off"})
    client = openai_client(px.url)
    for stream in (True, False):
        body = responses_sse(SHELL_OUTPUT) if stream else responses_json(SHELL_OUTPUT)
        for size in CHUNK_SIZES:
            before = len(fake_upstream.requests())
            fake_upstream.enqueue(body=body, headers=SSE_HEADERS if stream else JSON_HEADERS, chunk_size=size)
            status, got = raw_responses(client, stream=stream)
            assert status == 200 and got == body, (stream, size)
            check_responses_request(one_request(fake_upstream, before))
    for transport in RESP_TRANSPORTS:
        fake_upstream.enqueue(**resp_reply(transport, SHELL_OUTPUT, 7))
        got = ask_responses(client, transport)
        assert got.final[1]["name"] == "shell", (transport, got.final)
    for flow in flows_on(px.flows(), "/responses"):
        assert not flow.marked


@needs_addon
def test_responses_non_json_bodies_pass_byte_identical(fake_upstream, proxy):
    px = proxy()
    headers = {"authorization": "Bearer sk-test", "content-type": "application/json"}
    odd_request = b'{"model": "gpt-test-model", "input": [], "tools": [{"type": "function", "name": "shell"}], oops'
    odd_reply = (
        b'{"error": {"message": "We could not parse the JSON body of your request.", "type": "invalid_request_error"}}'
    )
    valid = {"model": MODEL, "instructions": INSTRUCTIONS, "input": RESP_INPUT, "tools": RESP_TOOLS}
    garbage = b"upstream says: shell is not JSON \xe2\x80\x94 <html>502</html>\n"
    half_json = b'{"id":"resp_x","output":[{"type":"function_call","name":"shell","arguments":"{}"'
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        fake_upstream.enqueue(odd_reply, status=400, headers=JSON_HEADERS)
        r = http.post("/v1/responses", content=odd_request, headers=headers)
        assert r.status_code == 400 and r.content == odd_reply
        for stream in (False, True):
            request = json.dumps({**valid, "stream": stream}).encode()
            for reply, ctype in (
                (garbage, "text/plain"),
                (half_json, "application/json"),
                (garbage, "text/event-stream"),
            ):
                for size in (0, 7):
                    fake_upstream.enqueue(reply, headers={"Content-Type": ctype}, chunk_size=size)
                    r = http.post("/v1/responses", content=request, headers=headers)
                    assert r.status_code == 200 and r.content == reply, (stream, reply[:20], ctype, size)
    records = fake_upstream.requests()
    assert base64.b64decode(records[0]["body_b64"]) == odd_request
    assert_no_addon_errors(px)


# ============================================================ Responses over WebSocket
class WSUpstream:
    """A tiny Responses-over-WebSocket upstream (Codex's transport), run in threads.

    Every text frame it receives is logged; a ``response.create`` frame is answered with the
    next scripted list of frames (text, one Responses event each), in order. Frames are sent
    exactly as given, so a test can compare them byte for byte with what the client got.
    """

    def __init__(self) -> None:
        from websockets.sync.server import serve

        self.received: list[str] = []
        self.paths: list[str] = []
        self.scripts: list[tuple[list[str], float, bool]] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()
        self._server = serve(self._handler, "127.0.0.1", 0)
        self.port = self._server.socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="ws-upstream", daemon=True)
        self._thread.start()

    def script(self, frames: list[str], delay: float = 0.0, close: bool = False) -> None:
        """Answer the next ``response.create`` with ``frames``, ``delay`` seconds apart; with
        ``close``, close the socket (1000) right after the last."""
        with self._lock:
            self.scripts.append((frames, delay, close))

    def _handler(self, ws: Any) -> None:
        from websockets.exceptions import ConnectionClosed

        self.paths.append(ws.request.path)
        while True:
            try:
                message = ws.recv(timeout=30)
            except (ConnectionClosed, TimeoutError):
                return
            self.received.append(message if isinstance(message, str) else message.decode())
            try:
                kind = json.loads(message).get("type")
            except (ValueError, AttributeError):
                kind = None
            if kind != "response.create":
                continue
            with self._lock:
                frames, delay, close = self.scripts.pop(0) if self.scripts else (None, 0.0, False)
            if frames is None:
                self.errors.append("no script left")
                frames = [
                    json.dumps(
                        {"type": "error", "status_code": 500, "error": {"type": "server_error", "message": "no script"}}
                    )
                ]
            try:
                for i, frame in enumerate(frames):
                    if delay and i:
                        time.sleep(delay)
                    ws.send(frame)
                if close:
                    ws.close(1000, "bye")
                    return
            except ConnectionClosed:
                return

    def stop(self) -> None:
        self._server.shutdown()
        self._thread.join(timeout=10)


@pytest.fixture
def ws_upstream():
    upstream = WSUpstream()
    try:
        yield upstream
    finally:
        upstream.stop()


def ws_frames(output: list[dict]) -> list[str]:
    """One text frame per event, with ``json.dumps``' default spacing (a re-serialised frame shows)."""
    return [json.dumps(e, ensure_ascii=False) for e in responses_events(output)]


def response_create(**overrides: Any) -> dict:
    frame = {
        "type": "response.create",
        "model": MODEL,
        "instructions": INSTRUCTIONS,
        "input": RESP_INPUT,
        "tools": RESP_TOOLS,
        "tool_choice": "auto",
        "parallel_tool_calls": False,
        "store": False,
        "stream": True,
        "include": ["reasoning.encrypted_content"],
    }
    frame.update(overrides)
    return frame


def ws_turn(ws: Any, frame: dict, n: int) -> list[str]:
    """Send one ``response.create`` and read ``n`` frames (each read bounded)."""
    ws.send(json.dumps(frame))
    return [ws.recv(timeout=15) for _ in range(n)]


# A renamed call first, then frames that pass (a message), a custom call and a flat MCP name.
WS_OUTPUT = [
    fc_item("shell", SHELL_ARGV, "call_tvShell01", "fc_tvShell01"),
    msg_item(RESP_TEXT),
    custom_item("apply_patch", PATCH, "call_tvPatch01", "ctc_tvPatch01"),
    fc_item("mcp__github__create_issue", ISSUE_ARGS, "call_tvMcp01", "fc_tvMcp01"),
]
#: How the upstream spaces its frames: all at once (as OpenAI sends ``output_item.done`` and
#: ``response.completed``), or 50 ms apart (as tokens trickle in).
PACING = {"back_to_back": 0.0, "paced": 0.05}


def ws_connect(px: procs.MitmdumpHandle, path: str = "/v1/responses") -> Any:
    from websockets.sync.client import connect

    return connect(
        f"ws://127.0.0.1:{px.port}{path}",
        open_timeout=10,
        close_timeout=5,
        additional_headers={
            "Authorization": "Bearer sk-test",
            "OpenAI-Beta": "responses_websockets=2026-02-06",
            "originator": "codex_cli_rs",
        },
    )


@needs_addon
@pytest.mark.parametrize("declared", [False, True], ids=["repaired", "kept"])
def test_websocket_frames_of_a_call_reach_the_client_before_the_server_closes(ws_upstream, proxy, declared):
    """The server sends a whole turn whose call is held until its end, then closes the socket at
    once. Every frame reaches the client before the close, repaired or as it came: frames a hold
    releases are written before mitmproxy relays the close (``inject.websocket`` sends them from
    tasks of its own, which the close overtook, and the layer then drops them)."""
    from websockets.exceptions import ConnectionClosed

    px = proxy(ws_upstream.url)
    name, args = ("exec_command", '{"cmd":"echo hi"}') if declared else ("shell", SHELL_ARGV)
    sent = ws_frames([fc_item(name, args, "call_tvShell01", "fc_tvShell01")])
    ws_upstream.script(sent, close=True)
    got: list[str] = []
    with ws_connect(px) as ws:
        ws.send(json.dumps(response_create()))
        try:
            while len(got) <= len(sent):
                got.append(ws.recv(timeout=15))
        except ConnectionClosed as closed:
            assert closed.rcvd is not None and closed.rcvd.code == 1000
    assert len(got) == len(sent), [json.loads(g)["type"] for g in got]
    down = [json.loads(g) for g in got]
    assert [d["sequence_number"] for d in down] == list(range(len(sent)))
    names = {d["item"]["name"] for d in down if "item" in d}
    assert names == {"exec_command"}
    if declared:
        assert got == sent  # nothing to repair: every frame as it came


@needs_addon
@pytest.mark.parametrize("pacing", PACING)
def test_websocket_frames_are_repaired_in_order(ws_upstream, proxy, pacing):
    """Codex's transport through mitmdump's reverse mode: a ``response.create`` frame up, one
    event per frame down. The foreign calls are renamed in their frames and in
    ``response.completed``; every other frame arrives byte-identical; the order is kept."""
    px = proxy(ws_upstream.url)
    sent = ws_frames(WS_OUTPUT)
    ws_upstream.script(sent, delay=PACING[pacing])
    with ws_connect(px) as ws:
        got = ws_turn(ws, response_create(), len(sent))
    assert ws_upstream.errors == []
    assert ws_upstream.paths == ["/v1/responses"]

    up, down = [json.loads(f) for f in sent], [json.loads(f) for f in got]
    assert [e["sequence_number"] for e in down] == list(range(len(up))), "frames must keep their order"
    renamed = {"fc_tvShell01": ("exec_command", None), "fc_tvMcp01": ("create_issue", "mcp__github__")}
    deltas: dict[str, str] = {}
    for raw_up, raw_down, u, d in zip(sent, got, up, down):
        item_id = u.get("item_id") or (u.get("item") or {}).get("id")
        if item_id in renamed:
            name, namespace = renamed[item_id]
            if "item" in d:
                assert d["item"]["name"] == name and d["item"].get("namespace") == namespace, d
                assert d["item"]["call_id"] == u["item"]["call_id"]
                if u["type"] == "response.output_item.added":
                    deltas[item_id] = d["item"]["arguments"]
                else:
                    done_args = json.loads(d["item"]["arguments"])
                    assert done_args == ({"cmd": "echo hi"} if namespace is None else json.loads(ISSUE_ARGS)), d
            elif d["type"] == "response.function_call_arguments.delta":
                deltas[item_id] += d["delta"]
            continue
        if u["type"] == "response.completed":
            assert {k: v for k, v in d["response"].items() if k != "output"} == {
                k: v for k, v in u["response"].items() if k != "output"
            }, "the tools echo must be unchanged"
            assert [norm_item(o) for o in d["response"]["output"]] == [
                WANT_EXEC,
                {"type": "message", "text": RESP_TEXT},
                WANT_MCP[1],
                WANT_MCP[0],
            ]
            continue
        assert raw_down == raw_up, f"frame {u['sequence_number']} ({u['type']}) changed"
    assert json.loads(deltas["fc_tvShell01"]) == {"cmd": "echo hi"}, deltas
    assert json.loads(deltas["fc_tvMcp01"]) == json.loads(ISSUE_ARGS), deltas

    # What the upstream received: the client's frame, tools and input unchanged (``instructions``
    # may carry the addon's prompt sentence).
    (first_up,) = [json.loads(m) for m in ws_upstream.received]
    assert first_up["tools"] == RESP_TOOLS and first_up["input"] == RESP_INPUT
    flows = [f for f in px.flows() if getattr(f, "websocket", None) is not None]
    assert len(flows) == 1, flows
    md = record_of(flows[0], "openai_responses")
    (shell,) = decisions_named(md, "shell")
    assert shell["target"] == "exec_command" and shell["action"] in ("rename", "fit"), shell
    (mcp,) = decisions_named(md, "mcp__github__create_issue")
    assert mcp["target"] == "create_issue", mcp
    sentence = md["prompt_sentence"]
    assert first_up["instructions"] == (INSTRUCTIONS + "\n\n" + sentence if sentence else INSTRUCTIONS)
    assert_changed_flow(flows[0])


@needs_addon
@pytest.mark.parametrize("pacing", PACING)
def test_websocket_conformant_turns_pass_byte_identical_in_order(ws_upstream, proxy, pacing):
    """Declared names on a reused socket (Codex sends the next ``response.create`` on the same
    connection): every frame arrives exactly as sent, in order."""
    px = proxy(ws_upstream.url)
    turns = [
        ws_frames([fc_item("exec_command", '{"cmd":"echo hi"}', "call_tvExec01", "fc_tvExec01"), msg_item(RESP_TEXT)]),
        ws_frames(
            [
                custom_item("apply_patch", PATCH, "call_tvPatch01", "ctc_tvPatch01"),
                fc_item("create_issue", ISSUE_ARGS, "call_tvMcp01", "fc_tvMcp01", namespace="mcp__github__"),
            ]
        ),
    ]
    for frames in turns:
        ws_upstream.script(frames, delay=PACING[pacing])
    follow_input = RESP_INPUT + [
        {"type": "function_call", "call_id": "call_tvExec01", "name": "exec_command", "arguments": '{"cmd":"echo hi"}'},
        {"type": "function_call_output", "call_id": "call_tvExec01", "output": "hi\n"},
    ]
    with ws_connect(px) as ws:
        got = [
            ws_turn(ws, response_create(), len(turns[0])),
            ws_turn(ws, response_create(input=follow_input), len(turns[1])),
        ]
    for n, (frames, received) in enumerate(zip(turns, got)):
        assert [json.loads(f)["sequence_number"] for f in received] == list(range(len(frames))), (
            f"turn {n}: frames must keep their order"
        )
        assert received == frames, f"turn {n}: frames changed"
    assert [json.loads(m)["input"] for m in ws_upstream.received] == [RESP_INPUT, follow_input]
    assert_no_addon_errors(px)


@needs_addon
@pytest.mark.filterwarnings("ignore:connect\\(\\) must be used as a context manager:DeprecationWarning")
def test_websocket_with_the_openai_sdk_connection(ws_upstream, proxy):
    """The SDK's own WebSocket client (``client.responses.connect()``) gets the repaired call."""
    px = proxy(ws_upstream.url)
    ws_upstream.script(ws_frames(SHELL_OUTPUT))
    client = openai_client(px.url)
    events = []
    with client.responses.connect() as conn:
        conn.response.create(model=MODEL, instructions=INSTRUCTIONS, input=RESP_INPUT, tools=RESP_TOOLS)
        deadline = time.monotonic() + 20
        for event in conn:
            events.append(event.to_dict(warnings=False))
            if event.type in ("response.completed", "error") or time.monotonic() > deadline:
                break
    types = [e["type"] for e in events]
    assert types[-1] == "response.completed", types
    done = [norm_item(e["item"]) for e in events if e["type"] == "response.output_item.done"]
    assert done == [{"type": "message", "text": RESP_TEXT}, WANT_EXEC], done
    added = [e["item"] for e in events if e["type"] == "response.output_item.added"]
    assert added[1]["name"] == "exec_command"
    args = added[1]["arguments"] + "".join(
        e["delta"] for e in events if e["type"] == "response.function_call_arguments.delta"
    )
    assert json.loads(args) == {"cmd": "echo hi"}
    assert [norm_item(o) for o in events[-1]["response"]["output"]] == [
        {"type": "message", "text": RESP_TEXT},
        WANT_EXEC,
    ]
    assert json.loads(ws_upstream.received[0])["type"] == "response.create"


@needs_addon
def test_websocket_windows_said_in_turn_one_holds_for_an_incremental_turn(ws_upstream, proxy):
    """Codex on Windows: turn 1's full ``response.create`` names PowerShell in its environment
    context; turn 2 on the same socket is incremental (``previous_response_id`` and only the new
    item, codex-rs ``get_incremental_items``) and names nothing. Its foreign shell call reaches the
    client as sent (Codex on Windows runs ``exec_command`` in PowerShell, not bash). The same turn 2
    on a socket that never said Windows is repaired (the control)."""
    px = proxy(ws_upstream.url)
    call = fc_item("run_shell_command", json.dumps({"command": "rm -f **/*.orig"}), "call_tvWin01", "fc_tvWin01")
    sent = ws_frames([call])
    for _ in range(3):
        ws_upstream.script(sent)
    context = "<environment_context>\n  <cwd>C:\\proj</cwd>\n  <shell>powershell</shell>\n</environment_context>"
    full = response_create(
        input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": context}]}, *RESP_INPUT]
    )
    incremental = response_create(
        previous_response_id="resp_1",
        input=[{"type": "function_call_output", "call_id": "call_tvWin01", "output": "unsupported call"}],
    )
    with ws_connect(px) as ws:
        first = ws_turn(ws, full, len(sent))
        second = ws_turn(ws, incremental, len(sent))
    with ws_connect(px) as ws:
        control = ws_turn(ws, incremental, len(sent))
    assert first == sent and second == sent
    done = [json.loads(f)["item"] for f in control if json.loads(f)["type"] == "response.output_item.done"]
    assert [(i["name"], json.loads(i["arguments"])) for i in done] == [
        ("exec_command", {"cmd": "bash -c 'rm -f **/*.orig'"})
    ]
    assert_no_addon_errors(px)


@needs_addon
def test_websocket_mode_off_passes_every_frame(ws_upstream, proxy):
    px = proxy(ws_upstream.url, options={"toolvocab_mode": "off"})
    sent = ws_frames(WS_OUTPUT)
    ws_upstream.script(sent)
    frame = response_create()
    with ws_connect(px) as ws:
        got = ws_turn(ws, frame, len(sent))
        ws.send(b"\x00binary frame, not JSON")  # also passes
    assert got == sent
    assert [json.loads(m) for m in ws_upstream.received[:1]] == [frame]
    assert_no_addon_errors(px)


@needs_addon
def test_websocket_non_json_and_foreign_frames_pass(ws_upstream, proxy):
    """Frames that are not ``response.create`` JSON (and answers on a non-``/responses`` path)
    pass byte-identical."""
    px = proxy(ws_upstream.url)
    sent = ws_frames(SHELL_OUTPUT)
    ws_upstream.script(sent)
    with ws_connect(px, "/v1/realtime") as ws:
        ws.send("not json at all {")
        got = ws_turn(ws, response_create(), len(sent))
    assert got == sent, "a WebSocket on another path is not the Responses transport"
    assert ws_upstream.received[0] == "not json at all {"
    assert json.loads(ws_upstream.received[1]) == response_create()
    assert_no_addon_errors(px)
