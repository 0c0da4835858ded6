"""A raw-socket upstream for transport faults: an Anthropic streaming answer in HTTP/1.1 chunks
that dies (FIN or RST) or stalls part-way, which ``http.server`` cannot script.

Used by tests/integration/test_stream_faults.py (the upstream dies mid-stream) and
tests/integration/test_stream_stall.py (the upstream goes silent inside a held tool block).
Also the Anthropic request both send (one undeclared-name repair target, ``Bash``), the
``event:``/``data:`` builder their bodies are written with, and the HTTP/1.1 chunk decoder
their clients read with.
"""

from __future__ import annotations

import json
import socket
import struct
import threading
import time

from fakeup.tls import server_context

TOOLS = [
    {
        "name": "Bash",
        "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    }
]
#: A streaming Anthropic Messages request body declaring the one tool ``Bash``.
REQUEST = json.dumps(
    {"model": "m", "max_tokens": 100, "stream": True, "tools": TOOLS, "messages": [{"role": "user", "content": "hi"}]}
).encode()

HEAD = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n"


def ev(obj: dict) -> bytes:
    """One Anthropic SSE event: ``event: <obj["type"]>`` and ``data:`` with ``json.dumps``'s
    default spacing, then a blank line."""
    return f"event: {obj['type']}\ndata: {json.dumps(obj)}\n\n".encode()


def dechunk(raw: bytes) -> tuple[bytes, bool]:
    """The body bytes of an HTTP/1.1 chunked stream so far (``raw`` starts after the header
    block; a chunk cut short gives what arrived of it), and whether the last chunk came."""
    body = b""
    while raw:
        line, sep, rest = raw.partition(b"\r\n")
        if not sep:
            break
        size = int(line, 16)
        if size == 0:
            return body, True
        if len(rest) < size + 2:
            body += rest[:size]
            break
        body += rest[:size]
        raw = rest[size + 2 :]
    return body, False


class ChunkedUpstream:
    """Listens on 127.0.0.1 (``url``) and answers every request (read to its Content-Length)
    with 200, ``text/event-stream`` and ``body`` in 100-byte HTTP/1.1 chunks, 2 ms apart. Then:

    - ``after is None`` (the upstream dies): 0.3 s (and ``pause``) later (the proxy has read
      everything) the connection closes without the last chunk: FIN, or RST when ``reset``;
    - otherwise (the upstream stalls): ``pause`` seconds of silence, then ``after`` as one chunk
      and the last chunk; ``resumed`` holds the monotonic time those bytes were sent.

    Every connection is served in its own thread (mitmdump connects upstream eagerly, also for
    its readiness probe; one that sends no request is closed). ``stop()`` ends the accept loop
    within 5 s and closes the socket.
    """

    def __init__(
        self, body: bytes, *, reset: bool = False, pause: float = 0.0, after: bytes | None = None, tls: bool = False
    ) -> None:
        self.body, self.reset, self.pause, self.after = body, reset, pause, after
        self.resumed: float | None = None
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.2)
        self.stopped = False
        self.tls = server_context() if tls else None  # HTTPS with a certificate made here
        self.url = f"{'https' if tls else 'http'}://127.0.0.1:{self.sock.getsockname()[1]}"
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopped:
            try:
                conn, _ = self.sock.accept()
            except socket.timeout:
                continue
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        if self.tls is not None:
            conn.settimeout(10)
            try:
                conn = self.tls.wrap_socket(conn, server_side=True)
            except OSError:
                conn.close()
                return
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                try:
                    more = conn.recv(65536)
                except OSError:
                    return
                if not more:
                    return
                data += more
            head, _, rest = data.partition(b"\r\n\r\n")
            length = next(
                int(l.split(b":")[1]) for l in head.split(b"\r\n") if l.lower().startswith(b"content-length:")
            )
            try:
                self._send(conn, rest, length)
            except OSError:
                return  # the proxy closed the connection (its client went away): nothing to answer

    def _send(self, conn: socket.socket, rest: bytes, length: int) -> None:
        while len(rest) < length:
            more = conn.recv(65536)
            if not more:
                return
            rest += more
        conn.sendall(HEAD)
        for i in range(0, len(self.body), 100):
            piece = self.body[i : i + 100]
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
            time.sleep(0.002)
        if self.after is None:
            time.sleep(0.3 + self.pause)  # the proxy has read everything before the connection dies
            if self.reset:
                conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            return
        time.sleep(self.pause)
        self.resumed = time.monotonic()
        conn.sendall(b"%x\r\n%s\r\n0\r\n\r\n" % (len(self.after), self.after))
        time.sleep(0.5)

    def stop(self) -> None:
        self.stopped = True
        self.thread.join(5)
        self.sock.close()
