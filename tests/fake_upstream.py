#!/usr/bin/env python3
"""A stdlib fake LLM upstream for toolvocab's tests.

Listens on 127.0.0.1 (``ThreadingHTTPServer``), answers LLM API requests with scripted
responses, and records every request so a test can check what the proxy forwarded.

Run as a script::

    python tests/fake_upstream.py --port 0 [--log-dir DIR] [--tool-name NAME]
        [--tool-args JSON] [--chunk-size N] [--chunk-delay SECONDS] [--reject-long-names]

It prints ``READY <port>`` on stdout once it listens (``--port 0`` picks a free port).
Import it to run it in a thread instead: ``FakeUpstream(port=0).start()``.

Dialects live in :data:`ROUTES` (a dict: path regex -> handler):

  POST /v1/messages[?beta=true]          Anthropic Messages (JSON, or SSE when ``stream`` is true)
  POST [/prefix]/chat/completions        OpenAI Chat Completions: JSON, or SSE ``data:`` chunks
                                         (id/type/name in the first tool-call delta, arguments in
                                         fragments, ``finish_reason``, a usage-only chunk when
                                         ``stream_options.include_usage``, ``data: [DONE]``)
  POST [/prefix]/responses               OpenAI Responses: JSON, or SSE with ``event:`` lines
                                         (created, in_progress, output_item.added, *.delta x N,
                                         *.done, output_item.done, completed echoing tools/
                                         tool_choice/output). A tool name ``ns/name`` answers a
                                         call with ``namespace: "ns"``; a name declared as a
                                         ``custom`` tool answers a ``custom_tool_call``.
  POST /v1beta/models/M:generateContent  Gemini (also /v1, /v1alpha, Vertex-style paths): JSON
  POST …/models/M:streamGenerateContent  ``?alt=sse``: SSE, each event a complete response;
                                         without ``alt``: one JSON array written element by element
  POST …/models/M:countTokens            ``{"totalTokens": 100}``
  POST /v1internal:<method>              Gemini Code Assist: request under ``request``, every
                                         response (and SSE event) wrapped as ``{"response", "traceId"}``
  GET  [/v1|/v1beta]/models              a small model list (``data`` and Gemini ``models``)
  HEAD <any path>                        200, empty

Scripted behaviour (stateless, decided from the request alone, the same in every dialect):

  * tools declared and no tool result for the last call yet (Anthropic: the last user message
    holds no ``tool_result``; Chat: the last message is not ``role: tool``; Responses: the last
    input item is not a ``*_call_output``; Gemini: the last content holds no
    ``functionResponse``)
        -> ONE tool call named ``tool_name`` with arguments ``tool_args`` (Anthropic and Gemini
           precede it with a short text). ``tool_name`` ``re:<regex>`` names the first declared
           tool the regex finds (whatever name a proxy sent it under)
  * otherwise, if the conversation holds a tool result
        -> a final text answer: ``final_text`` + the last tool result's text
  * otherwise (no tools: OpenCode's title generation, Gemini CLI's routing classifier, ...)
        -> plain text, or, when structured output is requested (Gemini
           ``responseMimeType: application/json`` + ``responseJsonSchema``/``responseSchema``,
           Chat ``response_format``, Responses ``text.format``), a JSON document that fits the
           schema (first enum value, ``minimum`` for numbers, ...)

With ``reject_long_names`` (``--reject-long-names``), Chat Completions and Responses requests
that declare a tool name longer than 64 characters get OpenAI's real-looking 400
(``Invalid 'tools[N].function.name': string too long. ...``, ``code: string_above_max_length``).

Transport: with ``chunk_size > 0`` the body is written in ``chunk_size``-byte pieces using
HTTP/1.1 chunked transfer encoding (each piece flushed, ``chunk_delay`` seconds apart), so SSE
events, JSON and even tool names are split across transport chunks.

Control endpoints (never logged, never consume the queue):

  GET/POST /__fake/config    read / change tool_name, tool_args, chunk_size, chunk_delay,
                             force_stream (true/false/null), final_text, reject_long_names,
                             leak_as_text (Anthropic: the tool call as Hermes markup in the text)
  POST /__fake/enqueue       {"status": int, "headers": {..} or [[k, v], ..],
                              "body_b64": "..." | "chunks_b64": ["...", ..],
                              "chunk_size"?: int, "chunk_delay"?: float}
                             -> the next (non-control) request is answered with exactly these
                                bytes. ``chunks_b64`` gives one transport chunk per item;
                                ``body_b64`` uses the chunk size (0 = Content-Length).
                                Content-Length / Transfer-Encoding are always set by the fake.
  GET  /__fake/requests      the logged requests, as a JSON list
  POST /__fake/reset         forget logged requests and queued replies

Each logged request is ``{"n", "time", "method", "path", "headers", "body", "body_b64",
"content_encoding", "reply"}``: ``body`` is the parsed JSON (after content-decoding) or the
raw text, ``body_b64`` the exact bytes received, ``reply`` = ``{"source": "generated" |
"enqueued" | "builtin", "status", "headers", "body_b64", "summary", "started_at",
"finished_at"}`` (``finished_at`` appears once the last byte was written; wall-clock
``time.time()``). With ``--log-dir`` each record is also written to ``DIR/NNNN.json``.
"""

from __future__ import annotations

import argparse
import base64
import gzip
import json
import os
import re
import socket
import sys
import threading
import time
import uuid
import zlib
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable
from urllib.parse import parse_qs, urlsplit

