"""Tool calls a model left in answer text, lifted for any dialect.

:func:`lift` is the one decision every dialect makes on an answer's text: the text is nothing
but tool-call markup (:func:`toolvocab.engine.wrapped.extract_text_calls`, the families listed in
:mod:`toolvocab.engine.wrapped`), every call in it resolves through the ladder to a declared function
tool, and the arguments it would be sent with validate against that tool's schema — else
``None`` and the text stays exactly as sent. :class:`TextWatch` follows the text of an answer
that is still streaming, so a dialect holds text back only from the moment markup may be
starting (never while it is ordinary prose).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from toolvocab.dialects.base import FlowContext
from toolvocab.engine.arguments import undeclared_keys
from toolvocab.engine.arguments import validation_error
from toolvocab.engine.models import Action
from toolvocab.engine.models import Decision
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.wrapped import LEAD
from toolvocab.engine.wrapped import MARKUP
from toolvocab.engine.wrapped import MARKUP_OPENERS
from toolvocab.engine.wrapped import PROSE
from toolvocab.engine.wrapped import REASONING_TAGS
from toolvocab.engine.wrapped import extract_text_calls
from toolvocab.engine.wrapped import text_call_state
from toolvocab.engine.wrapped import unwrap_parallel

#: Substrings one of which is in any text :func:`lift` can lift (a cheap first test).
__all__ = [
    "LEAD",
    "MARKUP",
    "PROSE",
    "LiftedCall",
    "TextHold",
    "TextWatch",
    "expand_parallel",
    "lift",
    "may_hold_markup",
    "may_hold_markup_json",
]

_OPENERS = tuple(opener for opener, _ in MARKUP_OPENERS)
#: The openers as JSON writes them in a string: their UTF-8 bytes (none holds a character JSON
#: writes with a short escape, ``"``, ``\\``, ``/`` or a control character: tests check it), those
#: that open with ``<`` apart (one ``in`` test on a text with no ``<`` passes them all).
_OPENER_BYTES = tuple(opener.encode() for opener in _OPENERS)
_ANGLE_OPENERS = tuple(opener for opener in _OPENER_BYTES if opener.startswith(b"<"))
_OTHER_OPENERS = tuple(opener for opener in _OPENER_BYTES if not opener.startswith(b"<"))
_CLOSERS = tuple(closer for _, closer in REASONING_TAGS + MARKUP_OPENERS)
_LONGEST_CLOSER = max(len(c) for c in _CLOSERS)


@dataclass
class LiftedCall:
    """One call lifted out of text: ``id`` (the model's own, e.g. Kimi's, or the one the
    caller's ``new_id`` gave), the declared ``name`` / ``namespace`` it resolved to, the
    ``arguments`` object to send (fitted when the ladder fitted them) and the ``decision``."""

    id: str
    name: str
    namespace: str | None
    arguments: dict[str, Any]
    decision: Decision


def may_hold_markup(text: str) -> bool:
    """True when ``text`` holds one of the markup openers (:data:`MARKUP_OPENERS`)."""
    return any(opener in text for opener in _OPENERS)


def may_hold_markup_json(raw: bytes) -> bool:
    """True when some string of the JSON text ``raw`` (bytes) may hold, once read, a text that
    :func:`may_hold_markup` accepts: ``raw`` holds an opener's UTF-8 bytes, or a ``\\u`` escape
    (RFC 8259 §7: any character may be written so, an opener's too). False: no string in ``raw``
    holds markup, so :func:`lift` lifts nothing from any of them. A scan of the bytes, nothing
    parsed."""
    if b"\\u" in raw:
        return True
    if b"<" in raw and any(opener in raw for opener in _ANGLE_OPENERS):
        return True
    return any(opener in raw for opener in _OTHER_OPENERS)


def lift(text: str, flow: FlowContext, new_id: Callable[[int], str]) -> tuple[str, list[LiftedCall]] | None:
    """``(text that remains, calls)`` for an answer text that is nothing but tool-call markup,
    else ``None`` (leave the text as sent).

    ``flow``: the flow's resolver and declared tools (none: nothing is lifted);
    ``new_id(i)`` gives the id of the ``i``-th lifted
    call that brings none, or whose id an earlier call of the text brought. A ``multi_tool_use.parallel`` call in the markup stands for its calls
    (BR-08). ``None`` when: no tools are declared, the request names stop sequences the answer
    may have ended at (:attr:`FlowContext.stops`), its tool choice forbids calls or allows only
    some (:attr:`FlowContext.limited`), the text is not markup alone
    (:func:`~toolvocab.engine.wrapped.extract_text_calls`), any call's decision is ``leave`` or names a
    tool that is not a declared ``function`` tool, or its arguments (fitted, if fitted) fail that
    tool's schema or carry a key it does not declare (annotation keys aside: a client that does not
    enforce its schema would run the call without it), or hold a lone surrogate. The remaining
    text is the leading reasoning block (or ``""``).
    """
    tools, resolve = flow.tools, flow.resolve
    if tools is None or flow.stops or flow.limited or not may_hold_markup(text):
        return None
    found = extract_text_calls(text, tools)
    if found is None:
        return None
    remaining, raw_calls = found
    calls: list[ToolCall] = []
    for call in raw_calls:
        subs = unwrap_parallel(call)
        if subs is not None and call.id is None:
            subs = [sub.model_copy(update={"id": None}) for sub in subs]  # ids from new_id
        calls.extend(subs if subs is not None else [call])
    out: list[LiftedCall] = []
    made: list[Decision] = []
    used: set[str] = set()
    for i, call in enumerate(calls):
        # a model's id used twice (Kimi's ``functions.x:0`` with a repeated index) would leave the
        # client two calls whose results it cannot tell apart: the second gets an id of its own
        call_id = call.id if call.id and call.id not in used else new_id(i)
        used.add(call_id)
        decision = resolve(call.model_copy(update={"id": call_id}))
        made.append(decision)
        lifted = _liftable(call, decision, tools)
        if lifted is None:
            flow.withdraw(made)  # the text stays text: the record holds no call the client never got
            return None
        out.append(
            LiftedCall(
                id=call_id, name=lifted[0], namespace=decision.target_namespace, arguments=lifted[1], decision=decision
            )
        )
    if not out:
        return None
    for decision in made:
        decision.lifted = True
    return remaining, out


def _liftable(call: ToolCall, decision: Decision, tools: Any) -> tuple[str, dict[str, Any]] | None:
    """``(target, arguments)`` when ``decision`` lets ``call`` be lifted (see :func:`lift`)."""
    if decision.action is Action.LEAVE or decision.target is None:
        return None
    tool = tools.find(decision.target, decision.target_namespace)
    if tool is None or tool.kind is not ToolKind.FUNCTION or not isinstance(tool.input_schema, dict):
        return None  # no schema to validate against: text stays text
    args = decision.arguments_after if decision.arguments_after is not None else call.arguments
    if not isinstance(args, dict) or validation_error(args, tool.input_schema) is not None:
        return None
    if undeclared_keys(args, tool.input_schema):
        return None  # lifting is a change: never with a key the client would not read
    if _holds_lone_surrogate(args):
        return None  # no API sends one in a call, and the anthropic SDK's stream reader refuses it
    return decision.target, args


def _holds_lone_surrogate(value: Any) -> bool:
    """True when a string of ``value`` (arguments: dicts, lists, strings, keys included) holds a
    lone surrogate (markup's ``"\\ud800"``, read by :func:`toolvocab.engine.jsonio.loads_arguments`
    as written): text UTF-8 cannot encode, which a call made of it would carry to a client whose
    JSON reader refuses it (the anthropic SDK's streamed ``input_json_delta``, read by jiter)."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return True
        return False
    if isinstance(value, dict):
        return any(_holds_lone_surrogate(k) or _holds_lone_surrogate(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_holds_lone_surrogate(v) for v in value)
    return False


def expand_parallel(call: ToolCall, flow: FlowContext) -> list[tuple[ToolCall, Decision]] | None:
    """The calls a structured ``multi_tool_use.parallel`` call stands for (BR-08), each with
    its decision (by ``flow.resolve``); ``None`` when ``call`` is no wrapper, when the request's
    tool choice limits the calls (:attr:`FlowContext.limited`: ``none``, one named tool, an allowed
    list, at most one call — several calls made of one would answer another request), or when any
    part does not resolve to a declared tool (then the wrapper is left whole, and the parts'
    decisions are withdrawn from the record). Sub-call ids: ``<wrapper id>_<i>``."""
    subs = unwrap_parallel(call)
    if subs is None or flow.limited:
        return None
    out: list[tuple[ToolCall, Decision]] = []
    for sub in subs:
        decision = flow.resolve(sub)
        out.append((sub, decision))
        if decision.action is Action.LEAVE or decision.target is None:
            flow.withdraw([d for _, d in out])
            return None
    return out


class TextWatch:
    """The text of one streamed answer so far, and where it stands for a lift.

    ``add(piece)`` appends and returns the state (:data:`~toolvocab.engine.wrapped.LEAD`,
    ``MARKUP`` or ``PROSE``, see :func:`~toolvocab.engine.wrapped.text_call_state`). Inside an open
    reasoning or markup block only its closing tag can change the state, so the text is
    rescanned only when a closer may have ended in the piece: linear in a long block's length.
    Once ``PROSE``, the text is dropped (it can never be lifted) and the state stays.
    """

    __slots__ = ("text", "state", "_open")

    def __init__(self) -> None:
        self.text = ""
        self.state = LEAD
        self._open = False

    def skippable(self) -> bool:
        """True while the text ends inside an open block with no ``<`` among its last
        characters: then a piece without ``<`` cannot finish a closing tag and may be left
        out of :attr:`text` (its characters do not change the state; the block stays open).
        A caller that skips a piece must skip it whole, and may use :attr:`text` only for the
        state and for what follows the block."""
        return self._open and "<" not in self.text[-(_LONGEST_CLOSER - 1) :]

    def add(self, piece: str) -> str:
        """Append ``piece``; the new state."""
        if self.state == PROSE or not piece:
            return self.state
        self.text += piece
        tail = self.text[-(len(piece) + _LONGEST_CLOSER - 1) :]
        if not self._open or any(closer in tail for closer in _CLOSERS):
            self.state, self._open = text_call_state(self.text)
        if self.state == PROSE:
            self.text = ""
        return self.state


class TextHold:
    """One answer text watched for tool calls left in it, as every dialect's stream keeps it:
    the :class:`TextWatch` of the text so far, the units (events, frames) held from where
    markup may start, and how much of the text went out before the hold (:attr:`released`).

    A dialect maps its events onto :meth:`add` (a piece of the text, carried by a unit),
    :meth:`keep` (a unit that carries none: a keep-alive, the block's end), :meth:`release`
    (give up: the held units, as they came) and, at the answer's end, a lift of
    ``watch.text`` (:func:`lift`) whose calls replace the held units. Units are the dialect's
    own; the hold only orders them."""

    __slots__ = ("watch", "held", "released")

    def __init__(self) -> None:
        self.watch = TextWatch()
        self.held: list[Any] | None = None  # None: nothing held (the text so far went out)
        self.released = 0  # characters of watch.text that went out

    @property
    def state(self) -> str:
        """:attr:`TextWatch.state`."""
        return self.watch.state

    def add(self, piece: str, unit: Any) -> tuple[str, list[Any]]:
        """The text grew by ``piece``, carried by ``unit``: ``(state, units to send now)``.
        ``LEAD``: what was held and ``unit`` go out (``[unit]`` when nothing was held);
        ``MARKUP``: ``unit`` is held (a hold starts with it: the text before it went out);
        ``PROSE``: what was held and ``unit`` go out, and the caller stops watching (prose is
        never lifted)."""
        before = len(self.watch.text)
        state = self.watch.add(piece)
        if state == PROSE:
            return state, self.release() + [unit]
        if self.held is None:
            if state == MARKUP:
                self.released, self.held = before, [unit]
                return state, []
            self.released = len(self.watch.text)
            return state, [unit]
        self.held.append(unit)
        if state == LEAD:  # "<thin" became a reasoning block: out as it came
            out = self.release()
            self.released = len(self.watch.text)
            return state, out
        return state, []

    def keep(self, unit: Any) -> list[Any]:
        """A unit that carries no text: held behind what is held (order kept), else sent."""
        if self.held is None:
            return [unit]
        self.held.append(unit)
        return []

    def release(self) -> list[Any]:
        """The held units, as they came (none held afterwards)."""
        out, self.held = self.held or [], None
        return out

    def remaining_after_release(self, remaining: str) -> str:
        """Of ``remaining`` (the text a lift leaves: the lead), what did not go out yet."""
        return remaining[self.released :] if len(remaining) > self.released else ""
