"""The repair ladder: one test per rung and per leave-it rule.

Each test builds its own declared tools (names are the real clients' spellings; the schemas are
written here, trimmed to the keys that matter) and checks the action, the target, the ladder step,
and that the recorded reason is non-empty and names what it decided about.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from schemas import BOOL
from schemas import INT
from schemas import STR
from schemas import fn
from schemas import schema
from toolvocab.dialects.base import call_from_payload
from toolvocab.engine.ladder import PROVIDER_PREFIXES
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import name_back
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import Decision
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind

# A Claude-Code-shaped tool set (schemas written for these tests).
BASH = fn("Bash", schema("command", command=STR, description=STR, timeout=INT, run_in_background=BOOL))
POWERSHELL = fn("PowerShell", schema("command", command=STR, description=STR, timeout=INT))
READ = fn("Read", schema("file_path", file_path=STR, offset=INT, limit=INT))
WRITE = fn("Write", schema("file_path", "content", file_path=STR, content=STR))
EDIT = fn(
    "Edit",
    schema("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR, replace_all=BOOL),
)
CLAUDE = [BASH, READ, WRITE, EDIT]

READ_FILE = fn("read_file", schema("path", path=STR))
GH_CREATE = fn("mcp__github__create_issue", schema("title", title=STR, body=STR))


def decide(
    tools: list[DeclaredTool],
    name: str,
    args: dict[str, Any] | None = None,
    *,
    namespace: str | None = None,
    reverse_map: dict[str, str] | None = None,
    kind: ToolKind = ToolKind.FUNCTION,
    call_id: str | None = None,
) -> Decision:
    call = ToolCall(name=name, arguments={} if args is None else args, namespace=namespace, kind=kind, id=call_id)
    return resolve(call, Toolset(tools), reverse_map)


def assert_renamed(d: Decision, target: str, step: Step, *, target_namespace: str | None = None) -> None:
    assert d.action is Action.RENAME, d.reason
    assert d.step is step
    assert d.target == target
    assert d.target_namespace == target_namespace
    assert d.reason.strip()
    assert d.name.strip() in d.reason or d.name in d.reason
    assert target in d.reason
    assert d.changed


def assert_left(
    d: Decision, step: Step, *, mentions: tuple[str, ...] = (), candidates: list[str] | None = None
) -> None:
    assert d.action is Action.LEAVE
    assert d.step is step
    assert d.target is None and d.target_namespace is None
    assert d.arguments_after is None
    assert not d.changed
    assert d.reason.strip()
    for word in mentions:
        assert word in d.reason, (word, d.reason)
    if candidates is not None:
        assert sorted(d.candidates) == sorted(candidates)


# --- rung 1: declared ------------------------------------------------------------------------


def test_exact_declared_name_is_kept() -> None:
    d = decide(CLAUDE, "Bash", {"command": "git status"}, call_id="toolu_01")
    assert d.action is Action.KEEP
    assert d.step is Step.DECLARED
    assert d.target == "Bash"
    assert d.arguments_after is None and d.arg_changes == []
    assert d.call_id == "toolu_01"
    assert "Bash" in d.reason
    assert not d.changed


def test_exact_name_wins_over_a_declared_case_variant() -> None:
    lower = fn("bash", schema("command", command=STR))
    d = decide([BASH, lower], "bash", {"command": "ls"})
    assert d.action is Action.KEEP and d.target == "bash" and d.step is Step.DECLARED


def test_declared_call_that_validates_is_never_fitted() -> None:
    # ``path`` is a synonym of ``file_path``, but the call already validates: leave it alone.
    d = decide(CLAUDE, "Read", {"file_path": "/repo/a.py", "path": "/repo/b.py"})
    assert d.action is Action.KEEP
    assert d.arguments_after is None


def test_declared_call_with_invalid_arguments_fixed_by_fitting_is_fit() -> None:
    d = decide(CLAUDE, "Bash", {"cmd": "ls -la"})
    assert d.action is Action.FIT
    assert d.step is Step.DECLARED
    assert d.target == "Bash"
    assert d.arguments_after == {"command": "ls -la"}
    assert d.arguments_before == {"cmd": "ls -la"}
    assert [(c.op, c.key, c.to) for c in d.arg_changes] == [("rename_key", "cmd", "command")]
    assert "Bash" in d.reason and "command" in d.reason
    assert d.changed


def test_declared_call_with_argv_for_string_is_fit() -> None:
    d = decide(CLAUDE, "Bash", {"command": ["bash", "-lc", "git log | wc -c"]})
    assert d.action is Action.FIT
    assert d.arguments_after == {"command": "git log | wc -c"}


def test_declared_call_invalid_and_not_fixable_is_kept_unchanged() -> None:
    d = decide(CLAUDE, "Bash", {"script": "ls"})
    assert d.action is Action.KEEP
    assert d.step is Step.DECLARED
    assert d.target == "Bash"
    assert d.arguments_after is None and d.arg_changes == []
    assert "Bash" in d.reason and "'command' is a required property" in d.reason


def test_declared_call_with_unparseable_arguments_is_kept() -> None:
    call = call_from_payload({"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": "{oops"}})
    assert call.arguments is None and call.raw_arguments == "{oops"
    d = resolve(call, Toolset(CLAUDE))
    assert d.action is Action.KEEP and d.target == "Bash"
    assert d.arguments_after is None
    assert "Bash" in d.reason and "JSON object" in d.reason


# --- rung 2: the reverse of this flow's rename map -------------------------------------------


def test_reverse_map_renames_an_upstream_alias_back() -> None:
    d = decide(CLAUDE, "run_cmd", {"command": "ls"}, reverse_map={"run_cmd": "Bash"})
    assert_renamed(d, "Bash", Step.REVERSE_MAP)
    assert d.candidates == ["Bash"]


def test_reverse_map_comes_before_normalization() -> None:
    # Normalization alone would see two declared case variants; the map says which one.
    a = fn("list_files", schema("path", path=STR))
    b = fn("ListFiles", schema("path", path=STR))
    assert decide([a, b], "LIST_FILES", {"path": "."}).action is Action.LEAVE
    d = decide([a, b], "LIST_FILES", {"path": "."}, reverse_map={"LIST_FILES": "list_files"})
    assert_renamed(d, "list_files", Step.REVERSE_MAP)


def test_reverse_map_to_a_name_only_replayed_in_the_transcript_goes_back_to_it() -> None:
    # The plan aliases a replayed, undeclared name the upstream would reject (BR-17); if the model
    # repeats the alias, the client gets its own name back (and reports it), never the alias.
    d = decide([READ], "upstream_sh", {"command": "ls"}, reverse_map={"upstream_sh": "search.evidence"})
    assert d.action is Action.RENAME and d.target == "search.evidence" and d.step is Step.REVERSE_MAP
    assert d.arguments_after is None and "does not declare" in d.reason


def test_reverse_map_gives_the_client_its_own_name_back_even_when_the_schema_fails() -> None:
    # The alias is this flow's own: it goes back when every key keeps its meaning, valid
    # arguments or not (the client then reports the missing key against its own tool).
    d = decide(CLAUDE, "run_cmd", {"timeout": 5}, reverse_map={"run_cmd": "Bash"})
    assert d.action is Action.RENAME and d.target == "Bash" and d.step is Step.REVERSE_MAP
    for text in ("run_cmd", "Bash", "'command' is a required property"):
        assert text in d.reason


def _namespaced_alias(operation: str, namespace: str) -> tuple[DeclaredTool, str, dict[str, str]]:
    """A tool of ``namespace`` and the alias a plan gives its operation (the OpenAI grammar)."""
    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    tool = fn(operation, schema("title", title=STR), namespace=namespace)
    op_alias = alias(operation, GRAMMARS["openai"], {operation})
    return tool, op_alias, {namespace + op_alias: namespace + operation}


@settings(max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100")), deadline=None)
@given(
    operation=st.from_regex(r"[a-z][a-z_]{0,70}[a-z]", fullmatch=True),
    server=st.sampled_from(["github", "git_hub", "Github"]),
    other=st.sampled_from([None, "mcp__gitlab__", "functions"]),
)
def test_an_alias_called_outside_its_server_is_left_and_the_record_says_whose_it_is(
    operation: str, server: str, other: str | None
) -> None:
    """The model kept the alias this flow sent for a namespaced tool but dropped its server or
    put it under another: a bare name never enters a namespace, a namespaced one never leaves it,
    so the call is left (no target) and the reason names the tool whose alias it is; under its
    own server the same alias goes back."""
    namespace = f"mcp__{server}__"
    tool, op_alias, reverse = _namespaced_alias(operation, namespace)
    d = decide([tool], op_alias, {"title": "t"}, namespace=other, reverse_map=reverse)
    assert d.action is Action.LEAVE and d.target is None and d.target_namespace is None
    assert f"the name this flow sent upstream for {namespace}{operation}" in d.reason
    home = decide([tool], op_alias, {"title": "t"}, namespace=namespace, reverse_map=reverse)
    assert (home.action, home.target, home.target_namespace) == (Action.RENAME, operation, namespace)


def test_an_alias_flattened_with_another_server_is_left_and_said() -> None:
    tool, op_alias, reverse = _namespaced_alias("create_an_issue_" + "x" * 60, "mcp__github__")
    d = decide([tool], "mcp__gitlab__" + op_alias, {"title": "t"}, reverse_map=reverse)
    assert d.action is Action.LEAVE and d.target is None
    assert d.reason.endswith("but under another server: the client will report it")
    plain = decide([tool], "create_issue_" + "0" * 8, {"title": "t"}, reverse_map=reverse)
    assert "sent upstream" not in plain.reason  # another alias-shaped name: nothing said


def test_a_transport_alias_always_goes_back_with_its_arguments_as_sent() -> None:
    # `run_cmd` is no agent's name: a transport alias of the client's own tool. Undoing it
    # reinterprets nothing, so it goes back whatever the arguments; they are not changed.
    d = decide(CLAUDE, "run_cmd", {"script": "ls"}, reverse_map={"run_cmd": "Bash"})
    assert d.action is Action.RENAME and d.step is Step.REVERSE_MAP and d.target == "Bash"
    assert d.arguments_after is None


def test_a_profile_alias_leaves_a_call_with_a_key_the_tool_has_no_place_for() -> None:
    # Shown as `shell` (Codex's name), the model may send Codex's keys: Bash has no `workdir`,
    # and a client that ignored it would run in another directory.
    d = decide(CLAUDE, "shell", {"command": "make", "workdir": "/srv"}, reverse_map={"shell": "Bash"})
    assert d.action is Action.LEAVE and d.step is Step.REVERSE_MAP and d.target is None
    assert "'workdir'" in d.reason


def test_reverse_map_fits_arguments() -> None:
    write_to_file = fn("write_to_file", schema("path", "content", path=STR, content=STR))
    d = decide([write_to_file], "Write", {"file_path": "a.txt", "content": "x"}, reverse_map={"Write": "write_to_file"})
    assert_renamed(d, "write_to_file", Step.REVERSE_MAP)
    assert d.arguments_after == {"path": "a.txt", "content": "x"}


def test_name_back_gives_a_transport_alias_its_declared_name_and_namespace() -> None:
    gh = fn("create_issue", schema("title", title=STR), namespace="mcp__github__")
    tools = Toolset([BASH, gh])
    aliases = {"run_cmd": "Bash", "gh_a1b2": "mcp__github__create_issue"}
    assert name_back(ToolCall(name="run_cmd"), tools, aliases) == ("Bash", None)
    assert name_back(ToolCall(name="functions.run_cmd"), tools, aliases) == ("Bash", None)  # read losslessly
    assert name_back(ToolCall(name="gh_a1b2"), tools, aliases) == ("create_issue", "mcp__github__")
    assert name_back(ToolCall(name="Bash"), tools, aliases) is None  # not an alias
    assert name_back(ToolCall(name="run_cmd"), tools, None) is None


def test_name_back_leaves_a_profile_alias_and_names_a_replayed_name() -> None:
    # `shell` is Codex's name: the model may have used Codex's keys, which only the ladder weighs.
    assert name_back(ToolCall(name="shell"), Toolset(CLAUDE), {"shell": "Bash"}) is None
    # BR-17: the alias of a name the client only replayed goes back to that name.
    assert name_back(ToolCall(name="upstream_sh"), Toolset([READ]), {"upstream_sh": "search.evidence"}) == (
        "search.evidence",
        None,
    )


_ALIASES = st.sampled_from(["run_cmd", "shell", "Bash", "exec_command", "gh_a1b2", "read_file", "x_9f3e"])
_ORIGINALS = st.sampled_from(["Bash", "Read", "mcp__github__create_issue", "search.evidence", "Bash\x00" + "1"])


@settings(max_examples=300, deadline=None)
@given(
    aliases=st.dictionaries(_ALIASES, _ORIGINALS, max_size=4),
    answered=st.one_of(_ALIASES, _ALIASES.map(lambda a: "functions." + a), _ALIASES.map(lambda a: f" {a} ")),
    arguments=st.sampled_from([{}, {"command": "ls"}, {"file_path": "a"}, {"title": "t"}, {"cmd": ["ls"]}]),
)
def test_name_back_never_names_another_tool_than_the_ladder(aliases, answered, arguments) -> None:
    """What a given-up call gets (the name alone) is the name the whole repair gives whenever that
    repair renames it, and it is only ever given for an alias of this flow's map; a vocabulary
    name (another agent's, whose keys may mean otherwise) never gets it."""
    gh = fn("create_issue", schema("title", title=STR), namespace="mcp__github__")
    tools = Toolset([BASH, READ, gh])
    call = ToolCall(name=answered, arguments=arguments)
    back = name_back(call, tools, aliases)
    decision = resolve(call, tools, aliases)
    if back is None:
        return
    assert any(answered.strip().removeprefix("functions.") == a for a in aliases)
    assert decision.step is Step.REVERSE_MAP and decision.action is Action.RENAME
    assert (decision.target, decision.target_namespace) == back


# --- rung 3: lossless normalizations ----------------------------------------------------------


@pytest.mark.parametrize("answered", ["bash", "BASH", "bAsH", " Bash ", "Bash\n"])
def test_case_and_whitespace_only_rename(answered: str) -> None:
    d = decide(CLAUDE, answered, {"command": "git status"})
    assert_renamed(d, "Bash", Step.NORMALIZED)
    assert d.arguments_after is None


def test_two_declared_case_variants_leave() -> None:
    lower = fn("bash", schema("command", command=STR))
    d = decide([BASH, lower], "BASH", {"command": "ls"})
    assert_left(d, Step.NORMALIZED, mentions=("BASH", "Bash", "bash"), candidates=["Bash", "bash"])


@pytest.mark.parametrize(
    "answered",
    ["read-file", "readFile", "read.file", "ReadFile", "READ_FILE", "read file", "read:file", "read/file", "readfile"],
)
def test_separator_variants_rename(answered: str) -> None:
    d = decide([READ_FILE], answered, {"path": "README.md"})
    assert_renamed(d, "read_file", Step.NORMALIZED)
    assert d.candidates == ["read_file"]


def test_separator_variants_of_two_declared_names_leave() -> None:
    other = fn("readFile", schema("path", path=STR))
    d = decide([READ_FILE, other], "read-file", {"path": "x"})
    assert_left(
        d, Step.NORMALIZED, mentions=("read-file", "read_file", "readFile"), candidates=["read_file", "readFile"]
    )


@pytest.mark.parametrize("prefix", ["functions.", "functions:", "tools/", "default_api:", "default."])
@pytest.mark.parametrize(
    ("bare", "tool", "args"), [("read_file", READ_FILE, {"path": "a"}), ("Bash", BASH, {"command": "ls"})]
)
def test_provider_prefix_is_stripped(prefix: str, bare: str, tool: DeclaredTool, args: dict[str, Any]) -> None:
    assert prefix in PROVIDER_PREFIXES
    d = decide([tool, READ], prefix + bare, args)
    assert_renamed(d, bare, Step.NORMALIZED)


def test_prefix_with_nothing_after_it_is_left() -> None:
    d = decide([READ_FILE], "functions.", {"path": "a"})
    assert d.action is Action.LEAVE and d.target is None
    assert "functions." in d.reason


@pytest.mark.parametrize(
    ("declared", "answered", "args"),
    [
        ("shell_command", "shell_commandshell_command", {"command": "ls"}),
        ("read_file", "read_fileread_file", {"path": "a"}),
        ("Bash", "BashBash", {"command": "ls"}),
    ],
)
def test_name_written_twice_collapses(declared: str, answered: str, args: dict[str, Any]) -> None:
    tool = fn(declared, schema(next(iter(args)), **{k: STR for k in args}))
    d = decide([tool], answered, args)
    assert_renamed(d, declared, Step.NORMALIZED)


def test_name_almost_written_twice_is_left() -> None:
    d = decide([READ_FILE], "read_fileread_fil", {"path": "a"})
    assert_left(d, Step.NONE, mentions=("read_fileread_fil",))


@pytest.mark.parametrize(
    "answered",
    [
        "github:create_issue",
        "github.create_issue",
        "github__create_issue",
        "github/create_issue",
        "GitHub:CreateIssue",
        "mcp__github__createIssue",
        "MCP__GitHub__Create_Issue",
        "functions.mcp__github__create_issue",
    ],
)
def test_mcp_notation_variants_of_the_same_server(answered: str) -> None:
    d = decide([GH_CREATE, BASH], answered, {"title": "bug"})
    assert_renamed(d, "mcp__github__create_issue", Step.NORMALIZED)


@pytest.mark.parametrize(
    "answered",
    [
        "gitlab:create_issue",
        "gitlab__create_issue",
        "mcp__gitlab__create_issue",
        # Server and operation cannot be told apart once the joins are folded:
        # server "github_create" + "issue" is as likely as "github" + "create_issue".
        "mcp_github_create_issue",
        "mcp__git_hub__create_issue",
    ],
)
def test_mcp_variant_of_another_server_is_left(answered: str) -> None:
    d = decide([GH_CREATE, BASH], answered, {"title": "bug"})
    assert d.action is Action.LEAVE and d.target is None
    assert answered in d.reason


def test_mcp_name_of_an_undeclared_server_says_so() -> None:
    d = decide([GH_CREATE], "mcp__gitlab__create_issue", {"title": "bug"})
    assert_left(d, Step.NONE, mentions=("mcp__gitlab__create_issue", "gitlab"))


def test_same_tool_on_two_servers_never_guessed() -> None:
    gl = fn("mcp__gitlab__create_issue", schema("title", title=STR))
    d = decide([GH_CREATE, gl], "create_issue", {"title": "bug"})
    assert d.action is Action.LEAVE and d.target is None


@pytest.mark.parametrize(
    ("mcp_tool", "answered", "args"),
    [
        (fn("mcp__github__create_issue", schema("title", title=STR)), "create_issue", {"title": "t"}),
        (fn("mcp__fs__read_file", schema("path", path=STR)), "read_file", {"path": "a"}),
        (fn("mcp__fs__Read", schema("file_path", file_path=STR)), "Read", {"file_path": "a"}),
        (fn("mcp__sandbox__shell", schema("command", command=STR)), "shell", {"command": "ls"}),
        (fn("mcp__sandbox__exec", schema("command", command=STR)), "Bash", {"command": "ls"}),
    ],
)
def test_builtin_name_never_moves_into_an_mcp_tool(mcp_tool: DeclaredTool, answered: str, args: dict[str, Any]) -> None:
    d = decide([mcp_tool], answered, args)
    assert d.action is Action.LEAVE and d.target is None
    assert answered in d.reason


@pytest.mark.parametrize(
    ("mcp_name", "answered", "args"),
    [
        ("mcp__web__fetch", "web_fetch", {"url": "https://x"}),
        ("mcp__read__file", "read_file", {"path": "a"}),
        ("mcp__web__search", "web-search", {"query": "q"}),
    ],
)
def test_builtin_vocabulary_name_is_not_read_as_server_underscore_tool(
    mcp_name: str, answered: str, args: dict[str, Any]
) -> None:
    # A single ``_`` or ``-`` is not a server join: ``web_fetch`` is a builtin name, not web + fetch.
    d = decide([fn(mcp_name, schema(next(iter(args)), **{k: STR for k in args}))], answered, args)
    assert d.action is Action.LEAVE and d.target is None


@pytest.mark.parametrize(
    ("answered", "args"),
    [
        ("mcp__fs__read_file", {"file_path": "/repo/a"}),
        ("mcp__fs__read_file", {"path": "/repo/a"}),
        ("mcp__fs__Read", {"file_path": "/repo/a"}),
        ("mcp__shell__Bash", {"command": "ls"}),
        ("mcp__github__create_issue", {"file_path": "x", "content": "y"}),
    ],
)
def test_mcp_name_never_moves_to_a_builtin(answered: str, args: dict[str, Any]) -> None:
    d = decide(CLAUDE, answered, args)
    assert_left(d, Step.NONE, mentions=(answered,))


# --- Responses-style namespaced tools ---------------------------------------------------------

NS_GH = fn("create_issue", schema("title", title=STR), namespace="mcp__github__")
NS_GL = fn("create_issue", schema("title", title=STR), namespace="mcp__gitlab__")


def test_namespaced_call_to_its_declared_tool_is_kept() -> None:
    d = decide([NS_GH], "create_issue", {"title": "t"}, namespace="mcp__github__")
    assert d.action is Action.KEEP and d.target == "create_issue" and d.target_namespace == "mcp__github__"


def test_flattened_namespaced_call_is_split_back() -> None:
    d = decide([NS_GH, NS_GL, BASH], "mcp__github__create_issue", {"title": "t"})
    assert d.action is Action.RENAME
    assert d.step is Step.NORMALIZED
    assert d.target == "create_issue"
    assert d.target_namespace == "mcp__github__"
    assert "mcp__github__create_issue" in d.reason


def test_namespaced_call_with_case_variant_stays_in_its_namespace() -> None:
    d = decide([NS_GH, NS_GL], "createIssue", {"title": "t"}, namespace="mcp__github__")
    assert d.action is Action.RENAME
    assert (d.target, d.target_namespace) == ("create_issue", "mcp__github__")


def test_namespaced_call_of_another_namespace_is_left() -> None:
    d = decide([NS_GH, BASH], "create_issue", {"title": "t"}, namespace="mcp__gitlab__")
    assert_left(d, Step.NONE, mentions=("create_issue", "gitlab"))


def test_bare_name_never_enters_a_namespace() -> None:
    d = decide([NS_GH], "create_issue", {"title": "t"})
    assert_left(d, Step.NONE, mentions=("create_issue",))


@pytest.mark.parametrize(
    ("answered", "args"),
    [("Bash", {"command": "ls"}), ("shell", {"command": "ls"}), ("Write", {"file_path": "a", "content": "b"})],
)
def test_namespaced_call_never_leaves_its_namespace(answered: str, args: dict[str, Any]) -> None:
    d = decide(CLAUDE + [NS_GH], answered, args, namespace="mcp__github__")
    assert_left(d, Step.NONE, mentions=(answered,))


def test_namespaced_tools_are_never_capability_candidates() -> None:
    ns_shell = fn("exec", schema("command", command=STR), namespace="mcp__sandbox__")
    d = decide([ns_shell, READ], "shell", {"command": "ls"})
    assert_left(d, Step.CAPABILITY, mentions=("shell",), candidates=[])
    # ...and do not count as a second candidate next to a builtin shell.
    d = decide([ns_shell, BASH], "shell", {"command": "ls"})
    assert_renamed(d, "Bash", Step.CAPABILITY)


# --- rung 4: capability -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answered", "args", "target", "after"),
    [
        ("shell", {"command": "ls"}, "Bash", None),
        ("run_shell_command", {"command": "ls"}, "Bash", None),
        ("execute_command", {"command": "ls"}, "Bash", None),
        ("shell", {"command": ["bash", "-lc", "ls | wc -l"]}, "Bash", {"command": "ls | wc -l"}),
        ("read_file", {"file_path": "/repo/a", "limit": 50}, "Read", None),
        ("read_file", {"path": "/repo/a", "limit": 50}, "Read", {"file_path": "/repo/a", "limit": 50}),
        ("write_file", {"path": "/repo/a", "content": "x"}, "Write", {"file_path": "/repo/a", "content": "x"}),
        (
            "replace",
            {"filePath": "/repo/a", "oldString": "x", "newString": "y"},
            "Edit",
            {"file_path": "/repo/a", "old_string": "x", "new_string": "y"},
        ),
    ],
)
def test_capability_with_exactly_one_declared_tool_renames(
    answered: str, args: dict[str, Any], target: str, after: dict[str, Any] | None
) -> None:
    d = decide(CLAUDE, answered, args)
    assert_renamed(d, target, Step.CAPABILITY)
    assert d.candidates == [target]
    assert d.arguments_after == after


