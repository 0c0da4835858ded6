"""The saved-flow corpus in ``flows/`` as tests (docs/flows.md).

Every ``flows/*.mitm`` and ``flows/*/*.mitm`` is replayed through the real addon the way
mitmproxy drives it (tests/flowreplay/replay.py): the client's original request through the request
hook, the upstream's original bytes through the stream callable in random 1–64-byte pieces
(several seeds, and once byte by byte) and the response hook. What the upstream would receive
and what the client would receive must equal the recording, and so must the addon's record
(timings aside), diff text, marker and comment. A mismatch fails with a readable tool-call
diff; ``uv run python tests/flowtool.py bless FILE`` re-records an intended change.

``flows/MANIFEST.toml`` describes each file (dialect, streamed, bug ids, source, expected, the
tool calls the client must receive); the corpus must cover every dialect streamed and not,
every bug report and every agent, and no file may hold credentials or client prompt text.
"""

from __future__ import annotations

import re

from collections import Counter
from pathlib import Path

import pytest

import flowreplay as fr

FILES = fr.corpus_files()
MANIFEST = fr.read_manifest()
SEEDS = (0, 1, 2)

#: Every bug report in the project's bug log; each needs at least one flow.
BUG_REPORTS = (
    "BR-01", "BR-03", "BR-04", "BR-05", "BR-06", "BR-08", "BR-10", "BR-12", "BR-14", "BR-15", "BR-17",
    "BR-18", "BR-20", "BR-21", "BR-23", "BR-24", "BR-25", "BR-27", "BR-28", "BR-30", "BR-31",
)
AGENTS = ("claude-code", "codex", "gemini-cli", "opencode", "qwen-code")


def _ids(paths: list[Path]) -> list[str]:
    return [fr.rel(p) for p in paths]


@pytest.fixture(scope="module")
def replayer():
    with fr.Replayer() as r:
        yield r


def test_the_corpus_is_not_empty():
    assert len(FILES) >= len(BUG_REPORTS), f"flows/ holds only {len(FILES)} flow files"


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_flow_replays_as_recorded(replayer, path):
    flows = fr.load_flows(path)
    replayed = 0
    for f in flows:
        why = fr.replayable(f)
        if why is not None:
            pytest.fail(f"{fr.rel(path)}: flow {f.id} cannot be replayed: {why}", pytrace=False)
        runs = [replayer.replay(f, seed) for seed in SEEDS]
        runs.append(replayer.replay(f, 99, lo=1, hi=1))  # every byte its own chunk
        for res in runs:
            if not res.ok:
                pytest.fail(fr.render_failure(f, res, source=fr.rel(path)), pytrace=False)
        replayed += 1
    assert replayed, f"{fr.rel(path)} holds no flow"


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_flow_does_what_the_manifest_says(path):
    entry = MANIFEST["flows"].get(fr.rel(path))
    if entry is None:
        pytest.fail(f"{fr.rel(path)} is not in flows/MANIFEST.toml (flowtool add writes the entry)", pytrace=False)
    problems = [p for f in fr.load_flows(path) for p in fr.semantic_problems(f, entry)]
    issue = entry.get("known_issue")
    if issue and problems:
        pytest.xfail(f"known addon issue: {issue[:160]}{'…' if len(issue) > 160 else ''}")
    if issue:
        pytest.fail(f"{fr.rel(path)} is marked known_issue but now does what the bug report asks; "
                    f"remove known_issue from flows/MANIFEST.toml ({issue})", pytrace=False)
    if problems:
        pytest.fail(f"{fr.rel(path)}:\n  " + "\n  ".join(problems), pytrace=False)


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_flow_holds_no_credentials(path):
    problems = fr.leaks(path)
    assert not problems, f"{fr.rel(path)}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_system_slots_hold_only_neutral_text(path):
    """Every system slot of every request body in the file — what the upstream received and
    the client's original — is one of the neutral texts (plus, upstream, the addon's sentence)."""
    bad = []
    for f in fr.load_flows(path):
        record = f.metadata.get(fr.META_RECORD) or {}
        dialect, sentence = record.get("dialect"), record.get("prompt_sentence")
        bodies = {"upstream-received": fr.request_body(f.request), "client original": fr.original_request(f)}
        for label, data in bodies.items():
            body = fr.parse_json(data)
            bad += [f"{label}: {t!r}" for t in fr.system_text_problems(dialect, body, sentence)]
    assert not bad, f"{fr.rel(path)}: system text that is not neutral:\n  " + "\n  ".join(bad)


def test_every_file_is_in_the_manifest_and_back():
    listed = set(MANIFEST["flows"])
    present = set(_ids(FILES))
    assert not present - listed, f"flow files missing from flows/MANIFEST.toml: {sorted(present - listed)}"
    assert not listed - present, f"flows/MANIFEST.toml lists missing files: {sorted(listed - present)}"


def test_every_dialect_streamed_and_not():
    seen = Counter()
    for path in FILES:
        for f in fr.load_flows(path):
            record = f.metadata.get(fr.META_RECORD) or {}
            seen[(record.get("dialect"), bool(record.get("streamed")))] += 1
    missing = [(d, s) for d in fr.DIALECTS for s in (True, False) if not seen[(d, s)]]
    assert not missing, f"no flow for {missing}; have {dict(seen)}"


def test_every_bug_report_has_a_flow():
    required = set(MANIFEST.get("required_bugs") or ())
    assert set(BUG_REPORTS) <= required, f"MANIFEST.toml required_bugs lacks {sorted(set(BUG_REPORTS) - required)}"
    covered = Counter(b for e in MANIFEST["flows"].values() for b in e.get("bugs") or ())
    missing = sorted(b for b in required if not covered[b])
    assert not missing, f"no flow for {missing}"


def test_every_agent_has_a_flow():
    required = set(MANIFEST.get("required_agents") or ())
    assert set(AGENTS) <= required, f"MANIFEST.toml required_agents lacks {sorted(set(AGENTS) - required)}"
    sources = Counter(e.get("source") for e in MANIFEST["flows"].values())
    missing = sorted(a for a in required if not sources[f"agent:{a}"])
    assert not missing, f"no flow recorded from a real run of {missing} (tests/make_flows.py agents)"


def test_manifest_entries_are_well_formed():
    bad = []
    for name, entry in MANIFEST["flows"].items():
        if entry.get("dialect") not in fr.DIALECTS:
            bad.append(f"{name}: dialect {entry.get('dialect')!r}")
        if entry.get("expected") not in ("repair", "leave", "pass"):
            bad.append(f"{name}: expected {entry.get('expected')!r}")
        source = str(entry.get("source"))
        if source not in ("harness", "user") and not source.startswith("agent:"):
            bad.append(f"{name}: source {source!r}")
        # a bug report (BR-nn) or an issue of this project (I10: issue 10's kinds)
        if not all(re.fullmatch(r"BR-\d+|I\d+", str(b)) for b in entry.get("bugs") or ()):
            bad.append(f"{name}: bugs {entry.get('bugs')!r}")
    assert not bad, "\n".join(bad)
