"""``toolvocab/addons/ui.py`` and ``toolvocab/report.py``: the toolvocab contentview and the ``toolvocab.explain`` / ``toolvocab.stats``
commands.

The pure functions are tested on hand-made records; the contentview and the commands on flows
driven through the real addon (``tests/harness/``: the script loaded, hooks invoked the way
mitmproxy's proxy core does). ``toolvocab.report`` and ``toolvocab.addons.ui`` are the modules
the script itself imports (the repo's root is on the test ``pythonpath``); the script is never
imported a second time.
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import random
from pathlib import Path

import orjson
import pytest
from mitmproxy import contentviews
from mitmproxy import http
from mitmproxy.addons import view as view_addon
from mitmproxy.log import ALERT

import harness
import toolvocab.addons.ui as ui_addon
import toolvocab.report as report

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "anthropic"
MITMPROXY_12 = hasattr(contentviews, "Contentview")


def fixture_json(name: str) -> dict:
    return json.loads((FIXTURES / name).read_text())


def fixture_bytes(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


# -- records made by hand ------------------------------------------------------------------------

RENAMED = {
    "version": 1,
    "dialect": "anthropic",
    "mode": "auto",
    "host": "api.anthropic.com",
    "path": "/v1/messages",
    "model": "claude-x",
    "client": "Claude Code",
    "status": 200,
    "ttfb_ms": 120.0,
    "total_ms": 900.5,
    "calls_seen": 2,
    "calls_kept": 1,
    "calls_repaired": 1,
    "calls_left": 0,
    "skipped": None,
    "declared": ["Bash", "Read"],
    "rename_map": {"Read": "read_file"},
    "duplicates": {"Bash": [None]},
    "renames": [
        {"caller": "Read", "upstream": "read_file", "why": "profile", "detail": "profile qwen wants read_file"}
    ],
    "profile": "qwen",
    "grammar": "anthropic",
    "prompt_sentence": "Call tools only by the exact names declared in this request, which include Bash.",
    "prompt_names": ["Bash"],
    "request_changed": True,
    "response_changed": True,
    "streamed": True,
    "decisions": [
        {
            "name": "shell",
            "namespace": None,
            "call_id": "toolu_1",
            "action": "rename",
            "step": "capability",
            "target": "Bash",
            "target_namespace": None,
            "reason": "shell has capability shell and Bash is the one declared tool with it",
            "candidates": ["Bash"],
            "arg_changes": [{"op": "rename_key", "key": "cmd", "to": "command", "before": "ls", "after": "ls"}],
            "arguments_before": {"cmd": "ls"},
            "arguments_after": {"command": "ls"},
        },
        {
            "name": "Bash",
            "namespace": None,
            "call_id": "toolu_2",
            "action": "keep",
            "step": "declared",
            "target": "Bash",
            "target_namespace": None,
            "reason": "Bash is declared and its arguments validate",
            "candidates": ["Bash"],
            "arg_changes": [],
            "arguments_before": {"command": "pwd"},
            "arguments_after": None,
        },
    ],
    "notes": ["a note worth reading"],
}

LEFT = {
    "version": 1,
    "dialect": "openai_chat",
    "mode": "repair",
    "host": "llm.local",
    "path": "/v1/chat/completions",
    "model": "qwen3",
    "client": "Qwen Code",
    "status": 200,
    "ttfb_ms": 80.0,
    "total_ms": 300.0,
    "calls_seen": 1,
    "calls_kept": 0,
    "calls_repaired": 0,
    "calls_left": 1,
    "skipped": None,
    "declared": ["run_shell_command", "Bash"],
    "rename_map": {},
    "duplicates": {},
    "renames": [],
    "profile": None,
    "grammar": "openai",
    "prompt_sentence": None,
    "prompt_names": [],
    "request_changed": False,
    "response_changed": False,
    "streamed": False,
    "decisions": [
        {
            "name": "shell",
            "namespace": None,
            "call_id": "call_9",
            "action": "leave",
            "step": "capability",
            "target": None,
            "target_namespace": None,
            "reason": "shell has capability shell and 2 declared tools have it",
            "candidates": ["run_shell_command", "Bash"],
            "arg_changes": [],
            "arguments_before": {"cmd": "ls"},
            "arguments_after": None,
        },
    ],
    "notes": [],
    "tool_errors": [
        {
            "call_id": "call_8",
            "name": "shell",
            "kind": "unknown_tool",
            "client": "Qwen Code",
            "tool": None,
            "text": 'Tool "shell" not found in registry',
        },
        {
            "call_id": "call_7",
            "name": "Bash",
            "kind": "invalid_arguments",
            "client": "Qwen Code",
            "tool": "Bash",
            "text": "missing required parameter command",
        },
    ],
}

OBSERVED = copy.deepcopy(RENAMED) | {
    "mode": "observe",
    "request_changed": False,
    "response_changed": False,
    "rename_map": {},
    "renames": [],
    "duplicates": {},
    "notes": [],
    "model": "claude-y",
    "ttfb_ms": 200.0,
    "total_ms": 1000.0,
}
SKIPPED = {"version": 1, "dialect": None, "mode": "auto", "skipped": "request body is not JSON", "decisions": []}


# -- pure functions ------------------------------------------------------------------------------


def test_render_record_shows_calls_reasons_request_side_notes_and_provider():
    text = report.render_record(RENAMED, side="response", original_size=2072)
    lines = text.splitlines()
    assert lines[:5] == [
        "toolvocab — anthropic · mode auto · changed: request + response",
        "state: changed: shell→Bash (capability); 1 tool renamed upstream; prompt names 1 tool",
        "upstream: api.anthropic.com/v1/messages · model claude-x · status 200",
        "client: Claude Code · ttfb 120 ms · total 900.5 ms · streamed",
        "calls: 2 seen, 1 kept, 1 repaired, 0 left",
    ]
    calls = lines.index("Tool calls in the answer (- before, + after, = unchanged):")
    assert lines[calls + 1 : calls + 13] == [
        '  - shell {"cmd":"ls"}',
        '  + Bash {"command":"ls"}',
        "      rename at capability (renamed)",
        "      reason: shell has capability shell and Bash is the one declared tool with it",
        "      candidates: Bash",
        "      argument: rename_key cmd → command",
        "      call id: toolu_1",
        '  = Bash {"command":"pwd"}',
        "      keep at declared (kept)",
        "      reason: Bash is declared and its arguments validate",
        "      candidates: Bash",
        "      call id: toolu_2",
    ]
    request = lines.index("Request side:")
    assert request > calls  # the answer's side first on the response
    assert lines[request + 1 : request + 9] == [
        "  declared (2): Bash, Read",
        "  profile: qwen",
        "  name grammar: anthropic",
        "  renamed upstream: Read → read_file (profile: profile qwen wants read_file)",
        "  declared more than once: Bash → later declarations (dropped)",
        "  added to the system prompt:",
        "    Call tools only by the exact names declared in this request, which include Bash.",
        "  names it lists: Bash",
    ]
    assert "  - a note worth reading" in lines
    assert "The upstream's original (2072 bytes) is in metadata toolvocab_upstream." in lines
    assert "Tool errors" not in text  # the record has none: the section is left out
    assert all(len(line) <= report.WIDTH for line in lines if not line.startswith(("  -", "  +", "  =")))


def test_render_record_left_call_with_candidates_and_tool_errors():
    text = report.render_record(LEFT, side="request")
    assert text.index("Request side:") < text.index("Tool calls in the answer")  # the request's side first
    assert '= shell {"cmd":"ls"}' in text
    assert (
        "leave at capability (left unchanged)\n      reason: shell has capability shell and 2 declared tools have it"
        in text
    )
    assert "candidates: run_shell_command, Bash (more than one: declined to guess)" in text
    assert "system prompt: unchanged" in text
    assert "Tool errors in the request's transcript:" in text
    flat = " ".join(text.split())  # long lines are wrapped
    assert 'unknown_tool: shell [call_8] (Qwen Code\'s wording) — Tool "shell" not found in registry' in flat
    assert "invalid_arguments: Bash [call_7] (Qwen Code's wording) — missing required parameter command" in flat
    assert "Body below: the request as sent upstream." in text


def test_render_record_observe_mode_shows_what_would_change():
    text = report.render_record(OBSERVED)
    assert "observe mode: nothing was changed; below is what would change" in text
    assert "changed: nothing" in text
    assert "rename at capability (would rename)" in text
    assert '+ Bash {"command":"ls"}' in text
    assert "would add to the system prompt:\n    Call tools only" in text


def test_render_record_wraps_long_sentences_and_reasons():
    record = copy.deepcopy(RENAMED)
    names = [f"mcp__server__tool_number_{i}" for i in range(12)]
    record["prompt_sentence"] = (
        "Call tools only by the exact names declared in this request, which include " + ", ".join(names) + "."
    )
    record["decisions"][0]["reason"] = "word " * 40
    lines = report.render_record(record).splitlines()
    assert all(len(line) <= report.WIDTH for line in lines if not line.startswith(("  -", "  +", "  =")))
    assert " ".join(line.strip() for line in lines).count("mcp__server__tool_number_11.") == 1


def test_render_record_skip_and_missing_record():
    assert report.render_record(SKIPPED) == "toolvocab: not handled — request body is not JSON\nmode: auto"
    assert report.render_record(None) == "toolvocab: this flow has no toolvocab record"


def test_render_record_falls_back_to_the_diff_text_and_tolerates_missing_fields():
    text = report.render_record({"dialect": "gemini", "mode": "auto"}, diff="- a {}\n+ b {}")
    assert "  - a {}\n  + b {}" in text and "calls: 0 seen" in text and "declared (0): –" in text
    assert "upstream: – · model – · status –" in text


def test_explain_flows_says_why_each_name_was_or_was_not_repaired():
    text = report.explain_flows([RENAMED, LEFT, OBSERVED, SKIPPED, {}])
    lines = text.splitlines()
    assert (
        lines[0] == "flow 1: api.anthropic.com/v1/messages (anthropic, model claude-x, client Claude Code, mode auto)"
    )
    for expected in (
        "  shell → Bash: renamed at step capability (the one declared tool with the same capability)",
        "      reason: shell has capability shell and Bash is the one declared tool with it",
        "      candidates: Bash",
        "  Bash: kept at step declared (the name is declared)",
        "  request: Read sent upstream as read_file (profile: profile qwen wants read_file)",
        "  request: prompt sentence added: Call tools only by the exact names declared in this request, which include Bash.",
        "  note: a note worth reading",
        "flow 2: llm.local/v1/chat/completions (openai_chat, model qwen3, client Qwen Code, mode repair)",
        "  shell: NOT repaired, left as answered at step capability (several candidates, declined to guess)",
        "      candidates: run_shell_command, Bash",
        '  tool error: unknown_tool: shell [call_8] (Qwen Code\'s wording) — Tool "shell" not found in registry',
        "  shell → Bash: would be renamed at step capability (the one declared tool with the same capability)",
        "  request: prompt sentence would add: Call tools only by the exact names declared in this request, which include Bash.",
        "flow 4: (host not recorded) (mode auto)",
        "  not handled: request body is not JSON",
        "1 flow without a toolvocab record",
    ):
        assert expected in lines, (expected, text)
    assert report.explain_flows([]) == "toolvocab: no flows"


def test_stats_counts_every_dimension():
    s = report.stats([RENAMED, LEFT, OBSERVED, SKIPPED, {}])
    assert (s["flows"], s["handled"], s["skipped"], s["changed"], s["observe"]) == (4, 3, 1, 1, 1)
    assert s["state"] == {
        "changed": 1,
        "left": 1,
        "passed through": 0,
        "prompt sentence only": 0,
        "would change": 1,
        "unchanged": 0,
    }
    # the observed flow's repair was not made: "would be repaired", not "repaired"
    assert s["calls"] == {"seen": 5, "kept": 2, "repaired": 1, "left": 1} and s["would_repair"] == 1
    assert s["action"] == {"rename": 2, "keep": 2, "leave": 1}
    assert s["step"] == {"capability": 3, "declared": 2}
    assert s["client"] == {"Claude Code": 2, "Qwen Code": 1}
    assert s["host"] == {"api.anthropic.com": 2, "llm.local": 1}
    assert s["dialect"] == {"anthropic": 2, "openai_chat": 1}
    assert s["model"] == {"claude-x": 1, "claude-y": 1, "qwen3": 1}
    assert s["tool_errors"] == {"unknown_tool": 1, "invalid_arguments": 1}
    assert s["median_ttfb_ms"] == 120.0 and s["median_total_ms"] == 900.5
    assert s["skip_reasons"] == {"request body is not JSON": 1}


def test_stats_text():
    text = report.stats_text([RENAMED, LEFT, OBSERVED, SKIPPED])
    assert text.splitlines() == [
        "toolvocab stats: 4 flows with a record — 3 handled (1 in observe mode), 1 not handled",
        "flows by state: changed 1, left 1, passed through 0, prompt sentence only 0, would change 1, unchanged 0",
        "calls: 5 seen, 2 kept, 1 repaired, 1 left, 1 would be repaired (observe mode)",
        "decisions by action: keep 2, rename 2, leave 1",
        "decisions by ladder step: capability 3, declared 2",
        "flows by client: Claude Code 2, Qwen Code 1",
        "flows by upstream host: api.anthropic.com 2, llm.local 1",
        "flows by dialect: anthropic 2, openai_chat 1",
        "flows by model: claude-x 1, claude-y 1, qwen3 1",
        "tool errors by kind: invalid_arguments 1, unknown_tool 1",
        "median ttfb 120 ms, median total 900.5 ms",
        "not handled: request body is not JSON 1",
    ]
    # without tool errors the line is left out; records without counters count their decisions
    bare = {k: v for k, v in RENAMED.items() if not k.startswith("calls_")}
    text = report.stats_text([bare])
    assert "tool errors" not in text and "calls: 2 seen, 1 kept, 1 repaired, 0 left" in text
    assert report.stats_text([]) == "toolvocab stats: no flows with a toolvocab record"


def test_stats_counts_a_replayed_tool_error_once():
    # the next request of the session carries the same transcript, so the same errors again
    later = copy.deepcopy(LEFT) | {"decisions": []}
    later["tool_errors"].append(
        {"call_id": "call_10", "name": "Bash", "kind": "timeout", "client": None, "tool": "Bash", "text": "timed out"}
    )
    later["tool_errors"].append(
        {"call_id": None, "name": None, "kind": "unknown", "client": None, "tool": None, "text": "failed"}
    )
    s = report.stats([LEFT, later])
    assert s["tool_errors"] == {"unknown_tool": 1, "invalid_arguments": 1, "timeout": 1, "unknown": 1}
    assert "timeout: Bash [call_10] — timed out" in report.render_record(later)
    assert "  unknown: ? — failed" in report.render_record(later).splitlines()


def test_render_body():
    assert report.render_body(b'{"a":[1]}') == '{\n  "a": [\n    1\n  ]\n}'
    assert report.render_body(b"event: x\ndata: {}\n\n") == "event: x\ndata: {}\n\n"
    assert report.render_body(b"") == "(no content)"
    assert report.render_body(b"\xff") == "\ufffd"


# -- the real addon in a taddons context ---------------------------------------------------------


@pytest.fixture(scope="module")
def loaded():
    """The script loaded once (as mitmdump would), ToolVocabUI beside it, and the ``view`` addon
    (which resolves ``@all`` the way mitmweb and the console do)."""
    with harness.script_context() as (tctx, module):
        ui = tctx.master.addons.get("toolvocabui")
        if ui is None:  # a script without ToolVocabUI: add the one from toolvocab.addons.ui
            ui = ui_addon.ToolVocabUI()
            tctx.master.addons.add(ui)
        view = view_addon.View()
        tctx.master.addons.add(view)
        yield tctx, module, ui, view
        ui_addon.unregister_view()


@pytest.fixture
def env(loaded):
    tctx, module, _ui, view = loaded
    with harness.configured((tctx, module)):
        ui_addon.register_view()  # as load() did; a test may have removed it
        view.clear()
        yield loaded


def make_flow(body: dict, upstream: bytes, resp_type: str) -> http.HTTPFlow:
    return harness.make_flow(
        body,
        host="api.anthropic.com",
        path="/v1/messages",
        upstream=upstream,
        resp_type=resp_type,
        headers=[("content-type", "application/json"), ("user-agent", "claude-cli/2.0.14 (external, cli)")],
    )


def drive(env, f: http.HTTPFlow) -> http.HTTPFlow:
    """``f`` through the hooks (``harness.drive``), a streamed body in two halves."""
    tctx, module, _, _ = env
    upstream = f.response.raw_content
    half = len(upstream) // 2
    asyncio.run(harness.drive(tctx, module, f, random.Random(0), chunks=[upstream[:half], upstream[half:]]))
    return f


def repaired_stream_flow(env) -> http.HTTPFlow:
    return drive(
        env,
        make_flow(
            fixture_json("request-claude-code.json"), fixture_bytes("stream-foreign-tool.sse"), "text/event-stream"
        ),
    )


def left_json_flow(env) -> http.HTTPFlow:
    body = fixture_json("request-claude-code.json") | {"stream": False}
    answer = fixture_json("response-foreign-tool.json")
    answer["content"][1] |= {"name": "launch_rocket", "input": {"target": "moon"}}
    return drive(env, make_flow(body, orjson.dumps(answer), "application/json"))


def tool_error_flow(env) -> http.HTTPFlow:
    """Claude Code sends back its error for a call to a tool it never declared; the answer then
    calls a declared tool."""
    body = fixture_json("request-claude-code.json")
    body["messages"] += [
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_01Prev", "name": "shell", "input": {"cmd": "ls"}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01Prev",
                    "is_error": True,
                    "content": "<tool_use_error>Error: No such tool available: shell</tool_use_error>",
                }
            ],
        },
    ]
    return drive(env, make_flow(body, fixture_bytes("stream-declared-tool.sse"), "text/event-stream"))


def plain_json_flow() -> http.HTTPFlow:
    """A flow toolvocab never saw (no record)."""
    return make_flow({"model": "m", "messages": []}, b'{"ok": true}', "application/json")


def view_of(message, f) -> tuple[str | None, str]:
    """(view name, text) that mitmproxy's "auto" picks for a message, on 11 and 12."""
    if MITMPROXY_12:
        result = contentviews.prettify_message(message, f)
        return result.view_name, result.text
    description, lines, error = contentviews.get_message_content_view("auto", message, f)
    assert error is None, error
    return description, "\n".join("".join(text for _, text in line) for line in lines)


