"""The stream callable (``flow.response.stream``): upstream chunks through the dialect's stream
rewriter to the client, the stall bound on a held tool block, and the bytes written to the
client connection outside mitmproxy's own path (upstream gone, stall released)."""

from __future__ import annotations

import asyncio
import enum
import logging
from collections.abc import Callable
from collections.abc import Iterator
from typing import Any
from typing import Literal

from mitmproxy import http

from toolvocab.addons.decoding import Codings
from toolvocab.addons.decoding import DecodeError
from toolvocab.addons.state import AnswerNotJSON
from toolvocab.addons.state import FlowState
from toolvocab.dialects.base import NAMED_BACK
from toolvocab.dialects.base import StreamRewriter
from toolvocab.dialects.base import names_given_back
from toolvocab.dialects.sse import RepeatedKey
from toolvocab.dialects.sse import SSEParser
from toolvocab.dialects.sse import Unreadable
from toolvocab.engine import jsonio
from toolvocab.engine.record import FlowRecord
from toolvocab.report import passed_note

logger = logging.getLogger(__name__)

#: Seconds without upstream bytes after which a held tool block goes to the client as it came
#: (``toolvocab_hold_timeout``). A model streaming a long Write's arguments may pause between
#: fragments (load, server-side work): a short bound would give up repairs of calls that were
#: only slow, so the default waits half a minute of complete silence, then lets the client see
#: what arrived. Silence is measured from the last upstream byte, not from the hold's start.
DEFAULT_HOLD_TIMEOUT = 30.0


class Phase(enum.Enum):
    """Where a :class:`StreamCallable` is in its answer. Each phase says what a chunk gets:

    * ``SNIFFING``: only blank bytes so far; buffered until the first real byte says which.
    * ``JSON``: the answer is a JSON body (a ``stream`` request answered whole): buffered,
      rewritten whole at the end.
    * ``STREAMING``: an event stream (or Gemini's streamed array) through the dialect's rewriter.
    * ``PASSING``: the rewrite failed (an internal error): what was held went out as it came, and
      every later chunk passes through.
    * ``ENDED``: the first ``b""`` came; a byte after it (an empty HTTP/2 DATA frame ended the
      rewrite early) is noted once and passes through.
    * ``DONE``: ended, nothing more to note; chunks pass through.
    * ``DRAINED``: everything received went out unchanged (the upstream ended mid-stream, the
      flow finished, or the request's whole read refused a change); chunks pass through untracked.

    :data:`TRANSITIONS` lists every move; :meth:`StreamCallable._to` makes them, and only it."""

    SNIFFING = "sniffing"
    JSON = "json"
    STREAMING = "streaming"
    PASSING = "passing"
    ENDED = "ended"
    DONE = "done"
    DRAINED = "drained"


#: Every phase change a :class:`StreamCallable` makes (h11's ``_state.py`` keeps its transitions
#: as a table the same way): anything else is a bug, and raises.
TRANSITIONS: dict[Phase, frozenset[Phase]] = {
    Phase.SNIFFING: frozenset({Phase.JSON, Phase.STREAMING, Phase.PASSING, Phase.ENDED, Phase.DRAINED}),
    Phase.JSON: frozenset({Phase.PASSING, Phase.ENDED, Phase.DRAINED}),
    Phase.STREAMING: frozenset({Phase.PASSING, Phase.ENDED, Phase.DRAINED}),
    Phase.PASSING: frozenset({Phase.DONE, Phase.DRAINED}),
    Phase.ENDED: frozenset({Phase.DONE, Phase.DRAINED}),
    Phase.DONE: frozenset({Phase.DRAINED}),
    Phase.DRAINED: frozenset({Phase.DRAINED}),
}

#: The phases in which the upstream's bytes are buffered in ``upstream`` whatever ``keep`` says.
_BUFFERING = frozenset({Phase.SNIFFING, Phase.JSON})


