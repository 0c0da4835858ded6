"""The request-side plan: whole-word mentions and the one prompt sentence."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import Plan
from toolvocab.engine.plan import make_plan
from toolvocab.engine.plan import mentions
from toolvocab.engine.plan import prompt_sentence


def toolset(*names: str, provider: tuple[str, ...] = (), freeform: tuple[str, ...] = ()) -> Toolset:
    tools = [declared_tool(n, input_schema={"type": "object", "properties": {}}) for n in names]
    tools += [declared_tool(n, kind=ToolKind.PROVIDER) for n in provider]
    tools += [declared_tool(n, kind=ToolKind.FREEFORM) for n in freeform]
    return Toolset(tools)


# --- mentions ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "Use the Bash tool to run commands.",
        "Bash",
        "(Bash)",
        "`Bash`",
        "tools: Read, Bash, Edit",
        "Bash-compatible",
        "run it with Bash.",
        "Bash\nnext line",
        "call 'Bash'",
    ],
)
def test_mentions_whole_word(text: str) -> None:
    assert mentions(text, "Bash")


@pytest.mark.parametrize(
    "text",
    [
        "use BashOutput to read output",
        "MyBash is different",
        "Bash_2 is an alias",
        "mcp__x__Bash",
        "Bash2",
        "use bash",  # case-sensitive: the sentence exists to give the exact spelling
        "BASH",
        "",
    ],
)
def test_mentions_rejects_partial_or_differently_cased(text: str) -> None:
    assert not mentions(text, "Bash")


@pytest.mark.parametrize(
    ("text", "name", "expected"),
    [
        ("call read_file first", "read_file", True),
        ("call read_file_v2 first", "read_file", False),
        ("call pre_read_file first", "read_file", False),
        ("use functions.read here", "functions.read", True),
        ("use functionsXread here", "functions.read", False),  # the dot is literal, not a regex wildcard
        ("mcp__github__create_issue opens an issue", "mcp__github__create_issue", True),
        ("the create_issue tool", "mcp__github__create_issue", False),
        ("apply_patch(", "apply_patch", True),
    ],
)
def test_mentions_names_with_separators(text: str, name: str, expected: bool) -> None:
    assert mentions(text, name) is expected


# --- prompt_sentence --------------------------------------------------------------------------


def test_sentence_lists_only_unmentioned_client_tools() -> None:
    tools = toolset("Bash", "Read", "Edit", provider=("web_search",), freeform=("apply_patch",))
    sentence, missing = prompt_sentence(tools, ["You can use Bash and Read."])
    assert missing == ["Edit", "apply_patch"]
    assert sentence is not None
    assert "Edit" in sentence and "apply_patch" in sentence
    assert not mentions(sentence, "Bash") and not mentions(sentence, "Read")
    assert "web_search" not in sentence


def test_provider_tools_are_never_named() -> None:
    tools = toolset("Bash", provider=("web_search", "code_execution"))
    sentence, missing = prompt_sentence(tools, ["Use Bash."])
    assert sentence is None and missing == []


def test_no_sentence_when_every_client_tool_is_mentioned() -> None:
    tools = toolset("Bash", "Read")
    assert prompt_sentence(tools, ["Tools: Bash.", "Also Read."]) == (None, [])


def test_no_sentence_for_an_empty_tool_list() -> None:
    assert prompt_sentence(Toolset([]), ["anything"]) == (None, [])


def test_mentions_across_several_system_texts_count() -> None:
    tools = toolset("Bash", "Read", "Write")
    _, missing = prompt_sentence(tools, ["Use Bash", "and Read"])
    assert missing == ["Write"]


def test_a_name_only_inside_a_longer_identifier_is_unmentioned() -> None:
    tools = toolset("Bash", "Read")
    sentence, missing = prompt_sentence(tools, ["BashOutput and ReadMcpResourceTool are available"])
    assert missing == ["Bash", "Read"]
    assert sentence is not None


@pytest.mark.parametrize(
    "names",
    [
        ("Bash",),
        ("Bash", "Read"),
        ("Bash", "Read", "Edit"),
        ("shell", "read_file", "apply_patch", "update_plan", "mcp__github__create_issue"),
    ],
)
def test_wording_names_every_missing_tool_exactly_once(names: tuple[str, ...]) -> None:
    sentence, missing = prompt_sentence(toolset(*names), [])
    assert missing == list(names)
    assert sentence is not None
    assert sentence.strip() == sentence and sentence.endswith(".")
    for name in names:
        assert mentions(sentence, name)
        assert sentence.count(name) == 1


def test_wording_joins_with_commas_and_and() -> None:
    sentence, _ = prompt_sentence(toolset("Bash", "Read", "Edit"), [])
    assert sentence is not None and "Bash, Read and Edit" in sentence
    sentence, _ = prompt_sentence(toolset("Bash"), [])
    assert sentence is not None and " and " not in sentence


def test_duplicate_declared_names_are_named_once() -> None:
    tools = toolset("Read", "Read", "Bash")
    sentence, missing = prompt_sentence(tools, [])
    assert missing == ["Read", "Bash"]
    assert sentence is not None and sentence.count("Read") == 1


def test_system_text_is_any_iterable() -> None:
    tools = toolset("Bash", "Read")
    _, missing = prompt_sentence(tools, (t for t in ["Use Bash"]))
    assert missing == ["Read"]


# --- make_plan --------------------------------------------------------------------------------


def test_make_plan_without_sentence() -> None:
    plan = make_plan(toolset("Bash", "Read"), [], add_sentence=False)
    assert isinstance(plan, Plan)
    assert plan.prompt_sentence is None
    assert plan.unmentioned == []


def test_make_plan_with_sentence() -> None:
    plan = make_plan(toolset("Bash", "Read"), ["Use Bash."], add_sentence=True)
    assert plan.prompt_sentence is not None and "Read" in plan.prompt_sentence
    assert plan.unmentioned == ["Read"]


def test_make_plan_with_sentence_but_all_mentioned() -> None:
    plan = make_plan(toolset("Bash"), ["Use Bash."], add_sentence=True)
    assert plan.prompt_sentence is None and plan.unmentioned == []


def test_plan_reverse_map_is_the_inverse_of_the_rename_map() -> None:
    plan = Plan(rename_map={"Read": "read", "Bash": "shell"})
    assert plan.reverse_map == {"read": "Read", "shell": "Bash"}
    assert make_plan(toolset("Bash"), [], add_sentence=True).rename_map == {}


def test_a_plan_holds_nothing_of_one_flow_and_cannot_be_changed() -> None:
    """Flows share a plan (:class:`PlanCache`): its fields cannot be set, and a flow's key or ids
    are not among them (they are the dialects' ``FlowContext``)."""
    plan = make_plan(toolset("Bash"), [], add_sentence=True)
    with pytest.raises(ValidationError):
        plan.prompt_sentence = None
    with pytest.raises(ValidationError):
        Plan(flow_key="flow-1")
    with pytest.raises(ValidationError):
        Plan(call_ids={"a": "b"})


def test_plan_dumps_to_json() -> None:
    plan = make_plan(toolset("Bash", "Read"), [], add_sentence=True)
    dumped = plan.model_dump(mode="json")
    assert dumped["unmentioned"] == ["Bash", "Read"]
    assert isinstance(dumped["prompt_sentence"], str)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="aB_1 .-\n", max_size=30), st.text(alphabet="aB_1.-", max_size=4))
