"""Load and memory: a real mitmdump with the addon under concurrent streams, many flows, a huge answer.

    uv run --extra test python benchmarks/load.py [--quick] [--streams 200] [--flows 10000] [--big-mb 50]

Everything runs on 127.0.0.1: ``tests/fake_upstream.py`` as the upstream and ``mitmdump`` in
reverse mode in front of it (both started and stopped by ``tests/procs.py``, by PID; every wait
is bounded and the whole run stops itself after ``--deadline`` seconds). Three parts:

1. **Concurrent streams**: ``--streams`` Anthropic streaming requests at once, each declaring its
   own tool list (one of eight shell tools, ``Read``, and two tools named after the flow); the
   upstream answers every one with a call to ``shell`` in 64-byte pieces 5 ms apart, which the
   addon must repair to that flow's own shell tool. Printed: completed streams (the client got
   ``message_stop``), cross-flow leaks (a client got a tool name its request did not declare,
   or the upstream got another flow's tool names), repairs, throughput, mitmdump's CPU time and
   RSS; then the same streams through bare mitmdump (``stream_large_bodies=1``) in the same run,
   and the addon's throughput, CPU and peak RSS as ratios against it.
2. **RSS over many flows**: ``--flows`` flows (half streamed, half JSON, every one repaired)
   through one mitmdump, 20 at a time; RSS (VmRSS of the mitmdump process) at 1,000, 2,000,
   5,000 and 10,000 flows, and the change from 1,000 to the last mark (flat: within ±10%).
3. **A huge answer**: one ``--big-mb`` MB JSON answer needing a repair, and one as an event
   stream, through a fresh ``mitmdump -s addon/toolvocab.py`` and a fresh bare ``mitmdump``;
   peak RSS (VmHWM) of each, and the addon's peak against the bare one and against the answer.

Prints one line per figure and ends with a JSON summary line (``SUMMARY {...}``).
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import http.client
import json
import re
import sys
import threading
import time
from typing import Any

# common first: importing it puts tests/ on sys.path (for procs)
from common import compile_bytecode
from common import cpu_seconds
from common import status_kb

# isort: split
import procs

SHELLS = [
    "Bash",
    "run_shell_command",
    "execute_command",
    "exec_command",
    "bash",
    "shell_command",
    "terminal",
    "run_terminal_cmd",
]
SHELL_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
PATH_SCHEMA = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
FLOW_TOOL = re.compile(r"flowtool_(\d+)_[ab]")
DEADLINE = time.monotonic() + 1800.0


def remaining(cap: float) -> float:
    left = DEADLINE - time.monotonic()
    if left <= 0:
        raise TimeoutError("benchmarks/load.py: overall deadline reached")
    return min(cap, left)


def mb(kb: int) -> float:
    return round(kb / 1024, 1)


def tools_for(i: int) -> list[dict]:
    return [
        {"name": SHELLS[i % len(SHELLS)], "description": "Run a shell command.", "input_schema": SHELL_SCHEMA},
        {"name": "Read", "description": "Read a file.", "input_schema": PATH_SCHEMA},
        {"name": f"flowtool_{i}_a", "description": f"Tool a of flow {i}.", "input_schema": PATH_SCHEMA},
        {"name": f"flowtool_{i}_b", "description": f"Tool b of flow {i}.", "input_schema": PATH_SCHEMA},
    ]


def request_body(i: int, stream: bool) -> bytes:
    return json.dumps(
        {
            "model": "claude-sonnet-4-5",
            "max_tokens": 1024,
            "stream": stream,
            "system": [{"type": "text", "text": "You are a coding agent."}],
            "tools": tools_for(i),
            "messages": [{"role": "user", "content": f"Task {i}: list the files."}],
        }
    ).encode()


def post(port: int, i: int, stream: bool, timeout: float = 60.0) -> bytes:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=remaining(timeout))
    try:
        conn.request(
            "POST",
            "/v1/messages",
            body=request_body(i, stream),
            headers={
                "content-type": "application/json",
                "anthropic-version": "2023-06-01",
                "x-api-key": "dummy",
            },
        )
        resp = conn.getresponse()
        data = resp.read()
        if resp.status != 200:
            raise RuntimeError(f"flow {i}: HTTP {resp.status}: {data[:200]!r}")
        return data
    finally:
        conn.close()


def tool_names(answer: bytes, stream: bool) -> list[str]:
    """Tool names the client received (independent of the addon's parsers)."""
    names: list[str] = []
    if not stream:
        body = json.loads(answer)
        return [b.get("name") for b in body.get("content", []) if b.get("type") == "tool_use"]
    for line in answer.split(b"\n"):
        if line.startswith(b"data:"):
            try:
                data = json.loads(line[5:])
            except ValueError:
                continue
            block = data.get("content_block") if isinstance(data, dict) else None
            if isinstance(block, dict) and block.get("type") == "tool_use":
                names.append(block.get("name"))
    return names


def check_flow(i: int, answer: bytes, stream: bool) -> tuple[bool, list[str], bool]:
    """``(complete, leaks, repaired)`` for flow ``i``'s answer."""
    complete = b"message_stop" in answer if stream else answer.rstrip().endswith(b"}")
    declared = {t["name"] for t in tools_for(i)}
    names = tool_names(answer, stream)
    leaks = [f"flow {i} got tool {n!r}" for n in names if n not in declared]
    leaks += [
        f"flow {i} answer mentions flow {m}"
        for m in FLOW_TOOL.findall(answer.decode("utf-8", "replace"))
        if int(m) != i
    ]
    return complete, leaks, names == [SHELLS[i % len(SHELLS)]]


def upstream_leaks(fake: procs.FakeUpstreamHandle) -> tuple[int, list[str]]:
    """Every request the upstream got names only its own flow's tools."""
    leaks: list[str] = []
    records = fake.requests()
    for rec in records:
        text = json.dumps(rec.get("body"))
        flows = {int(m) for m in FLOW_TOOL.findall(text)}
        if len(flows) != 1:
            leaks.append(f"upstream request {rec.get('n')} names tools of flows {sorted(flows)}")
    return len(records), leaks


def concurrent_run(n: int, script: Any) -> dict[str, Any]:
    """``n`` concurrent streamed flows through one mitmdump (``script``: the addon, or None for
    bare mitmdump with ``stream_large_bodies=1``, the streaming baseline). Returns the figures;
    leaks and repairs are counted for the addon only (bare mitmdump repairs nothing)."""
    fake = procs.start_fake_upstream(tool_name="shell", tool_args={"command": "ls"}, chunk_size=64, chunk_delay=0.005)
    try:
        options = {"toolvocab_mode": "auto"} if script is not None else {"stream_large_bodies": "1"}
        mitm = procs.start_mitmdump(fake.url, script=script, options=options)
        try:
            pid = mitm.process.pid
            rss_before = status_kb(pid)
            peak = [rss_before]
            stop = threading.Event()

            def sample() -> None:
                while not stop.is_set():
                    try:
                        peak[0] = max(peak[0], status_kb(pid))
                    except (OSError, RuntimeError):
                        return
                    stop.wait(0.05)

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            barrier = threading.Barrier(n, timeout=30)

            def one(i: int) -> tuple[int, bytes | None, str | None]:
                try:
                    barrier.wait()
                    return i, post(mitm.port, i, True, timeout=120), None
                except Exception as exc:  # counted as not completed
                    return i, None, f"{type(exc).__name__}: {exc}"

            cpu_before = cpu_seconds(pid)
            start = time.monotonic()
            with cf.ThreadPoolExecutor(max_workers=n) as pool:
                results = list(pool.map(one, range(n), timeout=remaining(300)))
            wall = time.monotonic() - start
            cpu = cpu_seconds(pid) - cpu_before
            stop.set()
            sampler.join(timeout=2)
            complete = repaired = 0
            leaks: list[str] = []
            errors: list[str] = []
            total_bytes = 0
            for i, answer, err in results:
                if answer is None:
                    errors.append(f"flow {i}: {err}")
                    continue
                total_bytes += len(answer)
                ok, flow_leaks, rep = check_flow(i, answer, True)
                complete += ok
                repaired += rep
                if script is not None:
                    leaks += flow_leaks
            seen, up_leaks = upstream_leaks(fake)
            leaks += up_leaks
            rss_after = status_kb(pid)
        finally:
            mitm.stop()
    finally:
        fake.stop()
    for line in (leaks + errors)[:10]:
        print("    ", line)
    return {
        "streams": n,
        "completed": complete,
        "repaired": repaired,
        "cross_flow_leaks": len(leaks),
        "errors": len(errors),
        "upstream_requests": seen,
        "wall_s": round(wall, 2),
        "flows_per_s": round(n / wall, 1),
        "client_mb_per_s": round(total_bytes / wall / 1e6, 3),
        "proxy_cpu_s": round(cpu, 2),
        "proxy_cpu_ms_per_mb": round(cpu * 1000 / max(total_bytes / 1e6, 1e-9), 1),
        "rss_mb_before": mb(rss_before),
        "rss_mb_peak": mb(peak[0]),
        "rss_mb_after": mb(rss_after),
    }


def part_concurrent(n: int) -> dict[str, Any]:
    """Part 1: ``n`` concurrent streams through the addon, then the same through bare mitmdump
    (``stream_large_bodies=1``) in the same run; the ratios are addon / bare."""
    out = concurrent_run(n, procs.DEFAULT_SCRIPT)
    print(
        f"[1] {n} concurrent streams through the addon: {out['completed']} completed, {out['repaired']} repaired to their own tool, "
        f"{out['cross_flow_leaks']} cross-flow leaks, {out['errors']} errors; {out['wall_s']} s, {out['flows_per_s']} flows/s, "
        f"{out['client_mb_per_s']} MB/s to the clients; proxy CPU {out['proxy_cpu_s']} s ({out['proxy_cpu_ms_per_mb']} ms/MB); "
        f"mitmdump RSS {out['rss_mb_before']} -> peak {out['rss_mb_peak']} -> {out['rss_mb_after']} MB"
    )
    bare = concurrent_run(n, None)
    out["bare"] = bare
    out["throughput_vs_bare"] = round(out["client_mb_per_s"] / max(bare["client_mb_per_s"], 1e-9), 2)
    out["cpu_vs_bare"] = round(out["proxy_cpu_s"] / max(bare["proxy_cpu_s"], 1e-9), 2)
    out["peak_rss_vs_bare"] = round(out["rss_mb_peak"] / max(bare["rss_mb_peak"], 1e-9), 2)
    print(
        f"[1] the same {n} streams through bare mitmdump (stream_large_bodies=1): {bare['completed']} completed, "
        f"{bare['errors']} errors; {bare['wall_s']} s, {bare['client_mb_per_s']} MB/s; proxy CPU {bare['proxy_cpu_s']} s; "
        f"peak RSS {bare['rss_mb_peak']} MB"
    )
    print(
        f"[1] addon / bare: throughput {out['throughput_vs_bare']}x, proxy CPU {out['cpu_vs_bare']}x, peak RSS {out['peak_rss_vs_bare']}x"
    )
    return out


def part_rss(total: int, marks: list[int], concurrency: int = 20) -> dict[str, Any]:
    fake = procs.start_fake_upstream(tool_name="shell", tool_args={"command": "ls"}, chunk_size=256, chunk_delay=0.0)
    try:
        mitm = procs.start_mitmdump(fake.url, options={"toolvocab_mode": "auto"})
        try:
            pid = mitm.process.pid
            rss: dict[int, float] = {0: mb(status_kb(pid))}
            done = bad = leaks = 0
            start = time.monotonic()

            def one(i: int) -> tuple[bool, int]:
                stream = i % 2 == 0
                try:
                    answer = post(mitm.port, i, stream, timeout=60)
                except Exception:
                    return False, 0
                ok, flow_leaks, rep = check_flow(i, answer, stream)
                return ok and rep, len(flow_leaks)

            with cf.ThreadPoolExecutor(max_workers=concurrency) as pool:
                for mark in marks:
                    for ok, n_leaks in pool.map(one, range(done, mark), timeout=remaining(1200)):
                        bad += not ok
                        leaks += n_leaks
                    done = mark
                    fake.reset()  # the fake keeps every request: keep its memory out of the way
                    time.sleep(1.0)  # let mitmdump settle (connections closed, flows freed)
                    rss[mark] = mb(status_kb(pid))
                    print(
                        f"[2] {mark} flows: mitmdump RSS {rss[mark]} MB ({round(mark / (time.monotonic() - start), 1)} flows/s)"
                    )
            wall = time.monotonic() - start
        finally:
            mitm.stop()
    finally:
        fake.stop()
    first, last = rss[marks[0]], rss[marks[-1]]
    change = round((last - first) / first * 100, 1)
    print(
        f"[2] RSS {first} MB at {marks[0]} flows -> {last} MB at {marks[-1]} flows: {change:+} % "
        f"({'flat' if abs(change) <= 10 else 'NOT flat'}, bound ±10 %); {bad} flows not repaired/complete, {leaks} leaks; {round(wall, 1)} s"
    )
    return {
        "flows": total,
        "rss_mb": rss,
        "change_pct_first_to_last": change,
        "bad": bad,
        "leaks": leaks,
        "wall_s": round(wall, 1),
    }


def big_json_answer(size: int) -> bytes:
    text = "lorem ipsum dolor sit amet " * (size // 27 + 1)
    return json.dumps(
        {
            "id": "msg_big",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "text", "text": text[:size]},
                {"type": "tool_use", "id": "toolu_big", "name": "shell", "input": {"command": "ls"}},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    ).encode()


def big_sse_answer(size: int) -> bytes:
    def ev(obj: dict) -> bytes:
        return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()

    parts = [
        ev(
            {
                "type": "message_start",
                "message": {"id": "msg_big", "type": "message", "role": "assistant", "content": [], "model": "m"},
            }
        ),
        ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ]
    delta = ev(
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": "lorem ipsum dolor sit amet " * 150},
        }
    )
    parts += [delta] * (size // len(delta))
    parts += [
        ev({"type": "content_block_stop", "index": 0}),
        ev(
            {
                "type": "content_block_start",
                "index": 1,
                "content_block": {"type": "tool_use", "id": "toolu_big", "name": "shell", "input": {}},
            }
        ),
        ev(
            {
                "type": "content_block_delta",
                "index": 1,
                "delta": {"type": "input_json_delta", "partial_json": '{"command": "ls"}'},
            }
        ),
        ev({"type": "content_block_stop", "index": 1}),
        ev({"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}}),
        ev({"type": "message_stop"}),
    ]
    return b"".join(parts)


def part_big(size_mb: int) -> dict[str, Any]:
    size = size_mb * 1_000_000
    answers = {
        "json": (big_json_answer(size), "application/json", False),
        "sse": (big_sse_answer(size), "text/event-stream", True),
    }
    out: dict[str, Any] = {"answer_mb": size_mb}
    for kind, (body, ctype, stream) in answers.items():
        for label, script in (("addon", procs.DEFAULT_SCRIPT), ("bare", None)):
            fake = procs.start_fake_upstream()
            try:
                mitm = procs.start_mitmdump(
                    fake.url, script=script, options={"toolvocab_mode": "auto"} if script else None
                )
                try:
                    pid = mitm.process.pid
                    idle = status_kb(pid)
                    fake.enqueue(body, headers={"content-type": ctype}, chunk_size=65536)
                    start = time.monotonic()
                    answer = post(mitm.port, 0, stream, timeout=300)
                    wall = time.monotonic() - start
                    peak = status_kb(pid, "VmHWM")
                    names = tool_names(answer, stream)
                finally:
                    mitm.stop()
            finally:
                fake.stop()
            out[f"{kind}_{label}"] = {
                "idle_mb": mb(idle),
                "peak_mb": mb(peak),
                "peak_minus_idle_mb": mb(peak - idle),
                "wall_s": round(wall, 2),
                "client_bytes": len(answer),
                "tool_names": names,
            }
            print(
                f"[3] {size_mb} MB {kind} answer through {label} mitmdump: peak RSS {mb(peak)} MB "
                f"(idle {mb(idle)} MB, +{mb(peak - idle)} MB), {round(wall, 2)} s, client got tools {names}"
            )
        a, b = out[f"{kind}_addon"], out[f"{kind}_bare"]
        ratio = round(a["peak_minus_idle_mb"] / max(b["peak_minus_idle_mb"], 1.0), 2)
        per_answer = round(a["peak_minus_idle_mb"] / (len(body) / 1e6), 2)
        out[f"{kind}_addon_over_bare"] = ratio
        out[f"{kind}_addon_growth_per_answer_mb"] = per_answer
        print(f"[3] {kind}: the addon's RSS growth is {ratio}x bare mitmdump's and {per_answer}x the answer size")
    return out


def main(argv: list[str] | None = None) -> int:
    global DEADLINE
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=200)
    ap.add_argument("--flows", type=int, default=10_000)
    ap.add_argument("--big-mb", type=int, default=50)
    ap.add_argument("--quick", action="store_true", help="50 streams, 2,000 flows, 10 MB")
    ap.add_argument("--only", choices=["concurrent", "rss", "big"], action="append")
    ap.add_argument("--deadline", type=float, default=1800.0, help="stop after this many seconds")
    args = ap.parse_args(argv)
    DEADLINE = time.monotonic() + args.deadline
    compile_bytecode()
    if args.quick:
        args.streams, args.flows, args.big_mb = 50, 2_000, 10
    parts = args.only or ["concurrent", "rss", "big"]
    summary: dict[str, Any] = {}
    if "concurrent" in parts:
        summary["concurrent"] = part_concurrent(args.streams)
    if "rss" in parts:
        marks = [m for m in (1_000, 2_000, 5_000, 10_000) if m < args.flows] + [args.flows]
        summary["rss"] = part_rss(args.flows, sorted(set(marks)))
    if "big" in parts:
        summary["big"] = part_big(args.big_mb)
    print("SUMMARY " + json.dumps(summary))
    ok = True
    if "concurrent" in summary:
        c = summary["concurrent"]
        ok &= c["completed"] == c["streams"] and c["cross_flow_leaks"] == 0
    if "rss" in summary:
        ok &= abs(summary["rss"]["change_pct_first_to_last"]) <= 10 and summary["rss"]["leaks"] == 0
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
