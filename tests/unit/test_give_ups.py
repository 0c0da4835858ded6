"""Where toolvocab gives up on a tool call in a stream — events out of order, the stream's end
inside a held call, an index it cannot read — the flow says so: the call reaches the client
byte for byte as the upstream sent it, the record has a ``passed through: <why>; the client got
<what>`` note, the flow is marked ⚠️ (``:warning:``) with a comment that starts ``passed through:``,
and a ``warn`` line says why. (The stall bound, a repeated key, an empty DATA frame and contained
errors are in test_addon_hooks.py and the integration tests.)"""

from __future__ import annotations

import logging
from pathlib import Path

import orjson
import pytest

import harness
import toolvocab.report as report
from harness.fixtures import env  # noqa: F401  (pytest fixture)
from harness.fixtures import loaded  # noqa: F401

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
ANTHROPIC_STREAM = (FIXTURES / "anthropic" / "stream-foreign-tool.sse").read_bytes()
ANTHROPIC_REQUEST = orjson.loads((FIXTURES / "anthropic" / "request-claude-code.json").read_bytes())
RESPONSES_STREAM = (FIXTURES / "openai_responses" / "stream-foreign-shell.sse").read_bytes()
RESPONSES_REQUEST = orjson.loads((FIXTURES / "openai_responses" / "request-codex.json").read_bytes())
#: The held call's content_block_stop in the Anthropic fixture (block 1: shell).
STOP_1 = b'event: content_block_stop\ndata: {"type":"content_block_stop","index":1}\n\n'


def events(data: bytes) -> list[bytes]:
    return [e + b"\n\n" for e in data.split(b"\n\n") if e]


def anthropic_flow(upstream: bytes):
    return harness.make_flow(
        ANTHROPIC_REQUEST,
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json"), ("user-agent", "claude-cli/2.0.14 (external, cli)")],
        upstream=upstream,
        resp_type="text/event-stream",
    )


def responses_flow(upstream: bytes):
    return harness.make_flow(
        RESPONSES_REQUEST,
        host="api.openai.com",
        path="/v1/responses",
        headers=[("content-type", "application/json")],
        upstream=upstream,
        resp_type="text/event-stream",
    )


def warnings(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.levelno == logging.WARNING and r.getMessage().startswith("toolvocab")
    ]


def assert_passed(f, record: dict, why: str, caplog) -> None:
    note = f"passed through: {why}; the client got the call as the upstream sent it"
    assert note in record["notes"], record["notes"]
    assert report.outcome(record) == "passed through"
    assert f.marked == ":warning:"
    assert f.comment.startswith(f"passed through: {why}"), f.comment
    assert any(
        line.startswith(f"toolvocab: passed through (could not repair): {why}; the client got")
        for line in warnings(caplog)
    ), warnings(caplog)


@pytest.mark.parametrize("seed", range(3))
def test_anthropic_events_out_of_order_pass_the_held_call_as_it_came(env, caplog, seed):
    caplog.set_level(logging.INFO)
    # the shell block never gets its content_block_stop: the next block starts instead
    upstream = ANTHROPIC_STREAM.replace(STOP_1, b"", 1)
    assert upstream != ANTHROPIC_STREAM
    f = anthropic_flow(upstream)
    r = harness.replay(env, f, seed)
    cut = upstream.index(b'{"type":"content_block_start","index":2')
    head = upstream[: upstream.rindex(b"event:", 0, cut)]
    assert r.out[: len(head)] == head  # the held call (shell) went out byte for byte, unrepaired
    assert_passed(
        f,
        r.record,
        "a content_block_start event came before the tool call shell's content_block_stop (events out of order)",
        caplog,
    )


def test_anthropic_stream_ending_inside_a_held_call_passes_it_as_it_came(env, caplog):
    caplog.set_level(logging.INFO)
    upstream = ANTHROPIC_STREAM[: ANTHROPIC_STREAM.index(STOP_1)]
    f = anthropic_flow(upstream)
    r = harness.replay(env, f, 0)
    assert r.out == upstream
    assert_passed(
        f, r.record, "the rewrite reached the end of the stream before the tool call shell's content_block_stop", caplog
    )


def test_responses_terminal_event_before_the_calls_done_passes_it_as_it_came(env, caplog):
    caplog.set_level(logging.INFO)
    parts = events(RESPONSES_STREAM)
    done = [i for i, e in enumerate(parts) if e.startswith(b"event: response.output_item.done")][-1]
    upstream = b"".join(parts[:done] + parts[done + 1 :])
    f = responses_flow(upstream)
    r = harness.replay(env, f, 0)
    held = b"".join(parts[:done])
    assert r.out[: len(held)] == held  # the held call (shell) went out byte for byte, unrepaired
    assert_passed(
        f,
        r.record,
        "a response.completed event came before the tool call shell's response.output_item.done (events out of order)",
        caplog,
    )


def test_a_complete_stream_is_changed_not_passed(env, caplog):
    # the control: the same fixtures, whole, are repaired and say so
    caplog.set_level(logging.INFO)
    for f in (anthropic_flow(ANTHROPIC_STREAM), responses_flow(RESPONSES_STREAM)):
        r = harness.replay(env, f, 0)
        assert not report.passed_reasons(r.record) and f.marked == ":wrench:" and f.comment.startswith("changed: ")
    assert warnings(caplog) == []
