"""The repair ladder: which declared tool, if any, an answered tool call must mean.

First hit wins:

1. **declared** — the call names a declared tool (exactly, with its namespace): keep it; fit the
   arguments only when they fail the schema and fitting makes them valid.
2. **reverse_map** — the call names an upstream alias this flow gave a declared tool: the
   declared name.
3. **normalized** — lossless normalizations that leave exactly one declared tool: surrounding
   whitespace, case, separators (``_``, ``-``, ``.``, ``:``, ``/``, none), provider prefixes
   (``functions.``, ``functions:``, ``tools/``, ``default_api:``, ``default.``), a name written
   twice (``shell_commandshell_command``, BR-18), and the MCP notations of the *same* server
   (``server:tool``, ``server.tool``, ``server__tool`` ↔ ``mcp__server__tool``, and a Responses
   namespace pair).
4. **capability** — the name's capability in the vocabulary table is held by exactly one
   declared, non-namespaced ``function`` tool.

Zero or two-plus candidates at the deciding step leave the call unchanged, with the reason. A
namespaced name never leaves its namespace, and no name enters one by capability. A renamed
call must validate against the target's schema, or it is left unchanged.

In code the ladder is :data:`LADDER`: small step functions, each a decision or ``None`` (the
next step looks), over one :class:`_Ask` (the call and the readings of its name, each made once).
Besides the four steps above it holds the guards between them: a blank name, a name that splits
into several declared servers, and a namespaced or free-text name with no match of its own.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from dataclasses import replace
from functools import cached_property
from typing import Any

from toolvocab.engine import vocabulary
from toolvocab.engine.argjson import describe_unparsed
from toolvocab.engine.arguments import Fit
from toolvocab.engine.arguments import declared_properties
from toolvocab.engine.arguments import fit_arguments
from toolvocab.engine.arguments import undeclared_keys
from toolvocab.engine.arguments import unglue_keys
from toolvocab.engine.arguments import validation_error
from toolvocab.engine.models import Action
from toolvocab.engine.models import ArgChange
from toolvocab.engine.models import Decision
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.names import ASCII_BLANKS
from toolvocab.engine.names import ascii_lower
from toolvocab.engine.names import join_namespace
from toolvocab.engine.names import name_key
from toolvocab.engine.names import split_flat
from toolvocab.engine.names import split_mcp
from toolvocab.engine.tokens import strip_glued
from toolvocab.engine.translate import Earlier
from toolvocab.engine.translate import Reading
from toolvocab.engine.translate import own_reading
from toolvocab.engine.translate import readings_of
from toolvocab.engine.translate import target_for

#: Prefixes providers and model templates glue onto a name (BR-10: OpenClaw PRs #39328,
#: #43312; Gemini's ``default_api:`` habit, wire-formats §4; OpenCodex PR #4264 ``default.``).
PROVIDER_PREFIXES: tuple[str, ...] = ("functions.", "functions:", "tools/", "default_api:", "default_api.", "default.")

#: Tools whose capability depends on their ``command`` argument: trae-agent's
#: ``str_replace_editor`` and Anthropic's text editor (``str_replace_based_edit_tool``) take
#: ``command`` ∈ view / create / str_replace / insert / undo_edit (BR-04). ``view`` reads and
#: ``str_replace`` is an old/new-string edit. ``create`` maps to nothing: it refuses to
#: overwrite an existing file in its reference implementations (Anthropic's text-editor tool
#: docs; trae-agent's ``str_replace_editor``) while every write tool overwrites.
#: ``insert`` and ``undo_edit`` have no counterpart in any client's tools either.
COMMAND_CAPABILITY: dict[str, dict[str, str]] = {
    name_key("str_replace_editor"): {"view": "read", "str_replace": "edit"},
    name_key("str_replace_based_edit_tool"): {"view": "read", "str_replace": "edit"},
}

#: The text-editor command a call without one is read as, by the capability it is resolved for.
_EDITOR_COMMAND: dict[str, str] = {"read": "view", "edit": "str_replace"}

_SEPARATORS = "_-.:/ "

#: In a reverse map, ``"Read\x00#2"`` names the second declaration of ``Read`` (a duplicate
#: sent upstream under its own alias).
DUPLICATE_MARK = "\x00#"


class Toolset:
    """The tools one request declared, indexed for the ladder.

    Built from :class:`DeclaredTool` objects in declaration order; a tool without a capability
    gets one from the vocabulary table when it is a non-namespaced ``function`` tool. Lookups:
    :meth:`find` (exact (namespace, name)), :meth:`by_qualified` (flat name).
    """

    def __init__(self, tools: Iterable[DeclaredTool]) -> None:
        self.tools: list[DeclaredTool] = []
        for tool in tools:
            if tool.capability is None and tool.kind is ToolKind.FUNCTION and tool.server is None:
                cap = vocabulary.capability_of(tool.name)
                if cap is not None:
                    tool = tool.model_copy(update={"capability": cap})
            self.tools.append(tool)
        self._pairs: dict[tuple[str | None, str], DeclaredTool] = {}
        self._flat: dict[str, DeclaredTool] = {}
        for tool in self.tools:
            self._pairs.setdefault((tool.namespace, tool.name), tool)
            self._flat.setdefault(tool.qualified, tool)
        self._servers: _Servers | None = None
        #: Per tool, in order, what the ladder compares a call with: (tool, its MCP server or
        #: ``None``, ``name_key`` of its name, ``name_key`` of its operation — the tool part of an
        #: MCP name, else the name). Computed once: a Toolset serves every call of every flow
        #: that declares the same section.
        self.keys: list[tuple[DeclaredTool, str | None, str, str]] = [
            (t, t.server, name_key(t.name), name_key(t.server_tool or t.name)) for t in self.tools
        ]

    @cached_property
    def fold_keys(self) -> frozenset[tuple[tuple[str, ...], str]]:
        """:func:`_fold_key` of each declared tool's qualified name (what :func:`_reverse_lookup`
        compares a folded alias with), computed at the first ask."""
        return frozenset(_fold_key(tool.qualified) for tool in self.tools)

    @property
    def servers(self) -> "_Servers":
        """The MCP servers these tools belong to (built on first use)."""
        if self._servers is None:
            self._servers = _Servers(self.tools)
        return self._servers

    def __len__(self) -> int:
        return len(self.tools)

    def names(self) -> list[str]:
        """Flat names of the declared tools, in declaration order."""
        return [t.qualified for t in self.tools]

    def find(self, name: str, namespace: str | None = None) -> DeclaredTool | None:
        """The tool declared exactly as ``(namespace, name)``, or ``None``."""
        return self._pairs.get((namespace, name))

    def by_qualified(self, flat: str) -> DeclaredTool | None:
        """The tool whose flat name (``namespace + name``) is ``flat``, or ``None``."""
        return self._flat.get(flat)

    def all_qualified(self, flat: str) -> list[DeclaredTool]:
        """Every declaration whose flat name is ``flat``, in order (a name declared twice)."""
        return [t for t in self.tools if t.qualified == flat]


def _strip_prefixes(name: str) -> str:
    changed = True
    while changed:
        changed = False
        for prefix in PROVIDER_PREFIXES:
            if name.startswith(prefix) and len(name) > len(prefix):
                name = name[len(prefix) :]
                changed = True
    return name


def _undouble(name: str) -> str | None:
    half, rest = divmod(len(name), 2)
    if rest == 0 and half and name[:half] == name[half:]:
        return name[:half]
    return None


def lossless_readings(name: str) -> list[str]:
    """Every lossless reading of an answered name, the name itself first: surrounding
    whitespace trimmed, provider prefixes stripped (:data:`PROVIDER_PREFIXES`), a name written
    twice undoubled (BR-18), a model family's control token glued to its end removed
    (:func:`toolvocab.engine.tokens.strip_glued`: GLM's ``tool_12</arg_value>``). Used before the
    reverse map and before normalization alike."""
    trimmed = name.strip(ASCII_BLANKS)
    stripped = _strip_prefixes(trimmed)
    forms = [name, trimmed, stripped]
    for form in (trimmed, stripped):
        unglued = strip_glued(form)
        if unglued is not None:
            forms.append(_strip_prefixes(unglued))
    out: list[str] = []
    for form in forms:
        for probe in (form, _undouble(form)):
            if probe and probe not in out:
                out.append(probe)
    return out


#: Separators that join an MCP server and its tool in the notations models use (the issue's
#: list: ``server:tool``, ``server.tool``, ``server__tool``; ``/`` as in ``tools/``). A single
#: ``_`` is not one of them: ``web_fetch`` is a builtin name, not server ``web`` + tool ``fetch``.
_SERVER_JOINS: tuple[str, ...] = ("__", ":", ".", "/")

#: Responses ``namespace`` values a model invents for a top-level function (the provider
#: prefixes of :data:`PROVIDER_PREFIXES` written as a namespace): dropped when the client
#: declares no such namespace and the name is one of its top-level functions.
INVENTED_NAMESPACES: frozenset[str] = frozenset({"default", "default_api", "functions", "function", "tools"})


class _Servers:
    """The MCP servers a request declares, for matching a call's server part.

    A call's server matches the one declared server equal to it ignoring ASCII case (server and
    operation are normalized apart; separators inside a server name are never folded — ``ci_run``
    is not ``ci``)."""

    def __init__(self, tools: Iterable[DeclaredTool]) -> None:
        self.names: set[str] = {t.server for t in tools if t.server is not None}
        self._folded: dict[str, list[str]] = {}
        for name in self.names:
            self._folded.setdefault(ascii_lower(name), []).append(name)

    def match(self, server: str) -> str | None:
        """The declared server ``server`` names, or ``None``: the one declared server equal to it
        ignoring ASCII case. Two declared servers that differ only in case (``Memory`` and
        ``memory``) are two candidates even for a call that spells one exactly: models lowercase
        names (BR-07), so the model's case is no evidence."""
        folded = self._folded.get(ascii_lower(server), [])
        return folded[0] if len(folded) == 1 else None


