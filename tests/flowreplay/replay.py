"""Replaying a saved flow through the addon and comparing what the client and the upstream get
with what the flow recorded: the package's :mod:`toolvocab.replay.compare` (``toolvocab replay``
runs the same code), re-exported here, with the clone's ``addon/toolvocab.py`` loaded."""

from __future__ import annotations

from typing import Any

import harness

from toolvocab.replay import compare as _compare
from toolvocab.replay.compare import Outcome, Replay, _replay_all, mismatches, prepare, records_match, replay_file  # noqa: F401
from toolvocab.replay.flows import (  # noqa: F401
    _as_bytes,
    clone,
    comparable_record,
    is_toolvocab_flow,
    original_request,
    original_upstream,
    replay_options,
    replayable,
    request_body,
)

random_chunks = harness.random_chunks


class Replayer(_compare.Replayer):
    """:class:`toolvocab.replay.compare.Replayer` over the clone's ``addon/toolvocab.py``
    (``harness.SCRIPT``), comparing everything (``strict``), as tests/test_flows.py does."""

    def __init__(self, **kw: Any) -> None:
        kw.setdefault("strict", True)
        super().__init__(str(harness.SCRIPT), **kw)