class StreamCallable:
    """``flow.response.stream``: feeds upstream chunks to the dialect's rewriter.

    Never raises (mitmproxy G2), never returns ``b""`` mid-stream (G1: it would end an HTTP/1.1
    chunked body). In ``observe`` mode the rewriter still runs (to record decisions) but the
    client gets the upstream bytes as they came. A body that turns out to be JSON (a
    ``stream: true`` request answered without SSE) is buffered and rewritten whole at the end.

    Memory: the whole upstream and sent streams are kept only when ``keep`` (something
    saves flows: ``-w``, ``toolvocab_record``, a UI); otherwise only the bytes received and not
    yet sent (a held tool-call block, the unfinished last event) and, while the first bytes are
    sniffed or a JSON body is buffered, that body. Whether the client's bytes differ from the
    upstream's is tracked as they pass (:attr:`differs`). :meth:`drain` hands out what was
    received and not sent when the upstream ends mid-stream.

    Stall bound: while the rewriter holds a block (:meth:`has_held`), a timer on
    mitmproxy's event loop watches the upstream; when no byte has arrived for
    ``hold_timeout`` seconds, everything received and not sent goes to the client unchanged
    through ``send`` (:func:`send_to_client`: there is no stream callable call to return it
    from), and the rest of the stream passes through as it comes. ``hold_timeout`` 0: never.

    End of stream: mitmproxy calls the callable with ``b""`` at the end, and also for an empty
    HTTP/2 DATA frame (``_http2.py`` passes every ``DataReceived`` on; an upstream that ends
    its stream with an empty DATA frame gives two ``b""`` in a row). The first ``b""`` ends the
    rewrite; later ``b""`` return nothing and later bytes pass through as they came.

    Which of these it is doing is one :class:`Phase` (:attr:`phase`), changed only through
    :data:`TRANSITIONS`.
    """

    def __init__(
        self,
        state: FlowState,
        *,
        observe: bool,
        keep: bool = True,
        hold_timeout: float = 0.0,
        send: Callable[[bytes], str | None] | None = None,
    ) -> None:
        self.state = state
        self.observe = observe
        self.keep = keep
        self.hold_timeout = hold_timeout
        self._send = send
        self._timer: Any = None  # asyncio.TimerHandle while a hold is watched
        self._last_bytes = 0.0  # event-loop time of the last upstream chunk
        self._carry = b""  # released on a stall but not sendable then: goes out with the next piece
        self._after_end: StreamRewriter | None = None  # reads what comes after an early end
        self._reads_after_end = False  # bytes after an early end go through _names_back()
        self._ended_early = False  # an empty chunk ended the rewrite, and bytes came after it
        #: the event-stream block an empty chunk cut (its first part went out as it came), fed
        #: until its end: the rest of it goes as it came too (:meth:`_end_cut`)
        self._cut: SSEParser | None = None
        self._scan_tail = b""  # the last bytes sent, for an alias cut between two pieces
        self._leaked: set[bytes] = set()  # this flow's aliases the client got after an early end
        self.phase = Phase.SNIFFING
        self.rewriter: StreamRewriter | None = state.rewriter()  # None once released
        self.upstream = bytearray()  # whole stream when keep; else only while sniffing / JSON
        self.sent = bytearray()  # what the client got, when keep
        self.changed = False
        self._sniffed_sent = False  # observe: the sniffed bytes went out as they came
        self.noted = False  # the rewriter's error (or a stall) is in the record
        self.noted_contained = False  # the rewriter's contained is in the record
        #: The client's names :meth:`drain` gave back (for its note).
        self.drained_names: list[str] = []
        self._lag = bytearray()  # upstream bytes not yet matched by identical sent bytes
        self._differs = False
        self._unrepaired = 0  # calls of rewriter.unrepaired already noted
        self._fed = b""  # the bytes handed to the rewriter in the current call

    def _to(self, phase: Phase) -> None:
        """Move to ``phase``; ``AssertionError`` for a move :data:`TRANSITIONS` does not list."""
        if phase not in TRANSITIONS[self.phase]:
            raise AssertionError(f"stream phase {self.phase.value} -> {phase.value}")
        self.phase = phase

    @property
    def differs(self) -> bool:
        """True once the client's bytes differ from the upstream's (or some are not sent)."""
        return self._differs or bool(self._lag)

    def __call__(self, chunk: bytes) -> list[bytes]:
        if self.phase is Phase.DRAINED:
            return [chunk] if chunk else []
        if self.phase in (Phase.ENDED, Phase.DONE):
            # An empty HTTP/2 DATA frame ended the rewrite early (or this is the real end after
            # it): what comes now goes as it came but for this flow's aliases, given back.
            if chunk and self.phase is Phase.ENDED:
                self._to(Phase.DONE)
                self._after_end = self._names_back()
                self._reads_after_end = self._after_end is not None
                self._ended_early = True  # said at close(), with what reached the client
            out = self._after(chunk)
            if out and self._ended_early and self._aliases:
                self._scan_aliases(out)
            self._track(chunk, out)
            return out
        consumed = self._consumed()
        self._fed = chunk  # what the rewriter is given in this call (_call widens it when sniffing)
        # an empty chunk mid-stream: the block it cuts goes out as it came (the rewriter's end)
        cut = self._cut_of(self.rewriter) if not chunk and self.phase is Phase.STREAMING else b""
        try:
            out = self._call(chunk)
        except Exception as exc:  # G2: an exception would drop this chunk
            logger.exception("toolvocab: stream rewrite failed; passing the rest through")
            self.state.record.notes.append(
                passed_note(
                    f"internal error in the stream rewrite ({type(exc).__name__}: {exc})",
                    "the client got what was held and the rest of the stream as the upstream sent them",
                )
            )
            out = self._salvage(chunk, consumed)
            if self.phase is not Phase.PASSING:
                self._to(Phase.PASSING)
        if self._carry:
            out = [self._carry + b"".join(out)]
            self._carry = b""
        if (
            (self.state.unverified is not None or self.state.refused is not None)
            and not self.observe
            and self.phase is not Phase.DRAINED
        ):
            # a peeked request not yet read whole, or read and refused (earlier() may read it
            # before the first changed byte: the refusal then still holds every byte back)
            out = self._confirm(chunk, out)
        self._track(chunk, out)
        if not chunk and self.phase is not Phase.DRAINED:
            if self.phase is not Phase.PASSING and self._aliases:
                # the end, or an empty DATA frame: an alias cut there ends after it
                self._scan_tail = b"".join(out)[-self._aliases[0] :]
            if self.phase is Phase.STREAMING and cut:
                self._arm_cut(cut)
            self._to(Phase.DONE if self.phase is Phase.PASSING else Phase.ENDED)
            self._cancel_timer()
        elif self.hold_timeout > 0:
            self._watch_hold()
        return out

    # -- after an early end ------------------------------------------------------------------

    @property
    def _aliases(self) -> tuple[int, list[bytes]] | tuple[()]:
        """``(longest length - 1, each alias as bytes)`` of this flow's upstream aliases, or
        ``()`` when it has none."""
        reverse = self.state.plan.reverse_map if self.state is not None else None
        if not reverse:
            return ()
        names = [alias.encode() for alias in reverse]
        return max(map(len, names)) - 1, names

    def _scan_aliases(self, out: list[bytes]) -> None:
        """Note each upstream alias of this flow in ``out`` (bytes the client gets after an
        early end), across the pieces and the end: what :meth:`close` says reached it."""
        keep, names = self._aliases  # type: ignore[misc]
        data = self._scan_tail + b"".join(out)
        self._leaked.update(name for name in names if name in data)
        self._scan_tail = data[-keep:] if keep else b""

    def close(self) -> None:
        """The flow ended: a rewrite an empty chunk ended before the stream did says so, and
        what the client got after it (as the upstream sent it; with this flow's names given back,
        and any of its aliases that still reached the client: one an empty chunk cut, or one
        the give-back does not read)."""
        if not self._ended_early or self.state is None:
            return
        self._ended_early = False
        got = "the client got the bytes after it as the upstream sent them"
        if self._reads_after_end or self._leaked:
            got += " but for the names this flow sent upstream, given back in the events read whole after it"
        if self._leaked:
            names = ", ".join(sorted(n.decode("utf-8", "replace") for n in self._leaked))
            got += f", though {names} reached it as sent (cut by the empty chunk, or not read)"
        self.state.record.notes.append(
            passed_note("an empty chunk (an empty HTTP/2 DATA frame) ended the rewrite before the stream ended", got)
        )

    def _names_back(self) -> StreamRewriter | None:
        """For the bytes after an empty chunk ended the rewrite early (mitmproxy cannot tell an
        empty HTTP/2 DATA frame from the end): a new rewriter of the dialect that gives this
        flow's aliases back and changes nothing else (its ``give_back``), or ``None`` (they pass
        as they came) when there is nothing to give back, nothing may change (observe, a
        request not read whole or refused), or the dialect cannot."""
        state = self.state
        if self.observe or not state.plan.reverse_map or state.unverified is not None or state.refused is not None:
            return None
        try:
            rewriter = state.rewriter()
            given = rewriter.give_back("an empty chunk ended the rewrite before the stream ended")
        except Exception:
            logger.exception("toolvocab: could not read the stream after an early end")
            return None
        return None if given is None or given else rewriter  # a new rewriter holds nothing

    def _after(self, chunk: bytes) -> list[bytes]:
        """A chunk after the rewrite ended: the rest of a block the empty chunk cut as it came
        (:meth:`_end_cut`); the rest through :meth:`_names_back`'s rewriter when there is one
        (``b""``: its end; a later byte starts another), else as it came."""
        if self._cut is not None and chunk:
            head, chunk = self._end_cut(chunk)
            if not chunk:
                return [head]
            return self._one_piece([head, *self._after(chunk)])
        rewriter = self._after_end
        if rewriter is None and chunk and self._reads_after_end:
            rewriter = self._after_end = self._names_back()
        if rewriter is None:
            return [chunk] if chunk else []
        consumed = rewriter.consumed
        try:
            if chunk:
                return [piece for piece in rewriter.feed(chunk) if piece]
            self._after_end = None
            cut = self._cut_of(rewriter)  # another empty chunk: the block it cuts goes as it came
            out = [piece for piece in rewriter.finish() if piece]
            if cut:
                self._arm_cut(cut)
            return out
        except Exception:  # G2: what it held, and this chunk if it took none of it, as they came
            logger.exception("toolvocab: reading the stream after an early end failed; passing it through")
            self._after_end, self._reads_after_end = None, False
            try:
                out = [piece for piece in rewriter.salvage() if piece]
            except Exception:
                out = []
            if chunk and rewriter.consumed == consumed:
                out.append(chunk)
            return out

    def _end_cut(self, chunk: bytes) -> tuple[bytes, bytes]:
        """``chunk`` after an empty chunk cut an event-stream block: ``(its bytes up to that
        block's end, the rest)``. Its first part went out as it came at the early end, so the
        whole block does (a give-back in its second part alone would change a block the client
        reads as one); the events after it are read whole."""
        parser = self._cut
        assert parser is not None
        before = parser.pending  # the block's bytes so far: none ended it yet
        blocks = parser.feed_raw(chunk)
        if not blocks:
            return chunk, b""
        self._cut = None
        end = len(blocks[0]) - before
        return chunk[:end], chunk[end:]

    @staticmethod
    def _cut_of(rewriter: Any) -> bytes:
        """The bytes after the last event-stream block boundary ``rewriter`` was fed, which its
        ``finish`` sends as they came: what an empty chunk cuts there; ``b""`` for none, for a
        rewriter that is not an event stream's, and for one that reads them as a last event
        (``READS_UNTERMINATED``: Gemini, whose client reads each ``data:`` line as an answer of its
        own, so its rest is read as events of their own too)."""
        unterminated = getattr(rewriter, "unterminated", None)
        if unterminated is None or getattr(rewriter, "READS_UNTERMINATED", False):
            return b""
        return unterminated()

    def _arm_cut(self, cut: bytes) -> None:
        """An empty chunk cut the block whose first bytes are ``cut`` (they went out as they
        came): its rest goes as it came too (:meth:`_end_cut`), and an alias of this flow in its
        first bytes reached the client (:meth:`close` says so)."""
        parser = SSEParser()
        parser.feed_raw(cut)  # a blank line before it is a block of its own, already ended
        if not parser.rest.strip():
            return
        self._cut = parser
        if self._aliases:
            self._leaked.update(name for name in self._aliases[1] if name in cut)

    @staticmethod
    def _one_piece(pieces: list[bytes]) -> list[bytes]:
        joined = b"".join(pieces)
        return [joined] if joined else []

    # -- stall bound ------------------------------------------------------------------------

    def heard(self) -> None:
        """The upstream sent bytes that give the rewriter nothing yet (a piece of a compressed
        block, :class:`DecodedStream`): for the stall bound, it is not silent."""
        if self.hold_timeout > 0 and self.phase is Phase.STREAMING:
            self._watch_hold()

    def has_held(self) -> bool:
        """True while the rewriter holds a block back from the client (a tool call, or text
        that may be one): what the stall bound releases. A partial event alone does not count
        (the client could not use half an event)."""
        if self.phase is not Phase.STREAMING or self.observe or self.rewriter is None:
            return False
        try:
            return bool(self.rewriter.has_held())
        except Exception:
            return False

    def _watch_hold(self) -> None:
        """After a chunk: while a block is held (or its timer runs), note when bytes last came;
        start one timer when a hold begins. A chunk with nothing held costs one check: the
        timer measures silence from the start of a hold, so earlier chunks' times do not count."""
        if self._timer is None and not self.has_held():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on an event loop (a direct call in a test): no bound
        self._last_bytes = loop.time()
        if self._timer is None:
            self._timer = loop.call_later(self.hold_timeout, self._on_timer, loop)

    def _on_timer(self, loop: Any) -> None:
        """The timer fired: release the hold if the upstream has been silent long enough, else
        wait the rest of the bound (one timer per hold, not one per chunk)."""
        self._timer = None
        try:
            if self.phase is not Phase.STREAMING or self.state is None or not self.has_held():
                return
            idle = loop.time() - self._last_bytes
            if idle < self.hold_timeout:
                self._timer = loop.call_later(self.hold_timeout - idle, self._on_timer, loop)
                return
            self._release_stalled(idle)
        except Exception as exc:  # a timer callback must not raise into the event loop
            logger.exception("toolvocab: releasing a stalled hold failed")
            if self.state is not None:
                self.state.record.notes.append(f"stalled hold not released ({type(exc).__name__}: {exc})")

    def _release_stalled(self, idle: float) -> None:
        """Everything held goes to the client now, given up (the rewriter's :meth:`let_go`: each
        call as it came but for an upstream alias named back, then the rest read as usual; for a
        dialect that cannot go on, every byte received as it came and the rest passes through).
        For a request not read whole the bytes released are the upstream's, as they came."""
        why = (  # "(toolvocab_hold_timeout " tells toolvocab replay (replay/flows.py) to skip the flow
            f"the upstream sent no byte for {idle:.1f} s while a tool call was held "
            f"(toolvocab_hold_timeout {self.hold_timeout:g})"
        )
        rewriter = self.rewriter
        data = b"".join(rewriter.let_go(f"the upstream sent no byte for {idle:.1f} s"))
        if (self.state.unverified is not None or self.state.refused is not None) and not bytes(self._lag).startswith(
            data
        ):
            # A request not read whole has no alias to give back (an alias goes in a written
            # request): a release that changed a byte anyway goes as it came, and the rest passes.
            rewriter.salvage()
            data = bytes(self._lag)
            self._unrepaired = len(rewriter.unrepaired)  # no name went back
        if rewriter.error is not None:
            self.noted = True  # the rewriter's "salvaged" is not an error: the note below says it
        rest = (
            "the rest of the stream unrepaired"
            if rewriter.error is not None
            else "the rest of the stream read as usual"
            if rewriter.repairs_after_let_go
            else "the rest of the stream unrepaired but for names given back"
        )
        how = None
        if data and self._send is not None:
            try:
                how = self._send(data)
            except Exception:  # the bytes are not lost: they go out with the next piece
                logger.exception("toolvocab: could not write released bytes to the client")
        # The calls let go are this note's (their sentences say only what it says), the names
        # given back too.
        backs = names_given_back(rewriter.unrepaired[self._unrepaired :])
        self._unrepaired = len(rewriter.unrepaired)
        names = f" but for names given back ({', '.join(backs)})" if backs else ""
        # A Chat call whose name so far only begins an alias stays held (its pieces, joined,
        # are given back at its choice's end: OpenAIChatStream.let_go).
        kept = (
            "; a call whose name so far only begins a name toolvocab sent upstream stays held, to be given back whole"
            if rewriter.error is None and rewriter.has_held()
            else ""
        )
        # Said now, while the upstream is still silent (the flow's own line comes at its end).
        logger.warning(
            "toolvocab: %s; what was held went to the client as it came%s%s · %s",
            why,
            names,
            kept,
            self.state.record.host,
        )
        if kept and not data:
            self.state.record.notes.append(passed_note(why, f"nothing went to the client then{kept}, and {rest}"))
            return
        if how is None:
            self._carry += data  # goes out first with the next piece (or at the end)
            self.state.record.notes.append(
                passed_note(
                    why,
                    (
                        f"the client got the {len(data)} held bytes as the upstream sent them{names}, with the next bytes "
                        f"(its connection took none then){kept}, and {rest}"
                    ),
                )
            )
        else:
            self._track(b"", [data])
            self.state.record.notes.append(
                passed_note(
                    why,
                    f"the client got the {len(data)} held bytes as the upstream sent them{names} ({how}){kept}, and {rest}",
                )
            )

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _confirm(self, chunk: bytes, out: list[bytes]) -> list[bytes]:
        """``out``, unless it would be the first bytes to differ from the upstream's and the
        flow's request, read whole now, refuses any change (:meth:`FlowState.may_change`): then
        every byte received and not yet sent, as it came, and the rest of the stream passes
        through. Before the first difference the client got a prefix of the upstream's bytes,
        so what it has not got is ``_lag`` and this chunk."""
        if self._differs or not out:
            return out
        data = out[0] if len(out) == 1 else b"".join(out)
        pending = bytes(self._lag) + chunk if self._lag else chunk
        if pending.startswith(data) or self.state.may_change():
            return out
        self._to(Phase.DRAINED)  # every later chunk passes through as it came
        self.changed = False
        self._cancel_timer()
        return [pending] if pending else []

    def _track(self, chunk: bytes, out: list[bytes]) -> None:
        if self.keep:
            if self.phase not in _BUFFERING:  # while sniffing / buffering JSON, _call keeps it
                self.upstream += chunk
            for piece in out:
                self.sent += piece  # stored in the flow at the end (G6)
        if self._differs:
            return
        lag = self._lag
        lag += chunk
        for piece in out:
            if not lag.startswith(piece):
                self._differs = True
                lag.clear()
                return
            del lag[: len(piece)]

    def drain(self) -> bytes:
        """Every byte received and not yet sent, in order (a held tool-call block, the unfinished
        last event, a buffered body), unchanged but for a name toolvocab sent upstream for one of
        the client's tools, given back (the rewriter's ``let_go``, as at a stall; the names are
        :attr:`drained_names`); afterwards the callable passes chunks through. For an upstream
        that ends mid-stream (mitmproxy calls no ``b""`` then: G3). The caller sends them, and
        says so with :meth:`delivered` (what the client got is saved)."""
        self._cancel_timer()
        if self.phase is Phase.DRAINED:
            return b""
        out: list[bytes] = [self._carry] if self._carry else []
        self._carry = b""
        try:
            if self.phase in _BUFFERING:
                out += [bytes(self.upstream)] if not self._sniffed_sent else []
            elif self.phase is Phase.STREAMING and not self.observe:
                out += self._drain_rewriter()
            elif self._after_end is not None:  # bytes read after an early end (_names_back)
                after, self._after_end = self._after_end, None
                out += [*after.let_go("the upstream ended the stream mid-way"), *after.salvage()]
            # ENDED, DONE: the rewrite ended at an empty chunk; PASSING: what was held went out
        except Exception:
            logger.exception("toolvocab: drain failed")
        self._to(Phase.DRAINED)
        return b"".join(out)

    def _drain_rewriter(self) -> list[bytes]:
        """What the rewriter holds and the framer's remainder, given up for good: each held call
        as it came but for an upstream alias named back (a request read whole is the only one
        that sent aliases: any other's release is the bytes as they came)."""
        rewriter = self.rewriter
        if self.state.unverified is None and self.state.refused is None and rewriter.error is None:
            given = rewriter.let_go("the upstream ended the stream mid-way")
            self.drained_names = names_given_back(rewriter.unrepaired[self._unrepaired :])
            self._unrepaired = len(rewriter.unrepaired)  # the drain's note says them
            return [*given, *rewriter.salvage()]
        return list(rewriter.salvage())

    def delivered(self, data: bytes) -> None:
        """``data`` (from :meth:`drain`) reached the client connection: it counts as sent."""
        if data:
            self._track(b"", [data])

    def release(self) -> None:
        """The flow is finished: drop the buffers and the links to the flow's state (the flow
        keeps this object as ``response.stream``; no cycle through it outlives the flow). Any
        later chunk would pass through unchanged."""
        self._cancel_timer()
        self._send = None
        self._to(Phase.DRAINED)
        self.upstream = bytearray()
        self.sent = bytearray()
        self._lag = bytearray()
        self.rewriter = None
        self._after_end, self._reads_after_end, self._cut = None, False, None
        self.state = None  # type: ignore[assignment]

    def _consumed(self) -> int:
        return self.rewriter.consumed if self.rewriter is not None else 0

    def _salvage(self, chunk: bytes, consumed_before: int) -> list[bytes]:
        """Every upstream byte not yet sent, unchanged, after an internal error (the caller then
        moves to ``PASSING``)."""
        if self.phase in _BUFFERING:
            # Nothing was sent yet: the buffered body (this chunk included) goes out whole.
            data = bytes(self.upstream)
            # keep: _track adds this chunk to the kept stream once the phase has moved on
            self.upstream = bytearray(data[: len(data) - len(chunk)]) if self.keep else bytearray()
            return [data] if data else []
        if self.observe:
            # Observe sent every earlier upstream byte as it came: only what this call was
            # given is not sent (this chunk, and the blank bytes sniffed before it).
            return [self._fed] if self._fed else []
        out: list[bytes] = []
        try:
            if self.rewriter is not None:
                out = list(self.rewriter.salvage())
        except Exception:
            logger.exception("toolvocab: salvage failed")
        if self._fed and self._consumed() == consumed_before:
            out.append(self._fed)  # the rewriter never took in what it was given in this call
        joined = b"".join(out)
        return [joined] if joined else []

    def _call(self, chunk: bytes) -> list[bytes]:
        if self.phase in _BUFFERING:
            self.upstream += chunk
        if self.phase is Phase.PASSING:
            return [chunk] if chunk else []
        if self.phase is Phase.SNIFFING:
            head = jsonio.split_bom(bytes(self.upstream))[1].lstrip()
            if chunk and (not head or jsonio.BOM.startswith(head)):
                return []  # only blank bytes (or a byte order mark's first) so far: wait for the first real one
            # A JSON object is a whole (non-stream) answer; an array is Gemini's streamed array.
            self._to(Phase.JSON if head[:1] == b"{" else Phase.STREAMING)
            if self.phase is Phase.STREAMING:
                # Send what was held while sniffing through the stream rewriter.
                held = bytes(self.upstream)
                if not self.keep:
                    self.upstream = bytearray()
                else:
                    # _track adds each chunk from now on; this one is already in.
                    self.upstream = bytearray(held[: len(held) - len(chunk)])
                self._fed = held  # the blank bytes sniffed before it, and this chunk
                out = self.rewriter.feed(held) if held else []
                if not chunk:
                    out += self.rewriter.finish()
                return self._emit(out, chunk, sniffed=held)
        if self.phase is Phase.JSON:
            if chunk:
                return []
            body = bytes(self.upstream)
            out = self._rewrite_json(body)
            if self.state.refused is not None and not self.observe:
                # the request's whole read refused a change (FlowState.rewrite_json asked it
                # before writing): every later byte passes as it came, as _confirm leaves it
                self._to(Phase.DRAINED)
                self._cancel_timer()
            return [out] if out else []
        out = self.rewriter.feed(chunk) if chunk else self.rewriter.finish()
        return self._emit(out, chunk)

    def _emit(self, out: list[bytes], chunk: bytes, sniffed: bytes | None = None) -> list[bytes]:
        # A rewriter that contained an error of its own keeps being fed: it passes the rest
        # through itself, after the bytes it still holds.
        if self.rewriter.error and not self.noted:
            self.noted = True
            self.state.record.notes.append(rewriter_note(self.rewriter.error))
        if self.rewriter.contained and not self.noted_contained:
            self.noted_contained = True
            self.state.record.notes.append(rewriter_note(self.rewriter.contained, names_back=True))
        if len(self.rewriter.unrepaired) > self._unrepaired:  # the record copied only for a note
            self._unrepaired = note_unrepaired(self.rewriter, self.state.record, self._unrepaired)
        if self.observe:
            # The client gets the upstream bytes as they came (held sniffing bytes included).
            if self._sniffed_sent:
                return [chunk] if chunk else []
            self._sniffed_sent = True
            data = sniffed if sniffed is not None else chunk
            return [data] if data else []
        if len(out) > 1:
            joined = b"".join(out)  # one piece per chunk: mitmproxy writes each piece separately
            return [joined] if joined else []
        return out

    def _rewrite_json(self, whole: bytes) -> bytes:
        """A stream request's answer that came as one JSON body (:meth:`FlowState.rewrite_json`):
        the bytes the client gets."""
        try:
            new = self.state.rewrite_json(whole, observe=self.observe)
        except AnswerNotJSON:
            self.state.record.notes.append("answer body is not JSON; passed through")
            return whole
        except Exception as exc:
            logger.exception("toolvocab: JSON rewrite failed; answer passed through")
            self.state.record.notes.append(
                passed_note(
                    f"internal error in the answer's rewrite ({type(exc).__name__}: {exc})",
                    "the client got the answer as the upstream sent it",
                )
            )
            return whole
        if new is None:
            return whole
        self.changed = True
        return new


