"""Per-flow state between hooks: the dialect, the declared tools, the plan, the record, and the
:class:`~toolvocab.dialects.base.FlowContext` the dialects get (its resolver records every
decision in the record)."""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from functools import cached_property
from functools import lru_cache
from typing import TYPE_CHECKING
from typing import Any

from toolvocab.dialects import pipeline
from toolvocab.dialects.base import Dialect
from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.base import FrameRewriter
from toolvocab.dialects.base import StreamRewriter
from toolvocab.dialects.base import give_back_names
from toolvocab.engine import jsonio
from toolvocab.engine import vocabulary
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import Decision
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.names import join_namespace
from toolvocab.engine.plan import Plan
from toolvocab.engine.record import FlowRecord
from toolvocab.engine.translate import DIRECTORY_MOVERS
from toolvocab.report import TOOL_CHOICE_LEFT
from toolvocab.report import passed_note

if TYPE_CHECKING:
    from toolvocab.addons.stream import DecodedStream
    from toolvocab.addons.stream import StreamCallable


class AnswerNotJSON(ValueError):
    """A JSON answer's bytes that a strict reader refuses (:meth:`FlowState.rewrite_json`)."""


class _Unread:
    """Not read yet (a value of its own: ``None`` is a reading's result)."""


_UNREAD = _Unread()


@lru_cache(maxsize=1024)
def _shell_name(name: str) -> bool:
    """The vocabulary gives ``name`` a shell or PowerShell, or it moves a shell's directory
    (:data:`~toolvocab.engine.translate.DIRECTORY_MOVERS`, Claude Code's ``EnterWorktree``);
    kept: a transcript names the same tools every turn."""
    return name in DIRECTORY_MOVERS or vocabulary.capability_of(name) in ("shell", "powershell")


