"""Properties of the repair ladder over generated tool lists and answered calls.

(a) a decision's target is always a declared tool; (b) a capability rename or a fit validates
against the target's schema; (c) resolve never raises; (d) a call naming a declared tool exactly is never
renamed; (e) a namespaced call's target, if any, belongs to the same server; (f) when two declared
tools share the answered name's capability and no lossless rule applies, the call is left.
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import HealthCheck
from hypothesis import assume
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from schemas import ARGV
from schemas import STR
from schemas import schema
from toolvocab.engine import vocabulary
from toolvocab.engine.arguments import validation_error
from toolvocab.engine.ladder import PROVIDER_PREFIXES
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import Decision
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.names import name_key
from toolvocab.engine.names import split_mcp

#: ``filter_too_much`` suppressed: the namespaced-call properties ``assume`` away about two drawn
#: calls in three (those that name no server), and Hypothesis fails a run outright when 50 are
#: filtered before 10 pass (about one run in 140); ``max_examples`` counts only the calls kept.
SETTINGS = settings(
    max_examples=300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)

SCHEMAS: list[dict[str, Any] | None] = [
    None,
    {"type": "object", "properties": {}},
    schema("command", command=STR, description=STR, timeout={"type": "integer"}),
    schema("command", command=ARGV, workdir=STR),
    schema("command", additional=False, command=STR, requires_approval={"type": "boolean"}),
    schema("file_path", file_path=STR, offset={"type": "integer"}),
    schema("path", additional=False, path=STR),
    schema("filePath", filePath=STR),
    schema("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR),
    schema("path", "oldText", "newText", path=STR, oldText=STR, newText=STR),
    schema("title", title=STR, body=STR),
    schema("input", input=STR),
    schema("query", query=STR),
]

BUILTIN_NAMES = [
    "Bash", "PowerShell", "bash", "shell", "shell_command", "run_shell_command", "execute_command", "exec",
    "terminal", "Read", "read", "read_file", "Write", "write", "write_file", "write_to_file", "Edit", "edit",
    "replace", "apply_patch", "replace_in_file", "Grep", "grep", "grep_search", "search_files", "Glob", "glob",
    "LS", "list_directory", "list_files", "WebFetch", "webfetch", "web_fetch", "WebSearch", "TodoWrite",
    "todo_write", "update_plan", "save_memory", "search_evidence", "create_issue", "fetch", "js",
]  # fmt: skip
SERVERS = ["github", "gitlab", "fs", "web"]
SERVER_TOOLS = ["create_issue", "read_file", "Bash", "search", "fetch", "js"]
MCP_NAMES = [f"mcp__{s}__{t}" for s in SERVERS for t in SERVER_TOOLS]
NAMESPACES = ["mcp__github__", "mcp__gitlab__", "mcp__fs"]

CAPABILITY_GROUPS = {
    "shell": ["Bash", "PowerShell", "bash", "shell", "shell_command", "run_shell_command", "execute_command", "exec", "terminal", "run_terminal_cmd", "exec_command"],
    "read": ["Read", "read", "read_file"],
    "write": ["Write", "write", "write_file", "write_to_file"],
    "edit": ["Edit", "edit", "replace"],
    "grep": ["Grep", "grep", "grep_search", "search_files", "search_file_content", "rg"],
    "list": ["LS", "list_directory", "list_dir", "list_files", "ls"],
    "web_fetch": ["WebFetch", "webfetch", "web_fetch"],
    "todo": ["TodoWrite", "todo_write", "update_plan", "write_todos", "todowrite"],
}  # fmt: skip

ARG_KEYS = ["command", "cmd", "path", "file_path", "filePath", "old_str", "old_string", "new_str", "newText", "title", "query", "input", "description", "timeout", "zz"]  # fmt: skip
ARG_VALUES = st.one_of(
    st.text(max_size=12),
    st.sampled_from(["ls -la", '["ls", "-la"]', "ls | wc -l", "", "30", "true"]),
    st.lists(st.sampled_from(["bash", "-lc", "ls", "-la", "x y"]), max_size=4),
    st.integers(-5, 50),
    st.booleans(),
    st.none(),
)
ARGUMENTS = st.one_of(st.none(), st.dictionaries(st.sampled_from(ARG_KEYS), ARG_VALUES, max_size=4))


@st.composite
def declared_tools(draw: st.DrawFn) -> DeclaredTool:
    shape = draw(st.sampled_from(["builtin", "builtin", "builtin", "mcp", "namespaced", "freeform", "provider"]))
    input_schema = draw(st.sampled_from(SCHEMAS))
    if shape == "builtin":
        return declared_tool(draw(st.sampled_from(BUILTIN_NAMES)), input_schema=input_schema)
    if shape == "mcp":
        return declared_tool(draw(st.sampled_from(MCP_NAMES)), input_schema=input_schema)
    if shape == "namespaced":
        return declared_tool(
            draw(st.sampled_from(SERVER_TOOLS)), namespace=draw(st.sampled_from(NAMESPACES)), input_schema=input_schema
        )
    kind = ToolKind.FREEFORM if shape == "freeform" else ToolKind.PROVIDER
    return declared_tool(draw(st.sampled_from(BUILTIN_NAMES)), kind=kind)


def tool_lists(min_size: int = 0, max_size: int = 8) -> st.SearchStrategy[list[DeclaredTool]]:
    """Declared tool lists with distinct (namespace, name) pairs: a request declaring one name twice
    is de-duplicated on the request side (BR-31) before the ladder sees it."""
    return st.lists(declared_tools(), min_size=min_size, max_size=max_size, unique_by=lambda t: (t.namespace, t.name))


def _variants(name: str) -> st.SearchStrategy[str]:
    """Spellings a model might produce for ``name``."""
    words = name.replace("__", "_").split("_")
    return st.sampled_from(
        [
            name,
            name.lower(),
            name.upper(),
            name.replace("_", "-"),
            name.replace("_", "."),
            name.replace("_", ""),
            words[0] + "".join(w.capitalize() for w in words[1:]),
            f" {name} ",
            name + name,
            *(p + name for p in PROVIDER_PREFIXES),
        ]
    )


@st.composite
def answered_calls(draw: st.DrawFn, tools: list[DeclaredTool]) -> ToolCall:
    source = draw(st.sampled_from(["declared", "variant", "pool", "mcp", "namespaced", "text"]))
    namespace = None
    if source == "declared" and tools:
        tool = draw(st.sampled_from(tools))
        name, namespace = tool.name, tool.namespace
    elif source == "variant" and tools:
        name = draw(_variants(draw(st.sampled_from(tools)).qualified))
    elif source == "mcp":
        name = draw(st.sampled_from(MCP_NAMES))
    elif source == "namespaced":
        name = draw(st.sampled_from(SERVER_TOOLS + BUILTIN_NAMES))
        namespace = draw(st.sampled_from(NAMESPACES))
    elif source == "text":
        name = draw(st.text(max_size=20))
    else:
        name = draw(
            st.one_of(
                st.sampled_from(BUILTIN_NAMES + ["str_replace_editor", "applypatch"]),
                st.sampled_from(BUILTIN_NAMES).flatmap(_variants),
            )
        )
    kind = draw(st.sampled_from([ToolKind.FUNCTION] * 9 + [ToolKind.FREEFORM]))
    args = draw(ARGUMENTS)
    if kind is ToolKind.FREEFORM:
        return ToolCall(
            name=name, arguments=None, raw_arguments=draw(st.text(max_size=20)), namespace=namespace, kind=kind
        )
    if args is None:
        return ToolCall(name=name, arguments=None, raw_arguments="{not json", namespace=namespace)
    if draw(st.booleans()) and draw(st.booleans()):
        args = dict(args, command=draw(st.sampled_from(["str_replace", "view", "create", "insert", "undo_edit"])))
    return ToolCall(name=name, arguments=args, namespace=namespace, kind=kind)


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[DeclaredTool], ToolCall, dict[str, str] | None]:
    tools = draw(tool_lists(max_size=8))
    call = draw(answered_calls(tools))
    reverse_map = None
    if tools and draw(st.booleans()) and draw(st.booleans()):
        reverse_map = {call.qualified: draw(st.sampled_from(tools)).qualified}
    return tools, call, reverse_map


KEY_SPELLINGS = {
    "file_path": ["file_path", "path", "filePath", "absolute_path"],
    "path": ["path", "file_path", "filePath"],
    "filePath": ["filePath", "file_path", "path"],
    "command": ["command", "cmd"],
    "old_string": ["old_string", "old_str", "oldString"],
    "new_string": ["new_string", "new_str", "newString"],
    "oldText": ["oldText", "old_string", "oldString"],
    "newText": ["newText", "new_string", "newString"],
}


def _value_for(prop: dict[str, Any]) -> st.SearchStrategy[Any]:
    kind = prop.get("type")
    if kind == "array":
        return st.one_of(
            st.lists(st.sampled_from(["ls", "-la", "x y"]), min_size=1, max_size=3),
            st.sampled_from(['["ls", "-la"]', "ls -la", "ls | wc -l", "[1]"]),
        )
    if kind == "integer":
        return st.one_of(st.integers(0, 99), st.sampled_from(["30", "x"]))
    if kind == "boolean":
        return st.one_of(st.booleans(), st.sampled_from(["true", "no"]))
    return st.one_of(
        st.text(max_size=8),
        st.sampled_from(["", "/repo/a.py"]),
        st.lists(st.sampled_from(["bash", "-lc", "ls | wc"]), min_size=1, max_size=3),
    )


@st.composite
def schema_arguments(draw: st.DrawFn, input_schema: dict[str, Any] | None) -> dict[str, Any]:
    """Arguments shaped after ``input_schema``, with other agents' key spellings and value types."""
    props = (input_schema or {}).get("properties") or {}
    required = set((input_schema or {}).get("required") or ())
    out: dict[str, Any] = {}
    for key, prop in props.items():
        if key not in required and not draw(st.booleans()):
            continue
        spelled = draw(st.sampled_from(KEY_SPELLINGS.get(key, [key])))
        out[spelled] = draw(_value_for(prop))
    if draw(st.booleans()):
        out[draw(st.sampled_from(["description", "zz", "cmd", "path"]))] = draw(st.text(max_size=5))
    return out


