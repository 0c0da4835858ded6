"""The OpenAI Chat Completions dialect (``toolvocab.dialects.openai_chat``): detection, declared tools,
request-side plan (every name slot), whole JSON answers and the SSE stream rewriter with the
upstream quirks of wire-formats §2.5 / §6 and BR-18, BR-20, BR-21.

Fixtures are synthetic bodies in ``tests/fixtures/openai_chat/`` (see its README). Streams are
fed whole and over random chunk splits; assertions are byte-level where the bytes must not
change and structural (as a client assembles the deltas) where they must.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import orjson
import pytest

import harness
from harness import dialects
from harness.dialects import Fixtures
from harness.dialects import context
from harness.dialects import drive
from harness.dialects import sse_events
from toolvocab.dialects import detect
from toolvocab.dialects.openai_chat import DIALECT
from toolvocab.dialects.openai_chat import ChatStream
from toolvocab.dialects.sse import SSEEvent
from toolvocab.engine.ids import stable_call_id
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.models import Action
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import Plan

FX = Fixtures("openai_chat")
QWEN = "request-qwen-code.json"
OPENCODE = "request-opencode.json"
TC_ID = re.compile(r"^tc_[0-9a-f]{24}$")

load_json, load_bytes = FX.json, FX.bytes
events_of = sse_events


def random_chunks(data: bytes, rnd: random.Random, lo: int = 1, hi: int = 48) -> list[bytes]:
    return harness.random_chunks(data, rnd, lo, hi)


class Recorder(dialects.Recorder):
    """A resolver bound to a fixture request's declared tools (and a plan's reverse map) that
    remembers every call and decision, as the addon's per-flow resolver does."""

    def __init__(self, request: str | dict = QWEN, plan: Plan | None = None) -> None:
        body = load_json(request) if isinstance(request, str) else request
        super().__init__(Toolset(DIALECT.declared_tools(body)), plan)


def rewrite_stream(
    data: bytes,
    chunks: list[bytes] | None = None,
    *,
    request: str | dict = QWEN,
    plan: Plan | None = None,
    flow_key: str = "flow-chat-1",
    resolver: Any = None,
    expect_error: bool = False,
) -> tuple[bytes, Any]:
    plan = plan or Plan()
    resolver = resolver or Recorder(request, plan)
    rw = DIALECT.stream_rewriter(context(resolver, plan, flow_key=flow_key))
    assert isinstance(rw, ChatStream)
    out = drive(rw, chunks if chunks is not None else [data])
    if not expect_error:
        assert rw.error is None, rw.error
    return out, resolver


# -- what a client sees -------------------------------------------------------------------------


def _sdk_accumulate(acc: dict, delta: dict) -> dict:
    """How the ``openai`` Python SDK accumulates deltas (lib/streaming/_deltas.py): strings are
    concatenated (id and name included), ``index``/``type`` replaced, lists merged by index."""
    for key, value in delta.items():
        if key not in acc or acc[key] is None:
            acc[key] = copy.deepcopy(value)
        elif key in ("index", "type"):
            acc[key] = value
        elif isinstance(acc[key], str) and isinstance(value, str):
            acc[key] += value
        elif isinstance(acc[key], dict) and isinstance(value, dict):
            _sdk_accumulate(acc[key], value)
        elif isinstance(acc[key], list) and isinstance(value, list):
            for entry in value:
                idx = entry["index"]
                existing = next((e for e in acc[key] if e.get("index") == idx), None)
                if existing is None:
                    acc[key].append(copy.deepcopy(entry))
                else:
                    _sdk_accumulate(existing, entry)
    return acc


def tool_deltas(out: bytes) -> dict[tuple[int, int], list[dict]]:
    """Every ``delta.tool_calls`` entry of the stream, grouped by (choice index, call index)."""
    slots: dict[tuple[int, int], list[dict]] = {}
    for event in events_of(out):
        data = event.json()
        if not isinstance(data, dict):
            continue
        for choice in data.get("choices") or ():
            for tc in (choice.get("delta") or {}).get("tool_calls") or ():
                slots.setdefault((choice.get("index", 0), tc["index"]), []).append(tc)
    return slots


def sdk_calls(out: bytes, choice: int = 0) -> list[dict]:
    """The tool calls as the OpenAI Python SDK assembles them: [{id, type, name, arguments}]."""
    acc: dict = {}
    for event in events_of(out):
        data = event.json()
        if not isinstance(data, dict):
            continue
        for ch in data.get("choices") or ():
            if ch.get("index", 0) == choice and isinstance(ch.get("delta"), dict):
                _sdk_accumulate(acc, ch["delta"])
    return [
        {
            "id": c.get("id"),
            "type": c.get("type"),
            "name": (c.get("function") or {}).get("name"),
            "arguments": (c.get("function") or {}).get("arguments"),
        }
        for c in sorted(acc.get("tool_calls") or [], key=lambda c: c["index"])
    ]


def assert_conformant(out: bytes) -> None:
    """OpenAI's own shape: per index, the first delta carries a non-empty id, the type and the
    whole non-empty name; later deltas carry neither id, type nor name."""
    for key, entries in tool_deltas(out).items():
        first, rest = entries[0], entries[1:]
        assert isinstance(first.get("id"), str) and first["id"], (key, first)
        assert first.get("type") == "function", (key, first)
        assert isinstance(first.get("function", {}).get("name"), str) and first["function"]["name"], (key, first)
        for entry in rest:
            assert "id" not in entry and "type" not in entry, (key, entry)
            assert "name" not in (entry.get("function") or {}), (key, entry)


def has_tool_calls(event: SSEEvent) -> bool:
    data = event.json()
    return isinstance(data, dict) and any(
        isinstance(c, dict) and (c.get("delta") or {}).get("tool_calls") for c in data.get("choices") or ()
    )


def without_tool_calls(data: dict) -> dict:
    data = copy.deepcopy(data)
    for choice in data.get("choices") or ():
        (choice.get("delta") or {}).pop("tool_calls", None)
    return data


def assert_only_tool_deltas_changed(upstream: bytes, out: bytes) -> None:
    """Same events in the same order; an event without tool calls is byte-identical; an event
    with tool calls differs at most in ``delta.tool_calls`` and keeps the ``data: `` framing."""
    before, after = events_of(upstream), events_of(out)
    assert len(before) == len(after)
    for b, a in zip(before, after):
        if not has_tool_calls(b):
            assert a.raw == b.raw
        else:
            assert without_tool_calls(a.json()) == without_tool_calls(b.json())
            assert a.raw.startswith(b"data: ") and a.raw.endswith(b"\n\n")


# -- detection, declared tools, system texts ----------------------------------------------------

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


@pytest.mark.parametrize(
    "path",
    ["/v1/chat/completions", "/chat/completions", "/api/v1/chat/completions?x=1", "/v1beta/openai/chat/completions"],
)
def test_matches_chat_completions_paths(path):
    assert DIALECT.matches("POST", path, BODY)
    assert detect("POST", path, BODY) is DIALECT


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("GET", "/v1/chat/completions", BODY),
        ("POST", "/v1/completions", BODY),
        ("POST", "/v1/chat/completions", {"model": "m", "prompt": "hi"}),
        ("POST", "/v1/chat/completions", {"model": "m", "messages": "hi"}),
        ("POST", "/v1/chat/completions", [BODY]),
        ("POST", "/v1/other?next=/chat/completions", BODY),
    ],
)
def test_does_not_match_other_requests(method, path, body):
    assert not DIALECT.matches(method, path, body)