class FlowState:
    """Per-flow Python state between hooks (never stored in metadata).

    Created by the request hook (:class:`toolvocab.addons.core.ToolVocab`) for a flow it will
    handle, or by the WebSocket transport for each ``response.create`` turn. ``flow_key``: the
    flow's (or the WebSocket turn's) id, for the ids of calls that come without one;
    ``call_ids``: the replayed ids its request sent as aliases
    (:attr:`toolvocab.dialects.pipeline.Handled.call_ids`). :attr:`context` is what the
    dialects get.

    ``shared``: ``record`` is one other flows share (a cached plan's record,
    :attr:`toolvocab.dialects.pipeline.Handled.shared`), and ``record_json`` its dump as JSON
    bytes: :attr:`record` gives a copy of its own at first use (:func:`pipeline.fresh_record`),
    so a flow whose record nothing reads or adds to (:attr:`record_untouched`) never builds one.
    """

    def __init__(
        self,
        dialect: Dialect,
        tools: Toolset,
        plan: Plan,
        record: FlowRecord,
        wants_stream: bool,
        windows: bool = False,
        *,
        flow_key: str = "",
        call_ids: dict[str, str] | None = None,
        shared: bool = False,
        record_json: bytes | None = None,
        stored: bool = False,
        stops: bool = False,
        limited: bool = False,
        allowed: frozenset[str] | None = None,
    ) -> None:
        self.dialect = dialect
        self.allowed = allowed  # the tools the request's tool choice lets a call name (None: all)
        self.stored = stored  # the upstream keeps the answer (FlowContext.stored)
        self.stops = stops  # the request names stop sequences (FlowContext.stops)
        self.limited = limited  # the request's tool choice limits the calls (FlowContext.limited)
        self.windows = windows  # the request says the agent runs on Windows: no command moves between shells
        self.tools = tools
        self.plan = plan
        self._record = record
        self._shared = shared
        self.record_json = record_json  # the shared record's dump (JSON bytes), while shared
        self.wants_stream = wants_stream
        self.stream: StreamCallable | None = None
        self.passed_streaming = False  # the answer streams as it came (encoded): no body to read
        self.decoded: DecodedStream | None = None  # the stream callable of an answer decoded as it streams
        self.ws_rewriter: FrameRewriter | None = None  # the WebSocket turn's rewriter (Responses frames)
        self.ws_unrepaired = 0  # calls of ws_rewriter.unrepaired already noted
        self.ws_names_only = False  # ws_rewriter only names this socket's aliases back (a turn not read)
        self.ws_mode: str | None = None  # the mode a WebSocket turn not read is handled in (else the record's)
        # the WebSocket's flow, held weakly (for a turn's give-up outside its hooks): the state and
        # its rewriter refer to each other, and a strong reference would keep the flow, with
        # every frame, until the cyclic collector next ran (tests/unit/test_flow_lifetime.py)
        self.ws_flow: weakref.ref[Any] | None = None
        self.logged: set[str] = set()  # log lines already written for this flow (a WebSocket's turns)
        self.original_request: bytes | None = None  # the client's body, when it was changed
        self.upstream_raw: bytes | None = None  # the upstream's answer, when it was changed
        self.unverified: bytes | None = None  # the client's body, while only peeked (pipeline.Handled.verified)
        self.request_body: bytes | None = None  # the client's body, for earlier() (the flow holds it anyway)
        self._transcript: list[tuple[str, Any]] | None | _Unread = _UNREAD  # earlier(): the request's calls
        self._passed: list[list[str]] = []  # the unrepaired lists of this flow's rewriters (earlier())
        self.refused: str | None = None  # why the whole read refused the request (may_change)
        self.flow_key = flow_key
        self.call_ids = dict(call_ids or {})

    @property
    def context(self) -> FlowContext:
        """What the dialects get of this flow (its resolver, plan, tools, key and replayed ids):
        made at each use, not kept, so that a state no stream holds is in no reference cycle and
        goes (with the request body it may hold, :attr:`unverified`) as soon as its flow ends."""
        return FlowContext(
            self.resolve,
            self.plan,
            self.tools,
            self.flow_key,
            self.call_ids,
            self.withdraw,
            stored=self.stored,
            stops=self.stops,
            limited=self.limited,
            note=self.note,
        )

    def rewriter(self) -> StreamRewriter:
        """A new stream rewriter of the dialect for this flow (:attr:`context`); the calls it lets
        through undecided (its ``unrepaired``) make every later call's past unknown
        (:meth:`earlier`). The state keeps that list only, so no reference cycle is made."""
        rewriter = self.dialect.stream_rewriter(self.context)
        self._passed.append(rewriter.unrepaired)
        return rewriter

    @property
    def record(self) -> FlowRecord:
        """The flow's record, its own: a shared one is copied at the first use."""
        if self._shared:
            self._record, self._shared = pipeline.fresh_record(self._record), False
        return self._record

    @record.setter
    def record(self, record: FlowRecord) -> None:
        self._record, self._shared = record, False

    @property
    def record_untouched(self) -> bool:
        """True while nothing has read the record, nor added to it, since the request: it is
        still the shared one, whose dump :attr:`record_json` holds."""
        return self._shared and self.record_json is not None

    @property
    def shared_record(self) -> FlowRecord:
        """The record as shared (read only: others hold it); the flow's own once it has one."""
        return self._record

    def may_change(self) -> bool:
        """True when the answer may change on the strength of this flow's request: at once for a
        request read whole; for one only peeked, once :func:`toolvocab.dialects.pipeline.strict_read`
        of the whole body finds nothing against it (run once: here at the first change, or before
        it by :meth:`earlier`). When
        it does, the record becomes the one the request hook gives a request it leaves as sent
        (:attr:`refused`: why), and this and every later answer byte must go as the upstream
        sent it."""
        if self.refused is not None:
            return False
        if self.unverified is None:
            return True
        return self._verify()[0]

    def _verify(self) -> tuple[bool, Any]:
        """The whole strict read of a peeked body (:meth:`may_change`), made once: whether it
        finds nothing against the request, and the body read. A refusal makes the record the one
        the request hook gives such a request (:attr:`refused`: why)."""
        content, self.unverified = self.unverified, None
        body, reason = pipeline.strict_read(content)  # type: ignore[arg-type]  # a peeked flow's body
        if reason is None:
            return True, body
        self.refused = reason
        self.record = FlowRecord(mode=self.record.mode, skipped=reason)
        return False, None

    def resolve(self, call: ToolCall) -> Decision:
        """The ladder (:func:`toolvocab.engine.ladder.resolve`) over this flow's tools; the
        decision is added to the record. A rename to a tool the request's tool choice does not
        let a call name (:attr:`allowed`, flat names: ``none``, one named tool, an allowed list) is left: the
        model was not offered that tool, so which it meant is no longer the one declared tool
        it must mean. Giving back a name this flow changed upstream is spelling: it stays."""
        decision = resolve(
            call,
            self.tools,
            self.plan.reverse_map,
            client=self.record.client,
            windows=self.windows,
            earlier=self.earlier,
        )
        target = join_namespace(decision.target_namespace, decision.target or "")
        if (
            self.allowed is not None
            and decision.action is Action.RENAME
            and decision.step is not Step.REVERSE_MAP
            and target not in self.allowed
        ):
            decision = Decision(
                name=decision.name,
                namespace=decision.namespace,
                call_id=decision.call_id,
                action=Action.LEAVE,
                step=decision.step,
                reason=decision.reason + TOOL_CHOICE_LEFT + target,
                candidates=decision.candidates,
                arguments_before=decision.arguments_before,
            )
        if self.refused is None:  # a refused request's record is the request hook's: no decision
            self.record.decisions.append(decision)
        return decision

    def earlier(self, name: str) -> list[Any] | None:
        """The arguments of each earlier call of the declared tool ``name`` the client ran in this
        conversation (:data:`toolvocab.engine.translate.Earlier`): the request's transcript
        (``Dialect.transcript_calls``), then the calls decided before in this answer (and, on a
        WebSocket, in its earlier turns) as the client got them. ``None`` when that is not known:
        the request does not carry the whole conversation, a strict reader refuses its body
        (then nothing in the answer changes, :meth:`may_change`), or a stream rewriter of this
        flow let a call through undecided (:meth:`rewriter`). The body is read at the first
        ask, and only then; for a peeked body that read is the one :meth:`may_change` makes. Only
        the calls of shell tools are kept from it (the flow holds no other input): the declared
        ones, any name the vocabulary gives a shell or PowerShell (an agent's shell the client
        does not declare ran nothing unless its transcript shows it), and the tools that move a
        shell's directory."""
        if self._transcript is _UNREAD:
            ok, body = False, None
            if self.unverified is not None:
                ok, body = self._verify()  # the read may_change makes, made now, and made once
            elif self.request_body is not None and self.refused is None:
                body, reason = pipeline.strict_read(self.request_body)
                ok = reason is None
            self._transcript = self.dialect.transcript_calls(body, self._is_shell) if ok else None
        transcript = self._transcript
        if transcript is None or any(self._passed):
            # a call the rewriter let through undecided (events out of order) ran unread
            return None
        calls = [arguments for called, arguments in transcript if called == name]
        for decision in self.record.decisions:
            if decision.action is not Action.LEAVE and (decision.target or decision.name) == name:
                after = decision.arguments_after
                # None: arguments this reader could not read, which the client may still run
                calls.append(after if after is not None else decision.arguments_before)
        return calls

    def _is_shell(self, name: str) -> bool:
        """A call of ``name`` may have moved a shell's directory: a declared shell tool, or a
        name the vocabulary gives a shell or PowerShell."""
        return name in self._shells or _shell_name(name)

    @cached_property
    def _shells(self) -> frozenset[str]:
        """The names of the declared tools whose calls run a shell command (capability ``shell``):
        the only targets whose earlier calls :meth:`earlier` is asked for."""
        return frozenset(t.name for t in self.tools.tools if t.capability == "shell" and t.server is None)

    def note(self, text: str) -> None:
        """Add ``text`` to the record's notes, once."""
        if text not in self.record.notes:
            self.record.notes.append(text)

    def withdraw(self, decisions: Sequence[Decision]) -> None:
        """Take ``decisions`` (as :meth:`resolve` gave them) back out of the record: their calls
        did not reach the client."""
        gone = {id(d) for d in decisions}
        if gone:
            self.record.decisions = [d for d in self.record.decisions if id(d) not in gone]

    def rewrite_json(self, whole: bytes, *, observe: bool) -> bytes | None:
        """A whole JSON answer ``whole`` (a buffered one, or a stream request's answered with
        JSON) as the client gets it: its new bytes (a byte order mark in front kept in front), or
        ``None`` when it goes as the upstream sent it. The dialect reads it only when its bytes
        can hold something to change (``Dialect.answer_may_change``); it is written only when
        the request lets the answer change (:meth:`may_change`), not when ``observe`` (the flow
        is handled in ``observe`` mode), and exactly (:func:`toolvocab.engine.jsonio.rewrite`;
        else :meth:`unwritten`). The record says why when an answer holding a call goes as sent.
        Raises :class:`AnswerNotJSON` when a strict reader
        (:func:`toolvocab.engine.jsonio.loads_checked`) refuses ``whole``, noting nothing: the
        caller says what it does with it instead."""
        bom, content = jsonio.split_bom(whole)
        try:
            # the keys are counted in the same read: "does the answer repeat a key" costs no walk
            body, unique, _ = jsonio.loads_checked(content)
        except ValueError as exc:
            raise AnswerNotJSON(str(exc)) from None
        if not isinstance(body, dict):
            self.record.notes.append("answer body is not a JSON object; passed through")
            return None
        if not self.dialect.answer_may_change(content):
            return None  # no call, no markup: nothing in it to change
        before = len(self.shared_record.decisions)  # read: a shared record stays shared
        if not self.dialect.rewrite_response(body, self.context) or observe:
            return None
        if not self.may_change():
            return None
        new = jsonio.rewrite(content, body, unique_keys=True) if unique else None
        if new is None:
            # the calls reach the client as the upstream sent them but for this flow's
            # aliases: no decision of this answer's stands (the log line and counts say none)
            new = self.unwritten(content, self.record.decisions[before:])
            if new is None:
                return None
        return bom + new

    def unwritten(self, content: bytes, decisions: Sequence[Decision]) -> bytes | None:
        """A JSON answer ``content`` whose rewrite (``decisions``) cannot be written back exactly
        (it repeats a key: which value a client reads is its parser's choice): the decisions are
        withdrawn (no repair reaches the client) and the record says why. Returns the answer
        with this flow's aliases given back in the names of the calls the decisions are for
        (:func:`toolvocab.dialects.base.give_back_names`), or ``None`` when it gives none back:
        the client gets it as the upstream sent it."""
        self.withdraw(decisions)
        given, backs = give_back_names(content, self.context, [d.name for d in decisions if d.namespace is None])
        names = f" but for names given back ({', '.join(dict.fromkeys(backs))})" if backs else ""
        self.record.notes.append(
            passed_note(
                "the rewritten answer could not be written back exactly (a repeated key?)",
                f"the client got the answer as the upstream sent it{names}",
            )
        )
        return given if backs else None


#: The per-flow state a script's addons held when mitmproxy unloaded them (their ``done`` hook:
#: the script's file changed and mitmproxy reloads it, ``mitmproxy/addons/script.py``), kept for
#: the addons the reloaded script makes in the same master: a flow in flight keeps its state
#: (the stream callable it already has, its record, the names its request went up with).
_HANDED: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


def hand_over(kind: str, held: Any) -> None:
    """Keep ``held`` (an addon's per-flow state) for the next addon of ``kind`` loaded into the
    current master (:func:`take_over`); from an addon's ``done`` hook."""
    from mitmproxy import ctx

    master = getattr(ctx, "master", None)
    if master is not None:
        _HANDED.setdefault(master, {})[kind] = held


def take_over(kind: str) -> Any | None:
    """What the last addon of ``kind`` unloaded from the current master handed over
    (:func:`hand_over`), once; ``None`` when nothing was."""
    from mitmproxy import ctx

    master = getattr(ctx, "master", None)
    handed = _HANDED.get(master) if master is not None else None
    return handed.pop(kind, None) if handed else None