@st.composite
def biased_scenarios(draw: st.DrawFn) -> tuple[list[DeclaredTool], ToolCall, dict[str, str] | None]:
    """A tool list and a call aimed at one declared function tool: a spelling of its name, a
    sibling name of its capability, or an alias in the flow's map, with arguments near its schema."""
    tools = draw(tool_lists(min_size=1, max_size=6))
    functions = [t for t in tools if t.kind is ToolKind.FUNCTION]
    assume(functions)
    aim = draw(st.sampled_from(functions))
    how = draw(st.sampled_from(["exact", "variant", "capability", "reverse"]))
    namespace = None
    reverse_map = None
    if how == "exact":
        name, namespace = aim.name, aim.namespace
    elif how == "variant":
        name = draw(_variants(aim.qualified))
    elif how == "capability":
        group = next((g for g in CAPABILITY_GROUPS.values() if aim.name in g), [aim.name])
        name = draw(st.sampled_from(group))
    else:
        name = draw(st.sampled_from(["upstream_alias", "Alias", aim.name.upper()]))
        reverse_map = {name: aim.qualified}
    args = draw(schema_arguments(aim.input_schema))
    return tools, ToolCall(name=name, arguments=args, namespace=namespace), reverse_map


def any_scenario() -> st.SearchStrategy[tuple[list[DeclaredTool], ToolCall, dict[str, str] | None]]:
    return st.one_of(scenarios(), biased_scenarios())