def test_commands_are_registered(env):
    tctx = env[0]
    commands = tctx.master.commands.commands
    assert "toolvocab.explain" in commands and "toolvocab.stats" in commands
    for name in ("toolvocab.explain", "toolvocab.stats"):
        cmd = commands[name]
        assert [p.name for p in cmd.parameters] == ["flows"]
        assert cmd.help  # the docstring
    # the script's own command stays (not this module's)
    assert tctx.master.addons.get("toolvocabui") is env[2]


def test_contentview_wins_on_both_sides_of_a_repaired_flow(env):
    f = repaired_stream_flow(env)
    assert f.marked == ":wrench:" and "shell→Bash (capability)" in f.comment
    name, text = view_of(f.response, f)
    assert name == "toolvocab"
    assert '- shell {"cmd":"git log --oneline -3"}' in text
    assert '+ Bash {"command":"git log --oneline -3"}' in text
    assert "rename at capability (renamed)\n      reason: shell has capability shell" in text
    assert "candidates: Bash" in text
    assert "client: Claude Code" in text and "model claude-fixture-1" in text and "status 200" in text
    assert "in metadata toolvocab_upstream" in text
    assert '"name":"Bash"' in text.split("Body below:")[1]  # the body as the client got it follows
    name, text = view_of(f.request, f)
    assert name == "toolvocab"
    assert "added to the system prompt:\n    Call tools only by the exact names declared" in text
    assert "in metadata toolvocab_request" in text
    assert '"max_tokens": ' in text.split("Body below:")[1]  # pretty-printed JSON body


