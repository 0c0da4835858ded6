"""``toolvocab demo`` (the console command next to ``sys.executable``): with no agent and no API
key, a fake upstream answering with Codex's ``shell`` call, the proxy in front of it, one request
shaped as Claude Code's — the client receives its own ``Bash`` call and mitmdump's line says so;
both processes are gone when it returns. The README's "Try it" shows this output."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import procs

pytestmark = pytest.mark.integration

TOOLVOCAB = Path(sys.executable).parent / "toolvocab"


@pytest.mark.skipif(not TOOLVOCAB.exists(), reason=f"the toolvocab console script is not next to {sys.executable}")
def test_demo_shows_a_repair_with_no_agent_and_no_key(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC", "OPENAI", "GEMINI", "GOOGLE"))}
    run = subprocess.run([str(TOOLVOCAB), "demo"], capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert 'upstream answered: shell {"command": ["bash", "-lc", "git status"]}' in lines, run.stdout
    assert 'client received:   Bash {"command": "git status"}' in lines, run.stdout
    assert (
        "mitmdump printed:  toolvocab: shell→Bash (capability); prompt sentence names 1 tool · Claude Code → 127.0.0.1"
        in lines
    ), run.stdout
    # nothing is left running: the proxy's PID and port are gone
    pid, port = (
        int(x) for x in re.search(r"on 127\.0\.0\.1:(\d+) \(reverse mode, pid (\d+)\)", run.stdout).groups()[::-1]
    )
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    assert not procs.port_open(port)