def test_a_posix_shell_name_reaches_bash_never_powershell() -> None:
    # PowerShell is its own capability; a name of a POSIX shell never lands on it, and a lossless
    # spelling of the declared Bash is still Bash.
    d = decide([BASH, POWERSHELL, READ], "bash", {"command": "ls"})
    assert_renamed(d, "Bash", Step.NORMALIZED)


@pytest.mark.parametrize("answered", ["shell", "run_shell_command", "exec_command", "execute_command", "terminal"])
def test_a_generic_shell_name_with_bash_and_powershell_declared_is_left(answered: str) -> None:
    # The seed's own example: a session with both Bash and PowerShell has two shell tools, and a
    # generic shell name may mean either.
    d = decide([BASH, POWERSHELL, READ], answered, {"command": "ls"})
    assert d.action is Action.LEAVE and d.step is Step.CAPABILITY
    assert sorted(d.candidates) == ["Bash", "PowerShell"]


@pytest.mark.parametrize("answered", ["shell", "bash", "run_shell_command", "exec_command"])
def test_posix_shell_names_are_left_when_only_powershell_is_declared(answered: str) -> None:
    d = decide([POWERSHELL, READ], answered, {"command": ["bash", "-lc", "ls"]})
    assert d.action is Action.LEAVE and d.target is None


