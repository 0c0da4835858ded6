"""Fixtures for the end-to-end tests that drive a real coding agent through toolvocab.

Topology of one run (everything on 127.0.0.1)::

    Claude Code --ANTHROPIC_BASE_URL--> mitmdump -s addon/toolvocab.py --> tests/fake_upstream.py

* ``claude_bin`` (session): the Claude Code binary from ``$TOOLVOCAB_CLIENTS`` (default
  ``<repo>/.e2e-clients``).  Installs it with ``tests/e2e/install_clients.sh claude`` when missing;
  skips when node/npm are absent or the install fails.
* ``claude_e2e`` (function): a factory ``run(mode) -> E2ERun`` that starts the fake upstream and
  mitmdump (``toolvocab_mode=<mode>``) through ``tests/procs.py`` plus a stray-traffic trap, runs
  Claude Code once (``-p``, ``--allowedTools Bash``, fresh HOME, stdin /dev/null, bounded timeout)
  and returns everything the upstream saw.  Every process is stopped by PID (process group) at
  teardown.

Every wait has a deadline; failure messages carry the processes' output.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socketserver
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import procs

REPO = Path(__file__).resolve().parents[2]
CLIENTS_DIR = Path(os.environ.get("TOOLVOCAB_CLIENTS") or REPO / ".e2e-clients")
INSTALL_SCRIPT = Path(__file__).resolve().with_name("install_clients.sh")

FOREIGN_TOOL = "shell"
FOREIGN_ARGS = {"command": ["bash", "-lc", "echo toolvocab-ok"]}
PROMPT = "Run echo toolvocab-ok"

CLIENT_TIMEOUT = float(os.environ.get("TOOLVOCAB_E2E_CLIENT_TIMEOUT", "120"))
INSTALL_TIMEOUT = float(os.environ.get("TOOLVOCAB_INSTALL_TIMEOUT", "300"))
STOP_GRACE = 5.0


def _neutral_tempdir(prefix: str) -> Path:
    """A fresh temp dir whose path names no tool.

    Claude Code copies the cwd into its prompt, so the path must not contain tool names.  All of
    Claude Code's tool names start with an upper-case letter, so a path without upper-case letters
    (and without the foreign name) is safe.
    """
    for base in (None, "/tmp"):
        for _ in range(5):
            d = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
            s = str(d)
            if s == s.lower() and FOREIGN_TOOL not in s and "bash" not in s:
                return d
            shutil.rmtree(d, ignore_errors=True)
    raise RuntimeError("could not create a temp dir whose path names no tool")


class TrapProxy:
    """Stand-in for HTTP(S)_PROXY: records and refuses (403) every request that reaches it.

    Anything the client sends here would have left 127.0.0.1 without the trap.
    """

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits, lock = self.hits, threading.Lock()

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                self.request.settimeout(2.0)
                data = b""
                with contextlib.suppress(OSError):
                    while b"\r\n\r\n" not in data and len(data) < 65536:
                        chunk = self.request.recv(4096)
                        if not chunk:
                            break
                        data += chunk
                with lock:
                    hits.append(data.split(b"\r\n", 1)[0].decode("latin-1") or "<empty connection>")
                with contextlib.suppress(OSError):
                    self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.1},
                                        name="e2e-trap-proxy", daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)


# --------------------------------------------------------------------------- Claude Code
@dataclasses.dataclass
class ClaudeBinary:
    path: Path
    version: str


@dataclasses.dataclass
class ClientRun:
    cmd: list[str]
    home: Path
    rc: int | None  # None: killed on timeout
    stdout: str
    stderr: str
    seconds: float


def claude_env(home: Path, base_url: str, proxy_url: str) -> dict[str, str]:
    """A minimal environment: nothing of the caller's ANTHROPIC_*/CLAUDE_* settings leaks in."""
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"),
        "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"),
        "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home / "tmp"),
        "LANG": "C.UTF-8",
        "TERM": "dumb",
        "NO_COLOR": "1",
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-dummy",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
    }
    # anything that ignores NO_PROXY, or goes anywhere but 127.0.0.1, lands in the trap
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy"):
        env[var] = proxy_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run_claude(binary: Path, home: Path, base_url: str, proxy_url: str,
               prompt: str = PROMPT, timeout: float = CLIENT_TIMEOUT) -> ClientRun:
    work = home / "work"
    work.mkdir(parents=True, exist_ok=True)
    (home / "tmp").mkdir(exist_ok=True)
    (work / "notes.txt").write_text("hello\n")
    cmd = [str(binary), "-p", prompt, "--allowedTools", "Bash"]
    start = time.monotonic()
    popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=claude_env(home, base_url, proxy_url), cwd=work, start_new_session=True)
    rc: int | None
    try:
        out, err = popen.communicate(timeout=timeout)
        rc = popen.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
        out, err = popen.communicate(timeout=STOP_GRACE)
        rc = None
    finally:
        # whatever the Bash tool left behind lives in the same process group (pgid == pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
    return ClientRun(cmd, home, rc, out.decode(errors="replace"), err.decode(errors="replace"),
                     time.monotonic() - start)


