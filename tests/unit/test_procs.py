"""The test helpers' processes (``tests/procs.py``): a test that fails between starting two of
them leaves none running once its interpreter ends."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

#: A test body that starts the fake upstream and fails before it reaches a ``finally``.
LEAKY = """
import procs
fake = procs.start_fake_upstream()
print(fake.process.pid, flush=True)
raise SystemExit(1)
"""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie no one reaped yet counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ", 1)[1][0] != "Z"
    except (OSError, IndexError):
        return False


def test_a_process_a_failed_test_left_running_is_stopped_at_exit():
    done = subprocess.run(
        [sys.executable, "-c", LEAKY],
        cwd=TESTS,
        env={**os.environ, "PYTHONPATH": str(TESTS)},
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stderr
    pid = int(done.stdout.split()[0])
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _alive(pid):
        os.kill(pid, 9)
        raise AssertionError(f"the fake upstream (pid {pid}) outlived the interpreter that started it")


def test_stop_all_stops_what_is_still_running_and_names_it():
    import procs

    fake = procs.start_fake_upstream()
    try:
        assert procs.stop_all() == [f"fake_upstream {fake.process.pid}"]
        assert not fake.process.running()
        assert procs.stop_all() == []
    finally:
        fake.stop()
