"""End to end: real Qwen Code (OpenAI Chat Completions) -> mitmdump + toolvocab -> fake upstream.

The fake upstream answers Qwen Code's first model call with a tool call to ``Bash``
``{"command": "echo toolvocab-ok"}``; Qwen Code declares ``run_shell_command`` and matches tool
names case-sensitively.  What it did shows up in its *second* model call:

* ``toolvocab_mode=auto``: the addon renamed the call to ``run_shell_command``, Qwen Code ran it,
  and the ``role: tool`` message carries the command's output ``toolvocab-ok``.
* ``toolvocab_mode=off``: the call reaches Qwen Code unchanged and the tool message says
  ``Tool "Bash" not found in registry``.

Qwen Code's OpenAI client ignores ``NO_PROXY``: it tunnels its loopback base URL through the trap
proxy with ``CONNECT``, which the trap allows for mitmdump's port only.
"""

from __future__ import annotations

import json

import pytest

from e2e.agents import ECHO_ARGS
from e2e.agents import MARKER
from e2e.agents import PROMPT

pytestmark = pytest.mark.e2e

FOREIGN = "Bash"


def test_auto_mode_bash_call_runs_as_run_shell_command(agent_e2e):
    run = agent_e2e("qwen", "auto", tool=FOREIGN, args=ECHO_ARGS, prompt=PROMPT)
    run.check_common()
    call, message = run.call_and_result()
    result = run.text(message.get("content"))
    assert call["function"]["name"] == "run_shell_command", (
        f"Qwen Code's history should hold the repaired call, got {call!r}\n{run.describe()}"
    )
    assert json.loads(call["function"]["arguments"]).get("command") == ECHO_ARGS["command"], (
        f"unexpected arguments {call!r}\n{run.describe()}"
    )
    assert run.shows_marker_output(result), (
        f"tool message does not show {MARKER!r} as output: {result!r}\n{run.describe()}"
    )
    assert any(d.get("name") == FOREIGN and d.get("target") == "run_shell_command" for d in run.decisions()), (
        f"no toolvocab decision Bash -> run_shell_command recorded\n{run.describe()}"
    )


def test_off_mode_bash_call_is_rejected_by_client(agent_e2e):
    run = agent_e2e("qwen", "off", tool=FOREIGN, args=ECHO_ARGS, prompt=PROMPT)
    run.check_common()
    call, message = run.call_and_result()
    result = run.text(message.get("content"))
    assert call["function"]["name"] == FOREIGN, f"mode off must not rename the call, got {call!r}\n{run.describe()}"
    assert f'Tool "{FOREIGN}" not found in registry' in result, f"unexpected tool message: {result!r}\n{run.describe()}"
    assert not run.shows_marker_output(result)
    print(f"Qwen Code {run.binary.version}: declared tools the system text does not mention: {run.unmentioned()}")
