"""mitmweb answers the debugging questions, as a user sees it in a browser: which flows changed,
which calls were left (the client will reject them), which toolvocab passed through (could not
repair), and why — in the flow list by default; the commands' text readable; a replayed flow's
record about the replay.

A real ``mitmweb -s addon/toolvocab.py`` (no ``web_columns`` set: mitmweb's defaults) in reverse
mode in front of ``tests/fake_upstream.py`` gets three flows: the anthropic SDK's request whose
answer calls ``shell`` (repaired to ``Bash``), one whose answer calls ``frobnicate`` (left), and a
streamed answer whose tool block repeats a key (passed through). Headless Chromium (Debian's
``chromium``, driven over the DevTools protocol: ``tests/webui.py``) reads what the page renders
(``document.body.innerText``): the flow list; the documented filters typed into the
search box; Options → Display Command Bar / Display Event Log; ``toolvocab.stats``,
``toolvocab.explain`` and ``toolvocab.tools`` typed into the command bar; the flow's Replay button
and the record the Request and Response tabs show afterwards. mitmproxy 11 and 12 (whichever this
Python has). Every wait is bounded; every process is stopped by its PID.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import httpx
import pytest

import procs
from sdk import anthropic_client
from webui import CHROMIUM
from webui import MITMWEB
from webui import Chromium
from webui import Mitmweb

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        not CHROMIUM.exists(),
        reason="Debian's chromium is not installed (/usr/bin/chromium): apt-get install -y chromium",
    ),
    pytest.mark.skipif(not MITMWEB.exists(), reason=f"mitmweb not found next to {sys.executable}"),
]

BASH = {
    "name": "Bash",
    "description": "Run a shell command and return what it printed.",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "anthropic"
#: A streamed answer whose tool block's start event repeats "name": toolvocab passes it through.
REPEATED_KEY = (
    (FIXTURES / "stream-foreign-tool.sse").read_bytes().replace(b'"name":"shell"', b'"name":"Bash","name":"shell"', 1)
)
COMMAND_INPUT = ".command-input input"
SEARCH = 'input[placeholder="Search"]'
EVENT_LOG = ".eventlog pre"


def wait_until(predicate, what, timeout: float = 15.0):
    """``predicate()`` once it is true (polled every 0.2 s for ``timeout`` s); else ``TimeoutError(what)``
    (``what`` a text, or a callable giving it then)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise TimeoutError(what() if callable(what) else what)
        time.sleep(0.2)


def list_rows(text: str) -> list[str]:
    """The flow list's rows as rendered (one line per flow: URL, method, status, …, comment)."""
    return [line.rstrip() for line in text.splitlines() if "/v1/messages\t" in line]


def command(browser: Chromium, line: str) -> str:
    """Type ``line`` into the command bar, press Enter; the command's rendered result."""
    browser.type_into(COMMAND_INPUT, line, enter=True)

    def result():
        text = browser.text()
        start = text.rfind(f"$ {line}\n")
        return text[start + len(line) + 3 :].split("\n", 1)[0] if start >= 0 else None

    return wait_until(result, f"no result for {line!r}")


def event_log(browser: Chromium, needle: str) -> str:
    """The event log's rendered text once *it* shows ``needle`` (scrolled to its end). Only the log
    is searched: the flow's Request tab, drawn above it, can show the same text before the log does."""

    def shown():
        browser.scroll_to_bottom(EVENT_LOG)
        text = browser.text()
        log = text[text.rfind("Eventlog") :]
        return log if needle in log else None

    return wait_until(shown, f"the event log never showed {needle!r}: {browser.text()[-3000:]}")


