"""Codex's Responses-over-WebSocket transport: a ``response.create`` frame from the client is a
request (its tools declared, its plan applied); every frame from the server is one stream event,
rewritten by the Responses dialect's stream rewriter.

A server frame that comes out as one frame goes on as mitmproxy relays it (its content changed
in place when rewritten), so it keeps its place before the close that may follow it. Frames a
hold releases are more than the message at hand: they are written to the client connection at
once (:func:`write_to_client`), in order with the layer's own bytes. Where that cannot be done
they go out with ``inject.websocket``, which mitmproxy sends from tasks of its own
(``proxyserver.inject_event``) and then runs through this hook again (``injected``); until every
injected frame has come through, later server frames are injected too, binary ones included, so
none overtakes them (mitmproxy 11.0.2 and 12.x: ``proxy/layers/websocket.py``,
``relay_messages``).

A held call is bounded as on HTTP (``toolvocab_hold_timeout``): when the server sends no frame
for that long while frames are held, they go to the client as they came but for an upstream
alias of the client's own tool, named back, and the rest of the turn is read as usual. Frames
held when the server closes the socket are lost with it (the record and a ``warn`` line say so):
mitmproxy relays the close with no hook before it."""

from __future__ import annotations

import asyncio
import logging
import weakref
from dataclasses import dataclass
from dataclasses import field
from typing import TYPE_CHECKING
from typing import Any

import msgspec
from mitmproxy import http

from toolvocab import dialects
from toolvocab.addons.recording import ToolVocabRecorder
from toolvocab.addons.recording import _storable
from toolvocab.addons.state import FlowState
from toolvocab.addons.state import hand_over
from toolvocab.addons.state import take_over
from toolvocab.addons.stream import note_unrepaired
from toolvocab.dialects import pipeline
from toolvocab.dialects.base import FrameRewriter
from toolvocab.dialects.base import JSONFrame
from toolvocab.dialects.base import names_given_back
from toolvocab.dialects.sse import RepeatedKey
from toolvocab.report import METADATA_KEY
from toolvocab.report import passed_note

if TYPE_CHECKING:
    from toolvocab.addons.core import ToolVocab

logger = logging.getLogger(__name__)


