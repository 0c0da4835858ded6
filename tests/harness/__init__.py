"""What every test that drives toolvocab's hooks shares: the script loaded in mitmproxy's test
context, flows built with bodies, and the hooks run over a flow the way mitmproxy runs them.

The script (``addon/toolvocab.py``) is loaded with mitmproxy's test context and never imported as
a module (a second module object would not be the one whose hooks run); its ``addons`` list holds
one instance of each addon class (``toolvocab/addons/__init__.py``), the repair addon first:

    from harness.fixtures import env, loaded     # pytest fixtures: env.tctx, env.module, env.addon
    with harness.script_context() as (tctx, module):   # or by hand
        env = harness.Env(tctx, module)
        f = harness.make_flow(body, host="api.anthropic.com", path="/v1/messages", upstream=sse)
        got = harness.replay(env, f, seed=3)     # .out is what the client received
        harness.core(module)._states             # the repair addon's per-flow state
        harness.websocket(module)._ws            # the WebSocket transport's per-socket state

A replay follows mitmproxy's proxy core (reference/mitmproxy.md §2, §5): requestheaders →
request → responseheaders → the ``response.stream`` callable over the upstream body in pieces
(then a final ``b""``) → response, or error for a flow that ended in one. WebSocket messages
go one at a time through ``websocket_message`` (``send_ws``), with ``inject.websocket``
captured (``capture_injections``).

This package imports no pytest (``tests/flowtool.py`` replays flows through it without the test
extra); the pytest fixtures are in ``harness.fixtures``.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import orjson
from mitmproxy import http
from mitmproxy.proxy.layers.websocket import WebsocketMessageHook
from mitmproxy.test import taddons
from mitmproxy.test import tflow
from mitmproxy.test import tutils
from mitmproxy.websocket import WebSocketMessage
from wsproto.frame_protocol import Opcode

from toolvocab.replay import drive as _drive

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "addon" / "toolvocab.py"
#: The metadata key of the addon's per-flow record.
KEY = "toolvocab"
#: The options every hook test starts from and is put back to.
DEFAULTS: dict[str, Any] = {"toolvocab_mode": "auto", "toolvocab_hosts": None}


# -- the script's addons by role ----------------------------------------------------------------


def addon(module: Any, kind: str) -> Any:
    """The addon of class ``kind`` (``ToolVocab``, ``ToolVocabRedaction``, ``ToolVocabIntercept``,
    ``ToolVocabWebSocket``, ``ToolVocabRecorder``, ``ToolVocabUI``) in a loaded script's ``addons``;
    raises ``LookupError`` when there is none."""
    for a in module.addons:
        if type(a).__name__ == kind:
            return a
    raise LookupError(f"no {kind} addon in {[type(a).__name__ for a in module.addons]}")


def core(module: Any) -> Any:
    """The repair addon (hooks, ``mode``, ``profiles``, ``hosts``, ``_states``)."""
    return addon(module, "ToolVocab")


def websocket(module: Any) -> Any:
    """The WebSocket transport (``_ws``)."""
    return addon(module, "ToolVocabWebSocket")


def intercept(module: Any) -> Any:
    """Regular mode's interception (``tls_clienthello``)."""
    return addon(module, "ToolVocabIntercept")


# -- the script in a test context ---------------------------------------------------------------


def load(tctx: taddons.context) -> Any:
    """Load the script into ``tctx`` and put it in the addon chain (:func:`toolvocab.replay.drive.load`);
    the script's module. Raises ``RuntimeError`` when the script fails to load."""
    return _drive.load(tctx, str(SCRIPT))


@contextlib.contextmanager
def script_context() -> Iterator[tuple[taddons.context, Any]]:
    """``(tctx, module)``: a fresh ``taddons.context()`` with the script loaded (``load``)."""
    with taddons.context() as tctx:
        yield tctx, load(tctx)


activate = _drive.activate


