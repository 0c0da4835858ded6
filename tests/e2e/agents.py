"""The five real coding agents the e2e tests drive, and the one way to run them.

Used by the fixtures in ``tests/e2e/conftest.py`` (reverse mode: the agent's base URL points at
mitmdump) and by ``tests/e2e/test_forward_mode_agents.py`` (regular mode: the agent keeps its
default URL, goes through ``HTTPS_PROXY`` and trusts mitmproxy's CA).  Test modules import it as
``from e2e.agents import ...`` (pyproject ``pythonpath`` has ``tests``); they cannot import the
e2e conftest, whose module name ``conftest`` tests/conftest.py shares.

* ``AGENTS``: key (== install_clients.sh client name == binary name) -> ``Agent``: label, wire,
  ``reverse(home, work, base_url, prompt)`` and ``regular(home, work, ca_path, prompt)`` (each
  writes the agent's offline settings under ``home`` and returns ``(argv after the binary,
  extra environment)``), the default host and the agent's own shell tool.  The offline settings
  come from the reference notes on the real clients (their environment variables and config
  files).
* ``neutral_home(prefix)``: a temp dir whose path names no tool (agents copy the cwd into
  their prompts).
* ``agent_env(home, proxy_url)``: PATH, a fresh HOME/XDG/TMPDIR, the proxy variables; nothing of
  the caller's environment leaks in.
* ``run_client(cmd, env, cwd)``: runs one agent in its own session with a deadline and kills its
  whole process group afterwards.
* ``client_binary(key)``: the agent's binary under ``$TOOLVOCAB_CLIENTS`` (installed when
  missing; skips the calling test when it cannot be).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import ssl
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any
from typing import Callable

import pytest

REPO = Path(__file__).resolve().parents[2]
CLIENTS_DIR = Path(os.environ.get("TOOLVOCAB_CLIENTS") or REPO / ".e2e-clients")
INSTALL_SCRIPT = Path(__file__).resolve().with_name("install_clients.sh")

CLIENT_TIMEOUT = float(os.environ.get("TOOLVOCAB_E2E_CLIENT_TIMEOUT", "120"))
INSTALL_TIMEOUT = float(os.environ.get("TOOLVOCAB_INSTALL_TIMEOUT", "300"))
STOP_GRACE = 5.0

#: What a marker-echo shows in a tool's *output* (not in the echoed command line): a line that is
#: exactly the marker, possibly after ``Output:`` (Qwen Code, Gemini CLI) -- Codex prints
#: ``Output:\ntoolvocab-ok``.
MARKER = "toolvocab-ok"
MARKER_OUTPUT = re.compile(r"(?m)^(?:Output:[ \t]*)?" + re.escape(MARKER) + r"[ \t]*\r?$")
PROMPT = "Run echo " + MARKER
#: A call no agent declares, and its argv-style arguments (the fake upstream answers with it).
FOREIGN_TOOL = "shell"
FOREIGN_ARGS = {"command": ["bash", "-lc", "echo " + MARKER]}
#: A command line that prints the marker (the fake upstream answers it under a foreign name).
ECHO_ARGS = {"command": "echo " + MARKER}

#: Lower-cased words that no HOME/work path may contain: the agents copy the cwd (and memory
#: paths) into their prompts, and a path that names a tool would make the prompt mention it.
TOOL_WORDS = (
    "agent",
    "apply",
    "bash",
    "cron",
    "edit",
    "enter",
    "exec",
    "exit",
    "fetch",
    "file",
    "glob",
    "goal",
    "grep",
    "image",
    "invalid",
    "list",
    "monitor",
    "notebook",
    "patch",
    "plan",
    "read",
    "replace",
    "report",
    "schedule",
    "search",
    "send",
    "shell",
    "skill",
    "stdin",
    "task",
    "todo",
    "topic",
    "view",
    "web",
    "workflow",
    "write",
)

PROXY_VARS = ("HTTPS_PROXY", "HTTP_PROXY", "ALL_PROXY", "https_proxy", "http_proxy", "all_proxy")


def neutral_home(prefix: str) -> Path:
    """A fresh temp dir (under /tmp) whose path names no tool of any of the agents.

    Raises ``RuntimeError`` when 20 tries all named one.
    """
    for _ in range(20):
        d = Path(tempfile.mkdtemp(prefix=prefix, dir="/tmp" if os.path.isdir("/tmp") else None))
        if not any(w in str(d).lower() for w in TOOL_WORDS):
            return d
        shutil.rmtree(d, ignore_errors=True)
    raise RuntimeError("could not create a temp dir whose path names no tool")


def agent_env(home: Path, proxy_url: str, proxy_vars: tuple[str, ...] = PROXY_VARS) -> dict[str, str]:
    """PATH, a fresh HOME/XDG/TMPDIR under ``home`` and ``proxy_vars`` set to ``proxy_url``
    (``NO_PROXY`` exempts 127.0.0.1); nothing else of the caller's environment leaks in."""
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
        "CI": "1",
    }
    for var in proxy_vars:
        env[var] = proxy_url
    env["NO_PROXY"] = env["no_proxy"] = "127.0.0.1,localhost"
    return env


