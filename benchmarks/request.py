"""What the addon costs on requests, as ratios against bare mitmdump and the floors in the same run.

    uv run --extra test python benchmarks/request.py [--runs 9] [--requests 20] [--ttfb-requests 5]
                                                      [--script PATH] [--before PATH] [--ablate PARTS]
                                                      [--drop PARTS]
                                                      [--skip-proxies | --skip-in-process]

A raw asyncio upstream (a process of its own) on 127.0.0.1 reads each POST body and answers a
small Anthropic JSON message (``?sse``: a short event stream; ``?repair``: a call the addon repairs,
:data:`REPAIR_ANSWER`). It does not parse or log the body: ``tests/fake_upstream.py`` parses and logs
every request, a per-request cost that would sit in every column and shrink every ratio.
Real ``mitmdump`` processes run side by side in reverse mode in front of it (:data:`PROXIES`):

* ``bare``: plain mitmdump;
* the floors (:data:`FLOORS`), each streaming event streams and searching each chunk for the
  tool-call marker: ``noop`` (no-op hooks), ``orjson`` (the body parsed whole), ``typed`` (only what
  planning reads decoded with msgspec: the least an addon that plans from the request pays),
  ``repair`` (``typed``, and a repaired answer the least way that keeps a request that repeats a
  key from having its answer changed: the request read whole and strictly at that answer, the
  call renamed, the answer written again), ``rules`` (``repair``, and what the brief asks of any
  addon that repairs, each the least way with the library it names: the target checked to be
  declared, the repaired arguments validated with jsonschema, a pydantic record in
  ``flow.metadata``, the flow marked and commented, one log line), ``plain`` (``typed``, and what
  the brief asks of every flow left as sent, each the least way: the declared tools and whether
  the prompt sentence is due looked up per distinct tools section and prompt, a record in
  ``flow.metadata``, a JSON answer searched for tool calls), ``libraries`` (``typed`` in a process that has also
  loaded pydantic, jsonschema and orjson, the libraries the addon builds on: the memory they
  alone cost) and ``imports`` (``typed`` in a process that has also imported what the addon's
  process holds: the memory the libraries and the addon's code cost);
* ``scaffold`` (:data:`SCAFFOLD`): the addon's script whole, its six addons and every hook, but a
  plain 200 KB or 2 MB flow doing in the repair addon's hooks only what ``plain`` does: the best a
  redesign of the plain flow's own path could reach with the rest of the product as it is;
* ``inlined`` (``benchmarks/inlined.py``): the addon's script whole, with a plain flow the addon
  peeks doing what the addon does for it (its record, marker, bytes: ``tests/unit/test_bench_inlined.py``)
  in two functions, one per hook, reusing the plan its last such request got: the addon's plain
  path in the fewest steps, so that ``addon / inlined`` is what the number of its steps costs and
  ``inlined / plain`` what the work the product asks of a plain flow beyond ``plain`` costs;
* with ``--drop PARTS``, ``dropped``: ``inlined`` with those parts of a plain flow's work left
  out (``inlined.DROPS``): what a figure would be if the product stopped doing them;
* ``addon``: ``mitmdump -s addon/toolvocab.py`` (or ``--script``), mode ``auto``;
* with ``--before PATH``, ``before``: another addon script (an earlier checkout's);
* with ``--ablate PARTS``, ``ablated``: the addon with some of its parts made free
  (:data:`ABLATIONS`), printed as ``ablated/bare``: how far a figure could fall if those parts
  cost nothing, measured rather than reckoned.

The bodies are Claude-Code-shaped Anthropic Messages requests built here (:func:`transcript`),
written compactly as Claude Code writes them: a long system prompt that names every declared tool,
20 tools with descriptions and schemas, and a transcript of turns, each an assistant ``text`` +
``tool_use`` and a user ``tool_result`` (some ``is_error``, some a JSON file read back). Nothing in
them is for the addon to change.

Figures, each the median over ``--runs`` runs. Within a run the proxies take turns request by
request: each request of a kind goes to every proxy, in an order drawn afresh each turn, before
the next (:func:`turns`), so a slow spell of this noisy machine falls on every proxy alike (only the
ratios within one run mean anything):

* 200 KB request: p50 latency (client send to full answer, keep-alive connection) of
  ``--requests`` requests per run, and proxy CPU per request (the CPU time of the mitmdump
  process, :func:`common.cpu_seconds`, before and after each run's requests of that size, summed
  over all runs);
* 2 MB transcript: p50 latency (``--requests`` // 2 per run) and proxy CPU per request;
* 200 KB request whose answer is repaired (the addon's client gets ``Bash``; the others the answer
  as sent): p50 latency;
* time to first byte of a streamed answer to the 200 KB request, the median of
  ``--ttfb-requests`` a run (a new connection each; the upstream writes the first events at once
  and the rest 50 ms later); bare mitmdump buffers whole answers, so the ``bare`` figure here
  comes from another process, plain mitmdump with ``--set stream_large_bodies=1``;
* peak RSS (``VmHWM``) of each proxy after all runs, and its RSS (``VmRSS``) after the warm-up
  and at the end.

Each is printed against bare, with its floor against bare (:data:`FLOOR_OF`: ``repair`` for the
repaired answer, ``libraries`` for peak RSS, else ``typed``) and the addon against that floor; a
one-line summary of the addon and the floors against bare ends the output. Every process starts
with its modules' bytecode written (:func:`common.compile_bytecode`), as a user's second run does.
Then, in process (``mitmproxy.test.taddons``, the addon loaded as mitmdump loads it), the
``request`` hook alone on a 2 MB transcript that changes (one tool the system prompt does not
mention: the prompt sentence is added and the body written) and on the unchanged one, against
``orjson.loads`` + ``orjson.dumps`` of the same body.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import http.client
import json
import os
import random
import statistics
import time
from typing import Any

# common first: importing it puts tests/ on sys.path (for procs)
from common import CHUNKED_SSE_HEAD
from common import UpstreamProcess
from common import chunk
from common import compile_bytecode
from common import cpu_seconds
from common import ev
from common import serve
from common import status_mib

# isort: split
import procs

#: Tool names of the kind a coding agent declares; descriptions and schemas are filler written here.
TOOL_NAMES = [
    "Task",
    "Bash",
    "Glob",
    "Grep",
    "ExitPlanMode",
    "Read",
    "Edit",
    "MultiEdit",
    "Write",
    "NotebookEdit",
    "WebFetch",
    "TodoWrite",
    "WebSearch",
    "BashOutput",
    "KillShell",
    "SlashCommand",
    "mcp__ide__getDiagnostics",
    "mcp__ide__executeCode",
    "mcp__files__list_directory",
    "mcp__files__search_files",
]
WORDS = (
    "the quick brown fox jumps over the lazy dog while a tool reads files and writes patches "
    "to the repository under test then runs the suite again and reports what failed "
).split()


def filler(n: int, seed: int) -> str:
    """About ``n`` characters of words (deterministic in ``seed``)."""
    out, i = [], seed
    total = 0
    while total < n:
        w = WORDS[(i * 7 + 3) % len(WORDS)]
        out.append(w)
        total += len(w) + 1
        i += 1
    return " ".join(out)


def tools() -> list[dict]:
    """20 tool declarations, ~1 KB each."""
    out = []
    for k, name in enumerate(TOOL_NAMES):
        props = {
            f"arg{j}": {"type": "string" if j % 3 else "integer", "description": filler(120, k * 10 + j)}
            for j in range(4)
        }
        required = ["arg0"]
        if name == "Bash":  # the tool the repaired answer's call goes to (REPAIR_ANSWER)
            props = {"command": {"type": "string", "description": filler(120, k)}, **props}
            required = ["command"]
        out.append(
            {
                "name": name,
                "description": filler(600, k),
                "input_schema": {
                    "type": "object",
                    "properties": props,
                    "required": required,
                    "additionalProperties": False,
                    "$schema": "http://json-schema.org/draft-07/schema#",
                },
            }
        )
    return out


def transcript(size: int, *, mention_all: bool = True, stream: bool = False, spaced: bool = False) -> bytes:
    """An Anthropic Messages request of about ``size`` bytes (see the module docstring), written
    compactly as Claude Code's ``JSON.stringify`` (and httpx 0.28, under the official Python SDKs)
    writes it; ``spaced=True``: with ``json.dumps``'s default ``", "`` and ``": "`` and ASCII
    escapes instead. ``mention_all=False`` leaves one declared tool out of the system prompt, so
    ``auto`` mode adds its sentence and the body changes."""
    names = TOOL_NAMES if mention_all else TOOL_NAMES[:-1]
    system = [
        {"type": "text", "text": "You are a coding agent working in a terminal."},
        {
            "type": "text",
            "text": filler(12000, 1) + "\nTools: " + ", ".join(names) + ".\n" + filler(4000, 2),
            "cache_control": {"type": "ephemeral"},
        },
    ]
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 32000,
        "stream": stream,
        "system": system,
        "tools": tools(),
        "metadata": {"user_id": "user_0123456789abcdef"},
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix the failing test. " + filler(2000, 3)}]}
        ],
    }
    n = 0
    while len(json.dumps(body)) < size:
        n += 1
        # the plain (non-MCP) tools but Task: a subagent may move Bash's directory, after which
        # the repaired answer's shell call is left for Bash (the earlier-calls rule)
        name = TOOL_NAMES[1 + n % 15]
        tid = f"toolu_{n:020d}"
        body["messages"].append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": filler(300, n)},
                    {"type": "tool_use", "id": tid, "name": name, "input": {"arg0": filler(200, n + 1), "arg1": n}},
                ],
            }
        )
        result: dict = {"type": "tool_result", "tool_use_id": tid, "content": filler(3000, n + 2)}
        if n % 5 == 0:  # a file of JSON read back: escaped quotes before colons in the body
            result["content"] = json.dumps(
                {
                    "name": f"pkg{n}",
                    "version": "1.0.0",
                    "scripts": {"test": filler(80, n)},
                    "dependencies": {f"dep{j}": f"^{j}.0.0" for j in range(20)},
                },
                indent=2,
            )
        if n % 7 == 0:
            result["is_error"] = True
            result["content"] = "Error: command failed with exit code 1\n" + filler(800, n)
        body["messages"].append({"role": "user", "content": [result]})
    if spaced:
        return json.dumps(body).encode()
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


ANSWER = json.dumps(
    {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": "Done."}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
).encode()

#: An answer the addon repairs (``?repair``): a call in another agent's vocabulary (``shell`` with
#: an argv, which Claude Code's ``Bash`` takes as one command line).
REPAIR_ANSWER = json.dumps(
    {
        "id": "msg_2",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "tool_use", "id": "toolu_01", "name": "shell", "input": {"command": ["git", "status"]}}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 2},
    }
).encode()


SSE_HEAD = (
    ev({"type": "message_start", "message": {"id": "m", "type": "message", "role": "assistant", "content": []}})
    + ev({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
    + ev({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "first"}})
)
SSE_TAIL = (
    ev({"type": "content_block_stop", "index": 0})
    + ev({"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
    + ev({"type": "message_stop"})
)


async def _answer(path: str, writer: asyncio.StreamWriter) -> None:
    if "sse" in path:
        writer.write(CHUNKED_SSE_HEAD + chunk(SSE_HEAD))
        await writer.drain()
        await asyncio.sleep(0.05)
        writer.write(chunk(SSE_TAIL) + b"0\r\n\r\n")
    else:
        answer = REPAIR_ANSWER if "repair" in path else ANSWER
        writer.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n%s" % (len(answer), answer)
        )


def make_handler():
    """The upstream's connection handler (run in its process): ``?sse`` a short event stream
    (the first events at once, the rest 50 ms later), else :data:`ANSWER` as JSON."""
    return serve(_answer)


HEADERS = {"content-type": "application/json", "anthropic-version": "2023-06-01", "x-api-key": "sk-bench"}


class Client:
    """One keep-alive connection to a proxy on 127.0.0.1:``port``; :meth:`post` sends one request
    and times it. Close it with :meth:`close`."""

    def __init__(self, port: int) -> None:
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)

    def post(self, body: bytes, *, repair: bool = False, repaired: bool = False) -> float:
        """Seconds from sending ``body`` to the whole answer; ``repair``: the upstream answers
        :data:`REPAIR_ANSWER`, which must arrive repaired (``repaired``: the addon) or as sent.
        Raises AssertionError for any other answer."""
        t = time.perf_counter()
        self.conn.request("POST", "/v1/messages?repair" if repair else "/v1/messages", body=body, headers=HEADERS)
        resp = self.conn.getresponse()
        data = resp.read()
        took = time.perf_counter() - t
        assert resp.status == 200, (resp.status, data[:200])
        if not repair:
            assert data == ANSWER, data[:200]
        elif repaired:
            assert json.loads(data)["content"][0]["name"] == "Bash", data[:200]
        else:
            assert data == REPAIR_ANSWER, data[:200]
        return took

    def close(self) -> None:
        self.conn.close()


def latencies(port: int, body: bytes, n: int, *, repair: bool = False, repaired: bool = False) -> list[float]:
    """Seconds per request for ``n`` POSTs of ``body`` on one keep-alive connection
    (:meth:`Client.post`)."""
    client = Client(port)
    try:
        return [client.post(body, repair=repair, repaired=repaired) for _ in range(n)]
    finally:
        client.close()


#: The order of the proxies' turns (:func:`turns`): seeded, so that a run can be repeated.
ORDER = random.Random(0)


def turns(names: list[str], n: int, rng: random.Random = ORDER):
    """``n`` turns of ``names``, each turn every name once, in an order ``rng`` draws afresh each
    turn: no name always first, and none always right after the same one. What a proxy does after
    its answer has gone (its flow's end, a collection of its garbage) shares the two cores with
    the next request, so a fixed neighbour slows the same proxy every time: with the order
    rotated by one a turn (each name after the same one but when it came first), two copies of
    the addon in the same runs measured 1.07x and 1.09x of each other on the 200 KB latency, the
    one after the other copy the slower."""
    for _ in range(n):
        order = list(names)
        rng.shuffle(order)
        yield order


def ttfb(port: int, body: bytes) -> float:
    """Seconds to the first body byte of a streamed answer (new connection)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        t = time.perf_counter()
        conn.request("POST", "/v1/messages?sse", body=body, headers=HEADERS)
        resp = conn.getresponse()
        first = resp.read1(65536)
        took = time.perf_counter() - t
        assert first.startswith(b"event: message_start"), first[:100]
        resp.read()
        return took
    finally:
        conn.close()


#: What every floor does with an answer: an event stream goes out as it comes (mitmproxy
#: buffers a response whose stream is not set), each chunk searched for the Anthropic tool-call
#: marker as a rewriter that looks at the bytes must.
_FLOOR_STREAM = """
MARKERS = (b"content_block_start", b"\\\\u")


def _search(chunk):
    for marker in MARKERS:
        if marker in chunk:
            break
    return chunk


class Streams:
    def responseheaders(self, flow):
        if "text/event-stream" in flow.response.headers.get("content-type", ""):
            flow.response.stream = _search
"""

#: The floors: scripts that do the least an addon reading requests can do, each with
#: :data:`_FLOOR_STREAM`. ``noop``: no hook reads the request; ``orjson``: the body parsed whole
#: (``orjson.loads``); ``typed``: only what planning reads decoded with msgspec typed Structs
#: (the tools section as bytes, the system text, the transcript's ``tool_use`` names; every other
#: value skipped unbuilt).
FLOORS = {
    "noop": _FLOOR_STREAM
    + """

class Noop(Streams):
    def request(self, flow):
        pass


addons = [Noop()]
""",
    "orjson": _FLOOR_STREAM
    + """
import orjson


class Parse(Streams):
    def request(self, flow):
        if flow.request.method == "POST" and flow.request.content:
            orjson.loads(flow.request.content)


addons = [Parse()]
""",
    "typed": _FLOOR_STREAM
    + """
from typing import Any

import msgspec


class Block(msgspec.Struct, gc=False):
    type: Any = None
    name: Any = None


class Message(msgspec.Struct, gc=False):
    content: str | list[Block] = ""


class Request(msgspec.Struct, gc=False):
    system: Any = None
    messages: list[Message] = []
    tools: msgspec.Raw = msgspec.Raw(b"[]")


DECODER = msgspec.json.Decoder(Request)


class Typed(Streams):
    def request(self, flow):
        if flow.request.method == "POST" and flow.request.content:
            body = DECODER.decode(flow.request.content)
            [b.name for m in body.messages if type(m.content) is list for b in m.content if b.type == "tool_use"]
            return body


addons = [Typed()]
""",
}

#: ``repair``: the ``typed`` floor, and an answer repaired the least way that keeps "a request
#: that repeats a key (or that a strict reader refuses) leaves its answer as sent" without reading
#: every request whole: at a JSON answer that calls a tool the request did not declare, the
#: request body read whole and strictly (``orjson.loads`` and the write-back compare that shows no
#: key repeats, :func:`toolvocab.engine.jsonio.loads_checked`'s common case), the call renamed to
#: ``Bash`` with its argv joined, the answer written again. No ladder, no schema, no record.
FLOORS["repair"] = FLOORS["typed"].replace(
    "addons = [Typed()]",
    """import orjson


class Repair(Typed):
    def request(self, flow):
        body = super().request(flow)
        if body is not None:
            flow.metadata["request_body"] = flow.request.content
        return body

    def response(self, flow):
        content = flow.response.content
        if not content or not content.startswith(b"{"):
            return
        answer = orjson.loads(content)
        calls = [b for b in answer.get("content") or () if b.get("type") == "tool_use" and b.get("name") == "shell"]
        if not calls:
            return
        request = flow.metadata.pop("request_body")
        if orjson.dumps(orjson.loads(request)) != request:
            return
        before = [call["input"] for call in calls]
        after = [{"command": " ".join(arguments["command"])} for arguments in before]
        if not self.check(flow, after):
            return
        for call, arguments in zip(calls, after):
            call["name"] = "Bash"
            call["input"] = arguments
        flow.response.content = orjson.dumps(answer)
        self.done(flow, before, after)

    def check(self, flow, after):
        return True

    def done(self, flow, before, after):
        pass


addons = [Repair()]""",
)

#: ``rules``: the ``repair`` floor, and what the project's brief asks of any addon that repairs a
#: call, each done the least way with the library the brief names for it: the call's target
#: checked to be a tool this request declares (the tools section parsed, kept per distinct
#: section as the addon keeps its toolsets), the repaired arguments validated against the
#: target's schema (jsonschema, a validator kept per tool), a per-flow record (a pydantic model,
#: ``model_dump(mode="json")`` into ``flow.metadata``), the flow marked and commented for
#: mitmproxy's UI, and one log line. No vocabulary, no argument semantics, no ladder: the least
#: a repair that keeps the brief's promises pays beyond ``repair``.
FLOORS["rules"] = FLOORS["repair"].replace(
    "addons = [Repair()]",
    """import logging

import jsonschema
import pydantic

LOG = logging.getLogger("rules")
TOOLS = {}


class Decision(pydantic.BaseModel):
    name: str
    target: str
    reason: str
    arguments_before: dict
    arguments_after: dict


class Record(pydantic.BaseModel):
    mode: str = "auto"
    declared: list[str] = []
    decisions: list[Decision] = []


class Rules(Repair):
    def request(self, flow):
        body = super().request(flow)
        if body is not None:
            flow.metadata["tools"] = bytes(body.tools)

    def check(self, flow, after):
        raw = flow.metadata.pop("tools")
        toolset = TOOLS.get(raw)
        if toolset is None:
            declared = {t["name"]: t for t in orjson.loads(raw)}
            toolset = TOOLS[raw] = (declared, {})
        declared, validators = toolset
        if "Bash" not in declared:
            return False
        validator = validators.get("Bash")
        if validator is None:
            validator = validators["Bash"] = jsonschema.Draft202012Validator(declared["Bash"]["input_schema"])
        flow.metadata["declared"] = list(declared)
        return all(jsonschema.exceptions.best_match(validator.iter_errors(a)) is None for a in after)

    def done(self, flow, before, after):
        record = Record(declared=flow.metadata.pop("declared"))
        for b, a in zip(before, after):
            record.decisions.append(
                Decision(name="shell", target="Bash", reason="shell means Bash", arguments_before=b, arguments_after=a)
            )
        flow.metadata["toolvocab"] = record.model_dump(mode="json")
        flow.marked = ":wrench:"
        flow.comment = "changed: shell→Bash"
        LOG.info("rules: shell→Bash")


addons = [Rules()]""",
)

#: ``plain``: the ``typed`` floor, and what the project's brief asks of every flow an addon handles
#: whose request and answer it leaves as sent, each done the least way: the declared tools known
#: (the tools section parsed at first sight, kept per distinct section), whether the prompt sentence
#: of ``auto`` mode is due (worked out once per distinct tools section and system prompt), a
#: per-flow record in ``flow.metadata`` (a kept dump read into a dict of the flow's own), and a
#: JSON answer searched for what a call would hold (:data:`CALLS` there) and parsed only on a hit,
#: as a stream's chunks are searched. Each kept value is found by comparing the newest key
#: whole before any hash (an agent sends the same tools and prompt every turn, each a fresh
#: object). No vocabulary, no ladder, no replayed-id check: the least a plain flow pays beyond
#: ``typed``, as ``rules`` is for a repaired one.
FLOORS["plain"] = FLOORS["typed"].replace(
    "addons = [Typed()]",
    """import orjson


class Kept:
    def __init__(self):
        self.entries, self.newest = {}, None

    def get(self, key, build):
        if self.newest is not None and self.newest[0] == key:
            return self.newest[1]
        value = self.entries.get(key)
        if value is None:
            value = self.entries[key] = build()
        self.newest = (key, value)
        return value


TOOLS = Kept()
RECORDS = Kept()
#: what a JSON answer holds when a tool call may be in it: a block, an escape, a leaked call
CALLS = (b"tool_use", b"\\\\u", b"<tool_call", b"<function", b"<|tool_call", b"commentary to=")


def names(section):
    tools = orjson.loads(section)
    return tuple(t["name"] for t in tools if type(t) is dict and type(t.get("name")) is str) if type(tools) is list else ()


class Plain(Typed):
    def request(self, flow):
        body = super().request(flow)
        if body is None:
            return
        section = bytes(body.tools)
        declared = TOOLS.get(section, lambda: names(section))
        system = body.system
        if type(system) is str:
            texts = (system,)
        else:
            texts = tuple(t for b in system if type(b) is dict and type(t := b.get("text")) is str) if type(system) is list else ()
        # keyed by the kept names (a tuple compares its items by identity first), not the section again
        record = RECORDS.get(
            (declared, texts),
            lambda: orjson.dumps(
                {
                    "mode": "auto",
                    "declared": list(declared),
                    "prompt_sentence": not all(any(name in text for text in texts) for name in declared),
                }
            ),
        )
        flow.metadata["toolvocab"] = orjson.loads(record)

    def response(self, flow):
        content = flow.response.content
        if content and content.startswith(b"{") and any(marker in content for marker in CALLS):
            answer = orjson.loads(content)
            [b for b in answer.get("content") or () if type(b) is dict and b.get("type") == "tool_use"]


addons = [Plain()]""",
)

#: ``libraries``: the ``typed`` floor in a process that has also loaded the libraries this project
#: builds on beyond mitmproxy and msgspec (``pyproject.toml``: pydantic, with one model built,
#: which loads its schema machinery; jsonschema, with a validator; orjson), and uses none of them.
FLOORS["libraries"] = FLOORS["typed"].replace(
    "addons = [Typed()]",
    """import jsonschema.validators
import orjson  # noqa: F401
import pydantic


class Record(pydantic.BaseModel):
    names: list[str] = []


Record(names=["a"]).model_dump(mode="json")
jsonschema.validators.validator_for({})({"type": "object"}).is_valid({})
addons = [Typed()]""",
)

#: ``imports``: the ``typed`` floor in a process that has also imported what the addon's process
#: holds after its first repair (toolvocab's modules, pydantic, jsonschema), and uses none of it:
#: the memory and the garbage collector's work that the code alone costs.
FLOORS["imports"] = FLOORS["typed"].replace(
    "addons = [Typed()]",
    """import os
import sys

sys.path.insert(0, os.environ["TOOLVOCAB_ROOT"])
import jsonschema.validators  # noqa: E402,F401

from toolvocab.addons import default_addons  # noqa: E402
from toolvocab.engine import arguments  # noqa: E402,F401

_UNUSED = default_addons()
addons = [Typed()]""",
)

#: ``scaffold``: the addon's own script, loaded as mitmdump loads it (its six addons, every hook
#: they add, their imports and options), with the repair addon's hooks doing for a plain flow (no
#: ``?repair``, no ``?sse`` in the path) only what the ``plain`` floor does, and for any other
#: flow what the addon does. What a redesign of the plain flow's own path could reach at best
#: while the rest of the product stays as it is. ``__SCRIPT__``: the addon's script.
SCAFFOLD = FLOORS["plain"].replace(
    "addons = [Plain()]",
    """import runpy

_PLAIN = Plain()
_script = runpy.run_path(__SCRIPT__)
addons = _script["addons"]
_core = next(a for a in addons if type(a).__name__ == "ToolVocab")
_hooks = (_core.request, _core.responseheaders, _core.response)
_plain_flows = set()


def _request(flow):
    if "repair" in flow.request.path or "sse" in flow.request.path:
        return _hooks[0](flow)
    _plain_flows.add(flow.id)
    _PLAIN.request(flow)


def _responseheaders(flow):
    return _PLAIN.responseheaders(flow) if flow.id in _plain_flows else _hooks[1](flow)


def _response(flow):
    if flow.id not in _plain_flows:
        return _hooks[2](flow)
    _plain_flows.discard(flow.id)
    _PLAIN.response(flow)


_core.request, _core.responseheaders, _core.response = _request, _responseheaders, _response""",
)

#: The parts of a plain flow's work ``--drop`` may leave out (``benchmarks/inlined.py``'s ``DROPS``,
#: read from its text: importing it would load the addon).
_DROPS = ("ids", "headers", "answer", "finish")

#: The columns, in order: bare mitmdump, the floors, the addon.
PROXIES = ("bare", *FLOORS, "addon")
#: The proxies whose client gets the repaired answer.
REPAIRS = ("repair", "rules", "addon")
#: The floor each figure is held against (the least an addon that does what that figure asks
#: pays): ``typed`` but for a repaired answer and for memory.
FLOOR_OF = {"repair": "repair", "rss": "libraries"}

#: ``--ablate``: the parts of the addon the column ``ablated`` makes (nearly) free, to show what
#: a figure would be if a part cost nothing. Not a product: ``ladder`` answers every call the
#: ladder decided once before (same tools, name and arguments, whatever the transcript's earlier
#: calls: the whole request is then read only at the answer's first change) from a memo, a dict
#: lookup and a copy; ``log`` writes no log line; ``record`` skips the finish (no record, marker, comment or
#: log line).
ABLATIONS = ("ladder", "log", "record")

#: The script of the column ``ablated``: ``{script}`` (the addon's script) loaded as mitmdump
#: loads it, then the parts in ``{parts}`` patched out.
ABLATED = """
import runpy

import orjson

_script = runpy.run_path({script!r})
from toolvocab.addons import recording, state  # noqa: E402

PARTS = {parts!r}
_resolve = state.resolve
_memo = {{}}


def memo_resolve(call, tools, reverse_map, **kw):
    args = None if call.arguments is None else orjson.dumps(call.arguments, option=orjson.OPT_SORT_KEYS)
    # ``earlier`` is a bound method of each flow's state: never equal from one flow to the next
    kept = tuple(sorted((k, v) for k, v in kw.items() if k != "earlier"))
    key = (id(tools), call.name, call.namespace, args, call.raw_arguments, kept)
    decision = _memo.get(key)
    if decision is None:
        decision = _memo[key] = (tools, _resolve(call, tools, reverse_map, **kw))
    return decision[1].model_copy()


if "ladder" in PARTS:
    state.resolve = memo_resolve
if "log" in PARTS:
    recording.logger.log = lambda *args, **kwargs: None
if "record" in PARTS:
    recording.ToolVocabRecorder.finish = lambda self, flow, st: None
addons = _script["addons"]
"""


def through_proxies(args: argparse.Namespace, small: bytes, big: bytes, small_stream: bytes) -> dict[str, float]:
    """The figures through real mitmdump processes; prints the table and returns the addon's
    ratios against bare mitmdump by figure."""
    import tempfile

    upstream = UpstreamProcess(make_handler)
    url = upstream.url
    proxies: dict[str, procs.MitmdumpHandle] = {}
    streaming = None
    scripts: dict[str, str] = {}
    for name, text in FLOORS.items():
        with tempfile.NamedTemporaryFile("w", suffix=f"_{name}.py", delete=False) as fp:
            fp.write(text)
        scripts[name] = fp.name
    with tempfile.NamedTemporaryFile("w", suffix="_scaffold.py", delete=False) as fp:
        fp.write(SCAFFOLD.replace("__SCRIPT__", repr(os.path.abspath(args.script))))
    scripts["scaffold"] = fp.name
    inlined_script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "inlined.py")
    # what inlined.py writes at its process's end: how many flows took its fast way
    counts = {name: os.path.join(tempfile.mkdtemp(), "counts.json") for name in ("inlined", "dropped")}
    if args.ablate:
        with tempfile.NamedTemporaryFile("w", suffix="_ablated.py", delete=False) as fp:
            fp.write(ABLATED.format(script=os.path.abspath(args.script), parts=tuple(args.ablate)))
        scripts["ablated"] = fp.name
    extra = (
        *(("before",) if args.before else ()),
        *(("ablated",) if args.ablate else ()),
        *(("dropped",) if args.drop else ()),
    )
    names = (*PROXIES[:-1], "scaffold", "inlined", *extra, "addon")
    repairs = (*REPAIRS, "scaffold", "inlined", *extra)
    try:
        os.environ.setdefault("TOOLVOCAB_ROOT", str(procs.REPO))  # for the imports floor
        proxies["bare"] = procs.start_mitmdump(url, script=None, options={"flow_detail": "0"})
        for name in FLOORS:
            proxies[name] = procs.start_mitmdump(url, script=scripts[name], options={"flow_detail": "0"})
        proxies["scaffold"] = procs.start_mitmdump(url, script=scripts["scaffold"], options={"flow_detail": "0"})
        os.environ["TOOLVOCAB_SCRIPT"] = os.path.abspath(args.script)  # the script inlined.py wraps
        os.environ["TOOLVOCAB_INLINED_COUNTS"] = counts["inlined"]  # read as the process starts
        proxies["inlined"] = procs.start_mitmdump(url, script=inlined_script, options={"flow_detail": "0"})
        if args.before:
            proxies["before"] = procs.start_mitmdump(url, script=args.before, options={"flow_detail": "0"})
        if args.ablate:
            proxies["ablated"] = procs.start_mitmdump(url, script=scripts["ablated"], options={"flow_detail": "0"})
        if args.drop:
            os.environ["TOOLVOCAB_INLINED_DROP"] = ",".join(args.drop)
            os.environ["TOOLVOCAB_INLINED_COUNTS"] = counts["dropped"]
            try:
                proxies["dropped"] = procs.start_mitmdump(url, script=inlined_script, options={"flow_detail": "0"})
            finally:
                del os.environ["TOOLVOCAB_INLINED_DROP"]
        del os.environ["TOOLVOCAB_INLINED_COUNTS"]
        proxies["addon"] = procs.start_mitmdump(url, script=args.script, options={"flow_detail": "0"})
        # bare mitmdump buffers a whole answer: its time to first byte is taken with streaming on
        streaming = procs.start_mitmdump(url, script=None, options={"flow_detail": "0", "stream_large_bodies": "1"})
        ttfb_port = {name: (streaming.port if name == "bare" else p.port) for name, p in proxies.items()}
        keys = ("small", "big", "repair", "ttfb")
        lat: dict[str, dict[str, list[float]]] = {k: {f: [] for f in keys} for k in proxies}
        cpu = {k: {"small": [0.0, 0], "big": [0.0, 0]} for k in proxies}
        for name, p in proxies.items():  # warm up (imports, caches, first allocations, jsonschema)
            latencies(p.port, small, 5)
            latencies(p.port, big, 3)
            latencies(p.port, small, 3, repair=True, repaired=name in repairs)
            ttfb(ttfb_port[name], small_stream)
        rss_start = {k: status_mib(p.process.proc.pid, "VmRSS") for k, p in proxies.items()}
        nbig = max(1, args.requests // 2)
        order = list(proxies)
        clients = {name: Client(p.port) for name, p in proxies.items()}
        try:
            for _ in range(args.runs):
                for key, body, n in (
                    ("small", small, args.requests),
                    ("big", big, nbig),
                    ("repair", small, args.requests),
                ):
                    repair = key == "repair"
                    took: dict[str, list[float]] = {name: [] for name in proxies}
                    before = {name: cpu_seconds(p.process.proc.pid) for name, p in proxies.items()}
                    for turn in turns(order, n):
                        for name in turn:
                            took[name].append(clients[name].post(body, repair=repair, repaired=name in repairs))
                    for name, p in proxies.items():
                        lat[name][key].append(statistics.median(took[name]))
                        if key in cpu[name]:
                            cpu[name][key][0] += cpu_seconds(p.process.proc.pid) - before[name]
                            cpu[name][key][1] += n
                firsts: dict[str, list[float]] = {name: [] for name in proxies}
                for turn in turns(order, args.ttfb_requests):
                    for name in turn:
                        firsts[name].append(ttfb(ttfb_port[name], small_stream))
                for name in proxies:
                    lat[name]["ttfb"].append(statistics.median(firsts[name]))
        finally:
            for client in clients.values():
                client.close()
        time.sleep(0.5)
        rss_end = {k: status_mib(p.process.proc.pid, "VmRSS") for k, p in proxies.items()}
        hwm = {k: status_mib(p.process.proc.pid, "VmHWM") for k, p in proxies.items()}
        flows = 11 + args.runs * (2 * args.requests + nbig + args.ttfb_requests)
    finally:
        for p in [*proxies.values(), *([streaming] if streaming else [])]:
            p.stop()
        upstream.stop()
        for path in scripts.values():
            os.unlink(path)

    med = {k: {f: statistics.median(v) for f, v in figs.items()} for k, figs in lat.items()}
    print(
        f"requests through mitmdump, median of {args.runs} runs, proxies taking turns request by request; addon = {args.script}"
    )
    print(
        f"bodies: {len(small):,} B and {len(big):,} B (20 tools, nothing to change); floors: noop = a script "
        "of no-op hooks, orjson = one that parses the body whole, typed = one that decodes only what planning "
        "reads (msgspec), repair = typed + the least repair that keeps the repeated-key rule (the request read "
        "whole and strictly at the answer), rules = repair + the declared-target check, jsonschema, a pydantic "
        "record, the mark and comment and a log line, plain = typed + the declared tools and the prompt sentence "
        "looked up, a record in flow.metadata and a JSON answer read, libraries = typed + pydantic, jsonschema and "
        "orjson loaded, imports = "
        "typed + the addon's imports; each streams event streams, "
        "searching each chunk for the tool-call marker; scaffold = the addon's script whole, its plain flows "
        "doing only what plain does; inlined = the addon's script whole, its plain flows doing what the addon "
        "does in two functions (benchmarks/inlined.py)"
    )
    print(
        f"{'figure':38s}"
        + "".join(f"{k:>10s}" for k in names)
        + "  addon/bare  floor/bare  addon/floor"
        + ("  addon/before" if args.before else "")
        + ("  ablated/bare" if args.ablate else "")
        + ("  dropped/bare" if args.drop else "")
        + "  (floor: typed, but repair and libraries where marked)"
    )
    rows = [
        (f"{len(small) // 1000} KB request p50 latency", "small", [med[k]["small"] for k in names], "ms"),
        (
            f"{len(small) // 1000} KB request proxy CPU/request",
            "small_cpu",
            [cpu[k]["small"][0] / cpu[k]["small"][1] for k in names],
            "ms",
        ),
        (f"{len(big) / 1e6:.1f} MB transcript p50 latency", "big", [med[k]["big"] for k in names], "ms"),
        (
            f"{len(big) / 1e6:.1f} MB transcript proxy CPU/request",
            "big_cpu",
            [cpu[k]["big"][0] / cpu[k]["big"][1] for k in names],
            "ms",
        ),
        (f"{len(small) // 1000} KB request, answer repaired, p50", "repair", [med[k]["repair"] for k in names], "ms"),
        ("streamed answer: time to first byte*", "ttfb", [med[k]["ttfb"] for k in names], "ms"),
        ("peak RSS (VmHWM)", "rss", [hwm[k] for k in names], "MiB"),
    ]
    ratios: dict[str, float] = {}
    for label, key, values, unit in rows:
        floor_name = FLOOR_OF.get(key, "typed")
        bare, floor, addon = values[0], values[names.index(floor_name)], values[-1]
        ratios[key] = addon / bare
        ratios[key + "_floor"] = floor / bare
        if args.ablate:
            ratios[key + "_ablated"] = values[names.index("ablated")] / bare
        if args.drop:
            ratios[key + "_dropped"] = values[names.index("dropped")] / bare
        print(
            f"{label:38s}"
            + "".join(f"{v * 1e3:10.2f}" if unit == "ms" else f"{v:10.1f}" for v in values)
            + f"  {addon / bare:9.2f}x  {floor / bare:9.2f}x  {addon / floor:10.2f}x"
            + (f"  {addon / values[names.index('before')]:11.2f}x" if args.before else "")
            + (f"  {values[names.index('ablated')] / bare:11.2f}x" if args.ablate else "")
            + (f"  {values[names.index('dropped')] / bare:11.2f}x" if args.drop else "")
            + f"  ({unit}"
            + ("" if floor_name == "typed" else f"; floor: {floor_name}")
            + ")"
        )
    ratios["repair_rules"] = med["rules"]["repair"] / med["bare"]["repair"]
    for key in ("small", "big", "ttfb"):
        ratios[key + "_plain"] = med["plain"][key] / med["bare"][key]
    for key in ("small", "big"):
        for name in ("scaffold", "inlined"):
            ratios[f"{key}_{name}"] = med[name][key] / med["bare"][key]
        bare_cpu = cpu["bare"][key][0] / cpu["bare"][key][1]
        for name in ("plain", "scaffold", "inlined"):
            ratios[f"{key}_cpu_{name}"] = cpu[name][key][0] / cpu[name][key][1] / bare_cpu
    print("* bare: plain mitmdump with stream_large_bodies=1 (it buffers whole answers otherwise)")
    for name, path in counts.items():
        if os.path.exists(path):
            with open(path) as fp:
                n = json.load(fp)
            os.unlink(path)
            print(f"{name}: the fast way for {n['request']} of {n['requests']} requests and {n['response']} answers")
        os.rmdir(os.path.dirname(path))
    for k in names:
        print(
            f"RSS {k}: {rss_start[k]:.1f} MiB after warm-up, {rss_end[k]:.1f} MiB after {flows} flows "
            f"({rss_end[k] / rss_start[k]:.2f}x)"
        )
    return ratios


def request_flow(body: bytes) -> Any:
    """A mitmproxy ``HTTPFlow`` of ``body`` POSTed to ``api.anthropic.com/v1/messages`` with
    :data:`HEADERS`, no response yet: what the in-process figures give the hooks."""
    from mitmproxy import http
    from mitmproxy.test import tflow
    from mitmproxy.test import tutils

    req = tutils.treq(
        method=b"POST",
        host="api.anthropic.com",
        port=443,
        scheme=b"https",
        authority=b"",
        path=b"/v1/messages",
        headers=http.Headers([(k.encode(), v.encode()) for k, v in HEADERS.items()]),
        content=body,
    )
    return tflow.tflow(req=req, resp=False)


def in_process(args: argparse.Namespace, changing: bytes, unchanged: bytes, spaced: bytes) -> None:
    """The addon's request hook against ``orjson.loads`` + ``orjson.dumps`` on the same body."""
    import orjson
    from mitmproxy.test import taddons

    flow = request_flow

    def once(body: bytes, fn) -> float:
        """Seconds of one ``fn(flow)`` call on a flow built beforehand."""
        f = flow(body)
        gc.collect()
        t = time.perf_counter()
        fn(f)
        return time.perf_counter() - t

    n = max(5, args.runs * 5)
    with taddons.context() as tctx:
        module = tctx.script(args.script)
        addon = module.addons[0]
        tctx.configure(addon, toolvocab_mode="auto")
        saves = addon.recorder.saves_bodies
        print(
            f"\nin process: the request hook (mode auto) against orjson.loads + dumps of the same body, timed "
            f"back to back {n} times;\nmedians of the times, and the median of the {n} per-round ratios (steadier "
            "on a noisy machine than a ratio of medians).\n'mitmdump': as in plain mitmdump, nothing saves flows; "
            "'-w': something saves or shows them (-w, toolvocab_record, mitmweb), so the transcript's tool errors "
            "are classified too"
        )
        print(f"{'body':36s} {'orjson':>8s} {'mitmdump':>9s} {'-w':>9s}   ratios")
        for label, body, want_change in (
            ("2 MB transcript that changes", changing, True),
            ("2 MB transcript, nothing to change", unchanged, False),
            ("same, spaced (json.dumps default)", spaced, False),
        ):
            f = flow(body)
            addon.request(f)
            record = f.metadata["toolvocab"]
            assert record.get("request_changed") is want_change, record
            assert (f.request.content == body) is not want_change
            if want_change:  # what goes upstream is exactly what a whole rewrite would send
                assert f.request.content == orjson.dumps(orjson.loads(f.request.content))
            addon._states.clear()

            def hook(f: http.HTTPFlow) -> None:
                addon.request(f)
                addon._states.clear()

            def plain_hook(f: http.HTTPFlow) -> None:
                addon.recorder.saves_bodies = lambda: False
                try:
                    hook(f)
                finally:
                    addon.recorder.saves_bodies = saves

            times: dict[str, list[float]] = {"base": [], "plain": [], "saving": []}
            for _ in range(n):
                times["base"].append(once(body, lambda f: orjson.dumps(orjson.loads(f.request.content))))
                times["plain"].append(once(body, plain_hook))
                times["saving"].append(once(body, hook))
            med = {k: statistics.median(v) for k, v in times.items()}
            ratio = {k: statistics.median(t / b for t, b in zip(times[k], times["base"])) for k in ("plain", "saving")}
            print(
                f"{label:36s} {med['base'] * 1e3:8.2f} {med['plain'] * 1e3:9.2f} {med['saving'] * 1e3:9.2f}   "
                f"{ratio['plain']:4.2f}x  {ratio['saving']:4.2f}x  (ms)"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=20, help="200 KB requests per run (half as many 2 MB)")
    parser.add_argument(
        "--ttfb-requests",
        type=int,
        default=5,
        help="streamed requests per run for the time to first byte (each on a new connection, about 55 ms)",
    )
    parser.add_argument("--script", default=str(procs.ADDON_SCRIPT), help="addon script to measure")
    parser.add_argument(
        "--before",
        metavar="PATH",
        help="another addon script (an earlier checkout's addon/toolvocab.py) measured in the same runs, "
        "as the column 'before'",
    )
    parser.add_argument(
        "--ablate",
        metavar="PARTS",
        type=lambda text: [part for part in text.split(",") if part],
        help="comma-separated parts of the addon (" + ", ".join(ABLATIONS) + ") that a column 'ablated' makes "
        "free, measured in the same runs: what a figure would be if those parts cost nothing",
    )
    parser.add_argument(
        "--drop",
        metavar="PARTS",
        type=lambda text: [part for part in text.split(",") if part],
        help="comma-separated parts of a plain flow's work (" + ", ".join(_DROPS) + ") that a column 'dropped' "
        "(the column inlined, benchmarks/inlined.py) leaves out: what a figure would be without them",
    )
    parser.add_argument("--skip-proxies", action="store_true", help="only the in-process figures")
    parser.add_argument("--skip-in-process", action="store_true", help="only the figures through mitmdump")
    args = parser.parse_args()
    unknown = sorted(set(args.ablate or ()) - set(ABLATIONS))
    if unknown:
        parser.error(f"--ablate: unknown part(s) {', '.join(unknown)}; the parts are {', '.join(ABLATIONS)}")
    unknown = sorted(set(args.drop or ()) - set(_DROPS))
    if unknown:
        parser.error(f"--drop: unknown part(s) {', '.join(unknown)}; the parts are {', '.join(_DROPS)}")

    compile_bytecode()
    small = transcript(200_000)
    big = transcript(2_000_000)
    ratios = None
    if not args.skip_proxies:
        ratios = through_proxies(args, small, big, transcript(200_000, stream=True))
    if not args.skip_in_process:
        in_process(args, transcript(2_000_000, mention_all=False), big, transcript(2_000_000, spaced=True))
    if ratios is not None:
        print(
            "\nsummary, addon / bare mitmdump (the figure's floor / bare mitmdump"
            + (f"; the addon without {'+'.join(args.ablate)} / bare mitmdump" if args.ablate else "")
            + "): "
            + ", ".join(
                f"{label} {ratios[key]:.2f}x (floor {ratios[key + '_floor']:.2f}x"
                + (f", rules floor {ratios['repair_rules']:.2f}x" if key == "repair" else "")
                + (f", plain floor {ratios[key + '_plain']:.2f}x" if key + "_plain" in ratios else "")
                + (f", scaffold {ratios[key + '_scaffold']:.2f}x" if key + "_scaffold" in ratios else "")
                + (f", inlined {ratios[key + '_inlined']:.2f}x" if key + "_inlined" in ratios else "")
                + (f", ablated {ratios[key + '_ablated']:.2f}x" if args.ablate else "")
                + (f", dropped {ratios[key + '_dropped']:.2f}x" if args.drop else "")
                + ")"
                for key, label in (
                    ("small", "200 KB latency"),
                    ("small_cpu", "CPU"),
                    ("big", "2 MB latency"),
                    ("big_cpu", "CPU"),
                    ("repair", "repaired answer latency"),
                    ("ttfb", "TTFB"),
                    ("rss", "peak RSS"),
                )
            )
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
