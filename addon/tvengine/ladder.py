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
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Mapping
from typing import Any

from tvengine import vocabulary
from tvengine.arguments import fit_arguments
from tvengine.arguments import validation_error
from tvengine.models import Action
from tvengine.models import DeclaredTool
from tvengine.models import Decision
from tvengine.models import Step
from tvengine.models import ToolCall
from tvengine.models import ToolKind
from tvengine.names import name_key
from tvengine.names import split_mcp

#: Prefixes providers and model templates glue onto a name (BR-10: OpenClaw PRs #39328,
#: #43312; Gemini's ``default_api:`` habit, wire-formats §4; OpenCodex PR #4264 ``default.``).
PROVIDER_PREFIXES: tuple[str, ...] = ("functions.", "functions:", "tools/", "default_api:", "default_api.", "default.")

#: Tools whose capability depends on their ``command`` argument: trae-agent's
#: ``str_replace_editor`` and Anthropic's text editor (``str_replace_based_edit_tool``) take
#: ``command`` ∈ view / create / str_replace / insert / undo_edit (BR-04). ``insert`` and
#: ``undo_edit`` have no counterpart in any client's tools, so they map to nothing.
COMMAND_CAPABILITY: dict[str, dict[str, str]] = {
    name_key("str_replace_editor"): {"view": "read", "create": "write", "str_replace": "edit"},
    name_key("str_replace_based_edit_tool"): {"view": "read", "create": "write", "str_replace": "edit"},
}

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


#: Separators that join an MCP server and its tool in the notations models use (the issue's
#: list: ``server:tool``, ``server.tool``, ``server__tool``; ``/`` as in ``tools/``). A single
#: ``_`` is not one of them: ``web_fetch`` is a builtin name, not server ``web`` + tool ``fetch``.
_SERVER_JOINS: tuple[str, ...] = ("__", ":", ".", "/")


def _server_variant(probe: str, server: str, tool: str) -> bool:
    """True when ``probe`` is ``server`` + a join (``__``, ``:``, ``.``, ``/``) + ``tool``,
    optionally after an ``mcp__`` prefix; case and separators inside each part are ignored."""
    skey, tkey = name_key(server), name_key(tool)
    body = probe[5:] if probe.lower().startswith("mcp__") else probe
    for join in _SERVER_JOINS:
        start = body.find(join)
        while start > 0:
            left, right = body[:start], body[start + len(join) :]
            if right and name_key(left) == skey and name_key(right) == tkey:
                return True
            start = body.find(join, start + 1)
    return False


def _call_server(call: ToolCall, probe: str) -> str | None:
    if call.namespace:
        parts = split_mcp(call.namespace + probe)
        return parts[0] if parts else call.namespace
    parts = split_mcp(probe)
    return parts[0] if parts else None


def _decide_with_args(
    call: ToolCall,
    tool: DeclaredTool,
    *,
    step: Step,
    reason: str,
    candidates: list[str],
    consumed: frozenset[str] = frozenset(),
    always: bool = False,
) -> Decision:
    """Rename ``call`` to ``tool`` if its (fitted) arguments validate, else leave it.

    ``always`` (the reverse of this flow's own renames): the name goes back whatever the
    arguments; key fitting is kept (it only renames and drops keys the schema names or
    forbids), and an invalid result is reported in the reason for the client to reject itself.
    """
    base = dict(
        name=call.name,
        namespace=call.namespace,
        call_id=call.id,
        step=step,
        candidates=candidates,
        arguments_before=call.arguments,
    )
    if tool.kind is not ToolKind.FUNCTION:
        return Decision(
            action=Action.RENAME,
            target=tool.name,
            target_namespace=tool.namespace,
            reason=reason,
            **base,
        )
    if call.arguments is None:
        if always:
            return Decision(
                action=Action.RENAME,
                target=tool.name,
                target_namespace=tool.namespace,
                reason=f"{reason}; its arguments are not a JSON object and are left as sent",
                **base,
            )
        return Decision(
            action=Action.LEAVE,
            reason=f"{reason}, but the arguments are not a JSON object, so the call cannot be checked",
            **base,
        )
    # An answer to this flow's own alias drops keys the client's schema does not declare (BR-06:
    # the model saw another agent's vocabulary; `description` means nothing to execute_command).
    fitted, changes = fit_arguments(call.arguments, tool.input_schema, consumed=consumed, closed=always)
    error = validation_error(fitted, tool.input_schema)
    if error is not None and always:
        # The alias is this flow's invention: the client must never see it.
        return Decision(
            action=Action.RENAME,
            target=tool.name,
            target_namespace=tool.namespace,
            reason=f"{reason}; the arguments still fail its schema ({error}), which the client will report",
            arg_changes=changes,
            arguments_after=fitted if changes else None,
            **base,
        )
    if error is not None:
        return Decision(
            action=Action.LEAVE,
            reason=f"{reason}, but the repaired call does not validate against {tool.name}'s schema ({error})",
            arg_changes=changes,
            **base,
        )
    return Decision(
        action=Action.RENAME,
        target=tool.name,
        target_namespace=tool.namespace,
        reason=reason,
        arg_changes=changes,
        arguments_after=fitted if changes else None,
        **base,
    )