def test_declared_tools_of_qwen_code_request():
    tools = DIALECT.declared_tools(load_json(QWEN))
    names = [t.name for t in tools]
    assert names[0] == "tool_search" and "run_shell_command" in names and "read_file" in names
    assert len(names) == 15
    assert all(t.kind is ToolKind.FUNCTION and t.namespace is None for t in tools)
    shell = next(t for t in tools if t.name == "run_shell_command")
    assert shell.input_schema["required"] == ["command"]
    assert shell.description == "Execute a command line in a shell."


def test_declared_tools_include_custom_and_legacy_functions():
    tools = DIALECT.declared_tools(load_json("request-all-slots.json"))
    assert [(t.name, t.kind) for t in tools] == [
        ("get_weather", ToolKind.FUNCTION),
        ("read_file", ToolKind.FUNCTION),
        ("apply_patch", ToolKind.FREEFORM),
        ("get_weather", ToolKind.FUNCTION),
        ("lookup_stock", ToolKind.FUNCTION),
    ]


def test_legacy_functions_keep_their_description_and_schema_like_tools():
    """A legacy ``functions[]`` entry has the shape of ``tools[].function``: both are read alike
    (the description feeds the ``toolvocab.tools`` export)."""
    fn = {
        "name": "lookup",
        "description": "Looks a thing up.",
        "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
    }
    tool, legacy = DIALECT.declared_tools(
        {"messages": [], "tools": [{"type": "function", "function": fn}], "functions": [fn]}
    )
    assert legacy.description == tool.description == "Looks a thing up."
    assert legacy.input_schema == tool.input_schema == fn["parameters"]


def test_declared_tools_skip_malformed_entries():
    body = {
        "messages": [],
        "tools": [5, {"type": "function"}, {"type": "function", "function": {"name": 3}}, {"function": {"name": "ok"}}],
        "functions": ["x", {"name": None}],
    }
    assert [t.name for t in DIALECT.declared_tools(body)] == ["ok"]


def test_system_texts_read_system_and_developer_messages():
    body = load_json("request-all-slots.json")
    body["messages"].append(
        {"role": "system", "content": [{"type": "text", "text": "part one"}, {"type": "image_url"}]}
    )
    assert DIALECT.system_texts(body) == [
        "Follow the repository conventions.",
        "A second system text that must stay as it is.",
        "part one",
    ]


@pytest.mark.parametrize("stream,expected", [(True, True), (False, False), (None, False), ("true", False)])
def test_wants_stream(stream, expected):
    body = dict(BODY)
    if stream is not None:
        body["stream"] = stream
    assert DIALECT.wants_stream("/v1/chat/completions", body) is expected


# -- request side: every name slot --------------------------------------------------------------

RENAME = {"get_weather": "weather_lookup", "lookup_stock": "stock_quote", "apply_patch": "patch_tool"}


def test_apply_request_renames_every_function_slot_and_adds_the_sentence():
    body = load_json("request-all-slots.json")
    expected = copy.deepcopy(body)
    changed = DIALECT.apply_request(body, Plan(rename_map=RENAME, prompt_sentence="Use only declared tool names."))
    assert changed is True
    # tools[].function.name (the custom tool keeps its name: never renamed)
    expected["tools"][0]["function"]["name"] = "weather_lookup"
    # legacy functions[].name
    expected["functions"][0]["name"] = "weather_lookup"
    expected["functions"][1]["name"] = "stock_quote"
    # tool_choice.function.name and legacy function_call.name
    expected["tool_choice"]["function"]["name"] = "weather_lookup"
    expected["function_call"]["name"] = "weather_lookup"
    # transcript: assistant tool_calls (function only), legacy function_call, role "function"
    expected["messages"][3]["tool_calls"][0]["function"]["name"] = "weather_lookup"
    expected["messages"][6]["function_call"]["name"] = "weather_lookup"
    expected["messages"][7]["name"] = "weather_lookup"
    # the sentence goes into the first system/developer message only
    expected["messages"][0]["content"] = "Follow the repository conventions.\n\nUse only declared tool names."
    assert body == expected
    assert body["tools"][2] == {
        "type": "custom",
        "custom": {"name": "apply_patch", "description": "Free-text patch.", "format": {"type": "text"}},
    }
    assert body["messages"][3]["tool_calls"][1]["custom"]["name"] == "apply_patch"


def test_apply_request_renames_allowed_tools_entries_but_not_custom_ones():
    body = load_json("request-all-slots.json")
    body["tool_choice"] = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "required",
            "tools": [
                {"type": "function", "function": {"name": "get_weather"}},
                {"type": "function", "function": {"name": "read_file"}},
                {"type": "custom", "custom": {"name": "apply_patch"}},
            ],
        },
    }
    assert DIALECT.apply_request(body, Plan(rename_map=RENAME))
    assert body["tool_choice"]["allowed_tools"]["tools"] == [
        {"type": "function", "function": {"name": "weather_lookup"}},
        {"type": "function", "function": {"name": "read_file"}},
        {"type": "custom", "custom": {"name": "apply_patch"}},
    ]


def test_apply_request_never_renames_a_custom_tool_choice():
    body = load_json("request-all-slots.json")
    body["tool_choice"] = {"type": "custom", "custom": {"name": "apply_patch"}}
    DIALECT.apply_request(body, Plan(rename_map=RENAME))
    assert body["tool_choice"] == {"type": "custom", "custom": {"name": "apply_patch"}}


@pytest.mark.parametrize("choice", ["auto", "none", "required"])
def test_apply_request_keeps_string_tool_choice(choice):
    body = load_json("request-all-slots.json")
    body["tool_choice"] = choice
    DIALECT.apply_request(body, Plan(rename_map=RENAME))
    assert body["tool_choice"] == choice


def test_apply_request_with_empty_plan_changes_nothing():
    body = load_json("request-all-slots.json")
    before = copy.deepcopy(body)
    assert DIALECT.apply_request(body, Plan()) is False
    assert body == before


def test_apply_request_rename_without_sentence_leaves_system_text():
    body = load_json(QWEN)
    before = copy.deepcopy(body)
    assert DIALECT.apply_request(body, Plan(rename_map={"run_shell_command": "bash"}))
    assert body["messages"][0] == before["messages"][0]
    assert body["messages"][2]["tool_calls"][0]["function"]["name"] == "bash"
    assert [t["function"]["name"] for t in body["tools"]].count("bash") == 1


def test_apply_request_sentence_into_a_new_system_message_when_there_is_none():
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "tools": load_json(OPENCODE)["tools"]}
    assert DIALECT.apply_request(body, Plan(prompt_sentence="S."))
    assert body["messages"] == [{"role": "system", "content": "S."}, {"role": "user", "content": "hi"}]


def test_apply_request_sentence_appended_to_system_content_parts():
    body = {
        "messages": [
            {"role": "system", "content": [{"type": "text", "text": "Be brief."}]},
            {"role": "user", "content": "hi"},
        ]
    }
    assert DIALECT.apply_request(body, Plan(prompt_sentence="S."))
    assert body["messages"][0]["content"] == [{"type": "text", "text": "Be brief."}, {"type": "text", "text": "S."}]
    assert len(body["messages"]) == 2


