"""A key the model streams back inside a tool call (``echo $KEY > .env`` spelled out) may be cut
across events anywhere: the saved flow must hold no piece of it that spells it when the events'
fragments are read in order, and it must still replay as recorded. And a body that redaction
shortens says its new length (a replay compares the headers)."""

from __future__ import annotations

import io
import os

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy import io as mio
from mitmproxy.net import encoding

import flowreplay as fr
import harness
from harness.dialects import sse_events
from harness.fixtures import env  # noqa: F401  (pytest fixture)
from harness.fixtures import loaded  # noqa: F401

KEY = "sk-ant-api03-Zq8vN2xK7pLm4RtY"
BASH = {
    "name": "Bash",
    "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
}


def sse(events: list[dict]) -> bytes:
    return b"".join(b"event: %s\ndata: %s\n\n" % (e["type"].encode(), orjson.dumps(e)) for e in events)


def answer(arguments: str, cuts: list[int]) -> bytes:
    """An Anthropic stream whose ``shell`` call's arguments come in pieces cut at ``cuts``."""
    at = sorted({min(max(c, 1), len(arguments) - 1) for c in cuts})
    pieces = [arguments[a:b] for a, b in zip([0, *at], [*at, len(arguments)], strict=True)]
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": []}
    events = [{"type": "message_start", "message": message}]
    events.append(
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "tool_use", "id": "toolu_01Ab", "name": "shell", "input": {}},
        }
    )
    events += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "input_json_delta", "partial_json": p}}
        for p in pieces
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 9}},
        {"type": "message_stop"},
    ]
    return sse(events)


def saved(f) -> tuple[bytes, object]:
    buf = io.BytesIO()
    mio.FlowWriter(buf).add(f)
    data = buf.getvalue()
    return data, list(mio.FlowReader(io.BytesIO(data)).stream())[0]


def fragments(body: bytes) -> str:
    """The ``partial_json`` pieces of a stream, joined (what a client reassembles)."""
    out = []
    for e in sse_events(body):
        data = e.json()
        if isinstance(data, dict) and isinstance(data.get("delta"), dict):
            out.append(data["delta"].get("partial_json") or "")
    return "".join(out)


@settings(
    max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "60")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(cuts=st.lists(st.integers(0, 200), max_size=4), repaired=st.booleans())
def test_a_key_cut_across_events_is_redacted_and_the_flow_replays(env, cuts, repaired):
    arguments = orjson.dumps({"command": ["bash", "-lc", f"echo ANTHROPIC_API_KEY={KEY} > .env"]}).decode()
    if not repaired:  # the call as the client declares it: nothing joins the pieces
        arguments = orjson.dumps({"command": f"echo ANTHROPIC_API_KEY={KEY} > .env"}).decode()
    upstream = answer(arguments, cuts)
    f = harness.make_flow(
        {
            "model": "m",
            "max_tokens": 9,
            "stream": True,
            "tools": [BASH],
            "messages": [{"role": "user", "content": "go"}],
        },
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json"), ("x-api-key", KEY)],
        upstream=upstream if repaired else upstream.replace(b'"shell"', b'"Bash"'),
        resp_type="text/event-stream",
    )
    harness.replay(env, f, 0)
    data, back = saved(f)
    assert KEY.encode() not in data
    for body in (back.response.raw_content, back.metadata.get("toolvocab_upstream")):
        if body:
            assert KEY not in fragments(body) and "<redacted>" in fragments(body)
    with fr.Replayer(strict=False) as r:
        assert r.replay(back).problems == []


def test_a_body_redaction_shortens_says_its_new_length(env):
    """An error answer echoing the key, untouched by toolvocab: saved with the key cut out, its
    Content-Length is the saved body's, and the flow replays as recorded."""
    body = {"model": "m", "max_tokens": 9, "tools": [BASH], "messages": [{"role": "user", "content": f"key {KEY}"}]}
    error = orjson.dumps({"type": "error", "error": {"type": "authentication_error", "message": f"bad key {KEY}"}})
    f = harness.make_flow(
        body,
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json"), ("x-api-key", KEY)],
        upstream=error,
        status=401,
        resp_headers=[("content-length", str(len(error)))],
    )
    harness.replay(env, f, 0)
    data, back = saved(f)
    assert KEY.encode() not in data
    assert back.request.headers["content-length"] == str(len(back.request.raw_content))
    assert back.response.headers["content-length"] == str(len(back.response.raw_content))
    with fr.Replayer(strict=False) as r:
        assert r.replay(back).problems == []


