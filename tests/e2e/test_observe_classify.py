"""End to end, observe mode: each real agent gets a foreign tool name, toolvocab records what it
would do and changes nothing, the agent rejects the call with its own error — and the next
request's record classifies that error (kind ``unknown_tool``, the agent, the tool name).

This is what a user sees when they run the addon with ``--set toolvocab_mode=observe`` to find
out whether it would help: a 👀 flow with the would-be repair, then the client's own error,
recognised from its exact wording.
"""

from __future__ import annotations

import pytest

from e2e.agents import MARKER

pytestmark = pytest.mark.e2e

# agent key -> (foreign name answered, its arguments, the declared tool toolvocab would pick,
#               the client name the error classification must attribute the text to)
CASES = {
    "qwen": ("Bash", {"command": "echo " + MARKER}, "run_shell_command", "Qwen Code"),
    "opencode": ("shell", {"command": "echo " + MARKER}, "bash", "OpenCode"),
    "codex": ("shell", {"command": ["bash", "-lc", "echo " + MARKER]}, "exec_command", "Codex"),
    "gemini": ("Bash", {"command": "echo " + MARKER}, "run_shell_command", "Gemini CLI"),
}


def _records(flows) -> list[dict]:
    return [f.metadata["toolvocab"] for f in flows if f.metadata.get("toolvocab", {}).get("dialect")]


def _check(records: list[dict], flows, foreign: str, target: str, client: str, describe) -> None:
    first = next((r for r in records if r.get("decisions")), None)
    assert first is not None, f"no flow with a decision\n{describe()}"
    would = [d for d in first["decisions"] if d["name"] == foreign]
    assert would and would[0]["action"] == "rename" and would[0]["target"] == target, (
        f"expected a would-be rename {foreign} -> {target}, got {first['decisions']}\n{describe()}"
    )
    assert not first["response_changed"] and not first["request_changed"], "observe mode changed bytes"
    marked = [f.marked for f in flows if (f.metadata.get("toolvocab") or {}).get("decisions")]
    assert ":eyes:" in marked, f"the would-change flow is not marked :eyes: ({marked})"
    errors = [e for r in records for e in r.get("tool_errors") or []]
    hits = [e for e in errors if e["kind"] == "unknown_tool" and e["tool"] == foreign]
    assert hits, f"no unknown_tool error for {foreign} classified in the next request: {errors}\n{describe()}"
    assert client in (hits[0]["client"] or ""), f"error attributed to {hits[0]['client']!r}, expected {client!r}"


@pytest.mark.parametrize("key", sorted(CASES))
def test_observe_mode_records_the_would_be_repair_and_classifies_the_agents_error(agent_e2e, key):
    foreign, args, target, client = CASES[key]
    run = agent_e2e(key, "observe", tool=foreign, args=args, prompt="Run echo " + MARKER)
    run.check_common()
    flows = run.flows()
    _check(_records(flows), flows, foreign, target, client, run.describe)


def test_observe_mode_claude_code(claude_e2e):
    run = claude_e2e("observe")
    flows = run.flows()
    _check(_records(flows), flows, "shell", "Bash", "Claude Code", run.describe)
