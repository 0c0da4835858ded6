"""Run the real processes integration tests need: the fake upstream and mitmdump.

Every wait is bounded and every process runs in its own session (process group), which
``stop()`` terminates by PID (SIGTERM, then SIGKILL after a bounded wait). Output goes to
files, never to pipes that could fill up, and is attached to every startup failure.

    fake = start_fake_upstream(tool_name="bash")
    proxy = start_mitmdump(fake.url, options={"toolvocab_mode": "observe"}, save_path=p)
    try: ...
    finally:
        proxy.stop(); fake.stop()
"""

from __future__ import annotations

import atexit
import base64
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any
from typing import Iterable
from typing import Sequence

TESTS_DIR = Path(__file__).resolve().parent
REPO = TESTS_DIR.parent
ADDON_SCRIPT = REPO / "addon" / "toolvocab.py"
FAKE_UPSTREAM_SCRIPT = TESTS_DIR / "fake_upstream.py"
MITMDUMP = Path(sys.executable).parent / "mitmdump"

#: Sentinel for ``start_mitmdump(script=...)``: load ``addon/toolvocab.py``.
DEFAULT_SCRIPT = ADDON_SCRIPT


#: Lines mitmdump logs when the addon failed to load (it then exits with code 1).
STARTUP_ERROR_MARKERS = ("error in script", "Error logged during startup", "Addon error")


class ProcessStartError(RuntimeError):
    """A helper process exited or did not become ready in time (message has its output)."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1", timeout: float = 0.2) -> bool:
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


#: Every :class:`ManagedProcess` started and not stopped yet. A test that fails between starting
#: two processes (a fake upstream, then a mitmdump that does not come up) may never reach its
#: ``finally``; :func:`stop_all` stops what it left, at the session's end and at exit.
_RUNNING: set["ManagedProcess"] = set()


def stop_all() -> list[str]:
    """Stop every :class:`ManagedProcess` of this interpreter still running (by PID, as
    :meth:`ManagedProcess.stop` does); returns ``name pid`` of each one stopped."""
    stopped = []
    for process in list(_RUNNING):
        if process.running():
            stopped.append(f"{process.name} {process.pid}")
        process.stop(timeout=5)
    return stopped


atexit.register(stop_all)


class ManagedProcess:
    """A ``Popen`` in its own session with stdout/stderr in files under ``workdir``; stopped at
    the latest when the interpreter exits (:func:`stop_all`)."""

    def __init__(
        self,
        argv: Sequence[str],
        *,
        name: str,
        workdir: str | None = None,
        stdout_pipe: bool = False,
        env: dict[str, str] | None = None,
    ) -> None:
        self.name = name
        self.argv = [str(a) for a in argv]
        self.workdir = workdir or tempfile.mkdtemp(prefix=f"toolvocab-{name}-")
        self.stdout_path = os.path.join(self.workdir, f"{name}.stdout")
        self.stderr_path = os.path.join(self.workdir, f"{name}.stderr")
        self._stdout_file = None if stdout_pipe else open(self.stdout_path, "wb")
        self._stderr_file = open(self.stderr_path, "wb")
        self.proc = subprocess.Popen(
            self.argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdout_pipe else self._stdout_file,
            stderr=self._stderr_file,
            start_new_session=True,
            cwd=str(REPO),
            env=env,
        )
        self.pid = self.proc.pid
        self._piped_stdout = bytearray()
        _RUNNING.add(self)

    def running(self) -> bool:
        return self.proc.poll() is None

    def read_stdout_line(self, deadline: float) -> bytes | None:
        """Read one line from a piped stdout before ``deadline`` (monotonic); None on timeout/EOF."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        sel = selectors.DefaultSelector()
        sel.register(fd, selectors.EVENT_READ)
        try:
            while b"\n" not in self._piped_stdout:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return None
                if not sel.select(timeout=min(remaining, 0.2)):
                    continue
                data = os.read(fd, 4096)
                if not data:
                    return None
                self._piped_stdout += data
        finally:
            sel.close()
        line, _, rest = bytes(self._piped_stdout).partition(b"\n")
        self._piped_stdout = bytearray(rest)
        return line

    def output(self) -> str:
        """Captured stdout + stderr so far (for failure messages)."""
        parts = []
        if self._piped_stdout:
            parts.append(f"--- {self.name} stdout (piped) ---\n" + self._piped_stdout.decode("utf-8", "replace"))
        for label, path in (("stdout", self.stdout_path), ("stderr", self.stderr_path)):
            try:
                text = Path(path).read_text("utf-8", "replace")
            except OSError:
                continue
            if text:
                parts.append(f"--- {self.name} {label} ---\n{text[-20000:]}")
        return "\n".join(parts) or f"({self.name}: no output)"

    def stop(self, timeout: float = 10.0) -> int | None:
        """SIGTERM the process group, wait up to ``timeout`` s, then SIGKILL it. Idempotent."""
        _RUNNING.discard(self)
        try:
            if self.proc.poll() is None:
                self._signal(signal.SIGTERM)
                try:
                    self.proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    self._signal(signal.SIGKILL)
                    self.proc.wait(timeout=5)
            else:  # leader gone; make sure nothing it spawned lingers
                self._signal(signal.SIGKILL)
        finally:
            for f in (self._stdout_file, self._stderr_file, self.proc.stdout):
                try:
                    if f is not None:
                        f.close()
                except OSError:
                    pass
        return self.proc.returncode

    def _signal(self, sig: int) -> None:
        try:
            os.killpg(self.pid, sig)  # our own session: pgid == pid
        except (ProcessLookupError, PermissionError):
            pass


