"""The Anthropic Messages dialect (``toolvocab.dialects.anthropic``): detection, declared tools, system
texts, request-side plan, JSON answers and the SSE stream rewriter.

Fixtures are synthetic bodies in ``tests/fixtures/anthropic/`` modelled on the documented shapes.
"""

from __future__ import annotations

import copy
import os
import random

import orjson
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from harness import dialects
from harness import random_chunks
from harness.dialects import Fixtures
from harness.dialects import context
from harness.dialects import drive
from harness.dialects import sse_events
from toolvocab.dialects import detect
from toolvocab.dialects.anthropic import DIALECT
from toolvocab.dialects.anthropic import AnthropicStream
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import Plan
from toolvocab.engine.plan import make_plan

FX = Fixtures("anthropic")
load_json, load_bytes = FX.json, FX.bytes
events_of = sse_events


class Recorder(dialects.Recorder):
    """A resolver bound to the fixture request's tools that remembers every call and decision."""

    def __init__(self, request: str = "request-claude-code.json") -> None:
        super().__init__(Toolset(DIALECT.declared_tools(load_json(request))))


def rewrite_stream(data: bytes, chunks: list[bytes] | None = None, resolver=None) -> tuple[bytes, Recorder]:
    resolver = resolver or Recorder()
    rw = DIALECT.stream_rewriter(context(resolver))
    assert isinstance(rw, AnthropicStream)
    out = drive(rw, chunks if chunks is not None else [data])
    assert rw.error is None
    return out, resolver


# -- matches ------------------------------------------------------------------------------------

BODY = {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    "path",
    [
        "/v1/messages",
        "/v1/messages?beta=true",
        "/v1/projects/demo/locations/us-east5/publishers/anthropic/models/claude-fixture-1@20250101:rawPredict",
        "/v1/projects/demo/locations/global/publishers/anthropic/models/claude-fixture-1:streamRawPredict",
        "/model/anthropic.claude-fixture-1-v1:0/invoke",
        "/model/anthropic.claude-fixture-1-v1:0/invoke-with-response-stream",
    ],
)
def test_matches_messages_paths(path):
    assert DIALECT.matches("POST", path, BODY)
    assert detect("POST", path, BODY) is DIALECT


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("POST", "/v1/messages/count_tokens", BODY),
        ("POST", "/v1/messages/count_tokens?beta=true", BODY),
        ("POST", "/v1/messages/batches", BODY),
        ("POST", "/v1/complete", BODY),
        ("POST", "/v1/models", BODY),
        ("GET", "/v1/messages", BODY),
        ("POST", "/v1/messages", {"model": "m", "prompt": "hi"}),
        ("POST", "/v1/messages", {"model": "m", "messages": "hi"}),
        ("POST", "/v1/messages", [BODY]),
        ("POST", "/v1/messages", None),
        ("POST", "/v1/other?next=/v1/messages", BODY),
    ],
)
def test_does_not_match(method, path, body):
    assert not DIALECT.matches(method, path, body)
    assert detect(method, path, body) is None


# -- declared_tools -----------------------------------------------------------------------------


def test_declared_client_tools_are_functions_with_schema_and_description():
    body = load_json("request-claude-code.json")
    tools = DIALECT.declared_tools(body)
    assert [t.name for t in tools] == ["Bash", "Read", "ToolSearch", "mcp__tracker__open_ticket"]
    assert all(t.kind is ToolKind.FUNCTION for t in tools)
    assert tools[0].input_schema == body["tools"][0]["input_schema"]
    assert tools[0].description == body["tools"][0]["description"]
    assert tools[3].server == "tracker"  # deferred MCP tool: still declared


def test_declared_anthropic_defined_tools_are_provider_tools():
    body = load_json("request-provider-tools.json")
    tools = DIALECT.declared_tools(body)
    kinds = {t.name: t.kind for t in tools}
    assert kinds["bash"] is ToolKind.PROVIDER
    assert kinds["str_replace_based_edit_tool"] is ToolKind.PROVIDER
    assert kinds["web_search"] is ToolKind.PROVIDER
    assert kinds["Grep"] is ToolKind.FUNCTION  # type "custom" is a client tool
    assert kinds["Read"] is ToolKind.FUNCTION
    # mcp_toolset has no name of its own: it is never a (function) tool the ladder could target
    assert "tracker" not in kinds
    assert [t.name for t in tools if t.kind is ToolKind.FUNCTION] == ["Grep", "Read"]


