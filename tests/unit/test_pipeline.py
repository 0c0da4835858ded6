"""The request pipeline (``toolvocab.dialects.pipeline``) reads a request two ways, and they must
agree: a *peek* (each dialect's typed decoder, which skips what planning does not read) and the
whole strict parse. What must hold, over generated bodies of every dialect (well-typed, wrong-typed
anywhere, extra keys anywhere, compact or spaced):

* a peek reads a body only when ``matches`` says yes, and then gives what every request reader
  (``system_texts``, ``platform_texts``, ``transcript_names``, ``model_of``, ``wants_stream``,
  ``declarations``) gives on the whole body; and ``apply_request`` with a plan that renames
  nothing leaves a body the peek reads as it is (the peek reads no body whose replayed ids the
  upstream rejects);
* :func:`pipeline.handle` that peeks hands out a request only when the whole read would send it
  unchanged, with the same plan, record, stream flag and Windows flag;
* a peek never claims a body the whole read leaves to another dialect or to nobody;
* the earlier calls a dialect reads (``transcript_calls``) with a ``keep`` filter are the calls it
  reads without one, filtered; Anthropic's are what its contract says (one pass over the blocks,
  read here the long way).
"""

from __future__ import annotations

import copy
import json
import os
import re
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab import dialects
from toolvocab.dialects import pipeline
from toolvocab.engine import jsonio
from toolvocab.engine.plan import Plan

#: Hypothesis examples per property (``TOOLVOCAB_PROPERTY_EXAMPLES``: ``.ci/run``'s long profile
#: sets 2000; quick default 300).
EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))

PATHS = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "gemini": "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
}

LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6)
)
ANY = st.recursive(
    LEAVES,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
#: Mostly names every upstream takes as they are; now and then one a grammar renames.
NAMES = st.one_of(
    st.sampled_from(["Read", "Bash", "shell", "mcp__files__read", "read_file"]),
    st.sampled_from(["Read", "Bash"]),
    st.sampled_from(["functions.Bash:0", "x" * 70, ""]) | st.text(max_size=6),
)
#: Mostly ids every upstream takes; now and then one Anthropic (pattern) or Responses (length) rejects.
IDS = st.one_of(
    st.sampled_from(["toolu_01", "toolu_02", "call_1", "call_2", "c" * 64]),
    st.sampled_from(["toolu_01", "call_1"]),
    st.sampled_from(["functions.Bash:0", "0\n", "c" * 65, ""]) | st.text(max_size=6),
)
TEXT = st.sampled_from(
    [
        "Use Read and Bash.",
        "<environment_context><shell>powershell</shell></environment_context>",
        "You run on Windows.",
        "Tools: shell",
        "<bash-input>cd src</bash-input> then <bash-input>ls",
        "This session is being continued from a previous conversation that ran out of context.",
    ]
) | st.text(max_size=12)


@st.composite
def maybe(draw: st.DrawFn, strategy: st.SearchStrategy) -> Any:
    """A value of ``strategy``, or one time in twelve any JSON value in its place (a wrong type)."""
    return draw(ANY) if draw(st.integers(0, 11)) == 0 else draw(strategy)


@st.composite
def obj(draw: st.DrawFn, fields: dict[str, st.SearchStrategy], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object with the ``required`` fields, a random subset of the others, and now and then
    extra keys; any field may hold a wrong type (:func:`maybe`)."""
    out = {k: draw(maybe(v)) for k, v in fields.items() if k in required or draw(st.booleans())}
    if draw(st.integers(0, 4)) == 0:
        out.update(
            draw(st.dictionaries(st.sampled_from(["extra", "input", "content", "cache_control", "a"]), ANY, max_size=2))
        )
    return out


def parts(text_key: str = "text") -> st.SearchStrategy:
    return st.lists(obj({"type": st.sampled_from(["text", "input_text", "image"]), text_key: TEXT}), max_size=3)


def anthropic() -> st.SearchStrategy:
    block = st.one_of(
        obj({"type": st.just("text"), "text": TEXT}, required=("type", "text")),
        obj({"type": st.just("tool_use"), "id": IDS, "name": NAMES, "input": ANY}, required=("type", "id", "name")),
        obj(
            {"type": st.just("tool_result"), "tool_use_id": IDS, "content": TEXT | parts(), "is_error": st.booleans()},
            required=("type", "tool_use_id"),
        ),
        obj(
            {
                "type": st.sampled_from(["image", "thinking", "server_tool_use", "compaction"]),
                "id": IDS,
                "name": NAMES,
                "text": TEXT,
            }
        ),
    )
    message = obj(
        {
            "role": st.sampled_from(["user", "assistant", "system"]),
            "content": TEXT | st.lists(block, min_size=1, max_size=4),
        },
        required=("role", "content"),
    )
    tool = obj(
        {"name": NAMES, "type": st.sampled_from(["custom", "bash_20250124"]), "input_schema": ANY, "description": TEXT},
        required=("name",),
    )
    return obj(
        {
            "model": TEXT,
            "stream": st.booleans(),
            "system": TEXT | parts(),
            "messages": st.lists(message, max_size=5),
            "tools": st.lists(tool, min_size=1, max_size=3),
            "stop_sequences": st.sampled_from([None, [], ["END"]]),
            "tool_choice": ANY
            | st.sampled_from(
                [None, {"type": "auto"}, {"type": "any"}, {"type": "none"}, {"type": "tool", "name": "Read"}, "auto", 1]
            ),
        },
        required=("messages", "tools"),
    )


def chat() -> st.SearchStrategy:
    function = obj({"name": NAMES, "arguments": ANY}, required=("name",))
    call = obj({"type": st.just("function"), "id": IDS, "function": function}, required=("id", "function"))
    message = st.one_of(
        obj(
            {
                "role": st.sampled_from(["system", "developer", "user"]),
                "content": TEXT | parts() | st.none(),
                "name": NAMES,
            },
            required=("role", "content"),
        ),
        obj(
            {
                "role": st.just("assistant"),
                "content": TEXT | st.none(),
                "tool_calls": st.lists(call, min_size=1, max_size=2),
                "function_call": function,
            },
            required=("role",),
        ),
        obj(
            {
                "role": st.sampled_from(["tool", "function"]),
                "tool_call_id": IDS,
                "name": NAMES,
                "content": TEXT | parts(),
            },
            required=("role", "content"),
        ),
    )
    tool = obj(
        {"type": st.just("function"), "function": obj({"name": NAMES, "parameters": ANY}, required=("name",))},
        required=("function",),
    )
    return obj(
        {
            "model": TEXT,
            "stream": st.booleans(),
            "messages": st.lists(message, max_size=5),
            "tools": st.lists(tool, min_size=1, max_size=3),
            "functions": st.lists(obj({"name": NAMES}), max_size=2),
            "stop": st.sampled_from([None, "", "\n\n", [], ["END"], 0]),
            "tool_choice": OPENAI_CHOICES,
            "function_call": st.sampled_from([None, "auto", "none", {"name": "Read"}]),
            "parallel_tool_calls": st.sampled_from([None, True, False, 0]),
            "stop_token_ids": st.sampled_from([None, [], [151645], "x"]),
        },
        required=("messages", "tools"),
    )


def responses() -> st.SearchStrategy:
    item = st.one_of(
        obj(
            {
                "type": st.just("message"),
                "role": st.sampled_from(["system", "developer", "user", "assistant"]),
                "content": TEXT | parts("text"),
            },
            required=("role", "content"),
        ),
        obj(
            {
                "type": st.sampled_from(["function_call", "custom_tool_call"]),
                "call_id": IDS,
                "name": NAMES,
                "namespace": st.sampled_from(["mcp__files__", "mcp__git__"]),
                "arguments": ANY,
            },
            required=("type", "call_id", "name"),
        ),
        obj(
            {
                "type": st.sampled_from(["function_call_output", "custom_tool_call_output"]),
                "call_id": IDS,
                "output": ANY,
            },
            required=("type", "call_id"),
        ),
        obj({"type": st.just("reasoning"), "encrypted_content": TEXT}, required=("type",)),
    )
    tool = obj(
        {
            "type": st.sampled_from(["function", "function", "custom", "namespace", "web_search"]),
            "name": NAMES,
            "parameters": ANY,
        },
        required=("type", "name"),
    )
    return obj(
        {
            "model": TEXT,
            "stream": st.booleans(),
            "stop": st.sampled_from([None, [], ["END"]]),
            "tool_choice": OPENAI_CHOICES,
            "function_call": st.sampled_from([None, "none"]),
            "parallel_tool_calls": st.sampled_from([None, True, False]),
            "instructions": TEXT | parts(),
            "store": st.booleans() | st.sampled_from([None, "false", 0]),
            "conversation": st.sampled_from([None, "conv_1", {"id": "conv_1"}]),
            "input": TEXT | st.lists(item, max_size=6),
            "tools": st.lists(tool, min_size=1, max_size=3),
        },
        required=("tools",),
    )


#: ``tool_choice`` values of the OpenAI formats: open, none, one tool, an allowed list, odd ones.
OPENAI_CHOICES = st.sampled_from(
    [
        None,
        "auto",
        "required",
        "none",
        {"type": "function", "function": {"name": "Read"}},
        {"type": "function", "name": "Read"},
        {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "Read"}]},
        {"type": "file_search"},
        ["auto"],
    ]
)


def gemini() -> st.SearchStrategy:
    ref = obj({"name": NAMES, "id": IDS, "args": ANY, "response": ANY}, required=("name",))
    part = st.one_of(
        obj({"text": TEXT}, required=("text",)),
        obj({"functionCall": ref}, required=("functionCall",)),
        obj({"functionResponse": ref}, required=("functionResponse",)),
        obj({"function_call": ref, "text": TEXT}),
    )
    content = obj(
        {"role": st.sampled_from(["user", "model"]), "parts": st.lists(part, min_size=1, max_size=3)},
        required=("parts",),
    )
    system = TEXT | obj({"parts": st.lists(obj({"text": TEXT}), max_size=2)})
    declarations = st.lists(
        obj({"name": NAMES, "parametersJsonSchema": ANY}, required=("name",)), min_size=1, max_size=2
    )
    tools = st.lists(
        obj({"functionDeclarations": declarations}, required=("functionDeclarations",)), min_size=1, max_size=2
    )
    inner = obj(
        {
            "contents": st.lists(content, max_size=4),
            "systemInstruction": system,
            "system_instruction": system,
            "tools": tools,
            "model": TEXT,
            "generationConfig": obj({"stopSequences": st.sampled_from([[], ["END"], None]), "temperature": ANY}),
            "generation_config": obj({"stop_sequences": st.sampled_from([[], ["END"]])}),
            "toolConfig": obj(
                {
                    "functionCallingConfig": obj(
                        {
                            "mode": st.sampled_from(["AUTO", "ANY", "NONE", "VALIDATED", "auto", None]),
                            "allowedFunctionNames": st.sampled_from([["Read"], []]),
                        }
                    )
                }
            ),
            "tool_config": obj({"function_calling_config": obj({"mode": st.sampled_from(["ANY", "NONE"])})}),
        },
        required=("contents", "tools"),
    )
    return inner | st.builds(lambda request, model: {"model": model, "request": request}, inner, TEXT)


BODIES = {"anthropic": anthropic(), "openai_chat": chat(), "openai_responses": responses(), "gemini": gemini()}


def spellings(body: Any) -> st.SearchStrategy:
    """``body`` as clients write it (compact) and as ``json.dumps`` does (spaces, ASCII escapes)."""
    return st.sampled_from(
        [orjson.dumps(body), json.dumps(body).encode(), json.dumps(body, indent=1, ensure_ascii=False).encode()]
    )


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(BODIES)))
def test_a_peek_reads_what_the_whole_body_holds(data: st.DataObject, name: str) -> None:
    body = data.draw(BODIES[name], label="body")
    raw = data.draw(spellings(body), label="raw")
    whole = jsonio.loads(raw)
    for dialect in dialects.DIALECTS:
        path = PATHS[name]
        peek = dialect.peek("POST", path, raw)
        if peek is None:
            continue
        assert dialect.matches("POST", path, whole)
        assert peek.model == dialect.model_of(path, whole)
        assert peek.stream == dialect.wants_stream(path, whole)
        assert peek.system_texts == dialect.system_texts(whole)
        assert peek.platform_texts == dialect.platform_texts(whole)
        assert peek.transcript_names == dialect.transcript_names(whole)
        assert peek.stored == dialect.keeps_answer(whole)
        assert peek.stops == dialect.stop_sequences(whole)
        assert peek.limited == dialect.limits_calls(whole)
        assert peek.allowed == dialect.allowed_names(whole)
        assert dialect.declarations(peek.declarations_body()) == dialect.declarations(whole)
        # a plan that renames nothing leaves a body the peek reads as sent (no replayed id to alias)
        assert not dialect.apply_request(copy.deepcopy(whole), Plan())


#: User-Agents: Gemini CLI's and Qwen Code's name the platform (``(win32; x64)`` on Windows).
USER_AGENTS = [
    "claude-cli/2.0.1",
    "GeminiCLI/0.61.0/gemini-2.5-pro (win32; x64)",
    "QwenCode/0.15.10 (win32; x64)",
    "QwenCode/0.15.10 (linux; x64)",
]


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(BODIES)), mode=st.sampled_from(["auto", "repair"]))
def test_a_peeked_request_is_one_the_whole_read_sends_as_it_came(data: st.DataObject, name: str, mode: str) -> None:
    body = data.draw(BODIES[name], label="body")
    raw = data.draw(spellings(body), label="raw")
    agent = data.draw(st.sampled_from(USER_AGENTS), label="user-agent")
    request = pipeline.Request(raw, "POST", PATHS[name], "api.example.com", {"user-agent": agent}.get)
    peeked = pipeline.handle(request, pipeline.Settings(mode=mode, peek=True), pipeline.Caches())
    whole = pipeline.handle(request, pipeline.Settings(mode=mode, peek=False), pipeline.Caches())
    if isinstance(whole, pipeline.Handled) and "(win32;" in agent:
        assert whole.windows and (not isinstance(peeked, pipeline.Handled) or peeked.windows)
    if isinstance(peeked, pipeline.Handled) and not peeked.verified:
        assert isinstance(whole, pipeline.Handled) and whole.content is None
        assert whole.dialect is peeked.dialect
        assert whole.plan.model_dump() == peeked.plan.model_dump()
        assert whole.record.dump() == peeked.record.dump()
        assert (whole.wants_stream, whole.windows, whole.stops, whole.limited, whole.allowed) == (
            peeked.wants_stream,
            peeked.windows,
            peeked.stops,
            peeked.limited,
            peeked.allowed,
        )
        assert whole.tools.names() == peeked.tools.names()
    else:
        assert summary(peeked) == summary(whole)


@settings(max_examples=max(50, EXAMPLES // 3), deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(BODIES)), mode=st.sampled_from(["auto", "repair"]))
def test_a_run_of_requests_gets_what_each_whole_read_gives(data: st.DataObject, name: str, mode: str) -> None:
    """One client's requests in a row through one :class:`pipeline.Caches` (toolsets, plans,
    the records plans start, and which of the client's requests were written, which decides
    whether the next is peeked): each gets what a whole read of it alone gives; a plan the cache
    hands out to several of them is the same plan at the end of the run (shared plans are never
    changed). Each request is sent twice, and every list and dict of the first one's record is
    changed before the second (as the flow's hooks, or a user's script, change it): the second
    gets the same record all the same, and the dump it starts ``flow.metadata`` with
    (:attr:`pipeline.Handled.record_json`) is its record's."""
    shared = pipeline.Caches()
    handed: list[tuple[Any, dict]] = []
    for turn in range(data.draw(st.integers(2, 6), label="turns")):
        body = data.draw(BODIES[name], label=f"body {turn}")
        raw = data.draw(spellings(body), label=f"raw {turn}")
        request = pipeline.Request(raw, "POST", PATHS[name], "api.example.com", {"user-agent": "agent/1"}.get)
        whole = pipeline.handle(request, pipeline.Settings(mode=mode, peek=False), pipeline.Caches())
        for again in (False, True):
            got = pipeline.handle(request, pipeline.Settings(mode=mode), shared)
            if isinstance(got, pipeline.Handled):
                handed.append((got.plan, got.plan.model_dump()))
                if got.record_json is not None:
                    assert orjson.loads(got.record_json) == got.record.dump()
            if isinstance(got, pipeline.Handled) and not got.verified:
                assert isinstance(whole, pipeline.Handled) and whole.content is None
                assert summary(got)[:-1] == summary(whole)[:-1]
            else:
                assert summary(got) == summary(whole)
            if isinstance(got, pipeline.Handled) and not again:
                vandalize(pipeline.fresh_record(got.record) if got.shared else got.record)
    for plan, dumped in handed:
        assert plan.model_dump() == dumped


def vandalize(record: Any) -> None:
    """Change every list and dict of ``record`` in place (and each list in its dicts)."""
    for field_name in type(record).model_fields:
        value = getattr(record, field_name)
        if isinstance(value, list):
            value.append(value[0] if value else "changed")
        elif isinstance(value, dict):
            for inner in value.values():
                if isinstance(inner, list):
                    inner.append("changed")
            value["changed"] = "changed"


def summary(result: pipeline.Handled | pipeline.Skipped | None) -> Any:
    """What a caller of :func:`pipeline.handle` acts on, comparable across calls."""
    if isinstance(result, pipeline.Handled):
        return (
            result.dialect.name,
            result.tools.names(),
            result.plan.model_dump(),
            result.record.dump(),
            result.wants_stream,
            result.windows,
            result.content,
            result.call_ids,
            result.verified,
        )
    return result


#: Names a ``keep`` filter accepts: each dialect's shells, a namespaced one, and others.
KEPT = st.sets(st.sampled_from(["Bash", "shell", "run_shell_command", "mcp__files__read", "Read", "read_file", ""]))


def _anthropic_calls(body: Any) -> list[tuple[str, Any]] | None:
    """``AnthropicMessages.transcript_calls``' contract, read the long way: a ``compaction`` block
    in any message, or the compaction summary in a user text, hides the calls (``None``); else each
    assistant ``tool_use`` and each ``<bash-input>`` command of a user text, in order."""
    out: list[tuple[str, Any]] = []
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
        if any(b.get("type") == "compaction" for b in blocks):
            return None
        if message.get("role") == "assistant":
            out += [
                (b["name"], b.get("input"))
                for b in blocks
                if b.get("type") == "tool_use" and isinstance(b.get("name"), str)
            ]
        elif message.get("role") == "user":
            texts = [content] if isinstance(content, str) else []
            texts += [b["text"] for b in blocks if b.get("type") == "text" and isinstance(b.get("text"), str)]
            for text in texts:
                if "This session is being continued from a previous conversation" in text:
                    return None
                for part in text.split("<bash-input>")[1:]:
                    out.append(("Bash", {"command": part.split("</bash-input>")[0]}))
    return out


@settings(max_examples=EXAMPLES, deadline=None)
@given(data=st.data(), name=st.sampled_from(sorted(BODIES)), kept=KEPT)
def test_the_earlier_calls_a_filter_keeps_are_the_calls_read_then_filtered(
    data: st.DataObject, name: str, kept: set[str]
) -> None:
    body = data.draw(BODIES[name], label="body")
    reader = dialects.by_name(name)
    every = reader.transcript_calls(body)
    filtered = reader.transcript_calls(body, kept.__contains__)
    assert filtered == (None if every is None else [call for call in every if call[0] in kept])
    if name == "anthropic":
        assert every == _anthropic_calls(body)


def test_the_five_agents_requests_are_peeked() -> None:
    """Every request of the five real agents in ``flows/agents`` is read by its dialect's peek
    (a Code Assist envelope excepted: read whole), and the pipeline hands out by peeking every one
    whose plan leaves it as sent, with the plan and record the whole read gives."""
    from mitmproxy import io as mio

    import harness
    from toolvocab.replay.flows import original_request

    peeked = handled = 0
    for path in sorted((harness.ROOT / "flows" / "agents").glob("*.mitm")):
        with path.open("rb") as fh:
            flows = [f for f in mio.FlowReader(fh).stream() if hasattr(f, "request")]
        for f in flows:
            raw = original_request(f)
            req = pipeline.Request(raw, f.request.method, f.request.path, f.request.pretty_host, f.request.headers.get)
            whole = pipeline.handle(req, pipeline.Settings(mode="repair", peek=False), pipeline.Caches())
            if not isinstance(whole, pipeline.Handled):
                continue
            handled += 1
            if "request" in jsonio.loads(raw):
                continue  # Code Assist
            assert whole.dialect.peek(f.request.method, f.request.path, raw) is not None, path.name
            got = pipeline.handle(req, pipeline.Settings(mode="repair"), pipeline.Caches())
            assert isinstance(got, pipeline.Handled)
            if whole.content is None:
                assert not got.verified, path.name
                assert got.record.dump() == whole.record.dump()
                peeked += 1
    assert handled >= 20 and peeked >= 10, (handled, peeked)


@pytest.mark.parametrize("name", sorted(PATHS))
def test_a_body_the_typed_decoder_cannot_read_is_read_whole(name: str) -> None:
    """Not JSON, a lone surrogate, a transcript of another type than a list: the peek says
    ``None`` and the whole read decides (here: left as sent, or read)."""
    dialect = dialects.by_name(name)
    assert dialect is not None
    for raw in (b"{", b'{"model":"\\ud800"}', b"[1]", b'{"messages":{},"input":5,"contents":"x"}', b"NaN"):
        assert dialect.peek("POST", PATHS[name], raw) is None, raw


@pytest.mark.parametrize(
    "name,body,peeked",
    [
        (
            "anthropic",
            {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_01", "name": "Bash"}]}]},
            True,
        ),
        (
            "anthropic",
            {
                "messages": [
                    {"role": "assistant", "content": [{"type": "tool_use", "id": "functions.Bash:0", "name": "Bash"}]}
                ]
            },
            False,
        ),
        (
            "anthropic",
            {"messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "0\n"}]}]},
            False,
        ),
        ("openai_responses", {"input": [{"type": "function_call", "call_id": "c" * 64, "name": "Bash"}]}, True),
        ("openai_responses", {"input": [{"type": "function_call_output", "call_id": "c" * 65}]}, False),
    ],
    ids=["anthropic-ok", "anthropic-kimi-id", "anthropic-newline", "responses-64", "responses-65"],
)
def test_a_replayed_id_the_upstream_rejects_is_aliased_by_the_whole_read(name: str, body: dict, peeked: bool) -> None:
    """The peek reads no body with a replayed id the upstream rejects: the whole read writes the
    body with the id aliased (``Handled.call_ids``), whichever way the pipeline was asked to read."""
    body = {**body, "tools": [{"name": "Bash"} if name == "anthropic" else {"type": "function", "name": "Bash"}]}
    raw = orjson.dumps(body)
    dialect = dialects.by_name(name)
    assert dialect is not None and (dialect.peek("POST", PATHS[name], raw) is not None) is peeked
    request = pipeline.Request(raw, "POST", PATHS[name], "api.example.com", {}.get)
    got = pipeline.handle(request, pipeline.Settings(mode="repair"), pipeline.Caches())
    assert isinstance(got, pipeline.Handled) and got.verified is not peeked
    assert (got.content is None) is peeked and bool(got.call_ids) is not peeked


def _sent_ids(name: str, body: dict) -> list[tuple[str, str]]:
    """``(kind, id)`` of each replayed call id in ``body``, in order: a call's, a result's."""
    if name == "anthropic":
        return [
            (b["type"], b["id"] if b["type"] == "tool_use" else b["tool_use_id"])
            for m in body["messages"]
            for b in m["content"]
        ]
    return [(i["type"], i["call_id"]) for i in body["input"] if "call_id" in i]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    name=st.sampled_from(["anthropic", "openai_responses"]),
    ids=st.lists(IDS, min_size=1, max_size=6),
    sentence=st.booleans(),
    layout=st.booleans(),
)
def test_every_replayed_id_goes_up_as_the_upstream_takes_it_with_the_body_written_anyhow(
    name: str, ids: list[str], sentence: bool, layout: bool
) -> None:
    """Replayed calls and their results under ids an upstream rejects or takes (Anthropic's pattern
    ``^[a-zA-Z0-9_-]+$``, maximhq/bifrost#5097; the Responses API's 64 characters,
    AstrBotDevs/AstrBot#7735), in a body the plan writes (the prompt sentence) or not, whole or
    with the transcript copied from the client's bytes (a layout): each rejected id goes up as one
    alias the upstream takes, at both ends of its pair, the same alias for the same id; every
    other id and every other byte of the transcript as sent; the body is what ``orjson`` writes."""
    if name == "anthropic":
        tools = [{"name": "Bash"}]
        pairs = [
            m
            for k, i in enumerate(ids)
            for m in (
                {"role": "assistant", "content": [{"type": "tool_use", "id": i, "name": "Bash", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": i, "content": f"out {k}"}]},
            )
        ]
        body: dict[str, Any] = {"model": "m", "messages": pairs, "tools": tools}
        body["system"] = "Say hi." if sentence else "Use Bash."
        rejects = lambda i: bool(i) and re.fullmatch(r"[a-zA-Z0-9_-]+", i) is None  # noqa: E731
    else:
        tools = [{"type": "function", "name": "Bash"}]
        items = [
            item
            for k, i in enumerate(ids)
            for item in (
                {"type": "function_call", "call_id": i, "name": "Bash", "arguments": "{}"},
                {"type": "function_call_output", "call_id": i, "output": f"out {k}"},
            )
        ]
        body = {"model": "m", "input": items, "tools": tools, "instructions": "Say hi." if sentence else "Use Bash."}
        rejects = lambda i: len(i) > 64  # noqa: E731
    raw = orjson.dumps(body)
    request = pipeline.Request(raw, "POST", PATHS[name], "api.example.com", {}.get)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonio, "LAYOUT_MIN_BYTES", 0 if layout else len(raw) + 1)
        got = pipeline.handle(request, pipeline.Settings(mode="auto"), pipeline.Caches())
    assert isinstance(got, pipeline.Handled)
    wanted = any(rejects(i) for i in ids)
    if got.content is None:
        assert not wanted and not sentence
        return
    sent = orjson.loads(got.content)
    assert got.content == orjson.dumps(sent)
    assert bool(got.plan.prompt_sentence) is sentence
    before, after = _sent_ids(name, body), _sent_ids(name, sent)
    assert [kind for kind, _ in after] == [kind for kind, _ in before]
    alias: dict[str, str] = {}
    for (_, old), (_, new) in zip(before, after, strict=True):
        if rejects(old):
            assert not rejects(new) and new != old and new not in ids
            assert alias.setdefault(old, new) == new  # one alias per id, at both ends
        else:
            assert new == old
    assert dict(got.call_ids) == alias
    assert len(set(alias.values())) == len(alias)
    key = "messages" if name == "anthropic" else "input"
    strip = lambda b: orjson.dumps({**b, key: None, "system": None, "instructions": None})  # noqa: E731
    assert strip(sent) == strip(body)  # the rest as sent


@pytest.mark.parametrize("blocks", [False, True], ids=["string", "blocks"])
def test_a_system_message_names_the_tools_however_it_is_read(blocks: bool) -> None:
    """A ``role: "system"`` message (a gateway's shape) counts as prompt text: naming the one
    declared tool there, it leaves ``auto`` mode no sentence to add. A string is peeked; blocks
    are read whole, and read there."""
    text = "Use Bash to run commands."
    message = {"role": "system", "content": [{"type": "text", "text": text}] if blocks else text}
    body = {"messages": [message, {"role": "user", "content": "hi"}], "tools": [{"name": "Bash"}]}
    raw = orjson.dumps(body)
    dialect = dialects.by_name("anthropic")
    assert dialect is not None
    peek = dialect.peek("POST", PATHS["anthropic"], raw)
    assert (peek is None) is blocks
    assert blocks or peek.system_texts == [text]
    request = pipeline.Request(raw, "POST", PATHS["anthropic"], "api.example.com", {}.get)
    got = pipeline.handle(request, pipeline.Settings(mode="auto"), pipeline.Caches())
    assert isinstance(got, pipeline.Handled) and got.verified is blocks
    assert got.content is None and got.plan.prompt_sentence is None
    without = orjson.dumps({**body, "messages": body["messages"][1:]})
    added = pipeline.handle(
        pipeline.Request(without, "POST", PATHS["anthropic"], "api.example.com", {}.get),
        pipeline.Settings(mode="auto"),
        pipeline.Caches(),
    )
    assert isinstance(added, pipeline.Handled) and added.plan.prompt_sentence is not None


@pytest.mark.parametrize("at", [0, 7, 8, 9])
def test_the_environment_context_is_read_from_the_first_eight_items_only(at: int) -> None:
    """Responses: Codex's ``<environment_context>`` counts in the first eight input items, as the
    whole read counts it (the peek decodes a later item's content only for the prompt's roles)."""
    items: list[dict] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": f"turn {k}"}]} for k in range(10)
    ]
    items[at]["content"] = [
        {"type": "input_text", "text": "<environment_context><shell>powershell</shell></environment_context>"}
    ]
    body = {"input": items, "tools": [{"type": "function", "name": "shell"}]}
    raw = orjson.dumps(body)
    dialect = dialects.by_name("openai_responses")
    assert dialect is not None
    peek = dialect.peek("POST", PATHS["openai_responses"], raw)
    assert peek is not None and peek.platform_texts == dialect.platform_texts(body)
    assert bool(peek.platform_texts) is (at < 8)


#: ``Authorization`` values of requests signed over their bytes: AWS Signature Version 4 (botocore,
#: https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html) and the schemes
#: built on it (Alibaba Cloud ACS3, Tencent Cloud TC3).
SIGNED = [
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261206/us-east-1/bedrock/aws4_request, "
    "SignedHeaders=accept;accept-encoding;content-type;host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
    "ACS3-HMAC-SHA256 Credential=YourAccessKeyId,SignedHeaders=host;x-acs-action;x-acs-content-sha256,Signature=06563a9e1b43f5dfe96b81484da74bceab24a1d853912eee15083a6f0f3283c0",
    "TC3-HMAC-SHA256 Credential=AKID/2019-02-25/cvm/tc3_request, SignedHeaders=content-type;host, Signature=2230eefd229f582d8b1b891af7107b91597240707d778ab3738f756258d7652c",
]


@pytest.mark.parametrize(
    ("authorization", "path", "scheme"),
    [
        (SIGNED[0], "/model/m/invoke", "AWS4-HMAC-SHA256"),
        (SIGNED[1], "/v1/chat/completions", "ACS3-HMAC-SHA256"),
        (SIGNED[2], "/v1/chat/completions", "TC3-HMAC-SHA256"),
        (
            None,
            "/model/m/invoke?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab12",
            "AWS4-HMAC-SHA256 (presigned URL)",
        ),
        (
            'Signature version="1",keyId="ocid1.tenancy.oc1..aaaa/ocid1.user.oc1..aaaa/20:3b",algorithm="rsa-sha256",'
            'headers="date (request-target) host content-length content-type x-content-sha256",signature="Gw=="',
            "/20231130/actions/v1/chat/completions",
            "HTTP Signatures",
        ),
        # a repeated Authorization, joined: the scheme is the signature's, not the first value's
        ("Bearer sk-x, " + SIGNED[0], "/model/m/invoke", "AWS4-HMAC-SHA256"),
        # a scheme token of the client's own is never repeated into the record
        (
            "\udcffBAD Credential=x, SignedHeaders=host, Signature=ab",
            "/model/m/invoke",
            "a signature with SignedHeaders",
        ),
        ("bce-auth-v1/AK/2026-12-06T00:00:00Z/1800/content-length;host/ab12", "/v2/chat", "bce-auth-v1"),
        ("acs AKID:FrDyRd7l+PkmSQG1jO4pqvmNgvs=", "/v1/chat/completions", "acs (Alibaba Cloud ROA)"),
        (None, "/v1/m:generateContent?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=ab", "GOOG4 (presigned URL)"),
        ("Bearer sk-ant-test", "/v1/messages", None),
        ("Bearer signature=abc", "/v1/messages", None),
        ("Bearer acs", "/v1/messages", None),
        ("AWS4-HMAC-SHA256 Credential=AKID/20261206/us-east-1/bedrock/aws4_request", "/model/m/invoke", None),
        (None, "/v1/messages?beta=true", None),
    ],
)
def test_a_signature_over_the_request_is_recognised(authorization: str | None, path: str, scheme: str | None) -> None:
    request = pipeline.Request(b"{}", "POST", path, "h", {"authorization": authorization}.get)
    assert pipeline.signature(request) == scheme


def test_a_signature_header_of_the_http_signatures_draft_is_recognised() -> None:
    headers = {"signature": 'keyId="k",algorithm="hs2019",headers="digest content-length",signature="YQ=="'}
    request = pipeline.Request(b"{}", "POST", "/v1/messages", "h", headers.get)
    assert pipeline.signature(request) == "HTTP Signatures"


def test_a_request_signed_by_rfc_9421_is_recognised() -> None:
    headers = {"signature-input": 'sig1=("@method" "content-digest");created=1618884473', "signature": "sig1=:YQ==:"}
    request = pipeline.Request(b"{}", "POST", "/v1/messages", "h", headers.get)
    assert pipeline.signature(request) == "HTTP Message Signatures"


def test_a_websocket_frame_is_never_taken_for_a_signed_request() -> None:
    """A Codex WebSocket's frames come after a handshake whose Authorization signs only the
    handshake: a frame is planned and written as any (the prompt sentence, here)."""
    frame = orjson.dumps(
        {
            "type": "response.create",
            "model": "gpt-5",
            "instructions": "Be brief.",
            "tools": [{"type": "function", "name": "shell", "parameters": {"type": "object"}}],
            "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        }
    )
    headers = {"authorization": SIGNED[0]}
    got = pipeline.handle(
        pipeline.Request(frame, "POST", "/v1/responses", "api.openai.com", headers.get),
        pipeline.Settings(mode="auto"),
        pipeline.Caches(),
        dialect=dialects.by_name("openai_responses"),
        accept=lambda body: isinstance(body, dict) and body.get("type") == "response.create",
    )
    assert isinstance(got, pipeline.Handled) and got.signed is None
    assert got.content is not None and got.plan.prompt_sentence is not None


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    data=st.data(),
    name=st.sampled_from(sorted(BODIES)),
    mode=st.sampled_from(["auto", "repair"]),
    peek=st.booleans(),
    authorization=st.sampled_from(SIGNED),
)
def test_a_request_signed_over_its_bytes_is_sent_as_signed(
    data: st.DataObject, name: str, mode: str, peek: bool, authorization: str
) -> None:
    """Whatever the body (names a grammar renames, repeated declarations, ids the upstream
    rejects, a prompt that would get the sentence), a signed request is never written: its
    bytes are the client's, no name is changed upstream, and the record says why."""
    body = data.draw(BODIES[name], label="body")
    raw = data.draw(spellings(body), label="raw")
    headers = {"authorization": authorization, "user-agent": "agent/1"}
    request = pipeline.Request(raw, "POST", PATHS[name], "api.example.com", headers.get)
    got = pipeline.handle(request, pipeline.Settings(mode=mode, peek=peek), pipeline.Caches())
    if isinstance(got, pipeline.Handled):
        assert got.content is None and got.call_ids == {}
        assert got.signed == authorization.split()[0]
        assert not got.plan.changes_request and got.plan.rename_map == {}
        assert any("signed over its bytes" in note for note in got.record.notes), got.record.notes
    unsigned = pipeline.handle(
        pipeline.Request(raw, "POST", PATHS[name], "api.example.com", {"user-agent": "agent/1"}.get),
        pipeline.Settings(mode=mode, peek=peek),
        pipeline.Caches(),
    )
    # the signature changes what is sent, never whether the request is this addon's
    assert (got is None) == (unsigned is None)
