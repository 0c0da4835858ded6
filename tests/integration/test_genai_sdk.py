"""The official ``google-genai`` SDK talks to tests/fake_upstream.py through a real mitmdump.

The fake answers with exact bytes written here (``enqueue``), in transport chunks of 1, 7 and
64 bytes. The SDK calls ``…/v1beta/models/{model}:generateContent`` and, for streams,
``:streamGenerateContent?alt=sse``; the bare JSON-array stream (no ``alt``) is requested with
httpx directly, since the SDK never asks for it.

Each case checks what the client received, what the upstream received (the fake's request log)
and, where it matters, the record the addon kept in ``flow.metadata["toolvocab"]``.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import types

import procs
from sdk import assert_no_addon_errors
from sdk import decisions_named
from sdk import genai_client
from sdk import one_request
from sdk import post_streaming
from sdk import record_of

pytestmark = pytest.mark.integration

needs_addon = pytest.mark.skipif(not procs.ADDON_SCRIPT.exists(), reason="addon/toolvocab.py does not exist yet")

MODEL = "gemini-test"
SYSTEM = "You are an interactive CLI agent used in an offline test."
PROMPT = "Please say hi from the shell."
TEXT = "Running it now \u2014 caf\u00e9."
CHUNK_SIZES = (1, 7, 64)
TRANSPORTS = ("json", "stream")
JSON_HEADERS = {"Content-Type": "application/json; charset=UTF-8"}
SSE_HEADERS = {"Content-Type": "text/event-stream"}
GENERATE = f"/v1beta/models/{MODEL}:generateContent"
STREAM = f"/v1beta/models/{MODEL}:streamGenerateContent"

RUN_SHELL_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
    "required": ["command"],
}
RUN_SHELL = types.FunctionDeclaration(
    name="run_shell_command", description="Executes a given shell command.", parameters_json_schema=RUN_SHELL_SCHEMA
)
READ_FILE = types.FunctionDeclaration(
    name="read_file",
    description="Reads a file.",
    parameters=types.Schema(
        type="OBJECT", properties={"file_path": types.Schema(type="STRING")}, required=["file_path"]
    ),
)
POWERSHELL = types.FunctionDeclaration(
    name="PowerShell",
    description="Runs a PowerShell command.",
    parameters_json_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
DECLS = [RUN_SHELL, READ_FILE]
#: The same declarations as a raw request would carry them (camelCase wire names).
WIRE_TOOLS = [
    {
        "functionDeclarations": [
            {
                "name": "run_shell_command",
                "description": "Executes a given shell command.",
                "parametersJsonSchema": RUN_SHELL_SCHEMA,
            },
            {
                "name": "read_file",
                "description": "Reads a file.",
                "parameters": {
                    "type": "OBJECT",
                    "properties": {"file_path": {"type": "STRING"}},
                    "required": ["file_path"],
                },
            },
        ]
    }
]


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def config(decls: list[types.FunctionDeclaration] | None = DECLS) -> types.GenerateContentConfig:
    tools = [types.Tool(function_declarations=decls)] if decls else None
    return types.GenerateContentConfig(system_instruction=SYSTEM, tools=tools)


def gemini_flows(flows: list) -> list:
    return [f for f in flows if "enerateContent" in f.request.path]


# ----------------------------------------------------------------------- answers
USAGE = {"promptTokenCount": 40, "candidatesTokenCount": 12, "totalTokenCount": 52}


def fcall(name: str, args: dict) -> dict:
    return {"functionCall": {"name": name, "args": args}}


def response(parts: list[dict], *, finish: str | None = "STOP") -> dict:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
    if finish:
        candidate["finishReason"] = finish
    candidate["index"] = 0
    return {"candidates": [candidate], "usageMetadata": USAGE, "modelVersion": MODEL, "responseId": "tvResp01"}


def stream_chunks(calls: list[dict], text: str = TEXT) -> list[dict]:
    """The stream of one answer: a text chunk, then one chunk per call, the last with STOP."""
    chunks = [response([{"text": text}], finish=None)]
    for i, call in enumerate(calls):
        chunks.append(response([call], finish="STOP" if i == len(calls) - 1 else None))
    return chunks


def sse_body(chunks: list[dict]) -> bytes:
    return b"".join(b"data: " + dumps(c) + b"\r\n\r\n" for c in chunks)


def array_parts(chunks: list[dict]) -> list[bytes]:
    """The bare JSON-array stream, one piece per element (as the API flushes them)."""
    elems = [json.dumps(c, indent=2, ensure_ascii=False).encode() for c in chunks]
    return [b"[" + elems[0]] + [b"\n,\r\n" + e for e in elems[1:]] + [b"\n]"]


def json_body(calls: list[dict], text: str = TEXT) -> bytes:
    return json.dumps(response([{"text": text}] + calls), indent=2).encode() + b"\n"


FOREIGN = [fcall("Bash", {"command": "echo hi"}), fcall("default_api:read_file", {"file_path": "/x"})]
WANT = [("run_shell_command", {"command": "echo hi"}), ("read_file", {"file_path": "/x"})]


def reply(transport: str, calls: list[dict], size: int) -> dict:
    if transport == "json":
        return dict(body=json_body(calls), headers=JSON_HEADERS, chunk_size=size)
    return dict(body=sse_body(stream_chunks(calls)), headers=SSE_HEADERS, chunk_size=size)


@dataclass
class Got:
    calls: list[tuple[str, dict]]
    text: str
    finish: list[str] = field(default_factory=list)


def ask(client: genai.Client, transport: str, decls: list[types.FunctionDeclaration] | None = DECLS) -> Got:
    cfg = config(decls)
    if transport == "json":
        resp = client.models.generate_content(model=MODEL, contents=PROMPT, config=cfg)
        parts = resp.candidates[0].content.parts
        text = "".join(p.text for p in parts if p.text)
        return Got([(c.name, c.args) for c in resp.function_calls or []], text, [str(resp.candidates[0].finish_reason)])
    got = Got([], "")
    for chunk in client.models.generate_content_stream(model=MODEL, contents=PROMPT, config=cfg):
        got.calls += [(c.name, c.args) for c in chunk.function_calls or []]
        for part in chunk.candidates[0].content.parts or []:
            got.text += part.text or ""
        if chunk.candidates[0].finish_reason:
            got.finish.append(str(chunk.candidates[0].finish_reason))
    return got


def check_request(record: dict, transport: str, md: dict | None, names=("run_shell_command", "read_file")) -> None:
    """The upstream got the SDK's request: the declarations and contents unchanged; the system
    instruction gains at most the addon's sentence as an extra part."""
    path = GENERATE if transport == "json" else STREAM + "?alt=sse"
    assert record["path"] == path, record["path"]
    body = record["body"]
    decls = body["tools"][0]["functionDeclarations"]
    assert [d["name"] for d in decls] == list(names), decls
    assert body["contents"] == [{"parts": [{"text": PROMPT}], "role": "user"}]
    parts = body["systemInstruction"]["parts"]
    sentence = (md or {}).get("prompt_sentence")
    assert parts == ([{"text": SYSTEM}, {"text": sentence}] if sentence else [{"text": SYSTEM}]), parts


