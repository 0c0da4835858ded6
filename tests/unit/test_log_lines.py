"""What mitmdump prints while toolvocab runs: one ``info`` line per flow whose tool calls or
names changed; calls left alone and prompt-sentence-only flows at ``debug``; the start line.
Prompt-sentence-only flows are told apart from tool changes (no 🔧, their own comment, counted
apart by ``stats``)."""

from __future__ import annotations

import json
import logging
import re

import orjson
import pytest

import harness
from harness.fixtures import loaded  # noqa: F401  (pytest fixture)

import toolvocab.hosts as tvhosts
import toolvocab.report as tvui

BASH = {"name": "Bash", "description": "Run a shell command", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}
PS = {"name": "PowerShell", "description": "Run a PowerShell command", "input_schema": {
    "type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}}


@pytest.fixture
def addon(loaded):
    """The repair addon of the script loaded by ``tests/harness/``, mode auto before and after."""
    with harness.configured(loaded) as e:
        yield e.addon


def run_flow(addon, tools: list[dict], answer_name: str, *, system: str = "", ua: str = "claude-cli/2.1.197 (external, sdk-cli)"):
    """One non-streamed Anthropic flow through request → responseheaders → response."""
    body = {"model": "claude-x", "max_tokens": 10, "system": system, "tools": tools,
            "messages": [{"role": "user", "content": "hi"}]}
    answer = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x", "stop_reason": "tool_use",
              "content": [{"type": "tool_use", "id": "toolu_1", "name": answer_name, "input": {"command": "ls"}}]}
    f = harness.make_flow(body, host="api.anthropic.com", path="/v1/messages",
                          headers=[("content-type", "application/json"), ("user-agent", ua)], upstream=orjson.dumps(answer))
    resp = f.response
    f.response = None
    addon.request(f)
    f.response = resp
    addon.responseheaders(f)
    addon.response(f)
    return f


def messages(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level and r.getMessage().startswith("toolvocab")]


def test_a_repair_logs_one_info_line_with_client_and_host(addon, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    f = run_flow(addon, [BASH], "shell", system="Use Bash.")
    lines = messages(caplog, logging.INFO)
    assert lines == ["toolvocab: shell→Bash (capability) · Claude Code → api.anthropic.com"], lines
    assert f.marked == ":wrench:"
    assert json.loads(f.response.content)["content"][0]["name"] == "Bash"


def test_a_call_left_alone_is_debug_only_and_a_prompt_only_flow_has_no_marker(addon, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    # `frobnicate` names no declared tool and no capability: left; the prompt mentions neither
    # tool, so the sentence is added: the request changed, no tool call did
    f = run_flow(addon, [BASH, PS], "frobnicate")
    info, debug = messages(caplog, logging.INFO), messages(caplog, logging.DEBUG)
    # a prompt-only flow is told at debug, like the call left alone: info is for tool changes
    assert info == [], info
    assert "toolvocab: prompt sentence names 2 tools · Claude Code → api.anthropic.com" in debug, debug
    assert any(re.match(r"toolvocab: frobnicate left \(\w+: .+\) · Claude Code → api\.anthropic\.com$", d) for d in debug), debug
    assert not f.marked
    assert f.comment.startswith("toolvocab (prompt sentence only): ")
    rec = f.metadata["toolvocab"]
    assert tvui.change_kind(rec) == "prompt"
    s = tvui.stats([rec])
    assert (s["changed"], s["changed_tools"], s["changed_prompt"]) == (1, 0, 1)


def test_nothing_changed_nothing_logged_at_info(addon, loaded, caplog) -> None:
    tctx, script = loaded
    tctx.configure(script, toolvocab_mode="repair")  # no prompt sentence
    caplog.set_level(logging.DEBUG)
    f = run_flow(addon, [BASH], "Bash")
    assert messages(caplog, logging.INFO) == []
    assert not f.marked and not f.comment


def test_stats_text_counts_tool_changes_and_prompt_only_apart(addon) -> None:
    repaired = run_flow(addon, [BASH], "shell", system="Use Bash.").metadata["toolvocab"]
    prompt_only = run_flow(addon, [BASH, PS], "frobnicate").metadata["toolvocab"]
    first = tvui.stats_text([repaired, prompt_only]).splitlines()[0]
    assert first == ("toolvocab stats: 2 flows with a record — 2 handled (2 changed: 1 tool calls or names, "
                     "1 prompt sentence only; 0 in observe mode), 0 not handled")


def test_start_line_tells_mode_profiles_and_host_rule() -> None:
    line = tvhosts.start_line(["regular"], "auto", None, tvhosts.HostRule())
    assert line.startswith("toolvocab: mode auto · proxy regular · profiles none · intercepting TLS only to ")
    assert f"{len(tvhosts.KNOWN_HOSTS)} known LLM API hosts" in line
    line = tvhosts.start_line(["reverse:https://api.anthropic.com"], "observe", "p.toml", tvhosts.HostRule())
    assert line == "toolvocab: mode observe · proxy reverse:https://api.anthropic.com · profiles p.toml"
    line = tvhosts.start_line(["regular"], "auto", None, tvhosts.HostRule(intercept_all=True))
    assert line.endswith("intercepting TLS to every host (toolvocab_intercept=all)")


def test_a_bad_option_is_logged_as_an_error_before_mitmproxy_prints_the_traceback(loaded, caplog) -> None:
    from mitmproxy import exceptions

    tctx, script = loaded
    caplog.set_level(logging.INFO)
    with pytest.raises(exceptions.OptionsError):
        tctx.configure(script, toolvocab_mode="maybe")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["toolvocab_mode: 'maybe' is not one of auto, repair, observe, off"], errors
