"""Model families' control tokens glued to a call's edges (toolvocab/engine/tokens.py).

GLM's ``"name": "tool_12</arg_value>"`` (fw-ai-external/python-sdk#119), a key ``"path</arg_key>"``
(vllm-project/vllm PR #54971), ``{"command": "ls"}<|call|>`` (mastra-ai/mastra PR #12823): the
token goes when what remains is exactly one declared name or schema key, at those edges only,
never inside a value and never onto a key the call already carries. Each positive case has its
negative twin; the properties check values and collisions over generated inputs.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from harness.dialects import context
from toolvocab.dialects.openai_chat import DIALECT as CHAT
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import ToolCall
from toolvocab.engine.tokens import CONTROL_TOKENS
from toolvocab.engine.tokens import strip_after_json
from toolvocab.engine.tokens import strip_glued

EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))
STR = {"type": "string"}
OPEN = {"type": "object", "properties": {"path": STR, "mode": STR}, "required": ["path"]}
TOOL = DeclaredTool(name="tool_12", input_schema=OPEN)
BASH = DeclaredTool(
    name="Bash", input_schema={"type": "object", "properties": {"command": STR}, "required": ["command"]}
)
TOOLS = Toolset([TOOL, BASH])


def decide(name: str, arguments: Any = None, raw: str | None = None, tools: Toolset = TOOLS) -> Any:
    call = ToolCall.read(name, raw) if raw is not None else ToolCall(name=name, arguments=arguments)
    return resolve(call, tools)


# -- the token lists ------------------------------------------------------------------------------


def test_strip_glued_takes_only_tokens_written_at_the_end() -> None:
    assert strip_glued("tool_12</arg_value>") == "tool_12"
    assert strip_glued("path</arg_key></arg_value>") == "path"
    assert strip_glued("Bash<|call|>") == "Bash"
    assert strip_glued("tool_12") is None
    assert strip_glued("</arg_value>") is None  # nothing would remain
    assert strip_glued("tool_12 </arg_value>") is None  # not glued: a space between
    assert strip_glued("tool_12</foo>") is None  # no family's token
    assert strip_glued("</arg_value>tool_12") is None  # only at the end


def test_strip_after_json_needs_an_object_before_the_token() -> None:
    assert strip_after_json('{"command": "ls"}<|call|>') == '{"command": "ls"}'
    assert strip_after_json('{"command": "ls"} <|call|>\n') == '{"command": "ls"}'
    assert strip_after_json('{"command": "ls"}') is None
    assert strip_after_json('{"command": "ls<|call|>') is None  # cut off inside a string: never completed


# -- names ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("token", ["</arg_value>", "</arg_key>", "</tool_call>", "<|call|>", "<|end|>"])
def test_a_token_glued_to_a_name_goes_when_one_declared_name_remains(token: str) -> None:
    d = decide("tool_12" + token, {"path": "a"})
    assert d.action is Action.RENAME and d.target == "tool_12", d.reason
    assert d.arguments_after is None  # the arguments as sent


@pytest.mark.parametrize(
    "name",
    [
        "tool_13</arg_value>",  # what remains is not declared
        "tool_12</foo>",  # not a family's token
        "tool_12 </arg_value>x",  # text after the token
        "</arg_value>",  # nothing remains
    ],
)
def test_a_name_that_does_not_leave_one_declared_name_is_left(name: str) -> None:
    d = decide(name, {"path": "a"})
    assert d.action is Action.LEAVE and d.target is None, d.reason


def test_a_cleaned_name_that_folds_to_two_declared_tools_is_left() -> None:
    tools = Toolset([TOOL, DeclaredTool(name="Tool12", input_schema=OPEN)])
    d = decide("tool-12</arg_value>", {"path": "a"}, tools=tools)
    assert d.action is Action.LEAVE and d.target is None, d.reason


# -- keys -----------------------------------------------------------------------------------------


def test_a_token_glued_to_a_key_goes_when_one_declared_key_remains() -> None:
    d = decide("tool_12", {"path</arg_key>": "a"})
    assert d.action is Action.FIT and d.arguments_after == {"path": "a"}, d.reason
    assert [(c.op, c.key, c.to) for c in d.arg_changes] == [("unglue_key", "path</arg_key>", "path")]
    # An optional key on an open schema too: the client would have ignored mode</arg_key>.
    d = decide("tool_12", {"path": "a", "mode</arg_key>": "append"})
    assert d.action is Action.FIT and d.arguments_after == {"path": "a", "mode": "append"}, d.reason


@pytest.mark.parametrize(
    "arguments",
    [
        {"path</arg_key>": "a", "path": "b"},  # collides with a key the call carries
        {"path</arg_key>": "a", "path</arg_value>": "b"},  # two keys clean to one
        {"path": "a", "size</arg_key>": 1},  # what remains is not declared
        {"path": "a", "mode</foo>": "x"},  # not a family's token
    ],
)
def test_a_key_that_does_not_leave_one_free_declared_key_is_not_renamed(arguments: dict) -> None:
    d = decide("tool_12", arguments)
    assert d.arguments_after is None or set(d.arguments_after) == set(arguments), d.reason
    assert not any(c.op == "unglue_key" for c in d.arg_changes)


# -- the end of the argument text ---------------------------------------------------------------


def test_a_token_after_complete_json_goes() -> None:
    d = decide("Bash", raw='{"command": "ls"}<|call|>')
    assert d.action is Action.FIT and d.arguments_after == {"command": "ls"}, d.reason
    assert [c.after for c in d.arg_changes if c.op == "repair_json"] == [["control_token"]]


@pytest.mark.parametrize(
    "raw",
    [
        '{"command": "ls<|call|>',  # cut off inside the value: never completed
        '{"command": "ls"<|call|>',  # the object is not closed
        '{"command": "ls"}<|call|> and more',  # text after the token
    ],
)
def test_argument_text_a_token_does_not_end_whole_is_left(raw: str) -> None:
    d = decide("Bash", raw=raw)
    assert d.action is Action.KEEP and d.arguments_after is None, d.reason


def test_a_chat_answer_reaches_the_client_without_the_tokens() -> None:
    body = {
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "tool_12</arg_value>", "arguments": '{"path</arg_key>": "a"}<|call|>'},
                        }
                    ],
                },
            }
        ]
    }

    class Resolver:
        tools = TOOLS

        def __call__(self, call: ToolCall) -> Any:
            return resolve(call, TOOLS)

    assert CHAT.rewrite_response(body, context(Resolver())) is True
    fn = body["choices"][0]["message"]["tool_calls"][0]["function"]
    assert fn["name"] == "tool_12"
    assert json.loads(fn["arguments"]) == {"path": "a"}


# -- properties -----------------------------------------------------------------------------------

TOKENS = st.sampled_from(CONTROL_TOKENS)
TEXT = st.lists(st.sampled_from(list('ab /.-_x{}"') + list(CONTROL_TOKENS)), max_size=8).map("".join)
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(
    path=TEXT,
    mode=TEXT,
    glue_path=st.one_of(st.none(), TOKENS),
    glue_mode=st.one_of(st.none(), TOKENS),
    also_plain=st.booleans(),
)
def test_values_never_change_and_a_key_never_lands_on_one_the_call_carries(
    path: str, mode: str, glue_path: str | None, glue_mode: str | None, also_plain: bool
) -> None:
    arguments: dict[str, Any] = {"path" + (glue_path or ""): path, "mode" + (glue_mode or ""): mode}
    if also_plain:
        arguments.setdefault("path", "other")  # a collision for a glued path
    d = decide("tool_12", arguments)
    after = d.arguments_after if d.arguments_after is not None else arguments
    # Every value reaches the client exactly as sent, under one key each.
    assert sorted(map(json.dumps, after.values())) == sorted(map(json.dumps, arguments.values()))
    renamed = {c.key: c.to for c in d.arg_changes if c.op == "unglue_key"}
    for key, to in renamed.items():
        assert strip_glued(key) == to and to not in arguments and to in OPEN["properties"]
        assert after[to] == arguments[key]


@SETTINGS
@given(name=st.sampled_from(["tool_12", "Bash", "tool_13", "bash"]), tokens=st.lists(TOKENS, min_size=1, max_size=3))
def test_a_glued_name_resolves_as_its_clean_name_does(name: str, tokens: list[str]) -> None:
    args = {"path": "a"} if name.startswith("tool") else {"command": "ls"}
    glued = decide(name + "".join(tokens), args)
    clean = decide(name, args)
    assert glued.target == clean.target
    assert (glued.arguments_after or args) == (clean.arguments_after or args)
