"""A repeated tool name is dropped only when its declaration repeats byte for byte.

``make_plan`` used to compare the engine's ``DeclaredTool`` models, which hold only what the
model reads (name, schema, description): two declarations of one name that differ in a field
such as ``strict``, ``cache_control``, ``defer_loading``, ``input_examples`` or annotations
counted as one, and the second was dropped from the request. Now only an entry whose canonical
JSON text equals an earlier one's is dropped; any other repeat is another tool and gets an alias.
Expectations come from how each case is built (a copy, or a copy with a field added or changed),
never from the code under test.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

import toolvocab.dialects as tvdialects
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.plan import declaration_text
from toolvocab.engine.plan import make_plan

DIALECTS = ["anthropic", "openai_chat", "openai_responses", "gemini"]
SCHEMA = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}


def entry(dialect: str, name: str, extra: dict[str, Any]) -> dict[str, Any]:
    """One wire declaration of ``name`` with ``extra`` fields beside the ones the model reads."""
    if dialect == "anthropic":
        return {"name": name, "description": "Read a file.", "input_schema": copy.deepcopy(SCHEMA), **extra}
    if dialect == "openai_chat":
        return {
            "type": "function",
            "function": {"name": name, "description": "Read a file.", "parameters": copy.deepcopy(SCHEMA), **extra},
        }
    if dialect == "openai_responses":
        return {
            "type": "function",
            "name": name,
            "description": "Read a file.",
            "parameters": copy.deepcopy(SCHEMA),
            **extra,
        }
    return {"name": name, "description": "Read a file.", "parametersJsonSchema": copy.deepcopy(SCHEMA), **extra}


def body_for(dialect: str, entries: list[dict[str, Any]]) -> dict[str, Any]:
    if dialect == "anthropic":
        return {"model": "m", "max_tokens": 10, "tools": entries, "messages": [{"role": "user", "content": "hi"}]}
    if dialect == "openai_chat":
        return {"model": "m", "tools": entries, "messages": [{"role": "user", "content": "hi"}]}
    if dialect == "openai_responses":
        return {"model": "m", "tools": entries, "input": "hi"}
    return {"tools": [{"functionDeclarations": entries}], "contents": [{"role": "user", "parts": [{"text": "hi"}]}]}


def sent_names(dialect: str, body: dict[str, Any]) -> list[str]:
    if dialect == "openai_chat":
        return [t["function"]["name"] for t in body["tools"]]
    if dialect == "gemini":
        return [d["name"] for t in body["tools"] for d in t["functionDeclarations"]]
    return [t["name"] for t in body["tools"]]


def plan_for(dialect: str, body: dict[str, Any]):
    d = tvdialects.by_name(dialect)
    tools = Toolset(d.declared_tools(body))
    return make_plan(tools, d.system_texts(body), add_sentence=False, transcript_names=d.transcript_names(body)), d


#: Fields the model does not read, per dialect, with a value a client sends.
EXTRAS = {
    "anthropic": [
        {"cache_control": {"type": "ephemeral"}},
        {"defer_loading": True},
        {"input_examples": [{"file_path": "/a"}]},
        {"strict": True},
    ],
    "openai_chat": [{"strict": True}, {"x-annotations": {"readOnlyHint": True}}],
    "openai_responses": [{"strict": True}, {"defer_loading": True}],
    "gemini": [{"behavior": "NON_BLOCKING"}, {"response": {"type": "string"}}],
}


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("k", range(4))
def test_a_repeat_differing_only_in_a_field_the_model_ignores_is_another_tool(dialect: str, k: int) -> None:
    extras = EXTRAS[dialect]
    if k >= len(extras):
        pytest.skip("fewer fields for this dialect")
    first, second = entry(dialect, "Read", {}), entry(dialect, "Read", extras[k])
    body = body_for(dialect, [first, second])
    plan, d = plan_for(dialect, body)
    alias = plan.duplicates["Read"][0]
    assert alias is not None and alias != "Read"
    assert d.apply_request(body, plan)
    assert sent_names(dialect, body) == ["Read", alias]  # both declarations still go upstream
    assert any(r.why == "duplicate" and "differs" in r.detail for r in plan.renames)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_exact_repeat_is_dropped_whatever_its_key_order(dialect: str) -> None:
    first = entry(dialect, "Read", {"strict": True})
    second = json.loads(json.dumps(first))
    if dialect == "openai_chat":
        second["function"] = dict(reversed(list(second["function"].items())))
    second = dict(reversed(list(second.items())))
    body = body_for(dialect, [first, second])
    plan, d = plan_for(dialect, body)
    assert plan.duplicates == {"Read": [None]}
    assert d.apply_request(body, plan)
    assert sent_names(dialect, body) == ["Read"]


@pytest.mark.parametrize("dialect", DIALECTS)
@pytest.mark.parametrize("a, b", [(True, 1), (1, 1.0), (0, False)])
def test_values_python_calls_equal_are_different_declarations(dialect: str, a: Any, b: Any) -> None:
    body = body_for(dialect, [entry(dialect, "Read", {"strict": a}), entry(dialect, "Read", {"strict": b})])
    plan, _ = plan_for(dialect, body)
    assert plan.duplicates["Read"][0] is not None


def test_engine_built_tools_without_wire_text_still_compare_as_models() -> None:
    read = declared_tool("Read", input_schema=SCHEMA)
    plan = make_plan(Toolset([read, declared_tool("Read", input_schema=SCHEMA)]), [], add_sentence=False)
    assert plan.duplicates == {"Read": [None]}


def test_declaration_text_is_canonical() -> None:
    assert declaration_text({"b": 1, "a": {"d": [1, True], "c": "é"}}) == '{"a":{"c":"\\u00e9","d":[1,true]},"b":1}'
    assert declaration_text({"n": 123456789012345678901234567890}) == '{"n":123456789012345678901234567890}'
    assert declaration_text({"s": "\ud800"}) == '{"s":"\\ud800"}'
    assert declaration_text({"x": float("nan")}) is None


# -- property -------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**70), 2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)
EXTRA_KEYS = st.sampled_from(
    ["strict", "cache_control", "defer_loading", "input_examples", "annotations", "x-meta", "title"]
)


@settings(max_examples=300, deadline=None)
@given(
    dialect=st.sampled_from(DIALECTS),
    extras=st.dictionaries(EXTRA_KEYS, JSON_VALUES, max_size=3),
    change=st.sampled_from(["copy", "add", "alter", "remove"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_property_only_byte_identical_repeats_are_dropped(
    dialect: str, extras: dict[str, Any], change: str, seed: int
) -> None:
    rnd = random.Random(seed)
    first = entry(dialect, "Read", extras)
    fields = copy.deepcopy(extras)
    if change == "add":
        key = next(
            k
            for k in (
                "strict",
                "cache_control",
                "defer_loading",
                "input_examples",
                "annotations",
                "x-meta",
                "title",
                "x-other",
            )
            if k not in fields
        )
        fields[key] = rnd.choice([True, 0, "", {"type": "ephemeral"}, [1]])
    elif change == "alter" and fields:
        key = rnd.choice(sorted(fields))
        # A value of another JSON type (or another string): a different text whatever it was.
        old = fields[key]
        fields[key] = ["changed", old] if not isinstance(old, list) else {"was": old}
    elif change == "remove" and fields:
        del fields[rnd.choice(sorted(fields))]
    else:
        change = "copy"
    second = entry(dialect, "Read", dict(sorted(fields.items(), key=lambda _: rnd.random())))  # any key order
    body = body_for(dialect, [first, second])
    plan, d = plan_for(dialect, body)
    if change == "copy":
        assert plan.duplicates == {"Read": [None]}
        expected = ["Read"]
    else:
        alias = plan.duplicates["Read"][0]
        assert alias is not None
        expected = ["Read", alias]
    d.apply_request(body, plan)
    assert sent_names(dialect, body) == expected


#: Anthropic's provider-defined tools (a ``type`` other than ``custom``): their names are fixed.
PROVIDER_TYPES = ["web_search_20250305", "bash_20250124", "text_editor_20250728", "code_execution_20250522"]


def _canonical(entry: dict[str, Any]) -> str:
    return json.dumps(entry, sort_keys=True, separators=(",", ":"))


@settings(max_examples=300, deadline=None)
@given(
    entries=st.lists(
        st.tuples(
            st.sampled_from(["web_search", "bash", "Read"]),
            st.sampled_from(["function", "custom", *PROVIDER_TYPES]),
            st.sampled_from([{}, {"max_uses": 2}, {"cache_control": {"type": "ephemeral"}}]),
        ),
        min_size=1,
        max_size=6,
    )
)
def test_property_no_declaration_but_an_exact_repeat_leaves_the_request(
    entries: list[tuple[str, str, dict[str, Any]]],
) -> None:
    """Whatever mix of client and provider tools repeats a name, every declaration that is not a
    byte-for-byte repeat of an earlier one goes upstream: a provider tool exactly as declared, a
    client tool as declared or under another name, and in the client's order. Expected from the
    entries as built: an earlier canonical text equal to an entry's is the only reason to drop it."""
    wire = []
    for name, kind, extra in entries:
        if kind == "function":
            wire.append({"name": name, "input_schema": {"type": "object"}, **extra})
        elif kind == "custom":
            wire.append({"type": "custom", "name": name, "input_schema": {"type": "object"}, **extra})
        else:
            wire.append({"type": kind, "name": name, **extra})
    body = body_for("anthropic", copy.deepcopy(wire))
    plan, d = plan_for("anthropic", body)
    d.apply_request(body, plan)
    seen: set[str] = set()
    expected = []
    for e in wire:
        if _canonical(e) not in seen:
            expected.append(e)
        seen.add(_canonical(e))
    sent = body["tools"]
    assert len(sent) == len(expected), f"sent {sent}, expected every non-repeat of {wire}"
    for got, want in zip(sent, expected):
        if want.get("type") in (None, "custom"):
            assert {**got, "name": want["name"]} == want  # only the name may change
        else:
            assert got == want  # a provider tool's name is its definition
