"""End to end, as a user runs the addon: plain ``mitmdump -s addon/toolvocab.py`` (no ``-w``, no UI),
mode ``repair``. Nothing saves the flows, and the plan writes nothing in the agents' requests, so
each request is only peeked (``toolvocab.dialects.pipeline``): its declared tools, prompt and the
names of its earlier calls decoded, the rest skipped, and the whole body read strictly at the
answer's first change. Each of the five real agents gets a tool call in another agent's vocabulary
and must run it as its own tool: its next model call carries the call under the agent's own name
and the command's output.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from e2e.agents import ECHO_ARGS
from e2e.agents import FOREIGN_ARGS
from e2e.agents import FOREIGN_TOOL
from e2e.agents import MARKER
from e2e.agents import PROMPT

pytestmark = pytest.mark.e2e

# agent key -> (foreign name answered, its arguments, the agent's own tool it must run)
CASES = {
    "claude": (FOREIGN_TOOL, FOREIGN_ARGS, "Bash"),
    "qwen": ("Bash", ECHO_ARGS, "run_shell_command"),
    "opencode": ("shell", ECHO_ARGS, "bash"),
    "codex": ("shell", {"command": ["bash", "-lc", "echo " + MARKER]}, "exec_command"),
    "gemini": ("Bash", ECHO_ARGS, "run_shell_command"),
}


def _name_and_output(wire: str, call: dict, result: dict, text: Any) -> tuple[str | None, str]:
    """The called tool's name and the result's text, in the agent's wire."""
    if wire == "anthropic":
        return call.get("name"), text(result.get("content"))
    if wire == "chat":
        return (call.get("function") or {}).get("name"), text(result.get("content"))
    if wire == "responses":
        return call.get("name"), text(result.get("output"))
    response = result.get("response")
    output = response.get("output") if isinstance(response, dict) else None
    return call.get("name"), output if isinstance(output, str) else json.dumps(response)


@pytest.mark.parametrize("key", sorted(CASES))
def test_each_agent_runs_the_repaired_call_through_plain_mitmdump(agent_e2e, key):
    foreign, args, own = CASES[key]
    files = {"notes.txt": "hello\n"} if key == "claude" else None
    run = agent_e2e(key, "repair", tool=foreign, args=args, prompt=PROMPT, files=files, save=False)
    run.check_common()
    call, result = run.call_and_result()
    name, output = _name_and_output(run.agent.wire, call, result, run.text)
    assert name == own, f"{run.agent.label}'s history should hold its own {own}, got {call!r}\n{run.describe()}"
    assert run.shows_marker_output(output), (
        f"the result does not show {MARKER!r} as output: {output!r}\n{run.describe()}"
    )
    assert "Traceback" not in run.mitm.output() and "Addon error" not in run.mitm.output(), run.mitm.output()[-3000:]