DEFAULT_TOOL_NAME = "Bash"
DEFAULT_TOOL_ARGS: dict[str, Any] = {"command": "echo hi"}
DEFAULT_FINAL_TEXT = "Done. The tool returned:"
TITLE_TEXT = "Fake title"


# --------------------------------------------------------------------------- data types
@dataclass
class Request:
    method: str
    path: str  # path without the query string
    query: dict[str, list[str]]
    headers: dict[str, str]
    raw: bytes  # exactly the bytes received
    json: Any  # parsed body (after content-decoding), or None


@dataclass
class Reply:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""
    chunks: list[bytes] | None = None  # explicit transport chunks (forces chunked encoding)
    chunk_size: int | None = None  # None: use the server config
    chunk_delay: float | None = None
    summary: str = ""
    source: str = "generated"


Handler = Callable[[Request, dict[str, Any]], Reply]


def _id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def _json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def json_reply(status: int, obj: Any, summary: str = "", extra_headers: list | None = None) -> Reply:
    headers = [("Content-Type", "application/json"), ("request-id", _id("req_"))]
    return Reply(status, headers + list(extra_headers or []), _json_bytes(obj), summary=summary)


def sse_bytes(events: list[tuple[str | None, Any]]) -> bytes:
    """``[(event name or None, data dict or str)]`` -> SSE bytes (LF, blank line after each)."""
    out = bytearray()
    for name, data in events:
        if name:
            out += f"event: {name}\n".encode()
        out += b"data: " + (data.encode() if isinstance(data, str) else _json_bytes(data)) + b"\n\n"
    return bytes(out)


def sse_reply(events: list[tuple[str | None, Any]], summary: str = "") -> Reply:
    headers = [
        ("Content-Type", "text/event-stream; charset=utf-8"),
        ("Cache-Control", "no-cache"),
        ("request-id", _id("req_")),
    ]
    return Reply(200, headers, sse_bytes(events), summary=summary)


def split_evenly(text: str, parts: int) -> list[str]:
    """Split ``text`` into at most ``parts`` non-empty pieces of similar size."""
    if not text:
        return []
    parts = max(1, min(parts, len(text)))
    step, rest = divmod(len(text), parts)
    out, i = [], 0
    for k in range(parts):
        n = step + (1 if k < rest else 0)
        out.append(text[i : i + n])
        i += n
    return out


def decode_body(raw: bytes, encoding: str | None) -> bytes | None:
    enc = (encoding or "").strip().lower()
    try:
        if enc in ("", "identity"):
            return raw
        if enc == "gzip":
            return gzip.decompress(raw)
        if enc == "deflate":
            try:
                return zlib.decompress(raw)
            except zlib.error:
                return zlib.decompress(raw, -zlib.MAX_WBITS)
    except Exception:
        return None
    return None  # br / zstd / unknown: keep the raw bytes only


# --------------------------------------------------------------------- Anthropic Messages
def _tool_result_text(block: dict) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            c.get("text", "") for c in content if isinstance(c, dict) and c.get("type") == "text"
        )
    return ""


def anthropic_plan(body: dict, cfg: dict) -> dict:
    """Decide what to answer: ``{"kind": "tool"|"final"|"plain", ...}``."""
    tools = [t.get("name") for t in body.get("tools") or [] if isinstance(t, dict)]
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    last_user = next((m for m in reversed(messages) if m.get("role") == "user"), None)
    last_user_has_result = bool(
        last_user
        and isinstance(last_user.get("content"), list)
        and any(isinstance(c, dict) and c.get("type") == "tool_result" for c in last_user["content"])
    )
    last_result = None
    for m in messages:
        if m.get("role") == "user" and isinstance(m.get("content"), list):
            for c in m["content"]:
                if isinstance(c, dict) and c.get("type") == "tool_result":
                    last_result = c
    if tools and not last_user_has_result:
        name = pick_tool_name(cfg["tool_name"], tools)
        return {
            "kind": "tool",
            "name": name,
            "args": cfg["tool_args"],
            "text": f"Let me run that with the {name} tool.",
        }
    if last_result is not None:
        return {"kind": "final", "text": f"{cfg['final_text']} {_tool_result_text(last_result)}"}
    return {"kind": "plain", "text": TITLE_TEXT}


def leaked_call_text(name: str, args: Any) -> str:
    """A tool call written as Hermes / Qwen2.5 markup in the answer text (``leak_as_text``)."""
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}, ensure_ascii=False) + "\n</tool_call>"


