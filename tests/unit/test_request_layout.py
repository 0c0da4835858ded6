"""A changed request body goes up with every top-level value the plan cannot touch copied from the
client's bytes (a 2 MB transcript whose system prompt gains a sentence writes only the
prompt). Two things must hold for that to change nothing but cost:

* :func:`jsonio.rewrite` with a layout gives exactly the bytes ``orjson.dumps`` gives of the
  changed value, whatever was changed, added or removed among the ``touched`` keys;
* each dialect's ``request_keys(body, plan)`` names every top-level key its
  ``apply_request(body, plan)`` writes, adds or removes (a key it leaves out would reach the
  upstream unchanged: a rename or the prompt sentence lost on the way).
"""

from __future__ import annotations

import contextlib
import copy
import os
from collections.abc import Iterator
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab.dialects import DIALECTS
from toolvocab.engine import jsonio
from toolvocab.engine.grammar import GRAMMARS
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.plan import make_plan

#: Hypothesis examples per property (``TOOLVOCAB_PROPERTY_EXAMPLES``: ``.ci/run``'s long profile
#: sets 2000; quick default 300).
EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))

KEYS = st.text(st.sampled_from('ab"\\\u00e9\u2028/'), max_size=4)
LEAVES = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**64 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=8)
)
VALUES = st.recursive(
    LEAVES, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3), max_leaves=12
)