class KeptStream:
    """``flow.response.stream`` for an answer that streams unread while something saves or shows
    flows: an event stream toolvocab leaves alone (mode ``off``, a host outside
    ``toolvocab_hosts``, a request it does not handle), and a handled flow's stream it cannot read
    (a coding not read as it streams, an encoded one in observe mode or for a request the strict
    read refused). Each chunk goes to the client as it arrives, unchanged, and is kept, so the
    saved flow has the body mitmproxy would have kept had it buffered the answer
    (:meth:`keep_in`). ``limit`` (bytes; ``None``: none): the most kept — for a flow toolvocab
    leaves alone, the least of the user's ``stream_large_bodies`` and ``body_size_limit``
    (:func:`keep_limit`); an answer past it is kept not at all, as mitmproxy keeps no body it
    streamed. Never raises (G2)."""

    __slots__ = ("kept", "size", "limit")

    def __init__(self, limit: int | None = None) -> None:
        self.kept: list[bytes] | None = []
        self.size = 0
        self.limit = limit

    def __call__(self, data: bytes) -> bytes:
        """``data`` as it came; kept while the whole stays within ``limit``."""
        if self.kept is not None and data:
            self.size += len(data)
            if self.limit is not None and self.size > self.limit:
                self.kept = None  # past the user's limit: mitmproxy would have kept none of it
            else:
                self.kept.append(data)
        return data

    @staticmethod
    def keep_in(flow: http.HTTPFlow) -> None:
        """At the flow's end (its ``response`` or ``error`` hook): the kept bytes become the
        response's ``raw_content``, as they came (still encoded, if the upstream encoded them),
        unless something set a body since, or the flow ended in an error before any byte came
        (mitmproxy refused the answer at its headers: ``body_size_limit``): no body, not an empty
        one. The stream keeps nothing after (the flow holds its body once). Nothing for a flow
        whose answer another stream setting took."""
        resp = flow.response
        stream = resp.stream if resp is not None else None
        if isinstance(stream, KeptStream):
            if (
                stream.kept is not None
                and resp.raw_content is None  # type: ignore[union-attr]
                and (stream.size or flow.error is None)
            ):
                resp.raw_content = b"".join(stream.kept)  # type: ignore[union-attr]
            stream.kept = None