# ------------------------------------------------------------------------- harness
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_harness_plain_mitmdump_passes_foreign_names(fake_upstream, proxy, transport):
    px = proxy(script=None)
    fake_upstream.enqueue(**reply(transport, FOREIGN, 7))
    got = ask(genai_client(px.url), transport)
    assert got.calls == [("Bash", {"command": "echo hi"}), ("default_api:read_file", {"file_path": "/x"})]
    assert got.text == TEXT


# ---------------------------------------------------------------------- repair cases
@needs_addon
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_foreign_names_become_declared_names(fake_upstream, proxy, transport):
    px = proxy()
    client = genai_client(px.url)
    records = []
    for size in CHUNK_SIZES:
        before = len(fake_upstream.requests())
        fake_upstream.enqueue(**reply(transport, FOREIGN, size))
        got = ask(client, transport)
        assert got.calls == WANT, (size, got.calls)
        assert got.text == TEXT and got.finish == ["FinishReason.STOP"], (size, got)
        records.append(one_request(fake_upstream, before))
    flows = gemini_flows(px.flows())
    assert len(flows) == len(CHUNK_SIZES)
    for flow, record in zip(flows, records):
        md = record_of(flow, "gemini")
        assert set(md["declared"]) == {"run_shell_command", "read_file"}
        (bash,) = decisions_named(md, "Bash")
        assert bash["target"] == "run_shell_command" and bash["action"] in ("rename", "fit"), bash
        (read,) = decisions_named(md, "default_api:read_file")
        assert read["target"] == "read_file" and read["action"] in ("rename", "fit"), read
        assert md["response_changed"] is True and md["streamed"] is (transport == "stream")
        assert flow.marked and flow.comment
        check_request(record, transport, md)


