"""Pydantic models of the engine: a declared tool, a tool call, a decision.

Shapes only; the rules live in ``ladder.py`` and ``arguments.py``. Every model dumps to plain
JSON (``model_dump(mode="json")``) so the addon can store it in ``flow.metadata``.
"""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from toolvocab.engine import jsonio
from toolvocab.engine.argjson import repair_arguments
from toolvocab.engine.names import join_namespace
from toolvocab.engine.names import split_mcp


class ToolKind(str, enum.Enum):
    """What kind of tool a client declared.

    - ``function``: a client-executed tool with a JSON-schema input (Anthropic client tool,
      OpenAI ``function``, Gemini ``functionDeclaration``). The only kind the ladder renames to.
    - ``freeform``: a client-executed tool whose input is free text, e.g. OpenAI ``custom``
      tools (Codex's ``apply_patch`` with a Lark grammar). Its payload is written for its name:
      never a rename target, never renamed.
    - ``provider``: defined and run by the provider (Anthropic ``bash_20250124``,
      ``web_search_*``; OpenAI built-ins such as ``web_search``; Gemini ``googleSearch``). Its
      name is a fixed literal: never renamed, never a target.
    """

    FUNCTION = "function"
    FREEFORM = "freeform"
    PROVIDER = "provider"


class DeclaredTool(BaseModel):
    """One tool the client declared in this request.

    ``name`` is the wire name exactly as declared. ``namespace`` is the wire namespace of a
    Responses ``namespace`` tool (Codex: ``"mcp__github__"``) and ``None`` elsewhere; the pair
    (namespace, name) identifies the tool. ``server`` is the MCP server the tool belongs to,
    from ``mcp__server__tool`` or from the namespace; a tool with a server is never a capability
    target and never receives a call from outside its server. ``input_schema`` is the JSON schema
    of its arguments (``None`` when the client declared none). ``capability`` comes from the
    vocabulary table by name (``None`` when no row names it).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    namespace: str | None = None
    kind: ToolKind = ToolKind.FUNCTION
    input_schema: dict[str, Any] | None = None
    capability: str | None = None
    description: str | None = None
    #: The canonical JSON text (:func:`toolvocab.engine.plan.declaration_text`) of the wire entry this
    #: tool was read from, set by the dialects only for a name the request declares more than
    #: once: a repeat is dropped only when it is byte-for-byte this text (fields the model does
    #: not read, such as ``strict`` or ``cache_control``, count). Never dumped.
    declaration: str | None = Field(default=None, exclude=True, repr=False)

    @property
    def qualified(self) -> str:
        """The flat name (:func:`~toolvocab.engine.names.join_namespace`): ``mcp__github__create_issue``."""
        return join_namespace(self.namespace, self.name)

    @property
    def server(self) -> str | None:
        """The MCP server of this tool (``"github"`` for ``mcp__github__create_issue``)."""
        parts = split_mcp(self.qualified)
        if parts:
            return parts[0]
        if self.namespace:
            return self.namespace
        return None

    @property
    def server_tool(self) -> str | None:
        """The tool part of an MCP name (``"create_issue"``), ``None`` for non-MCP tools."""
        parts = split_mcp(self.qualified)
        if parts:
            return parts[1]
        if self.namespace:
            return self.name
        return None


class _Absent:
    """The type of :data:`ABSENT`."""

    def __repr__(self) -> str:
        return "ABSENT"


#: A call that carries no arguments key at all (:meth:`ToolCall.read`): not an empty form.
ABSENT: Any = _Absent()


class ToolCall(BaseModel):
    """A tool call as the model answered it, independent of the wire format.

    ``arguments`` is the parsed JSON object when the call's arguments parse to an object;
    otherwise ``None`` and ``raw_arguments`` keeps the text as received. ``namespace`` is set
    for Responses calls to namespaced tools. ``id`` is the call id (``toolu_…``, ``call_…``) or
    ``None``. ``kind`` is ``freeform`` for a call to a custom tool (its input is text, kept in
    ``raw_arguments``), else ``function``. ``empty_arguments`` is True when the wire carried
    an empty form for the arguments — ``""`` (or blanks), JSON ``null``, ``[]``, or a string
    holding ``null`` / ``[]`` — which :meth:`read` reads as ``{}``; the ladder then
    writes ``{}`` back for a tool whose schema is an object (clients reject the empty forms).
    ``json_repairs`` names the lossless rewrites (:mod:`toolvocab.engine.argjson`) that made argument
    text strict JSON refuses parse (empty when none were needed); the ladder then writes the
    parsed object back.
    """

    name: str
    arguments: dict[str, Any] | None = None
    raw_arguments: str | None = None
    empty_arguments: bool = False
    json_repairs: list[str] = Field(default_factory=list)
    #: The answer was cut off, perhaps inside this call (a stream with no ``finish_reason``, a
    #: ``length`` / ``max_tokens`` stop): empty arguments are then never written as ``{}``
    #: (arguments that do not parse are never completed anyway; a complete JSON object is whole).
    truncated: bool = False
    id: str | None = None
    namespace: str | None = None
    kind: ToolKind = ToolKind.FUNCTION

    @property
    def qualified(self) -> str:
        """The flat name (:func:`~toolvocab.engine.names.join_namespace`)."""
        return join_namespace(self.namespace, self.name)

    @classmethod
    def read(cls, name: str, arguments: Any = ABSENT, *, call_id: Any = None, namespace: Any = None) -> ToolCall:
        """One tool call from its name and its arguments as the wire carries them: JSON text
        (``str``: OpenAI, Responses), a value (``dict``: Anthropic ``input``, Gemini ``args``), or
        :data:`ABSENT` when the call carries no arguments key. Where those live in a body is the
        dialects' business (``toolvocab.dialects``); the engine reads only the values.

        Text is parsed strictly (integers of any size exact); text a strict parser refuses is
        repaired losslessly when it can be (:func:`toolvocab.engine.argjson.repair_arguments`),
        else ``arguments`` is ``None`` and ``raw_arguments`` keeps it. Empty forms (``""`` or
        blanks, ``null``, ``[]``, or text holding ``null`` / ``[]``) read as ``{}`` with
        ``empty_arguments=True``; :data:`ABSENT` reads as ``{}`` and is not empty on the wire.
        ``call_id`` / ``namespace``: kept when a non-empty string, else ``None``."""
        raw: str | None = None
        parsed: dict[str, Any] | None = None
        empty = False
        repairs: list[str] = []
        if isinstance(arguments, str):
            raw = arguments
            if not arguments.strip():
                value: Any = {}
                empty = True
            else:
                try:
                    # Strictly, integers of any size exact (orjson alone reads 2**64 as a float).
                    value = jsonio.loads_arguments(arguments.encode("utf-8"))
                except (ValueError, UnicodeEncodeError):
                    value = None
                    repaired = repair_arguments(arguments)
                    if repaired is not None:
                        value, repairs = repaired
                if isinstance(value, str):
                    repaired = repair_arguments(arguments)
                    if repaired is not None:
                        value, repairs = repaired
                if value is None or value == []:
                    empty = value is not None or arguments.strip() == "null"
                    value = {} if empty else None
            parsed = value if isinstance(value, dict) else None
        elif isinstance(arguments, dict):
            parsed = arguments
        elif arguments is ABSENT:
            parsed = {}
        elif arguments is None:
            parsed = {}
            empty = True
        elif arguments == []:
            parsed = {}
            empty = True
        return cls(
            name=name,
            arguments=parsed,
            raw_arguments=raw,
            empty_arguments=empty,
            json_repairs=repairs,
            id=call_id if isinstance(call_id, str) and call_id else None,
            namespace=namespace if isinstance(namespace, str) else None,
        )


class Action(str, enum.Enum):
    """What the engine decided for one call.

    ``keep``: the call names a declared tool and its arguments are left as they are.
    ``fit``: the call names a declared tool; its arguments were fitted to the schema.
    ``rename``: the name was changed to a declared tool (arguments possibly fitted).
    ``leave``: the name is not declared and no single declared tool can be meant; unchanged.
    """

    KEEP = "keep"
    FIT = "fit"
    RENAME = "rename"
    LEAVE = "leave"


class Step(str, enum.Enum):
    """The ladder step that produced the decision (first hit wins)."""

    DECLARED = "declared"
    REVERSE_MAP = "reverse_map"
    NORMALIZED = "normalized"
    CAPABILITY = "capability"
    NONE = "none"


class ArgChange(BaseModel):
    """One change made to a call's arguments.

    ``op`` is one of ``rename_key``, ``argv_to_string``, ``unwrap_list``,
    ``json_to_array``, ``coerce``, ``convert`` (a unit or base: seconds → milliseconds, a 1-based
    line → a 0-based one), ``rewrap_command`` (a bash command line wrapped as ``bash -c '…'`` for a
    tool that runs the user's shell), ``drop_annotation`` (an annotation key a closed schema does
    not declare), ``drop_key`` (a consumed key: ``str_replace_editor``'s ``command``),
    ``drop_default`` (a key whose value is what the target always does: ``is_background: false``
    for a tool that has no background), ``add_default`` (a count the call left to the model's
    tool, written out for a target whose own differs: ``limit: 200`` for Crush's ``view`` moved
    to ``Read``), ``fill_empty``, ``empty_to_object`` (``""`` / ``null`` /
    ``[]`` arguments written as ``{}``; ``key`` is ``""``), ``unglue_key`` (a model family's control
    token glued to a key removed: ``path</arg_key>`` → ``path``). ``key`` is the argument key
    changed (after renaming, ``to`` is the new key). ``before``/``after`` hold the values.
    """

    op: str
    key: str
    to: str | None = None
    before: Any = None
    after: Any = None


class Decision(BaseModel):
    """The engine's answer for one tool call.

    ``name``/``namespace`` are as answered; ``target``/``target_namespace`` are the declared
    tool the call now names (``None`` when left). ``candidates`` lists the declared names the
    deciding step considered (two or more means it declined to guess). ``arguments_after`` is
    ``None`` when the arguments are unchanged. ``reason`` is one human sentence. ``lifted``: the
    call was tool-call markup in the answer's text, lifted into a call (set by the dialect).
    """

    name: str
    namespace: str | None = None
    call_id: str | None = None
    action: Action
    step: Step
    target: str | None = None
    target_namespace: str | None = None
    reason: str
    candidates: list[str] = Field(default_factory=list)
    arg_changes: list[ArgChange] = Field(default_factory=list)
    arguments_before: dict[str, Any] | None = None
    arguments_after: dict[str, Any] | None = None
    lifted: bool = False

    @property
    def changed(self) -> bool:
        """True when the client will see a different name or different arguments."""
        return self.action in (Action.RENAME, Action.FIT)
