"""mitmweb shows a repaired flow: its comment in the flow list and the ``toolvocab`` contentview
(calls before/after with the reason) on the response and request tabs.

A real ``mitmweb`` (next to ``sys.executable``) runs ``addon/toolvocab.py`` (whose addons include
``ToolVocabUI``, ``toolvocab/addons/ui.py``) in reverse mode in front of ``tests/fake_upstream.py``; the anthropic SDK sends one request whose
answer calls ``shell`` (repaired to ``Bash``). Headless Chromium (Debian's ``chromium``) opens
mitmweb on that flow, driven over the DevTools protocol with the ``websockets`` package: the
page's rendered text (``document.body.innerText``) is read at the moment of each screenshot and
checked, and the PNGs (kept in the test's tmp dir) are checked to be real pictures.

Every wait is bounded; mitmweb, the fake upstream and Chromium (its whole process group) are
stopped at the end whatever happens.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import struct
import sys
import time
import urllib.request
import zlib
from pathlib import Path
from typing import Any

import pytest

import procs
from sdk import anthropic_client

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")
MITMWEB = Path(sys.executable).parent / "mitmweb"
WINDOW = (1400, 900)

BASH = {
    "name": "Bash",
    "description": "Run a shell command and return what it printed.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command line to run."}},
        "required": ["command"],
    },
}


def _mitmproxy_version() -> tuple[int, ...]:
    from mitmproxy.version import VERSION

    return tuple(int(x) for x in re.findall(r"\d+", VERSION)[:3])


def _no_proxy_env() -> dict[str, str]:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy"):
        env.pop(var, None)
    return env


# ------------------------------------------------------------------------------------ mitmweb
class Mitmweb:
    def __init__(self, upstream_url: str, workdir: Path, timeout: float = 30.0) -> None:
        self.password = secrets.token_hex(12)
        # mitmweb >= 11.1.2 wants a token or web_password; 11.0.2 has neither option
        self.needs_auth = _mitmproxy_version() >= (11, 1, 2)
        self.port = procs.free_port()
        self.web_port = procs.free_port()
        argv = [str(MITMWEB), "-s", str(procs.ADDON_SCRIPT)]  # its addons include ToolVocabUI
        argv += [
            "--mode", f"reverse:{upstream_url}", "--listen-host", "127.0.0.1", "--listen-port", str(self.port),
            "--web-host", "127.0.0.1", "--web-port", str(self.web_port),
            "--set", "web_open_browser=false", "--set", "termlog_verbosity=info",
        ]
        for column in ("tls", "icon", "path", "method", "status", "size", "time", "comment"):
            argv += ["--set", f"web_columns={column}"]  # a Sequence[str] option: one --set each
        if self.needs_auth:
            argv += ["--set", f"web_password={self.password}"]
        self.argv = argv
        self.process = procs.ManagedProcess(argv, name="mitmweb", workdir=str(workdir), env=_no_proxy_env())
        deadline = time.monotonic() + timeout
        while not (procs.port_open(self.port) and procs.port_open(self.web_port)):
            if self.process.proc.poll() is not None or time.monotonic() > deadline:
                out = self.process.output()
                self.stop()
                raise procs.ProcessStartError(f"mitmweb did not start (exit {self.process.proc.poll()})\n{argv}\n{out}")
            time.sleep(0.1)
        time.sleep(0.5)  # scripts log their errors right after the ports open (G8)
        bad = [m for m in procs.STARTUP_ERROR_MARKERS if m in self.process.output()]
        if bad or self.process.proc.poll() is not None:
            out = self.process.output()
            self.stop()
            raise procs.ProcessStartError(f"mitmweb failed at startup ({bad})\n{argv}\n{out}")

    @property
    def proxy_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def page_url(self, fragment: str) -> str:
        query = f"?token={self.password}" if self.needs_auth else ""
        return f"http://127.0.0.1:{self.web_port}/{query}#{fragment}"

    def api(self, path: str, timeout: float = 10.0) -> Any:
        headers = {"Authorization": f"Bearer {self.password}"} if self.needs_auth else {}
        req = urllib.request.Request(f"http://127.0.0.1:{self.web_port}{path}", headers=headers)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(req, timeout=timeout) as resp:
            return json.loads(resp.read())

    def wait_flow(self, predicate, timeout: float = 15.0) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            flows = self.api("/flows")
            for f in flows:
                if predicate(f):
                    return f
            if time.monotonic() > deadline:
                raise TimeoutError(f"no matching flow in mitmweb within {timeout}s: {json.dumps(flows)[:2000]}")
            time.sleep(0.1)

    def output(self) -> str:
        return self.process.output()

    def stop(self) -> None:
        self.process.stop(timeout=10)


# ------------------------------------------------------------------------------------ Chromium
class Chromium:
    """Headless Chromium with a DevTools port, and a minimal CDP client on its first page."""

    def __init__(self, workdir: Path, timeout: float = 30.0) -> None:
        from websockets.sync.client import connect

        self.profile = workdir / "chromium-profile"
        self.profile.mkdir(parents=True, exist_ok=True)
        (self.profile / "DevToolsActivePort").unlink(missing_ok=True)  # a stale one names a dead port
        argv = [
            str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--disable-dev-shm-usage", "--no-proxy-server", "--hide-scrollbars",
            f"--user-data-dir={self.profile}", f"--window-size={WINDOW[0]},{WINDOW[1]}",
            "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0", "about:blank",
        ]
        self.process = procs.ManagedProcess(argv, name="chromium", workdir=str(workdir), env=_no_proxy_env())
        self.ws = None
        self._stack = contextlib.ExitStack()
        self._id = 0
        try:
            port = self._devtools_port(timeout)
            page_ws = self._page_target(port, timeout)
            self.ws = self._stack.enter_context(
                connect(page_ws, max_size=None, open_timeout=10, proxy=None, compression=None))
            self.call("Page.enable")
            self.call("Runtime.enable")
            self.call("Emulation.setDeviceMetricsOverride", width=WINDOW[0], height=WINDOW[1],
                      deviceScaleFactor=1, mobile=False)
        except BaseException:
            self.stop()
            raise

    def _devtools_port(self, timeout: float) -> int:
        active = self.profile / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while True:
            if active.exists():
                first = active.read_text().split("\n", 1)[0].strip()
                if first.isdigit():
                    return int(first)
            if self.process.proc.poll() is not None or time.monotonic() > deadline:
                raise procs.ProcessStartError(f"chromium did not open its DevTools port\n{self.process.output()}")
            time.sleep(0.1)

    def _page_target(self, port: int, timeout: float) -> str:
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        deadline = time.monotonic() + timeout
        while True:
            try:
                with opener.open(f"http://127.0.0.1:{port}/json/list", timeout=5) as resp:
                    pages = [t for t in json.loads(resp.read()) if t.get("type") == "page"]
                if pages:
                    return pages[0]["webSocketDebuggerUrl"]
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise procs.ProcessStartError(f"chromium showed no page target\n{self.process.output()}")
            time.sleep(0.1)

    def call(self, method: str, timeout: float = 20.0, **params: Any) -> dict:
        assert self.ws is not None
        self._id += 1
        mid = self._id
        self.ws.send(json.dumps({"id": mid, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError(f"CDP {method}: no answer within {timeout}s")
            msg = json.loads(self.ws.recv(timeout=remaining))
            if msg.get("id") == mid:
                if "error" in msg:
                    raise RuntimeError(f"CDP {method}: {msg['error']}")
                return msg.get("result", {})
            # events (Page.*, Runtime.consoleAPICalled...) are not needed

    def evaluate(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"page error: {result['exceptionDetails']}")
        return result["result"].get("value")

    def text(self) -> str:
        return self.evaluate("document.body ? document.body.innerText : ''") or ""

    def wait_text(self, needles: list[str], timeout: float = 20.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            text = self.text()
            if all(n in text for n in needles):
                return text
            if time.monotonic() > deadline:
                missing = [n for n in needles if n not in text]
                raise TimeoutError(f"page never showed {missing} within {timeout}s; it shows:\n{text[:4000]}")
            time.sleep(0.2)

    def navigate(self, url: str) -> None:
        self.call("Page.navigate", url=url)

    def click_tab(self, label: str) -> None:
        """Click the flow-detail tab called ``label`` (Request, Response, Comment...) as a user would."""
        found = self.evaluate(
            "(() => { const a = Array.from(document.querySelectorAll('a'))"
            f".find(e => e.textContent.trim() === {json.dumps(label)}); if (a) a.click(); return !!a; }})()")
        assert found, f"no {label!r} tab on the page: {self.text()[:2000]}"

    def scroll_to_line(self, prefix: str) -> None:
        """Scroll the element whose own text starts with ``prefix`` to the top of its pane."""
        xpath = json.dumps("//*[starts-with(normalize-space(text()), '" + prefix + "')]")
        found = self.evaluate(
            f"(() => {{ const r = document.evaluate({xpath}, document, null, "
            "XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue; "
            "if (r) r.scrollIntoView({block: 'start'}); return !!r; })()")
        assert found, f"no line starting with {prefix!r} on the page"

    def screenshot(self, path: Path) -> tuple[bytes, str]:
        """The PNG, saved to ``path``, and the page's text read right before it was taken."""
        text = self.text()
        data = base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"])
        path.write_bytes(data)
        return data, text

    def output(self) -> str:
        return self.process.output()

    def stop(self) -> None:
        try:
            self._stack.close()
        except Exception as exc:  # a dead browser must not keep it from being stopped
            print(f"closing the DevTools connection failed: {exc!r}")
        self.process.stop(timeout=10)  # the whole process group: renderer, GPU and zygote too