class ToolVocabWebSocket:
    """``websocket_message`` / ``websocket_end``; one :class:`FlowState` per WebSocket
    (``_ws``, by flow id), its record kept across turns, and whether any of its turns said the agent
    runs on Windows (``_windows``: every later turn is read so). ``core``: the repair addon (mode, plan);
    ``recorder``: finishes the record after each turn."""

    def __init__(self, core: ToolVocab, recorder: ToolVocabRecorder) -> None:
        self.core = core
        self.recorder = recorder
        self._ws: dict[str, FlowState] = {}
        self._pending: dict[str, int] = {}  # frames injected to the client, not yet through this hook
        self._timers: dict[str, asyncio.TimerHandle] = {}  # the hold bound of a turn holding frames
        self._last: dict[str, float] = {}  # when a frame last came while frames were held (loop time)
        #: Sockets a turn of which said the agent runs on Windows (:meth:`_windows_of`), by flow id:
        #: whether a later turn has been noted as read so.
        self._windows: dict[str, bool] = {}
        #: The turns of each socket the server has not ended yet, by flow id (:class:`_Turns`,
        #: :meth:`_count`). While one is owed, a server frame may be of any of them, so no new
        #: turn is read with its own tools.
        self._owed: dict[str, _Turns] = {}

    def done(self) -> None:
        """Hand the sockets in flight over to the addon a reloaded script makes (their records,
        frames on their way). A turn holding frames gives them up first, as they came: the
        reloaded script may not load, and then no addon would ever send them (mitmproxy relays
        the socket's later frames past the held ones)."""
        for timer in self._timers.values():
            timer.cancel()
        self._timers.clear()
        for state in list(self._ws.values()):
            rewriter = state.ws_rewriter
            flow = state.ws_flow() if state.ws_flow is not None else None
            if rewriter is not None and rewriter.has_held() and flow is not None:
                try:
                    self._give_up(
                        flow,
                        state,
                        "the script was reloaded while a tool call's frames were held",
                        "the client got the held frames and the rest of the turn as the upstream sent them but for "
                        "the names this socket sent upstream, given back",
                        names_only=True,
                    )
                except Exception:  # shutting down: the connection may be gone
                    logger.debug("toolvocab: could not give up a held WebSocket turn", exc_info=True)
        if self._ws or self._pending or self._windows or self._owed:
            hand_over("websocket", (self._ws, self._pending, self._windows, self._owed))

    def running(self) -> None:
        """Take over the sockets in flight of the addon this one replaces (a reloaded script)."""
        handed = take_over("websocket")
        if handed is not None:
            sockets, pending = handed[0], handed[1]
            self._ws.update(sockets)
            self._pending.update(pending)
            if len(handed) > 2:
                self._windows.update(handed[2])
            if len(handed) > 3:
                self._owed.update(handed[3])
            for flow_id, state in sockets.items():  # an addon that kept no such dict: its turns say it
                if state.windows:
                    self._windows.setdefault(flow_id, False)

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        """Codex's Responses-over-WebSocket transport: a ``response.create`` frame from the
        client is a request; every frame from the server is one stream event."""
        if flow.websocket is None or not flow.websocket.messages or not flow.live:
            return  # not live: read from a file (G11), left as saved
        message = flow.websocket.messages[-1]
        if message.injected:
            if not message.from_client and self._pending.get(flow.id):
                self._pending[flow.id] -= 1  # one of ours, on its way to the client
            return
        if not message.is_text and not message.from_client:
            if not self._binary_in_hold(flow, message):
                self._queue(flow, message)
            return
        try:
            self._handle(flow, message)
        finally:
            self._count(flow, message)

    def _handle(self, flow: http.HTTPFlow, message: Any) -> None:
        if message.from_client and (self.core.mode == "off" or not self.core.ready):
            self._end_turns(flow, message.content)  # this turn is not toolvocab's: nothing of it is touched
            return
        try:
            self._websocket_message(flow, message)
        except Exception as exc:
            logger.exception("toolvocab: websocket_message hook failed; frame passed through")
            ws = self._ws.get(flow.id)
            if ws is not None:
                ws.record.notes.append(
                    passed_note(
                        f"internal error in websocket_message ({type(exc).__name__}: {exc})",
                        "the frame went on as it came",
                    )
                )

    def _count(self, flow: http.HTTPFlow, message: Any) -> None:
        """After a frame of a Responses socket, what the server still owes (:class:`_Turns`):
        a client frame that may begin a turn (:func:`_may_begin_turn`) is one more request
        unanswered; a server frame, :meth:`_Turns.server`. Never raises."""
        try:
            if not flow.request.path.split("?", 1)[0].endswith("/responses"):
                return
            turns = self._owed.get(flow.id)
            if message.from_client:
                if _may_begin_turn(message.content, message.is_text):
                    if turns is None:
                        turns = self._owed[flow.id] = _Turns()
                    turns.requests += 1
            elif turns is not None and turns.owed():
                turns.server(message.content)
        except Exception:  # counting must not break a frame
            logger.debug("toolvocab: could not count a WebSocket frame", exc_info=True)

    def _busy(self, flow: http.HTTPFlow) -> bool:
        """The server still owes the end of a turn a client frame before this one began."""
        turns = self._owed.get(flow.id)
        return turns is not None and turns.owed()

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        """Forget a finished WebSocket's state (its record stays in metadata)."""
        self._pending.pop(flow.id, None)
        self._owed.pop(flow.id, None)
        self._windows.pop(flow.id, None)
        self._stop_timer(flow.id)
        ws = self._ws.pop(flow.id, None)
        if ws is not None:
            rewriter = ws.ws_rewriter
            if rewriter is not None and rewriter.has_held() and not _observing(ws):
                # mitmproxy relays the close with no hook before it: the frames are lost.
                lost = len(rewriter.held_units())
                why = f"the socket closed while {lost} frames of a tool call were held"
                ws.record.notes.append(passed_note(why, "the client never got them"))
                self.recorder.finish(flow, ws)  # the mark, the comment and a warn line say it
            flow.metadata[METADATA_KEY] = _storable(ws.record.dump())

    def _websocket_message(self, flow: http.HTTPFlow, message: Any) -> None:
        if message.from_client:
            if not flow.request.path.split("?", 1)[0].endswith("/responses"):
                return
            kind = _frame_type(message.content) if len(message.content) <= _SMALL else None
            if kind == "response.processed" or (kind == "response.cancel" and not self._busy(flow)):
                # an acknowledgement, or a cancel with no turn under way: begins no turn (the turn
                # under way, if any, goes on being read)
                return
            if not message.is_text:
                # Not a frame toolvocab reads (Codex sends text frames). One that may be a request
                # (a JSON object) begins a turn whose tools are not known, as a text frame
                # toolvocab cannot read does; any other (a keep-alive) begins none.
                if _may_begin_turn(message.content, False) and not self._give_up_unfinished(
                    flow, message.content, _BINARY
                ):
                    self._unread_turn(flow, message.content, _BINARY)
                return
            dialect = dialects.by_name("openai_responses")
            assert dialect is not None
            if self._give_up_unfinished(flow, message.content):
                return
            if self._busy(flow):
                # A turn toolvocab does not read is still streaming (its request was not read,
                # or came in off mode): which turn a later frame is of is not known, so this one
                # is not read with its tools either.
                kind = _frame_type(message.content)
                self._unread_turn(
                    flow,
                    message.content,
                    f"a {kind or 'client frame'} sent while a turn toolvocab did not read was still streaming",
                )
                return
            result = pipeline.handle(
                pipeline.Request(
                    message.content,
                    "POST",
                    flow.request.path,
                    flow.request.pretty_host,
                    flow.request.headers.get,
                ),
                self.core.settings(),
                self.core.caches,
                dialect=dialect,
                accept=lambda frame: isinstance(frame, dict) and frame.get("type") == "response.create",
            )
            if result is None:
                self._unread_turn(flow, message.content)
                return
            if isinstance(result, pipeline.Skipped):
                # As the HTTP request hook does: which repeated key the server reads is its
                # parser's choice, so the frame goes as it came and no plan is made of it; its
                # turn's frames as they came but for the aliases the socket's earlier turns sent
                # (the server keeps those turns), as for any turn whose tools are not read.
                if flow.id in self._ws:
                    self._unread_turn(flow, message.content, what="a response.create frame that repeats a key")
                else:
                    reason = "a response.create frame repeats a key; it and its turn's frames went as they came"
                    self.core._skip(flow, reason, dialect.name)
                return
            record = result.record
            previous = self._ws.get(flow.id)
            if previous is not None:
                # One record per WebSocket: keep the earlier turns' decisions and notes.
                record.decisions = previous.record.decisions + record.decisions
                record.notes = previous.record.notes + record.notes
                record.request_changed = previous.record.request_changed
                record.response_changed = previous.record.response_changed
            record.streamed = True
            state = FlowState(
                dialect,
                result.tools,
                # the aliases of the socket's earlier turns still read back: the server keeps
                # those turns (previous_response_id), and a model may call a name from them
                result.plan if previous is None else result.plan.after(previous.plan.reverse_map),
                record,
                wants_stream=True,
                windows=self._windows_of(flow.id, result.windows, record),
                flow_key=f"{flow.id}:{len(flow.websocket.messages)}",
                call_ids=result.call_ids,
                # A response.create continues from the connection's last response by
                # previous_response_id, store false included (developers.openai.com/docs/guides/
                # websocket-mode): nothing the server never sent may appear in this turn.
                stored=True,
                stops=result.stops,
                limited=result.limited,
                allowed=result.allowed,
            )
            state.request_body = message.content
            rewriter = state.rewriter()
            assert isinstance(rewriter, FrameRewriter), "the Responses rewriter takes WebSocket frames"
            state.ws_rewriter = rewriter
            self._stop_timer(flow.id)  # a new turn: the last one's bound ends
            state.ws_flow = weakref.ref(flow)
            self._ws[flow.id] = state
            if result.content is not None:
                message.content = result.content
                record.request_changed = True
            self.recorder.finish(flow, state)
            return
        state = self._ws.get(flow.id)
        if state is None or state.ws_rewriter is None:
            self._queue(flow, message)
            return
        unit = JSONFrame(message.content)
        before = len(state.record.decisions)
        notes = len(state.record.notes)
        try:
            outs = state.ws_rewriter.on_unit(unit)
        except Exception as exc:
            got = (
                "the client got that frame, what was held and the rest of the turn's frames as the upstream "
                "sent them but for the names this socket sent upstream, given back"
            )
            if isinstance(exc, RepeatedKey):
                state.record.notes.append(passed_note("a frame's data repeats a key (this turn)", got))
            else:
                state.record.notes.append(
                    passed_note(f"internal error in the WebSocket rewrite ({type(exc).__name__}: {exc})", got)
                )
            rewriter = state.ws_rewriter
            try:
                # As they came but for the aliases this socket sent, named back; from then on only
                # those are (a frame that raised again passes as it came).
                outs, _ = self._let_go(state, rewriter, "a frame could not be read")
                rewriter.read_names_only()
                state.ws_names_only = True
            except Exception:
                outs = rewriter.held_units()
                state.ws_rewriter = None
            if unit not in outs:
                outs.append(unit)  # the failing frame may already be among the held ones
        else:
            state.ws_unrepaired = note_unrepaired(state.ws_rewriter, state.record, state.ws_unrepaired)
        news = len(state.record.decisions) != before or len(state.record.notes) != notes  # the record grew
        if _observing(state):  # the mode this turn's response.create (or unread frame) was handled in
            if news:
                self.recorder.finish(flow, state)
            return
        self._send(flow, message, [out.raw for out in outs])
        self._watch(flow, state)
        if any(o is not unit and o.raw != unit.raw for o in outs) or news:
            state.record.response_changed = state.record.response_changed or any(
                d.changed for d in state.record.decisions[before:]
            )
            self.recorder.finish(flow, state)

    def _windows_of(self, flow_id: str, said: bool, record: Any) -> bool:
        """Whether this socket's new turn runs on Windows: its frame or upgrade request ``said``
        so (``Handled.windows``), or an earlier turn of the socket did. A socket is one Codex
        session, and Codex sends its ``<environment_context>`` only in a turn's full
        ``response.create``: a later one on the same socket carries ``previous_response_id`` and
        only the new items (codex-rs core/src/client.rs, ``get_incremental_items``), so it says
        nothing of the machine. The first turn read so because of an earlier one says so in
        ``record``'s notes, once per socket."""
        if said:
            self._windows.setdefault(flow_id, False)
            return True
        noted = self._windows.get(flow_id)
        if noted is None:
            return False
        if not noted:
            self._windows[flow_id] = True
            record.notes.append(
                "this turn's request does not say the agent runs on Windows; an earlier turn of this socket "
                "did: read as Windows, where no command moves between shells"
            )
        return True

    def _send(self, flow: http.HTTPFlow, message: Any, frames: list[bytes]) -> None:
        """``frames`` (text) go to the client in place of the server's ``message``: as the
        message itself when they are one frame and no injected frame is still on its way, else
        dropped and injected in order."""
        pending = self._pending.get(flow.id, 0)
        if not pending and len(frames) <= 1:
            if not frames:
                message.drop()  # held
            elif frames[0] != message.content:
                message.content = frames[0]
            return
        message.drop()
        for raw in frames:
            self._inject(flow, raw, True)

    def _queue(self, flow: http.HTTPFlow, message: Any) -> None:
        """A server ``message`` toolvocab does not rewrite (binary, not a turn's, off mode): on
        as it is, unless injected frames are still on their way, then behind them."""
        if self._pending.get(flow.id):
            message.drop()
            self._inject(flow, message.content, message.is_text)

    def _inject(self, flow: http.HTTPFlow, raw: bytes, is_text: bool) -> None:
        """Send one frame to ``flow``'s client now (:func:`write_to_client`), or, when that
        cannot be done or an injected frame is still on its way, with ``inject.websocket``
        (counted until it comes back through the hook)."""
        from mitmproxy import ctx

        if not self._pending.get(flow.id) and write_to_client(flow, raw, is_text):
            return
        self._pending[flow.id] = self._pending.get(flow.id, 0) + 1
        ctx.master.commands.call("inject.websocket", flow, True, raw, is_text)

    def _binary_in_hold(self, flow: http.HTTPFlow, message: Any) -> bool:
        """A binary server frame while a turn's frames are held (not toolvocab's to read): the
        held frames go before it as they came and the rest of the turn passes; ``True`` when
        that was done, ``False`` when nothing is held."""
        state = self._ws.get(flow.id)
        rewriter = state.ws_rewriter if state is not None else None
        if state is None or rewriter is None or _observing(state) or not rewriter.has_held():
            return False
        self._give_up(
            flow,
            state,
            "a binary frame came while a tool call's frames were held",
            "the client got the held frames as the upstream sent them, then the binary frame; the rest of the "
            "turn was read as usual",
            keep_reading=True,
        )
        message.drop()
        self._inject(flow, message.content, False)
        return True

    def _end_turns(self, flow: http.HTTPFlow, content: bytes) -> None:
        """A client frame (``content``) in ``off`` mode: the last turn's rewriting ends (given up
        if it was still streaming; its record stays in metadata), and no frame after it is touched.
        The socket's state stays, reading nothing: a later turn in another mode keeps its record
        and reads back the aliases its earlier turns sent."""
        previous = self._ws.get(flow.id)
        if previous is None:
            return
        if self._give_up_unfinished(flow, content) and previous.ws_names_only:
            return  # the last turn's later frames still get this socket's names back, until it ends
        self._stop_timer(flow.id)
        # kept, reading nothing, for a later turn in another mode: the socket's record and the
        # names its earlier turns sent upstream (the server keeps those turns)
        previous.ws_rewriter = None
        flow.metadata[METADATA_KEY] = _storable(previous.record.dump())

    def _give_up_unfinished(self, flow: http.HTTPFlow, content: bytes, what: str | None = None) -> bool:
        """At a client frame (``content``; its ``type`` read only when it is said,
        :func:`_frame_type`; ``what``: the frame as the record names it, else by its ``type``): if
        the socket's last turn is still streaming, which turn a later frame belongs to is not
        known, so neither turn is touched from here on: the last is given up (:meth:`_give_up`);
        True when it was."""
        previous = self._ws.get(flow.id)
        if previous is None or previous.ws_rewriter is None or not self._busy(flow):
            return False
        if what is None:
            kind = _frame_type(content)
            what = f"a {kind}" if kind is not None else "a client frame toolvocab cannot read"
        # A turn toolvocab did not read may have ended without its server saying so (no answer).
        when = (
            "before a turn toolvocab did not read had ended"
            if previous.ws_names_only
            else "while the previous turn was still streaming"
        )
        self._give_up(
            flow,
            previous,
            f"{what} came {when}",
            "the client got what was held as the upstream sent it, and this frame and every frame after "
            "it in both turns as they came but for the names this socket sent upstream, given back",
            names_only=True,
        )
        return True

    def _unread_turn(self, flow: http.HTTPFlow, content: bytes, what: str | None = None) -> None:
        """A client text frame (``content``) that is no ``response.create`` toolvocab reads, after
        the last turn ended (its ``type`` read only here, :func:`_frame_type`): the server's
        next frames answer it. A ``response.append`` continues the socket's last response, its
        tools those of the last ``response.create`` (codex-rs ``codex-api/src/common.rs``
        ``ResponsesWsRequest``): a new turn is read with them, in the mode it was read in. Any
        other frame (or an append after one, or in another mode) begins a turn whose tools are not
        known: only a tool this request declared is a target, so its calls are read only to name
        back the aliases this socket sent upstream (``read_names_only``), which no declared tool
        is; in ``observe`` mode nothing of it is touched. The record keeps every turn. ``what``:
        the frame, as the record names it (else by its ``type``)."""
        previous = self._ws.get(flow.id)
        if previous is None:
            return
        kind = _frame_type(content)
        self._stop_timer(flow.id)
        previous.ws_unrepaired = 0
        if (
            what is None
            and kind == "response.append"
            and previous.ws_rewriter is not None
            and not previous.ws_names_only
            and self.core.mode == (previous.ws_mode or previous.record.mode)
        ):
            previous.ws_rewriter = previous.rewriter()
            return
        what = what or (f"a {kind} frame" if kind is not None else "a client frame toolvocab cannot read")
        # the turn is handled in the mode it came in, whatever the last read turn's was (the
        # record keeps the mode of the turns it read)
        previous.ws_mode = self.core.mode
        if self.core.mode == "observe":
            previous.ws_rewriter = None
            got = "its frames went as they came"
        else:
            previous.ws_rewriter = previous.rewriter()
            previous.ws_rewriter.read_names_only()
            previous.ws_names_only = True
            got = "its frames went as they came but for the names this socket sent upstream, given back"
        previous.record.notes.append(f"{what} began a turn whose tools toolvocab did not read: {got}")
        self.recorder.finish(flow, previous)

    def _give_up(
        self,
        flow: http.HTTPFlow,
        state: FlowState,
        why: str,
        got: str,
        *,
        keep_reading: bool = False,
        names_only: bool = False,
    ) -> None:
        """Give up what ``state``'s turn holds: it goes to the client as it came but for an
        upstream alias of the client's own tool, named back (:meth:`_let_go`; injected, in
        order); then the rest of the turn is read as usual (``keep_reading``), read only to name
        such aliases back (``names_only``: which turn a frame is of is no longer known), or every
        later frame of the socket passes. The record says why."""
        # an observed turn's frames all went on as they came, held ones too: decided before the
        # mode the turn is read in changes below
        observed = _observing(state)
        rewriter = state.ws_rewriter
        held, backs = self._let_go(state, rewriter, why) if rewriter is not None else ([], [])
        if names_only and rewriter is not None and not (observed and self.core.mode == "observe"):
            if observed:  # which turn a later frame is of is not known; the new one is not observed
                state.ws_mode = self.core.mode
            rewriter.read_names_only()
            state.ws_names_only = True
        elif not keep_reading:
            state.ws_rewriter = None
        self._stop_timer(flow.id)
        if backs and not observed:  # an observed turn's held frames went on as they came
            got += f" (names given back: {', '.join(backs)})"
        state.record.notes.append(passed_note(why, got))
        if not observed:
            for unit in held:
                self._inject(flow, unit.raw, True)
        self.recorder.finish(flow, state)

    @staticmethod
    def _let_go(state: FlowState, rewriter: FrameRewriter, why: str) -> tuple[list[Any], list[str]]:
        """What ``rewriter`` holds, let go (:meth:`~toolvocab.dialects.base.FrameRewriter.let_go_units`),
        and the client's names given back in it; the rewriter's sentences about it are this
        give-up's own note (not noted again)."""
        seen = len(rewriter.unrepaired)
        held = rewriter.let_go_units(why)
        backs = names_given_back(rewriter.unrepaired[seen:])
        state.ws_unrepaired = len(rewriter.unrepaired)
        return held, backs

    # -- the hold bound -----------------------------------------------------------------------

    def _watch(self, flow: http.HTTPFlow, state: FlowState) -> None:
        """After a server frame: while the turn's rewriter holds frames, note when one last came
        and start one timer when a hold begins; when nothing is held, stop it."""
        timeout = self.core.hold_timeout
        rewriter = state.ws_rewriter
        if timeout <= 0 or rewriter is None or not rewriter.has_held():
            self._stop_timer(flow.id)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on an event loop (a direct call in a test): no bound
        self._last[flow.id] = loop.time()
        if flow.id not in self._timers:
            self._timers[flow.id] = loop.call_later(timeout, self._on_timer, flow, state, loop)

    def _on_timer(self, flow: http.HTTPFlow, state: FlowState, loop: asyncio.AbstractEventLoop) -> None:
        """The bound ran out: if the server has been silent that long and frames are still
        held, send them as they came and let the rest of the turn pass; else wait the rest."""
        self._timers.pop(flow.id, None)
        try:
            rewriter = state.ws_rewriter
            if self._ws.get(flow.id) is not state or rewriter is None or not rewriter.has_held():
                return
            timeout = self.core.hold_timeout
            idle = loop.time() - self._last.get(flow.id, 0.0)
            if idle < timeout:
                self._timers[flow.id] = loop.call_later(timeout - idle, self._on_timer, flow, state, loop)
                return
            why = f"the upstream sent no frame for {idle:.1f} s"
            held, backs = self._let_go(state, rewriter, why)
            names = f" but for names given back ({', '.join(backs)})" if backs else ""
            state.record.notes.append(
                passed_note(
                    f"{why} while a tool call was held (toolvocab_hold_timeout {timeout:g})",
                    f"the client got the {len(held)} held frames as the upstream sent them{names}, and the rest "
                    "of the turn read as usual",
                )
            )
            logger.warning(
                "toolvocab: %s while a tool call was held (toolvocab_hold_timeout %g); what was held went to "
                "the client as it came%s · %s",
                why,
                timeout,
                names,
                state.record.host,
            )
            for unit in held:
                self._inject(flow, unit.raw, True)
            self.recorder.finish(flow, state)
        except Exception as exc:  # a timer callback must not raise into the event loop
            logger.exception("toolvocab: releasing a stalled WebSocket hold failed")
            state.record.notes.append(f"stalled hold not released ({type(exc).__name__}: {exc})")

    def _stop_timer(self, flow_id: str) -> None:
        timer = self._timers.pop(flow_id, None)
        if timer is not None:
            timer.cancel()
        self._last.pop(flow_id, None)