@pytest.mark.parametrize("content,expected", [(None, "S."), ("", "S."), ("Rules.", "Rules.\n\nS.")])
def test_apply_request_sentence_into_empty_or_string_system_content(content, expected):
    body = {"messages": [{"role": "user", "content": "hi"}, {"role": "system", "content": content}]}
    assert DIALECT.apply_request(body, Plan(prompt_sentence="S."))
    assert body["messages"][1]["content"] == expected
    assert len(body["messages"]) == 2


def test_apply_request_keeps_the_prompt_of_real_qwen_request_apart_from_the_sentence():
    body = load_json(QWEN)
    before = copy.deepcopy(body)
    assert DIALECT.apply_request(body, Plan(prompt_sentence="Call tools only by the exact names declared."))
    assert (
        body["messages"][0]["content"]
        == before["messages"][0]["content"] + "\n\nCall tools only by the exact names declared."
    )
    assert body["messages"][1:] == before["messages"][1:]
    assert {k: v for k, v in body.items() if k != "messages"} == {k: v for k, v in before.items() if k != "messages"}


# -- whole JSON answers -------------------------------------------------------------------------


def test_rewrite_response_renames_fixes_ids_and_serializes_object_arguments():
    body = load_json("response-foreign.json")
    before = copy.deepcopy(body)
    rec = Recorder(QWEN)
    flow_key = "flow-json-1"
    assert DIALECT.rewrite_response(body, context(rec, flow_key=flow_key)) is True
    calls = body["choices"][0]["message"]["tool_calls"]
    # Qwen Code's tools, answered with Claude Code's Bash
    assert calls[0] == {
        "id": "call_fx20_a",
        "type": "function",
        "function": {"name": "run_shell_command", "arguments": '{"command":"npm test"}'},
    }
    # BR-20 empty id → stable id; BR-21 object arguments → a JSON string
    assert calls[1]["id"] == stable_call_id("flow-json-1", 1) and TC_ID.match(calls[1]["id"])
    assert calls[1]["function"] == {"name": "read_file", "arguments": '{"file_path":"/repo/tsconfig.json"}'}
    # missing id → stable id at its position; provider prefix stripped
    assert calls[2]["id"] == stable_call_id("flow-json-1", 2)
    assert calls[2]["function"] == {"name": "glob", "arguments": '{"pattern":"*.json"}'}
    # nothing else moved
    msg = body["choices"][0]["message"]
    assert {k: v for k, v in msg.items() if k != "tool_calls"} == {
        k: v for k, v in before["choices"][0]["message"].items() if k != "tool_calls"
    }
    assert {k: v for k, v in body.items() if k != "choices"} == {k: v for k, v in before.items() if k != "choices"}
    assert [(d.name, d.action) for d in rec.decisions] == [
        ("Bash", Action.RENAME),
        ("read_file", Action.KEEP),
        ("functions.glob", Action.RENAME),
    ]


def test_rewrite_response_ids_are_deterministic_per_flow_key():
    def ids(key: str) -> list[str]:
        body = load_json("response-foreign.json")
        DIALECT.rewrite_response(body, context(Recorder(QWEN), flow_key=key))
        return [c["id"] for c in body["choices"][0]["message"]["tool_calls"]]

    assert ids("flow-a") == ids("flow-a")
    assert ids("flow-a")[1:] != ids("flow-b")[1:]
    assert ids("flow-a")[0] == ids("flow-b")[0] == "call_fx20_a"  # a real id is never replaced


def test_rewrite_response_two_empty_ids_get_distinct_ids():
    body = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "",
                            "type": "function",
                            "function": {"name": "web_fetch", "arguments": '{"url":"https://a.example","prompt":"x"}'},
                        },
                        {
                            "id": "",
                            "type": "function",
                            "function": {"name": "web_fetch", "arguments": '{"url":"https://b.example","prompt":"y"}'},
                        },
                    ],
                },
            }
        ]
    }
    assert DIALECT.rewrite_response(body, context(Recorder(QWEN), flow_key="f"))
    a, b = (c["id"] for c in body["choices"][0]["message"]["tool_calls"])
    assert a != b and TC_ID.match(a) and TC_ID.match(b)


def test_rewrite_response_duplicate_id_gets_a_new_one():
    body = {
        "choices": [
            {
                "message": {
                    "tool_calls": [
                        {
                            "id": "call_same",
                            "type": "function",
                            "function": {"name": "glob", "arguments": '{"pattern":"a"}'},
                        },
                        {
                            "id": "call_same",
                            "type": "function",
                            "function": {"name": "glob", "arguments": '{"pattern":"b"}'},
                        },
                    ]
                }
            }
        ]
    }
    assert DIALECT.rewrite_response(body, context(Recorder(QWEN), flow_key="f"))
    calls = body["choices"][0]["message"]["tool_calls"]
    assert calls[0]["id"] == "call_same" and calls[1]["id"] == stable_call_id("f", 1)


def test_rewrite_response_legacy_function_call():
    body = load_json("response-legacy-function-call.json")
    assert DIALECT.rewrite_response(body, context(Recorder(QWEN)))
    assert body["choices"][0]["message"]["function_call"] == {
        "name": "run_shell_command",
        "arguments": '{"command":"pwd"}',
    }


def test_rewrite_response_declared_calls_unchanged():
    body = load_json("response-foreign.json")
    calls = body["choices"][0]["message"]["tool_calls"]
    calls[:] = [
        {
            "id": "call_ok",
            "type": "function",
            "function": {"name": "run_shell_command", "arguments": '{"command":"ls"}'},
        }
    ]
    before = copy.deepcopy(body)
    rec = Recorder(QWEN)
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body == before
    assert [d.action for d in rec.decisions] == [Action.KEEP]


def test_rewrite_response_opencode_read_fitted_to_file_path_key():
    body = {
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "call_r",
                            "type": "function",
                            "function": {"name": "Read", "arguments": '{"file_path":"/repo/src/app.ts"}'},
                        },
                    ],
                },
            }
        ]
    }
    assert DIALECT.rewrite_response(body, context(Recorder(OPENCODE)))
    fn = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert fn["name"] == "read" and orjson.loads(fn["arguments"]) == {"filePath": "/repo/src/app.ts"}


def test_rewrite_response_undeclared_unknown_name_left():
    body = {
        "choices": [
            {
                "message": {
                    "tool_calls": [
                        {"id": "call_x", "type": "function", "function": {"name": "teleport", "arguments": "{}"}}
                    ]
                }
            }
        ]
    }
    before = copy.deepcopy(body)
    rec = Recorder(QWEN)
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body == before and rec.decisions[0].action is Action.LEAVE


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"choices": None},
        {"choices": "x"},
        {"choices": [None, 3, {"message": None}, {"message": {"tool_calls": None}}]},
        {
            "choices": [
                {"message": {"tool_calls": [None, {"type": "function"}, {"type": "function", "function": {"name": 4}}]}}
            ]
        },
        {"error": {"message": "bad"}},
    ],
)
def test_rewrite_response_odd_shapes_change_nothing(body):
    before = copy.deepcopy(body)
    changed = DIALECT.rewrite_response(body, context(Recorder(QWEN)))
    if not changed:
        assert body == before