def _decide_declared(call: ToolCall, tool: DeclaredTool) -> Decision:
    base = dict(
        name=call.name,
        namespace=call.namespace,
        call_id=call.id,
        step=Step.DECLARED,
        target=tool.name,
        target_namespace=tool.namespace,
        candidates=[tool.qualified],
        arguments_before=call.arguments,
    )
    if tool.kind is not ToolKind.FUNCTION or call.arguments is None:
        why = "its input is free text" if tool.kind is not ToolKind.FUNCTION else "its arguments are not a JSON object"
        return Decision(action=Action.KEEP, reason=f"{tool.qualified} is declared; {why}, left as sent", **base)
    error = validation_error(call.arguments, tool.input_schema)
    if error is None:
        return Decision(action=Action.KEEP, reason=f"{tool.qualified} is declared and its arguments validate", **base)
    fitted, changes = fit_arguments(call.arguments, tool.input_schema)
    if changes and validation_error(fitted, tool.input_schema) is None:
        return Decision(
            action=Action.FIT,
            reason=f"{tool.qualified} is declared; its arguments failed the schema ({error}) and fitting made them valid",
            arg_changes=changes,
            arguments_after=fitted,
            **base,
        )
    return Decision(
        action=Action.KEEP,
        reason=f"{tool.qualified} is declared; its arguments fail the schema ({error}) and fitting does not make them valid, so they are left as sent",
        **base,
    )


def _leave(call: ToolCall, step: Step, reason: str, candidates: list[str] | None = None) -> Decision:
    return Decision(
        name=call.name,
        namespace=call.namespace,
        call_id=call.id,
        action=Action.LEAVE,
        step=step,
        reason=reason,
        candidates=candidates or [],
        arguments_before=call.arguments,
    )


