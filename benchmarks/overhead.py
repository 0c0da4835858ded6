"""How much the addon costs, as ratios against baselines measured in the same run.

    uv run --extra test python benchmarks/overhead.py [--requests N] [--quick]

Two parts (this machine is noisy: only the ratios mean anything, and only within one run):

1. In process: an Anthropic SSE answer of ~1 MB (text deltas, then a foreign tool call) cut in
   64-byte pieces, pushed through (a) a plain join of the pieces (the floor), (b) the SSE parser
   parsing every event, (c) the addon's full Anthropic stream rewriter with the ladder (which
   parses only marker-bearing events). Streams against bare mitmdump, with and without
   ``stream_large_bodies`` (TTFB, throughput, per-event delay, CPU, RSS): ``benchmarks/stream.py``. Also a JSON answer
   through (a) ``orjson`` load+dump and (b) the dialect's ``rewrite_response``.
2. Through real processes: the same requests sent to ``tests/fake_upstream.py`` through a plain
   ``mitmdump`` in reverse mode (baseline) and through ``mitmdump -s addon/toolvocab.py``,
   streamed and not; median wall time per request, and the ratio.

The request path on its own (200 KB and 2 MB Claude-Code-shaped requests against bare mitmdump
and against a script that only parses the body: latency, CPU per request, RSS, the request hook
in process against ``orjson``): ``benchmarks/request.py``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

import orjson  # noqa: E402

import procs  # noqa: E402
from toolvocab.dialects.anthropic import DIALECT  # noqa: E402
from toolvocab.dialects.base import FlowContext  # noqa: E402
from toolvocab.dialects.sse import SSEParser  # noqa: E402
from toolvocab.engine.ladder import Toolset  # noqa: E402
from toolvocab.engine.ladder import resolve  # noqa: E402

TOOLS = [
    {
        "name": "Bash",
        "input_schema": {
            "type": "object",
            "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
            "required": ["command"],
            "additionalProperties": False,
        },
    },
    {
        "name": "Read",
        "input_schema": {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
    },
    {
        "name": "Edit",
        "input_schema": {
            "type": "object",
            "properties": {
                "file_path": {"type": "string"},
                "old_string": {"type": "string"},
                "new_string": {"type": "string"},
            },
            "required": ["file_path", "old_string", "new_string"],
        },
    },
    {
        "name": "Write",
        "input_schema": {
            "type": "object",
            "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
            "required": ["file_path", "content"],
        },
    },
]


def sse_answer(text_events: int) -> bytes:
    """An Anthropic stream: ``text_events`` text deltas, then a ``shell`` tool call in 4 pieces."""

    def ev(obj: dict) -> str:
        return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n"

    parts = [ev({"type": "message_start", "message": {"id": "m", "content": []}})]
    parts.append(ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}))
    chunk = "The quick brown fox jumps over the lazy dog. " * 4
    parts += [
        ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": chunk}})
        for _ in range(text_events)
    ]
    parts.append(ev({"type": "content_block_stop", "index": 0}))
    parts.append(
        ev(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
            }
        )
    )
    args = json.dumps({"command": ["bash", "-lc", "echo hi"]})
    for i in range(0, len(args), len(args) // 4 + 1):
        parts.append(
            ev(
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": args[i : i + len(args) // 4 + 1]},
                }
            )
        )
    parts.append(ev({"type": "content_block_stop", "index": 1}))
    parts.append(ev({"type": "message_stop"}))
    return "".join(parts).encode()


def best_of(fn, repeat: int) -> float:
    """Fastest of ``repeat`` runs, seconds."""
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def in_process(repeat: int) -> None:
    data = sse_answer(4000)
    pieces = [data[i : i + 64] for i in range(0, len(data), 64)]
    toolset = Toolset(DIALECT.declared_tools({"tools": TOOLS, "messages": []}))

    def floor() -> None:
        b"".join(pieces)

    def parse_only() -> None:
        p = SSEParser()
        for piece in pieces:
            p.feed(piece)
        p.close()

    def rewrite() -> None:
        rw = DIALECT.stream_rewriter(FlowContext(lambda c: resolve(c, toolset), flow_key="bench"))
        out = []
        for piece in pieces:
            out += rw.feed(piece)
        out += rw.finish()

    base = best_of(floor, repeat)
    parse = best_of(parse_only, repeat)
    full = best_of(rewrite, repeat)
    print(f"SSE answer: {len(data) / 1e6:.2f} MB in {len(pieces)} pieces")
    print(f"  join (floor)            {base * 1e3:8.2f} ms   1.00x")
    print(f"  SSE parser only         {parse * 1e3:8.2f} ms   {parse / base:6.1f}x the floor")
    # The parser parses every event; the rewriter parses only events with a tool marker,
    # so "x the parser" is no floor: compare with the join. Against bare mitmdump
    # (with and without stream_large_bodies): benchmarks/stream.py.
    print(
        f"  addon stream rewrite    {full * 1e3:8.2f} ms   {full / base:6.1f}x the floor, {full / parse:.2f}x the full parser"
    )
    print(f"  throughput              {len(data) / full / 1e6:8.1f} MB/s")

    answer = {
        "id": "m",
        "type": "message",
        "content": [
            {"type": "text", "text": "x" * 200_000},
            {"type": "tool_use", "id": "t", "name": "shell", "input": {"command": ["bash", "-lc", "echo hi"]}},
        ],
    }
    raw = orjson.dumps(answer)

    def json_floor() -> None:
        orjson.dumps(orjson.loads(raw))

    def json_rewrite() -> None:
        body = orjson.loads(raw)
        DIALECT.rewrite_response(body, FlowContext(lambda c: resolve(c, toolset), flow_key="bench"))
        orjson.dumps(body)

    jb, jr = best_of(json_floor, repeat), best_of(json_rewrite, repeat)
    print(f"JSON answer: {len(raw) / 1e3:.0f} KB")
    print(f"  orjson load+dump        {jb * 1e3:8.3f} ms   1.00x")
    print(f"  + dialect + ladder      {jr * 1e3:8.3f} ms   {jr / jb:6.2f}x")


def post(url: str, body: bytes) -> float:
    req = urllib.request.Request(
        url + "/v1/messages", data=body, headers={"content-type": "application/json"}, method="POST"
    )
    t = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as resp:
        resp.read()
    return time.perf_counter() - t


def through_processes(n: int) -> None:
    fake = procs.start_fake_upstream(tool_name="shell", tool_args={"command": ["bash", "-lc", "echo hi"]})
    plain = addon = None
    try:
        plain = procs.start_mitmdump(fake.url, script=None, save_path=None)
        addon = procs.start_mitmdump(fake.url, save_path=None)
        for stream in (False, True):
            body = orjson.dumps(
                {
                    "model": "m",
                    "max_tokens": 100,
                    "stream": stream,
                    "tools": TOOLS,
                    "messages": [{"role": "user", "content": "hi"}],
                }
            )
            times: dict[str, list[float]] = {"direct": [], "mitmdump": [], "mitmdump + toolvocab": []}
            for _ in range(3):  # warm up
                post(plain.url, body), post(addon.url, body)
            for _ in range(n):  # interleaved, so drift hits all three alike
                times["direct"].append(post(fake.url, body))
                times["mitmdump"].append(post(plain.url, body))
                times["mitmdump + toolvocab"].append(post(addon.url, body))
            med = {k: statistics.median(v) for k, v in times.items()}
            print(f"{'SSE' if stream else 'JSON'} request with a foreign tool call, median of {n}:")
            for k, v in med.items():
                print(f"  {k:22s} {v * 1e3:8.2f} ms   {v / med['mitmdump']:5.2f}x plain mitmdump")
    finally:
        for p in (addon, plain):
            if p is not None:
                p.stop()
        fake.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    args = parser.parse_args()
    in_process(3 if args.quick else 7)
    through_processes(10 if args.quick else args.requests)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
