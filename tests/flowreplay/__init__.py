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

from flowreplay import calls  # noqa: F401
from flowreplay import checks  # noqa: F401
from flowreplay import files  # noqa: F401
from flowreplay import manifest  # noqa: F401
from flowreplay import render  # noqa: F401
from flowreplay import replay  # noqa: F401
from flowreplay import scrub  # noqa: F401
from flowreplay.calls import ID_DIALECTS  # noqa: F401
from flowreplay.calls import Call  # noqa: F401
from flowreplay.calls import _anthropic_calls  # noqa: F401
from flowreplay.calls import _args  # noqa: F401
from flowreplay.calls import _chat_calls  # noqa: F401
from flowreplay.calls import _gemini_calls  # noqa: F401
from flowreplay.calls import _gemini_request  # noqa: F401
from flowreplay.calls import _json_units  # noqa: F401
from flowreplay.calls import _responses_calls  # noqa: F401
from flowreplay.calls import _responses_item_call  # noqa: F401
from flowreplay.calls import _text_of  # noqa: F401
from flowreplay.calls import _unwrap_gemini  # noqa: F401
from flowreplay.calls import client_call_keys  # noqa: F401
from flowreplay.calls import client_calls  # noqa: F401
from flowreplay.calls import declared_names  # noqa: F401
from flowreplay.calls import parse_json  # noqa: F401
from flowreplay.calls import semantic_problems  # noqa: F401
from flowreplay.calls import sse_events  # noqa: F401
from flowreplay.calls import system_slots  # noqa: F401
from flowreplay.calls import system_text_problems  # noqa: F401
from flowreplay.calls import tool_calls  # noqa: F401
from flowreplay.files import ADDON_KEYS  # noqa: F401
from flowreplay.files import DIALECTS  # noqa: F401
from flowreplay.files import META_DIFF  # noqa: F401
from flowreplay.files import META_RECORD  # noqa: F401
from flowreplay.files import META_REPLAY  # noqa: F401
from flowreplay.files import META_REQUEST  # noqa: F401
from flowreplay.files import META_UPSTREAM  # noqa: F401
from flowreplay.files import NEUTRAL_CONTEXT  # noqa: F401
from flowreplay.files import NEUTRAL_DESCRIPTION  # noqa: F401
from flowreplay.files import NEUTRAL_SYSTEM  # noqa: F401
from flowreplay.files import NEUTRAL_TEXTS  # noqa: F401
from flowreplay.files import REPO  # noqa: F401
from flowreplay.files import RUN_SPECIFIC  # noqa: F401
from flowreplay.files import corpus_files  # noqa: F401
from flowreplay.files import load_flows  # noqa: F401
from flowreplay.files import rel  # noqa: F401
from flowreplay.files import write_flows  # noqa: F401
from flowreplay.manifest import FLOW_KEYS  # noqa: F401
from flowreplay.manifest import MANIFEST_HEADER  # noqa: F401
from flowreplay.manifest import _toml_value  # noqa: F401
from flowreplay.manifest import manifest_entry  # noqa: F401
from flowreplay.manifest import read_manifest  # noqa: F401
from flowreplay.manifest import write_manifest  # noqa: F401
from flowreplay.render import _answer_lines  # noqa: F401
from flowreplay.render import _decision_lines  # noqa: F401
from flowreplay.render import _pretty  # noqa: F401
from flowreplay.render import _record_field_lines  # noqa: F401
from flowreplay.render import _side_by_side  # noqa: F401
from flowreplay.render import _unified  # noqa: F401
from flowreplay.render import describe_flow  # noqa: F401
from flowreplay.render import flow_title  # noqa: F401
from flowreplay.render import render_failure  # noqa: F401
from flowreplay.replay import Outcome  # noqa: F401
from flowreplay.replay import Replay  # noqa: F401
from flowreplay.replay import Replayer  # noqa: F401
from flowreplay.replay import _as_bytes  # noqa: F401
from flowreplay.replay import _replay_all  # noqa: F401
from flowreplay.replay import clone  # noqa: F401
from flowreplay.replay import comparable_record  # noqa: F401
from flowreplay.replay import is_toolvocab_flow  # noqa: F401
from flowreplay.replay import mismatches  # noqa: F401
from flowreplay.replay import original_request  # noqa: F401
from flowreplay.replay import original_upstream  # noqa: F401
from flowreplay.replay import prepare  # noqa: F401
from flowreplay.replay import random_chunks  # noqa: F401
from flowreplay.replay import records_match  # noqa: F401
from flowreplay.replay import replay_file  # noqa: F401
from flowreplay.replay import replay_options  # noqa: F401
from flowreplay.replay import replayable  # noqa: F401
from flowreplay.replay import request_body  # noqa: F401
from flowreplay.scrub import _KEY_PARAM  # noqa: F401
from flowreplay.scrub import _SECRETISH  # noqa: F401
from flowreplay.scrub import CONTEXT_MARKERS  # noqa: F401
from flowreplay.scrub import COOKIE_HEADERS  # noqa: F401
from flowreplay.scrub import CREDENTIAL_HEADERS  # noqa: F401
from flowreplay.scrub import IDENTIFYING_HEADERS  # noqa: F401
from flowreplay.scrub import REDACTED  # noqa: F401
from flowreplay.scrub import _has_context_marker  # noqa: F401
from flowreplay.scrub import _neutral_content  # noqa: F401
from flowreplay.scrub import _scrub_descriptions  # noqa: F401
from flowreplay.scrub import _scrub_headers  # noqa: F401
from flowreplay.scrub import _scrub_user_parts  # noqa: F401
from flowreplay.scrub import leaks  # noqa: F401
from flowreplay.scrub import scrub_body  # noqa: F401
from flowreplay.scrub import scrub_flow  # noqa: F401


def __getattr__(name: str) -> Any:
    """``FLOWS_DIR`` and ``MANIFEST`` as :mod:`flowreplay.files` holds them now (PEP 562)."""
    if name == "FLOWS_DIR":
        return files.FLOWS_DIR
    if name == "MANIFEST":
        return files.FLOWS_DIR / "MANIFEST.toml"
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
