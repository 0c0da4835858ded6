"""The saved-flow corpus in ``flows/`` as tests (docs/flows.md).

Every ``flows/*.mitm`` and ``flows/*/*.mitm`` is replayed through the real addon the way
mitmproxy drives it (toolvocab/replay/, via tests/flowreplay/): the client's original request through the request
hook, the upstream's original bytes through the stream callable in random 1–64-byte pieces
(several seeds, and once byte by byte) and the response hook. What the upstream would receive
and what the client would receive must equal the recording, and so must the addon's record
(timings aside), diff text, marker and comment; the bytes must match again as plain mitmdump
runs the addon (nothing saving flows, so requests left as sent are only peeked). A mismatch fails with a readable tool-call
diff; ``uv run python tests/flowtool.py bless FILE`` re-records an intended change.

``flows/MANIFEST.toml`` describes each file (dialect, streamed, bug ids, source, expected, the
tool calls the client must receive); the corpus must cover every dialect streamed and not,
every bug report and every agent, and no file may hold credentials or client prompt text.
Each check is a function of tests/flowreplay/checks.py, which ``tests/flowtool.py replay`` runs too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import flowreplay as fr
from flowreplay import checks

FILES = fr.corpus_files()
MANIFEST = fr.read_manifest()
#: Every bug report in the project's bug log, and the agents, each needing a flow (flowreplay.checks).
BUG_REPORTS = checks.BUG_REPORTS
AGENTS = checks.AGENTS


def _ids(paths: list[Path]) -> list[str]:
    return [fr.rel(p) for p in paths]


def _fail(problems: list[str]) -> None:
    if problems:
        pytest.fail("\n".join(problems), pytrace=False)


@pytest.fixture(scope="module")
def replayer():
    with fr.Replayer() as r:
        yield r


def test_the_corpus_is_not_empty():
    _fail(checks.size_problems(FILES))


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_flow_replays_as_recorded(replayer, path):
    _fail(checks.replay_problems(replayer, path))


@pytest.fixture(scope="module")
def plain_replayer():
    """The addon as plain mitmdump runs it, nothing saving flows: a request the plan leaves as
    sent is only peeked (toolvocab.dialects.pipeline). The record then carries no tool errors,
    so only what the upstream and the client receive is compared."""
    with fr.Replayer(strict=False) as r:
        r.addon.recorder.saves_bodies = lambda: False
        yield r


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_flow_sends_the_recorded_bytes_when_nothing_saves_it(plain_replayer, path):
    _fail(checks.replay_problems(plain_replayer, path))


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_flow_does_what_the_manifest_says(path):
    problems, issue = checks.manifest_problems(path, MANIFEST)
    if issue:
        pytest.xfail(issue)
    _fail(problems)


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_flow_holds_no_credentials(path):
    _fail(checks.credential_problems(path))


@pytest.mark.parametrize("path", FILES, ids=_ids(FILES))
def test_system_slots_hold_only_neutral_text(path):
    """Every system slot of every request body in the file — what the upstream received and
    the client's original — is one of the neutral texts (plus, upstream, the addon's sentence)."""
    _fail(checks.system_problems(path))


def test_every_file_is_in_the_manifest_and_back():
    _fail(checks.listing_problems(FILES, MANIFEST))


def test_every_dialect_streamed_and_not():
    _fail(checks.dialect_problems(FILES))


def test_every_bug_report_has_a_flow():
    _fail(checks.bug_problems(MANIFEST))


def test_every_agent_has_a_flow():
    _fail(checks.agent_problems(MANIFEST))


def test_manifest_entries_are_well_formed():
    _fail(checks.entry_problems(MANIFEST))