class _Typed(msgspec.Struct):
    """The ``type`` of a frame, nothing else decoded."""

    type: Any = None


#: How the record names a client frame sent binary (toolvocab reads text frames only).
_BINARY = "a binary client frame"


def _observing(state: FlowState) -> bool:
    """The socket's current turn is handled in ``observe`` mode: a turn not read in the mode it
    came in (:attr:`FlowState.ws_mode`), else the mode of the response.create that began it."""
    return (state.ws_mode or state.record.mode) == "observe"


def _frame_type(content: bytes) -> str | None:
    """A client frame's ``type`` (a string), or ``None`` (not a JSON object, no string type)."""
    try:
        kind = msgspec.json.decode(content, type=_Typed).type
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    return kind if isinstance(kind, str) else None


#: Client frames that begin no turn: a cancel (it ends the one under way) and codex-rs's
#: ``response.processed`` (``ResponseProcessedWsRequest``: the client has read a response, sent
#: on a reused connection before its next request). Both are a few dozen bytes; a longer frame
#: is not read for its type (a request's type would cost a decode of all of it).
_NO_TURN = frozenset({"response.cancel", "response.processed"})
_SMALL = 4096


def _may_begin_turn(content: bytes, is_text: bool) -> bool:
    """A client frame that may begin a turn the server answers: any text frame but those of
    :data:`_NO_TURN` (one toolvocab cannot read too: the server may), a binary one only when it
    is a JSON object (a request; a keep-alive is not)."""
    kind = _frame_type(content) if len(content) <= _SMALL else None
    if kind in _NO_TURN:
        return False
    return is_text or kind is not None or content.lstrip()[:1] == b"{"


