"""toolvocab's hooks driven over a flow the way mitmproxy's proxy core drives them, offline: the
addon script loaded in mitmproxy's test context (``mitmproxy.test.taddons``, shipped with
mitmproxy), then requestheaders → request → responseheaders → the ``response.stream`` callable
over the upstream body in pieces (then a final ``b""``) → response, or error for a flow that
ended in one (mitmproxy's ``proxy/layers/http``: 11.0.2 and 12.x).

The script is loaded by path, never imported as a module (a second module object would not be
the one whose hooks run); :func:`load` puts it in the addon chain as mitmdump's script loader does.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from mitmproxy import ctx
from mitmproxy import http
from mitmproxy.proxy.layers import http as hl
from mitmproxy.test import taddons


def load(tctx: taddons.context, script: str) -> Any:
    """Load the mitmproxy script at ``script`` into ``tctx`` and put it in the addon chain; the
    script's module. In mitmdump the ScriptLoader sits in the addon chain and its Script's
    ``addons`` reach the module; ``tctx.script`` only registers it, so option changes would never
    reach ``configure()``. Raises ``RuntimeError`` when the script fails to load."""
    module = tctx.script(str(script))
    if module is None:
        raise RuntimeError(f"{script} failed to load")
    tctx.master.addons.chain.append(module)
    return module


@contextlib.contextmanager
def script_context(script: str) -> Iterator[tuple[taddons.context, Any]]:
    """``(tctx, module)``: a fresh ``taddons.context()`` with the script at ``script`` loaded."""
    with taddons.context() as tctx:
        yield tctx, load(tctx, script)


def activate(tctx: taddons.context) -> None:
    """Point mitmproxy's ``ctx`` at ``tctx`` (another Master may have been made since)."""
    ctx.master = tctx.master
    ctx.options = tctx.options


def addon(module: Any, kind: str) -> Any:
    """The addon of class ``kind`` (``ToolVocab``, ``ToolVocabRecorder``, …) in a loaded script's
    ``addons``; raises ``LookupError`` when there is none."""
    for a in module.addons:
        if type(a).__name__ == kind:
            return a
    raise LookupError(f"no {kind} addon in {[type(a).__name__ for a in module.addons]}")


def random_chunks(data: bytes, rnd: random.Random, lo: int = 1, hi: int = 64) -> list[bytes]:
    """``data`` cut into consecutive pieces of ``lo..hi`` bytes drawn from ``rnd``."""
    out, i = [], 0
    while i < len(data):
        n = rnd.randint(lo, hi)
        out.append(data[i : i + n])
        i += n
    return out


class Feeder:
    """The ``response.stream`` callable fed pieces one at a time, as mitmproxy feeds it: after a
    non-empty piece it must not return ``b""`` (that ends an HTTP/1.1 chunked body, mitmproxy G1)
    and returns bytes or an iterable of bytes. ``per_call[i]``: what call ``i`` returned, joined."""

    def __init__(self, stream: Callable[[bytes], Any], parts: list[bytes]) -> None:
        self.stream = stream
        self.pending = list(parts)
        self.per_call: list[bytes] = []

    def feed_one(self) -> bool:
        """Feed the next piece; False when none is left."""
        if not self.pending:
            return False
        part = self.pending.pop(0)
        got = self.stream(part)
        items = [got] if isinstance(got, bytes) else list(got)
        if part and (got == b"" or b"" in items):
            raise AssertionError("the stream callable returned b'' mid-stream (mitmproxy G1)")
        assert all(isinstance(i, bytes) for i in items), items
        self.per_call.append(b"".join(items))
        return True

    def run(self) -> bytes:
        """Feed every piece left; all the callable returned so far."""
        while self.feed_one():
            pass
        return b"".join(self.per_call)


@dataclass
class Driven:
    """One flow through the hooks: what the client received (``None`` without a response),
    how it went (``"callable"``, ``"passthrough"``, ``"buffered"`` or ``"none"``) and what each
    stream-callable call returned."""

    out: bytes | None
    streamed: str
    per_call: list[bytes]


async def drive(
    tctx: taddons.context,
    module: Any,
    f: http.HTTPFlow,
    rnd: random.Random,
    *,
    chunks: list[bytes] | None = None,
    lo: int = 1,
    hi: int = 64,
    blanks: float = 0.0,
) -> Driven:
    """The hooks over ``f`` as mitmproxy's proxy core calls them. The stream callable, when the
    addon installs one, gets the upstream body as ``chunks`` or in pieces of ``lo..hi`` bytes;
    after each an empty piece ``b""`` comes with probability ``blanks`` (mitmproxy passes an
    empty HTTP/2 DATA frame on as ``b""``), then the final ``b""`` unless the flow ended in an
    error (``f.error``: the error hook runs instead of the response hook). The flow is live
    while its hooks run, as in the proxy core (a flow read from a file is not: G11)."""
    mgr = tctx.master.addons
    f.live = True
    error = f.error
    f.error = None
    upstream = (f.response.raw_content if f.response is not None else None) or b""
    await mgr.invoke_addon(module, hl.HttpRequestHeadersHook(f))
    await mgr.invoke_addon(module, hl.HttpRequestHook(f))
    if f.response is None:
        f.error = error
        if error is not None:
            await mgr.invoke_addon(module, hl.HttpErrorHook(f))
        return Driven(None, "none", [])
    f.response.stream = False
    await mgr.invoke_addon(module, hl.HttpResponseHeadersHook(f))
    stream = f.response.stream
    out: bytes | None
    feeder = None
    if callable(stream):
        parts = chunks if chunks is not None else random_chunks(upstream, rnd, lo, hi)
        if blanks:
            parts = [p for part in parts for p in ([part, b""] if rnd.random() < blanks else [part])]
        feeder = Feeder(stream, parts + ([] if error is not None else [b""]))
        out, kind = feeder.run(), "callable"
        f.response.raw_content = None  # as after real streaming (G6)
    elif stream is True:
        out, kind = upstream, "passthrough"
        f.response.raw_content = None
    else:
        out, kind = None, "buffered"
    if error is not None:
        f.error = error
        await mgr.invoke_addon(module, hl.HttpErrorHook(f))
    else:
        await mgr.invoke_addon(module, hl.HttpResponseHook(f))
    if out is None:
        out = f.response.raw_content or b""
    return Driven(out, kind, feeder.per_call if feeder else [])
