"""The OpenAI Responses dialect (``toolvocab.dialects.openai_responses``): detection, declared tools
(function, custom, namespace, built-ins), the request-side plan over every name slot, whole
JSON answers with their ``tools`` / ``tool_choice`` echo, and the SSE stream rewriter (also fed
frame by frame through ``on_unit`` with :class:`toolvocab.dialects.base.JSONFrame`, as the WebSocket
hook does).

Fixtures are synthetic bodies in ``tests/fixtures/openai_responses/`` (see its README): Codex's
declared tool names and schema keys, invented descriptions, ids and texts.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import random
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import harness
from harness import dialects
from harness.dialects import Fixtures
from harness.dialects import context
from harness.dialects import drive
from harness.dialects import sse_events
from toolvocab.dialects import detect
from toolvocab.dialects.base import JSONFrame
from toolvocab.dialects.openai_responses import DIALECT
from toolvocab.dialects.openai_responses import ResponsesStream
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.models import Action
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import Plan

FX = Fixtures("openai_responses")
CODEX = "request-codex.json"

#: The upstream knew exec_command as run_exec and github's create_issue as open_issue
#: (``stream-upstream-names.sse`` carries those names in its calls and its echo).
UPSTREAM_RENAME = {"exec_command": "run_exec", "mcp__github__create_issue": "mcp__github__open_issue"}


load_json, load_bytes = FX.json, FX.bytes
events_of = sse_events


def random_chunks(data: bytes, rnd: random.Random, lo: int = 1, hi: int = 96) -> list[bytes]:
    return harness.random_chunks(data, rnd, lo, hi)


class Recorder(dialects.Recorder):
    """The engine bound to the fixture request's tools and the plan's reverse map."""

    def __init__(self, request: str | dict = CODEX, plan: Plan | None = None) -> None:
        body = load_json(request) if isinstance(request, str) else request
        super().__init__(Toolset(DIALECT.declared_tools(body)), plan)


def rewrite_stream(
    data: bytes,
    chunks: list[bytes] | None = None,
    *,
    plan: Plan | None = None,
    flow_key: str = "flow-resp-1",
    resolver: Any = None,
    expect_error: bool = False,
) -> tuple[bytes, Any]:
    plan = plan or Plan()
    resolver = resolver or Recorder(CODEX, plan)
    rw = DIALECT.stream_rewriter(context(resolver, plan, flow_key=flow_key))
    assert isinstance(rw, ResponsesStream)
    out = drive(rw, chunks if chunks is not None else [data])
    if not expect_error:
        assert rw.error is None, rw.error
    return out, resolver


def datas(out: bytes) -> list[dict]:
    return [e.json() for e in events_of(out)]


def by_type(out: bytes, kind: str) -> list[dict]:
    return [d for d in datas(out) if isinstance(d, dict) and d.get("type") == kind]


def completed(out: bytes) -> dict:
    [event] = by_type(out, "response.completed")
    return event["response"]


def assert_consistent(out: bytes) -> None:
    """Every place the client can see a call agrees: ``output_item.added`` / ``.done`` items,
    the argument deltas / ``.done``, and ``response.completed``'s output; sequence numbers
    stay contiguous; ``event:`` matches ``data.type``."""
    events = events_of(out)
    seqs = [e.json()["sequence_number"] for e in events if isinstance(e.json(), dict) and "sequence_number" in e.json()]
    assert seqs == list(range(len(seqs)))
    for e in events:
        if isinstance(e.json(), dict) and e.event is not None:
            assert e.event == e.json()["type"]
    added = {d["item"]["id"]: d["item"] for d in by_type(out, "response.output_item.added")}
    done = {d["item"]["id"]: d["item"] for d in by_type(out, "response.output_item.done")}
    deltas: dict[str, str] = {}
    for d in by_type(out, "response.function_call_arguments.delta"):
        deltas[d["item_id"]] = deltas.get(d["item_id"], "") + d["delta"]
    args_done = {d["item_id"]: d["arguments"] for d in by_type(out, "response.function_call_arguments.done")}
    final = {i["id"]: i for i in completed(out)["output"]}
    for item_id, item in done.items():
        assert final[item_id] == item
        if item["type"] in ("function_call", "custom_tool_call"):
            first = added[item_id]
            assert (first["name"], first.get("namespace")) == (item["name"], item.get("namespace"))
        if item["type"] == "function_call":
            assert added[item_id]["arguments"] == ""  # clients append the deltas to it
            assert deltas.get(item_id, "") == args_done.get(item_id, item["arguments"]) == item["arguments"]


# -- detection, declared tools, system texts ----------------------------------------------------


@pytest.mark.parametrize(
    "path", ["/v1/responses", "/backend-api/codex/responses", "/openai/v1/responses?api-version=x"]
)
def test_matches_responses_paths(path):
    body = {"model": "m", "input": []}
    assert DIALECT.matches("POST", path, body)
    assert detect("POST", path, body) is DIALECT


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("GET", "/v1/responses", {"input": []}),
        ("POST", "/v1/responses/resp_1/cancel", {"input": []}),
        ("POST", "/v1/responses", {"model": "m"}),
        ("POST", "/v1/responses", [{"input": []}]),
        ("POST", "/v1/chat/completions", {"input": []}),
    ],
)
def test_does_not_match_other_requests(method, path, body):
    assert not DIALECT.matches(method, path, body)


def test_declared_tools_of_codex_request():
    tools = DIALECT.declared_tools(load_json(CODEX))
    assert [(t.namespace, t.name, t.kind) for t in tools] == [
        (None, "exec_command", ToolKind.FUNCTION),
        (None, "write_stdin", ToolKind.FUNCTION),
        (None, "apply_patch", ToolKind.FREEFORM),
        (None, "view_image", ToolKind.FUNCTION),
        (None, "update_goal", ToolKind.FUNCTION),
        ("mcp__github__", "create_issue", ToolKind.FUNCTION),
        ("mcp__github__", "list_pull_requests", ToolKind.FUNCTION),
    ]  # tool_search and web_search are built-ins: never listed, never a target
    assert Toolset(tools).names()[5] == "mcp__github__create_issue"
    assert tools[0].input_schema["required"] == ["cmd"]


def test_system_texts_are_instructions_and_developer_messages():
    assert DIALECT.system_texts(load_json(CODEX)) == [
        "You are a coding agent working in a sandboxed checkout. Be brief.",
        "<sandbox>workspace-write</sandbox>",
    ]


def test_wants_stream():
    assert DIALECT.wants_stream("/v1/responses", {"stream": True})
    assert not DIALECT.wants_stream("/v1/responses", {"stream": False})
    assert not DIALECT.wants_stream("/v1/responses", {})


# -- request side -------------------------------------------------------------------------------

RENAME = {
    "exec_command": "run_exec",
    "view_image": "show_image",
    "mcp__github__create_issue": "mcp__github__open_issue",
    "apply_patch": "patch",  # a custom tool: must never be renamed
    "web_search": "search",  # a built-in: must never be renamed
}


def test_apply_request_renames_every_function_slot_and_adds_the_sentence_to_instructions():
    body = load_json(CODEX)
    expected = copy.deepcopy(body)
    assert DIALECT.apply_request(body, Plan(rename_map=RENAME, prompt_sentence="Use only declared names.")) is True
    expected["tools"][0]["name"] = "run_exec"
    expected["tools"][3]["name"] = "show_image"
    expected["tools"][5]["tools"][0]["name"] = "open_issue"  # the pair: namespace stays, name changes
    expected["input"][2]["name"] = "run_exec"
    expected["input"][6]["name"] = "open_issue"
    expected["instructions"] += "\n\nUse only declared names."
    assert body == expected
    # custom tool, custom_tool_call item, built-ins and the namespace itself untouched
    assert body["tools"][2]["name"] == "apply_patch" and body["input"][4]["name"] == "apply_patch"
    assert body["tools"][5]["name"] == "mcp__github__" and body["input"][6]["namespace"] == "mcp__github__"
    assert body["tools"][6:] == expected["tools"][6:]


@pytest.mark.parametrize(
    "choice,expected",
    [
        ({"type": "function", "name": "exec_command"}, {"type": "function", "name": "run_exec"}),
        ({"type": "function", "name": "write_stdin"}, {"type": "function", "name": "write_stdin"}),
        ({"type": "custom", "name": "apply_patch"}, {"type": "custom", "name": "apply_patch"}),
        ({"type": "web_search"}, {"type": "web_search"}),
        ("auto", "auto"),
        (
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [
                    {"type": "function", "name": "exec_command"},
                    {"type": "function", "name": "view_image"},
                    {"type": "custom", "name": "apply_patch"},
                    {"type": "web_search"},
                ],
            },
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [
                    {"type": "function", "name": "run_exec"},
                    {"type": "function", "name": "show_image"},
                    {"type": "custom", "name": "apply_patch"},
                    {"type": "web_search"},
                ],
            },
        ),
    ],
)
def test_apply_request_tool_choice(choice, expected):
    body = load_json(CODEX)
    body["tool_choice"] = choice
    DIALECT.apply_request(body, Plan(rename_map=RENAME))
    assert body["tool_choice"] == expected


def test_apply_request_renames_function_call_output_names_when_present():
    body = load_json(CODEX)
    body["input"][3]["name"] = "exec_command"
    body["input"][7].update(name="create_issue", namespace="mcp__github__")
    DIALECT.apply_request(body, Plan(rename_map=RENAME))
    assert body["input"][3]["name"] == "run_exec"
    assert (body["input"][7]["namespace"], body["input"][7]["name"]) == ("mcp__github__", "open_issue")


def test_apply_request_custom_tool_call_item_never_renamed_even_if_its_name_is_a_renamed_function():
    body = load_json(CODEX)
    body["input"][4]["name"] = "exec_command"
    DIALECT.apply_request(body, Plan(rename_map=RENAME))
    assert body["input"][4] == {
        "type": "custom_tool_call",
        "call_id": "call_rq_2",
        "name": "exec_command",
        "input": "*** Begin Patch\n*** End Patch\n",
    }


def test_apply_request_call_in_another_namespace_is_not_renamed():
    body = load_json(CODEX)
    body["input"][6]["namespace"] = "mcp__linear__"
    DIALECT.apply_request(body, Plan(rename_map=RENAME))
    assert body["input"][6]["name"] == "create_issue"


def test_apply_request_sentence_goes_to_developer_message_without_instructions():
    body = load_json(CODEX)
    del body["instructions"]
    assert DIALECT.apply_request(body, Plan(prompt_sentence="S."))
    assert body["input"][0]["content"] == [
        {"type": "input_text", "text": "<sandbox>workspace-write</sandbox>"},
        {"type": "input_text", "text": "S."},
    ]
    assert "instructions" not in body


def test_apply_request_sentence_into_string_developer_content():
    body = {"input": [{"role": "developer", "content": "Rules."}, {"role": "user", "content": "hi"}]}
    assert DIALECT.apply_request(body, Plan(prompt_sentence="S."))
    assert body["input"][0]["content"] == "Rules.\n\nS."


@pytest.mark.parametrize("instructions", [None, ""])
def test_apply_request_sentence_becomes_instructions_when_nothing_else(instructions):
    body = {"input": [{"type": "message", "role": "user", "content": "hi"}]}
    if instructions is not None:
        body["instructions"] = instructions
    assert DIALECT.apply_request(body, Plan(prompt_sentence="S."))
    # an empty string stays told apart from none, so the echo can give each back
    assert body["instructions"] == ("S." if instructions is None else "\n\nS.")


def test_apply_request_with_empty_plan_changes_nothing():
    body = load_json(CODEX)
    before = copy.deepcopy(body)
    assert DIALECT.apply_request(body, Plan()) is False
    assert body == before


def test_apply_request_namespace_without_trailing_separator():
    body = {
        "input": [
            {"type": "function_call", "call_id": "c", "namespace": "mcp__cua_repl", "name": "js", "arguments": "{}"}
        ],
        "tools": [
            {
                "type": "namespace",
                "name": "mcp__cua_repl",
                "tools": [{"type": "function", "name": "js", "parameters": {"type": "object"}}],
            }
        ],
    }
    assert Toolset(DIALECT.declared_tools(body)).names() == ["mcp__cua_repl__js"]
    assert DIALECT.apply_request(body, Plan(rename_map={"mcp__cua_repl__js": "mcp__cua_repl__eval_js"}))
    assert body["tools"][0]["tools"][0]["name"] == "eval_js"
    assert body["input"][0]["name"] == "eval_js"


def test_echo_of_namespace_without_trailing_separator_renamed_back():
    request = {
        "input": [],
        "tools": [
            {
                "type": "namespace",
                "name": "mcp__cua_repl",
                "tools": [{"type": "function", "name": "js", "parameters": {"type": "object"}}],
            }
        ],
    }
    plan = Plan(rename_map={"mcp__cua_repl__js": "mcp__cua_repl__eval_js"})
    response = {
        "output": [
            {
                "id": "fc_1",
                "type": "function_call",
                "call_id": "c",
                "namespace": "mcp__cua_repl",
                "name": "eval_js",
                "arguments": "{}",
            }
        ],
        "tools": [
            {
                "type": "namespace",
                "name": "mcp__cua_repl",
                "tools": [{"type": "function", "name": "eval_js", "parameters": {"type": "object"}}],
            }
        ],
    }
    DIALECT.rewrite_response(response, context(Recorder(request, plan), plan))
    assert (response["output"][0]["namespace"], response["output"][0]["name"]) == ("mcp__cua_repl", "js")
    assert response["tools"][0]["tools"][0]["name"] == "js"


# -- whole JSON answers -------------------------------------------------------------------------


def test_rewrite_response_repairs_calls_and_leaves_everything_else():
    body = load_json("response-foreign.json")
    before = copy.deepcopy(body)
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is True
    out = body["output"]
    # Codex's old shell tool with argv → exec_command {cmd}
    assert out[2] == {**before["output"][2], "name": "exec_command", "arguments": '{"cmd":"echo hi"}'}
    # flattened MCP name → the (namespace, name) pair Codex routes by
    assert out[3] == {**before["output"][3], "name": "create_issue", "namespace": "mcp__github__"}
    # another namespace: left; a custom call named shell: never moved to a function tool
    assert out[4] == before["output"][4]
    assert out[5] == before["output"][5] and out[5]["type"] == "custom_tool_call"
    # declared call, reasoning and message: untouched
    assert out[6] == before["output"][6] and out[:2] == before["output"][:2]
    assert {k: v for k, v in body.items() if k != "output"} == {k: v for k, v in before.items() if k != "output"}
    # the function call and the custom call named shell are resolved as different kinds
    assert [c.kind for c in rec.calls if c.name == "shell"] == [ToolKind.FUNCTION, ToolKind.FREEFORM]
    assert [(d.name, d.namespace, d.action) for d in rec.decisions] == [
        ("shell", None, Action.RENAME),
        ("mcp__github__create_issue", None, Action.RENAME),
        ("create_issue", "mcp__linear__", Action.LEAVE),
        ("shell", None, Action.LEAVE),
        ("exec_command", None, Action.KEEP),
    ]


def test_rewrite_response_declared_only_is_unchanged():
    body = load_json("response-foreign.json")
    body["output"] = [body["output"][0], body["output"][6]]
    before = copy.deepcopy(body)
    assert DIALECT.rewrite_response(body, context(Recorder())) is False
    assert body == before


def test_rewrite_response_echo_reverse_renamed():
    plan = Plan(rename_map=UPSTREAM_RENAME)
    body = completed(load_bytes("stream-upstream-names.sse"))
    assert DIALECT.rewrite_response(body, context(Recorder(CODEX, plan), plan)) is True
    assert [(i.get("namespace"), i["name"]) for i in body["output"]] == [
        (None, "exec_command"),
        ("mcp__github__", "create_issue"),
    ]
    assert body["tools"] == load_json(CODEX)["tools"]
    assert body["tool_choice"]["tools"] == [
        {"type": "function", "name": "exec_command"},
        {"type": "function", "name": "view_image"},
    ]


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"output": None},
        {"output": "x"},
        {"output": [None, 1, {"type": "function_call"}]},
        {"output": [{"type": "function_call", "name": 5}]},
    ],
)
def test_rewrite_response_odd_shapes(body):
    before = copy.deepcopy(body)
    assert DIALECT.rewrite_response(body, context(Recorder())) is False
    assert body == before


# -- streams ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_codex_answered_shell_with_argv_becomes_exec_command_with_cmd(seed):
    upstream = load_bytes("stream-foreign-shell.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    before, after = events_of(upstream), events_of(out)
    assert len(before) == len(after)
    changed = [i for i, (b, a) in enumerate(zip(before, after)) if a.raw != b.raw]
    # created, in_progress, the reasoning item: byte-identical; the call's 6 events and completed change
    assert [before[i].event for i in changed] == [
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    added = after[changed[0]].json()["item"]
    assert added == {**before[changed[0]].json()["item"], "name": "exec_command"}
    assert added["arguments"] == ""  # .added keeps its empty arguments
    assert [after[i].json()["delta"] for i in changed[1:4]] == ['{"cmd":"echo hi"}', "", ""]
    assert [after[i].json()["obfuscation"] for i in changed[1:4]] == ["q7Zp"] * 3  # other fields stay
    assert after[changed[4]].json()["arguments"] == '{"cmd":"echo hi"}'
    assert after[changed[5]].json()["item"] == {
        **before[changed[5]].json()["item"],
        "name": "exec_command",
        "arguments": '{"cmd":"echo hi"}',
    }
    assert completed(out)["output"][1] == after[changed[5]].json()["item"]
    assert completed(out)["output"][0] == completed(upstream)["output"][0]
    # nothing else in the completed event moved
    assert {k: v for k, v in completed(out).items() if k != "output"} == {
        k: v for k, v in completed(upstream).items() if k != "output"
    }
    assert_consistent(out)
    [d] = rec.decisions
    assert (d.name, d.action, d.target, d.arguments_after) == (
        "shell",
        Action.RENAME,
        "exec_command",
        {"cmd": "echo hi"},
    )


@pytest.mark.parametrize("seed", range(40))
def test_declared_function_and_custom_calls_pass_byte_identical(seed):
    upstream = load_bytes("stream-declared.sse")
    assert upstream.startswith(b": keep-alive\n\n")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert out == upstream
    assert [(c.name, c.kind, d.action) for c, d in zip(rec.calls, rec.decisions)] == [
        ("exec_command", ToolKind.FUNCTION, Action.KEEP),
        ("apply_patch", ToolKind.FREEFORM, Action.KEEP),
    ]


@pytest.mark.parametrize("seed", range(30))
def test_flattened_mcp_name_becomes_the_namespace_pair_and_another_namespace_is_left(seed):
    upstream = load_bytes("stream-namespace.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert_consistent(out)
    done = [d["item"] for d in by_type(out, "response.output_item.done")]
    assert [(i.get("namespace"), i["name"]) for i in done] == [
        ("mcp__github__", "create_issue"),
        ("mcp__linear__", "create_issue"),
    ]
    assert done[0]["arguments"] == '{"owner":"acme","repo":"widgets","title":"Retry test flakes"}'
    # every event of the second call (namespace mcp__linear__, not declared) is byte-identical
    before, after = events_of(upstream), events_of(out)
    for b, a in zip(before, after):
        data = b.json()
        if data.get("item", {}).get("id") == "fc_fx03b" or data.get("item_id") == "fc_fx03b":
            assert a.raw == b.raw
        if data.get("item_id") == "fc_fx03a":  # no fitting needed: deltas untouched
            assert a.raw == b.raw
    assert [(d.action, d.target_namespace) for d in rec.decisions] == [
        (Action.RENAME, "mcp__github__"),
        (Action.LEAVE, None),
    ]


@pytest.mark.parametrize("seed", range(20))
def test_custom_tool_calls_are_never_moved_to_a_function_tool(seed):
    upstream = load_bytes("stream-custom-foreign.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert out == upstream
    assert all(c.kind is ToolKind.FREEFORM for c in rec.calls)
    assert all(d.action is not Action.RENAME for d in rec.decisions)


def test_custom_call_with_a_variant_of_the_custom_tools_name_is_renamed_within_custom():
    upstream = load_bytes("stream-custom-foreign.sse").replace(b'"name":"shell"', b'"name":"Apply-Patch"')
    out, rec = rewrite_stream(upstream)
    assert_consistent(out)
    done = [d["item"] for d in by_type(out, "response.output_item.done")]
    assert (done[0]["type"], done[0]["name"], done[0]["input"]) == ("custom_tool_call", "apply_patch", "ls -la")
    # the free-text input deltas are never touched
    ins = [e.raw for e in events_of(upstream) if e.event and e.event.startswith("response.custom_tool_call_input")]
    assert all(raw in out for raw in ins)
    assert rec.decisions[0].target == "apply_patch"


def test_function_call_named_like_the_custom_tool_is_not_turned_into_a_custom_call():
    upstream = load_bytes("stream-foreign-shell.sse").replace(b'"name":"shell"', b'"name":"apply_patch"')
    out, _ = rewrite_stream(upstream)
    assert out == upstream


@pytest.mark.parametrize("seed", range(30))
def test_upstream_names_renamed_back_everywhere_incl_the_echo(seed):
    upstream = load_bytes("stream-upstream-names.sse")
    plan = Plan(rename_map=UPSTREAM_RENAME)
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), plan=plan)
    assert_consistent(out)
    client_tools = load_json(CODEX)["tools"]
    for kind in ("response.created", "response.in_progress", "response.completed"):
        [event] = by_type(out, kind)
        assert event["response"]["tools"] == client_tools
        assert event["response"]["tool_choice"]["tools"] == [
            {"type": "function", "name": "exec_command"},
            {"type": "function", "name": "view_image"},
        ]
    for kind in ("response.output_item.added", "response.output_item.done"):
        assert [(d["item"].get("namespace"), d["item"]["name"]) for d in by_type(out, kind)] == [
            (None, "exec_command"),
            ("mcp__github__", "create_issue"),
        ]
    assert b"run_exec" not in out and b"open_issue" not in out
    assert [d.step.value for d in rec.decisions] == ["reverse_map", "reverse_map"]
    # argument events carry no name: untouched
    for e in events_of(upstream):
        if e.event and e.event.startswith("response.function_call_arguments"):
            assert e.raw in out


def test_response_events_without_a_rename_map_pass_byte_identical():
    upstream = load_bytes("stream-upstream-names.sse")
    out, _ = rewrite_stream(upstream, plan=Plan())
    for kind in ("response.created", "response.in_progress"):
        [before] = [e.raw for e in events_of(upstream) if e.event == kind]
        assert before in out


def test_call_without_output_item_done_is_released_unchanged_at_the_end():
    upstream = load_bytes("stream-foreign-shell.sse")
    cut = upstream.index(b"event: response.function_call_arguments.done")
    upstream = (
        upstream[:cut]
        + b'event: error\ndata: {"type":"error","sequence_number":8,"code":"server_error","message":"boom"}\n\n'
    )
    for seed in range(10):
        out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
        assert out == upstream


def test_unparseable_event_inside_a_call_is_kept_in_place():
    upstream = load_bytes("stream-foreign-shell.sse")
    cut = upstream.index(b"event: response.function_call_arguments.done")
    upstream = upstream[:cut] + b": keep-alive\n\ndata: not json\n\n" + upstream[cut:]
    out, _ = rewrite_stream(upstream)
    assert b": keep-alive\n\ndata: not json\n\nevent: response.function_call_arguments.done" in out
    assert by_type(out, "response.output_item.done")[-1]["item"]["name"] == "exec_command"


def test_crlf_stream_keeps_crlf_framing():
    upstream = load_bytes("stream-foreign-shell.sse").replace(b"\n", b"\r\n")
    for seed in range(10):
        out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
        assert b"\n" not in out.replace(b"\r\n", b"")
        assert by_type(out, "response.output_item.done")[-1]["item"]["name"] == "exec_command"


@pytest.mark.parametrize(
    "upstream",
    [
        b"",
        b"data: not json\n\n",
        b'event: response.output_item.added\ndata: {"type":"response.output_item.added","item":null}\n\n',
        b'event: response.completed\ndata: {"type":"response.completed","response":{"output":5,"tools":"x"}}\n\n',
        b"\xff\xfe\x00 binary\n\n",
        b'{"error":{"message":"not sse"}}',
    ],
)
def test_odd_streams_pass_byte_identical(upstream):
    for seed in range(5):
        out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed), 1, 9), expect_error=True)
        assert out == upstream


def test_malformed_done_item_is_contained_and_every_byte_delivered():
    upstream = load_bytes("stream-foreign-shell.sse")
    start = upstream.index(b"event: response.output_item.done", upstream.index(b'"name":"shell"'))
    end = upstream.index(b"\n\n", start) + 2
    upstream = (
        upstream[:start]
        + b'event: response.output_item.done\ndata: {"type":"response.output_item.done","sequence_number":9,"output_index":1,"item":null}\n\n'
        + upstream[end:]
    )
    for seed in range(10):
        out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), expect_error=True)
        assert out == upstream


@pytest.mark.parametrize("seed", range(10))
def test_resolver_exception_passes_the_stream_through(seed):
    def boom(call):
        raise RuntimeError("injected")

    upstream = load_bytes("stream-foreign-shell.sse")
    out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), resolver=boom, expect_error=True)
    assert out == upstream


STREAMS = [
    ("stream-foreign-shell.sse", Plan()),
    ("stream-declared.sse", Plan()),
    ("stream-namespace.sse", Plan()),
    ("stream-custom-foreign.sse", Plan()),
    ("stream-upstream-names.sse", Plan(rename_map=UPSTREAM_RENAME)),
]


@pytest.mark.parametrize("fixture,plan", STREAMS)
def test_output_does_not_depend_on_chunking(fixture, plan):
    upstream = load_bytes(fixture)
    whole, rec_whole = rewrite_stream(upstream, plan=plan)
    assert_consistent(whole)
    for seed in range(25):
        lo, hi = (1, 4) if seed % 5 == 0 else (1, 200)
        out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed), lo, hi), plan=plan)
        assert out == whole
        assert [d.model_dump() for d in rec.decisions] == [d.model_dump() for d in rec_whole.decisions]


# -- the same logic frame by frame (WebSocket units) --------------------------------------------


def frames_of(sse: bytes) -> list[bytes]:
    """The JSON payloads of an SSE fixture, compact, one per WebSocket frame."""
    return [orjson.dumps(e.json()) for e in events_of(sse) if isinstance(e.json(), dict)]


def run_units(frames: list[bytes], plan: Plan | None = None) -> tuple[list[list[bytes]], Any]:
    plan = plan or Plan()
    rec = Recorder(CODEX, plan)
    rw = DIALECT.stream_rewriter(context(rec, plan))
    sent: list[list[bytes]] = []
    for raw in frames:
        unit = JSONFrame(raw)
        outs = rw.on_unit(unit)
        assert all(isinstance(o, JSONFrame) for o in outs)
        sent.append([o.raw for o in outs])
    return sent, rec


def test_on_unit_holds_a_call_and_releases_it_rewritten_at_its_done():
    frames = frames_of(load_bytes("stream-foreign-shell.sse"))
    sent, _ = run_units(frames)
    kinds = [orjson.loads(f)["type"] for f in frames]
    first_call = kinds.index("response.output_item.added", 2 + 2)  # after the reasoning item
    done = len(kinds) - 2
    assert all(sent[i] == [frames[i]] for i in range(first_call))  # passed as they came
    assert all(sent[i] == [] for i in range(first_call, done))  # held
    released = [orjson.loads(f) for f in sent[done]]
    assert [r["type"] for r in released] == kinds[first_call : done + 1]
    assert released[0]["item"]["name"] == "exec_command" and released[-1]["item"]["arguments"] == '{"cmd":"echo hi"}'
    assert orjson.loads(sent[-1][0])["response"]["output"][1]["name"] == "exec_command"


def test_on_unit_declared_frames_come_back_as_the_same_objects_or_bytes():
    frames = frames_of(load_bytes("stream-declared.sse"))
    sent, _ = run_units(frames)
    assert [raw for group in sent for raw in group] == frames


def test_on_unit_echo_rewritten_per_frame():
    frames = frames_of(load_bytes("stream-upstream-names.sse"))
    sent, _ = run_units(frames, Plan(rename_map=UPSTREAM_RENAME))
    flat = [orjson.loads(raw) for group in sent for raw in group]
    assert len(flat) == len(frames)
    assert flat[0]["response"]["tools"][0]["name"] == "exec_command"
    assert b"run_exec" not in b"".join(raw for group in sent for raw in group)


# -- tools declared inside input (additional_tools) ----------------------------------------------

EXEC_SCHEMA = {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}
SHELL_SCHEMA = {
    "type": "object",
    "properties": {"command": {"type": "array", "items": {"type": "string"}}, "workdir": {"type": "string"}},
    "required": ["command"],
}


def additional(*tools: dict[str, Any]) -> dict[str, Any]:
    """An ``additional_tools`` input item (openai-python ``response_input_item_param.py``)."""
    return {"type": "additional_tools", "role": "developer", "tools": list(tools)}


def test_tools_declared_inside_input_are_declared_after_the_top_level_ones():
    body = {
        "model": "m",
        "tools": [{"type": "function", "name": "exec_command", "parameters": EXEC_SCHEMA}],
        "input": [
            additional(
                {"type": "function", "name": "shell", "parameters": SHELL_SCHEMA},
                {"type": "namespace", "name": "mcp__gh__", "tools": [{"type": "function", "name": "list"}]},
            ),
            {"role": "user", "content": "x"},
            additional({"type": "custom", "name": "apply_patch"}),
        ],
    }
    assert [(t.namespace, t.name, t.kind) for t in DIALECT.declared_tools(body)] == [
        (None, "exec_command", ToolKind.FUNCTION),
        (None, "shell", ToolKind.FUNCTION),
        ("mcp__gh__", "list", ToolKind.FUNCTION),
        (None, "apply_patch", ToolKind.FREEFORM),
    ]
    only_inside = {"model": "m", "input": [additional({"type": "function", "name": "shell"})]}
    assert [t.name for t in DIALECT.declared_tools(only_inside)] == ["shell"]
    # the peek reads no tools inside input: such a request is read whole
    assert DIALECT.peek("POST", "/v1/responses", orjson.dumps(body)) is None
    assert DIALECT.peek("POST", "/v1/responses", orjson.dumps({**body, "input": body["input"][1:2]})) is not None
    # two requests that declare other tools never share a cached Toolset
    assert DIALECT.declarations(body) != DIALECT.declarations({**body, "input": body["input"][1:]})


def test_a_rename_reaches_the_tools_declared_inside_input_and_a_repeat_there_is_the_same_tool():
    """A long name an input item declares is aliased there, in the transcript and at the top
    level alike; a name it repeats (a deferred tool a tool search loaded, a tool declared again)
    is the declared tool, never dropped or aliased as a second one."""
    from toolvocab.engine.grammar import grammar_for
    from toolvocab.engine.plan import make_plan

    long = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance"  # over 64
    deferred = {"type": "function", "name": "shell", "parameters": SHELL_SCHEMA, "defer_loading": True}
    body = {
        "model": "m",
        "tools": [deferred, {"type": "tool_search", "execution": "client"}],
        "input": [
            {"type": "tool_search_call", "call_id": "s1", "arguments": {}},
            {"type": "tool_search_output", "call_id": "s1", "tools": [{**deferred, "defer_loading": False}]},
            additional({"type": "function", "name": long, "parameters": EXEC_SCHEMA}),
            {"type": "function_call", "call_id": "c1", "name": long, "arguments": "{}"},
        ],
    }
    tools = Toolset(DIALECT.declared_tools(body))
    assert tools.names() == ["shell", long]
    plan = make_plan(tools, [], add_sentence=False, grammar=grammar_for("openai_responses", "api.openai.com"))
    assert plan.duplicates == {}
    alias = plan.rename_map[long]
    assert "input" in DIALECT.request_keys(body, plan)
    before = copy.deepcopy(body)
    assert DIALECT.apply_request(body, plan) is True
    assert body["input"][2]["tools"][0]["name"] == alias and body["input"][3]["name"] == alias
    assert body["tools"] == before["tools"] and body["input"][:2] == before["input"][:2]  # shell untouched


@pytest.mark.parametrize("kind", ["additional_tools", "tool_search_output"])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("top_level", [True, False])
def test_a_call_to_a_tool_declared_inside_input_is_the_clients_own(stream: bool, top_level: bool, kind: str):
    """Codex's ``shell`` declared in an ``additional_tools`` item beside ``exec_command``: a
    ``shell`` call is a declared tool's and goes to the client as answered, never moved to
    ``exec_command``. Was a fault: the item was not read, so ``shell`` counted as undeclared."""
    shell = {"type": "function", "name": "shell", "parameters": SHELL_SCHEMA}
    exec_tool = {"type": "function", "name": "exec_command", "parameters": EXEC_SCHEMA}
    body = {
        "model": "gpt-5",
        "store": False,
        "stream": stream,
        "input": [
            additional(shell) if kind == "additional_tools" else {"type": kind, "call_id": "s1", "tools": [shell]},
            {"role": "user", "content": "list files"},
        ],
    }
    if top_level:
        body["tools"] = [exec_tool]
    else:
        body["input"].insert(0, additional(exec_tool))
    arguments = '{"command":["bash","-lc","ls"],"workdir":"/repo"}'
    item = {"type": "function_call", "id": "fc_1", "call_id": "c1", "name": "shell", "arguments": arguments}
    done = {"type": "response", "id": "r1", "object": "response", "status": "completed", "output": [item]}
    if stream:
        upstream = b"".join(
            b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e))
            for e in (
                {"type": "response.output_item.added", "output_index": 0, "item": {**item, "arguments": ""}},
                {
                    "type": "response.function_call_arguments.done",
                    "output_index": 0,
                    "item_id": "fc_1",
                    "arguments": arguments,
                },
                {"type": "response.output_item.done", "output_index": 0, "item": item},
                {"type": "response.completed", "response": done},
            )
        )
        ctype = "text/event-stream"
    else:
        upstream, ctype = orjson.dumps(done), "application/json"
    with harness.script_context() as (tctx, module):
        e = harness.Env(tctx, module)
        e.configure(**harness.DEFAULTS)
        f = harness.make_flow(
            body,
            host="api.openai.com",
            path="/v1/responses",
            upstream=upstream,
            resp_type=ctype,
            headers=[("user-agent", "codex_cli_rs/0.171.0")],
        )
        got = harness.replay(e, f)
    if stream:
        names = [d["item"]["name"] for d in by_type(got.out, "response.output_item.done")]
        names += [o["name"] for o in completed(got.out)["output"]]
    else:
        names = [o["name"] for o in orjson.loads(got.out)["output"]]
    assert names == ["shell"] * (2 if stream else 1)
    assert [d["action"] for d in f.metadata["toolvocab"]["decisions"]] == ["keep"]


# -- a call's events out of the usual order ------------------------------------------------------


def _stream(events: list[dict]) -> bytes:
    """``events`` as SSE, ``sequence_number`` renumbered in their new order."""
    out = b""
    for n, data in enumerate(events):
        data = {**data, "sequence_number": n} if "sequence_number" in data else data
        out += b"event: " + data["type"].encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"
    return out


def _events(fixture: str) -> list[dict]:
    return [e.json() for e in events_of(load_bytes(fixture)) if isinstance(e.json(), dict)]


def _rewriter(plan: Plan) -> tuple[ResponsesStream, Recorder]:
    resolver = Recorder(CODEX, plan)
    rw = DIALECT.stream_rewriter(context(resolver, plan, flow_key="flow-order"))
    assert isinstance(rw, ResponsesStream)
    return rw, resolver


def _call_names(out: bytes, kind: str) -> list[tuple[Any, str]]:
    return [(d["item"].get("namespace"), d["item"]["name"]) for d in by_type(out, kind) if "name" in d["item"]]


CLIENT_NAMES = [(None, "exec_command"), ("mcp__github__", "create_issue")]


@pytest.mark.parametrize("seed", range(4))
def test_a_done_without_its_added_gets_the_upstream_alias_named_back(seed):
    """Codex reads a call from ``output_item.done``: one that came without its ``.added`` still
    names the client's tool, not the alias this flow sent upstream, as the echo does."""
    events = [d for d in _events("stream-upstream-names.sse") if d["type"] != "response.output_item.added"]
    upstream = _stream(events)
    rw, rec = _rewriter(Plan(rename_map=UPSTREAM_RENAME))
    out = drive(rw, random_chunks(upstream, random.Random(seed)))
    assert _call_names(out, "response.output_item.done") == CLIENT_NAMES
    assert [(i.get("namespace"), i["name"]) for i in completed(out)["output"]] == CLIENT_NAMES
    assert b"run_exec" not in out and b"open_issue" not in out
    assert [d.step.value for d in rec.decisions] == ["reverse_map", "reverse_map"] and rw.unrepaired == []


