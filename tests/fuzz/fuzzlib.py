"""Fuzzing the addon's hooks: seeds, mutations, one driver and the oracle (no hypothesis here).

Seeds are the recorded flows in ``flows/`` (every bug report x dialect x JSON/SSE, and the five
real agents): each gives a client request body and an upstream answer. A mutation changes one
side (or both) in a way a broken client or upstream could: truncation, wrong JSON types in the
fields the dialects read, deep nesting, invalid UTF-8, lone surrogate escapes, big integers,
``NaN``/``Infinity``/``1e400``, duplicate keys; for answers also cut or reordered events, unknown
events, tool blocks never closed, invalid JSON in data lines, CRLF/LF mixes, compressed bodies
and content types that lie; the stream callable gets pieces of 1 byte up to 4 KB, and in some
inputs empty pieces ``b""`` mid-stream (mitmproxy passes an empty HTTP/2 DATA frame on so). :func:`drive` runs one flow through the addon's hooks the way
mitmproxy's proxy core does (tests/flowreplay.Replayer, chunks of chosen sizes for the stream
callable) and :func:`problems` says what broke:

- a request body a strict JSON reader refuses (or that repeats a key) reaches the upstream
  byte-identical, and its answer reaches the client byte-identical (the flow is not handled);
- an answer the addon changed must still be strict JSON (or events with strict JSON data where
  the upstream's were) and may differ from the upstream's only in tool names, tool-call
  arguments, ids; a request only in those and the prompt sentence;
- every response completes within :data:`STALL_SECONDS`;
- no log record at ERROR or above from the addon's own modules.

The strictness oracle here is written independently of ``toolvocab.engine.jsonio``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import io
import json
import logging
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

import brotli  # noqa: F401  (mitmproxy's dependency; imported to fail early when absent)

TESTS = Path(__file__).resolve().parents[1]
ROOT = TESTS.parent
for p in (str(TESTS), str(ROOT)):
    if p not in sys.path:
        sys.path.insert(0, p)

import flowreplay as fr  # noqa: E402

DIALECTS = ("anthropic", "openai_chat", "openai_responses", "gemini")
STALL_SECONDS = 5.0
#: Where the addon's code lives: the script and the package (log records from either count).
ADDON_DIRS = (str(ROOT / "addon") + "/", str(ROOT / "toolvocab") + "/")

#: Keys whose values a repair may change: tool names, tool-call arguments (whole or in pieces),
#: call ids. Everything else must come out as it went in.
FREE_KEYS = frozenset({"name", "arguments", "input", "args", "partial_json", "id", "call_id", "tool_use_id", "item_id"})

#: Fields the dialects read, by dialect (paths of keys; ``*`` is every list element).
READ_PATHS: dict[str, list[tuple[str, ...]]] = {
    "anthropic": [
        ("tools",),
        ("tools", "*"),
        ("tools", "*", "name"),
        ("tools", "*", "input_schema"),
        ("tools", "*", "type"),
        ("messages",),
        ("messages", "*"),
        ("messages", "*", "content"),
        ("messages", "*", "content", "*"),
        ("messages", "*", "content", "*", "name"),
        ("messages", "*", "content", "*", "input"),
        ("system",),
        ("system", "*"),
        ("stream",),
        ("model",),
        ("tool_choice",),
    ],
    "openai_chat": [
        ("tools",),
        ("tools", "*"),
        ("tools", "*", "function"),
        ("tools", "*", "function", "name"),
        ("tools", "*", "function", "parameters"),
        ("tools", "*", "type"),
        ("functions",),
        ("messages",),
        ("messages", "*"),
        ("messages", "*", "content"),
        ("messages", "*", "tool_calls"),
        ("messages", "*", "tool_calls", "*", "function"),
        ("messages", "*", "role"),
        ("stream",),
        ("model",),
        ("tool_choice",),
    ],
    "openai_responses": [
        ("tools",),
        ("tools", "*"),
        ("tools", "*", "name"),
        ("tools", "*", "parameters"),
        ("tools", "*", "type"),
        ("tools", "*", "tools"),
        ("input",),
        ("input", "*"),
        ("input", "*", "name"),
        ("input", "*", "arguments"),
        ("input", "*", "content"),
        ("instructions",),
        ("stream",),
        ("model",),
        ("tool_choice",),
    ],
    "gemini": [
        ("tools",),
        ("tools", "*"),
        ("tools", "*", "functionDeclarations"),
        ("tools", "*", "functionDeclarations", "*"),
        ("tools", "*", "functionDeclarations", "*", "name"),
        ("tools", "*", "functionDeclarations", "*", "parameters"),
        ("contents",),
        ("contents", "*"),
        ("contents", "*", "parts"),
        ("contents", "*", "parts", "*"),
        ("contents", "*", "parts", "*", "functionCall"),
        ("systemInstruction",),
        ("systemInstruction", "parts"),
        ("request",),
        ("request", "tools"),
        ("request", "contents"),
        ("model",),
    ],
}
ANSWER_PATHS: dict[str, list[tuple[str, ...]]] = {
    "anthropic": [
        ("content",),
        ("content", "*"),
        ("content", "*", "name"),
        ("content", "*", "input"),
        ("content", "*", "id"),
        ("content", "*", "type"),
        ("stop_reason",),
        ("type",),
        ("message",),
        ("content_block",),
        ("delta",),
        ("delta", "partial_json"),
        ("index",),
        ("content_block", "name"),
    ],
    "openai_chat": [
        ("choices",),
        ("choices", "*"),
        ("choices", "*", "message"),
        ("choices", "*", "message", "tool_calls"),
        ("choices", "*", "message", "tool_calls", "*"),
        ("choices", "*", "message", "tool_calls", "*", "function"),
        ("choices", "*", "message", "content"),
        ("choices", "*", "delta"),
        ("choices", "*", "delta", "tool_calls"),
        ("choices", "*", "delta", "tool_calls", "*", "index"),
        ("choices", "*", "delta", "tool_calls", "*", "function"),
        ("choices", "*", "finish_reason"),
    ],
    "openai_responses": [
        ("output",),
        ("output", "*"),
        ("output", "*", "name"),
        ("output", "*", "arguments"),
        ("output", "*", "type"),
        ("output", "*", "call_id"),
        ("response",),
        ("response", "output"),
        ("item",),
        ("item", "name"),
        ("output_index",),
        ("delta",),
        ("arguments",),
        ("type",),
        ("sequence_number",),
    ],
    "gemini": [
        ("candidates",),
        ("candidates", "*"),
        ("candidates", "*", "content"),
        ("candidates", "*", "content", "parts"),
        ("candidates", "*", "content", "parts", "*"),
        ("candidates", "*", "content", "parts", "*", "functionCall"),
        ("candidates", "*", "content", "parts", "*", "functionCall", "name"),
        ("candidates", "*", "content", "parts", "*", "functionCall", "args"),
        ("response",),
        ("response", "candidates"),
    ],
}

#: Raw JSON tokens a lenient reader takes and a strict one refuses (or that orjson cannot hold).
BAD_TOKENS = [b"NaN", b"Infinity", b"-Infinity", b"1e400", b"-1e400"]
ODD_TOKENS = [
    b"123456789012345678901234567890",
    b"-98765432109876543210",
    b'"\\ud800"',
    b'"a\\udfffb"',
    b'"\\ud83d"',
    b'"\xff"',
    b'"\xed\xa0\x80"',
    b'"\xc3"',
    b"1e-400",
    b'"\\u0000"',
]


# -- seeds --------------------------------------------------------------------------------------


@dataclasses.dataclass
class Seed:
    """One recorded exchange, as the addon first saw it."""

    name: str
    dialect: str
    flow: Any  # a prepared HTTPFlow (never driven itself: clone it)
    request: bytes
    answer: bytes
    sse: bool
    options: dict[str, Any]
    structural: bool = False  # its own repair reshapes more than names/arguments/ids (calibrated)


@functools.lru_cache(maxsize=1)
def load_seeds() -> dict[str, list[Seed]]:
    """Every replayable recorded flow, by dialect (read once per process; never drive a seed's
    flow itself: :func:`build_flow` clones it)."""
    out: dict[str, list[Seed]] = {d: [] for d in DIALECTS}
    for path in fr.corpus_files():
        for saved in fr.load_flows(path):
            if fr.replayable(saved) is not None or saved.response is None:
                continue
            record = saved.metadata.get(fr.META_RECORD) or {}
            dialect = record.get("dialect")
            if dialect not in out:
                continue
            flow = fr.prepare(saved)
            answer = flow.response.raw_content or b""
            ctype = flow.response.headers.get("content-type", "")
            out[dialect].append(
                Seed(
                    name=f"{fr.rel(path)}#{saved.id[:8]}",
                    dialect=dialect,
                    flow=flow,
                    request=fr.request_body(flow.request),
                    answer=answer,
                    sse="event-stream" in ctype or answer.lstrip()[:1] == b"[",
                    options=fr.replay_options(saved),
                )
            )
    return out


# -- strictness oracle (independent of toolvocab.engine.jsonio) -----------------------------------------


class _Refused(Exception):
    pass


def _no_dupes(pairs: list[tuple[str, Any]]) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _Refused("duplicate key")
    return dict(pairs)


def _refuse_constant(name: str) -> Any:
    raise _Refused(name)


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise _Refused(text)
    return value


def strict_json(raw: bytes, *, allow_duplicates: bool = False) -> tuple[bool, Any]:
    """``(True, value)`` when a strict RFC 8259 reader accepts ``raw`` (UTF-8, no NaN/Infinity, every
    number a finite double or an integer, no repeated key unless allowed), else ``(False, None)``."""
    try:
        text = raw.decode("utf-8")
        return True, json.loads(
            text,
            parse_constant=_refuse_constant,
            parse_float=_finite,
            object_pairs_hook=None if allow_duplicates else _no_dupes,
        )
    except (ValueError, _Refused, RecursionError):
        return False, None


def depth(value: Any) -> int:
    """Nesting depth of a parsed JSON value (iterative)."""
    best, stack = 0, [(value, 1)]
    while stack:
        v, d = stack.pop()
        if isinstance(v, dict):
            best = max(best, d)
            stack.extend((x, d + 1) for x in v.values())
        elif isinstance(v, list):
            best = max(best, d)
            stack.extend((x, d + 1) for x in v)
    return best


# -- mutations ----------------------------------------------------------------------------------


def paths_in(value: Any, path: tuple[str, ...]) -> list[list[Any]]:
    """Concrete key/index paths in ``value`` matching ``path`` (``*``: every list element)."""
    found: list[list[Any]] = []

    def walk(v: Any, rest: tuple[str, ...], at: list[Any]) -> None:
        if not rest:
            found.append(at)
            return
        head = rest[0]
        if head == "*":
            if isinstance(v, list):
                for i, x in enumerate(v[:8]):
                    walk(x, rest[1:], at + [i])
        elif isinstance(v, dict) and head in v:
            walk(v[head], rest[1:], at + [head])
        elif isinstance(v, dict) and len(rest) == 1:
            found.append(at + [head])  # a key the dialect reads, absent: may be added

    walk(value, path, [])
    return found


def set_at(value: Any, at: list[Any], new: Any) -> None:
    for key in at[:-1]:
        value = value[key]
    value[at[-1]] = new


def placeholder(n: int) -> str:
    return f"__fuzz_token_{n}__"


def nested(kind: str, levels: int, inner: Any = 1) -> Any:
    v = inner
    for _ in range(levels):
        v = [v] if kind == "list" else {"a": v}
    return v


@dataclasses.dataclass
class Mutated:
    """A seed after mutation: what the client sends, what the upstream answers, and how."""

    seed: Seed
    request: bytes
    answer: bytes
    status: int = 200
    resp_headers: dict[str, str | None] = dataclasses.field(default_factory=dict)  # None: delete
    chunk_lo: int = 1
    chunk_hi: int = 64
    labels: list[str] = dataclasses.field(default_factory=list)
    blanks: float = 0.0  # probability of an empty chunk b"" after each piece (an empty HTTP/2 DATA frame)
    #: Something saves the flow (-w, a UI: the request is read whole); False as plain mitmdump
    #: runs, where a request the plan leaves as sent is only peeked (toolvocab.dialects.pipeline).
    saves: bool = True
    mode: str | None = None  # the mode to run in instead of the seed's


def mutate_json(raw: bytes, paths: list[tuple[str, ...]], rnd: Any, labels: list[str], n: int = 1) -> bytes:
    """``n`` structural mutations of the JSON text ``raw`` (unchanged if it is not JSON)."""
    ok, value = strict_json(raw, allow_duplicates=True)
    if not ok or not isinstance(value, (dict, list)):
        return raw
    tokens: dict[str, bytes] = {}
    for _ in range(n):
        candidates = [at for p in paths for at in paths_in(value, p)] if isinstance(value, dict) else []
        kind = rnd.choice(["wrong_type", "wrong_type", "deep", "token", "token", "dupkey", "bad_token"])
        if kind == "dupkey" and isinstance(value, dict) and value:
            key = rnd.choice(list(value))
            ph = placeholder(len(tokens))
            tokens[json.dumps(ph)] = json.dumps(key).encode()
            # the duplicate comes first: a reader that keeps the last key still sees the seed's
            value = {ph: rnd.choice([None, 0, "x", [], {}, value[key]]), **value}
            labels.append("dupkey")
            continue
        if not candidates:
            continue
        at = rnd.choice(candidates)
        if kind == "wrong_type":
            new = rnd.choice(
                [None, True, False, 0, -1, 1.5, 2**40, "", "x", [], [1, "a"], {}, {"type": 7}, [[]], [None]]
            )
            labels.append("wrong_type")
        elif kind == "deep":
            levels = rnd.choice([100, 140, 300, 399, 401, 900, 1100, 3000])
            new = nested(rnd.choice(["list", "dict"]), levels)
            labels.append(f"deep{levels}")
        else:
            ph = placeholder(len(tokens))
            token = rnd.choice(BAD_TOKENS if kind == "bad_token" else ODD_TOKENS)
            tokens[json.dumps(ph)] = token
            new = ph
            labels.append("bad_token" if kind == "bad_token" else "odd_token")
        try:
            set_at(value, at, new)
        except (KeyError, IndexError, TypeError):
            continue
    # Compact as JSON.stringify, serde_json and httpx write it (the request hook's cheap path:
    # jsonio._canonical) or spaced as json.dumps does by default (its long path).
    separators = rnd.choice([None, (",", ":")])
    try:
        out = json.dumps(value, ensure_ascii=False, separators=separators).encode("utf-8", "surrogatepass")
    except RecursionError:
        return raw
    for ph, token in tokens.items():
        out = out.replace(ph.encode(), token)
    return out


def sse_events(data: bytes) -> list[bytes]:
    """Raw SSE events (each with its blank-line terminator) — split on LF LF only."""
    parts = data.split(b"\n\n")
    events = [p + b"\n\n" for p in parts[:-1]]
    if parts[-1]:
        events.append(parts[-1])
    return events


UNKNOWN_EVENTS = [
    b'event: x_unknown\ndata: {"type":"x_unknown","delta":{"a":1}}\n\n',
    b'event: response.x_unknown\ndata: {"type":"response.x_unknown","output_index":0,"delta":{"partial":"{"}}\n\n',
    b": comment line\n\n",
    b"data: [DONE]\n\n",
    b"data: not json at all\n\n",
    b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":5,"function":{"arguments":"{"}}]}}]}\n\n',
    b'event: ping\ndata: {"type": "ping"}\n\n',
    b"retry: 10\n\n",
    b"\n",
]


def mutate_sse(data: bytes, dialect: str, rnd: Any, labels: list[str]) -> bytes:
    """One or more event-level mutations of an SSE (or Gemini array) answer."""
    events = sse_events(data)
    for _ in range(rnd.randint(1, 3)):
        kind = rnd.choice(
            ["cut", "drop", "dup", "swap", "unknown", "bad_json", "framing", "crlf", "event_json", "long"]
        )
        labels.append(kind)
        if kind == "cut" and events:
            joined = b"".join(events)
            events = [joined[: rnd.randrange(len(joined) + 1)]]
        elif kind == "drop" and events:
            # drops a random event: a *_stop / done event leaves a tool block never closed
            stops = [i for i, e in enumerate(events) if b"stop" in e or b".done" in e or b"finish_reason" in e]
            del events[rnd.choice(stops) if stops and rnd.random() < 0.7 else rnd.randrange(len(events))]
        elif kind == "dup" and events:
            i = rnd.randrange(len(events))
            events.insert(i, events[i])
        elif kind == "swap" and len(events) > 1:
            i = rnd.randrange(len(events) - 1)
            events[i], events[i + 1] = events[i + 1], events[i]
        elif kind == "unknown":
            events.insert(rnd.randrange(len(events) + 1), rnd.choice(UNKNOWN_EVENTS))
        elif kind == "bad_json" and events:
            i = rnd.randrange(len(events))
            events[i] = events[i].replace(
                b"data: {", rnd.choice([b"data: {{", b'data: {"a":NaN,', b'data: {"x":1e400,', b"data: {\xff"]), 1
            )
        elif kind == "framing" and events:
            i = rnd.randrange(len(events))
            events[i] = rnd.choice(
                [
                    events[i].rstrip(b"\n") + b"\n",
                    events[i].replace(b"\n", b"", 1),
                    b"data:" + events[i],
                    events[i] + b"\n\n\n",
                ]
            )
        elif kind == "crlf" and events:
            for i in range(len(events)):
                if rnd.random() < 0.5:
                    events[i] = events[i].replace(b"\n", rnd.choice([b"\r\n", b"\r"]))
        elif kind == "event_json" and events:
            i = rnd.randrange(len(events))
            ev = events[i]
            for line in ev.split(b"\n"):
                if line.startswith(b"data: ") and line[6:7] in (b"{", b"["):
                    new = mutate_json(line[6:], ANSWER_PATHS[dialect], rnd, labels)
                    if b"\n" not in new:
                        events[i] = ev.replace(line, b"data: " + new, 1)
                    break
        elif kind == "long":
            text = "x" * rnd.choice([1000, 20_000, 200_000])
            if dialect == "anthropic":
                obj = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}
                ev = b"event: content_block_delta\ndata: " + json.dumps(obj).encode() + b"\n\n"
            elif dialect == "openai_responses":
                obj = {"type": "response.output_text.delta", "output_index": 0, "delta": text}
                ev = b"event: response.output_text.delta\ndata: " + json.dumps(obj).encode() + b"\n\n"
            elif dialect == "openai_chat":
                ev = b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": text}}]}).encode() + b"\n\n"
            else:
                ev = (
                    b"data: "
                    + json.dumps({"candidates": [{"content": {"parts": [{"text": text}]}}]}).encode()
                    + b"\r\n\r\n"
                )
            events.insert(rnd.randrange(len(events) + 1), ev)
    return b"".join(events)


class DrawRandom:
    """The few ``random.Random`` methods the mutators use, drawn from hypothesis data so that a
    failing input shrinks (``data`` is ``st.data()``'s object)."""

    def __init__(self, data: Any) -> None:
        from hypothesis import strategies as st

        self._data, self._st = data, st

    def choice(self, seq: Any) -> Any:
        return self._data.draw(self._st.sampled_from(list(seq)))

    def randint(self, a: int, b: int) -> int:
        return self._data.draw(self._st.integers(a, b))

    def randrange(self, n: int) -> int:
        return self._data.draw(self._st.integers(0, n - 1))

    def random(self) -> float:
        return self._data.draw(self._st.floats(0, 1, exclude_max=True))


def mutate(seed: Seed, rnd: Any) -> Mutated:
    """One mutated input from ``seed``: the request, the answer, or both; chunk sizes; headers."""
    labels: list[str] = []
    request, answer = seed.request, seed.answer
    side = rnd.choice(["request", "answer", "answer", "both"])
    resp_headers: dict[str, str | None] = {}
    status = 200
    if side in ("request", "both"):
        if rnd.random() < 0.12:
            request = request[: rnd.randrange(len(request) + 1)]
            labels.append("req_truncate")
        else:
            request = mutate_json(request, READ_PATHS[seed.dialect], rnd, labels, n=rnd.randint(1, 3))
            labels[:] = ["req_" + x for x in labels]
    if side in ("answer", "both"):
        r = rnd.random()
        if r < 0.08:
            answer = answer[: rnd.randrange(len(answer) + 1)]
            labels.append("ans_truncate")
        elif seed.sse and answer.lstrip()[:1] != b"[":
            answer = mutate_sse(answer, seed.dialect, rnd, labels)
        else:
            answer = mutate_json(answer, ANSWER_PATHS[seed.dialect], rnd, labels, n=rnd.randint(1, 2))
        r = rnd.random()
        if r < 0.06:
            enc = rnd.choice(["gzip", "br", "zstd"])
            answer = compress(answer, enc)
            resp_headers["content-encoding"] = enc
            labels.append(f"enc_{enc}")
        elif r < 0.08:
            resp_headers["content-encoding"] = "gzip"  # lies: the bytes are not gzip
            labels.append("enc_lie")
        elif r < 0.14:
            resp_headers["content-type"] = rnd.choice(["application/json", "text/event-stream", "text/plain", None])
            labels.append("ctype_lie")
        elif r < 0.16:
            status = rnd.choice([429, 500, 400])
            labels.append(f"status{status}")
    lo, hi = rnd.choice([(1, 1), (1, 8), (1, 64), (64, 4096), (1, 3), (1, 1)])
    if len(answer) > 50_000:
        lo, hi = max(lo, 100), max(hi, 400)  # long events in small pieces, at most ~2,000 pieces
    elif (lo, hi) == (1, 1):
        labels.append("chunks_1_byte")
    blanks = rnd.choice([0.0, 0.0, 0.0, 0.02, 0.3])
    if blanks:
        labels.append("empty_chunks")
    saves = rnd.random() < 0.5
    mode = None
    if not saves:
        labels.append("nothing_saves")
        if seed.options.get("mode") == "auto" and rnd.random() < 0.5:
            mode = "repair"  # no prompt sentence: a request the plan leaves as sent, only peeked
            labels.append("repair_mode")
    return Mutated(seed, request, answer, status, resp_headers, lo, hi, labels, blanks, saves, mode)


def compress(data: bytes, encoding: str) -> bytes:
    from mitmproxy.net import encoding as menc

    return menc.encode(data, encoding)


# -- driving ------------------------------------------------------------------------------------


class ErrorCounter(logging.Handler):
    """Counts log records at ERROR or above raised from the addon's own files."""

    def __init__(self) -> None:
        super().__init__(level=logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.pathname.startswith(ADDON_DIRS):
            self.records.append(record)


def _trace(record: logging.LogRecord) -> str:
    if not record.exc_info:
        return ""
    text = logging.Formatter().formatException(record.exc_info)
    return " | ".join(text.splitlines()[-6:])


@dataclasses.dataclass
class Outcome:
    """What one mutated flow did."""

    request_out: bytes
    answer_out: bytes
    record: dict | None
    seconds: float
    errors: list[str]
    streamed: str


def build_flow(m: Mutated) -> Any:
    f = fr.clone(m.seed.flow)
    f.request.headers.pop("content-encoding", None)
    f.request.raw_content = m.request  # bytes as sent (not UTF-8, truncated: whatever)
    if "content-length" in f.request.headers:
        f.request.headers["content-length"] = str(len(m.request))
    resp = f.response
    resp.status_code = m.status
    for k, v in m.resp_headers.items():
        if v is None:
            resp.headers.pop(k, None)
        else:
            resp.headers[k] = v
    resp.raw_content = m.answer
    if "content-length" in resp.headers:
        resp.headers["content-length"] = str(len(m.answer))
    return f


def drive(replayer: Any, m: Mutated, rnd: random.Random, counter: ErrorCounter) -> Outcome:
    """One mutated flow through the hooks (requestheaders → request → responseheaders → stream
    callable over chunks of ``m.chunk_lo..m.chunk_hi`` bytes, some followed by an empty chunk
    ``b""`` (``m.blanks``), then ``b""`` → response)."""
    f = build_flow(m)
    replayer.configure(m.seed.options if m.mode is None else {**m.seed.options, "mode": m.mode})
    before = len(counter.records)
    recorder = replayer.addon.recorder
    kept = recorder.__dict__.get("saves_bodies")
    if not m.saves:
        recorder.saves_bodies = lambda: False  # as plain mitmdump: no -w, no UI
    start = time.perf_counter()
    try:
        out, kind = asyncio.run(replayer._drive(f, rnd, m.chunk_lo, m.chunk_hi, m.blanks))
    finally:
        if kept is None:
            recorder.__dict__.pop("saves_bodies", None)
        else:
            recorder.saves_bodies = kept
    seconds = time.perf_counter() - start
    errors = [f"{r.levelname} {r.getMessage()} {_trace(r)}" for r in counter.records[before:]]
    if f.id in replayer.addon._states:
        errors.append("per-flow state outlived the flow")
    try:  # every flow the addon handled can be saved (-w): its record must encode as UTF-8
        from mitmproxy import io as mio

        mio.FlowWriter(io.BytesIO()).add(f)
    except Exception as exc:
        errors.append(f"ERROR the flow cannot be saved: {type(exc).__name__}: {exc}")
    return Outcome(
        request_out=f.request.raw_content or b"",
        answer_out=out or b"",
        record=f.metadata.get("toolvocab"),
        seconds=seconds,
        errors=errors,
        streamed=kind,
    )


# -- the oracle ---------------------------------------------------------------------------------


def _fragment_event(value: dict) -> bool:
    """An event that only carries a piece of a call's arguments (Anthropic ``input_json_delta``,
    Responses ``function_call_arguments.delta``): when a call's arguments are rewritten, the
    dialects send them in one such event and drop the others, with whatever else they held."""
    delta = value.get("delta")
    return (isinstance(delta, dict) and delta.get("type") == "input_json_delta") or value.get(
        "type"
    ) == "response.function_call_arguments.delta"


def _leaves(value: Any, out: set, key: str | None, sentence: str | None, free: frozenset[str], ctx_type: str) -> None:
    if isinstance(value, dict) and "partial_json" in free and key is None and _fragment_event(value):
        return
    if isinstance(value, dict):
        t = value.get("type") if isinstance(value.get("type"), str) else ctx_type
        for k, v in value.items():
            if k in free or (k == "delta" and "arguments" in free and ("arguments" in t or "input" in t)):
                continue
            if k == "tool_calls" and key == "delta" and "arguments" in free:
                continue  # a Chat call's streamed pieces: merged into the first when its arguments change
            if k == "arguments" and (isinstance(v, (dict, list)) or isinstance(v, str) and v[:1] in ("{", "[")):
                # arguments sent as an object become its JSON text (BR-21): the same leaf either way
                try:
                    canonical = json.dumps(json.loads(v) if isinstance(v, str) else v, sort_keys=True)
                except ValueError:
                    canonical = v
                out.add(("arguments", canonical))
                continue
            _leaves(v, out, k, sentence, free, t)
    elif isinstance(value, list):
        for v in value:
            _leaves(v, out, key, sentence, free, ctx_type)
    else:
        if isinstance(value, str) and sentence and sentence in value:
            value = value.replace(sentence, "").strip()
            if not value:
                return
        if isinstance(value, float) and value == int(value) and abs(value) < 2**53:
            value = int(value)
        out.add((key, value if not isinstance(value, bool) else str(value)))


#: With no decision that changed a call, only ids (a missing or repeated one replaced) and names
#: may differ: arguments come out as they came.
ID_KEYS = frozenset({"id", "call_id", "tool_use_id", "item_id"})


def leaves(value: Any, sentence: str | None = None, free: frozenset[str] = FREE_KEYS) -> set:
    """``(key, scalar)`` leaves of a JSON value outside the keys a repair may change."""
    out: set = set()
    _leaves(value, out, None, sentence, free, "")
    return out


def stream_leaves(data: bytes, sentence: str | None = None, free: frozenset[str] = FREE_KEYS) -> set | None:
    """Leaves of every event of an SSE stream or a Gemini JSON array; ``None`` when a data
    line is not strict JSON (then the stream must pass byte-identical)."""
    out: set = set()
    stripped = data.lstrip()
    if stripped[:1] == b"[":
        ok, value = strict_json(data)
        if not ok:
            return None
        _leaves(value, out, None, sentence, free, "")
        return out
    text = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    for block in text.split(b"\n\n"):
        payload = b"\n".join(line[5:].lstrip(b" ") for line in block.split(b"\n") if line.startswith(b"data:"))
        for line in block.split(b"\n"):
            if line.startswith(b"event:"):
                out.add(("__event__", line[6:].strip()))
        if not payload or payload == b"[DONE]":
            continue
        ok, value = strict_json(payload)
        if not ok:
            # not strict JSON (or a repeated key): the event must come out as it went in
            out.add(("__raw__", payload))
            ok, value = strict_json(payload, allow_duplicates=True)
            if not ok:
                continue
            # a repeated key only: its leaves as a reader keeping the last one sees them
        _leaves(value, out, None, sentence, free, "")
    return out


#: Structural words a repair may add (the prompt sentence's block, an unwrapped or lifted call).
ADDED_OK = {
    ("type", "text"),
    ("role", "system"),
    ("role", "developer"),
    ("type", "input_text"),
    ("type", "message"),
    ("type", "function"),
    ("type", "tool_use"),
    ("type", "function_call"),
    ("finish_reason", "tool_calls"),
    ("stop_reason", "tool_use"),
    ("__event__", b"content_block_delta"),
}


#: System slots a prompt sentence may fill when they were empty (``null`` or ``""``).
SYSTEM_SLOTS = frozenset({"system", "systemInstruction", "instructions", "content"})


_ARGUMENT_EVENTS = ("response.function_call_arguments.delta", "response.function_call_arguments.done")


def _object_arguments(answer: bytes) -> bool:
    """True when the answer (a JSON body or an event stream) sends a call's ``arguments``, or a
    Responses argument event's ``delta`` / ``arguments``, as an object or array (BR-21's shape)."""

    def walk(value: Any) -> bool:
        stack = [value]
        while stack:
            v = stack.pop()
            if isinstance(v, dict):
                if isinstance(v.get("arguments"), (dict, list)):
                    return True
                if v.get("type") in _ARGUMENT_EVENTS and isinstance(v.get("delta"), (dict, list)):
                    return True
                stack.extend(v.values())
            elif isinstance(v, list):
                stack.extend(v)
        return False

    ok, value = strict_json(answer, allow_duplicates=True)
    if ok:
        return walk(value)
    for line in answer.splitlines():
        if line.startswith(b"data:"):
            ok, value = strict_json(line[5:].strip(), allow_duplicates=True)
            if ok and walk(value):
                return True
    return False


def _empty_call_field(key: Any, value: Any) -> bool:
    """An empty name fragment or empty arguments, which the dialects write as ``""`` / ``{}``
    (empty arguments on the wire become ``{}``; a call whose first piece came late
    gets an empty name fragment)."""
    return key in FREE_KEYS and value in ("", None, "{}")


def _allowed_extra(extra: set) -> set:
    return {(k, v) for k, v in extra if not _empty_call_field(k, v)}


def _allowed_loss(lost: set, after: set, sentence: str | None) -> set:
    """Leaves a repair may remove: an empty system slot the sentence filled; a Chat
    ``finish_reason`` / Anthropic ``stop_reason`` that became the tool-call one; empty
    arguments written as ``{}``."""
    out = set()
    for key, value in lost:
        if _empty_call_field(key, value):
            continue
        if sentence and key in SYSTEM_SLOTS and value in (None, ""):
            continue
        if key == "finish_reason" and ("finish_reason", "tool_calls") in after:
            continue
        if key == "stop_reason" and ("stop_reason", "tool_use") in after:
            continue
        out.add((key, value))
    return out


def _decoded(data: bytes, headers: dict[str, str | None]) -> bytes:
    enc = (headers.get("content-encoding") or "").strip().lower()
    if enc in ("gzip", "br", "zstd", "deflate"):
        from mitmproxy.net import encoding as menc

        try:
            return menc.decode(data, enc)
        except ValueError:
            return data
    return data


def _dropped_duplicate(record: dict) -> bool:
    return any(
        r.get("why") == "duplicate" and r.get("upstream") is None
        for r in record.get("renames") or ()
        if isinstance(r, dict)
    )


def _answer_text(answer: bytes) -> str:
    """The text an answer carries, in order: every string under ``text``, ``content`` or a string
    ``delta`` in the JSON body, or in each SSE event's data (a stream's text deltas joined)."""
    out: list[str] = []

    def walk(v: Any, key: str | None) -> None:
        if isinstance(v, dict):
            for k, x in v.items():
                walk(x, k)
        elif isinstance(v, list):
            for x in v:
                walk(x, key)
        elif isinstance(v, str) and key in ("text", "content", "delta"):
            out.append(v)

    ok, value = strict_json(answer)
    if ok:
        walk(value, None)
        return "".join(out)
    for event in sse_events(answer):
        for line in event.split(b"\n"):
            if line.startswith(b"data:"):
                ok, value = strict_json(line[5:].strip())
                if ok:
                    walk(value, None)
    return "".join(out)


def _flat(key: Any, value: Any) -> list[tuple[Any, Any]]:
    """``(key, value)``, or the pairs of the JSON object ``value`` writes (arguments sent as text)."""
    if isinstance(value, str) and value[:1] == "{":
        ok, obj = strict_json(value.encode("utf-8", "surrogatepass"))
        if ok and isinstance(obj, dict):
            return [pair for k, v in obj.items() for pair in _flat(k, v)]
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _flat(k, v)]
    return [(key, value)]


def lift_explains(extra: set, lost: set, decisions: list[dict], answer_in: bytes) -> bool:
    """True when a change of an answer is a call lifted out of text (the dialects' markup lift:
    text that is nothing but a call to a declared tool, whose arguments validate, becomes that
    call): a decision names a call whose id the upstream never sent (the addon minted it; for
    Gemini, whose calls carry no id, the upstream's answer holds no call at all), what
    went is text (its pieces, block types and indexes), the answer's text names that call, and
    every argument key and value that came is written in that text (block types, indexes and
    event names aside). A mutated schema can make such a lift valid where the unmutated seed's was
    not (a schema of unknown keywords accepts any arguments)."""
    # Gemini calls carry no id: there, a call is new when the upstream's answer holds no call at all
    no_calls = not any(
        marker in answer_in for marker in (b'"functionCall"', b'"function_call"', b'"tool_use"', b'"tool_calls"')
    )
    minted = {
        d.get("target") or d.get("name")
        for d in decisions
        if (d["call_id"].encode() not in answer_in if isinstance(d.get("call_id"), str) and d["call_id"] else no_calls)
    }
    minted.discard(None)
    texts = ("text", "content", "delta")  # where each dialect carries text
    structure = ("type", "index", "__event__", "role", "output_index", "content_index")
    if (
        not minted
        or not any(k in texts and isinstance(v, str) for k, v in lost)
        or any(k not in (*texts, *structure) for k, _ in lost)
    ):
        return False
    blob = _answer_text(answer_in)
    if not any(name in blob for name in minted):
        return False
    return all(
        str(kk) in blob and (json.dumps(vv) in blob or str(vv) in blob)
        for k, v in extra
        if k not in structure and not (k in texts and v is None)  # Chat: content null
        for kk, vv in _flat(k, v)
    )


def problems(m: Mutated, o: Outcome, *, lifts: bool = True) -> list[str]:
    """What broke (empty: nothing). An entry starting ``known:`` is a finding reported but not
    failed on (see the module docs of tests/fuzz/test_fuzz_hooks.py). ``lifts``: a change
    :func:`lift_explains` is allowed (``False`` for :func:`calibrate`, which must see every seed
    whose own repair lifts a call)."""
    found: list[str] = []
    if o.seconds > STALL_SECONDS:
        found.append(f"stall: {o.seconds:.1f} s")
    found += [f"log: {e}" for e in o.errors]
    req_ok, req_value = strict_json(m.request)
    handled_req = req_ok and isinstance(req_value, dict)
    record = o.record or {}
    sentence = record.get("prompt_sentence")
    if not handled_req:
        if o.request_out != m.request:
            found.append("a request body that is not strict JSON was altered")
        if o.answer_out != m.answer:
            found.append("the answer to a request that is not strict JSON was altered")
        return found
    if o.request_out != m.request:
        ok, new = strict_json(o.request_out)
        if not ok:
            found.append("rewritten request is not strict JSON")
        elif not m.seed.structural:
            after = leaves(new, sentence)
            extra = after - leaves(req_value, sentence) - ADDED_OK
            lost = _allowed_loss(leaves(req_value, sentence) - after, after, sentence)
            if extra or lost:
                known = "known: " if not extra and _dropped_duplicate(record) else ""
                found.append(
                    f"{known}request changed beyond names/arguments/ids/sentence: +{sorted(map(str, extra))[:5]} -{sorted(map(str, lost))[:5]}"
                )
    if o.answer_out != m.answer:
        if m.seed.structural:
            return found
        answer_in, answer_out = _decoded(m.answer, m.resp_headers), _decoded(o.answer_out, m.resp_headers)
        decisions = [d for d in record.get("decisions") or () if isinstance(d, dict)]
        # no call renamed or fitted: names and arguments come out as they came (ids may be fixed)
        # names may still change: an echo of renamed tools goes back to the client's names, a
        # name sent in fragments is assembled (BR-18)
        free = FREE_KEYS if any(d.get("action") in ("rename", "fit") for d in decisions) else ID_KEYS | {"name"}
        if _object_arguments(answer_in):
            # arguments (or a Responses argument fragment) sent as an object or array: the
            # dialects write them as their JSON text, in one fragment (BR-21)
            free = FREE_KEYS
        a_ok, a_value = strict_json(answer_in)
        if a_ok and isinstance(a_value, dict):
            ok, new = strict_json(answer_out)
            if not ok:
                found.append("rewritten answer is not strict JSON")
            else:
                after = leaves(new, None, free)
                extra = _allowed_extra(after - leaves(a_value, None, free) - ADDED_OK)
                lost = _allowed_loss(leaves(a_value, None, free) - after, after, None)
                if (extra or lost) and not (lifts and lift_explains(extra, lost, decisions, answer_in)):
                    found.append(
                        f"answer changed beyond names/arguments/ids: +{sorted(map(str, extra))[:5]} -{sorted(map(str, lost))[:5]}"
                    )
        else:
            before = stream_leaves(answer_in, None, free)
            after = stream_leaves(answer_out, None, free)
            if before is None:
                pass  # a Gemini array that is not strict JSON as a whole: compared byte for byte above
            elif after is None:
                found.append("rewritten stream holds data that is not strict JSON where the upstream's was")
            else:
                extra = _allowed_extra(after - before - ADDED_OK)
                lost = _allowed_loss(before - after, after, None)
                dupes = {x for x in lost if x[0] == "__raw__" and strict_json(x[1], allow_duplicates=True)[0]}
                if dupes:
                    # such an event passes as it came (toolvocab.dialects.sse.RepeatedKey)
                    found.append("an event whose data repeats a key was rewritten (the last one kept)")
                    lost -= dupes
                if (extra or lost) and not (lifts and lift_explains(extra, lost, decisions, answer_in)):
                    found.append(
                        f"stream changed beyond names/arguments/ids: +{sorted(map(str, extra))[:5]} -{sorted(map(str, lost))[:5]}"
                    )
    return found


def calibrate(replayer: Any, seeds: dict[str, list[Seed]], counter: ErrorCounter) -> None:
    """Mark the seeds whose own, unmutated repair reshapes more than the leaves the oracle
    allows (lifted or unwrapped calls): for their mutations only strictness, stalls and logs are
    checked."""
    for group in seeds.values():
        for seed in group:
            m = Mutated(seed, seed.request, seed.answer)
            o = drive(replayer, m, random.Random(0), counter)
            seed.structural = bool([p for p in problems(m, o, lifts=False) if "changed beyond" in p])
