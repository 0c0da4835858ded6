"""Replay saved toolvocab flows through the real addon, compare, scrub and re-bless them.

Shared by ``tests/test_flows.py`` (pytest over ``flows/``) and ``tests/flowtool.py`` (the CLI).
A flow file is what ``mitmdump -w`` (or ``--set toolvocab_record=DIR``) writes for a flow the
addon handled:

* ``flow.request``: what the upstream received (after the addon's request hook);
* ``flow.response.raw_content``: what the client received (for streamed answers the addon
  stores the bytes it sent, mitmproxy G6);
* ``flow.metadata["toolvocab"]`` the record, ``["toolvocab_request"]`` the client's original
  body (only when the addon changed it), ``["toolvocab_upstream"]`` the upstream's original
  answer bytes (only when the addon changed them), ``["toolvocab_diff"]`` a readable diff;
* ``flow.metadata["toolvocab_replay"]`` (ours, optional): the options to replay with
  (``mode``, ``profiles`` as TOML text, ``hosts``).

A replay drives the script exactly as mitmproxy's proxy core does (reference §2, §5): the
ORIGINAL request through requestheaders → request, then responseheaders, then — when the addon
installed a stream callable — the ORIGINAL upstream bytes through it in random 1–64-byte pieces
and a final ``b""``, then the response hook (or the error hook for a flow that ended in an
error). The flow keeps its saved id, so ids the addon derives from it (``tc_…``) are stable.

Nothing here imports ``addon/toolvocab.py`` as a module (a second module object would not be
the one whose hooks run); the script is loaded and driven by ``tests/harness/`` (as for every
test that drives the hooks).
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import difflib
import json
import os
import random
import re
import tempfile
import tomllib
from collections.abc import Iterable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mitmproxy import http
from mitmproxy import io as mio

import harness

REPO = harness.ROOT
#: The corpus; ``TOOLVOCAB_FLOWS_DIR`` points the tools at another one (tests of flowtool itself).
FLOWS_DIR = Path(os.environ.get("TOOLVOCAB_FLOWS_DIR") or REPO / "flows")
MANIFEST = FLOWS_DIR / "MANIFEST.toml"

META_RECORD = "toolvocab"
META_REQUEST = "toolvocab_request"
META_UPSTREAM = "toolvocab_upstream"
META_DIFF = "toolvocab_diff"
META_REPLAY = "toolvocab_replay"
#: Metadata the addon writes; cleared before a replay so the replay writes it afresh.
ADDON_KEYS = (META_RECORD, META_REQUEST, META_UPSTREAM, META_DIFF)
#: Record fields that differ from run to run and are never compared.
RUN_SPECIFIC = frozenset({"ttfb_ms", "total_ms"})

DIALECTS = ("anthropic", "openai_chat", "openai_responses", "gemini")

#: The only texts allowed in a committed flow's system slots (besides the sentence the addon
#: itself adds): the client's own prompt is never recorded.
NEUTRAL_SYSTEM = "You are a coding assistant in a recorded test conversation. Keep answers short."
#: Replaces context a client injects into user turns (Claude Code's <system-reminder>, Codex's
#: <environment_context>, Gemini CLI's and Qwen Code's session context).
NEUTRAL_CONTEXT = "(client context removed from this recorded test conversation)"
#: Replaces a tool's top-level description (the client's prose); names and schemas are kept.
NEUTRAL_DESCRIPTION = "(tool description removed)"
NEUTRAL_TEXTS = frozenset({NEUTRAL_SYSTEM, NEUTRAL_CONTEXT})

#: Markers of client-injected context in user turns (scrubbed, and refused in committed flows).
CONTEXT_MARKERS = (
    "<system-reminder>",
    "<environment_context>",
    "<session_context>",
    "<user_instructions>",
    "<skills_instructions>",
    "<permissions instructions>",
    "We are setting up the context for our chat",
)

#: Request headers holding credentials (value replaced), and headers dropped outright.
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "openai-api-key",
     "x-auth-token", "x-access-token", "chatgpt-account-id", "openai-organization", "openai-project"}
)
COOKIE_HEADERS = frozenset({"cookie", "set-cookie", "set-cookie2"})
#: Headers that identify an installation or account (value replaced; not credentials).
IDENTIFYING_HEADERS = frozenset({"x-codex-turn-metadata", "chatgpt-account-id", "x-goog-user-project"})
REDACTED = "<redacted>"
_KEY_PARAM = re.compile(r"([?&](?:key|api_key|api-key|access_token|token)=)[^&#]*", re.IGNORECASE)


# -- files ------------------------------------------------------------------------------------


def load_flows(path: str | os.PathLike) -> list[http.HTTPFlow]:
    """Every HTTP flow in a ``.mitm`` file (other flow types are skipped)."""
    with open(path, "rb") as fp:
        return [f for f in mio.FlowReader(fp).stream() if isinstance(f, http.HTTPFlow)]


def write_flows(path: str | os.PathLike, flows: Iterable[http.HTTPFlow]) -> None:
    """Write ``flows`` to ``path`` atomically (a temp file renamed over it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fp:
            writer = mio.FlowWriter(fp)
            for f in flows:
                writer.add(f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def corpus_files(root: Path | None = None) -> list[Path]:
    """``flows/*.mitm`` and ``flows/*/*.mitm``, sorted."""
    root = root or FLOWS_DIR
    return sorted({*root.glob("*.mitm"), *root.glob("*/*.mitm")})


def rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(FLOWS_DIR))
    except ValueError:
        return str(path)


def clone(f: http.HTTPFlow) -> http.HTTPFlow:
    """A deep copy that keeps the flow id (``Flow.copy()`` would give a new one)."""
    return http.HTTPFlow.from_state(copy.deepcopy(f.get_state()))


def is_toolvocab_flow(f: http.HTTPFlow) -> bool:
    return isinstance(f.metadata.get(META_RECORD), dict)


def replayable(f: http.HTTPFlow) -> str | None:
    """``None`` when ``f`` can be replayed, else why not."""
    if not is_toolvocab_flow(f):
        return "no toolvocab record (the addon did not handle it)"
    if f.websocket is not None:
        return "a WebSocket flow (the replay drives HTTP hooks only)"
    if f.response is not None and f.response.raw_content is None and f.metadata.get(META_UPSTREAM) is None:
        return "the answer body was not saved (streamed without the addon's stream callable)"
    return None


# -- the recorded expectations ----------------------------------------------------------------


def _as_bytes(value: Any) -> bytes | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return bytes(value)


def request_body(req: http.Request) -> bytes:
    """A request body as the upstream reads it (content-decoded; raw bytes if undecodable)."""
    return req.get_content(strict=False) or b""


def original_request(f: http.HTTPFlow) -> bytes:
    """The client's request body: ``toolvocab_request`` when the addon changed it, else the saved one."""
    saved = _as_bytes(f.metadata.get(META_REQUEST))
    return saved if saved is not None else request_body(f.request)


def original_upstream(f: http.HTTPFlow) -> bytes | None:
    """The upstream's answer bytes: ``toolvocab_upstream`` when the addon changed them, else the saved ones."""
    if f.response is None:
        return None
    saved = _as_bytes(f.metadata.get(META_UPSTREAM))
    return saved if saved is not None else (f.response.raw_content or b"")


def comparable_record(record: Any) -> Any:
    if not isinstance(record, dict):
        return record
    return {k: v for k, v in record.items() if k not in RUN_SPECIFIC}


@dataclasses.dataclass
class Outcome:
    """What one flow looks like after the addon: the recorded one, or a replay's."""

    request: bytes  # what the upstream receives (content-decoded)
    response: bytes | None  # what the client receives (raw bytes), None without a response
    record: dict | None
    diff: str | None
    has_request: bool  # toolvocab_request present
    has_upstream: bool  # toolvocab_upstream present
    marked: str
    comment: str

    @classmethod
    def of(cls, f: http.HTTPFlow, response: bytes | None = None) -> Outcome:
        resp = response if response is not None else (f.response.raw_content if f.response else None)
        return cls(
            request=request_body(f.request),
            response=None if f.response is None else (resp or b""),
            record=comparable_record(f.metadata.get(META_RECORD)),
            diff=f.metadata.get(META_DIFF),
            has_request=f.metadata.get(META_REQUEST) is not None,
            has_upstream=f.metadata.get(META_UPSTREAM) is not None,
            marked=f.marked or "",
            comment=f.comment or "",
        )


def records_match(expected: Any, got: Any) -> bool:
    """Records are equal, except that a field the recording does not have yet (the record
    grew) may hold its empty default (``None``, ``[]``, ``{}``, ``0``, ``False``)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        got = {k: v for k, v in got.items() if k in expected or v not in (None, [], {}, 0, False, "")}
    return expected == got


def mismatches(expected: Outcome, got: Outcome) -> list[str]:
    """What differs, one short label per aspect (empty: the replay matches)."""
    out = []
    if expected.request != got.request:
        out.append("request the upstream receives")
    if expected.response != got.response:
        out.append("response the client receives")
    if not records_match(expected.record, got.record):
        out.append("toolvocab record")
    if (expected.diff or None) != (got.diff or None):
        out.append("toolvocab_diff")
    if expected.has_request != got.has_request:
        out.append("toolvocab_request presence")
    if expected.has_upstream != got.has_upstream:
        out.append("toolvocab_upstream presence")
    if (expected.marked, expected.comment) != (got.marked, got.comment):
        out.append("marker/comment")
    return out


# -- replay -----------------------------------------------------------------------------------


random_chunks = harness.random_chunks


def replay_options(f: http.HTTPFlow) -> dict[str, Any]:
    """The addon options for replaying ``f``: ``toolvocab_replay`` metadata, else the record's mode."""
    opts = f.metadata.get(META_REPLAY)
    opts = dict(opts) if isinstance(opts, dict) else {}
    record = f.metadata.get(META_RECORD) or {}
    opts.setdefault("mode", record.get("mode") or "auto")
    return opts


@dataclasses.dataclass
class Replay:
    flow: http.HTTPFlow  # the replayed flow: what -w would save now
    expected: Outcome
    got: Outcome
    streamed: str  # "callable", "passthrough", "buffered" or "none"
    seed: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


class Replayer:
    """The addon script loaded once in a mitmproxy test context; replays flows through it.

    ``with Replayer() as r: result = r.replay(flow, seed=3)``
    """

    def __init__(self) -> None:
        self._cm: Any = None
        self.tctx: Any = None
        self.module: Any = None
        self._profile_files: dict[str, str] = {}
        self._tmpdir: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Replayer:
        self._tmpdir = tempfile.TemporaryDirectory(prefix="toolvocab-replay-")
        self._cm = harness.script_context()  # the script loaded and in the addon chain
        self.tctx, self.module = self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._cm.__exit__(*exc)
        finally:
            if self._tmpdir is not None:
                self._tmpdir.cleanup()

    @property
    def addon(self) -> Any:
        return harness.core(self.module)

    def _activate(self) -> None:
        harness.activate(self.tctx)  # another mitmproxy test context may have been created since

    def _profiles_path(self, text: str | None) -> str | None:
        if not text:
            return None
        if text not in self._profile_files:
            assert self._tmpdir is not None
            p = Path(self._tmpdir.name) / f"profiles-{len(self._profile_files)}.toml"
            p.write_text(text)
            self._profile_files[text] = str(p)
        return self._profile_files[text]

    def configure(self, opts: dict[str, Any]) -> None:
        self._activate()
        self.tctx.configure(
            self.module,
            toolvocab_mode=opts.get("mode") or "auto",
            toolvocab_hosts=opts.get("hosts") or None,
            toolvocab_profiles=self._profiles_path(opts.get("profiles")),
            toolvocab_record=None,
            toolvocab_redact="true",
        )

    def replay(self, saved: http.HTTPFlow, seed: int = 0, *, lo: int = 1, hi: int = 64) -> Replay:
        """Replay a saved flow (not modified) and compare with what it recorded."""
        why = replayable(saved)
        if why is not None:
            raise ValueError(f"flow {saved.id} cannot be replayed: {why}")
        expected = Outcome.of(saved)
        f = prepare(saved)
        self.configure(replay_options(saved))
        out, kind = asyncio.run(self._drive(f, random.Random(seed), lo, hi))
        if f.id in self.addon._states:
            raise AssertionError(f"per-flow state of {f.id} outlived the flow")
        got = Outcome.of(f, response=out)
        problems = mismatches(expected, got)
        if kind == "callable" and f.response is not None and f.response.raw_content != out:
            problems.append("saved response.raw_content differs from the bytes the stream callable emitted")
        return Replay(flow=f, expected=expected, got=got, streamed=kind, seed=seed, problems=problems)

    async def _drive(self, f: http.HTTPFlow, rnd: random.Random, lo: int, hi: int, blanks: float = 0.0) -> tuple[bytes | None, str]:
        """The hooks over ``f`` as mitmproxy's proxy core calls them (``harness.drive``): the
        stream callable gets the upstream body in pieces of ``lo..hi`` bytes, after each of which
        an empty piece ``b""`` comes with probability ``blanks``, then the final ``b""``. What the
        client got, and how it was sent."""
        got = await harness.drive(self.tctx, self.module, f, rnd, lo=lo, hi=hi, blanks=blanks)
        return got.out, got.streamed


def prepare(saved: http.HTTPFlow) -> http.HTTPFlow:
    """A copy of ``saved`` as the addon first saw it: the original request and upstream answer,
    no addon metadata, no marker or comment, ``live`` (G11). Same flow id."""
    f = clone(saved)
    body = original_request(saved)
    upstream = original_upstream(saved)
    for key in ADDON_KEYS:
        f.metadata.pop(key, None)
    f.marked = ""
    f.comment = ""
    f.live = True
    if saved.metadata.get(META_REQUEST) is not None:
        f.request.content = body
    if f.response is not None:
        f.response.raw_content = upstream
        if "content-length" in f.response.headers:
            f.response.headers["content-length"] = str(len(upstream or b""))
    return f


def replay_file(path: str | os.PathLike, seeds: Iterable[int] = (0,), replayer: Replayer | None = None) -> Iterator[Replay]:
    """Replay every flow of a file with each seed."""
    flows = load_flows(path)
    if replayer is None:
        with Replayer() as r:
            yield from _replay_all(r, flows, seeds)
    else:
        yield from _replay_all(replayer, flows, seeds)


def _replay_all(r: Replayer, flows: list[http.HTTPFlow], seeds: Iterable[int]) -> Iterator[Replay]:
    seeds = list(seeds)
    for f in flows:
        if replayable(f) is not None:
            continue
        for seed in seeds:
            yield r.replay(f, seed)


# -- tool calls out of bodies (independent of the addon's own parsers) --------------------------


@dataclasses.dataclass
class Call:
    name: str
    arguments: Any  # parsed JSON when possible, else the raw text
    id: str | None = None
    namespace: str | None = None
    object_arguments: bool = False  # Chat/Responses: arguments arrived as an object, not a string

    @property
    def qualified(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def key(self) -> str:
        """``name {compact sorted JSON}``: what the manifest's ``client_calls`` lists."""
        args = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        return f"{self.qualified} {args}"

    def label(self) -> str:
        name = f"{self.namespace}{self.name}" if self.namespace and self.namespace.endswith(("__", ".", "/", ":")) else (
            f"{self.namespace}/{self.name}" if self.namespace else self.name)
        args = self.arguments if isinstance(self.arguments, str) else json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        ident = f"  [id {self.id!r}]" if self.id is not None else ""
        kind = "  (arguments as a JSON object)" if self.object_arguments else ""
        return f"{name} {args}{ident}{kind}"


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def sse_events(data: bytes) -> list[tuple[str | None, str]]:
    """``(event name, data text)`` of every SSE event (any WHATWG line ending)."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        name, lines = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
        if lines:
            out.append((name, "\n".join(lines)))
    return out


def _json_units(data: bytes) -> list[Any]:
    """The JSON objects an answer body carries: the body itself, its array elements, or the
    ``data:`` payload of each SSE event."""
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            value = json.loads(data)
        except ValueError:
            value = None
        if isinstance(value, list):
            return value
        if value is not None:
            return [value]
    units = []
    for _, text in sse_events(data):
        try:
            units.append(json.loads(text))
        except ValueError:
            continue
    return units


def _unwrap_gemini(unit: Any) -> Any:
    if isinstance(unit, dict) and isinstance(unit.get("response"), dict) and "candidates" not in unit:
        return unit["response"]
    return unit


def tool_calls(dialect: str | None, data: bytes | None) -> list[Call]:
    """The tool calls a client would assemble from an answer body (JSON, SSE or a JSON array)."""
    if not data:
        return []
    units = _json_units(data)
    if dialect == "anthropic":
        return _anthropic_calls(units)
    if dialect == "openai_chat":
        return _chat_calls(units)
    if dialect == "openai_responses":
        return _responses_calls(units)
    if dialect == "gemini":
        return _gemini_calls(units)
    return []


def _anthropic_calls(units: list[Any]) -> list[Call]:
    calls: list[Call] = []
    blocks: dict[int, dict] = {}
    for u in units:
        if not isinstance(u, dict):
            continue
        if u.get("type") == "message" and isinstance(u.get("content"), list):
            for b in u["content"]:
                if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use"):
                    calls.append(Call(str(b.get("name")), b.get("input"), b.get("id")))
        elif u.get("type") == "content_block_start" and isinstance(u.get("content_block"), dict):
            b = u["content_block"]
            if b.get("type") in ("tool_use", "server_tool_use"):
                blocks[u.get("index", len(blocks))] = {"name": str(b.get("name")), "id": b.get("id"), "json": "", "input": b.get("input")}
        elif u.get("type") == "content_block_delta" and isinstance(u.get("delta"), dict):
            d = u["delta"]
            if d.get("type") == "input_json_delta" and u.get("index") in blocks:
                blocks[u["index"]]["json"] += str(d.get("partial_json", ""))
    for _, b in sorted(blocks.items()):
        calls.append(Call(b["name"], _args(b["json"]) if b["json"] else (b["input"] or {}), b["id"]))
    return calls


def _chat_calls(units: list[Any]) -> list[Call]:
    calls: list[Call] = []
    slots: dict[tuple[int, int], dict] = {}
    for u in units:
        if not isinstance(u, dict) or not isinstance(u.get("choices"), list):
            continue
        for choice in u["choices"]:
            if not isinstance(choice, dict):
                continue
            message = choice.get("message")
            if isinstance(message, dict):
                for tc in message.get("tool_calls") or ():
                    if isinstance(tc, dict):
                        fn = tc.get("function") or tc.get("custom") or {}
                        raw = fn.get("arguments", fn.get("input"))
                        calls.append(Call(str(fn.get("name")), _args(raw), tc.get("id"), object_arguments=isinstance(raw, (dict, list))))
                legacy = message.get("function_call")
                if isinstance(legacy, dict):
                    calls.append(Call(str(legacy.get("name")), _args(legacy.get("arguments"))))
            delta = choice.get("delta")
            if isinstance(delta, dict):
                for n, tc in enumerate(delta.get("tool_calls") or ()):
                    if not isinstance(tc, dict):
                        continue
                    key = (choice.get("index", 0), tc.get("index", n))
                    slot = slots.setdefault(key, {"name": "", "args": "", "id": None, "obj": None})
                    if tc.get("id"):
                        slot["id"] = slot["id"] or tc["id"]
                    fn = tc.get("function") or tc.get("custom") or {}
                    if isinstance(fn.get("name"), str):
                        slot["name"] += fn["name"]  # as the openai SDKs assemble it
                    piece = fn.get("arguments", fn.get("input"))
                    if isinstance(piece, str):
                        slot["args"] += piece
                    elif piece is not None:
                        slot["obj"] = piece
    for _, s in sorted(slots.items()):
        as_object = s["obj"] is not None and not s["args"]
        calls.append(Call(s["name"], s["obj"] if as_object else _args(s["args"]), s["id"], object_arguments=as_object))
    return calls


def _responses_item_call(item: dict) -> Call:
    args = item.get("arguments") if item.get("type") == "function_call" else item.get("input")
    return Call(str(item.get("name")), _args(args), item.get("call_id"), item.get("namespace"),
                object_arguments=isinstance(args, (dict, list)))


def _responses_calls(units: list[Any]) -> list[Call]:
    done: dict[int, Call] = {}
    final: list[Call] | None = None
    for u in units:
        if not isinstance(u, dict):
            continue
        if isinstance(u.get("output"), list) and u.get("object") == "response":
            final = [_responses_item_call(i) for i in u["output"] if isinstance(i, dict) and i.get("type") in ("function_call", "custom_tool_call")]
        elif u.get("type") == "response.output_item.done" and isinstance(u.get("item"), dict):
            item = u["item"]
            if item.get("type") in ("function_call", "custom_tool_call"):
                done[u.get("output_index", len(done))] = _responses_item_call(item)
        elif u.get("type") in ("response.completed", "response.incomplete") and isinstance(u.get("response"), dict) and not done:
            out = u["response"].get("output")
            if isinstance(out, list):
                final = [_responses_item_call(i) for i in out if isinstance(i, dict) and i.get("type") in ("function_call", "custom_tool_call")]
    if done:
        return [c for _, c in sorted(done.items())]
    return final or []


def _gemini_calls(units: list[Any]) -> list[Call]:
    calls: list[Call] = []
    for u in units:
        u = _unwrap_gemini(u)
        if not isinstance(u, dict):
            continue
        for cand in u.get("candidates") or ():
            content = cand.get("content") if isinstance(cand, dict) else None
            for part in (content or {}).get("parts") or () if isinstance(content, dict) else ():
                fc = part.get("functionCall") if isinstance(part, dict) else None
                if isinstance(fc, dict):
                    calls.append(Call(str(fc.get("name")), fc.get("args"), fc.get("id")))
    return calls


# -- request side -----------------------------------------------------------------------------


def parse_json(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _gemini_request(body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("request"), dict) and "contents" in body["request"]:
        return body["request"]
    return body


def declared_names(dialect: str | None, body: Any) -> list[str]:
    """Tool names a request declares, in order (Responses namespace members as ``ns/name``)."""
    names: list[str] = []
    if not isinstance(body, dict):
        return names
    if dialect == "gemini":
        body = _gemini_request(body)
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if dialect == "anthropic" and isinstance(tool.get("name"), str):
            names.append(tool["name"])
        elif dialect == "openai_chat":
            inner = tool.get("function") or tool.get("custom") or {}
            if isinstance(inner.get("name"), str):
                names.append(inner["name"])
        elif dialect == "openai_responses":
            if tool.get("type") == "namespace":
                names += [f"{tool.get('name')}/{t.get('name')}" for t in tool.get("tools") or () if isinstance(t, dict)]
            elif isinstance(tool.get("name"), str):
                names.append(tool["name"])
        elif dialect == "gemini":
            for key in ("functionDeclarations", "function_declarations"):
                names += [d.get("name") for d in tool.get(key) or () if isinstance(d, dict) and isinstance(d.get("name"), str)]
    if dialect == "openai_chat":
        names += [f.get("name") for f in body.get("functions") or () if isinstance(f, dict) and isinstance(f.get("name"), str)]
    return names


def _text_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
        return out
    return []


def system_slots(dialect: str | None, body: Any) -> list[str]:
    """Every text in a request's system slots: Anthropic ``system`` and system-role messages;
    Chat system/developer messages; Responses ``instructions`` and system/developer input
    messages; Gemini ``systemInstruction`` (Code Assist envelope included)."""
    texts: list[str] = []
    if not isinstance(body, dict):
        return texts
    if dialect == "anthropic":
        texts += _text_of(body.get("system"))
        texts += [t for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") == "system" for t in _text_of(m.get("content"))]
    elif dialect == "openai_chat":
        texts += [t for m in body.get("messages") or () if isinstance(m, dict) and m.get("role") in ("system", "developer") for t in _text_of(m.get("content"))]
    elif dialect == "openai_responses":
        texts += _text_of(body.get("instructions"))
        items = body.get("input")
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("type", "message") == "message" and item.get("role") in ("system", "developer"):
                texts += _text_of(item.get("content"))
    elif dialect == "gemini":
        req = _gemini_request(body)
        for key in ("systemInstruction", "system_instruction"):
            value = req.get(key)
            if isinstance(value, str):
                texts.append(value)
            elif isinstance(value, dict):
                texts += _text_of(value.get("parts"))
    return texts


def system_text_problems(dialect: str | None, body: Any, sentence: str | None) -> list[str]:
    """System texts that are neither a neutral text nor the addon's own sentence (nor both)."""
    bad = []
    for text in system_slots(dialect, body):
        rest = text
        if sentence:
            rest = rest.replace("\n\n" + sentence, "").replace(sentence, "")
        if rest and rest not in NEUTRAL_TEXTS:
            bad.append(text[:120] + ("…" if len(text) > 120 else ""))
    return bad


# -- scrubbing --------------------------------------------------------------------------------


def _neutral_content(content: Any, text: str) -> Any:
    """``content`` with every text replaced by ``text`` (structure, cache_control… kept)."""
    if isinstance(content, str):
        return text
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(text)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append({**part, "text": text})
            else:
                out.append(part)
        return out
    return content


def _has_context_marker(text: str) -> bool:
    return any(m in text for m in CONTEXT_MARKERS)


def _scrub_user_parts(content: Any) -> Any:
    if isinstance(content, str):
        return NEUTRAL_CONTEXT if _has_context_marker(content) else content
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str) and _has_context_marker(part["text"]):
                out.append({**part, "text": NEUTRAL_CONTEXT})
            elif isinstance(part, str) and _has_context_marker(part):
                out.append(NEUTRAL_CONTEXT)
            else:
                out.append(part)
        return out
    return content


def _scrub_descriptions(tools: Any, dialect: str | None) -> None:
    for tool in tools if isinstance(tools, list) else ():
        if not isinstance(tool, dict):
            continue
        for holder in (tool, tool.get("function"), tool.get("custom")):
            if isinstance(holder, dict) and isinstance(holder.get("description"), str):
                holder["description"] = NEUTRAL_DESCRIPTION
        if isinstance(tool.get("tools"), list):  # Responses namespace
            _scrub_descriptions(tool["tools"], dialect)
        for key in ("functionDeclarations", "function_declarations"):
            for decl in tool.get(key) or ():
                if isinstance(decl, dict) and isinstance(decl.get("description"), str):
                    decl["description"] = NEUTRAL_DESCRIPTION


def scrub_body(dialect: str | None, body: Any, *, descriptions: bool = True) -> Any:
    """A copy of a request body with every system slot set to :data:`NEUTRAL_SYSTEM`, client
    context injected into user turns set to :data:`NEUTRAL_CONTEXT` and (``descriptions``)
    top-level tool descriptions set to :data:`NEUTRAL_DESCRIPTION`. Tool names, schemas,
    messages and tool calls are kept."""
    body = copy.deepcopy(body)
    if not isinstance(body, dict):
        return body
    target = _gemini_request(body) if dialect == "gemini" else body
    if dialect == "anthropic":
        meta = target.get("metadata")
        if isinstance(meta, dict) and isinstance(meta.get("user_id"), str):
            meta["user_id"] = REDACTED
        if target.get("system") not in (None, "", []):
            target["system"] = _neutral_content(target["system"], NEUTRAL_SYSTEM)
        for m in target.get("messages") or ():
            if isinstance(m, dict):
                if m.get("role") == "system":
                    m["content"] = _neutral_content(m.get("content"), NEUTRAL_SYSTEM)
                elif m.get("role") == "user":
                    m["content"] = _scrub_user_parts(m.get("content"))
    elif dialect == "openai_chat":
        for m in target.get("messages") or ():
            if isinstance(m, dict):
                if m.get("role") in ("system", "developer"):
                    m["content"] = _neutral_content(m.get("content"), NEUTRAL_SYSTEM)
                elif m.get("role") == "user":
                    m["content"] = _scrub_user_parts(m.get("content"))
    elif dialect == "openai_responses":
        if isinstance(target.get("instructions"), (str, list)) and target["instructions"]:
            target["instructions"] = _neutral_content(target["instructions"], NEUTRAL_SYSTEM)
        items = target.get("input")
        for item in items if isinstance(items, list) else ():
            if isinstance(item, dict) and item.get("type", "message") == "message":
                if item.get("role") in ("system", "developer"):
                    item["content"] = _neutral_content(item.get("content"), NEUTRAL_SYSTEM)
                elif item.get("role") == "user":
                    item["content"] = _scrub_user_parts(item.get("content"))
        if isinstance(target.get("client_metadata"), dict):
            target["client_metadata"] = {k: REDACTED for k in target["client_metadata"]}
    elif dialect == "gemini":
        for key in ("systemInstruction", "system_instruction"):
            value = target.get(key)
            if isinstance(value, str) and value:
                target[key] = NEUTRAL_SYSTEM
            elif isinstance(value, dict) and isinstance(value.get("parts"), list):
                value["parts"] = _neutral_content(value["parts"], NEUTRAL_SYSTEM)
        for content in target.get("contents") or ():
            if isinstance(content, dict) and content.get("role", "user") == "user":
                content["parts"] = _scrub_user_parts(content.get("parts"))
    if descriptions:
        _scrub_descriptions(target.get("tools"), dialect)
    return body


def _scrub_headers(headers: http.Headers) -> list[str]:
    changed = []
    for name in list(headers.keys()):
        low = name.lower()
        if low in COOKIE_HEADERS:
            del headers[name]
            changed.append(f"dropped {name}")
        elif low in CREDENTIAL_HEADERS or low in IDENTIFYING_HEADERS:
            values = headers.get_all(name)
            if any(v != REDACTED for v in values):
                headers.set_all(name, [REDACTED] * len(values))
                changed.append(f"redacted {name}")
    return changed


def scrub_flow(f: http.HTTPFlow, *, descriptions: bool = True) -> list[str]:
    """Scrub ``f`` in place: credentials, cookies, system prompts, injected context, tool
    descriptions, in both the saved request and ``toolvocab_request``. Returns what changed.
    The saved expectations are no longer consistent afterwards: re-bless the flow."""
    notes = _scrub_headers(f.request.headers)
    if f.response is not None:
        notes += _scrub_headers(f.response.headers)
    path = _KEY_PARAM.sub(lambda m: m.group(1) + REDACTED, f.request.path)
    if path != f.request.path:
        f.request.path = path
        notes.append("redacted a key= query parameter")
    dialect = (f.metadata.get(META_RECORD) or {}).get("dialect")
    for label, raw in (("saved request", request_body(f.request)), ("toolvocab_request", _as_bytes(f.metadata.get(META_REQUEST)))):
        body = parse_json(raw)
        if body is None:
            continue
        new = scrub_body(dialect, body, descriptions=descriptions)
        if new != body:
            data = json.dumps(new, ensure_ascii=False, separators=(",", ":")).encode()
            if label == "saved request":
                f.request.content = data
            else:
                f.metadata[META_REQUEST] = data
            notes.append(f"replaced system prompt / client context / tool descriptions in the {label}")
    return notes


_SECRETISH = (
    re.compile(rb"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{3,}"),
    re.compile(rb"(?i)bearer\s+(?!<redacted>)[A-Za-z0-9._~+/=-]{3,}"),
    re.compile(rb"(?i)dummy"),
    re.compile(rb"(?i)AIza[0-9A-Za-z_-]{10,}"),
)


def leaks(path: str | os.PathLike) -> list[str]:
    """Credentials, cookies or client prompt text found in a flow file (empty: clean)."""
    problems = []
    raw = Path(path).read_bytes()
    blobs = [("file bytes", raw)]
    for f in load_flows(path):
        for side, msg in (("request", f.request), ("response", f.response)):
            if msg is None:
                continue
            for name, value in msg.headers.items(multi=True):
                low = name.lower()
                if low in COOKIE_HEADERS:
                    problems.append(f"flow {f.id[:8]}: {side} header {name} present")
                elif low in CREDENTIAL_HEADERS and value != REDACTED:
                    problems.append(f"flow {f.id[:8]}: {side} header {name} not redacted")
            blobs.append((f"flow {f.id[:8]} {side} body", msg.get_content(strict=False) or b""))
        for key in (META_REQUEST, META_UPSTREAM):
            if f.metadata.get(key) is not None:
                blobs.append((f"flow {f.id[:8]} {key}", _as_bytes(f.metadata[key]) or b""))
        if _KEY_PARAM.search(f.request.path) and REDACTED not in f.request.path:
            problems.append(f"flow {f.id[:8]}: key parameter in the path")
        dialect = (f.metadata.get(META_RECORD) or {}).get("dialect")
        sentence = (f.metadata.get(META_RECORD) or {}).get("prompt_sentence")
        for label, data in (("saved request", request_body(f.request)), ("toolvocab_request", _as_bytes(f.metadata.get(META_REQUEST)))):
            body = parse_json(data)
            for text in system_text_problems(dialect, body, sentence):
                problems.append(f"flow {f.id[:8]}: {label} system slot holds client text: {text!r}")
            if data and any(m.encode() in data for m in CONTEXT_MARKERS):
                problems.append(f"flow {f.id[:8]}: {label} holds client-injected context")
    for label, blob in blobs:
        for pattern in _SECRETISH:
            m = pattern.search(blob)
            if m:
                problems.append(f"{label}: looks like a credential: {m.group(0)[:40]!r}")
    return sorted(set(problems))


# -- readable diffs ---------------------------------------------------------------------------


def _decision_lines(record: dict | None) -> list[str]:
    lines = []
    for d in (record or {}).get("decisions") or ():
        name = f"{d.get('namespace') or ''}{d.get('name')}"
        if d.get("action") in ("rename", "fit"):
            target = f"{d.get('target_namespace') or ''}{d.get('target') or d.get('name')}"
            lines.append(f"{name} → {target}  ({d.get('action')} at {d.get('step')}: {d.get('reason')})")
        else:
            lines.append(f"{name}  ({d.get('action')} at {d.get('step')}: {d.get('reason')})")
    return lines


def _side_by_side(title: str, expected: list[str], got: list[str]) -> list[str]:
    out = [f"{title}:"]
    if not expected and not got:
        return out + ["    (none)"]
    out.append("  expected:")
    out += [f"    {line}" for line in expected] or ["    (none)"]
    out.append("  got:")
    out += [f"    {line}" for line in got] or ["    (none)"]
    return out


def _pretty(data: bytes | None) -> list[str]:
    value = parse_json(data)
    if value is not None:
        return json.dumps(value, indent=1, ensure_ascii=False, sort_keys=True).splitlines()
    if data is None:
        return []
    return data.decode("utf-8", "replace").splitlines()


def _unified(expected: list[str], got: list[str], limit: int = 40) -> list[str]:
    lines = list(difflib.unified_diff(expected, got, "expected", "got", n=1, lineterm=""))
    if len(lines) > limit:
        lines = lines[:limit] + [f"... ({len(lines) - limit} more diff lines)"]
    return ["    " + line[:300] for line in lines]


def _record_field_lines(expected: dict | None, got: dict | None) -> list[str]:
    expected, got = expected or {}, got or {}
    lines = []
    for key in sorted(set(expected) | set(got)):
        if key == "decisions" or expected.get(key) == got.get(key):
            continue
        lines.append(f"    {key}: {json.dumps(expected.get(key), ensure_ascii=False)[:200]} → {json.dumps(got.get(key), ensure_ascii=False)[:200]}")
    return lines


def flow_title(f: http.HTTPFlow) -> str:
    record = f.metadata.get(META_RECORD) or {}
    streamed = "streamed" if record.get("streamed") else "not streamed"
    return (f"flow {f.id} — {record.get('dialect')}, {streamed}, mode {record.get('mode')}, "
            f"{f.request.method} {f.request.path.split('?', 1)[0]}")


def render_failure(saved: http.HTTPFlow, result: Replay, source: str = "") -> str:
    """A readable account of a replay that does not match the recording: tool calls as the
    client gets them (expected vs got), the addon's decisions, record fields, and where the
    request the upstream receives differs."""
    exp, got = result.expected, result.got
    dialect = (saved.metadata.get(META_RECORD) or {}).get("dialect")
    lines = [f"{source}{' ' if source else ''}{flow_title(saved)} (chunk seed {result.seed})",
             f"differs in: {', '.join(result.problems)}"]
    upstream_calls = tool_calls(dialect, original_upstream(saved))
    lines += [f"upstream answered: {c.label()}" for c in upstream_calls] or ["upstream answered: no tool calls"]
    exp_calls = [c.label() for c in tool_calls(dialect, exp.response)]
    got_calls = [c.label() for c in tool_calls(dialect, got.response)]
    if exp_calls == got_calls:
        lines += [f"tool calls the client receives (as recorded): {c}" for c in exp_calls] or ["tool calls the client receives: none, as recorded"]
    else:
        lines += _side_by_side("tool calls the client receives", exp_calls, got_calls)
    exp_dec, got_dec = _decision_lines(exp.record), _decision_lines(got.record)
    if exp_dec != got_dec:
        lines += _side_by_side("decisions", exp_dec, got_dec)
    fields = _record_field_lines(exp.record, got.record)
    if fields:
        lines += ["record fields (expected → got):"] + fields
    if exp.response != got.response and exp_calls == got_calls:
        lines += ["the client's bytes differ outside the tool calls:"] + _unified(_answer_lines(exp.response), _answer_lines(got.response))
    if exp.request != got.request:
        exp_body, got_body = parse_json(exp.request), parse_json(got.request)
        exp_names, got_names = declared_names(dialect, exp_body), declared_names(dialect, got_body)
        lines.append("request the upstream receives:")
        if exp_names != got_names:
            lines += ["  " + line for line in _side_by_side("tool names sent upstream", [", ".join(exp_names)], [", ".join(got_names)])]
        exp_sys = [t.replace("\n", "\\n") for t in system_slots(dialect, exp_body)]
        got_sys = [t.replace("\n", "\\n") for t in system_slots(dialect, got_body)]
        if exp_sys != got_sys:
            lines += ["  " + line for line in _side_by_side("system texts", exp_sys, got_sys)]
        lines += _unified(_pretty(exp.request), _pretty(got.request))
    if (exp.diff or "") != (got.diff or ""):
        lines += ["toolvocab_diff:"] + _unified((exp.diff or "").splitlines(), (got.diff or "").splitlines())
    if (exp.marked, exp.comment) != (got.marked, got.comment):
        lines.append(f"marker/comment: {exp.marked!r} {exp.comment!r} → {got.marked!r} {got.comment!r}")
    lines.append("If this change is intended: uv run python tests/flowtool.py bless <file>")
    return "\n".join(lines)


def _answer_lines(data: bytes | None) -> list[str]:
    """An answer body as readable lines: one line per SSE event or pretty JSON."""
    if data is None:
        return []
    value = parse_json(data)
    if value is not None:
        return json.dumps(value, indent=1, ensure_ascii=False).splitlines()
    return [f"{name or 'message'}: {text}" for name, text in sse_events(data)] or data.decode("utf-8", "replace").splitlines()


def describe_flow(f: http.HTTPFlow) -> str:
    """What the addon did to a saved flow, from its metadata: request-side changes, tool calls
    as the upstream sent them and as the client got them, decisions and notes."""
    record = f.metadata.get(META_RECORD) or {}
    dialect = record.get("dialect")
    lines = [flow_title(f)]
    if record.get("skipped"):
        lines.append(f"skipped: {record['skipped']}")
    client_body = parse_json(original_request(f))
    upstream_body = parse_json(request_body(f.request))
    before, after = declared_names(dialect, client_body), declared_names(dialect, upstream_body)
    lines.append("request side:")
    lines.append(f"  client declared: {', '.join(before) or '(none)'}")
    if before != after:
        lines.append(f"  upstream got:    {', '.join(after) or '(none)'}")
    if record.get("prompt_sentence"):
        lines.append(f"  {'added' if record.get('request_changed') else 'would add'} to the system prompt: {record['prompt_sentence']}")
    if not f.metadata.get(META_REQUEST):
        lines.append("  request body unchanged")
    lines.append("answer side:")
    up = tool_calls(dialect, original_upstream(f))
    cl = tool_calls(dialect, f.response.raw_content if f.response else None)
    lines += [f"  upstream: {c.label()}" for c in up] or ["  upstream: no tool calls"]
    lines += [f"  client:   {c.label()}" for c in cl] or ["  client:   no tool calls"]
    if f.response is not None:
        lines.append(f"  status {f.response.status_code}; answer {'changed' if f.metadata.get(META_UPSTREAM) is not None else 'unchanged'}")
    if f.metadata.get(META_DIFF):
        lines.append("toolvocab_diff:")
        lines += ["  " + line for line in str(f.metadata[META_DIFF]).splitlines()]
    for note in record.get("notes") or ():
        lines.append(f"note: {note}")
    return "\n".join(lines)


# -- manifest ---------------------------------------------------------------------------------


def read_manifest(path: Path | None = None) -> dict[str, Any]:
    path = path or FLOWS_DIR / "MANIFEST.toml"
    if not path.exists():
        return {"flows": {}}
    with open(path, "rb") as fp:
        data = tomllib.load(fp)
    data.setdefault("flows", {})
    return data


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {value!r} to the manifest")


FLOW_KEYS = ("dialect", "streamed", "bugs", "source", "expected", "client_calls", "note")


def write_manifest(data: dict[str, Any], path: Path | None = None, header: str = "") -> None:
    """Write the manifest (top-level scalars/lists, then one ``[flows."file"]`` table each)."""
    lines = [header.rstrip()] if header else []
    top = [f"{key} = {_toml_value(value)}" for key, value in data.items() if key != "flows"]
    if top:
        lines += [""] + top
    for name in sorted(data.get("flows", {})):
        entry = data["flows"][name]
        lines += ["", f"[flows.{_toml_value(name)}]"]
        for key in FLOW_KEYS:
            if key in entry and entry[key] is not None:
                lines.append(f"{key} = {_toml_value(entry[key])}")
        for key in sorted(set(entry) - set(FLOW_KEYS)):
            lines.append(f"{key} = {_toml_value(entry[key])}")
    path = path or FLOWS_DIR / "MANIFEST.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines).lstrip("\n") + "\n")


MANIFEST_HEADER = """\
# The flow corpus: one table per file under flows/ (path relative to flows/).
#   dialect       anthropic | openai_chat | openai_responses | gemini (from the flow's record)
#   streamed      the answer went through the addon's stream callable
#   bugs          bug-report ids the flow exemplifies (BR-nn), possibly none
#   source        "harness" (tests/make_flows.py) | "agent:<name>" (a real agent run) | "user"
#   expected      repair (the client must get a changed tool call), leave (the answer must reach
#                 the client unchanged), pass (an error answer passed through)
#   client_calls  the tool-call names the client receives, as recorded
#   note          why, especially where the addon does not (yet) do what the bug report asks
# tests/test_flows.py checks every entry against its file; `flowtool add` appends entries.
# Re-bless a flow: uv run python tests/flowtool.py bless flows/<file>  (see docs/flows.md)"""


def manifest_entry(f: http.HTTPFlow, *, source: str, bugs: Iterable[str] = (), expected: str | None = None,
                   note: str | None = None) -> dict[str, Any]:
    """A manifest table for a (blessed) flow, derived from its record and saved answer."""
    record = f.metadata.get(META_RECORD) or {}
    calls = client_call_keys(f)
    if expected is None:
        if f.response is not None and not 200 <= f.response.status_code < 300:
            expected = "pass"
        else:
            expected = "repair" if record.get("response_changed") else "leave"
    entry: dict[str, Any] = {
        "dialect": record.get("dialect"),
        "streamed": bool(record.get("streamed")),
        "bugs": sorted(set(bugs)),
        "source": source,
        "expected": expected,
        "client_calls": calls,
    }
    if note:
        entry["note"] = note
    return entry


def client_calls(f: http.HTTPFlow) -> list[Call]:
    """The tool calls the client receives in a saved flow."""
    dialect = (f.metadata.get(META_RECORD) or {}).get("dialect")
    return tool_calls(dialect, f.response.raw_content if f.response else None)


def client_call_keys(f: http.HTTPFlow) -> list[str]:
    return [c.key() for c in client_calls(f)]


#: Dialects whose tool calls carry ids the client pairs results by (Gemini pairs by name).
ID_DIALECTS = ("anthropic", "openai_chat", "openai_responses")


def semantic_problems(f: http.HTTPFlow, entry: dict[str, Any]) -> list[str]:
    """Where a saved flow contradicts its manifest entry: the tool calls the client receives,
    what ``expected`` promises, and the contracts every repaired answer keeps (ids present
    and distinct; Chat/Responses arguments as strings)."""
    problems = []
    record = f.metadata.get(META_RECORD) or {}
    dialect = record.get("dialect")
    calls = client_calls(f)
    keys = [c.key() for c in calls]
    if keys != list(entry.get("client_calls") or []):
        problems.append(f"the client receives {keys}, the manifest says {entry.get('client_calls')}")
    if entry.get("dialect") != dialect:
        problems.append(f"dialect is {dialect}, the manifest says {entry.get('dialect')}")
    if bool(entry.get("streamed")) != bool(record.get("streamed")):
        problems.append(f"streamed is {bool(record.get('streamed'))}, the manifest says {entry.get('streamed')}")
    expected = entry.get("expected")
    upstream = original_upstream(f)
    delivered = f.response.raw_content if f.response else None
    status = f.response.status_code if f.response else None
    changed = delivered != upstream
    if bool(record.get("response_changed")) != changed and record.get("mode") != "observe":
        problems.append(f"the record says response_changed={bool(record.get('response_changed'))}, "
                        f"but the client's bytes {'differ from' if changed else 'equal'} the upstream's")
    if expected == "repair":
        if not changed:
            problems.append("expected a repaired answer, but the client receives the upstream's bytes")
    elif expected == "leave":
        if changed:
            problems.append("expected the answer to reach the client unchanged, but it was changed")
    elif expected == "pass":
        if status is None or 200 <= status < 300:
            problems.append(f"expected an error answer passed through, got status {status}")
        if delivered != upstream:
            problems.append("the error answer was changed on its way to the client")
        sent = declared_names(dialect, parse_json(request_body(f.request)))
        declared = declared_names(dialect, parse_json(original_request(f)))
        if sent != declared:
            problems.append(f"the request's tools changed on the way up: {declared} -> {sent}")
    else:
        problems.append(f"unknown expected value {expected!r}")
    if expected == "repair" and dialect in ID_DIALECTS:
        ids = [c.id for c in calls]
        if any(not isinstance(i, str) or not i for i in ids):
            problems.append(f"a tool call reaches the client without an id: {ids}")
        elif len(set(ids)) != len(ids):
            problems.append(f"tool-call ids are not distinct: {ids}")
    if expected == "repair" and dialect in ("openai_chat", "openai_responses"):
        bad = [c.qualified for c in calls if c.object_arguments]
        if bad:
            problems.append(f"arguments reach the client as a JSON object, not a string: {bad}")
    return problems
