"""The repair addon: for each LLM API request it handles, the declared tools, the request-side
plan (renames the upstream needs, the prompt sentence), and the rewrite of the answer — a JSON
body in the ``response`` hook, a stream through :class:`toolvocab.addons.stream.StreamCallable`.

Options: ``toolvocab_mode``, ``toolvocab_profiles``, ``toolvocab_hosts``,
``toolvocab_hold_timeout``. Each flow's record is finished by
:class:`toolvocab.addons.recording.ToolVocabRecorder`.
"""

from __future__ import annotations

import difflib
import functools
import logging
import re
from collections.abc import Callable
from typing import Any

import orjson
from mitmproxy import exceptions
from mitmproxy import http
from mitmproxy.net.http import url

from toolvocab.addons import decoding
from toolvocab.addons.options import Configurable
from toolvocab.addons.options import check_deferred
from toolvocab.addons.recording import OWN_COMMENTS
from toolvocab.addons.recording import OWN_MARKERS
from toolvocab.addons.recording import ToolVocabRecorder
from toolvocab.addons.state import AnswerNotJSON
from toolvocab.addons.state import FlowState
from toolvocab.addons.state import hand_over
from toolvocab.addons.state import take_over
from toolvocab.addons.stream import DEFAULT_HOLD_TIMEOUT
from toolvocab.addons.stream import DecodedStream
from toolvocab.addons.stream import KeptStream
from toolvocab.addons.stream import StreamCallable
from toolvocab.addons.stream import keep_limit
from toolvocab.addons.stream import note_unrepaired
from toolvocab.addons.stream import rewriter_note
from toolvocab.addons.stream import send_to_client
from toolvocab.dialects import pipeline
from toolvocab.dialects.base import path_only
from toolvocab.engine import jsonio
from toolvocab.engine.profiles import ProfileError
from toolvocab.engine.profiles import ProfileSet
from toolvocab.engine.profiles import load_profiles
from toolvocab.engine.record import FlowRecord
from toolvocab.report import METADATA_DIFF
from toolvocab.report import METADATA_HEADERS
from toolvocab.report import METADATA_KEY
from toolvocab.report import METADATA_REQUEST
from toolvocab.report import METADATA_UPSTREAM
from toolvocab.report import REPLAY_NOTE
from toolvocab.report import passed_note

logger = logging.getLogger(__name__)

MODES = ("auto", "repair", "observe", "off")


def header_reader(headers: http.Headers) -> Callable[[str], str | None]:
    """``headers.get`` from one pass over the header fields: a value by name (any case), the
    values of a repeated field joined with ``", "`` and decoded as mitmproxy decodes them
    (``Headers._reduce_values``, ``http._native``: UTF-8, surrogateescape), or ``None``.
    mitmproxy's ``get`` walks every field for each name asked; the pipeline asks several."""
    found: dict[bytes, list[bytes]] = {}
    for name, value in headers.fields:
        found.setdefault(name.lower(), []).append(value)

    def get(name: str) -> str | None:
        values = found.get(name.lower().encode("utf-8", "surrogateescape"))
        if values is None:
            return None
        return ", ".join(value.decode("utf-8", "surrogateescape") for value in values)

    return get


def pretty_host(req: http.Request) -> str:
    """``req.pretty_host`` (mitmproxy's ``Request.pretty_host``: the host of the ``Host`` header,
    or of an HTTP/2 or HTTP/3 authority, else ``req.host``), each distinct authority parsed once:
    mitmproxy's ``url.parse_authority`` checks the host's syntax through the ``idna`` codec at
    every call, several µs a request."""
    authority = req.host_header
    return _host_of(authority) if authority else req.host


@functools.lru_cache(maxsize=64)
def _host_of(authority: str) -> str:
    """The host of a ``Host`` header or authority as ``Request.pretty_host`` gives it."""
    return url.parse_authority(authority, check=False)[0]