# -- streams: conformant and foreign ------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_conformant_stream_with_declared_calls_is_byte_identical(seed):
    upstream = load_bytes("stream-conformant.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), request=OPENCODE)
    assert out == upstream
    assert [(d.name, d.action) for d in rec.decisions] == [("read", Action.KEEP), ("bash", Action.KEEP)]


@pytest.mark.parametrize("seed", range(40))
def test_qwen_code_answered_bash_is_renamed_to_run_shell_command(seed):
    upstream = load_bytes("stream-foreign-bash.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    # only the name in the first delta of the call changes; every other byte stays
    assert out == upstream.replace(b'"name":"Bash"', b'"name":"run_shell_command"')
    assert sdk_calls(out) == [
        {"id": "call_fx02", "type": "function", "name": "run_shell_command", "arguments": '{"command":"npm test"}'}
    ]
    assert_conformant(out)
    [d] = rec.decisions
    assert (d.name, d.action, d.target, d.call_id) == ("Bash", Action.RENAME, "run_shell_command", "call_fx02")


@pytest.mark.parametrize("seed", range(40))
def test_opencode_answered_read_with_file_path_is_renamed_and_fitted(seed):
    upstream = load_bytes("stream-foreign-read.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), request=OPENCODE)
    assert_only_tool_deltas_changed(upstream, out)
    assert_conformant(out)
    # the fitted arguments go out whole in the first delta; the later fragments are gone
    assert tool_deltas(out)[(0, 0)] == [
        {
            "index": 0,
            "id": "call_fx03",
            "type": "function",
            "function": {"name": "read", "arguments": '{"filePath":"/repo/src/app.ts"}'},
        }
    ]
    assert sdk_calls(out) == [
        {"id": "call_fx03", "type": "function", "name": "read", "arguments": '{"filePath":"/repo/src/app.ts"}'}
    ]
    [d] = rec.decisions
    assert d.action is Action.RENAME and d.target == "read" and d.arguments_after == {"filePath": "/repo/src/app.ts"}
    # the usage-only chunk and [DONE] are untouched
    assert out.endswith(
        upstream[
            upstream.index(
                b'data: {"id":"chatcmpl-fx03","object":"chat.completion.chunk","created":1761000000,"model":"fixture-coder-1","choices":[]'
            ) :
        ]
    )
    assert out.endswith(b"data: [DONE]\n\n")


def test_opencode_answered_bash_in_claude_case_is_renamed_to_bash():
    upstream = load_bytes("stream-foreign-bash.sse")
    out, rec = rewrite_stream(upstream, request=OPENCODE)
    assert sdk_calls(out)[0]["name"] == "bash"
    assert rec.decisions[0].step.value == "normalized"


def test_crlf_stream_is_repaired_with_crlf_framing():
    upstream = load_bytes("stream-foreign-bash.sse").replace(b"\n", b"\r\n")
    for seed in range(10):
        out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
        assert out == upstream.replace(b'"name":"Bash"', b'"name":"run_shell_command"')


# -- streams: upstream quirks -------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_name_split_across_chunks_is_assembled_and_sent_once(seed):
    upstream = load_bytes("stream-name-split.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert [c.name for c in rec.calls] == ["run_shell_command"]  # decided once, on the whole name
    assert rec.decisions[0].action is Action.KEEP
    assert_only_tool_deltas_changed(upstream, out)
    assert_conformant(out)
    assert sdk_calls(out) == [
        {"id": "call_fx04", "type": "function", "name": "run_shell_command", "arguments": '{"command":"make lint"}'}
    ]
    assert out.count(b"run_shell_") == 1 and b'"name":"command"' not in out


def test_foreign_name_split_across_chunks_is_renamed_once():
    upstream = (
        load_bytes("stream-name-split.sse")
        .replace(b'"name":"run_shell_"', b'"name":"Ba"')
        .replace(b'"name":"command"', b'"name":"sh"')
    )
    for seed in range(20):
        out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
        assert [c.name for c in rec.calls] == ["Bash"]
        assert_conformant(out)
        assert sdk_calls(out)[0]["name"] == "run_shell_command"


@pytest.mark.parametrize("seed", range(30))
def test_name_repeated_in_every_chunk_is_sent_once(seed):
    upstream = load_bytes("stream-name-repeated.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert [c.name for c in rec.calls] == ["read_file"]  # not read_fileread_file (BR-18)
    assert_only_tool_deltas_changed(upstream, out)
    assert_conformant(out)
    assert sdk_calls(out) == [
        {"id": "call_fx05", "type": "function", "name": "read_file", "arguments": '{"file_path":"/repo/package.json"}'}
    ]


def test_foreign_name_repeated_in_every_chunk_is_renamed_once():
    upstream = load_bytes("stream-name-repeated.sse").replace(b'"name":"read_file"', b'"name":"Read"')
    out, rec = rewrite_stream(upstream)
    assert [c.name for c in rec.calls] == ["Read"]
    assert_conformant(out)
    assert sdk_calls(out)[0]["name"] == "read_file"
    assert out.count(b'"name":') == 1


def test_name_empty_after_the_first_chunk_assembles_to_the_name():
    upstream = load_bytes("stream-name-empty-later.sse")
    for seed in range(20):
        out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
        assert [c.name for c in rec.calls] == ["glob"]
        assert sdk_calls(out) == [
            {"id": "call_fx06", "type": "function", "name": "glob", "arguments": '{"pattern":"src/**/*.ts"}'}
        ]


def test_foreign_name_with_empty_names_later_is_renamed_and_sent_once():
    upstream = load_bytes("stream-name-empty-later.sse").replace(b'"name":"glob"', b'"name":"GLOB"')
    out, rec = rewrite_stream(upstream)
    assert rec.decisions[0].target == "glob"
    assert_conformant(out)
    assert sdk_calls(out)[0]["name"] == "glob"


def test_name_empty_after_the_first_chunk_is_not_repeated():
    out, _ = rewrite_stream(load_bytes("stream-name-empty-later.sse"))
    assert_conformant(out)


@pytest.mark.parametrize("seed", range(30))
def test_new_id_on_every_fragment_is_one_call_with_the_first_id(seed):
    upstream = load_bytes("stream-new-id-per-fragment.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert len(rec.calls) == 1
    assert_only_tool_deltas_changed(upstream, out)
    assert_conformant(out)
    assert sdk_calls(out) == [
        {"id": "call_fx07_1", "type": "function", "name": "grep_search", "arguments": '{"pattern":"TODO"}'}
    ]
    assert b"call_fx07_2" not in out and b"call_fx07_3" not in out


@pytest.mark.parametrize("seed", range(30))
def test_reused_index_with_new_id_and_name_is_a_second_call(seed):
    upstream = load_bytes("stream-reused-index.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert [c.name for c in rec.calls] == ["read_file", "glob"]
    assert_only_tool_deltas_changed(upstream, out)
    assert_conformant(out)
    assert sorted(tool_deltas(out)) == [(0, 0), (0, 1)]
    assert sdk_calls(out) == [
        {"id": "call_fx08_a", "type": "function", "name": "read_file", "arguments": '{"file_path":"/repo/a.ts"}'},
        {"id": "call_fx08_b", "type": "function", "name": "glob", "arguments": '{"pattern":"*.md"}'},
    ]


def test_reused_index_with_new_id_and_same_name_is_a_second_call():
    upstream = (
        load_bytes("stream-reused-index.sse")
        .replace(b'"name":"glob"', b'"name":"read_file"')
        .replace(b'{\\"pattern\\":\\"*.md\\"}', b'{\\"file_path\\":\\"/repo/b.ts\\"}')
    )
    out, rec = rewrite_stream(upstream)
    assert sdk_calls(out) == [
        {"id": "call_fx08_a", "type": "function", "name": "read_file", "arguments": '{"file_path":"/repo/a.ts"}'},
        {"id": "call_fx08_b", "type": "function", "name": "read_file", "arguments": '{"file_path":"/repo/b.ts"}'},
    ]


def test_new_id_per_fragment_with_the_name_repeated_stays_one_call():
    # LM Studio-like fragments that also repeat the name: the arguments so far are not a whole
    # JSON value, so each fragment continues the same call.
    upstream = load_bytes("stream-new-id-per-fragment.sse").replace(
        b'"type":"function","function":{"arguments"', b'"type":"function","function":{"name":"grep_search","arguments"'
    )
    assert upstream.count(b'"name":"grep_search"') == 3
    out, rec = rewrite_stream(upstream)
    assert [c.name for c in rec.calls] == ["grep_search"]
    assert_conformant(out)
    assert sdk_calls(out) == [
        {"id": "call_fx07_1", "type": "function", "name": "grep_search", "arguments": '{"pattern":"TODO"}'}
    ]


@pytest.mark.parametrize("seed", range(20))
def test_missing_ids_get_deterministic_tc_ids(seed):
    upstream = load_bytes("stream-missing-ids.sse")
    flow_key = "flow-ids-a"
    out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), flow_key=flow_key)
    assert_only_tool_deltas_changed(upstream, out)
    assert_conformant(out)
    calls = sdk_calls(out)
    assert [c["id"] for c in calls] == [stable_call_id("flow-ids-a", 0), stable_call_id("flow-ids-a", 1)]
    assert all(TC_ID.match(c["id"]) for c in calls)
    assert [c["arguments"] for c in calls] == ['{"file_path":"/repo/a.ts"}', '{"file_path":"/repo/b.ts"}']


def test_missing_ids_same_for_same_flow_and_different_for_another():
    upstream = load_bytes("stream-missing-ids.sse")
    a1, _ = rewrite_stream(upstream, flow_key="flow-a")
    a2, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(7)), flow_key="flow-a")
    b, _ = rewrite_stream(upstream, flow_key="flow-b")
    assert a1 == a2
    ids_a = [c["id"] for c in sdk_calls(a1)]
    ids_b = [c["id"] for c in sdk_calls(b)]
    assert ids_a != ids_b and not set(ids_a) & set(ids_b)


def test_empty_ids_are_replaced_like_missing_ones():
    upstream = (
        load_bytes("stream-missing-ids.sse")
        .replace(b'{"index":0,"type"', b'{"index":0,"id":"","type"')
        .replace(b'{"index":1,"type"', b'{"index":1,"id":"","type"')
    )
    assert upstream.count(b'"id":""') == 2
    out, _ = rewrite_stream(upstream, flow_key="flow-e")
    assert_conformant(out)
    assert [c["id"] for c in sdk_calls(out)] == [stable_call_id("flow-e", 0), stable_call_id("flow-e", 1)]


def test_same_id_on_two_indexes_second_gets_a_stable_id():
    upstream = (
        load_bytes("stream-missing-ids.sse")
        .replace(b'{"index":0,"type"', b'{"index":0,"id":"call_dup","type"')
        .replace(b'{"index":1,"type"', b'{"index":1,"id":"call_dup","type"')
    )
    out, _ = rewrite_stream(upstream, flow_key="flow-d")
    assert [c["id"] for c in sdk_calls(out)] == ["call_dup", stable_call_id("flow-d", 1)]


def test_real_ids_pass_unchanged_when_only_one_call_lacks_one():
    upstream = load_bytes("stream-missing-ids.sse").replace(b'{"index":0,"type"', b'{"index":0,"id":"call_real","type"')
    out, _ = rewrite_stream(upstream, flow_key="flow-m")
    assert [c["id"] for c in sdk_calls(out)] == ["call_real", stable_call_id("flow-m", 1)]
    first_event = events_of(upstream)[0]
    assert first_event.raw in out  # the call with a real id is left byte-identical


@pytest.mark.parametrize("seed", range(20))
def test_object_arguments_are_serialized_to_a_string(seed):
    upstream = load_bytes("stream-object-arguments.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert_only_tool_deltas_changed(upstream, out)
    assert_conformant(out)
    [call] = sdk_calls(out)
    assert call == {
        "id": "call_fx10",
        "type": "function",
        "name": "list_directory",
        "arguments": '{"path":"/repo/src"}',
    }
    assert isinstance(call["arguments"], str)
    assert rec.decisions[0].action is Action.KEEP


def test_object_arguments_with_a_foreign_name_are_renamed_and_serialized():
    upstream = load_bytes("stream-object-arguments.sse").replace(
        b'"name":"list_directory","arguments":{"path":"/repo/src"}', b'"name":"Bash","arguments":{"command":"ls /repo"}'
    )
    out, _ = rewrite_stream(upstream)
    assert sdk_calls(out)[0]["name"] == "run_shell_command"
    assert sdk_calls(out)[0]["arguments"] == '{"command":"ls /repo"}'


def test_several_choices_are_assembled_apart():
    def chunk(choices):
        return b"data: " + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": choices}) + b"\n\n"

    upstream = (
        chunk(
            [
                {
                    "index": 0,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_c0",
                                "type": "function",
                                "function": {"name": "Bash", "arguments": ""},
                            }
                        ]
                    },
                    "finish_reason": None,
                },
                {
                    "index": 1,
                    "delta": {
                        "tool_calls": [
                            {
                                "index": 0,
                                "id": "call_c1",
                                "type": "function",
                                "function": {"name": "glob", "arguments": ""},
                            }
                        ]
                    },
                    "finish_reason": None,
                },
            ]
        )
        + chunk(
            [
                {
                    "index": 0,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"command":"ls"}'}}]},
                    "finish_reason": None,
                },
                {
                    "index": 1,
                    "delta": {"tool_calls": [{"index": 0, "function": {"arguments": '{"pattern":"*"}'}}]},
                    "finish_reason": None,
                },
            ]
        )
        + chunk(
            [
                {"index": 0, "delta": {}, "finish_reason": "tool_calls"},
                {"index": 1, "delta": {}, "finish_reason": "tool_calls"},
            ]
        )
        + b"data: [DONE]\n\n"
    )
    out, _ = rewrite_stream(upstream)
    assert sdk_calls(out, 0) == [
        {"id": "call_c0", "type": "function", "name": "run_shell_command", "arguments": '{"command":"ls"}'}
    ]
    assert sdk_calls(out, 1) == [{"id": "call_c1", "type": "function", "name": "glob", "arguments": '{"pattern":"*"}'}]