def test_powershell_named_call_reaches_powershell() -> None:
    d = decide([BASH, POWERSHELL], "powershell", {"command": "Get-ChildItem"})
    assert_renamed(d, "PowerShell", Step.NORMALIZED)


def test_two_posix_shells_leave_with_both_candidates() -> None:
    bash2 = fn("run_shell_command", schema("command", command=STR))
    d = decide([BASH, bash2, READ], "shell", {"command": "ls"})
    assert_left(
        d, Step.CAPABILITY, mentions=("shell", "Bash", "run_shell_command"), candidates=["Bash", "run_shell_command"]
    )


def test_zero_capability_candidates_leave() -> None:
    d = decide([READ, WRITE], "shell", {"command": "ls"})
    assert_left(d, Step.CAPABILITY, mentions=("shell",), candidates=[])


def test_unknown_name_is_left() -> None:
    d = decide(CLAUDE, "frobnicate_widget", {"x": 1})
    assert_left(d, Step.NONE, mentions=("frobnicate_widget",), candidates=[])


def test_capability_rename_with_a_key_the_target_lacks_is_left() -> None:
    d = decide(CLAUDE, "shell", {"script": "ls"})
    assert_left(d, Step.CAPABILITY, mentions=("shell", "Bash", "'script'"))
    assert d.candidates == ["Bash"]


