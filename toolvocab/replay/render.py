"""A replay failure and a flow as text, for people: side-by-side bodies, decisions, record fields."""

from __future__ import annotations

import difflib
import json

from mitmproxy import http

from toolvocab.replay.calls import declared_names
from toolvocab.replay.calls import parse_json
from toolvocab.replay.calls import sse_events
from toolvocab.replay.calls import system_slots
from toolvocab.replay.calls import tool_calls
from toolvocab.replay.compare import Replay
from toolvocab.replay.flows import META_DIFF
from toolvocab.replay.flows import META_RECORD
from toolvocab.replay.flows import META_REQUEST
from toolvocab.replay.flows import META_UPSTREAM
from toolvocab.replay.flows import original_request
from toolvocab.replay.flows import original_upstream
from toolvocab.replay.flows import request_body

#: The last line of a failure, for a user's recordings (``toolvocab replay``).
HINT = "If this change is intended, record the flow again (mitmdump -w, or --set toolvocab_record=DIR)."


def _decision_lines(record: dict | None) -> list[str]:
    lines = []
    for d in (record or {}).get("decisions") or ():
        name = f"{d.get('namespace') or ''}{d.get('name')}" + (" (lifted from text)" if d.get("lifted") else "")
        if d.get("action") in ("rename", "fit"):
            target = f"{d.get('target_namespace') or ''}{d.get('target') or d.get('name')}"
            lines.append(f"{name} → {target}  ({d.get('action')} at {d.get('step')}: {d.get('reason')})")
        else:
            lines.append(f"{name}  ({d.get('action')} at {d.get('step')}: {d.get('reason')})")
    return lines


def _side_by_side(title: str, expected: list[str], got: list[str]) -> list[str]:
    out = [f"{title}:"]
    if not expected and not got:
        return out + ["    (none)"]
    out.append("  expected:")
    out += [f"    {line}" for line in expected] or ["    (none)"]
    out.append("  got:")
    out += [f"    {line}" for line in got] or ["    (none)"]
    return out


def _pretty(data: bytes | None) -> list[str]:
    value = parse_json(data)
    if value is not None:
        return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True).splitlines()
    if data is None:
        return []
    return data.decode("utf-8", "replace").splitlines()


