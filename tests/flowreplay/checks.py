"""What tests/test_flows.py checks, as functions ``tests/flowtool.py replay`` runs too (one
definition, so that the two cannot drift apart): per corpus file, that it replays as recorded
(three random chunkings and once byte by byte), does what its manifest table says, holds no
credentials and only neutral system text; over the corpus, that the manifest and the files
match and that every dialect, bug report and agent has a flow. Each function returns the
problems as readable lines (empty: the check passes)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from flowreplay import files
from flowreplay.calls import parse_json
from flowreplay.calls import semantic_problems
from flowreplay.calls import system_text_problems
from flowreplay.files import DIALECTS
from flowreplay.files import META_RECORD
from flowreplay.files import load_flows
from flowreplay.files import rel
from flowreplay.render import render_failure
from flowreplay.replay import Replayer
from flowreplay.replay import original_request
from flowreplay.replay import replayable
from flowreplay.replay import request_body
from flowreplay.scrub import leaks
from toolvocab.replay.compare import SEEDS
from toolvocab.replay.compare import first_difference

#: Every bug report in the project's bug log; each needs at least one flow.
BUG_REPORTS = (
    "BR-01",
    "BR-03",
    "BR-04",
    "BR-05",
    "BR-06",
    "BR-08",
    "BR-10",
    "BR-12",
    "BR-14",
    "BR-15",
    "BR-17",
    "BR-18",
    "BR-20",
    "BR-21",
    "BR-23",
    "BR-24",
    "BR-25",
    "BR-27",
    "BR-28",
    "BR-30",
    "BR-31",
)
AGENTS = ("claude-code", "codex", "gemini-cli", "opencode", "qwen-code")


def in_corpus(path: Path) -> bool:
    """Whether ``path`` is a file of the corpus (under ``files.FLOWS_DIR``)."""
    try:
        Path(path).resolve().relative_to(files.FLOWS_DIR.resolve())
        return True
    except ValueError:
        return False


def replay_problems(r: Replayer, path: Path) -> list[str]:
    """Every flow of ``path`` replays as recorded, with each seed of ``SEEDS`` and byte by byte
    (the request the upstream receives, the bytes the client receives, record, diff, marker,
    comment); the file holds a flow."""
    flows = load_flows(path)
    problems = []
    for f in flows:
        why = replayable(f)
        if why is not None:
            problems.append(f"{rel(path)}: flow {f.id} cannot be replayed: {why}")
            continue
        bad = first_difference(r, f, SEEDS)
        if bad is not None:
            problems.append(render_failure(f, bad, source=rel(path)))
    if not flows:
        problems.append(f"{rel(path)} holds no flow")
    return problems


def manifest_problems(path: Path, manifest: dict[str, Any]) -> tuple[list[str], str | None]:
    """``(problems, known issue)``: where the file contradicts its ``flows/MANIFEST.toml`` table
    (the tool calls the client receives, ``expected``, …). A table marked ``known_issue`` whose
    problems persist gives no problems and the issue (pytest's xfail); one whose problems are
    gone is a problem (remove ``known_issue``)."""
    entry = manifest["flows"].get(rel(path))
    if entry is None:
        return [f"{rel(path)} is not in flows/MANIFEST.toml (flowtool add writes the entry)"], None
    problems = [p for f in load_flows(path) for p in semantic_problems(f, entry)]
    issue = entry.get("known_issue")
    if issue and problems:
        return [], f"known addon issue: {issue[:160]}{'…' if len(issue) > 160 else ''}"
    if issue:
        return [
            f"{rel(path)} is marked known_issue but now does what the bug report asks; "
            f"remove known_issue from flows/MANIFEST.toml ({issue})"
        ], None
    return ([f"{rel(path)}:\n  " + "\n  ".join(problems)] if problems else []), None


def credential_problems(path: Path) -> list[str]:
    """Credentials, cookies or client prompt text left in the file."""
    found = leaks(path)
    return [f"{rel(path)}:\n  " + "\n  ".join(found)] if found else []


def system_problems(path: Path) -> list[str]:
    """Every system slot of every request body in the file — what the upstream received and the
    client's original — is one of the neutral texts (plus, upstream, the addon's sentence)."""
    bad = []
    for f in load_flows(path):
        record = f.metadata.get(META_RECORD) or {}
        dialect, sentence = record.get("dialect"), record.get("prompt_sentence")
        bodies = {"upstream-received": request_body(f.request), "client original": original_request(f)}
        for label, data in bodies.items():
            bad += [f"{label}: {t!r}" for t in system_text_problems(dialect, parse_json(data), sentence)]
    return [f"{rel(path)}: system text that is not neutral:\n  " + "\n  ".join(bad)] if bad else []


def file_checks(r: Replayer, path: Path, manifest: dict[str, Any]) -> tuple[list[str], str | None]:
    """Every per-file check of tests/test_flows.py on one corpus file: ``(problems, known issue)``."""
    problems = replay_problems(r, path)
    found, issue = manifest_problems(path, manifest)
    problems += found + credential_problems(path) + system_problems(path)
    return problems, issue


# -- the corpus as a whole ------------------------------------------------------------------------


def size_problems(paths: list[Path]) -> list[str]:
    return [] if len(paths) >= len(BUG_REPORTS) else [f"flows/ holds only {len(paths)} flow files"]


def listing_problems(paths: Iterable[Path], manifest: dict[str, Any]) -> list[str]:
    listed, present = set(manifest["flows"]), {rel(p) for p in paths}
    out = []
    if present - listed:
        out.append(f"flow files missing from flows/MANIFEST.toml: {sorted(present - listed)}")
    if listed - present:
        out.append(f"flows/MANIFEST.toml lists missing files: {sorted(listed - present)}")
    return out


def dialect_problems(paths: Iterable[Path]) -> list[str]:
    seen: Counter = Counter()
    for path in paths:
        for f in load_flows(path):
            record = f.metadata.get(META_RECORD) or {}
            seen[(record.get("dialect"), bool(record.get("streamed")))] += 1
    missing = [(d, s) for d in DIALECTS for s in (True, False) if not seen[(d, s)]]
    return [f"no flow for {missing}; have {dict(seen)}"] if missing else []


def bug_problems(manifest: dict[str, Any]) -> list[str]:
    required = set(manifest.get("required_bugs") or ())
    if not set(BUG_REPORTS) <= required:
        return [f"MANIFEST.toml required_bugs lacks {sorted(set(BUG_REPORTS) - required)}"]
    covered = Counter(b for e in manifest["flows"].values() for b in e.get("bugs") or ())
    missing = sorted(b for b in required if not covered[b])
    return [f"no flow for {missing}"] if missing else []


def agent_problems(manifest: dict[str, Any]) -> list[str]:
    required = set(manifest.get("required_agents") or ())
    if not set(AGENTS) <= required:
        return [f"MANIFEST.toml required_agents lacks {sorted(set(AGENTS) - required)}"]
    sources = Counter(e.get("source") for e in manifest["flows"].values())
    missing = sorted(a for a in required if not sources[f"agent:{a}"])
    return [f"no flow recorded from a real run of {missing} (tests/make_flows.py agents)"] if missing else []


def entry_problems(manifest: dict[str, Any]) -> list[str]:
    bad = []
    for name, entry in manifest["flows"].items():
        if entry.get("dialect") not in DIALECTS:
            bad.append(f"{name}: dialect {entry.get('dialect')!r}")
        if entry.get("expected") not in ("repair", "leave", "pass"):
            bad.append(f"{name}: expected {entry.get('expected')!r}")
        source = str(entry.get("source"))
        if source not in ("harness", "user") and not source.startswith("agent:"):
            bad.append(f"{name}: source {source!r}")
        # a bug report (BR-nn) or an issue of this project (I10: issue 10's kinds)
        if not all(re.fullmatch(r"BR-\d+|I\d+", str(b)) for b in entry.get("bugs") or ()):
            bad.append(f"{name}: bugs {entry.get('bugs')!r}")
    return bad


def corpus_checks(paths: list[Path], manifest: dict[str, Any]) -> list[str]:
    """Every corpus-wide check of tests/test_flows.py."""
    return (
        size_problems(paths)
        + listing_problems(paths, manifest)
        + dialect_problems(paths)
        + bug_problems(manifest)
        + agent_problems(manifest)
        + entry_problems(manifest)
    )