def test_contentview_observe_mode_shows_everything(env):
    tctx, module, _, _ = env
    tctx.configure(module, toolvocab_mode="observe")
    f = repaired_stream_flow(env)
    assert f.marked == ":eyes:"
    name, text = view_of(f.response, f)
    assert name == "toolvocab"
    assert "observe mode: nothing was changed" in text
    assert "rename at capability (would rename)" in text
    assert '+ Bash {"command":"git log --oneline -3"}' in text
    name, text = view_of(f.request, f)
    assert name == "toolvocab" and "would add to the system prompt" in text


def test_contentview_stays_out_of_flows_it_did_not_handle(env):
    f = plain_json_flow()
    name, _ = view_of(f.response, f)
    assert name != "toolvocab" and "json" in (name or "").lower()
    f.metadata["toolvocab"] = dict(SKIPPED)
    name, _ = view_of(f.response, f)
    assert name != "toolvocab"


def test_contentview_registration_survives_reload(env):
    ui = env[2]
    # a hot reload: done() on the old instance, load() on the new one, maybe twice
    ui.done()
    ui.load(None)
    ui.load(None)
    if not MITMPROXY_12:
        assert [v.name for v in contentviews.views].count("toolvocab") == 1
        # a stale view of the same name (an older module's) is replaced, not refused
        stale = type(ui_addon.VIEW)()
        contentviews.remove(ui_addon.VIEW)
        contentviews.add(stale)
        ui.load(None)
        assert contentviews.get("toolvocab") is ui_addon.VIEW
        ui.done()
        assert contentviews.get("toolvocab") is None
        ui.load(None)
    else:
        assert "toolvocab" in contentviews.registry
    f = repaired_stream_flow(env)
    assert view_of(f.response, f)[0] == "toolvocab"