# ------------------------------------------------------------------------- fake upstream
class FakeUpstreamHandle:
    """A running ``tests/fake_upstream.py``; controls it over its ``/__fake/*`` endpoints."""

    def __init__(self, process: ManagedProcess, port: int) -> None:
        self.process = process
        self.port = port
        self.url = f"http://127.0.0.1:{port}"

    def _call(self, method: str, path: str, payload: Any = None, timeout: float = 10.0) -> Any:
        data = None if payload is None else json.dumps(payload).encode()
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))  # ignore *_PROXY env
        with opener.open(req, timeout=timeout) as resp:
            return json.loads(resp.read() or b"null")

    def requests(self) -> list[dict]:
        """Every request the fake received (control calls excluded), oldest first."""
        return self._call("GET", "/__fake/requests")

    def wait_requests(self, n: int, timeout: float = 10.0, finished: bool = True) -> list[dict]:
        """Poll until at least ``n`` requests are logged (and, if ``finished``, fully answered)."""
        deadline = time.monotonic() + timeout
        while True:
            recs = self.requests()
            if len(recs) >= n and (not finished or all("finished_at" in r["reply"] for r in recs[:n])):
                return recs
            if time.monotonic() > deadline:
                raise TimeoutError(f"fake upstream: wanted {n} requests, have {len(recs)}: {[r['path'] for r in recs]}")
            time.sleep(0.05)

    def config(self, **changes: Any) -> dict:
        """Change ``tool_name``, ``tool_args``, ``chunk_size``, ``chunk_delay``, ``force_stream``,
        ``final_text``; returns the resulting config (no args: just read it)."""
        if changes:
            return self._call("POST", "/__fake/config", changes)
        return self._call("GET", "/__fake/config")

    def enqueue(
        self,
        body: bytes = b"",
        *,
        status: int = 200,
        headers: dict[str, str] | Iterable[tuple[str, str]] | None = None,
        chunks: Sequence[bytes] | None = None,
        chunk_size: int | None = None,
        chunk_delay: float | None = None,
    ) -> int:
        """Answer the next request with exactly these bytes (``chunks``: one transport chunk
        each, otherwise ``body`` split by ``chunk_size`` or the fake's config). Returns the
        queue length."""
        spec: dict[str, Any] = {"status": status}
        if headers is not None:
            spec["headers"] = dict(headers) if isinstance(headers, dict) else [list(h) for h in headers]
        if chunks is not None:
            spec["chunks_b64"] = [base64.b64encode(c).decode() for c in chunks]
        else:
            spec["body_b64"] = base64.b64encode(body).decode()
        if chunk_size is not None:
            spec["chunk_size"] = chunk_size
        if chunk_delay is not None:
            spec["chunk_delay"] = chunk_delay
        return self._call("POST", "/__fake/enqueue", spec)["queued"]

    def reset(self) -> None:
        """Forget logged requests and queued replies (config is kept)."""
        self._call("POST", "/__fake/reset", {})

    def output(self) -> str:
        return self.process.output()

    def stop(self) -> None:
        self.process.stop(timeout=5)

    def __enter__(self) -> "FakeUpstreamHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start_fake_upstream(
    *,
    tool_name: str | None = None,
    tool_args: Any = None,
    chunk_size: int | None = None,
    chunk_delay: float | None = None,
    log_dir: str | os.PathLike | None = None,
    port: int = 0,
    timeout: float = 10.0,
) -> FakeUpstreamHandle:
    """Start ``tests/fake_upstream.py`` and wait (bounded) for its ``READY <port>`` line."""
    argv: list[str] = [sys.executable, str(FAKE_UPSTREAM_SCRIPT), "--port", str(port)]
    if tool_name is not None:
        argv += ["--tool-name", tool_name]
    if tool_args is not None:
        argv += ["--tool-args", tool_args if isinstance(tool_args, str) else json.dumps(tool_args)]
    if chunk_size is not None:
        argv += ["--chunk-size", str(chunk_size)]
    if chunk_delay is not None:
        argv += ["--chunk-delay", str(chunk_delay)]
    if log_dir is not None:
        argv += ["--log-dir", str(log_dir)]
    process = ManagedProcess(argv, name="fake_upstream", stdout_pipe=True)
    try:
        deadline = time.monotonic() + timeout
        while True:
            line = process.read_stdout_line(deadline)
            if line is None:
                raise ProcessStartError(
                    f"fake upstream did not print READY within {timeout}s "
                    f"(exit code {process.proc.poll()})\n{process.output()}"
                )
            if line.startswith(b"READY "):
                return FakeUpstreamHandle(process, int(line.split()[1]))
    except BaseException:
        process.stop(timeout=5)
        raise


