"""The stream callable's phases (``toolvocab.addons.stream.Phase``): the transition table is the
whole story, and any order of what mitmproxy and the addon do to a callable stays inside it.

The table is checked as data (every phase reachable, every phase able to give up to
``DRAINED``), and a property drives a callable through generated sequences of chunks, ``b""``
(the end, or an empty HTTP/2 DATA frame), a rewriter that fails, ``drain()`` and ``release()``:
it never raises (a move the table does not list would), and the client gets, in order, either
exactly the upstream's bytes or the repaired stream.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab.addons.state import FlowState
from toolvocab.addons.stream import TRANSITIONS
from toolvocab.addons.stream import Phase
from toolvocab.addons.stream import StreamCallable
from toolvocab.dialects.anthropic import DIALECT
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.plan import Plan
from toolvocab.engine.record import FlowRecord

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic"
#: A Claude-Code-shaped stream whose call to the undeclared ``shell`` is repaired to ``Bash``.
STREAM = (FIXTURES / "stream-foreign-tool.sse").read_bytes()
JSON_ANSWER = (FIXTURES / "response-foreign-tool.json").read_bytes()
TOOLS = Toolset(
    [
        declared_tool(
            "Bash",
            input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        )
    ]
)


def test_every_phase_is_reachable_and_can_give_up() -> None:
    reached, todo = {Phase.SNIFFING}, [Phase.SNIFFING]
    while todo:
        for nxt in TRANSITIONS[todo.pop()]:
            if nxt not in reached:
                reached.add(nxt)
                todo.append(nxt)
    assert reached == set(Phase)
    assert all(Phase.DRAINED in moves for moves in TRANSITIONS.values())
    assert TRANSITIONS[Phase.DRAINED] == {Phase.DRAINED}


def _callable(observe: bool) -> StreamCallable:
    state = FlowState(DIALECT, TOOLS, Plan(), FlowRecord(mode="repair"), wants_stream=True, flow_key="f")
    # the client's request: a conversation with no earlier call (a state without one knows no
    # conversation, and moves no command between shells that keep different things)
    state.request_body = b'{"model":"m","max_tokens":1,"messages":[{"role":"user","content":"hi"}]}'
    return StreamCallable(state, observe=observe, keep=True)


class _Boom(Exception):
    pass


def _fail(sc: StreamCallable) -> None:
    """Make the rewriter raise on its next chunk (an internal error)."""

    def feed(chunk: bytes) -> list[bytes]:
        raise _Boom("injected")

    if sc.rewriter is not None:
        sc.rewriter.feed = feed  # type: ignore[method-assign]


def _cuts(data: bytes) -> st.SearchStrategy[list[bytes]]:
    """``data`` cut into non-empty pieces (an empty chunk is the end: the ``empty`` op)."""
    return st.sets(st.integers(1, len(data) - 1), max_size=6).map(
        lambda cuts: [data[a:b] for a, b in zip([0, *sorted(cuts)], [*sorted(cuts), len(data)])]
    )


OPS = st.sampled_from(["chunk", "chunk", "chunk", "empty", "fail", "drain"])


def _repaired(body: bytes) -> bytes:
    sc = _callable(observe=False)
    out = b"".join(sc(body) + sc(b""))
    assert out != body and b'"Bash"' in out  # the control: this answer is repaired
    return out


def _conserved(out: bytes, body: bytes, repaired: bytes) -> bool:
    """``out`` is what the client may get: the repaired stream up to some event, then the
    upstream's bytes from the same point on, as they came (nothing lost, nothing twice). The
    repair changes one tool block, sent whole: a cut lies before it (both streams agree up to
    there) or after it (they agree from there to the end)."""
    prefix = next((k for k, (x, y) in enumerate(zip(body, repaired)) if x != y), min(len(body), len(repaired)))
    suffix = next(
        (k for k, (x, y) in enumerate(zip(reversed(body), reversed(repaired))) if x != y),
        min(len(body), len(repaired)),
    )
    shift = len(body) - len(repaired)
    for cut in range(len(repaired) + 1):
        if cut <= prefix:
            at = cut
        elif cut >= len(repaired) - suffix:
            at = cut + shift
        else:
            continue
        if out == repaired[:cut] + body[at:]:
            return True
    return False


@settings(max_examples=300, deadline=None)
@given(
    body=st.sampled_from([STREAM, b"\n \n" + STREAM, JSON_ANSWER, b"  " + JSON_ANSWER]),
    data=st.data(),
    observe=st.booleans(),
)
def test_any_order_of_events_stays_in_the_table_and_loses_no_byte(body: bytes, data, observe: bool) -> None:
    """Chunks in any cut, with ``b""`` (event streams), a failing rewriter or a drain anywhere,
    then the end and the flow's release: never an exception, ``DRAINED`` at the end, and the
    client's bytes are the upstream's (observe: exactly), the repaired answer, or the repaired
    answer up to a point and the upstream's from there (a JSON answer: one or the other); the
    bytes kept for a saved flow are the upstream's and the client's, each byte once."""
    repaired = _repaired(body)
    sc = _callable(observe)
    got: list[bytes] = []
    whole = body.lstrip().startswith(b"{")
    drained = False
    for piece in data.draw(_cuts(body), label="pieces"):
        op = data.draw(OPS, label="op")
        if whole and op == "empty":
            op = "chunk"  # a JSON answer ends at its first empty chunk: rewritten there, whole or not
        if op == "empty":
            got += sc(b"")
        elif op == "fail":
            _fail(sc)
        elif op == "drain":
            got.append(sc.drain())
            drained = True
        got += sc(piece)
    got += sc(b"")
    if not drained:  # keep: the stream kept for a saved flow is the upstream's, each byte once
        assert bytes(sc.upstream) == body and bytes(sc.sent) == b"".join(got)
    sc.release()
    assert sc.phase is Phase.DRAINED
    out = b"".join(got)
    if observe:
        assert out == body
    elif whole:
        assert out in (body, repaired)
    else:
        assert _conserved(out, body, repaired), out


@pytest.mark.parametrize("reached", [True, False])
def test_drained_bytes_count_as_sent_only_once_delivered(reached: bool) -> None:
    """The upstream ended mid-stream inside a held tool block: the error hook drains what was
    held and writes it to the client connection (``send_to_client``). The bytes kept as what the
    client got (the saved flow's answer) hold them only if that write reached the client."""
    cut = STREAM.index(b'"tool_use"') + 40  # inside the held block
    sc = _callable(observe=False)
    got = b"".join(sc(STREAM[:cut]))
    assert got and len(got) < cut  # the tool block is held
    held = sc.drain()
    assert got + held == STREAM[:cut]
    if reached:
        sc.delivered(held)
    assert bytes(sc.sent) == (got + held if reached else got)
    assert sc.differs is not reached  # bytes the client never got: what it got differs


def test_a_replayed_flow_writes_nothing_into_the_live_client_connection() -> None:
    """mitmproxy runs a replay (mitmweb's Replay, ``replay.client``) with a copy of the recorded
    client connection, whose id is still the live connection's while the agent keeps it open:
    bytes the stall bound or the error hook write outside mitmproxy's path must not go into the
    agent's connection (they did, in the middle of its next answer)."""
    from types import SimpleNamespace

    from mitmproxy.test import taddons
    from mitmproxy.test import tflow

    from toolvocab.addons.stream import client_connection
    from toolvocab.addons.stream import send_to_client

    written: list[bytes] = []
    flow = tflow.tflow(resp=True)
    flow.response.headers["transfer-encoding"] = "chunked"
    writer = SimpleNamespace(is_closing=lambda: False, write=written.append)

    class ProxyServer:  # the name mitmproxy's proxyserver addon goes by
        connections = {
            flow.client_conn.id: SimpleNamespace(transports={flow.client_conn: SimpleNamespace(writer=writer)})
        }

    with taddons.context() as tctx:
        tctx.master.addons.add(ProxyServer())
        assert client_connection(flow) is not None  # the live flow's connection is found
        flow.is_replay = "request"
        assert client_connection(flow) is None
        assert send_to_client(flow, b"held bytes") is None
    assert written == []