def resolve(call: ToolCall, tools: Toolset, reverse_map: Mapping[str, str] | None = None) -> Decision:
    """Decide what ``call`` must mean among ``tools``.

    ``reverse_map`` maps an upstream alias this flow sent (flat name) to the declared tool's flat
    name (``flat + DUPLICATE_MARK + k`` for the k-th declaration of a name declared twice); a call
    under such an alias always gets the client's name back, whatever its arguments. Returns a :class:`Decision`; never raises for well-typed input. Only a tool in
    ``tools`` is ever a target.
    """
    exact = tools.find(call.name, call.namespace)
    if exact is not None:
        return _decide_declared(call, exact)

    if reverse_map:
        original = reverse_map.get(call.qualified)
        tool = None
        reason = ""
        if original is not None and DUPLICATE_MARK in original:
            flat, _, nth = original.partition(DUPLICATE_MARK)
            same = tools.all_qualified(flat)
            k = int(nth) if nth.isdigit() else 0
            if 1 <= k <= len(same):
                tool = same[k - 1]
                reason = (
                    f"{call.qualified} is the name this flow sent upstream for declaration {k} of {flat}; "
                    f"the client declares {len(same)} tools named {flat} and cannot tell them apart"
                )
        elif original is not None:
            tool = tools.by_qualified(original)
            reason = f"{call.qualified} is the name this flow sent upstream for {original}"
            if tool is None:
                # An alias of a name the client only replayed in its transcript (BR-17): the alias
                # is this flow's own and goes back; the client then reports its own name.
                return Decision(
                    name=call.name,
                    namespace=call.namespace,
                    call_id=call.id,
                    action=Action.RENAME,
                    step=Step.REVERSE_MAP,
                    target=original,
                    reason=f"{reason}, a name the client replayed but does not declare; the client will report it",
                    candidates=[],
                    arguments_before=call.arguments,
                )
        if tool is not None:
            return _decide_with_args(
                call,
                tool,
                step=Step.REVERSE_MAP,
                reason=reason,
                candidates=[tool.qualified],
                always=True,
            )

    trimmed = call.name.strip()
    stripped = _strip_prefixes(trimmed)
    if not stripped:
        return _leave(call, Step.NONE, "the name is empty; a blank name is never guessed")

    # Every lossless reading of the name; a tool any of them finds is a candidate (BR-10: a
    # declared ``functions:read`` is found by ``functions.read`` as well as ``read`` is).
    probes: list[str] = []
    for form in (trimmed, stripped):
        for probe in (form, _undouble(form)):
            if probe and probe not in probes:
                probes.append(probe)
    undoubled = _undouble(stripped)
    call_server = _call_server(call, stripped)
    matches: list[DeclaredTool] = []
    for tool in tools.tools:
        if tool.kind is not call.kind:
            continue
        tserver = tool.server
        for probe in probes:
            if call.namespace:
                # A namespaced call only moves within its own namespace.
                if tserver is None or name_key(tserver) != name_key(call_server or ""):
                    continue
                tool_part = tool.server_tool or tool.name
                hit = name_key(probe) == name_key(tool_part)
            elif tserver is not None:
                hit = name_key(probe) == name_key(tool.qualified) or _server_variant(
                    probe, tserver.removeprefix("mcp__").removesuffix("__"), tool.server_tool or tool.name
                )
            else:
                hit = call_server is None and name_key(probe) == name_key(tool.name)
            if hit:
                if tool not in matches:
                    matches.append(tool)
                break
    if len(matches) == 1:
        tool = matches[0]
        return _decide_with_args(
            call,
            tool,
            step=Step.NORMALIZED,
            reason=f"{call.qualified} differs from the declared {tool.qualified} only by case, separators, prefix or notation",
            candidates=[tool.qualified],
        )
    if len(matches) > 1:
        names = [t.qualified for t in matches]
        return _leave(
            call,
            Step.NORMALIZED,
            f"{call.qualified} normalizes to {len(names)} declared tools ({', '.join(names)}); not guessing",
            names,
        )

    if call_server is not None:
        return _leave(
            call,
            Step.NONE,
            f"{call.qualified} is namespaced (server {call_server}) and no tool of that server matches; a namespaced name never leaves its namespace",
        )
    if call.kind is not ToolKind.FUNCTION:
        return _leave(call, Step.NONE, f"{call.qualified} is a free-text call and no declared free-text tool matches it")

    consumed: frozenset[str] = frozenset()
    by_command = COMMAND_CAPABILITY.get(name_key(stripped))
    command = (call.arguments or {}).get("command") if by_command is not None else None
    if by_command is not None and command is not None:
        capability = by_command.get(command) if isinstance(command, str) else None
        if capability is None:
            return _leave(
                call,
                Step.NONE,
                f"{call.qualified} with command {command!r} has no counterpart among the declared tools",
            )
        consumed = frozenset({"command"})
    else:
        capability = vocabulary.capability_of(stripped)
        if capability is None and undoubled:
            capability = vocabulary.capability_of(undoubled)
    if capability is None:
        return _leave(
            call,
            Step.NONE,
            f"{call.qualified} is not declared, matches no declared name, and the vocabulary gives it no capability",
        )
    candidates = [
        t for t in tools.tools if t.kind is ToolKind.FUNCTION and t.server is None and t.capability == capability
    ]
    names = [t.qualified for t in candidates]
    if len(candidates) == 1:
        return _decide_with_args(
            call,
            candidates[0],
            step=Step.CAPABILITY,
            reason=f"{call.qualified} has capability {capability} and {names[0]} is the one declared tool with it",
            candidates=names,
            consumed=consumed,
        )
    if not candidates:
        return _leave(
            call,
            Step.CAPABILITY,
            f"{call.qualified} has capability {capability} and no declared tool has it; never inventing a name",
        )
    return _leave(
        call,
        Step.CAPABILITY,
        f"{call.qualified} has capability {capability} and {len(names)} declared tools have it ({', '.join(names)}); not guessing",
        names,
    )


def declared_tool(
    name: str,
    *,
    namespace: str | None = None,
    kind: ToolKind = ToolKind.FUNCTION,
    input_schema: dict[str, Any] | None = None,
    description: str | None = None,
) -> DeclaredTool:
    """Build a :class:`DeclaredTool`; its capability is filled in by :class:`Toolset`."""
    return DeclaredTool(
        name=name, namespace=namespace, kind=kind, input_schema=input_schema, description=description
    )