def _decide(tools: list[DeclaredTool], call: ToolCall, reverse_map: dict[str, str] | None) -> tuple[Toolset, Decision]:
    toolset = Toolset(tools)
    return toolset, resolve(call, toolset, reverse_map)


def _norm_server(server: str | None) -> str | None:
    if server is None:
        return None
    return name_key(server.removeprefix("mcp__").rstrip("_"))


def _call_server(call: ToolCall) -> str | None:
    if call.namespace:
        parts = split_mcp(call.namespace + call.name)
        return _norm_server(parts[0] if parts else call.namespace)
    name = _probes_stripped(call.name)
    half, odd = divmod(len(name), 2)
    if not odd and half and name[:half] == name[half:]:
        name = name[:half]  # a name written twice (BR-18) is read once
    parts = split_mcp(name)
    return _norm_server(parts[0]) if parts else None


# --- (c) never raises, plus the invariants every decision keeps ------------------------------


@SETTINGS
@given(any_scenario())
def test_resolve_never_raises_and_decisions_are_well_formed(scenario: Any) -> None:
    tools, call, reverse_map = scenario
    before = copy.deepcopy(call.arguments)
    toolset, d = _decide(tools, call, reverse_map)
    event(f"{d.action.value}/{d.step.value}")
    assert call.arguments == before  # the call is not mutated
    assert d.reason.strip()
    assert d.name == call.name and d.namespace == call.namespace
    if d.action is Action.LEAVE:
        assert d.target is None and d.target_namespace is None and d.arguments_after is None
    else:
        assert d.target is not None
    if d.action is Action.KEEP:
        assert d.arguments_after is None
    if d.action is Action.FIT:
        assert d.step is Step.DECLARED and d.arguments_after is not None
    # The same input gives the same decision.
    assert _decide(tools, call, reverse_map)[1] == d
    d.model_dump(mode="json")


