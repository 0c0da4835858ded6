"""The per-flow record: stored in ``flow.metadata`` with what a replay needs, the flow marked and
commented for mitmproxy's UI, one log line, and the flow written to ``toolvocab_record``.

Option: ``toolvocab_record``. The repair and WebSocket addons call :meth:`ToolVocabRecorder.finish`
when a flow (or a WebSocket turn) is done.
"""

from __future__ import annotations

import logging
import os
import time
from collections import OrderedDict
from typing import TYPE_CHECKING
from typing import Any

import orjson
from mitmproxy import exceptions
from mitmproxy import http

from toolvocab.addons.options import Configurable
from toolvocab.addons.options import check_deferred
from toolvocab.dialects.pipeline import RECORD_CACHE
from toolvocab.engine.plan import cache_get
from toolvocab.engine.record import FlowRecord
from toolvocab.report import CHANGED
from toolvocab.report import LEFT
from toolvocab.report import MARKERS
from toolvocab.report import METADATA_DIFF
from toolvocab.report import METADATA_KEY
from toolvocab.report import METADATA_REQUEST
from toolvocab.report import METADATA_UPSTREAM
from toolvocab.report import OBSERVED
from toolvocab.report import PASSED
from toolvocab.report import comment
from toolvocab.report import left_line
from toolvocab.report import log_kind
from toolvocab.report import log_line
from toolvocab.report import outcome
from toolvocab.report import passed_line
from toolvocab.report import would_change

if TYPE_CHECKING:
    from toolvocab.addons.redaction import ToolVocabRedaction
    from toolvocab.addons.state import FlowState

logger = logging.getLogger(__name__)

#: How many shared records' :meth:`ToolVocabRecorder._quiet` are kept (as many as the pipeline
#: keeps records: ``toolvocab.dialects.pipeline.RECORD_CACHE``).
QUIET_CACHE = RECORD_CACHE

MARK_CHANGED = MARKERS[CHANGED]
MARK_OBSERVED = MARKERS[OBSERVED]
#: The markers and comment beginnings toolvocab sets (so that it clears only its own).
OWN_MARKERS = tuple(m for m in MARKERS.values() if m)
OWN_COMMENTS = (
    "changed: ",
    "left: ",
    "passed through: ",
    "prompt sentence only: ",
    "would change (observe): ",
    "toolvocab",
)


