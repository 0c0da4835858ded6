"""End to end: what each real agent does with an argument key its tool does not declare.

Why toolvocab never changes a call that carries such a key: whether the client refuses it is the
client's own behaviour, not its schema's. Each run answers the agent's *own* tool, by its exact
name, with the arguments it needs plus ``zz_unknown``; the addon keeps the call as sent (a
declared call is never fitted into a valid one with a key the client would not read), and the
agent's next model call shows what it did:

* Claude Code 2.1.197 rejects it on ``Bash`` (a strict zod object) and strips it on ``Skill``;
* Codex 0.171.0 runs ``exec_command`` anyway, although the schema it declares is closed (serde
  without ``deny_unknown_fields``);
* Qwen Code 0.15.10 and Gemini CLI 0.61.0 run their open ``run_shell_command`` and refuse the
  closed ``task_stop`` / ``activate_skill`` (ajv with ``additionalProperties: false``);
* OpenCode 1.18.33 declares no closed schema; its ``bash`` runs, the key stripped.

Each expectation is the ``unknown_keys`` fact of that tool's row in ``toolvocab/engine/semantics.py``.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from e2e.agents import MARKER
from toolvocab.engine.semantics import TABLES

pytestmark = pytest.mark.e2e

ECHO = "echo " + MARKER
EXTRA = {"zz_unknown": "value"}

#: (agent, tool, arguments, "ran" | "refused", what the refusal or the run shows)
CASES = [
    pytest.param(
        "claude",
        "Bash",
        {"command": ECHO},
        "refused",
        r"(?i)unexpected parameter .?zz_unknown",
        id="claude-Bash-closed",
    ),
    pytest.param("claude", "Skill", {"skill": "tv-probe"}, "ran", r"(?i)skill", id="claude-Skill-open"),
    pytest.param("codex", "exec_command", {"cmd": ECHO}, "ran", None, id="codex-exec_command-closed"),
    pytest.param("qwen", "run_shell_command", {"command": ECHO}, "ran", None, id="qwen-run_shell_command-open"),
    pytest.param(
        "qwen",
        "task_stop",
        {"task_id": "bg_00000000"},
        "refused",
        r"(?i)additional propert",
        id="qwen-task_stop-closed",
    ),
    pytest.param("gemini", "run_shell_command", {"command": ECHO}, "ran", None, id="gemini-run_shell_command-open"),
    pytest.param(
        "gemini",
        "activate_skill",
        {"name": "skill-creator"},
        "refused",
        r"(?i)additional propert",
        id="gemini-activate_skill-closed",
    ),
    pytest.param(
        "opencode", "bash", {"command": ECHO, "description": "print the marker"}, "ran", None, id="opencode-bash-open"
    ),
]

_CLIENT = {
    "claude": "Claude Code",
    "codex": "Codex",
    "qwen": "Qwen Code",
    "gemini": "Gemini CLI",
    "opencode": "OpenCode",
}


def _result_text(run: Any, answer: dict) -> str:
    wire = run.agent.wire
    if wire == "anthropic":
        return run.text(answer.get("content"))
    if wire == "chat":
        return run.text(answer.get("content"))
    if wire == "responses":
        return run.text(answer.get("output"))
    response = answer.get("response")
    if isinstance(response, dict):
        return "\n".join(str(response[k]) for k in ("output", "error") if k in response) or json.dumps(response)
    return json.dumps(response, ensure_ascii=False)


def _sent_arguments(run: Any, call: dict) -> dict:
    wire = run.agent.wire
    if wire == "anthropic":
        return call.get("input") or {}
    if wire == "chat":
        return json.loads(call["function"]["arguments"] or "{}")
    if wire == "responses":
        return json.loads(call.get("arguments") or "{}")
    return call.get("args") or {}


@pytest.mark.parametrize(("key", "tool", "args", "outcome", "shows"), CASES)
def test_an_undeclared_key_on_the_agents_own_tool(
    agent_e2e, key: str, tool: str, args: dict, outcome: str, shows: str | None
) -> None:
    run = agent_e2e(key, "auto", tool=tool, args={**args, **EXTRA}, prompt="Run the tool you are asked to run.")
    run.check_common()
    call, answer = run.call_and_result()
    text = _result_text(run, answer)
    print(f"{run.agent.label} {run.binary.version} {tool} + zz_unknown -> {text[:300]!r}")
    # The addon left the call as the upstream sent it: the key is still there.
    assert _sent_arguments(run, call).get("zz_unknown") == "value", (
        f"the call reached {run.agent.label} changed: {call!r}\n{run.describe()}"
    )
    mine = [d for d in run.decisions() if d.get("name") == tool]
    assert mine and all(d.get("action") == "keep" for d in mine), (
        f"expected keep decisions, got {mine}\n{run.describe()}"
    )
    # What the client did with the key, as its table row records it.
    row = next(t for t in TABLES if t.name == tool and t.client == _CLIENT[key])
    if outcome == "refused":
        assert row.unknown_keys == "rejected"
        assert re.search(shows or "", text), f"{run.agent.label} did not refuse the key: {text!r}\n{run.describe()}"
        assert not run.shows_marker_output(text)
    else:
        assert row.unknown_keys == "ignored"
        if shows is None:
            assert run.shows_marker_output(text), f"{run.agent.label} did not run {tool}: {text!r}\n{run.describe()}"
        else:
            assert re.search(shows, text) and not re.search(r"(?i)unexpected parameter|additional propert", text), (
                f"{run.agent.label} refused the key: {text!r}\n{run.describe()}"
            )
