"""Per-event delay of ordinary streamed text, with and without lifting leaked tool calls.

    uv run --extra test python benchmarks/text_delay.py [--runs 3] [--events 400] --baseline DIR

``--baseline DIR`` is a folder holding the addon *without* the feature (``DIR/toolvocab.py`` and
its sibling packages), e.g. the tree of the commit before it::

    mkdir -p /tmp/base && git archive <commit> addon | tar -x -C /tmp/base
    uv run --extra test python benchmarks/text_delay.py --baseline /tmp/base/addon

An asyncio upstream (a process of its own) on 127.0.0.1 answers each dialect's streaming path
(Anthropic Messages, Chat Completions, Responses, Gemini ``alt=sse``) with ``--events`` text
events written 2 ms apart, each carrying the upstream's ``time.monotonic()`` (system-wide on
Linux). Requests declare tools, so the addon's text watch is on. Two texts:

* ``prose``: ordinary text from its first character (the watch ends at the first event);
* ``reasoning``: the whole text inside one open ``<think>`` block (a lead: the watch stays on and
  reads every event to the end, but never holds one).

Three real ``mitmdump`` proxies in reverse mode, runs interleaved: ``bare+stream`` (no addon,
``stream_large_bodies=1``), ``baseline`` (``--baseline``) and ``addon`` (this tree). Printed: p50
and p99 of arrival minus send time per event, medians over the runs, in ms.
"""

from __future__ import annotations

import argparse
import asyncio
import http.client
import json
import statistics
import time
from pathlib import Path

# common first: importing it puts tests/ on sys.path (for procs)
from common import CHUNKED_SSE_HEAD
from common import UpstreamProcess
from common import chunk
from common import pct
from common import read_delays
from common import serve
from common import sse as _sse

# isort: split
import procs

SCHEMA = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
REQUESTS = {
    "anthropic": (
        "/v1/messages",
        {
            "model": "m",
            "max_tokens": 100,
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"name": "read_file", "input_schema": SCHEMA}],
        },
    ),
    "openai_chat": (
        "/v1/chat/completions",
        {
            "model": "m",
            "stream": True,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": {"name": "read_file", "parameters": SCHEMA}}],
        },
    ),
    "openai_responses": (
        "/v1/responses",
        {
            "model": "m",
            "stream": True,
            "input": "hi",
            "tools": [{"type": "function", "name": "read_file", "parameters": SCHEMA}],
        },
    ),
    "gemini": (
        "/v1beta/models/g:streamGenerateContent?alt=sse",
        {
            "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
            "tools": [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": SCHEMA}]}],
        },
    ),
}


