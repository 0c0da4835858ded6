"""A flow mitmproxy replays (``replay.client``: mitmweb's Replay, the console's ``r``) is handled
as a request of its own: mitmproxy sends the request the flow holds — what the upstream received
the first time, toolvocab's changes included — through the hooks again. Its record describes
that replay (a note says so, the contentview says "at the replay"), not the first pass: the
first pass's client original, upstream answer, diff, marker and comment are gone from the flow
(mitmproxy's backup, which Revert restores, keeps them)."""

from __future__ import annotations

import asyncio
import copy
import random

import orjson
import pytest
from mitmproxy import eventsequence
from mitmproxy import http

import harness
import toolvocab.report as report
from harness.fixtures import env  # noqa: F401  (pytest fixture)
from harness.fixtures import loaded  # noqa: F401

BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
ANSWER = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "m",
    "stop_reason": "tool_use",
    "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}}],
}


def first_pass(env):
    body = {"model": "m", "max_tokens": 10, "tools": [BASH], "messages": [{"role": "user", "content": "hi"}]}
    f = harness.make_flow(
        body,
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json")],
        upstream=orjson.dumps(ANSWER),
    )
    harness.replay(env, f)
    record = f.metadata["toolvocab"]
    assert record["request_changed"] and record["prompt_sentence"] and "toolvocab_request" in f.metadata
    return f


def replay_it(env, f):
    """What ``replay.client`` does to the flow (clientplayback.py, 11.0.2 and 12.x), then the
    hooks again over the request the flow holds and the upstream's (same) answer."""
    sent = f.request.content
    f.backup()
    f.is_replay = "request"
    f.response = harness.answer(orjson.dumps(ANSWER), "application/json")
    harness.activate(env.tctx)
    asyncio.run(harness.drive(env.tctx, env.module, f, random.Random(0)))
    return sent


def test_a_replayed_flow_gets_a_record_of_its_own(env):
    f = first_pass(env)
    sent = replay_it(env, f)
    record = f.metadata["toolvocab"]
    assert record["notes"][0] == report.REPLAY_NOTE
    # the request replayed already holds the sentence: nothing is added twice, and the
    # replay's request is not presented as a client's original
    assert f.request.content == sent
    assert record["prompt_sentence"] is None and record["request_changed"] is False
    assert "toolvocab_request" not in f.metadata
    # the answer is repaired as at the first pass, and the flow shows the replay's state
    assert [d["target"] for d in record["decisions"]] == ["Bash"]
    assert f.marked == ":wrench:" and f.comment == "changed: shell→Bash (capability)"


def test_the_view_of_a_replay_says_so(env):
    f = first_pass(env)
    first = report.render_message(f.request.content, f, f.request)
    assert "The client's original (" in first and "added to the system prompt:" in first
    replay_it(env, f)
    text = report.render_message(f.request.content, f, f.request)
    assert "replay (mitmproxy's replay.client): the request replayed is the one this flow held" in text.split("\n")[1]
    assert "Body below: the request as sent upstream at the replay." in text
    assert "The client's original" not in text and "added to the system prompt:" not in text
    answer = report.render_message(f.response.content, f, f.response)
    assert "Body below: the answer after toolvocab, at the replay (mitmproxy received it, no client did)." in answer


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_a_replay_drops_the_first_pass_record_whatever_handles_it(env, mode):
    f = first_pass(env)
    env.configure(toolvocab_mode=mode)
    f.request.path = "/v1/other"  # an edit that makes it no LLM request
    replay_it(env, f)
    record = f.metadata.get("toolvocab")
    assert "toolvocab_request" not in f.metadata and "toolvocab_upstream" not in f.metadata
    assert not f.marked and not f.comment
    if mode == "off":
        assert record is None
    else:
        assert record["skipped"] and record["notes"] == [report.REPLAY_NOTE]


@pytest.mark.parametrize("mode", ["auto", "repair", "observe"])
def test_a_flow_read_from_a_file_is_left_as_saved(env, mode):
    """``mitmdump -r``, ``mitmweb -r`` and ``toolvocab-web -r`` run every hook over each flow they
    read (``master.load_flow``: ``eventsequence.iterate``), with ``flow.live`` false (G11). The flow
    holds the request the upstream got and the record of what happened: nothing is planned or
    repaired again, and its record, marker, comment and diffs stay as saved."""
    f = first_pass(env)
    saved = f.get_state()
    loaded_flow = http.HTTPFlow.from_state(copy.deepcopy(saved))
    loaded_flow.live = False  # as io.FlowReader gives it
    env.configure(toolvocab_mode=mode)
    harness.activate(env.tctx)
    for event in eventsequence.iterate(loaded_flow):
        env.hook(event)
    assert loaded_flow.get_state() == saved
    assert loaded_flow.metadata["toolvocab"]["decisions"][0]["target"] == "Bash"
    assert loaded_flow.marked == f.marked == ":wrench:" and loaded_flow.comment == f.comment
    assert loaded_flow.id not in env.addon._states