def _strip_doubled_server(server: str, op: str, servers: _Servers) -> str:
    """``mcp__wiki__ask`` inside server ``wiki`` (a bridge applied the prefix twice) → ``ask``."""
    while True:
        inner = split_mcp(op)
        if inner is None or servers.match(inner[0]) != server:
            return op
        op = inner[1]


def _server_parts(probe: str, namespace: str | None, servers: _Servers) -> tuple[str | None, str | None, str]:
    """``(raw server, declared server or None, operation)`` of a namespaced reading of a call,
    or ``(None, None, probe)`` when the reading names no server.

    A Responses ``namespace`` or an ``mcp__server__op`` name always names a server (declared or
    not); the other notations (``server:op``, ``server.op``, ``server__op``, ``server/op``) name
    one only when their left part matches a declared server."""
    if namespace:
        parts = split_mcp(namespace + probe) or split_mcp(join_namespace(namespace, probe))
        raw = parts[0] if parts else namespace
        declared = servers.match(raw)
        op = probe
        if declared is not None:
            op = _strip_doubled_server(declared, op, servers)
        return raw, declared, op
    prefixed = probe[:5].lower() == "mcp__"
    body = probe[5:] if prefixed else probe
    for join in _SERVER_JOINS:
        start = body.find(join)
        while start > 0:
            left, right = body[:start], body[start + len(join) :]
            declared = servers.match(left)
            if right and declared is not None:
                return left, declared, _strip_doubled_server(declared, right, servers)
            start = body.find(join, start + 1)
    if prefixed:
        # An mcp__ name always names a server, declared or not: it never leaves it.
        parts = split_mcp("mcp__" + body)
        return (parts[0] if parts else body), None, (parts[1] if parts else body)
    return None, None, probe


def _split_servers(probe: str, servers: _Servers) -> set[str]:
    """Every declared server that a split of ``probe`` at one of its ``__`` names, compared by
    :func:`name_key` (case and separators folded). ``mcp__github__enterprise__list_issues`` names
    ``github`` and, read with its separators folded, ``github_enterprise`` too: a name that more
    than one split could give to more than one server is not evidence for either."""
    body = probe[5:] if probe[:5].lower() == "mcp__" else probe
    keys: dict[str, list[str]] = {}
    for name in servers.names:
        keys.setdefault(name_key(name), []).append(name)
    out: set[str] = set()
    start = body.find("__")
    while start > 0:
        if body[start + 2 :]:
            out.update(keys.get(name_key(body[:start]), ()))
        start = body.find("__", start + 1)
    return out