def _write_answer(flow: http.HTTPFlow, state: FlowState, new: bytes, plain: bool) -> None:
    """The buffered answer's body written as ``new`` (the upstream's bytes kept for a replay):
    encoded again as it came, or, ``plain`` (read through toolvocab's own decoder: mitmproxy's
    could not read it whole), sent decoded with its ``content-encoding`` taken off (kept in
    ``toolvocab_headers``), as a decoded stream is."""
    resp = flow.response
    assert resp is not None
    state.upstream_raw = resp.raw_content
    if plain:
        coding = resp.headers.get("content-encoding")
        _changed_header(flow, "response", "content-encoding", coding)
        del resp.headers["content-encoding"]
        state.record.notes.append(
            f"the {coding}-encoded answer could not be read whole by mitmproxy; toolvocab read what decodes, "
            "as a client's decoder does, and the client got it decoded"
        )
    resp.content = new
    state.record.response_changed = True


#: Bedrock's streamed answer (InvokeModelWithResponseStream): binary frames.
_AWS_EVENT_STREAM = "application/vnd.amazon.eventstream"


def _streamed(flow: http.HTTPFlow) -> bool:
    """An answer to stream though toolvocab does not read it: an event stream, AWS event-stream
    frames, and Gemini's ``:streamGenerateContent`` without ``alt=sse`` (a JSON array sent as the
    model writes it)."""
    assert flow.response is not None
    ctype = flow.response.headers.get("content-type", "").lower()
    return (
        "text/event-stream" in ctype
        or _AWS_EVENT_STREAM in ctype
        or ("json" in ctype and ":streamGenerateContent" in path_only(flow.request.path))
    )


def _unread_stream(resp: http.Response, *, keep: bool, limited: bool) -> KeptStream | bool:
    """``response.stream`` for an answer that streams unread: ``True`` (no body kept), or, when
    ``keep`` (something saves or shows the flow) and mitmproxy does not store streamed bodies
    itself (``store_streamed_bodies``, mitmproxy 12), a :class:`KeptStream`; ``limited``: within the
    user's ``stream_large_bodies`` and ``body_size_limit`` (:func:`keep_limit`; ``True`` for an
    answer whose length is already past them), as mitmproxy would have kept it — for a flow
    toolvocab leaves alone. A handled flow's answer is kept whole, as its read streams are (a
    replay starts from it)."""
    from mitmproxy import ctx

    if not keep or getattr(ctx.options, "store_streamed_bodies", False):
        return True
    limit = keep_limit(ctx.options, resp.headers.get("content-length")) if limited else None
    return True if limit is False else KeptStream(limit)


def _changed_header(flow: http.HTTPFlow, side: str, name: str, before: str | None) -> None:
    """Keep ``before``, the value of header ``name`` of the flow's ``side`` (``request``,
    ``response``; ``None``: absent) that toolvocab is about to change, in
    ``metadata[METADATA_HEADERS]`` (the first value only), for a replay to start from."""
    changed = flow.metadata.setdefault(METADATA_HEADERS, {})
    changed.setdefault(side, {}).setdefault(name, before)


def _forget(flow: http.HTTPFlow) -> None:
    """Drop what toolvocab wrote on ``flow`` before a replay of it: the record, the diff, the
    client's original request and the upstream's original answer (they describe the first pass;
    mitmproxy's backup of the flow, which Revert restores, keeps them), and toolvocab's own
    marker and comment."""
    for key in (METADATA_KEY, METADATA_REQUEST, METADATA_UPSTREAM, METADATA_DIFF, METADATA_HEADERS):
        flow.metadata.pop(key, None)
    if flow.marked in OWN_MARKERS:
        flow.marked = ""
    if flow.comment.startswith(OWN_COMMENTS):
        flow.comment = ""


#: The options :class:`ToolVocab` declares (:meth:`ToolVocab.load`).
OPTIONS = ("toolvocab_mode", "toolvocab_profiles", "toolvocab_hosts", "toolvocab_hold_timeout")