@dataclasses.dataclass
class ClientRun:
    """One agent run: the command, its HOME, exit code (``None``: killed on timeout), output."""

    cmd: list[str]
    home: Path
    rc: int | None
    stdout: str
    stderr: str
    seconds: float


def run_client(cmd: list[str], env: dict[str, str], cwd: Path, timeout: float = CLIENT_TIMEOUT) -> ClientRun:
    """Run one agent (own session, stdin /dev/null, at most ``timeout`` seconds); kill its whole
    process group afterwards (whatever its tools left behind lives there: pgid == pid)."""
    start = time.monotonic()
    popen = subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        cwd=cwd,
        start_new_session=True,
    )
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
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(popen.pid, signal.SIGKILL)
    return ClientRun(
        cmd, Path(env["HOME"]), rc, out.decode(errors="replace"), err.decode(errors="replace"), time.monotonic() - start
    )


# --------------------------------------------------------------------------- per-agent settings
# reverse(home, work, base_url, prompt) / regular(home, work, ca_path, prompt)
#     -> (args after the binary, extra environment)
Prepare = Callable[[Path, Path, str, str], "tuple[list[str], dict[str, str]]"]


def _write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n")


_QUIET = {
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "general": {"disableAutoUpdate": True, "disableUpdateNag": True},
}

_CLAUDE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-dummy",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_ERROR_REPORTING": "1",
}


