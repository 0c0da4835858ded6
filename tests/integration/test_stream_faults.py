"""An upstream that dies mid-stream, through a real mitmdump with the addon.

A raw-socket upstream on 127.0.0.1 answers an Anthropic streaming request with HTTP/1.1 chunked
SSE, then closes (FIN) or resets (RST) the connection in the middle: inside a held tool_use
block, or inside a plain text event. Every byte the proxy received must reach the client, in
order and unchanged, before the client's connection ends; the saved flow's record says so.
Clients: a raw-socket HTTP/1.1 client (decoding chunks; the last chunk never comes: the
answer was cut), httpx over TLS, and curl over HTTP/2 + TLS.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time

import pytest

import procs
from fakeup.raw import REQUEST
from fakeup.raw import ChunkedUpstream
from fakeup.raw import dechunk
from fakeup.raw import ev

pytestmark = pytest.mark.integration

HEAD = (
    ev({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}})
    + ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    + b"".join(
        ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": f"word {i} "}})
        for i in range(20)
    )
)

IN_TOOL_BLOCK = (
    HEAD
    + ev({"type": "content_block_stop", "index": 0})
    + ev(
        {
            "type": "content_block_start",
            "index": 1,
            "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
        }
    )
    + ev({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"comma'}})
)
IN_TEXT_EVENT = (
    HEAD + b'event: content_block_delta\ndata: {"type": "content_block_delta", "index": 0, "delta": {"type": "text_'
)
IN_TOOL_EVENT = IN_TOOL_BLOCK + b'event: content_block_delta\ndata: {"type": "content_block_delta", "ind'


def fetch(port: int, request: bytes = REQUEST) -> tuple[int, bytes, bool]:
    """(status, de-chunked body bytes, whether the terminating chunk came)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=15)
    s.sendall(
        b"POST /v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(request), request)
    )
    raw = b""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        try:
            data = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            break
        if not data:
            break
        raw += data
    s.close()
    head, _, rest = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ")[1])
    assert b"transfer-encoding: chunked" in head.lower()
    body, ended = dechunk(rest)
    return status, body, ended


@pytest.mark.parametrize("reset, save", [(False, True), (True, False)], ids=["fin-saving", "rst-not-saving"])
@pytest.mark.parametrize(
    "body",
    [IN_TOOL_BLOCK, IN_TEXT_EVENT, IN_TOOL_EVENT],
    ids=["inside-held-tool-block", "inside-text-event", "inside-tool-event"],
)
def test_every_received_byte_reaches_the_client_when_the_upstream_dies(tmp_path, body, reset, save):
    upstream = ChunkedUpstream(body, reset=reset)
    proxy = procs.start_mitmdump(upstream.url, save_path=tmp_path / "flows.mitm" if save else None)
    try:
        status, got, ended = fetch(proxy.port)
        assert status == 200
        assert not ended  # the answer was cut: the client must not see a clean end
        assert got == body, f"client got {len(got)} of {len(body)} bytes"
        if save:
            flows = proxy.flows()
            assert len(flows) == 1
            record = flows[0].metadata["toolvocab"]
            notes = " | ".join(record["notes"])
            assert "passed through: the upstream ended the stream mid-way; the client got the " in notes, notes
            assert "bytes received and not yet sent as they came" in notes, notes
            assert flows[0].marked == ":warning:"
            assert flows[0].response.raw_content == body  # the saved flow has what the client got
        # mitmdump says so, at warn: why, and what the client got
        assert "toolvocab: passed through (could not repair): the upstream ended the stream mid-way" in proxy.output()
    finally:
        proxy.stop()
        upstream.stop()


