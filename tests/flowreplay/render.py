"""A replay failure and a flow as text, for people: the package's :mod:`toolvocab.replay.render`
(re-exported), with the corpus's hint (re-bless with ``tests/flowtool.py``)."""

from __future__ import annotations

from mitmproxy import http

from toolvocab.replay import render as _render
from toolvocab.replay.compare import Replay
from toolvocab.replay.render import _answer_lines  # noqa: F401
from toolvocab.replay.render import _decision_lines  # noqa: F401
from toolvocab.replay.render import _pretty  # noqa: F401
from toolvocab.replay.render import _record_field_lines  # noqa: F401
from toolvocab.replay.render import _side_by_side  # noqa: F401
from toolvocab.replay.render import _unified  # noqa: F401
from toolvocab.replay.render import describe_flow  # noqa: F401
from toolvocab.replay.render import flow_title  # noqa: F401

#: The last line of a corpus flow's failure.
HINT = "If this change is intended: uv run python tests/flowtool.py bless <file>"


def render_failure(saved: http.HTTPFlow, result: Replay, source: str = "", hint: str = HINT) -> str:
    """:func:`toolvocab.replay.render.render_failure` with the corpus's hint."""
    return _render.render_failure(saved, result, source, hint)
