"""The fake upstream's HTTP server: the dialect routes, the handler (control endpoints, request
log, chunked transport) and ``make_server`` / ``FakeUpstream`` (in-process use)."""

from __future__ import annotations

import base64
import json
import re
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs
from urllib.parse import urlsplit

from fakeup.anthropic import anthropic_messages
from fakeup.gemini import GEMINI_PATH
from fakeup.gemini import gemini_generate
from fakeup.openai_chat import openai_chat_completions
from fakeup.openai_responses import openai_responses
from fakeup.state import FakeState
from fakeup.wire import Handler
from fakeup.wire import Reply
from fakeup.wire import Request
from fakeup.wire import decode_body
from fakeup.wire import json_reply

# ------------------------------------------------------------------------ model lists
FAKE_MODELS = (
    "claude-fake",
    "claude-sonnet-4-5",
    "fake-model",
    "gpt-5.5",
    "qwen3-coder-plus",
    "gemini-2.5-pro",
    "gemini-2.5-flash",
)


def list_models(req: Request, cfg: dict) -> Reply:
    """One list for every dialect: ``data`` (Anthropic/OpenAI shape) and ``models`` (Gemini)."""
    data = [
        {
            "type": "model",
            "id": m,
            "display_name": m,
            "created_at": "2025-01-01T00:00:00Z",
            "object": "model",
            "created": 1735689600,
            "owned_by": "fake",
        }
        for m in FAKE_MODELS
    ]
    models = [
        {
            "name": f"models/{m}",
            "baseModelId": m,
            "version": "001",
            "displayName": m,
            "inputTokenLimit": 1048576,
            "outputTokenLimit": 65536,
            "supportedGenerationMethods": ["generateContent", "streamGenerateContent", "countTokens"],
        }
        for m in FAKE_MODELS
        if m.startswith("gemini")
    ]
    return json_reply(
        200,
        {
            "data": data,
            "object": "list",
            "has_more": False,
            "first_id": data[0]["id"],
            "last_id": data[-1]["id"],
            "models": models,
        },
        summary="models",
    )


#: Dialect routes: ``re.fullmatch`` on the request path (query string removed) -> handler per
#: method. The first matching pattern wins.
ROUTES: dict[str, dict[str, Handler]] = {
    r"/v1/messages": {"POST": anthropic_messages},
    r"(/[^:]*)?/chat/completions": {"POST": openai_chat_completions},
    r"(/[^:]*)?/responses": {"POST": openai_responses},
    GEMINI_PATH.pattern: {"POST": gemini_generate},
    r"(/v1|/v1beta|/v1alpha|/openai/v1)?/models/?": {"GET": list_models},
}


