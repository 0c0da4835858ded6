"""The console scripts and the addon are safe by default, as a user runs them (real processes):

- ``toolvocab`` listens on 127.0.0.1 unless ``--listen-host`` is given, and says so;
- a ``toolvocab_*`` option mitmproxy does not know stops the proxy at start, naming the closest one;
- ``toolvocab --version`` names toolvocab's version, ``--help`` lists toolvocab's options and
  subcommands (then mitmdump's help);
- ``python -m toolvocab.cli … | head`` ends without a traceback;
- ``toolvocab_hosts``' help says what regular mode does: unset, TLS is intercepted only to the
  known hosts, and a plain-HTTP request through the proxy to any other host is still handled.

Servers listen on loopback addresses only (127.0.0.1, and 127.0.0.2 for an explicit choice); every
process is stopped by its PID and every wait is bounded.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

import procs
from toolvocab import __version__

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
TOOLVOCAB = BIN / "toolvocab"
ROOT = Path(__file__).resolve().parents[2]
FLOW = ROOT / "flows" / "agents" / "claude-code-1.mitm"
BASH = {
    "name": "Bash",
    "description": "Run a shell command",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}

needs_script = pytest.mark.skipif(
    not TOOLVOCAB.exists(), reason=f"the toolvocab console script is not next to {sys.executable}"
)


def _env(tmp_path: Path) -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy", "no_proxy")
    }
    return dict(env, HOME=str(tmp_path), PYTHONUNBUFFERED="1")  # a fresh ~/.mitmproxy: no config.yaml of the user's


def listening_addresses(port: int) -> set[str]:
    """The local addresses a socket listens on at ``port`` (``/proc/net/tcp`` and ``tcp6``)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, state = row.split()[1], row.split()[3]
            address, hexport = local.rsplit(":", 1)
            if state == "0A" and int(hexport, 16) == port:  # LISTEN
                if len(address) == 8:
                    found.add(".".join(str(int(address[i : i + 2], 16)) for i in (6, 4, 2, 0)))
                else:
                    found.add("::" if set(address) == {"0"} else address)
    return found


def start(tmp_path: Path, *args: str, name: str = "toolvocab") -> tuple[procs.ManagedProcess, int]:
    port = procs.free_port()
    proc = procs.ManagedProcess(
        [str(TOOLVOCAB), "--mode", "reverse:http://127.0.0.1:9", "--listen-port", str(port), *args],
        name=name,
        workdir=str(tmp_path),
        env=_env(tmp_path),
    )
    return proc, port


def wait_listening(proc: procs.ManagedProcess, port: int, timeout: float = 30.0) -> set[str]:
    deadline = time.monotonic() + timeout
    while not listening_addresses(port):
        assert proc.running(), proc.output()
        assert time.monotonic() < deadline, f"nothing listens on {port}: {proc.output()}"
        time.sleep(0.1)
    return listening_addresses(port)


def _calls_through(tmp_path: Path, headers: dict[str, str] | None = None, **start) -> tuple[list[str], str]:
    """The tool calls a client gets through ``procs.start_mitmdump(fake.url, **start)`` in front
    of a fake upstream answering Codex's ``shell`` (a request declaring ``Bash``), and mitmdump's
    output; both processes stopped by PID."""
    fake = procs.start_fake_upstream(tool_name="shell", tool_args={"command": ["bash", "-lc", "git status"]})
    try:
        proxy = procs.start_mitmdump(fake.url, home=tmp_path, timeout=30, **start)
        try:
            answer = httpx.post(
                f"{proxy.url}/v1/messages",
                headers={"anthropic-version": "2023-06-01", **(headers or {})},
                json={"model": "m", "max_tokens": 10, "tools": [BASH], "messages": [{"role": "user", "content": "hi"}]},
                timeout=30,
            ).json()
        finally:
            proxy.stop()
    finally:
        fake.stop()
    return [b["name"] for b in answer["content"] if b["type"] == "tool_use"], proxy.output()


@needs_script
def test_the_console_script_listens_on_127_0_0_1_unless_told(tmp_path):
    proc, port = start(tmp_path)
    try:
        assert wait_listening(proc, port) == {"127.0.0.1"}
        deadline = time.monotonic() + 10
        while f"listening at 127.0.0.1:{port}" not in proc.output() and time.monotonic() < deadline:
            time.sleep(0.1)
        out = proc.output()
        assert (
            "toolvocab: listening on 127.0.0.1 only (mitmproxy's default would be every interface); --listen-host 0.0.0.0 accepts other machines"
            in out
        )
        assert f"listening at 127.0.0.1:{port}" in out
    finally:
        proc.stop()
    proc, port = start(tmp_path, "--listen-host", "127.0.0.2", name="chosen")  # the user's choice wins
    try:
        assert wait_listening(proc, port) == {"127.0.0.2"}
        assert "listening on 127.0.0.1 only" not in proc.output()
    finally:
        proc.stop()


