"""What the dialect tests share (``tests/unit/test_*_dialect.py`` and the text-call tests): a
dialect's fixture files, a resolver that records what the engine decided, the SSE events a
client parses, and a stream rewriter driven over chunks the way the addon's stream callable
drives it.

    fx = Fixtures("anthropic")                       # tests/fixtures/anthropic/
    resolver = Recorder(Toolset(DIALECT.declared_tools(fx.json("request-claude-code.json"))))
    out = drive(DIALECT.stream_rewriter(context(resolver)), chunks)
    events = sse_events(out)
    pieces = split_text(text, random.Random(seed))  # content deltas, openers split too

Like the rest of the harness, this module imports no pytest.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.base import StreamRewriter
from toolvocab.dialects.sse import SSEEvent
from toolvocab.dialects.sse import SSEParser
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Decision
from toolvocab.engine.models import ToolCall
from toolvocab.engine.plan import Plan

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


class Fixtures:
    """The fixture files of one dialect, ``tests/fixtures/<folder>/`` (see each folder's README)."""

    def __init__(self, folder: str) -> None:
        self.dir = FIXTURES / folder

    def json(self, name: str) -> Any:
        """The parsed JSON of fixture ``name``."""
        return json.loads((self.dir / name).read_text())

    def bytes(self, name: str) -> bytes:
        """The bytes of fixture ``name`` (a stream fed as the upstream sent it)."""
        return (self.dir / name).read_bytes()


class Recorder:
    """A resolver over ``tools`` (and ``plan``'s reverse map) that remembers every call and
    decision, as the addon's per-flow resolver does: ``calls[i]`` was answered with
    ``decisions[i]``. ``Recorder(Toolset(DIALECT.declared_tools(body)))`` binds it to a request."""

    def __init__(self, tools: Toolset, plan: Plan | None = None) -> None:
        self.tools = tools
        self.plan = plan or Plan()
        self.calls: list[ToolCall] = []
        self.decisions: list[Decision] = []

    def __call__(self, call: ToolCall) -> Decision:
        self.calls.append(call)
        decision = resolve(call, self.tools, self.plan.reverse_map)
        self.decisions.append(decision)
        return decision


def sse_events(data: bytes) -> list[SSEEvent]:
    """Every SSE event in ``data`` as a client's parser reads it, to the end of the stream
    (``close()``: a final CR ends a line there); nothing may be left unparsed."""
    parser = SSEParser()
    events = parser.feed(data) + parser.close()
    assert parser.flush() == b""
    return events


def drive(rw: StreamRewriter, chunks: Iterable[bytes]) -> bytes:
    """``chunks`` fed to a dialect's stream rewriter one at a time, then ``finish()``: what it let
    out, joined. Every call must give a list of bytes with no lone ``b""`` in it (from the
    addon's stream callable, a ``b""`` mid-stream would end an HTTP/1.1 chunked body)."""
    out: list[bytes] = []
    for chunk in chunks:
        got = rw.feed(chunk)
        assert isinstance(got, list) and b"" not in got, "a lone b'' mid-stream would end a chunked body"
        assert all(isinstance(b, bytes) for b in got)
        out.extend(got)
    tail = rw.finish()
    assert isinstance(tail, list) and b"" not in tail
    assert all(isinstance(b, bytes) for b in tail)
    out.extend(tail)
    return b"".join(out)


def context(
    resolver: Any, plan: Plan | None = None, *, flow_key: str = "", call_ids: dict[str, str] | None = None
) -> FlowContext:
    """The :class:`FlowContext` a test's resolver stands for: its ``tools`` (a :class:`Toolset`,
    as :class:`Recorder` has) are the declared tools a dialect may lift text calls to; a
    resolver without them (a plain function) lifts nothing, as a flow without tools."""
    tools = getattr(resolver, "tools", None)
    return FlowContext(
        resolver, plan or Plan(), tools if isinstance(tools, Toolset) else None, flow_key, dict(call_ids or {})
    )


def rewrite(dialect: Any, resolver: Any, plan: Plan, chunks: Iterable[bytes], *, flow_key: str = "") -> bytes:
    """``chunks`` through a new stream rewriter of ``dialect`` (:func:`drive`; the flow's
    :func:`context`); the rewriter must end without an error."""
    rw = dialect.stream_rewriter(context(resolver, plan, flow_key=flow_key))
    out = drive(rw, chunks)
    assert rw.error is None, rw.error
    return out


def split_text(text: str, rnd: random.Random) -> list[str]:
    """``text`` cut at up to 12 random places (drawn from ``rnd``) into the pieces a model streams
    as text deltas; a markup opener may be split too."""
    cuts = sorted(rnd.sample(range(1, len(text)), min(len(text) - 1, rnd.randint(0, 12)))) if len(text) > 1 else []
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]