def _base(call: ToolCall, step: Step, candidates: list[str]) -> dict[str, Any]:
    return dict(
        name=call.name,
        namespace=call.namespace,
        call_id=call.id,
        step=step,
        candidates=candidates,
        arguments_before=call.arguments,
    )


def _object_schema(tool: DeclaredTool) -> bool:
    """The tool takes a JSON object (or declares no schema): ``{}`` is its empty input."""
    schema = tool.input_schema
    if not isinstance(schema, dict):
        return True
    t = schema.get("type")
    return t is None or t == "object" or (isinstance(t, list) and "object" in t)


def _required(tool: DeclaredTool) -> list[str]:
    """The properties the tool's schema requires."""
    schema = tool.input_schema
    required = schema.get("required") if isinstance(schema, dict) else None
    return [r for r in required if isinstance(r, str)] if isinstance(required, list) else []


def _empty_to_object(call: ToolCall, tool: DeclaredTool) -> list[ArgChange] | None:
    """``[empty_to_object]`` when the call's arguments were ``""``/``null``/``[]`` on the wire, the
    target takes an object and requires no property (BR-22: a tool that needs input gets the
    client's own "missing input" report instead of a call the model never specified), and the
    answer was not cut off; else ``None``."""
    if (
        call.empty_arguments
        and not call.truncated
        and tool.kind is ToolKind.FUNCTION
        and _object_schema(tool)
        and not _required(tool)
    ):
        return [ArgChange(op="empty_to_object", key="", before=call.raw_arguments)]
    return None


def _empty_left(call: ToolCall, tool: DeclaredTool) -> str:
    """Why empty arguments are left as sent."""
    if call.truncated:
        return (
            "the answer may have been cut off before this call's arguments (its end said so, or had not "
            "come when the call had to go on); a truncated call is never completed"
        )
    required = _required(tool)
    if required:
        return f"its arguments are empty ({call.raw_arguments!r} on the wire) and {tool.qualified} requires {', '.join(map(repr, required))}: left for the client to report"
    return f"its arguments are empty ({call.raw_arguments!r} on the wire), left as sent"


def _json_repaired(call: ToolCall) -> list[ArgChange]:
    """``[repair_json]`` when the call's argument text only parsed after lossless rewrites
    (:mod:`toolvocab.engine.argjson`): the parsed object must then be written back."""
    if call.json_repairs:
        return [ArgChange(op="repair_json", key="", before=call.raw_arguments, after=list(call.json_repairs))]
    return []


def _unparsed(call: ToolCall) -> str:
    """Why a call's arguments (not a JSON object) are left as sent."""
    if call.raw_arguments is not None:
        return describe_unparsed(call.raw_arguments)
    return "its arguments are not a JSON object and are left as sent"


def _fit(
    call: ToolCall,
    tool: DeclaredTool,
    readings: list[Reading],
    client: str | None,
    *,
    consumed: frozenset[str] = frozenset(),
    foreign: bool = False,
    closed: bool = False,
    posix: bool = True,
    earlier: Earlier | None = None,
) -> Fit:
    """The call's arguments translated for ``tool`` under ``readings`` (:func:`fit_arguments`)."""
    target = target_for(tool.name, tool.capability, declared_properties(tool.input_schema), client)
    return fit_arguments(
        call.arguments or {},
        tool.input_schema,
        readings,
        target,
        consumed=consumed,
        closed=closed,
        drop_annotations=foreign,
        target_capability=tool.capability,
        posix=posix,
        earlier=earlier,
    )


def spelled_readings(
    names: Iterable[str], tool: DeclaredTool, client: str | None = None, *, same_name: bool = False
) -> list[Reading]:
    """Readings of the other agents' tools spelled exactly as one of ``names`` (the answered name
    read losslessly, or the alias a profile showed) that share the target's capability: a
    lowercase ``bash`` to Claude Code may be OpenCode's or pi's ``bash`` as well as ``Bash``. The
    target's own spelling counts only with ``same_name`` (a declared ``edit`` is OpenCode's, Qwen
    Code's, pi's…), and then not the identified ``client``'s own table. Each is a reading only when
    the call uses one of that tool's keys (:class:`~toolvocab.engine.translate.Reading`)."""
    out: list[Reading] = []
    seen: set[str] = set()
    for name in names:
        if (name == tool.name and not same_name) or name in seen:
            continue
        seen.add(name)
        rows = vocabulary.entries_named(name)
        if tool.capability is not None and any(e.capability == tool.capability for e in rows):
            # A row whose arguments are not sourced adds no sourced constraint: only tables compete.
            out += [
                replace(r, competing=True)
                for r in readings_of(name, tool.capability)
                if r.table is not None and r.table.name == name and (client is None or r.table.client != client)
            ]
    return out


