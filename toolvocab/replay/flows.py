"""Saved flows as toolvocab writes them (``mitmdump -w``, ``toolvocab_record``, ``flows/``): the
metadata keys, reading ``.mitm`` files, the client's original request and the upstream's
original answer a flow keeps, and whether a flow can be replayed.

A saved flow holds ``flow.request`` (what the upstream received, after the addon's request hook),
``flow.response.raw_content`` (what the client received: for a streamed answer the addon stores
the bytes it sent, mitmproxy G6), ``metadata["toolvocab"]`` (the record), ``["toolvocab_request"]``
(the client's original body, only when the addon changed it), ``["toolvocab_upstream"]`` (the
upstream's original answer, only when the addon changed it), ``["toolvocab_diff"]`` (a readable
diff), ``["toolvocab_headers"]`` (the headers the addon changed, as they were) and, optionally, ``["toolvocab_replay"]`` (the options to replay with: ``mode``,
``profiles`` as TOML text, ``hosts``; the flow corpus sets it).
"""

from __future__ import annotations

import copy
import os
from typing import Any

from mitmproxy import http
from mitmproxy import io as mio

from toolvocab.report import METADATA_DIFF as META_DIFF
from toolvocab.report import METADATA_HEADERS as META_HEADERS
from toolvocab.report import METADATA_KEY as META_RECORD
from toolvocab.report import METADATA_REQUEST as META_REQUEST
from toolvocab.report import METADATA_UPSTREAM as META_UPSTREAM

#: Metadata of ours that is not the addon's: the options to replay a flow with.
META_REPLAY = "toolvocab_replay"

#: Metadata the addon writes; cleared before a replay so the replay writes it afresh.
ADDON_KEYS = (META_RECORD, META_REQUEST, META_UPSTREAM, META_DIFF, META_HEADERS)

#: Record fields that differ from run to run and are never compared.
RUN_SPECIFIC = frozenset({"ttfb_ms", "total_ms"})

DIALECTS = ("anthropic", "openai_chat", "openai_responses", "gemini")


def load_flows(path: str | os.PathLike) -> list[http.HTTPFlow]:
    """Every HTTP flow in a flow file (other flow types are skipped); raises
    ``mitmproxy.exceptions.FlowReadException`` for a file that is not one."""
    with open(path, "rb") as fp:
        return [f for f in mio.FlowReader(fp).stream() if isinstance(f, http.HTTPFlow)]


def clone(f: http.HTTPFlow) -> http.HTTPFlow:
    """A deep copy that keeps the flow id (``Flow.copy()`` would give a new one)."""
    return http.HTTPFlow.from_state(copy.deepcopy(f.get_state()))


def is_toolvocab_flow(f: http.HTTPFlow) -> bool:
    return isinstance(f.metadata.get(META_RECORD), dict)


#: The notes the stall bound writes when the ``toolvocab_hold_timeout`` timer released a held
#: block (``toolvocab/addons/stream.py``, ``_release_stalled``: the release names the option;
#: ``_on_timer``: a failed release says so).
HOLD_TIMEOUT_NOTE = "(toolvocab_hold_timeout "
HOLD_FAILED_NOTE = "stalled hold not released"


def replayable(f: http.HTTPFlow) -> str | None:
    """``None`` when ``f`` can be replayed and its replay can match the recording, else why not
    (one phrase): no toolvocab record, a WebSocket flow, an answer body that was not saved, or an
    outcome that depended on timing or on the connections (:func:`not_reproducible`)."""
    if not is_toolvocab_flow(f):
        return "no toolvocab record (the addon did not handle it)"
    if f.websocket is not None:
        return "a WebSocket flow (the replay drives HTTP hooks only)"
    if f.response is not None and f.response.raw_content is None and f.metadata.get(META_UPSTREAM) is None:
        return "the answer body was not saved (streamed without the addon's stream callable)"
    return not_reproducible(f)


def not_reproducible(f: http.HTTPFlow) -> str | None:
    """Why what ``f`` recorded depended on timing or on the connections, which an offline replay
    does not have; ``None`` when it did not.

    * the answer ended in an error (``f.error`` with a response: the upstream closed or reset the
      connection mid-answer, the client hung up, the flow was killed): what the client got then
      depended on the connections (the addon writes the rest of a held stream to the client
      connection, which a replay has not got);
    * the ``toolvocab_hold_timeout`` timer released a held tool call (the upstream stalled):
      the note the release writes (:data:`HOLD_TIMEOUT_NOTE`, :data:`HOLD_FAILED_NOTE`).

    A flow that ended in an error before any answer (no response) stays replayable: the request
    the upstream received and the record do not depend on the connection."""
    if f.error is not None and f.response is not None:
        return (
            f"the answer ended in an error ({f.error.msg}): what the client got depended on the connections, "
            "which an offline replay does not have"
        )
    record = f.metadata.get(META_RECORD) or {}
    notes = record.get("notes") or []
    if any(isinstance(n, str) and (HOLD_TIMEOUT_NOTE in n or n.startswith(HOLD_FAILED_NOTE)) for n in notes):
        return (
            "the hold timeout (toolvocab_hold_timeout) released a held tool call while the upstream was silent: "
            "an offline replay has no timing and would hold the call to its end"
        )
    return None


def missing_profile(f: http.HTTPFlow, profiles_given: bool) -> str | None:
    """Why ``f`` cannot be replayed as recorded: its record names the rename profile that was in
    force (``profile``), no profile file was given (``profiles_given``: ``--profiles``) and the
    flow carries none (``toolvocab_replay``'s ``profiles``; recordings never do, only the
    repository's corpus). ``None`` when a profile file is at hand or none was in force."""
    record = f.metadata.get(META_RECORD) or {}
    name = record.get("profile")
    if not name or profiles_given or replay_options(f).get("profiles"):
        return None
    return (
        f"recorded under profile {name}: give --profiles FILE (the toolvocab_profiles file it was recorded with; "
        "recordings do not store it, and without it the replay runs with no profile)"
    )


def _as_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return bytes(value)


def request_body(req: http.Request) -> bytes:
    """A request body as the upstream reads it (content-decoded; raw bytes if undecodable)."""
    return req.get_content(strict=False) or b""


def original_request(f: http.HTTPFlow) -> bytes:
    """The client's request body: ``toolvocab_request`` when the addon changed it, else the saved one."""
    saved = _as_bytes(f.metadata.get(META_REQUEST))
    return saved if saved is not None else request_body(f.request)


def original_upstream(f: http.HTTPFlow) -> bytes | None:
    """The upstream's answer bytes: ``toolvocab_upstream`` when the addon changed them, else the saved ones."""
    if f.response is None:
        return None
    saved = _as_bytes(f.metadata.get(META_UPSTREAM))
    return saved if saved is not None else (f.response.raw_content or b"")


def comparable_record(record: Any) -> Any:
    if not isinstance(record, dict):
        return record
    return {k: v for k, v in record.items() if k not in RUN_SPECIFIC}


def replay_options(f: http.HTTPFlow) -> dict[str, Any]:
    """The addon options for replaying ``f``: ``toolvocab_replay`` metadata, else the record's mode."""
    opts = f.metadata.get(META_REPLAY)
    opts = dict(opts) if isinstance(opts, dict) else {}
    record = f.metadata.get(META_RECORD) or {}
    opts.setdefault("mode", record.get("mode") or "auto")
    return opts
