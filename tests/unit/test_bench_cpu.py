"""The benchmarks' CPU reading (``benchmarks/common.py``: ``cpu_seconds``): another process's CPU
time, fine enough to time a few requests, not counted in 10 ms clock ticks."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

_COMMON = Path(__file__).resolve().parents[2] / "benchmarks" / "common.py"


def _common():
    spec = importlib.util.spec_from_file_location("bench_common", _COMMON)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: A child that burns about ``burn`` seconds of CPU when it reads a line, then writes one back.
_CHILD = """
import sys, time
for line in sys.stdin:
    end = time.process_time() + float(line)
    while time.process_time() < end:
        pass
    print("done", flush=True)
"""


@pytest.fixture
def child():
    proc = subprocess.Popen([sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait(timeout=10)


def _burn(proc: subprocess.Popen, seconds: float) -> None:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(f"{seconds}\n")
    proc.stdin.flush()
    assert proc.stdout.readline() == "done\n"


def test_another_process_cpu_is_read_below_a_clock_tick(child):
    """Two millisecond-long bursts read as about what they burned: a reading in clock ticks
    (10 ms) gives 0 or 10 ms for each."""
    cpu_seconds = _common().cpu_seconds
    _burn(child, 0.001)  # the child's start-up is behind it
    for burn in (0.002, 0.004):
        before = cpu_seconds(child.pid)
        _burn(child, burn)
        took = cpu_seconds(child.pid) - before
        assert burn * 0.9 <= took < burn + 0.004, (burn, took)


def test_a_longer_burn_reads_as_long(child):
    """No more than the wall time between the two readings: the child, done starting and
    waiting for its line, runs one thread."""
    cpu_seconds = _common().cpu_seconds
    _burn(child, 0.001)
    start = time.monotonic()
    before = cpu_seconds(child.pid)
    _burn(child, 0.05)
    took = cpu_seconds(child.pid) - before
    assert 0.045 <= took <= time.monotonic() - start


def test_a_process_that_is_gone_raises_oserror():
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait(timeout=10)
    with pytest.raises(OSError):
        _common().cpu_seconds(proc.pid)