def anthropic_messages(req: Request, cfg: dict) -> Reply:
    body = req.json
    if not isinstance(body, dict):
        return json_reply(
            400,
            {"type": "error", "error": {"type": "invalid_request_error",
                                        "message": "fake_upstream: body is not a JSON object"}},
            summary="400 body not JSON",
        )
    plan = anthropic_plan(body, cfg)
    stream = cfg["force_stream"] if cfg.get("force_stream") is not None else bool(body.get("stream"))
    model = body.get("model") or "claude-fake"
    msg_id = _id("msg_")
    usage = {"input_tokens": 100, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
             "output_tokens": 10}
    blocks: list[dict] = [{"type": "text", "text": plan["text"]}]
    if plan["kind"] == "tool" and cfg.get("leak_as_text"):
        # An open model behind an Anthropic-format server that left its call in the text
        # (Hermes / Qwen2.5 JSON markup, issue 14): no tool_use block, stop_reason end_turn.
        blocks = [{"type": "text", "text": leaked_call_text(plan["name"], plan["args"])}]
        plan = {**plan, "kind": "leaked"}
    elif plan["kind"] == "tool":
        blocks.append({"type": "tool_use", "id": _id("toolu_"), "name": plan["name"], "input": plan["args"]})
    stop_reason = "tool_use" if plan["kind"] == "tool" else "end_turn"
    summary = f"{plan['kind']}" + (f" {plan['name']}" if plan["kind"] == "tool" else "")
    summary += " sse" if stream else " json"
    if not stream:
        return json_reply(200, {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": blocks,
            "stop_reason": stop_reason, "stop_sequence": None, "usage": usage,
        }, summary=summary)

    ev: list[tuple[str | None, Any]] = [
        ("message_start", {"type": "message_start", "message": {
            "id": msg_id, "type": "message", "role": "assistant", "model": model, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": dict(usage, output_tokens=1)}}),
        ("ping", {"type": "ping"}),
    ]
    for index, block in enumerate(blocks):
        if block["type"] == "text":
            ev.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "text", "text": ""}}))
            for piece in split_evenly(block["text"], 3):
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "text_delta", "text": piece}}))
        else:
            ev.append(("content_block_start", {"type": "content_block_start", "index": index,
                                               "content_block": {"type": "tool_use", "id": block["id"],
                                                                 "name": block["name"], "input": {}}}))
            fragments = [""] + split_evenly(json.dumps(block["input"], ensure_ascii=False), 4)
            for piece in fragments:
                ev.append(("content_block_delta", {"type": "content_block_delta", "index": index,
                                                   "delta": {"type": "input_json_delta", "partial_json": piece}}))
        ev.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
    ev.append(("message_delta", {"type": "message_delta",
                                 "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                 "usage": {"output_tokens": 10}}))
    ev.append(("message_stop", {"type": "message_stop"}))
    return sse_reply(ev, summary=summary)


# ------------------------------------------------------------------------ shared helpers
def _text_of(content: Any) -> str:
    """Text of a message/tool-result content: a string, or a list of text-ish parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for c in content:
            if isinstance(c, str):
                out.append(c)
            elif isinstance(c, dict):
                if isinstance(c.get("text"), str):
                    out.append(c["text"])
                elif "content" in c:
                    out.append(_text_of(c["content"]))
        return "".join(out)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def schema_instance(schema: Any, depth: int = 0) -> Any:
    """A small value that satisfies a JSON schema / Gemini ``Schema`` (structured-output side calls)."""
    if not isinstance(schema, dict) or depth > 8:
        return "ok"
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_instance(schema[key][0], depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if str(x).lower() != "null"), "string")
    t = str(t or "").lower()
    if t == "object" or (not t and "properties" in schema):
        props = schema.get("properties") or {}
        return {k: schema_instance(v, depth + 1) for k, v in props.items()}
    if t == "array":
        n = int(schema.get("minItems") or 0)
        return [schema_instance(schema.get("items") or {}, depth + 1) for _ in range(n)]
    if t in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 1))
        try:
            lo = int(lo) + (1 if "minimum" not in schema and "exclusiveMinimum" in schema else 0)
        except (TypeError, ValueError):
            lo = 1
        return lo
    if t == "boolean":
        return False
    return "ok"


def plain_plan(cfg: dict, schema: Any = None, wants_json: bool = False) -> dict:
    """The answer to a request without tools: text, or a JSON document when one was asked for."""
    if schema is not None:
        return {"kind": "plain", "text": json.dumps(schema_instance(schema), ensure_ascii=False), "json": True}
    if wants_json:
        return {"kind": "plain", "text": "{}", "json": True}
    return {"kind": "plain", "text": TITLE_TEXT}


def pick_tool_name(configured: str, declared: list) -> str:
    """``configured``, or for ``re:<regex>`` the first declared name the regex finds
    (``re.search``), so a test can answer a tool whatever name a proxy gave it upstream (an
    alias of a long MCP name, say). No match: the regex text itself."""
    if isinstance(configured, str) and configured.startswith("re:"):
        pattern = re.compile(configured[3:])
        for name in declared:
            if isinstance(name, str) and pattern.search(name):
                return name
        return configured[3:]
    return configured


def decide(cfg: dict, tools: list[str], pending_result: bool, last_result: str | None,
           schema: Any = None, wants_json: bool = False) -> dict:
    """The stateless policy shared by every dialect (see the module docstring)."""
    if tools and not pending_result:
        name = pick_tool_name(cfg["tool_name"], tools)
        return {"kind": "tool", "name": name, "args": cfg["tool_args"],
                "text": f"Let me run that with the {name} tool."}
    if last_result is not None:
        return {"kind": "final", "text": f"{cfg['final_text']} {last_result}"}
    return plain_plan(cfg, schema, wants_json)


def _summary(plan: dict, stream: str) -> str:
    return plan["kind"] + (f" {plan['name']}" if plan["kind"] == "tool" else "") + f" {stream}"


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _want_stream(cfg: dict, body: dict, default: bool = False) -> bool:
    if cfg.get("force_stream") is not None:
        return bool(cfg["force_stream"])
    value = body.get("stream")
    return default if value is None else bool(value)


def long_name_error(names: list[tuple[str, str]]) -> Reply | None:
    """OpenAI's 400 for the first declared name over 64 characters (``--reject-long-names``)."""
    for param, name in names:
        if isinstance(name, str) and len(name) > 64:
            return json_reply(400, {"error": {
                "message": (f"Invalid '{param}': string too long. Expected a string with maximum length 64, "
                            f"but got a string with length {len(name)} instead."),
                "type": "invalid_request_error", "param": param, "code": "string_above_max_length"}},
                summary=f"400 long tool name ({len(name)} chars)",
                extra_headers=[("x-request-id", _id("req_"))])
    return None


def _openai_bad_body() -> Reply:
    return json_reply(400, {"error": {"message": "fake_upstream: body is not a JSON object",
                                      "type": "invalid_request_error", "param": None, "code": None}},
                      summary="400 body not JSON")


def _openai_sse_reply(events: list[tuple[str | None, Any]], summary: str) -> Reply:
    reply = sse_reply(events, summary=summary)
    reply.headers.append(("x-request-id", _id("req_")))
    return reply


# ----------------------------------------------------------- OpenAI Chat Completions
def _chat_tool_names(body: dict) -> list[tuple[str, str]]:
    """``[(param path, name)]`` of every declared tool (function, custom, legacy functions)."""
    out = []
    for i, t in enumerate(body.get("tools") or []):
        if not isinstance(t, dict):
            continue
        kind = t.get("type") or "function"
        slot = t.get(kind) if isinstance(t.get(kind), dict) else {}
        if isinstance(slot.get("name"), str):
            out.append((f"tools[{i}].{kind}.name", slot["name"]))
    for i, f in enumerate(body.get("functions") or []):
        if isinstance(f, dict) and isinstance(f.get("name"), str):
            out.append((f"functions[{i}].name", f["name"]))
    return out


def chat_plan(body: dict, cfg: dict) -> dict:
    tools = [n for _, n in _chat_tool_names(body)]
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    pending = bool(messages) and messages[-1].get("role") in ("tool", "function")
    results = [m for m in messages if m.get("role") in ("tool", "function")]
    last = _text_of(results[-1].get("content")) if results else None
    fmt = body.get("response_format") if isinstance(body.get("response_format"), dict) else {}
    schema = None
    if fmt.get("type") == "json_schema":
        schema = (fmt.get("json_schema") or {}).get("schema") or {}
    return decide(cfg, tools, pending, last, schema, wants_json=fmt.get("type") == "json_object")


def openai_chat_completions(req: Request, cfg: dict) -> Reply:
    body = req.json
    if not isinstance(body, dict):
        return _openai_bad_body()
    if cfg.get("reject_long_names"):
        err = long_name_error(_chat_tool_names(body))
        if err is not None:
            return err
    plan = chat_plan(body, cfg)
    stream = _want_stream(cfg, body)
    model = body.get("model") or "gpt-fake"
    cid, created = _id("chatcmpl-"), int(time.time())
    usage = {"prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110}
    call = None
    if plan["kind"] == "tool":
        call = {"id": _id("call_"), "type": "function",
                "function": {"name": plan["name"], "arguments": _args_text(plan["args"])}}
    finish = "tool_calls" if call else "stop"
    summary = _summary(plan, "sse" if stream else "json")
    if not stream:
        message: dict[str, Any] = {"role": "assistant", "content": None if call else plan["text"],
                                   "refusal": None}
        if call:
            message["tool_calls"] = [call]
        return json_reply(200, {
            "id": cid, "object": "chat.completion", "created": created, "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish}],
            "usage": usage, "system_fingerprint": "fp_fake"}, summary=summary,
            extra_headers=[("x-request-id", _id("req_"))])

    with_usage = bool((body.get("stream_options") or {}).get("include_usage"))

    def chunk(delta: dict, finish_reason: str | None = None) -> tuple[None, dict]:
        c: dict[str, Any] = {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                             "system_fingerprint": "fp_fake",
                             "choices": [{"index": 0, "delta": delta, "logprobs": None,
                                          "finish_reason": finish_reason}]}
        if with_usage:
            c["usage"] = None
        return (None, c)

    ev: list[tuple[str | None, Any]] = []
    if call:
        ev.append(chunk({"role": "assistant", "content": None, "tool_calls": [{
            "index": 0, "id": call["id"], "type": "function",
            "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        for piece in split_evenly(call["function"]["arguments"], 4):
            ev.append(chunk({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}))
    else:
        ev.append(chunk({"role": "assistant", "content": "", "refusal": None}))
        for piece in split_evenly(plan["text"], 3):
            ev.append(chunk({"content": piece}))
    ev.append(chunk({}, finish))
    if with_usage:
        ev.append((None, {"id": cid, "object": "chat.completion.chunk", "created": created, "model": model,
                          "system_fingerprint": "fp_fake", "choices": [], "usage": usage}))
    ev.append((None, "[DONE]"))
    return _openai_sse_reply(ev, summary)


# -------------------------------------------------------------------- OpenAI Responses
def _responses_tools(body: dict) -> list[tuple[str, str, str, str | None]]:
    """``[(param path, name, type, namespace)]`` of the declared named tools (namespaces expanded)."""
    out = []
    for i, t in enumerate(body.get("tools") or []):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            continue
        if t.get("type") == "namespace":
            for j, sub in enumerate(t.get("tools") or []):
                if isinstance(sub, dict) and isinstance(sub.get("name"), str):
                    out.append((f"tools[{i}].tools[{j}].name", sub["name"], sub.get("type") or "function", t["name"]))
        else:
            out.append((f"tools[{i}].name", t["name"], t.get("type") or "function", None))
    return out


def responses_plan(body: dict, cfg: dict) -> dict:
    tools = [n for _, n, _, _ in _responses_tools(body)]
    items = body.get("input")
    items = [it for it in items if isinstance(it, dict)] if isinstance(items, list) else []
    out_types = ("function_call_output", "custom_tool_call_output", "local_shell_call_output",
                 "shell_call_output", "apply_patch_call_output", "mcp_call_output")
    pending = bool(items) and items[-1].get("type") in out_types
    results = [it for it in items if it.get("type") in out_types]
    last = _text_of(results[-1].get("output")) if results else None
    fmt = ((body.get("text") or {}).get("format") or {}) if isinstance(body.get("text"), dict) else {}
    schema = fmt.get("schema") if fmt.get("type") == "json_schema" else None
    return decide(cfg, tools, pending, last, schema, wants_json=fmt.get("type") == "json_object")


def openai_responses(req: Request, cfg: dict) -> Reply:
    body = req.json
    if not isinstance(body, dict):
        return _openai_bad_body()
    declared = _responses_tools(body)
    if cfg.get("reject_long_names"):
        err = long_name_error([(p, n) for p, n, _, _ in declared])
        if err is not None:
            return err
    plan = responses_plan(body, cfg)
    stream = _want_stream(cfg, body)
    model = body.get("model") or "gpt-fake"
    rid = _id("resp_")
    if plan["kind"] == "tool":
        namespace, _, name = plan["name"].rpartition("/")
        kinds = {(ns, n): kind for _, n, kind, ns in declared}
        if kinds.get((namespace or None, name)) == "custom":
            item: dict[str, Any] = {"id": _id("ctc_"), "type": "custom_tool_call", "status": "completed",
                                    "call_id": _id("call_"), "name": name, "input": _args_text(plan["args"])}
        else:
            item = {"id": _id("fc_"), "type": "function_call", "status": "completed",
                    "arguments": _args_text(plan["args"]), "call_id": _id("call_"), "name": name}
        if namespace:
            item["namespace"] = namespace
    else:
        item = {"id": _id("msg_"), "type": "message", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": plan["text"], "annotations": [], "logprobs": []}]}
    usage = {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 10,
             "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 110}
    echo = {k: body.get(k, default) for k, default in (
        ("instructions", None), ("tools", []), ("tool_choice", "auto"), ("parallel_tool_calls", True),
        ("reasoning", None), ("store", False), ("text", {"format": {"type": "text"}}),
        ("max_output_tokens", None), ("previous_response_id", None), ("metadata", {}))}

    def response(status: str, output: list, with_usage: bool) -> dict:
        return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status,
                "background": False, "error": None, "incomplete_details": None, "model": model,
                "output": output, **echo, "top_p": 1.0, "truncation": "disabled",
                "usage": usage if with_usage else None, "user": None}

    summary = _summary(plan, "sse" if stream else "json")
    if not stream:
        return json_reply(200, response("completed", [item], True), summary=summary,
                          extra_headers=[("x-request-id", _id("req_"))])

    seq = iter(range(1_000_000))
    ev: list[tuple[str | None, Any]] = []

    def add(kind: str, **fields: Any) -> None:
        ev.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

    add("response.created", response=response("in_progress", [], False))
    add("response.in_progress", response=response("in_progress", [], False))
    if item["type"] == "function_call":
        add("response.output_item.added", output_index=0,
            item=dict(item, status="in_progress", arguments=""))
        for piece in split_evenly(item["arguments"], 4):
            add("response.function_call_arguments.delta", item_id=item["id"], output_index=0, delta=piece)
        add("response.function_call_arguments.done", item_id=item["id"], output_index=0,
            arguments=item["arguments"])
    elif item["type"] == "custom_tool_call":
        add("response.output_item.added", output_index=0, item=dict(item, status="in_progress", input=""))
        for piece in split_evenly(item["input"], 3):
            add("response.custom_tool_call_input.delta", item_id=item["id"], output_index=0, delta=piece)
        add("response.custom_tool_call_input.done", item_id=item["id"], output_index=0, input=item["input"])
    else:
        text = plan["text"]
        add("response.output_item.added", output_index=0, item=dict(item, status="in_progress", content=[]))
        add("response.content_part.added", item_id=item["id"], output_index=0, content_index=0,
            part={"type": "output_text", "text": "", "annotations": [], "logprobs": []})
        for piece in split_evenly(text, 3):
            add("response.output_text.delta", item_id=item["id"], output_index=0, content_index=0,
                delta=piece, logprobs=[])
        add("response.output_text.done", item_id=item["id"], output_index=0, content_index=0, text=text,
            logprobs=[])
        add("response.content_part.done", item_id=item["id"], output_index=0, content_index=0,
            part=item["content"][0])
    add("response.output_item.done", output_index=0, item=item)
    add("response.completed", response=response("completed", [item], True))
    return _openai_sse_reply(ev, summary)


# ---------------------------------------------------------------------------- Gemini
GEMINI_PATH = re.compile(r"/(?:v1(?:alpha|beta|beta1)?(?:/projects/[^/]+/locations/[^/]+/publishers/google)?"
                         r"/models/(?P<model>[^/:]+)|v1internal):(?P<method>\w+)")


def _gemini_inner(body: dict, code_assist: bool) -> dict:
    if code_assist and isinstance(body.get("request"), dict):
        return body["request"]
    return body


def gemini_plan(inner: dict, cfg: dict) -> dict:
    tools = [d.get("name") for t in inner.get("tools") or [] if isinstance(t, dict)
             for d in t.get("functionDeclarations") or t.get("function_declarations") or []
             if isinstance(d, dict)]
    contents = [c for c in inner.get("contents") or [] if isinstance(c, dict)]

    def responses_in(c: dict) -> list[dict]:
        return [p["functionResponse"] for p in c.get("parts") or []
                if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)]

    pending = bool(contents) and contents[-1].get("role", "user") == "user" and bool(responses_in(contents[-1]))
    found = [r for c in contents for r in responses_in(c)]
    last = None
    if found:
        resp = found[-1].get("response")
        if isinstance(resp, dict) and len(resp) == 1 and isinstance(next(iter(resp.values())), str):
            last = next(iter(resp.values()))
        else:
            last = json.dumps(resp, ensure_ascii=False)
    gen = inner.get("generationConfig") or inner.get("generation_config") or {}
    mime = str(gen.get("responseMimeType") or gen.get("response_mime_type") or "")
    schema = gen.get("responseJsonSchema") or gen.get("responseSchema") or gen.get("response_schema")
    wants_json = mime.lower() == "application/json"
    return decide(cfg, [t for t in tools if t], pending, last, schema if wants_json else None, wants_json)


def gemini_error(status: int, message: str, reason: str = "INVALID_ARGUMENT") -> Reply:
    return json_reply(status, {"error": {"code": status, "message": message, "status": reason}},
                      summary=f"{status} {message[:40]}")


def gemini_generate(req: Request, cfg: dict) -> Reply:
    m = GEMINI_PATH.fullmatch(req.path)
    assert m is not None
    method = m.group("method")
    code_assist = m.group("model") is None
    body = req.json
    if not isinstance(body, dict):
        return gemini_error(400, "Invalid JSON payload received.")
    inner = _gemini_inner(body, code_assist)
    model = m.group("model") or str(body.get("model") or "gemini-fake")

    def wrap(obj: dict) -> dict:
        return {"response": obj, "traceId": uuid.uuid4().hex[:16]} if code_assist else obj

    if method == "countTokens":
        return json_reply(200, {"totalTokens": 100}, summary="countTokens")
    if method not in ("generateContent", "streamGenerateContent"):
        return gemini_error(404, f"Method {method} not found.", "NOT_FOUND")
    plan = gemini_plan(inner, cfg)
    usage = {"promptTokenCount": 100, "candidatesTokenCount": 10, "totalTokenCount": 110}
    response_id = _id("")

    def response(parts: list[dict], last: bool) -> dict:
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if last:
            cand["finishReason"] = "STOP"
        return {"candidates": [cand],
                "usageMetadata": usage if last else {"promptTokenCount": 100, "totalTokenCount": 100},
                "modelVersion": model, "responseId": response_id}

    if plan["kind"] == "tool":
        pieces = [[{"text": plan["text"]}],
                  [{"functionCall": {"name": plan["name"], "args": plan["args"]}}]]
    elif plan.get("json"):
        pieces = [[{"text": plan["text"]}]]
    else:
        pieces = [[{"text": p}] for p in split_evenly(plan["text"], 2)]
    summary = plan["kind"] + (f" {plan['name']}" if plan["kind"] == "tool" else "")
    if method == "generateContent":
        parts = [p for chunk in pieces for p in chunk]
        if plan["kind"] != "tool":
            parts = [{"text": "".join(p["text"] for p in parts)}]
        return json_reply(200, wrap(response(parts, True)), summary=summary + " json")
    objs = [wrap(response(parts, i == len(pieces) - 1)) for i, parts in enumerate(pieces)]
    if (req.query.get("alt") or [""])[0] == "sse":
        data = b"".join(b"data: " + _json_bytes(o) + b"\r\n\r\n" for o in objs)
        return Reply(200, [("Content-Type", "text/event-stream"), ("x-request-id", _id("req_"))], data,
                     summary=summary + " sse")
    # no alt: one JSON array, written element by element (unless a chunk size is configured)
    elements = [json.dumps(o, indent=2, ensure_ascii=False).encode() for o in objs]
    chunks = [b"[" + elements[0]] + [b"\n,\r\n" + e for e in elements[1:]] + [b"\n]"]
    return Reply(200, [("Content-Type", "application/json; charset=UTF-8")], b"".join(chunks),
                 chunks=None if cfg.get("chunk_size") else chunks, summary=summary + " json-array")


# ------------------------------------------------------------------------ model lists
FAKE_MODELS = ("claude-fake", "claude-sonnet-4-5", "fake-model", "gpt-5.5", "qwen3-coder-plus",
               "gemini-2.5-pro", "gemini-2.5-flash")


def list_models(req: Request, cfg: dict) -> Reply:
    """One list for every dialect: ``data`` (Anthropic/OpenAI shape) and ``models`` (Gemini)."""
    data = [{"type": "model", "id": m, "display_name": m, "created_at": "2025-01-01T00:00:00Z",
             "object": "model", "created": 1735689600, "owned_by": "fake"} for m in FAKE_MODELS]
    models = [{"name": f"models/{m}", "baseModelId": m, "version": "001", "displayName": m,
               "inputTokenLimit": 1048576, "outputTokenLimit": 65536,
               "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"]}
              for m in FAKE_MODELS if m.startswith("gemini")]
    return json_reply(200, {"data": data, "object": "list", "has_more": False,
                            "first_id": data[0]["id"], "last_id": data[-1]["id"], "models": models},
                      summary="models")


#: Dialect routes: ``re.fullmatch`` on the request path (query string removed) -> handler per
#: method. The first matching pattern wins.
ROUTES: dict[str, dict[str, Handler]] = {
    r"/v1/messages": {"POST": anthropic_messages},
    r"(/[^:]*)?/chat/completions": {"POST": openai_chat_completions},
    r"(/[^:]*)?/responses": {"POST": openai_responses},
    GEMINI_PATH.pattern: {"POST": gemini_generate},
    r"(/v1|/v1beta|/v1alpha|/openai/v1)?/models/?": {"GET": list_models},
}


# ------------------------------------------------------------------------------ server
class FakeState:
    """Config, request log and reply queue; shared by all handler threads."""

    CONFIG_KEYS = ("tool_name", "tool_args", "chunk_size", "chunk_delay", "force_stream", "final_text",
                   "reject_long_names", "leak_as_text")

    def __init__(self, *, tool_name: str = DEFAULT_TOOL_NAME, tool_args: Any = None,
                 chunk_size: int = 0, chunk_delay: float = 0.0, force_stream: bool | None = None,
                 final_text: str = DEFAULT_FINAL_TEXT, reject_long_names: bool = False,
                 log_dir: str | None = None) -> None:
        self.lock = threading.Lock()
        self.config: dict[str, Any] = {
            "tool_name": tool_name,
            "tool_args": dict(DEFAULT_TOOL_ARGS) if tool_args is None else tool_args,
            "chunk_size": int(chunk_size or 0),
            "chunk_delay": float(chunk_delay or 0.0),
            "force_stream": force_stream,
            "final_text": final_text,
            "reject_long_names": bool(reject_long_names),
            "leak_as_text": False,
        }
        self.log_dir = log_dir
        self.queue: deque[Reply] = deque()
        self.records: list[dict] = []
        self.counter = 0
        if log_dir:
            os.makedirs(log_dir, exist_ok=True)

    def update_config(self, changes: dict) -> dict:
        with self.lock:
            for key in self.CONFIG_KEYS:
                if key in changes:
                    value = changes[key]
                    if key == "chunk_size":
                        value = int(value or 0)
                    elif key == "chunk_delay":
                        value = float(value or 0.0)
                    elif key in ("reject_long_names", "leak_as_text"):
                        value = bool(value)
                    self.config[key] = value
            return dict(self.config)

    def snapshot_config(self) -> dict:
        with self.lock:
            return json.loads(json.dumps(self.config))

    def enqueue(self, spec: dict) -> int:
        headers = spec.get("headers") or {}
        pairs = list(headers.items()) if isinstance(headers, dict) else [tuple(p) for p in headers]
        chunks = None
        if spec.get("chunks_b64") is not None:
            chunks = [base64.b64decode(c) for c in spec["chunks_b64"]]
            body = b"".join(chunks)
        else:
            body = base64.b64decode(spec.get("body_b64") or "")
        reply = Reply(int(spec.get("status", 200)), pairs, body, chunks=chunks,
                      chunk_size=spec.get("chunk_size"), chunk_delay=spec.get("chunk_delay"),
                      summary=f"enqueued {spec.get('status', 200)}", source="enqueued")
        with self.lock:
            self.queue.append(reply)
            return len(self.queue)

    def pop_queued(self) -> Reply | None:
        with self.lock:
            return self.queue.popleft() if self.queue else None

    def reset(self) -> None:
        with self.lock:
            self.queue.clear()
            self.records.clear()

    def add_record(self, record: dict) -> dict:
        with self.lock:
            self.counter += 1
            record["n"] = self.counter
            self.records.append(record)
        self.write_record(record)
        return record

    def write_record(self, record: dict) -> None:
        if not self.log_dir:
            return
        path = os.path.join(self.log_dir, f"{record['n']:04d}.json")
        with self.lock:
            text = json.dumps(record, indent=2, ensure_ascii=False)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)

    def records_json(self) -> bytes:
        with self.lock:
            return json.dumps(self.records, ensure_ascii=False).encode()


class FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "toolvocab-fake-upstream/1.0"
    state: FakeState  # set on the subclass built by make_server()

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet; summaries go to stderr
        pass

    def setup(self) -> None:
        super().setup()
        try:  # small writes go out as separate TCP segments, so chunk splits survive
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    # -- reading
    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = bytearray()
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline(65537)
            return bytes(data)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    # -- writing
    def _write_reply(self, reply: Reply, record: dict | None) -> None:
        cfg = self.state.snapshot_config()
        size = cfg["chunk_size"] if reply.chunk_size is None else int(reply.chunk_size or 0)
        delay = cfg["chunk_delay"] if reply.chunk_delay is None else float(reply.chunk_delay or 0.0)
        chunks = reply.chunks
        if chunks is None and size > 0:
            chunks = [reply.body[i : i + size] for i in range(0, len(reply.body), size)]
        no_body = self.command == "HEAD" or reply.status in (204, 304) or 100 <= reply.status < 200
        self.send_response(reply.status)
        for k, v in reply.headers:
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        if no_body:
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif chunks is None:
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        else:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pieces = [c for c in chunks if c]  # an empty chunk would end the body early
            for i, piece in enumerate(pieces):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                if delay > 0 and i < len(pieces) - 1:
                    time.sleep(delay)
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if record is not None:
            with self.state.lock:
                record["reply"]["finished_at"] = time.time()
            self.state.write_record(record)

    def _control(self, path: str, raw: bytes) -> Reply | None:
        if not path.startswith("/__fake/"):
            return None
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return json_reply(400, {"error": "control body is not JSON"})
        name = path[len("/__fake/"):]
        if name == "config":
            if self.command == "POST":
                return json_reply(200, self.state.update_config(body))
            return json_reply(200, self.state.snapshot_config())
        if name == "enqueue" and self.command == "POST":
            return json_reply(200, {"queued": self.state.enqueue(body)})
        if name == "requests":
            return Reply(200, [("Content-Type", "application/json")], self.state.records_json())
        if name == "reset" and self.command == "POST":
            self.state.reset()
            return json_reply(200, {"reset": True})
        return json_reply(404, {"error": f"unknown control endpoint {self.command} {path}"})

    def _route(self, req: Request) -> Reply:
        cfg = self.state.snapshot_config()
        if req.method == "HEAD":
            return Reply(200, [("Content-Type", "text/plain")], b"", summary="head", source="builtin")
        for pattern, methods in ROUTES.items():
            if re.fullmatch(pattern, req.path):
                handler = methods.get(req.method)
                if handler is None:
                    return json_reply(405, {"type": "error", "error": {
                        "type": "invalid_request_error", "message": f"method {req.method} not allowed"}},
                        summary="405")
                return handler(req, cfg)
        return json_reply(404, {"type": "error", "error": {
            "type": "not_found_error", "message": f"fake_upstream: no route for {req.method} {req.path}"}},
            summary="404")

    def _handle(self) -> None:
        raw = self._read_body()
        url = urlsplit(self.path)
        control = self._control(url.path, raw)
        if control is not None:
            control.chunk_size, control.chunk_delay = 0, 0.0  # control replies: never slow
            self._write_reply(control, None)
            return
        enc = self.headers.get("Content-Encoding")
        decoded = decode_body(raw, enc)
        parsed: Any = None
        text: str | None = None
        if decoded:
            try:
                parsed = json.loads(decoded)
            except ValueError:
                text = decoded.decode("utf-8", "replace")
        req = Request(self.command, url.path, parse_qs(url.query), dict(self.headers.items()), raw, parsed)
        reply = self.state.pop_queued()
        if reply is None:
            try:
                reply = self._route(req)
            except Exception as e:  # keep the connection alive and say what broke
                reply = json_reply(500, {"type": "error", "error": {
                    "type": "api_error", "message": f"fake_upstream error: {e!r}"}}, summary=f"500 {e!r}")
        record = {
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": dict(self.headers.items()),
            "body": parsed if parsed is not None else text,
            "body_b64": base64.b64encode(raw).decode(),
            "content_encoding": enc,
            "reply": {
                "source": reply.source,
                "status": reply.status,
                "headers": [list(h) for h in reply.headers],
                "body_b64": base64.b64encode(reply.body).decode(),
                "summary": reply.summary,
                "started_at": time.time(),
            },
        }
        self.state.add_record(record)
        print(f"[fake_upstream] #{record['n']} {self.command} {self.path} -> {reply.status} {reply.summary}",
              file=sys.stderr, flush=True)
        self._write_reply(reply, record)

    def do_GET(self) -> None:
        self._handle_safely()

    def do_HEAD(self) -> None:
        self._handle_safely()

    def do_POST(self) -> None:
        self._handle_safely()

    def do_PUT(self) -> None:
        self._handle_safely()

    def do_DELETE(self) -> None:
        self._handle_safely()

    def _handle_safely(self) -> None:
        try:
            self._handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog is 5: a burst of concurrent connections (a proxy opening
    # 200 upstream connections at once, benchmarks/load.py) would be reset by the kernel.
    request_queue_size = 1024


def make_server(port: int = 0, state: FakeState | None = None, **opts: Any) -> ThreadingHTTPServer:
    state = state or FakeState(**opts)
    handler = type("BoundFakeHandler", (FakeHandler,), {"state": state})
    server = _Server(("127.0.0.1", port), handler)
    server.daemon_threads = True
    server.state = state  # type: ignore[attr-defined]
    return server


class FakeUpstream:
    """In-process use: ``with FakeUpstream(tool_name="bash") as fake: fake.url ...``."""

    def __init__(self, port: int = 0, **opts: Any) -> None:
        self.server = make_server(port, **opts)
        self.state: FakeState = self.server.state  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> "FakeUpstream":
        self._thread = threading.Thread(target=self.server.serve_forever, name="fake-upstream", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeUpstream":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--tool-name", default=DEFAULT_TOOL_NAME)
    ap.add_argument("--tool-args", default=json.dumps(DEFAULT_TOOL_ARGS), help="JSON")
    ap.add_argument("--chunk-size", type=int, default=0, help="bytes per transport chunk (0: Content-Length)")
    ap.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between chunks")
    ap.add_argument("--final-text", default=DEFAULT_FINAL_TEXT)
    ap.add_argument("--reject-long-names", action="store_true",
                    help="answer OpenAI's 400 string_above_max_length for declared tool names over 64 chars")
    a = ap.parse_args(argv)
    server = make_server(a.port, tool_name=a.tool_name, tool_args=json.loads(a.tool_args),
                         chunk_size=a.chunk_size, chunk_delay=a.chunk_delay, final_text=a.final_text,
                         reject_long_names=a.reject_long_names, log_dir=a.log_dir)
    print(f"READY {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