class ToolVocab(Configurable):
    """Repair tool calls: the request, responseheaders, response and error hooks, and the
    per-flow state between them (``_states``, by flow id). ``recorder``: the addon that
    finishes each flow's record."""

    def __init__(self, recorder: ToolVocabRecorder) -> None:
        self.recorder = recorder
        self.mode = "auto"
        self.hosts: re.Pattern[str] | None = None
        self.profiles: ProfileSet | None = None
        self.hold_timeout = DEFAULT_HOLD_TIMEOUT
        #: The options were all read at the last update (:meth:`configure`); while not, no flow is touched.
        self.ready = True
        self._configured = False  # configure has run once (its first run is the script's load)
        self._running = False  # mitmproxy said running: a mode set from now on is said in the log
        #: ``toolvocab_*`` names mitmproxy did not know at start (:meth:`running`): the proxy stops.
        self.unknown_options: list[str] = []
        self._states: dict[str, FlowState] = {}
        self.caches = pipeline.Caches()

    def load(self, loader: Any) -> None:
        """Register ``toolvocab_mode``, ``toolvocab_profiles``, ``toolvocab_hosts``, ``toolvocab_hold_timeout``."""
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
            name="toolvocab_hosts",
            typespec=str | None,
            default=None,
            help=(
                "Regex matched (re.search) against the upstream host. Set: only requests to matching hosts are "
                "handled, in every mode, and in regular (forward) mode only TLS to matching hosts is intercepted. "
                "Unset: regular mode intercepts TLS only to the known LLM API hosts (toolvocab/hosts.py), and every "
                "request toolvocab can read (reverse mode, or plain HTTP through regular mode, to any host) is "
                "handled when its POST path and JSON body have an LLM API's shape."
            ),
        )
        loader.add_option(
            name="toolvocab_hold_timeout",
            # A string, read as a float in configure: mitmproxy's --set parses no float options.
            typespec=str,
            default=f"{DEFAULT_HOLD_TIMEOUT:g}",
            help=(
                "Seconds. A streamed tool call is held until it is complete, to repair it; when the upstream "
                "sends no byte for this long meanwhile, what is held goes to the client as it came (but for a "
                "name toolvocab sent upstream because the upstream rejects the client's own, given back) and "
                "the rest of the stream is read as usual (OpenAI Chat: passed on unrepaired but for such "
                "names). 0: hold as long as the upstream takes."
            ),
        )
        check_deferred(loader, OPTIONS, optional=("toolvocab_profiles", "toolvocab_hosts"))

    def configure(self, updated: set[str]) -> None:
        """Validate and cache the options (:meth:`_configure`). All or nothing: when one is bad,
        none of the update is taken. When this addon's first update fails (at start, or when
        mitmproxy reloads the script: a profile file gone) it touches no flow (:attr:`ready`)
        until an update succeeds, each one checking every option again: no half of the user's
        settings is applied, such as the hosts it was told to leave alone. A bad update later
        (mitmweb's options, whichever options it names) only fails: the values cached are the
        last good ones, whatever mitmproxy's roll-back reads."""
        first, self._configured = not self._configured, True
        if not self.ready:
            updated = set(updated) | set(OPTIONS)
        try:
            super().configure(updated)
        except exceptions.OptionsError:
            if first:
                logger.warning(
                    "toolvocab: options not applied (the error above): mitmdump stops at start; a proxy already "
                    "running (the script reloaded) passes every flow untouched until they are"
                )
                self.ready = False
            raise
        self.ready = True

    def _configure(self, updated: set[str]) -> None:
        """Validate the options in ``updated``, then cache them all at once; raises
        ``OptionsError`` naming the bad option (nothing cached then)."""
        from mitmproxy import ctx

        mode, profiles, hosts, hold_timeout = self.mode, self.profiles, self.hosts, self.hold_timeout
        if "toolvocab_mode" in updated:
            mode = ctx.options.toolvocab_mode
            if mode not in MODES:
                raise exceptions.OptionsError(f"toolvocab_mode: {mode!r} is not one of {', '.join(MODES)}")
        if "toolvocab_profiles" in updated:
            path = ctx.options.toolvocab_profiles
            if path:
                try:
                    profiles = load_profiles(path)
                except ProfileError as exc:
                    raise exceptions.OptionsError(f"toolvocab_profiles: {exc}") from None
            else:
                profiles = None
        if "toolvocab_hosts" in updated:
            value = ctx.options.toolvocab_hosts
            if value:
                try:
                    hosts = re.compile(value)
                except re.error as exc:
                    raise exceptions.OptionsError(f"toolvocab_hosts: invalid regex {value!r}: {exc}") from exc
            else:
                hosts = None
        if "toolvocab_hold_timeout" in updated:
            text = ctx.options.toolvocab_hold_timeout
            try:
                hold_timeout = float(str(text).strip())
            except ValueError:
                hold_timeout = -1.0
            if not 0 <= hold_timeout < float("inf"):  # NaN fails too
                raise exceptions.OptionsError(f"toolvocab_hold_timeout: {text!r} is not a number of seconds >= 0")
        if self._running and mode != self.mode:
            # set while running (mitmweb's options, the console's :set): no other line says so
            logger.info("toolvocab: mode %s from the next request (was %s)", mode, self.mode)
        self.mode, self.profiles, self.hosts, self.hold_timeout = mode, profiles, hosts, hold_timeout

    def done(self) -> None:
        """Hand the flows in flight over to the addon a reloaded script makes (their state:
        :func:`~toolvocab.addons.state.hand_over`)."""
        if self._states:
            hand_over("core", self._states)

    def running(self) -> None:
        """Take over the flows in flight of the addon this one replaces (a reloaded script);
        report a ``toolvocab_*`` option mitmproxy does not know (``--set toolvocab_mdoe=observe``,
        a line of ``config.yaml``) as an error: mitmproxy keeps an unknown name aside without a
        word (``OptManager.deferred``: applied if an addon ever declares it), and an error logged
        at start makes mitmdump exit (its ``errorcheck`` addon) — as a bad value does."""
        from mitmproxy import ctx

        self._states.update(take_over("core") or {})
        self._running = True
        try:
            unknown = sorted(n for n in getattr(ctx.options, "deferred", {}) if n.startswith("toolvocab"))
            ours = sorted(n for n in ctx.options.keys() if n.startswith("toolvocab_"))
        except Exception:
            return
        self.unknown_options = unknown
        for name in unknown:
            close = difflib.get_close_matches(name, ours, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            logger.error("toolvocab: unknown option %s%s; toolvocab's options are %s", name, hint, ", ".join(ours))

    # -- hooks --------------------------------------------------------------------------------

    def request(self, flow: http.HTTPFlow) -> None:
        """Detect the dialect, record the declared tools, apply the request-side plan. A replay
        (mitmproxy's ``replay.client``, mitmweb's Replay) is handled as a new request: its own
        request, as the flow holds it now, and a record of its own (see :func:`_forget`). A flow
        read from a file (``mitmdump -r``, ``mitmweb -r``: ``flow.live`` is false, G11) is left as
        saved: its request is the one the upstream got, and its record, marker, comment and diffs
        are what happened then."""
        if not flow.live:
            return
        replay = flow.is_replay == "request"
        if replay:
            _forget(flow)
        if self.mode == "off" or not self.ready:
            return
        try:
            self._request(flow)
            record = flow.metadata.get(METADATA_KEY)
            if replay and isinstance(record, dict):
                state = self._states.get(flow.id)
                if state is not None:
                    state.record.notes.insert(0, REPLAY_NOTE)
                    flow.metadata[METADATA_KEY] = state.record.dump()
                else:
                    record.setdefault("notes", []).insert(0, REPLAY_NOTE)
        except Exception as exc:  # the addon never breaks a flow
            logger.exception("toolvocab: request hook failed; flow passed through")
            self._states.pop(flow.id, None)
            why = f"internal error in the request hook ({type(exc).__name__}: {exc})"
            flow.metadata[METADATA_KEY] = FlowRecord(
                mode=self.mode,
                skipped=why,
                notes=[
                    passed_note(
                        why,
                        "the upstream got the client's request as it came, the client the answer as the upstream sent it",
                    )
                ],
            ).dump()
            self.recorder.show(flow)

    def responseheaders(self, flow: http.HTTPFlow) -> None:
        """Choose streaming for SSE answers (must be decided here: mitmproxy G4)."""
        state = self._states.get(flow.id)
        if flow.response is None or not flow.live:
            return
        if state is None:
            # Not ours to rewrite (another host, mode off, a request left as sent): a streamed
            # answer still goes out as it arrives, as in every mode (mitmproxy buffers a response
            # whose stream is not set: G4; an agent would then wait for the whole answer, or time
            # out): an event stream, Bedrock's event-stream frames, Gemini's JSON-array stream.
            # Kept as it passes when mitmproxy saves or shows flows (KeptStream, within the user's
            # size limits; toolvocab_record writes no flow toolvocab leaves alone).
            if _streamed(flow):
                flow.response.stream = _unread_stream(flow.response, keep=self.recorder.mitmproxy_keeps(), limited=True)
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
            KeptStream.keep_in(flow)
            return
        try:
            self._response(flow, state)
        except Exception as exc:
            logger.exception("toolvocab: response hook failed; answer passed through")
            state.record.notes.append(
                passed_note(
                    f"internal error in the response hook ({type(exc).__name__}: {exc})",
                    "the client got the answer as it stood then (as the upstream sent it, unless a repair came first)",
                )
            )
        self._finish(flow, state)

    def error(self, flow: http.HTTPFlow) -> None:
        """A flow that ended without a response (client or upstream gone): keep what we know."""
        state = self._states.pop(flow.id, None)
        if state is None:
            KeptStream.keep_in(flow)
        else:
            state.record.notes.append(f"flow ended with an error: {flow.error.msg if flow.error else 'unknown'}")
            if state.stream is not None:
                self._deliver_rest(flow, state)
            self._finish(flow, state)

    def _finish(self, flow: http.HTTPFlow, state: FlowState) -> None:
        """The flow's record, marker and comment (:meth:`ToolVocabRecorder.finish`); for a flow
        whose request the whole read refused once its answer would have changed
        (:meth:`FlowState.may_change`), the record the request hook gives such a request. An
        answer that streamed unread is kept first (:class:`KeptStream`)."""
        KeptStream.keep_in(flow)
        if state.decoded is not None:
            state.decoded.close()
        if state.stream is not None:
            state.stream.close()
        if state.refused is None:
            self.recorder.finish(flow, state)
            return
        if state.stream is not None:
            state.stream.release()
        flow.metadata[METADATA_KEY] = state.record.dump()

    def _deliver_rest(self, flow: http.HTTPFlow, state: FlowState) -> None:
        """The upstream (or the client) ended a streamed answer mid-stream: send the client every
        byte received and not yet sent, unchanged but for names given back (:meth:`drain`). mitmproxy calls the stream callable
        no more (G3); this ``error`` hook is the last code that runs before it closes the client
        connection (``HttpStream.handle_protocol_error``: the hook, then the error to the
        client; 11.0.2 and 12.x), so the bytes are written to the client connection here."""
        stream = state.stream
        assert stream is not None
        try:
            data = stream.drain()
            if not data:
                return
            how = send_to_client(flow, data)
            if how is not None:
                stream.delivered(data)
            if how is None:
                state.record.notes.append(
                    f"{len(data)} bytes received and not yet sent could not reach the client (its connection is gone)"
                )
            else:
                state.record.notes.append(
                    passed_note(
                        "the upstream ended the stream mid-way",
                        f"the client got the {len(data)} bytes received and not yet sent as they came"
                        + (
                            f" but for names given back ({', '.join(stream.drained_names)})"
                            if stream.drained_names
                            else ""
                        )
                        + f" ({how})",
                    )
                )
        except Exception as exc:
            logger.exception("toolvocab: could not deliver the rest of the stream")
            state.record.notes.append(f"rest of the stream not delivered ({type(exc).__name__}: {exc})")

    # -- internals ----------------------------------------------------------------------------

    def _skip(self, flow: http.HTTPFlow, reason: str, dialect: str | None = None) -> None:
        flow.metadata[METADATA_KEY] = FlowRecord(mode=self.mode, dialect=dialect, skipped=reason).dump()

    def _request(self, flow: http.HTTPFlow) -> None:
        req = flow.request
        if req.method != "POST":
            return
        host = pretty_host(req)
        if self.hosts is not None and not self.hosts.search(host):
            return
        header = header_reader(req.headers)
        try:
            # ``req.content`` walks the header fields for content-encoding; none (as mitmproxy's
            # ``Message.get_content`` tests it): the raw bytes are the content
            content = req.content if header("content-encoding") else req.raw_content
        except ValueError as exc:
            self._skip(flow, f"request body could not be decoded ({exc})")
            return
        if not content:
            self._skip(flow, "request has no body")
            return
        result = pipeline.handle(
            pipeline.Request(content, req.method, req.path, host, header), self.settings(), self.caches
        )
        if result is None:
            return
        if isinstance(result, pipeline.Skipped):
            self._skip(flow, result.reason, result.dialect)
            return
        state = FlowState(
            result.dialect,
            result.tools,
            result.plan,
            result.record,
            wants_stream=result.wants_stream,
            windows=result.windows,
            flow_key=flow.id,
            call_ids=result.call_ids,
            shared=result.shared,
            record_json=result.record_json,
            stored=result.stored,
            stops=result.stops,
            limited=result.limited,
            allowed=result.allowed,
        )
        state.request_body = content
        if not result.verified:
            state.unverified = content
        if self.mode in ("auto", "repair"):
            if result.content is not None:
                state.original_request = content
                req.content = result.content
            # Streams are rewritten as they pass; compressed bytes cannot be (mitmproxy G5). A
            # signed request's headers stay as signed (an upstream that compresses anyway is
            # read through a decoder: _responseheaders).
            accept = header("accept-encoding")
            if result.signed is None and accept != "identity":  # else anticomp() writes it again
                _changed_header(flow, "request", "accept-encoding", accept)
                req.anticomp()
        self._states[flow.id] = state
        # the record as the pipeline started it, when its dump is at hand: the same dict
        flow.metadata[METADATA_KEY] = (
            orjson.loads(result.record_json) if result.record_json is not None else result.record.dump()
        )

    def settings(self) -> pipeline.Settings:
        """The options as :func:`toolvocab.dialects.pipeline.handle` takes them."""
        return pipeline.Settings(mode=self.mode, profiles=self.profiles, classify_results=self.recorder.saves_bodies())

    def _responseheaders(self, flow: http.HTTPFlow, state: FlowState) -> None:
        resp = flow.response
        assert resp is not None
        if not 200 <= resp.status_code < 300:
            return
        if resp.status_code in (204, 205) or flow.request.method == "HEAD":
            # No body by definition (RFC 9110 §15.3.5, §15.3.6, §9.3.2): a chunked framing
            # would put a stray "0\r\n\r\n" on the connection, read as the next response.
            return
        header = header_reader(resp.headers)  # one walk over the fields for the names read here
        ctype = (header("content-type") or "").lower()
        is_sse = "text/event-stream" in ctype
        if _AWS_EVENT_STREAM in ctype:
            # Bedrock's binary event-stream frames: not read (the request hook changed no name
            # upstream for such a request: Dialect.answers_unread); they go out as they arrive,
            # kept when something saves flows
            state.record.notes.append("the answer is AWS event-stream frames, which toolvocab does not read")
            self._pass_streaming(resp, state, None)
            return
        if not is_sse and not state.wants_stream:
            return  # buffered; handled in response()
        coding = header("content-encoding")
        encoding = ("identity" if coding is None else coding).strip().lower()
        decoder = None
        if encoding not in ("", "identity"):
            # The request asked for identity (request()); an upstream that compresses anyway is
            # read through a decoder and the client gets the stream decoded. Observe mode leaves
            # the client's accept-encoding, and the bytes, as they were.
            if state.shared_record.mode != "observe":
                decoder = decoding.stream_decoder(encoding)
            if decoder is not None and not state.may_change():
                return self._pass_streaming(resp, state, None)  # the strict read's refusal says why
            if decoder is None:
                return self._pass_streaming(
                    resp, state, f"the streamed answer is {encoding}-encoded and cannot be read as it streams"
                )
            _changed_header(flow, "response", "content-encoding", coding)
            del resp.headers["content-encoding"]
        length = header("content-length")
        if length is not None:
            _changed_header(flow, "response", "content-length", length)
            del resp.headers["content-length"]
            if flow.request.http_version == "HTTP/1.1":
                _changed_header(flow, "response", "transfer-encoding", header("transfer-encoding"))
                resp.headers["transfer-encoding"] = "chunked"
        # A stream request answered with JSON (an error, or a server that ignored "stream") is
        # buffered inside the callable and rewritten whole at the end.
        state.stream = StreamCallable(
            state,
            observe=state.shared_record.mode == "observe",  # read: a shared record stays shared
            keep=self.recorder.saves_bodies(),
            hold_timeout=self.hold_timeout,
            send=lambda data: send_to_client(flow, data),
        )
        # the record says streamed at the finish: a shared one stays shared until then
        if decoder is None:
            resp.stream = state.stream
        else:
            resp.stream = state.decoded = DecodedStream(state.stream, decoder, keep=state.stream.keep)

    def _pass_streaming(self, resp: http.Response, state: FlowState, why: str | None) -> None:
        """The answer streams to the client as the upstream sends it, unread (``why``, for the
        record; ``None`` when the record already says it), and is kept as it came when
        something saves or shows flows (:class:`KeptStream`, taken at :meth:`_finish`)."""
        if why is not None:
            state.record.notes.append(passed_note(why, "the client got it as the upstream sent it"))
        resp.stream = _unread_stream(resp, keep=self.recorder.saves_bodies(), limited=False)
        state.passed_streaming = True

    def _response(self, flow: http.HTTPFlow, state: FlowState) -> None:
        resp = flow.response
        if resp is None:
            return
        if state.stream is not None:
            # Whether the answer changed is what the client got: ToolVocabRecorder.finish reads it
            # off the stream callable (a repair sent before a later failure reached the client too).
            return
        if not 200 <= resp.status_code < 300:
            state.record.notes.append(f"upstream answered {resp.status_code}; passed through")
            return
        if resp.stream or resp.raw_content is None:
            # streamed: the client has it (a body mitmproxy 12 stored, store_streamed_bodies, is
            # what the client got, not one to rewrite)
            if state.passed_streaming:
                return  # responseheaders said why
            state.record.notes.append(
                passed_note(
                    "the answer was streamed by another setting (stream_large_bodies?) before toolvocab could read it",
                    "the client got it as the upstream sent it",
                )
            )
            return
        plain = False  # the body read through toolvocab's own decoder: the client gets it decoded
        try:
            content = resp.content
        except ValueError as exc:
            # A coding mitmproxy reads whole only when it is all there (bytes after a gzip
            # member, a cut trailer, a list of codings): a client's decoder may still read it,
            # as toolvocab's stream decoder does (it gives what decodes, drops what follows).
            coding = resp.headers.get("content-encoding", "")
            lenient = (
                None if state.shared_record.mode == "observe" else decoding.decode_leniently(resp.raw_content, coding)
            )
            if lenient is None:  # its first bytes are not the coding: no client reads it either
                state.record.notes.append(
                    passed_note(
                        f"the answer body could not be decoded ({exc})", "the client got it as the upstream sent it"
                    )
                )
                return
            content, plain = lenient, True
        if not content:
            return
        try:
            # a byte order mark in front (a client's JSON reader skips it, as its event-stream
            # parser does) is kept in front of what is written
            new = state.rewrite_json(content, observe=state.shared_record.mode == "observe")
        except AnswerNotJSON:
            rest = jsonio.split_bom(content)[1]
            if "text/event-stream" in resp.headers.get("content-type", "").lower() or rest.lstrip()[:6] in (
                b"event:",
                b"data: ",
            ):
                self._rewrite_buffered_sse(flow, state, content, plain)
            else:
                state.record.notes.append("answer body is not JSON; passed through")
            return
        if new is not None:
            _write_answer(flow, state, new, plain)

    def _rewrite_buffered_sse(self, flow: http.HTTPFlow, state: FlowState, content: bytes, plain: bool) -> None:
        rewriter = state.rewriter()
        out = b"".join(rewriter.feed(content) + rewriter.finish())
        if rewriter.error:
            state.record.notes.append(rewriter_note(rewriter.error))
        if rewriter.contained:
            state.record.notes.append(rewriter_note(rewriter.contained, names_back=True))
        note_unrepaired(rewriter, state.record, 0)
        if out != content and state.record.mode != "observe" and state.may_change():
            _write_answer(flow, state, out, plain)