def _claude_reverse(home: Path, work: Path, base_url: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    return ["-p", prompt, "--allowedTools", "Bash"], {"ANTHROPIC_BASE_URL": base_url, **_CLAUDE_ENV}


def _claude_regular(home: Path, work: Path, ca: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    return ["-p", prompt, "--allowedTools", "Bash"], {**_CLAUDE_ENV, "NODE_EXTRA_CA_CERTS": ca}


def _qwen_settings(home: Path) -> None:
    _write_json(home / ".qwen" / "settings.json", {"security": {"auth": {"selectedType": "openai"}}, **_QUIET})


def _qwen_reverse(home: Path, work: Path, base_url: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    _qwen_settings(home)
    env = {"OPENAI_BASE_URL": base_url + "/v1", "OPENAI_API_KEY": "sk-dummy", "OPENAI_MODEL": "fake-model"}
    return ["--auth-type", "openai", "--approval-mode", "yolo", prompt], env


def _qwen_regular(home: Path, work: Path, ca: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    _qwen_settings(home)
    # no OPENAI_BASE_URL: Qwen Code's default for --auth-type openai (DashScope compatible mode)
    env = {"OPENAI_API_KEY": "sk-dummy", "OPENAI_MODEL": "qwen3-coder-plus", "NODE_EXTRA_CA_CERTS": ca}
    return ["--auth-type", "openai", "--approval-mode", "yolo", prompt], env


_OPENCODE_ENV = {
    f"OPENCODE_DISABLE_{k}": "1"
    for k in (
        "MODELS_FETCH",
        "AUTOUPDATE",
        "DEFAULT_PLUGINS",
        "LSP_DOWNLOAD",
        "SHARE",
        "CLAUDE_CODE",
        "EXTERNAL_SKILLS",
    )
}


def _opencode_setup(home: Path, work: Path, config: dict[str, Any]) -> None:
    cfg = home / ".config" / "opencode"
    (cfg / "node_modules").mkdir(parents=True, exist_ok=True)
    # stub: without it OpenCode runs `npm install @opencode-ai/plugin` into its config dir
    _write_json(cfg / "package.json", {"dependencies": {"@opencode-ai/plugin": "*"}})
    _write_json(
        cfg / "package-lock.json",
        {"lockfileVersion": 3, "packages": {"": {"dependencies": {"@opencode-ai/plugin": "*"}}}},
    )
    _write_json(
        cfg / "opencode.json",
        {
            "$schema": "https://opencode.ai/config.json",
            **config,
            "autoupdate": False,
            "share": "disabled",
            "permission": {"bash": "allow", "edit": "allow", "webfetch": "allow"},
        },
    )
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            ["git", "init", "-q", "."],
            cwd=work,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            timeout=30,
            env={"PATH": os.environ.get("PATH", os.defpath), "HOME": str(home)},
        )


def _opencode_reverse(home: Path, work: Path, base_url: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    _opencode_setup(
        home,
        work,
        {
            "model": "fake/fake-model",
            "small_model": "fake/fake-model",
            "provider": {
                "fake": {
                    "npm": "@ai-sdk/openai-compatible",
                    "name": "Fake",
                    "options": {"baseURL": base_url + "/v1", "apiKey": "sk-dummy"},
                    "models": {
                        "fake-model": {
                            "name": "Fake Model",
                            "tool_call": True,
                            "limit": {"context": 200000, "output": 8192},
                        }
                    },
                }
            },
        },
    )
    return ["run", prompt], dict(_OPENCODE_ENV)


def _opencode_regular(home: Path, work: Path, ca: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    # the built-in anthropic provider (https://api.anthropic.com) with ANTHROPIC_API_KEY
    _opencode_setup(home, work, {"model": "anthropic/claude-sonnet-4-5", "small_model": "anthropic/claude-sonnet-4-5"})
    return ["run", prompt], {**_OPENCODE_ENV, "ANTHROPIC_API_KEY": "sk-ant-dummy", "NODE_EXTRA_CA_CERTS": ca}


def _codex_config(home: Path, provider_key: str = "", provider_table: str = "") -> Path:
    """Writes ``$CODEX_HOME/config.toml``; ``provider_key`` (a top-level line) and
    ``provider_table`` (a TOML table) pick a provider other than the built-in OpenAI one."""
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(f"""\
model = "gpt-5.5"
{provider_key}approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

{provider_table}[analytics]
enabled = false

[feedback]
enabled = false

# without these Codex reaches github.com, api.github.com and chatgpt.com
[features]
plugins = false
apps = false
remote_plugin = false
plugin_sharing = false
tool_suggest = false
""")
    return codex_home


def _codex_reverse(home: Path, work: Path, base_url: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    codex_home = _codex_config(
        home,
        'model_provider = "fake"\n',
        f'''\
[model_providers.fake]
name = "Fake"
base_url = "{base_url}/v1"
env_key = "FAKE_OPENAI_API_KEY"
wire_api = "responses"

''',
    )
    return ["exec", "--skip-git-repo-check", prompt], {"CODEX_HOME": str(codex_home), "FAKE_OPENAI_API_KEY": "sk-dummy"}


def _codex_regular(home: Path, work: Path, ca: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    # no model_provider: Codex's built-in OpenAI provider (https://api.openai.com/v1)
    codex_home = _codex_config(home)
    # as the README says: the system roots plus mitmproxy's CA (a custom bundle may replace
    # Codex's roots, and tunnelled hosts keep their real certificates)
    bundle = home / "codex-ca-bundle.pem"
    system = ssl.get_default_verify_paths().cafile or "/etc/ssl/certs/ca-certificates.crt"
    bundle.write_text((Path(system).read_text() if Path(system).is_file() else "") + Path(ca).read_text())
    env = {"CODEX_HOME": str(codex_home), "CODEX_API_KEY": "sk-dummy", "CODEX_CA_CERTIFICATE": str(bundle)}
    return ["exec", "--skip-git-repo-check", prompt], env


def _gemini_settings(home: Path) -> None:
    _write_json(
        home / ".gemini" / "settings.json", {"security": {"auth": {"selectedType": "gemini-api-key"}}, **_QUIET}
    )


def _gemini_reverse(home: Path, work: Path, base_url: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    _gemini_settings(home)
    env = {"GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_API_KEY": "dummy-key", "GEMINI_CLI_TRUST_WORKSPACE": "true"}
    return ["--approval-mode", "yolo", "-p", prompt], env


def _gemini_regular(home: Path, work: Path, ca: str, prompt: str) -> tuple[list[str], dict[str, str]]:
    _gemini_settings(home)
    env = {"GEMINI_API_KEY": "dummy-key", "GEMINI_CLI_TRUST_WORKSPACE": "true", "NODE_EXTRA_CA_CERTS": ca}
    return ["--approval-mode", "yolo", "-p", prompt], env


@dataclasses.dataclass(frozen=True)
class Agent:
    """One coding agent and how to point it at toolvocab."""

    key: str  # install_clients.sh client name == binary name
    label: str
    wire: str  # "anthropic" | "chat" | "responses" | "gemini"
    #: reverse mode: the agent's base URL is mitmdump's
    reverse: Prepare
    #: regular mode: default URL through HTTPS_PROXY, trusting the CA file it is given
    regular: Prepare
    default_host: str
    #: the agent's own shell tool (what a foreign ``shell`` call becomes)
    shell_tool: str
    #: CONNECT to the proxy's port is tunnelled by the trap (clients that ignore NO_PROXY)
    tunnel_loopback: bool = False


AGENTS: dict[str, Agent] = {
    a.key: a
    for a in (
        Agent("claude", "Claude Code", "anthropic", _claude_reverse, _claude_regular, "api.anthropic.com", "Bash"),
        Agent("codex", "Codex CLI", "responses", _codex_reverse, _codex_regular, "api.openai.com", "exec_command"),
        Agent("opencode", "OpenCode", "chat", _opencode_reverse, _opencode_regular, "api.anthropic.com", "bash"),
        Agent(
            "qwen",
            "Qwen Code",
            "chat",
            _qwen_reverse,
            _qwen_regular,
            "dashscope.aliyuncs.com",
            "run_shell_command",
            tunnel_loopback=True,
        ),
        Agent(
            "gemini",
            "Gemini CLI",
            "gemini",
            _gemini_reverse,
            _gemini_regular,
            "generativelanguage.googleapis.com",
            "run_shell_command",
        ),
    )
}


@dataclasses.dataclass
class ClientBinary:
    """An installed agent: its key, binary and the last line ``--version`` printed."""

    key: str
    path: Path
    version: str


_BINARIES: dict[str, ClientBinary] = {}


def client_binary(key: str) -> ClientBinary:
    """The agent's binary under ``CLIENTS_DIR``, installed with install_clients.sh when missing
    (cached for the session).

    Skips (node/npm missing, install failed) or fails (``--version`` broken) the calling test.
    """
    if key in _BINARIES:
        return _BINARIES[key]
    label = AGENTS[key].label if key in AGENTS else key
    missing = [t for t in ("node", "npm") if shutil.which(t) is None]
    if missing:
        pytest.skip(f"{' and '.join(missing)} not found on PATH: cannot install/run {label} for e2e tests")
    binary = CLIENTS_DIR / key / "node_modules" / ".bin" / key
    if not binary.exists():
        try:
            res = subprocess.run(
                ["bash", str(INSTALL_SCRIPT), key],
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=INSTALL_TIMEOUT + 30,
                env={
                    **os.environ,
                    "TOOLVOCAB_CLIENTS": str(CLIENTS_DIR),
                    "TOOLVOCAB_INSTALL_TIMEOUT": str(int(INSTALL_TIMEOUT)),
                },
            )
            problem = None if res.returncode == 0 else f"rc={res.returncode}\n{res.stdout[-2000:]}{res.stderr[-2000:]}"
        except subprocess.TimeoutExpired:
            problem = f"timed out after {INSTALL_TIMEOUT + 30:.0f}s"
        if problem or not binary.exists():
            pytest.skip(f"could not install {label} via {INSTALL_SCRIPT.name} {key}: {problem or 'binary missing'}")
    home = neutral_home("tv-e2e-version-")
    try:
        (home / "tmp").mkdir()
        res = subprocess.run(
            [str(binary), "--version"],
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            env=agent_env(home, "http://127.0.0.1:9"),
            cwd=home,
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{binary} --version timed out")
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if res.returncode != 0:
        pytest.fail(f"{binary} --version failed rc={res.returncode}: {res.stdout}{res.stderr}")
    lines = res.stdout.strip().splitlines()
    _BINARIES[key] = ClientBinary(key, binary, lines[-1] if lines else "?")
    return _BINARIES[key]
