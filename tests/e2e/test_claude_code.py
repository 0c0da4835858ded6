"""End to end: real Claude Code -> mitmdump + toolvocab -> our fake upstream (all on 127.0.0.1).

The fake upstream answers Claude Code's first model call with a tool call to ``shell``
``{"command": ["bash", "-lc", "echo toolvocab-ok"]}``, a tool Claude Code never declared (it has
``Bash {command: string}``).  What Claude Code did with it shows up in its *second* model call:

* ``toolvocab_mode=auto``: the addon repaired the call into ``Bash {"command": "echo toolvocab-ok"}``,
  Claude Code ran it, and sends back a successful ``tool_result`` containing ``toolvocab-ok``.
* ``toolvocab_mode=off``: the call reaches Claude Code unchanged and it answers with
  ``is_error: true`` / ``No such tool available: shell``.

Fixtures live in ``tests/e2e/conftest.py``; Claude Code is installed by ``tests/e2e/install_clients.sh``.
"""

from __future__ import annotations

import pytest

from e2e.agents import MARKER

pytestmark = pytest.mark.e2e


def _second_call(run):
    calls = run.model_calls
    assert len(calls) >= 2, f"expected Claude Code to make at least 2 model calls, got {len(calls)}\n{run.describe()}"
    body = calls[1].get("body")
    assert isinstance(body, dict) and isinstance(body.get("messages"), list), (
        f"second model call has no JSON messages\n{run.describe()}"
    )
    return body


def test_auto_mode_undeclared_shell_call_runs_as_client_tool(claude_e2e):
    run = claude_e2e("auto")
    run.check_common()
    use, result = run.call_and_result(_second_call(run))
    assert use.get("name") == "Bash", (
        f"Claude Code's history should hold the repaired call (Bash), got {use!r}\n{run.describe()}"
    )
    assert result.get("is_error") in (None, False), f"tool_result is an error: {result!r}\n{run.describe()}"
    assert MARKER in run.text(result.get("content")), (
        f"tool_result does not contain {MARKER!r}: {result!r}\n{run.describe()}"
    )


def test_off_mode_undeclared_shell_call_is_rejected_by_client(claude_e2e):
    run = claude_e2e("off")
    run.check_common()
    use, result = run.call_and_result(_second_call(run))
    assert use.get("name") == "shell", f"mode off must not rename the call, got {use!r}\n{run.describe()}"
    assert result.get("is_error") is True, f"expected is_error: true, got {result!r}\n{run.describe()}"
    assert "No such tool available: shell" in run.text(result.get("content")), (
        f"unexpected tool_result content: {result!r}\n{run.describe()}"
    )
