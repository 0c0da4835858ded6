"""What a flow's bodies say (the package's :mod:`toolvocab.replay.calls`, re-exported: the tool
calls in an answer, every dialect, streamed or not; the declared names and system slots of a
request) and the checks a committed flow's calls must pass."""

from __future__ import annotations

from typing import Any

from mitmproxy import http

from flowreplay.files import META_RECORD
from flowreplay.files import NEUTRAL_TEXTS
from flowreplay.replay import original_request
from flowreplay.replay import original_upstream
from flowreplay.replay import request_body
from toolvocab.replay.calls import Call  # noqa: F401
from toolvocab.replay.calls import _anthropic_calls  # noqa: F401
from toolvocab.replay.calls import _args  # noqa: F401
from toolvocab.replay.calls import _chat_calls  # noqa: F401
from toolvocab.replay.calls import _gemini_calls  # noqa: F401
from toolvocab.replay.calls import _gemini_request  # noqa: F401
from toolvocab.replay.calls import _json_units  # noqa: F401
from toolvocab.replay.calls import _responses_calls  # noqa: F401
from toolvocab.replay.calls import _responses_item_call  # noqa: F401
from toolvocab.replay.calls import _text_of  # noqa: F401
from toolvocab.replay.calls import _unwrap_gemini  # noqa: F401
from toolvocab.replay.calls import declared_names  # noqa: F401
from toolvocab.replay.calls import parse_json  # noqa: F401
from toolvocab.replay.calls import sse_events  # noqa: F401
from toolvocab.replay.calls import system_slots  # noqa: F401
from toolvocab.replay.calls import tool_calls  # noqa: F401


def system_text_problems(dialect: str | None, body: Any, sentence: str | None) -> list[str]:
    """System texts that are neither a neutral text nor the addon's own sentence (nor both)."""
    bad = []
    for text in system_slots(dialect, body):
        rest = text
        if sentence:
            rest = rest.replace("\n\n" + sentence, "").replace(sentence, "")
        if rest and rest not in NEUTRAL_TEXTS:
            bad.append(text[:120] + ("…" if len(text) > 120 else ""))
    return bad


def client_calls(f: http.HTTPFlow) -> list[Call]:
    """The tool calls the client receives in a saved flow."""
    dialect = (f.metadata.get(META_RECORD) or {}).get("dialect")
    return tool_calls(dialect, f.response.raw_content if f.response else None)


def client_call_keys(f: http.HTTPFlow) -> list[str]:
    return [c.key() for c in client_calls(f)]


#: Dialects whose tool calls carry ids the client pairs results by (Gemini pairs by name).
ID_DIALECTS = ("anthropic", "openai_chat", "openai_responses")


def semantic_problems(f: http.HTTPFlow, entry: dict[str, Any]) -> list[str]:
    """Where a saved flow contradicts its manifest entry: the tool calls the client receives,
    what ``expected`` promises, and the contracts every repaired answer keeps (ids present
    and distinct; Chat/Responses arguments as strings)."""
    problems = []
    record = f.metadata.get(META_RECORD) or {}
    dialect = record.get("dialect")
    calls = client_calls(f)
    keys = [c.key() for c in calls]
    if keys != list(entry.get("client_calls") or []):
        problems.append(f"the client receives {keys}, the manifest says {entry.get('client_calls')}")
    if entry.get("dialect") != dialect:
        problems.append(f"dialect is {dialect}, the manifest says {entry.get('dialect')}")
    if bool(entry.get("streamed")) != bool(record.get("streamed")):
        problems.append(f"streamed is {bool(record.get('streamed'))}, the manifest says {entry.get('streamed')}")
    expected = entry.get("expected")
    upstream = original_upstream(f)
    delivered = f.response.raw_content if f.response else None
    status = f.response.status_code if f.response else None
    changed = delivered != upstream
    if bool(record.get("response_changed")) != changed and record.get("mode") != "observe":
        problems.append(
            f"the record says response_changed={bool(record.get('response_changed'))}, "
            f"but the client's bytes {'differ from' if changed else 'equal'} the upstream's"
        )
    if expected == "repair":
        if not changed:
            problems.append("expected a repaired answer, but the client receives the upstream's bytes")
    elif expected == "leave":
        if changed:
            problems.append("expected the answer to reach the client unchanged, but it was changed")
    elif expected == "pass":
        if status is None or 200 <= status < 300:
            problems.append(f"expected an error answer passed through, got status {status}")
        if delivered != upstream:
            problems.append("the error answer was changed on its way to the client")
        sent = declared_names(dialect, parse_json(request_body(f.request)))
        declared = declared_names(dialect, parse_json(original_request(f)))
        if sent != declared:
            problems.append(f"the request's tools changed on the way up: {declared} -> {sent}")
    else:
        problems.append(f"unknown expected value {expected!r}")
    if expected == "repair" and dialect in ID_DIALECTS:
        ids = [c.id for c in calls]
        if any(not isinstance(i, str) or not i for i in ids):
            problems.append(f"a tool call reaches the client without an id: {ids}")
        elif len(set(ids)) != len(ids):
            problems.append(f"tool-call ids are not distinct: {ids}")
    if expected == "repair" and dialect in ("openai_chat", "openai_responses"):
        bad = [c.qualified for c in calls if c.object_arguments]
        if bad:
            problems.append(f"arguments reach the client as a JSON object, not a string: {bad}")
    return problems