@needs_addon
@pytest.mark.parametrize("schema_field", ["parameters", "parameters_json_schema"])
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_declared_read_file_with_path_gets_file_path(fake_upstream, proxy, transport, schema_field):
    """Argument fitting needs the declared schema, which the SDK sends either as ``parameters``
    (OpenAPI subset) or as ``parameters_json_schema`` (JSON Schema; google-genai writes this key
    in snake_case on the wire, next to camelCase ``functionDeclarations``)."""
    schema = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
    if schema_field == "parameters":
        read = READ_FILE
    else:
        read = types.FunctionDeclaration(name="read_file", description="Reads a file.", parameters_json_schema=schema)
    px = proxy()
    client = genai_client(px.url)
    for size in (1, 64):
        fake_upstream.enqueue(**reply(transport, [fcall("read_file", {"path": "/x"})], size))
        got = ask(client, transport, [RUN_SHELL, read])
        assert got.calls == [("read_file", {"file_path": "/x"})], (schema_field, size, got.calls)
    records = fake_upstream.requests()
    decl = records[0]["body"]["tools"][0]["functionDeclarations"][1]
    if schema_field == "parameters_json_schema":
        assert "parameters_json_schema" in decl or "parametersJsonSchema" in decl, decl
    for flow in gemini_flows(px.flows()):
        (decision,) = decisions_named(record_of(flow, "gemini"), "read_file")
        assert decision["action"] == "fit" and decision["target"] == "read_file", decision


@needs_addon
def test_bare_json_array_stream_is_rewritten_element_by_element(fake_upstream, proxy):
    """``:streamGenerateContent`` without ``alt``: one JSON array, rewritten per element; the
    elements without a foreign call and the separators pass byte-identical."""
    px = proxy()
    chunks = stream_chunks(FOREIGN)
    parts = array_parts(chunks)
    body = b"".join(parts)
    request = dumps(
        {
            "contents": [{"role": "user", "parts": [{"text": PROMPT}]}],
            "systemInstruction": {"parts": [{"text": SYSTEM}]},
            "tools": WIRE_TOOLS,
        }
    )
    headers = {"x-goog-api-key": "x-test-key", "content-type": "application/json"}
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        for size in CHUNK_SIZES:
            fake_upstream.enqueue(body, headers=JSON_HEADERS, chunk_size=size)
            r = http.post(STREAM, content=request, headers=headers)
            assert r.status_code == 200, size
            got = r.content
            assert got.startswith(parts[0]), (size, "the text element must be byte-identical")
            assert got.endswith(b"\n]"), size
            elements = json.loads(got)
            assert elements[0] == chunks[0]
            assert [e["candidates"][0]["content"]["parts"][0]["functionCall"] for e in elements[1:]] == [
                {"name": n, "args": a} for n, a in WANT
            ], (size, elements)
            assert [{k: v for k, v in e.items() if k != "candidates"} for e in elements] == [
                {k: v for k, v in c.items() if k != "candidates"} for c in chunks
            ]
            assert got.count(b"\n,\r\n") == 2, (size, "separators must pass unchanged")
    for flow in gemini_flows(px.flows()):
        md = record_of(flow, "gemini")
        assert [d["target"] for d in md["decisions"]] == ["run_shell_command", "read_file"], md["decisions"]
    assert_no_addon_errors(px)


