"""Meaning-preservation properties: a repair changes spelling, never meaning.

For every call the engine changes (``rename`` or ``fit``), over generated tool lists and the five
agents' real tool lists (the captured requests in ``tests/fixtures``, parsed by each dialect):

(a) every argument key of the original reaches the result — as the same key or one of its
    synonyms — unless it is an annotation key of a call in another agent's vocabulary (a
    capability rename to a closed schema) or the ``command`` a text-editor call was dispatched on;
(b) every value is equal, or changed only by a listed lossless transform: a shell argv →
    the same command (``["bash", "-lc", X]`` → ``X`` when X is portable across bash, zsh and dash;
    any other argv, another shell's ``-c``
    included → a string that ``shlex.split`` turns back into that argv), a JSON-encoded array string → that array, a number
    string → that number, ``"true"``/``"false"`` → that boolean, a one-element list → its element,
    empty arguments → ``{}``;
(c) a namespaced name keeps its server (exactly, or the one declared server equal to it
    ignoring case), and a name without one never gains one;
(d) the target's capability equals the source's (a capability rename), or the two names are the
    same modulo case, separators, prefixes and notation (a lossless step), or the source is this
    flow's own alias of the target (reverse map);
(e) no alias reaches the client: the target is a declared tool, or the name the alias stood for.

The same properties are checked on the wire: the generated call is put in a JSON answer of each
dialect, rewritten by the dialect, read back from the rewritten bytes, and compared with the
original. Expected values here are computed from the inputs by rules written in this file, never
by calling the code under test.

Examples per test: ``TOOLVOCAB_PROPERTY_EXAMPLES`` (quick default 300; the long profile in
``.ci/run`` sets 10000).
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from harness.dialects import context
from toolvocab.dialects.anthropic import DIALECT as anthropic_dialect
from toolvocab.dialects.base import call_from_payload
from toolvocab.dialects.gemini import DIALECT as gemini_dialect
from toolvocab.dialects.openai_chat import DIALECT as chat_dialect
from toolvocab.dialects.openai_responses import DIALECT as responses_dialect
from toolvocab.engine import vocabulary
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import Decision
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.shellwords import is_portable

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

# ---------------------------------------------------------------- rules, written here
#: Synonym groups as the issue lists them (same key or "its synonym"): written here so a
#: synonym the engine adds without a test fails (a).
SYNONYM_GROUPS: list[set[str]] = [
    {"path", "file_path", "filePath", "absolute_path", "filepath", "file", "target_file"},
    {"path", "dir_path", "dirPath", "directory", "dir"},
    {"workdir", "cwd", "directory", "dir_path", "working_directory"},
    {"command", "cmd"},
    {"old_string", "old_str", "oldString", "old_text", "oldText"},
    {"new_string", "new_str", "newString", "new_text", "newText"},
    {"content", "file_text", "contents"},
    {"replace_all", "replaceAll"},
    {"pattern", "regex"},
    {"include", "include_pattern"},
    {"is_background", "run_in_background"},
    {"query", "search_query"},
    {"url", "uri"},
]
ANNOTATIONS = {"instruction", "explanation", "justification", "description"}
#: Location keys: empty there means absent when a synonym carries a value (BR-27).
LOCATIONS = {"path", "file_path", "filePath", "absolute_path", "filepath", "dir_path", "directory", "command", "cmd"}
#: Only a bash argv is unwrapped (another shell's -c body means something else in bash).
POSIX_SHELLS = {"bash", "/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"}
SEPARATORS = "_-.:/ "


def _sourced_groups() -> list[set[str]]:
    """Keys that name one operand in the sourced table (data, not the translation code): every
    key of every row of a capability whose Meaning names the same operand (``replaceAll`` and
    ``allow_multiple`` both ``edit.all``)."""
    from toolvocab.engine.semantics import TABLES

    by_what: dict[str, set[str]] = {}
    for table in TABLES:
        for key, meaning in list(table.args.items()) + [
            kv for listed in table.by_command.values() for kv in listed.items()
        ]:
            by_what.setdefault(meaning.what, set()).add(key)
    return [keys for keys in by_what.values() if len(keys) > 1]


SOURCED_GROUPS = _sourced_groups()


def synonyms(key: str) -> set[str]:
    out = {key}
    for group in SYNONYM_GROUPS + SOURCED_GROUPS:
        if key in group:
            out |= group
    return out


def fold(name: str) -> str:
    return "".join(c for c in name if c not in SEPARATORS).casefold()


def server_of(flat: str, namespace: str | None = None) -> str | None:
    """The MCP server a name (or a Responses namespace) names, for (c)."""
    if namespace:
        full = namespace + flat
    else:
        full = flat
    if full.lower().startswith("mcp__"):
        rest = full[5:]
        if "__" in rest:
            return rest.split("__", 1)[0]
        return rest.rstrip("_") or None
    return namespace


def lossless(before: Any, after: Any) -> bool:
    """(b): ``after`` is ``before`` or one of the listed lossless transforms of it."""
    if before == after and type(before) is type(after):
        return True
    if isinstance(before, list) and isinstance(after, str):
        if all(isinstance(a, str) for a in before):
            # not -ic: an interactive bash reads ~/.bashrc and its aliases, no shell tool's does
            if len(before) == 3 and before[0] in POSIX_SHELLS and before[1] in ("-c", "-lc", "-cl"):
                if after == before[2]:
                    # Unwrapped: only a command bash, zsh and dash read alike (is_portable, which
                    # tests/unit/test_shellwords.py checks against the three real shells).
                    return is_portable(before[2])
            if len(before) == 1 and after == before[0]:
                return True
            try:
                return shlex.split(after) == before
            except ValueError:
                return False
        return False
    if isinstance(before, str) and isinstance(after, list):
        try:
            return json.loads(before) == after
        except ValueError:
            return False
    if isinstance(before, str) and isinstance(after, bool):
        return before.strip() == ("true" if after else "false")
    if isinstance(before, str) and isinstance(after, (int, float)):
        try:
            return float(before.strip()) == float(after)
        except ValueError:
            return False
    return False


def check_meaning(
    call: ToolCall, d: Decision, tools: Toolset, reverse_map: dict[str, str], final_args: dict[str, Any] | None
) -> None:
    """(a)–(e) for one changed call. ``final_args`` is what the client receives (``None``: not
    a JSON object, left as sent)."""
    assert d.target is not None
    # (e) no alias reaches the client
    target = tools.find(d.target, d.target_namespace)
    if target is None:
        assert d.step is Step.REVERSE_MAP and d.target in reverse_map.values(), d
    # (c) a namespaced name keeps its server
    src_server = server_of(call.name, call.namespace)
    tgt_server = target.server if target is not None else server_of(d.target)
    invented = call.namespace is not None and call.namespace.casefold() in {
        "default",
        "default_api",
        "functions",
        "function",
        "tools",
    }
    if d.step is not Step.REVERSE_MAP and not invented:
        if src_server is None:
            # Only the non-mcp__ notations (server:op …) may name a server implicitly; then the
            # name starts with the target's server.
            if tgt_server is not None:
                assert (
                    fold(call.name.strip()).startswith(fold(tgt_server)) or fold(call.name).find(fold(tgt_server)) >= 0
                ), (call, d)
        else:
            assert tgt_server is not None and tgt_server.casefold() == src_server.casefold(), (call, d)
    if invented:
        # The invented namespace is dropped; the name's own server (if it names one) is kept.
        assert d.target_namespace is None and target is not None
        own = server_of(call.name)
        assert (target.server or None) == own or (
            own and target.server and own.casefold() == target.server.casefold()
        ), (call, d)
    # (d) same capability, same name modulo lossless spelling, or this flow's own alias
    if d.step is Step.CAPABILITY:
        assert target is not None
        src_cap = vocabulary.capability_of(call.name.strip())
        if (
            call.name.strip() in ("str_replace_editor", "str_replace_based_edit_tool")
            and (call.arguments or {}).get("command") is not None
        ):
            # dispatched on its command (view reads, str_replace edits; create never writes)
            src_cap = {"view": "read", "str_replace": "edit"}.get((call.arguments or {}).get("command"))
        assert src_cap is not None and src_cap == target.capability, (call, d)
    elif d.step is Step.NORMALIZED:
        assert target is not None
        op = target.server_tool or target.name
        assert fold(op) in fold(call.name), (call, d)
    elif d.step is Step.REVERSE_MAP:
        assert any(v.split("\x00#")[0] == (target.qualified if target else d.target) for v in reverse_map.values())
    # (a) + (b) arguments
    before = call.arguments
    if final_args is None or before is None:
        return
    if call.empty_arguments:
        assert final_args == {}
        return
    dispatched = (
        d.step is Step.CAPABILITY
        and call.name.strip() in ("str_replace_editor", "str_replace_based_edit_tool")
        and "command" in before
    )
    used: set[str] = set()
    for key, value in before.items():
        if dispatched and key == "command":
            continue
        if value in ("", None) and synonyms(key) & LOCATIONS:
            # An empty location carries no place (BR-27): it may be filled by a synonym's value
            # or stay empty; the property then holds for the synonym that carries the value.
            continue
        carried = [
            k
            for k in synonyms(key)
            if k in final_args
            and k not in used
            and (
                k == key or k not in before or (before.get(k) in ("", None) and k in LOCATIONS)
            )  # BR-27: fills an empty location
        ]
        if not carried:
            assert key in ANNOTATIONS, f"{key!r} dropped: {call} -> {d}"
            schema = target.input_schema if target is not None else None
            # Only a call in another agent's vocabulary (a capability rename; the generated aliases
            # are not vocabulary names) loses an annotation, and only to a closed schema.
            assert (
                d.step is Step.CAPABILITY and isinstance(schema, dict) and schema.get("additionalProperties") is False
            ), (key, d)
            continue
        fitting = [c for c in carried if lossless(value, final_args[c])]
        assert fitting, f"{key}: {value!r} -> {[final_args[c] for c in carried]!r} ({d.reason})"
        k = key if key in fitting else fitting[0]
        used.add(k)
        assert lossless(value, final_args[k]), f"{key}: {value!r} -> {final_args[k]!r} ({d.reason})"
    # nothing invented
    for k in final_args:
        assert k in used or k in before or any(o in before for o in synonyms(k)), f"{k!r} invented: {call} -> {d}"


# ---------------------------------------------------------------- the five agents' tool lists
def _agent_tools() -> dict[str, list[DeclaredTool]]:
    out: dict[str, list[DeclaredTool]] = {}
    pairs = [
        ("Claude Code", anthropic_dialect, "anthropic/request-claude-code.json"),
        ("Codex", responses_dialect, "openai_responses/request-codex.json"),
        ("OpenCode", chat_dialect, "openai_chat/request-opencode.json"),
        ("Qwen Code", chat_dialect, "openai_chat/request-qwen-code.json"),
        ("Gemini CLI", gemini_dialect, "gemini/request-gemini-cli.json"),
    ]
    for client, dialect, rel in pairs:
        body = orjson.loads((FIXTURES / rel).read_bytes())
        out[client] = dialect.declared_tools(body)
    return out


AGENT_TOOLS = _agent_tools()

# ---------------------------------------------------------------- generators
STR = {"type": "string"}
KNOWN_NAMES = sorted({e.name for e in vocabulary.ENTRIES})
KEYS = sorted(
    {k for g in SYNONYM_GROUPS for k in g}
    | ANNOTATIONS
    | {"working_dir", "append", "preview", "dry_run", "timeout", "limit", "offset", "todos", "recursive", "q"}
)
SERVERS = ["ci", "ci_run", "wiki", "Wiki", "github", "git_hub", "docs", "ci_run_x"]


@st.composite
def schemas(draw: st.DrawFn) -> dict[str, Any]:
    keys = draw(st.lists(st.sampled_from(KEYS), min_size=0, max_size=4, unique=True))
    props: dict[str, Any] = {}
    for k in keys:
        props[k] = draw(
            st.sampled_from([STR, {"type": "integer"}, {"type": "boolean"}, {"type": "array", "items": STR}, {}])
        )
    out: dict[str, Any] = {"type": "object", "properties": props}
    if keys and draw(st.booleans()):
        out["required"] = draw(st.lists(st.sampled_from(keys), unique=True, max_size=len(keys)))
    if draw(st.booleans()):
        out["additionalProperties"] = False
    return out


@st.composite
def generated_tools(draw: st.DrawFn) -> list[DeclaredTool]:
    names = draw(
        st.lists(
            st.sampled_from(KNOWN_NAMES + ["PowerShell", "Bash", "run_shell_command"]),
            min_size=1,
            max_size=5,
            unique=True,
        )
    )
    tools = [DeclaredTool(name=n, input_schema=draw(schemas())) for n in names]
    for server in draw(st.lists(st.sampled_from(SERVERS), max_size=3, unique=True)):
        op = draw(st.sampled_from(["ask", "run_job", "job", "search", "create_issue"]))
        if draw(st.booleans()):
            tools.append(DeclaredTool(name=f"mcp__{server}__{op}", input_schema=draw(schemas())))
        else:
            tools.append(DeclaredTool(name=op, namespace=f"mcp__{server}__", input_schema=draw(schemas())))
    return tools


def _respell(name: str, how: int) -> str:
    if how == 0:
        return name.lower()
    if how == 1:
        return name.upper()
    if how == 2:
        return "functions." + name
    if how == 3:
        return name.replace("_", "-")
    if how == 4:
        return " " + name + " "
    if how == 5:
        return name + name
    if how == 6:
        return "default_api:" + name
    return name


@st.composite
def call_names(draw: st.DrawFn, tools: list[DeclaredTool]) -> tuple[str, str | None]:
    kind = draw(st.integers(0, 6))
    namespaced = [t for t in tools if t.server is not None]
    if kind == 6 and namespaced:
        # The cross-server move: server + op re-split at another join (`ci_run` + `job` as
        # `ci` + `run_job`), or the server's separators changed (`git_hub` for `github`).
        tool = draw(st.sampled_from(namespaced))
        server, op = tool.server or "", tool.server_tool or tool.name
        whole = f"{server}_{op}"
        cuts = [i for i, c in enumerate(whole) if c == "_" and 0 < i < len(whole) - 1]
        cut = draw(st.sampled_from(cuts))
        left, right = whole[:cut], whole[cut + 1 :]
        if draw(st.booleans()):
            left = left.replace("_", "") if "_" in left else left[:1] + "_" + left[1:]
        return f"mcp__{left}__{right}", None
    if kind == 0:
        return draw(
            st.sampled_from(KNOWN_NAMES + ["str_replace_editor", "str_replace_based_edit_tool", "powershell", "pwsh"])
        ), None
    if kind == 1:
        tool = draw(st.sampled_from(tools))
        return _respell(tool.qualified, draw(st.integers(0, 7))), None
    if kind == 2:
        # another server's spelling, doubled prefixes, notations
        server = draw(st.sampled_from(SERVERS + ["CI", "WIKI", "gitlab"]))
        op = draw(
            st.sampled_from(
                ["ask", "run_job", "job", "runJob", "search", "create-issue", "mcp__wiki__ask", "mcp__ci__job"]
            )
        )
        join = draw(st.sampled_from(["mcp__{s}__{o}", "{s}:{o}", "{s}.{o}", "{s}__{o}", "{s}/{o}", "mcp_{s}_{o}"]))
        return join.format(s=server, o=op), None
    if kind == 3:
        tool = draw(st.sampled_from(tools))
        ns = draw(st.sampled_from(["default", "functions", "mcp__wiki__", "mcp__ci__", "mcp__github__", "other"]))
        return tool.name, ns
    if kind == 4:
        return draw(st.text(alphabet="abcRWx_-.: ", min_size=0, max_size=12)), None
    return draw(st.sampled_from(["alias_1", "functions.alias_1", " alias_1", "alias_1alias_1", "ALIAS_1"])), None


ARGV = st.sampled_from(
    [
        ["bash", "-lc", "echo $HOME"],
        ["bash", "-ic", "rm -r build"],
        ["bash", "-lc", "rm -r build"],
        ["sh", "-c", "ls | wc -l"],
        ["ls", "-la", "my dir"],
        ["pwsh", "-Command", "Get-Item ."],
        ["git", "status"],
        ["x"],
    ]
)
VALUES = st.one_of(
    st.text(max_size=8),
    st.sampled_from(["12", "true", "false", '["ls", "-la"]', "", "a b"]),
    ARGV,
    st.integers(-3, 3),
    st.booleans(),
    st.none(),
)


@st.composite
def arguments(draw: st.DrawFn) -> Any:
    shape = draw(st.integers(0, 9))
    if shape == 0:
        return draw(st.sampled_from(["", "null", "[]", None, [], "{not json"]))
    keys = draw(st.lists(st.sampled_from(KEYS), max_size=4, unique=True))
    return {k: draw(VALUES) for k in keys}


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[DeclaredTool], ToolCall, dict[str, str]]:
    if draw(st.booleans()):
        client = draw(st.sampled_from(sorted(AGENT_TOOLS)))
        tools = list(AGENT_TOOLS[client])
        event(f"tools: {client}")
    else:
        tools = draw(generated_tools())
        event("tools: generated")
    name, namespace = draw(call_names(tools))
    args = draw(arguments())
    call = call_from_payload(
        {"name": name, "arguments": args if not isinstance(args, dict) else json.dumps(args), "namespace": namespace}
    )
    reverse: dict[str, str] = {}
    if draw(st.booleans()):
        reverse["alias_1"] = draw(st.sampled_from(tools)).qualified
    return tools, call, reverse


# ---------------------------------------------------------------- engine level
@SETTINGS
@given(scenarios())
def test_every_changed_call_means_what_the_model_meant(scenario: Any) -> None:
    tools, call, reverse = scenario
    toolset = Toolset(tools)
    d = resolve(call, toolset, reverse)
    event(f"{d.action.value} at {d.step.value}")
    if not d.changed:
        assert d.arguments_after is None or d.action is Action.LEAVE
        return
    final = d.arguments_after if d.arguments_after is not None else call.arguments
    check_meaning(call, d, toolset, reverse, final)


# ---------------------------------------------------------------- on the wire, four dialects
def _chat(call: ToolCall, raw_args: Any) -> tuple[dict[str, Any], Any]:
    body = {
        "id": "c1",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": call.name, "arguments": raw_args}}
                    ],
                },
            }
        ],
    }

    def read(b: dict[str, Any]) -> tuple[str, str | None, Any]:
        fn = b["choices"][0]["message"]["tool_calls"][0]["function"]
        return fn["name"], None, fn["arguments"]

    return body, read


def _responses(call: ToolCall, raw_args: Any) -> tuple[dict[str, Any], Any]:
    item: dict[str, Any] = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": call.name,
        "arguments": raw_args,
        "status": "completed",
    }
    if call.namespace is not None:
        item["namespace"] = call.namespace
    body = {"id": "resp_1", "object": "response", "status": "completed", "output": [item]}

    def read(b: dict[str, Any]) -> tuple[str, str | None, Any]:
        it = b["output"][0]
        return it["name"], it.get("namespace"), it["arguments"]

    return body, read


def _anthropic(call: ToolCall, raw_args: Any) -> tuple[dict[str, Any], Any]:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "stop_reason": "tool_use",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": call.name, "input": raw_args}],
    }

    def read(b: dict[str, Any]) -> tuple[str, str | None, Any]:
        block = b["content"][0]
        return block["name"], None, block["input"]

    return body, read


def _gemini(call: ToolCall, raw_args: Any) -> tuple[dict[str, Any], Any]:
    body = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"functionCall": {"name": call.name, "args": raw_args}}]},
                "finishReason": "STOP",
            }
        ]
    }

    def read(b: dict[str, Any]) -> tuple[str, str | None, Any]:
        fc = b["candidates"][0]["content"]["parts"][0]["functionCall"]
        return fc["name"], None, fc.get("args")

    return body, read


WIRES = {
    "openai_chat": (chat_dialect, _chat, True),
    "openai_responses": (responses_dialect, _responses, True),
    "anthropic": (anthropic_dialect, _anthropic, False),
    "gemini": (gemini_dialect, _gemini, False),
}


class _Resolver:
    def __init__(self, tools: Toolset, reverse: dict[str, str]) -> None:
        self.tools = tools
        self.reverse = reverse
        self.decisions: list[Decision] = []

    def __call__(self, call: ToolCall) -> Decision:
        d = resolve(call, self.tools, self.reverse)
        self.decisions.append(d)
        return d


@pytest.mark.parametrize("dialect", sorted(WIRES))
@SETTINGS
@given(data=st.data())
def test_the_client_receives_what_the_model_meant(dialect: str, data: st.DataObject) -> None:
    module, build, string_args = WIRES[dialect]
    tools, call, reverse = data.draw(scenarios())
    if dialect != "openai_responses":
        # Only Responses carries namespaces: elsewhere a namespaced declaration is its flat name.
        tools = [t.model_copy(update={"name": t.qualified, "namespace": None}) if t.namespace else t for t in tools]
        if call.namespace is not None:
            call = call.model_copy(update={"namespace": None})
    # The wire form of the arguments: a JSON string where the dialect carries strings, else the object.
    if string_args:
        raw: Any = (
            call.raw_arguments
            if call.raw_arguments is not None
            else (orjson.dumps(call.arguments).decode() if call.arguments is not None else "")
        )
    else:
        if call.arguments is None:
            return  # a non-object input cannot be written in these dialects' JSON shape
        raw = {} if call.empty_arguments else call.arguments
        call = call.model_copy(update={"empty_arguments": False})
    body, read = build(call, raw)
    original = orjson.dumps(body)
    resolver = _Resolver(Toolset(tools), reverse)
    changed = module.rewrite_response(body, context(resolver))
    name, namespace, args = read(body)
    if not changed:
        assert orjson.dumps(body) == original
    if not resolver.decisions:
        return
    d = resolver.decisions[0]
    if not d.changed:
        assert (name, namespace) == (call.name, call.namespace)
        return
    # What the client receives
    assert name == d.target and namespace == d.target_namespace, (name, namespace, d)
    if isinstance(args, str):
        try:
            final = orjson.loads(args) if args.strip() else None
        except orjson.JSONDecodeError:
            final = None
        if call.empty_arguments:
            # {} only for a tool that requires nothing (BR-22: a tool that needs input gets the
            # client's own "missing input" report, not a call the model never specified).
            # A freeform tool's input is its text, not a JSON object: "" stays "".
            target = resolver.tools.find(d.target, d.target_namespace)
            required = (target.input_schema or {}).get("required") if target is not None else None
            freeform = target is not None and target.kind is ToolKind.FREEFORM
            assert args == ("{}" if not (required or freeform) else raw), (args, raw, required)
    else:
        final = args
    if not isinstance(final, dict):
        final = None
    check_meaning(call, d, resolver.tools, reverse, final)


# ---------------------------------------------------------------- no fuzzy matching, ever
@st.composite
def typos(draw: st.DrawFn) -> tuple[list[DeclaredTool], str]:
    if draw(st.booleans()):
        tools = list(AGENT_TOOLS[draw(st.sampled_from(sorted(AGENT_TOOLS)))])
    else:
        tools = draw(generated_tools())
    name = draw(st.sampled_from([t.qualified for t in tools]))
    i = draw(st.integers(0, max(0, len(name) - 1)))
    letter = draw(st.sampled_from("abcdefghijklmnopqrstuvwxyz"))
    how = draw(st.integers(0, 2))
    typo = (
        name[:i] + letter + name[i + 1 :]
        if how == 0
        else name[:i] + letter + name[i:]
        if how == 1
        else name[:i] + name[i + 1 :]
    )
    return tools, typo


@SETTINGS
@given(typos())
def test_a_typo_is_never_repaired_by_resemblance(scenario: Any) -> None:
    # An edit-distance-1 misspelling of a declared name is only ever renamed by a rule that does
    # not look at resemblance: the same name modulo case/separators/prefix (a lossless reading),
    # or a vocabulary name of the same capability. Otherwise it is left (no fuzzy matching).
    tools, typo = scenario
    toolset = Toolset(tools)
    if toolset.by_qualified(typo) is not None:
        return
    d = resolve(ToolCall(name=typo, arguments={}), toolset)
    if not d.changed:
        return
    target = toolset.find(d.target or "", d.target_namespace)
    assert target is not None
    same_spelling = fold(target.server_tool or target.name) in fold(typo)
    known = vocabulary.capability_of(typo.strip()) is not None
    assert same_spelling or known, (typo, d.target, d.reason)
