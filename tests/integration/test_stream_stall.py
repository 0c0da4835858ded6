"""An upstream that stalls inside a held tool block, through a real mitmdump with the addon
(the stall bound ``toolvocab_hold_timeout``).

A raw-socket upstream on 127.0.0.1 answers an Anthropic streaming request with HTTP/1.1 chunked
SSE: text, then a ``tool_use`` block's start and first argument fragment (the addon holds the
block to repair it: ``shell`` is not declared, ``Bash`` is), then it says nothing for
:data:`PAUSE` seconds, then sends the rest and ends. With ``toolvocab_hold_timeout=0.5`` the
client must have every byte sent before the pause while the pause lasts (a bounded wait), and,
once the stream ended, the whole answer byte-identical to the upstream's (after a stall the
block goes as it came and the rest is read as usual: nothing in it to repair). The control: with the bound at 0 (never) nothing
arrives during the pause and the call is repaired. Clients: a raw HTTP/1.1 socket, httpx over
TLS (HTTP/1.1) and httpx over TLS with HTTP/2, so the release goes through mitmproxy's TLS layer
and its HTTP/2 connection. Run on mitmproxy 11 (``.venv``) and 12 (``.venv-312``).
"""

from __future__ import annotations

import os
import re
import select
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import procs
from fakeup.raw import REQUEST
from fakeup.raw import ChunkedUpstream
from fakeup.raw import dechunk
from fakeup.raw import ev

pytestmark = pytest.mark.integration

PAUSE = 3.0  # seconds of upstream silence inside the held block
BOUND = 0.5  # toolvocab_hold_timeout


BEFORE = (
    ev({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}})
    + ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    + ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Listing."}})
    + ev({"type": "content_block_stop", "index": 0})
    + ev(
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
        }
    )
    + ev(
        {
            "type": "content_block_delta",
            "index": 1,
            "delta": {"type": "input_json_delta", "partial_json": '{"command": "ls'},
        }
    )
)
AFTER = (
    ev({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": ' -la"}'}})
    + ev({"type": "content_block_stop", "index": 1})
    + ev({"type": "message_delta", "delta": {"stop_reason": "tool_use"}})
    + ev({"type": "message_stop"})
)
BODY = BEFORE + AFTER


def readme_stall_line() -> re.Pattern[str]:
    """The stall's log line as README.md shows it, its figures, framing and client made general."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    line = next(x for x in readme.splitlines() if x.startswith("toolvocab: passed through (could not repair):"))
    pattern = re.escape(line.split(" · ")[0])
    pattern = pattern.replace(re.escape("(HTTP/1.1 chunk)"), r"\([^)]+\)")
    pattern = re.sub(r"\d+(?:\\\.\d+)?", r"[\\d.]+", pattern)
    return re.compile(pattern + " · ")


def stalling_upstream() -> ChunkedUpstream:
    """Answers each request with :data:`BEFORE` in 100-byte HTTP/1.1 chunks, then
    :data:`PAUSE` s of silence, then :data:`AFTER` and the last chunk (``resumed`` holds the
    monotonic time the bytes after the pause were sent)."""
    return ChunkedUpstream(BEFORE, pause=PAUSE, after=AFTER)


def fetch_raw(port: int) -> list[tuple[float, bytes]]:
    """Plain HTTP/1.1: the de-chunked body as (monotonic time, body so far) after each read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    s.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(REQUEST), REQUEST)
    )
    raw, seen = b"", []
    deadline = time.monotonic() + PAUSE + 15
    try:
        while time.monotonic() < deadline:
            data = s.recv(65536)
            if not data:
                break
            raw += data
            head, sep, rest = raw.partition(b"\r\n\r\n")
            if not sep:
                continue
            assert b"transfer-encoding: chunked" in head.lower()
            body, ended = dechunk(rest)
            seen.append((time.monotonic(), body))
            if ended:
                break
    finally:
        s.close()
    return seen


def fetch_httpx(port: int) -> list[tuple[float, bytes]]:
    """httpx over TLS (HTTP/1.1): (monotonic time, body so far) after each read."""
    import httpx

    seen, body = [], b""
    with httpx.Client(verify=False, timeout=PAUSE + 15) as client:
        with client.stream(
            "POST",
            f"https://127.0.0.1:{port}/v1/messages",
            content=REQUEST,
            headers={"content-type": "application/json"},
        ) as resp:
            assert resp.status_code == 200 and resp.http_version == "HTTP/1.1"
            for data in resp.iter_raw():
                body += data
                seen.append((time.monotonic(), body))
    return seen


def fetch_curl_http2(port: int, tmp_path) -> list[tuple[float, bytes]]:
    """curl --http2 over TLS, unbuffered (-N): (monotonic time, body so far) after each read of
    its stdout (the HTTP version goes to a file); curl is stopped by PID at the end."""
    version = tmp_path / "http_version"
    with open(version, "wb") as err:
        proc = subprocess.Popen(
            [
                "curl",
                "-skN",
                "--http2",
                "-o",
                "-",
                "-w",
                "%{stderr}%{http_version}",
                "-X",
                "POST",
                "-H",
                "content-type: application/json",
                "--data-binary",
                REQUEST.decode(),
                f"https://127.0.0.1:{port}/v1/messages",
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
        )
        assert proc.stdout is not None
        seen, body = [], b""
        deadline = time.monotonic() + PAUSE + 15
        try:
            fd = proc.stdout.fileno()
            while time.monotonic() < deadline:
                ready, _, _ = select.select([fd], [], [], 0.1)
                if not ready:
                    continue
                data = os.read(fd, 65536)
                if not data:
                    break
                body += data
                seen.append((time.monotonic(), body))
            proc.wait(timeout=5)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=5)
            proc.stdout.close()
    assert proc.returncode == 0
    assert version.read_bytes() == b"2"  # HTTP/2 it was
    return seen