def test_provider_tools_are_never_rename_targets():
    tools = Toolset(DIALECT.declared_tools(load_json("request-provider-tools.json")))
    # exact provider name: kept as is
    d = resolve(ToolCall(name="bash", arguments={"command": "ls"}), tools)
    assert d.action is Action.KEEP and not d.changed
    # a spelling that only a provider tool would match, and a capability only a provider tool has
    for name in ("Bash", "shell", "str_replace_editor", "WebSearch"):
        d = resolve(ToolCall(name=name, arguments={"command": "ls"}), tools)
        assert d.action is Action.LEAVE, (name, d)
        assert d.target is None


@pytest.mark.parametrize("tools", [None, [], "Bash", [None, 3, "x", {"description": "no name"}, {"name": 7}]])
def test_declared_tools_ignores_what_is_not_a_named_tool(tools):
    body = {**BODY, "tools": tools}
    assert DIALECT.declared_tools(body) == []


# -- system_texts -------------------------------------------------------------------------------


def test_system_texts_string():
    assert DIALECT.system_texts({**BODY, "system": "Be brief."}) == ["Be brief."]


def test_system_texts_block_list_takes_text_blocks():
    body = load_json("request-claude-code.json")
    body["system"].append({"type": "image", "source": {}})
    assert DIALECT.system_texts(body) == [
        "You are a coding assistant running in a terminal.",
        "Keep answers short and prefer small, reviewable changes.",
    ]


def test_system_texts_include_system_role_messages():
    body = {
        **BODY,
        "system": "Top.",
        "messages": [
            {"role": "system", "content": "From a message."},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": [{"type": "text", "text": "Block message."}]},
            "not a message",
        ],
    }
    assert DIALECT.system_texts(body) == ["Top.", "From a message.", "Block message."]


def test_system_texts_absent_or_odd():
    assert DIALECT.system_texts(BODY) == []
    assert DIALECT.system_texts({**BODY, "system": 5}) == []


# -- apply_request ------------------------------------------------------------------------------


def test_apply_request_renames_every_name_slot():
    body = load_json("request-claude-code.json")
    body["tool_choice"] = {"type": "tool", "name": "Bash"}
    before = copy.deepcopy(body)
    assert DIALECT.apply_request(body, Plan(rename_map={"Bash": "shell_x"})) is True
    assert [t["name"] for t in body["tools"]] == ["shell_x", "Read", "ToolSearch", "mcp__tracker__open_ticket"]
    assert body["tool_choice"] == {"type": "tool", "name": "shell_x"}
    assert body["messages"][1]["content"][1]["name"] == "shell_x"
    assert body["messages"][3]["content"][0]["name"] == "ToolSearch"
    # only the name slots changed
    body["tools"][0]["name"] = "Bash"
    body["tool_choice"]["name"] = "Bash"
    body["messages"][1]["content"][1]["name"] = "Bash"
    assert body == before


def test_apply_request_renames_tool_reference_inside_tool_result():
    body = load_json("request-claude-code.json")
    plan = Plan(rename_map={"mcp__tracker__open_ticket": "tracker_open_ticket"})
    assert DIALECT.apply_request(body, plan) is True
    assert body["tools"][3]["name"] == "tracker_open_ticket"
    assert body["tools"][3]["defer_loading"] is True
    assert body["messages"][4]["content"][0]["content"] == [
        {"type": "tool_reference", "tool_name": "tracker_open_ticket"}
    ]


def test_apply_request_never_renames_a_provider_tool_declaration():
    body = load_json("request-provider-tools.json")
    before = copy.deepcopy(body)
    plan = Plan(
        rename_map={"Grep": "grep_x", "bash": "bash_x", "web_search": "ws_x", "str_replace_based_edit_tool": "edit_x"}
    )
    assert DIALECT.apply_request(body, plan) is True
    assert body["tools"][4]["name"] == "grep_x"
    assert body["tools"][:4] == before["tools"][:4]
    assert body["tools"][5] == before["tools"][5]
    # server_tool_use blocks are the provider's own
    assert body["messages"][1]["content"][1] == before["messages"][1]["content"][1]
    assert body["mcp_servers"] == before["mcp_servers"]


