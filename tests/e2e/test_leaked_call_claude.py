"""End to end: a tool call leaked into the answer text, real Claude Code.

The fake upstream plays an open model behind an Anthropic-format server that writes its call as
Hermes / Qwen2.5 markup in a text block — ``<tool_call>{"name": "Bash", "arguments": {"command":
"echo toolvocab-ok"}}</tool_call>``, no ``tool_use`` block, ``stop_reason: "end_turn"`` — streamed
as Claude Code asks.

* With the addon (``toolvocab_mode=auto``) the text becomes a ``tool_use`` block: Claude Code runs
  Bash and its second model call carries the ``tool_result`` holding ``toolvocab-ok``.
* Without it (plain mitmdump) Claude Code shows the markup as its answer text and runs nothing.
"""

from __future__ import annotations

import pytest
from test_claude_code import _second_call

from e2e.agents import ECHO_ARGS as ARGS
from e2e.agents import MARKER

pytestmark = pytest.mark.e2e

LEAK = {"leak_as_text": True, "tool_name": "Bash", "tool_args": ARGS}


def test_leaked_call_in_text_runs_with_the_addon(claude_e2e):
    run = claude_e2e("auto", fake_config=LEAK)
    run.check_common()
    use, result = run.call_and_result(_second_call(run))
    assert (use.get("name"), use.get("input")) == ("Bash", ARGS), f"{use!r}\n{run.describe()}"
    assert result.get("is_error") in (None, False), f"tool_result is an error: {result!r}\n{run.describe()}"
    assert MARKER in run.text(result.get("content")), f"{result!r}\n{run.describe()}"
    assert "<tool_call>" not in run.client.stdout, run.describe()


def test_leaked_call_in_text_is_shown_as_text_without_the_addon(claude_e2e):
    run = claude_e2e(None, addon=False, fake_config=LEAK)
    run.check_common()
    results = [
        block
        for r in run.model_calls
        for m in (r.get("body") or {}).get("messages", [])
        if isinstance(m, dict) and isinstance(m.get("content"), list)
        for block in m["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    assert results == [], f"Claude Code ran a tool without the addon: {results!r}\n{run.describe()}"
    assert "<tool_call>" in run.client.stdout and '"name": "Bash"' in run.client.stdout, run.describe()