def test_capability_rename_that_does_not_validate_is_left() -> None:
    d = decide(CLAUDE, "shell", {})
    assert_left(d, Step.CAPABILITY, mentions=("shell", "Bash", "'command' is a required property"))
    assert d.candidates == ["Bash"]


def test_capability_rename_with_wrong_type_reports_the_schema_error() -> None:
    d = decide(CLAUDE, "read_file", {"file_path": "/a", "limit": "many"})
    assert_left(d, Step.CAPABILITY, mentions=("read_file", "Read", "limit"))


def test_undeclared_call_with_unparseable_arguments_is_left() -> None:
    call = call_from_payload({"name": "shell", "arguments": "{not json"})
    d = resolve(call, Toolset(CLAUDE))
    assert d.action is Action.LEAVE and d.target is None
    assert "shell" in d.reason and "Bash" in d.reason and "JSON object" in d.reason


def test_undeclared_call_with_array_arguments_is_left() -> None:
    call = ToolCall.read("shell", "[1, 2]")
    assert call.arguments is None
    d = resolve(call, Toolset(CLAUDE))
    assert d.action is Action.LEAVE and d.target is None


def test_lossless_rename_does_not_depend_on_the_arguments() -> None:
    # `bash` is the client's Bash modulo case; the name goes back, the arguments as
    # sent, and the client reports their problem against the right tool.
    call = ToolCall.read("bash", "[1, 2]")
    d = resolve(call, Toolset(CLAUDE))
    assert_renamed(d, "Bash", Step.NORMALIZED)
    assert d.arguments_after is None


# --- apply_patch is never an edit -------------------------------------------------------------


@pytest.mark.parametrize("answered", ["apply_patch", "applypatch", "apply-patch", "ApplyPatch"])
def test_apply_patch_never_maps_to_an_edit_tool(answered: str) -> None:
    d = decide(CLAUDE, answered, {"input": "*** Begin Patch\n*** End Patch"})
    assert d.action is Action.LEAVE and d.target is None
    assert answered in d.reason
    assert "Edit" not in d.candidates