def test_mitmweb_shows_each_state_its_reason_readable_commands_and_a_truthful_replay(tmp_path):
    pytest.importorskip("websockets.sync.client", reason="the websockets package drives Chromium over CDP")
    fake = procs.start_fake_upstream(tool_name="shell", tool_args={"command": ["bash", "-lc", "git status"]})
    web: Mitmweb | None = None
    browser: Chromium | None = None
    try:
        web = Mitmweb(fake.url, tmp_path, columns=None)  # mitmweb's own default columns
        client = anthropic_client(web.proxy_url)
        request = {
            "model": "claude-fixture-1",
            "max_tokens": 256,
            "tools": [BASH],
            "messages": [{"role": "user", "content": "What changed in the repository?"}],
        }
        changed = client.messages.create(**request)
        assert [b.name for b in changed.content if b.type == "tool_use"] == ["Bash"]
        fake.config(tool_name="frobnicate", tool_args={"target": "x"})
        left = client.messages.create(**request)
        assert [b.name for b in left.content if b.type == "tool_use"] == ["frobnicate"]
        fake.enqueue(REPEATED_KEY, headers={"content-type": "text/event-stream"})
        with httpx.Client(trust_env=False, timeout=30) as http:
            passed = http.post(
                web.proxy_url + "/v1/messages",
                json={**request, "stream": True},
                headers={"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-test"},
            )
        assert passed.content == REPEATED_KEY  # passed through as it came
        flows = wait_until(
            lambda: (lambda fs: fs if len(fs) == 3 else None)([f for f in web.api("/flows") if f.get("comment")]),
            "three commented flows",
        )
        by_state = {f["comment"].split(":", 1)[0]: f for f in flows}
        assert set(by_state) == {"changed", "left", "passed through"}, [f["comment"] for f in flows]

        browser = Chromium(tmp_path)
        # 1. the flow list, as mitmweb starts: each flow's state and reason, first words first
        browser.navigate(web.page_url("/flows"))
        text = browser.wait_text(["Comment", "passed through: an event's data repeats a key"])
        rows = list_rows(text)
        assert len(rows) == 3, rows
        assert rows[0].endswith("\tchanged: shell→Bash (capability); prompt names 1 tool"), rows[0]
        assert "\tleft: frobnicate (not declared) — the client will reject this call" in rows[1], rows[1]
        assert "\tpassed through: an event's data repeats a key" in rows[2], rows[2]
        browser.screenshot(tmp_path / "mitmweb-states.png")

        # 2. one filter per state, typed into the search box (README, "What to watch"): the
        # comment's first words (a marker is matched as its emoji by mitmweb 11, which filters in
        # the browser, and as its shortcode by 12, which filters in mitmproxy: not one spelling)
        for spec, state in (
            ("~comment ^changed:", "changed"),
            ("~comment ^left:", "left"),
            ("~comment ^passed", "passed through"),
        ):
            browser.type_into(SEARCH, spec)
            # the list shows the previous filter's row until the new filter is applied (mitmweb 12
            # filters in mitmproxy, a round trip away): wait for this state's row, alone
            wait_until(
                lambda: (lambda rows: len(rows) == 1 and f"\t{state}: " in rows[0])(list_rows(browser.text())),
                lambda: f"{spec}: one row, in state {state}; shown: {list_rows(browser.text())}",
            )
        browser.type_into(SEARCH, "~marked")
        wait_until(lambda: len(list_rows(browser.text())) == 3, "~marked: every state")
        browser.type_into(SEARCH, "")

        # 3. the command bar and the event log (Options → Display …), and the commands' text
        browser.click_text("Options")
        browser.check_option("Display Command Bar")
        browser.check_option("Display Event Log")
        wait_until(
            lambda: browser.evaluate(f"!!document.querySelector({json.dumps(COMMAND_INPUT)})"), "the command bar"
        )
        result = command(browser, "toolvocab.stats @all")
        assert result.startswith(
            '"toolvocab.stats: 3 flows with a record — 3 handled (0 in observe mode), 0 not handled'
        )
        assert "\\n" not in result and result.endswith('lines in the event log (Options → Display Event Log)"'), result
        log = event_log(browser, "flows by state: changed 1, left 1, passed through 1")
        assert "calls: 2 seen, 0 kept, 1 repaired, 1 left" in log and "\\n" not in log
        result = command(browser, "toolvocab.explain @all")
        assert "\\n" not in result and result.startswith('"toolvocab.explain: 3 flows —'), result
        log = event_log(browser, "frobnicate: NOT repaired, left as answered at step none")
        assert "state: left: frobnicate (not declared) — the client will reject this call" in log
        assert "state: passed through: an event's data repeats a key" in log
        browser.click_row("changed: shell→Bash")  # the focused flow (@focus)
        browser.click_tab("Request")
        browser.wait_text(["toolvocab —"])
        result = command(browser, "toolvocab.tools @focus anthropic")
        assert "\\n" not in result and '\\"' not in result, result
        log = event_log(browser, '"name": "Bash"')
        assert '"shape": "anthropic",' in log  # JSON as JSON, one key a line
        browser.screenshot(tmp_path / "mitmweb-commands.png")

        # 4. Replay: the record the flow shows describes the replay, not the first pass
        flow_id = by_state["changed"]["id"]
        fake.config(tool_name="shell", tool_args={"command": ["bash", "-lc", "git status"]})  # the same answer again
        browser.click_text("Flow")  # the menu of the focused flow
        browser.click_text("Replay")
        wait_until(
            lambda: any(
                f["id"] == flow_id
                and f.get("is_replay") == "request"
                and f.get("response")
                and f["comment"] == "changed: shell→Bash (capability)"
                for f in web.api("/flows")
            ),
            lambda: (
                f"the replay's record: {[(f['id'][:8], f.get('is_replay'), f['comment']) for f in web.api('/flows')]}"
            ),
        )
        browser.click_tab("Response")  # mitmweb fetches a view again when its tab is drawn again
        browser.wait_text(
            ["Body below: the answer after toolvocab, at the replay (mitmproxy received it, no client did)."]
        )
        browser.click_tab("Request")
        text = browser.wait_text(["Body below: the request as sent upstream at the replay."])
        assert "replay (mitmproxy's replay.client): the request replayed is the one this flow held" in text
        assert "state: changed: shell→Bash (capability)\n" in text
        assert "system prompt: unchanged" in text  # the replayed request already held the sentence
        assert "The client's original" not in text and "added to the system prompt:" not in text
        browser.scroll_to_line("toolvocab —")
        browser.screenshot(tmp_path / "mitmweb-replay.png")
        upstream = fake.requests()
        assert upstream[-1]["body_b64"] == upstream[0]["body_b64"]  # the replay sent what the upstream got first
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
