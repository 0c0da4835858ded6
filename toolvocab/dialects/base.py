"""What every dialect module provides, and the glue types between dialects and the engine.

A dialect knows where tool names live in one wire format's bodies and how its stream events
carry them. It decides nothing: it hands each tool call to the flow's resolver (the engine, bound
to this flow's declared tools and plan; :class:`FlowContext`) and writes back what the decision
says.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any
from typing import Protocol
from typing import runtime_checkable

import msgspec
import orjson

from toolvocab.dialects.sse import RepeatedKey
from toolvocab.dialects.sse import parse_checked
from toolvocab.engine import jsonio
from toolvocab.engine.errors import ToolResult
from toolvocab.engine.ids import stable_call_id
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import name_back
from toolvocab.engine.models import ABSENT
from toolvocab.engine.models import Decision
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import ToolCall
from toolvocab.engine.names import join_namespace
from toolvocab.engine.plan import DuplicateCursor
from toolvocab.engine.plan import Plan
from toolvocab.engine.plan import declaration_text

#: ``resolve(call) -> Decision``: the engine's ladder bound to one flow (tools, reverse map).
Resolver = Callable[[ToolCall], Decision]


@dataclass(frozen=True)
class FlowContext:
    """One flow's answer as a dialect rewrites it: all a dialect may assume about the flow.

    ``resolve``: the flow's resolver (each tool call in, its :class:`Decision` out); ``plan``: the
    request-side plan (shared between flows: never changed; an answer's echo of the request's
    tools is renamed back with it); ``tools``:
    the declared tools, or ``None`` when the caller has none to give (then no call is lifted
    out of text: only a declared tool may be a target); ``flow_key``: identifies the flow, for the
    ids of calls that come without a usable one (:func:`toolvocab.engine.ids.stable_call_id`);
    ``call_ids``: replayed call id -> the alias the request sent upstream in its place
    (:meth:`Dialect.alias_call_ids`), so an answer naming the alias gives the client its own id.
    ``withdraw(decisions)``: takes decisions ``resolve`` recorded back out of the flow's record,
    for calls that did not reach the client after all (a lift or a parallel expansion given up).
    ``stored``: the upstream keeps this answer, and a later request may continue from it by its
    id (Responses' ``previous_response_id``: the request's ``store``, or the WebSocket
    connection's own cache) with outputs for the calls the client got. A call id or a call the
    upstream never sent would then name nothing it knows (``No tool call found for function call
    output``): no id is invented (:meth:`ids`), no text lifted, no parallel wrapper expanded.
    ``stops``: the request names stop sequences (:meth:`Dialect.stop_sequences`) and the API
    reports an end at one as its natural end: an answer's text may have been cut there, so no
    text is lifted. ``limited``: the request's tool choice forbids calls or allows only some
    (:meth:`Dialect.limits_calls`): a call lifted out of text may be one the client ruled out for
    this answer, so none is.
    """

    resolve: Resolver
    plan: Plan = field(default_factory=Plan)
    tools: Toolset | None = None
    flow_key: str = ""
    call_ids: Mapping[str, str] = field(default_factory=dict)
    withdraw: Callable[[Sequence[Decision]], None] = field(default=lambda decisions: None)  # a record of none
    stored: bool = False
    stops: bool = False
    limited: bool = False
    #: ``note(text)``: a sentence for the flow's record (``notes``), once per distinct text.
    note: Callable[[str], None] = field(default=lambda text: None)

    def name_back(self, name: str, namespace: str | None = None) -> tuple[str, str | None] | None:
        """``(name, namespace)`` the client declared for a tool the answer calls by an upstream
        alias this flow sent for it under the client's own schema
        (:func:`toolvocab.engine.ladder.name_back`): all a call whose repair is given up gets, so
        that the client never sees a transport alias. ``None`` for any other name, or with no tools."""
        if self.tools is None or not self.plan.reverse_map:
            return None
        return name_back(ToolCall(name=name, namespace=namespace), self.tools, self.plan.reverse_map)

    def ids(self) -> CallIds:
        """A fresh :class:`CallIds` for one answer of this flow."""
        return CallIds(
            self.flow_key, {alias: original for original, alias in self.call_ids.items()}, invent=not self.stored
        )


#: A ``"name"`` key and its JSON string value, in a body's bytes (the spelling every dialect's
#: calls use for a tool's name; a key spelled with escapes is not read).
_NAME_VALUE = re.compile(rb'("name"\s*:\s*)("(?:[^"\\]|\\.)*")')


def give_back_names(raw: bytes, flow: FlowContext, calls: Sequence[str]) -> tuple[bytes, list[str]]:
    """``raw`` (a JSON answer the addon does not write again: one that repeats a key) with the
    name of each call in ``calls`` (the names, outside a namespace, of the calls the dialect read
    in it) that is an upstream alias this flow sent for one of the client's tools
    (:meth:`FlowContext.name_back`) replaced by the client's name, every other byte as it came;
    and those names. A name is replaced only where the body spells ``"name": "<it>"`` exactly as
    many times as ``calls`` holds it: any other ``"name"`` with that value (an argument, a remote
    MCP server's tool, a key inside a string) leaves it as it came everywhere. The alias is this
    flow's own invention: giving it back changes spelling only, and which of two repeated values
    a client reads stays its parser's choice."""
    backs: list[str] = []
    if flow.tools is None or not flow.plan.reverse_map or not calls:
        return raw, backs
    found = [(m, _json_string(m.group(2))) for m in _NAME_VALUE.finditer(raw)]
    spelled = Counter(value for _, value in found if value is not None)
    called = Counter(calls)
    out: list[bytes] = []
    at = 0
    for m, value in found:
        if value is None or called[value] == 0 or spelled[value] != called[value]:
            continue
        back = flow.name_back(value)
        if back is None or back[1] is not None:
            continue
        backs.append(back[0])
        out += [raw[at : m.start(2)], orjson.dumps(back[0])]
        at = m.end(2)
    return (b"".join(out) + raw[at:], backs) if backs else (raw, backs)


def _json_string(token: bytes) -> str | None:
    """A JSON string token's value, or ``None`` when it is not one."""
    try:
        value = orjson.loads(token)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, str) else None


#: Joins a give-up's sentence (a rewriter's ``unrepaired``) and the client's names of the calls it
#: let go under an upstream alias this flow sent (:meth:`FlowContext.name_back`): those calls went
#: as the upstream sent them but for their names.
NAMED_BACK = "; named back to "


def names_given_back(sentences: list[str]) -> list[str]:
    """The client's names given back in give-up ``sentences`` (their :data:`NAMED_BACK` parts),
    each once, in order."""
    return list(dict.fromkeys(s.split(NAMED_BACK, 1)[1] for s in sentences if NAMED_BACK in s))


#: JSON values as parsed by orjson.
JSON = Any


class StreamRewriter(Protocol):
    """Per-flow stream state: raw upstream bytes in, bytes for the client out — all the addon's
    stream callable (``toolvocab.addons.stream``) uses. Every dialect's rewriter is a
    :class:`toolvocab.dialects.sse.EventStreamRewriter`.

    ``feed(chunk)`` returns a list of byte strings to send now (possibly empty, never a lone
    ``b""``); ``finish()`` returns what is left at end of stream. Implementations must keep
    every byte they do not deliberately change. ``salvage()``: every byte taken in and not yet
    sent, unchanged (afterwards everything passes through); ``let_go(why)``: what is held, now,
    given up (each call as it came but for an upstream alias named back, ``why`` in its
    ``unrepaired`` sentence), the rewrite going on where the dialect can (else ``salvage()``;
    ``repairs_after_let_go`` false: the rest passes unrepaired);
    ``has_held()``: whole events are
    held back (what a stall releases); ``consumed``: bytes taken in so far; ``error``: what the
    rewriter contained (it then passes the rest through), or ``None``; ``contained``: an event
    it could not read, after which it gives this flow's aliases back and nothing else
    (``give_back``), or ``None``; ``unrepaired``: one sentence per tool call it let go as it came.
    """

    error: str | None
    contained: str | None
    unrepaired: list[str]
    repairs_after_let_go: bool

    @property
    def consumed(self) -> int: ...

    def feed(self, chunk: bytes) -> list[bytes]: ...

    def finish(self) -> list[bytes]: ...

    def salvage(self) -> list[bytes]: ...

    def let_go(self, why: str) -> list[bytes]: ...

    def has_held(self) -> bool: ...


@runtime_checkable
class FrameRewriter(StreamRewriter, Protocol):
    """A stream rewriter that also takes whole units (Codex's Responses-over-WebSocket frames,
    :class:`JSONFrame`): ``on_unit(unit)`` returns the units to send now, in order;
    ``held_units()`` the held ones themselves (clearing them), when the turn gives up;
    ``let_go_units(why)`` what :meth:`let_go` gives up, as units (the rewrite goes on);
    ``read_names_only()``: from then on only upstream aliases this flow sent are named back."""

    def on_unit(self, unit: Any) -> list[Any]: ...

    def held_units(self) -> list[Any]: ...

    def let_go_units(self, why: str) -> list[Any]: ...

    def read_names_only(self) -> None: ...


class Dialect(Protocol):
    """A wire format: each dialect module's ``DIALECT`` instance (``toolvocab.dialects.DIALECTS``)."""

    name: str

    def matches(self, method: str, path: str, body: JSON) -> bool:
        """True when a request with this method, path (query included) and parsed body is this
        dialect's tool-bearing call."""
        ...

    def path_matches(self, method: str, path: str) -> bool:
        """True when a request with this method and path (query included) is this dialect's,
        should its body fit: :meth:`matches` is this and a test of the body."""
        ...

    def peek(self, method: str, path: str, content: bytes) -> Peek | None:
        """What planning reads of a request (a :class:`Peek`), read by a typed decoder that
        skips the rest, or ``None`` when it cannot read it or :meth:`matches` would say no
        (the caller then parses the whole body). A body whose replayed ids :meth:`apply_request`
        would alias is not read (``None``): a plan that renames nothing leaves a peeked body as
        sent."""
        ...

    def declared_tools(self, body: JSON) -> list[DeclaredTool]:
        """The tools the request declares, in order."""
        ...

    def declarations(self, body: JSON) -> JSON:
        """The part of ``body`` that :meth:`declared_tools` reads, and nothing it does not read
        (``body["tools"]``…): two bodies whose declarations are equal declare the same tools,
        so a caller may reuse what it built from one for the other."""
        ...

    def system_texts(self, body: JSON) -> list[str]:
        """The system prompt texts the model reads (system field and system-role messages)."""
        ...

    def platform_texts(self, body: JSON) -> list[str]:
        """The texts where the agent describes the machine it runs on (its system prompt, and
        where the agent puts it, its environment context): read for
        :func:`toolvocab.engine.clients.announces_windows`."""
        ...

    def transcript_names(self, body: JSON) -> list[str]:
        """Tool names of the earlier calls the request replays (flat names)."""
        ...

    def transcript_calls(self, body: JSON, keep: Callable[[str], bool] | None = None) -> list[tuple[str, Any]] | None:
        """The earlier calls the request replays, in order: (flat name, arguments as an object,
        or as sent when they are not a JSON object); with ``keep``, only the calls whose flat name
        it accepts (the others' arguments are not read). ``None`` when the request does not carry
        the whole conversation (it continues one the upstream keeps)."""
        ...

    def model_of(self, path: str, body: JSON) -> str | None:
        """The model the request asks for, or ``None``."""
        ...

    def tool_results(self, body: JSON) -> list[ToolResult]:
        """Every tool result in the request's transcript, in order, named from its call."""
        ...

    def apply_request(self, body: JSON, plan: Plan) -> bool:
        """Apply ``plan`` to ``body`` in place (renames everywhere, prompt sentence); True when
        anything changed. ``plan`` is shared between flows: never changed."""
        ...

    def call_id_aliases(self, body: JSON) -> dict[str, str]:
        """Replayed call id the upstream rejects -> its alias
        (:func:`toolvocab.engine.ids.id_aliases`); ``{}`` for none. ``body`` is not changed, and
        :meth:`apply_request` changes no id, so the answer holds before and after it."""
        ...

    def alias_call_ids(self, body: JSON, aliases: dict[str, str] | None = None) -> dict[str, str]:
        """Send each replayed call id the upstream rejects as its alias (``aliases``, what
        :meth:`call_id_aliases` gave for ``body``; else worked out here), in place, in every item
        that carries it (a call and its result keep pairing); returns replayed id -> alias
        (``{}``: nothing changed), for :attr:`FlowContext.call_ids`."""
        ...

    def request_keys(self, body: JSON, plan: Plan, aliases: dict[str, str] | None = None) -> frozenset[str] | None:
        """The top-level keys of ``body`` that ``apply_request(body, plan)`` and
        ``alias_call_ids(body, aliases)`` may write, add or remove (``None``: any); ``aliases``:
        :meth:`call_id_aliases` of ``body``, else worked out here. Every other top-level value
        goes upstream as the client's bytes (:func:`toolvocab.engine.jsonio.rewrite`), so a key
        left out loses its change."""
        ...

    def request_heads(self, body: JSON, plan: Plan) -> dict[str, int]:
        """Of the lists :meth:`request_keys` names, those of which ``apply_request(body, plan)``
        and :meth:`alias_call_ids` change only the first ``n`` elements (change, add before or
        remove among them), every later element staying as it is, in order, at the list's end:
        key -> ``n``. Those later elements go upstream as the client's bytes
        (:func:`toolvocab.engine.jsonio.layout`), so an ``n`` too small loses a change. ``{}``:
        none known."""
        ...

    def rewrite_response(self, body: JSON, flow: FlowContext) -> bool:
        """Resolve every tool call in a whole JSON response and rewrite it in place; True when
        anything changed."""
        ...

    def answer_may_change(self, raw: bytes) -> bool:
        """False only when :meth:`rewrite_response` changes nothing and records nothing for any
        JSON answer whose bytes are ``raw``, whatever the flow: no call, no name given back and
        no markup to lift can be in it. A scan of the bytes (``True``: read the answer)."""
        ...

    def wants_stream(self, path: str, body: JSON) -> bool:
        """True when the request asks for a streamed answer."""
        ...

    def answers_unread(self, path: str, body: JSON) -> str | None:
        """Why toolvocab cannot read the answer to a request on ``path`` (query included) with
        ``body`` (parsed; ``None`` when only peeked: a peek declines a body whose answer it
        could not read), or ``None``: then no name changes upstream for it, since none could be
        given back."""
        ...

    def keeps_answer(self, body: JSON) -> bool:
        """True when the upstream keeps the answer for a later request to continue from (OpenAI
        Responses' ``store``, true unless the body says ``false``): then no call id and no call
        the upstream did not send may appear in it (:attr:`FlowContext.stored`)."""
        ...

    def stop_sequences(self, body: JSON) -> bool:
        """True when the request names stop sequences and the API ends an answer at one with the
        reason of a natural end (Chat's ``stop``: ``finish_reason`` ``stop``; Gemini's
        ``generationConfig.stopSequences``: ``finishReason`` ``STOP``), so that its text may have
        been cut (:attr:`FlowContext.stops`)."""
        ...

    def limits_calls(self, body: JSON) -> bool:
        """True when the request's tool choice forbids calls (``none``) or allows only some (one
        named tool, an allowed list), or is a value this dialect does not know: no call is lifted
        out of the answer's text (:attr:`FlowContext.limited`). False when it names none, or one
        that lets the model call any declared tool."""
        ...

    def allowed_names(self, body: JSON) -> frozenset[str] | None:
        """The declared tools the request's tool choice lets a call name: ``None`` for every one,
        else those it names (none for ``none``, or a value this dialect does not know). A call is
        renamed only to one of them (:meth:`toolvocab.addons.state.FlowState.resolve`)."""
        ...

    def stream_rewriter(self, flow: FlowContext) -> StreamRewriter:
        """A fresh per-flow rewriter for this dialect's SSE stream."""
        ...


class CallIds:
    """Deterministic ids for one answer's tool calls that have none, an empty one, or one
    already used in the answer (:func:`toolvocab.engine.ids.stable_call_id` from the flow and the
    call's position). ``fix(call_id)`` counts every call and returns the id to use instead, or
    ``None`` when ``call_id`` is fine as it is. ``restore`` maps an alias the request side sent
    for a rejected id back to that id (:attr:`FlowContext.call_ids` inverted): the client never
    sees an alias. With ``invent`` false no id is made up: only aliases are restored.
    """

    def __init__(self, flow_key: str, restore: dict[str, str] | None = None, *, invent: bool = True) -> None:
        self._flow_key = flow_key
        self._seen: set[str] = set()
        self._position = 0
        self._restore = restore or {}
        self._invent = invent

    def fix(self, call_id: Any) -> str | None:
        """The replacement for ``call_id`` (``None``: keep it)."""
        position = self._position
        self._position += 1
        if isinstance(call_id, str) and call_id in self._restore and self._restore[call_id] not in self._seen:
            original = self._restore[call_id]
            self._seen.add(original)
            return original
        if isinstance(call_id, str) and call_id and call_id not in self._seen:
            self._seen.add(call_id)
            return None
        if not self._invent:
            return None
        new = stable_call_id(self._flow_key, position)
        self._seen.add(new)
        return new


#: A nested list of declarations (OpenAI Responses' ``namespace`` entry): the list, its
#: members' ``name_of`` and ``set_name``; ``None`` for an entry that holds none.
Members = Callable[[Any], "tuple[list[Any], Callable[[Any], str | None], Callable[[Any, str], None]] | None"]


def dedupe_tools(
    tools: list[Any],
    plan: Plan,
    name_of: Callable[[Any], str | None],
    set_name: Callable[[Any, str], None],
    *,
    cursor: DuplicateCursor | None = None,
    members: Members | None = None,
) -> bool:
    """Apply ``plan.duplicates`` to a request's tool list in place.

    ``name_of(tool)`` gives a declaration's flat name (``None`` for entries without one, which
    are kept and not counted); ``set_name(tool, alias)`` renames one. Identical repeats are
    removed, different tools under a repeated name get their alias; the first declaration of
    each name is left for the rename map. Returns True when the list changed.

    The plan numbers the repeats of a name in the order ``declared_tools`` reads the
    declarations, over every list the request declares tools in. A dialect with several lists
    (OpenAI Chat's ``tools`` and legacy ``functions``, Gemini's ``tools[]`` entries) passes one
    ``cursor`` to each call, in that order; ``members(entry)`` walks a nested list (a Responses
    ``namespace``) at its entry's place.
    """
    if not plan.duplicates:
        return False
    if cursor is None:
        cursor = DuplicateCursor(plan)
    kept: list[Any] = []
    changed = False
    for tool in tools:
        inner = members(tool) if members is not None else None
        if inner is not None:
            changed |= dedupe_tools(inner[0], plan, inner[1], inner[2], cursor=cursor)
            kept.append(tool)
            continue
        name = name_of(tool)
        if name is not None:
            action, alias = cursor.step(name)
            if action == "drop":
                changed = True
                continue
            if action == "rename" and alias is not None:
                set_name(tool, alias)
                changed = True
        kept.append(tool)
    if changed:
        tools[:] = kept
    return changed


def mark_repeats(tools: list[DeclaredTool], raws: list[Any]) -> list[DeclaredTool]:
    """``tools`` (read from the wire entries ``raws``, one each, in order) with every tool whose
    flat name the list repeats carrying its entry's canonical text
    (:attr:`DeclaredTool.declaration`), so that the plan drops only a byte-for-byte repeat.
    Names declared once cost nothing."""
    counts: dict[str, int] = {}
    for tool in tools:
        counts[tool.qualified] = counts.get(tool.qualified, 0) + 1
    if all(n == 1 for n in counts.values()):
        return tools
    return [
        tool.model_copy(update={"declaration": declaration_text(raw)}) if counts[tool.qualified] > 1 else tool
        for tool, raw in zip(tools, raws, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class Peek:
    """What a dialect's typed decoder read of a request body (``Dialect.peek``): what planning
    reads, each value what the dialect's reader gives on the whole parsed body
    (``tests/unit/test_pipeline.py`` holds that over generated bodies).

    ``model``: ``Dialect.model_of``; ``stream``: ``Dialect.wants_stream``; ``system_texts``,
    ``platform_texts``, ``transcript_names``: the readers of those names; ``sections``: the
    top-level declarations keys and their values' bytes as sent, in the order of
    ``Dialect.declarations``; ``stored``: ``Dialect.keeps_answer``; ``stops``:
    ``Dialect.stop_sequences``; ``limited``: ``Dialect.limits_calls``; ``allowed``:
    ``Dialect.allowed_names``.

    A peek says nothing about the parts it skipped: a repeated key, an integer beyond 64 bits or
    an invalid byte there is found only by reading the whole body
    (:func:`toolvocab.engine.jsonio.loads_checked`), which a caller must do before it changes
    anything on the strength of this request.
    """

    model: str | None
    stream: bool
    system_texts: list[str]
    platform_texts: list[str]
    transcript_names: list[str]
    sections: tuple[tuple[str, bytes], ...]
    stored: bool = False
    stops: bool = False
    limited: bool = False
    allowed: frozenset[str] | None = None

    def declarations_body(self) -> dict[str, Any]:
        """The declarations sections parsed (``jsonio.loads``; ``ValueError`` for what a strict
        parser refuses) as a body: what ``Dialect.declared_tools`` reads."""
        return {key: jsonio.loads(raw) for key, raw in self.sections}


def typed_decode(decoder: msgspec.json.Decoder, content: bytes) -> Any:
    """``decoder.decode(content)`` (a typed decoder of a ``msgspec.Struct`` whose fields are the
    keys a dialect reads, unread fields skipped without being built), or ``None`` when it cannot
    read the body: not JSON, another shape than the Struct's, a lone surrogate, nesting beyond
    msgspec's limit. Never raises."""
    try:
        return decoder.decode(content)
    except (msgspec.MsgspecError, RecursionError, ValueError, TypeError):
        return None


def present(struct: Any, *names: str) -> dict[str, Any]:
    """The fields of ``struct`` among ``names`` that the body holds (not ``msgspec.UNSET``), as a
    body of those keys: what a reader of small top-level values reads."""
    return {name: value for name in names if (value := getattr(struct, name)) is not msgspec.UNSET}


#: The request keys of the OpenAI formats that name where an answer stops besides its natural
#: end: OpenAI's ``stop``, vLLM's ``stop_token_ids`` (``vllm.SamplingParams``, taken as an extra
#: parameter by its OpenAI-compatible server, which hosts the open models that leak markup into
#: text; its ``/v1/responses`` takes ``stop`` too) and SGLang's ``stop_regex``. One key too many
#: here only leaves a text as text.
STOP_KEYS = ("stop", "stop_token_ids", "stop_regex")


def names_stops(body: JSON) -> bool:
    """True when ``body`` holds a non-empty string or list under one of :data:`STOP_KEYS`."""
    if not isinstance(body, dict):
        return False
    return any(isinstance(v := body.get(key), (str, list)) and bool(v) for key in STOP_KEYS)


#: Chat Completions' and Responses' ``tool_choice`` values that let the model call any declared
#: tool or none (OpenAI API reference: ``none``, ``auto``, ``required``; an object names one tool,
#: an allowed list or a hosted tool); ``null`` and an absent key are ``auto``. ``any``: Mistral's
#: ``required`` (docs.mistral.ai, function calling: ``auto``, ``any``, ``none``).
OPENAI_OPEN_CHOICES = (None, "auto", "required", "any")


def openai_limits_calls(body: JSON, *, legacy: bool = False) -> bool:
    """:meth:`Dialect.limits_calls` for the OpenAI formats: a ``tool_choice`` other than
    :data:`OPENAI_OPEN_CHOICES`, ``parallel_tool_calls`` other than ``true`` or absent (``false``:
    at most one call, and markup may hold several), and with ``legacy`` (Chat) a
    ``function_call`` other than ``auto``."""
    if not isinstance(body, dict):
        return False
    return (
        body.get("tool_choice") not in OPENAI_OPEN_CHOICES
        or body.get("parallel_tool_calls") not in (None, True)
        or (legacy and body.get("function_call") not in (None, "auto"))
    )


def _named(entry: Any) -> str | None:
    """The tool an OpenAI ``tool_choice`` object (or an ``allowed_tools`` entry) names, as a flat
    name (a Responses ``namespace`` joined in front, :func:`toolvocab.engine.names.join_namespace`):
    Chat's ``{"type": "function", "function": {"name": …}}`` (``custom`` alike) or Responses'
    ``{"type": "function", "name": …, "namespace"?: …}``; ``None`` for none (a hosted tool,
    another shape)."""
    if not isinstance(entry, dict) or entry.get("type") not in ("function", "custom"):
        return None
    inner = entry.get(entry["type"])
    name = inner.get("name") if isinstance(inner, dict) else entry.get("name")
    if not isinstance(name, str):
        return None
    namespace = entry.get("namespace")
    return join_namespace(namespace, name) if isinstance(namespace, str) and namespace else name


def openai_allowed_names(body: JSON, *, legacy: bool = False) -> frozenset[str] | None:
    """:meth:`Dialect.allowed_names` for the OpenAI formats (API reference, ``tool_choice``), flat
    names (:func:`_named`):
    every tool for :data:`OPENAI_OPEN_CHOICES`; none for ``none``; the one a function or custom
    choice names; the function and custom tools of an ``allowed_tools`` choice (Chat's
    ``{"allowed_tools": {"tools": […]}}``, Responses' ``{"tools": […]}``); none for a hosted
    tool's choice or another value. With ``legacy`` (Chat) also ``function_call``: ``none``, or
    the one ``{"name": …}`` names."""
    if not isinstance(body, dict):
        return None
    choice = body.get("tool_choice")
    allowed: frozenset[str] | None
    if choice in OPENAI_OPEN_CHOICES:
        allowed = None
    elif isinstance(choice, dict) and choice.get("type") == "allowed_tools":
        spec = choice.get("allowed_tools") if isinstance(choice.get("allowed_tools"), dict) else choice
        tools = spec.get("tools") if isinstance(spec, dict) else None
        allowed = frozenset(n for t in (tools if isinstance(tools, list) else ()) if (n := _named(t)) is not None)
    else:
        name = _named(choice)
        allowed = frozenset() if name is None else frozenset({name})
    if legacy:
        call = body.get("function_call")
        if call not in (None, "auto"):
            name = call.get("name") if isinstance(call, dict) else None
            only = frozenset({name}) if isinstance(name, str) else frozenset()
            allowed = only if allowed is None else allowed & only
    return allowed


def sections_of(struct: Any, *names: str) -> tuple[tuple[str, bytes], ...]:
    """The ``msgspec.Raw`` fields ``names`` of ``struct`` that the body holds, as :attr:`Peek.sections`."""
    return tuple((name, bytes(value)) for name in names if (value := getattr(struct, name)) is not msgspec.UNSET)


def as_list(value: Any) -> list[Any]:
    """``value`` when it is a JSON array, else ``[]``: a field a dialect iterates may hold any
    JSON type in a broken or hostile body (a bool, a number, a string, an object)."""
    return value if isinstance(value, list) else []


def path_only(path: str) -> str:
    """A request path without its query string (``/v1/messages?beta=true`` -> ``/v1/messages``):
    what the dialects match their endpoints and model names against."""
    return path.split("?", 1)[0]


def content_texts(content: Any) -> list[str]:
    """The texts of a ``content`` (or ``system``, ``instructions``, tool ``output``) field: the
    string itself, or the ``text`` of each part that has a string one when it is a list of parts
    (Anthropic content blocks, Chat and Responses content parts); ``[]`` for anything else."""
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        return [p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str)]
    return []


def object_arguments_call(
    name: str, container: dict[str, Any], key: str, call_id: str | None, absent: dict[str, Any] | None
) -> ToolCall:
    """The :class:`ToolCall` for a dialect that carries arguments as a JSON object (Anthropic
    ``input``, Gemini ``args``), read from ``container[key]``.

    An object is the arguments. An empty form (``""`` or blanks, ``null``, ``[]``, or a string
    holding ``null`` / ``[]``) goes through :meth:`ToolCall.read`, which marks it
    ``empty_arguments`` so the engine writes ``{}`` back. Any other value is not an
    object: ``arguments=None`` (never parsed out of a string). An absent key gives ``absent``
    (absence is not an empty form on the wire).
    """
    if key not in container:
        return ToolCall(name=name, arguments=absent, id=call_id)
    value = container[key]
    if isinstance(value, dict):
        return ToolCall(name=name, arguments=value, id=call_id)
    call = ToolCall.read(name, value, call_id=call_id)
    if call.empty_arguments:
        return call
    return ToolCall(name=name, arguments=None, id=call_id)


def apply_decision_name(decision: Decision) -> str | None:
    """The name to write for ``decision``, or ``None`` when the name stays."""
    if decision.target is not None and decision.target != decision.name:
        return decision.target
    return None


class JSONFrame:
    """One JSON WebSocket frame, with the same ``raw`` / ``json()`` / ``with_json()`` surface
    as an SSE event, so a dialect's event logic serves both transports (Codex sends Responses
    events one per frame)."""

    __slots__ = ("raw", "_json", "_parsed", "_repeated")

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._json: Any = None
        self._parsed = False
        self._repeated = False

    def json(self) -> Any:
        """The frame parsed as JSON, or ``None`` when it is not JSON (cached); raises
        :class:`~toolvocab.dialects.sse.RepeatedKey` (every time) when it repeats a key."""
        if not self._parsed:
            self._parsed = True
            try:
                self._json = parse_checked(self.raw)  # strict; big integers exact
            except RepeatedKey:
                self._repeated = True
        if self._repeated:
            raise RepeatedKey()
        return self._json

    def with_json(self, value: Any) -> JSONFrame:
        """A new frame holding ``value`` as compact JSON."""
        frame = JSONFrame(jsonio.dumps(value))
        frame._json, frame._parsed = value, True
        return frame


def parsed_arguments(arguments: Any) -> Any:
    """A replayed call's ``arguments``: the object a JSON object's text reads as (strictly,
    :func:`toolvocab.engine.jsonio.loads_checked`, no key repeated), else the value as sent (an
    object already, as llama-server sends; text a strict reader refuses or that is not an
    object's, which a client's own lenient reader may still run)."""
    if isinstance(arguments, str):
        try:
            parsed, unique, _ = jsonio.loads_checked(arguments.encode())
        except ValueError:  # UnicodeEncodeError (a lone surrogate) is one
            return arguments
        return parsed if isinstance(parsed, dict) and unique else arguments
    return arguments


def call_from_payload(payload: dict[str, Any]) -> ToolCall:
    """One tool call from any of the shapes coding agents meet (:meth:`ToolCall.read` of its
    name, arguments and id):

    - OpenAI: ``{"name", "arguments": "<JSON string>"}`` (also nested as
      ``{"id", "function": {"name", "arguments"}}``; an object ``arguments`` is accepted, as
      llama-server sends, BR-21);
    - Anthropic: ``{"name", "input": {...}, "id"}``;
    - Gemini: ``{"name", "args": {...}, "id"?}``;
    - LangChain: ``{"name", "args": {...}, "type": "tool_call", "id"?}``;
    - Responses: ``call_id`` and ``namespace`` beside ``name`` and ``arguments``.

    Raises ``ValueError`` when the payload has no string ``name``."""
    if isinstance(payload.get("function"), dict):
        inner = dict(payload["function"])
        inner.setdefault("id", payload.get("id"))
        payload = inner
    name = payload.get("name")
    if not isinstance(name, str):
        raise ValueError("tool call has no string name")
    arguments = next((payload[key] for key in ("input", "args", "arguments") if key in payload), ABSENT)
    return ToolCall.read(
        name, arguments, call_id=payload.get("id") or payload.get("call_id"), namespace=payload.get("namespace")
    )