@needs_script
def test_a_misspelt_toolvocab_option_stops_the_proxy_at_start(tmp_path):
    proc, port = start(tmp_path, "--set", "toolvocab_mdoe=observe")
    try:
        proc.proc.wait(timeout=30)
    finally:
        proc.stop()
    out = proc.output()
    assert proc.proc.returncode == 1, out
    assert (
        "toolvocab: unknown option toolvocab_mdoe (did you mean toolvocab_mode?); toolvocab's options are toolvocab_hold_timeout"
        in out
    ), out
    assert "Error logged during startup" in out
    # no start line saying the proxy runs, in a mode, when it stops
    assert "toolvocab: mode " not in out, out


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--set", "toolvocab_mode"), "toolvocab_mode: given without a value; write --set toolvocab_mode=VALUE"),
        (
            ("--set", "toolvocab_mode=repair", "--set", "toolvocab_mode=observe"),
            "toolvocab_mode: given 2 values ('repair', 'observe'); give one",
        ),
        (("--set", "toolvocab_hold_timeout"), "toolvocab_hold_timeout: given without a value"),
    ],
    ids=["no-value", "twice", "timeout-no-value"],
)
def test_an_option_mitmproxy_cannot_read_stops_the_proxy_at_start(tmp_path, args, said):
    """mitmproxy reads a script's --set values after its load hook, and one it cannot read (a
    string option named without a value, or named twice) raises there, which drops every addon of
    the script without a word: the proxy ran, repairing nothing. Was: no line at all."""
    with pytest.raises(procs.ProcessStartError) as failed:
        proxy = procs.start_mitmdump("http://127.0.0.1:9", extra_args=args, home=tmp_path, timeout=30)
        proxy.stop()  # not reached when the proxy stops at start, as it must
    assert said in str(failed.value) and "Error logged during startup" in str(failed.value), str(failed.value)


def test_another_scripts_unreadable_value_is_said_not_a_lost_addon(tmp_path):
    """A value mitmproxy could not read for an earlier script's option stays deferred and raises
    again at toolvocab's registration, dropping it without a word. Was: no toolvocab line, the
    call unrepaired, keys saved (attack 82 V4)."""
    other = tmp_path / "other.py"
    other.write_text('def load(loader):\n    loader.add_option("other_level", str, "info", "another option")\n')
    with pytest.raises(procs.ProcessStartError) as failed:
        proxy = procs.start_mitmdump(  # the other script first, as a config.yaml `scripts:` list may have it
            "http://127.0.0.1:9",
            script=None,
            extra_args=("-s", str(other), "-s", str(procs.DEFAULT_SCRIPT), "--set", "other_level"),
            home=tmp_path,
            timeout=30,
        )
        proxy.stop()  # not reached when the proxy stops at start, as it must
    said = "other_level: mitmproxy could not read the value given for it, and dropped the script that declares it"
    assert said in str(failed.value), str(failed.value)


def test_a_sibling_addons_value_is_left_to_mitmproxy(tmp_path):
    """A script composing its own addon with toolvocab's (``[Mine(), *default_addons()]``): the
    sibling's option is declared, and still deferred, when toolvocab's load looks; a readable
    value is mitmproxy's to read. Was: taken out as refused, the proxy stopped (attack 83 X2)."""
    combo = tmp_path / "combo.py"
    combo.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(procs.REPO)!r})\n"
        "from toolvocab.addons import default_addons\n"
        "class Mine:\n"
        "    def load(self, loader):\n"
        '        loader.add_option("mine_level", str, "info", "a sibling option")\n'
        "addons = [Mine(), *default_addons()]\n"
    )
    names, out = _calls_through(tmp_path, script=combo, options={"mine_level": "debug"})
    assert names == ["Bash"], out
    assert "mine_level" not in out, out


@pytest.mark.parametrize("name", ["toolvocab_hosts", "toolvocab_profiles", "toolvocab_record"])
def test_an_optional_option_named_without_a_value_is_unset(tmp_path, name):
    """mitmproxy reads an optional option named alone as None, its default: the proxy runs and
    repairs (attack 82 V5: it stopped)."""
    names, out = _calls_through(tmp_path, extra_args=("--set", name))
    assert names == ["Bash"], out


def test_toolvocab_redact_without_a_value_redacts(tmp_path):
    """``--set toolvocab_redact`` reads as true, as mitmproxy reads a boolean named without a
    value. Was: every addon of the script dropped: the call reached the client unrepaired and the
    saved flow kept the key."""
    saved = tmp_path / "saved.mitm"
    names, out = _calls_through(
        tmp_path,
        headers={"x-api-key": "sk-ant-secret-4242"},
        save_path=saved,
        extra_args=("--set", "toolvocab_redact"),
    )
    assert names == ["Bash"], (names, out)
    data = saved.read_bytes()
    assert b"/v1/messages" in data and b"sk-ant-secret-4242" not in data, out
    assert "toolvocab_redact is off" not in out