def test_explain_and_stats_commands_on_real_flows(env, caplog):
    tctx, module, _, view = env
    repaired = repaired_stream_flow(env)
    left = left_json_flow(env)
    tctx.configure(module, toolvocab_mode="observe")
    observed = repaired_stream_flow(env)
    plain = plain_json_flow()
    flows = [repaired, left, observed, plain]
    caplog.set_level(logging.INFO)

    text = tctx.master.commands.call("toolvocab.explain", flows)
    assert f"flow {repaired.id[:8]}: POST https://api.anthropic.com/v1/messages" in text
    assert "shell → Bash: renamed at step capability" in text
    assert "shell → Bash: would be renamed at step capability" in text
    assert "launch_rocket: NOT repaired, left as answered at step none (no declared tool fits)" in text
    assert "1 flow without a toolvocab record" in text
    assert any(r.levelno == ALERT and r.getMessage() == text for r in caplog.records)

    text = tctx.master.commands.call("toolvocab.stats", flows)
    assert "toolvocab stats: 3 flows with a record — 3 handled (1 in observe mode), 0 not handled" in text
    assert (
        "flows by state: changed 1, left 1, passed through 0, prompt sentence only 0, would change 1, unchanged 0"
        in text
    )
    assert "calls: 5 seen, 2 kept, 1 repaired, 1 left, 1 would be repaired (observe mode)" in text
    assert "decisions by action: keep 2, rename 2, leave 1" in text
    assert "flows by client: Claude Code 3" in text
    assert "flows by upstream host: api.anthropic.com 3" in text
    assert "flows by dialect: anthropic 3" in text
    assert "flows by model: claude-fixture-1 3" in text
    assert "median ttfb 2000 ms, median total 3000 ms" in text  # tflow's timestamps
    assert any(r.levelno == ALERT and r.getMessage() == text for r in caplog.records)

    # flow specs resolve through the view addon, as in mitmweb and the console
    view.add(flows)
    assert tctx.master.commands.execute("toolvocab.stats @all") == text
    assert "launch_rocket: NOT repaired" in tctx.master.commands.execute("toolvocab.explain @all")
    # each state has its marker (~marker) and its comment's first words
    assert tctx.master.commands.execute("toolvocab.stats ~marked").startswith("toolvocab stats: 3 flows")
    for spec, flow in (
        ('"~marker :wrench:"', repaired),
        ('"~marker :no_entry:"', left),
        ('"~marker :eyes:"', observed),
        ('"~comment ^left:"', left),
        ('"~comment ^changed:"', repaired),
    ):
        text = tctx.master.commands.execute(f"toolvocab.explain {spec}")
        assert text.startswith(f"flow {flow.id[:8]}:") and text.count("\nflow ") == 0, (spec, text)


