"""Replay saved toolvocab flows through the real addon, compare, scrub and re-bless them.

Shared by ``tests/test_flows.py`` (pytest over ``flows/``) and ``tests/flowtool.py`` (the CLI). The
replay itself (and reading tool calls, rendering a difference) is the package's
:mod:`toolvocab.replay`, which ``toolvocab replay`` runs for users' recordings.
A flow file is what ``mitmdump -w`` (or ``--set toolvocab_record=DIR``) writes for a flow the
addon handled:

* ``flow.request``: what the upstream received (after the addon's request hook);
* ``flow.response.raw_content``: what the client received (for streamed answers the addon
  stores the bytes it sent, mitmproxy G6);
* ``flow.metadata["toolvocab"]`` the record, ``["toolvocab_request"]`` the client's original
  body (only when the addon changed it), ``["toolvocab_upstream"]`` the upstream's original
  answer bytes (only when the addon changed them), ``["toolvocab_diff"]`` a readable diff;
* ``flow.metadata["toolvocab_replay"]`` (ours, optional): the options to replay with
  (``mode``, ``profiles`` as TOML text, ``hosts``).

A replay drives the script exactly as mitmproxy's proxy core does (reference §2, §5): the
ORIGINAL request through requestheaders → request, then responseheaders, then — when the addon
installed a stream callable — the ORIGINAL upstream bytes through it in random 1–64-byte pieces
and a final ``b""``, then the response hook (or the error hook for a flow that ended in an
error). The flow keeps its saved id, so ids the addon derives from it (``tc_…``) are stable.

One module per job: :mod:`flowreplay.files` (the corpus, ``.mitm`` files, metadata keys),
:mod:`flowreplay.replay` (replay and compare), :mod:`flowreplay.calls` (tool calls, declared
names and system slots read from bodies), :mod:`flowreplay.scrub` (credentials and prose out of a
captured flow; the leak check), :mod:`flowreplay.render` (failures and flows as text),
:mod:`flowreplay.manifest` (``flows/MANIFEST.toml``), :mod:`flowreplay.checks` (what
tests/test_flows.py checks, which ``flowtool replay`` runs too). Each imports only the ones before it; this
package re-exports their names, so ``import flowreplay as fr`` and ``fr.replay_file(...)`` work
as before. ``fr.FLOWS_DIR`` and ``fr.MANIFEST`` are read from :mod:`flowreplay.files` when asked
(point the tools at another corpus by setting ``flowreplay.files.FLOWS_DIR``).

Nothing here imports ``addon/toolvocab.py`` as a module (a second module object would not be
the one whose hooks run); the script is loaded and driven by ``tests/harness/`` (as for every
test that drives the hooks).
"""

from __future__ import annotations

from typing import Any

from flowreplay import files  # noqa: F401
from flowreplay import replay  # noqa: F401
from flowreplay import calls  # noqa: F401
from flowreplay import scrub  # noqa: F401
from flowreplay import render  # noqa: F401
from flowreplay import manifest  # noqa: F401
from flowreplay import checks  # noqa: F401
from flowreplay.files import (  # noqa: F401
    REPO,
    META_RECORD,
    META_REQUEST,
    META_UPSTREAM,
    META_DIFF,
    META_REPLAY,
    ADDON_KEYS,
    RUN_SPECIFIC,
    DIALECTS,
    NEUTRAL_SYSTEM,
    NEUTRAL_CONTEXT,
    NEUTRAL_DESCRIPTION,
    NEUTRAL_TEXTS,
    load_flows,
    write_flows,
    corpus_files,
    rel,
)
from flowreplay.replay import (  # noqa: F401
    clone,
    is_toolvocab_flow,
    replayable,
    _as_bytes,
    request_body,
    original_request,
    original_upstream,
    comparable_record,
    Outcome,
    records_match,
    mismatches,
    random_chunks,
    replay_options,
    Replay,
    Replayer,
    prepare,
    replay_file,
    _replay_all,
)
from flowreplay.calls import (  # noqa: F401
    Call,
    _args,
    sse_events,
    _json_units,
    _unwrap_gemini,
    tool_calls,
    _anthropic_calls,
    _chat_calls,
    _responses_item_call,
    _responses_calls,
    _gemini_calls,
    parse_json,
    _gemini_request,
    declared_names,
    _text_of,
    system_slots,
    system_text_problems,
    client_calls,
    client_call_keys,
    ID_DIALECTS,
    semantic_problems,
)
from flowreplay.scrub import (  # noqa: F401
    CONTEXT_MARKERS,
    CREDENTIAL_HEADERS,
    COOKIE_HEADERS,
    IDENTIFYING_HEADERS,
    REDACTED,
    _KEY_PARAM,
    _neutral_content,
    _has_context_marker,
    _scrub_user_parts,
    _scrub_descriptions,
    scrub_body,
    _scrub_headers,
    scrub_flow,
    _SECRETISH,
    leaks,
)
from flowreplay.render import (  # noqa: F401
    _decision_lines,
    _side_by_side,
    _pretty,
    _unified,
    _record_field_lines,
    flow_title,
    render_failure,
    _answer_lines,
    describe_flow,
)
from flowreplay.manifest import (  # noqa: F401
    read_manifest,
    _toml_value,
    FLOW_KEYS,
    write_manifest,
    MANIFEST_HEADER,
    manifest_entry,
)


def __getattr__(name: str) -> Any:
    """``FLOWS_DIR`` and ``MANIFEST`` as :mod:`flowreplay.files` holds them now (PEP 562)."""
    if name == "FLOWS_DIR":
        return files.FLOWS_DIR
    if name == "MANIFEST":
        return files.FLOWS_DIR / "MANIFEST.toml"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