def test_config_yaml_booleans_and_numbers_are_read(tmp_path):
    """``toolvocab_redact: false`` and ``toolvocab_hold_timeout: 5`` in ``~/.mitmproxy/config.yaml``
    (YAML's boolean and number, for options read as strings). Was: mitmproxy's type check
    dropped every addon of the script, and mitmdump stopped at start."""
    (tmp_path / ".mitmproxy").mkdir()
    (tmp_path / ".mitmproxy" / "config.yaml").write_text("toolvocab_redact: false\ntoolvocab_hold_timeout: 5\n")
    names, out = _calls_through(tmp_path)
    assert names == ["Bash"], (names, out)
    assert "toolvocab: toolvocab_redact is off" in out, out


@needs_script
def test_version_and_help_name_toolvocab(tmp_path):
    run = subprocess.run([str(TOOLVOCAB), "--version"], capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert run.returncode == 0 and run.stdout.splitlines()[0] == f"toolvocab: {__version__}", run.stdout
    assert re.search(r"^Mitmproxy: 1[12]\.", run.stdout, re.M), run.stdout  # then mitmproxy's own lines
    run = subprocess.run([str(TOOLVOCAB), "--help"], capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert run.returncode == 0, run.stderr
    head, _, theirs = run.stdout.partition("mitmdump's own help follows.")
    assert head.startswith(f"toolvocab {__version__}: mitmdump with the toolvocab addon")
    for needle in (
        "listens on 127.0.0.1 unless --listen-host is given",
        "  demo ",
        "  replay ",
        "  toolvocab_mode = 'auto' (auto, repair, observe, off)",
        "  toolvocab_hosts = None",
        "  toolvocab_hold_timeout = '30'",
        "  toolvocab_record = None",
        "  toolvocab_intercept = 'known' (known, all)",
    ):
        assert needle in head, (needle, head)
    assert "usage: toolvocab [options] [filter]" in theirs and "--listen-host HOST" in theirs, theirs[:500]
    web = BIN / "toolvocab-web"
    run = subprocess.run([str(web), "--help"], capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert run.returncode == 0 and run.stdout.startswith(
        f"toolvocab-web {__version__}: mitmweb with the toolvocab addon"
    )
    assert "toolvocab_mode = 'auto'" in run.stdout and "--web-port PORT" in run.stdout


@pytest.mark.parametrize("command", ["tools", "explain", "stats"])
def test_a_closed_pipe_ends_the_command_line_without_a_traceback(command):
    files = " ".join([str(FLOW)] * 60)  # more than a pipe's buffer holds
    run = subprocess.run(
        f"{sys.executable} -m toolvocab.cli {command} {files} | head -n 1",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
    )
    assert run.stdout.count("\n") == 1, run.stdout
    assert run.stderr == "", run.stderr


def test_regular_mode_handles_plain_http_to_any_host_as_the_hosts_help_says(tmp_path):
    """Regular mode, toolvocab_hosts unset: the fake upstream on 127.0.0.1 is no known LLM host,
    yet a plain-HTTP request through the proxy is repaired (TLS interception is what the table
    limits); with toolvocab_hosts set to another host it is not touched."""
    fake = procs.start_fake_upstream(tool_name="shell", tool_args={"command": ["bash", "-lc", "git status"]})
    try:
        for hosts, expected in ((None, "Bash"), (r"^api\.anthropic\.com$", "shell")):
            proxy = procs.start_mitmdump(
                None, options={"toolvocab_hosts": hosts} if hosts else {}, home=tmp_path, timeout=30
            )
            try:
                with httpx.Client(proxy=proxy.url, trust_env=False, timeout=30) as client:
                    answer = client.post(
                        f"{fake.url}/v1/messages",
                        headers={"anthropic-version": "2023-06-01"},
                        json={
                            "model": "m",
                            "max_tokens": 10,
                            "tools": [BASH],
                            "messages": [{"role": "user", "content": "hi"}],
                        },
                    ).json()
                names = [b["name"] for b in answer["content"] if b["type"] == "tool_use"]
                assert names == [expected], (hosts, names, proxy.output())
            finally:
                proxy.stop()
    finally:
        fake.stop()
    from toolvocab.addons.core import ToolVocab

    class Loader:
        def add_option(self, name, typespec, default, help, choices=None):  # noqa: A002
            if name == "toolvocab_hosts":
                self.help = help

    loader = Loader()
    ToolVocab(None).load(loader)  # type: ignore[arg-type]
    assert "plain HTTP through regular mode, to any host" in loader.help
