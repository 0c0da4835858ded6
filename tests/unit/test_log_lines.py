"""What mitmdump prints while toolvocab runs: one ``info`` line per flow whose tool calls or
names changed, one ``info`` line for calls left as answered (the client will reject them),
prompt-sentence-only flows at ``debug``; the start line. Each state has its marker, its comment
and its count in ``stats``; give-ups (``warn``) are in test_addon_hooks.py and the integration tests."""

from __future__ import annotations

import json
import logging
import re

import orjson
import pytest

import harness
import toolvocab.hosts as tvhosts
import toolvocab.report as tvui
from harness.fixtures import loaded  # noqa: F401  (pytest fixture)

BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
PS = {
    "name": "PowerShell",
    "description": "Run a PowerShell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


@pytest.fixture
def addon(loaded):
    """The repair addon of the script loaded by ``tests/harness/``, mode auto before and after."""
    with harness.configured(loaded) as e:
        yield e.addon


def run_flow(
    addon, tools: list[dict], answer_name: str, *, system: str = "", ua: str = "claude-cli/2.1.197 (external, sdk-cli)"
):
    """One non-streamed Anthropic flow through request → responseheaders → response."""
    body = {
        "model": "claude-x",
        "max_tokens": 10,
        "system": system,
        "tools": tools,
        "messages": [{"role": "user", "content": "hi"}],
    }
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": answer_name, "input": {"command": "ls"}}],
    }
    return harness.json_flow(
        addon,
        body,
        orjson.dumps(answer),
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json"), ("user-agent", ua)],
    )


def messages(caplog, level: int) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == level and r.getMessage().startswith("toolvocab")]