def test_edit_never_maps_to_apply_patch() -> None:
    apply_patch = fn("apply_patch", schema("input", input=STR))
    d = decide([apply_patch, BASH], "Edit", {"file_path": "a", "old_string": "x", "new_string": "y"})
    assert d.action is Action.LEAVE and d.target is None


# --- str_replace_editor: capability by command ------------------------------------------------


@pytest.mark.parametrize("editor", ["str_replace_editor", "str_replace_based_edit_tool"])
@pytest.mark.parametrize(
    ("args", "target", "after"),
    [
        (
            {"command": "str_replace", "path": "/a", "old_str": "x", "new_str": "y"},
            "Edit",
            {"file_path": "/a", "old_string": "x", "new_string": "y"},
        ),
        ({"command": "view", "path": "/a"}, "Read", {"file_path": "/a"}),
    ],
)
def test_text_editor_command_chooses_the_capability(
    editor: str, args: dict[str, Any], target: str, after: dict[str, Any]
) -> None:
    d = decide(CLAUDE, editor, args)
    assert_renamed(d, target, Step.CAPABILITY)
    assert d.arguments_after == after  # ``command`` is consumed and dropped


@pytest.mark.parametrize(
    ("answered", "args"),
    [("read_file", {"file_path": "/repo/a"}), ("read_file", {"path": "/repo/a"})],
)
def test_a_read_without_a_limit_is_left_where_its_readings_read_other_line_counts(
    answered: str, args: dict[str, Any]
) -> None:
    """``read_file`` with no ``limit`` reads 1000 lines in Qwen Code and 2000 in Codex: which the
    model meant is not known, and the two are two different calls of ``Read``."""
    d = decide(CLAUDE, answered, args)
    assert_left(d, Step.CAPABILITY, mentions=("reads differently", "'limit'"))


def test_a_read_under_a_profiles_name_reads_as_the_tool_it_showed() -> None:
    """A profile shows Claude Code's ``Read`` (its schema and its description: up to 2000 lines)
    upstream as ``read_file``: a ``read_file`` call without a ``limit`` goes back as ``Read``, no
    count written, though Qwen Code's and Codex's own ``read_file`` count otherwise (the model
    was told what this tool reads). Left, the client got the alias for every such read."""
    d = decide(CLAUDE, "read_file", {"file_path": "/repo/a"}, reverse_map={"read_file": "Read"})
    assert_renamed(d, "Read", Step.REVERSE_MAP)
    assert d.arguments_after is None


@pytest.mark.parametrize("command", ["create", "insert", "undo_edit", "bogus"])
def test_text_editor_command_without_counterpart_is_left(command: str) -> None:
    d = decide(CLAUDE, "str_replace_editor", {"command": command, "path": "/a", "insert_line": 1, "new_str": "x"})
    assert_left(d, Step.NONE, mentions=("str_replace_editor", command))


def test_text_editor_str_replace_without_edit_tool_is_left() -> None:
    d = decide(
        [READ, BASH], "str_replace_editor", {"command": "str_replace", "path": "/a", "old_str": "x", "new_str": "y"}
    )
    assert_left(d, Step.CAPABILITY, mentions=("str_replace_editor",), candidates=[])


# --- freeform and provider-defined tools ------------------------------------------------------


def test_freeform_tool_is_never_a_capability_target() -> None:
    shell_freeform = declared_tool("shell", kind=ToolKind.FREEFORM)
    d = decide([shell_freeform, READ], "run_shell_command", {"command": "ls"})
    assert_left(d, Step.CAPABILITY, mentions=("run_shell_command",), candidates=[])


def test_freeform_tool_with_preset_capability_is_still_not_a_target() -> None:
    exec_freeform = DeclaredTool(name="exec", kind=ToolKind.FREEFORM, capability="shell")
    d = decide([exec_freeform, READ], "shell", {"command": "ls"})
    assert_left(d, Step.CAPABILITY, candidates=[])


def test_function_call_never_renamed_to_a_freeform_tool() -> None:
    patch = declared_tool("apply_patch", kind=ToolKind.FREEFORM)
    d = decide([patch, BASH], "applypatch", {"input": "*** Begin Patch"})
    assert d.action is Action.LEAVE and d.target is None


def test_freeform_call_renamed_to_freeform_tool_by_spelling() -> None:
    patch = declared_tool("apply_patch", kind=ToolKind.FREEFORM)
    call = ToolCall(name="applypatch", arguments=None, raw_arguments="*** Begin Patch", kind=ToolKind.FREEFORM)
    d = resolve(call, Toolset([patch, BASH]))
    assert_renamed(d, "apply_patch", Step.NORMALIZED)
    assert d.arguments_after is None


def test_declared_freeform_call_is_kept() -> None:
    patch = declared_tool("apply_patch", kind=ToolKind.FREEFORM)
    call = ToolCall(name="apply_patch", arguments=None, raw_arguments="*** Begin Patch", kind=ToolKind.FREEFORM)
    d = resolve(call, Toolset([patch]))
    assert d.action is Action.KEEP and d.target == "apply_patch"


@pytest.mark.parametrize(
    ("provider_name", "answered", "args"),
    [
        ("bash", "shell", {"command": "ls"}),
        ("bash", "Bash", {"command": "ls"}),
        ("bash", "BASH", {"command": "ls"}),
        ("web_search", "WebSearch", {"query": "q"}),
        ("str_replace_based_edit_tool", "Edit", {"file_path": "a", "old_string": "x", "new_string": "y"}),
    ],
)
def test_provider_defined_tool_is_never_a_target(provider_name: str, answered: str, args: dict[str, Any]) -> None:
    provider = declared_tool(provider_name, kind=ToolKind.PROVIDER)
    d = decide([provider, READ], answered, args)
    assert d.action is Action.LEAVE and d.target is None
    assert answered in d.reason


# --- names the ladder never guesses -----------------------------------------------------------


@pytest.mark.parametrize("answered", ["", "   ", "\t"])
def test_empty_name_is_left(answered: str) -> None:
    d = decide(CLAUDE, answered, {"command": "ls"})
    assert_left(d, Step.NONE, mentions=("empty",))


# --- parsing the answered call ----------------------------------------------------------------