def test_apply_request_never_renames_a_provider_tool_anywhere():
    body = load_json("request-provider-tools.json")
    before = copy.deepcopy(body)
    DIALECT.apply_request(body, Plan(rename_map={"bash": "bash_x"}))
    assert body == before  # got tool_choice.name == "bash_x" and messages[1].content[0].name == "bash_x"


def test_apply_request_sentence_into_string_system():
    body = load_json("request-provider-tools.json")
    assert DIALECT.apply_request(body, Plan(prompt_sentence="Use declared names.")) is True
    assert body["system"] == "You help with repository chores.\n\nUse declared names."


def test_apply_request_sentence_appended_as_block():
    body = load_json("request-claude-code.json")
    before = copy.deepcopy(body["system"])
    assert DIALECT.apply_request(body, Plan(prompt_sentence="Use declared names.")) is True
    assert body["system"][:-1] == before  # cache_control of the existing blocks untouched
    assert body["system"][-1] == {"type": "text", "text": "Use declared names."}


@pytest.mark.parametrize("system", [None, ""])
def test_apply_request_sentence_when_system_absent(system):
    body = copy.deepcopy(BODY)
    if system is not None:
        body["system"] = system
    assert DIALECT.apply_request(body, Plan(prompt_sentence="Use declared names.")) is True
    assert body["system"] == "Use declared names."


def test_apply_request_empty_plan_changes_nothing():
    body = load_json("request-claude-code.json")
    before = copy.deepcopy(body)
    assert DIALECT.apply_request(body, Plan()) is False
    assert body == before


def test_make_plan_sentence_names_unmentioned_client_tools_only():
    for name, expected in [
        ("request-claude-code.json", ["Bash", "Read", "ToolSearch", "mcp__tracker__open_ticket"]),
        ("request-provider-tools.json", ["Grep", "Read"]),
    ]:
        body = load_json(name)
        tools = Toolset(DIALECT.declared_tools(body))
        plan = make_plan(tools, DIALECT.system_texts(body), add_sentence=True)
        assert plan.unmentioned == expected
        assert all(n in plan.prompt_sentence for n in expected)
        assert "web_search" not in plan.prompt_sentence and "bash" not in plan.prompt_sentence.replace("Bash", "")
        assert make_plan(tools, DIALECT.system_texts(body), add_sentence=False).prompt_sentence is None


# -- rewrite_response (JSON) --------------------------------------------------------------------


def test_rewrite_response_renames_and_fits_foreign_call():
    body = load_json("response-foreign-tool.json")
    before = copy.deepcopy(body)
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is True
    assert body["content"][1] == {
        "type": "tool_use",
        "id": "toolu_01FixJson0000000000000001",
        "name": "Bash",
        "input": {"command": "git log --oneline -3"},
    }
    assert body["content"][0] == before["content"][0]
    assert {k: v for k, v in body.items() if k != "content"} == {k: v for k, v in before.items() if k != "content"}
    [d] = rec.decisions
    assert d.action is Action.RENAME and d.step.value == "capability" and d.call_id == "toolu_01FixJson0000000000000001"


def test_rewrite_response_leaves_declared_calls_untouched():
    body = load_json("response-declared-tool.json")
    before = copy.deepcopy(body)
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body == before
    assert [d.action for d in rec.decisions] == [Action.KEEP, Action.KEEP]


def test_rewrite_response_ignores_server_tool_use_and_odd_shapes():
    rec = Recorder()
    body = {
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "shell", "input": {}},
            {"type": "tool_use", "id": "t", "name": 5, "input": {}},
            "text",
        ]
    }
    before = copy.deepcopy(body)
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body == before and rec.calls == []
    for odd in (None, [], {"content": "x"}, {"type": "error", "error": {"type": "overloaded_error"}}):
        assert DIALECT.rewrite_response(odd, context(rec)) is False


def test_rewrite_response_non_object_input_is_left():
    body = {"content": [{"type": "tool_use", "id": "t", "name": "shell", "input": "ls"}]}
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body["content"][0]["name"] == "shell"
    assert rec.decisions[0].action is Action.LEAVE


# -- AnthropicStream ----------------------------------------------------------------------------

FITTED = {"command": "git log --oneline -3"}