def _decide_lossless(
    call: ToolCall,
    tool: DeclaredTool,
    *,
    step: Step,
    reason: str,
    foreign: bool,
    client: str | None = None,
    spellings: Iterable[str] = (),
    posix: bool = True,
    earlier: Earlier | None = None,
) -> Decision:
    """Rename ``call`` to ``tool`` by a lossless name step (reverse map, normalization).

    The name goes whatever the arguments fail for (the client then reports a missing key or a
    wrong type against the right tool) — but only when every argument keeps its meaning: the call
    is read as the target's own and as each other agent's tool spelled as the answer was
    (``spellings``), and every reading must place every key the same way (:mod:`toolvocab.engine.translate`).
    A key no reading can place, or two readings that disagree, leave the call unchanged: the
    client would ignore the key, or run another meaning. Annotation keys are dropped only when
    ``foreign`` (the model saw this tool under another agent's name: a profile rename, BR-06; the
    schema then counts as closed). Empty arguments become ``{}`` only for a tool that requires
    nothing; a truncated call keeps its arguments exactly as sent.
    """
    base = _base(call, step, [tool.qualified])
    target = dict(target=tool.name, target_namespace=tool.namespace)
    if tool.kind is not ToolKind.FUNCTION:
        return Decision(action=Action.RENAME, reason=reason, **target, **base)
    empty = _empty_to_object(call, tool)
    if empty is not None:
        return Decision(
            action=Action.RENAME,
            reason=f"{reason}; its empty arguments are written as {{}}",
            arg_changes=empty,
            arguments_after={},
            **target,
            **base,
        )
    if call.empty_arguments:
        return Decision(action=Action.RENAME, reason=f"{reason}; {_empty_left(call, tool)}", **target, **base)
    if call.arguments is None:
        return Decision(action=Action.RENAME, reason=f"{reason}; {_unparsed(call)}", **target, **base)
    spelled = spelled_readings(spellings, tool, client)
    if step is Step.REVERSE_MAP:
        # a profile showed the client's tool under this name, with its schema and description
        spelled = [replace(r, shown=True) for r in spelled]
    readings = [own_reading(tool.name, tool.capability), *spelled]
    fit = _fit(call, tool, readings, client, foreign=foreign, closed=foreign, posix=posix, earlier=earlier)
    if fit.arguments is None:
        return _leave(
            call, step, f"{reason}, but {fit.reason}: renaming would change what the call means", [tool.qualified]
        )
    changes = _json_repaired(call) + fit.changes
    error = validation_error(fit.arguments, tool.input_schema)
    if error is not None:
        reason = f"{reason}; the arguments still fail its schema ({error}), which the client will report"
    return Decision(
        action=Action.RENAME,
        reason=reason,
        arg_changes=changes,
        arguments_after=fit.arguments if changes else None,
        **target,
        **base,
    )


def _decide_capability(
    call: ToolCall,
    tool: DeclaredTool,
    *,
    reason: str,
    candidates: list[str],
    consumed: frozenset[str],
    readings: list[Reading],
    client: str | None = None,
    posix: bool = True,
    earlier: Earlier | None = None,
) -> Decision:
    """Rename ``call`` to ``tool`` by capability, only if every reading of the answered name (one
    per agent that declares it) translates every argument to the same counterpart in the target
    (same sourced meaning, or an exact conversion) and the result validates: arguments that do
    not fit are evidence that the match is wrong."""
    base = _base(call, Step.CAPABILITY, candidates)
    if call.arguments is None:
        return Decision(
            action=Action.LEAVE, reason=f"{reason}, but the call cannot be checked: {_unparsed(call)}", **base
        )
    empty = _empty_to_object(call, tool)
    if call.empty_arguments and empty is None:
        return Decision(action=Action.LEAVE, reason=f"{reason}, but {_empty_left(call, tool)}", **base)
    fit = (
        _fit(call, tool, readings, client, consumed=consumed, foreign=True, posix=posix, earlier=earlier)
        if empty is None
        else Fit({})
    )
    if fit.arguments is None:
        return Decision(
            action=Action.LEAVE,
            reason=f"{reason}, but {fit.reason}; renaming would change the call's meaning",
            arg_changes=fit.changes,
            **base,
        )
    error = validation_error(fit.arguments, tool.input_schema)
    if error is not None:
        return Decision(
            action=Action.LEAVE,
            reason=f"{reason}, but the repaired call does not validate against {tool.name}'s schema ({error})",
            arg_changes=fit.changes,
            **base,
        )
    changes = (empty or []) + _json_repaired(call) + fit.changes
    return Decision(
        action=Action.RENAME,
        target=tool.name,
        target_namespace=tool.namespace,
        reason=reason,
        arg_changes=changes,
        arguments_after=fit.arguments if changes else None,
        **base,
    )


def _decide_declared(
    call: ToolCall, tool: DeclaredTool, client: str | None = None, posix: bool = True, earlier: Earlier | None = None
) -> Decision:
    """Keep a call to a declared tool; change its arguments only to make them valid, and only when
    every key keeps its meaning (no key the tool does not declare survives a change: the client
    would ignore it; a relative path read as another agent's tool must be found where that tool
    would find it, after ``earlier``)."""
    base = dict(_base(call, Step.DECLARED, [tool.qualified]), target=tool.name, target_namespace=tool.namespace)
    empty = _empty_to_object(call, tool)
    if empty is not None:
        return Decision(
            action=Action.FIT,
            reason=f"{tool.qualified} is declared; its empty arguments ({call.raw_arguments!r} on the wire) are written as {{}}",
            arg_changes=empty,
            arguments_after={},
            **base,
        )
    if tool.kind is not ToolKind.FUNCTION:
        return Decision(
            action=Action.KEEP, reason=f"{tool.qualified} is declared; its input is free text, left as sent", **base
        )
    if call.empty_arguments:
        return Decision(action=Action.KEEP, reason=f"{tool.qualified} is declared; {_empty_left(call, tool)}", **base)
    if call.arguments is None:
        return Decision(action=Action.KEEP, reason=f"{tool.qualified} is declared; {_unparsed(call)}", **base)
    # Argument text that parsed only after lossless repairs, or a key with a control token glued
    # to it: the arguments are written back (fitted, never with a key the client would not read).
    repaired = _json_repaired(call) + unglue_keys(call.arguments, tool.input_schema)[1]
    error = validation_error(call.arguments, tool.input_schema)
    if error is None and not repaired:
        return Decision(action=Action.KEEP, reason=f"{tool.qualified} is declared and its arguments validate", **base)
    fit = _fit(
        call,
        tool,
        [own_reading(tool.name, tool.capability), *spelled_readings([tool.name], tool, client, same_name=True)],
        client,
        posix=posix,
        earlier=earlier,
    )
    if repaired:
        # The argument text only parsed after lossless repairs: the parsed object is written back,
        # fitted when fitting makes it valid — and never with a key the client would not read.
        what = (
            [f"its argument JSON parsed only after lossless repairs ({', '.join(call.json_repairs)})"]
            if call.json_repairs
            else []
        )
        what += [f"a control token is glued to its key {c.key!r}" for c in repaired if c.op == "unglue_key"]
        if fit.arguments is not None and fit.changes and validation_error(fit.arguments, tool.input_schema) is None:
            final, changes = fit.arguments, [c for c in fit.changes if c not in repaired]
        elif not undeclared_keys(call.arguments, tool.input_schema):
            final, changes = call.arguments, []
        else:
            extra = ", ".join(map(repr, undeclared_keys(call.arguments, tool.input_schema)))
            return Decision(
                action=Action.KEEP,
                reason=f"{tool.qualified} is declared; {'; '.join(what)}, but it carries {extra}, which {tool.qualified} does not declare: left as sent",
                **base,
            )
        return Decision(
            action=Action.FIT,
            reason=f"{tool.qualified} is declared; {'; '.join(what)}",
            arg_changes=repaired + changes,
            arguments_after=final,
            **base,
        )
    if fit.arguments is not None and fit.changes and validation_error(fit.arguments, tool.input_schema) is None:
        return Decision(
            action=Action.FIT,
            reason=f"{tool.qualified} is declared; its arguments failed the schema ({error}) and fitting made them valid",
            arg_changes=fit.changes,
            arguments_after=fit.arguments,
            **base,
        )
    why = (
        f"fitting cannot keep their meaning ({fit.reason})"
        if fit.arguments is None
        else "fitting does not make them valid"
    )
    return Decision(
        action=Action.KEEP,
        reason=f"{tool.qualified} is declared; its arguments fail the schema ({error}) and {why}, so they are left as sent",
        **base,
    )


