"""The addon's script with its plain Anthropic flow done in two functions: a measurement, not a product.

    mitmdump -s benchmarks/inlined.py …   (``request.py``'s column ``inlined``)

The addon's own script (``TOOLVOCAB_SCRIPT``, else ``addon/toolvocab.py`` next to this folder),
loaded as mitmdump loads it, with the repair addon's ``request`` and ``response`` hooks wrapped.
A flow the addon would peek, whose request's planning inputs equal the last such request's, has
its request hook's work done in :func:`_request_fast` and its answer's in :func:`_response_fast`,
one function each, with the product's own pieces (the dialect's typed decoder, the signature
check, ``FlowState``, the recorder's finish of an untouched record) and the plan, toolset and
record the addon made for that earlier request: what the addon does for such a flow (the test
``tests/unit/test_bench_inlined.py`` holds the records, states, markers and bytes equal), in the
fewest steps. Every other flow goes through the addon's hooks, unchanged.

What it measures: how much of the addon's cost over the ``plain`` floor is the number of steps
its plain path takes (layers of functions, lookups of the plan and toolset), and how much is the
work itself (the replayed ids and roles read, the signature, the record, the answer's strict read).

The wrapped flow: a POST the Anthropic dialect's path takes, mode ``auto`` or ``repair``, live
and not a replay, no ``toolvocab_hosts``, nothing saving or showing flows, no
``content-encoding``, a client whose last request was not written, a body the typed decoder
reads with no ``role: "system"`` message of blocks and only replayed ids the upstream takes; and
for the answer, a buffered 2xx JSON object with no ``content-encoding`` that the dialect's screen
rules out (``answer_may_change``), the record still the shared one and quiet.

``TOOLVOCAB_INLINED_DROP`` (comma-separated names of :data:`DROPS`) leaves parts of that work
out: the column then does less than the addon (``request.py --drop``), and shows what a goal
would need the product to stop doing.
"""

import os
import runpy
from typing import Any

import msgspec
import orjson

_SCRIPT = os.environ.get("TOOLVOCAB_SCRIPT") or os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "addon", "toolvocab.py"
)
_loaded = runpy.run_path(_SCRIPT)
addons = _loaded["addons"]

# isort: split
from toolvocab.addons import core as _core_module  # noqa: E402  (the script put the package on sys.path)
from toolvocab.addons import recording as _recording  # noqa: E402
from toolvocab.addons.state import FlowState  # noqa: E402
from toolvocab.dialects import anthropic as _anthropic  # noqa: E402
from toolvocab.dialects import pipeline  # noqa: E402
from toolvocab.dialects.base import content_texts  # noqa: E402
from toolvocab.dialects.base import path_only  # noqa: E402
from toolvocab.engine import jsonio  # noqa: E402
from toolvocab.engine.clients import HEADERS as _CLIENT_HEADERS  # noqa: E402
from toolvocab.engine.ids import anthropic_accepts_all  # noqa: E402
from toolvocab.report import METADATA_KEY  # noqa: E402

_core = next(a for a in addons if type(a).__name__ == "ToolVocab")
_addon_request, _addon_response, _addon_error = _core.request, _core.response, _core.error
_DIALECT = next(d for d in pipeline._dialects.DIALECTS if d.name == "anthropic")
_PEEK = _anthropic._PEEK
_UNSET = msgspec.UNSET
#: the headers a request's client and platform are read from
_READ_HEADERS = tuple(dict.fromkeys(("user-agent", *_CLIENT_HEADERS)))

#: The parts of a plain flow's work ``TOOLVOCAB_INLINED_DROP`` may leave out.
DROPS = {
    "ids": "the peek reads only the calls' names: no replayed id checked, no message's role read",
    "headers": "no signature check, and the client's headers not read (but the user agent)",
    "answer": "the answer only screened, not read strictly (no note for one that is not a JSON object)",
    "finish": "the finish leaves the record the request hook stored (no status, timings, marker or storable check)",
}
_DROP = frozenset(part for part in os.environ.get("TOOLVOCAB_INLINED_DROP", "").split(",") if part)
if _DROP - set(DROPS):
    raise ValueError(
        f"TOOLVOCAB_INLINED_DROP: unknown part(s) {sorted(_DROP - set(DROPS))}; the parts are {list(DROPS)}"
    )