def chat_stream(calls: list[tuple[int, str]]) -> bytes:
    """A Chat stream of tool-call argument pieces, each ``(tool call index, piece)`` in order."""
    out = b""
    for index, piece in calls:
        delta = {"tool_calls": [{"index": index, "function": {"arguments": piece}}]}
        chunk = {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta}]}
        out += b"data: " + orjson.dumps(chunk) + b"\n\n"
    return out + b"data: [DONE]\n\n"


def chat_arguments(body: bytes) -> dict[int, str]:
    out: dict[int, str] = {}
    for e in sse_events(body):
        data = e.json()
        if isinstance(data, dict):
            for call in data["choices"][0]["delta"].get("tool_calls", []):
                out[call["index"]] = out.get(call["index"], "") + call["function"]["arguments"]
    return out


@settings(max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "60")), deadline=None)
@given(cut=st.integers(1, 80), between=st.booleans())
def test_bearer_and_its_token_cut_anywhere_are_cut_once_and_nothing_else(cut, between):
    """``Authorization: Bearer KEY`` makes two secrets, one inside the other; cut across events
    (inside ``Bearer`` or the key), with another call's piece between them or not, each call's
    arguments read afterwards exactly as before but for the key: no byte after it lost, no piece
    of ``<redacted>`` left over."""
    from mitmproxy import http
    from mitmproxy.test import tflow
    from mitmproxy.test import tutils

    from toolvocab.addons.redaction import redact_state

    args = f'{{"cmd":"curl -H \'Authorization: Bearer {KEY}\' https://api.example.test/v1/models"}}'
    cut = min(cut, len(args) - 1)
    pieces = [(0, args[:cut])] + ([(1, '{"cmd":"ls"}')] if between else []) + [(0, args[cut:])]
    body = chat_stream(pieces)
    f = tflow.tflow(resp=True)
    f.request.headers["authorization"] = f"Bearer {KEY}"
    f.response = tutils.tresp(headers=http.Headers([(b"content-type", b"text/event-stream")]), content=body)
    state = redact_state(f.get_state())
    assert KEY.encode() not in str(state).encode()
    got = chat_arguments(state["response"]["content"])
    assert got[0] == args.replace(KEY, "<redacted>")
    if between:
        assert got[1] == '{"cmd":"ls"}'


def _redacted_sse(body: bytes) -> bytes:
    from mitmproxy import http
    from mitmproxy.test import tflow
    from mitmproxy.test import tutils

    from toolvocab.addons.redaction import redact_state

    f = tflow.tflow(resp=True)
    f.request.headers["x-api-key"] = KEY
    f.response = tutils.tresp(headers=http.Headers([(b"content-type", b"text/event-stream")]), content=body)
    return redact_state(f.get_state())["response"]["content"]


def _event(data: bytes, end: bytes = b"\n\n") -> bytes:
    return b"event: e\ndata: " + data + end


A, B = KEY[:12], KEY[12:]


