"""Where toolvocab gives up on a tool call in a stream — events out of order, the stream's end
inside a held call, an index it cannot read — the flow says so: the call reaches the client
byte for byte as the upstream sent it, the record has a ``passed through: <why>; the client got
<what>`` note, the flow is marked ⚠️ (``:warning:``) with a comment that starts ``passed through:``,
and a ``warn`` line says why. (The stall bound, a repeated key, an empty DATA frame and contained
errors are in test_addon_hooks.py and the integration tests.)"""

from __future__ import annotations

import logging
import os
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from test_openai_chat_dialect import sdk_calls

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


def anthropic_flow(upstream: bytes, request: dict = ANTHROPIC_REQUEST):
    return harness.make_flow(
        request,
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


def _files_read_responses_flow(upstream: bytes):
    """A Codex request that also declares ``files.read`` (sent upstream under an alias: OpenAI
    takes no dot), answered ``upstream``."""
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    tool = {"type": "function", "name": "files.read", "parameters": schema}
    f = responses_flow(upstream)
    f.request.content = orjson.dumps({**RESPONSES_REQUEST, "tools": [*RESPONSES_REQUEST["tools"], tool]})
    return f


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


def test_a_call_given_up_under_this_flows_alias_reaches_the_client_under_its_own_name(env, caplog):
    """The upstream rejects ``files.read`` (a dot), so this flow sends it under an alias; the
    model calls the alias and the stream ends out of order. The call goes as it came but for its
    name, the client's own (an alias it never declared is no tool it can run), and the record,
    the log and the comment say both."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    caplog.set_level(logging.INFO)
    tool = {"name": "files.read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    request = {**ANTHROPIC_REQUEST, "tools": [*ANTHROPIC_REQUEST["tools"], tool]}
    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    block = {"type": "tool_use", "id": "toolu_01Xy", "name": upstream_name, "input": {}}
    stream = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": block},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": '{"path"'}},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}},
        {"type": "message_stop"},
    ]
    upstream = b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in stream)
    f = anthropic_flow(upstream, request)
    r = harness.replay(env, f, 0)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    sent = [orjson.loads(line[6:]) for line in r.out.split(b"\n") if line.startswith(b"data: ")]
    assert sent[1]["content_block"]["name"] == "files.read"
    assert [{**d, "content_block": block} if d["type"] == "content_block_start" else d for d in sent] == stream
    why = (
        f"a message_delta event came before the tool call {upstream_name}'s content_block_stop (events out of "
        "order); named back to files.read"
    )
    note = f"passed through: {why}; the client got the call as the upstream sent it but for its name"
    assert note in r.record["notes"], r.record["notes"]
    assert f.marked == ":warning:" and f.comment.startswith("passed through: ")


@pytest.mark.parametrize("again", ["response.output_item.done", "response.output_item.added"])
@pytest.mark.parametrize("seed", range(2))
def test_an_event_sent_again_after_a_fitted_call_keeps_its_decision(env, caplog, again, seed):
    """The call (``shell`` with an argv) reached the client fitted; then the upstream sent one of
    its events again (its ``.done``, or its ``.added``). The copy's give-up is said, but the call
    the client already ran keeps its decision in the record and in the log: the record said no
    repair while the client got ``exec_command`` (found by the fuzz profile's ``dup`` mutation)."""
    caplog.set_level(logging.INFO)
    parts = events(RESPONSES_STREAM)
    done = next(i for i, e in enumerate(parts) if e.startswith(b"event: response.output_item.done") and b"shell" in e)
    copy = next(e for e in parts if e.startswith(b"event: " + again.encode()) and b'"function_call"' in e)
    f = responses_flow(b"".join(parts[: done + 1] + [copy] + parts[done + 1 :]))
    r = harness.replay(env, f, seed)
    dones = [e for e in events(r.out) if e.startswith(b"event: response.output_item.done") and b"fc_fx01" in e]
    first = orjson.loads(dones[0].split(b"data: ", 1)[1])["item"]
    assert (first["name"], orjson.loads(first["arguments"])) == ("exec_command", {"cmd": "echo hi"})
    decisions = [(d["name"], d["target"]) for d in r.record["decisions"]]
    assert decisions == [("shell", "exec_command")], r.record
    assert report.passed_reasons(r.record)  # the copy's give-up is said
    assert any("shell→exec_command" in m for m in caplog.messages)


def _chat_chunk(call: dict | None = None, finish: str | None = None) -> bytes:
    delta = {"tool_calls": [call]} if call is not None else {}
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"


def _choice_chunk(choice: int, call: dict | None = None, finish: str | None = None) -> bytes:
    delta = {"tool_calls": [call]} if call is not None else {}
    body = {
        "id": "c",
        "object": "chat.completion.chunk",
        "choices": [{"index": choice, "delta": delta, "finish_reason": finish}],
    }
    return b"data: " + orjson.dumps(body) + b"\n\n"


def _files_read_chat_flow(upstream: bytes, n: int = 1):
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    bash = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    request = {
        "model": "m",
        "stream": True,
        "n": n,
        "messages": [{"role": "user", "content": "read /x"}],
        "tools": [
            {"type": "function", "function": {"name": "files.read", "parameters": schema}},
            {"type": "function", "function": {"name": "Bash", "parameters": bash}},
        ],
    }
    return harness.make_flow(
        request,
        host="api.openai.com",
        path="/v1/chat/completions",
        headers=[("content-type", "application/json")],
        upstream=upstream,
        resp_type="text/event-stream",
    )


@pytest.mark.parametrize(
    ("first", "rest"),
    [("files_read_", "601e4eb6"), ("bash", "_session")],
    ids=["alias-in-pieces", "declared-name-then-more"],
)
@pytest.mark.parametrize("seed", range(3))
def test_a_chat_name_continued_under_another_id_before_its_arguments_is_left(env, caplog, first, rest, seed):
    """A piece of a call's name, then another id at the same index with more name and the
    arguments. Read as two calls, the first piece becomes a call of its own, folded to a declared
    tool with no arguments (``files_read_`` → ``files.read``, ``bash`` → ``Bash``): a call the
    model never made. Read as one (the openai SDK joins the pieces; other clients keep the first
    or the last), it is another name. Which is meant is not known: the block goes as it came and
    the record says why. (Was: ``files.read {}`` and a second call ``601e4eb6`` with the arguments.)"""
    caplog.set_level(logging.INFO)
    fn = lambda **kw: {"type": "function", "function": kw}  # noqa: E731
    upstream = (
        _chat_chunk({"index": 0, "id": "call_1", **fn(name=first)})
        + _chat_chunk({"index": 0, "id": "call_2", **fn(name=rest)})
        + _chat_chunk({"index": 0, **fn(arguments='{"path": "/x"}')})
        + _chat_chunk(None, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    f = _files_read_chat_flow(upstream)
    r = harness.replay(env, f, seed)
    assert r.out == upstream
    assert r.record["decisions"] == []
    why = (
        "a tool call's name continued under another id at the same index before its arguments were whole, "
        "so its calls cannot be told apart"
    )
    assert_passed(f, r.record, why, caplog)


def _responses_event(data: dict) -> bytes:
    return b"event: %s\ndata: %s\n\n" % (data["type"].encode(), orjson.dumps(data))


@pytest.mark.parametrize("case", ["again-after-done", "after-an-error", "named-otherwise-in-its-item"])
@pytest.mark.parametrize("seed", range(2))
def test_a_responses_arguments_done_never_shows_the_client_an_alias(env, caplog, case, seed):
    """Some servers name the call in ``response.function_call_arguments.done`` too. One that
    comes outside its call's events (sent again after the call's ``.done``, or after an
    ``error`` ended the call's hold) or that names the call by this flow's alias while its item
    names the client's tool: its name is given back like the item's. Was: the alias reached the
    client (and after an error the record said the client got the call "but for its name")."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    caplog.set_level(logging.INFO)
    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})
    item = {"id": "fc_1", "type": "function_call", "call_id": "call_1", "name": upstream_name, "arguments": ""}
    done = {**item, "arguments": '{"path":"a"}', "status": "completed"}
    args_done = {
        "type": "response.function_call_arguments.done",
        "item_id": "fc_1",
        "output_index": 0,
        "name": upstream_name,
        "arguments": '{"path":"a"}',
    }
    events = [
        {"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "item_id": "fc_1",
            "output_index": 0,
            "delta": '{"path":"a"}',
        },
    ]
    if case == "again-after-done":
        events += [args_done, {"type": "response.output_item.done", "output_index": 0, "item": done}, args_done]
    elif case == "after-an-error":
        events += [{"type": "error", "message": "overloaded"}, args_done]
    else:  # the item names the client's own tool, the arguments' done the alias
        events[1] = {**events[1], "item": {**item, "name": "files.read"}}
        events += [
            args_done,
            {"type": "response.output_item.done", "output_index": 0, "item": {**done, "name": "files.read"}},
        ]
    events.append({"type": "response.completed", "response": {"id": "r", "status": "completed", "output": []}})
    upstream = b"".join(_responses_event({**e, "sequence_number": n}) for n, e in enumerate(events))
    f = _files_read_responses_flow(upstream)
    r = harness.replay(env, f, seed)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert upstream_name.encode() not in r.out, r.out
    sent = [orjson.loads(e.split(b"data: ", 1)[1]) for e in events_of(r.out)]
    named = [d["name"] for d in sent if d["type"] == "response.function_call_arguments.done"]
    assert named and set(named) == {"files.read"}
    assert r.out == upstream.replace(upstream_name.encode(), b"files.read")


def events_of(data: bytes) -> list[bytes]:
    return [e for e in data.split(b"\n\n") if e.startswith(b"event: ")]


@pytest.mark.parametrize("seed", range(3))
def test_another_calls_alias_in_pieces_is_given_back_beside_a_call_left_unsure(env, seed):
    """Index 0: ``Bash``, then another id with ``_session`` before its arguments (which call was
    meant is not known: left). Index 1: this flow's alias in two pieces of one call. The block
    goes as it came but for index 1's name, given back (its first piece, the client's name; the
    later one, none). Was: the whole block as it came, the alias included."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})
    fn = lambda **kw: {"type": "function", "function": kw}  # noqa: E731
    upstream = (
        _chat_chunk({"index": 0, "id": "call_1", **fn(name="Bash")})
        + _chat_chunk({"index": 0, "id": "call_2", **fn(name="_session", arguments='{"command": "ls"}')})
        + _chat_chunk({"index": 1, "id": "call_3", **fn(name=upstream_name[:11])})
        + _chat_chunk({"index": 1, **fn(name=upstream_name[11:])})
        + _chat_chunk({"index": 1, **fn(arguments='{"path": "/x"}')})
        + _chat_chunk(None, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    f = _files_read_chat_flow(upstream)
    r = harness.replay(env, f, seed)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    chunks = [orjson.loads(line[6:]) for line in r.out.split(b"\n") if line.startswith(b"data: {")]
    names = [
        (
            c["choices"][0]["delta"]["tool_calls"][0]["index"],
            c["choices"][0]["delta"]["tool_calls"][0]["function"].get("name"),
        )
        for c in chunks
        if c["choices"] and c["choices"][0]["delta"].get("tool_calls")
    ]
    assert names == [(0, "Bash"), (0, "_session"), (1, "files.read"), (1, None), (1, None)], names
    assert r.record["decisions"] == []


@pytest.mark.parametrize("seed", range(3))
def test_a_chat_delta_right_after_its_choices_finish_reason_joins_its_call(env, caplog, seed):
    """A call's arguments in a delta right after its choice's ``finish_reason``: the call is held
    on to the next chunk that does not continue it, so the late delta is read with it; a call
    that needs nothing goes as it came, with no id added (the openai SDK joins a delta's id to
    the call's: an added id made ``call_1call_1tc_…``) and nothing passed through."""
    caplog.set_level(logging.INFO)
    late = _chat_chunk({"index": 0, "function": {"arguments": '{"command": "ls"}'}})
    upstream = (
        _chat_chunk({"index": 0, "id": "call_1", "type": "function", "function": {"name": "Bash"}})
        + _chat_chunk(None, "tool_calls")
        + late
        + b"data: [DONE]\n\n"
    )
    f = _files_read_chat_flow(upstream)
    r = harness.replay(env, f, seed)
    assert r.out == upstream  # as it came: no id added
    assert not report.passed_reasons(r.record), r.record["notes"]


@pytest.mark.parametrize("late_pieces", [1, 2], ids=["one-late-piece", "two-late-pieces"])
@pytest.mark.parametrize("seed", range(3))
def test_an_alias_whose_name_goes_on_after_its_choices_finish_reason_is_named_back(env, caplog, late_pieces, seed):
    """The name so far only begins this flow's alias (``files_read_``) when the choice's
    ``finish_reason`` comes; its rest (``601e4eb6``, in one piece or two) comes after it, in
    deltas without an id. A client joins the pieces: the call is held on while chunks continue
    it and read whole, its name given back (``files.read``). Was: the first piece went out at
    the finish, the rest as it came, and the openai SDK assembled the alias
    ``files_read_601e4eb6``, a name the client never declared."""
    caplog.set_level(logging.INFO)
    rest = ["601e4eb6"] if late_pieces == 1 else ["601e", "4eb6"]
    upstream = (
        _chat_chunk({"index": 0, "id": "call_1", "type": "function", "function": {"name": "files_read_"}})
        + _chat_chunk(None, "tool_calls")
        + b"".join(_chat_chunk({"index": 0, "function": {"name": piece}}) for piece in rest)
        + _chat_chunk({"index": 0, "function": {"arguments": '{"path": "/x"}'}})
        + b"data: [DONE]\n\n"
    )
    f = _files_read_chat_flow(upstream)
    r = harness.replay(env, f, seed)
    assert b"files_read_601e4eb6" in f.request.content  # the upstream got the alias
    assert sdk_calls(r.out) == [
        {"id": "call_1", "type": "function", "name": "files.read", "arguments": '{"path": "/x"}'}
    ]
    assert r.out.endswith(b"data: [DONE]\n\n")
    assert [(d["name"], d["target"]) for d in r.record["decisions"]] == [("files_read_601e4eb6", "files.read")]
    assert not report.passed_reasons(r.record), r.record["notes"]


@pytest.mark.parametrize("seed", range(3))
def test_a_responses_call_under_an_item_id_another_call_has_goes_as_it_came(env, seed):
    """After the ``shell`` call (fitted: ``exec_command {"cmd": "echo hi"}``), a second call
    under the same item id with its own ``call_id`` and arguments (``rm -rf build``). Was: the
    first call's decision was reused for it, and the client got ``call_fx02`` as
    ``exec_command {"cmd": "echo hi"}``: another call's tool and arguments. Now it goes as it
    came and the record says why; the first call stays repaired."""
    parts = events(RESPONSES_STREAM)
    done = next(i for i, e in enumerate(parts) if e.startswith(b"event: response.output_item.done") and b"shell" in e)
    argv = orjson.dumps({"command": ["bash", "-lc", "rm -rf build"]}).decode()
    item = {"id": "fc_fx01", "type": "function_call", "call_id": "call_fx02", "name": "shell"}
    second = [
        {
            "type": "response.output_item.added",
            "output_index": 2,
            "item": {**item, "arguments": "", "status": "in_progress"},
        },
        {"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_fx01", "delta": argv},
        {
            "type": "response.output_item.done",
            "output_index": 2,
            "item": {**item, "arguments": argv, "status": "completed"},
        },
    ]
    upstream = b"".join(parts[: done + 1] + [_responses_event(e) for e in second] + parts[done + 1 :])
    f = responses_flow(upstream)
    r = harness.replay(env, f, seed)
    dones = [
        orjson.loads(e.split(b"data: ", 1)[1])["item"]
        for e in events(r.out)
        if e.startswith(b"event: response.output_item.done") and b"fc_fx01" in e
    ]
    assert [(d["call_id"], d["name"], orjson.loads(d["arguments"])) for d in dones] == [
        ("call_fx01", "exec_command", {"cmd": "echo hi"}),
        ("call_fx02", "shell", {"command": ["bash", "-lc", "rm -rf build"]}),
    ]
    assert [(d["name"], d["target"]) for d in r.record["decisions"]] == [("shell", "exec_command")]
    assert any(n.startswith("a tool call came under an item id another call") for n in r.record["notes"])


@pytest.mark.parametrize("seed", range(3))
def test_a_late_chat_delta_among_another_choices_held_call_gets_no_id(env, seed):
    """n=2: choice 0's call ends with its ``finish_reason``; then, while choice 1's ``Bash`` is
    held, a last piece of choice 0's arguments. It goes as it came: no id is added (the client
    joins it to ``call_1``), and choice 1 is decided as usual. Was: an id ``call_1tc_…`` the
    upstream never gave."""
    fn = lambda **kw: {"type": "function", "function": kw}  # noqa: E731
    upstream = (
        _choice_chunk(0, {"index": 0, "id": "call_1", **fn(name="files_read_601e4eb6")})
        + _choice_chunk(0, {"index": 0, **fn(arguments='{"path": ')})
        + _choice_chunk(0, None, "tool_calls")
        + _choice_chunk(1, {"index": 0, "id": "call_2", **fn(name="Bash")})
        + _choice_chunk(0, {"index": 0, **fn(arguments='"/x"}')})
        + _choice_chunk(1, {"index": 0, **fn(arguments='{"command": "ls"}')})
        + _choice_chunk(1, None, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    r = harness.replay(env, _files_read_chat_flow(upstream, n=2), seed)
    assert b"tc_" not in r.out and r.out.count(b'"id":"call_') == 2
    assert _choice_chunk(0, {"index": 0, **fn(arguments='"/x"}')}) in r.out
    assert "passed through: a tool call's delta came after its choice's finish_reason" in " ".join(r.record["notes"])


@pytest.mark.parametrize("seed", range(3))
def test_an_alias_going_on_after_another_choices_call_began_never_reaches_the_client(env, seed):
    """n=2: choice 0's name only begins the alias (``files_read_``) at its ``finish_reason``; its
    rest comes after choice 1's ``Bash`` began. Choice 0's call went out when another chunk came
    (read as ``files.read``); the late piece goes as it came: the client's name for it is no
    alias (it is no tool either: the client reports it), and choice 1's call is read as usual."""
    fn = lambda **kw: {"type": "function", "function": kw}  # noqa: E731
    upstream = (
        _choice_chunk(0, {"index": 0, "id": "call_1", **fn(name="files_read_")})
        + _choice_chunk(0, {"index": 0, **fn(arguments='{"path": "/x"}')})
        + _choice_chunk(0, None, "tool_calls")
        + _choice_chunk(1, {"index": 0, "id": "call_2", **fn(name="Bash")})
        + _choice_chunk(0, {"index": 0, **fn(name="601e4eb6")})
        + _choice_chunk(1, {"index": 0, **fn(arguments='{"command": "ls"}')})
        + _choice_chunk(1, None, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    r = harness.replay(env, _files_read_chat_flow(upstream, n=2), seed)
    assert b"tc_" not in r.out
    [first] = sdk_calls(r.out, 0)
    assert (first["id"], first["arguments"]) == ("call_1", '{"path": "/x"}') and first["name"] != "files_read_601e4eb6"
    assert sdk_calls(r.out, 1) == [
        {"id": "call_2", "type": "function", "name": "Bash", "arguments": '{"command": "ls"}'}
    ]


@pytest.mark.parametrize("seed", range(3))
def test_a_new_chat_call_after_a_finish_reason_is_read_as_usual(env, seed):
    """A new call (its own id, index 1) after the choice's ``finish_reason``, its name (this
    flow's alias) in two pieces: it starts a call, so it is held and its name given back, as
    any call's. (Passing every delta after a finish_reason as it came sent the alias.)"""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})
    fn = lambda **kw: {"type": "function", "function": kw}  # noqa: E731
    upstream = (
        _choice_chunk(0, {"index": 0, "id": "call_1", **fn(name="Bash", arguments='{"command": "ls"}')})
        + _choice_chunk(0, None, "tool_calls")
        + _choice_chunk(0, {"index": 1, "id": "call_2", **fn(name=upstream_name[:11])})
        + _choice_chunk(0, {"index": 1, **fn(name=upstream_name[11:])})
        + _choice_chunk(0, {"index": 1, **fn(arguments='{"path": "/y"}')})
        + _choice_chunk(0, None, "tool_calls")
        + b"data: [DONE]\n\n"
    )
    f = _files_read_chat_flow(upstream)
    r = harness.replay(env, f, seed)
    assert upstream_name.encode() in f.request.content  # the upstream got the alias
    assert upstream_name[11:].encode() not in r.out
    assert [(d["name"], d["target"]) for d in r.record["decisions"]] == [
        ("Bash", "Bash"),
        (upstream_name, "files.read"),
    ]


@pytest.mark.parametrize("seed", range(2))
def test_the_echo_shows_a_fitted_call_as_it_first_went_after_a_copy(env, seed):
    """The call went to the client fitted (``exec_command {"cmd": "echo hi"}``), then a copy of
    its ``.done`` was given up (as it came). ``response.completed``'s echo, which clients such as
    the SDK's ``get_final_response`` read, shows the call as its events first went, as the record
    does. Was: the echo showed ``shell`` with the argv."""
    parts = events(RESPONSES_STREAM)
    done = next(i for i, e in enumerate(parts) if e.startswith(b"event: response.output_item.done") and b"shell" in e)
    f = responses_flow(b"".join(parts[: done + 1] + [parts[done]] + parts[done + 1 :]))
    r = harness.replay(env, f, seed)
    completed = [
        orjson.loads(e.split(b"data: ", 1)[1]) for e in events(r.out) if e.startswith(b"event: response.completed")
    ]
    [call] = [i for i in completed[0]["response"]["output"] if i["type"] == "function_call"]
    assert (call["name"], orjson.loads(call["arguments"])) == ("exec_command", {"cmd": "echo hi"})
    assert [(d["name"], d["target"]) for d in r.record["decisions"]] == [("shell", "exec_command")]


@pytest.mark.parametrize("call_id", ["call_fx01", None], ids=["same-call-id", "no-call-id"])
def test_a_responses_call_under_a_used_item_id_and_call_id_keeps_its_own_arguments(env, call_id):
    """The second call under the first's item id has the same ``call_id`` (or none) but its own
    arguments (``rm -rf build``): it is another call, and goes as it came. Was: read as the
    same call, it got ``exec_command {"cmd": "echo hi"}``."""
    parts = events(RESPONSES_STREAM)
    done = next(i for i, e in enumerate(parts) if e.startswith(b"event: response.output_item.done") and b"shell" in e)
    argv = orjson.dumps({"command": ["bash", "-lc", "rm -rf build"]}).decode()
    item = {"id": "fc_fx01", "type": "function_call", "name": "shell", **({"call_id": call_id} if call_id else {})}
    second = [
        {
            "type": "response.output_item.added",
            "output_index": 2,
            "item": {**item, "arguments": "", "status": "in_progress"},
        },
        {
            "type": "response.output_item.done",
            "output_index": 2,
            "item": {**item, "arguments": argv, "status": "completed"},
        },
    ]
    upstream = b"".join(parts[: done + 1] + [_responses_event(e) for e in second] + parts[done + 1 :])
    r = harness.replay(env, responses_flow(upstream), 0)
    dones = [
        orjson.loads(e.split(b"data: ", 1)[1])["item"]
        for e in events(r.out)
        if e.startswith(b"event: response.output_item.done") and b"fc_fx01" in e
    ]
    assert [(d["name"], orjson.loads(d["arguments"])) for d in dones] == [
        ("exec_command", {"cmd": "echo hi"}),
        ("shell", {"command": ["bash", "-lc", "rm -rf build"]}),
    ]


@pytest.mark.parametrize("seed", range(2))
def test_a_responses_call_under_a_used_item_id_and_call_id_with_another_name_keeps_its_name(env, seed):
    """The second call under the first's item id has its ``call_id`` and arguments but another
    name (``write_stdin``, declared): another call, so it goes as it came. Was: read as the same
    call (type, call_id and arguments agree), it got the first call's decision and reached the
    client as ``exec_command``."""
    parts = events(RESPONSES_STREAM)
    done_at = next(
        i for i, e in enumerate(parts) if e.startswith(b"event: response.output_item.done") and b"shell" in e
    )
    first = orjson.loads(parts[done_at].split(b"data: ", 1)[1])["item"]
    item = {**first, "name": "write_stdin"}
    second = [
        {"type": "response.output_item.added", "output_index": 2, "item": {**item, "arguments": ""}},
        {"type": "response.output_item.done", "output_index": 2, "item": item},
    ]
    upstream = b"".join(parts[: done_at + 1] + [_responses_event(e) for e in second] + parts[done_at + 1 :])
    r = harness.replay(env, responses_flow(upstream), seed)
    items = [
        orjson.loads(e.split(b"data: ", 1)[1])["item"]
        for e in events(r.out)
        if e.startswith(b"event: response.output_item.") and first["id"].encode() in e
    ]
    assert [i["name"] for i in items][-2:] == ["write_stdin", "write_stdin"]
    assert items[-1]["arguments"] == first["arguments"]  # as it came
    assert [(d["name"], d["target"]) for d in r.record["decisions"]][0] == ("shell", "exec_command")
    assert any(n.startswith("a tool call came under an item id another call") for n in r.record["notes"])


@pytest.mark.parametrize("first_alias", [True, False], ids=["alias-first", "alias-second"])
def test_a_call_under_a_used_item_id_never_shows_an_alias_or_takes_anothers_name(env, first_alias):
    """Two calls under one item id, one of them under this flow's alias: each goes under its own
    name, the alias given back (every event, ``function_call_arguments.done`` included), and no
    event of one takes the other's name. Was: the second's alias reached the client, or its
    ``arguments.done`` took the first call's name."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    upstream_name = alias("files.read", GRAMMARS["openai"], {"files.read"})
    calls = [(upstream_name, '{"path":"/a"}'), ("write_stdin", '{"session_id":1}')]
    if not first_alias:
        calls.reverse()
    evs = [{"type": "response.created", "response": {"id": "r", "status": "in_progress", "output": []}}]
    for n, (name, args) in enumerate(calls):
        item = {"id": "fc_1", "type": "function_call", "call_id": f"call_{n}", "name": name}
        evs += [
            {"type": "response.output_item.added", "output_index": n, "item": {**item, "arguments": ""}},
            {
                "type": "response.function_call_arguments.done",
                "output_index": n,
                "item_id": "fc_1",
                "name": name,
                "arguments": args,
            },
            {"type": "response.output_item.done", "output_index": n, "item": {**item, "arguments": args}},
        ]
    evs.append({"type": "response.completed", "response": {"id": "r", "status": "completed", "output": []}})
    upstream = b"".join(_responses_event(e) for e in evs)
    f = _files_read_responses_flow(upstream)
    r = harness.replay(env, f, 0)
    assert upstream_name.encode() not in r.out
    sent = [orjson.loads(e.split(b"data: ", 1)[1]) for e in events(r.out)]
    named = [
        (d.get("item", d).get("name"), d.get("item", d).get("arguments") or d.get("arguments"))
        for d in sent
        if d["type"] in ("response.function_call_arguments.done", "response.output_item.done")
    ]
    want = {'{"path":"/a"}': "files.read", '{"session_id":1}': "write_stdin"}
    assert all(want[args] == name for name, args in named), named


@settings(
    max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    name=st.sampled_from(["files_read_601e4eb6", "Bash", "files.read", "files_read_", "files_read"]),
    cuts=st.lists(st.integers(1, 18), max_size=3, unique=True),
    at=st.integers(0, 3),
    empty_first=st.booleans(),
    between=st.sampled_from([None, "empty-content", "usage-null", "comment"]),
    refinish=st.booleans(),
    args_late=st.booleans(),
    usage=st.booleans(),
    done=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_a_chat_name_straddling_its_choices_finish_reason_never_reaches_the_client_as_an_alias(
    env, name, cuts, at, empty_first, between, refinish, args_late, usage, done, seed
):
    """Over a call's name cut into pieces anywhere (its first delta with the id carrying the first
    piece, or an empty name and arguments), its choice's ``finish_reason`` after any number of
    them (the rest late deltas, carrying the finish_reason again or not, after an empty delta, a
    ``"usage": null`` chunk or a comment or not), its arguments before or after it, a usage chunk
    and ``[DONE]`` or not: the call the openai SDK assembles is the one the name means — never this flow's
    alias ``files_read_601e4eb6``, ``files.read`` for it and for the spellings that fold to it,
    ``Bash`` for ``Bash`` — under the upstream's id, its arguments as sent."""
    bounds = sorted(c for c in cuts if c < len(name))
    pieces = [name[i:j] for i, j in zip([0, *bounds], [*bounds, len(name)], strict=True)]
    if empty_first:
        pieces = ["", *pieces]
    at = min(max(at, 1), len(pieces))
    args = _chat_chunk({"index": 0, "function": {"arguments": '{"path": "/x"}'}})
    fn = {"name": pieces[0], "arguments": ""} if empty_first else {"name": pieces[0]}
    first = {"index": 0, "id": "call_1", "type": "function", "function": fn}
    chunks = [_chat_chunk(first)] + [_chat_chunk({"index": 0, "function": {"name": p}}) for p in pieces[1:at]]
    chunks += [] if args_late else [args]
    chunks += [_chat_chunk(None, "tool_calls")]
    chunks += {
        None: [],
        "empty-content": [b'data: {"id":"c","choices":[{"index":0,"delta":{"content":""},"finish_reason":null}]}\n\n'],
        "usage-null": [b'data: {"id":"c","choices":[],"usage":null}\n\n'],
        "comment": [b": keep-alive\n\n"],
    }[between]
    late_finish = "tool_calls" if refinish else None
    chunks += [_chat_chunk({"index": 0, "function": {"name": p}}, late_finish) for p in pieces[at:]]
    late_args = _chat_chunk({"index": 0, "function": {"arguments": '{"path": "/x"}'}}, late_finish)
    chunks += [late_args] if args_late else []
    if usage:
        chunks.append(b'data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"total_tokens":3}}\n\n')
    chunks += [b"data: [DONE]\n\n"] if done else []
    f = _files_read_chat_flow(b"".join(chunks))
    r = harness.replay(env, f, seed)
    assert b"files_read_601e4eb6" in f.request.content  # the upstream got the alias
    calls = sdk_calls(r.out)
    assert [(c["id"], c["arguments"]) for c in calls] == [("call_1", '{"path": "/x"}')], calls
    assert calls[0]["name"] == ("Bash" if name == "Bash" else "files.read"), (pieces, at, r.out)
