"""Schema export and error classification on the flows recorded from the five real agents.

Each agent's first request in ``flows/agents/`` is exported in every shape; the names must be
exactly the ones its record says the client declared. The observe-mode runs' second requests
carry each agent's own unknown-tool error, classified.
"""

from __future__ import annotations

import glob
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import toolvocab.cli as tvcli  # noqa: E402
from toolvocab.engine.export import SHAPES  # noqa: E402

AGENT_FLOWS = sorted(glob.glob(str(ROOT / "flows" / "agents" / "*.mitm")))
CLIENTS = {"Claude Code", "Codex", "OpenCode", "Qwen Code", "Gemini CLI"}


def _names(shape: str, rendered: list) -> list[str]:
    if shape == "normalized":
        return [t["name"] for t in rendered]
    if shape == "anthropic" or shape == "langchain":
        return [t["name"] for t in rendered]
    if shape == "openai_chat":
        return [(t.get("function") or t.get("custom"))["name"] for t in rendered]
    if shape == "openai_responses":
        out = []
        for t in rendered:
            out += [i["name"] for i in t["tools"]] if t["type"] == "namespace" else [t["name"]]
        return out
    return [d["name"] for group in rendered for d in group["functionDeclarations"]]


def test_the_five_agents_are_in_the_corpus():
    clients = {f.metadata["toolvocab"]["client"] for f in tvcli.read_flows(AGENT_FLOWS)}
    assert CLIENTS <= clients


@pytest.mark.parametrize("path", AGENT_FLOWS, ids=[os.path.basename(p) for p in AGENT_FLOWS])
@pytest.mark.parametrize("shape", SHAPES)
def test_export_lists_exactly_the_declared_tools(path: str, shape: str):
    for flow in tvcli.read_flows([path]):
        record = flow.metadata["toolvocab"]
        rendered = tvcli.flow_tools(flow, shape)
        assert rendered is not None
        got = _names(shape, rendered)
        declared = record["declared"]  # flat names (a Responses namespace joined to its tools)
        allowed = set(declared) | {d.rsplit("__", 1)[-1] for d in declared}
        assert got and set(got) <= allowed, f"{shape}: {sorted(set(got) - allowed)} not declared"
        if shape == "normalized":
            assert len(got) == len(declared)  # every declaration, provider-defined ones included


def test_each_agents_own_unknown_tool_error_is_classified():
    found = {}
    for flow in tvcli.read_flows(AGENT_FLOWS):
        for error in flow.metadata["toolvocab"].get("tool_errors") or []:
            if error["kind"] == "unknown_tool":
                found[flow.metadata["toolvocab"]["client"]] = error
    assert CLIENTS <= set(found), f"classified for {sorted(found)} only"
    for client, error in found.items():
        assert client in (error["client"] or "")
        assert error["tool"]
