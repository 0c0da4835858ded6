"""The fake upstream's wire layer: the request/reply types and the JSON / SSE byte builders
shared by every dialect (and by tests that hand-write upstream answers)."""

from __future__ import annotations

import gzip
import json
import uuid
import zlib
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Callable


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


def new_id(prefix: str) -> str:
    return prefix + uuid.uuid4().hex[:24]


def json_bytes(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def json_reply(status: int, obj: Any, summary: str = "", extra_headers: list | None = None) -> Reply:
    headers = [("Content-Type", "application/json"), ("request-id", new_id("req_"))]
    return Reply(status, headers + list(extra_headers or []), json_bytes(obj), summary=summary)


def sse_bytes(events: list[tuple[str | None, Any]], eol: str = "\n") -> bytes:
    """``[(event name or None, data dict or str)]`` -> SSE bytes: an ``event:`` line when named,
    one ``data:`` line (a str as it is, anything else as compact JSON, non-ASCII kept), a blank
    line after each; ``eol`` ends every line (Gemini's servers send ``\\r\\n``)."""
    out = bytearray()
    end = eol.encode()
    for name, data in events:
        if name:
            out += f"event: {name}".encode() + end
        out += b"data: " + (data.encode() if isinstance(data, str) else json_bytes(data)) + end + end
    return bytes(out)


def sse_reply(events: list[tuple[str | None, Any]], summary: str = "") -> Reply:
    headers = [
        ("Content-Type", "text/event-stream; charset=utf-8"),
        ("Cache-Control", "no-cache"),
        ("request-id", new_id("req_")),
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


# ------------------------------------------------------------------------- OpenAI errors / SSE
def long_name_error(names: list[tuple[str, str]]) -> Reply | None:
    """OpenAI's 400 for the first declared name over 64 characters (``--reject-long-names``)."""
    for param, name in names:
        if isinstance(name, str) and len(name) > 64:
            return json_reply(
                400,
                {
                    "error": {
                        "message": (
                            f"Invalid '{param}': string too long. Expected a string with maximum length 64, "
                            f"but got a string with length {len(name)} instead."
                        ),
                        "type": "invalid_request_error",
                        "param": param,
                        "code": "string_above_max_length",
                    }
                },
                summary=f"400 long tool name ({len(name)} chars)",
                extra_headers=[("x-request-id", new_id("req_"))],
            )
    return None


def openai_bad_body() -> Reply:
    return json_reply(
        400,
        {
            "error": {
                "message": "fake_upstream: body is not a JSON object",
                "type": "invalid_request_error",
                "param": None,
                "code": None,
            }
        },
        summary="400 body not JSON",
    )


def openai_sse_reply(events: list[tuple[str | None, Any]], summary: str) -> Reply:
    reply = sse_reply(events, summary=summary)
    reply.headers.append(("x-request-id", new_id("req_")))
    return reply
