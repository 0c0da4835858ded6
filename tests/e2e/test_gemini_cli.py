"""End to end: real Gemini CLI (``:streamGenerateContent?alt=sse``) -> mitmdump + toolvocab -> fake
upstream.

The fake upstream answers Gemini CLI's main model call with a ``functionCall`` to ``Bash``
``{"command": "echo toolvocab-ok"}``; Gemini CLI declares ``run_shell_command``.  Its routing
classifier goes first (``:generateContent``, no tools, JSON schema ``{complexity_reasoning,
complexity_score}``) and gets a JSON answer.  What Gemini CLI did shows up in the
``functionResponse`` of its *second* tool-bearing model call:

* ``toolvocab_mode=auto``: the addon renamed the call to ``run_shell_command``; Gemini CLI ran it
  and the response's output shows ``toolvocab-ok``.
* ``toolvocab_mode=off``: the response is the error ``Tool "Bash" not found``.
"""

from __future__ import annotations

import pytest

from e2e.agents import ECHO_ARGS
from e2e.agents import MARKER
from e2e.agents import PROMPT

pytestmark = pytest.mark.e2e

FOREIGN = "Bash"


def test_auto_mode_bash_call_runs_as_run_shell_command(agent_e2e):
    run = agent_e2e("gemini", "auto", tool=FOREIGN, args=ECHO_ARGS, prompt=PROMPT)
    run.check_common()
    call, response = run.call_and_result()
    assert call.get("name") == "run_shell_command", f"expected the repaired call, got {call!r}\n{run.describe()}"
    assert response.get("name") == "run_shell_command", f"unexpected functionResponse {response!r}\n{run.describe()}"
    output = run.text((response.get("response") or {}).get("output"))
    assert run.shows_marker_output(output), f"output does not show {MARKER!r}: {response!r}\n{run.describe()}"
    assert "error" not in (response.get("response") or {}), (
        f"functionResponse is an error: {response!r}\n{run.describe()}"
    )
    assert any(d.get("name") == FOREIGN and d.get("target") == "run_shell_command" for d in run.decisions()), (
        f"no toolvocab decision Bash -> run_shell_command recorded\n{run.describe()}"
    )


def test_off_mode_bash_call_is_rejected_by_client(agent_e2e):
    run = agent_e2e("gemini", "off", tool=FOREIGN, args=ECHO_ARGS, prompt=PROMPT)
    run.check_common()
    call, response = run.call_and_result()
    assert call.get("name") == FOREIGN, f"mode off must not rename the call, got {call!r}\n{run.describe()}"
    error = run.text((response.get("response") or {}).get("error"))
    assert f'Tool "{FOREIGN}" not found' in error, f"unexpected functionResponse: {response!r}\n{run.describe()}"
    assert "output" not in (response.get("response") or {}), f"the command ran anyway: {response!r}\n{run.describe()}"
    print(f"Gemini CLI {run.binary.version}: declared tools the system text does not mention: {run.unmentioned()}")