def _unified(expected: list[str], got: list[str], limit: int = 40) -> list[str]:
    lines = list(difflib.unified_diff(expected, got, "expected", "got", n=1, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return ["    " + line[:300] for line in lines]


def _record_field_lines(expected: dict | None, got: dict | None) -> list[str]:
    expected, got = expected or {}, got or {}
    lines = []
    for key in sorted(set(expected) | set(got)):
        if key == "decisions" or expected.get(key) == got.get(key):
            continue
        lines.append(
            f"    {key}: {json.dumps(expected.get(key), ensure_ascii=False)[:200]} → {json.dumps(got.get(key), ensure_ascii=False)[:200]}"
        )
    return lines


def flow_title(f: http.HTTPFlow) -> str:
    record = f.metadata.get(META_RECORD) or {}
    streamed = "streamed" if record.get("streamed") else "not streamed"
    return (
        f"flow {f.id} — {record.get('dialect')}, {streamed}, mode {record.get('mode')}, "
        f"{f.request.method} {f.request.path.split('?', 1)[0]}"
    )


def render_failure(saved: http.HTTPFlow, result: Replay, source: str = "", hint: str = HINT) -> str:
    """A readable account of a replay that does not match the recording: tool calls as the
    client gets them (expected vs got), the addon's decisions, record fields, and where the
    request the upstream receives differs; ``hint`` last."""
    exp, got = result.expected, result.got
    dialect = (saved.metadata.get(META_RECORD) or {}).get("dialect")
    lines = [
        f"{source}{' ' if source else ''}{flow_title(saved)} (chunk seed {result.seed})",
        f"differs in: {', '.join(result.problems)}",
    ]
    upstream_calls = tool_calls(dialect, original_upstream(saved))
    lines += [f"upstream answered: {c.label()}" for c in upstream_calls] or ["upstream answered: no tool calls"]
    exp_calls = [c.label() for c in tool_calls(dialect, exp.response)]
    got_calls = [c.label() for c in tool_calls(dialect, got.response)]
    if exp_calls == got_calls:
        lines += [f"tool calls the client receives (as recorded): {c}" for c in exp_calls] or [
            "tool calls the client receives: none, as recorded"
        ]
    else:
        lines += _side_by_side("tool calls the client receives", exp_calls, got_calls)
    exp_dec, got_dec = _decision_lines(exp.record), _decision_lines(got.record)
    if exp_dec != got_dec:
        lines += _side_by_side("decisions", exp_dec, got_dec)
    fields = _record_field_lines(exp.record, got.record)
    if fields:
        lines += ["record fields (expected → got):"] + fields
    if exp.response != got.response and exp_calls == got_calls:
        lines += ["the client's bytes differ outside the tool calls:"] + _unified(
            _answer_lines(exp.response), _answer_lines(got.response)
        )
    if exp.request != got.request:
        exp_body, got_body = parse_json(exp.request), parse_json(got.request)
        exp_names, got_names = declared_names(dialect, exp_body), declared_names(dialect, got_body)
        lines.append("request the upstream receives:")
        if exp_names != got_names:
            lines += [
                "  " + line
                for line in _side_by_side("tool names sent upstream", [", ".join(exp_names)], [", ".join(got_names)])
            ]
        exp_sys = [t.replace("\n", "\\n") for t in system_slots(dialect, exp_body)]
        got_sys = [t.replace("\n", "\\n") for t in system_slots(dialect, got_body)]
        if exp_sys != got_sys:
            lines += ["  " + line for line in _side_by_side("system texts", exp_sys, got_sys)]
        lines += _unified(_pretty(exp.request), _pretty(got.request))
    for title, before, after in (
        ("request headers the upstream receives", exp.request_headers, got.request_headers),
        ("response headers the client receives", exp.response_headers, got.response_headers),
    ):
        if before != after:
            lines += [f"{title}:"] + _unified(_header_lines(before), _header_lines(after))
    if (exp.diff or "") != (got.diff or ""):
        lines += ["toolvocab_diff:"] + _unified((exp.diff or "").splitlines(), (got.diff or "").splitlines())
    if (exp.marked, exp.comment) != (got.marked, got.comment):
        lines.append(f"marker/comment: {exp.marked!r} {exp.comment!r} → {got.marked!r} {got.comment!r}")
    lines.append(hint)
    return "\n".join(lines)


def _header_lines(fields: list[tuple[bytes, bytes]] | None) -> list[str]:
    """Header fields as ``name: value`` lines (none: no response)."""
    return [f"{k.decode('latin-1')}: {v.decode('latin-1')}" for k, v in fields or ()]


def _answer_lines(data: bytes | None) -> list[str]:
    """An answer body as readable lines: one line per SSE event or pretty JSON."""
    if data is None:
        return []
    value = parse_json(data)
    if value is not None:
        return json.dumps(value, indent=1, ensure_ascii=False).splitlines()
    return [f"{name or 'message'}: {text}" for name, text in sse_events(data)] or data.decode(
        "utf-8", "replace"
    ).splitlines()


def describe_flow(f: http.HTTPFlow) -> str:
    """What the addon did to a saved flow, from its metadata: request-side changes, tool calls
    as the upstream sent them and as the client got them, decisions and notes."""
    record = f.metadata.get(META_RECORD) or {}
    dialect = record.get("dialect")
    lines = [flow_title(f)]
    if record.get("skipped"):
        lines.append(f"skipped: {record['skipped']}")
    client_body = parse_json(original_request(f))
    upstream_body = parse_json(request_body(f.request))
    before, after = declared_names(dialect, client_body), declared_names(dialect, upstream_body)
    lines.append("request side:")
    lines.append(f"  client declared: {', '.join(before) or '(none)'}")
    if before != after:
        lines.append(f"  upstream got:    {', '.join(after) or '(none)'}")
    if record.get("prompt_sentence"):
        lines.append(
            f"  {'added' if record.get('request_changed') else 'would add'} to the system prompt: {record['prompt_sentence']}"
        )
    if not f.metadata.get(META_REQUEST):
        lines.append("  request body unchanged")
    lines.append("answer side:")
    up = tool_calls(dialect, original_upstream(f))
    cl = tool_calls(dialect, f.response.raw_content if f.response else None)
    lines += [f"  upstream: {c.label()}" for c in up] or ["  upstream: no tool calls"]
    lines += [f"  client:   {c.label()}" for c in cl] or ["  client:   no tool calls"]
    if f.response is not None:
        lines.append(
            f"  status {f.response.status_code}; answer {'changed' if f.metadata.get(META_UPSTREAM) is not None else 'unchanged'}"
        )
    if f.metadata.get(META_DIFF):
        lines.append("toolvocab_diff:")
        lines += ["  " + line for line in str(f.metadata[META_DIFF]).splitlines()]
    for note in record.get("notes") or ():
        lines.append(f"note: {note}")
    return "\n".join(lines)
