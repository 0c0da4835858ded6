"""Fixtures for the end-to-end tests that drive a real coding agent through toolvocab.

Topology of one run (everything on 127.0.0.1)::

    agent --base URL--> mitmdump -s addon/toolvocab.py (reverse) --> tests/fake_upstream.py

* ``agent_e2e`` (function): a factory ``run(key, mode, *, tool, args, prompt, files=None, ...)
  -> AgentRun`` that installs the agent when missing (``e2e.agents.client_binary``: skips when
  node/npm are absent or the install fails), starts the fake upstream and mitmdump
  (``toolvocab_mode=<mode>``) through ``tests/procs.py`` plus a stray-traffic trap, runs the agent
  once (``e2e.agents.run_client``: fresh HOME, stdin /dev/null, bounded timeout) and returns
  everything the upstream saw.  Every process is stopped by PID (process group) at teardown.
* ``claude_e2e`` (function): the same runner for Claude Code's usual case, ``run(mode,
  addon=True, fake_config=None) -> AgentRun``: the fake upstream answers the foreign ``shell``
  call, the prompt asks for the marker echo.

The agents' offline settings are in ``AGENTS`` (tests/e2e/agents.py: the agents' table, the
environment, the one client runner, shared with the regular-mode test).  ``AgentRun`` also
offers the helpers the tests need (they cannot import this module: tests/conftest.py shares its
name).  Qwen Code tunnels even its loopback base URL through ``HTTPS_PROXY``; for it the trap
tunnels ``CONNECT`` to mitmdump's port and still refuses everything else.

Every wait has a deadline; failure messages carry the processes' output.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import json
import re
import select
import shutil
import socket
import socketserver
import threading
from pathlib import Path
from typing import Any
from typing import Callable
from typing import Iterable
from typing import Iterator

import pytest

import procs
from e2e.agents import AGENTS
from e2e.agents import ECHO_ARGS
from e2e.agents import FOREIGN_ARGS
from e2e.agents import FOREIGN_TOOL
from e2e.agents import MARKER
from e2e.agents import MARKER_OUTPUT
from e2e.agents import PROMPT
from e2e.agents import Agent
from e2e.agents import ClientBinary
from e2e.agents import ClientRun
from e2e.agents import agent_env
from e2e.agents import client_binary
from e2e.agents import neutral_home
from e2e.agents import run_client

TUNNEL_IDLE = 300.0


class TrapProxy:
    """Stand-in for HTTP(S)_PROXY: records and refuses (403) every request that reaches it.

    Anything the client sends here would have left 127.0.0.1 without the trap.

    ``allow_ports``: ``CONNECT 127.0.0.1:<port>`` (or ``localhost``) to one of these ports is
    tunnelled instead (and recorded in ``tunnels``, not ``hits``).  Qwen Code's OpenAI client
    (undici ``ProxyAgent``) ignores ``NO_PROXY`` and tunnels even its loopback base URL through
    ``HTTPS_PROXY``; everything that would leave the machine is still refused.
    """

    def __init__(self, allow_ports: Iterable[int] = ()) -> None:
        self.hits: list[str] = []
        self.tunnels: list[str] = []
        allowed = {int(p) for p in allow_ports}
        hits, tunnels, lock = self.hits, self.tunnels, threading.Lock()
        open_socks: set[socket.socket] = set()
        self._open_socks = open_socks

        def tunnel(client: socket.socket, port: int, early: bytes) -> None:
            try:
                upstream = socket.create_connection(("127.0.0.1", port), timeout=5)
            except OSError as exc:
                client.sendall(
                    f"HTTP/1.1 502 Bad Gateway\r\nContent-Length: 0\r\n"
                    f"Connection: close\r\nX-Trap-Error: {exc}\r\n\r\n".encode()
                )
                return
            with lock:
                open_socks.update((client, upstream))
            try:
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if early:
                    upstream.sendall(early)
                client.settimeout(None)
                upstream.settimeout(None)
                socks = [client, upstream]
                while True:  # idle connections end after TUNNEL_IDLE seconds
                    readable, _, _ = select.select(socks, [], [], TUNNEL_IDLE)
                    if not readable:
                        return
                    for sock in readable:
                        data = sock.recv(65536)
                        if not data:
                            return
                        (upstream if sock is client else client).sendall(data)
            finally:
                with lock:
                    open_socks.difference_update((client, upstream))
                with contextlib.suppress(OSError):
                    upstream.close()

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
                first = data.split(b"\r\n", 1)[0].decode("latin-1")
                parts = first.split()
                if len(parts) >= 2 and parts[0].upper() == "CONNECT":
                    host, _, port = parts[1].rpartition(":")
                    if host.strip("[]") in ("127.0.0.1", "localhost") and port.isdigit() and int(port) in allowed:
                        with lock:
                            tunnels.append(first)
                        with contextlib.suppress(OSError):
                            tunnel(self.request, int(port), data.split(b"\r\n\r\n", 1)[1])
                        return
                with lock:
                    hits.append(first or "<empty connection>")
                with contextlib.suppress(OSError):
                    self.request.sendall(b"HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")

        class Server(socketserver.ThreadingTCPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._lock = lock
        self._thread = threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.1}, name="e2e-trap-proxy", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            socks = list(self._open_socks)
        for sock in socks:  # ends any tunnel still open
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(timeout=5)


# --- what the agent sent -------------------------------------------------------------------------
def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(_text(c) for c in content)
    if isinstance(content, dict):
        for key in ("text", "content", "output"):
            if key in content:
                return _text(content[key])
        return ""
    return "" if content is None else str(content)


def declared_tool_names(wire: str, body: dict) -> list[str]:
    names: list[str] = []
    if wire == "chat":
        for t in body.get("tools") or []:
            slot = t.get(t.get("type") or "function") or {}
            if isinstance(slot, dict) and slot.get("name"):
                names.append(slot["name"])
    elif wire == "responses":
        for t in body.get("tools") or []:
            if t.get("type") == "namespace":
                names += [s["name"] for s in t.get("tools") or [] if s.get("name")]
            elif t.get("name"):
                names.append(t["name"])
    elif wire == "gemini":
        for t in body.get("tools") or []:
            names += [d["name"] for d in t.get("functionDeclarations") or [] if d.get("name")]
    elif wire == "anthropic":
        names = [t["name"] for t in body.get("tools") or [] if t.get("name")]
    return names


def system_text(wire: str, body: dict) -> str:
    """Every system prompt text: system fields and system/developer messages."""
    parts: list[str] = []
    if wire == "chat":
        parts += [
            _text(m.get("content")) for m in body.get("messages") or [] if m.get("role") in ("system", "developer")
        ]
    elif wire == "responses":
        parts.append(_text(body.get("instructions")))
        items = body.get("input") if isinstance(body.get("input"), list) else []
        parts += [
            _text(it.get("content"))
            for it in items
            if it.get("type", "message") == "message" and it.get("role") in ("system", "developer")
        ]
    elif wire == "gemini":
        parts.append(_text((body.get("systemInstruction") or {}).get("parts")))
    elif wire == "anthropic":
        parts.append(_text(body.get("system")))
        parts += [_text(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "system"]
    return "\n".join(p for p in parts if p)


def unmentioned_tool_names(wire: str, body: dict) -> list[str]:
    """Declared names the system text does not mention (whole word, case-sensitive)."""
    text = system_text(wire, body)
    return [
        n for n in declared_tool_names(wire, body) if not re.search(r"(?<![\w])" + re.escape(n) + r"(?![\w])", text)
    ]


def _is_model_call(wire: str, record: dict) -> bool:
    if record.get("method") != "POST":
        return False
    path = str(record.get("path", "")).split("?", 1)[0].rstrip("/")
    if wire == "chat":
        return path.endswith("/chat/completions")
    if wire == "responses":
        return path.endswith("/responses")
    if wire == "gemini":
        return path.endswith(":streamGenerateContent") or path.endswith(":generateContent")
    if wire == "anthropic":  # not /v1/messages/count_tokens
        return path.endswith("/v1/messages")
    return False


def _flow_report(flows: list) -> str:
    lines = []
    for i, f in enumerate(flows, 1):
        req = f.request
        resp = getattr(f, "response", None)
        meta = f.metadata.get("toolvocab") if getattr(f, "metadata", None) else None
        status = resp.status_code if resp is not None else "no response"
        lines.append(f"flow {i}: {req.method} {req.path} -> {status}")
        if meta:
            slim = {k: v for k, v in meta.items() if v not in (None, [], {}, False) and k != "declared"}
            lines.append("  toolvocab: " + json.dumps(slim)[:4000])
        if resp is not None:
            if resp.raw_content is None:
                lines.append("  body to client: (streamed through the addon, not saved)")
            else:
                lines.append("  body to client: " + (resp.get_text(strict=False) or "")[:3000])
    return "\n".join(lines) or "(no flows saved)"


@dataclasses.dataclass
class AgentRun:
    """One agent run through the chain: what the agent did, what the upstream saw, the processes."""

    agent: Agent
    binary: ClientBinary
    mode: str | None  # None: plain mitmdump, no addon
    client: ClientRun
    work: Path
    requests: list[dict]  # everything the fake upstream logged, in order
    stray: list[str]  # first lines of requests the trap refused
    tunnels: list[str]  # loopback CONNECTs the trap tunnelled to mitmdump
    mitm: procs.MitmdumpHandle
    fake: procs.FakeUpstreamHandle
    _flows: list | None = None

    @property
    def model_calls(self) -> list[dict]:
        """The requests the upstream logged that are model calls of the agent's wire, in order."""
        return [r for r in self.requests if _is_model_call(self.agent.wire, r)]

    @property
    def tool_calls(self) -> list[dict]:
        """Model calls that declare tools (the agent's main loop), in order."""
        return [
            r
            for r in self.model_calls
            if isinstance(r.get("body"), dict) and declared_tool_names(self.agent.wire, self._inner(r["body"]))
        ]

    def _inner(self, body: dict) -> dict:
        return body["request"] if self.agent.wire == "gemini" and isinstance(body.get("request"), dict) else body

    def body(self, record: dict) -> dict:
        return self._inner(record["body"])

    def flows(self) -> list:
        """The flows mitmdump saved (stops mitmdump); each has ``metadata["toolvocab"]``."""
        if self._flows is None:
            self._flows = self.mitm.flows()
        return self._flows

    def decisions(self) -> list[dict]:
        out = []
        for f in self.flows():
            meta = f.metadata.get("toolvocab") or {}
            out += meta.get("decisions") or []
        return out

    # helpers for the tests (they cannot import this conftest: tests/conftest.py shares its name)
    marker = MARKER
    echo_args = ECHO_ARGS

    @staticmethod
    def text(content: Any) -> str:
        """The text of a message/tool-result content (string, parts list, dict)."""
        return _text(content)

    @staticmethod
    def shows_marker_output(text: str) -> bool:
        """True when ``text`` shows the marker as a command's output (not just the command line)."""
        return bool(MARKER_OUTPUT.search(text))

    def unmentioned(self) -> list[str]:
        """Declared names of the first tool-bearing call that its system texts do not mention
        (whole word, case-sensitive), as the upstream received it."""
        calls = self.tool_calls
        return unmentioned_tool_names(self.agent.wire, self.body(calls[0])) if calls else []

    def second_tool_call(self) -> dict:
        calls = self.tool_calls
        if len(calls) < 2:
            pytest.fail(
                f"expected {self.agent.label} to make at least 2 tool-bearing model calls, "
                f"got {len(calls)}\n{self.describe()}"
            )
        return self.body(calls[1])

    def call_and_result(self, body: dict | None = None) -> tuple[dict, dict]:
        """The last tool call the agent's history holds in ``body`` (default: its second
        tool-bearing model call, as the upstream received it) and the record answering it, in
        the agent's wire: Anthropic ``tool_use`` block and its ``tool_result`` block; Chat
        ``tool_calls`` entry and its ``role: tool`` message; Responses ``function_call`` item and
        its ``function_call_output``; Gemini the last ``functionCall`` and the last
        ``functionResponse``.  Fails the test when either is missing."""
        if body is None:
            body = self.second_tool_call()
        wire, where = self.agent.wire, "second model call"
        if wire == "anthropic":
            messages = body.get("messages") or []
            uses = [
                b
                for m in messages
                if m.get("role") == "assistant" and isinstance(m.get("content"), list)
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_use"
            ]
            assert uses, f"{where} carries no assistant tool_use\n{self.describe()}"
            call = uses[-1]
            answers = [
                b
                for m in messages
                if m.get("role") == "user" and isinstance(m.get("content"), list)
                for b in m["content"]
                if isinstance(b, dict) and b.get("type") == "tool_result" and b.get("tool_use_id") == call.get("id")
            ]
            assert answers, f"no tool_result for tool_use id {call.get('id')!r} in the {where}\n{self.describe()}"
            return call, answers[-1]
        if wire == "chat":
            messages = body.get("messages") or []
            calls = [c for m in messages if m.get("role") == "assistant" for c in m.get("tool_calls") or []]
            assert calls, f"{where} carries no assistant tool_calls\n{self.describe()}"
            call = calls[-1]
            answers = [m for m in messages if m.get("role") == "tool" and m.get("tool_call_id") == call.get("id")]
            assert answers, f"no tool message for tool call id {call.get('id')!r}\n{self.describe()}"
            return call, answers[-1]
        if wire == "responses":
            items = body.get("input") if isinstance(body.get("input"), list) else []
            calls = [it for it in items if it.get("type") == "function_call"]
            assert calls, f"{where} carries no function_call item\n{self.describe()}"
            call = calls[-1]
            answers = [
                it
                for it in items
                if it.get("type") == "function_call_output" and it.get("call_id") == call.get("call_id")
            ]
            assert answers, f"no function_call_output for call_id {call.get('call_id')!r}\n{self.describe()}"
            return call, answers[-1]
        parts = [(c.get("role"), p) for c in body.get("contents") or [] for p in c.get("parts") or []]
        calls = [p["functionCall"] for role, p in parts if role == "model" and "functionCall" in p]
        assert calls, f"{where} carries no functionCall\n{self.describe()}"
        answers = [p["functionResponse"] for role, p in parts if role == "user" and "functionResponse" in p]
        assert answers, f"{where} carries no functionResponse\n{self.describe()}"
        return calls[-1], answers[-1]

    def check_common(self) -> None:
        c = self.client
        if c.rc != 0:
            why = f"was killed after {c.seconds:.0f}s (timeout)" if c.rc is None else f"exited rc={c.rc}"
            pytest.fail(f"{self.agent.label} {why}\n{self.describe()}")
        assert not self.stray, (
            f"{self.agent.label} tried to reach something other than the proxy: {self.stray}\n{self.describe()}"
        )

    def describe(self) -> str:
        c = self.client
        lines = [
            f"{self.agent.label} {self.binary.version}, "
            f"{'plain mitmdump (no addon)' if self.mode is None else f'toolvocab_mode={self.mode}'}, rc={c.rc} in {c.seconds:.1f}s",
            f"cmd: {' '.join(c.cmd)}  (HOME={c.home}, cwd={self.work})",
            f"stdout:\n{c.stdout[-3000:]}",
            f"stderr:\n{c.stderr[-3000:]}",
            f"upstream saw: {[(r.get('method'), r.get('path'), r['reply'].get('summary')) for r in self.requests]}",
            f"trap proxy refused: {self.stray}; tunnelled: {len(self.tunnels)}",
        ]
        for i, r in enumerate(self.tool_calls, 1):
            body = self.body(r)
            key = {"anthropic": "messages", "chat": "messages", "responses": "input", "gemini": "contents"}[
                self.agent.wire
            ]
            hist = body.get(key) if isinstance(body.get(key), list) else []
            lines.append(
                f"tool-bearing model call #{i} ({r.get('path')}), last 2 history items: "
                f"{json.dumps(hist[-2:], indent=1)[:3000]}"
            )
            reply = base64.b64decode(r["reply"].get("body_b64") or "").decode("utf-8", "replace")
            lines.append(f"  upstream answered {r['reply'].get('status')}: {reply[:1500]}")
        try:
            lines.append(
                "--- mitmdump flows (what the agent got; toolvocab records) ---\n" + _flow_report(self.flows())
            )
        except Exception as exc:  # noqa: BLE001 - diagnostics only
            lines.append(f"(could not read saved flows: {exc!r})")
        lines.append("--- mitmdump output ---\n" + self.mitm.output()[-6000:])
        lines.append("--- fake upstream output ---\n" + self.fake.output()[-3000:])
        return "\n".join(lines)


