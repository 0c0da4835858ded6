"""toolvocab: repair LLM tool calls between coding agents and LLM APIs.

A mitmproxy addon. Between any client and any upstream, with no protocol conversion, it
resolves every tool call in the answer against the tools the client declared in that request:
a name the client never declared is renamed to the one declared tool it must mean (and its
arguments fitted to that tool's schema), or left alone when no single tool fits. In ``auto``
mode it also adds one sentence to the system prompt naming declared tools the prompt does not
mention. Each handled flow carries a record in ``flow.metadata["toolvocab"]``; changed flows are
marked and commented.

Run::

    mitmdump -s addon/toolvocab.py --mode reverse:https://api.anthropic.com --listen-host 127.0.0.1
    ANTHROPIC_BASE_URL=http://127.0.0.1:8080 claude

Options: ``toolvocab_mode`` (auto | repair | observe | off), ``toolvocab_hosts`` (regex),
``toolvocab_profiles`` (a TOML file of rename profiles), ``toolvocab_hold_timeout`` (seconds of
upstream silence before a held tool block goes out as it came), and others (README "Options").
"""

from __future__ import annotations

import logging
import os
import re
import time
from collections.abc import Callable
from typing import Any

import orjson
from mitmproxy import command
from mitmproxy import exceptions
from mitmproxy import flow as mflow
from mitmproxy import http
from mitmproxy.log import ALERT

# mitmproxy puts this file's folder on sys.path, so the sibling packages import by their own
# names (relative imports fail in a -s script: mitmproxy G7).
import tvcli
import tvdialects
import tvhosts
from tvui import ToolVocabUI
from tvui import change_kind
from tvui import left_line
from tvui import log_line
from tvdialects.base import Dialect
from tvdialects.base import JSONFrame
from tvdialects.sse import RepeatedKey
from tvengine.ladder import Toolset
from tvengine.ladder import resolve
from tvengine.models import Action
from tvengine.models import Decision
from tvengine.models import ToolCall
from tvengine.plan import Plan
from tvengine.clients import identify_client
from tvengine.errors import classify_tool_results
from tvengine.export import SHAPES
from tvengine import jsonio
from tvengine.grammar import grammar_for
from tvengine.plan import make_plan
from tvengine.profiles import ProfileError
from tvengine.profiles import ProfileSet
from tvengine.profiles import is_access_gate
from tvengine.profiles import load_profiles
from tvengine.record import FlowRecord

logger = logging.getLogger(__name__)

MODES = ("auto", "repair", "observe", "off")
METADATA_KEY = "toolvocab"
METADATA_REQUEST = "toolvocab_request"  # the client's request body, when toolvocab changed it
METADATA_UPSTREAM = "toolvocab_upstream"  # the upstream's answer bytes, when toolvocab changed them
METADATA_DIFF = "toolvocab_diff"  # the before/after of every tool call, as text
MARK_CHANGED = ":wrench:"
MARK_OBSERVED = ":eyes:"
#: Seconds without upstream bytes after which a held tool block goes to the client as it came
#: (``toolvocab_hold_timeout``). A model streaming a long Write's arguments may pause between
#: fragments (load, server-side work): a short bound would give up repairs of calls that were
#: only slow, so the default waits half a minute of complete silence, then lets the client see
#: what arrived. Silence is measured from the last upstream byte, not from the hold's start.
DEFAULT_HOLD_TIMEOUT = 30.0


class _FlowState:
    """Per-flow Python state between hooks (never stored in metadata).

    A plain class: ``@dataclass`` fails in a ``-s`` script, whose module is not in
    ``sys.modules`` under its own name while it loads.
    """

    def __init__(self, dialect: Dialect, tools: Toolset, plan: Plan, record: FlowRecord, wants_stream: bool) -> None:
        self.dialect = dialect
        self.tools = tools
        self.plan = plan
        self.record = record
        self.wants_stream = wants_stream
        self.stream: _StreamCallable | None = None
        self.ws_rewriter: Any = None
        self.original_request: bytes | None = None  # the client's body, when it was changed
        self.upstream_raw: bytes | None = None  # the upstream's answer, when it was changed
        #: The request as sent and its key count, until :meth:`request_unique` has looked
        #: (the same bytes object the flow holds: no copy).
        self.request_raw: bytes | None = None
        self.request_keys = 0
        self._unique: bool | None = None

    def __call__(self, call: ToolCall) -> Decision:
        """The dialects' ``Resolver``: the ladder over this flow's tools; records the decision.
        ``self.tools`` is there too, for dialects that lift calls out of text."""
        return self.resolver(call)

    def resolver(self, call: ToolCall) -> Decision:
        decision = resolve(call, self.tools, self.plan.reverse_map)
        if decision.changed and not self.request_unique():
            decision = Decision(
                name=decision.name,
                namespace=decision.namespace,
                call_id=decision.call_id,
                action=Action.LEAVE,
                step=decision.step,
                candidates=decision.candidates,
                reason="the request repeats a key in one object: which of the values the upstream read is its "
                "own choice, so the tools this flow declares are not certain; left as sent",
            )
        self.record.decisions.append(decision)
        return decision

    def request_unique(self) -> bool:
        """Whether the request body wrote no key twice in one object; looked at once, the first
        time an answer would change (issue 11: the scan of the body is paid by flows that change,
        not by every request)."""
        if self._unique is None:
            raw, self.request_raw = self.request_raw, None
            self._unique = raw is None or not jsonio.repeats_key(raw, self.request_keys)
        return self._unique


