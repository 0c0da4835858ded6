"""mitmproxy reloads a ``-s`` script when its file changes (``mitmproxy/addons/script.py`` looks
at its mtime every second; a ``git pull`` while the proxy runs is enough): the old addons get
``done``, the reloaded script's new ones ``load``, ``configure`` and ``running``. Flows in flight
keep their state across it (``toolvocab.addons.state.hand_over``): a call held in a stream is
repaired when the upstream goes on, and given back whole when it dies, with the flow's record and
log line; a Codex WebSocket turn held across it completes in order. Through a real mitmdump with a
copy of the script in a temporary folder (touching the repository's own would reload every other
test's proxy).
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
from test_stream_stall import AFTER
from test_stream_stall import BEFORE

import procs
from fakeup.raw import REQUEST
from fakeup.raw import ChunkedUpstream
from fakeup.raw import dechunk

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
PAUSE = 5.0  # the upstream's silence inside the held block: room for the reload (about 1-2 s)


def reloadable_script(folder: Path) -> Path:
    """A script that loads toolvocab's addons as ``addon/toolvocab.py`` does, at ``folder``."""
    script = folder / "toolvocab_reloaded.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "from toolvocab.addons import default_addons  # noqa: E402\n\naddons = default_addons()\n"
    )
    return script


def reload(script: Path, proxy: procs.MitmdumpHandle) -> None:
    """Change the script's mtime and wait (at most 10 s) until mitmdump has loaded it again."""
    loads = proxy.output().count("Loading script")
    later = time.time() + 5
    os.utime(script, (later, later))
    deadline = time.monotonic() + 10
    while proxy.output().count("Loading script") <= loads:
        assert time.monotonic() < deadline, f"mitmdump did not reload the script\n{proxy.output()}"
        time.sleep(0.1)


@pytest.mark.parametrize("end", ["goes on", "dies"])
def test_a_call_held_across_a_script_reload_is_repaired_or_given_back_whole(tmp_path, end):
    upstream = ChunkedUpstream(BEFORE, pause=PAUSE, after=AFTER if end == "goes on" else None)
    script = reloadable_script(tmp_path)
    try:
        proxy = procs.start_mitmdump(upstream.url, script=script, options={"toolvocab_hold_timeout": "0"})
    except BaseException:
        upstream.stop()
        raise
    try:
        with socket.create_connection(("127.0.0.1", proxy.port), timeout=PAUSE + 10) as client:
            client.sendall(
                b"POST /v1/messages HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(REQUEST), REQUEST)
            )
            raw = b""
            while b"Listing." not in raw:  # the text went out; the tool block is held
                raw += client.recv(65536)
            reload(script, proxy)
            while not dechunk(raw.partition(b"\r\n\r\n")[2])[1]:
                more = client.recv(65536)
                if not more:
                    break
                raw += more
        body, ended = dechunk(raw.partition(b"\r\n\r\n")[2])
    finally:
        proxy.stop()
        upstream.stop()
    output = proxy.output()
    assert "Traceback" not in output, output
    if end == "goes on":
        assert ended and b'"name": "Bash"' in body.replace(b'"name":"Bash"', b'"name": "Bash"'), body
        assert "toolvocab: shell→Bash (capability)" in output, output
    else:
        assert body == BEFORE, body  # every byte the upstream sent, the held block included
        assert "toolvocab: passed through (could not repair): the upstream ended the stream mid-way" in output, output
