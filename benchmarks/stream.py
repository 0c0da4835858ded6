"""What the addon costs on streamed answers, as ratios against bare mitmdump in the same run.

    uv run --extra test python benchmarks/stream.py [--runs 5] [--mb 20] [--script PATH]

A raw asyncio upstream (a process of its own) on 127.0.0.1 answers every POST with an Anthropic SSE stream (HTTP/1.1
chunked). Three proxies run side by side in reverse mode, each a real ``mitmdump``:

* ``bare``: plain mitmdump (buffers the whole answer: mitmproxy's default);
* ``bare+stream``: plain mitmdump with ``--set stream_large_bodies=1`` (passes chunks through);
* ``floor``: mitmdump with a script (:data:`FLOOR_SCRIPT`) whose stream callable only looks for
  the Anthropic tool marker (and a ``\\u`` escape) in each chunk and passes it on: the least
  any rewriter that reads the stream pays (one substring search per chunk, no parsing);
* ``addon``: ``mitmdump -s addon/toolvocab.py`` (or ``--script``), which streams event streams
  through its rewriter.

Figures, each the median of ``--runs`` runs; within a run the proxies take turns (request by
request for TTFB; for the bulk and per-event answers, one each a run; each turn's order drawn
afresh, :func:`request.turns`), so drift hits all alike (this machine is noisy: only the ratios
within one run mean anything):

* TTFB: time to the first body byte of a small stream whose first event is written at once
  and the rest 200 ms later (8 requests per run, a new connection each);
* bulk: throughput of ``--mb`` MB of text deltas written as fast as the upstream can, in 16 KB
  writes, ending with a tool call (so the addon's hold/resolve path runs too);
* per-event delay: 400 text events written 2 ms apart, each carrying the upstream's
  ``time.monotonic()`` (system-wide on Linux), p50 and p99 of arrival minus send time;
* proxy CPU per MB: CPU time of the proxy process during the bulk transfers (its process CPU
  clock, :func:`common.cpu_seconds`), summed over the runs, per MB delivered;
* peak RSS of each proxy process after all runs (``VmHWM``; bare mitmdump buffers whole
  answers, so compare with ``bare+stream``).

The ratio columns are ``addon / bare+stream`` and ``addon / floor`` (for throughput, higher is
better). On a 2-core machine the upstream, the proxy and the client share the cores, so a few
microseconds of Python per chunk cost far more throughput than their own CPU time: the floor's
one search per chunk is what separates what the addon does from what looking at all costs.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import os
import statistics
import tempfile
import time

# common first: importing it puts tests/ on sys.path (for procs)
from common import CHUNKED_SSE_HEAD
from common import UpstreamProcess
from common import chunk
from common import compile_bytecode
from common import cpu_seconds
from common import ev
from common import pct
from common import read_delays
from common import serve
from common import status_mib

# isort: split
from request import turns

import procs

TOOLS = [
    {
        "name": "Bash",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
    {
        "name": "Read",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
    },
]
REQUEST = json.dumps(
    {"model": "m", "max_tokens": 100, "stream": True, "tools": TOOLS, "messages": [{"role": "user", "content": "hi"}]}
).encode()


HEAD = ev(
    {"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}}
) + ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})


def text_event(text: str) -> bytes:
    return ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})


TAIL = (
    ev({"type": "content_block_stop", "index": 0})
    + ev(
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
        }
    )
    + ev(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"command": "echo hi"}'},
        }
    )
    + ev({"type": "content_block_stop", "index": 1})
    + ev({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    + ev({"type": "message_stop"})
)


#: The floor: a stream callable that searches each chunk for the marker the Anthropic rewriter
#: needs (``content_block_start``, or a ``\\u`` escape that could spell it) and passes the chunk on.
FLOOR_SCRIPT = """
def scan(data):
    b"content_block_start" in data or b"\\\\u" in data
    return data


def responseheaders(flow):
    if "text/event-stream" in flow.response.headers.get("content-type", ""):
        flow.response.stream = scan
