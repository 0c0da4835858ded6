"""Scrubbing a captured flow for the corpus: credentials and identifying headers, the client's
prompts, injected context and tool descriptions; and the leak check over committed files."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path
from typing import Any

from mitmproxy import http

from flowreplay.calls import _gemini_request
from flowreplay.calls import parse_json
from flowreplay.calls import system_text_problems
from flowreplay.files import META_RECORD
from flowreplay.files import META_REQUEST
from flowreplay.files import META_UPSTREAM
from flowreplay.files import NEUTRAL_CONTEXT
from flowreplay.files import NEUTRAL_DESCRIPTION
from flowreplay.files import NEUTRAL_SYSTEM
from flowreplay.files import load_flows
from flowreplay.replay import _as_bytes
from flowreplay.replay import request_body
from toolvocab.addons.redaction import is_credential_header

#: Markers of client-injected context in user turns (scrubbed, and refused in committed flows).
CONTEXT_MARKERS = (
    "<system-reminder>",
    "<environment_context>",
    "<session_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<permissions instructions>",
    "We are setting up the context for our chat",
)


#: Request headers holding credentials (value replaced), and headers dropped outright.
CREDENTIAL_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "x-goog-api-key",
        "api-key",
        "openai-api-key",
        "x-auth-token",
        "x-access-token",
        "chatgpt-account-id",
        "openai-organization",
        "openai-project",
    }
)


COOKIE_HEADERS = frozenset({"cookie", "set-cookie", "set-cookie2"})


#: Headers that identify an installation or account (value replaced; not credentials).
IDENTIFYING_HEADERS = frozenset({"x-codex-turn-metadata", "chatgpt-account-id", "x-goog-user-project"})


REDACTED = "<redacted>"


_KEY_PARAM = re.compile(r"([?&](?:key|api_key|api-key|access_token|token)=)[^&#]*", re.IGNORECASE)


def _neutral_content(content: Any, text: str) -> Any:
    """``content`` with every text replaced by ``text`` (structure, cache_control… kept)."""
    if isinstance(content, str):
        return text
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(text)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append({**part, "text": text})
            else:
                out.append(part)
        return out
    return content


def _has_context_marker(text: str) -> bool:
    return any(m in text for m in CONTEXT_MARKERS)


def _scrub_user_parts(content: Any) -> Any:
    if isinstance(content, str):
        return NEUTRAL_CONTEXT if _has_context_marker(content) else content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and _has_context_marker(part["text"]):
                out.append({**part, "text": NEUTRAL_CONTEXT})
            elif isinstance(part, str) and _has_context_marker(part):
                out.append(NEUTRAL_CONTEXT)
            else:
                out.append(part)
        return out
    return content


def _scrub_descriptions(tools: Any, dialect: str | None) -> None:
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        for holder in (tool, tool.get("function"), tool.get("custom")):
            if isinstance(holder, dict) and isinstance(holder.get("description"), str):
                holder["description"] = NEUTRAL_DESCRIPTION
        if isinstance(tool.get("tools"), list):  # Responses namespace
            _scrub_descriptions(tool["tools"], dialect)
        for key in ("functionDeclarations", "function_declarations"):
            for decl in tool.get(key) or ():
                if isinstance(decl, dict) and isinstance(decl.get("description"), str):
                    decl["description"] = NEUTRAL_DESCRIPTION


def scrub_body(dialect: str | None, body: Any, *, descriptions: bool = True) -> Any:
    """A copy of a request body with every system slot set to :data:`NEUTRAL_SYSTEM`, client
    context injected into user turns set to :data:`NEUTRAL_CONTEXT` and (``descriptions``)
    top-level tool descriptions set to :data:`NEUTRAL_DESCRIPTION`. Tool names, schemas,
    messages and tool calls are kept."""
    body = copy.deepcopy(body)
    if not isinstance(body, dict):
        return body
    target = _gemini_request(body) if dialect == "gemini" else body
    if dialect == "anthropic":
        meta = target.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("user_id"), str):
            meta["user_id"] = REDACTED
        if target.get("system") not in (None, "", []):
            target["system"] = _neutral_content(target["system"], NEUTRAL_SYSTEM)
        for m in target.get("messages") or ():
            if isinstance(m, dict):
                if m.get("role") == "system":
                    m["content"] = _neutral_content(m.get("content"), NEUTRAL_SYSTEM)
                elif m.get("role") == "user":
                    m["content"] = _scrub_user_parts(m.get("content"))
    elif dialect == "openai_chat":
        for m in target.get("messages") or ():
            if isinstance(m, dict):
                if m.get("role") in ("system", "developer"):
                    m["content"] = _neutral_content(m.get("content"), NEUTRAL_SYSTEM)
                elif m.get("role") == "user":
                    m["content"] = _scrub_user_parts(m.get("content"))
    elif dialect == "openai_responses":
        if isinstance(target.get("instructions"), (str, list)) and target["instructions"]:
            target["instructions"] = _neutral_content(target["instructions"], NEUTRAL_SYSTEM)
        items = target.get("input")
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("type", "message") == "message":
                if item.get("role") in ("system", "developer"):
                    item["content"] = _neutral_content(item.get("content"), NEUTRAL_SYSTEM)
                elif item.get("role") == "user":
                    item["content"] = _scrub_user_parts(item.get("content"))
        if isinstance(target.get("client_metadata"), dict):
            target["client_metadata"] = {k: REDACTED for k in target["client_metadata"]}
    elif dialect == "gemini":
        for key in ("systemInstruction", "system_instruction"):
            value = target.get(key)
            if isinstance(value, str) and value:
                target[key] = NEUTRAL_SYSTEM
            elif isinstance(value, dict) and isinstance(value.get("parts"), list):
                value["parts"] = _neutral_content(value["parts"], NEUTRAL_SYSTEM)
        for content in target.get("contents") or ():
            if isinstance(content, dict) and content.get("role", "user") == "user":
                content["parts"] = _scrub_user_parts(content.get("parts"))
    if descriptions:
        _scrub_descriptions(target.get("tools"), dialect)
    return body


def _scrub_headers(headers: http.Headers) -> list[str]:
    changed = []
    for name in list(headers.keys()):
        low = name.lower()
        if low in COOKIE_HEADERS:
            del headers[name]
            changed.append(f"dropped {name}")
        elif low in CREDENTIAL_HEADERS or is_credential_header(low) or low in IDENTIFYING_HEADERS:
            values = headers.get_all(name)
            if any(v != REDACTED for v in values):
                headers.set_all(name, [REDACTED] * len(values))
                changed.append(f"redacted {name}")
    return changed


def scrub_flow(f: http.HTTPFlow, *, descriptions: bool = True) -> list[str]:
    """Scrub ``f`` in place: credentials, cookies, system prompts, injected context, tool
    descriptions, in both the saved request and ``toolvocab_request``. Returns what changed.
    The saved expectations are no longer consistent afterwards: re-bless the flow."""
    notes = _scrub_headers(f.request.headers)
    if f.response is not None:
        notes += _scrub_headers(f.response.headers)
    if f.metadata.pop("proxyauth", None) is not None:  # mitmproxy's proxyauth: (user, password)
        notes.append("dropped the proxyauth metadata")
    path = _KEY_PARAM.sub(lambda m: m.group(1) + REDACTED, f.request.path)
    if path != f.request.path:
        f.request.path = path
        notes.append("redacted a key= query parameter")
    dialect = (f.metadata.get(META_RECORD) or {}).get("dialect")
    for label, raw in (
        ("saved request", request_body(f.request)),
        ("toolvocab_request", _as_bytes(f.metadata.get(META_REQUEST))),
    ):
        body = parse_json(raw)
        if body is None:
            continue
        new = scrub_body(dialect, body, descriptions=descriptions)
        if new != body:
            data = json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode()
            if label == "saved request":
                f.request.content = data
            else:
                f.metadata[META_REQUEST] = data
            notes.append(f"replaced system prompt / client context / tool descriptions in the {label}")
    return notes


_SECRETISH = (
    re.compile(rb"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{3,}"),
    re.compile(rb"(?i)bearer\s+(?!<redacted>)[A-Za-z0-9._~+/=-]{3,}"),
    re.compile(rb"(?i)dummy"),
    re.compile(rb"(?i)AIza[0-9A-Za-z_-]{10,}"),
)


def leaks(path: str | os.PathLike) -> list[str]:
    """Credentials, cookies or client prompt text found in a flow file (empty: clean)."""
    problems = []
    raw = Path(path).read_bytes()
    blobs = [("file bytes", raw)]
    for f in load_flows(path):
        for side, msg in (("request", f.request), ("response", f.response)):
            if msg is None:
                continue
            for name, value in msg.headers.items(multi=True):
                low = name.lower()
                if low in COOKIE_HEADERS:
                    problems.append(f"flow {f.id[:8]}: {side} header {name} present")
                elif (low in CREDENTIAL_HEADERS or is_credential_header(low)) and value != REDACTED:
                    problems.append(f"flow {f.id[:8]}: {side} header {name} not redacted")
            blobs.append((f"flow {f.id[:8]} {side} body", msg.get_content(strict=False) or b""))
        for key in (META_REQUEST, META_UPSTREAM):
            if f.metadata.get(key) is not None:
                blobs.append((f"flow {f.id[:8]} {key}", _as_bytes(f.metadata[key]) or b""))
        auth = f.metadata.get("proxyauth")
        if isinstance(auth, (list, tuple)) and len(auth) == 2 and auth[1] != REDACTED:
            problems.append(f"flow {f.id[:8]}: proxyauth metadata holds a password")
        if _KEY_PARAM.search(f.request.path) and REDACTED not in f.request.path:
            problems.append(f"flow {f.id[:8]}: key parameter in the path")
        dialect = (f.metadata.get(META_RECORD) or {}).get("dialect")
        sentence = (f.metadata.get(META_RECORD) or {}).get("prompt_sentence")
        for label, data in (
            ("saved request", request_body(f.request)),
            ("toolvocab_request", _as_bytes(f.metadata.get(META_REQUEST))),
        ):
            body = parse_json(data)
            for text in system_text_problems(dialect, body, sentence):
                problems.append(f"flow {f.id[:8]}: {label} system slot holds client text: {text!r}")
            if data and any(m.encode() in data for m in CONTEXT_MARKERS):
                problems.append(f"flow {f.id[:8]}: {label} holds client-injected context")
    for label, blob in blobs:
        for pattern in _SECRETISH:
            m = pattern.search(blob)
            if m:
                problems.append(f"{label}: looks like a credential: {m.group(0)[:40]!r}")
    return sorted(set(problems))