def check_foreign_stream_output(data: bytes, out: bytes) -> None:
    """The ``shell`` block is renamed to ``Bash`` with the fitted input as one delta; every other
    event is byte-identical and in order (pings inside the block included)."""
    src, dst = events_of(data), events_of(out)
    start_i = next(i for i, e in enumerate(src) if (e.json() or {}).get("content_block", {}).get("name") == "shell")
    stop_i = next(i for i, e in enumerate(src) if i > start_i and (e.json() or {}).get("type") == "content_block_stop")
    # outside the tool block: identical bytes
    n_after = len(src) - stop_i - 1
    assert [e.raw for e in dst[:start_i]] == [e.raw for e in src[:start_i]]
    assert [e.raw for e in dst[len(dst) - n_after :]] == [e.raw for e in src[stop_i + 1 :]]
    block_in, block_out = src[start_i : stop_i + 1], dst[start_i : len(dst) - n_after]
    # the start: same framing, only the name changed
    start_json = block_in[0].json()
    start_json["content_block"]["name"] = "Bash"
    assert block_out[0].json() == start_json
    assert block_out[0].raw.decode().splitlines()[0] == "event: content_block_start"
    eol = b"\r\n" if b"\r\n" in data else b"\n"
    assert block_out[0].raw.endswith(eol * 2) and block_out[0].raw.count(eol) == 3
    # the input: one delta with the fitted arguments
    deltas = [e.json() for e in block_out if (e.json() or {}).get("type") == "content_block_delta"]
    assert deltas == [
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": orjson.dumps(FITTED).decode()},
        }
    ]
    # held non-delta events (ping) keep their place between start and stop
    kinds_in = [e.json()["type"] for e in block_in if e.json()["type"] != "content_block_delta"]
    kinds_out = [e.json()["type"] for e in block_out if e.json()["type"] != "content_block_delta"]
    assert kinds_out == kinds_in == ["content_block_start", "ping", "content_block_stop"]
    assert [e.raw for e in block_out if e.json()["type"] != "content_block_delta"][1:] == [
        e.raw for e in block_in if e.json()["type"] != "content_block_delta"
    ][1:]


@pytest.mark.parametrize("fixture", ["stream-foreign-tool.sse", "stream-foreign-tool-crlf.sse"])
def test_stream_foreign_name_rewritten_whole(fixture):
    data = load_bytes(fixture)
    out, rec = rewrite_stream(data)
    check_foreign_stream_output(data, out)
    assert [(d.name, d.action.value) for d in rec.decisions] == [("shell", "rename"), ("Bash", "keep")]
    assert rec.calls[0].arguments == {"cmd": "git log --oneline -3"}
    assert rec.calls[0].id == "toolu_01FixSse00000000000000001"


@pytest.mark.parametrize("fixture", ["stream-foreign-tool.sse", "stream-foreign-tool-crlf.sse"])
@pytest.mark.parametrize("seed", range(30))
def test_stream_foreign_name_random_splits(fixture, seed):
    data = load_bytes(fixture)
    whole, _ = rewrite_stream(data)
    out, rec = rewrite_stream(data, random_chunks(data, random.Random(seed)))
    assert out == whole
    check_foreign_stream_output(data, out)
    assert len(rec.decisions) == 2


@pytest.mark.parametrize(
    "fixture",
    [
        "stream-declared-tool.sse",
        "stream-server-tool-use.sse",
        "stream-error-after-200.sse",
        "stream-unknown-event.sse",
    ],
)
@pytest.mark.parametrize("seed", range(30))
def test_stream_without_foreign_names_is_byte_identical(fixture, seed):
    data = load_bytes(fixture)
    out, rec = rewrite_stream(data, random_chunks(data, random.Random(seed)))
    assert out == data
    assert all(not d.changed for d in rec.decisions)


def test_stream_declared_tool_is_resolved_and_kept():
    data = load_bytes("stream-declared-tool.sse")
    out, rec = rewrite_stream(data)
    assert out == data
    [d] = rec.decisions
    assert d.name == "Read" and d.action is Action.KEEP
    assert rec.calls[0].arguments == {"file_path": "/repo/src/app.py"}


def test_stream_server_tool_use_is_never_resolved():
    data = load_bytes("stream-server-tool-use.sse")
    out, rec = rewrite_stream(data)
    assert out == data
    assert rec.calls == []