"""


def make_handler(mb: int):
    """The upstream's connection handler (run in its process); the request path picks the answer:
    ``/v1/messages`` bulk (``mb`` MB), ``?ttfb`` small stream, ``?events`` timed events."""
    sentence = "The quick brown fox jumps over the lazy dog. " * 3
    one = text_event(sentence)
    bulk_body = HEAD + one * (mb * 1_000_000 // len(one)) + TAIL

    async def answer(path: str, writer: asyncio.StreamWriter) -> None:
        writer.write(CHUNKED_SSE_HEAD)
        if "ttfb" in path:
            writer.write(chunk(HEAD + text_event("first")))
            await writer.drain()
            await asyncio.sleep(0.2)
            writer.write(chunk(TAIL))
        elif "events" in path:
            writer.write(chunk(HEAD))
            for _ in range(400):
                writer.write(chunk(text_event(f"t={time.monotonic():.6f};")))
                await writer.drain()
                await asyncio.sleep(0.002)
            writer.write(chunk(TAIL))
        else:
            for i in range(0, len(bulk_body), 16384):
                writer.write(chunk(bulk_body[i : i + 16384]))
                if i % (16384 * 16) == 0:
                    await writer.drain()
        writer.write(b"0\r\n\r\n")

    return serve(answer)


def request(port: int, path: str) -> http.client.HTTPResponse:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST", path, body=REQUEST, headers={"content-type": "application/json", "anthropic-version": "2023-06-01"}
    )
    return conn.getresponse()


def ttfb(port: int) -> float:
    t = time.perf_counter()
    resp = request(port, "/v1/messages?ttfb")
    first = resp.read1(65536)
    took = time.perf_counter() - t
    assert first
    resp.read()
    return took


def bulk(port: int, pid: int) -> tuple[float, float, int]:
    """(seconds, proxy CPU seconds, bytes)."""
    cpu = cpu_seconds(pid)
    t = time.perf_counter()
    resp = request(port, "/v1/messages?bulk")
    n = 0
    while True:
        data = resp.read1(1 << 20)
        if not data:
            break
        n += len(data)
    return time.perf_counter() - t, cpu_seconds(pid) - cpu, n


def event_delays(port: int) -> list[float]:
    return read_delays(request(port, "/v1/messages?events"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--mb", type=int, default=20)
    parser.add_argument("--script", default=str(procs.ADDON_SCRIPT), help="addon script to measure")
    args = parser.parse_args()

    compile_bytecode()
    upstream = UpstreamProcess(make_handler, args.mb)
    url = upstream.url
    proxies = {}
    with tempfile.NamedTemporaryFile("w", suffix="_floor.py", delete=False) as fp:
        fp.write(FLOOR_SCRIPT)
    try:
        proxies["bare"] = procs.start_mitmdump(url, script=None, options={"flow_detail": "0"})
        proxies["bare+stream"] = procs.start_mitmdump(
            url, script=None, options={"flow_detail": "0", "stream_large_bodies": "1"}
        )
        proxies["floor"] = procs.start_mitmdump(url, script=fp.name, options={"flow_detail": "0"})
        proxies["addon"] = procs.start_mitmdump(url, script=args.script, options={"flow_detail": "0"})
        figures: dict[str, dict[str, list[float]]] = {
            k: {"ttfb": [], "mbps": [], "cpu_ms_per_mb": [], "p50": [], "p99": []} for k in proxies
        }
        totals = {k: [0.0, 0] for k in proxies}  # CPU seconds, bytes: summed over the runs
        for name, p in proxies.items():  # warm up
            ttfb(p.port)
            bulk(p.port, p.process.proc.pid)
        order = list(proxies)
        for _ in range(args.runs):
            for turn in turns(order, 8):  # the proxies take turns, request by request
                for name in turn:
                    figures[name]["ttfb"].append(ttfb(proxies[name].port))
            for name in next(turns(order, 1)):  # one bulk answer each, in an order drawn afresh
                p = proxies[name]
                secs, cpu, n = bulk(p.port, p.process.proc.pid)
                assert n >= args.mb * 1_000_000, (name, n)
                figures[name]["mbps"].append(n / secs / 1e6)
                figures[name]["cpu_ms_per_mb"].append(cpu * 1e3 / (n / 1e6))
                totals[name][0] += cpu
                totals[name][1] += n
                d = event_delays(p.port)
                figures[name]["p50"].append(pct(d, 50))
                figures[name]["p99"].append(pct(d, 99))
        rss = {name: status_mib(p.process.proc.pid, "VmHWM") for name, p in proxies.items()}
    finally:
        for p in proxies.values():
            p.stop()
        upstream.stop()
        os.unlink(fp.name)

    med = {k: {f: statistics.median(v) for f, v in figs.items()} for k, figs in figures.items()}
    for k, (cpu, n) in totals.items():  # CPU per MB over all runs (finer than a per-run median)
        med[k]["cpu_ms_per_mb"] = cpu * 1e3 / (n / 1e6)
    rows = [
        ("time to first byte", "ttfb", 1e3, "ms"),
        (f"bulk throughput ({args.mb} MB)", "mbps", 1, "MB/s"),
        ("per-event delay p50", "p50", 1e3, "ms"),
        ("per-event delay p99", "p99", 1e3, "ms"),
        ("proxy CPU per MB", "cpu_ms_per_mb", 1, "ms"),
    ]
    print(f"streamed answers, median of {args.runs} runs; addon = {args.script}")
    names = ("bare", "bare+stream", "floor", "addon")
    print(
        f"{'figure':28s} {'bare':>10s} {'bare+stream':>12s} {'floor':>10s} {'addon':>10s}  addon/bare+stream  addon/floor"
    )
    for label, key, scale, unit in rows:
        vals = [med[k][key] * scale for k in names]
        print(
            f"{label:28s} {vals[0]:10.2f} {vals[1]:12.2f} {vals[2]:10.2f} {vals[3]:10.2f}  {vals[3] / vals[1]:10.2f}x  "
            f"{vals[3] / vals[2]:10.2f}x   ({unit})"
        )
    vals = [rss[k] for k in names]
    print(
        f"{'peak RSS after all runs':28s} {vals[0]:10.1f} {vals[1]:12.1f} {vals[2]:10.1f} {vals[3]:10.1f}  "
        f"{vals[3] / vals[1]:10.2f}x  {vals[3] / vals[2]:10.2f}x   (MiB)"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