def _leave(call: ToolCall, step: Step, reason: str, candidates: list[str] | None = None) -> Decision:
    return Decision(action=Action.LEAVE, reason=reason, **_base(call, step, candidates or []))


def _reverse_lookup(call: ToolCall, reverse_map: Mapping[str, str], tools: Toolset) -> tuple[str, str] | None:
    """``(alias as found, original)`` for the call's name read losslessly (a model
    writing ``functions.<alias>`` must not leak the alias to the client), or spelled in another
    ASCII case or with other separators (:func:`toolvocab.engine.names.name_key`, the ladder's
    rule 3: ``FILES_READ_601E4EB6``, ``files-read-601e4eb6``) when that spelling is one transport
    alias's (a name the upstream rejected, not a vocabulary name: those are weighed by the
    ladder's own steps) and no declared tool's."""
    readings = [join_namespace(call.namespace, probe) for probe in lossless_readings(call.name)]
    for flat in readings:
        original = reverse_map.get(flat)
        if original is not None:
            return flat, original
    wanted = {_fold_key(flat) for flat in readings}
    found = [a for a in reverse_map if _alias_fold_key(a) in wanted]
    if len(found) != 1 or vocabulary.entries_for(split_flat(None, found[0])):
        return None
    if not wanted.isdisjoint(tools.fold_keys):
        return None  # a declared tool's spelling too: the normalized step weighs it
    return found[0], reverse_map[found[0]]


#: The joins of a server (or namespace) and its tool in a flat name (:data:`_SERVER_JOINS`).
_JOINS = re.compile(r"__|[:./]")


def _fold_key(flat: str) -> tuple[tuple[str, ...], str]:
    """What :func:`_reverse_lookup` compares an alias and an answered name by: the parts before
    the last server join (``mcp__ci__``, ``server:``…) as written — a server or namespace is
    never folded into another (``mcp__ci__run_x`` is not ``mcp__ci_run__x``; servers that differ
    in case are two) — and the tool part's :func:`toolvocab.engine.names.name_key`."""
    parts = _JOINS.split(flat)
    return tuple(parts[:-1]), name_key(parts[-1])


@functools.lru_cache(maxsize=4096)
def _alias_fold_key(alias: str) -> tuple[tuple[str, ...], str]:
    """:func:`_fold_key` of an upstream alias (a key of a plan's reverse map: a name toolvocab
    made, as short as the upstream's grammar allows), kept for the last 4,096: each call a flow
    with aliases does not find at once is compared with every alias."""
    return _fold_key(alias)


def _reverse_tool(
    call: ToolCall, tools: Toolset, reverse_map: Mapping[str, str]
) -> tuple[str, str, DeclaredTool | None, str] | None:
    """``(alias as found, original, the declared tool, what the alias is)`` for a call under an
    upstream alias this flow sent (:func:`_reverse_lookup`); the tool is ``None`` for the alias of
    a name the client only replayed (BR-17). ``None``: not an alias, or the k-th declaration of a
    repeated name that is not there."""
    found = _reverse_lookup(call, reverse_map, tools)
    if found is None:
        return None
    alias, original = found
    said = alias if alias == call.qualified else f"{call.qualified} (read as {alias})"
    if DUPLICATE_MARK in original:
        flat, _, nth = original.partition(DUPLICATE_MARK)
        same = tools.all_qualified(flat)
        k = int(nth) if nth.isdigit() else 0
        if not 1 <= k <= len(same):
            return None
        reason = (
            f"{said} is the name this flow sent upstream for declaration {k} of {flat}; "
            f"the client declares {len(same)} tools named {flat} and cannot tell them apart"
        )
        return alias, original, same[k - 1], reason
    return alias, original, tools.by_qualified(original), f"{said} is the name this flow sent upstream for {original}"


def name_back(call: ToolCall, tools: Toolset, reverse_map: Mapping[str, str] | None) -> tuple[str, str | None] | None:
    """``(name, namespace)`` the client declared, for a call whose name is an upstream alias this
    flow sent for one of the client's tools under the client's own schema — a transport spelling
    (a name the upstream rejects: too long, a character it refuses; a repeated declaration's) —
    read losslessly as :func:`resolve` reads it; the namespace is ``None`` for a tool outside one.
    For the alias of a name the client only replayed (BR-17), that name and ``None``.

    ``None`` for any other name, and for a profile's alias (another agent's name, a vocabulary
    name: the model may have used that agent's keys and units, which only :func:`resolve` can
    weigh). Naming a transport alias back changes spelling only, arguments as sent: for a call
    whose repair is given up (a stream's events out of order, a call cut off), which the client
    must still see under its own name."""
    if not reverse_map or tools.find(call.name, call.namespace) is not None:
        return None  # a declared name is that tool, as the ladder's first step says
    found = _reverse_tool(call, tools, reverse_map)
    if found is None:
        return None
    alias, original, tool, _ = found
    if tool is None:
        return original, None
    if vocabulary.entries_for(split_flat(call.namespace, alias)):
        return None
    return tool.name, tool.namespace


