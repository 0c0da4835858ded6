"""End to end in mitmproxy's regular (forward) mode: ``mitmdump -s addon/toolvocab.py`` with no
``--mode``, the five real agents with their **default** upstream URLs (README "Quick start,
regular mode").

Topology of one run (everything on 127.0.0.1)::

    agent --HTTPS_PROXY--> mitmdump -s addon/toolvocab.py -s tests/e2e/route_known_hosts.py
          (regular mode, connection_strategy=lazy)  --plain HTTP-->  tests/fake_upstream.py

Each agent trusts mitmproxy's CA the way the README says (``NODE_EXTRA_CA_CERTS`` for the Node
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
import datetime
import json
import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

import procs

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CLIENTS_DIR = Path(os.environ.get("TOOLVOCAB_CLIENTS") or REPO / ".e2e-clients")
INSTALL_SCRIPT = Path(__file__).resolve().with_name("install_clients.sh")
ROUTE_SCRIPT = Path(__file__).resolve().with_name("route_known_hosts.py")
CLIENT_TIMEOUT = float(os.environ.get("TOOLVOCAB_E2E_CLIENT_TIMEOUT", "120"))
INSTALL_TIMEOUT = float(os.environ.get("TOOLVOCAB_INSTALL_TIMEOUT", "300"))

MARKER = "toolvocab-ok"
PROMPT = "Run echo " + MARKER
FOREIGN = "shell"
FOREIGN_ARGS = {"command": ["bash", "-lc", "echo " + MARKER]}
#: A line that is exactly the marker (possibly after ``Output:``): the command's output, not
#: the prompt or the echoed command line.
MARKER_OUTPUT = re.compile(r"(?m)^(?:Output:[ \t]*)?" + re.escape(MARKER) + r"[ \t]*\r?$")
TOOL_WORDS = ("agent", "bash", "edit", "exec", "file", "glob", "grep", "list", "read", "replace", "search",
              "shell", "skill", "task", "todo", "web", "write", "patch", "plan", "view", "fetch")


# ------------------------------------------------------------------------------- agents
def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n")


_QUIET = {"privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
          "general": {"disableAutoUpdate": True, "disableUpdateNag": True}}


def _claude(home: Path, work: Path, ca: str) -> tuple[list[str], dict[str, str]]:
    env = {"ANTHROPIC_API_KEY": "sk-ant-dummy", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
           "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1",
           "NODE_EXTRA_CA_CERTS": ca}
    return ["-p", PROMPT, "--allowedTools", "Bash"], env


def _codex(home: Path, work: Path, ca: str) -> tuple[list[str], dict[str, str]]:
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    # no model_provider: Codex's built-in OpenAI provider (https://api.openai.com/v1)
    (codex_home / "config.toml").write_text('''\
model = "gpt-5.5"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[feedback]
enabled = false

[features]
plugins = false
apps = false
remote_plugin = false
plugin_sharing = false
tool_suggest = false
''')
    # as the README says: the system roots plus mitmproxy's CA (a custom bundle may replace
    # Codex's roots, and tunnelled hosts keep their real certificates)
    bundle = home / "codex-ca-bundle.pem"
    system = ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"
    bundle.write_text((Path(system).read_text() if Path(system).is_file() else "") + Path(ca).read_text())
    env = {"CODEX_HOME": str(codex_home), "CODEX_API_KEY": "sk-dummy", "CODEX_CA_CERTIFICATE": str(bundle)}
    return ["exec", "--skip-git-repo-check", PROMPT], env


def _opencode(home: Path, work: Path, ca: str) -> tuple[list[str], dict[str, str]]:
    cfg = home / ".config" / "opencode"
    (cfg / "node_modules").mkdir(parents=True, exist_ok=True)
    # stub: without it OpenCode runs `npm install @opencode-ai/plugin` into its config dir
    _write_json(cfg / "package.json", {"dependencies": {"@opencode-ai/plugin": "*"}})
    _write_json(cfg / "package-lock.json",
                {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}})
    # the built-in anthropic provider (https://api.anthropic.com) with ANTHROPIC_API_KEY
    _write_json(cfg / "opencode.json", {
        "$schema": "https://opencode.ai/config.json",
        "model": "anthropic/claude-sonnet-4-5", "small_model": "anthropic/claude-sonnet-4-5",
        "autoupdate": False, "share": "disabled",
        "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
    })
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(["git", "init", "-q", "."], cwd=work, stdin=subprocess.DEVNULL, capture_output=True,
                       timeout=30, env={"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)})
    env = {f"OPENCODE_DISABLE_{k}": "1" for k in (
        "MODELS_FETCH", "AUTOUPDATE", "DEFAULT_PLUGINS", "LSP_DOWNLOAD", "SHARE", "CLAUDE_CODE", "EXTERNAL_SKILLS")}
    env.update({"ANTHROPIC_API_KEY": "sk-ant-dummy", "NODE_EXTRA_CA_CERTS": ca})
    return ["run", PROMPT], env


def _qwen(home: Path, work: Path, ca: str) -> tuple[list[str], dict[str, str]]:
    _write_json(home / ".qwen" / "settings.json", {"security": {"auth": {"selectedType": "openai"}}, **_QUIET})
    # no OPENAI_BASE_URL: Qwen Code's default for --auth-type openai (DashScope compatible mode)
    env = {"OPENAI_API_KEY": "sk-dummy", "OPENAI_MODEL": "qwen3-coder-plus", "NODE_EXTRA_CA_CERTS": ca}
    return ["--auth-type", "openai", "--approval-mode", "yolo", PROMPT], env


def _gemini(home: Path, work: Path, ca: str) -> tuple[list[str], dict[str, str]]:
    _write_json(home / ".gemini" / "settings.json", {"security": {"auth": {"selectedType": "gemini-api-key"}}, **_QUIET})
    env = {"GEMINI_API_KEY": "dummy-key", "GEMINI_CLI_TRUST_WORKSPACE": "true", "NODE_EXTRA_CA_CERTS": ca}
    return ["--approval-mode", "yolo", "-p", PROMPT], env


#: key -> (label, prepare, default host, the agent's shell tool)
AGENTS: dict[str, tuple[str, Callable[[Path, Path, str], tuple[list[str], dict[str, str]]], str, str]] = {
    "claude": ("Claude Code", _claude, "api.anthropic.com", "Bash"),
    "codex": ("Codex CLI", _codex, "api.openai.com", "exec_command"),
    "opencode": ("OpenCode", _opencode, "api.anthropic.com", "bash"),
    "qwen": ("Qwen Code", _qwen, "dashscope.aliyuncs.com", "run_shell_command"),
    "gemini": ("Gemini CLI", _gemini, "generativelanguage.googleapis.com", "run_shell_command"),
}


def client_binary(key: str) -> Path:
    """The agent's binary under ``CLIENTS_DIR`` (installed when missing; skips when it cannot)."""
    missing = [t for t in ("node", "npm") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not found on PATH: cannot install/run {key}")
    binary = CLIENTS_DIR / key / "node_modules" / ".bin" / key
    if not binary.exists():
        try:
            res = subprocess.run(["bash", str(INSTALL_SCRIPT), key], stdin=subprocess.DEVNULL, capture_output=True,
                                 text=True, timeout=INSTALL_TIMEOUT + 30,
                                 env={**os.environ, "TOOLVOCAB_CLIENTS": str(CLIENTS_DIR)})
            problem = None if res.returncode == 0 else f"rc={res.returncode}\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
        except subprocess.TimeoutExpired:
            problem = "install timed out"
        if problem or not binary.exists():
            pytest.skip(f"could not install {key} via {INSTALL_SCRIPT.name}: {problem or 'binary missing'}")
    return binary


def neutral_home() -> Path:
    """A fresh temp dir whose path names no tool (the agents copy the cwd into their prompts)."""
    for _ in range(20):
        d = Path(tempfile.mkdtemp(prefix="tv-e2e-fwd-", dir="/tmp" if os.path.isdir("/tmp") else None))
        if not any(w in str(d).lower() for w in TOOL_WORDS):
            return d
        shutil.rmtree(d, ignore_errors=True)
    raise RuntimeError("could not create a temp dir whose path names no tool")


# ----------------------------------------------------------------------- the proxy
class ForwardProxy:
    """``mitmdump -s addon/toolvocab.py -s route_known_hosts.py`` in regular mode on a free port."""

    def __init__(self, confdir: Path, save_path: Path, fake_url: str, tunnels: dict[str, int] | None = None,
                 options: dict[str, str] | None = None) -> None:
        self.save_path = save_path
        self.confdir = confdir
        last = None
        for _ in range(3):
            port = procs.free_port()
            argv = [str(procs.MITMDUMP), "-s", str(procs.ADDON_SCRIPT), "-s", str(ROUTE_SCRIPT),
                    "--listen-host", "127.0.0.1", "--listen-port", str(port),
                    "--set", f"confdir={confdir}", "--set", "connection_strategy=lazy",
                    "--set", f"route_upstream={fake_url}", "--set", "termlog_verbosity=debug",
                    "--set", "route_tunnels=" + ",".join(f"{k}={v}" for k, v in (tunnels or {}).items()),
                    "-w", str(save_path)]
            for key, value in (options or {}).items():
                argv += ["--set", f"{key}={value}"]
            env = dict(os.environ, PYTHONUNBUFFERED="1")
            for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
                env.pop(var, None)
            process = procs.ManagedProcess(argv, name="mitmdump", env=env)
            problem = procs._wait_mitmdump_ready(process, port, 30.0)
            if problem is None:
                self.process, self.port = process, port
                self.url = f"http://127.0.0.1:{port}"
                return
            last = f"{problem}\n{process.output()}"
            process.stop(timeout=5)
            if "address already in use" not in last.lower():
                break
        raise procs.ProcessStartError(last or "mitmdump did not start")

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
        return "\n".join(Path(p).read_text("utf-8", "replace") for p in (self.process.stdout_path, self.process.stderr_path)
                         if Path(p).exists())

    def stop(self) -> None:
        self.process.stop(timeout=15)


def proxy_env(home: Path, proxy_url: str) -> dict[str, str]:
    env = {
        "PATH": os.environ.get("PATH", os.defpath), "HOME": str(home),
        "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
        "XDG_DATA_HOME": str(home / ".local" / "share"), "XDG_STATE_HOME": str(home / ".local" / "state"),
        "TMPDIR": str(home / "tmp"), "LANG": "C.UTF-8", "TERM": "dumb", "NO_COLOR": "1", "CI": "1",
    }
    for var in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy"):
        env[var] = proxy_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


def run_client(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[int | None, str, str, float]:
    start = time.monotonic()
    popen = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, cwd=cwd, start_new_session=True)
    try:
        out, err = popen.communicate(timeout=CLIENT_TIMEOUT)
        rc: int | None = popen.returncode
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
        out, err = popen.communicate(timeout=5)
        rc = None
    finally:  # whatever the agent's tools left behind is in its process group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
    return rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - start


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
    label, prepare, host, shell_tool = AGENTS[key]
    binary = client_binary(key)
    fake = procs.start_fake_upstream(tool_name=FOREIGN, tool_args=FOREIGN_ARGS)
    stack.callback(fake.stop)
    proxy = ForwardProxy(tmp_path / "conf", tmp_path / "flows.mitm", fake.url)
    stack.callback(proxy.stop)  # LIFO: mitmdump stops before the fake upstream
    home = neutral_home()
    stack.callback(shutil.rmtree, home, True)
    work = home / "work"
    work.mkdir()
    (home / "tmp").mkdir()
    argv, extra = prepare(home, work, proxy.ca)
    rc, out, err, seconds = run_client([str(binary), *argv], {**proxy_env(home, proxy.url), **extra}, work)
    requests = fake.requests()
    flows = proxy.flows()

    def describe() -> str:
        return "\n".join([
            f"{label}: rc={rc} in {seconds:.1f}s; cmd {binary} {argv}",
            f"stdout:\n{out[-3000:]}", f"stderr:\n{err[-3000:]}",
            "fake upstream saw: " + repr([(r.get("method"), (r.get("headers") or {}).get("Host"), r.get("path"))
                                          for r in requests]),
            "toolvocab records: " + json.dumps([f.metadata.get("toolvocab") for f in flows if f.metadata.get("toolvocab")])[:6000],
            "--- mitmdump ---\n" + proxy.output()[-8000:],
        ])

    assert rc == 0, f"{label} did not exit 0\n{describe()}"
    # the agent asked its default host; toolvocab intercepted it and the flow reached the fake
    hosts = {((r.get("headers") or {}).get("Host") or (r.get("headers") or {}).get("host") or "").split(":")[0]
             for r in requests if r.get("method") == "POST"}
    assert host in hosts, f"{label} never reached {host} through the proxy\n{describe()}"
    # toolvocab repaired the foreign call for that host
    decisions = [d for f in flows for d in ((f.metadata.get("toolvocab") or {}).get("decisions") or [])
                 if (f.metadata.get("toolvocab") or {}).get("host") == host]
    assert any(d.get("name") == FOREIGN and d.get("action") == "rename" and d.get("target") == shell_tool
               for d in decisions), f"no rename {FOREIGN} -> {shell_tool} recorded for {host}\n{describe()}"
    # ... and the agent ran it: a later model call carries the command's output
    assert any(MARKER_OUTPUT.search(s) for r in requests if r.get("method") == "POST" for s in strings_in(r.get("body"))), \
        f"no model call carries the output {MARKER!r}\n{describe()}"
    # one info line for the repair, naming the client and the host
    client = {"codex": "Codex"}.get(key, label)  # as tvengine.clients names it
    assert re.search(rf"toolvocab: {FOREIGN}→{re.escape(shell_tool)} \(capability\).* · {re.escape(client)} → {re.escape(host)}",
                     proxy.full_output()), f"no log line for the repair\n{describe()}"


# --------------------------------------------------------------------- tunnelled host
TUNNEL_HOST = "tunnel.e2e.test"


def self_signed(tmp: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for ``name`` (and its key), PEM files under ``tmp``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=2))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    cert_path, key_path = tmp / f"{name}.pem", tmp / f"{name}.key"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


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
