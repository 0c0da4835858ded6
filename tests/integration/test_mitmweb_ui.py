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

import sys

import pytest

import procs
from sdk import anthropic_client
from webui import CHROMIUM
from webui import MITMWEB
from webui import WINDOW
from webui import Chromium
from webui import Mitmweb
from webui import png_facts

pytestmark = pytest.mark.integration

BASH = {
    "name": "Bash",
    "description": "Run a shell command and return what it printed.",
    "input_schema": {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "The command line to run."}},
        "required": ["command"],
    },
}


# ------------------------------------------------------------------------------------ the test
@pytest.mark.skipif(
    not CHROMIUM.exists(), reason="Debian's chromium is not installed (/usr/bin/chromium): apt-get install -y chromium"
)
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
            model="claude-fixture-1",
            max_tokens=256,
            tools=[BASH],
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
            "changed: shell→Bash (capability)",  # the comment, in the flow list
            "Tool calls in the answer",  # the toolvocab view
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