def _resolve_reverse(
    call: ToolCall,
    tools: Toolset,
    reverse_map: Mapping[str, str],
    client: str | None,
    posix: bool = True,
    earlier: Earlier | None = None,
) -> Decision | None:
    found = _reverse_tool(call, tools, reverse_map)
    if found is None:
        return None
    alias, original, tool, reason = found
    if tool is None:
        # An alias of a name the client only replayed in its transcript (BR-17), or declared in
        # an earlier turn of this WebSocket only (Plan.after): the alias is this flow's own and
        # goes back; the client then reports its own name.
        return Decision(
            action=Action.RENAME,
            target=original,
            reason=f"{reason}, a name this request does not declare; the client will report it",
            **_base(call, Step.REVERSE_MAP, []),
        )
    # The model saw another agent's name for this tool (a profile rename: `Bash` for Cline's
    # execute_command, BR-06) when the alias is a vocabulary name: it may then use that agent's
    # keys and units. A grammar or duplicate alias is the client's own tool under a transport name.
    alias_name = split_flat(call.namespace, alias)
    foreign = bool(vocabulary.entries_for(alias_name))
    if foreign:
        return _decide_lossless(
            call,
            tool,
            step=Step.REVERSE_MAP,
            reason=reason,
            foreign=True,
            client=client,
            spellings=[alias_name],
            posix=posix,
            earlier=earlier,
        )
    # A grammar or duplicate alias is the client's own tool under a transport name this flow gave
    # it: the model saw the client's schema and meant the client's tool. Its name always goes back
    # (the client sees what it would have seen without the alias); its arguments change only as a
    # call to the declared name would (:func:`_decide_declared`).
    own = _decide_declared(
        call.model_copy(update={"name": tool.name, "namespace": tool.namespace}), tool, client, posix, earlier
    )
    said_of_arguments = (
        own.reason.partition("; ")[2]
        if own.action is Action.FIT or own.arguments_after is None and "; " in own.reason
        else ""
    )
    return own.model_copy(
        update={
            "name": call.name,
            "namespace": call.namespace,
            "action": Action.RENAME,
            "step": Step.REVERSE_MAP,
            "reason": f"{reason}; {said_of_arguments}" if said_of_arguments else reason,
        }
    )


def resolve(
    call: ToolCall,
    tools: Toolset,
    reverse_map: Mapping[str, str] | None = None,
    *,
    client: str | None = None,
    windows: bool = False,
    earlier: Earlier | None = None,
) -> Decision:
    """Decide what ``call`` must mean among ``tools``.

    ``reverse_map`` maps an upstream alias this flow sent (flat name) to the declared tool's flat
    name (``flat + DUPLICATE_MARK + k`` for the k-th declaration of a name declared twice); a call
    under such an alias — read losslessly (:func:`lossless_readings`) — gets the client's name back
    whenever its arguments keep their meaning. ``client`` is the agent that sent the request, as
    :func:`toolvocab.engine.clients.identify_client` names it: its own table then says what the
    declared tools' keys mean (:func:`toolvocab.engine.translate.target_for`). ``windows``: the
    request says the agent runs on Windows (:func:`toolvocab.engine.clients.announces_windows`),
    where each agent runs commands in its own shell: no command line is then moved between tools
    or respelled. ``earlier`` (:data:`toolvocab.engine.translate.Earlier`): what the conversation
    ran before the call, by declared tool; a command moved into a tool that keeps state between
    calls (Claude Code's ``Bash`` keeps the working directory) must not run where an earlier call
    left it. ``None``: not asked (no such check). Returns a :class:`Decision`; never raises for
    well-typed input. Only a tool in ``tools`` is ever a target.
    """
    return _resolve(call, tools, reverse_map, client, not windows, earlier)


class _Ask:
    """One call being decided, with what the steps read of it: the flow's tools and reverse map,
    the client, whether commands run in a POSIX shell, and the readings of its name (each
    computed on first use: a call to a declared name needs none)."""

    def __init__(
        self,
        call: ToolCall,
        tools: Toolset,
        reverse_map: Mapping[str, str] | None,
        client: str | None,
        posix: bool,
        earlier: Earlier | None = None,
    ) -> None:
        self.call, self.tools, self.reverse_map, self.client, self.posix = call, tools, reverse_map, client, posix
        self.earlier = earlier

    @cached_property
    def probes(self) -> list[str]:
        """The name's lossless readings (:func:`lossless_readings`)."""
        return lossless_readings(self.call.name)

    @cached_property
    def stripped(self) -> str:
        """The name without blanks and the prefixes models add (:func:`_strip_prefixes`)."""
        return _strip_prefixes(self.call.name.strip(ASCII_BLANKS))

    @cached_property
    def invented(self) -> bool:
        """The call's namespace is one models invent (``functions``) and no declared tool or
        server has: read as no namespace."""
        namespace, tools = self.call.namespace, self.tools
        return (
            namespace is not None
            and ascii_lower(namespace) in INVENTED_NAMESPACES
            and tools.servers.match(namespace) is None
            and not any(t.namespace == namespace for t in tools.tools)
        )

    @cached_property
    def namespace(self) -> str | None:
        """The call's namespace, ``None`` when :attr:`invented`."""
        return None if self.invented else self.call.namespace

    @cached_property
    def readings(self) -> list[tuple[str | None, str | None, str]]:
        """Each reading of the name, split into (server as written, declared server, operation)."""
        return [_server_parts(probe, self.namespace, self.tools.servers) for probe in self.probes]

    @cached_property
    def named_servers(self) -> set[str]:
        """The servers the readings name."""
        return {raw for raw, _, _ in self.readings if raw is not None}


