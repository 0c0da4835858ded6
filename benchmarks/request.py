"""What the addon costs on requests, as ratios against bare mitmdump in the same run.

    uv run --extra test python benchmarks/request.py [--runs 5] [--requests 20] [--script PATH]

A raw asyncio upstream (a process of its own) on 127.0.0.1 reads each POST body and answers a
small Anthropic JSON message (``?sse``: a short event stream). It does not parse or log the body:
``tests/fake_upstream.py`` parses and logs every request (base64 and all), a per-request cost that
would sit in both columns and shrink every ratio, and a log that grows with every 2 MB body.
Real ``mitmdump`` processes run side by side in reverse mode in front of it:

* ``bare``: plain mitmdump;
* ``floor``: mitmdump with a script (:data:`FLOOR_SCRIPT`) that only reads each request body with
  ``orjson.loads`` and streams event streams: what any addon that looks at requests pays;
* ``addon``: ``mitmdump -s addon/toolvocab.py`` (or ``--script``), mode ``auto``.

The bodies are Claude-Code-shaped Anthropic Messages requests built here (:func:`transcript`), written
compactly as Claude Code writes them:
a long system prompt that names every declared tool, 20 tools with descriptions and schemas,
and a transcript of turns, each an assistant ``text`` + ``tool_use`` and a user ``tool_result``
(some ``is_error``, some a JSON file read back, whose quotes are escaped in the body). Nothing in them is for the addon to change: the request goes out as the
client's bytes and the answer is a plain text message.

Figures, each the median over ``--runs`` runs, the runs interleaved across the proxies (this
machine is noisy: only the ratios within one run mean anything):

* 200 KB request: p50 latency (client send to full answer, keep-alive connection) of
  ``--requests`` requests per run, and proxy CPU per request (user+system CPU of the mitmdump
  process from ``/proc/<pid>/stat`` before and after, summed over all runs);
* 2 MB transcript: p50 latency (``--requests`` // 2 per run) and proxy CPU per request;
* time to first byte of a streamed answer to the 200 KB request (a new connection each; the
  upstream writes the first events at once and the rest 50 ms later); bare mitmdump buffers
  whole answers, so the ``bare`` figure here comes from another process, plain mitmdump with
  ``--set stream_large_bodies=1``;
* peak RSS (``VmHWM``) of each proxy after all runs, and its RSS (``VmRSS``) after the warm-up
  and at the end (flat RSS: no growth with the number of flows).

Then, in process (``mitmproxy.test.taddons``, the addon loaded as mitmdump loads it), the
``request`` hook alone on a 2 MB transcript that changes (one tool the system prompt does not
mention: the prompt sentence is added and the body re-serialized) and on the unchanged one,
against ``orjson.loads`` + ``orjson.dumps`` of the same body (median of ``--runs`` × 5 calls).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import statistics
import time

from common import CHUNKED_SSE_HEAD, UpstreamProcess, chunk, cpu_seconds, ev, serve, status_mib  # first: puts tests/ on sys.path

import procs

#: Tool names of the kind a coding agent declares; descriptions and schemas are filler written here.
TOOL_NAMES = [
    "Task", "Bash", "Glob", "Grep", "ExitPlanMode", "Read", "Edit", "MultiEdit", "Write", "NotebookEdit",
    "WebFetch", "TodoWrite", "WebSearch", "BashOutput", "KillShell", "SlashCommand",
    "mcp__ide__getDiagnostics", "mcp__ide__executeCode", "mcp__files__list_directory", "mcp__files__search_files",
]
WORDS = ("the quick brown fox jumps over the lazy dog while a tool reads files and writes patches "
         "to the repository under test then runs the suite again and reports what failed ").split()


def filler(n: int, seed: int) -> str:
    """About ``n`` characters of words (deterministic in ``seed``)."""
    out, i = [], seed
    total = 0
    while total < n:
        w = WORDS[(i * 7 + 3) % len(WORDS)]
        out.append(w)
        total += len(w) + 1
        i += 1
    return " ".join(out)


def tools() -> list[dict]:
    """20 tool declarations, ~1 KB each."""
    out = []
    for k, name in enumerate(TOOL_NAMES):
        props = {
            f"arg{j}": {"type": "string" if j % 3 else "integer", "description": filler(120, k * 10 + j)}
            for j in range(4)
        }
        out.append({
            "name": name,
            "description": filler(600, k),
            "input_schema": {"type": "object", "properties": props, "required": ["arg0"], "additionalProperties": False,
                             "$schema": "http://json-schema.org/draft-07/schema#"},
        })
    return out


def transcript(size: int, *, mention_all: bool = True, stream: bool = False, spaced: bool = False) -> bytes:
    """An Anthropic Messages request of about ``size`` bytes (see the module docstring), written
    compactly as Claude Code's ``JSON.stringify`` (and httpx 0.28, under the official Python SDKs)
    writes it; ``spaced=True``: with ``json.dumps``'s default ``", "`` and ``": "`` and ASCII
    escapes instead. ``mention_all=False`` leaves one declared tool out of the system prompt, so
    ``auto`` mode adds its sentence and the body changes."""
    names = TOOL_NAMES if mention_all else TOOL_NAMES[:-1]
    system = [
        {"type": "text", "text": "You are a coding agent working in a terminal."},
        {"type": "text", "text": filler(12000, 1) + "\nTools: " + ", ".join(names) + ".\n" + filler(4000, 2),
         "cache_control": {"type": "ephemeral"}},
    ]
    body = {"model": "claude-sonnet-4-5", "max_tokens": 32000, "stream": stream, "system": system, "tools": tools(),
            "metadata": {"user_id": "user_0123456789abcdef"}, "messages": [
                {"role": "user", "content": [{"type": "text", "text": "Fix the failing test. " + filler(2000, 3)}]}]}
    n = 0
    while len(json.dumps(body)) < size:
        n += 1
        name = TOOL_NAMES[n % 16]  # the plain (non-MCP) tools
        tid = f"toolu_{n:020d}"
        body["messages"].append({"role": "assistant", "content": [
            {"type": "text", "text": filler(300, n)},
            {"type": "tool_use", "id": tid, "name": name, "input": {"arg0": filler(200, n + 1), "arg1": n}},
        ]})
        result: dict = {"type": "tool_result", "tool_use_id": tid, "content": filler(3000, n + 2)}
        if n % 5 == 0:  # a file of JSON read back: escaped quotes before colons in the body
            result["content"] = json.dumps({"name": f"pkg{n}", "version": "1.0.0", "scripts": {"test": filler(80, n)},
                                            "dependencies": {f"dep{j}": f"^{j}.0.0" for j in range(20)}}, indent=2)
        if n % 7 == 0:
            result["is_error"] = True
            result["content"] = "Error: command failed with exit code 1\n" + filler(800, n)
        body["messages"].append({"role": "user", "content": [result]})
    if spaced:
        return json.dumps(body).encode()
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


ANSWER = json.dumps({
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
    "content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn",
    "usage": {"input_tokens": 10, "output_tokens": 2},
}).encode()


SSE_HEAD = ev({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}}) + ev(
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}) + ev(
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "first"}})
SSE_TAIL = ev({"type": "content_block_stop", "index": 0}) + ev(
    {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}) + ev({"type": "message_stop"})


async def _answer(path: str, writer: asyncio.StreamWriter) -> None:
    if "sse" in path:
        writer.write(CHUNKED_SSE_HEAD + chunk(SSE_HEAD))
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(chunk(SSE_TAIL) + b"0\r\n\r\n")
    else:
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(ANSWER), ANSWER))


def make_handler():
    """The upstream's connection handler (run in its process): ``?sse`` a short event stream
    (the first events at once, the rest 50 ms later), else :data:`ANSWER` as JSON."""
    return serve(_answer)


HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-bench"}


def latencies(port: int, body: bytes, n: int) -> list[float]:
    """Seconds per request for ``n`` POSTs of ``body`` on one keep-alive connection."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    out = []
    try:
        for _ in range(n):
            t = time.perf_counter()
            conn.request("POST", "/v1/messages", body=body, headers=HEADERS)
            resp = conn.getresponse()
            data = resp.read()
            out.append(time.perf_counter() - t)
            assert resp.status == 200 and data == ANSWER, (resp.status, data[:200])
    finally:
        conn.close()
    return out