class _Block(msgspec.Struct, gc=False):
    type: Any = _UNSET
    name: Any = _UNSET


class _Message(msgspec.Struct, gc=False):
    content: str | list[_Block] | msgspec.UnsetType = _UNSET


class _Narrow(msgspec.Struct, gc=False):
    """``_anthropic._Request`` without the messages' roles and the blocks' ids (``ids`` dropped)."""

    model: Any = _UNSET
    stream: Any = _UNSET
    system: Any = _UNSET
    messages: list[_Message] | msgspec.UnsetType = _UNSET
    tools: msgspec.Raw | msgspec.UnsetType = _UNSET
    stop_sequences: Any = _UNSET
    tool_choice: Any = _UNSET


if "ids" in _DROP:
    _PEEK = msgspec.json.Decoder(_Narrow)

#: the last request the addon's own hook peeked: its planning inputs and what it made of them
_last: dict[str, Any] = {"key": None, "made": None}
#: flows whose request took the fast way, until their answer
_fast: set[str] = set()
#: how many requests and answers took the fast way (for the test)
taken = {"request": 0, "response": 0}


def _inputs(body: Any, path: str, host: str, header: Any, signed: str | None) -> tuple[Any, ...] | None:
    """What the addon plans a peeked request from (``pipeline._peeked``, ``pipeline._plan``), as
    one comparable key, with the replayed ids checked as the peek checks them; ``None`` for a body
    the peek gives up on."""
    if body.messages is _UNSET or body.tools is _UNSET:
        return None
    system = body.system
    texts = content_texts(None if system is _UNSET else system)
    names: list[str] = []
    ids: list[str] = []
    if "ids" in _DROP:
        names = [b.name for m in body.messages if type(m.content) is list for b in m.content if b.type == "tool_use"]
    for message in () if "ids" in _DROP else body.messages:
        blocks = message.content
        if type(blocks) is not list:
            if type(blocks) is str and message.role == "system":
                texts.append(blocks)
            continue
        if message.role == "system":
            return None
        for block in blocks:
            kind = block.type
            if kind == "tool_use":
                if type(block.name) is str:
                    names.append(block.name)
                if type(block.id) is str:
                    ids.append(block.id)
            elif kind == "tool_result" and type(block.tool_use_id) is str:
                ids.append(block.tool_use_id)
    if not anthropic_accepts_all(ids):
        return None
    model = body.model if type(body.model) is str else _DIALECT.model_of(path, {})
    return (
        bytes(body.tools),
        tuple(texts),
        tuple(dict.fromkeys(names)),
        model,
        host,
        path,
        signed,
        _core.mode,
        _core.profiles,  # the object, not its id: a new one may be made where a freed one lay
        header("user-agent") if "headers" in _DROP else tuple(header(name) for name in _READ_HEADERS),
    )


def _read(flow: Any) -> tuple[Any, ...] | None:
    """``(content, header, host, signed, body, key)`` of a request the fast way may take, else ``None``."""
    core, req = _core, flow.request
    if (
        not flow.live
        or flow.is_replay
        or core.mode not in ("auto", "repair")
        or not core.ready
        or core.hosts is not None
        or req.method != "POST"
        or core.recorder.saves_bodies()
        or not _DIALECT.path_matches("POST", req.path)
    ):
        return None
    header = _core_module.header_reader(req.headers)
    if header("content-encoding"):
        return None
    content, path = req.raw_content, req.path
    host = _core_module.pretty_host(req)
    signed = None if "headers" in _DROP else pipeline.signature(pipeline.Request(content, "POST", path, host, header))
    if (host, path_only(path), header("user-agent")) in core.caches.writes:
        return None
    try:
        body = _PEEK.decode(content)
    except (msgspec.MsgspecError, RecursionError, ValueError, TypeError):
        return None
    key = _inputs(body, path, host, header, signed)
    return None if key is None else (content, header, signed, body, key)


