"""Gemini answers (``…/models/M:generateContent``, ``:streamGenerateContent`` with or without
``alt=sse``, ``:countTokens``, Vertex-style paths and Code Assist ``/v1internal:<method>``)."""

from __future__ import annotations

import json
import re
import uuid
from typing import Any

from fakeup.policy import decide
from fakeup.wire import Reply
from fakeup.wire import Request
from fakeup.wire import json_reply
from fakeup.wire import new_id
from fakeup.wire import split_evenly
from fakeup.wire import sse_bytes

GEMINI_PATH = re.compile(
    r"/(?:v1(?:alpha|beta|beta1)?(?:/projects/[^/]+/locations/[^/]+/publishers/google)?"
    r"/models/(?P<model>[^/:]+)|v1internal):(?P<method>\w+)"
)


def _gemini_inner(body: dict, code_assist: bool) -> dict:
    if code_assist and isinstance(body.get("request"), dict):
        return body["request"]
    return body


def gemini_plan(inner: dict, cfg: dict) -> dict:
    tools = [
        d.get("name")
        for t in inner.get("tools") or []
        if isinstance(t, dict)
        for d in t.get("functionDeclarations") or t.get("function_declarations") or []
        if isinstance(d, dict)
    ]
    contents = [c for c in inner.get("contents") or [] if isinstance(c, dict)]

    def responses_in(c: dict) -> list[dict]:
        return [
            p["functionResponse"]
            for p in c.get("parts") or []
            if isinstance(p, dict) and isinstance(p.get("functionResponse"), dict)
        ]

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


def gemini_candidate(parts: list[dict], last: bool) -> dict:
    """One ``candidates`` entry: a model content of ``parts``, ``finishReason: STOP`` on the last
    response of an answer."""
    cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if last:
        cand["finishReason"] = "STOP"
    return cand


def gemini_sse(responses: list[dict]) -> bytes:
    """``alt=sse``: each response one ``data:`` event, lines ended with ``\\r\\n`` as Google's servers do."""
    return sse_bytes([(None, r) for r in responses], eol="\r\n")


def json_array_chunks(responses: list[dict], sep: bytes = b"\n,\r\n", close: bytes = b"\n]") -> list[bytes]:
    """``streamGenerateContent`` without ``alt``: one JSON array written element by element, each
    response pretty-printed (indent 2, non-ASCII kept): ``[`` + the first, then ``sep`` + each next,
    then ``close``.  The defaults are the separators Google's servers write."""
    elements = [json.dumps(r, indent=2, ensure_ascii=False).encode() for r in responses]
    return [b"[" + elements[0]] + [sep + e for e in elements[1:]] + [close]


def gemini_error(status: int, message: str, reason: str = "INVALID_ARGUMENT") -> Reply:
    return json_reply(
        status, {"error": {"code": status, "message": message, "status": reason}}, summary=f"{status} {message[:40]}"
    )


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
    response_id = new_id("")

    def response(parts: list[dict], last: bool) -> dict:
        return {
            "candidates": [gemini_candidate(parts, last)],
            "usageMetadata": usage if last else {"promptTokenCount": 100, "totalTokenCount": 100},
            "modelVersion": model,
            "responseId": response_id,
        }

    if plan["kind"] == "tool":
        pieces = [[{"text": plan["text"]}], [{"functionCall": {"name": plan["name"], "args": plan["args"]}}]]
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
        return Reply(
            200,
            [("Content-Type", "text/event-stream"), ("x-request-id", new_id("req_"))],
            gemini_sse(objs),
            summary=summary + " sse",
        )
    # no alt: one JSON array, written element by element (unless a chunk size is configured)
    chunks = json_array_chunks(objs)
    return Reply(
        200,
        [("Content-Type", "application/json; charset=UTF-8")],
        b"".join(chunks),
        chunks=None if cfg.get("chunk_size") else chunks,
        summary=summary + " json-array",
    )
