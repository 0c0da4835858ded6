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

pytestmark = pytest.mark.skipif(not TOOLVOCAB.exists(), reason=f"the toolvocab console script is not next to {sys.executable}")


def toolvocab(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([str(TOOLVOCAB), *args], capture_output=True, text=True, timeout=300, cwd=cwd or fr.REPO)


def test_recordings_that_match_pass(tmp_path):
    # a directory of recordings, as toolvocab_record writes them, and a file given by name
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "a.mitm").write_bytes(SAMPLE.read_bytes())
    run = toolvocab("replay", str(tmp_path / "rec"), str(OBSERVED), cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith(f"PASS {tmp_path / 'rec' / 'a.mitm'} flow ") and lines[1].startswith(f"PASS {OBSERVED} flow ")
    assert lines[-1] == "toolvocab replay: 2 passed, 0 failed, 0 skipped"
    assert run.stderr == ""


def test_what_the_client_would_receive_now_differs_from_the_recording(tmp_path):
    f = fr.load_flows(SAMPLE)[0]
    f.response.raw_content = f.response.raw_content.replace(b'"name":"Bash"', b'"name":"Shell"')
    path = tmp_path / "tampered.mitm"
    fr.write_flows(path, [f])
    run = toolvocab("replay", str(path))
    assert run.returncode == 1, run.stdout
    out = run.stdout
    assert out.startswith(f"FAIL {path}\n") and "differs in: response the client receives" in out
    assert "tool calls the client receives:" in out
    assert 'Shell {"command": "git status"}' in out and 'Bash {"command": "git status"}' in out
    assert "record the flow again" in out and "flowtool" not in out  # a user's hint, not the corpus's
    assert out.splitlines()[-1] == "toolvocab replay: 0 passed, 1 failed, 0 skipped"


def test_options_of_a_change_can_be_checked_against_the_recordings():
    # the same recording replayed in observe mode: the client would get the call unrepaired
    run = toolvocab("replay", "--mode", "observe", str(SAMPLE))
    assert run.returncode == 1 and "response the client receives" in run.stdout, run.stdout
    assert "Traceback" not in run.stderr


def test_strict_also_compares_the_record_marker_and_comment(tmp_path):
    f = fr.load_flows(SAMPLE)[0]
    f.comment = "changed: something else"
    path = tmp_path / "comment.mitm"
    fr.write_flows(path, [f])
    assert toolvocab("replay", str(path)).returncode == 0  # the bytes are the same
    run = toolvocab("replay", "--strict", str(path))
    assert run.returncode == 1 and "differs in: marker/comment" in run.stdout, run.stdout


def test_nothing_to_replay_and_unreadable_files(tmp_path):
    (tmp_path / "empty").mkdir()
    run = toolvocab("replay", str(tmp_path / "empty"))
    assert run.returncode == 2 and run.stdout.strip() == "toolvocab replay: 0 passed, 0 failed, 0 skipped"
    (tmp_path / "notes.mitm").write_text("not a flow file")
    run = toolvocab("replay", str(tmp_path / "notes.mitm"))
    assert run.returncode == 1 and run.stdout.startswith(f"ERROR {tmp_path / 'notes.mitm'}: not a flow file"), run.stdout
    assert "Traceback" not in run.stderr