def test_stream_text_goes_out_at_once_and_tool_block_is_held_until_stop():
    data = load_bytes("stream-foreign-tool.sse")
    rw = DIALECT.stream_rewriter(context(Recorder()))
    in_block = False
    for event in events_of(data):
        got = rw.feed(event.raw)
        kind = event.json()["type"]
        block = event.json().get("content_block", {})
        if kind == "content_block_start" and block.get("type") == "tool_use":
            in_block = True
        if not in_block:
            assert got == [event.raw], kind  # text, ping, message events: immediately, unchanged
        elif kind == "content_block_stop":
            # the whole block goes out as one piece (one piece per input chunk)
            assert len(got) == 1 and got[0].endswith(event.raw)
            in_block = False
        else:
            assert got == []  # held
    assert rw.finish() == []


def test_stream_text_delta_goes_out_on_the_feed_that_completes_it():
    # A half-received event is held; the first whole text delta goes out on the very feed that completes it.
    data = load_bytes("stream-foreign-tool.sse")
    events = events_of(data)
    text_delta = next(e for e in events if b"text_delta" in e.raw)
    prefix = data[: data.index(text_delta.raw)]
    rw = DIALECT.stream_rewriter(context(Recorder()))
    assert b"".join(rw.feed(prefix)) == prefix
    assert rw.feed(text_delta.raw[:-1]) == []
    assert rw.feed(text_delta.raw[-1:]) == [text_delta.raw]


@pytest.mark.parametrize("seed", range(10))
def test_stream_tool_block_open_at_end_goes_out_unchanged(seed):
    data = load_bytes("stream-open-tool-block.sse")
    rec = Recorder()
    out, _ = rewrite_stream(data, random_chunks(data, random.Random(seed)), resolver=rec)
    assert out == data
    assert rec.calls == []  # never resolved: the block never closed


def test_stream_unterminated_tail_passes_through():
    data = load_bytes("stream-foreign-tool.sse") + b'event: ping\ndata: {"type":"pi'
    whole, _ = rewrite_stream(load_bytes("stream-foreign-tool.sse"))
    out, _ = rewrite_stream(data)
    assert out == whole + b'event: ping\ndata: {"type":"pi'


@pytest.mark.parametrize("eol", ["\n", "\r\n"], ids=["lf", "crlf"])
@pytest.mark.parametrize("seed", range(5))
def test_stream_input_only_in_content_block_start(eol, seed):
    data = load_bytes("stream-input-in-start.sse").replace(b"\n", eol.encode())
    out, rec = rewrite_stream(data, random_chunks(data, random.Random(seed)))
    [d] = rec.decisions
    assert (d.name, d.action.value, d.target) == ("read_file", "rename", "Read")
    assert rec.calls[0].arguments == {"path": "/repo/src/app.py", "limit": 400}
    src, dst = events_of(data), events_of(out)
    assert len(dst) == len(src) + 1
    assert dst[0].raw == src[0].raw
    assert dst[1].json()["content_block"]["name"] == "Read"
    added = dst[2]
    assert (
        added.raw
        == (
            f"event: content_block_delta{eol}data: "
            + orjson.dumps(
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {
                        "type": "input_json_delta",
                        "partial_json": '{"file_path":"/repo/src/app.py","limit":400}',
                    },
                }
            ).decode()
            + eol
            + eol
        ).encode()
    )
    assert [e.raw for e in dst[3:]] == [e.raw for e in src[2:]]


def test_stream_added_delta_keeps_bare_cr_framing():
    data = load_bytes("stream-input-in-start.sse").replace(b"\n", b"\r")
    out, _ = rewrite_stream(data)
    added = events_of(out)[2]
    assert added.raw.startswith(b"event: content_block_delta\r") and added.raw.endswith(b"}\r\r")


def test_stream_invalid_partial_json_is_left_unchanged():
    # fine-grained tool streaming may send fragments that never form valid JSON
    data = load_bytes("stream-foreign-tool.sse").replace(b'g --oneline -3\\"}', b"g --oneline -3")
    rec = Recorder()
    out, _ = rewrite_stream(data, resolver=rec)
    assert out == data
    assert rec.calls[0].arguments is None
    assert rec.decisions[0].action is Action.LEAVE