class ToolVocabRecorder(Configurable):
    """Finishes each handled flow's record (:meth:`finish`) and writes changed flows to
    ``toolvocab_record``; ``redaction``: the addon whose redaction every written flow gets.
    ``mode`` is read from ``toolvocab_mode`` (declared by the repair addon)."""

    def __init__(self, redaction: ToolVocabRedaction | None = None) -> None:
        self.redaction = redaction
        self.record_dir: str | None = None
        #: (master, :meth:`mitmproxy_keeps`) as last worked out; forgotten at every option change
        self._saves: tuple[Any, bool] | None = None
        #: :meth:`_quiet` by shared record (its id; the record kept, so that no id is reused)
        self._quiets: OrderedDict[int, tuple[FlowRecord, bool]] = OrderedDict()

    def load(self, loader: Any) -> None:
        """Register ``toolvocab_record``."""
        loader.add_option(
            name="toolvocab_record",
            typespec=str | None,
            default=None,
            help=(
                "Directory: write each flow toolvocab changed (in auto mode a request given only the prompt sentence "
                "counts; in observe mode: would change), left a call in (the client will reject it) or passed through "
                "(could not repair) as its own .mitm file there, credentials redacted, with what a replay needs."
            ),
        )
        check_deferred(loader, ("toolvocab_record",), optional=("toolvocab_record",))

    def _configure(self, updated: set[str]) -> None:
        """Validate ``toolvocab_record`` (a writable directory); raises ``OptionsError``."""
        from mitmproxy import ctx

        self._saves = None  # any option may be one saves_bodies reads (-w, hardump)
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

    def saves_bodies(self) -> bool:
        """Whether something saves or shows a flow toolvocab handles: ``toolvocab_record``, or
        mitmproxy itself (:meth:`mitmproxy_keeps`). Then a streamed answer's bytes are kept for
        the flow and the transcript's tool errors are classified for the record (nothing
        proportional to a body is kept or computed unless someone reads it)."""
        return bool(self.record_dir) or self.mitmproxy_keeps()

    def mitmproxy_keeps(self) -> bool:
        """Whether mitmproxy saves or shows flows, whoever handles them: ``-w``
        (``save_stream_file``), ``hardump``, mitmdump printing bodies (``flow_detail`` 3 or
        more: ``mitmproxy/addons/dumper.py``), or any master but mitmdump's (mitmweb and the
        console show flows; test masters inspect them). ``toolvocab_record`` is not counted: it
        writes only flows toolvocab handled."""
        from mitmproxy import ctx

        master = getattr(ctx, "master", None)
        if self._saves is not None and self._saves[0] is master:
            return self._saves[1]  # worked out once per option change: asked twice a flow
        try:
            options = ctx.options
            saves = bool(any(getattr(options, name, None) for name in ("save_stream_file", "hardump")))
            saves = saves or getattr(options, "flow_detail", 0) >= 3
            saves = saves or type(master).__name__ != "DumpMaster"
        except Exception:
            return True
        self._saves = (master, saves)
        return saves

    def finish(self, flow: http.HTTPFlow, state: FlowState) -> None:
        """Store the record and what a replay needs, mark and comment the flow, write it to
        ``toolvocab_record``. Never raises."""
        try:
            stream = state.stream
            if (
                state.record_untouched
                and (stream is None or not (stream.differs or stream.changed or stream.keep))
                and state.original_request is None
                and self._quiet(state.shared_record)
            ):
                self._finish_untouched(flow, state)
                return
            record = state.record
            observe = record.mode == "observe"  # the mode this flow's request was handled in
            if stream is not None:
                record.streamed = True
            for name, value in _timings(flow).items():
                setattr(record, name, value)
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
                    if state.decoded is not None and state.decoded.raw is not None:
                        # the client got the answer decoded; a replay starts from what came
                        state.upstream_raw = bytes(state.decoded.raw)
                        state.decoded.raw = None  # the flow keeps the callable: not its buffer
                    elif stream.differs:
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
            dumped = flow.metadata[METADATA_KEY]
            state_name = self.show(flow, state.logged)
            would = observe and would_change(dumped)
            if self.record_dir and (
                record.request_changed or record.response_changed or would or state_name in (LEFT, PASSED)
            ):
                self._write(flow, record)
        except Exception:
            logger.exception("toolvocab: could not store the flow record")

    def _finish_untouched(self, flow: http.HTTPFlow, state: FlowState) -> None:
        """:meth:`finish` for a flow whose record is still the shared one its request started
        (:attr:`FlowState.record_untouched`: the answer added no decision and no note, and
        changed nothing; a stream's bytes went out as they came, and nothing keeps them) and
        shows nothing (:meth:`_quiet`): what :meth:`finish` stores and shows for it, from the
        shared record's dump."""
        dumped = orjson.loads(state.record_json)  # type: ignore[arg-type]  # untouched: not None
        dumped.update(_timings(flow))
        if state.stream is not None:
            dumped["streamed"] = True
            state.stream.release()
        flow.metadata[METADATA_KEY] = dumped
        self._mark(flow, None, "")
        _make_storable(flow)  # as show() does: what another script put there is saved too

    def _quiet(self, template: FlowRecord) -> bool:
        """True for a record that, as it is (but for its timings, which change none of this),
        shows nothing: no state (:func:`outcome`), so no marker, comment or log line; no diff;
        nothing to write to ``toolvocab_record``. Worked out once for each of the last
        :data:`QUIET_CACHE` shared records."""
        entry = cache_get(self._quiets, id(template))
        if entry is not None and entry[0] is template:
            return entry[1]
        dumped = template.dump()
        quiet = not (
            outcome(dumped) is not None
            or template.diff_lines()
            or template.request_changed
            or template.response_changed
            or (template.mode == "observe" and would_change(dumped))
        )
        self._quiets[id(template)] = (template, quiet)
        if len(self._quiets) > QUIET_CACHE:
            self._quiets.popitem(last=False)
        return quiet

    def show(self, flow: http.HTTPFlow, logged: set[str] | None = None) -> str | None:
        """Show the state of the record in ``flow.metadata`` (:func:`toolvocab.report.outcome`): its
        marker and comment, and its log lines (each line once per ``logged`` set: a WebSocket's
        later turns log again only when a line differs). Returns the state. For :meth:`finish`,
        and for a flow the repair addon gave up on before it had a state (the request hook)."""
        dumped = flow.metadata.get(METADATA_KEY)
        state_name = outcome(dumped)
        self._mark(flow, state_name, comment(dumped) if state_name is not None else "")
        # A name may hold a lone surrogate (a JSON escape the client sent): what the flow
        # stores must encode as UTF-8, or saving it (-w) fails.
        _make_storable(flow)
        if isinstance(dumped, dict):
            self._log(dumped, set() if logged is None else logged)
        return state_name

    @staticmethod
    def _mark(flow: http.HTTPFlow, state_name: str | None, text: str) -> None:
        """The marker and comment (``text``) of state ``state_name``; for none, toolvocab's own
        marker and comment cleared (an earlier turn of this WebSocket, or a replay's first pass,
        left its state)."""
        if state_name is not None:
            flow.marked = MARKERS[state_name]
            flow.comment = text
        elif flow.comment.startswith(OWN_COMMENTS) or flow.marked in OWN_MARKERS:
            flow.marked, flow.comment = "", ""

    @staticmethod
    def _log(record: dict, logged: set[str]) -> None:
        """The flow's lines: ``info`` for a change (``debug`` when only the prompt sentence was
        added), ``info`` for calls left as answered, ``warning`` for a give-up (why, and what the
        client got); each once per ``logged``."""
        lines = []
        kind = log_kind(record)
        if kind:
            lines.append((logging.DEBUG if kind == "prompt" else logging.INFO, log_line(record)))
        left = left_line(record)
        if left:
            lines.append((logging.INFO, left))
        passed = passed_line(record)
        if passed:
            lines.append((logging.WARNING, passed))
        for level, line in lines:
            if line not in logged:
                logged.add(line)
                logger.log(level, line)

    def _write(self, flow: http.HTTPFlow, record: FlowRecord) -> None:
        """Write ``flow`` alone to ``toolvocab_record`` (redacted like every save), making the
        folder again if it went away; a write that fails is one ``warn`` line saying why."""
        from mitmproxy import io

        if self.redaction is not None:
            self.redaction.install(flow)  # a flow whose requestheaders hook never ran for us

        assert self.record_dir is not None
        stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(flow.timestamp_created))
        path = os.path.join(self.record_dir, f"{stamp}-{record.dialect or 'flow'}-{flow.id[:8]}.mitm")
        try:
            os.makedirs(self.record_dir, exist_ok=True)
            with open(path, "wb") as fp:
                io.FlowWriter(fp).add(flow)
        except OSError as exc:
            logger.warning("toolvocab: could not record flow %s in %s: %s", flow.id[:8], self.record_dir, exc)
            return
        logger.info("toolvocab: recorded %s", path)


def _timings(flow: http.HTTPFlow) -> dict[str, Any]:
    """The record's upstream ``status`` and latencies (``ttfb_ms``, ``total_ms``: ms, one decimal)
    from mitmproxy's timestamps (seconds), those the flow has."""
    resp, start = flow.response, flow.request.timestamp_start
    if resp is None or not start:
        return {}
    out: dict[str, Any] = {"status": resp.status_code}
    if resp.timestamp_start:
        out["ttfb_ms"] = round((resp.timestamp_start - start) * 1000.0, 1)  # a float, as the record dumps it
    if resp.timestamp_end:
        out["total_ms"] = round((resp.timestamp_end - start) * 1000.0, 1)
    return out


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