def test_records_survive_a_flow_file_roundtrip_for_the_ui(env, tmp_path):
    from mitmproxy import io as mio

    f = repaired_stream_flow(env)
    path = tmp_path / "flows.mitm"
    with open(path, "wb") as fp:
        mio.FlowWriter(fp).add(f)
    with open(path, "rb") as fp:
        (g,) = list(mio.FlowReader(fp).stream())
    assert report.explain_flows([g]) == report.explain_flows([f])
    assert view_of(g.response, g) == view_of(f.response, f)


def test_tool_errors_from_the_transcript_show_in_view_explain_and_stats(env):
    tctx = env[0]
    f = tool_error_flow(env)
    errors = f.metadata["toolvocab"].get("tool_errors")
    if not errors:
        pytest.skip("this toolvocab.py does not record tool_errors")
    assert [(e["kind"], e["call_id"]) for e in errors] == [("unknown_tool", "toolu_01Prev")]
    name, text = view_of(f.response, f)
    assert name == "toolvocab"
    assert "Tool errors in the request's transcript:" in text
    assert "unknown_tool: shell [toolu_01Prev] (Claude Code's wording)" in text
    assert "tool error: unknown_tool: shell [toolu_01Prev]" in tctx.master.commands.call("toolvocab.explain", [f])
    # the next request of the session replays the same error: counted once
    again = tool_error_flow(env)
    stats = tctx.master.commands.call("toolvocab.stats", [f, again])
    assert "tool errors by kind: unknown_tool 1" in stats


def test_view_priority_only_for_http_messages_of_handled_flows():
    f = plain_json_flow()
    assert report.view_priority(f, f.response) == 0
    f.metadata["toolvocab"] = dict(RENAMED)
    assert report.view_priority(f, f.request) == report.view_priority(f, f.response) == report.VIEW_PRIORITY > 1
    assert report.view_priority(f, None) == 0  # a WebSocket or TCP message: other views decide
    assert report.view_priority(None, f.response) == 0
    f.metadata["toolvocab"] = dict(SKIPPED)
    assert report.view_priority(f, f.response) == 0
    # picked by name for a message that is neither side: the record, then the message, no "Body below"
    f.metadata["toolvocab"] = dict(RENAMED)
    text = report.render_message(b'{"type":"response.created"}', f, None)
    assert text.startswith("toolvocab — anthropic") and "Body below" not in text
    assert text.endswith('{\n  "type": "response.created"\n}')