def test_a_done_without_its_added_is_not_repaired_past_a_rename_and_says_so():
    """A foreign call (``shell`` with an argv: a new name and new arguments) whose ``.done`` came
    without its ``.added``: its argument deltas already went out as sent, so nothing changes, the
    echo included, and the give-up is noted."""
    events = [
        d
        for d in _events("stream-foreign-shell.sse")
        if not (d["type"] == "response.output_item.added" and d["item"]["type"] == "function_call")
    ]
    upstream = _stream(events)
    rw, _ = _rewriter(Plan())
    out = drive(rw, [upstream])
    assert out == upstream  # the echo in response.completed included
    assert rw.unrepaired == [
        "the tool call shell's response.output_item.done came without its response.output_item.added "
        "(events out of order)"
    ]


def test_a_call_added_without_its_name_is_held_and_named_from_its_done():
    """An ``output_item.added`` that carries no ``name`` yet (the name in ``.done`` and in
    ``function_call_arguments.done``): the call is held all the same, and every event that names
    it names the client's tool."""
    events = []
    for d in _events("stream-upstream-names.sse"):
        if d["type"] == "response.output_item.added" and d["item"]["type"] == "function_call":
            d = {**d, "item": {k: v for k, v in d["item"].items() if k not in ("name", "namespace")}}
        if d["type"] == "response.function_call_arguments.done":
            d = {**d, "name": "run_exec" if d["item_id"] == "fc_fx05a" else "open_issue"}
        events.append(d)
    upstream = _stream(events)
    rw, _ = _rewriter(Plan(rename_map=UPSTREAM_RENAME))
    out = drive(rw, [upstream])
    assert _call_names(out, "response.output_item.done") == CLIENT_NAMES
    assert [d["name"] for d in by_type(out, "response.function_call_arguments.done")] == [
        "exec_command",
        "create_issue",
    ]
    assert b"run_exec" not in out and b"open_issue" not in out