# ------------------------------------------------------------------------------ mitmdump
class MitmdumpHandle:
    """A running ``mitmdump``: reverse mode in front of one upstream, or regular mode."""

    def __init__(self, process: ManagedProcess, port: int, save_path: str | None) -> None:
        self.process = process
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.save_path = save_path

    def stop(self) -> int | None:
        """Shut mitmdump down (SIGTERM lets it finish writing ``-w``); returns the exit code."""
        return self.process.stop(timeout=15)

    def flows(self) -> list:
        """Stop mitmdump (if running) and read every flow from the ``-w`` file."""
        from mitmproxy import io as mitmio

        if self.save_path is None:
            raise ValueError("start_mitmdump(save_path=...) was not given; no flows were saved")
        self.stop()
        if not os.path.exists(self.save_path):
            return []
        with open(self.save_path, "rb") as fp:
            return list(mitmio.FlowReader(fp).stream())

    def output(self) -> str:
        return self.process.output()

    def __enter__(self) -> "MitmdumpHandle":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()


def start_mitmdump(
    upstream_url: str | None,
    *,
    options: dict[str, str] | None = None,
    save_path: str | os.PathLike | None = None,
    script: str | os.PathLike | None = DEFAULT_SCRIPT,
    extra_args: Sequence[str] = (),
    timeout: float = 20.0,
    attempts: int = 3,
    home: str | os.PathLike | None = None,
) -> MitmdumpHandle:
    """Run ``mitmdump [-s script] --mode reverse:<upstream_url>`` on a free local port, or
    mitmdump in regular mode (a forward proxy: the client's ``HTTP(S)_PROXY``) when
    ``upstream_url`` is ``None``.

    ``options`` become ``--set k=v`` (``termlog_verbosity=info`` unless they set it);
    ``save_path`` becomes ``-w``; ``script=None`` runs plain mitmdump (no addon); ``extra_args``
    go last. ``home`` becomes mitmdump's ``HOME`` and the folder of its output
    files: a fresh ``~/.mitmproxy`` (no user's ``config.yaml``; its own CA). Waits until the
    port accepts connections (at most ``timeout`` s per attempt) and mitmdump has not reported
    a startup error; raises :class:`ProcessStartError` with mitmdump's output otherwise.
    Retries on another port if the chosen one was taken meanwhile.
    """
    if not MITMDUMP.exists():
        raise ProcessStartError(f"mitmdump not found next to {sys.executable}")
    last_error: ProcessStartError | None = None
    for _ in range(max(1, attempts)):
        port = free_port()
        argv: list[str] = [str(MITMDUMP)]
        if script is not None:
            argv += ["-s", str(script)]
        if upstream_url is not None:
            argv += ["--mode", f"reverse:{upstream_url}"]
        argv += [
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(port),
        ]
        for key, value in {"termlog_verbosity": "info", **(options or {})}.items():
            argv += ["--set", f"{key}={value}"]
        if save_path is not None:
            argv += ["-w", str(save_path)]
        argv += list(extra_args)
        env = dict(os.environ, PYTHONUNBUFFERED="1")  # log lines reach the files promptly
        for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
            env.pop(var, None)  # mitmdump talks to the upstream directly
        if home is not None:
            env["HOME"] = str(home)
        process = ManagedProcess(argv, name="mitmdump", env=env, workdir=None if home is None else str(home))
        try:
            problem = _wait_mitmdump_ready(process, port, timeout)
        except BaseException:
            process.stop(timeout=5)
            raise
        if problem is None:
            return MitmdumpHandle(process, port, None if save_path is None else str(save_path))
        process.stop(timeout=5)
        out = process.output()
        last_error = ProcessStartError(f"{problem}\nargv: {argv}\n{out}")
        if "address already in use" not in out.lower():
            break
    assert last_error is not None
    raise last_error


def _wait_mitmdump_ready(process: ManagedProcess, port: int, timeout: float) -> str | None:
    """None once mitmdump listens and stays up; otherwise a description of the failure."""
    deadline = time.monotonic() + timeout
    while not port_open(port):
        if process.proc.poll() is not None:
            return f"mitmdump exited with code {process.proc.returncode} before listening"
        if time.monotonic() > deadline:
            return f"mitmdump did not listen on 127.0.0.1:{port} within {timeout}s"
        time.sleep(0.05)
    # mitmdump listens before it gives up on startup errors (a script that fails to import
    # logs an error, then mitmdump exits with code 1): watch it for a moment.
    settle = time.monotonic() + 0.6
    while time.monotonic() < settle and process.proc.poll() is None:
        if any(m in process.output() for m in STARTUP_ERROR_MARKERS):
            break
        time.sleep(0.05)
    bad = [m for m in STARTUP_ERROR_MARKERS if m in process.output()]
    if bad or process.proc.poll() is not None:
        return f"mitmdump failed at startup ({', '.join(bad) or 'exited'}; exit code {process.proc.poll()})"
    return None