@pytest.mark.parametrize("reset", [False, True], ids=["fin", "rst"])
def test_an_alias_held_when_the_upstream_dies_reaches_the_client_named_back(tmp_path, reset):
    """The client declares ``files.read`` (a dot, which the upstream rejects): it goes up under
    an alias, and the upstream dies inside a held call of that alias. The client gets every byte
    received, as it came but for that name, given back (an alias it never declared is no tool it
    can run; as at a stall); the record says so. Was: the held block went out with the alias."""
    import json

    from toolvocab.engine.grammar import GRAMMARS
    from toolvocab.engine.grammar import alias

    tool = {"name": "files.read", "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}
    request = json.dumps(
        {
            "model": "m",
            "max_tokens": 100,
            "stream": True,
            "tools": [tool],
            "messages": [{"role": "user", "content": "hi"}],
        }
    ).encode()
    upstream_name = alias("files.read", GRAMMARS["anthropic"], {"files.read"})
    block = {"type": "tool_use", "id": "toolu_1", "name": upstream_name, "input": {}}
    body = (
        HEAD
        + ev({"type": "content_block_stop", "index": 0})
        # compact, as the proxy writes the event it gives the name back in
        + b"event: content_block_start\ndata: %s\n\n"
        % json.dumps(
            {"type": "content_block_start", "index": 1, "content_block": block}, separators=(",", ":")
        ).encode()
        + ev({"type": "content_block_delta", "index": 1, "delta": {"type": "input_json_delta", "partial_json": '{"pa'}})
    )
    upstream = ChunkedUpstream(body, reset=reset)
    proxy = procs.start_mitmdump(upstream.url, save_path=tmp_path / "flows.mitm")
    try:
        status, got, ended = fetch(proxy.port, request)
        assert status == 200 and not ended
        assert got == body.replace(upstream_name.encode(), b"files.read"), got[-300:]
        record = proxy.flows()[-1].metadata["toolvocab"]
        assert any(
            "the upstream ended the stream mid-way" in n and "but for names given back (files.read)" in n
            for n in record["notes"]
        ), record["notes"]
    finally:
        proxy.stop()
        upstream.stop()


def test_every_received_byte_reaches_a_tls_client_when_the_upstream_dies():
    # The client speaks TLS to mitmdump: the rest goes through mitmproxy's TLS layer, not
    # around it (a raw write would corrupt the TLS stream).
    import httpx

    upstream = ChunkedUpstream(IN_TOOL_BLOCK, reset=True)
    proxy = procs.start_mitmdump(upstream.url)
    try:
        got, ended = b"", True
        with httpx.Client(verify=False, timeout=15) as client:
            try:
                with client.stream(
                    "POST",
                    f"https://127.0.0.1:{proxy.port}/v1/messages",
                    content=REQUEST,
                    headers={"content-type": "application/json"},
                ) as resp:
                    assert resp.status_code == 200
                    for data in resp.iter_raw():
                        got += data
            except httpx.RemoteProtocolError as exc:
                ended = False  # the cut answer ends without its last chunk
                assert "incomplete chunked read" in str(exc)
        assert not ended
        assert got == IN_TOOL_BLOCK, f"client got {len(got)} of {len(IN_TOOL_BLOCK)} bytes"
    finally:
        proxy.stop()
        upstream.stop()


@pytest.mark.skipif(shutil.which("curl") is None, reason="needs curl")
@pytest.mark.parametrize("body", [IN_TOOL_BLOCK, IN_TEXT_EVENT], ids=["inside-held-tool-block", "inside-text-event"])
def test_every_received_byte_reaches_an_http2_client_when_the_upstream_dies(tmp_path, body):
    # HTTP/2 over TLS to mitmdump (curl --http2; mitmproxy negotiates h2 with the client, HTTP/1.1
    # with the upstream): the rest goes out as a DATA frame on the client's stream before
    # mitmproxy resets it (curl then exits 92, "stream error").
    upstream = ChunkedUpstream(body, reset=False)
    proxy = procs.start_mitmdump(upstream.url)
    out = tmp_path / "body"
    try:
        done = subprocess.run(
            [
                "curl",
                "-sk",
                "--http2",
                "-o",
                str(out),
                "-w",
                "%{http_version}",
                "-X",
                "POST",
                "-H",
                "content-type: application/json",
                "--data-binary",
                REQUEST.decode(),
                f"https://127.0.0.1:{proxy.port}/v1/messages",
            ],
            capture_output=True,
            timeout=30,
        )
        assert done.stdout == b"2"  # HTTP/2 it was
        assert done.returncode != 0  # the cut stream does not end cleanly
        got = out.read_bytes()
        assert got == body, f"client got {len(got)} of {len(body)} bytes"
    finally:
        proxy.stop()
        upstream.stop()


def test_an_http2_client_that_cancels_a_held_stream_gets_no_traceback():
    """An HTTP/2 client cancels its stream (RST_STREAM CANCEL: the user interrupts the turn)
    while a tool_use block is held and the upstream is silent: mitmproxy ends the flow with an
    error, and the rest of the stream has no stream to go to. mitmdump says so in the record
    and prints no traceback (``send_to_client`` on a reset stream raised StreamClosedError)."""
    import ssl

    import h2.config
    import h2.connection
    import h2.errors
    import h2.events

    upstream = ChunkedUpstream(IN_TOOL_BLOCK, pause=4.0, after=b"")
    proxy = procs.start_mitmdump(upstream.url)
    try:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        ctx.set_alpn_protocols(["h2"])
        with ctx.wrap_socket(socket.create_connection(("127.0.0.1", proxy.port), timeout=10)) as s:
            assert s.selected_alpn_protocol() == "h2"
            c = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
            c.initiate_connection()
            c.send_headers(
                1,
                [
                    (":method", "POST"),
                    (":path", "/v1/messages"),
                    (":scheme", "https"),
                    (":authority", "127.0.0.1"),
                    ("content-type", "application/json"),
                    ("content-length", str(len(REQUEST))),
                ],
            )
            c.send_data(1, REQUEST, end_stream=True)
            s.sendall(c.data_to_send())
            s.settimeout(0.1)
            got, reset, start = b"", False, time.monotonic()
            while time.monotonic() - start < 3.0:
                if not reset and b"word 19" in got:
                    c.reset_stream(1, h2.errors.ErrorCodes.CANCEL)  # the text came; the tool block is held
                    s.sendall(c.data_to_send())
                    reset = True
                    start = time.monotonic() - 2.0  # one more second for mitmdump to handle it
                try:
                    data = s.recv(65536)
                except socket.timeout:
                    continue
                if not data:
                    break
                for event in c.receive_data(data):
                    if isinstance(event, h2.events.DataReceived):
                        got += event.data
                        c.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                s.sendall(c.data_to_send())
        assert reset, f"the text before the tool block never came: {got[-200:]!r}"
        assert b'"tool_use"' not in got  # held when the client went away
    finally:
        proxy.stop()
        upstream.stop()
    output = proxy.output()
    assert "Traceback" not in output and "could not deliver the rest" not in output, output[-3000:]