# --- (a) never invent a name ------------------------------------------------------------------


@SETTINGS
@given(any_scenario())
def test_target_is_always_a_declared_tool(scenario: Any) -> None:
    tools, call, reverse_map = scenario
    toolset, d = _decide(tools, call, reverse_map)
    if d.target is not None:
        assert toolset.find(d.target, d.target_namespace) is not None
        assert (d.target_namespace, d.target) in {(t.namespace, t.name) for t in tools}
    for candidate in d.candidates:
        assert candidate in toolset.names()


# --- (b) a rename or fit validates against the target schema ----------------------------------


@SETTINGS
@given(any_scenario())
def test_rename_and_fit_validate_against_the_target_schema(scenario: Any) -> None:
    tools, call, reverse_map = scenario
    toolset, d = _decide(tools, call, reverse_map)
    if d.action not in (Action.RENAME, Action.FIT) or d.step in (Step.REVERSE_MAP, Step.NORMALIZED):
        # Lossless name steps rename whatever the arguments: the client reports an
        # argument problem against the right tool. Their arguments are checked by the
        # meaning-preservation properties (test_properties_meaning.py).
        return
    assert d.target is not None
    target = toolset.find(d.target, d.target_namespace)
    assert target is not None
    if target.kind is not ToolKind.FUNCTION:
        assert d.action is Action.RENAME and d.arguments_after is None
        return
    assert call.arguments is not None
    final = d.arguments_after if d.arguments_after is not None else call.arguments
    assert validation_error(final, target.input_schema) is None, (final, target.input_schema)


# --- (d) an exact declared name is never renamed ----------------------------------------------


@SETTINGS
@given(any_scenario())
def test_exact_declared_name_is_never_renamed(scenario: Any) -> None:
    tools, call, reverse_map = scenario
    toolset, d = _decide(tools, call, reverse_map)
    if toolset.find(call.name, call.namespace) is None:
        return
    assert d.action in (Action.KEEP, Action.FIT)
    assert d.step is Step.DECLARED
    assert (d.target, d.target_namespace) == (call.name, call.namespace)


@SETTINGS
@given(tool_lists(min_size=1, max_size=8), st.data())
def test_every_declared_name_answered_exactly_is_kept_or_fit(tools: list[DeclaredTool], data: st.DataObject) -> None:
    tool = data.draw(st.sampled_from(tools))
    args = data.draw(ARGUMENTS)
    call = ToolCall(
        name=tool.name, namespace=tool.namespace, arguments=args, raw_arguments=None if args is not None else "x"
    )
    d = resolve(call, Toolset(tools))
    assert d.action in (Action.KEEP, Action.FIT)
    assert (d.target, d.target_namespace) == (tool.name, tool.namespace)


# --- (e) namespaced calls stay on their server ------------------------------------------------


@SETTINGS
@given(any_scenario())
def test_namespaced_call_target_has_the_same_server(scenario: Any) -> None:
    tools, call, reverse_map = scenario
    server = _call_server(call)
    assume(server is not None)
    toolset, d = _decide(tools, call, reverse_map)
    if d.target is None or d.step is Step.REVERSE_MAP:
        return  # the flow's own map is authoritative (BR-12 builds it while flattening)
    target = toolset.find(d.target, d.target_namespace)
    assert target is not None
    assert _norm_server(target.server) == server, (call, target)


