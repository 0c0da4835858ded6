"""``flows/MANIFEST.toml``: one entry per committed flow (dialect, source, bugs, expected outcome,
the client's calls), read and written in a stable layout."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from mitmproxy import http

from flowreplay import files
from flowreplay.calls import client_call_keys
from flowreplay.files import META_RECORD


def read_manifest(path: Path | None = None) -> dict[str, Any]:
    path = path or files.FLOWS_DIR / "MANIFEST.toml"
    if not path.exists():
        return {"flows": {}}
    with open(path, "rb") as fp:
        data = tomllib.load(fp)
    data.setdefault("flows", {})
    return data


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to the manifest")


FLOW_KEYS = ("dialect", "streamed", "bugs", "source", "expected", "client_calls", "note")


def write_manifest(data: dict[str, Any], path: Path | None = None, header: str = "") -> None:
    """Write the manifest (top-level scalars/lists, then one ``[flows."file"]`` table each)."""
    lines = [header.rstrip()] if header else []
    top = [f"{key} = {_toml_value(value)}" for key, value in data.items() if key != "flows"]
    if top:
        lines += [""] + top
    for name in sorted(data.get("flows", {})):
        entry = data["flows"][name]
        lines += ["", f"[flows.{_toml_value(name)}]"]
        for key in FLOW_KEYS:
            if key in entry and entry[key] is not None:
                lines.append(f"{key} = {_toml_value(entry[key])}")
        for key in sorted(set(entry) - set(FLOW_KEYS)):
            lines.append(f"{key} = {_toml_value(entry[key])}")
    path = path or files.FLOWS_DIR / "MANIFEST.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).lstrip("\n") + "\n")


MANIFEST_HEADER = """\
# The flow corpus: one table per file under flows/ (path relative to flows/).
#   dialect       anthropic | openai_chat | openai_responses | gemini (from the flow's record)
#   streamed      the answer went through the addon's stream callable
#   bugs          bug-report ids the flow exemplifies (BR-nn), possibly none
#   source        "harness" (tests/make_flows.py) | "agent:<name>" (a real agent run) | "user"
#   expected      repair (the client must get a changed tool call), leave (the answer must reach
#                 the client unchanged), pass (an error answer passed through)
#   client_calls  the tool-call names the client receives, as recorded
#   note          why, especially where the addon does not (yet) do what the bug report asks
# tests/test_flows.py checks every entry against its file; `flowtool add` appends entries.
# Re-bless a flow: uv run python tests/flowtool.py bless flows/<file>  (see docs/flows.md)"""


def manifest_entry(
    f: http.HTTPFlow, *, source: str, bugs: Iterable[str] = (), expected: str | None = None, note: str | None = None
) -> dict[str, Any]:
    """A manifest table for a (blessed) flow, derived from its record and saved answer."""
    record = f.metadata.get(META_RECORD) or {}
    calls = client_call_keys(f)
    if expected is None:
        if f.response is not None and not 200 <= f.response.status_code < 300:
            expected = "pass"
        else:
            expected = "repair" if record.get("response_changed") else "leave"
    entry: dict[str, Any] = {
        "dialect": record.get("dialect"),
        "streamed": bool(record.get("streamed")),
        "bugs": sorted(set(bugs)),
        "source": source,
        "expected": expected,
        "client_calls": calls,
    }
    if note:
        entry["note"] = note
    return entry
