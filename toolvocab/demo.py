"""``toolvocab demo``: one repair, seen end to end, with no agent and no API key.

A fake Anthropic upstream (a stdlib HTTP server on 127.0.0.1, in this process) answers every
Messages request with a tool call in another agent's vocabulary: Codex's ``shell`` with an argv,
``{"command": ["bash", "-lc", "git status"]}``. mitmdump with toolvocab runs in front of it in
reverse mode (a child process, on 127.0.0.1). One request goes through the proxy, shaped as
Claude Code sends it: its ``Bash`` tool, ``{"command": string}``. The demo prints the call the
upstream answered, the call the client received (``Bash {"command": "git status"}``) and the line
mitmdump printed, then stops both. Exit status 0 when the client received the repaired call.

Every wait is bounded; the child is stopped by its PID (SIGINT, then SIGKILL).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any

#: The call the fake upstream answers with (Codex's shell tool: an argv), and the tool the request
#: declares (Claude Code's Bash: a command line).
FOREIGN_CALL = {"name": "shell", "input": {"command": ["bash", "-lc", "git status"]}}
BASH = {
    "name": "Bash",
    "description": "Executes a given bash command and returns its output.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
#: Claude Code's user agent, so that the log line names the client the request is shaped after.
USER_AGENT = "claude-cli/2.0.14 (external, cli)"


class FakeAnthropic(BaseHTTPRequestHandler):
    """``POST /v1/messages``: a JSON Messages answer with one ``tool_use`` block, :data:`FOREIGN_CALL`."""

    server_version = "toolvocab-demo-upstream"

    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        answer = {
            "id": "msg_demo_1",
            "type": "message",
            "role": "assistant",
            "model": request.get("model", "claude-demo"),
            "content": [
                {"type": "text", "text": "Checking the working tree."},
                {"type": "tool_use", "id": "toolu_demo_1", **FOREIGN_CALL},
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 42, "output_tokens": 17},
        }
        body = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - http.server's name
        pass  # quiet: the demo prints what matters


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def _call_text(block: dict) -> str:
    return f"{block.get('name')} {json.dumps(block.get('input'))}"


def _stop(proc: subprocess.Popen, timeout: float = 10.0) -> None:
    """SIGINT (mitmdump's clean stop), then SIGKILL after ``timeout`` s; by PID."""
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def run(out=None, timeout: float = 30.0) -> int:
    """The demo; prints to ``out``; returns the exit status (0: the client got the repaired call)."""
    from toolvocab.run import addon_path

    out = out or sys.stdout
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), FakeAnthropic)
    threading.Thread(target=upstream.serve_forever, name="demo-upstream", daemon=True).start()
    up_port = upstream.server_address[1]
    port = free_port()
    log = tempfile.NamedTemporaryFile(prefix="toolvocab-demo-", suffix=".log", delete=False)
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    argv = [
        sys.executable,
        "-c",
        "from mitmproxy.tools.main import mitmdump; mitmdump()",
        "-s",
        addon_path(),
        "--mode",
        f"reverse:http://127.0.0.1:{up_port}",
        "--listen-host",
        "127.0.0.1",
        "--listen-port",
        str(port),
        "--set",
        "termlog_verbosity=info",
    ]
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        print(
            f"toolvocab demo: a fake Anthropic upstream on 127.0.0.1:{up_port} answers with Codex's shell tool call;",
            file=out,
        )
        print(f"mitmdump with toolvocab in front of it on 127.0.0.1:{port} (reverse mode, pid {proc.pid}).", file=out)
        deadline = time.monotonic() + timeout
        while not _listening(port):
            if proc.poll() is not None or time.monotonic() > deadline:
                print(f"mitmdump did not start (exit {proc.poll()}):\n{_read(log.name)}", file=out)
                return 1
            time.sleep(0.1)
        request = {
            "model": "claude-demo",
            "max_tokens": 256,
            "tools": [BASH],
            "messages": [{"role": "user", "content": "What changed in the repository?"}],
        }
        print(f"\nrequest:           POST /v1/messages as Claude Code sends it, declaring {_declared(BASH)}", file=out)
        print(f"upstream answered: {_call_text(FOREIGN_CALL)}", file=out)
        req = urllib.request.Request(
            f"http://127.0.0.1:{port}/v1/messages",
            data=json.dumps(request).encode(),
            method="POST",
            headers={
                "content-type": "application/json",
                "user-agent": USER_AGENT,
                "anthropic-version": "2023-06-01",
                "x-api-key": "no-key-needed",
            },
        )
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=timeout) as resp:
            answer = json.loads(resp.read())
        calls = [b for b in answer.get("content") or [] if b.get("type") == "tool_use"]
        print(f"client received:   {', '.join(_call_text(c) for c in calls) or '(no tool call)'}", file=out)
        line = _wait_line(log.name, "toolvocab: ", "→", deadline=time.monotonic() + 10)
        print(f"mitmdump printed:  {line or '(no toolvocab line)'}", file=out)
        repaired = [(c.get("name"), c.get("input")) for c in calls] == [("Bash", {"command": "git status"})]
        print(
            "\n"
            + (
                "The client got its own tool, Bash, with a command line: the call it can run."
                if repaired
                else "The client did not get the repaired call."
            ),
            file=out,
        )
        print(
            "With an agent: toolvocab --mode reverse:https://api.anthropic.com, then "
            "ANTHROPIC_BASE_URL=http://127.0.0.1:8080 claude (README: reverse mode).",
            file=out,
        )
        return 0 if repaired else 1
    finally:
        _stop(proc)
        upstream.shutdown()
        upstream.server_close()
        log.close()
        try:
            os.unlink(log.name)
        except OSError:
            pass


def _declared(tool: dict) -> str:
    """``Bash {command: string}``: a declared tool's name and argument types."""
    fields = ", ".join(f"{key}: {schema.get('type')}" for key, schema in tool["input_schema"]["properties"].items())
    return f"{tool['name']} {{{fields}}}"


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fp:
            return fp.read()
    except OSError:
        return ""


def _wait_line(path: str, *needles: str, deadline: float) -> str | None:
    """The first line of the file at ``path`` holding every needle, waiting until ``deadline``."""
    while True:
        for line in _read(path).splitlines():
            if all(n in line for n in needles):
                return line[line.index("toolvocab: ") :] if "toolvocab: " in line else line
        if time.monotonic() > deadline:
            return None
        time.sleep(0.1)


def main(argv: list[str] | None = None) -> int:
    """``toolvocab demo``; returns the exit status."""
    argparse.ArgumentParser(prog="toolvocab demo", description=__doc__.split("\n\n")[0]).parse_args(argv)
    return run()
