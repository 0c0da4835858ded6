"""``toolvocab replay FILE|DIR…``, the installed console command (next to ``sys.executable``, as
``uv run toolvocab`` or ``pip install`` puts it): saved flows through the current addon, offline,
PASS or a readable diff, exit 1 on any difference — the same replay as tests/test_flows.py
(toolvocab/replay/), over files a user recorded."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import flowreplay as fr

TOOLVOCAB = Path(sys.executable).parent / "toolvocab"
SAMPLE = fr.REPO / "flows" / "harness" / "br05-lowercase-bash-anthropic-sse.mitm"
OBSERVED = fr.REPO / "flows" / "harness" / "br05-lowercase-bash-observe-anthropic-sse.mitm"

pytestmark = pytest.mark.skipif(
    not TOOLVOCAB.exists(), reason=f"the toolvocab console script is not next to {sys.executable}"
)


def toolvocab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOLVOCAB), *args], capture_output=True, text=True, timeout=300, cwd=cwd or fr.REPO)


def recordings(tmp_path: Path) -> dict[str, Path]:
    """A directory of recordings as toolvocab_record writes them, a recording whose client bytes
    were tampered with, one whose comment was, and a file that is no flow file."""
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "a.mitm").write_bytes(SAMPLE.read_bytes())
    tampered = fr.load_flows(SAMPLE)[0]
    tampered.response.raw_content = tampered.response.raw_content.replace(b'"name":"Bash"', b'"name":"Shell"')
    fr.write_flows(tmp_path / "tampered.mitm", [tampered])
    commented = fr.load_flows(SAMPLE)[0]
    commented.comment = "changed: something else"
    fr.write_flows(tmp_path / "comment.mitm", [commented])
    (tmp_path / "notes.mitm").write_text("not a flow file")
    return {
        "dir": tmp_path / "rec",
        "tampered": tmp_path / "tampered.mitm",
        "comment": tmp_path / "comment.mitm",
        "notes": tmp_path / "notes.mitm",
    }


def test_pass_a_readable_diff_and_exit_1_on_any_difference(tmp_path):
    paths = recordings(tmp_path)
    run = toolvocab(
        "replay",
        str(paths["dir"]),
        str(OBSERVED),
        str(paths["comment"]),
        str(paths["tampered"]),
        str(paths["notes"]),
        cwd=tmp_path,
    )
    assert run.returncode == 1, run.stdout + run.stderr
    out, lines = run.stdout, run.stdout.splitlines()
    # recordings that match (the comment is not the bytes: only --strict compares it)
    assert lines[0].startswith(f"PASS {paths['dir'] / 'a.mitm'} flow ") and lines[1].startswith(
        f"PASS {OBSERVED} flow "
    )
    assert lines[2].startswith(f"PASS {paths['comment']} flow ")
    # what the client would receive now differs from the recording: the tool calls, side by side
    assert lines[3] == f"FAIL {paths['tampered']}" and "differs in: response the client receives" in out
    assert "tool calls the client receives:" in out
    assert 'Shell {"command": "git status"}' in out and 'Bash {"command": "git status"}' in out
    assert "record the flow again" in out and "flowtool" not in out  # a user's hint, not the corpus's
    assert f"ERROR {paths['notes']}: not a flow file" in out
    assert lines[-1] == "toolvocab replay: 3 passed, 2 failed, 0 skipped"
    assert "Traceback" not in run.stderr


def test_strict_also_compares_the_record_marker_and_comment(tmp_path):
    run = toolvocab("replay", "--strict", str(recordings(tmp_path)["comment"]))
    assert run.returncode == 1 and "differs in: marker/comment" in run.stdout, run.stdout


def test_options_of_a_change_can_be_checked_against_the_recordings():
    # the same recording replayed in observe mode: the client would get the call unrepaired
    run = toolvocab("replay", "--mode", "observe", str(SAMPLE))
    assert run.returncode == 1 and "response the client receives" in run.stdout, run.stdout
    assert "Traceback" not in run.stderr


def test_nothing_to_replay_exits_2(tmp_path):
    (tmp_path / "empty").mkdir()
    run = toolvocab("replay", str(tmp_path / "empty"))
    assert run.returncode == 2 and run.stdout.strip() == "toolvocab replay: 0 passed, 0 failed, 0 skipped"
    assert run.stderr.strip() == (
        "toolvocab replay: nothing to replay: no flow found (a directory is read for *.mitm files)"
    )
