"""A flow is freed as soon as its last holder lets it go: nothing the addon attaches to a flow holds it.

A flow that refers to itself (its own attribute holding a closure over it, a state holding the
flow and referred to by its own rewriter) is a reference cycle: CPython frees it only when the
cyclic garbage collector next runs (https://docs.python.org/3/library/gc.html), its bodies with
it. Inside mitmdump 11 and 12 mitmproxy's own ``HttpStream`` layer keeps a finished flow until then
anyway; driven in process (``toolvocab replay``, these tests) the addon must not be what keeps it.
Each flow of the corpus in ``flows/`` (every dialect, streamed and not, repaired, lifted, left
alone; answered whole, or cut off after the answer's bytes so that the error hook ends it) is
driven through the addon's hooks as mitmproxy's proxy core drives them, with flows saved and as
plain mitmdump runs, the collector off; once the test drops the flow, reference counting alone
must free it. A Codex WebSocket is checked the same way in ``test_websocket_hook.py``.
"""

from __future__ import annotations

import asyncio
import gc
import io
import random
import weakref

import pytest
from mitmproxy import flow as mflow
from mitmproxy import io as mio
from mitmproxy.test import tflow

import flowreplay as fr
from toolvocab.addons.redaction import install_redaction
from toolvocab.replay import drive as driving
from toolvocab.replay.compare import prepare
from toolvocab.replay.compare import replay_options
from toolvocab.replay.flows import replayable

FILES = fr.corpus_files()


@pytest.fixture(scope="module", params=["saving", "plain"])
def replayer(request):
    """The addon with something saving flows (``strict``), and as plain mitmdump runs it."""
    with fr.Replayer(strict=request.param == "saving") as r:
        if request.param == "plain":
            r.addon.recorder.saves_bodies = lambda: False
        yield r


def freed_by_refcount(r: fr.Replayer, saved, *, cut: bool = False, holders: list[str] | None = None) -> bool:
    """``saved`` replayed through every hook (the answer in one piece; ``cut``: the upstream
    gone after it, so the error hook ends the flow), then dropped with the cyclic collector off:
    whether reference counting alone freed it. ``holders``: for a flow not freed, gets the types
    of what still refers to it."""
    r.configure({**replay_options(saved), **r.overrides})
    f = prepare(saved)
    if cut:
        f.error = mflow.Error("peer closed connection without sending complete message body")
    # prepare's own garbage (a clone of the saved flow) may hold the copy: the young generations
    gc.collect(1)
    gc.disable()
    try:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(driving.drive(r.tctx, r.module, f, random.Random(0), lo=1 << 20, hi=1 << 20))
        finally:
            loop.close()
        assert f.id not in r.addon._states
        ref = weakref.ref(f)
        del f
        held = ref()
        if held is not None and holders is not None:
            holders += sorted({type(o).__name__ for o in gc.get_referrers(held)} - {"frame"})
        return held is None
    finally:
        gc.enable()


@pytest.mark.parametrize("cut", [False, True], ids=["answered", "cut"])
def test_every_corpus_flow_is_freed_without_the_cyclic_collector(replayer, cut):
    """A flow held is driven once more after a full collection, and only one held both times
    counts: a cycle the addon's hooks make holds their flow every time. One CI run in some twenty
    saw a flow held once (``agents/qwen-code-2.mitm``, plain, answered) that no run here held
    again, alone or among the rest; the second drive tells such a hold from the addon's."""
    held, checked = [], 0
    for path in FILES:
        for saved in fr.load_flows(path):
            assert replayable(saved) is None, f"{fr.rel(path)}: {replayable(saved)}"
            checked += 1
            if freed_by_refcount(replayer, saved, cut=cut):
                continue
            gc.collect()
            holders: list[str] = []
            if not freed_by_refcount(replayer, saved, cut=cut, holders=holders):
                held.append(f"{fr.rel(path)}: {saved.id} (held by {', '.join(holders)})")
    assert len(FILES) > 100 and checked >= len(FILES)
    assert not held, f"{len(held)} flows outlive their last reference (a reference cycle): {held[:5]}"


def test_a_redacting_flow_is_freed_and_still_saves_redacted():
    """The redaction's shadows hold their flow weakly; saving, backup, revert and duplicate still
    work, and saving the live flow still writes no secret."""
    f = tflow.tflow(resp=True)
    f.request.headers["authorization"] = "Bearer sk-ant-secret-0123456789"
    install_redaction(f)
    f.backup()
    f.request.headers["authorization"] = "Bearer edited-value-0123456789"
    assert f.modified()
    f.revert()
    duplicate = f.copy()
    buf = io.BytesIO()
    mio.FlowWriter(buf).add(f)
    mio.FlowWriter(buf).add(duplicate)
    assert b"sk-ant-secret" not in buf.getvalue() and b"<redacted>" in buf.getvalue()
    assert f.request.headers["authorization"].endswith("secret-0123456789")
    gc.collect()
    gc.disable()
    try:
        refs = [weakref.ref(f), weakref.ref(duplicate)]
        del f, duplicate
        assert [ref() for ref in refs] == [None, None]
    finally:
        gc.enable()