CLIENTS = {
    "http1": fetch_raw,
    "tls-http1": fetch_httpx,
    "tls-http2": fetch_curl_http2,
}


@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_held_block_reaches_the_client_while_the_upstream_stalls(tmp_path, client):
    if client == "tls-http2" and shutil.which("curl") is None:
        pytest.skip("needs curl")
    upstream = stalling_upstream()
    proxy = procs.start_mitmdump(
        upstream.url, options={"toolvocab_hold_timeout": str(BOUND)}, save_path=tmp_path / "flows.mitm"
    )
    try:
        seen = fetch_curl_http2(proxy.port, tmp_path) if client == "tls-http2" else CLIENTS[client](proxy.port)
        assert upstream.resumed is not None
        during = [body for t, body in seen if t < upstream.resumed]
        # while the upstream was silent the client got everything sent before the pause
        assert during and during[-1] == BEFORE, (
            f"client had {len(during[-1]) if during else 0} of {len(BEFORE)} bytes during the pause"
        )
        first = next(t for t, body in seen if body == BEFORE)
        assert first < upstream.resumed - 1.0  # within the bound (plus margin), well before the pause ended
        assert seen[-1][1] == BODY  # the whole answer, byte-identical (the block let go at the stall)
        flows = proxy.flows()
        assert len(flows) == 1
        notes = " | ".join(flows[0].metadata["toolvocab"]["notes"])
        assert "passed through: the upstream sent no byte for " in notes, notes
        assert f"while a tool call was held (toolvocab_hold_timeout {BOUND:g}); the client got the " in notes, notes
        # the flow's state: its marker, its comment's first words, mitmdump's warn line
        assert flows[0].marked == ":warning:" and flows[0].comment.startswith(
            "passed through: the upstream sent no byte"
        )
        assert "toolvocab: passed through (could not repair): the upstream sent no byte for " in proxy.output()
        assert readme_stall_line().search(proxy.output()), (readme_stall_line().pattern, proxy.output())
        assert flows[0].response.raw_content == BODY  # the saved flow has what the client got
    finally:
        proxy.stop()
        upstream.stop()


def test_control_without_a_bound_the_block_waits_and_is_repaired():
    upstream = stalling_upstream()
    proxy = procs.start_mitmdump(upstream.url, options={"toolvocab_hold_timeout": "0"})
    try:
        seen = fetch_raw(proxy.port)
        assert upstream.resumed is not None
        during = [body for t, body in seen if t < upstream.resumed]
        assert (
            during
            and during[-1]
            == BEFORE[: BEFORE.index(b'event: content_block_start\ndata: {"type": "content_block_start", "index": 1')]
        )
        final = seen[-1][1]
        assert final != BODY and b'"name": "Bash"' in final.replace(b'"name":"Bash"', b'"name": "Bash"')
    finally:
        proxy.stop()
        upstream.stop()


def test_a_release_through_the_regular_proxy_over_tls_is_encrypted(tmp_path):
    """Regular mode (the client's ``HTTPS_PROXY``: CONNECT, then TLS to mitmproxy): the held
    bytes the stall bound writes to the client go through the client connection's TLS layer,
    which sits under the CONNECT stream of mitmproxy's HTTP layer. They went out unencrypted
    (the client: ``SSL: WRONG_VERSION_NUMBER``) when the layer walk did not look into the HTTP
    layer's streams."""
    import httpx

    upstream = ChunkedUpstream(BEFORE, pause=PAUSE, after=AFTER, tls=True)
    try:
        proxy = procs.start_mitmdump(
            None,
            options={"toolvocab_intercept": "all", "toolvocab_hold_timeout": str(BOUND)},
            extra_args=["--ssl-insecure"],
            home=tmp_path,
            timeout=30,
        )
    except BaseException:
        upstream.stop()
        raise
    try:
        seen, body = [], b""
        with httpx.Client(proxy=proxy.url, verify=False, trust_env=False, timeout=PAUSE + 15) as client:
            with client.stream(
                "POST", f"{upstream.url}/v1/messages", content=REQUEST, headers={"content-type": "application/json"}
            ) as resp:
                assert resp.status_code == 200
                for data in resp.iter_raw():
                    body += data
                    seen.append((time.monotonic(), body))
        assert upstream.resumed is not None
        during = [b for t, b in seen if t < upstream.resumed]
        assert during and during[-1] == BEFORE, f"client had {len(during[-1]) if during else 0} of {len(BEFORE)} bytes"
        assert body == BODY  # the whole answer, byte-identical, over the client's TLS
    finally:
        proxy.stop()
        upstream.stop()
    assert "toolvocab: passed through (could not repair): the upstream sent no byte for " in proxy.output()
