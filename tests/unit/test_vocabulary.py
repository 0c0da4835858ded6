"""The vocabulary table: well-formed rows, consistent capabilities, and full client coverage."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections import defaultdict

import pytest

from toolvocab.engine import vocabulary
from toolvocab.engine.names import name_key
from toolvocab.engine.vocabulary import CAPABILITIES
from toolvocab.engine.vocabulary import ENTRIES
from toolvocab.engine.vocabulary import VocabEntry
from toolvocab.engine.vocabulary import capability_of
from toolvocab.engine.vocabulary import entries_for

# The tools each real client declares, copied from the captured first requests
# (shared/reference/clients/*.json; versions in shared/reference/real-clients.md).

#: Claude Code 2.1.197, Anthropic Messages.
CLAUDE_CODE = [
    "Agent", "Bash", "CronCreate", "CronDelete", "CronList", "Edit", "EnterWorktree", "ExitWorktree",
    "NotebookEdit", "Read", "ReportFindings", "ScheduleWakeup", "SendMessage", "Skill", "TaskCreate",
    "TaskGet", "TaskList", "TaskOutput", "TaskStop", "TaskUpdate", "WebFetch", "WebSearch", "Workflow",
    "Write",
]  # fmt: skip

#: Codex CLI 0.171.0 (gpt-5.5), Responses: the function tools and the custom ``apply_patch``.
CODEX = [
    "exec_command", "write_stdin", "request_user_input", "apply_patch", "view_image", "get_goal",
    "create_goal", "update_goal",
]  # fmt: skip
#: Codex also declares two typed tools that carry no function name: ``{"type": "tool_search",
#: "execution": "client"}`` and the hosted ``{"type": "web_search"}``. The model answers them with
#: their own item types, never a function call to rename, so they are not Codex rows (like
#: ``local_shell``).
CODEX_TYPED = ["tool_search", "web_search"]

#: OpenCode 1.18.33, identical for the openai-compatible and anthropic packages.
OPENCODE = ["bash", "edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write"]

#: Qwen Code 0.15.10, identical for OpenAI chat and Anthropic.
QWEN_CODE = [
    "tool_search", "agent", "task_stop", "send_message", "skill", "list_directory", "read_file",
    "grep_search", "glob", "edit", "write_file", "run_shell_command", "todo_write", "web_fetch", "monitor",
]  # fmt: skip

#: Gemini CLI 0.61.0; ``write_todos`` is the 16th tool, declared with ``-m gemini-2.5-pro``.
GEMINI_CLI = [
    "update_topic", "list_directory", "read_file", "grep_search", "glob", "replace", "write_file",
    "web_fetch", "run_shell_command", "list_background_processes", "read_background_output",
    "google_web_search", "enter_plan_mode", "invoke_agent", "activate_skill", "write_todos",
]  # fmt: skip

DECLARED = {
    "Claude Code": CLAUDE_CODE,
    "Codex CLI": CODEX,
    "OpenCode": OPENCODE,
    "Qwen Code": QWEN_CODE,
    "Gemini CLI": GEMINI_CLI,
}


# --- the rows -------------------------------------------------------------------------------


def test_every_row_has_a_known_capability_and_nonempty_fields() -> None:
    for entry in ENTRIES:
        assert entry.capability in CAPABILITIES, entry
        assert entry.name and entry.name == entry.name.strip(), entry
        assert entry.clients.strip(), entry
        assert entry.source.strip(), entry


def test_every_capability_is_used_by_some_row() -> None:
    assert {e.capability for e in ENTRIES} == set(CAPABILITIES)


def test_required_capabilities_exist() -> None:
    required = {
        "shell", "read", "write", "edit", "patch", "grep", "glob", "list", "web_fetch", "web_search",
        "todo", "subagent", "notebook", "monitor", "skill", "ask_user", "view_image", "tool_search",
        "memory", "stdin", "lsp",
    }  # fmt: skip
    assert required <= CAPABILITIES


def test_no_duplicate_name_client_pair() -> None:
    pairs = Counter((e.name, e.clients) for e in ENTRIES)
    assert [p for p, n in pairs.items() if n > 1] == []


def test_same_exact_name_never_has_two_capabilities() -> None:
    caps: dict[str, set[str]] = defaultdict(set)
    for entry in ENTRIES:
        caps[entry.name].add(entry.capability)
    assert {name: c for name, c in caps.items() if len(c) > 1} == {}


def test_entries_sorted_by_capability_then_name() -> None:
    keys = [(e.capability, e.name, e.clients) for e in ENTRIES]
    assert keys == sorted(keys)


def test_entries_are_frozen() -> None:
    entry = ENTRIES[0]
    assert isinstance(entry, VocabEntry)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.name = "x"  # type: ignore[misc]


def test_patch_and_edit_never_share_a_name_key() -> None:
    edit_keys = {name_key(e.name) for e in ENTRIES if e.capability == "edit"}
    patch_keys = {name_key(e.name) for e in ENTRIES if e.capability == "patch"}
    assert edit_keys and patch_keys
    assert edit_keys.isdisjoint(patch_keys)


def test_every_name_key_in_the_table_is_unambiguous() -> None:
    # Not required by the lookup (it returns None for a split key), but a split key in the real
    # table would make a case/separator variant of a known name unrepairable by capability.
    caps: dict[str, set[str]] = defaultdict(set)
    for entry in ENTRIES:
        caps[name_key(entry.name)].add(entry.capability)
    assert {k: c for k, c in caps.items() if len(c) > 1} == {}


def test_no_misspelling_rows() -> None:
    names = {e.name for e in ENTRIES}
    assert "applypatch" not in names
    assert "apply-patch" not in names


def test_provider_defined_tools_are_not_rows() -> None:
    names = {e.name for e in ENTRIES}
    assert "local_shell" not in names
    codex_names = {e.name for e in ENTRIES if e.clients == "Codex CLI"}
    assert codex_names.isdisjoint(CODEX_TYPED)


# --- coverage of the five real clients ------------------------------------------------------


@pytest.mark.parametrize("client", sorted(DECLARED))
def test_every_declared_tool_has_a_row_for_its_client(client: str) -> None:
    names = {e.name for e in ENTRIES if e.clients == client}
    missing = [n for n in DECLARED[client] if n not in names]
    assert missing == []


@pytest.mark.parametrize("client", sorted(DECLARED))
def test_every_declared_tool_resolves_to_a_capability(client: str) -> None:
    unresolved = [n for n in DECLARED[client] if capability_of(n) is None]
    assert unresolved == []


def test_no_posix_shell_name_has_the_powershell_capability() -> None:
    # one shell's syntax is never sent to another. Every row whose capability
    # is powershell names PowerShell; no POSIX shell name shares it.
    from toolvocab.engine.vocabulary import ENTRIES

    assert {e.name.casefold() for e in ENTRIES if e.capability == "powershell"} <= {"powershell", "pwsh"}
    for posix in ("bash", "sh", "zsh", "shell", "Bash", "run_shell_command", "exec_command", "shell_command"):
        assert capability_of(posix) != "powershell"


@pytest.mark.parametrize("client", sorted(DECLARED))
def test_no_captured_client_declares_two_tools_of_one_capability(client: str) -> None:
    # So a foreign name of any capability has at most one target in these sessions. (A Claude Code
    # session with PowerShell enabled declares Bash and PowerShell: two capabilities.)
    caps = Counter(capability_of(n) for n in DECLARED[client])
    assert [c for c, n in caps.items() if n > 1] == []


def test_codex_typed_tool_types_still_resolve_through_other_clients() -> None:
    assert capability_of("tool_search") == "tool_search"
    assert capability_of("web_search") == "web_search"


# --- capability_of --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "capability"),
    [
        ("Bash", "shell"),
        ("bash", "shell"),
        ("BASH", "shell"),
        ("PowerShell", "powershell"),
        ("shell", "shell"),
        ("shell_command", "shell"),
        ("run_shell_command", "shell"),
        ("Run-Shell-Command", "shell"),
        ("exec_command", "shell"),
        ("execute_command", "shell"),
        ("exec", "shell"),
        ("terminal", "shell"),
        ("str_replace_editor", "edit"),
        ("str_replace_based_edit_tool", "edit"),
        ("Edit", "edit"),
        ("edit", "edit"),
        ("replace", "edit"),
        ("apply_patch", "patch"),
        ("Apply-Patch", "patch"),
        ("MultiEdit", "multi_edit"),
        ("replace_in_file", "diff_edit"),
        ("Monitor", "monitor"),
        ("monitor", "monitor"),
        ("write_stdin", "stdin"),
        ("read_background_output", "background_output"),
        ("TaskStop", "task_stop"),
        ("task_stop", "task_stop"),
        ("TaskOutput", "task_output"),
        ("Read", "read"),
        ("read_file", "read"),
        ("ReadFile", "read"),
        ("Write", "write"),
        ("write_to_file", "write"),
        ("Grep", "grep"),
        ("grep_search", "grep"),
        ("search_files", "grep"),
        ("Glob", "glob"),
        ("find", "glob"),
        ("LS", "list"),
        ("list_directory", "list"),
        ("WebFetch", "web_fetch"),
        ("web_fetch", "web_fetch"),
        ("webfetch", "web_fetch"),
        ("WebSearch", "web_search"),
        ("google_web_search", "web_search"),
        ("TodoWrite", "todo"),
        ("todowrite", "todo"),
        ("todo_write", "todo"),
        ("write_todos", "todo"),
        ("update_plan", "todo"),
        ("Agent", "subagent"),
        ("Task", "subagent"),
        ("task", "subagent"),
        ("agent", "subagent"),
        ("invoke_agent", "subagent"),
        ("NotebookEdit", "notebook"),
        ("TaskCreate", "task_create"),
        ("TaskList", "task_list"),
        ("request_user_input", "ask_user"),
        ("AskUserQuestion", "ask_user"),
        ("enter_plan_mode", "plan_mode"),
        ("EnterPlanMode", "plan_mode"),
        ("ExitPlanMode", "plan_mode_exit"),
        ("view", "read"),  # Crush v0.90.0 internal/agent/tools/view.go
    ],
)
def test_capability_of(name: str, capability: str) -> None:
    assert capability_of(name) == capability


@pytest.mark.parametrize(
    "name",
    ["", "frobnicate", "applypatch_v2", "mcp__github__Bash", "mcp__fs__read_file", "local_shell", "view_range"],
)
def test_unknown_names_have_no_capability(name: str) -> None:
    assert capability_of(name) is None
    assert entries_for(name) == ()


def test_shell_watchers_and_task_tools_are_not_shells() -> None:
    for name in ("Monitor", "monitor", "write_stdin", "read_background_output", "list_background_processes",
                 "TaskStop", "TaskOutput", "task_stop"):  # fmt: skip
        assert capability_of(name) != "shell", name


def test_todo_is_not_the_task_list_family() -> None:
    for name in ("TaskCreate", "TaskGet", "TaskList", "TaskUpdate"):
        assert capability_of(name) != "todo", name
    # One family member is not a substitute for another.
    assert len({capability_of(n) for n in ("TaskCreate", "TaskGet", "TaskList", "TaskUpdate")}) == 4


def test_edit_is_not_patch_or_multi_edit_or_diff_edit() -> None:
    assert {capability_of(n) for n in ("Edit", "apply_patch", "MultiEdit", "replace_in_file")} == {
        "edit",
        "patch",
        "multi_edit",
        "diff_edit",
    }


# --- entries_for ----------------------------------------------------------------------------


def test_entries_for_exact_name_returns_only_exact_rows() -> None:
    rows = entries_for("bash")
    assert rows
    assert {r.name for r in rows} == {"bash"}
    assert {"OpenCode", "trae-agent"} <= {r.clients for r in rows}


def test_entries_for_falls_back_to_the_name_key() -> None:
    rows = entries_for("BASH")
    assert {r.name for r in rows} == {"Bash", "bash"}
    assert {r.capability for r in rows} == {"shell"}


def test_entries_for_lists_every_client_of_a_shared_name() -> None:
    assert {r.clients for r in entries_for("run_shell_command")} == {"Qwen Code", "Gemini CLI"}


# --- lookup rules on a synthetic table ------------------------------------------------------


def _index(*rows: tuple[str, str]) -> vocabulary._Index:
    return vocabulary._Index(tuple(VocabEntry(n, c, f"client {i}", "test") for i, (n, c) in enumerate(rows)))


def test_a_name_key_whose_rows_disagree_gives_none() -> None:
    index = _index(("do_thing", "shell"), ("DoThing", "read"))
    assert index.capability_of("do-thing") is None
    assert index.capability_of("DOTHING") is None
    assert {r.name for r in index.entries_for("do-thing")} == {"do_thing", "DoThing"}


def test_exact_name_wins_over_a_disagreeing_key() -> None:
    index = _index(("do_thing", "shell"), ("DoThing", "read"))
    assert index.capability_of("do_thing") == "shell"
    assert index.capability_of("DoThing") == "read"


def test_a_name_key_whose_rows_agree_gives_the_capability() -> None:
    index = _index(("do_thing", "shell"), ("DoThing", "shell"))
    assert index.capability_of("DO-THING") == "shell"


def test_exact_rows_that_disagree_give_none() -> None:
    # The real table forbids this (test_same_exact_name_never_has_two_capabilities); the lookup
    # still refuses to pick one if it ever happens.
    index = _index(("do_thing", "shell"), ("do_thing", "read"))
    assert index.capability_of("do_thing") is None
