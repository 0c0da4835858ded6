"""Where the addon's time goes inside a real mitmdump: its hooks, and the functions under them, timed.

    uv run --extra test python benchmarks/hooks.py [--requests 200] [--size 200000] [--script PATH]
        [--also MODULE:NAME …]

One mitmdump in reverse mode in front of the raw upstream of ``request.py`` (a process of its own),
with a wrapper script (:data:`WRAPPER`) that loads the addon's script as mitmdump loads it and
times, with ``time.perf_counter`` in the proxy's process, each of the addon's hooks and each
function of :data:`TIMED` and of each ``--also`` (nested: a function's time includes the timed functions under it). The
client sends ``--requests`` requests of ``--size`` bytes whose answer changes nothing, then as many
whose answer the addon repairs (``request.REPAIR_ANSWER``), each kind after a warm-up of its own
(imports, first allocations), on keep-alive connections; it names each phase to the wrapper with
a ``GET /__bench/phase/<name>`` the wrapper answers. On SIGTERM the wrapper writes every duration;
this prints, for each kind of flow, the median time of each hook and function per call, its total
per flow, how many calls a flow makes, each collection of the cyclic GC by generation (as one
more row), and the proxy's CPU per request (its process clock, :func:`common.cpu_seconds`).

The in-process figures of ``request.py`` time the request hook alone on warm caches; inside
mitmdump the same code runs between mitmproxy's own work and costs more: these are the figures to
weigh a change of the per-flow code against. They still understate what a part adds to a flow's
latency through proxies that take turns (``request.py``, whose ``--ablate`` measures that share):
there the ladder, the log line and the record measured two to five times their times here
(docs/performance.md).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import statistics
import tempfile

# common first: importing it puts tests/ on sys.path (for procs)
from common import UpstreamProcess
from common import compile_bytecode
from common import cpu_seconds

# isort: split
import request

import procs

#: ``module:qualified name`` of each function timed, as ``toolvocab`` names them.
TIMED = (
    "toolvocab.dialects.pipeline:handle",
    "toolvocab.dialects.anthropic:AnthropicMessages.peek",
    "toolvocab.dialects.anthropic:typed_decode",
    "toolvocab.dialects.pipeline:Caches.peeked_toolset",
    "toolvocab.dialects.pipeline:_plan",
    "toolvocab.dialects.pipeline:Caches.record",
    "toolvocab.dialects.pipeline:FlowRecord",
    "toolvocab.addons.core:FlowState",
    "toolvocab.engine.record:FlowRecord.dump",
    "toolvocab.addons.core:ToolVocab._response",
    "toolvocab.dialects.anthropic:AnthropicMessages.rewrite_response",
    "toolvocab.addons.state:resolve",
    "toolvocab.dialects.pipeline:strict_read",
    "toolvocab.addons.core:jsonio.rewrite",
    "toolvocab.addons.recording:ToolVocabRecorder.finish",
    "toolvocab.addons.recording:ToolVocabRecorder.show",
)

#: The wrapper mitmdump runs: the addon's script, each hook and each :data:`TIMED` function wrapped.
WRAPPER = """
import collections
import gc
import importlib
import importlib.util
import json
import os
import time

from mitmproxy import http

#: phase -> label -> seconds of each call; the client names the phase (Phase below).
TIMES = collections.defaultdict(lambda: collections.defaultdict(list))
PHASE = ["start"]
HOOKS = ("requestheaders", "request", "responseheaders", "response", "error")


def _timed(fn, label):
    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            TIMES[PHASE[0]][label].append(time.perf_counter() - start)

    return timed


_GC_START = [0.0]


def _gc(phase, info):
    # each collection of the cyclic GC, by generation: what the flows' allocations cost later
    if phase == "start":
        _GC_START[0] = time.perf_counter()
    else:
        TIMES[PHASE[0]][f"gc, generation {info['generation']}"].append(time.perf_counter() - _GC_START[0])


gc.callbacks.append(_gc)


def _timed_hook(fn, label):
    timed = _timed(fn, label)

    def hook(flow):
        if flow.request.path.startswith("/__bench/"):
            return fn(flow)
        return timed(flow)

    return hook


class Phase:
    \"\"\"``GET /__bench/phase/<name>``: the calls from here on are <name>'s (answered here).\"\"\"

    def request(self, flow):
        if flow.request.path.startswith("/__bench/phase/"):
            PHASE[0] = flow.request.path.rsplit("/", 1)[1]
            flow.response = http.Response.make(204)

    def done(self):
        with open(os.environ["BENCH_OUT"], "w") as fp:
            json.dump(TIMES, fp)