def _interleaved(events: list[dict], first: int, second: int) -> list[dict]:
    """The events of the calls at ``output_index`` ``first`` and ``second`` taken in turns, from
    where the first call starts; the others in their places."""
    calls = [d for d in events if d.get("output_index") in (first, second)]
    a = [d for d in calls if d["output_index"] == first]
    b = [d for d in calls if d["output_index"] == second]
    mixed = [d for pair in zip(a, b) for d in pair] + a[len(b) :] + b[len(a) :]
    start = events.index(a[0])
    rest = [d for d in events if d not in calls]
    return rest[:start] + mixed + rest[start:]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("first", [0, 1], ids=["first-ends-last", "first-ends-first"])
def test_calls_whose_events_interleave_are_each_named_back(seed, first):
    events = _interleaved(_events("stream-upstream-names.sse"), first, 1 - first)
    upstream = _stream(events)
    rw, rec = _rewriter(Plan(rename_map=UPSTREAM_RENAME))
    out = drive(rw, random_chunks(upstream, random.Random(seed)))
    assert_consistent(out)
    for kind in ("response.output_item.added", "response.output_item.done"):
        assert sorted(_call_names(out, kind), key=str) == sorted(CLIENT_NAMES, key=str)
    assert b"run_exec" not in out and b"open_issue" not in out
    assert [d.step.value for d in rec.decisions] == ["reverse_map", "reverse_map"]