#: A step of the ladder: a decision, or ``None`` to let the next step look.
_LadderStep = Callable[[_Ask], "Decision | None"]


def _step_declared(ask: _Ask) -> Decision | None:
    """The call names a declared tool exactly: its own arguments question only."""
    exact = ask.tools.find(ask.call.name, ask.call.namespace)
    return _decide_declared(ask.call, exact, ask.client, ask.posix, ask.earlier) if exact is not None else None


def _step_reverse(ask: _Ask) -> Decision | None:
    """The call names an alias this flow sent upstream: the client's name goes back."""
    if not ask.reverse_map:
        return None
    return _resolve_reverse(ask.call, ask.tools, ask.reverse_map, ask.client, ask.posix, ask.earlier)


def _step_blank(ask: _Ask) -> Decision | None:
    """A name that is blank once prefixes and blanks are gone is never guessed."""
    return None if ask.stripped else _leave(ask.call, Step.NONE, "the name is empty; a blank name is never guessed")


def _step_split_servers(ask: _Ask) -> Decision | None:
    """A name with no namespace that splits at ``__`` into more than one declared server names
    tools of several servers: left."""
    if ask.namespace is not None:
        return None
    split = set().union(*(_split_servers(probe, ask.tools.servers) for probe in ask.probes))
    if len(split) <= 1:
        return None
    names = [t.qualified for t, tserver, _, _ in ask.tools.keys if tserver in split]
    return _leave(
        ask.call,
        Step.NORMALIZED,
        f"{ask.call.qualified} splits at more than one '__' into declared servers ({', '.join(sorted(split))}); not guessing",
        names,
    )


def _step_normalized(ask: _Ask) -> Decision | None:
    """The name differs from one declared tool only by case, separators, prefix, notation or an
    invented namespace (a namespaced reading only within its own declared server; a bare name
    that is also an MCP tool's operation names two tools). Two or more: left."""
    call, tools = ask.call, ask.tools
    op_keys = [(raw, declared, name_key(op)) for raw, declared, op in ask.readings]
    matches: list[DeclaredTool] = []
    for tool, tserver, key, op_key in tools.keys:
        if tool.kind is not call.kind:
            continue
        for raw, declared, wanted in op_keys:
            if raw is not None:
                # A namespaced reading moves only within its own (declared) server.
                hit = tserver is not None and declared == tserver and wanted == op_key
            else:
                hit = tserver is None and not ask.named_servers and wanted == key
            if hit:
                if tool not in matches:
                    matches.append(tool)
                break
    if ask.named_servers and matches and ask.namespace is None:
        # A server read from a notation (`a.b`, `a__b`, `a:b` when server a is declared) is one
        # reading; the whole name is another, and it may spell a flat tool (`a_b`): two tools.
        flat_keys = {
            name_key(probe)
            for probe, (raw, _, _) in zip(ask.probes, ask.readings, strict=True)
            if raw is not None and probe[:5].lower() != "mcp__"
        }
        flat = [t for t, tserver, key, _ in tools.keys if tserver is None and t.kind is call.kind and key in flat_keys]
        if flat:
            names = [t.qualified for t in matches + flat]
            return _leave(
                call,
                Step.NORMALIZED,
                f"{call.qualified} reads as {', '.join(t.qualified for t in matches)} and as"
                f" {', '.join(t.qualified for t in flat)}; not guessing",
                names,
            )
    if not ask.named_servers:
        # A bare name may be an MCP tool's own operation (`execute_command` for
        # mcp__ssh__execute_command): that tool is a candidate too, and a bare name never enters
        # a namespace, so with it the call names two tools (or one it cannot reach).
        wanted_keys = {wanted for _, _, wanted in op_keys}
        twins = [
            t
            for t, tserver, _, op_key in tools.keys
            if tserver is not None and t.kind is call.kind and op_key in wanted_keys
        ]
        if twins:
            names = [t.qualified for t in matches + twins]
            return _leave(
                call,
                Step.NORMALIZED if matches else Step.NONE,
                f"{call.qualified} is also the operation of {', '.join(t.qualified for t in twins)}"
                + (
                    f" as well as {', '.join(t.qualified for t in matches)}; not guessing"
                    if matches
                    else "; a bare name never enters a namespace"
                ),
                names,
            )
    if len(matches) == 1:
        tool = matches[0]
        why = "only by case, separators, prefix or notation"
        if strip_glued(ask.stripped) is not None:
            why += " (a model's control token glued to its end removed)"
        if ask.invented:
            why = f"only by an invented namespace ({call.namespace!r}, which the client does not declare)"
            if not (call.name == tool.name):
                why += " and case, separators or prefix"
        return _decide_lossless(
            call,
            tool,
            step=Step.NORMALIZED,
            reason=f"{call.qualified} differs from the declared {tool.qualified} {why}",
            foreign=False,
            client=ask.client,
            spellings=ask.probes if tool.server is None else (),
            posix=ask.posix,
            earlier=ask.earlier,
        )
    if len(matches) > 1:
        names = [t.qualified for t in matches]
        return _leave(
            call,
            Step.NORMALIZED,
            f"{call.qualified} normalizes to {len(names)} declared tools ({', '.join(names)}); not guessing",
            names,
        )
    return None


def _step_stays_home(ask: _Ask) -> Decision | None:
    """Past the name's own readings, a namespaced name never leaves its namespace, and a
    free-text call has no capability to move by: left."""
    call = ask.call
    if ask.named_servers or ask.namespace is not None:
        server = sorted(ask.named_servers)[0] if ask.named_servers else ask.namespace
        return _leave(
            call,
            Step.NONE,
            f"{call.qualified} is namespaced (server {server}) and no tool of that server matches; a namespaced name never leaves its namespace",
        )
    if call.kind is not ToolKind.FUNCTION:
        return _leave(
            call, Step.NONE, f"{call.qualified} is a free-text call and no declared free-text tool matches it"
        )
    return None