_spec = importlib.util.spec_from_file_location("toolvocab_script", os.environ["BENCH_SCRIPT"])
_script = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_script)
for _target in json.loads(os.environ["BENCH_TIMED"]):
    _module_name, _, _path = _target.partition(":")
    _owner = importlib.import_module(_module_name)
    *_parents, _name = _path.split(".")
    for _parent in _parents:
        _owner = getattr(_owner, _parent)
    _fn = _owner.__dict__[_name] if isinstance(_owner, type) else getattr(_owner, _name)
    if isinstance(_fn, staticmethod):
        setattr(_owner, _name, staticmethod(_timed(_fn.__func__, _path)))
    else:
        setattr(_owner, _name, _timed(_fn, _path))
for _addon in _script.addons:
    for _hook in HOOKS:
        if hasattr(_addon, _hook):
            setattr(_addon, _hook, _timed_hook(getattr(_addon, _hook), type(_addon).__name__ + "." + _hook))

addons = [Phase(), *_script.addons]
"""


def phase(port: int, name: str) -> None:
    """Tell the wrapper that the calls from here on are ``name``'s."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", f"/__bench/phase/{name}")
        resp = conn.getresponse()
        resp.read()
        assert resp.status == 204, resp.status
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=200, help="requests of each kind")
    parser.add_argument("--size", type=int, default=200_000, help="request body size (bytes)")
    parser.add_argument("--script", default=str(procs.ADDON_SCRIPT), help="addon script to measure")
    parser.add_argument(
        "--also",
        action="append",
        default=[],
        metavar="MODULE:NAME",
        help="time this function too (as TIMED names them, e.g. toolvocab.addons.core:ToolVocab.settings)",
    )
    parser.add_argument(
        "--plain-only",
        action="store_true",
        help="only flows whose answer changes nothing (a script that repairs nothing)",
    )
    args = parser.parse_args()
    compile_bytecode()
    body = request.transcript(args.size)
    with tempfile.TemporaryDirectory() as tmp:
        wrapper, out = os.path.join(tmp, "timed.py"), os.path.join(tmp, "times.json")
        with open(wrapper, "w") as fp:
            fp.write(WRAPPER)
        os.environ.update(BENCH_SCRIPT=args.script, BENCH_TIMED=json.dumps([*TIMED, *args.also]), BENCH_OUT=out)
        upstream = UpstreamProcess(request.make_handler)
        proxy = None
        cpu: dict[str, float] = {}
        try:
            proxy = procs.start_mitmdump(upstream.url, script=wrapper, options={"flow_detail": "0"})
            pid = proxy.process.proc.pid
            for kind, repair in (("plain", False), ("repaired", True))[: 1 if args.plain_only else 2]:
                phase(proxy.port, "warm-up")
                request.latencies(proxy.port, body, max(5, args.requests // 10), repair=repair, repaired=repair)
                phase(proxy.port, kind)
                start = cpu_seconds(pid)
                request.latencies(proxy.port, body, args.requests, repair=repair, repaired=repair)
                cpu[kind] = (cpu_seconds(pid) - start) / args.requests
            proxy.stop()
            with open(out) as fp:
                times = json.load(fp)
        finally:
            if proxy is not None:
                proxy.stop()
            upstream.stop()
    print(
        f"inside mitmdump: {args.requests} flows of {len(body):,} B whose answer changes nothing, then "
        f"{args.requests} whose answer is repaired (each after a warm-up of their own); median µs per call, "
        "and calls per flow"
    )
    print(f"{'hook or function':52s} {'plain':>9s} {'repaired':>9s}  {'µs per flow':>17s}  calls per flow")
    labels = list(dict.fromkeys([*times.get("plain", {}), *times.get("repaired", {})]))
    for label in labels:
        cells, totals, counts = [], [], []
        for kind in ("plain", "repaired"):
            values = times.get(kind, {}).get(label, [])
            cells.append(f"{statistics.median(values) * 1e6:9.1f}" if values else f"{'-':>9s}")
            totals.append(f"{sum(values) * 1e6 / args.requests:.0f}")
            counts.append(f"{len(values) / args.requests:g}")
        print(f"{label:52s} {cells[0]} {cells[1]}  {' / '.join(totals):>17s}  {' / '.join(counts)}")
    print(f"{'proxy CPU per request (ms)':52s} " + " ".join(f"{cpu[kind] * 1e3:9.2f}" for kind in cpu))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