def _with_call(events: list[dict], item_id: str, name: str, deltas: list[str]) -> list[dict]:
    """``events`` with one more function call at ``output_index`` 2 before ``response.completed``
    (``output_item.added``, a delta per ``deltas``, ``function_call_arguments.done``,
    ``output_item.done``), and in that event's echo."""
    item = {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": ""}
    item |= {"call_id": "call_" + item_id, "name": name}
    args = "".join(deltas)
    at = {"sequence_number": 0, "output_index": 2}
    call = [{"type": "response.output_item.added", **at, "item": item}]
    call += [{"type": "response.function_call_arguments.delta", **at, "item_id": item_id, "delta": d} for d in deltas]
    call += [{"type": "response.function_call_arguments.done", **at, "item_id": item_id, "arguments": args}]
    call += [{"type": "response.output_item.done", **at, "item": {**item, "status": "completed", "arguments": args}}]
    end = next(i for i, d in enumerate(events) if d["type"] == "response.completed")
    final = events[end]
    echo = {**final["response"], "output": [*final["response"]["output"], call[-1]["item"]]}
    return events[:end] + call + [{**final, "response": echo}] + events[end + 1 :]


def test_interleaved_calls_keep_each_its_own_arguments_when_one_is_fitted():
    """A foreign ``shell`` call (argv fitted into ``exec_command``'s ``cmd``) interleaved with a
    declared call: the fitted arguments go into the shell call's first delta only; the other
    call's deltas, ``.done`` and echo keep its own arguments byte for byte."""
    args = '{"cmd":"ls -la"}'
    events = _interleaved(
        _with_call(_events("stream-foreign-shell.sse"), "fc_other", "exec_command", [args[:7], args[7:]]), 1, 2
    )
    rw, rec = _rewriter(Plan())
    out = drive(rw, [_stream(events)])
    assert_consistent(out)
    done = {d["item"]["id"]: d["item"] for d in by_type(out, "response.output_item.done")}
    assert (done["fc_fx01"]["name"], orjson.loads(done["fc_fx01"]["arguments"])) == ("exec_command", {"cmd": "echo hi"})
    assert done["fc_other"]["arguments"] == args
    assert [
        d["delta"] for d in by_type(out, "response.function_call_arguments.delta") if d["item_id"] == "fc_other"
    ] == [
        args[:7],
        args[7:],
    ]
    assert [(d.name, d.action) for d in rec.decisions if d.action is not Action.KEEP] == [("shell", Action.RENAME)]


@settings(max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100")), deadline=None)
@given(data=st.data(), fitted=st.booleans(), seed=st.integers(0, 2**16))
def test_any_interleaving_of_two_calls_names_each_back_with_its_own_arguments(data, fitted, seed):
    """Whatever order two calls' events come in (each call's own in order): every event the
    client gets names its declared tools, never an alias; each call's argument deltas add up to
    its ``.done`` arguments; a fitted call gets its arguments, the other keeps its own."""
    events = _events("stream-foreign-shell.sse" if fitted else "stream-upstream-names.sse")
    if fitted:  # the foreign shell call, then a declared call aliased upstream
        events = _with_call(events, "fc_b", "run_exec", ['{"cmd":"ls"}'])
        calls = (1, 2)
    else:
        calls = (0, 1)
    a = [d for d in events if d.get("output_index") == calls[0]]
    b = [d for d in events if d.get("output_index") == calls[1]]
    order = data.draw(st.permutations([0] * len(a) + [1] * len(b)))
    ia, ib = iter(a), iter(b)
    mixed = [next(ia) if which == 0 else next(ib) for which in order]
    start = events.index(a[0])
    rest = [d for d in events if d not in a and d not in b]
    upstream = _stream(rest[:start] + mixed + rest[start:])
    rw, _ = _rewriter(Plan(rename_map=UPSTREAM_RENAME))
    out = drive(rw, harness.random_chunks(upstream, random.Random(seed), 1, 200))
    assert_consistent(out)
    assert b"run_exec" not in out and b"open_issue" not in out and rw.unrepaired == []
    done = {d["item"]["id"]: d["item"] for d in by_type(out, "response.output_item.done")}
    if fitted:
        assert (done["fc_fx01"]["name"], orjson.loads(done["fc_fx01"]["arguments"])) == (
            "exec_command",
            {"cmd": "echo hi"},
        )
        assert (done["fc_b"]["name"], done["fc_b"]["arguments"]) == ("exec_command", '{"cmd":"ls"}')
    else:
        assert {(i.get("namespace"), i["name"]) for i in done.values()} == set(CLIENT_NAMES)


def test_a_call_cut_off_by_the_end_of_the_response_is_echoed_as_it_went_out():
    """The response ended (``response.completed``) before a held call's ``output_item.done``:
    the call's events go out as they came, and so does the call in the completed echo (it was
    repaired there, so an SDK reading the final response saw another call than the events)."""
    events = [
        d
        for d in _events("stream-foreign-shell.sse")
        if d["type"] != "response.output_item.done" or d["output_index"] != 1
    ]
    upstream = _stream(events)
    rw, _ = _rewriter(Plan())
    out = drive(rw, [upstream])
    assert out == upstream
    assert rw.unrepaired and "events out of order" in rw.unrepaired[0]


def test_a_response_cut_before_one_of_two_calls_ends_still_repairs_the_finished_one():
    """Two interleaved calls, the response cut (``response.incomplete``) before the second's
    ``.done``: the first call, whole, is named back as every call is; the unfinished one goes as
    it came but for its upstream alias, named back too (noted), and the echo shows each as it
    went out."""
    events = _events("stream-upstream-names.sse")
    first = [d for d in events if d.get("output_index") == 0]
    second = [d for d in events if d.get("output_index") == 1 and d["type"] != "response.output_item.done"]
    end = next(d for d in events if d["type"] == "response.completed")
    end = {**end, "type": "response.incomplete", "response": {**end["response"], "status": "incomplete"}}
    upstream = _stream(events[:2] + [first[0], second[0], *first[1:], *second[1:], end])
    rw, _ = _rewriter(Plan(rename_map=UPSTREAM_RENAME))
    out = drive(rw, [upstream])
    assert [(d["item"]["id"], d["item"]["name"]) for d in by_type(out, "response.output_item.done")] == [
        ("fc_fx05a", "exec_command")
    ]
    added = {
        d["item"]["id"]: (d["item"].get("namespace"), d["item"]["name"])
        for d in by_type(out, "response.output_item.added")
    }
    assert added == {"fc_fx05a": CLIENT_NAMES[0], "fc_fx05b": CLIENT_NAMES[1]}
    [echo] = by_type(out, "response.incomplete")
    assert [(i.get("namespace"), i["name"]) for i in echo["response"]["output"]] == CLIENT_NAMES
    assert b"run_exec" not in out and b"open_issue" not in out
    assert rw.unrepaired == [
        "a response.incomplete event came before the tool call open_issue's response.output_item.done "
        "(events out of order); named back to mcp__github__create_issue"
    ]


@pytest.mark.parametrize("index", [None, 1, "1"], ids=["none", "shared", "not-an-int"])
def test_interleaved_calls_their_output_index_cannot_tell_apart_change_nothing(index):
    """A foreign call needing its arguments fitted, interleaved with a declared call, and no
    ``output_index`` tells their events apart (none, the same, not an int): fitting one call's
    arguments could land in the other's events (``rm -rf build`` becoming ``echo hi``'s), so
    both go as they came."""
    events = _with_call(_events("stream-foreign-shell.sse"), "fc_o", "exec_command", ['{"cmd":"rm -rf build"}'])
    calls = [d for d in events if d.get("output_index") == 1]
    other = [d for d in events if d.get("output_index") == 2]
    rest = [d for d in events if d.get("output_index") not in (1, 2)]
    mixed = [d for pair in zip(calls, other) for d in pair] + calls[len(other) :]
    for d in mixed:
        if index is None:
            d.pop("output_index")
        else:
            d["output_index"] = index
    upstream = _stream(rest[:4] + mixed + rest[4:])
    rw, _ = _rewriter(Plan())
    out = drive(rw, [upstream])
    assert out == upstream
    assert rw.unrepaired and "no output_index to tell their events apart" in rw.unrepaired[0]


def test_a_given_up_calls_late_argument_event_keeps_its_own_arguments_in_the_next_hold():
    """Two calls their ``output_index`` cannot tell apart are given up (as sent); one of them
    still sends an argument delta while a later foreign call is held to be fitted: the fitted
    arguments go into the held call's own events (by ``item_id``), never into the given-up
    call's (its ``rm -rf build`` became ``echo hi`` in its delta)."""

    def call(item_id: str, index: int, name: str) -> dict:
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": "c" + item_id,
        }
        return {"type": "response.output_item.added", "output_index": index, "item": {**item, "name": name}}

    def delta(item_id: str, index: int, text: str) -> dict:
        return {
            "type": "response.function_call_arguments.delta",
            "output_index": index,
            "item_id": item_id,
            "delta": text,
        }

    def done(start: dict, args: str) -> dict:
        item = {**start["item"], "status": "completed", "arguments": args}
        return {"type": "response.output_item.done", "output_index": start["output_index"], "item": item}

    a, b, d = call("fa", 0, "exec_command"), call("fb", 0, "exec_command"), call("fd", 1, "shell")
    shell = '{"command":["bash","-lc","echo hi"]}'
    events = [a, b, delta("fa", 0, '{"cmd":"ls"}'), done(a, '{"cmd":"ls"}'), d]
    events += [delta("fb", 0, '{"cmd":"rm -rf build"}'), delta("fd", 1, shell), done(d, shell)]
    events += [done(b, '{"cmd":"rm -rf build"}')]
    rw, _ = _rewriter(Plan())
    out = datas(drive(rw, [_stream(events)]))
    deltas = {e["item_id"]: e["delta"] for e in out if e["type"] == "response.function_call_arguments.delta"}
    assert deltas == {"fa": '{"cmd":"ls"}', "fb": '{"cmd":"rm -rf build"}', "fd": '{"cmd":"echo hi"}'}
    dones = {
        e["item"]["id"]: (e["item"]["name"], e["item"]["arguments"])
        for e in out
        if e["type"] == "response.output_item.done"
    }
    assert dones == {
        "fa": ("exec_command", '{"cmd":"ls"}'),
        "fb": ("exec_command", '{"cmd":"rm -rf build"}'),
        "fd": ("exec_command", '{"cmd":"echo hi"}'),
    }


def test_the_end_of_a_message_item_is_not_read():
    """A message item's ``output_item.done`` carries its whole text: it is no tool call's, and
    goes on unread (one parse of every answer's text otherwise). A repeated key in it, which a
    read would have to refuse, changes nothing."""
    done = b'{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"m","id":"m2"}}'
    upstream = b"event: response.output_item.done\ndata: " + done + b"\n\n"
    rw, _ = _rewriter(Plan())
    assert drive(rw, [upstream]) == upstream
    assert rw.error is None


#: Each way a call's repair is given up in a stream (the call then goes as it came).
GIVE_UPS = ("no-index", "shared-index", "cut-both", "cut-second", "stream-ends", "done-first")


def _given_up(events: list[dict], how: str, cut_at: int) -> list[dict]:
    """The two calls of ``events`` (``output_index`` 0 and 1), interleaved, in a stream where
    their repair is given up ``how`` (:data:`GIVE_UPS`); ``cut_at``: how many of the calls'
    events come before a cut (``cut-*``, ``stream-ends``)."""
    a = [d for d in events if d.get("output_index") == 0]
    b = [d for d in events if d.get("output_index") == 1]
    start = events.index(a[0])
    rest = [d for d in events if d not in a and d not in b]
    mixed = [d for pair in zip(a, b) for d in pair]
    end = next(d for d in rest if d["type"] == "response.completed")
    cut = {**end, "type": "response.incomplete", "response": {**end["response"], "status": "incomplete"}}
    if how in ("no-index", "shared-index"):
        mixed = [{k: v for k, v in d.items() if k != "output_index"} for d in mixed]
        if how == "shared-index":
            mixed = [{**d, "output_index": 0} for d in mixed]
        return rest[:start] + mixed + rest[start:]
    if how == "done-first":  # the second call's .done comes before its .added
        b_done = b[-1]
        mixed = [d for d in mixed if d is not b_done]
        return rest[:start] + [b_done] + mixed + rest[start:]
    calls = [d for d in mixed if how != "cut-second" or d is not b[-1]]
    if how == "cut-both":
        calls = calls[: max(1, min(cut_at, len(calls) - 1))]
    if how == "stream-ends":
        return rest[:start] + calls[: max(1, min(cut_at, len(calls) - 1))]
    return rest[:start] + calls + [cut]


def _names_back(d: dict, names: dict[tuple[Any, str], tuple[Any, str]]) -> dict:
    """Event ``d`` with the call names of ``names`` (``(namespace, name)`` -> the client's) in its
    item, or in a ``function_call_arguments.done``'s ``name``."""
    item = d.get("item")
    if isinstance(item, dict) and (item.get("namespace"), item.get("name")) in names:
        namespace, name = names[(item.get("namespace"), item.get("name"))]
        item = {**{k: v for k, v in item.items() if k != "namespace"}, "name": name}
        return {**d, "item": item if namespace is None else {**item, "namespace": namespace}}
    if d.get("type") == "response.function_call_arguments.done" and "name" in d:
        flat = {name: back[1] for (_, name), back in names.items()}
        return {**d, "name": flat.get(d["name"], d["name"])}
    return d


UPSTREAM_NAMES = {(None, "run_exec"): (None, "exec_command"), ("mcp__github__", "open_issue"): CLIENT_NAMES[1]}


@settings(max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100")), deadline=None)
@given(how=st.sampled_from(GIVE_UPS), cut_at=st.integers(1, 12), named=st.booleans(), seed=st.integers(0, 2**16))
def test_a_call_given_up_reaches_the_client_under_its_own_name_and_nothing_else_changes(how, cut_at, named, seed):
    """However a stream's call repair is given up (events their index cannot tell apart, a
    response or stream cut off before a call's end, a ``.done`` before its ``.added``), a call
    under an upstream alias of the client's own tool reaches the client under the client's name
    and namespace (a transport spelling the client never declared is no call it can run), and
    every call event is otherwise the upstream's: arguments, ids and order as they came."""
    events = _events("stream-upstream-names.sse")
    if named:  # the upstream also names the call in function_call_arguments.done
        events = [
            {**d, "name": "run_exec" if d["item_id"] == "fc_fx05a" else "open_issue"}
            if d["type"] == "response.function_call_arguments.done"
            else d
            for d in events
        ]
    upstream = _stream(_given_up(events, how, cut_at))
    rw, _ = _rewriter(Plan(rename_map=UPSTREAM_RENAME))
    out = drive(rw, harness.random_chunks(upstream, random.Random(seed), 1, 200))
    calls = ("response.output_item.", "response.function_call_arguments.")
    sent = [d for d in datas(out) if isinstance(d, dict) and d["type"].startswith(calls)]
    came = [d for d in datas(upstream) if isinstance(d, dict) and d["type"].startswith(calls)]
    assert sent == [_names_back(d, UPSTREAM_NAMES) for d in came]
    for d in datas(out):
        for item in [d.get("item"), *(d.get("response") or {}).get("output", [])]:
            if isinstance(item, dict) and "name" in item:
                assert (item.get("namespace"), item["name"]) in CLIENT_NAMES
    assert b"run_exec" not in out and b"open_issue" not in out


def test_a_call_given_up_under_another_agents_name_goes_as_it_came():
    """A profile's alias is another agent's tool name (a vocabulary name: ``shell``), whose keys
    and units the model may have used: only the whole repair may name it back. Given up (the
    response cut before its end), the call goes to the client exactly as the upstream sent it."""
    events = [
        d
        for d in _events("stream-upstream-names.sse")
        if d.get("output_index") != 1 and not (d["type"] == "response.output_item.done" and d["output_index"] == 0)
    ]
    raw = orjson.dumps(events).replace(b'"run_exec"', b'"shell"')
    events = orjson.loads(raw)
    end = next(d for d in events if d["type"] == "response.completed")
    events[events.index(end)] = {**end, "type": "response.incomplete"}
    upstream = _stream(events)
    rw, _ = _rewriter(Plan(rename_map={"exec_command": "shell"}))
    out = drive(rw, [upstream])
    calls = [d for d in datas(out) if d["type"].startswith("response.output_item.")]
    assert [d["item"]["name"] for d in calls] == ["shell"]
    kinds = ("response.output_item.", "response.function_call_arguments.")
    assert [e.raw for e in events_of(out) if (e.event or "").startswith(kinds)] == [
        e.raw for e in events_of(upstream) if (e.event or "").startswith(kinds)
    ]
    assert rw.unrepaired


@pytest.mark.parametrize("at", ["response.function_call_arguments.delta", "response.function_call_arguments.done"])
def test_a_call_let_go_at_a_stall_is_named_back_in_every_later_event(at):
    """The stall bound gives up the held call (``let_go``) before its ``output_item.done``: it
    goes as it came but for the alias this flow sent, named back in what was held, in its later
    events and in the echo (Codex reads the call from ``output_item.done``), and the rewrite goes
    on to the end (the echo). Was: the rest passed through, aliases and all."""
    events = _events("stream-upstream-names.sse")
    second = [d for d in events if d.get("output_index") == 1]
    cut = events.index(next(d for d in second if d["type"] == at))
    upstream = _stream(events)
    split = len(_stream(events[:cut]))
    rw, _ = _rewriter(Plan(rename_map=UPSTREAM_RENAME))
    out = b"".join(rw.feed(upstream[:split]))
    assert rw.has_held()
    out += b"".join(rw.let_go("the upstream sent no byte for 31.0 s"))
    assert not rw.has_held() and rw.error is None
    out += b"".join(rw.feed(upstream[split:])) + b"".join(rw.finish())
    assert b"run_exec" not in out and b"open_issue" not in out
    for kind in ("response.output_item.added", "response.output_item.done"):
        assert [(d["item"].get("namespace"), d["item"]["name"]) for d in by_type(out, kind)] == CLIENT_NAMES
    assert [(i.get("namespace"), i["name"]) for i in completed(out)["output"]] == CLIENT_NAMES
    assert len(rw.unrepaired) == 1 and rw.unrepaired[0].startswith("the upstream sent no byte for 31.0 s while")
    assert rw.unrepaired[0].endswith("; named back to mcp__github__create_issue"), rw.unrepaired


def test_a_parallel_wrapper_let_go_at_a_stall_ends_as_it_began():
    """A ``multi_tool_use.parallel`` call let go at a stall went out as one item: its
    ``output_item.done`` goes the same way. Was: the ``.done`` was expanded into two items, the
    first at the wrapper's ``output_index`` (used twice), the wrapper never ending."""
    wrapper = orjson.dumps(
        {
            "tool_uses": [
                {"recipient_name": "functions.exec_command", "parameters": {"cmd": "ls"}},
                {"recipient_name": "functions.exec_command", "parameters": {"cmd": "pwd"}},
            ]
        }
    ).decode()
    item = {"type": "function_call", "id": "fc_w", "status": "in_progress", "call_id": "call_w"}
    item = {**item, "name": "multi_tool_use.parallel", "arguments": ""}
    done = {**item, "status": "completed", "arguments": wrapper}
    events = [
        {
            "type": "response.created",
            "sequence_number": 0,
            "response": {"id": "r", "status": "in_progress", "output": []},
        },
        {"type": "response.output_item.added", "sequence_number": 1, "output_index": 0, "item": item},
        {
            "type": "response.function_call_arguments.delta",
            "sequence_number": 2,
            "item_id": "fc_w",
            "output_index": 0,
            "delta": wrapper[:20],
        },
        {
            "type": "response.function_call_arguments.delta",
            "sequence_number": 3,
            "item_id": "fc_w",
            "output_index": 0,
            "delta": wrapper[20:],
        },
        {
            "type": "response.function_call_arguments.done",
            "sequence_number": 4,
            "item_id": "fc_w",
            "output_index": 0,
            "arguments": wrapper,
        },
        {"type": "response.output_item.done", "sequence_number": 5, "output_index": 0, "item": done},
        {
            "type": "response.completed",
            "sequence_number": 6,
            "response": {"id": "r", "status": "completed", "output": [done]},
        },
    ]
    upstream = _stream(events)
    split = len(_stream(events[:3]))
    rw, _ = _rewriter(Plan())
    out = b"".join(rw.feed(upstream[:split])) + b"".join(rw.let_go("the upstream sent no byte for 31.0 s"))
    out += b"".join(rw.feed(upstream[split:])) + b"".join(rw.finish())
    assert out == upstream
    control, _ = _rewriter(Plan())
    assert len(by_type(drive(control, [upstream]), "response.output_item.done")) == 2  # expanded when whole


# -- a hosted tool search's loaded tools, and text that names an event ------------------------------


def _loaded(name: str, namespace: str | None = None) -> dict[str, Any]:
    """A ``tool_search_output`` output item that loaded one function (in ``namespace``, if any)."""
    tool: dict[str, Any] = {"type": "function", "name": name, "parameters": {"type": "object"}}
    if namespace is not None:
        tool = {"type": "namespace", "name": namespace, "description": "GitHub", "tools": [tool]}
    return {"type": "tool_search_output", "id": "tso_1", "execution": "server", "status": "completed", "tools": [tool]}


@pytest.mark.parametrize(
    ("namespace", "upstream", "client"),
    [(None, "run_exec", "exec_command"), ("mcp__github__", "open_issue", "create_issue")],
)
@pytest.mark.parametrize("framing", ["json", "sse"])
def test_the_tools_a_tool_search_loaded_are_named_back(namespace, upstream, client, framing):
    """A ``tool_search_output`` item lists the loaded definitions under the names the upstream
    knows; the client keeps them and sends them back as declared tools (openai-python
    ``ResponseToolSearchOutputItem``), so each gets the client's name, in the JSON answer, both
    stream items and the echo. Was a fault: the alias reached the client there, and a later
    turn read it back as a tool the client declared."""
    plan = Plan(rename_map=UPSTREAM_RENAME)
    response = {"id": "resp_1", "object": "response", "status": "completed", "output": [_loaded(upstream, namespace)]}
    if framing == "json":
        assert DIALECT.rewrite_response(response, context(Recorder(CODEX, plan), plan)) is True
        items = [response["output"][0]]
    else:
        item = response["output"][0]
        events = [
            {"type": "response.output_item.added", "output_index": 0, "item": item, "sequence_number": 0},
            {"type": "response.output_item.done", "output_index": 0, "item": item, "sequence_number": 0},
            {"type": "response.completed", "response": response, "sequence_number": 0},
        ]
        out, _ = rewrite_stream(_stream(events), plan=plan)
        items = [d["item"] for d in datas(out) if "item" in d] + completed(out)["output"]
        assert len(items) == 3
    for item in items:
        tool = item["tools"][0]
        if namespace is None:
            assert tool["name"] == client
        else:
            assert (tool["name"], tool["tools"][0]["name"]) == (namespace, client)


def test_a_completed_response_whose_text_names_an_item_event_is_read():
    """The shortcut past an item's end (its text is no call's) must not take a
    ``response.completed`` whose message text says ``response.output_item.done``: its echo still
    gets the client's tool names. Was a fault: it passed unread, the alias in its ``tools``."""
    plan = Plan(rename_map=UPSTREAM_RENAME)
    text = "Each item ends with a response.output_item.done event."
    message = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }
    tools = [{"type": "function", "name": "run_exec", "parameters": {"type": "object"}}]
    response = {"id": "resp_1", "status": "completed", "output": [message], "tools": tools}
    out, _ = rewrite_stream(
        _stream([{"type": "response.completed", "response": response, "sequence_number": 0}]), plan=plan
    )
    assert [t["name"] for t in completed(out)["tools"]] == ["exec_command"]


@pytest.mark.parametrize("seed", range(4))
def test_a_streamed_call_with_no_id_gets_one_call_id_everywhere(seed):
    """A call with neither ``id`` nor ``call_id`` gets a call_id (BR-20): the same one in its
    ``output_item.added``, its ``.done`` and the ``response.completed`` echo, from one decision.
    Was a fault: each place was decided again, under a new invented id (three ids, four
    decisions for one call)."""
    item = {"type": "function_call", "status": "completed", "name": "exec_command", "arguments": '{"cmd":"ls"}'}
    events = [
        {
            "type": "response.output_item.added",
            "output_index": 0,
            "item": {**item, "arguments": ""},
            "sequence_number": 0,
        },
        {
            "type": "response.function_call_arguments.delta",
            "output_index": 0,
            "delta": item["arguments"],
            "sequence_number": 0,
        },
        {"type": "response.output_item.done", "output_index": 0, "item": item, "sequence_number": 0},
        {
            "type": "response.completed",
            "response": {"id": "r", "status": "completed", "output": [item]},
            "sequence_number": 0,
        },
    ]
    data = _stream(events)
    out, rec = rewrite_stream(data, random_chunks(data, random.Random(seed)))
    ids = [d["item"]["call_id"] for d in datas(out) if "item" in d] + [i["call_id"] for i in completed(out)["output"]]
    assert len(ids) == 3 and len(set(ids)) == 1 and ids[0]
    assert len(rec.decisions) == 1


# -- calls the upstream sent without ids ---------------------------------------------------------


def _wrapper(uses: list[str], item_id: str | None = None) -> dict[str, Any]:
    """A ``multi_tool_use.parallel`` call item with no call_id, each use an exec_command."""
    tool_uses = [{"recipient_name": "functions.exec_command", "parameters": {"cmd": cmd}} for cmd in uses]
    item = {
        "type": "function_call",
        "status": "completed",
        "name": "multi_tool_use.parallel",
        "arguments": orjson.dumps({"tool_uses": tool_uses}).decode(),
    }
    return item if item_id is None else {**item, "id": item_id}


def _events_of_items(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each item's added / delta / done events, then response.completed with them all."""
    events: list[dict[str, Any]] = []
    for k, item in enumerate(items):
        ref = {"item_id": item["id"]} if "id" in item else {}
        events.append({"type": "response.output_item.added", "output_index": k, "item": {**item, "arguments": ""}})
        events.append(
            {"type": "response.function_call_arguments.delta", "output_index": k, "delta": item["arguments"], **ref}
        )
        events.append({"type": "response.output_item.done", "output_index": k, "item": item})
    events.append({"type": "response.completed", "response": {"id": "r", "status": "completed", "output": items}})
    return [{**e, "sequence_number": 0} for e in events]


@pytest.mark.parametrize("framing", ["json", "sse"])
def test_calls_of_wrappers_without_ids_each_get_their_own_call_id(framing):
    """Two parallel wrappers with no call_id (and the model's own ``call_0`` beside them): every
    call the client gets has its own call_id, so each output it sends back pairs with its call.
    Was a fault: each wrapper's calls were ``call_0``, ``call_1`` (four commands, two ids)."""
    own = {
        "type": "function_call",
        "status": "completed",
        "call_id": "call_0",
        "name": "exec_command",
        "arguments": '{"cmd":"whoami"}',
    }
    if framing == "json":
        output = [_wrapper(["ls", "pwd"]), _wrapper(["rm -f build/cache.db", "date"]), {**own, "id": "fc_own"}]
        response = {"id": "r", "status": "completed", "output": output}
        assert DIALECT.rewrite_response(response, context(Recorder())) is True
        calls = [(i["call_id"], orjson.loads(i["arguments"])["cmd"]) for i in response["output"]]
    else:
        items = [
            _wrapper(["ls", "pwd"], "fc_w1"),
            _wrapper(["rm -f build/cache.db", "date"], "fc_w2"),
            {**own, "id": "fc_own"},
        ]
        out, _ = rewrite_stream(_stream(_events_of_items(items)))
        calls = [
            (d["item"]["call_id"], orjson.loads(d["item"]["arguments"])["cmd"])
            for d in by_type(out, "response.output_item.done")
        ]
        echo = [(i["call_id"], orjson.loads(i["arguments"])["cmd"]) for i in completed(out)["output"]]
        assert echo == calls
    assert [cmd for _, cmd in calls] == ["ls", "pwd", "rm -f build/cache.db", "date", "whoami"]
    assert len({call_id for call_id, _ in calls}) == 5 and all(call_id for call_id, _ in calls)


@pytest.mark.parametrize("framing", ["json", "sse"])
@pytest.mark.parametrize("second", ["echo done >> notes.txt", "date"])
def test_two_calls_with_an_empty_call_id_get_two_ids(framing, second):
    """``"call_id": ""`` is no id (BR-20): two such calls, the same one twice (two appends the
    model meant) or two others, get two ids. Was a fault: the empty string was taken for a key,
    so the second call took the first's decision and id, or kept ``""``."""
    items = [
        {
            "type": "function_call",
            "status": "completed",
            "call_id": "",
            "name": "exec_command",
            "arguments": orjson.dumps({"cmd": cmd}).decode(),
        }
        for cmd in ("echo done >> notes.txt", second)
    ]
    if framing == "json":
        response = {"id": "r", "status": "completed", "output": copy.deepcopy(items)}
        DIALECT.rewrite_response(response, context(Recorder()))
        ids = [i["call_id"] for i in response["output"]]
    else:
        out, _ = rewrite_stream(_stream(_events_of_items(items)))
        ids = [d["item"]["call_id"] for d in by_type(out, "response.output_item.done")]
        assert [i["call_id"] for i in completed(out)["output"]] == ids
    assert len(set(ids)) == 2 and all(ids), ids


@pytest.mark.parametrize("how", ["stall", "done-alone"])
def test_a_call_with_no_id_let_go_has_its_alias_named_back(how):
    """A call with neither id, let go (the hold's stall bound; its ``.done`` without its
    ``.added``), goes as it came but for an upstream alias named back, in each item and the
    echo alike. Was a fault: only ids found a let-go decision, so the alias reached the client
    in the items (and the echo showed another name and an invented id)."""
    plan = Plan(rename_map=UPSTREAM_RENAME)
    item = {"type": "function_call", "status": "completed", "name": "run_exec", "arguments": '{"cmd":"ls"}'}
    events = _events_of_items([item])
    rw, _ = _rewriter(plan)
    if how == "stall":
        out = b"".join(rw.feed(_stream(events[:2]))) + b"".join(rw.let_go("the upstream sent no byte for 31.0 s"))
        out += b"".join(rw.feed(_stream(events)[len(_stream(events[:2])) :])) + b"".join(rw.finish())
    else:
        out = drive(rw, [_stream(events[2:])])
    items = [d["item"] for d in datas(out) if isinstance(d, dict) and "item" in d] + completed(out)["output"]
    assert [(i["name"], i.get("call_id")) for i in items] == [("exec_command", None)] * len(items), items


def test_a_call_with_no_id_and_empty_arguments_before_more_output_stays_as_sent():
    """BR-22: a stream's call with empty arguments waits for the response's end; another output
    first leaves them as sent, a call with no id as one with ids. Was: ``{}`` written."""
    call = {"type": "function_call", "status": "completed", "name": "exec_command", "arguments": ""}
    message = {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": []}
    events = _events_of_items([call])[:-1] + [
        {"type": "response.output_item.added", "output_index": 1, "item": message, "sequence_number": 0},
        {
            "type": "response.completed",
            "response": {"id": "r", "status": "completed", "output": [call, message]},
            "sequence_number": 0,
        },
    ]
    out, _ = rewrite_stream(_stream(events))
    assert [d["item"]["arguments"] for d in by_type(out, "response.output_item.done")] == [""]


@pytest.mark.parametrize("call_id", [None, ""])
def test_a_call_with_no_id_let_go_ends_as_it_went(call_id):
    """A declared call with no id (none, or ``""``) let go at a stall goes as it came to its end:
    its later ``.done`` is the let-go call's, not a new call to decide (which gave it an invented
    id the echo, showing it as it went, does not have)."""
    item = {"type": "function_call", "status": "completed", "name": "exec_command", "arguments": '{"cmd":"ls"}'}
    if call_id is not None:
        item["call_id"] = call_id
    events = _events_of_items([item])
    rw, rec = _rewriter(Plan())
    head = _stream(events[:2])
    out = b"".join(rw.feed(head)) + b"".join(rw.let_go("the upstream sent no byte for 31.0 s"))
    out += b"".join(rw.feed(_stream(events)[len(head) :])) + b"".join(rw.finish())
    [done] = by_type(out, "response.output_item.done")
    assert done["item"].get("call_id") == call_id == completed(out)["output"][0].get("call_id")


@pytest.mark.parametrize("echo_id", ["fc_B", None])
@pytest.mark.parametrize("name", ["exec_command", "Exec_Command"])
def test_an_echo_that_lists_a_call_under_another_item_id_shows_it_as_it_went(echo_id, name):
    """Some servers give a call another item id (or none) in ``response.completed`` than in its
    events: the echo finds the call by its call_id and shows it as its events went, its call_id
    kept (a declared call needing nothing, or renamed once). Was a fault: decided again, its
    call_id counted twice and an invented one put in the echo only."""
    item = {
        "type": "function_call",
        "status": "completed",
        "id": "fc_A",
        "call_id": "call_1",
        "name": name,
        "arguments": '{"cmd":"ls"}',
    }
    echoed = {k: v for k, v in item.items() if k != "id"}
    if echo_id is not None:
        echoed["id"] = echo_id
    events = _events_of_items([item])
    events[-1] = {
        "type": "response.completed",
        "response": {"id": "r", "status": "completed", "output": [echoed]},
        "sequence_number": 0,
    }
    out, rec = rewrite_stream(_stream(events))
    [done] = by_type(out, "response.output_item.done")
    [final] = completed(out)["output"]
    assert (
        (final["call_id"], final["name"])
        == (done["item"]["call_id"], done["item"]["name"])
        == ("call_1", "exec_command")
    )
    assert len(rec.decisions) == 1


_PHASE_IDS = st.sampled_from(["fc_1", "fc_2", None])


@settings(max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100")), deadline=None)
@given(
    added_id=_PHASE_IDS,
    delta_id=_PHASE_IDS,
    done_id=st.sampled_from(["fc_1", "fc_2", None, "null"]),
    echo_id=_PHASE_IDS,
    foreign=st.booleans(),
    stored=st.booleans(),
)
def test_a_call_whose_phases_carry_other_item_ids_is_one_call_everywhere(
    added_id, delta_id, done_id, echo_id, foreign, stored
):
    """One call whose ``.added``, argument events, ``.done`` and echo each carry an item id of
    their own, none, or ``"id": null`` (vLLM before vllm-project/vllm#44608 sent the ``.done``
    so; some servers mint ids only at the end): the client sees one call — the same name in
    every item and the echo, the same call_id in the ``.done`` and the echo (the upstream's),
    its arguments as they add up (an argument event naming an item id neither of the call's items
    has is another call's, and goes as sent) — and the record one decision. Was a fault: the ``.added`` and
    the echo decided again (``shell`` there, ``exec_command`` in the ``.done``), the call_id
    counted twice and an invented one given to the ``.added`` and the echo."""
    args = '{"command":["bash","-lc","echo hi"]}' if foreign else '{"cmd":"ls"}'
    base = {"type": "function_call", "status": "completed", "call_id": "call_1"}
    base["name"] = "shell" if foreign else "exec_command"

    def with_id(item: dict[str, Any], value: Any) -> dict[str, Any]:
        out = dict(item)
        if value == "null":
            out["id"] = None
        elif value is not None:
            out["id"] = value
        return out

    delta: dict[str, Any] = {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": args}
    if delta_id is not None:
        delta["item_id"] = delta_id
    events = [
        {"type": "response.output_item.added", "output_index": 0, "item": with_id({**base, "arguments": ""}, added_id)},
        delta,
        {"type": "response.output_item.done", "output_index": 0, "item": with_id({**base, "arguments": args}, done_id)},
        {
            "type": "response.completed",
            "response": {
                "id": "r",
                "status": "completed",
                "store": stored,
                "output": [with_id({**base, "arguments": args}, echo_id)],
            },
        },
    ]
    data = _stream([{**e, "sequence_number": k} for k, e in enumerate(events)])
    resolver = Recorder(CODEX, Plan())
    flow = dataclasses.replace(context(resolver, Plan(), flow_key="flow-phases"), stored=stored)
    rw = DIALECT.stream_rewriter(flow)
    out = drive(rw, [data])
    [added] = by_type(out, "response.output_item.added")
    [done] = by_type(out, "response.output_item.done")
    [final] = completed(out)["output"]
    assert added["item"]["name"] == done["item"]["name"] == final["name"] == "exec_command", out
    assert done["item"]["call_id"] == final["call_id"] == "call_1"
    assert added["item"].get("call_id") == "call_1"
    joined = "".join(d["delta"] for d in by_type(out, "response.function_call_arguments.delta"))
    assert orjson.loads(done["item"]["arguments"]) == orjson.loads(final["arguments"])
    item_ids = {i for i in (added_id, done_id) if i not in (None, "null")}
    if delta_id is None or not item_ids or delta_id in item_ids:
        assert orjson.loads(joined) == orjson.loads(done["item"]["arguments"])
    else:  # an argument event naming an item neither of the call's items is: another's, as sent
        assert joined == args
    assert len(resolver.decisions) == 1, resolver.decisions
    if not foreign and done_id == echo_id:
        assert out == data  # nothing to change: as the upstream sent it