@dataclass
class Env:
    """A loaded script: its test context, module and repair addon, and the ``inject.websocket``
    calls captured so far as ``(flow, to_client, message, is_text)`` (see ``capture_injections``)."""

    tctx: taddons.context
    module: Any
    addon: Any = None
    injected: list[tuple[Any, bool, bytes, bool]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.addon is None:
            self.addon = core(self.module)

    def configure(self, **options: Any) -> None:
        """Set the script's options (``toolvocab_mode="repair"``, ...); ``OptionsError`` on a bad one."""
        self.tctx.configure(self.module, **options)

    def hook(self, hook: Any) -> None:
        """Run one mitmproxy hook event (``hl.HttpRequestHook(f)``, ...) on the script's addons."""
        activate(self.tctx)
        self.tctx.master.addons.invoke_addon_sync(self.module, hook)


@contextlib.contextmanager
def configured(loaded: tuple[taddons.context, Any], **options: Any) -> Iterator[Env]:
    """An ``Env`` over a loaded ``(tctx, module)`` with ``ctx`` pointed at it, its options set to
    ``DEFAULTS`` (updated by ``options``) before and after."""
    tctx, module = loaded
    activate(tctx)
    e = Env(tctx, module)
    opts = {**DEFAULTS, **options}
    e.configure(**opts)
    try:
        yield e
    finally:
        e.configure(**opts)


@contextlib.contextmanager
def capture_injections(e: Env, *, others: bool = False) -> Iterator[list[tuple[Any, bool, bytes, bool]]]:
    """Replace the master's ``commands.call`` so every ``inject.websocket`` (which must be a text
    frame to the client) is appended to ``e.injected``; any other command fails an assertion, or
    with ``others`` runs as before. Put back on exit."""
    commands = e.tctx.master.commands
    original = commands.call

    def call(command: str, *args: Any) -> Any:
        if command == "inject.websocket":
            flow, to_client, message, is_text = args
            assert to_client, to_client  # toolvocab only sends frames to clients
            e.injected.append((flow, to_client, message, is_text))
            return None
        assert others, command
        return original(command, *args)

    commands.call = call
    try:
        yield e.injected
    finally:
        commands.call = original


# -- flows --------------------------------------------------------------------------------------


def make_flow(
    body: bytes | dict | list | None,
    *,
    host: str,
    path: str,
    headers: Sequence[tuple[str, str]] = (),
    method: str = "POST",
    upstream: bytes = b"",
    resp_type: str | None = "application/json",
    resp_headers: list[tuple[str, str]] | None = None,
    status: int = 200,
    http_version: str = "HTTP/1.1",
    response: bool = True,
) -> http.HTTPFlow:
    """An HTTPS flow (``tflow.tflow``) to ``host`` on port 443: request headers ``host``, then
    ``headers``, then ``content-length`` when there is a body (``body`` as bytes, or JSON of a
    dict or list); the upstream's answer ``upstream`` with ``content-type: resp_type`` (none when
    ``None``) and then ``resp_headers``, or no response at all when ``response`` is false."""
    content = body if isinstance(body, bytes) or body is None else orjson.dumps(body)
    req_headers = [("host", host), *headers]
    if content is not None:
        req_headers.append(("content-length", str(len(content))))
    req = tutils.treq(
        method=method.encode(),
        host=host,
        port=443,
        scheme=b"https",
        authority=b"",
        path=path.encode(),
        http_version=http_version.encode(),
        headers=http.Headers([(k.encode(), v.encode()) for k, v in req_headers]),
        content=content,
    )
    if not response:
        return tflow.tflow(req=req, resp=False)
    return tflow.tflow(
        req=req, resp=answer(upstream, resp_type, resp_headers, status=status, http_version=http_version)
    )


def answer(
    upstream: bytes,
    resp_type: str | None,
    resp_headers: list[tuple[str, str]] | None = None,
    *,
    status: int = 200,
    http_version: str = "HTTP/1.1",
) -> http.Response:
    """An upstream answer (``tutils.tresp``): ``content-type: resp_type`` (none when ``None``),
    then ``resp_headers``, body ``upstream``."""
    rh = list(resp_headers or [])
    if resp_type is not None:
        rh.insert(0, ("content-type", resp_type))
    return tutils.tresp(
        status_code=status,
        http_version=http_version.encode(),
        headers=http.Headers([(k.encode(), v.encode()) for k, v in rh]),
        content=upstream,
    )


def ws_flow(host: str = "api.openai.com", path: str = "/v1/responses") -> http.HTTPFlow:
    """A Responses-over-WebSocket flow (``tflow.twebsocketflow``, Codex's ``openai-beta``
    header) with no messages yet."""
    f = tflow.twebsocketflow()
    f.request.host = host
    f.request.path = path
    f.request.headers["openai-beta"] = "responses_websockets=2026-02-06"
    f.websocket.messages = []
    return f


def send_ws(
    e: Env, f: http.HTTPFlow, content: bytes, *, from_client: bool, text: bool = True, deliver: bool = True
) -> tuple[WebSocketMessage, list[bytes]]:
    """Append one message to ``f`` and run ``websocket_message`` as mitmproxy's WebSocket layer
    does; ``(the message, the frames injected meanwhile)``. Every injection must go to the client
    of ``f`` (``capture_injections`` must be active); with ``deliver`` each then comes through
    the hook as mitmproxy sends it (an ``injected`` message), else it is still on its way."""
    message = WebSocketMessage(Opcode.TEXT if text else Opcode.BINARY, from_client, content)
    f.websocket.messages.append(message)
    mark = len(e.injected)
    e.hook(WebsocketMessageHook(f))
    new = e.injected[mark:]
    assert all(flow is f and to_client for flow, to_client, _, _ in new)
    if deliver:
        # mitmproxy sends each injected frame later, from a task, and runs the hook over it
        # (``injected``): here at once, after the message at hand
        for _, _, raw, is_text in new:
            f.websocket.messages.append(
                WebSocketMessage(Opcode.TEXT if is_text else Opcode.BINARY, False, raw, injected=True)
            )
            e.hook(WebsocketMessageHook(f))
    return message, [m for _, _, m, _ in new]


# -- driving the hooks --------------------------------------------------------------------------


# The hooks over a flow as mitmproxy's proxy core calls them: the package's toolvocab.replay.drive
# (``toolvocab replay`` and these tests drive the addon with the same code).
random_chunks = _drive.random_chunks
Feeder = _drive.Feeder
Driven = _drive.Driven
drive = _drive.drive


@dataclass
class Result:
    """A replay's outcome: what the client received, how (``"callable"``, ``"passthrough"``,
    ``"buffered"``), the flow's record and what each stream-callable call returned."""

    out: bytes
    streamed: str
    record: dict | None
    per_call: list[bytes]

    @property
    def calls(self) -> int:
        """How many times the stream callable was called."""
        return len(self.per_call)


def json_flow(addon: Any, body: Any, answer: bytes, *, host: str, path: str, headers: Sequence[tuple[str, str]] = ()):
    """A flow of ``body`` answered with the JSON ``answer`` through the repair addon's
    ``request``, ``responseheaders`` and ``response`` hooks, called directly; the flow after them."""
    f = make_flow(body, host=host, path=path, headers=headers, upstream=answer)
    resp = f.response
    f.response = None
    addon.request(f)
    f.response = resp
    addon.responseheaders(f)
    addon.response(f)
    return f


def replay(e: Env, f: http.HTTPFlow, seed: int = 0, chunks: list[bytes] | None = None) -> Result:
    """``f`` (with a response) through the hooks (``drive``, pieces from ``random.Random(seed)``
    or ``chunks``); asserts no per-flow state outlives it."""
    assert f.response is not None
    activate(e.tctx)
    got = asyncio.run(drive(e.tctx, e.module, f, random.Random(seed), chunks=chunks))
    assert got.streamed != "none", "the request hooks took the flow's response away"
    assert f.id not in e.addon._states, "per-flow state must not outlive the flow"
    return Result(out=got.out or b"", streamed=got.streamed, record=f.metadata.get(KEY), per_call=got.per_call)