def keep_limit(options: Any, content_length: str | None) -> int | None | Literal[False]:
    """The most bytes a :class:`KeptStream` keeps, from mitmproxy's ``stream_large_bodies`` and
    ``body_size_limit`` in ``options`` (human sizes, ``mitmproxy.utils.human.parse_size``; unset:
    no limit), or ``False`` when the answer's ``content_length`` (its header, as sent) is already
    past it: then nothing is kept, as mitmproxy keeps nothing of a body it streams or refuses."""
    from mitmproxy.utils import human

    limits = []
    for name in ("stream_large_bodies", "body_size_limit"):
        try:
            size = human.parse_size(getattr(options, name, None))
        except ValueError:
            size = None
        if size is not None:
            limits.append(size)
    limit = min(limits) if limits else None
    if limit is not None and content_length is not None:
        try:
            if int(content_length.strip()) > limit:
                return False
        except ValueError:
            pass
    return limit


class DecodedStream:
    """``flow.response.stream`` for an answer whose ``content-encoding`` toolvocab reads as it
    streams (:mod:`toolvocab.addons.decoding`): each chunk is decoded and handed to ``inner``
    (the flow's :class:`StreamCallable`), so the client gets the stream decoded (the caller has
    taken ``content-encoding`` off the headers). ``raw``: the upstream's bytes as they came,
    kept when ``keep`` (something saves the flow: a replay starts from them).

    Whatever the client gets is read by ``inner``, since nothing it gets is encoded:

    * an answer whose first bytes are not the coding (a server that labels plain bytes): every
      byte, from the first, as it came;
    * bytes after the end of the last member or frame that begin no other (padding, junk): dropped,
      as a client's own decoder drops them, and noted;
    * bytes that stop decoding mid-way (a corrupt body the client could not have read either):
      what decoded before them, then the stream ends there for the client (the rest dropped),
      and the record says so.

    A chunk that decodes to nothing yet still counts as the upstream's activity for the stall
    bound (:meth:`StreamCallable.heard`). The bytes before the first decoded byte are kept for
    the first case up to :data:`BEFORE_MAX` (a gzip header's name or comment has no length
    bound, RFC 1952 §2.3.1); past it, bytes that then fail to decode end the stream as the
    third case does. Never raises (G2)."""

    #: The most bytes kept before the first decoded byte (:class:`DecodedStream`), in bytes.
    BEFORE_MAX = 1 << 20

    def __init__(self, inner: StreamCallable, decoder: Codings, *, keep: bool) -> None:
        self.inner = inner
        self.decoder = decoder
        self.raw: bytearray | None = bytearray() if keep else None
        #: the bytes received before the first decoded byte; ``None`` past :data:`BEFORE_MAX`
        self._before: bytearray | None = bytearray()
        self._started = False  # a byte has decoded
        self._plain = False  # not the coding from the first byte: read as it came
        self._dropping = False  # the rest cannot be decoded: not sent
        self._cut = False  # the last chunk was b"" while the coding had not ended (close)

    def __call__(self, chunk: bytes) -> list[bytes]:
        if self.raw is not None:
            self.raw += chunk
        if self._plain:
            return self.inner(chunk)
        if not chunk:
            # the end, or an empty HTTP/2 DATA frame (mitmproxy cannot tell them apart): said at
            # the flow's end (close) when no byte came after it
            self._cut = not self._dropping and not self.decoder.finished
            return self.inner(b"")
        self._cut = False
        if self._dropping:
            self.inner.heard()
            return []
        if not self._started and self._before is not None:
            self._before += chunk
            if len(self._before) > self.BEFORE_MAX:
                self._before = None  # no longer read as it came, should the decoding fail
        try:
            data = self.decoder.decode(chunk)
        except Exception as exc:  # DecodeError for bytes not of the coding; anything else: G2
            return self._failed(exc)
        if not data:
            self.inner.heard()
            return []
        if not self._started:
            self._started, self._before = True, None
        return self.inner(data)

    def close(self) -> None:
        """The flow ended: a stream whose last chunk ended it before its coding's end (a cut
        gzip member, a brotli stream without its last block) says so in the record."""
        if self._cut:
            self._cut = False
            self._note(f"the {self.decoder.coding}-encoded answer ended before its end (the client got what decoded)")

    def _failed(self, exc: Exception) -> list[bytes]:
        decoded = exc.decoded if isinstance(exc, DecodeError) else b""
        if not self._started and not decoded and self._before is not None:
            self._plain = True
            before, self._before = bytes(self._before), bytearray()
            self._note(
                f"the answer is labelled {self.decoder.coding} but its first bytes are not ({exc}): read as it came"
            )
            return self.inner(before)
        self._dropping = True
        if self.decoder.after_end:
            self._note(
                f"bytes after the last whole {self.decoder.coding} member or frame are not {self.decoder.coding} "
                f"({exc}): dropped, as a client's own decoder drops them"
            )
        else:
            self._note(
                passed_note(
                    f"the answer stopped decoding ({exc})",
                    "the client got what decoded before, and the stream ended there for it",
                )
            )
        return self.inner(decoded) if decoded else []

    def _note(self, text: str) -> None:
        state = self.inner.state
        if state is not None:
            state.record.notes.append(text)


