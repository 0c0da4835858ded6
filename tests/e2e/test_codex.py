"""End to end: real Codex CLI (OpenAI Responses over HTTP SSE, ``wire_api = "responses"``) ->
mitmdump + toolvocab -> fake upstream.

The fake upstream answers Codex's first model call with a ``function_call`` to ``shell``
``{"command": ["bash", "-lc", "echo toolvocab-ok"]}`` -- the tool older Codex builds declared.
Codex 0.171 declares ``exec_command {cmd, ...}`` instead.  What Codex did shows up in the
``function_call_output`` of its *second* model call:

* ``toolvocab_mode=auto``: the addon renamed the call to ``exec_command`` with ``cmd``; Codex ran it
  and the output shows ``toolvocab-ok``.
* ``toolvocab_mode=off``: the output is ``unsupported call: shell``.
"""

from __future__ import annotations

import json

import pytest

from e2e.agents import FOREIGN_ARGS
from e2e.agents import MARKER
from e2e.agents import PROMPT

pytestmark = pytest.mark.e2e

FOREIGN = "shell"


def test_auto_mode_shell_call_runs_as_exec_command(agent_e2e):
    run = agent_e2e("codex", "auto", tool=FOREIGN, args=FOREIGN_ARGS, prompt=PROMPT)
    run.check_common()
    call, answer = run.call_and_result()
    output = run.text(answer.get("output"))
    assert call.get("name") == "exec_command", (
        f"expected the repaired call exec_command, got {call!r}\n{run.describe()}"
    )
    args = json.loads(call.get("arguments") or "{}")
    assert MARKER in str(args.get("cmd")), f"unexpected arguments {args!r}\n{run.describe()}"
    assert run.shows_marker_output(output), f"output does not show {MARKER!r}: {output!r}\n{run.describe()}"
    assert "unsupported call" not in output
    assert any(d.get("name") == FOREIGN and d.get("target") == "exec_command" for d in run.decisions()), (
        f"no toolvocab decision shell -> exec_command recorded\n{run.describe()}"
    )


def test_off_mode_shell_call_is_unsupported(agent_e2e):
    run = agent_e2e("codex", "off", tool=FOREIGN, args=FOREIGN_ARGS, prompt=PROMPT)
    run.check_common()
    call, answer = run.call_and_result()
    output = run.text(answer.get("output"))
    assert call.get("name") == FOREIGN, f"mode off must not rename the call, got {call!r}\n{run.describe()}"
    assert f"unsupported call: {FOREIGN}" in output, f"unexpected output: {output!r}\n{run.describe()}"
    assert not run.shows_marker_output(output)
    print(f"Codex {run.binary.version}: declared tools the system text does not mention: {run.unmentioned()}")