# ------------------------------------------------------------------------------ server
class FakeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "toolvocab-fake-upstream/1.0"
    state: FakeState  # set on the subclass built by make_server()

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet; summaries go to stderr
        pass

    def setup(self) -> None:
        super().setup()
        try:  # small writes go out as separate TCP segments, so chunk splits survive
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError:
            pass

    # -- reading
    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            data = bytearray()
            while True:
                line = self.rfile.readline(65537)
                if not line:
                    break
                size = int(line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data += self.rfile.read(size)
                self.rfile.readline(65537)
            return bytes(data)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n > 0 else b""

    # -- writing
    def _write_reply(self, reply: Reply, record: dict | None) -> None:
        cfg = self.state.snapshot_config()
        size = cfg["chunk_size"] if reply.chunk_size is None else int(reply.chunk_size or 0)
        delay = cfg["chunk_delay"] if reply.chunk_delay is None else float(reply.chunk_delay or 0.0)
        chunks = reply.chunks
        if chunks is None and size > 0:
            chunks = [reply.body[i : i + size] for i in range(0, len(reply.body), size)]
        no_body = self.command == "HEAD" or reply.status in (204, 304) or 100 <= reply.status < 200
        self.send_response(reply.status)
        for k, v in reply.headers:
            if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                self.send_header(k, v)
        if no_body:
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif chunks is None:
            self.send_header("Content-Length", str(len(reply.body)))
            self.end_headers()
            self.wfile.write(reply.body)
        else:
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            pieces = [c for c in chunks if c]  # an empty chunk would end the body early
            for i, piece in enumerate(pieces):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                if delay > 0 and i < len(pieces) - 1:
                    time.sleep(delay)
            self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()
        if record is not None:
            with self.state.lock:
                record["reply"]["finished_at"] = time.time()
            self.state.write_record(record)

    def _control(self, path: str, raw: bytes) -> Reply | None:
        if not path.startswith("/__fake/"):
            return None
        try:
            body = json.loads(raw) if raw.strip() else {}
        except ValueError:
            return json_reply(400, {"error": "control body is not JSON"})
        name = path[len("/__fake/") :]
        if name == "config":
            if self.command == "POST":
                return json_reply(200, self.state.update_config(body))
            return json_reply(200, self.state.snapshot_config())
        if name == "enqueue" and self.command == "POST":
            return json_reply(200, {"queued": self.state.enqueue(body)})
        if name == "requests":
            return Reply(200, [("Content-Type", "application/json")], self.state.records_json())
        if name == "reset" and self.command == "POST":
            self.state.reset()
            return json_reply(200, {"reset": True})
        return json_reply(404, {"error": f"unknown control endpoint {self.command} {path}"})

    def _route(self, req: Request) -> Reply:
        cfg = self.state.snapshot_config()
        if req.method == "HEAD":
            return Reply(200, [("Content-Type", "text/plain")], b"", summary="head", source="builtin")
        for pattern, methods in ROUTES.items():
            if re.fullmatch(pattern, req.path):
                handler = methods.get(req.method)
                if handler is None:
                    return json_reply(
                        405,
                        {
                            "type": "error",
                            "error": {"type": "invalid_request_error", "message": f"method {req.method} not allowed"},
                        },
                        summary="405",
                    )
                return handler(req, cfg)
        return json_reply(
            404,
            {
                "type": "error",
                "error": {"type": "not_found_error", "message": f"fake_upstream: no route for {req.method} {req.path}"},
            },
            summary="404",
        )

    def _handle(self) -> None:
        raw = self._read_body()
        url = urlsplit(self.path)
        control = self._control(url.path, raw)
        if control is not None:
            control.chunk_size, control.chunk_delay = 0, 0.0  # control replies: never slow
            self._write_reply(control, None)
            return
        enc = self.headers.get("Content-Encoding")
        decoded = decode_body(raw, enc)
        parsed: Any = None
        text: str | None = None
        if decoded:
            try:
                parsed = json.loads(decoded)
            except ValueError:
                text = decoded.decode("utf-8", "replace")
        req = Request(self.command, url.path, parse_qs(url.query), dict(self.headers.items()), raw, parsed)
        reply = self.state.pop_queued()
        if reply is None:
            try:
                reply = self._route(req)
            except Exception as e:  # keep the connection alive and say what broke
                reply = json_reply(
                    500,
                    {"type": "error", "error": {"type": "api_error", "message": f"fake_upstream error: {e!r}"}},
                    summary=f"500 {e!r}",
                )
        record = {
            "time": time.time(),
            "method": self.command,
            "path": self.path,
            "headers": dict(self.headers.items()),
            "body": parsed if parsed is not None else text,
            "body_b64": base64.b64encode(raw).decode(),
            "content_encoding": enc,
            "reply": {
                "source": reply.source,
                "status": reply.status,
                "headers": [list(h) for h in reply.headers],
                "body_b64": base64.b64encode(reply.body).decode(),
                "summary": reply.summary,
                "started_at": time.time(),
            },
        }
        self.state.add_record(record)
        print(
            f"[fake_upstream] #{record['n']} {self.command} {self.path} -> {reply.status} {reply.summary}",
            file=sys.stderr,
            flush=True,
        )
        self._write_reply(reply, record)

    def do_GET(self) -> None:
        self._handle_safely()

    def do_HEAD(self) -> None:
        self._handle_safely()

    def do_POST(self) -> None:
        self._handle_safely()

    def do_PUT(self) -> None:
        self._handle_safely()

    def do_DELETE(self) -> None:
        self._handle_safely()

    def _handle_safely(self) -> None:
        try:
            self._handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True


class _Server(ThreadingHTTPServer):
    # socketserver's default backlog is 5: a burst of concurrent connections (a proxy opening
    # 200 upstream connections at once, benchmarks/load.py) would be reset by the kernel.
    request_queue_size = 1024


def make_server(port: int = 0, state: FakeState | None = None, **opts: Any) -> ThreadingHTTPServer:
    state = state or FakeState(**opts)
    handler = type("BoundFakeHandler", (FakeHandler,), {"state": state})
    server = _Server(("127.0.0.1", port), handler)
    server.daemon_threads = True
    server.state = state  # type: ignore[attr-defined]
    return server


class FakeUpstream:
    """In-process use: ``with FakeUpstream(tool_name="bash") as fake: fake.url ...``."""

    def __init__(self, port: int = 0, **opts: Any) -> None:
        self.server = make_server(port, **opts)
        self.state: FakeState = self.server.state  # type: ignore[attr-defined]
        self.port = self.server.server_address[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._thread: threading.Thread | None = None

    def start(self) -> "FakeUpstream":
        self._thread = threading.Thread(target=self.server.serve_forever, name="fake-upstream", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        if self._thread:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeUpstream":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()