def rewriter_note(error: str, *, names_back: bool = False) -> str:
    """The record's note for a stream rewriter's ``error`` (what it contained: the rest of the
    stream passed through as it came) or, ``names_back``, its ``contained`` (the same, but for
    the names this flow sent upstream, given back: ``EventStreamRewriter.give_back``): a
    give-up (:func:`toolvocab.report.passed_note`)."""
    but = " but for the names this flow sent upstream, given back" if names_back else ""
    if error.startswith(f"{RepeatedKey.__name__}: "):
        return passed_note(
            "an event's data repeats a key (which value the client reads is its parser's choice)",
            f"the client got that event as it came, what was held and the rest of the stream as the upstream sent them{but}",
        )
    if error.startswith(f"{Unreadable.__name__}: "):
        return passed_note(
            "an event inside a tool call the stream held is not JSON (the call cannot be read whole)",
            f"the client got that event as it came, what was held and the rest of the stream as the upstream sent them{but}",
        )
    return passed_note(
        f"internal error in the stream rewrite ({error})",
        "the client got what was held and the rest of the stream as the upstream sent them",
    )


def note_unrepaired(rewriter: StreamRewriter, record: FlowRecord, seen: int) -> int:
    """Note each tool call the stream rewriter let go unresolved since the ``seen`` first
    (its ``unrepaired`` list, :class:`toolvocab.dialects.sse.EventStreamRewriter`: a held call that
    could not complete — events out of order, the stream's end); how many it has noted now."""
    unrepaired = rewriter.unrepaired
    for why in unrepaired[seen:]:
        but = " but for its name" if NAMED_BACK in why else ""
        record.notes.append(passed_note(why, f"the client got the call as the upstream sent it{but}"))
    return max(seen, len(unrepaired))