def _request_fast(flow: Any) -> bool:
    """The repair addon's request hook for a request whose planning inputs equal the last peeked
    one's; False (nothing done) for any other."""
    read = _read(flow)
    if read is None or read[4] != _last["key"]:
        return False
    content, header, signed, body, _ = read
    tools, plan, record, record_json, windows = _last["made"]
    choice = {} if body.tool_choice is _UNSET else {"tool_choice": body.tool_choice}
    stops = body.stop_sequences
    state = FlowState(
        _DIALECT,
        tools,
        plan,
        record,
        wants_stream=body.stream is True,
        windows=windows,
        flow_key=flow.id,
        shared=True,
        record_json=record_json,
        stops=type(stops) is list and bool(stops),
        limited=_DIALECT.limits_calls(choice),
        allowed=_DIALECT.allowed_names(choice),
    )
    state.request_body = content
    state.unverified = content
    accept = header("accept-encoding")
    if signed is None and accept != "identity":
        _core_module._changed_header(flow, "request", "accept-encoding", accept)
        flow.request.anticomp()
    _core._states[flow.id] = state
    flow.metadata[METADATA_KEY] = orjson.loads(record_json)
    return True


# (module-level names that are not mitmproxy's hook names: mitmproxy calls a script module's own
# ``request`` and ``response`` as hooks too, and each flow would be handled twice)
def _request_hook(flow: Any) -> None:
    """The fast way when it applies; else the addon's hook, and what it made of a peeked request kept."""
    if _request_fast(flow):
        _fast.add(flow.id)
        taken["request"] += 1
        return
    _addon_request(flow)
    state = _core._states.get(flow.id)
    if state is None or state.unverified is None or not state.record_untouched:
        return
    read = _read(flow)
    if read is not None:
        _last["key"] = read[4]
        _last["made"] = (state.tools, state.plan, state.shared_record, state.record_json, state.windows)


def _response_fast(flow: Any) -> bool:
    """The repair addon's response hook for a fast flow's answer the screen rules out; False
    (nothing done) for any other."""
    state = _core._states.get(flow.id)
    resp = flow.response
    if (
        state is None
        or resp is None
        or state.stream is not None
        or not 200 <= resp.status_code < 300
        or resp.stream
        or resp.raw_content is None
        or "content-encoding" in resp.headers
        or not state.record_untouched
        or state.refused is not None
        or state.original_request is not None
    ):
        return False
    content = jsonio.split_bom(resp.raw_content)[1]
    if not content or _DIALECT.answer_may_change(content):
        return False
    if "answer" in _DROP:
        answer = {} if content[:1] == b"{" else None
    else:
        try:
            answer, _, _ = jsonio.loads_checked(content)
        except ValueError:
            return False
    recorder = _core.recorder
    if not isinstance(answer, dict) or not recorder._quiet(state.shared_record):
        return False
    del _core._states[flow.id]
    if "finish" in _DROP:
        return True
    dumped = orjson.loads(state.record_json)
    dumped.update(_recording._timings(flow))
    flow.metadata[METADATA_KEY] = dumped
    recorder._mark(flow, None, "")
    _recording._make_storable(flow)
    return True


def _response_hook(flow: Any) -> None:
    """The fast way for a fast flow's answer when it applies; else the addon's hook."""
    if flow.id in _fast:
        _fast.discard(flow.id)
        if _response_fast(flow):
            taken["response"] += 1
            return
    _addon_response(flow)


def _error_hook(flow: Any) -> None:
    """The addon's hook; a fast flow that ended without an answer is forgotten."""
    _fast.discard(flow.id)
    _addon_error(flow)


_core.request, _core.response, _core.error = _request_hook, _response_hook, _error_hook


class _Counts:
    """At mitmdump's shutdown, :data:`taken` and how many requests came, as JSON, to the file
    ``TOOLVOCAB_INLINED_COUNTS`` names (``request.py`` prints it: a column whose flows never took
    the fast way measured the addon)."""

    def __init__(self) -> None:
        self.path = os.environ.get("TOOLVOCAB_INLINED_COUNTS")
        self.requests = 0

    def request(self, flow: Any) -> None:
        self.requests += 1

    def done(self) -> None:
        if self.path:
            with open(self.path, "w") as fp:
                fp.write(orjson.dumps({**taken, "requests": self.requests}).decode())


addons = [*addons, _Counts()]