def test_stream_rename_without_argument_change_keeps_the_deltas():
    data = load_bytes("stream-foreign-tool.sse").replace(b'{\\"cmd\\": \\"git lo', b'{\\"command\\": \\"git lo')
    out, rec = rewrite_stream(data)
    assert rec.decisions[0].action is Action.RENAME and rec.decisions[0].arguments_after is None
    assert out == data.replace(b'"name":"shell"', b'"name":"Bash"')


def test_stream_resolver_exception_passes_held_block_through():
    data = load_bytes("stream-foreign-tool.sse")

    def boom(call):
        raise RuntimeError("injected")

    rw = DIALECT.stream_rewriter(context(boom))
    out = b"".join(rw.feed(data) + rw.finish())
    assert rw.error == "RuntimeError: injected"
    assert out == data  # got the stream without the shell block's start and deltas


# -- server tool search: the tools it loaded, by name -------------------------------------------

SEARCH_PLAN = Plan(rename_map={"mcp__tracker__open_ticket": "tracker_open_ticket"})


def _search_result(*names: str) -> dict:
    return {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": n} for n in names],
        },
    }


def test_a_tool_search_result_names_the_clients_tools_both_ways():
    """``tool_search_tool_result.content.tool_references[].tool_name`` names tools as the
    upstream knows them: the answer's gets the client's names back (the alias reached the client
    while the ``tool_use`` beside it was named back), the replayed one in the history goes up
    under the alias again; other names stay."""
    answer = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_regex", "input": {"query": "t"}},
            _search_result("tracker_open_ticket", "Read"),
        ],
    }
    rec = Recorder()
    assert DIALECT.rewrite_response(answer, context(rec, SEARCH_PLAN)) is True
    assert answer["content"][1] == _search_result("mcp__tracker__open_ticket", "Read")
    body = load_json("request-claude-code.json")
    body["messages"].append({"role": "assistant", "content": [_search_result("mcp__tracker__open_ticket", "Read")]})
    assert DIALECT.apply_request(body, SEARCH_PLAN) is True
    assert body["messages"][-1]["content"][0] == _search_result("tracker_open_ticket", "Read")


@pytest.mark.parametrize("seed", range(3))
def test_a_streamed_tool_search_result_names_the_clients_tools(seed):
    events = [
        {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}},
        {"type": "content_block_start", "index": 0, "content_block": _search_result("tracker_open_ticket")},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_stop"},
    ]
    data = b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)
    rw = DIALECT.stream_rewriter(context(Recorder(), SEARCH_PLAN))
    out = drive(rw, random_chunks(data, random.Random(seed)))
    starts = [e.json() for e in events_of(out) if e.event == "content_block_start"]
    assert starts == [{**events[1], "content_block": _search_result("mcp__tracker__open_ticket")}]
    assert b"tracker_open_ticket" not in out.replace(b"mcp__tracker__open_ticket", b"")


# -- a tool_use block whose repair is given up --------------------------------------------------


def _tool_use_stream(name: str, how: str, fragments: list[str]) -> list[dict]:
    """A message whose ``tool_use`` block (``name``, input in ``fragments``) is given up ``how``:
    ``breaker`` (a text block starts before its stop), ``message`` (``message_delta`` before its
    stop) or ``end`` (the stream ends inside it)."""
    start = {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}}
    block = {"type": "tool_use", "id": "toolu_01AbC", "name": name, "input": {}}
    call = [{"type": "content_block_start", "index": 0, "content_block": block}]
    call += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": f}}
        for f in fragments
    ]
    if how == "end":
        return [start, *call]
    if how == "breaker":
        text = {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}
        return [start, *call, text, {"type": "content_block_stop", "index": 1}, {"type": "message_stop"}]
    delta = {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 3}}
    return [start, *call, delta, {"type": "message_stop"}]


def _sse(events: list[dict]) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)