def send_to_client(flow: http.HTTPFlow, data: bytes) -> str | None:
    """Write ``data`` as more of ``flow``'s response body straight to the client connection,
    framed as mitmproxy frames it (HTTP/1 chunked or as is; an HTTP/2 DATA frame) and through
    the client connection's TLS layer(s); the description of what was done, or ``None`` when
    the client connection (or its HTTP/2 stream) is gone or the body cannot grow.

    For the ``error`` hook, and for the stall bound's timer (:class:`StreamCallable`) between
    two events of the connection: mitmproxy has no API to send body bytes after the upstream
    failed or outside the stream callable, and no layer is running at either point (they are
    paused on the hook; the timer runs between events, after the layers' writes of the last
    one), so this does what they would do, in order with their bytes: the HTTP framing (on
    HTTP/2 through mitmproxy's own buffered ``h2_conn``, which keeps flow control and order),
    then each tunnel layer's ``send_data`` (TLS encryption), then the connection's
    transport (``proxyserver.connections[client id].transports[client]``; mitmproxy 11.0.2
    and 12.3.1).
    """
    open_ = client_connection(flow)
    if open_ is None or flow.response is None:
        return None
    handler, writer = open_
    h2server, stream_id, tunnels = _client_layers(handler, flow)
    if h2server is not None:
        import h2.exceptions

        try:
            h2server.h2_conn.send_data(stream_id, data)
        except h2.exceptions.ProtocolError:  # the client reset or closed this stream (StreamClosedError)
            return None
        framed, how = h2server.h2_conn.data_to_send(), "HTTP/2 DATA"
    elif "chunked" in flow.response.headers.get("transfer-encoding", "").lower():
        framed, how = b"%x\r\n%s\r\n" % (len(data), data), "HTTP/1.1 chunk"
    elif "content-length" in flow.response.headers:
        return None  # a length-delimited body cannot grow
    else:
        framed, how = data, "HTTP/1 body bytes"
    writer.write(through_tunnels(tunnels, framed))
    return how + (" over TLS" if tunnels else "")