class _Response(msgspec.Struct):
    id: Any = None


class _Event(msgspec.Struct):
    """A server frame's ``type`` and its response's ``id``, nothing else decoded."""

    type: Any = None
    response: _Response | None = None


#: Bytes one of which is in any server frame :meth:`_Turns.server` reads: the cheap first test.
_TURN_WORDS = (b"created", b"completed", b"failed", b"incomplete", b"error")
#: The events that end the response they name (developers.openai.com/docs/guides/websocket-mode,
#: the Responses streaming events).
_RESPONSE_ENDS = frozenset({"response.completed", "response.failed", "response.incomplete"})


@dataclass
class _Turns:
    """What the server of one socket still owes: ``requests`` sent that no response has begun
    answering yet (in order: a server answers them in turn), and the ``active`` responses
    (by id) begun and not ended. Which request a frame answers is known only by that order and
    those ids, so every doubt leaves a turn owed: a request is then read for names only, never
    with tools another turn declared (a repair lost, not a wrong one).

    ``response.created`` begins the oldest request's response; ``response.completed``,
    ``failed`` or ``incomplete`` ends the response it names (an end with no id the one active
    response, if only one is; a second end of one response nothing). An ``error`` ends a
    request only while no response is active (the request was refused before one began); while
    one is, it may be that response's, which may go on: nothing ends."""

    requests: int = 0
    active: list[Any] = field(default_factory=list)

    def owed(self) -> bool:
        return self.requests > 0 or bool(self.active)

    def server(self, content: bytes) -> None:
        if not any(word in content for word in _TURN_WORDS):
            return
        try:
            event = msgspec.json.decode(content, type=_Event)
        except (msgspec.DecodeError, msgspec.ValidationError):
            return  # not read: nothing ends
        kind = event.type
        rid = event.response.id if event.response is not None else None
        rid = rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None
        if kind == "response.created":
            if self.requests:
                self.requests -= 1
            self.active.append(rid if rid is not None else object())
        elif kind in _RESPONSE_ENDS:
            if rid is not None and rid in self.active:
                self.active.remove(rid)
            elif rid is None and len(self.active) == 1:
                self.active.clear()
        elif kind == "error" and not self.active and self.requests:
            self.requests -= 1