# -- streams: comments, keep-alives, usage, [DONE], errors --------------------------------------


@pytest.mark.parametrize("seed", range(30))
def test_keepalives_and_mid_stream_error_pass_byte_identical_around_the_repair(seed):
    upstream = load_bytes("stream-keepalive-error.sse")
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    assert out.startswith(b": keep-alive\n\n: PROCESSING\n\n")
    assert out.endswith(
        b'data: {"error":{"message":"upstream overloaded","type":"server_error","code":529}}\n\ndata: [DONE]\n\n'
    )
    assert_only_tool_deltas_changed(upstream, out)
    assert sdk_calls(out) == [
        {"id": "call_fx11", "type": "function", "name": "run_shell_command", "arguments": '{"command":"ls"}'}
    ]
    assert rec.decisions[0].action is Action.RENAME


def test_error_before_the_arguments_complete_leaves_the_call_byte_identical():
    upstream = load_bytes("stream-keepalive-error.sse").replace(
        b'"arguments":"{\\"command\\":\\"ls\\"}"', b'"arguments":"{\\"comm"'
    )
    assert upstream != load_bytes("stream-keepalive-error.sse")
    out, rec = rewrite_stream(upstream)
    assert out == upstream
    assert rec.decisions[0].action is Action.LEAVE