def client_connection(flow: http.HTTPFlow) -> tuple[Any, Any] | None:
    """``flow``'s client connection handler (``proxyserver.connections[client id]``) and its
    transport's writer, or ``None`` when the connection is gone or closing, or the flow is a
    replay (``flow.is_replay == "request"``: it has no client; mitmproxy's ``ReplayHandler``
    runs it with a copy of the recorded client connection, whose id is the live connection's the
    flow came from while that is still open: ``mitmproxy/addons/clientplayback.py``)."""
    from mitmproxy import ctx

    if flow.is_replay == "request":
        return None
    server = ctx.master.addons.get("proxyserver")
    handler = getattr(server, "connections", {}).get(flow.client_conn.id) if server is not None else None
    if handler is None:
        return None
    writer = getattr(handler.transports.get(flow.client_conn), "writer", None)
    if writer is None or writer.is_closing():
        return None
    return handler, writer


def through_tunnels(tunnels: list[Any], data: bytes) -> bytes:
    """``data`` as the client connection carries it: through each tunnel layer's ``send_data``
    (TLS encryption), innermost first (:func:`_client_layers`)."""
    from mitmproxy.proxy import commands

    for tunnel in tunnels:
        data = b"".join(c.data for c in tunnel.send_data(data) if isinstance(c, commands.SendData))
    return data