# ------------------------------------------------------------------------------------ PNG check
def png_facts(data: bytes) -> dict:
    """Width, height and how varied the pixel bytes are (a blank page has a handful of values)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height = 8, b"", 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos : pos + 8])
        body = data[pos + 8 : pos + 8 + length]
        if kind == b"IHDR":
            width, height = struct.unpack(">II", body[:8])
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    return {"width": width, "height": height, "distinct_bytes": len(set(raw)), "raw_size": len(raw)}


# ------------------------------------------------------------------------------------ the test
@pytest.mark.skipif(not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium): "
                    "apt-get install -y chromium")
@pytest.mark.skipif(not MITMWEB.exists(), reason=f"mitmweb not found next to {sys.executable}")
def test_mitmweb_shows_the_repaired_flow_its_comment_and_the_toolvocab_view(tmp_path):
    pytest.importorskip("websockets.sync.client", reason="the websockets package drives Chromium over CDP")
    fake = procs.start_fake_upstream(tool_name="shell", tool_args={"command": ["bash", "-lc", "git status"]})
    web: Mitmweb | None = None
    browser: Chromium | None = None
    try:
        web = Mitmweb(fake.url, tmp_path)
        client = anthropic_client(web.proxy_url)
        message = client.messages.create(
            model="claude-fixture-1", max_tokens=256, tools=[BASH],
            messages=[{"role": "user", "content": "What changed in the repository?"}],
        )
        calls = [b for b in message.content if b.type == "tool_use"]
        assert [(c.name, c.input) for c in calls] == [("Bash", {"command": "git status"})]

        flow = web.wait_flow(lambda f: "shell→Bash" in (f.get("comment") or ""))
        assert flow["marked"] in ("🔧", ":wrench:")
        comment = flow["comment"]
        assert comment.startswith("changed: shell→Bash (capability)")
        # the contentview mitmweb picks on its own ("auto") is toolvocab's
        view = web.api(f"/flows/{flow['id']}/response/content/auto.json")
        view_text = view["text"] if "text" in view else "\n".join("".join(t for _, t in line) for line in view["lines"])
        assert view.get("view_name", view.get("description")) == "toolvocab"
        assert '+ Bash {"command":"git status"}' in view_text

        browser = Chromium(tmp_path)
        # 1. the response tab: the comment column in the flow list, the toolvocab view of the answer
        browser.navigate(web.page_url(f"/flows/{flow['id']}/response"))
        needles = [
            "changed: shell→Bash (capability)",               # the comment, in the flow list
            "Tool calls in the answer",                       # the toolvocab view
            '- shell {"command":["bash","-lc","git status"]}',
            '+ Bash {"command":"git status"}',
            "rename at capability (renamed)",
            "reason: shell has capability shell and Bash is the one declared tool with it",
            "candidates: Bash",
            "argument: argv_to_string command",
            "client: anthropic SDK",
            "model claude-fixture-1 · status 200",
            "Body below: the answer as the client received it.",
        ]
        browser.wait_text(needles)
        shots = {"response": tmp_path / "mitmweb-response.png"}
        pngs, texts = {}, {}
        pngs["response"], texts["response"] = browser.screenshot(shots["response"])
        for needle in needles:
            assert needle in texts["response"], (needle, texts["response"][:4000])

        # 2. the request tab, scrolled to the view: the sentence added to the system prompt
        browser.click_tab("Request")
        request_needles = [
            "Body below: the request as sent upstream.",
            "added to the system prompt:",
            "Call tools only by the exact names declared in this request, which include Bash.",
            "declared (1): Bash",
        ]
        browser.wait_text(request_needles)
        browser.scroll_to_line("toolvocab —")
        shots["request"] = tmp_path / "mitmweb-request.png"
        pngs["request"], texts["request"] = browser.screenshot(shots["request"])
        for needle in request_needles + ["changed: shell→Bash (capability)"]:
            assert needle in texts["request"], (needle, texts["request"][:4000])
        assert "Body below: the answer as the client received it." not in texts["request"]

        # 3. the Comment tab: the whole one-liner
        browser.click_tab("Comment")
        browser.wait_text(["Comment\n" + comment])
        shots["comment"] = tmp_path / "mitmweb-comment.png"
        pngs["comment"], texts["comment"] = browser.screenshot(shots["comment"])
        assert "Tool calls in the answer" not in texts["comment"] and comment in texts["comment"]

        for name, path in shots.items():
            assert path.exists() and path.stat().st_size > 20_000, (path, path.stat().st_size)
            facts = png_facts(pngs[name])
            assert (facts["width"], facts["height"]) == WINDOW, facts
            assert facts["distinct_bytes"] > 64, ("the screenshot looks blank", name, facts)
        print("\nscreenshots: " + " ".join(str(p) for p in shots.values()))
    except BaseException:
        for name, proc in (("mitmweb", web), ("chromium", browser), ("fake upstream", fake)):
            if proc is not None:
                print(f"\n=== {name} ===\n{proc.output()[-8000:]}")
        raise
    finally:
        if browser is not None:
            browser.stop()
        if web is not None:
            web.stop()
        fake.stop()
