"""toolvocab in mitmweb's master (its ``WebAddon`` loaded, as mitmweb loads it): the commands
answer in one line and log their text at ``info`` (the event log's ``pre``; mitmweb's command bar
shows a returned value as ``JSON.stringify(value)``, and its event log has no ``alert`` filter),
and the comment column joins mitmweb's default flow-list columns. What the browser renders is
checked in tests/integration/test_mitmweb_debugging.py."""

from __future__ import annotations

import logging

import orjson
import pytest
from mitmproxy.addons import view as view_addon
from mitmproxy.tools.web.webaddons import WebAddon

import harness

BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


@pytest.fixture
def web():
    with harness.script_context() as (tctx, module):
        tctx.master.addons.add(WebAddon())
        view = view_addon.View()
        tctx.master.addons.add(view)
        yield tctx, module, view


def repaired(tctx, module):
    body = {"model": "m", "max_tokens": 10, "tools": [BASH], "messages": [{"role": "user", "content": "hi"}]}
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}}],
    }
    f = harness.make_flow(
        body,
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json")],
        upstream=orjson.dumps(answer),
    )
    harness.replay(harness.Env(tctx, module), f)
    assert f.marked == ":wrench:"
    return f


def test_commands_answer_in_one_line_and_log_the_text_at_info(web, caplog):
    tctx, module, view = web
    f = repaired(tctx, module)
    view.add([f])
    caplog.set_level(logging.DEBUG)
    for command, first in (
        ("toolvocab.stats @all", "toolvocab stats: 1 flow with a record"),
        ("toolvocab.explain @all", f"flow {f.id[:8]}: POST https://api.anthropic.com/v1/messages"),
        ("toolvocab.tools", None),
    ):
        if command == "toolvocab.tools":
            got = tctx.master.commands.call("toolvocab.tools", f)
        else:
            got = tctx.master.commands.execute(command)
        assert "\n" not in got and got.endswith("in the event log (Options → Display Event Log)"), got
        logged = [
            r.getMessage() for r in caplog.records if r.getMessage().startswith(("toolvocab stats", "flow ", "["))
        ]
        assert logged, caplog.records
        text = logged[-1]
        assert "\n" in text and f" — {text.count(chr(10)) + 1} lines in the event log" in got, (got, text)
        assert all(r.levelno == logging.INFO for r in caplog.records if r.getMessage() == text)
        if first:
            assert text.startswith(first), text
        else:
            assert orjson.loads(text)[0]["tools"][0]["name"] == "Bash"  # the JSON itself, not a quoted string
        caplog.clear()


def test_the_comment_column_joins_mitmwebs_default_columns(web):
    tctx, module, _ = web
    default = list(tctx.options.default("web_columns"))
    assert "comment" not in default
    tctx.master.addons.get("toolvocabui").running()
    assert list(tctx.options.web_columns) == [*default, "comment"]


def test_columns_the_user_chose_are_left_alone(web):
    tctx, module, _ = web
    tctx.options.update(web_columns=["path", "status"])
    tctx.master.addons.get("toolvocabui").running()
    assert list(tctx.options.web_columns) == ["path", "status"]


def test_outside_mitmweb_the_commands_return_the_text(caplog):
    from mitmproxy.log import ALERT

    with harness.script_context() as (tctx, module):
        f = repaired(tctx, module)
        caplog.set_level(logging.DEBUG)
        text = tctx.master.commands.call("toolvocab.stats", [f])
        assert text.startswith("toolvocab stats: 1 flow with a record") and "\nflows by state: changed 1," in text
        assert any(r.levelno == ALERT and r.getMessage() == text for r in caplog.records)
        assert "web_columns" not in tctx.options
        tctx.master.addons.get("toolvocabui").running()  # nothing to do outside mitmweb


def test_the_commands_answer_for_flows_that_are_not_http(web):
    """A TCP flow (a ``reverse:tcp`` listener, a file of them) has no request: each command
    answers (nothing to show for it) instead of failing with ``AttributeError``."""
    from mitmproxy.test import tflow

    tctx, module, view = web
    f = tflow.ttcpflow()
    view.add([f])
    assert tctx.master.commands.call("toolvocab.tools", f).startswith("toolvocab.tools:")
    for command in ("toolvocab.stats @all", "toolvocab.explain @all"):
        assert tctx.master.commands.execute(command).startswith(command.split()[0] + ":")
