"""End to end: a real agent whose MCP tool name is over 64 characters, through mitmdump + toolvocab,
to an OpenAI-format upstream that rejects such names the way the real API does.

OpenCode (openai-compatible provider, Chat Completions) gets a stub MCP server
(tests/e2e/stub_mcp_server.py, stdio JSON-RPC) named ``toolvocab_stub`` with one tool
``check_cloudformation_template_compliance_for_every_stack``; OpenCode declares it as
``<server>_<tool>``, 71 characters.  The fake upstream runs with ``reject_long_names``
(``Invalid 'tools[N].function.name': string too long. Expected a string with maximum length 64,
but got a string with length 71 instead.``, ``string_above_max_length``) and otherwise answers a
call to the declared tool whose name starts ``toolvocab_stub_`` — the name it received.

* ``toolvocab_mode=auto``: the upstream sees an alias (at most 64 characters) and calls it; the
  addon gives OpenCode its own long name back; OpenCode runs the MCP tool (the stub logs the
  call) and its next request carries the stub's result marker (again under the alias upstream).
* ``toolvocab_mode=off``: the upstream answers OpenCode's request with the 400; no tool runs and
  OpenCode prints the upstream's error text (``Error: Invalid 'tools[8].function.name': string too
  long. ...``) and exits non-zero.
"""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

STUB = Path(__file__).resolve().with_name("stub_mcp_server.py")
SERVER = "toolvocab_stub"
TOOL = "check_cloudformation_template_compliance_for_every_stack"
DECLARED = f"{SERVER}_{TOOL}"  # OpenCode's flat MCP name
assert len(DECLARED) > 64
MARKER = "stub-result-7c41e2"
ARGS = {"path": "cfn.yaml"}
PROMPT = "Check cfn.yaml for compliance"
LOG_NAME = "mcp-stub.jsonl"
TOO_LONG = (
    f"string too long. Expected a string with maximum length 64, but got a string with length {len(DECLARED)} instead."
)


def add_mcp_server(home: Path, work: Path) -> None:
    """Declare the stub MCP server in OpenCode's config (written by the harness just before)."""
    path = home / ".config" / "opencode" / "opencode.json"
    config = json.loads(path.read_text())
    config["mcp"] = {
        SERVER: {
            "type": "local",
            "command": [sys.executable, str(STUB), "--tool", TOOL, "--marker", MARKER, "--log", str(home / LOG_NAME)],
            "enabled": True,
        }
    }
    path.write_text(json.dumps(config, indent=2) + "\n")


def stub_calls(run) -> list[dict]:
    path = run.client.home / LOG_NAME
    if not path.exists():
        return []
    return [e for e in map(json.loads, path.read_text().splitlines()) if "call" in e]


def start(agent_e2e, mode: str):
    return agent_e2e(
        "opencode",
        mode,
        tool=f"re:^{SERVER}_",
        args=ARGS,
        prompt=PROMPT,
        fake_config={"reject_long_names": True},
        configure=add_mcp_server,
    )


def declared_names(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or [] if t.get("type") == "function"]


def test_auto_mode_long_mcp_tool_runs(agent_e2e):
    run = start(agent_e2e, "auto")
    run.check_common()
    calls = run.tool_calls
    assert len(calls) >= 2, f"expected two tool-bearing model calls\n{run.describe()}"
    first, second = run.body(calls[0]), run.body(calls[1])
    assert all(r["reply"]["status"] == 200 for r in run.requests), f"the upstream rejected a request\n{run.describe()}"
    upstream = [n for n in declared_names(first) if n.startswith(SERVER)]
    assert len(upstream) == 1, (
        f"the MCP tool is not among the declared tools: {declared_names(first)}\n{run.describe()}"
    )
    alias = upstream[0]
    assert alias != DECLARED and len(alias) <= 64 and alias.startswith(DECLARED[:40]), alias
    assert all(len(n) <= 64 for n in declared_names(first))
    assert DECLARED not in json.dumps(first) and DECLARED not in json.dumps(second), (
        f"the upstream received the long name\n{run.describe()}"
    )
    # the MCP tool really ran, with the model's arguments
    got = stub_calls(run)
    assert [(c["call"], c["arguments"]) for c in got] == [(TOOL, ARGS)], f"stub log: {got}\n{run.describe()}"
    # the next request carries the result, and the replayed call goes up as the alias again
    messages = second.get("messages") or []
    replayed = [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
    assert replayed and replayed[-1]["function"]["name"] == alias, f"replayed calls: {replayed}\n{run.describe()}"
    results = [m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") == replayed[-1].get("id")]
    assert results and MARKER in run.text(results[-1].get("content")), f"no stub result\n{run.describe()}"
    # what OpenCode itself saw: its own long name, resolved from the alias
    assert any(
        d.get("name") == alias and d.get("target") == DECLARED and d.get("step") == "reverse_map"
        for d in run.decisions()
    ), f"no reverse_map decision\n{run.describe()}"
    assert MARKER in run.client.stdout, f"OpenCode's final answer lacks the tool result\n{run.describe()}"
    print(f"OpenCode {run.binary.version}: {DECLARED} ({len(DECLARED)}) went upstream as {alias} ({len(alias)})")


def test_off_mode_long_mcp_tool_is_rejected_upstream(agent_e2e):
    run = start(agent_e2e, "off")
    calls = run.tool_calls
    assert calls, f"OpenCode made no tool-bearing request\n{run.describe()}"
    rejected = [r for r in calls if r["reply"]["status"] == 400]
    assert rejected, f"the fake did not reject the long name\n{run.describe()}"
    for r in rejected:
        assert DECLARED in declared_names(run.body(r))
        error = json.loads(base64.b64decode(r["reply"]["body_b64"]))["error"]
        assert error["code"] == "string_above_max_length" and TOO_LONG in error["message"], error
    assert all(r["reply"]["status"] == 400 for r in calls), f"a tool-bearing request got through\n{run.describe()}"
    assert stub_calls(run) == [], "the MCP tool ran although the upstream rejected every request"
    # OpenCode surfaces the upstream's error text and fails the run
    shown = run.client.stdout + run.client.stderr
    assert TOO_LONG in shown and "Invalid 'tools[" in shown, f"OpenCode did not surface the error\n{run.describe()}"
    assert run.client.rc not in (0, None), f"OpenCode exited rc={run.client.rc}\n{run.describe()}"
    assert not run.stray, run.stray
