"""End to end in mitmproxy's regular (forward) mode: ``mitmdump -s addon/toolvocab.py`` with no
``--mode``, the five real agents with their **default** upstream URLs (README "Quick start,
regular mode").

Topology of one run (everything on 127.0.0.1)::

    agent --HTTPS_PROXY--> mitmdump -s addon/toolvocab.py -s tests/e2e/route_known_hosts.py
          (regular mode, connection_strategy=lazy)  --plain HTTP-->  tests/fake_upstream.py

The agents' table, environment and runner are tests/e2e/agents.py (``Agent.regular``). Each
agent trusts mitmproxy's CA the way the README says (``NODE_EXTRA_CA_CERTS`` for the Node
and Bun agents, ``CODEX_CA_CERTIFICATE`` for Codex), asks its default host (api.anthropic.com,
api.openai.com, dashscope.aliyuncs.com, generativelanguage.googleapis.com) through the proxy;
toolvocab intercepts that host (a known LLM API host), the test-only routing script sends the
flow to the fake upstream, which answers the first model call with the foreign call ``shell``
``{"command": ["bash", "-lc", "echo toolvocab-ok"]}``. Passing means: the agent exited 0, the
fake upstream saw the agent's default host in ``Host``/``:authority``, toolvocab recorded the
rename ``shell → <the agent's shell tool>`` for that host, and the agent's next model call
carries the command's output ``toolvocab-ok``.

``test_non_llm_host_is_tunnelled_untouched``: through the same kind of proxy, a TLS server with
its own self-signed certificate under a made-up name (``tunnel.e2e.test``, routed to
127.0.0.1) is reached as a plain tunnel: the client sees that server's own certificate, while
``api.anthropic.com`` through the same proxy gets a certificate issued by mitmproxy's CA.

Nothing leaves the machine: with ``connection_strategy=lazy`` mitmproxy opens no server
connection before a request, and every request to an intercepted host is routed to the fake.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import ssl
import threading
import time
from pathlib import Path
from typing import Any
from typing import Iterator

import pytest

import procs
from e2e.agents import AGENTS
from e2e.agents import FOREIGN_ARGS
from e2e.agents import FOREIGN_TOOL
from e2e.agents import MARKER
from e2e.agents import MARKER_OUTPUT
from e2e.agents import PROMPT
from e2e.agents import agent_env
from e2e.agents import client_binary
from e2e.agents import neutral_home
from e2e.agents import run_client
from fakeup.tls import self_signed

pytestmark = pytest.mark.e2e

ROUTE_SCRIPT = Path(__file__).resolve().with_name("route_known_hosts.py")
FOREIGN = FOREIGN_TOOL


# ----------------------------------------------------------------------- the proxy
class ForwardProxy:
    """``mitmdump -s addon/toolvocab.py -s route_known_hosts.py`` in regular mode on a free port."""

    def __init__(
        self,
        confdir: Path,
        save_path: Path,
        fake_url: str,
        tunnels: dict[str, int] | None = None,
        options: dict[str, str] | None = None,
    ) -> None:
        self.save_path = save_path
        self.confdir = confdir
        handle = procs.start_mitmdump(
            None,
            options={
                "confdir": str(confdir),
                "connection_strategy": "lazy",
                "route_upstream": fake_url,
                "termlog_verbosity": "debug",
                "route_tunnels": ",".join(f"{k}={v}" for k, v in (tunnels or {}).items()),
                **(options or {}),
            },
            save_path=save_path,
            extra_args=["-s", str(ROUTE_SCRIPT)],
            timeout=30.0,
        )
        self.process, self.port, self.url = handle.process, handle.port, handle.url

    @property
    def ca(self) -> str:
        """mitmproxy's CA certificate (PEM), written to ``confdir`` at start."""
        path = self.confdir / "mitmproxy-ca-cert.pem"
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        return str(path)

    def flows(self) -> list:
        from mitmproxy import io as mitmio

        self.stop()
        if not self.save_path.exists():
            return []
        with open(self.save_path, "rb") as fp:
            return list(mitmio.FlowReader(fp).stream())

    def output(self) -> str:
        """The last part of mitmdump's output (for failure messages)."""
        return self.process.output()

    def full_output(self) -> str:
        """Everything mitmdump printed (``output()`` keeps only the last 20,000 characters)."""
        return "\n".join(
            Path(p).read_text("utf-8", "replace")
            for p in (self.process.stdout_path, self.process.stderr_path)
            if Path(p).exists()
        )

    def stop(self) -> None:
        self.process.stop(timeout=15)