@pytest.mark.parametrize(
    "payload",
    [
        {"name": "shell", "arguments": '{"command": "ls"}', "id": "call_1"},
        {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": '{"command": "ls"}'}},
        {"type": "function_call", "call_id": "call_1", "name": "shell", "arguments": '{"command": "ls"}'},
        {"type": "tool_use", "id": "call_1", "name": "shell", "input": {"command": "ls"}},
        {"name": "shell", "args": {"command": "ls"}, "id": "call_1"},
        {"name": "shell", "args": {"command": "ls"}, "type": "tool_call", "id": "call_1"},
        {"id": "call_1", "type": "function", "function": {"name": "shell", "arguments": {"command": "ls"}}},
    ],
    ids=["openai", "openai-nested", "responses", "anthropic", "gemini", "langchain", "object-arguments"],
)
def test_every_payload_shape_resolves_the_same(payload: dict[str, Any]) -> None:
    call = call_from_payload(payload)
    assert call.name == "shell"
    assert call.arguments == {"command": "ls"}
    assert call.id == "call_1"
    d = resolve(call, Toolset(CLAUDE))
    assert_renamed(d, "Bash", Step.CAPABILITY)
    assert d.call_id == "call_1"


@pytest.mark.parametrize(
    ("arguments", "parsed"),
    [("", {}), ("   ", {}), (None, {}), ("{}", {}), ("[]", {}), ("null", {}), ('"x"', None), ("{", None)],
)
def test_call_from_payload_argument_text(arguments: Any, parsed: dict[str, Any] | None) -> None:
    payload: dict[str, Any] = {"name": "Bash"}
    if arguments is not None:
        payload["arguments"] = arguments
    call = call_from_payload(payload)
    assert call.arguments == parsed
    assert call.raw_arguments == arguments


def test_call_from_payload_reads_the_responses_namespace() -> None:
    call = call_from_payload(
        {
            "type": "function_call",
            "call_id": "c",
            "name": "create_issue",
            "namespace": "mcp__github__",
            "arguments": "{}",
        }
    )
    assert call.namespace == "mcp__github__" and call.qualified == "mcp__github__create_issue"


@pytest.mark.parametrize(
    "payload", [{"arguments": "{}"}, {"name": None}, {"name": 3, "input": {}}, {"function": {"arguments": "{}"}}]
)
def test_call_from_payload_without_a_string_name_raises_value_error(payload: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        call_from_payload(payload)


# --- never invent a name ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "answered",
    ["bash", "shell", "read_file", "functions.Read", "github:create_issue", "str_replace_editor", "Edit", "nothing"],
)
def test_target_is_always_declared(answered: str) -> None:
    tools = CLAUDE + [GH_CREATE]
    d = decide(tools, answered, {"command": "str_replace", "path": "/a", "old_str": "x", "new_str": "y"})
    if d.target is not None:
        assert (d.target_namespace, d.target) in {(t.namespace, t.name) for t in tools}


# --- a repair changes spelling, never meaning -----------------------------------------

BASH_CLOSED = fn(
    "Bash",
    schema("command", additional=False, command=STR, description=STR, timeout=INT, run_in_background=BOOL),
)
WRITE_CLOSED = fn("Write", schema("file_path", "content", additional=False, file_path=STR, content=STR))
EDIT_CLOSED = fn(
    "Edit",
    schema("file_path", "old_string", "new_string", additional=False, file_path=STR, old_string=STR, new_string=STR),
)


@pytest.mark.parametrize(
    ("tools", "answered", "args", "key"),
    [
        ([BASH_CLOSED], "Bash", {"command": "npm test", "working_dir": "pkg/b"}, "working_dir"),
        ([BASH_CLOSED], "shell", {"command": "npm test", "working_dir": "pkg/b"}, "working_dir"),
        ([BASH_CLOSED], "bash", {"command": "npm test", "working_dir": "pkg/b"}, "working_dir"),
        ([WRITE_CLOSED], "write_file", {"file_path": "/a", "content": "x", "append": True}, "append"),
        ([WRITE_CLOSED], "Write", {"file_path": "/a", "content": "x", "append": True}, "append"),
        ([EDIT_CLOSED], "edit", {"file_path": "/a", "old_string": "x", "new_string": "y", "preview": True}, "preview"),
        (
            [EDIT_CLOSED],
            "replace",
            {"file_path": "/a", "old_string": "x", "new_string": "y", "dry_run": True},
            "dry_run",
        ),
    ],
)
def test_an_operational_key_is_never_dropped(
    tools: list[DeclaredTool], answered: str, args: dict[str, Any], key: str
) -> None:
    # Kind 1: the call either keeps the key (a lossless name step: the client reports it) or is
    # left unchanged; it never arrives without it.
    d = decide(tools, answered, args)
    final = d.arguments_after if d.arguments_after is not None else d.arguments_before
    assert final is not None and key in final, d
    if d.step is Step.CAPABILITY:
        assert d.action is Action.LEAVE and key in d.reason


@pytest.mark.parametrize("key", ["instruction", "explanation", "justification", "description"])
def test_annotation_keys_are_dropped_where_the_schema_is_closed(key: str) -> None:
    tool = fn(
        "Edit",
        schema(
            "file_path", "old_string", "new_string", additional=False, file_path=STR, old_string=STR, new_string=STR
        ),
    )
    d = decide([tool], "replace", {"file_path": "/a", "old_string": "x", "new_string": "y", key: "why"})
    assert_renamed(d, "Edit", Step.CAPABILITY)
    assert d.arguments_after == {"file_path": "/a", "old_string": "x", "new_string": "y"}
    assert [(c.op, c.key) for c in d.arg_changes] == [("drop_annotation", key)]


def test_annotation_key_kept_where_the_schema_is_open() -> None:
    d = decide([EDIT], "replace", {"file_path": "/a", "old_string": "x", "new_string": "y", "instruction": "why"})
    assert_renamed(d, "Edit", Step.CAPABILITY)
    assert d.arguments_after is None  # nothing changed but the name


CI_RUN_JOB = fn("mcp__ci_run__job", schema("id", id=STR))
CI_OTHER = fn("mcp__ci__status", schema(id=STR))


@pytest.mark.parametrize(
    "answered", ["mcp__ci__run_job", "mcp__ci__runJob", "ci:run_job", "ci.run_job", "mcp__CI__run_job"]
)
def test_folding_never_crosses_into_another_server(answered: str) -> None:
    # Kind 2: server `ci` + `run_job` is not server `ci_run` + `job`.
    d = decide([CI_RUN_JOB, CI_OTHER, BASH], answered, {"id": "1"})
    assert d.action is Action.LEAVE and d.target is None, d.reason


def test_server_matched_case_insensitively_only_when_one_server_matches() -> None:
    wiki_a = fn("mcp__Wiki__ask", schema(q=STR))
    wiki_b = fn("mcp__wiki__search", schema(q=STR))
    d = decide([wiki_a, wiki_b], "mcp__WIKI__ask", {"q": "x"})
    assert d.action is Action.LEAVE and d.target is None, d.reason
    d = decide([wiki_a], "mcp__WIKI__ask", {"q": "x"})
    assert_renamed(d, "mcp__Wiki__ask", Step.NORMALIZED)


def test_a_name_that_splits_into_two_servers_is_left() -> None:
    # Server `github` + `enterprise__list_issues`, or server `github__enterprise` (declared as
    # github_enterprise) + `list_issues`: the model's name is evidence for neither.
    a = fn("mcp__github_enterprise__list_issues", schema(repo=STR))
    b = fn("mcp__github__enterprise_list_issues", schema(repo=STR))
    d = decide([a, b], "mcp__github__enterprise__list_issues", {"repo": "x"})
    assert d.action is Action.LEAVE and d.target is None, d.reason
    assert set(d.candidates) == {a.name, b.name}
    # With one of the two servers declared, the name reads one way.
    d = decide([b], "mcp__github__enterprise__list_issues", {"repo": "x"})
    assert_renamed(d, b.name, Step.NORMALIZED)


WORD = st.text(alphabet="abcdefghij", min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(server=WORD, middle=WORD, op=WORD, sep=st.sampled_from(["_", "-", ""]), prefixed=st.booleans())
def test_no_split_of_a_name_between_two_servers_is_ever_chosen(
    server: str, middle: str, op: str, sep: str, prefixed: bool
) -> None:
    # Two declared servers, `server` and `server<sep>middle`; the answered name splits into either.
    long_server = f"{server}{sep}{middle}"
    if long_server == server:
        return
    tools = [fn(f"mcp__{long_server}__{op}", schema(q=STR)), fn(f"mcp__{server}__{middle}_{op}", schema(q=STR))]
    answered = ("mcp__" if prefixed else "") + f"{server}__{middle}__{op}"
    d = decide(tools, answered, {"q": "x"})
    assert d.action is Action.LEAVE and d.target is None, (answered, d.reason)


@pytest.mark.parametrize(
    "answered", ["mcp__wiki__mcp__wiki__ask", "mcp__wiki__mcp__wiki__mcp__wiki__ask", "wiki.mcp__wiki__ask"]
)
def test_server_prefix_applied_twice_by_a_bridge(answered: str) -> None:
    ask = fn("mcp__wiki__ask", schema("q", q=STR))
    d = decide([ask, BASH], answered, {"q": "x"})
    assert_renamed(d, "mcp__wiki__ask", Step.NORMALIZED)


def test_doubled_prefix_of_another_server_is_left() -> None:
    ask = fn("mcp__wiki__ask", schema("q", q=STR))
    d = decide([ask], "mcp__wiki__mcp__docs__ask", {"q": "x"})
    assert d.action is Action.LEAVE and d.target is None


@pytest.mark.parametrize("namespace", ["default", "functions", "default_api"])
def test_invented_responses_namespace_is_dropped_for_a_top_level_function(namespace: str) -> None:
    exec_command = fn("exec_command", schema("cmd", cmd=STR))
    d = decide([exec_command], "exec_command", {"cmd": "ls"}, namespace=namespace)
    assert_renamed(d, "exec_command", Step.NORMALIZED, target_namespace=None)
    assert namespace in d.reason


def test_declared_namespace_is_never_dropped() -> None:
    exec_command = fn("exec_command", schema("cmd", cmd=STR))
    ns_tool = fn("other", schema(), namespace="default")
    d = decide([exec_command, ns_tool], "exec_command", {"cmd": "ls"}, namespace="default")
    assert d.action is Action.LEAVE and d.target is None


def test_invented_mcp_namespace_never_reaches_a_top_level_function() -> None:
    exec_command = fn("exec_command", schema("cmd", cmd=STR))
    d = decide([exec_command], "exec_command", {"cmd": "ls"}, namespace="mcp__shell__")
    assert d.action is Action.LEAVE and d.target is None


def test_invented_namespace_never_leads_into_a_namespace() -> None:
    gh = fn("create_issue", schema("title", title=STR), namespace="mcp__github__")
    d = decide([gh], "create_issue", {"title": "x"}, namespace="default")
    assert d.action is Action.LEAVE and d.target is None


@pytest.mark.parametrize(
    "answered",
    ["functions.mcp__gh_a1b2c3", " mcp__gh_a1b2c3 ", "default_api:mcp__gh_a1b2c3", "mcp__gh_a1b2c3mcp__gh_a1b2c3"],
)
def test_alias_read_losslessly_never_leaks(answered: str) -> None:
    # Kind 6: the same lossless readings as for declared names apply before the reverse map.
    long_name = "mcp__github__" + "x" * 70
    tool = fn(long_name, schema("title", title=STR))
    d = decide([tool], answered, {"title": "t"}, reverse_map={"mcp__gh_a1b2c3": long_name})
    assert_renamed(d, long_name, Step.REVERSE_MAP)


#: A name the upstream rejects (a dot) and the alias this flow sent for it.
FILES_READ = fn("files.read", schema("path", path=STR))
FILES_ALIAS = {"files_read_601e4eb6": "files.read"}


@pytest.mark.parametrize(
    "answered",
    ["FILES_READ_601E4EB6", "files-read-601e4eb6", "FilesRead601e4eb6", "files_read-601E4EB6", " Files_Read_601e4eb6"],
)
def test_an_alias_in_another_case_or_with_other_separators_is_read_back(answered: str) -> None:
    """The ladder's rule 3 (case and separators are lossless) holds for this flow's aliases as
    for declared names: the client gets its own name, in the ladder and in a stream's
    ``name_back`` alike. Was: left as answered, a name the client never declared."""
    d = decide([FILES_READ], answered, {"path": "a"}, reverse_map=FILES_ALIAS)
    assert_renamed(d, "files.read", Step.REVERSE_MAP)
    assert name_back(ToolCall(name=answered, arguments={"path": "a"}), Toolset([FILES_READ]), FILES_ALIAS) == (
        "files.read",
        None,
    )


def test_a_folded_alias_two_aliases_share_is_left() -> None:
    """Two aliases that differ only in case or separators: a folded spelling names two tools."""
    other = fn("files:read", schema("path", path=STR))
    reverse = {**FILES_ALIAS, "files-read-601e4eb6": "files:read"}
    d = decide([FILES_READ, other], "FILES_READ_601E4EB6", {"path": "a"}, reverse_map=reverse)
    assert d.action is Action.LEAVE and d.target is None
    for exact, original in reverse.items():  # each exact spelling is still its own tool's
        assert_renamed(
            decide([FILES_READ, other], exact, {"path": "a"}, reverse_map=reverse), original, Step.REVERSE_MAP
        )


def test_a_folded_alias_a_declared_tool_also_spells_is_not_read_back() -> None:
    """A declared tool that the folded spelling names too: not the alias (the normalized step
    weighs the declared names)."""
    declared = fn("FilesRead601e4eb6", schema("path", path=STR))
    d = decide([FILES_READ, declared], "FILES_READ_601E4EB6", {"path": "a"}, reverse_map=FILES_ALIAS)
    assert d.step is not Step.REVERSE_MAP and d.target != "files.read"


@pytest.mark.parametrize(
    ("answered", "namespace"),
    [
        ("mcp__ci_run__x_1a2b3c4d", None),  # another MCP server's tool, flat (Chat, Claude Code)
        ("x_1a2b3c4d", "mcp__ci_run__"),  # the same under a Responses namespace (Codex)
        ("mcp__CI__run_x_1a2b3c4d", None),  # the server in another case: another server
        ("files__read_601e4eb6", None),  # a server join where the alias has none
        ("files.read_601e4eb6", None),
    ],
)
def test_a_folded_alias_never_changes_its_server(answered: str, namespace: str | None) -> None:
    """Folding reads case and separators within the tool's part only: the server (or namespace)
    part is compared as written, and a join is never read into or out of a name (rule: a
    namespaced name keeps its server; servers that differ only in case are two candidates)."""
    run_x = fn("mcp__ci__run.x", schema("path", path=STR))
    other = fn("mcp__ci_run__x", schema("path", path=STR))
    reverse = {"mcp__ci__run_x_1a2b3c4d": "mcp__ci__run.x", **FILES_ALIAS}
    d = decide([run_x, other, FILES_READ], answered, {"path": "a"}, reverse_map=reverse, namespace=namespace)
    assert d.step is not Step.REVERSE_MAP and d.target not in ("mcp__ci__run.x", "files.read"), d
    exact = decide([run_x, other, FILES_READ], "mcp__ci__RUN-X_1A2B3C4D", {"path": "a"}, reverse_map=reverse)
    assert_renamed(exact, "mcp__ci__run.x", Step.REVERSE_MAP)  # the tool's part folds, its server as written


def test_a_profile_alias_is_not_read_in_another_case() -> None:
    """A profile's alias is another agent's name (``shell``): another spelling of it is weighed
    by the ladder's own steps, never read back as the alias."""
    bash = fn("Bash", schema("command", command=STR))
    d = decide([bash], "SHELL", {"command": "ls"}, reverse_map={"shell": "Bash"})
    assert d.step is not Step.REVERSE_MAP


@pytest.mark.parametrize(
    ("raw", "empty"), [("", True), ("  ", True), ("null", True), ("[]", True), (None, True), ([], True), ("{}", False)]
)
def test_empty_arguments_become_an_object(raw: Any, empty: bool) -> None:
    call = ToolCall.read("TodoRead", raw)
    assert call.empty_arguments is empty
    tool = fn("TodoRead", schema())
    d = resolve(call, Toolset([tool]))
    if empty:
        assert d.action is Action.FIT and d.arguments_after == {}
        assert [c.op for c in d.arg_changes] == ["empty_to_object"]
    else:
        assert d.action is Action.KEEP and d.arguments_after is None
    d = resolve(call.model_copy(update={"name": "todoread"}), Toolset([tool]))
    assert d.action is Action.RENAME and d.target == "TodoRead"
    assert (d.arguments_after == {}) is empty


def test_absent_arguments_are_not_empty_on_the_wire() -> None:
    call = call_from_payload({"name": "TodoRead"})
    assert call.arguments == {} and call.empty_arguments is False


def test_empty_arguments_left_for_a_freeform_tool() -> None:
    call = ToolCall.read("apply_patch", "").model_copy(update={"kind": ToolKind.FREEFORM})
    tool = declared_tool("apply_patch", kind=ToolKind.FREEFORM)
    d = resolve(call, Toolset([tool]))
    assert d.action is Action.KEEP and d.arguments_after is None


# --- from a fresh-user trial: annotation keys on the client's own tool, look-alike letters -------

GH_CLOSED = fn(
    "mcp__github__create_issue",
    schema("owner", "repo", "title", additional=False, owner=STR, repo=STR, title=STR, body=STR),
)


@pytest.mark.parametrize(
    "answered", ["mcp__github__create_issue", "mcp__github__createIssue", "functions.mcp__github__create_issue"]
)
@pytest.mark.parametrize("key", ["description", "instruction", "justification", "explanation"])
def test_annotation_keys_on_the_clients_own_tool_are_never_dropped(answered: str, key: str) -> None:
    # An issue's description is its body: dropping it would create an issue without one.
    args = {"owner": "o", "repo": "r", "title": "Crash on start", key: "Steps: run X. Actual: segfault."}
    d = decide([GH_CLOSED, BASH], answered, args)
    final = d.arguments_after if d.arguments_after is not None else d.arguments_before
    assert final == args, d


def test_annotation_key_kept_under_a_grammar_alias() -> None:
    long_name = "mcp__github__" + "x" * 70
    tool = fn(long_name, schema("title", additional=False, title=STR))
    d = decide(
        [tool], "mcp__gh_a1b2c3", {"title": "t", "description": "the body"}, reverse_map={"mcp__gh_a1b2c3": long_name}
    )
    assert_renamed(d, long_name, Step.REVERSE_MAP)
    assert (d.arguments_after or d.arguments_before) == {"title": "t", "description": "the body"}


@pytest.mark.parametrize("answered", ["\u017fhell", "ba\u017fh", "\u212aill", "\u3000bash", "bash\u00a0"])
def test_look_alike_letters_and_blanks_are_not_spelling(answered: str) -> None:
    # ſ (long s), K (Kelvin sign), ideographic and no-break spaces: resemblance, not spelling.
    kill = fn("Kill", schema(pid=INT))
    d = decide([BASH, kill, READ], answered, {"command": "ls"})
    assert d.action is Action.LEAVE and d.target is None, d.reason


# -- a server notation that also spells a flat tool ----------------------------------------------
# `github.create_issue` reads as server github's create_issue (mcp__github__create_issue) and, with
# its separator folded, as the flat github_create_issue: two declared tools, so no change.

GH_FLAT = fn("github_create_issue", schema("title", title=STR))


@pytest.mark.parametrize(
    "name", ["github.create_issue", "github__create_issue", "github:create_issue", "GitHub/create-issue"]
)
def test_a_server_notation_that_also_spells_a_flat_tool_is_left(name: str) -> None:
    for tools in ([GH_CREATE, GH_FLAT], [GH_FLAT, GH_CREATE]):
        d = resolve(ToolCall(name=name, arguments={"title": "t"}), Toolset(tools))
        assert d.action is Action.LEAVE and d.target is None, (name, d)
        assert set(d.candidates) == {"mcp__github__create_issue", "github_create_issue"}, d
    # the control: either tool alone is the one the name means
    assert resolve(ToolCall(name=name, arguments={"title": "t"}), Toolset([GH_CREATE])).target == GH_CREATE.name
    assert resolve(ToolCall(name=name, arguments={"title": "t"}), Toolset([GH_FLAT])).target == "github_create_issue"


_WORD = st.text(alphabet="abcdefgh", min_size=1, max_size=5)


@settings(max_examples=300, deadline=None, database=None)
@given(server=_WORD, op=_WORD, join=st.sampled_from([".", "__", ":", "/"]), upper=st.booleans())
def test_property_a_name_two_declared_tools_spell_is_never_renamed(
    server: str, op: str, join: str, upper: bool
) -> None:
    """An MCP tool and a flat tool whose names fold to the same key: a call in any server notation
    of that name is never renamed to either (two candidates: no change)."""
    mcp = fn(f"mcp__{server}__{op}", schema("x", x=STR))
    flat = fn(f"{server}_{op}", schema("x", x=STR))
    name = f"{server}{join}{op}"
    d = resolve(ToolCall(name=name.upper() if upper else name, arguments={"x": "1"}), Toolset([mcp, flat]))
    assert d.action is not Action.RENAME, d


def test_a_shell_call_too_long_to_read_is_left_as_answered() -> None:
    """Another agent's shell call whose command is a file written through the shell (over
    ``MAX_READ``): what it does to the shell's state is not read, so it is not moved."""
    from toolvocab.engine.shellwords import MAX_READ

    d = decide(CLAUDE, "shell", {"command": ["bash", "-lc", "cat > a.txt <<'EOF'\n" + "x" * MAX_READ + "\nEOF"]})
    assert d.action is Action.LEAVE and "not read" in d.reason
    d = decide(CLAUDE, "shell", {"command": ["bash", "-lc", "git status"]})
    assert d.action is Action.RENAME


@pytest.mark.parametrize("name", ["apply-patch", "applypatch", "ApplyPatch"])
def test_a_function_call_whose_capability_only_a_free_text_tool_has_is_left_and_said_so(name: str) -> None:
    """Codex declares ``apply_patch`` as a free-text (custom) tool: a function call spelled
    ``apply-patch`` never becomes a free-text call, so it is left, and the reason names the
    tool that has the capability instead of saying none does."""
    patch = declared_tool("apply_patch", kind=ToolKind.FREEFORM)
    d = decide([patch, fn("exec_command", schema("cmd", cmd=STR))], name, {"input": "*** Begin Patch"})
    assert d.action is Action.LEAVE and d.target is None
    assert "apply_patch (a free-text tool) has it, and a function call never becomes either" in d.reason
    nothing = decide([fn("exec_command", schema("cmd", cmd=STR))], name, {"input": "*** Begin Patch"})
    assert nothing.action is Action.LEAVE and "has it:" not in nothing.reason