def write_to_client(flow: http.HTTPFlow, raw: bytes, is_text: bool) -> bool:
    """Write one WebSocket message to ``flow``'s client connection now, framed by the flow's
    own WebSocket layer (its wsproto connection to the client) and through the connection's TLS
    layer(s), and add it to ``flow.websocket.messages`` as mitmproxy adds an injected one (before
    the message at hand, which stays last); ``False`` when there is no such open connection.

    ``inject.websocket`` sends from a task of its own, after the message at hand: a close the
    server sends right after would overtake it, and mitmproxy drops injected messages once the
    layer is closed (``proxy/layers/websocket.py``: ``relay_messages`` sends the close with no
    hook before it, then ``done``). Written here, in a hook (the layer is paused on it) or from
    a timer between two events, the bytes go out in order with the layer's own (as
    :func:`toolvocab.addons.stream.send_to_client` does for HTTP; mitmproxy 11.0.2 and 12.x)."""
    from mitmproxy import websocket
    from wsproto.connection import ConnectionState
    from wsproto.events import BytesMessage
    from wsproto.events import TextMessage
    from wsproto.frame_protocol import Opcode

    from toolvocab.addons.stream import _client_layers
    from toolvocab.addons.stream import client_connection
    from toolvocab.addons.stream import through_tunnels

    open_ = client_connection(flow)
    if open_ is None or flow.websocket is None:
        return False
    handler, writer = open_
    layer = _websocket_layer(handler, flow)
    if layer is None:
        return False
    h2server, _, tunnels = _client_layers(handler, flow)
    connection = getattr(layer, "client_ws", None)
    if h2server is not None or connection is None or connection.state is not ConnectionState.OPEN:
        return False
    try:
        event = TextMessage(data=raw.decode("utf-8")) if is_text else BytesMessage(data=raw)
    except UnicodeDecodeError:
        return False
    writer.write(through_tunnels(tunnels, connection.send(event)))
    messages = flow.websocket.messages
    sent = websocket.WebSocketMessage(Opcode.TEXT if is_text else Opcode.BINARY, False, raw, injected=True)
    messages.insert(max(len(messages) - 1, 0), sent)
    return True


def _websocket_layer(handler: Any, flow: http.HTTPFlow) -> Any:
    """``flow``'s WebSocket layer in the connection's layer stack (an HTTP stream's child after
    the upgrade), or ``None``."""
    from toolvocab.addons.stream import connection_layers

    for layer in connection_layers(handler):
        if getattr(layer, "flow", None) is flow and hasattr(layer, "client_ws"):
            return layer
    return None