class _StreamCallable:
    """``flow.response.stream``: feeds upstream chunks to the dialect's rewriter.

    Never raises (mitmproxy G2), never returns ``b""`` mid-stream (G1: it would end an HTTP/1.1
    chunked body). In ``observe`` mode the rewriter still runs (to record decisions) but the
    client gets the upstream bytes as they came. A body that turns out to be JSON (a
    ``stream: true`` request answered without SSE) is buffered and rewritten whole at the end.

    Memory (issue 11): the whole upstream and sent streams are kept only when ``keep`` (something
    saves flows: ``-w``, ``toolvocab_record``, a UI); otherwise only the bytes received and not
    yet sent (a held tool-call block, the unfinished last event) and, while the first bytes are
    sniffed or a JSON body is buffered, that body. Whether the client's bytes differ from the
    upstream's is tracked as they pass (:attr:`differs`). :meth:`drain` hands out what was
    received and not sent when the upstream ends mid-stream (issue 13).

    Stall bound (issue 13): while the rewriter holds a block (:meth:`has_held`), a timer on
    mitmproxy's event loop watches the upstream; when no byte has arrived for
    ``hold_timeout`` seconds, everything received and not sent goes to the client unchanged
    through ``send`` (:func:`_send_to_client`: there is no stream callable call to return it
    from), and the rest of the stream passes through as it comes. ``hold_timeout`` 0: never.

    End of stream: mitmproxy calls the callable with ``b""`` at the end, and also for an empty
    HTTP/2 DATA frame (``_http2.py`` passes every ``DataReceived`` on; an upstream that ends
    its stream with an empty DATA frame gives two ``b""`` in a row). The first ``b""`` ends the
    rewrite; later ``b""`` return nothing and later bytes pass through as they came.
    """

    def __init__(
        self,
        state: _FlowState,
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
        self.ended = False  # the first b"" came
        self.stalled = False
        self.rewriter = state.dialect.stream_rewriter(state, state.plan)
        self.upstream = bytearray()  # whole stream when keep; else only while sniffing / JSON
        self.sent = bytearray()  # what the client got, when keep
        self.json_mode: bool | None = None  # decided on the first non-blank byte
        self.changed = False
        self.failed = False
        self.drained = False
        self._sniffed_sent = False
        self.noted = False
        self._lag = bytearray()  # upstream bytes not yet matched by identical sent bytes
        self._differs = False

    @property
    def differs(self) -> bool:
        """True once the client's bytes differ from the upstream's (or some are not sent)."""
        return self._differs or bool(self._lag)

    def __call__(self, chunk: bytes) -> list[bytes]:
        if self.drained:
            return [chunk] if chunk else []
        if self.ended:
            # An empty HTTP/2 DATA frame ended the rewrite early (or this is the real end after
            # it): what comes now passes through as it came.
            if chunk and not self.failed:
                self.failed = True
                self.state.record.notes.append("bytes after an empty chunk (an empty HTTP/2 DATA frame) passed through as they came")
            out = [chunk] if chunk else []
            self._track(chunk, out)
            return out
        consumed = self._consumed()
        try:
            out = self._call(chunk)
        except Exception as exc:  # G2: an exception would drop this chunk
            logger.exception("toolvocab: stream rewrite failed; passing the rest through")
            self.failed = True
            self.state.record.notes.append(f"stream rewrite failed ({type(exc).__name__}: {exc}); rest passed through")
            out = self._salvage(chunk, consumed)
        if self._carry:
            out = [self._carry + b"".join(out)]
            self._carry = b""
        self._track(chunk, out)
        if not chunk:
            self.ended = True
            self._cancel_timer()
        elif self.hold_timeout > 0:
            self._watch_hold()
        return out

    # -- stall bound ------------------------------------------------------------------------

    def has_held(self) -> bool:
        """True while the rewriter holds a block back from the client (a tool call, or text
        that may be one): what the stall bound releases. A partial event alone does not count
        (the client could not use half an event)."""
        if self.json_mode is not False or self.observe or self.failed or self.rewriter is None:
            return False
        try:
            return bool(self.rewriter.has_held())
        except Exception:
            return False

    def _watch_hold(self) -> None:
        """After a chunk: note when bytes last came and keep one timer while a block is held."""
        import asyncio

        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # not on an event loop (a direct call in a test): no bound
        self._last_bytes = loop.time()
        if self._timer is None and self.has_held():
            self._timer = loop.call_later(self.hold_timeout, self._on_timer, loop)

    def _on_timer(self, loop: Any) -> None:
        """The timer fired: release the hold if the upstream has been silent long enough, else
        wait the rest of the bound (one timer per hold, not one per chunk)."""
        self._timer = None
        try:
            if self.drained or self.ended or self.state is None or not self.has_held():
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
        """Everything received and not sent goes to the client unchanged, now; the rest of the
        stream passes through (the rewriter's :meth:`salvage`)."""
        data = b"".join(self.rewriter.salvage())
        self.stalled = True
        self.noted = True  # the rewriter's "salvaged" is not an error: the note below says it
        how = None
        if data and self._send is not None:
            try:
                how = self._send(data)
            except Exception:  # the bytes are not lost: they go out with the next piece
                logger.exception("toolvocab: could not write released bytes to the client")
        seconds = f"{idle:.1f}"
        if how is None:
            self._carry += data  # goes out first with the next piece (or at the end)
            self.state.record.notes.append(
                f"held tool block released after {seconds} s without upstream bytes; passed through "
                "(the client connection took no bytes then: they go out with the next ones)"
            )
            return
        self._track(b"", [data])
        self.state.record.notes.append(
            f"held tool block released after {seconds} s without upstream bytes; passed through ({len(data)} bytes, {how})"
        )

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _track(self, chunk: bytes, out: list[bytes]) -> None:
        if self.keep:
            if self.json_mode is False:  # while sniffing / buffering JSON, _call keeps it
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
        """Every byte received and not yet sent, unchanged and in order (a held tool-call block,
        the unfinished last event, a buffered body); afterwards the callable passes chunks
        through. For an upstream that ends mid-stream (mitmproxy calls no ``b""`` then: G3)."""
        self._cancel_timer()
        if self.drained:
            return b""
        out: list[bytes] = [self._carry] if self._carry else []
        self._carry = b""
        try:
            if self.ended:
                pass  # the rewrite ended at an empty chunk: nothing is held any more
            elif self.json_mode is not False:
                out += [bytes(self.upstream)] if not self._sniffed_sent else []
            elif not self.observe and not self.failed:
                out += list(self.rewriter.salvage())
        except Exception:
            logger.exception("toolvocab: drain failed")
        self.drained = True
        data = b"".join(out)
        self._track(b"", [data] if data else [])
        return data

    def release(self) -> None:
        """The flow is finished: drop the buffers and the links to the flow's state (the flow
        keeps this object as ``response.stream``; no cycle through it outlives the flow). Any
        later chunk would pass through unchanged."""
        self._cancel_timer()
        self._send = None
        self.drained = True
        self.upstream = bytearray()
        self.sent = bytearray()
        self._lag = bytearray()
        self.rewriter = None
        self.state = None  # type: ignore[assignment]

    def _consumed(self) -> int:
        return int(getattr(self.rewriter, "consumed", 0))

    def _salvage(self, chunk: bytes, consumed_before: int) -> list[bytes]:
        """Every upstream byte not yet sent, unchanged, after an internal error."""
        if self.json_mode is not False:
            # Nothing was sent yet: the buffered body (this chunk included) goes out whole.
            data = bytes(self.upstream)
            self.json_mode = False  # from here on chunks pass through
            if not self.keep:
                self.upstream = bytearray()
            return [data] if data else []
        out: list[bytes] = []
        try:
            salvage = getattr(self.rewriter, "salvage", None)
            if salvage is not None:
                out = list(salvage())
        except Exception:
            logger.exception("toolvocab: salvage failed")
        if chunk and self._consumed() == consumed_before:
            out.append(chunk)  # the rewriter never took this chunk in
        joined = b"".join(out)
        return [joined] if joined else []

    def _call(self, chunk: bytes) -> list[bytes]:
        if self.json_mode is not False:
            self.upstream += chunk
        if self.failed:
            return [chunk] if chunk else []
        if self.json_mode is None:
            head = bytes(self.upstream).lstrip()
            if not head and chunk:
                return []  # only blank bytes so far: wait for the first real one
            # A JSON object is a whole (non-stream) answer; an array is Gemini's streamed array.
            self.json_mode = head[:1] == b"{"
            if not self.json_mode:
                # Send what was held while sniffing through the stream rewriter.
                held = bytes(self.upstream)
                if not self.keep:
                    self.upstream = bytearray()
                else:
                    # _track adds each chunk from now on; this one is already in.
                    self.upstream = bytearray(held[: len(held) - len(chunk)])
                out = self.rewriter.feed(held) if held else []
                if not chunk:
                    out += self.rewriter.finish()
                return self._emit(out, chunk, sniffed=held)
        if self.json_mode:
            if chunk:
                return []
            body = bytes(self.upstream)
            out = self._rewrite_json(body)
            return [out] if out else []
        out = self.rewriter.feed(chunk) if chunk else self.rewriter.finish()
        return self._emit(out, chunk)

    def _emit(self, out: list[bytes], chunk: bytes, sniffed: bytes | None = None) -> list[bytes]:
        # A rewriter that contained an error of its own keeps being fed: it passes the rest
        # through itself, after the bytes it still holds.
        if getattr(self.rewriter, "error", None) and not self.noted:
            self.noted = True
            self.state.record.notes.append(_rewriter_note(self.rewriter.error))
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

    def _rewrite_json(self, body: bytes) -> bytes:
        try:
            parsed = jsonio.loads(body)
        except ValueError:
            self.state.record.notes.append("answer body is not JSON; passed through")
            return body
        if not isinstance(parsed, dict):
            self.state.record.notes.append("answer body is not a JSON object; passed through")
            return body
        try:
            unique = not jsonio.has_duplicate_keys(body, parsed)  # before the rewrite changes parsed
            if self.state.dialect.rewrite_response(parsed, self.state, self.state.plan) and not self.observe:
                new = jsonio.rewrite(body, parsed, unique_keys=True) if unique else None
                if new is None:
                    self.state.record.notes.append("rewritten answer could not be written back exactly; passed through")
                    return body
                self.changed = True
                return new
        except Exception as exc:
            logger.exception("toolvocab: JSON rewrite failed; answer passed through")
            self.state.record.notes.append(f"JSON rewrite failed ({type(exc).__name__}: {exc}); passed through")
        return body


class ToolVocab:
    """The addon: options, hooks and the per-flow record."""

    def __init__(self) -> None:
        self.mode = "auto"
        self.hosts: re.Pattern[str] | None = None
        self.profiles: ProfileSet | None = None
        self.record_dir: str | None = None
        self.redact = True
        self.intercept_all = False
        self.hold_timeout = DEFAULT_HOLD_TIMEOUT
        self._states: dict[str, _FlowState] = {}
        self._ws: dict[str, _FlowState] = {}

    def load(self, loader: Any) -> None:
        """Register the ``toolvocab_*`` options."""
        loader.add_option(
            name="toolvocab_mode",
            typespec=str,
            default="auto",
            help=(
                "auto: repair answers and add one sentence naming unmentioned tools to the system prompt; "
                "repair: repair answers only; observe: record what would change, change nothing; off: do nothing."
            ),
            choices=MODES,
        )
        loader.add_option(
            name="toolvocab_profiles",
            typespec=str | None,
            default=None,
            help=(
                "Path to a TOML file of rename profiles: by host, path and model regex, present the caller's "
                "tools to the upstream under the names it wants (capability = name). None is active by default."
            ),
        )
        loader.add_option(
            name="toolvocab_record",
            typespec=str | None,
            default=None,
            help=(
                "Directory: write each flow toolvocab changed (or, in observe mode, would change) as its own "
                ".mitm file there, credentials redacted, with what a replay needs."
            ),
        )
        loader.add_option(
            name="toolvocab_redact",
            typespec=str,
            default="true",
            help=(
                "true or false. Redact credentials (Authorization, x-api-key, x-goog-api-key, api-key, cookies, "
                "key= query parameters) from every flow whenever it is saved (-w, save commands, toolvocab_record). "
                "The live traffic and the flow shown in the UI keep them."
            ),
        )
        loader.add_option(
            name="toolvocab_hosts",
            typespec=str | None,
            default=None,
            help=(
                "Regex matched (re.search) against the upstream host; only matching hosts are handled, and in "
                "regular (forward) mode only TLS to matching hosts is intercepted. Default: in regular mode the "
                "known LLM API hosts (addon/tvhosts.py); in reverse mode any host whose POST path and JSON body "
                "have an LLM API's shape."
            ),
        )
        loader.add_option(
            name="toolvocab_intercept",
            typespec=str,
            default="known",
            help=(
                "known or all. Regular (forward) mode: 'known' intercepts TLS only to the known LLM API hosts "
                "(or toolvocab_hosts) and tunnels every other connection untouched; 'all' intercepts every "
                "connection, as mitmproxy does without the addon. Reverse mode is not affected."
            ),
            choices=tvhosts.INTERCEPT_CHOICES,
        )
        loader.add_option(
            name="toolvocab_hold_timeout",
            # A string, read as a float in configure: mitmproxy's --set parses no float options.
            typespec=str,
            default=f"{DEFAULT_HOLD_TIMEOUT:g}",
            help=(
                "Seconds. A streamed tool call is held until it is complete, to repair it; when the upstream "
                "sends no byte for this long meanwhile, what is held goes to the client as it came and the rest "
                "of the stream passes through unrepaired. 0: hold as long as the upstream takes."
            ),
        )

    def configure(self, updated: set[str]) -> None:
        """Validate and cache options; raises ``OptionsError`` naming the bad option.

        The message is also logged as an error first: mitmproxy prints a script's exception
        under a traceback, and the user should read what is wrong before it."""
        try:
            self._configure(updated)
        except exceptions.OptionsError as exc:
            logger.error("%s", exc)
            raise

    def _configure(self, updated: set[str]) -> None:
        from mitmproxy import ctx

        if "toolvocab_mode" in updated:
            mode = ctx.options.toolvocab_mode
            if mode not in MODES:
                raise exceptions.OptionsError(f"toolvocab_mode: {mode!r} is not one of {', '.join(MODES)}")
            self.mode = mode
        if "toolvocab_profiles" in updated:
            path = ctx.options.toolvocab_profiles
            if path:
                try:
                    self.profiles = load_profiles(path)
                except ProfileError as exc:
                    raise exceptions.OptionsError(f"toolvocab_profiles: {exc}") from None
            else:
                self.profiles = None
        if "toolvocab_record" in updated:
            directory = ctx.options.toolvocab_record
            if directory:
                try:
                    os.makedirs(directory, exist_ok=True)
                except OSError as exc:
                    raise exceptions.OptionsError(f"toolvocab_record: cannot create {directory!r}: {exc}") from exc
                if not os.access(directory, os.W_OK):
                    raise exceptions.OptionsError(f"toolvocab_record: {directory!r} is not writable")
            self.record_dir = directory or None
        if "toolvocab_redact" in updated:
            # A string, checked here: a bool option's bad value ("maybe") fails inside mitmproxy's
            # deferred option handling, silently, and the addon would run with its defaults.
            value = str(ctx.options.toolvocab_redact).strip().lower()
            if value not in ("true", "false", "yes", "no", "1", "0", "on", "off"):
                raise exceptions.OptionsError(f"toolvocab_redact: {ctx.options.toolvocab_redact!r} is not true or false")
            self.redact = value in ("true", "yes", "1", "on")
        if "toolvocab_hosts" in updated:
            value = ctx.options.toolvocab_hosts
            if value:
                try:
                    self.hosts = re.compile(value)
                except re.error as exc:
                    raise exceptions.OptionsError(f"toolvocab_hosts: invalid regex {value!r}: {exc}") from exc
            else:
                self.hosts = None
        if "toolvocab_intercept" in updated:
            value = ctx.options.toolvocab_intercept
            if value not in tvhosts.INTERCEPT_CHOICES:
                raise exceptions.OptionsError(
                    f"toolvocab_intercept: {value!r} is not one of {', '.join(tvhosts.INTERCEPT_CHOICES)}"
                )
            self.intercept_all = value == "all"
        if "toolvocab_hold_timeout" in updated:
            text = ctx.options.toolvocab_hold_timeout
            try:
                value = float(str(text).strip())
            except ValueError:
                value = -1.0
            if not 0 <= value < float("inf"):  # NaN fails too
                raise exceptions.OptionsError(f"toolvocab_hold_timeout: {text!r} is not a number of seconds >= 0")
            self.hold_timeout = value

    def running(self) -> None:
        """One line at start: toolvocab mode, proxy mode(s), profile file and host rule."""
        from mitmproxy import ctx

        try:
            logger.info(tvhosts.start_line(ctx.options.mode, self.mode, ctx.options.toolvocab_profiles, self.host_rule()))
        except Exception:
            logger.exception("toolvocab: could not describe the configuration")

    def host_rule(self) -> tvhosts.HostRule:
        """The regular-mode interception rule from ``toolvocab_hosts`` / ``toolvocab_intercept``."""
        return tvhosts.HostRule(hosts=self.hosts, intercept_all=self.intercept_all)

    def tls_clienthello(self, data: Any) -> None:
        """Regular (forward) mode: intercept TLS only to the hosts of :meth:`host_rule`; every other
        connection passes as an untouched tunnel (``ignore_connection``). Never in reverse mode
        (the client talks to the proxy itself there), and never undoes another addon's choice."""
        try:
            if data.ignore_connection or _is_reverse(data.context.client.proxy_mode):
                return
            host = tvhosts.connection_host(data.client_hello.sni, data.context.server.address)
            if not self.host_rule().intercepts(host):
                data.ignore_connection = True
                logger.debug("toolvocab: tunnelling %s untouched (not a known LLM API host)", host or "a connection without a host name")
        except Exception:  # the addon never breaks a connection: mitmproxy decides as usual
            logger.exception("toolvocab: tls_clienthello failed; mitmproxy's default applies")

    # -- hooks --------------------------------------------------------------------------------

    def requestheaders(self, flow: http.HTTPFlow) -> None:
        """Install redaction as soon as the flow exists: a client that disconnects mid-body
        never reaches the request hook, and its flow is saved (``-w``) all the same."""
        if self.redact:
            _install_redaction(flow)

    def request(self, flow: http.HTTPFlow) -> None:
        """Detect the dialect, record the declared tools, apply the request-side plan."""
        if self.redact:
            _install_redaction(flow)  # every flow: whatever is saved carries no credentials
        if self.mode == "off":
            return
        try:
            self._request(flow)
        except Exception as exc:  # the addon never breaks a flow
            logger.exception("toolvocab: request hook failed; flow passed through")
            self._states.pop(flow.id, None)
            flow.metadata[METADATA_KEY] = FlowRecord(
                mode=self.mode, skipped=f"internal error in request hook ({type(exc).__name__}: {exc})"
            ).dump()

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """Choose streaming for SSE answers (must be decided here: mitmproxy G4)."""
        state = self._states.get(flow.id)
        if flow.response is None:
            return
        if state is None:
            # Not ours to rewrite: an event stream still goes out as it arrives (mitmproxy
            # buffers a response whose stream is not set: G4).
            if self.mode != "off" and "text/event-stream" in flow.response.headers.get("content-type", "").lower():
                flow.response.stream = True
            return
        try:
            self._responseheaders(flow, state)
        except Exception as exc:
            logger.exception("toolvocab: responseheaders hook failed")
            state.record.notes.append(f"internal error in responseheaders ({type(exc).__name__}: {exc})")

    def response(self, flow: http.HTTPFlow) -> None:
        """Rewrite a buffered JSON answer; finish the record, marker and comment."""
        state = self._states.pop(flow.id, None)
        if state is None:
            return
        try:
            self._response(flow, state)
        except Exception as exc:
            logger.exception("toolvocab: response hook failed; answer passed through")
            state.record.notes.append(f"internal error in response hook ({type(exc).__name__}: {exc})")
        self._finish(flow, state)

    def error(self, flow: http.HTTPFlow) -> None:
        """A flow that ended without a response (client or upstream gone): keep what we know."""
        if self.redact:
            _install_redaction(flow)  # in case requestheaders never ran for it (addon loaded later)
        state = self._states.pop(flow.id, None)
        if state is not None:
            state.record.notes.append(f"flow ended with an error: {flow.error.msg if flow.error else 'unknown'}")
            if state.stream is not None:
                self._deliver_rest(flow, state)
            self._finish(flow, state)

    def _deliver_rest(self, flow: http.HTTPFlow, state: _FlowState) -> None:
        """The upstream (or the client) ended a streamed answer mid-stream: send the client every
        byte received and not yet sent, unchanged (issue 13). mitmproxy calls the stream callable
        no more (G3); this ``error`` hook is the last code that runs before it closes the client
        connection (``HttpStream.handle_protocol_error``: the hook, then the error to the
        client; 11.0.2 and 12.x), so the bytes are written to the client connection here."""
        stream = state.stream
        assert stream is not None
        try:
            data = stream.drain()
            if not data:
                return
            how = _send_to_client(flow, data)
            if how is None:
                state.record.notes.append(f"{len(data)} bytes received and not yet sent could not reach the client (its connection is gone)")
            else:
                state.record.notes.append(f"upstream ended mid-stream: {len(data)} bytes received and not yet sent went to the client unchanged ({how})")
        except Exception as exc:
            logger.exception("toolvocab: could not deliver the rest of the stream")
            state.record.notes.append(f"rest of the stream not delivered ({type(exc).__name__}: {exc})")

    def websocket_message(self, flow: http.HTTPFlow) -> None:
        """Codex's Responses-over-WebSocket transport: a ``response.create`` frame from the
        client is a request; every frame from the server is one stream event."""
        if self.mode == "off" or flow.websocket is None or not flow.websocket.messages:
            return
        message = flow.websocket.messages[-1]
        if message.injected or not message.is_text:
            return
        try:
            self._websocket_message(flow, message)
        except Exception as exc:
            logger.exception("toolvocab: websocket_message hook failed; frame passed through")
            ws = self._ws.get(flow.id)
            if ws is not None:
                ws.record.notes.append(f"internal error in websocket_message ({type(exc).__name__}: {exc})")

    def websocket_end(self, flow: http.HTTPFlow) -> None:
        """Forget a finished WebSocket's state (its record stays in metadata)."""
        ws = self._ws.pop(flow.id, None)
        if ws is not None:
            flow.metadata[METADATA_KEY] = _storable(ws.record.dump())

    # -- commands -----------------------------------------------------------------------------

    @command.command("toolvocab.tools")
    def tools(self, flow: mflow.Flow, shape: str = "normalized") -> str:
        """The tools this flow's client declared, normalized or in one API's shape: normalized,
        anthropic, openai_chat, openai_responses, gemini or langchain (names as the client
        declared them; the record's rename_map says what went upstream)."""
        if shape not in SHAPES:
            raise exceptions.CommandError(f"shape must be one of {', '.join(SHAPES)}")
        text = tvcli.tools_text([flow], shape)
        logger.log(ALERT, text)
        return text

    # -- internals ----------------------------------------------------------------------------

    def _websocket_message(self, flow: http.HTTPFlow, message: Any) -> None:
        from mitmproxy import ctx

        if message.from_client:
            try:
                frame = jsonio.loads(message.content)
            except ValueError:
                return
            if not isinstance(frame, dict) or frame.get("type") != "response.create":
                return
            dialect = tvdialects.by_name("openai_responses")
            assert dialect is not None
            if not flow.request.path.split("?", 1)[0].endswith("/responses"):
                return
            tools = Toolset(dialect.declared_tools(frame))
            plan, record = self._plan(flow, dialect, tools, frame, f"{flow.id}:{len(flow.websocket.messages)}")
            previous = self._ws.get(flow.id)
            if previous is not None:
                # One record per WebSocket: keep the earlier turns' decisions and notes.
                record.decisions = previous.record.decisions + record.decisions
                record.notes = previous.record.notes + record.notes
                record.request_changed = previous.record.request_changed
                record.response_changed = previous.record.response_changed
            record.streamed = True
            state = _FlowState(dialect, tools, plan, record, wants_stream=True)
            state.ws_rewriter = dialect.stream_rewriter(state, plan)
            self._ws[flow.id] = state
            if self.mode in ("auto", "repair") and dialect.apply_request(frame, plan):
                new = jsonio.rewrite(message.content, frame)
                if new is None:
                    record.notes.append("rewritten response.create frame could not be written back exactly; sent as it came")
                else:
                    message.content = new
                    record.request_changed = True
            self._finish(flow, state)
            return
        state = self._ws.get(flow.id)
        if state is None or state.ws_rewriter is None:
            return
        unit = JSONFrame(message.content)
        before = len(state.record.decisions)
        try:
            outs = state.ws_rewriter.on_unit(unit)
        except Exception as exc:
            if isinstance(exc, RepeatedKey):
                state.record.notes.append(RepeatedKey.NOTE.replace("an event's data", "a frame") + " (this turn)")
            else:
                state.record.notes.append(f"websocket rewrite failed ({type(exc).__name__}: {exc}); frames passed through")
            outs = state.ws_rewriter.held_units()
            if not outs or outs[-1] is not unit:
                outs.append(unit)  # the failing frame may already be among the held ones
            state.ws_rewriter = None
        if self.mode == "observe":
            if len(state.record.decisions) != before:
                self._finish(flow, state)
            return
        # Every server frame goes out through inject.websocket, unchanged ones too: mitmproxy
        # sends injected frames from tasks of their own, so a frame forwarded directly could
        # overtake frames released from a hold (all injections keep their order).
        message.drop()
        for out in outs:
            ctx.master.commands.call("inject.websocket", flow, True, out.raw, True)
        if any(o is not unit and o.raw != unit.raw for o in outs) or len(state.record.decisions) != before:
            state.record.response_changed = state.record.response_changed or any(d.changed for d in state.record.decisions[before:])
            self._finish(flow, state)

    def _skip(self, flow: http.HTTPFlow, reason: str, dialect: str | None = None) -> None:
        flow.metadata[METADATA_KEY] = FlowRecord(mode=self.mode, dialect=dialect, skipped=reason).dump()

    def _request(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        if req.method != "POST":
            return
        if self.hosts is not None and not self.hosts.search(req.pretty_host):
            return
        try:
            content = req.content
        except ValueError as exc:
            self._skip(flow, f"request body could not be decoded ({exc})")
            return
        if not content:
            self._skip(flow, "request has no body")
            return
        try:
            body, keys = jsonio.loads_counted(content)
        except ValueError:
            # Not JSON a strict parser accepts (NaN, 1e400, invalid UTF-8, nesting deeper than
            # jsonio.MAX_DEPTH): neither the request nor its answer is touched.
            self._skip(flow, "request body is not JSON")
            return
        dialect = tvdialects.detect(req.method, req.path, body)
        if dialect is None:
            self._skip(flow, f"not an LLM API request this addon knows (POST {req.path.split('?', 1)[0]})")
            return
        tools = Toolset(dialect.declared_tools(body))
        if not len(tools):
            self._skip(flow, "the request declares no tools", dialect.name)
            return
        plan, record = self._plan(flow, dialect, tools, body, flow.id)
        state = _FlowState(
            dialect=dialect,
            tools=tools,
            plan=plan,
            record=record,
            wants_stream=dialect.wants_stream(req.path, body),
        )
        # Whether a key repeats (which of its values the upstream reads is its own choice, not
        # ours to guess) is looked at only before something is written: below for the request,
        # in the resolver for an answer (issue 11: a flow that changes nothing never scans).
        state.request_raw, state.request_keys = content, keys
        if self.mode in ("auto", "repair"):
            # The plan is applied to the parsed copy; the wire gets it only as a complete body
            # that reads back strictly, else the client's bytes stay.
            if dialect.apply_request(body, plan):
                if not state.request_unique():
                    # Nothing is written yet: the flow passes as it came, answer included.
                    self._skip(flow, "request body repeats a key; passed through", dialect.name)
                    return
                # loads refused any NaN or infinity, and a plan changes names, strings and tool
                # entries only: no walk for non-finite floats.
                new = jsonio.rewrite(content, body, unique_keys=True, finite=True)  # unique: looked above
                if new is None:
                    record.notes.append("rewritten request body could not be written back exactly; sent as it came")
                else:
                    state.original_request = content
                    req.content = new
                    record.request_changed = True
            # Streams are rewritten as they pass; compressed bytes cannot be (mitmproxy G5).
            req.anticomp()
        self._states[flow.id] = state
        flow.metadata[METADATA_KEY] = record.dump()

    def _plan(self, flow: http.HTTPFlow, dialect: Dialect, tools: Toolset, body: Any, flow_key: str) -> tuple[Plan, FlowRecord]:
        """The request-side plan (profile, grammar aliases, duplicates, prompt sentence) and the
        record that starts with it."""
        host = flow.request.pretty_host
        profile = self.profiles.select(host, flow.request.path, dialect.model_of(flow.request.path, body)) if self.profiles else None
        gate_note = "profiles are never applied at an access gate (" + host + ")" if self.profiles and is_access_gate(host) else None
        grammar = grammar_for(dialect.name, host, profile.grammar if profile else None)
        plan = make_plan(
            tools,
            dialect.system_texts(body),
            add_sentence=self.mode in ("auto", "observe"),
            flow_key=flow_key,
            grammar=grammar,
            profile=profile,
            transcript_names=dialect.transcript_names(body),
        )
        record = FlowRecord(
            mode=self.mode,
            dialect=dialect.name,
            host=host,
            path=flow.request.path.split("?", 1)[0],
            model=dialect.model_of(flow.request.path, body),
            client=identify_client(flow.request.headers),
            declared=tools.names(),
            rename_map=plan.rename_map,
            duplicates=plan.duplicates,
            renames=plan.renames,
            profile=plan.profile,
            grammar=plan.grammar,
            prompt_sentence=plan.prompt_sentence,
            prompt_names=plan.unmentioned,
            notes=list(plan.skipped) + ([gate_note] if gate_note else []),
        )
        if self._saves_bodies():
            # The transcript's tool errors are for whoever reads the record (-w, toolvocab_record,
            # a UI); plain mitmdump shows no record, and a long transcript costs a walk over every
            # result (issue 11).
            try:
                record.tool_errors = classify_tool_results(dialect.tool_results(body), record.client)
            except Exception as exc:  # classification is for the record only: never fatal
                record.notes.append(f"tool results not classified ({type(exc).__name__}: {exc})")
        return plan, record

    def _responseheaders(self, flow: http.HTTPFlow, state: _FlowState) -> None:
        resp = flow.response
        assert resp is not None
        if not 200 <= resp.status_code < 300:
            return
        ctype = resp.headers.get("content-type", "").lower()
        is_sse = "text/event-stream" in ctype
        if not is_sse and not state.wants_stream:
            return  # buffered; handled in response()
        encoding = resp.headers.get("content-encoding", "identity").strip().lower()
        if encoding not in ("", "identity"):
            state.record.notes.append(f"streamed answer is {encoding}-encoded; passed through unread")
            resp.stream = True
            return
        if "content-length" in resp.headers:
            del resp.headers["content-length"]
            if flow.request.http_version == "HTTP/1.1":
                resp.headers["transfer-encoding"] = "chunked"
        # A stream request answered with JSON (an error, or a server that ignored "stream") is
        # buffered inside the callable and rewritten whole at the end.
        state.stream = _StreamCallable(
            state,
            observe=self.mode == "observe",
            keep=self._saves_bodies(),
            hold_timeout=self.hold_timeout,
            send=lambda data: _send_to_client(flow, data),
        )
        resp.stream = state.stream
        state.record.streamed = True

    def _saves_bodies(self) -> bool:
        """Whether something saves or shows flows: ``toolvocab_record``, ``-w``
        (``save_stream_file``), ``hardump``, or any master but mitmdump's (mitmweb and the
        console show flows; test masters inspect them). Then a streamed answer's bytes are kept
        for the flow and the transcript's tool errors are classified for the record (issue 11:
        nothing proportional to a body is kept or computed unless someone reads it)."""
        from mitmproxy import ctx

        if self.record_dir:
            return True
        try:
            options = ctx.options
            if any(getattr(options, name, None) for name in ("save_stream_file", "hardump")):
                return True
            return type(ctx.master).__name__ != "DumpMaster"
        except Exception:
            return True

    def _response(self, flow: http.HTTPFlow, state: _FlowState) -> None:
        resp = flow.response
        if resp is None:
            return
        if state.stream is not None:
            # A repair sent before a later failure still reached the client.
            state.record.response_changed = state.stream.changed or (
                not state.stream.observe and any(d.changed for d in state.record.decisions)
            )
            return
        if not 200 <= resp.status_code < 300:
            state.record.notes.append(f"upstream answered {resp.status_code}; passed through")
            return
        if resp.raw_content is None:
            state.record.notes.append("answer body was streamed by another setting; not inspected")
            return
        try:
            content = resp.content
        except ValueError as exc:
            state.record.notes.append(f"answer body could not be decoded ({exc}); passed through")
            return
        if not content:
            return
        try:
            body = jsonio.loads(content)
        except ValueError:
            if "text/event-stream" in resp.headers.get("content-type", "").lower() or content.lstrip()[:6] in (b"event:", b"data: "):
                self._rewrite_buffered_sse(flow, state, content)
            else:
                state.record.notes.append("answer body is not JSON; passed through")
            return
        if not isinstance(body, dict):
            state.record.notes.append("answer body is not a JSON object; passed through")
            return
        unique = not jsonio.has_duplicate_keys(content, body)  # before the rewrite changes body
        if state.dialect.rewrite_response(body, state, state.plan) and self.mode != "observe":
            new = jsonio.rewrite(content, body, unique_keys=True) if unique else None
            if new is None:
                state.record.notes.append("rewritten answer could not be written back exactly (a repeated key?); passed through")
                return
            state.upstream_raw = resp.raw_content
            resp.content = new
            state.record.response_changed = True

    def _rewrite_buffered_sse(self, flow: http.HTTPFlow, state: _FlowState, content: bytes) -> None:
        rewriter = state.dialect.stream_rewriter(state, state.plan)
        out = b"".join(rewriter.feed(content) + rewriter.finish())
        if getattr(rewriter, "error", None):
            state.record.notes.append(_rewriter_note(rewriter.error))
        if out != content and self.mode != "observe":
            assert flow.response is not None
            state.upstream_raw = flow.response.raw_content
            flow.response.content = out
            state.record.response_changed = True

    def _finish(self, flow: http.HTTPFlow, state: _FlowState) -> None:
        """Store the record and what a replay needs, mark and comment the flow, write it to
        ``toolvocab_record``. Never raises."""
        try:
            record = state.record
            stream = state.stream
            self._timings(flow, record)
            record.count_calls()
            if stream is not None:
                # Whatever changed the bytes (a rename, new ids, serialized arguments, a lifted
                # call), the client's bytes are the truth.
                record.response_changed = stream.differs
                if stream.keep and flow.response is not None and flow.response.raw_content is None:
                    # mitmproxy does not store streamed bodies (G6): keep what the client got,
                    # and the upstream's bytes when they differ (only when something saves).
                    sent = bytes(stream.sent)
                    flow.response.raw_content = sent
                    if stream.differs:
                        state.upstream_raw = bytes(stream.upstream)
                stream.release()
            flow.metadata[METADATA_KEY] = record.dump()
            if state.original_request is not None:
                flow.metadata[METADATA_REQUEST] = state.original_request
            if state.upstream_raw is not None:
                flow.metadata[METADATA_UPSTREAM] = state.upstream_raw
            lines = record.diff_lines()
            if lines:
                flow.metadata[METADATA_DIFF] = "\n".join(lines)
            would_change = record.prompt_sentence is not None or any(d.changed for d in record.decisions) or bool(record.renames)
            dumped = flow.metadata[METADATA_KEY]
            kind = change_kind(dumped)
            if kind == "tools":
                flow.marked = MARK_CHANGED
                flow.comment = record.summary()
            elif kind == "prompt":
                # Only the prompt sentence was added: a comment, no 🔧 (that marks tool changes).
                flow.comment = "toolvocab (prompt sentence only): " + record.summary().removeprefix("toolvocab: ")
            elif self.mode == "observe" and would_change:
                flow.marked = MARK_OBSERVED
                flow.comment = "toolvocab (observe, nothing changed): " + record.summary().removeprefix("toolvocab: ")
            # A name may hold a lone surrogate (a JSON escape the client sent): what the flow
            # stores must encode as UTF-8, or saving it (-w) fails.
            _make_storable(flow)
            self._log(state, dumped, kind == "tools" or (self.mode == "observe" and would_change), kind == "prompt")
            if self.record_dir and (record.request_changed or record.response_changed or (self.mode == "observe" and would_change)):
                self._write(flow, record)
        except Exception:
            logger.exception("toolvocab: could not store the flow record")

    @staticmethod
    def _log(state: _FlowState, record: dict, changed: bool, prompt_only: bool) -> None:
        """One ``info`` line per flow whose tool calls or names changed (``debug`` for a flow that
        only got the prompt sentence, and for calls left alone); a WebSocket's later turns log
        again only when the line differs."""
        lines = []
        if changed or prompt_only:
            lines.append((logging.INFO if changed else logging.DEBUG, log_line(record)))
        left = left_line(record)
        if left:
            lines.append((logging.DEBUG, left))
        for level, line in lines:
            logged = state.__dict__.setdefault("logged", set())
            if line not in logged:
                logged.add(line)
                logger.log(level, line)

    @staticmethod
    def _timings(flow: http.HTTPFlow, record: FlowRecord) -> None:
        """Upstream status and latencies (ms) from mitmproxy's timestamps (seconds)."""
        resp, start = flow.response, flow.request.timestamp_start
        if resp is None or not start:
            return
        record.status = resp.status_code
        if resp.timestamp_start:
            record.ttfb_ms = round((resp.timestamp_start - start) * 1000, 1)
        if resp.timestamp_end:
            record.total_ms = round((resp.timestamp_end - start) * 1000, 1)

    def _write(self, flow: http.HTTPFlow, record: FlowRecord) -> None:
        """Write ``flow`` alone to ``toolvocab_record`` (redacted like every save)."""
        from mitmproxy import io

        assert self.record_dir is not None
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(flow.timestamp_created))
        path = os.path.join(self.record_dir, f"{stamp}-{record.dialect or 'flow'}-{flow.id[:8]}.mitm")
        with open(path, "wb") as fp:
            io.FlowWriter(fp).add(flow)
        logger.info("toolvocab: recorded %s", path)


def _rewriter_note(error: str) -> str:
    """The record's note for a stream rewriter's ``error`` (what it contained: the rest of the
    stream passed through as it came)."""
    prefix = f"{RepeatedKey.__name__}: "
    if error.startswith(prefix):
        return error[len(prefix) :]
    return f"stream rewrite failed ({error}); rest passed through"


def _is_reverse(proxy_mode: Any) -> bool:
    """True for mitmproxy's reverse mode (``mode_specs.ReverseMode`` in mitmproxy 11 and 12)."""
    return type(proxy_mode).__name__ == "ReverseMode"


def _send_to_client(flow: http.HTTPFlow, data: bytes) -> str | None:
    """Write ``data`` as more of ``flow``'s response body straight to the client connection,
    framed as mitmproxy frames it (HTTP/1 chunked or as is; an HTTP/2 DATA frame) and through
    the client connection's TLS layer(s); the description of what was done, or ``None`` when
    the client connection is gone or the body cannot grow.

    For the ``error`` hook, and for the stall bound's timer (:class:`_StreamCallable`) between
    two events of the connection: mitmproxy has no API to send body bytes after the upstream
    failed or outside the stream callable, and no layer is running at either point (they are
    paused on the hook; the timer runs between events, after the layers' writes of the last
    one), so this does what they would do, in order with their bytes: the HTTP framing (on
    HTTP/2 through mitmproxy's own buffered ``h2_conn``, which keeps flow control and order),
    then each tunnel layer's ``send_data`` (TLS encryption), then the connection's
    transport (``proxyserver.connections[client id].transports[client]``; mitmproxy 11.0.2
    and 12.3.1).
    """
    from mitmproxy import ctx
    from mitmproxy.proxy import commands

    server = ctx.master.addons.get("proxyserver")
    handler = getattr(server, "connections", {}).get(flow.client_conn.id) if server is not None else None
    if handler is None or flow.response is None:
        return None
    transport = handler.transports.get(flow.client_conn)
    writer = getattr(transport, "writer", None)
    if writer is None or writer.is_closing():
        return None
    h2server, stream_id, tunnels = _client_layers(handler, flow)
    if h2server is not None:
        h2server.h2_conn.send_data(stream_id, data)
        framed, how = h2server.h2_conn.data_to_send(), "HTTP/2 DATA"
    elif "chunked" in flow.response.headers.get("transfer-encoding", "").lower():
        framed, how = b"%x\r\n%s\r\n" % (len(data), data), "HTTP/1.1 chunk"
    elif "content-length" in flow.response.headers:
        return None  # a length-delimited body cannot grow
    else:
        framed, how = data, "HTTP/1 body bytes"
    for tunnel in tunnels:  # innermost first, as the bytes travel
        framed = b"".join(c.data for c in tunnel.send_data(framed) if isinstance(c, commands.SendData))
    writer.write(framed)
    return how + (" over TLS" if tunnels else "")


def _client_layers(handler: Any, flow: http.HTTPFlow) -> tuple[Any, int, list[Any]]:
    """Walk the connection's layer stack: ``flow``'s client-side HTTP/2 connection layer and
    stream id (``None, 0`` for HTTP/1) and the tunnel layers (TLS) on the client connection,
    innermost first."""
    seen: set[int] = set()
    h2server, stream_id, tunnels = None, 0, []
    todo = [getattr(handler, "layer", None)]
    while todo:
        layer = todo.pop()
        if layer is None or id(layer) in seen or len(seen) > 100:
            continue
        seen.add(id(layer))
        if getattr(layer, "tunnel_connection", None) is flow.client_conn and callable(getattr(layer, "send_data", None)):
            tunnels.append(layer)
        streams = getattr(layer, "streams", None)
        connections = getattr(layer, "connections", None)
        if h2server is None and isinstance(streams, dict) and isinstance(connections, dict):
            for sid, stream in streams.items():
                if getattr(stream, "flow", None) is flow:
                    conn = connections.get(flow.client_conn)
                    if conn is not None and hasattr(conn, "h2_conn"):
                        h2server, stream_id = conn, sid
        for name in ("child_layer", "layer"):
            todo.append(getattr(layer, name, None))
        todo.append(getattr(getattr(layer, "_handle_event", None), "__self__", None))
    return h2server, stream_id, tunnels[::-1]


def _storable(value: Any) -> Any:
    """``value`` (a dumped record: dicts, lists, strings) with every lone surrogate in its
    strings written as its ``\\udXXX`` escape text, so that mitmproxy can save it as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-8", "backslashreplace").decode("utf-8")
        return value
    if isinstance(value, dict):
        return {_storable(k): _storable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_storable(v) for v in value]
    return value


def _make_storable(flow: http.HTTPFlow) -> None:
    """Make the record, diff and comment toolvocab put on ``flow`` encodable as UTF-8. ``orjson``
    refuses a lone surrogate in any string (C speed): only then is the value walked."""
    for key in (METADATA_KEY, METADATA_DIFF):
        if key in flow.metadata:
            try:
                orjson.dumps(flow.metadata[key])
            except orjson.JSONEncodeError:
                flow.metadata[key] = _storable(flow.metadata[key])
    flow.comment = _storable(flow.comment)


def redact_state(state: dict[str, Any]) -> dict[str, Any]:
    """Return a copy of a flow's saved state with credentials replaced by ``<redacted>``.

    Headers and trailers ``authorization``, ``proxy-authorization``, ``x-api-key``,
    ``x-goog-api-key``, ``api-key``, ``cookie`` and ``set-cookie`` (names in any case), and
    query parameters ``key``, ``api_key``, ``api-key``, ``apikey``, ``access_token`` (any case:
    ``?KEY=``) in the path. Each credential value found there (and, for ``Bearer``/``Basic``
    and the like, the token after the scheme) of 8 bytes or more is then replaced wherever else
    it occurs in the state: bodies (also a partial body of an aborted request), metadata,
    WebSocket messages, the error message. ``state`` is mitmproxy's ``Flow.get_state()`` dict
    (headers as ``(name, value)`` byte pairs); the input is not modified.
    """
    import copy

    out = copy.deepcopy(state)
    secrets: set[bytes] = set()
    for side in ("request", "response"):
        message = out.get(side)
        if not isinstance(message, dict):
            continue
        for part in ("headers", "trailers"):
            if isinstance(message.get(part), (list, tuple)):
                message[part] = _redact_fields(message[part], secrets)
    request = out.get("request")
    if isinstance(request, dict) and isinstance(request.get("path"), bytes):
        for match in _KEY_PARAM.finditer(request["path"]):
            secrets.add(match.group(2))
        request["path"] = _KEY_PARAM.sub(rb"\1<redacted>", request["path"])
    if isinstance(out.get("backup"), dict):  # the state before an edit in the UI
        out["backup"] = redact_state(out["backup"])
    long_secrets = sorted((s for s in secrets if len(s) >= 8), key=len, reverse=True)
    if long_secrets:
        out = _scrub(out, long_secrets)
    return out


_REDACT_NAMES = frozenset(
    {b"authorization", b"proxy-authorization", b"x-api-key", b"x-goog-api-key", b"api-key", b"cookie", b"set-cookie"}
)
_KEY_PARAM = re.compile(rb"([?&;](?:key|api_key|api-key|apikey|access_token)=)([^&#;]*)", re.IGNORECASE)
_AUTH_SCHEME = re.compile(rb"^\s*[A-Za-z][A-Za-z0-9_-]*\s+(\S+)\s*$")


def _redact_fields(fields: Any, secrets: set[bytes]) -> list[Any]:
    """Header or trailer ``(name, value)`` pairs with credential values redacted; the values
    (and a scheme's token) are added to ``secrets``."""
    out = []
    for pair in fields:
        try:
            name, value = pair
        except (TypeError, ValueError):
            out.append(pair)
            continue
        key = name.encode("latin-1", "replace") if isinstance(name, str) else name
        if isinstance(key, bytes) and key.strip().lower() in _REDACT_NAMES:
            raw = value.encode("utf-8", "surrogateescape") if isinstance(value, str) else value
            if isinstance(raw, bytes):
                secrets.add(raw.strip())
                scheme = _AUTH_SCHEME.match(raw)
                if scheme:
                    secrets.add(scheme.group(1))
                for cookie in raw.split(b";"):
                    secrets.add(cookie.partition(b"=")[2].strip())
            value = b"<redacted>" if isinstance(value, bytes) else "<redacted>"
        out.append((name, value))
    return out


def _scrub(value: Any, secrets: list[bytes]) -> Any:
    """``value`` (a saved state, any nesting of dicts, lists, tuples) with every occurrence of
    each secret in its bytes and strings replaced by ``<redacted>``."""
    if isinstance(value, bytes):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, b"<redacted>")
        return value
    if isinstance(value, str):
        for secret in secrets:
            text = secret.decode("utf-8", "surrogateescape")
            if text in value:
                value = value.replace(text, "<redacted>")
        return value
    if isinstance(value, dict):
        return {k: _scrub(v, secrets) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, secrets) for v in value]
    if isinstance(value, tuple):
        return tuple(_scrub(v, secrets) for v in value)
    return value


def _install_redaction(flow: http.HTTPFlow) -> None:
    """Make every save of ``flow`` write a redacted copy, leaving the flow itself untouched.

    mitmproxy's writers (``-w``, ``save.file``, ``FlowWriter``) serialize ``flow.get_state()``;
    shadowing it on this one instance redacts what is written while the live flow, the UI and
    client replay keep the real values.
    """
    if getattr(flow, "_toolvocab_redacting", False):
        return
    original = type(flow).get_state

    def get_state() -> Any:
        return redact_state(original(flow))

    flow.get_state = get_state  # type: ignore[method-assign]
    flow._toolvocab_redacting = True  # type: ignore[attr-defined]


addons = [ToolVocab(), ToolVocabUI()]