def test_vllm_style_error_object_passes():
    upstream = load_bytes("stream-foreign-bash.sse")
    cut = upstream.index(
        b'data: {"id":"chatcmpl-fx02","object":"chat.completion.chunk","created":1761000000,"model":"qwen3-coder-fixture","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]'
    )
    err = b'data: {"object":"error","message":"engine died","type":"InternalServerError","code":500}\n\n'
    upstream = upstream[:cut] + err
    out, _ = rewrite_stream(upstream)
    assert out.endswith(err)
    assert sdk_calls(out)[0]["name"] == "run_shell_command"


def test_usage_only_chunk_and_done_pass_untouched_when_no_call_is_open():
    usage = b'data: {"id":"x","object":"chat.completion.chunk","choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}\n\n'
    upstream = (
        b'data: {"id":"x","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"},"finish_reason":"stop"}]}\n\n'
        + usage
        + b"data: [DONE]\n\n"
    )
    out, rec = rewrite_stream(upstream)
    assert out == upstream and rec.calls == []


@pytest.mark.parametrize("comment", [b": keep-alive\n\n", b": OPENROUTER PROCESSING\n\n"])
def test_keepalive_comment_inside_a_call_does_not_split_it(comment):
    upstream = load_bytes("stream-conformant.sse")
    events = events_of(upstream)
    # after the first arguments fragment of call 0
    cut = sum(len(e.raw) for e in events[:4])
    upstream = upstream[:cut] + comment + upstream[cut:]
    out, rec = rewrite_stream(upstream, request=OPENCODE)
    assert [c.name for c in rec.calls] == ["read", "bash"]
    assert out == upstream


def test_keepalive_comment_inside_a_foreign_call_still_renames_it():
    upstream = load_bytes("stream-foreign-bash.sse")
    cut = upstream.index(
        b'data: {"id":"chatcmpl-fx02","object":"chat.completion.chunk","created":1761000000,"model":"qwen3-coder-fixture","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\\"npm test'
    )
    upstream = upstream[:cut] + b": keep-alive\n\n" + upstream[cut:]
    out, _ = rewrite_stream(upstream)
    assert_conformant(out)
    assert sdk_calls(out) == [
        {"id": "call_fx02", "type": "function", "name": "run_shell_command", "arguments": '{"command":"npm test"}'}
    ]


def test_stream_without_done_is_released_at_the_end():
    upstream = load_bytes("stream-foreign-bash.sse")
    upstream = upstream[
        : upstream.index(
            b'data: {"id":"chatcmpl-fx02","object":"chat.completion.chunk","created":1761000000,"model":"qwen3-coder-fixture","choices":[{"index":0,"delta":{},"finish_reason"'
        )
    ]
    out, _ = rewrite_stream(upstream)
    assert out == upstream.replace(b'"name":"Bash"', b'"name":"run_shell_command"')


def test_unterminated_last_block_passes_unchanged():
    upstream = load_bytes("stream-conformant.sse") + b'data: {"partial'
    out, _ = rewrite_stream(upstream, request=OPENCODE)
    assert out == upstream


# -- anything unparseable passes; no exception escapes ------------------------------------------


@pytest.mark.parametrize(
    "upstream",
    [
        b"",
        b"\n\n",
        b"data: not json\n\n",
        b'event: weird\ndata: {"choices": 5}\n\n',
        b'data: {"choices":[{"delta":{"tool_calls":"abc"}}]}\n\ndata: [DONE]\n\n',
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_q","type":"function","function":{"name":7,"arguments":"x"}}]},"finish_reason":"tool_calls"}]}\n\n',
        b"\xff\xfe binary \x00\x01\n\n",
        b"<html>502 Bad Gateway</html>",
    ],
)
def test_unparseable_or_odd_streams_pass_byte_identical(upstream):
    for seed in range(5):
        chunks = random_chunks(upstream, random.Random(seed), 1, 7)
        out, _ = rewrite_stream(upstream, chunks, expect_error=True)
        assert out == upstream


def test_a_fragment_with_no_id_type_or_name_goes_on_as_it_came():
    # Deltas of a call whose start never came (or came as something not JSON, which went on
    # as sent): the call is not known whole, so no id is made up for it and nothing is decided.
    upstream = (
        b'data: {"choices":[{"delta":{"tool_calls":[5, null, {"index":0,"function":null}]}}]}\n\ndata: [DONE]\n\n'
    )
    rw = DIALECT.stream_rewriter(context(Recorder(), Plan(), flow_key="odd"))
    assert drive(rw, [upstream]) == upstream
    assert rw.unrepaired and "not known whole" in rw.unrepaired[0], rw.unrepaired


@pytest.mark.parametrize("seed", range(10))
def test_resolver_exception_passes_the_stream_through(seed):
    def boom(call):
        raise RuntimeError("injected")

    upstream = load_bytes("stream-foreign-bash.sse")
    out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), resolver=boom, expect_error=True)
    assert out == upstream


# -- chunk independence over every fixture ------------------------------------------------------

STREAMS = [
    ("stream-conformant.sse", OPENCODE),
    ("stream-foreign-bash.sse", QWEN),
    ("stream-foreign-read.sse", OPENCODE),
    ("stream-name-split.sse", QWEN),
    ("stream-name-repeated.sse", QWEN),
    ("stream-name-empty-later.sse", QWEN),
    ("stream-new-id-per-fragment.sse", QWEN),
    ("stream-reused-index.sse", QWEN),
    ("stream-missing-ids.sse", QWEN),
    ("stream-object-arguments.sse", QWEN),
    ("stream-keepalive-error.sse", QWEN),
]


@pytest.mark.parametrize("fixture,request_name", STREAMS)
def test_output_does_not_depend_on_chunking(fixture, request_name):
    upstream = load_bytes(fixture)
    whole, rec_whole = rewrite_stream(upstream, request=request_name)
    for seed in range(25):
        lo, hi = (1, 3) if seed % 5 == 0 else (1, 80)
        out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed), lo, hi), request=request_name)
        assert out == whole
        assert [d.model_dump() for d in rec.decisions] == [d.model_dump() for d in rec_whole.decisions]
    # every event of the answer survives, in order
    assert len(events_of(whole)) == len(events_of(upstream))