@pytest.mark.parametrize(
    "body",
    [
        # a block's starting text and its delta: one stream for the client's accumulator
        _event(orjson.dumps({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": A}}))
        + _event(orjson.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": B}})),
        # Chat: the same tool call (index 1) at another place of the list in each chunk
        _event(
            orjson.dumps(
                {
                    "choices": [
                        {
                            "index": 0,
                            "delta": {"tool_calls": [{"index": 0}, {"index": 1, "function": {"arguments": A}}]},
                        }
                    ]
                }
            )
        )
        + _event(
            orjson.dumps(
                {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 1, "function": {"arguments": B}}]}}]}
            )
        ),
        # an event the strict reader refuses (a repeated key), which a client still reads
        _event(b'{"index":0,"index":0,"delta":{"text":"' + A.encode() + b'"}}')
        + _event(orjson.dumps({"index": 0, "delta": {"text": B}})),
        # an unfinished last event
        _event(orjson.dumps({"index": 0, "delta": {"text": A}}))
        + _event(orjson.dumps({"index": 0, "delta": {"text": B}}), b""),
    ],
    ids=["block-start", "chat-list-place", "repeated-key", "unfinished"],
)
def test_a_key_split_as_a_client_joins_it_is_cut(body):
    out = _redacted_sse(body)
    assert A.encode() not in out and B.encode() not in out, out
    assert b"<redacted>" in out


def test_text_websocket_content_is_read_too():
    from mitmproxy.test import tflow

    from toolvocab.addons.redaction import redact_state

    f = tflow.twebsocketflow()
    f.request.headers["x-api-key"] = KEY
    state = f.get_state()
    delta = lambda piece: '{"type":"response.function_call_arguments.delta","item_id":"fc","delta":"%s"}' % piece  # noqa: E731
    state["websocket"]["messages"] = [(1, False, delta(A), 1.0, False, False), (1, False, delta(B), 1.0, False, False)]
    messages = redact_state(state)["websocket"]["messages"]
    assert "".join(orjson.loads(m[2])["delta"] for m in messages) == "<redacted>"


def test_an_event_with_odd_index_values_is_read_without_error():
    """Fields that name a stream may hold anything (a list, an object): the flow is still saved,
    the key still cut."""
    body = _event(b'{"index":[0],"output_index":{"a":1},"delta":{"text":"' + A.encode() + b'"}}')
    body += _event(b'{"index":[0],"output_index":{"a":1},"delta":{"text":"' + B.encode() + b'"}}')
    out = _redacted_sse(body)
    assert A.encode() not in out and B.encode() not in out and b"<redacted>" in out


@pytest.mark.parametrize(
    ("coding", "trailer"),
    # br has no end a decoder reads past: padding in the same piece breaks it (httpx's decoder too)
    [("gzip", b""), ("br", b""), ("zstd", b""), ("br, gzip", b""), ("gzip", b"\x00" * 8), ("zstd", b"\x00" * 8)],
)
def test_a_key_in_a_stream_the_upstream_compressed_is_redacted(env, coding, trailer):
    """The upstream compressed its stream although asked for identity: the client got it decoded,
    and the saved flow keeps the upstream's bytes for a replay. A key the model wrote there is
    redacted in them too (decoded, since redaction reads text), and the flow still replays."""
    import gzip

    import brotli

    encode = {
        "gzip": gzip.compress,
        "br": brotli.compress,
        "zstd": lambda data: encoding.encode(data, "zstd"),
        "br, gzip": lambda data: gzip.compress(brotli.compress(data)),
    }[coding]
    arguments = orjson.dumps({"command": ["bash", "-lc", f"echo ANTHROPIC_API_KEY={KEY} > .env"]}).decode()
    upstream = encode(answer(arguments, [30, 60])) + trailer
    f = harness.make_flow(
        {
            "model": "m",
            "max_tokens": 9,
            "stream": True,
            "tools": [BASH],
            "messages": [{"role": "user", "content": "go"}],
        },
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json"), ("x-api-key", KEY)],
        upstream=upstream,
        resp_type="text/event-stream",
        resp_headers=[("content-encoding", coding)],
    )
    harness.replay(env, f, 0)
    data, back = saved(f)
    from toolvocab.addons.decoding import stream_decoder

    kept = back.metadata["toolvocab_upstream"]
    coding_kept = (back.metadata.get("toolvocab_headers") or {}).get("response", {}).get("content-encoding")
    plain = stream_decoder(coding_kept).decode(kept.rstrip(b"\x00")) if coding_kept else kept
    assert KEY not in fragments(plain) and "<redacted>" in fragments(plain)
    assert KEY not in fragments(back.response.raw_content)
    with fr.Replayer(strict=False) as r:
        assert r.replay(back).problems == []