@pytest.fixture(scope="session")
def claude_bin() -> ClaudeBinary:
    missing = [t for t in ("node", "npm") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not found on PATH: cannot install/run Claude Code for e2e tests")
    binary = CLIENTS_DIR / "claude" / "node_modules" / ".bin" / "claude"
    if not binary.exists():
        try:
            res = subprocess.run(["bash", str(INSTALL_SCRIPT), "claude"], stdin=subprocess.DEVNULL,
                                 capture_output=True, text=True, timeout=INSTALL_TIMEOUT + 30,
                                 env={**os.environ, "TOOLVOCAB_CLIENTS": str(CLIENTS_DIR),
                                      "TOOLVOCAB_INSTALL_TIMEOUT": str(int(INSTALL_TIMEOUT))})
            problem = None if res.returncode == 0 else f"rc={res.returncode}\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
        except subprocess.TimeoutExpired:
            problem = f"timed out after {INSTALL_TIMEOUT + 30:.0f}s"
        if problem or not binary.exists():
            pytest.skip(f"could not install Claude Code via {INSTALL_SCRIPT.name} claude: {problem or 'binary missing'}")
    home = _neutral_tempdir("tv-e2e-version-")
    try:
        res = subprocess.run([str(binary), "--version"], stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=60, env=claude_env(home, "http://127.0.0.1:9", "http://127.0.0.1:9"), cwd=home)
    except subprocess.TimeoutExpired:
        pytest.fail(f"{binary} --version timed out")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if res.returncode != 0:
        pytest.fail(f"{binary} --version failed rc={res.returncode}: {res.stdout}{res.stderr}")
    return ClaudeBinary(binary, res.stdout.strip())


# --------------------------------------------------------------------------- the whole chain
def _summarize_flows(mitm: procs.MitmdumpHandle) -> str:
    """What Claude Code got back, as mitmdump saved it (stops mitmdump).  Best effort."""
    try:
        flows = mitm.flows()
    except Exception as exc:  # noqa: BLE001 - diagnostics only
        return f"(could not read saved flows: {exc!r})"
    lines = []
    for i, f in enumerate(flows, 1):
        resp = getattr(f, "response", None)
        if resp is None:
            lines.append(f"flow {i}: {f.request.method} {f.request.path} -> no response")
            continue
        raw = resp.raw_content
        body = "(streamed, not saved)" if raw is None else (resp.get_text(strict=False) or "")[:4000]
        lines.append(f"flow {i}: {f.request.method} {f.request.path} -> {resp.status_code}, "
                     f"body as sent to Claude Code:\n{body}")
    return "\n".join(lines) or "(no flows saved)"


@dataclasses.dataclass
class E2ERun:
    mode: str | None
    claude: ClaudeBinary
    client: ClientRun
    requests: list[dict]  # everything the fake upstream logged, in order
    stray: list[str]  # first lines of requests that reached the trap proxy
    mitm: procs.MitmdumpHandle
    fake: procs.FakeUpstreamHandle

    @property
    def message_requests(self) -> list[dict]:
        """The model calls: POST /v1/messages (not count_tokens), in order."""
        return [r for r in self.requests
                if r.get("method") == "POST"
                and r.get("path", "").split("?", 1)[0].rstrip("/").endswith("/v1/messages")]

    def describe(self) -> str:
        c = self.client
        lines = [
            f"Claude Code {self.claude.version}, toolvocab_mode={self.mode}, rc={c.rc} in {c.seconds:.1f}s",
            f"cmd: {' '.join(c.cmd)}  (HOME={c.home})",
            f"stdout:\n{c.stdout[-3000:]}",
            f"stderr:\n{c.stderr[-3000:]}",
            f"upstream saw: {[(r.get('method'), r.get('path')) for r in self.requests]}",
            f"trap proxy hits: {self.stray}",
        ]
        for i, r in enumerate(self.message_requests, 1):
            body = r.get("body")
            msgs = body.get("messages", []) if isinstance(body, dict) else []
            lines.append(f"upstream model call #{i}, last 2 messages: {json.dumps(msgs[-2:], indent=1)[:3000]}")
        lines.append("--- what mitmdump returned to Claude Code ---\n" + _summarize_flows(self.mitm))
        lines.append("--- mitmdump output ---\n" + self.mitm.output()[-6000:])
        lines.append("--- fake upstream output ---\n" + self.fake.output()[-3000:])
        return "\n".join(lines)


@pytest.fixture
def claude_e2e(claude_bin: ClaudeBinary, tmp_path: Path) -> Iterator[Callable[..., E2ERun]]:
    """Factory: ``run(mode, addon=True) -> E2ERun``; stops everything it started at teardown.

    ``addon=False`` runs mitmdump as a plain pass-through (no ``-s``, no ``toolvocab_mode``); it is
    only meant for debugging the harness.
    """
    stack = contextlib.ExitStack()

    def run(mode: str | None, addon: bool = True) -> E2ERun:
        trap = TrapProxy()
        stack.callback(trap.close)
        fake = procs.start_fake_upstream(tool_name=FOREIGN_TOOL, tool_args=FOREIGN_ARGS)
        stack.callback(fake.stop)
        confdir = tmp_path / "mitmproxy-conf"
        confdir.mkdir(exist_ok=True)
        options = {"confdir": str(confdir)}
        if addon:
            if not procs.ADDON_SCRIPT.exists():
                pytest.fail(f"{procs.ADDON_SCRIPT} does not exist")
            options["toolvocab_mode"] = str(mode)
        mitm = procs.start_mitmdump(fake.url, options=options, save_path=tmp_path / "flows.mitm",
                                    script=procs.ADDON_SCRIPT if addon else None)
        stack.callback(mitm.stop)  # LIFO: mitmdump stops before the fake upstream
        home = _neutral_tempdir("tv-e2e-home-")
        stack.callback(shutil.rmtree, home, True)
        client = run_claude(claude_bin.path, home, mitm.url, trap.url)
        try:
            requests = fake.requests()
        except Exception as exc:  # noqa: BLE001 - report it with context
            pytest.fail(f"GET /__fake/requests failed: {exc!r}\n{fake.output()}\n{mitm.output()}")
        return E2ERun(mode, claude_bin, client, requests, list(trap.hits), mitm, fake)

    with stack:
        yield run