def test_mentions_is_a_whole_word_search(text, name):
    """``mentions`` finds ``name`` where neither neighbour is an ASCII letter, digit or ``_``:
    the regex its docstring describes is the oracle."""
    import re

    want = re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None
    assert mentions(text, name) is want


def test_a_later_turns_plan_reads_back_only_earlier_transport_aliases_its_own_names_leave() -> None:
    """``Plan.after``: an earlier turn's grammar alias is read back, a repeated declaration's as
    its name alone; a name this plan sends for another tool keeps its own meaning; another
    agent's name (a profile's ``Read``) is not carried; the cached plan itself is not changed."""
    from toolvocab.engine.ladder import DUPLICATE_MARK

    plan = Plan(rename_map={"mcp.fs.write": "mcp_fs_write_1a2b3c4d"})
    earlier = {
        "fs_read_601e4eb6": "fs.read",
        "mcp_fs_write_1a2b3c4d": "other.tool",
        "Read": "read_file",
        "x_5e6f7a8b": f"x{DUPLICATE_MARK}2",
    }
    later = plan.after(earlier)
    assert later.reverse_map == {
        "fs_read_601e4eb6": "fs.read",
        "x_5e6f7a8b": "x",
        "mcp_fs_write_1a2b3c4d": "mcp.fs.write",
    }
    assert plan.reverse_map == {"mcp_fs_write_1a2b3c4d": "mcp.fs.write"} and plan.earlier == {}
    assert later.after(later.reverse_map).reverse_map == later.reverse_map  # a third turn keeps them
    assert plan.after({"Read": "read_file"}) is plan


def test_no_name_changes_upstream_when_the_answer_is_not_read() -> None:
    """``renames=False`` (an answer toolvocab cannot read: Bedrock's event-stream frames): a name
    the grammar rejects, a differing repeat and a long name all go up as declared, for no alias
    could be given back; an identical repeat is still dropped (nothing to give back for it)."""
    from toolvocab.engine.grammar import GRAMMARS

    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    other = {"type": "object", "properties": {"y": {"type": "string"}}}
    tools = Toolset(
        [
            declared_tool("mcp__chrome-devtools__navigate_page", input_schema=schema),
            declared_tool("x" * 80, input_schema=schema),
            declared_tool("Bash", input_schema=schema),
            declared_tool("Bash", input_schema=schema),
            declared_tool("Read", input_schema=schema),
            declared_tool("Read", input_schema=other),
        ]
    )
    renamed = make_plan(tools, [], add_sentence=False, grammar=GRAMMARS["bedrock"])
    assert renamed.rename_map and renamed.duplicates["Read"][0] not in (None, "Read")  # what the flag turns off
    plan = make_plan(tools, [], add_sentence=False, grammar=GRAMMARS["bedrock"], renames=False)
    assert plan.rename_map == {} and plan.grammar is None, plan
    assert plan.duplicates == {"Bash": [None]}, plan.duplicates
    assert any("Read" in s and "sent as declared" in s for s in plan.skipped), plan.skipped
    assert [r.why for r in plan.renames] == ["duplicate"] and plan.renames[0].upstream is None