@needs_addon
def test_bare_json_array_elements_arrive_before_the_upstream_finishes(fake_upstream, proxy):
    px = proxy()
    chunks = stream_chunks(FOREIGN)
    request = dumps({"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], "tools": WIRE_TOOLS})
    headers = {"x-goog-api-key": "x-test-key", "content-type": "application/json"}
    fake_upstream.enqueue(headers=JSON_HEADERS, chunks=array_parts(chunks), chunk_delay=0.6)
    seen = post_streaming(px.url, STREAM, request, headers)
    record = fake_upstream.wait_requests(1)[0]
    finished = record["reply"]["finished_at"]
    assert finished - record["reply"]["started_at"] > 1.5, "the fake was not slow enough for this test to mean anything"

    def first_time(marker: bytes) -> float:
        return next(t for t, b in seen if marker in b)

    assert first_time(b'"Running it now') < finished - 1.0, "the text element was held back"
    renamed = first_time(b'"run_shell_command"')
    assert renamed < finished - 0.5, f"the first call arrived {finished - renamed:.2f}s before the upstream finished"
    assert b'"Bash"' not in seen[-1][1]
    assert [
        e["candidates"][0]["content"]["parts"][0].get("functionCall", {}).get("name") for e in json.loads(seen[-1][1])
    ] == [None, "run_shell_command", "read_file"]


@needs_addon
@pytest.mark.parametrize("transport", TRANSPORTS)
def test_ambiguous_and_unknown_names_are_left(fake_upstream, proxy, transport):
    px = proxy()
    client = genai_client(px.url)
    # Two POSIX shells: not guessing (PowerShell is never a candidate for a POSIX name).
    execute = types.FunctionDeclaration(
        name="execute_command", description="Runs a CLI command.", parameters_json_schema=RUN_SHELL_SCHEMA
    )
    cases = [
        ("Bash", [RUN_SHELL, execute, POWERSHELL, READ_FILE]),
        ("frobnicate", DECLS),
        ("mcp_github_create_issue", DECLS),
    ]
    for name, decls in cases:
        fake_upstream.enqueue(**reply(transport, [fcall(name, {"command": "echo hi"})], 7))
        got = ask(client, transport, decls)
        assert got.calls == [(name, {"command": "echo hi"})], (name, got.calls)
    flows = gemini_flows(px.flows())
    assert len(flows) == len(cases)
    for flow, (name, _) in zip(flows, cases):
        (decision,) = decisions_named(record_of(flow, "gemini"), name)
        assert decision["action"] == "leave", decision


def raw_post(http: httpx.Client, path: str, body: bytes) -> httpx.Response:
    return http.post(path, content=body, headers={"x-goog-api-key": "x-test-key", "content-type": "application/json"})


@needs_addon
def test_conformant_answers_are_byte_identical(fake_upstream, proxy):
    px = proxy()
    declared = [fcall("run_shell_command", {"command": "echo hi"}), fcall("read_file", {"file_path": "/x"})]
    unknown = [fcall("frobnicate", {"x": 1})]
    request = dumps({"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], "tools": WIRE_TOOLS})
    n = 0
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        for calls in (declared, unknown):
            for path, body, headers in (
                (GENERATE, json_body(calls), JSON_HEADERS),
                (STREAM + "?alt=sse", sse_body(stream_chunks(calls)), SSE_HEADERS),
                (STREAM, b"".join(array_parts(stream_chunks(calls))), JSON_HEADERS),
            ):
                for size in (0,) + CHUNK_SIZES:
                    fake_upstream.enqueue(body, headers=headers, chunk_size=size)
                    r = raw_post(http, path, request)
                    assert r.status_code == 200 and r.content == body, (path, calls[0], size)
                    n += 1
    flows = gemini_flows(px.flows())
    assert len(flows) == n
    for flow in flows:
        assert not [d for d in record_of(flow, "gemini")["decisions"] if d["action"] in ("rename", "fit")]
    assert_no_addon_errors(px)


@needs_addon
def test_side_request_without_tools_passes_byte_identical(fake_upstream, proxy):
    """A title-generation style request (no tools): the answer is not touched, even if it
    holds a name the addon would otherwise repair."""
    px = proxy()
    odd = (
        b'{\n  "candidates": [ {"content": {"parts": [{"text": "Fake title \\u2014 caf\\u00e9"},\n'
        b'   {"functionCall": {"name": "Bash", "args": {"command": "echo hi"}}}], "role": "model"},\n'
        b'   "finishReason": "STOP", "index": 0} ],\n  "modelVersion": "gemini-test"}\n'
    )
    request = dumps({"contents": [{"role": "user", "parts": [{"text": "Title for: say hi"}]}]})
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        for path, body, headers in (
            (GENERATE, odd, JSON_HEADERS),
            (STREAM + "?alt=sse", b"data: " + odd.replace(b"\n", b"") + b"\r\n\r\n", SSE_HEADERS),
            (STREAM, b"[" + odd + b"]", JSON_HEADERS),
        ):
            for size in (0, 7):
                fake_upstream.enqueue(body, headers=headers, chunk_size=size)
                r = raw_post(http, path, request)
                assert r.status_code == 200 and r.content == body, (path, size)
    client = genai_client(px.url)
    fake_upstream.enqueue(odd, headers=JSON_HEADERS, chunk_size=7)
    resp = client.models.generate_content(model=MODEL, contents="Title for: say hi", config=config(None))
    assert resp.candidates[0].content.parts[0].text == "Fake title \u2014 caf\u00e9"
    assert resp.function_calls[0].name == "Bash"
    for flow in gemini_flows(px.flows()):
        md = flow.metadata.get("toolvocab")
        assert md is not None and md["skipped"] and not md["decisions"], md
        assert not flow.marked
    assert_no_addon_errors(px)


@needs_addon
def test_mode_off_passes_foreign_names(fake_upstream, proxy):
    px = proxy(options={"toolvocab_mode": "off"})
    client = genai_client(px.url)
    for transport in TRANSPORTS:
        for size in (1, 64):
            before = len(fake_upstream.requests())
            fake_upstream.enqueue(**reply(transport, FOREIGN, size))
            got = ask(client, transport)
            assert got.calls == [("Bash", {"command": "echo hi"}), ("default_api:read_file", {"file_path": "/x"})]
            record = one_request(fake_upstream, before)
            check_request(record, transport, None)
    request = dumps({"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], "tools": WIRE_TOOLS})
    body = b"".join(array_parts(stream_chunks(FOREIGN)))
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        fake_upstream.enqueue(body, headers=JSON_HEADERS, chunk_size=7)
        r = raw_post(http, STREAM, request)
        assert r.status_code == 200 and r.content == body
    for flow in gemini_flows(px.flows()):
        assert not flow.marked


@needs_addon
def test_non_json_bodies_pass_byte_identical(fake_upstream, proxy):
    px = proxy()
    odd_request = (
        b'{"contents": [{"role": "user", "parts": [{"text": "hi"}]}], "tools": [{"functionDeclarations": [oops'
    )
    odd_reply = b'{\n  "error": {\n    "code": 400,\n    "message": "Invalid JSON payload received.",\n    "status": "INVALID_ARGUMENT"\n  }\n}\n'
    request = dumps({"contents": [{"role": "user", "parts": [{"text": PROMPT}]}], "tools": WIRE_TOOLS})
    garbage = b"upstream says: Bash is not JSON \xe2\x80\x94 <html>502</html>\n"
    half_json = b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"Bash","args":{"command":"ec'
    half_array = b'[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"Bash","args":{"command":"ec'
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        fake_upstream.enqueue(odd_reply, status=400, headers=JSON_HEADERS)
        r = raw_post(http, GENERATE, odd_request)
        assert r.status_code == 400 and r.content == odd_reply
        for path in (GENERATE, STREAM + "?alt=sse", STREAM):
            for body, ctype in (
                (garbage, "text/plain"),
                (half_json, "application/json"),
                (half_array, "application/json"),
                (garbage, "text/event-stream"),
            ):
                for size in (0, 7):
                    fake_upstream.enqueue(body, headers={"Content-Type": ctype}, chunk_size=size)
                    r = raw_post(http, path, request)
                    assert r.status_code == 200 and r.content == body, (path, body[:20], ctype, size)
    assert base64.b64decode(fake_upstream.requests()[0]["body_b64"]) == odd_request
    assert_no_addon_errors(px)
