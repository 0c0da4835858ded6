"""mitmweb and headless Chromium for the tests that check what a user sees in mitmweb: a real
``mitmweb`` (next to ``sys.executable``) with ``addon/toolvocab.py`` in reverse mode, and Debian's
``chromium`` driven over the DevTools protocol with the ``websockets`` package (the page's rendered
text, ``document.body.innerText``; clicks and keys as a user's; screenshots). Every wait is
bounded; ``stop()`` ends each process (Chromium's whole process group) by its PID.
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

import procs

CHROMIUM = Path("/usr/bin/chromium")
MITMWEB = Path(sys.executable).parent / "mitmweb"
WINDOW = (1400, 900)
#: The flow list's columns the first mitmweb test sets (``web_columns``); ``None``: mitmweb's own default.
COLUMNS = ("tls", "icon", "path", "method", "status", "size", "time", "comment")


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
    """``mitmweb -s addon/toolvocab.py --mode reverse:<upstream_url>`` on free local ports, with
    ``web_columns`` set to ``columns`` (``None``: not set) and ``options`` as ``--set k=v``."""

    def __init__(
        self,
        upstream_url: str,
        workdir: Path,
        timeout: float = 30.0,
        *,
        columns: tuple[str, ...] | None = COLUMNS,
        options: dict[str, str] | None = None,
    ) -> None:
        self.password = secrets.token_hex(12)
        # mitmweb >= 11.1.2 wants a token or web_password; 11.0.2 has neither option
        self.needs_auth = _mitmproxy_version() >= (11, 1, 2)
        self.port = procs.free_port()
        self.web_port = procs.free_port()
        argv = [str(MITMWEB), "-s", str(procs.ADDON_SCRIPT)]  # its addons include ToolVocabUI
        argv += [
            "--mode",
            f"reverse:{upstream_url}",
            "--listen-host",
            "127.0.0.1",
            "--listen-port",
            str(self.port),
            "--web-host",
            "127.0.0.1",
            "--web-port",
            str(self.web_port),
            "--set",
            "web_open_browser=false",
            "--set",
            "termlog_verbosity=info",
        ]
        for column in columns or ():
            argv += ["--set", f"web_columns={column}"]  # a Sequence[str] option: one --set each
        for key, value in (options or {}).items():
            argv += ["--set", f"{key}={value}"]
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
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--disable-dev-shm-usage",
            "--no-proxy-server",
            "--hide-scrollbars",
            f"--user-data-dir={self.profile}",
            f"--window-size={WINDOW[0]},{WINDOW[1]}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "about:blank",
        ]
        self.process = procs.ManagedProcess(argv, name="chromium", workdir=str(workdir), env=_no_proxy_env())
        self.ws = None
        self._stack = contextlib.ExitStack()
        self._id = 0
        try:
            port = self._devtools_port(timeout)
            page_ws = self._page_target(port, timeout)
            self.ws = self._stack.enter_context(
                connect(page_ws, max_size=None, open_timeout=10, proxy=None, compression=None)
            )
            self.call("Page.enable")
            self.call("Runtime.enable")
            self.call(
                "Emulation.setDeviceMetricsOverride",
                width=WINDOW[0],
                height=WINDOW[1],
                deviceScaleFactor=1,
                mobile=False,
            )
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

    def _click_when_shown(self, find: str, what: str, timeout: float = 15.0, click: str = "e.click()") -> None:
        """Poll (0.1 s steps, up to ``timeout`` s) until the JS expression ``find`` names an element,
        then run ``click`` on it (``e``) once; raise AssertionError with the page's text if it never
        shows. The page draws what mitmproxy pushes over its WebSocket a moment after the REST API
        already has it, so an element a user would wait for is waited for here too."""
        deadline = time.monotonic() + timeout
        while True:
            if self.evaluate(f"(() => {{ const e = {find}; if (e) {{ {click}; }} return !!e; }})()"):
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what} on the page within {timeout}s: {self.text()[:2000]}")
            time.sleep(0.1)

    def click_tab(self, label: str) -> None:
        """Click the flow-detail tab called ``label`` (Request, Response, Comment...) as a user would."""
        self._click_when_shown(
            f"Array.from(document.querySelectorAll('a')).find(e => e.textContent.trim() === {json.dumps(label)})",
            f"{label!r} tab",
        )

    def click_text(self, label: str, selector: str = "a, button") -> None:
        """Click the first element matching ``selector`` whose text is ``label`` (a menu tab, a button)."""
        self._click_when_shown(
            f"Array.from(document.querySelectorAll({json.dumps(selector)}))"
            f".find(e => e.textContent.trim() === {json.dumps(label)})",
            f"{label!r} ({selector})",
        )

    def click_row(self, needle: str) -> None:
        """Click the flow-list row whose text holds ``needle`` (it opens the flow's details)."""
        self._click_when_shown(
            f"Array.from(document.querySelectorAll('tr')).find(e => e.textContent.includes({json.dumps(needle)}))",
            f"row with {needle!r}",
        )

    def check_option(self, label: str) -> None:
        """Tick the checkbox labelled ``label`` (Options → "Display Command Bar", ...) unless it is ticked."""
        self._click_when_shown(
            "Array.from(document.querySelectorAll('input[type=checkbox]'))"
            f".find(e => e.parentElement.textContent.trim() === {json.dumps(label)})",
            f"{label!r} checkbox",
            click="if (!e.checked) e.click()",
        )

    def type_into(self, selector: str, text: str, *, enter: bool = False, clear: bool = True) -> None:
        """Focus the input ``selector`` and type ``text`` as keyboard input (CDP ``Input.insertText``,
        which React's inputs take like typing), then press Enter when ``enter``."""
        focused = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (!e) return false; e.focus(); "
            + ("e.select(); " if clear else "")
            + "return true; })()"
        )
        assert focused, f"no {selector!r} on the page: {self.text()[:2000]}"
        if clear:
            for kind in ("keyDown", "keyUp"):
                self.call(
                    "Input.dispatchKeyEvent",
                    type=kind,
                    key="Backspace",
                    code="Backspace",
                    windowsVirtualKeyCode=8,
                    nativeVirtualKeyCode=8,
                )
        if text:
            self.call("Input.insertText", text=text)
        if enter:
            for kind in ("keyDown", "keyUp"):
                self.call(
                    "Input.dispatchKeyEvent",
                    type=kind,
                    key="Enter",
                    code="Enter",
                    windowsVirtualKeyCode=13,
                    nativeVirtualKeyCode=13,
                )

    def scroll_to_bottom(self, selector: str) -> None:
        """Scroll the element ``selector`` (the event log's ``pre``) to its end, as a user would to read the last lines."""
        found = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)}); if (e) e.scrollTop = e.scrollHeight; return !!e; }})()"
        )
        assert found, f"no {selector!r} on the page"

    def scroll_to_line(self, prefix: str) -> None:
        """Scroll the element whose own text starts with ``prefix`` to the top of its pane."""
        xpath = json.dumps("//*[starts-with(normalize-space(text()), '" + prefix + "')]")
        found = self.evaluate(
            f"(() => {{ const r = document.evaluate({xpath}, document, null, "
            "XPathResult.FIRST_ORDERED_NODE_TYPE, null).singleNodeValue; "
            "if (r) r.scrollIntoView({block: 'start'}); return !!r; })()"
        )
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