def connection_layers(handler: Any) -> Iterator[Any]:
    """Every layer of a connection handler's layer stack, outer before inner along each branch:
    children (``child_layer``, ``layer``, a delegated ``_handle_event``'s owner) and an HTTP
    layer's streams (in regular mode the client's TLS layer sits under the CONNECT stream; a
    WebSocket layer is an upgraded stream's child). At most 200 layers."""
    seen: set[int] = set()
    todo = [getattr(handler, "layer", None)]
    while todo:
        layer = todo.pop()
        if layer is None or id(layer) in seen or len(seen) > 200:
            continue
        seen.add(id(layer))
        yield layer
        streams = getattr(layer, "streams", None)
        if isinstance(streams, dict):
            todo.extend(streams.values())
        for name in ("child_layer", "layer"):
            todo.append(getattr(layer, name, None))
        todo.append(getattr(getattr(layer, "_handle_event", None), "__self__", None))


def _client_layers(handler: Any, flow: http.HTTPFlow) -> tuple[Any, int, list[Any]]:
    """``flow``'s client-side HTTP/2 connection layer and stream id (``None, 0`` for HTTP/1)
    and the tunnel layers (TLS) on the client connection, innermost first
    (:func:`connection_layers`)."""
    h2server, stream_id, tunnels = None, 0, []
    for layer in connection_layers(handler):
        if getattr(layer, "tunnel_connection", None) is flow.client_conn and callable(
            getattr(layer, "send_data", None)
        ):
            tunnels.append(layer)
        streams = getattr(layer, "streams", None)
        connections = getattr(layer, "connections", None)
        if h2server is None and isinstance(streams, dict) and isinstance(connections, dict):
            for sid, stream in streams.items():
                if getattr(stream, "flow", None) is flow:
                    conn = connections.get(flow.client_conn)
                    if conn is not None and hasattr(conn, "h2_conn"):
                        h2server, stream_id = conn, sid
    return h2server, stream_id, tunnels[::-1]