@settings(max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100")), deadline=None)
@given(
    how=st.sampled_from(["breaker", "message", "end"]),
    fragments=st.lists(st.sampled_from(['{"title"', ': "T"', "}", '{"a": 1}', "", '"x']), max_size=4),
    seed=st.integers(0, 2**16),
)
def test_a_tool_use_given_up_names_the_clients_tool_and_keeps_everything_else(how, fragments, seed):
    """Out of order or cut off, a ``tool_use`` block goes as it came — but under the client's
    own name when the upstream called it by the alias this flow sent (a transport spelling the
    client never declared is no tool it can run); nothing else in any event changes."""
    upstream = _tool_use_stream("tracker_open_ticket", how, fragments)
    data = _sse(upstream)
    rw = DIALECT.stream_rewriter(context(Recorder(), SEARCH_PLAN))
    out = drive(rw, random_chunks(data, random.Random(seed)))
    expected = [
        {**e, "content_block": {**e["content_block"], "name": "mcp__tracker__open_ticket"}}
        if e["type"] == "content_block_start" and e["content_block"]["type"] == "tool_use"
        else e
        for e in upstream
    ]
    assert [e.json() for e in events_of(out)] == expected
    assert b"tracker_open_ticket" not in out.replace(b"mcp__tracker__open_ticket", b"")
    assert rw.unrepaired


def test_a_tool_use_given_up_under_another_agents_name_goes_as_it_came():
    """A profile's alias (``shell``: Codex's name for its shell, whose keys may mean otherwise)
    is named back by the whole repair only: given up, the block goes byte for byte as it came."""
    data = _sse(_tool_use_stream("shell", "message", ['{"command": ["ls"]}']))
    rw = DIALECT.stream_rewriter(context(Recorder(), Plan(rename_map={"Bash": "shell"})))
    assert drive(rw, [data]) == data
    assert rw.unrepaired


def _blocks_stream(blocks: list[tuple[str, str, dict]]) -> bytes:
    """An answer streaming one tool_use block per ``(id, name, input)``, then its end."""
    events: list[dict] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "content": [],
                "model": "m",
                "stop_reason": None,
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
        }
    ]
    for i, (block_id, name, value) in enumerate(blocks):
        events.append(
            {
                "type": "content_block_start",
                "index": i,
                "content_block": {"type": "tool_use", "id": block_id, "name": name, "input": {}},
            }
        )
        events.append(
            {
                "type": "content_block_delta",
                "index": i,
                "delta": {"type": "input_json_delta", "partial_json": orjson.dumps(value).decode()},
            }
        )
        events.append({"type": "content_block_stop", "index": i})
    events.append({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}})
    events.append({"type": "message_stop"})
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


@pytest.mark.parametrize("wrapper_first", [False, True])
@pytest.mark.parametrize("seed", range(4))
def test_a_streamed_wrappers_calls_never_share_an_id_with_another_block(wrapper_first, seed):
    """A wrapper's blocks are named <wrapper id>_<i>: the model's own ``toolu_W_0`` before it, or
    ``toolu_W_1`` after it, is such an id. Every block the client gets has its own id, streamed
    as in a JSON answer. Was a fault: the stream took the names unchecked (two blocks, one id)."""
    uses = [{"recipient_name": "functions.Read", "parameters": {"file_path": f"/r/{n}.py"}} for n in "ab"]
    own = ("toolu_W_1" if wrapper_first else "toolu_W_0", "Bash", {"command": "make"})
    wrapper = ("toolu_W", "multi_tool_use.parallel", {"tool_uses": uses})
    data = _blocks_stream([wrapper, own] if wrapper_first else [own, wrapper])
    out, _ = rewrite_stream(data, random_chunks(data, random.Random(seed)))
    starts = [
        e.json()["content_block"]
        for e in events_of(out)
        if isinstance(e.json(), dict) and e.json().get("type") == "content_block_start"
    ]
    ids = [b["id"] for b in starts]
    assert len(ids) == 3 and len(set(ids)) == 3, ids


def test_a_block_let_go_still_counts_its_id():
    """A block let go at a stall goes as it came, its id counted: a later block the upstream sent
    under the same id gets another (BR-20), as without the stall. Was: the later block kept it."""
    data = _blocks_stream([("toolu_1", "Bash", {"command": "ls"}), ("toolu_1", "Bash", {"command": "pwd"})])
    cut = data.index(b"content_block_delta")
    rw = DIALECT.stream_rewriter(context(Recorder()))
    out = b"".join(rw.feed(data[:cut])) + b"".join(rw.let_go("the upstream sent no byte for 31.0 s"))
    out += b"".join(rw.feed(data[cut:])) + b"".join(rw.finish())
    starts = [
        e.json() for e in events_of(out) if isinstance(e.json(), dict) and e.json().get("type") == "content_block_start"
    ]
    ids = [s["content_block"]["id"] for s in starts]
    assert ids[0] == "toolu_1" and len(set(ids)) == 2, ids