@pytest.mark.parametrize("finish_reason", [["length"], {"reason": "length"}, 1, True, None])
def test_a_finish_reason_of_any_json_type_is_read_without_error(finish_reason):
    # A finish_reason that is no string (a list, an object, a number) is no limit reason: the
    # call is decided as for any complete answer, and nothing raises on the value's type.
    body = load_json("response-foreign.json")
    body["choices"][0]["finish_reason"] = finish_reason
    rec = Recorder(QWEN)
    assert DIALECT.rewrite_response(body, context(rec, flow_key="flow-json-1")) is True
    assert body["choices"][0]["message"]["tool_calls"][0]["function"]["name"] == "run_shell_command"
    assert body["choices"][0]["finish_reason"] == finish_reason


def _chunk(choices: list[dict], **extra: Any) -> bytes:
    return (
        b"data: " + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": choices, **extra}) + b"\n\n"
    )


#: Between a call's first delta (its name's first piece) and its second, (n > 1) another choice
#: finishes, or a chunk with no choice and no usage or error value comes (a content-filter chunk,
#: ``"usage": null`` as every chunk but the last carries under ``stream_options.include_usage``).
BETWEEN = {
    "another_choice_finishes": _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
    "empty_choices": _chunk([], prompt_filter_results=[]),
    "usage_null": _chunk([], usage=None, prompt_filter_results=[]),  # stream_options.include_usage
    "error_null": _chunk([], error=None),
    "choices_null": b'data: {"id":"c","object":"chat.completion.chunk","choices":null}\n\n',
    "no_choices": b'data: {"id":"c","object":"chat.completion.chunk"}\n\n',
}


@pytest.mark.parametrize("between", BETWEEN)
@pytest.mark.parametrize("seed", range(6))
def test_a_call_is_held_whole_across_chunks_that_do_not_end_it(between, seed):
    """The call of choice 1 is ``Read`` + ``_file`` (a name split across deltas, as
    OpenAI-compatible servers send it): read whole it is ``Read_file``, which means Qwen Code's
    ``read_file``. Was a fault: the chunk between released the hold, the first piece was decided
    alone and the second got an id of its own, which the SDK joins to the first
    (``call_btc_…``), and the record named two calls."""
    upstream = b"".join(
        [
            _chunk([{"index": 0, "delta": {"role": "assistant", "content": "Sure."}}]),
            _chunk(
                [
                    {
                        "index": 1,
                        "delta": {
                            "role": "assistant",
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_b",
                                    "type": "function",
                                    "function": {"name": "Read", "arguments": ""},
                                }
                            ],
                        },
                    }
                ]
            ),
            BETWEEN[between],
            _chunk(
                [
                    {
                        "index": 1,
                        "delta": {
                            "tool_calls": [
                                {"index": 0, "function": {"name": "_file", "arguments": '{"file_path": "/tmp/x"}'}}
                            ]
                        },
                    }
                ]
            ),
            _chunk([{"index": 1, "delta": {}, "finish_reason": "tool_calls"}]),
            b"data: [DONE]\n\n",
        ]
    )
    out, resolver = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)))
    [call] = sdk_calls(out, choice=1)
    assert (call["id"], call["type"], call["name"]) == ("call_b", "function", "read_file")
    assert orjson.loads(call["arguments"]) == {"file_path": "/tmp/x"}
    assert [(d.name, d.target) for d in resolver.decisions] == [("Read_file", "read_file")]
    assert b"Sure." in out and BETWEEN[between] in out  # the chunk between goes out as it came


def _markup(path: str) -> str:
    return '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "%s"}}\n</tool_call>' % path


@pytest.mark.parametrize("seed", range(6))
def test_the_texts_of_several_choices_are_never_lifted_as_one(seed):
    """n = 2, each choice's text one call written as markup: choice 0 reads a.txt, choice 1
    b.txt. Was a fault: the two texts were read as one and both calls landed in choice 0 (choice
    1 lost its text). Each choice's text stays its own (the stream goes out as it came); the
    control, choice 0 alone, is lifted."""
    two = b"".join(
        [
            _chunk([{"index": 0, "delta": {"role": "assistant", "content": _markup("/tmp/a.txt")}}]),
            _chunk([{"index": 1, "delta": {"role": "assistant", "content": _markup("/tmp/b.txt")}}]),
            _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            _chunk([{"index": 1, "delta": {}, "finish_reason": "stop"}]),
            b"data: [DONE]\n\n",
        ]
    )
    out, _ = rewrite_stream(two, random_chunks(two, random.Random(seed)))
    assert out == two
    one = b"".join(
        [
            _chunk([{"index": 0, "delta": {"role": "assistant", "content": _markup("/tmp/a.txt")}}]),
            _chunk([{"index": 0, "delta": {}, "finish_reason": "stop"}]),
            b"data: [DONE]\n\n",
        ]
    )
    out, _ = rewrite_stream(one, random_chunks(one, random.Random(seed)))
    assert [(c["name"], orjson.loads(c["arguments"])) for c in sdk_calls(out)] == [
        ("read_file", {"file_path": "/tmp/a.txt"})
    ]


