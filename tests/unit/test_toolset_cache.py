"""The request pipeline builds a request's :class:`Toolset` once per distinct declarations section
(``pipeline.Caches``), from the whole parsed body or from the sections a peek kept as sent:
whatever else the bodies hold, the tools a flow gets are exactly the tools its own body declares."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab import dialects
from toolvocab.dialects import pipeline
from toolvocab.dialects import pipeline as core_module
from toolvocab.engine.ladder import Toolset

NAMES = st.sampled_from(["Read", "Bash", "read_file", "shell", "mcp__files__read", "Edit"])
SCHEMAS = st.sampled_from(
    [
        {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
        {"type": "object", "properties": {"path": {"type": "string"}}},
        {"type": "object", "properties": {"command": {"type": "array", "items": {"type": "string"}}}},
    ]
)
DESCRIPTIONS = st.sampled_from([None, "Reads a file.", "Runs a command."])
TEXT = st.text(max_size=12)


@st.composite
def anthropic_body(draw: Any) -> dict:
    tools = []
    for name in draw(st.lists(NAMES, max_size=4)):
        tool: dict[str, Any] = {"name": name, "input_schema": draw(SCHEMAS)}
        if (d := draw(DESCRIPTIONS)) is not None:
            tool["description"] = d
        if draw(st.booleans()) and name == "Bash":
            tool = {"type": "bash_20250124", "name": "bash"}
        tools.append(tool)
    return {
        "model": draw(TEXT),
        "system": draw(TEXT),
        "tools": tools,
        "messages": [{"role": "user", "content": draw(TEXT)}],
    }


@st.composite
def chat_body(draw: Any) -> dict:
    body: dict[str, Any] = {"model": draw(TEXT), "messages": [{"role": "system", "content": draw(TEXT)}]}
    body["tools"] = [
        {"type": "function", "function": {"name": n, "parameters": draw(SCHEMAS)}}
        for n in draw(st.lists(NAMES, max_size=3))
    ]
    if draw(st.booleans()):  # the legacy field: part of the declarations too
        body["functions"] = [{"name": n, "parameters": draw(SCHEMAS)} for n in draw(st.lists(NAMES, max_size=2))]
    return body


@st.composite
def responses_body(draw: Any) -> dict:
    tools: list[Any] = [
        {"type": "function", "name": n, "parameters": draw(SCHEMAS)} for n in draw(st.lists(NAMES, max_size=3))
    ]
    if draw(st.booleans()):
        tools.append(
            {
                "type": "namespace",
                "name": draw(st.sampled_from(["mcp__files__", "mcp__git__"])),
                "tools": [
                    {"type": "function", "name": n, "parameters": draw(SCHEMAS)}
                    for n in draw(st.lists(NAMES, max_size=2))
                ],
            }
        )
    return {
        "model": draw(TEXT),
        "instructions": draw(TEXT),
        "input": [{"role": "user", "content": draw(TEXT)}],
        "tools": tools,
    }


@st.composite
def gemini_body(draw: Any) -> dict:
    tools = [
        {
            "functionDeclarations": [
                {"name": n, "parametersJsonSchema": draw(SCHEMAS)} for n in draw(st.lists(NAMES, max_size=3))
            ]
        }
    ]
    request = {"contents": [{"role": "user", "parts": [{"text": draw(TEXT)}]}], "tools": tools}
    if draw(st.booleans()):
        # A Code Assist envelope: the tools inside it count; a decoy "tools" beside it does not.
        decoy = [{"functionDeclarations": [{"name": draw(NAMES)}]}] if draw(st.booleans()) else None
        body: dict[str, Any] = {"model": draw(TEXT), "request": request}
        if decoy is not None:
            body["tools"] = decoy
        return body
    return request


PATHS = {
    "anthropic": "/v1/messages",
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "gemini": "/v1beta/models/gemini-2.5-pro:generateContent",
}
BODIES = {
    "anthropic": anthropic_body(),
    "openai_chat": chat_body(),
    "openai_responses": responses_body(),
    "gemini": gemini_body(),
}


def _shape(tools: Toolset) -> list[tuple]:
    return [
        (
            t.name,
            t.namespace,
            t.kind,
            orjson.dumps(t.input_schema, option=orjson.OPT_SORT_KEYS),
            t.description,
            t.capability,
            t.declaration,
        )
        for t in tools.tools
    ]


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_each_flow_gets_the_tools_its_own_body_declares(data: Any) -> None:
    """A run of requests (tools drawn from a small pool, so sections repeat; system, transcript
    and model differ every time; all four dialects interleaved): the Toolset the hook builds
    equals one built afresh from that body."""
    core = pipeline.Caches()
    for _ in range(data.draw(st.integers(min_value=2, max_value=12))):
        name = data.draw(st.sampled_from(sorted(BODIES)))
        body = data.draw(BODIES[name])
        dialect = dialects.by_name(name)
        assert dialect is not None
        expected = _shape(Toolset(dialect.declared_tools(body)))
        assert _shape(core.toolset(dialect, body)) == expected
        peek = dialect.peek("POST", PATHS[name], orjson.dumps(body))
        if name == "gemini" and "request" in body:
            assert peek is None  # a Code Assist envelope is read whole
        else:
            assert peek is not None and _shape(core.peeked_toolset(dialect, peek)) == expected


def test_a_repeated_section_is_read_once_and_the_cache_is_bounded(monkeypatch: Any) -> None:
    """The same tools section on every turn is read into models once; distinct sections beyond
    :data:`TOOLSET_CACHE` push out the oldest; a section longer than
    :data:`TOOLSET_CACHE_BYTES` or one orjson cannot write (an integer beyond 64 bits) is read
    afresh, never cached."""
    dialect = dialects.by_name("anthropic")
    assert dialect is not None
    reads = []
    real = type(dialect).declared_tools
    monkeypatch.setattr(type(dialect), "declared_tools", lambda self, body: reads.append(1) or real(self, body))
    core = pipeline.Caches()
    tools = [{"name": "Read", "input_schema": {"type": "object"}}]
    for turn in range(5):
        body = {
            "model": "m",
            "system": f"turn {turn}",
            "tools": tools,
            "messages": [{"role": "user", "content": str(turn)}],
        }
        assert core.toolset(dialect, body).names() == ["Read"]
    assert len(reads) == 1
    for k in range(core_module.TOOLSET_CACHE + 10):
        core.toolset(dialect, {"tools": [{"name": f"T{k}"}], "messages": []})
    assert len(core.toolsets) == core_module.TOOLSET_CACHE
    reads.clear()
    monkeypatch.setattr(core_module, "TOOLSET_CACHE_BYTES", 40)
    long = {"tools": [{"name": "Read", "description": "x" * 40}], "messages": []}
    assert core.toolset(dialect, long).tools[0].description == "x" * 40
    core.toolset(dialect, long)
    assert len(reads) == 2  # longer than the bound: read each time, never kept
    reads.clear()
    big = {"tools": [{"name": "Read", "input_schema": {"maxLength": 2**70}}], "messages": []}
    assert core.toolset(dialect, big).tools[0].input_schema == {"maxLength": 2**70}
    core.toolset(dialect, big)
    assert len(reads) == 2


def test_a_toolset_the_cache_does_not_hold_is_planned_uncached(monkeypatch: Any) -> None:
    """A tools section over :data:`TOOLSET_CACHE_BYTES` gets a new Toolset on every request: its
    plan is made afresh and no plan-cache entry keeps that Toolset alive; a cached one is planned
    once."""
    monkeypatch.setattr(core_module, "TOOLSET_CACHE_BYTES", 200)
    caches = pipeline.Caches()
    settings_ = pipeline.Settings(mode="auto")
    # kept: one plan per cached Toolset, and a section read whole and one peeked are two entries
    for tools, kept in (([{"name": "Read", "description": "x" * 300}], 0), ([{"name": "Read"}], 2)):
        plans: list[Any] = []  # kept alive: their ids stay distinct
        for turn in range(3):
            body = {
                "model": "m",
                "system": "s Read",
                "tools": tools,
                "messages": [{"role": "user", "content": str(turn)}],
            }
            request = pipeline.Request(
                orjson.dumps(body), "POST", "/v1/messages", "api.anthropic.com", lambda name: None
            )
            for peek in (True, False):
                settings_.peek = peek
                handled = pipeline.handle(request, settings_, caches)
                assert isinstance(handled, pipeline.Handled) and handled.verified is not peek
                plans.append(handled.plan)
        assert len(caches.plans._plans) == kept
        # a cached Toolset's plan is handed out itself, turn after turn; an uncached one afresh
        assert len({id(p) for p in plans}) == (kept or 6)