def proxy_env(home: Path, proxy_url: str) -> dict[str, str]:
    """The agent's environment in regular mode: HTTP(S)_PROXY is mitmdump (no ALL_PROXY)."""
    return agent_env(home, proxy_url, proxy_vars=("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"))


def strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


@pytest.fixture
def stack() -> Iterator[contextlib.ExitStack]:
    with contextlib.ExitStack() as s:
        yield s


@pytest.mark.parametrize("key", list(AGENTS))
def test_agent_with_default_url_through_regular_mode(key: str, stack: contextlib.ExitStack, tmp_path: Path) -> None:
    agent = AGENTS[key]
    label, host, shell_tool = agent.label, agent.default_host, agent.shell_tool
    binary = client_binary(key).path
    fake = procs.start_fake_upstream(tool_name=FOREIGN, tool_args=FOREIGN_ARGS)
    stack.callback(fake.stop)
    proxy = ForwardProxy(tmp_path / "conf", tmp_path / "flows.mitm", fake.url)
    stack.callback(proxy.stop)  # LIFO: mitmdump stops before the fake upstream
    home = neutral_home("tv-e2e-fwd-")
    stack.callback(shutil.rmtree, home, True)
    work = home / "work"
    work.mkdir()
    (home / "tmp").mkdir()
    argv, extra = agent.regular(home, work, proxy.ca, PROMPT)
    run = run_client([str(binary), *argv], {**proxy_env(home, proxy.url), **extra}, work)
    rc, out, err, seconds = run.rc, run.stdout, run.stderr, run.seconds
    requests = fake.requests()
    flows = proxy.flows()

    def describe() -> str:
        return "\n".join(
            [
                f"{label}: rc={rc} in {seconds:.1f}s; cmd {binary} {argv}",
                f"stdout:\n{out[-3000:]}",
                f"stderr:\n{err[-3000:]}",
                "fake upstream saw: "
                + repr([(r.get("method"), (r.get("headers") or {}).get("Host"), r.get("path")) for r in requests]),
                "toolvocab records: "
                + json.dumps([f.metadata.get("toolvocab") for f in flows if f.metadata.get("toolvocab")])[:6000],
                "--- mitmdump ---\n" + proxy.output()[-8000:],
            ]
        )

    assert rc == 0, f"{label} did not exit 0\n{describe()}"
    # the agent asked its default host; toolvocab intercepted it and the flow reached the fake
    hosts = {
        ((r.get("headers") or {}).get("Host") or (r.get("headers") or {}).get("host") or "").split(":")[0]
        for r in requests
        if r.get("method") == "POST"
    }
    assert host in hosts, f"{label} never reached {host} through the proxy\n{describe()}"
    # toolvocab repaired the foreign call for that host
    decisions = [
        d
        for f in flows
        for d in ((f.metadata.get("toolvocab") or {}).get("decisions") or [])
        if (f.metadata.get("toolvocab") or {}).get("host") == host
    ]
    assert any(
        d.get("name") == FOREIGN and d.get("action") == "rename" and d.get("target") == shell_tool for d in decisions
    ), f"no rename {FOREIGN} -> {shell_tool} recorded for {host}\n{describe()}"
    # ... and the agent ran it: a later model call carries the command's output
    assert any(
        MARKER_OUTPUT.search(s) for r in requests if r.get("method") == "POST" for s in strings_in(r.get("body"))
    ), f"no model call carries the output {MARKER!r}\n{describe()}"
    # one info line for the repair, naming the client and the host
    client = {"codex": "Codex"}.get(key, label)  # as toolvocab.engine.clients names it
    assert re.search(
        rf"toolvocab: {FOREIGN}→{re.escape(shell_tool)} \(capability\).* · {re.escape(client)} → {re.escape(host)}",
        proxy.full_output(),
    ), f"no log line for the repair\n{describe()}"