@pytest.fixture
def agent_e2e(tmp_path: Path) -> Iterator[Callable[..., AgentRun]]:
    """Factory: ``run(key, mode, *, tool, args, prompt, files=None, fake_config=None,
    configure=None, addon=True, save=True) -> AgentRun``.

    Installs the agent when missing (skips when it cannot), starts the fake upstream answering
    ``tool``/``args`` (``args`` may be a callable ``work_dir -> args``; ``fake_config``: more
    ``/__fake/config`` settings, e.g. ``{"reject_long_names": True}``), mitmdump with
    ``toolvocab_mode=<mode>`` in reverse mode in front of it (``addon=False``: plain mitmdump, no
    ``-s``, ``mode`` None; ``save=False``: no ``-w``, as a user runs it, so nothing saves flows and
    requests the plan leaves as sent are only peeked), and the stray-traffic trap; writes
    ``files`` (name -> text) into the agent's work dir; after the agent's offline settings are
    written, ``configure(home, work)`` may add to them (an MCP server, say); runs the agent once
    (fresh HOME, bounded timeout) and returns what the upstream saw.  Everything is stopped by
    PID at teardown.
    """
    stack = contextlib.ExitStack()
    counter = iter(range(1, 1000))

    def run(
        key: str,
        mode: str | None,
        *,
        tool: str,
        args: Any,
        prompt: str,
        files: dict[str, str] | None = None,
        fake_config: dict[str, Any] | None = None,
        configure: Callable[[Path, Path], None] | None = None,
        addon: bool = True,
        save: bool = True,
    ) -> AgentRun:
        agent = AGENTS[key]
        binary = client_binary(key)
        if addon and not procs.ADDON_SCRIPT.exists():
            pytest.fail(f"{procs.ADDON_SCRIPT} does not exist")
        n = next(counter)
        home = neutral_home(f"tv-e2e-{key}-")
        stack.callback(shutil.rmtree, home, True)
        work = home / "work"
        work.mkdir()
        (home / "tmp").mkdir()
        for name, text in (files or {}).items():
            (work / name).write_text(text)
        tool_args = args(work) if callable(args) else args
        fake = procs.start_fake_upstream(tool_name=tool, tool_args=tool_args)
        stack.callback(fake.stop)
        if fake_config:
            fake.config(**fake_config)
        confdir = tmp_path / f"mitmproxy-conf-{n}"
        confdir.mkdir(exist_ok=True)
        options = {"confdir": str(confdir)}
        if addon:
            options["toolvocab_mode"] = str(mode)
        save_path = tmp_path / f"flows-{key}-{mode}-{n}.mitm" if save else None
        mitm = procs.start_mitmdump(
            fake.url, options=options, save_path=save_path, script=procs.ADDON_SCRIPT if addon else None
        )
        stack.callback(mitm.stop)  # LIFO: mitmdump stops before the fake upstream
        trap = TrapProxy(allow_ports=[mitm.port] if agent.tunnel_loopback else ())
        stack.callback(trap.close)
        argv, extra_env = agent.reverse(home, work, mitm.url, prompt)
        if configure is not None:
            configure(home, work)
        env = {**agent_env(home, trap.url), **extra_env}
        client = run_client([str(binary.path), *argv], env, work)
        try:
            requests = fake.requests()
        except Exception as exc:  # noqa: BLE001 - report it with context
            pytest.fail(f"GET /__fake/requests failed: {exc!r}\n{fake.output()}\n{mitm.output()}")
        return AgentRun(agent, binary, mode, client, work, requests, list(trap.hits), list(trap.tunnels), mitm, fake)

    with stack:
        yield run


@pytest.fixture
def claude_e2e(agent_e2e: Callable[..., AgentRun]) -> Callable[..., AgentRun]:
    """Factory: ``run(mode, addon=True, fake_config=None) -> AgentRun``: Claude Code through
    :func:`agent_e2e`, the fake upstream answering the foreign ``shell`` call with argv-style
    arguments (``FOREIGN_TOOL``/``FOREIGN_ARGS``), the prompt asking for the marker echo, a
    ``notes.txt`` in the work dir.  ``addon=False`` runs mitmdump as a plain pass-through;
    ``fake_config``: ``/__fake/config`` settings (e.g. ``{"leak_as_text": True}``)."""

    def run(mode: str | None, addon: bool = True, fake_config: dict[str, Any] | None = None) -> AgentRun:
        return agent_e2e(
            "claude",
            mode,
            tool=FOREIGN_TOOL,
            args=FOREIGN_ARGS,
            prompt=PROMPT,
            files={"notes.txt": "hello\n"},
            fake_config=fake_config,
            addon=addon,
        )

    return run