@SETTINGS
@given(
    tool_lists(max_size=8),
    st.sampled_from(SERVERS),
    st.sampled_from(SERVER_TOOLS + BUILTIN_NAMES),
    ARGUMENTS,
)
def test_mcp_call_never_reaches_a_builtin_or_another_server(
    tools: list[DeclaredTool], server: str, tool: str, args: dict[str, Any] | None
) -> None:
    call = ToolCall(name=f"mcp__{server}__{tool}", arguments=args, raw_arguments=None if args is not None else "x")
    toolset, d = _decide(tools, call, None)
    if d.target is None:
        return
    target = toolset.find(d.target, d.target_namespace)
    assert target is not None and target.server is not None
    assert _norm_server(target.server) == name_key(server)


# --- (f) two tools with the capability and nothing lossless: leave ----------------------------


def _probes_stripped(name: str) -> str:
    stripped = name.strip()
    changed = True
    while changed:
        changed = False
        for prefix in PROVIDER_PREFIXES:
            if stripped.startswith(prefix) and len(stripped) > len(prefix):
                stripped = stripped[len(prefix) :]
                changed = True
    return stripped


def _probes(name: str) -> set[str]:
    stripped = _probes_stripped(name)
    keys = {name_key(name), name_key(stripped)}
    half, odd = divmod(len(stripped), 2)
    if not odd and half and stripped[:half] == stripped[half:]:
        keys.add(name_key(stripped[:half]))
    return keys


def _lossless_applies(name: str, tools: list[DeclaredTool]) -> bool:
    keys = _probes(name)
    for tool in tools:
        if name_key(tool.name) in keys or name_key(tool.qualified) in keys:
            return True
        part = tool.server_tool
        if part and any(k.endswith(name_key(part)) for k in keys):
            return True  # could read as a server:tool notation; not what (f) is about
    return False


@st.composite
def capability_clashes(draw: st.DrawFn) -> tuple[list[DeclaredTool], ToolCall]:
    capability = draw(st.sampled_from(sorted(CAPABILITY_GROUPS)))
    group = CAPABILITY_GROUPS[capability]
    holders = draw(st.lists(st.sampled_from(group), min_size=2, max_size=4, unique=True))
    others = draw(tool_lists(max_size=5))
    tools = [declared_tool(n, input_schema=draw(st.sampled_from(SCHEMAS))) for n in holders] + others
    unheld = [n for n in group if name_key(n) not in {name_key(h) for h in holders}]
    pool = st.sampled_from(unheld) if unheld else st.sampled_from(group)
    answered = draw(st.one_of(pool, pool, pool.flatmap(_variants)))
    args = draw(st.dictionaries(st.sampled_from(ARG_KEYS), ARG_VALUES, max_size=3))
    return draw(st.permutations(tools)), ToolCall(name=answered, arguments=args)


@SETTINGS
@given(capability_clashes())
def test_two_tools_with_the_capability_and_nothing_lossless_leave(clash: Any) -> None:
    tools, call = clash
    assume(vocabulary.capability_of(_probes_stripped(call.name)) is not None)
    assume(not _lossless_applies(call.name, tools))
    toolset = Toolset(tools)
    capability = vocabulary.capability_of(_probes_stripped(call.name))
    # A generic shell name may mean PowerShell too (the seed: Bash and PowerShell both declared
    # are two shell tools); a name of a POSIX shell never does.
    held = {capability} | (
        {"powershell"}
        if capability == "shell" and name_key(_probes_stripped(call.name)) not in {"bash", "sh", "zsh"}
        else set()
    )
    holders = [
        t.qualified for t in toolset.tools if t.kind is ToolKind.FUNCTION and t.server is None and t.capability in held
    ]
    assume(len(holders) >= 2)
    d = resolve(call, toolset)
    assert d.action is Action.LEAVE, (call.name, holders, d.reason)
    assert d.step is Step.CAPABILITY
    assert sorted(d.candidates) == sorted(holders)
    for holder in set(holders):
        assert holder in d.reason


@SETTINGS
@given(capability_clashes())
def test_capability_rename_only_with_exactly_one_candidate(clash: Any) -> None:
    tools, call = clash
    d = resolve(call, Toolset(tools))
    if d.step is Step.CAPABILITY and d.action is Action.RENAME:
        assert d.candidates == [d.target]
    if d.step is Step.CAPABILITY and len(d.candidates) != 1:
        assert d.action is Action.LEAVE
