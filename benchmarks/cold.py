"""What a flow's hooks cost when the CPU's caches hold something else: the addon against its floors,
in process, warm and after the caches were filled by other work.

    uv run --extra test python benchmarks/cold.py [--flows 300] [--rounds 5] [--evict-mib 64]
        [--script PATH]

Through mitmdump (``request.py``) the addon's share of a request's latency measured two to five
times what its hooks take when timed back to back: between two requests to one proxy the client,
the upstream and the other proxies run on the same two cores, so each request finds the code and
data its hooks touch gone from the CPU's caches. This puts a number on that, in one process, for
two kinds of 200 KB flow (``request.transcript``, Claude Code's shape, nothing saving the flow):

* *plain* (the answer changes nothing): every hook of the addon (request headers to response)
  against the ``typed`` floor of ``request.py`` (the least an addon that plans from the request
  pays: only what planning reads decoded with msgspec);
* *repaired* (``request.REPAIR_ANSWER``: ``shell`` with an argv, repaired to ``Bash``): against the
  ``repair`` floor (``typed``, and at the answer the request read whole and strictly, the call
  renamed, the answer written again).

Each flow is built beforehand; then, by condition:

* ``warm``: nothing between two flows (the in-process figures of ``request.py`` and ``hooks.py``);
* ``data``: ``--evict-mib`` MiB copied (a C-level ``memcpy``, which leaves the interpreter's own
  code paths alone) between two flows, then the request body read once (mitmproxy has just
  assembled it, so it is in the caches in a proxy too);
* ``python``: unrelated Python work between two flows (JSON documents built, written and read
  back, about 1 ms), then the body read once: what another Python process, or mitmproxy's own
  work on other connections, leaves behind.

The addon and its floor take turns batch by batch (``--flows`` each), in rounds; printed: the median time of each,
their ratio and difference, per condition, and how many times the warm difference the others
are. Only the ratios mean anything on a noisy machine.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

# common first: importing it puts tests/ on sys.path
from common import ROOT

# isort: split
import request


def _floor_addons(name: str, folder: Path) -> list:
    """The addons of ``request.FLOORS[name]``, the script written to ``folder`` and imported as a
    module, as mitmdump loads a script."""
    path = folder / f"floor_{name}.py"
    path.write_text(request.FLOORS[name])
    spec = importlib.util.spec_from_file_location(f"floor_{name}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # msgspec resolves the Structs' annotations through it
    spec.loader.exec_module(module)
    return module.addons


def _python_work(seed: int) -> None:
    """About a millisecond of unrelated Python: small documents built, written and read back."""
    docs = [{"id": i, "name": f"item-{seed}-{i}", "tags": [str(i), "x" * (i % 7)]} for i in range(400)]
    json.loads(json.dumps(docs))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--flows", type=int, default=300, help="flows of each kind per round and condition")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--evict-mib", type=int, default=64, help="MiB copied between two flows ('data')")
    parser.add_argument("--script", default=str(ROOT / "addon" / "toolvocab.py"), help="addon script to measure")
    args = parser.parse_args()

    from mitmproxy import http
    from mitmproxy.test import taddons

    body = request.transcript(200_000)
    source = bytearray(args.evict_mib << 20)
    target = bytearray(len(source))

    def evict_data(_: int) -> None:
        target[:] = source

    conditions = {"warm": None, "data": evict_data, "python": _python_work}

    def flow() -> http.HTTPFlow:
        return request.request_flow(body)

    def hooks_of(addons: list) -> list:
        return [
            getattr(a, h)
            for h in ("requestheaders", "request", "responseheaders", "response")
            for a in addons
            if hasattr(a, h)
        ]

    with taddons.context() as tctx:
        module = tctx.script(args.script)
        addon = module.addons[0]
        tctx.configure(addon, toolvocab_mode="auto")
        addon.recorder.saves_bodies = lambda: False  # plain mitmdump: nothing saves or shows flows
        ours = hooks_of(module.addons)
        folder = Path(tempfile.mkdtemp(prefix="toolvocab-cold-"))
        floors = {
            kind: hooks_of(_floor_addons(name, folder)) for kind, name in (("plain", "typed"), ("repaired", "repair"))
        }
        answers = {"plain": request.ANSWER, "repaired": request.REPAIR_ANSWER}

        def run(hooks: list, kind: str, between) -> float:
            """Seconds of one flow through ``hooks``, ``between`` run first."""
            f = flow()
            if between is not None:
                between(id(f))
                body.find(b"\x01")  # the body just assembled: in the caches
            took = 0.0
            for hook in hooks:
                if hook.__name__ == "responseheaders" and f.response is None:
                    f.response = http.Response.make(200, answers[kind], {"content-type": "application/json"})
                start = time.perf_counter()
                hook(f)
                took += time.perf_counter() - start
            if kind == "repaired" and hooks is ours:
                assert b'"name":"Bash"' in f.response.content, f.response.content
            return took

        for kind in floors:  # warm-up: imports, first allocations, the caches of the plan
            for _ in range(50):
                run(ours, kind, None)
                run(floors[kind], kind, None)
        # the loaded modules out of the cyclic GC's reach: a full collection (tens of ms, once per
        # some hundred flows) would land in whichever flow triggers it, not in its cause
        gc.collect()
        gc.freeze()
        times: dict[tuple[str, str, str], list[float]] = {}
        for turn in range(args.rounds):
            for condition, between in conditions.items():
                for kind in floors:
                    pair = [("addon", ours), ("floor", floors[kind])]
                    for who, hooks in pair if turn % 2 == 0 else pair[::-1]:
                        for _ in range(args.flows):  # a batch: "warm" is each side's own caches
                            times.setdefault((kind, condition, who), []).append(run(hooks, kind, between))

    print(
        f"in process, µs per 200 KB flow (median of {args.rounds} x {args.flows} flows each), the addon and its "
        f"floor taking turns; between two flows: warm nothing, data {args.evict_mib} MiB copied, python ~1 ms of "
        "unrelated Python"
    )
    print(
        f"{'flow':9s} {'condition':9s} {'floor':>8s} {'addon':>8s} {'addon/floor':>12s} {'difference':>11s} {'x warm':>7s}"
    )
    summary = []
    for kind, floor_name in (("plain", "typed"), ("repaired", "repair")):
        warm_gap = None
        for condition in conditions:
            fl = statistics.median(times[(kind, condition, "floor")]) * 1e6
            ad = statistics.median(times[(kind, condition, "addon")]) * 1e6
            gap = ad - fl
            warm_gap = gap if warm_gap is None else warm_gap
            print(
                f"{kind:9s} {condition:9s} {fl:8.0f} {ad:8.0f} {ad / fl:11.2f}x {gap:11.0f} {gap / warm_gap:6.1f}x"
                f"   (floor: {floor_name})"
            )
            summary.append(f"{kind} {condition} {ad / fl:.2f}x ({gap:+.0f} µs)")
    print("summary, addon / floor:", ", ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