def ttfb(port: int, body: bytes) -> float:
    """Seconds to the first body byte of a streamed answer (new connection)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        t = time.perf_counter()
        conn.request("POST", "/v1/messages?sse", body=body, headers=HEADERS)
        resp = conn.getresponse()
        first = resp.read1(65536)
        took = time.perf_counter() - t
        assert first.startswith(b"event: message_start"), first[:100]
        resp.read()
        return took
    finally:
        conn.close()


#: The floor: a script that only reads the body with ``orjson`` (and streams event streams, as the
#: addon does): what any addon that looks at the request pays in mitmdump.
FLOOR_SCRIPT = """
import orjson


class Floor:
    def request(self, flow):
        if flow.request.method == "POST" and flow.request.content:
            orjson.loads(flow.request.content)

    def responseheaders(self, flow):
        if "text/event-stream" in flow.response.headers.get("content-type", ""):
            flow.response.stream = True


addons = [Floor()]
"""


def through_proxies(args: argparse.Namespace, small: bytes, big: bytes, small_stream: bytes) -> None:
    """The figures through real mitmdump processes; prints the table."""
    import tempfile

    upstream = UpstreamProcess(make_handler)
    url = upstream.url
    proxies: dict[str, procs.MitmdumpHandle] = {}
    streaming = None
    with tempfile.NamedTemporaryFile("w", suffix="_floor.py", delete=False) as fp:
        fp.write(FLOOR_SCRIPT)
    try:
        proxies["bare"] = procs.start_mitmdump(url, script=None, options={"flow_detail": "0"})
        proxies["floor"] = procs.start_mitmdump(url, script=fp.name, options={"flow_detail": "0"})
        proxies["addon"] = procs.start_mitmdump(url, script=args.script, options={"flow_detail": "0"})
        # bare mitmdump buffers a whole answer: its time to first byte is taken with streaming on
        streaming = procs.start_mitmdump(url, script=None, options={"flow_detail": "0", "stream_large_bodies": "1"})
        ttfb_port = {name: (streaming.port if name == "bare" else p.port) for name, p in proxies.items()}
        keys = ("small", "big", "ttfb")
        lat: dict[str, dict[str, list[float]]] = {k: {f: [] for f in keys} for k in proxies}
        cpu = {k: {"small": [0.0, 0], "big": [0.0, 0]} for k in proxies}
        for name, p in proxies.items():  # warm up (imports, caches, first allocations)
            latencies(p.port, small, 5)
            latencies(p.port, big, 3)
            ttfb(ttfb_port[name], small_stream)
        rss_start = {k: status_mib(p.process.proc.pid, "VmRSS") for k, p in proxies.items()}
        nbig = max(1, args.requests // 2)
        for _ in range(args.runs):
            for name, p in proxies.items():
                pid = p.process.proc.pid
                c = cpu_seconds(pid)
                lat[name]["small"].append(statistics.median(latencies(p.port, small, args.requests)))
                cpu[name]["small"][0] += cpu_seconds(pid) - c
                cpu[name]["small"][1] += args.requests
                c = cpu_seconds(pid)
                lat[name]["big"].append(statistics.median(latencies(p.port, big, nbig)))
                cpu[name]["big"][0] += cpu_seconds(pid) - c
                cpu[name]["big"][1] += nbig
                lat[name]["ttfb"].append(statistics.median(ttfb(ttfb_port[name], small_stream) for _ in range(5)))
        time.sleep(0.5)
        rss_end = {k: status_mib(p.process.proc.pid, "VmRSS") for k, p in proxies.items()}
        hwm = {k: status_mib(p.process.proc.pid, "VmHWM") for k, p in proxies.items()}
        flows = 8 + args.runs * (args.requests + nbig)
    finally:
        for p in [*proxies.values(), *([streaming] if streaming else [])]:
            p.stop()
        upstream.stop()
        os.unlink(fp.name)

    med = {k: {f: statistics.median(v) for f, v in figs.items()} for k, figs in lat.items()}
    names = ("bare", "floor", "addon")
    print(f"requests through mitmdump, median of {args.runs} runs; addon = {args.script}")
    print(f"bodies: {len(small):,} B and {len(big):,} B (20 tools, nothing to change); "
          "floor = mitmdump + a script that only orjson-parses the request body")
    print(f"{'figure':36s} {'bare':>8s} {'floor':>8s} {'addon':>8s}  addon/bare  addon/floor")
    rows = [
        (f"{len(small) // 1000} KB request p50 latency", [med[k]["small"] for k in names], "ms"),
        (f"{len(small) // 1000} KB request proxy CPU/request", [cpu[k]["small"][0] / cpu[k]["small"][1] for k in names], "ms"),
        (f"{len(big) / 1e6:.1f} MB transcript p50 latency", [med[k]["big"] for k in names], "ms"),
        (f"{len(big) / 1e6:.1f} MB transcript proxy CPU/request", [cpu[k]["big"][0] / cpu[k]["big"][1] for k in names], "ms"),
        ("streamed answer: time to first byte*", [med[k]["ttfb"] for k in names], "ms"),
    ]
    for label, (b, f, a), unit in rows:
        print(f"{label:36s} {b * 1e3:8.2f} {f * 1e3:8.2f} {a * 1e3:8.2f}  {a / b:9.2f}x  {a / f:10.2f}x  ({unit})")
    b, f, a = (hwm[k] for k in names)
    print(f"{'peak RSS (VmHWM)':36s} {b:8.1f} {f:8.1f} {a:8.1f}  {a / b:9.2f}x  {a / f:10.2f}x  (MiB)")
    print("* bare: plain mitmdump with stream_large_bodies=1 (it buffers whole answers otherwise)")
    for k in names:
        print(f"RSS {k}: {rss_start[k]:.1f} MiB after warm-up, {rss_end[k]:.1f} MiB after {flows} flows "
              f"({rss_end[k] / rss_start[k]:.2f}x)")


def in_process(args: argparse.Namespace, changing: bytes, unchanged: bytes, spaced: bytes) -> None:
    """The addon's request hook against ``orjson.loads`` + ``orjson.dumps`` on the same body."""
    import orjson
    from mitmproxy import http
    from mitmproxy.test import taddons
    from mitmproxy.test import tflow
    from mitmproxy.test import tutils

    def flow(body: bytes) -> http.HTTPFlow:
        req = tutils.treq(method=b"POST", host="api.anthropic.com", port=443, scheme=b"https", authority=b"",
                          path=b"/v1/messages", headers=http.Headers([(k.encode(), v.encode()) for k, v in HEADERS.items()]),
                          content=body)
        return tflow.tflow(req=req, resp=False)

    def once(body: bytes, fn) -> float:
        """Seconds of one ``fn(flow)`` call on a flow built beforehand."""
        f = flow(body)
        gc.collect()
        t = time.perf_counter()
        fn(f)
        return time.perf_counter() - t

    n = max(5, args.runs * 5)
    with taddons.context() as tctx:
        module = tctx.script(args.script)
        addon = module.addons[0]
        tctx.configure(addon, toolvocab_mode="auto")
        saves = addon.recorder.saves_bodies
        print(f"\nin process: the request hook (mode auto) against orjson.loads + dumps of the same body, timed "
              f"back to back {n} times;\nmedians of the times, and the median of the {n} per-round ratios (steadier "
              "on a noisy machine than a ratio of medians).\n'mitmdump': as in plain mitmdump, nothing saves flows; "
              "'-w': something saves or shows them (-w, toolvocab_record, mitmweb), so the transcript's tool errors "
              "are classified too")
        print(f"{'body':36s} {'orjson':>8s} {'mitmdump':>9s} {'-w':>9s}   ratios")
        for label, body, want_change in (("2 MB transcript that changes", changing, True),
                                          ("2 MB transcript, nothing to change", unchanged, False),
                                          ("same, spaced (json.dumps default)", spaced, False)):
            f = flow(body)
            addon.request(f)
            record = f.metadata["toolvocab"]
            assert record.get("request_changed") is want_change, record
            assert (f.request.content == body) is not want_change
            if want_change:  # what goes upstream is exactly what a whole rewrite would send
                assert f.request.content == orjson.dumps(orjson.loads(f.request.content))
            addon._states.clear()

            def hook(f: http.HTTPFlow) -> None:
                addon.request(f)
                addon._states.clear()

            def plain_hook(f: http.HTTPFlow) -> None:
                addon.recorder.saves_bodies = lambda: False
                try:
                    hook(f)
                finally:
                    addon.recorder.saves_bodies = saves

            times: dict[str, list[float]] = {"base": [], "plain": [], "saving": []}
            for _ in range(n):
                times["base"].append(once(body, lambda f: orjson.dumps(orjson.loads(f.request.content))))
                times["plain"].append(once(body, plain_hook))
                times["saving"].append(once(body, hook))
            med = {k: statistics.median(v) for k, v in times.items()}
            ratio = {k: statistics.median(t / b for t, b in zip(times[k], times["base"])) for k in ("plain", "saving")}
            print(f"{label:36s} {med['base'] * 1e3:8.2f} {med['plain'] * 1e3:9.2f} {med['saving'] * 1e3:9.2f}   "
                  f"{ratio['plain']:4.2f}x  {ratio['saving']:4.2f}x  (ms)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="200 KB requests per run (half as many 2 MB)")
    parser.add_argument("--script", default=str(procs.ADDON_SCRIPT), help="addon script to measure")
    parser.add_argument("--skip-proxies", action="store_true", help="only the in-process figures")
    args = parser.parse_args()

    small = transcript(200_000)
    big = transcript(2_000_000)
    if not args.skip_proxies:
        through_proxies(args, small, big, transcript(200_000, stream=True))
    in_process(args, transcript(2_000_000, mention_all=False), big, transcript(2_000_000, spaced=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
