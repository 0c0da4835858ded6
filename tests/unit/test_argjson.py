"""Malformed argument JSON: lossless repairs only, and never a completion of
truncated text. Each transform has its negative case next to it."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab.dialects.base import call_from_payload
from toolvocab.engine.argjson import describe_unparsed
from toolvocab.engine.argjson import repair_arguments
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action

EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))


@pytest.mark.parametrize(
    ("text", "value", "repairs"),
    [
        ('```json\n{"command": "ls"}\n```', {"command": "ls"}, ["code_fence"]),
        ('```\n{"command": "ls"}\n```\n', {"command": "ls"}, ["code_fence"]),
        ('{"command": "ls",}', {"command": "ls"}, ["trailing_comma"]),
        ('{"paths": ["a", "b",], "n": 1,\n}', {"paths": ["a", "b"], "n": 1}, ["trailing_comma"]),
        (
            '{"recursive": True, "limit": None, "hidden": False}',
            {"recursive": True, "limit": None, "hidden": False},
            ["python_literal"],
        ),
        ('{"content": "line 1\nline 2\tend"}', {"content": "line 1\nline 2\tend"}, ["control_character"]),
        ('"{\\"command\\": \\"ls\\"}"', {"command": "ls"}, ["double_encoded"]),
        ('```json\n{"a": True,}\n```', {"a": True}, ["code_fence", "trailing_comma", "python_literal"]),
    ],
)
def test_lossless_repair(text: str, value: dict[str, Any], repairs: list[str]) -> None:
    assert repair_arguments(text) == (value, repairs)


@pytest.mark.parametrize(
    "text",
    [
        '{"command": "rm -rf build/cache',  # cut off inside a string: never closed
        '{"command": "ls", "args": ["-la"',  # cut off inside an array
        '{"command": "ls",',  # cut off after a comma: the comma stays, nothing is closed
        "{'command': 'ls'}",  # single quotes: guessing the quoting
        '{"command" "ls"}',  # a missing colon: guessing
        '{"a": Truthy}',  # not a Python literal
        '{"text": "True, None,}"}',  # valid JSON: literals and commas inside strings are content
        '```json\n{"command": "ls"}',  # an unclosed fence
        'Here you go: {"command": "ls"}',  # prose around JSON is not a fence
        "[1, 2]",  # not an object
        '"just a string"',
        # A comma after an opening bracket, a comma or a colon is an elided element, not one
        # trailing a value ([,] has length 1 in JavaScript): dropping it would clear a list.
        '{"todos": [,]}',
        '{"todos": [ , ]}',
        "{,}",
        '{"a": {,}}',
        '{"paths": ["a",,]}',
        '{"edits": [{"old": "a", "new": "b"},{,}]}',
        '{"a":,}',
    ],
)
def test_never_repaired(text: str) -> None:
    assert repair_arguments(text) is None


def test_content_inside_strings_is_never_touched() -> None:
    # literals, commas and brackets inside strings are content, even when a repair happens elsewhere
    text = '{"note": "True, None, [1,], {a,}", "flag": True,}'
    assert repair_arguments(text) == (
        {"note": "True, None, [1,], {a,}", "flag": True},
        ["trailing_comma", "python_literal"],
    )


@pytest.mark.parametrize(
    ("text", "cut"), [('{"command": "rm -rf /tmp/x', True), ('{"a": 1', True), ("{'a': 1}", False)]
)
def test_the_record_says_why_it_was_left(text: str, cut: bool) -> None:
    assert ("cut off" in describe_unparsed(text)) is cut
    assert "left exactly as sent" in describe_unparsed(text)


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-(10**6), 10**6), st.text(max_size=12))
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(st.text(max_size=6), kids, max_size=3)),
    max_leaves=8,
)
OBJECTS = st.dictionaries(st.text(max_size=8), JSON_VALUES, min_size=1, max_size=4)


def _pythonish(value: Any) -> str:
    """``value`` written with Python literals and a trailing comma in every container."""
    if value is True:
        return "True"
    if value is False:
        return "False"
    if value is None:
        return "None"
    if isinstance(value, list):
        return "[" + "".join(_pythonish(v) + ", " for v in value) + "]"
    if isinstance(value, dict):
        return "{" + "".join(json.dumps(k) + ": " + _pythonish(v) + "," for k, v in value.items()) + "}"
    return json.dumps(value)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(OBJECTS, st.booleans(), st.booleans())
def test_every_lossless_spelling_reads_back_as_the_same_value(value: dict[str, Any], fence: bool, twice: bool) -> None:
    text = _pythonish(value)
    if fence:
        text = "```json\n" + text + "\n```"
    if twice and not fence:
        text = json.dumps(text)
        got = repair_arguments(text)
        # encoded twice AND python-ish inside: the inner text is not JSON, so not repaired
        assert got is None or got[0] == value
        return
    got = repair_arguments(text)
    if json.dumps(value) == text:
        assert got is None  # already JSON: nothing to repair
    else:
        assert got is not None and got[0] == value, text


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(OBJECTS, st.data())
def test_a_truncated_text_is_never_completed(value: dict[str, Any], data: st.DataObject) -> None:
    # Any proper prefix of an object's text that is not itself JSON stays unparsed: no repair
    # closes a string, an array or an object (a stream cut by max_tokens is left as sent).
    text = data.draw(st.sampled_from([json.dumps(value), _pythonish(value), json.dumps(value, indent=1)]))
    cut = data.draw(st.integers(1, len(text) - 1))
    prefix = text[:cut]
    # (the outer object's closing brace is the text's last character, so no proper prefix is a
    # whole object: anything parsed from one would be a completion)
    assert repair_arguments(prefix) is None, prefix


def test_declared_call_with_repaired_json_is_written_back() -> None:
    tool = declared_tool(
        "Bash", input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    )
    call = call_from_payload({"name": "Bash", "arguments": '{"command": "ls",}'})
    assert call.arguments == {"command": "ls"} and call.json_repairs == ["trailing_comma"]
    d = resolve(call, Toolset([tool]))
    assert d.action is Action.FIT and d.arguments_after == {"command": "ls"}
    assert [c.op for c in d.arg_changes] == ["repair_json"]


def test_renamed_call_with_repaired_json_is_written_back() -> None:
    tool = declared_tool(
        "Bash", input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    )
    call = call_from_payload({"name": "bash", "arguments": '```json\n{"command": "ls"}\n```'})
    d = resolve(call, Toolset([tool]))
    assert d.action is Action.RENAME and d.target == "Bash" and d.arguments_after == {"command": "ls"}


def test_truncated_arguments_are_left_and_the_reason_says_so() -> None:
    tool = declared_tool(
        "Bash", input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
    )
    call = call_from_payload({"name": "Bash", "arguments": '{"command": "rm -rf build/ca'})
    assert call.arguments is None
    d = resolve(call, Toolset([tool]))
    assert d.action is Action.KEEP and d.arguments_after is None and "cut off" in d.reason
    d = resolve(call.model_copy(update={"name": "shell"}), Toolset([tool]))
    assert d.action is Action.LEAVE and "cut off" in d.reason