def _step_capability(ask: _Ask) -> Decision:
    """The vocabulary gives the name (or, for an editor tool, its ``command``) a capability
    exactly one declared tool has: that tool, its arguments translated by sourced meaning.
    None or several: left."""
    call, stripped = ask.call, ask.stripped
    consumed: frozenset[str] = frozenset()
    undoubled = _undouble(stripped)
    by_command = COMMAND_CAPABILITY.get(name_key(stripped))
    command = (call.arguments or {}).get("command") if by_command is not None else None
    if by_command is not None and command is not None:
        capability = by_command.get(command) if isinstance(command, str) else None
        if capability is None:
            return _leave(
                call,
                Step.NONE,
                f"{call.qualified} with command {command!r} has no faithful counterpart among the declared tools",
            )
        consumed = frozenset({"command"})
    answered = stripped
    if by_command is None or command is None:
        capability = vocabulary.capability_of(stripped)
        if capability is None and undoubled:
            capability = vocabulary.capability_of(undoubled)
            answered = undoubled
    if capability is None:
        return _leave(
            call,
            Step.NONE,
            f"{call.qualified} is not declared, matches no declared name, and the vocabulary gives it no capability",
        )
    # A generic shell name (`shell`, `run_shell_command`, …) may mean PowerShell as much as a POSIX
    # shell: with both declared it names two tools (the seed's own example). A name of a POSIX
    # shell (`bash`) never means PowerShell.
    held = {capability}
    if capability == "shell" and not vocabulary.names_a_posix_shell(answered):
        held.add("powershell")
    candidates = [
        t
        for t, tserver, _, _ in ask.tools.keys
        if t.kind is ToolKind.FUNCTION and tserver is None and t.capability in held
    ]
    if capability == "shell" and not any(t.capability == "shell" for t in candidates):
        candidates = []  # only PowerShell declared: a shell-named call never lands on it alone
    names = [t.qualified for t in candidates]
    if len(candidates) == 1:
        return _decide_capability(
            call,
            candidates[0],
            reason=f"{call.qualified} has capability {capability} and {names[0]} is the one declared tool with it",
            candidates=names,
            consumed=consumed,
            readings=readings_of(
                answered,
                capability,
                _EDITOR_COMMAND.get(capability)
                if by_command is not None and command is None
                else command
                if isinstance(command, str)
                else None,
            ),
            client=ask.client,
            posix=ask.posix,
            earlier=ask.earlier,
        )
    if not candidates:
        # A free-text tool or a server's tool with the capability (or the name but for spelling) is
        # never a function call's target (a call never changes kind, a bare name never enters a
        # namespace): the reason names them.
        elsewhere = [
            t.qualified + (" (a free-text tool)" if t.kind is not ToolKind.FUNCTION else " (a server's tool)")
            for t, tserver, _, _ in ask.tools.keys
            if (t.capability in held or name_key(t.name) == name_key(stripped))
            and (t.kind is not ToolKind.FUNCTION or tserver is not None)
        ]
        said = (
            f"no declared function tool outside a server has it: {', '.join(elsewhere)} has it, and a "
            "function call never becomes either"
            if elsewhere
            else "no declared tool has it"
        )
        return _leave(
            call, Step.CAPABILITY, f"{call.qualified} has capability {capability} and {said}; never inventing a name"
        )
    return _leave(
        call,
        Step.CAPABILITY,
        f"{call.qualified} has capability {capability} and {len(names)} declared tools have it ({', '.join(names)}); not guessing",
        names,
    )


#: The ladder, in order: the first step that decides wins (:func:`resolve`).
LADDER: tuple[_LadderStep, ...] = (
    _step_declared,
    _step_reverse,
    _step_blank,
    _step_split_servers,
    _step_normalized,
    _step_stays_home,
    _step_capability,
)


def _resolve(
    call: ToolCall,
    tools: Toolset,
    reverse_map: Mapping[str, str] | None,
    client: str | None,
    posix: bool,
    earlier: Earlier | None = None,
) -> Decision:
    ask = _Ask(call, tools, reverse_map, client, posix, earlier)
    for step in LADDER:
        decision = step(ask)
        if decision is not None:
            if decision.action is Action.LEAVE and reverse_map:
                said = _alias_elsewhere(call, reverse_map)
                if said:
                    decision = decision.model_copy(update={"reason": decision.reason + said})
            return decision
    raise AssertionError("the capability step always decides")  # pragma: no cover


#: The separators a server or namespace is joined to a name by (:func:`join_namespace`, ``mcp__``).
_JOINS = re.compile(r"__|[.:/]")
#: How an alias ends (:func:`toolvocab.engine.grammar.alias`: ``_`` and 8 hex digits).
_ALIAS_END = re.compile(r".*_[0-9a-f]{8}", re.DOTALL)


def _alias_tail(name: str) -> str | None:
    """The part of ``name`` after its last join (:data:`_JOINS`) when it ends as an alias does."""
    tail = _JOINS.split(name)[-1]
    return tail if _ALIAS_END.fullmatch(tail) else None


def _alias_elsewhere(call: ToolCall, reverse_map: Mapping[str, str]) -> str:
    """For a call left: ``"; …"`` saying that its name ends as an upstream alias this flow sent
    for a tool does (the model kept the alias but dropped its server, or put it under another),
    so the record says whose name the client will report; ``""`` otherwise. A bare name never
    enters a namespace and a namespaced one never leaves it: the name is not given back."""
    own = _alias_tail(call.name)
    if own is None:
        return ""
    flat = join_namespace(call.namespace, call.name)
    for alias, original in reverse_map.items():
        if alias != flat and _alias_tail(alias) == own:
            where = "with no server" if flat == own else "under another server"
            return (
                f"; it ends as {alias} does, the name this flow sent upstream for "
                f"{original.partition(DUPLICATE_MARK)[0]}, but {where}: the client will report it"
            )
    return ""


def declared_tool(
    name: str,
    *,
    namespace: str | None = None,
    kind: ToolKind = ToolKind.FUNCTION,
    input_schema: dict[str, Any] | None = None,
    description: str | None = None,
) -> DeclaredTool:
    """Build a :class:`DeclaredTool`; its capability is filled in by :class:`Toolset`."""
    return DeclaredTool(name=name, namespace=namespace, kind=kind, input_schema=input_schema, description=description)