# --------------------------------------------------------------------- tunnelled host
TUNNEL_HOST = "tunnel.e2e.test"


class TLSServer:
    """A one-line HTTPS server on 127.0.0.1 with its own certificate (answers ``tunnel-ok``)."""

    def __init__(self, cert: Path, key: Path) -> None:
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(cert, key)
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.stopped = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with contextlib.suppress(OSError, ssl.SSLError):
                conn.settimeout(5)
                with self.ctx.wrap_socket(conn, server_side=True) as tls:
                    tls.recv(4096)
                    tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\nConnection: close\r\n\r\ntunnel-ok")

    def close(self) -> None:
        self.stopped.set()
        self.thread.join(timeout=5)
        self.sock.close()


def via_proxy(proxy_port: int, host: str, port: int, cafile: str) -> tuple[bytes, bytes]:
    """CONNECT through the proxy, TLS with SNI ``host`` verified against ``cafile`` only;
    returns (the server certificate's DER, the HTTP answer)."""
    with socket.create_connection(("127.0.0.1", proxy_port), timeout=10) as raw:
        raw.sendall(f"CONNECT {host}:{port} HTTP/1.1\r\nHost: {host}:{port}\r\n\r\n".encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = raw.recv(4096)
            assert chunk, f"proxy closed the CONNECT: {head!r}"
            head += chunk
        assert head.startswith(b"HTTP/1.1 200"), head
        ctx = ssl.create_default_context(cafile=cafile)
        with ctx.wrap_socket(raw, server_hostname=host) as tls:
            der = tls.getpeercert(binary_form=True)
            tls.sendall(f"GET / HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n".encode())
            answer = b""
            with contextlib.suppress(OSError, ssl.SSLError):
                while chunk := tls.recv(4096):
                    answer += chunk
    return der, answer


def test_non_llm_host_is_tunnelled_untouched(stack: contextlib.ExitStack, tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path, TUNNEL_HOST)
    server = TLSServer(cert, key)
    stack.callback(server.close)
    fake = procs.start_fake_upstream(tool_name=FOREIGN, tool_args=FOREIGN_ARGS)
    stack.callback(fake.stop)
    proxy = ForwardProxy(tmp_path / "conf", tmp_path / "flows.mitm", fake.url, tunnels={TUNNEL_HOST: server.port})
    stack.callback(proxy.stop)

    # the unknown host: the client verifies against the server's own certificate only, and gets it
    der, answer = via_proxy(proxy.port, TUNNEL_HOST, server.port, str(cert))
    own = ssl.PEM_cert_to_DER_cert(cert.read_text())
    assert der == own, f"the client did not see the server's own certificate\n{proxy.output()}"
    assert answer.endswith(b"tunnel-ok"), answer
    # a known LLM host through the same proxy is intercepted: mitmproxy's CA issued its certificate
    # (the routing script answers it from the fake upstream; nothing leaves the machine)
    der, answer = via_proxy(proxy.port, "api.anthropic.com", 443, proxy.ca)
    from cryptography import x509

    issuer = x509.load_der_x509_certificate(der).issuer.rfc4514_string()
    assert "mitmproxy" in issuer, issuer
    assert answer.startswith(b"HTTP/1.1 "), answer
    output = proxy.full_output()
    assert "toolvocab: mode auto · proxy regular · profiles none · intercepting TLS only to " in output, proxy.output()
    assert f"toolvocab: tunnelling {TUNNEL_HOST} untouched" in output, proxy.output()
    assert not any(f.request.pretty_host == TUNNEL_HOST for f in proxy.flows()), "the tunnel was recorded as a flow"
