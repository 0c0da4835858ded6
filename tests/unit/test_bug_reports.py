"""Public bug reports about tool names and argument keys, one test group per report.

Every fixture is built from the declared tool names the report lists, with schemas written here
(keys as the report gives them). Each report is tested as a kind, parametrized over its variants,
and not only as the single instance the report shows. The wire payloads are parsed with
``call_from_payload`` (toolvocab.dialects.base) in the shape the report's upstream answered in.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemas import ARGV
from schemas import BOOL
from schemas import INT
from schemas import NUM
from schemas import STR
from schemas import fn
from schemas import schema
from toolvocab.dialects.base import call_from_payload
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import Decision
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind


def run(tools: list[DeclaredTool], payload: dict[str, Any], reverse_map: dict[str, str] | None = None) -> Decision:
    return resolve(call_from_payload(payload), Toolset(tools), reverse_map)


def openai(name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def responses(name: str, args: dict[str, Any], call_id: str = "call_1") -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": json.dumps(args)}


def anthropic(name: str, args: dict[str, Any], call_id: str = "toolu_01") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def gemini(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "args": args}


def renamed(d: Decision, target: str, step: Step) -> None:
    assert d.action is Action.RENAME, d.reason
    assert d.target == target
    assert d.step is step
    assert target in d.reason


def left(d: Decision) -> None:
    assert d.action is Action.LEAVE, d.reason
    assert d.target is None and d.arguments_after is None
    assert d.reason.strip()


# --- BR-01: applypatch / apply-patch ----------------------------------------------------------

CODEX_SHELL = fn("shell", schema("command", command=ARGV, workdir=STR, timeout_ms=NUM))
CODEX_PLAN = fn("update_plan", schema("plan", explanation=STR, plan={"type": "array", "items": {"type": "object"}}))
PATCH = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"


@pytest.mark.parametrize(
    "command",
    [
        ["bash", "-lc", f"applypatch <<'EOF'\n{PATCH}\nEOF"],
        ["bash", "-lc", f"apply-patch <<'EOF'\n{PATCH}\nEOF"],
        ["applypatch", PATCH],
        ["apply_patch", PATCH],
    ],
)
def test_br01_shell_call_with_applypatch_inside_the_command_is_kept_unchanged(command: list[str]) -> None:
    d = run([CODEX_SHELL, CODEX_PLAN], responses("shell", {"command": command}))
    assert d.action is Action.KEEP and d.target == "shell" and d.step is Step.DECLARED
    assert d.arguments_after is None and d.arg_changes == []


@pytest.mark.parametrize(
    "answered",
    [
        "applypatch",
        "apply-patch",
        "ApplyPatch",
        "APPLY_PATCH",
        "apply.patch",
        "functions.apply_patch",
        "apply_patchapply_patch",
    ],
)
def test_br01_function_name_variant_renames_to_the_declared_apply_patch(answered: str) -> None:
    apply_patch = fn("apply_patch", schema("input", input=STR))
    d = run([CODEX_SHELL, CODEX_PLAN, apply_patch], responses(answered, {"input": PATCH}))
    renamed(d, "apply_patch", Step.NORMALIZED)
    assert d.arguments_after is None


@pytest.mark.parametrize("answered", ["applypatch", "apply-patch"])
def test_br01_freeform_variant_renames_to_the_declared_freeform_apply_patch(answered: str) -> None:
    apply_patch = declared_tool("apply_patch", kind=ToolKind.FREEFORM)
    call = ToolCall(name=answered, arguments=None, raw_arguments=PATCH, kind=ToolKind.FREEFORM, id="ctc_1")
    d = resolve(call, Toolset([CODEX_SHELL, apply_patch]))
    renamed(d, "apply_patch", Step.NORMALIZED)


CC_EDIT = fn("Edit", schema("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR))
OC_EDIT = fn("edit", schema("filePath", "oldString", "newString", filePath=STR, oldString=STR, newString=STR))
GEM_REPLACE = fn(
    "replace", schema("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR)
)


@pytest.mark.parametrize("edit_tool", [CC_EDIT, OC_EDIT, GEM_REPLACE], ids=lambda t: t.name)
@pytest.mark.parametrize("answered", ["apply_patch", "applypatch", "apply-patch"])
def test_br01_apply_patch_without_a_patch_tool_is_never_an_edit(edit_tool: DeclaredTool, answered: str) -> None:
    d = run([edit_tool, fn("Bash", schema("command", command=STR))], responses(answered, {"input": PATCH}))
    left(d)
    assert edit_tool.name not in d.candidates


# --- BR-03: bash answered to Qwen Code --------------------------------------------------------

QWEN = [
    fn("run_shell_command", schema("command", command=STR, description=STR, directory=STR, is_background=BOOL)),
    fn("read_file", schema("absolute_path", absolute_path=STR, offset=INT, limit=INT)),
    fn("edit", schema("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR)),
    fn("write_file", schema("file_path", "content", file_path=STR, content=STR)),
    fn("grep_search", schema("pattern", pattern=STR, path=STR)),
    fn("glob", schema("pattern", pattern=STR, path=STR)),
    fn("list_directory", schema("path", path=STR)),
    fn("save_memory", schema("fact", fact=STR)),
]


def test_br03_bash_renames_to_run_shell_command() -> None:
    args = {"command": "find /repo -name '*.rs' | head -20", "description": "Find Rust files"}
    d = run(QWEN, openai("bash", args, "call_9d"))
    renamed(d, "run_shell_command", Step.CAPABILITY)
    assert d.candidates == ["run_shell_command"]
    assert d.arguments_after is None  # keys already declared
    assert d.call_id == "call_9d"


@pytest.mark.parametrize(
    "answered",
    [
        "bash",
        "Bash",
        "shell",
        "exec",
        "exec_command",
        "execute_command",
        "terminal",
        "run_terminal_cmd",
        "shell_command",
    ],
)
def test_br03_any_foreign_shell_name_renames_to_the_one_declared_shell(answered: str) -> None:
    d = run(QWEN, openai(answered, {"command": "ls"}))
    renamed(d, "run_shell_command", Step.CAPABILITY)


def test_br03_foreign_shell_with_cmd_key_is_fitted() -> None:
    d = run(QWEN, openai("bash", {"cmd": "ls"}))
    renamed(d, "run_shell_command", Step.CAPABILITY)
    assert d.arguments_after == {"command": "ls"}


@pytest.mark.parametrize(
    ("answered", "args", "target", "after"),
    [
        ("Read", {"file_path": "/repo/a.rs"}, "read_file", {"absolute_path": "/repo/a.rs"}),
        ("Write", {"file_path": "/a", "content": "x"}, "write_file", None),
    ],
)
def test_br03_other_claude_code_habits_rename_by_capability(
    answered: str, args: dict[str, Any], target: str, after: dict[str, Any] | None
) -> None:
    d = run(QWEN, openai(answered, args))
    renamed(d, target, Step.CAPABILITY)
    assert d.arguments_after == after


def test_br03_ls_is_left_for_a_listing_that_hides_other_entries() -> None:
    # Claude Code's LS is not sourced, so it is read as the sourced list tools all list; they do
    # not agree (Codex's list_dir lists every entry, two levels: list.ignores "none"; Qwen Code's
    # list_directory hides gitignored ones): what it would list is unknown, and the call is left.
    d = run(QWEN, openai("LS", {"path": "/repo"}))
    left(d)
    assert "list.ignores" in d.reason


def test_br03_grep_is_left_for_a_grep_that_ignores_case() -> None:
    # Claude Code's Grep runs ripgrep case-sensitively (-i off); Qwen Code 0.15.10's grep_search
    # passes the pattern to `rg --ignore-case`: the same pattern finds other lines.
    d = run(QWEN, openai("Grep", {"pattern": "fn main"}))
    left(d)
    assert "rg-i" in d.reason


# --- BR-04: str_replace_editor answered to Qwen Code ------------------------------------------


@pytest.mark.parametrize("answered", ["str_replace_editor", "str_replace_based_edit_tool", "StrReplaceEditor"])
@pytest.mark.parametrize(
    "args",
    [
        {
            "file_path": "/repo/src/main.rs",
            "old_string": "use clap::Parser;",
            "new_string": "use clap::Parser;\nuse rand::Rng;",
        },
        {"command": "str_replace", "path": "/repo/src/main.rs", "old_str": "a", "new_str": "b"},
    ],
)
def test_br04_an_exact_editor_call_never_reaches_qwen_codes_normalising_edit(
    answered: str, args: dict[str, Any]
) -> None:
    # Anthropic's text editor and trae's str_replace need the literal, exactly once. Qwen Code
    # 0.15.10's edit, where the literal is missing, matches whitespace-trimmed lines and writes
    # new_string over them as given: a call the editor would refuse could land as another edit.
    # Left: the client reports the unknown tool and the model retries with `edit`.
    d = run(QWEN, openai(answered, args))
    left(d)
    assert "normalized" in d.reason


def test_br04_an_exact_editor_call_reaches_an_exact_edit() -> None:
    exact = [
        fn(
            "Edit",
            schema(
                "file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR, replace_all=BOOL
            ),
        )
    ]
    d = run(
        exact,
        openai(
            "str_replace_editor",
            {"command": "str_replace", "path": "/repo/src/main.rs", "old_str": "a", "new_str": "b"},
        ),
    )
    renamed(d, "Edit", Step.CAPABILITY)
    assert d.arguments_after == {"file_path": "/repo/src/main.rs", "old_string": "a", "new_string": "b"}
    renames = {(c.key, c.to) for c in d.arg_changes if c.op == "rename_key"}
    assert renames == {("path", "file_path"), ("old_str", "old_string"), ("new_str", "new_string")}
    assert any(c.op == "drop_key" and c.key == "command" for c in d.arg_changes)


@pytest.mark.parametrize(
    ("args", "target", "after"),
    [
        ({"command": "view", "path": "/a"}, "read_file", {"absolute_path": "/a"}),
    ],
)
def test_br04_view_and_create_map_only_when_exactly_one_tool_fits(
    args: dict[str, Any], target: str, after: dict[str, Any]
) -> None:
    d = run(QWEN, openai("str_replace_editor", args))
    renamed(d, target, Step.CAPABILITY)
    assert d.arguments_after == after


def test_br04_create_is_never_a_write() -> None:
    # `create` refuses to overwrite an existing file; every write tool
    # overwrites. The call stays as sent and the client reports the unknown tool.
    d = run(QWEN, openai("str_replace_editor", {"command": "create", "path": "/a", "file_text": "x"}))
    left(d)
    assert "create" in d.reason


@pytest.mark.parametrize("command", ["view"])
def test_br04_view_and_create_with_two_fitting_tools_are_left(command: str) -> None:
    tools = QWEN + [
        fn("Read", schema("file_path", file_path=STR)),
        fn("Write", schema("file_path", file_path=STR, content=STR)),
    ]
    d = run(tools, openai("str_replace_editor", {"command": command, "path": "/a", "file_text": "x"}))
    left(d)
    assert len(d.candidates) == 2


@pytest.mark.parametrize("command", ["undo_edit", "insert"])
def test_br04_undo_edit_and_insert_have_no_counterpart(command: str) -> None:
    d = run(QWEN, openai("str_replace_editor", {"command": command, "path": "/a", "insert_line": 3, "new_str": "x"}))
    left(d)
    assert command in d.reason


# --- BR-05: lowercase bash in Claude Code -----------------------------------------------------

CLAUDE = [
    fn("Bash", schema("command", command=STR, description=STR, timeout=INT, run_in_background=BOOL)),
    fn("Read", schema("file_path", file_path=STR, offset=INT, limit=INT)),
    CC_EDIT,
    fn("Write", schema("file_path", "content", file_path=STR, content=STR)),
    fn("WebFetch", schema("url", "prompt", url=STR, prompt=STR)),
    fn("TodoWrite", schema("todos", todos={"type": "array"})),
]


def test_br05_lowercase_bash_renames_to_bash() -> None:
    d = run(CLAUDE, anthropic("bash", {"command": "git status"}))
    renamed(d, "Bash", Step.NORMALIZED)
    assert d.arguments_after is None


@pytest.mark.parametrize(
    ("answered", "args", "target"),
    [
        ("BASH", {"command": "ls"}, "Bash"),
        ("read", {"file_path": "/a"}, "Read"),
        ("edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}, "Edit"),
        ("write", {"file_path": "/a", "content": "x"}, "Write"),
        ("webfetch", {"url": "https://x", "prompt": "p"}, "WebFetch"),
        ("web_fetch", {"url": "https://x", "prompt": "p"}, "WebFetch"),
    ],
)
def test_br05_case_and_separator_variants_of_claude_code_tools(
    answered: str, args: dict[str, Any], target: str
) -> None:
    d = run(CLAUDE, anthropic(answered, args))
    renamed(d, target, Step.NORMALIZED)


def test_br05_todo_lists_of_other_item_shapes_are_left() -> None:
    # Qwen Code's todo_write items are {id, content, status}; Claude Code's TodoWrite items
    # {content, status, activeForm}: the same list does not mean the same todos.
    d = run(CLAUDE, anthropic("todo_write", {"todos": [{"id": "1", "content": "x", "status": "pending"}]}))
    left(d)


def test_br05_both_bash_and_Bash_declared_leaves_bash_variants() -> None:
    tools = CLAUDE + [fn("bash", schema("command", command=STR))]
    assert run(tools, anthropic("bash", {"command": "ls"})).action is Action.KEEP
    d = run(tools, anthropic("BASH", {"command": "ls"}))
    left(d)
    assert sorted(d.candidates) == ["Bash", "bash"]


# --- BR-06: a renaming proxy that must map every answer back ----------------------------------


def cline(requires_approval_required: bool = False) -> list[DeclaredTool]:
    exec_required = ["command", "requires_approval"] if requires_approval_required else ["command"]
    return [
        fn(
            "execute_command",
            {
                "type": "object",
                "properties": {"command": STR, "requires_approval": BOOL},
                "required": exec_required,
                "additionalProperties": False,
            },
        ),
        fn("read_file", schema("path", additional=False, path=STR)),
        fn("write_to_file", schema("path", "content", additional=False, path=STR, content=STR)),
        fn("replace_in_file", schema("path", "diff", additional=False, path=STR, diff=STR)),
        fn("list_files", schema("path", additional=False, path=STR, recursive=BOOL)),
        fn("search_files", schema("path", "regex", additional=False, path=STR, regex=STR)),
    ]


#: What the proxy renamed on the way up (upstream name -> declared name).
CLINE_REVERSE = {"Bash": "execute_command", "Read": "read_file", "Write": "write_to_file", "Edit": "replace_in_file"}


def test_br06_bash_maps_back_to_execute_command_and_drops_description() -> None:
    d = run(cline(), anthropic("Bash", {"command": "npm test", "description": "Run tests"}, "toolu_02"), CLINE_REVERSE)
    renamed(d, "execute_command", Step.REVERSE_MAP)
    assert d.arguments_after == {"command": "npm test"}  # requires_approval never invented
    assert any(c.op == "drop_annotation" and c.key == "description" for c in d.arg_changes)


def test_br06_required_requires_approval_is_not_invented() -> None:
    # The alias is the flow's own: the client gets its name back (never the alias), keeps
    # `command`, and no `requires_approval` is made up; the client reports the missing key itself.
    d = run(cline(requires_approval_required=True), anthropic("Bash", {"command": "npm test"}), CLINE_REVERSE)
    assert d.action is Action.RENAME and d.target == "execute_command"
    assert d.step is Step.REVERSE_MAP
    assert "requires_approval" in d.reason
    assert "requires_approval" not in (d.arguments_after or d.arguments_before)


@pytest.mark.parametrize(
    ("answered", "args", "target", "after"),
    [
        (
            "Write",
            {"file_path": "/repo/a.txt", "content": "hi"},
            "write_to_file",
            {"path": "/repo/a.txt", "content": "hi"},
        ),
        ("Read", {"file_path": "/repo/a.txt"}, "read_file", {"path": "/repo/a.txt"}),
    ],
)
def test_br06_mapped_tools_map_back_with_their_keys(
    answered: str, args: dict[str, Any], target: str, after: dict[str, Any]
) -> None:
    d = run(cline(), anthropic(answered, args), CLINE_REVERSE)
    renamed(d, target, Step.REVERSE_MAP)
    assert d.arguments_after == after


@pytest.mark.parametrize("reverse_map", [{k: v for k, v in CLINE_REVERSE.items() if k != "Edit"}, {}])
def test_br06_edit_is_never_turned_into_replace_in_file(reverse_map: dict[str, str]) -> None:
    d = run(cline(), anthropic("Edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}), reverse_map)
    left(d)


def test_br06_a_key_the_client_has_no_place_for_leaves_even_its_own_alias() -> None:
    # Cline's read_file takes a path and a 1-based line range, no offset: renamed back, the call
    # would read the whole file. Left, the client reports an unknown tool and the model retries.
    d = run(cline(), anthropic("Read", {"file_path": "/repo/a.txt", "offset": 3}), CLINE_REVERSE)
    left(d)
    assert "'offset'" in d.reason


def test_br06_edit_sent_upstream_by_this_flow_is_not_translated_into_a_diff() -> None:
    # Even when this flow itself showed replace_in_file upstream as `Edit`, an old/new-string edit
    # is no SEARCH/REPLACE diff: Cline would ignore old_string and new_string, so the call is left.
    d = run(cline(), anthropic("Edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}), CLINE_REVERSE)
    left(d)
    assert d.step is Step.REVERSE_MAP


def test_br06_declared_tool_with_no_mapping_is_kept_under_its_own_name() -> None:
    d = run(cline(), anthropic("list_files", {"path": "/repo"}), CLINE_REVERSE)
    assert d.action is Action.KEEP and d.target == "list_files"


@pytest.mark.parametrize("answered", ["TodoWrite", "WebFetch", "NotebookEdit", "Task"])
def test_br06_unmapped_answer_is_never_assigned_to_some_other_slot(answered: str) -> None:
    d = run(cline(), anthropic(answered, {"x": 1}), CLINE_REVERSE)
    left(d)


# --- BR-10: provider prefixes -----------------------------------------------------------------

OPENCLAW = [
    fn("read", schema("path", path=STR)),
    fn("exec", schema("command", command=STR)),
    fn("write", schema("path", "content", path=STR, content=STR)),
]


@pytest.mark.parametrize("prefix", ["functions.", "functions:", "tools/", "default_api:", "default."])
@pytest.mark.parametrize(("bare", "args"), [("read", {"path": "README.md"}), ("exec", {"command": "ls"})])
def test_br10_provider_prefix_is_stripped(prefix: str, bare: str, args: dict[str, Any]) -> None:
    d = run(OPENCLAW, openai(prefix + bare, args, "functions.read:0"))
    renamed(d, bare, Step.NORMALIZED)
    assert d.call_id == "functions.read:0"


def test_br10_literal_prefixed_name_declared_is_kept() -> None:
    tools = OPENCLAW + [fn("functions:read", schema("path", path=STR))]
    d = run(tools, openai("functions:read", {"path": "README.md"}))
    assert d.action is Action.KEEP and d.target == "functions:read"


def test_br10_separator_variant_of_a_literal_prefixed_name() -> None:
    d = run([fn("functions:read", schema("path", path=STR))], openai("functions.read", {"path": "a"}))
    renamed(d, "functions:read", Step.NORMALIZED)


def test_br10_prefix_and_literal_both_plausible_leaves() -> None:
    tools = OPENCLAW + [fn("functions:read", schema("path", path=STR))]
    d = run(tools, openai("functions.read", {"path": "a"}))
    left(d)


@pytest.mark.parametrize("blank", ["", " ", "\n"])
def test_br10_blank_name_is_left(blank: str) -> None:
    d = run(OPENCLAW, openai(blank, {"path": "README.md"}, "functions.read:0"))
    left(d)
    assert d.step is Step.NONE


# --- BR-12: a flattened Responses namespace ---------------------------------------------------

CODEX_NS = [
    fn("js", schema("code", code=STR), namespace="mcp__cua_repl"),
    fn("js", schema("code", code=STR), namespace="mcp__node_repl"),
    fn("get_editor_state", {"type": "object", "properties": {}}, namespace="mcp__pencil"),
    fn("create_issue", schema("title", title=STR), namespace="mcp__github__"),
    fn("exec_command", schema("cmd", cmd=STR)),
]


@pytest.mark.parametrize(
    ("flat", "args", "name", "namespace"),
    [
        ("mcp__cua_repl__js", {"code": "1+1"}, "js", "mcp__cua_repl"),
        ("mcp__node_repl__js", {"code": "1+1"}, "js", "mcp__node_repl"),
        ("mcp__pencil__get_editor_state", {}, "get_editor_state", "mcp__pencil"),
        ("mcp__github__create_issue", {"title": "t"}, "create_issue", "mcp__github__"),
    ],
)
def test_br12_flattened_name_is_split_back(flat: str, args: dict[str, Any], name: str, namespace: str) -> None:
    d = run(CODEX_NS, openai(flat, args, "call_3"))
    assert d.action is Action.RENAME, d.reason
    assert (d.target, d.target_namespace) == (name, namespace)
    assert d.call_id == "call_3"


def test_br12_flattening_map_is_used_when_present() -> None:
    reverse = {"mcp__cua_repl__js": "mcp__cua_repl__js"}  # flat name of (mcp__cua_repl, js)
    d = run(CODEX_NS, openai("mcp__cua_repl__js", {"code": "x"}), reverse)
    assert d.step is Step.REVERSE_MAP
    assert (d.target, d.target_namespace) == ("js", "mcp__cua_repl")


@pytest.mark.parametrize("flat", ["mcp__other_repl__js", "mcp__gitlab__create_issue", "js", "create_issue"])
def test_br12_other_or_missing_namespace_is_left(flat: str) -> None:
    left(run(CODEX_NS, openai(flat, {"code": "x", "title": "t"})))


# --- BR-17: a hallucinated name with a dot ----------------------------------------------------

BR17 = [fn("search_evidence", schema("query", query=STR)), fn("fetch_doc", schema("id", id=STR))]


def test_br17_dotted_name_renames_to_the_declared_name() -> None:
    payload = {"toolUseId": "tooluse_1", "name": "search.evidence", "input": {"query": "q"}}
    d = run(BR17, payload)
    renamed(d, "search_evidence", Step.NORMALIZED)


@pytest.mark.parametrize(
    ("answered", "target"),
    [
        ("search-evidence", "search_evidence"),
        ("searchEvidence", "search_evidence"),
        ("SEARCH.EVIDENCE", "search_evidence"),
        ("search/evidence", "search_evidence"),
        ("search:evidence", "search_evidence"),
        ("fetch.doc", "fetch_doc"),
    ],
)
def test_br17_separator_variants(answered: str, target: str) -> None:
    d = run(BR17, anthropic(answered, {"id": "1"} if target == "fetch_doc" else {"query": "q"}))
    renamed(d, target, Step.NORMALIZED)


def test_br17_a_key_the_tool_does_not_declare_leaves_the_separator_variant() -> None:
    # fetch_doc declares only `id`: a client that ignores `query` would fetch without it.
    d = run(BR17, anthropic("fetch.doc", {"query": "q", "id": "1"}))
    left(d)
    assert "'query'" in d.reason


@pytest.mark.parametrize("answered", ["search.evidence", "search-evidence", "SearchEvidence"])
def test_br17_two_candidates_leave(answered: str) -> None:
    tools = BR17 + [fn("searchEvidence", schema("query", query=STR))]
    d = run(tools, anthropic(answered, {"query": "q"}))
    left(d)
    assert sorted(d.candidates) == ["searchEvidence", "search_evidence"]


@pytest.mark.parametrize("answered", ["$READFILE", "<|channel|>search", "search.evidence.v2"])
def test_br17_garbage_names_are_left(answered: str) -> None:
    left(run(BR17, anthropic(answered, {"query": "q"})))


# --- BR-18: a name written twice --------------------------------------------------------------


@pytest.mark.parametrize(
    ("declared", "args"),
    [
        ("read_file", {"path": "a.py"}),
        ("terminal", {"command": "ls"}),
        ("shell_command", {"command": "ls"}),
        ("edit_existing_file", {"filepath": "a.py", "changes": "x"}),
    ],
)
def test_br18_doubled_name_collapses(declared: str, args: dict[str, Any]) -> None:
    tool = fn(declared, schema(*args, **{k: STR for k in args}))
    d = run([tool, fn("other", schema())], openai(declared + declared, args))
    renamed(d, declared, Step.NORMALIZED)


@pytest.mark.parametrize(
    "answered", ["read_fileread_fil", "read_fileread_fileread_file", "read_fileterminal", "edit_ex"]
)
def test_br18_partial_or_other_repeats_are_left(answered: str) -> None:
    tools = [fn("read_file", schema("path", path=STR)), fn("terminal", schema("command", command=STR))]
    d = run(tools, openai(answered, {"path": "a", "command": "ls"}))
    left(d)


# --- BR-25: shell.command as a JSON-encoded string --------------------------------------------


@pytest.mark.parametrize(
    ("text", "argv"),
    [
        ('["ls", "-la"]', ["ls", "-la"]),
        ('["git","status"]', ["git", "status"]),
        ('["bash", "-lc", "ls | wc -l"]', ["bash", "-lc", "ls | wc -l"]),
    ],
)
def test_br25_json_encoded_argv_is_decoded(text: str, argv: list[str]) -> None:
    d = run([CODEX_SHELL, CODEX_PLAN], responses("shell", {"command": text}, "call_8"))
    assert d.action is Action.FIT and d.target == "shell"
    assert d.arguments_after == {"command": argv}
    assert [c.op for c in d.arg_changes] == ["json_to_array"]


@pytest.mark.parametrize(
    "text",
    [
        "ls -la",
        "git status",
        "ls | wc -l",
        'echo "a b"',
        '["ls", 1]',
    ],
)
def test_br25_command_string_that_is_not_a_json_argv_is_left_unchanged(text: str) -> None:
    d = run([CODEX_SHELL, CODEX_PLAN], responses("shell", {"command": text}))
    assert d.action is Action.KEEP and d.target == "shell"
    assert d.arguments_after is None


def test_br25_json_argv_is_decoded_on_a_renamed_call_too() -> None:
    d = run([CODEX_SHELL], responses("Bash", {"command": '["ls", "-la"]'}))
    renamed(d, "shell", Step.CAPABILITY)
    assert d.arguments_after == {"command": ["ls", "-la"]}


# --- BR-27: cmd for command, camelCase keys ---------------------------------------------------

OPENCLAW_27 = [
    fn("exec", schema("command", command=STR, workdir=STR, timeout=INT)),
    fn("edit", schema("path", "oldText", "newText", path=STR, oldText=STR, newText=STR)),
]


def test_br27_cmd_is_renamed_to_command() -> None:
    d = run(OPENCLAW_27, openai("exec", {"cmd": "gh repo list <USER> --limit 5"}, "call_9"))
    assert d.action is Action.FIT and d.target == "exec"
    assert d.arguments_after == {"command": "gh repo list <USER> --limit 5"}


@pytest.mark.parametrize(
    ("path_key", "old_key", "new_key"), [("filePath", "oldString", "newString"), ("filePath", "old_str", "new_str")]
)
def test_br27_edit_keys_are_renamed(path_key: str, old_key: str, new_key: str) -> None:
    d = run(OPENCLAW_27, openai("edit", {path_key: "/a", old_key: "x", new_key: "y"}))
    assert d.action is Action.FIT
    assert d.arguments_after == {"path": "/a", "oldText": "x", "newText": "y"}


@pytest.mark.parametrize(
    ("path_key", "old_key", "new_key"),
    [
        ("file_path", "oldString", "newString"),
        ("filePath", "old_string", "new_string"),
        ("file_path", "old_string", "new_string"),
    ],
)
def test_br27_an_edit_in_qwen_codes_spelling_never_reaches_a_fuzzy_matcher(
    path_key: str, old_key: str, new_key: str
) -> None:
    # `edit {file_path, old_string, …}` may be Qwen Code's edit, which matches the literal (or its
    # quote- and whitespace-normalised form); OpenClaw's edit falls back to fuzzy matching and
    # could edit another place: the call is left as sent and the client reports the missing key.
    d = run(OPENCLAW_27, openai("edit", {path_key: "/a", old_key: "x", new_key: "y"}))
    assert d.action is Action.KEEP and d.arguments_after is None
    # The reason names the first exact or normalising reading that blocks it (Qwen Code's, or
    # Crush's edit, which spells file_path/old_string too).
    assert any(n in d.reason for n in ("Qwen Code", "Crush")) and "fuzzy" in d.reason


@pytest.mark.parametrize("path_key", ["absolute_path", "filepath", "target_file"])
def test_br27_a_path_key_no_edit_tool_declares_is_left(path_key: str) -> None:
    # No sourced edit tool spells its path so: the key's meaning is unknown, the call stays.
    d = run(OPENCLAW_27, openai("edit", {path_key: "/a", "oldText": "x", "newText": "y"}))
    assert d.action is Action.KEEP and d.arguments_after is None


def test_br27_empty_path_with_a_non_empty_alias_is_filled() -> None:
    d = run(OPENCLAW_27, openai("edit", {"path": "", "file_path": "/a", "oldText": "x", "newText": "y"}))
    # ``path: ""`` validates against a plain string schema, so the declared call is kept as is…
    assert d.action is Action.KEEP
    # …but with ``minLength`` the empty path fails and fitting fills it.
    strict = [
        fn(
            "edit",
            schema("path", "oldText", "newText", path={"type": "string", "minLength": 1}, oldText=STR, newText=STR),
        )
    ]
    d = run(strict, openai("edit", {"path": "", "filePath": "/a", "oldText": "x", "newText": "y"}))
    assert d.action is Action.FIT
    assert d.arguments_after == {"path": "/a", "oldText": "x", "newText": "y"}


def test_br27_empty_new_text_is_a_deletion_and_never_filled() -> None:
    strict = [fn("edit", schema("path", "oldText", "newText", additional=False, path=STR, oldText=STR, newText=STR))]
    d = run(strict, openai("edit", {"path": "/a", "oldText": "x", "newText": "", "new_string": "y"}))
    # ``newText: ""`` is present, so ``new_string`` is not moved into it; the call stays as sent.
    assert d.action is Action.KEEP and d.target == "edit"
    assert d.arguments_after is None
    assert not any(c.key == "newText" or c.to == "newText" for c in d.arg_changes)


@pytest.mark.parametrize("answered", ["bash", "shell", "run_shell_command"])
def test_br27_foreign_shell_with_cmd_renames_to_exec_and_fits(answered: str) -> None:
    d = run(OPENCLAW_27, openai(answered, {"cmd": "ls"}))
    renamed(d, "exec", Step.CAPABILITY)
    assert d.arguments_after == {"command": "ls"}


# --- BR-30: the shell tool deliberately withheld ----------------------------------------------

GEMINI_HEADLESS = [
    fn("read_file", schema("absolute_path", absolute_path=STR)),
    fn("search_file_content", schema("pattern", pattern=STR)),
    fn("save_memory", schema("fact", fact=STR)),
]


def test_br30_run_shell_command_without_a_shell_is_left() -> None:
    d = run(GEMINI_HEADLESS, gemini("run_shell_command", {"command": "make terraform-plan"}))
    left(d)
    assert d.step is Step.CAPABILITY and d.candidates == []
    assert "run_shell_command" in d.reason


@pytest.mark.parametrize(
    "answered", ["bash", "Bash", "shell", "exec", "execute_command", "run_terminal_cmd", "terminal"]
)
def test_br30_no_shell_name_reaches_another_tool(answered: str) -> None:
    left(run(GEMINI_HEADLESS, gemini(answered, {"command": "ls"})))


# --- answer side of request-side renames (BR-14, BR-15, BR-31) --------------------------------


def test_br14_shortened_long_name_maps_back() -> None:
    long_name = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance"
    short = long_name[:55] + "_1a2b3c4d"
    d = run(
        [fn(long_name, schema("template_path", template_path=STR))],
        openai(short, {"template_path": "cfn.yaml"}),
        {short: long_name},
    )
    renamed(d, long_name, Step.REVERSE_MAP)


def test_br15_sanitized_name_maps_back_from_the_map() -> None:
    tools = [fn("binja.get_function", schema("address", address=STR)), fn("user-profile/update", schema())]
    d = run(
        tools, anthropic("binja_get_function", {"address": "0x401000"}), {"binja_get_function": "binja.get_function"}
    )
    renamed(d, "binja.get_function", Step.REVERSE_MAP)


def test_br31_deduplicated_alias_maps_back() -> None:
    tools = [
        fn("Read", schema("file_path", file_path=STR)),
        fn("Read", schema("path", path=STR)),
        fn("Bash", schema("command", command=STR)),
    ]
    d = run(tools, anthropic("Read_2", {"file_path": "/a"}), {"Read_2": "Read"})
    renamed(d, "Read", Step.REVERSE_MAP)