def test_a_repair_logs_one_info_line_with_client_and_host(addon, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    f = run_flow(addon, [BASH], "shell", system="Use Bash.")
    lines = messages(caplog, logging.INFO)
    assert lines == ["toolvocab: shell→Bash (capability) · Claude Code → api.anthropic.com"], lines
    assert f.marked == ":wrench:"
    assert json.loads(f.response.content)["content"][0]["name"] == "Bash"


def test_a_call_left_alone_is_an_info_line_and_its_own_state_even_with_the_prompt_sentence(addon, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    # `frobnicate` names no declared tool and no capability: left; the prompt mentions neither
    # tool, so the sentence is added too: a flow both sentence-added and left is "left"
    f = run_flow(addon, [BASH, PS], "frobnicate")
    info, debug = messages(caplog, logging.INFO), messages(caplog, logging.DEBUG)
    assert info == ["toolvocab: frobnicate left (not declared) · Claude Code → api.anthropic.com"], info
    assert "toolvocab: prompt sentence names 2 tools · Claude Code → api.anthropic.com" in debug, debug
    assert f.marked == ":no_entry:"
    assert (
        f.comment
        == "left: frobnicate (not declared) — the client will reject this call · prompt sentence added (names 2 tools)"
    )
    rec = f.metadata["toolvocab"]
    assert tvui.change_kind(rec) == "prompt" and tvui.outcome(rec) == "left"
    assert tvui.stats([rec])["state"] == {
        "changed": 0,
        "left": 1,
        "passed through": 0,
        "prompt sentence only": 0,
        "would change": 0,
        "unchanged": 0,
    }


def test_a_call_with_two_candidates_is_left_and_says_which(addon, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    other = {**BASH, "name": "run_shell_command"}
    f = run_flow(addon, [BASH, other], "shell", system="Use Bash or run_shell_command.")
    assert messages(caplog, logging.INFO) == [
        "toolvocab: shell left (2 candidates: Bash, run_shell_command) · Claude Code → api.anthropic.com"
    ]
    assert f.marked == ":no_entry:"
    assert f.comment == "left: shell (2 candidates: Bash, run_shell_command) — the client will reject this call"


def test_a_prompt_only_flow_has_no_marker_and_a_debug_line(addon, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    f = run_flow(addon, [BASH, PS], "Bash")
    assert messages(caplog, logging.INFO) == []
    assert "toolvocab: prompt sentence names 2 tools · Claude Code → api.anthropic.com" in messages(
        caplog, logging.DEBUG
    )
    assert not f.marked and f.comment == "prompt sentence only: names 2 tools"
    assert tvui.outcome(f.metadata["toolvocab"]) == "prompt sentence only"


def test_nothing_changed_nothing_logged_at_info(addon, loaded, caplog) -> None:
    tctx, script = loaded
    tctx.configure(script, toolvocab_mode="repair")  # no prompt sentence
    caplog.set_level(logging.DEBUG)
    f = run_flow(addon, [BASH], "Bash")
    assert messages(caplog, logging.INFO) == []
    assert not f.marked and not f.comment


@pytest.mark.parametrize(
    ("tools", "answer", "info", "debug"),
    [
        ([BASH], "shell", ["shell→Bash (capability); prompt sentence names 1 tool"], []),
        ([BASH, PS], "Bash", [], ["prompt sentence names 2 tools"]),
        ([BASH, PS], "frobnicate", [], ["prompt sentence names 2 tools"]),
    ],
)
def test_observe_mode_logs_what_would_change_as_its_comment_says(addon, loaded, caplog, tools, answer, info, debug):
    """Observe mode's line says what would change, at the level the same change logs at in
    ``auto`` (the sentence alone at ``debug``): no "nothing changed … no change" at ``info``
    beside a comment and a ``stats`` count of "would change"."""
    tctx, script = loaded
    tctx.configure(script, toolvocab_mode="observe")
    caplog.set_level(logging.DEBUG)
    f = run_flow(addon, tools, answer)
    where = " · Claude Code → api.anthropic.com"
    left = [f"toolvocab: {answer} left (not declared){where}"] if answer == "frobnicate" else []
    assert messages(caplog, logging.INFO) == [f"toolvocab: would change (observe): {i}{where}" for i in info] + left
    assert [m for m in messages(caplog, logging.DEBUG) if "(observe)" in m] == [
        f"toolvocab: would change (observe): {d}{where}" for d in debug
    ]
    assert json.loads(f.response.content)["content"][0]["name"] == answer  # observe changes nothing


def test_stats_text_counts_each_state_apart(addon) -> None:
    repaired = run_flow(addon, [BASH], "shell", system="Use Bash.").metadata["toolvocab"]
    left = run_flow(addon, [BASH, PS], "frobnicate").metadata["toolvocab"]
    prompt_only = run_flow(addon, [BASH, PS], "Bash").metadata["toolvocab"]
    unchanged = run_flow(addon, [BASH], "Bash", system="Use Bash.").metadata["toolvocab"]
    lines = tvui.stats_text([repaired, left, prompt_only, unchanged]).splitlines()
    assert lines[:2] == [
        "toolvocab stats: 4 flows with a record — 4 handled (0 in observe mode), 0 not handled",
        "flows by state: changed 1, left 1, passed through 0, prompt sentence only 1, would change 0, unchanged 1",
    ]


def test_start_line_tells_mode_profiles_and_host_rule() -> None:
    line = tvhosts.start_line(["regular"], "auto", None, tvhosts.HostRule())
    assert line.startswith("toolvocab: mode auto · proxy regular · profiles none · intercepting TLS only to ")
    assert f"{len(tvhosts.KNOWN_HOSTS)} known LLM API hosts" in line
    line = tvhosts.start_line(["reverse:https://api.anthropic.com"], "observe", "p.toml", tvhosts.HostRule())
    assert line == "toolvocab: mode observe · proxy reverse:https://api.anthropic.com · profiles p.toml"
    line = tvhosts.start_line(["regular"], "auto", None, tvhosts.HostRule(intercept_all=True))
    assert line.endswith("intercepting TLS to every host (toolvocab_intercept=all)")
    # the regex as the user wrote it, not its repr (which doubles each backslash)
    rule = tvhosts.HostRule(hosts=re.compile(r"(^|\.)pypi\.org$"))
    line = tvhosts.start_line(["regular", "reverse:http://127.0.0.1:8900"], "auto", None, rule)
    assert line.endswith(
        "intercepting TLS only to hosts matching toolvocab_hosts=(^|\\.)pypi\\.org$"
        " · reverse mode handles hosts matching (^|\\.)pypi\\.org$"
    ), line


def test_a_bad_option_is_logged_as_an_error_before_mitmproxy_prints_the_traceback(loaded, caplog) -> None:
    from mitmproxy import exceptions

    tctx, script = loaded
    caplog.set_level(logging.INFO)
    with pytest.raises(exceptions.OptionsError):
        tctx.configure(script, toolvocab_mode="maybe")
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors == ["toolvocab_mode: 'maybe' is not one of auto, repair, observe, off"], errors


def test_a_sentence_that_was_not_sent_is_not_in_the_comment() -> None:
    record = {
        "mode": "auto",
        "dialect": "anthropic",
        "prompt_sentence": "Call tools only by …",
        "prompt_names": ["Bash"],
        "request_changed": False,
        "response_changed": False,
        "decisions": [{"name": "frobnicate", "action": "leave", "step": "none", "candidates": []}],
    }
    assert tvui.comment(record) == "left: frobnicate (not declared) — the client will reject this call"
    assert tvui.comment({**record, "request_changed": True}).endswith(" · prompt sentence added (names 1 tool)")


READ = {
    "name": "read_file",
    "description": "Read a file",
    "input_schema": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
    },
}


def run_text_flow(addon, text: str):
    """One non-streamed Anthropic flow whose answer is text only (``end_turn``)."""
    body = {"model": "m", "max_tokens": 10, "tools": [READ], "messages": [{"role": "user", "content": "hi"}]}
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_reason": "end_turn",
        "content": [{"type": "text", "text": text}],
    }
    return harness.json_flow(
        addon,
        body,
        orjson.dumps(answer),
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json"), ("user-agent", "claude-cli/2.1.197 (external, sdk-cli)")],
    )


def hermes(name: str, arguments: dict) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def test_a_call_lifted_from_text_says_so_in_the_line_the_comment_and_the_record(addon, loaded, caplog) -> None:
    tctx, script = loaded
    tctx.configure(script, toolvocab_mode="repair")  # no prompt sentence
    caplog.set_level(logging.DEBUG)
    f = run_text_flow(addon, hermes("read_file", {"path": "/repo/README.md"}))
    assert json.loads(f.response.content)["content"][0]["type"] == "tool_use"
    assert messages(caplog, logging.INFO) == [
        "toolvocab: read_file lifted from text · Claude Code → api.anthropic.com"
    ], messages(caplog, logging.INFO)
    assert f.comment == "changed: read_file lifted from text"
    (decision,) = f.metadata["toolvocab"]["decisions"]
    assert decision["lifted"] is True and decision["action"] == "keep"
    caplog.clear()
    f = run_text_flow(addon, hermes("Read", {"file_path": "/repo/README.md", "limit": 40}))
    assert messages(caplog, logging.INFO) == [
        "toolvocab: Read→read_file (capability) lifted from text · Claude Code → api.anthropic.com"
    ], messages(caplog, logging.INFO)


@pytest.mark.parametrize(
    "text",
    [
        # The second call names no declared tool: the whole text stays text.
        hermes("Read", {"file_path": "/repo/README.md"}) + "\n" + hermes("delete_file", {"path": "x"}),
        hermes("delete_file", {"path": "x"}),
        hermes("read_file", {"path": 7}),  # fails the schema
    ],
)
def test_a_lift_given_up_leaves_no_call_in_the_record(addon, loaded, caplog, text: str) -> None:
    """The client got text: no decision, no "left" state, no "the client will reject this call"."""
    tctx, script = loaded
    tctx.configure(script, toolvocab_mode="repair")
    caplog.set_level(logging.DEBUG)
    f = run_text_flow(addon, text)
    assert json.loads(f.response.content)["content"] == [{"type": "text", "text": text}]
    rec = f.metadata["toolvocab"]
    assert rec["decisions"] == [] and rec["calls_seen"] == 0, rec["decisions"]
    assert messages(caplog, logging.INFO) == [] and not f.marked and not f.comment


def test_a_parallel_wrapper_given_up_records_only_the_wrapper(addon, caplog) -> None:
    caplog.set_level(logging.DEBUG)
    wrapper = {
        "tool_uses": [
            {"recipient_name": "functions.Bash", "parameters": {"command": "ls"}},
            {"recipient_name": "functions.frobnicate", "parameters": {}},
        ]
    }
    body = {"model": "m", "max_tokens": 10, "tools": [BASH], "messages": [{"role": "user", "content": "hi"}]}
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "multi_tool_use.parallel", "input": wrapper}],
    }
    f = harness.json_flow(
        addon,
        body,
        orjson.dumps(answer),
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json")],
    )
    names = [d["name"] for d in f.metadata["toolvocab"]["decisions"]]
    assert names == ["multi_tool_use.parallel"], names


def test_a_record_folder_removed_while_running_is_made_again_or_one_warning(addon, loaded, caplog, tmp_path) -> None:
    """``toolvocab_record``'s folder deleted while the proxy runs (a clean-up): the next record
    makes it again; a folder that cannot be made (a file in its place) is one ``warn`` line per
    flow, no traceback, and the flow is still repaired."""
    import shutil

    tctx, script = loaded
    folder = tmp_path / "records"
    tctx.configure(script, toolvocab_record=str(folder))
    try:
        caplog.set_level(logging.DEBUG)
        shutil.rmtree(folder)
        run_flow(addon, [BASH], "shell", system="Use Bash.")
        assert len(list(folder.glob("*.mitm"))) == 1
        shutil.rmtree(folder)
        folder.write_text("not a folder")
        caplog.clear()
        f = run_flow(addon, [BASH], "shell", system="Use Bash.")
        assert json.loads(f.response.content)["content"][0]["name"] == "Bash"
        warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
        assert [r.getMessage().split(" in ")[0] for r in warnings] == [f"toolvocab: could not record flow {f.id[:8]}"]
        assert not any(r.exc_info for r in caplog.records)
    finally:
        tctx.configure(script, toolvocab_record="")