class Frames:
    """A dialect's stream: head, one text event, tail."""

    def __init__(self, dialect: str) -> None:
        self.dialect = dialect
        self.seq = 0

    def _r(self, kind: str, **fields: object) -> bytes:
        self.seq += 1
        return _sse(kind, {"type": kind, "sequence_number": self.seq - 1, **fields})

    def head(self) -> bytes:
        d = self.dialect
        if d == "anthropic":
            return _sse(
                "message_start",
                {
                    "type": "message_start",
                    "message": {"id": "m", "type": "message", "role": "assistant", "content": []},
                },
            ) + _sse(
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            )
        if d == "openai_chat":
            return _sse(
                None,
                {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}],
                },
            )
        if d == "openai_responses":
            self.seq = 0
            return (
                self._r(
                    "response.created",
                    response={"id": "r", "object": "response", "status": "in_progress", "output": []},
                )
                + self._r(
                    "response.output_item.added",
                    output_index=0,
                    item={"id": "msg", "type": "message", "role": "assistant", "status": "in_progress", "content": []},
                )
                + self._r(
                    "response.content_part.added",
                    item_id="msg",
                    output_index=0,
                    content_index=0,
                    part={"type": "output_text", "text": ""},
                )
            )
        return b""

    def text(self, t: str) -> bytes:
        d = self.dialect
        if d == "anthropic":
            return _sse(
                "content_block_delta",
                {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": t}},
            )
        if d == "openai_chat":
            return _sse(
                None, {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": t}}]}
            )
        if d == "openai_responses":
            return self._r("response.output_text.delta", item_id="msg", output_index=0, content_index=0, delta=t)
        return _sse(None, {"candidates": [{"content": {"role": "model", "parts": [{"text": t}]}, "index": 0}]})

    def tail(self) -> bytes:
        d = self.dialect
        if d == "anthropic":
            return (
                _sse("content_block_stop", {"type": "content_block_stop", "index": 0})
                + _sse("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}})
                + _sse("message_stop", {"type": "message_stop"})
            )
        if d == "openai_chat":
            return (
                _sse(
                    None,
                    {
                        "id": "c",
                        "object": "chat.completion.chunk",
                        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                    },
                )
                + b"data: [DONE]\n\n"
            )
        if d == "openai_responses":
            return self._r(
                "response.completed", response={"id": "r", "object": "response", "status": "completed", "output": []}
            )
        return _sse(
            None,
            {
                "candidates": [
                    {"content": {"role": "model", "parts": [{"text": ""}]}, "finishReason": "STOP", "index": 0}
                ]
            },
        )


MARKUP = '<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call>'
#: What each dialect's structured call looks like on the wire (the lift happened).
LIFTED = {
    "anthropic": b'"tool_use"',
    "openai_chat": b'"tool_calls"',
    "openai_responses": b'"function_call"',
    "gemini": b'"functionCall"',
}


def lifted(port: int, dialect: str) -> bool:
    """True when a stream whose text is one leaked call reaches the client as a structured call."""
    path, body = REQUESTS[dialect]
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        path + ("&" if "?" in path else "?") + "markup=1",
        body=json.dumps(body),
        headers={"content-type": "application/json", "x-api-key": "k", "authorization": "Bearer k"},
    )
    data = conn.getresponse().read()
    conn.close()
    return LIFTED[dialect] in data


def _dialect_of(path: str) -> str:
    for name, (p, _) in REQUESTS.items():
        if path.split("?")[0] == p.split("?")[0]:
            return name
    return "anthropic"


def make_handler(events: int):
    """The upstream's connection handler (run in its process): the request path picks the
    dialect (:data:`REQUESTS`) and the text (``reasoning=1``: inside one open ``<think>``;
    ``markup=1``: one leaked call alone); ``events`` text events 2 ms apart."""

    async def answer(path: str, writer: asyncio.StreamWriter) -> None:
        frames = Frames(_dialect_of(path))
        writer.write(CHUNKED_SSE_HEAD)

        def write(data: bytes) -> None:
            if data:
                writer.write(chunk(data))

        write(frames.head())
        if "markup=1" in path:  # the feature check: a leaked call alone
            write(frames.text(MARKUP) + frames.tail())
            writer.write(b"0\r\n\r\n")
            return
        if "reasoning=1" in path:
            write(frames.text("<think>\n"))
        for _ in range(events):
            write(frames.text(f"t={time.monotonic():.6f}; "))
            await writer.drain()
            await asyncio.sleep(0.002)
        write(frames.tail())
        writer.write(b"0\r\n\r\n")

    return serve(answer)


def delays(port: int, dialect: str, reasoning: bool) -> list[float]:
    path, body = REQUESTS[dialect]
    path += ("&" if "?" in path else "?") + ("reasoning=1" if reasoning else "prose=1")
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(
        "POST",
        path,
        body=json.dumps(body),
        headers={"content-type": "application/json", "x-api-key": "k", "authorization": "Bearer k"},
    )
    resp = conn.getresponse()
    assert resp.status == 200, (dialect, resp.status)
    out = read_delays(resp)
    conn.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--events", type=int, default=400)
    parser.add_argument(
        "--baseline", required=True, help="folder with the addon without the feature (toolvocab.py inside)"
    )
    args = parser.parse_args()

    upstream = UpstreamProcess(make_handler, args.events)
    url = upstream.url
    proxies = {}
    try:
        proxies["bare+stream"] = procs.start_mitmdump(
            url, script=None, options={"flow_detail": "0", "stream_large_bodies": "1"}
        )
        proxies["baseline"] = procs.start_mitmdump(
            url, script=str(Path(args.baseline) / "toolvocab.py"), options={"flow_detail": "0"}
        )
        proxies["addon"] = procs.start_mitmdump(url, script=str(procs.ADDON_SCRIPT), options={"flow_detail": "0"})
        cases = [(d, r) for d in REQUESTS for r in (False, True)]
        figures: dict[tuple, dict[str, list[float]]] = {}
        for p in proxies.values():  # warm up
            delays(p.port, "anthropic", False)
        feature = {name: [d for d in REQUESTS if lifted(p.port, d)] for name, p in proxies.items()}
        assert feature["addon"] == list(REQUESTS), feature  # the measured addon lifts in every dialect
        for _ in range(args.runs):
            for dialect, reasoning in cases:
                for name, p in proxies.items():
                    d = delays(p.port, dialect, reasoning)
                    assert len(d) == args.events, (name, dialect, reasoning, len(d))
                    fig = figures.setdefault((dialect, reasoning, name), {"p50": [], "p99": []})
                    fig["p50"].append(pct(d, 50))
                    fig["p99"].append(pct(d, 99))
    finally:
        for p in proxies.values():
            p.stop()
        upstream.stop()

    print(
        f"per-event delay of streamed text, ms (median of {args.runs} runs, {args.events} events 2 ms apart); baseline = {args.baseline}"
    )
    print("leaked call lifted by: " + "; ".join(f"{k}: {', '.join(v) or 'none'}" for k, v in feature.items()))
    print(f"{'dialect':18s} {'text':10s} {'bare+stream p50/p99':>20s} {'baseline p50/p99':>18s} {'addon p50/p99':>15s}")
    for dialect, reasoning in cases:
        row = []
        for name in ("bare+stream", "baseline", "addon"):
            fig = figures[(dialect, reasoning, name)]
            row.append(f"{statistics.median(fig['p50']) * 1e3:6.3f}/{statistics.median(fig['p99']) * 1e3:6.3f}")
        print(f"{dialect:18s} {'reasoning' if reasoning else 'prose':10s} {row[0]:>20s} {row[1]:>18s} {row[2]:>15s}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
