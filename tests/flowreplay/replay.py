"""Replaying a saved flow through the addon and comparing what the client and the upstream get
with what the flow recorded: the package's :mod:`toolvocab.replay.compare` (``toolvocab replay``
runs the same code), re-exported here, with the clone's ``addon/toolvocab.py`` loaded."""

from __future__ import annotations

from typing import Any

import harness
from toolvocab.replay import compare as _compare
from toolvocab.replay.compare import Outcome  # noqa: F401
from toolvocab.replay.compare import Replay  # noqa: F401
from toolvocab.replay.compare import _replay_all  # noqa: F401
from toolvocab.replay.compare import mismatches  # noqa: F401
from toolvocab.replay.compare import prepare  # noqa: F401
from toolvocab.replay.compare import records_match  # noqa: F401
from toolvocab.replay.compare import replay_file  # noqa: F401
from toolvocab.replay.flows import _as_bytes  # noqa: F401
from toolvocab.replay.flows import clone  # noqa: F401
from toolvocab.replay.flows import comparable_record  # noqa: F401
from toolvocab.replay.flows import is_toolvocab_flow  # noqa: F401
from toolvocab.replay.flows import original_request  # noqa: F401
from toolvocab.replay.flows import original_upstream  # noqa: F401
from toolvocab.replay.flows import replay_options  # noqa: F401
from toolvocab.replay.flows import replayable  # noqa: F401
from toolvocab.replay.flows import request_body  # noqa: F401

random_chunks = harness.random_chunks


class Replayer(_compare.Replayer):
    """:class:`toolvocab.replay.compare.Replayer` over the clone's ``addon/toolvocab.py``
    (``harness.SCRIPT``), comparing everything (``strict``), as tests/test_flows.py does."""

    def __init__(self, **kw: Any) -> None:
        kw.setdefault("strict", True)
        super().__init__(str(harness.SCRIPT), **kw)