@pytest.mark.parametrize("index", ["0", 0.0, None])
def test_a_call_whose_index_is_not_an_integer_still_gets_its_own_name_back(index):
    """Calls whose index is not an integer cannot be told apart: they go as they came, but for
    the alias this flow sent upstream for the client's ``fs.read`` (an alias the client never
    declared is no tool it can run), whole in a delta, given back. Was: the alias reached it."""
    from toolvocab.engine.ladder import declared_tool
    from toolvocab.engine.ladder import resolve

    alias = "fs_read_4074bc02"
    plan = Plan(rename_map={"fs.read": alias})
    declared = Toolset(
        [declared_tool("fs.read", input_schema={"type": "object", "properties": {"path": {"type": "string"}}})]
    )

    class Resolver:
        """The ladder over ``tools`` with the plan's reverse map (``tools``: what the flow declared)."""

        tools = declared

        def __call__(self, call):
            return resolve(call, declared, plan.reverse_map)

    call = {
        "index": index,
        "id": "call_1",
        "type": "function",
        "function": {"name": alias, "arguments": '{"path":"a"}'},
    }
    upstream = (
        b"data: "
        + orjson.dumps({"id": "c", "choices": [{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": None}]})
        + b"\n\ndata: "
        + orjson.dumps({"id": "c", "choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
        + b"\n\ndata: [DONE]\n\n"
    )
    rw = DIALECT.stream_rewriter(context(Resolver(), plan, flow_key="k"))
    out = drive(rw, [upstream])
    assert out == upstream.replace(alias.encode(), b"fs.read")
    assert rw.unrepaired and rw.unrepaired[-1].endswith("; named back to fs.read"), rw.unrepaired


def _call_chunk(tool_calls: list[dict] | None = None, finish: str | None = None) -> dict:
    delta = {"tool_calls": tool_calls} if tool_calls else {}
    return {
        "id": "chatcmpl-w",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


WRAPPED = orjson.dumps(
    {
        "tool_uses": [
            {"recipient_name": "functions.read", "parameters": {"filePath": "/repo/a.ts"}},
            {"recipient_name": "functions.read", "parameters": {"filePath": "/repo/b.ts"}},
        ]
    }
).decode()


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("wrapper_at", [0, 1])
def test_a_wrapper_expanded_mid_stream_moves_the_later_calls_up(seed, wrapper_at):
    """``multi_tool_use.parallel`` at one index and a plain call at another: the wrapper's calls
    take its place and the later call moves up, so each index first appears in order (the openai
    SDK's stream helper keeps a choice's calls in a list it extends one index at a time: an index
    past its end raised ``IndexError``; was: the wrapper's second call at the index after every
    upstream call, before the upstream's index 1)."""
    calls = [
        ("call_w", "multi_tool_use.parallel", WRAPPED),
        ("call_x", "read", '{"filePath":"/repo/x.ts"}'),
    ]
    if wrapper_at:
        calls.reverse()
    events: list[dict] = []
    for i, (call_id, name, args) in enumerate(calls):
        events.append(
            _call_chunk([{"index": i, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}])
        )
        events += [
            _call_chunk([{"index": i, "function": {"arguments": args[k : k + 9]}}]) for k in range(0, len(args), 9)
        ]
    events.append(_call_chunk(finish="tool_calls"))
    upstream = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), request=OPENCODE)
    seen: list[int] = []
    for (_, index), _entries in tool_deltas(out).items():
        assert index == len(seen), (index, seen)  # tool_deltas keeps the order of first appearance
        seen.append(index)
    want = ["/repo/a.ts", "/repo/b.ts", "/repo/x.ts"] if not wrapper_at else ["/repo/x.ts", "/repo/a.ts", "/repo/b.ts"]
    got = sdk_calls(out)
    assert [(c["name"], orjson.loads(c["arguments"])["filePath"]) for c in got] == [("read", p) for p in want]
    assert_conformant(out)


@pytest.mark.parametrize("seed", range(20))
def test_a_stream_that_begins_with_a_byte_order_mark_is_read(seed):
    """An event stream may begin with U+FEFF, which a client's parser skips (WHATWG HTML,
    "Parsing an event stream"; ``TextDecoder``): the first event is read all the same, and the
    mark reaches the client where it came (was: the first event unread, its call left as sent)."""
    fixture = load_bytes("stream-foreign-bash.sse")
    # the call's first delta first: the event the mark stands in front of names the tool
    upstream = "\ufeff".encode() + fixture[fixture.index(b"\n\n") + 2 :]
    out, rec = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed), 1, 6))
    assert out == upstream.replace(b'"name":"Bash"', b'"name":"run_shell_command"')
    [d] = rec.decisions
    assert (d.name, d.action, d.target) == ("Bash", Action.RENAME, "run_shell_command")


@pytest.mark.parametrize("seed", range(10))
def test_a_late_delta_follows_its_call_to_the_index_it_moved_to(seed):
    """A wrapper's calls moved the next call up (index 1 went out at 2); a delta of that call
    after the choice's finish_reason goes to index 2 too, so the client joins it to its call
    (was: at index 1, joined to the wrapper's second call: Read's arguments got '"make"}')."""
    head = '{"command":'
    events = [
        _call_chunk(
            [
                {
                    "index": 0,
                    "id": "call_w",
                    "type": "function",
                    "function": {"name": "multi_tool_use.parallel", "arguments": WRAPPED},
                }
            ]
        ),
        _call_chunk(
            [{"index": 1, "id": "call_x", "type": "function", "function": {"name": "bash", "arguments": head}}]
        ),
        _call_chunk(finish="tool_calls"),
        _call_chunk([{"index": 1, "function": {"arguments": '"make","description":"d"}'}}]),
    ]
    upstream = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"
    out, _ = rewrite_stream(upstream, random_chunks(upstream, random.Random(seed)), request=OPENCODE)
    got = sdk_calls(out)
    assert [c["name"] for c in got] == ["read", "read", "bash"]
    assert orjson.loads(got[2]["arguments"]) == {"command": "make", "description": "d"}
    assert [orjson.loads(c["arguments"])["filePath"] for c in got[:2]] == ["/repo/a.ts", "/repo/b.ts"]


#: A model's own call whose id a wrapper's expansion would give one of its calls, then the
#: wrapper; and two wrappers without ids (each expanding into call_0, call_1).
ID_CLASHES = {
    "own-then-wrapper": [
        ("call_A_0", "bash", '{"command":"make test","description":"d"}'),
        ("call_A", "multi_tool_use.parallel", WRAPPED),
    ],
    "two-wrappers-no-id": [("", "multi_tool_use.parallel", WRAPPED), ("", "multi_tool_use.parallel", WRAPPED)],
}


@pytest.mark.parametrize("framing", ["json", "sse"])
@pytest.mark.parametrize("case", ID_CLASHES)
def test_a_wrappers_calls_never_share_an_id_with_another_call(framing, case):
    """Every call the client gets has its own id (BR-20), a wrapper's too: OpenCode keys calls and
    their results by id, so two calls under one would file one's result under the other. Was a
    fault: a wrapper's calls were named <wrapper id>_<i> (call_<i> without an id), unchecked
    against the answer's other ids."""
    calls = ID_CLASHES[case]
    if framing == "json":
        tool_calls = []
        for call_id, name, args in calls:
            entry = {"type": "function", "function": {"name": name, "arguments": args}}
            tool_calls.append({**entry, "id": call_id} if call_id else entry)
        message = {"role": "assistant", "content": None, "tool_calls": tool_calls}
        body = {
            "id": "c",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        }
        DIALECT.rewrite_response(body, context(Recorder(OPENCODE)))
        got = body["choices"][0]["message"]["tool_calls"]
    else:
        events = []
        for i, (call_id, name, args) in enumerate(calls):
            first = {"index": i, "type": "function", "function": {"name": name, "arguments": args}}
            events.append(_call_chunk([{**first, "id": call_id} if call_id else first]))
        events.append(_call_chunk(finish="tool_calls"))
        upstream = b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"
        out, _ = rewrite_stream(upstream, request=OPENCODE)
        got = sdk_calls(out)
    ids = [c["id"] for c in got]
    assert len(got) == {"own-then-wrapper": 3, "two-wrappers-no-id": 4}[case]
    assert len(set(ids)) == len(ids) and all(ids), ids


def test_a_call_whole_at_its_finish_reason_is_decided_at_a_stall_not_given_up():
    """A call whose choice ended is held on for deltas that may continue it; a stall then
    (the upstream sends nothing before ``[DONE]``) reads it whole, as the finish_reason said:
    OpenCode gets ``read {filePath}`` for ``Read {file_path}``. Was, after holding past the
    finish: given up at the stall, the client got ``Read``, a tool it never declared."""
    call = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "Read", "arguments": '{"file_path": "/repo/a.ts"}'},
    }
    head = _chunk([{"index": 0, "delta": {"tool_calls": [call]}, "finish_reason": "tool_calls"}])
    resolver = Recorder(OPENCODE, Plan())
    rw = DIALECT.stream_rewriter(context(resolver, Plan(), flow_key="flow-stall"))
    out = b"".join(rw.feed(head)) + b"".join(rw.let_go("the upstream sent no byte for 30.0 s"))
    out += b"".join(rw.feed(b"data: [DONE]\n\n")) + b"".join(rw.finish())
    assert sdk_calls(out) == [
        {"id": "call_1", "type": "function", "name": "read", "arguments": '{"filePath":"/repo/a.ts"}'}
    ]
    assert out.endswith(b"data: [DONE]\n\n")
