"""What the benchmarks share: a raw asyncio upstream in a process of its own, the SSE and
HTTP/1.1 chunk bytes it writes, the per-event delay reader, and the proxy's CPU (its process
CPU-time clock) and memory (``/proc``).

Importing it puts ``tests/`` first on ``sys.path`` (for ``procs``: mitmdump and the fake upstream
started and stopped by PID). The scripts run as ``python benchmarks/<name>.py``, so this folder is
already on the path.
"""

from __future__ import annotations

import asyncio
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any
from typing import Awaitable
from typing import Callable

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT / "tests") not in sys.path:
    sys.path.insert(0, str(ROOT / "tests"))

CLK_TCK = os.sysconf("SC_CLK_TCK")

#: The head of a 200 streamed answer the upstreams write: HTTP/1.1 chunked ``text/event-stream``.
CHUNKED_SSE_HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def compile_bytecode() -> None:
    """Write the bytecode of toolvocab and of the environment's packages where it is missing or
    stale (``compileall``; a few seconds the first time, about one after), so that every mitmdump
    measured starts as a user's second run does. With ``PYTHONDONTWRITEBYTECODE`` set (as on the
    machine these figures come from) a process compiles each module whose bytecode is missing or
    stale from source instead, and keeps the compiler's memory: a few MiB more RSS, for bare
    mitmdump as for the addon."""
    import compileall
    import sysconfig

    for folder in (ROOT / "toolvocab", ROOT / "addon", Path(sysconfig.get_paths()["purelib"])):
        compileall.compile_dir(str(folder), quiet=2, workers=2)


# ------------------------------------------------------------------------------ bytes
def sse(name: str | None, data: dict) -> bytes:
    """One SSE event: an ``event:`` line when ``name``, a ``data:`` line of compact JSON, a blank line."""
    head = f"event: {name}\n" if name else ""
    return (head + "data: " + json.dumps(data, separators=(",", ":")) + "\n\n").encode()


def ev(obj: dict) -> bytes:
    """An Anthropic SSE event: named after ``obj["type"]``, compact JSON."""
    return sse(obj["type"], obj)


def chunk(data: bytes) -> bytes:
    """``data`` as one HTTP/1.1 transport chunk."""
    return b"%x\r\n%s\r\n" % (len(data), data)


# ------------------------------------------------------------------------------ upstream
Answer = Callable[[str, asyncio.StreamWriter], Awaitable[None]]


def serve(answer: Answer) -> Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]:
    """An ``asyncio.start_server`` connection handler: for each request on a keep-alive
    connection it reads the head and the body (to its Content-Length, not parsed), then awaits
    ``answer(path, writer)`` (the path with its query string; the answer writes the whole
    response) and drains. The connection ends when the client closes it."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                path = lines[0].split(" ")[1]
                length = next(
                    (int(x.split(":", 1)[1]) for x in lines[1:] if x.lower().startswith("content-length:")), 0
                )
                await reader.readexactly(length)
                await answer(path, writer)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    return handle


def _upstream_main(make_handler: Callable[..., Any], args: tuple, conn) -> None:
    async def main() -> None:
        server = await asyncio.start_server(make_handler(*args), "127.0.0.1", 0)
        conn.send(server.sockets[0].getsockname()[1])
        await asyncio.get_running_loop().run_in_executor(None, conn.recv)  # until the parent says stop

    try:
        asyncio.run(main())
    except EOFError:  # the parent went away
        pass


class UpstreamProcess:
    """An asyncio HTTP/1.1 server on 127.0.0.1 in a process of its own (``spawn``: its work does
    not share the client's GIL). ``make_handler(*args)`` runs in that process and returns the
    connection handler (e.g. :func:`serve`); it must be a module-level function (pickled by
    name). ``port`` and ``url`` once started (waits at most 30 s); ``stop()`` ends the process
    (killed after 5 s)."""

    def __init__(self, make_handler: Callable[..., Any], *args: Any) -> None:
        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self._proc = ctx.Process(target=_upstream_main, args=(make_handler, args, child), daemon=True)
        self._proc.start()
        if not self._conn.poll(30):
            self._proc.kill()
            raise RuntimeError("upstream did not start")
        self.port: int = self._conn.recv()
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        try:
            self._conn.send("stop")
        except OSError:
            pass
        self._proc.join(5)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(5)


# ------------------------------------------------------------------------------ client side
def read_delays(resp) -> list[float]:
    """Reads a streamed answer (``http.client.HTTPResponse``) to its end; for every ``t=<send
    time>;`` the upstream wrote (``time.monotonic()``, system-wide on Linux), the arrival time of
    the read that completed it minus the send time, seconds."""
    out: list[float] = []
    buf = b""
    while True:
        data = resp.read1(65536)
        now = time.monotonic()
        if not data:
            break
        buf += data
        while b"t=" in buf:
            i = buf.index(b"t=")
            j = buf.find(b";", i)
            if j < 0:
                break
            out.append(now - float(buf[i + 2 : j]))
            buf = buf[j + 1 :]
    return out


def pct(values: list[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank below) of ``values``."""
    values = sorted(values)
    return values[min(len(values) - 1, int(p / 100 * len(values)))]


# ------------------------------------------------------------------------------ /proc
def cpu_seconds(pid: int) -> float:
    """CPU seconds process ``pid`` (all its threads, ended ones too) has run so far, to the
    nanosecond: its process CPU-time clock, the clock id ``clock_getcpuclockid(3)`` gives, which
    Linux builds from the pid (``(~pid << 3) | 2``: ``MAKE_PROCESS_CPUCLOCK(pid, CPUCLOCK_SCHED)``,
    include/linux/posix-timers.h) and lets any process read. Where that clock cannot be read:
    user + system time from ``/proc/<pid>/stat`` (fields 14, 15), counted in clock ticks (10 ms
    at ``SC_CLK_TCK`` 100), coarser than a request. Raises ``OSError`` for a process that is gone."""
    try:
        return time.clock_gettime((~pid << 3) | 2)
    except OSError:
        pass
    with open(f"/proc/{pid}/stat") as fp:
        fields = fp.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def status_kb(pid: int, key: str = "VmRSS") -> int:
    """A ``/proc/<pid>/status`` memory line (``VmRSS``, ``VmHWM``: peak RSS) in kB; RuntimeError
    when the process has none."""
    with open(f"/proc/{pid}/status") as fp:
        for line in fp:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"no {key} for {pid}")


def status_mib(pid: int, key: str = "VmRSS") -> float:
    """:func:`status_kb` in MiB."""
    return status_kb(pid, key) / 1024