@contextlib.contextmanager
def no_threshold() -> Iterator[None]:
    """Every object body gets a layout (real bodies need :data:`jsonio.LAYOUT_MIN_BYTES`)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonio, "LAYOUT_MIN_BYTES", 0)
        yield


@settings(max_examples=EXAMPLES, deadline=None)
@given(body=st.dictionaries(KEYS, VALUES, max_size=6), data=st.data())
def test_rewrite_with_layout_is_orjson_dumps_of_the_change(body: dict[str, Any], data: st.DataObject) -> None:
    raw = orjson.dumps(body)
    value, unique, canonical = jsonio.loads_checked(raw)
    assert unique and canonical and value == body
    touched = set(
        data.draw(st.sets(st.sampled_from(list(body) + ["new", "other"]) if body else st.just("new")), label="touched")
    )
    with no_threshold():
        layout = jsonio.layout(raw, value, frozenset(touched))
    if layout is None:
        assert not body or set(body) <= touched
    else:
        assert set(layout) == set(body) - touched
        for key, (start, end) in layout.items():
            assert raw[start:end] == orjson.dumps(body[key])
    changed = copy.deepcopy(value)
    for key in sorted(touched):
        action = data.draw(st.sampled_from(["replace", "delete", "keep"]), label=f"{key!r}")
        if action == "replace":
            changed[key] = data.draw(VALUES, label=f"{key!r} value")
        elif action == "delete":
            changed.pop(key, None)
    got = jsonio.rewrite(raw, changed, unique_keys=True, finite=True, layout=layout)
    assert got == orjson.dumps(changed)


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    body=st.dictionaries(KEYS, VALUES, max_size=4),
    lists=st.dictionaries(KEYS, st.lists(VALUES, min_size=1, max_size=5), min_size=1, max_size=2),
    data=st.data(),
)
def test_rewrite_with_a_list_head_is_orjson_dumps_of_the_change(
    body: dict[str, Any], lists: dict[str, list[Any]], data: st.DataObject
) -> None:
    """A list value whose first ``n`` elements may change (``heads``): its later elements are
    located exactly, and whatever is changed, added before or removed among the first ``n``, the
    body written is ``orjson.dumps`` of the change. A head of the whole list, or of a key not
    touched or not a list, copies nothing of it."""
    body = {**body, **lists}
    raw = orjson.dumps(body)
    value, _, canonical = jsonio.loads_checked(raw)
    assert canonical
    keys = list(body)
    touched = frozenset(data.draw(st.sets(st.sampled_from(keys)), label="touched")) | {"new"}
    heads = {k: data.draw(st.integers(-1, len(v) + 1), label=f"{k!r} head") for k, v in lists.items()}
    heads |= data.draw(st.dictionaries(st.sampled_from(keys + ["new"]), st.integers(0, 2)), label="other heads")
    with no_threshold():
        layout = jsonio.layout(raw, value, touched, heads)
    kept = {k: n for k, n in heads.items() if k in touched and type(body.get(k)) is list and 0 <= n < len(body[k])}
    if layout is None:
        assert set(body) <= touched and not kept
    else:
        assert set(layout) == (set(body) - touched) | set(kept)
        for key, span in layout.items():
            if key in kept:
                start, end, count = span
                assert count == len(body[key]) - kept[key]
                assert raw[start:end] == orjson.dumps(body[key][kept[key] :])[1:-1]
            else:
                assert raw[span[0] : span[1]] == orjson.dumps(body[key])
    changed = copy.deepcopy(value)
    for key in sorted(touched):
        if key in kept:  # the head changed, the rest kept: each element as it was, in order
            head = data.draw(st.lists(VALUES, max_size=3), label=f"{key!r} new head")
            changed[key] = head + changed[key][kept[key] :]
        elif data.draw(st.booleans(), label=f"{key!r} replaced"):
            changed[key] = data.draw(VALUES, label=f"{key!r} value")
    got = jsonio.rewrite(raw, changed, unique_keys=True, finite=True, layout=layout)
    assert got == orjson.dumps(changed)


@settings(max_examples=EXAMPLES, deadline=None)
@given(body=st.dictionaries(KEYS, VALUES, min_size=1, max_size=4))
def test_only_orjson_spelling_is_canonical(body: dict[str, Any]) -> None:
    """Spaces, trailing whitespace, a top-level key repeated first or last (the last spelling
    parses to the same dict and repeats no value): not ``orjson.dumps``' bytes, so not
    ``canonical`` (no layout is taken from them), and the repeats are found."""
    raw = orjson.dumps(body)
    key = next(iter(body))
    first = b"{" + orjson.dumps(key) + b":0," + raw[1:]
    again = raw[:-1] + b"," + orjson.dumps(key) + b":" + orjson.dumps(body[key]) + b"}"  # parses to body itself
    for other in (raw.replace(b":", b": ", 1), raw + b" ", first, again):
        try:
            _, unique, canonical = jsonio.loads_checked(other)
        except ValueError:
            continue  # the space landed inside nothing a parser accepts
        assert not canonical
        if other in (first, again):
            assert not unique


def test_layout_from_the_threshold_and_for_a_canonical_object_only() -> None:
    small = {"a": "x" * 100, "b": 1}
    big = {"a": "x" * jsonio.LAYOUT_MIN_BYTES, "b": 1}
    raw = orjson.dumps(big)
    assert jsonio.layout(orjson.dumps(small), small, frozenset({"b"})) is None
    assert jsonio.layout(raw, big, frozenset({"b"})) == {"a": (5, len(raw) - 7)}
    assert jsonio.layout(raw, big, frozenset({"a", "b"})) is None  # nothing to copy
    spaced = raw.replace(b'":', b'": ')
    assert jsonio.layout(spaced, big, frozenset({"b"})) is None  # not orjson's bytes: keys not where they should be
    last = {"b": 1, "a": "x" * jsonio.LAYOUT_MIN_BYTES}  # the copied value last: only the end can tell
    assert jsonio.layout(orjson.dumps(last) + b" ", last, frozenset({"b"})) is None
    assert jsonio.layout(orjson.dumps(last), last, frozenset({"b"})) == {"a": (11, len(orjson.dumps(last)) - 1)}


def test_non_string_key_is_written_whole() -> None:
    raw = orjson.dumps({"a": 1})
    with no_threshold():
        layout = jsonio.layout(raw, {"a": 1}, frozenset())
    assert layout == {"a": (5, 6)}
    assert jsonio.rewrite(raw, {1: "x", "a": 1}, unique_keys=True, finite=True, layout=layout) in (
        None,
        b'{"1":"x","a":1}',
    )


# -- request_keys ------------------------------------------------------------------------------

#: Names the openai and gemini grammars reject (a dot, a leading digit, 70 characters) and ones
#: they take, so a plan renames some and not others.
NAMES = ["Read", "Bash", "web.search", "1tool", "x" * 70, "mcp__files__read"]
SYSTEMS = ["", "Use Read.", "Use Bash and web.search."]


def _bodies(dialect: str, names: list[str], transcript: list[str], system: str, where: str) -> dict[str, Any]:
    """A request of ``dialect`` declaring ``names``, replaying calls to ``transcript``, with
    ``system`` placed ``where`` the dialect can carry a system prompt (or nowhere)."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    if dialect == "anthropic":
        body: dict[str, Any] = {
            "model": "m",
            "tools": [{"name": n, "input_schema": schema} for n in names],
            "messages": [{"role": "user", "content": "hi"}],
        }
        for i, n in enumerate(transcript):
            body["messages"].append(
                {"role": "assistant", "content": [{"type": "tool_use", "id": f"t{i}", "name": n, "input": {}}]}
            )
            body["messages"].append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"t{i}",
                            "content": [{"type": "tool_reference", "tool_name": n}],
                        }
                    ],
                }
            )
        if where == "string":
            body["system"] = system
        elif where == "blocks":
            body["system"] = [{"type": "text", "text": system}]
        if names:
            body["tool_choice"] = {"type": "tool", "name": names[0]}
        return body
    if dialect == "openai_chat":
        body = {
            "model": "m",
            "tools": [{"type": "function", "function": {"name": n, "parameters": schema}} for n in names],
            "messages": [{"role": "user", "content": "hi"}],
        }
        if where == "legacy":
            body["functions"] = [{"name": n, "parameters": schema} for n in names]
            body["function_call"] = {"name": names[0]} if names else "auto"
        if where in ("string", "blocks"):
            body["messages"].insert(
                0, {"role": "system", "content": system if where == "string" else [{"type": "text", "text": system}]}
            )
        for i, n in enumerate(transcript):
            body["messages"].append(
                {
                    "role": "assistant",
                    "tool_calls": [{"id": f"c{i}", "type": "function", "function": {"name": n, "arguments": "{}"}}],
                }
            )
            body["messages"].append({"role": "tool", "tool_call_id": f"c{i}", "content": "ok"})
        if names:
            body["tool_choice"] = {"type": "function", "function": {"name": names[0]}}
        return body
    if dialect == "openai_responses":
        body = {
            "model": "m",
            "tools": [{"type": "function", "name": n, "parameters": schema} for n in names],
            "input": [{"role": "user", "content": "hi"}],
        }
        if where == "string":
            body["instructions"] = system
        elif where == "blocks":
            body["input"].insert(
                0, {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": system}]}
            )
            if not system:  # empty instructions beside it: the sentence goes to the message
                body["instructions"] = ""
        elif where == "legacy":
            body["input"].insert(0, {"type": "message", "role": "system", "content": system})
        for i, n in enumerate(transcript):
            body["input"].append({"type": "function_call", "call_id": f"c{i}", "name": n, "arguments": "{}"})
            body["input"].append({"type": "function_call_output", "call_id": f"c{i}", "output": "ok"})
        if names:
            body["tool_choice"] = {"type": "function", "name": names[0]}
        return body
    req: dict[str, Any] = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [{"functionDeclarations": [{"name": n, "parameters": schema} for n in names]}],
    }
    for n in transcript:
        req["contents"].append({"role": "model", "parts": [{"functionCall": {"name": n, "args": {}}}]})
        req["contents"].append({"role": "user", "parts": [{"functionResponse": {"name": n, "response": {}}}]})
    if where == "string":
        req["systemInstruction"] = {"parts": [{"text": system}]}
    elif where == "legacy":
        req["system_instruction"] = {"parts": [{"text": system}]}
    if names and where == "legacy":  # proto JSON's other spelling
        req["tool_config"] = {"function_calling_config": {"mode": "ANY", "allowed_function_names": names[:1]}}
    elif names:
        req["toolConfig"] = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": names[:1]}}
    return {"model": "m", "project": "p", "request": req} if where == "blocks" else req


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
@settings(max_examples=EXAMPLES, deadline=None)
@given(
    names=st.lists(st.sampled_from(NAMES), max_size=4),
    transcript=st.lists(st.sampled_from(NAMES + ["old.tool"]), max_size=3),
    system=st.sampled_from(SYSTEMS),
    where=st.sampled_from(["none", "string", "blocks", "legacy"]),
    sentence=st.booleans(),
)
def test_request_keys_name_every_key_apply_request_changes(
    dialect: Any, names: list[str], transcript: list[str], system: str, where: str, sentence: bool
) -> None:
    body = _bodies(dialect.name, names, transcript, system, where)
    tools = Toolset(dialect.declared_tools(body))
    plan = make_plan(
        tools,
        dialect.system_texts(body),
        add_sentence=sentence,
        grammar=GRAMMARS["openai"],
        transcript_names=dialect.transcript_names(body),
    )
    keys = dialect.request_keys(body, plan)
    heads = dialect.request_heads(body, plan)
    before = copy.deepcopy(body)
    dialect.apply_request(body, plan)
    changed = {k for k in before.keys() | body.keys() if before.get(k, KeyError) != body.get(k, KeyError)}
    if not plan.changes_request:  # the add-on takes no layout then: nothing may change
        assert not changed, (changed, plan)
    if keys is None:
        return  # any key may change: the body is written whole
    assert changed <= keys, (changed - keys, plan.rename_map, plan.prompt_sentence)
    for key, n in heads.items():  # after the first n elements, each as it was, at the list's end
        assert key in keys
        kept = before[key][n:]
        assert body[key][len(body[key]) - len(kept) :] == kept, (key, n, before[key], body[key])
