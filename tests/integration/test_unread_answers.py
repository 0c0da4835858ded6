"""Answers toolvocab does not read, through a real mitmdump in front of the fake upstream:

- Bedrock's ``invoke-with-response-stream`` answers in binary AWS event-stream frames
  (``application/vnd.amazon.eventstream``): no tool name changes upstream for such a request
  (none could be given back: an alias would reach the client, which declares no tool of that
  name), and the frames go to the client as they arrive, byte for byte, the record saying why;
- Gemini's ``:streamGenerateContent`` JSON array, and Bedrock's frames, stream to the client as
  they arrive also when toolvocab leaves the flow alone (mode ``off``), as an event stream does;
- an event stream toolvocab does not read (a flow it leaves alone, a coding it cannot read as it
  streams) is kept in a saved flow (``-w``) while it streams.

Every process is stopped by its PID; every wait is bounded.
"""

from __future__ import annotations

import gzip
import json

import httpx
import pytest

from sdk import assert_no_addon_errors
from sdk import post_streaming

pytestmark = pytest.mark.integration

#: A name the Bedrock grammar rejects (a hyphen): aliased upstream on a path whose answer is read.
MCP = "mcp__chrome-devtools__navigate_page"
REQUEST = {
    "anthropic_version": "bedrock-2023-05-31",
    "max_tokens": 100,
    "messages": [{"role": "user", "content": "open the page"}],
    "tools": [
        {"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}},
        {"name": MCP, "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}}},
    ],
}
HOST = {"host": "bedrock-runtime.us-east-1.amazonaws.com", "content-type": "application/json"}
#: Not real frames (nothing reads them): what matters is that they pass as sent, as they come.
FRAMES = [b"\x00\x00\x00\x41frame-one" + bytes(range(40)), b"\x00\x00\x00\x30frame-two" + bytes(range(30))]


def test_a_bedrock_stream_keeps_every_name_and_streams_as_sent(fake_upstream, proxy):
    px = proxy(options={"keep_host_header": "true"}, save=False)
    fake_upstream.enqueue(
        headers={"content-type": "application/vnd.amazon.eventstream"}, chunks=FRAMES, chunk_delay=1.0
    )
    path = "/model/anthropic.claude-sonnet-4/invoke-with-response-stream"
    seen = post_streaming(px.url, path, json.dumps(REQUEST).encode(), HOST)
    record = fake_upstream.wait_requests(1)[0]
    names = [t["name"] for t in record["body"]["tools"]]
    assert names == ["Bash", MCP], "a name changed upstream could never be given back in these frames"
    assert seen[-1][1] == b"".join(FRAMES), "the frames reach the client byte for byte"
    first = next(t for t, b in seen if b.startswith(FRAMES[0]))
    assert seen[-1][0] - first > 0.7, "the first frame was held until the upstream finished"
    assert_no_addon_errors(px)


def test_a_saved_bedrock_stream_keeps_its_answer(fake_upstream, proxy):
    """Something saves flows (-w): the frames stream as they arrive and the saved flow keeps them
    (it had no body, marked as a failed repair; then they were buffered whole to be kept)."""
    px = proxy(options={"keep_host_header": "true"})
    fake_upstream.enqueue(
        headers={"content-type": "application/vnd.amazon.eventstream"}, chunks=FRAMES, chunk_delay=1.0
    )
    path = "/model/anthropic.claude-sonnet-4/invoke-with-response-stream"
    seen = post_streaming(px.url, path, json.dumps(REQUEST).encode(), HOST)
    assert seen[-1][1] == b"".join(FRAMES)
    first = next(t for t, b in seen if b.startswith(FRAMES[0]))
    assert seen[-1][0] - first > 0.7, "the frames were held until the upstream finished"
    assert [t["name"] for t in fake_upstream.wait_requests(1)[0]["body"]["tools"]] == ["Bash", MCP]
    flow = px.flows()[0]
    assert flow.response.raw_content == b"".join(FRAMES)
    md = flow.metadata["toolvocab"]
    assert md["rename_map"] == {}, md
    assert any("no tool name changed upstream" in n for n in md["notes"]), md["notes"]
    assert flow.marked != ":warning:", flow.marked
    assert_no_addon_errors(px)


def test_the_same_request_on_bedrocks_json_invoke_is_still_aliased(fake_upstream, proxy):
    px = proxy(options={"keep_host_header": "true"})
    answer = {"id": "m", "type": "message", "role": "assistant", "content": [], "stop_reason": "end_turn"}
    fake_upstream.enqueue(json.dumps(answer).encode(), headers={"content-type": "application/json"})
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        r = http.post("/model/anthropic.claude-sonnet-4/invoke", content=json.dumps(REQUEST), headers=HOST)
    assert r.status_code == 200
    names = [t["name"] for t in fake_upstream.wait_requests(1)[0]["body"]["tools"]]
    assert names[0] == "Bash" and names[1] != MCP and names[1].startswith("mcp__chrome_devtools"), names
    assert_no_addon_errors(px)


@pytest.mark.parametrize(
    ("path", "ctype", "chunks"),
    [
        (
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
            "application/json; charset=UTF-8",
            [b'[{"candidates": [{"content": {"parts": [{"text": "a"}]}}]}', b'\r\n,{"candidates": []}]'],
        ),
        ("/model/anthropic.claude-sonnet-4/invoke-with-response-stream", "application/vnd.amazon.eventstream", FRAMES),
    ],
    ids=["gemini-array", "bedrock-frames"],
)
@pytest.mark.parametrize("save", [False, True], ids=["not saved", "saved"])
def test_a_stream_goes_out_as_it_arrives_when_toolvocab_is_off(fake_upstream, proxy, path, ctype, chunks, save):
    """As an event stream does in every mode (mitmproxy alone buffers the whole answer first);
    a saved flow keeps it (it was buffered whole for that, the client waiting)."""
    px = proxy(options={"toolvocab_mode": "off"}, save=save)
    fake_upstream.enqueue(headers={"content-type": ctype}, chunks=chunks, chunk_delay=1.0)
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]} if "gemini" in path else REQUEST
    seen = post_streaming(px.url, path, json.dumps(body).encode(), {"content-type": "application/json"})
    assert seen[-1][1] == b"".join(chunks)
    first = next(t for t, b in seen if b.startswith(chunks[0]))
    assert seen[-1][0] - first > 0.7, "the answer was held until the upstream finished"
    if save:
        assert px.flows()[0].response.raw_content == b"".join(chunks)
    assert_no_addon_errors(px)


SSE = [
    b'event: message_start\ndata: {"type": "message_start", "message": {"id": "m", "content": []}}\n\n',
    b'event: content_block_start\ndata: {"type": "content_block_start", "index": 0, '
    b'"content_block": {"type": "text", "text": ""}}\n\n',
    b'event: message_stop\ndata: {"type": "message_stop"}\n\n',
]


#: The same stream gzip-encoded, in three pieces (an upstream that compresses though the request
#: asked for identity; observe mode leaves the client's accept-encoding, so it is read by no one).
GZIPPED = gzip.compress(b"".join(SSE))
GZIPPED_CHUNKS = [GZIPPED[:20], GZIPPED[20:40], GZIPPED[40:]]
TITLE = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "a title for this"}]}


@pytest.mark.parametrize(
    ("options", "body", "chunks", "coding"),
    [
        ({"toolvocab_mode": "off"}, REQUEST, SSE, None),
        ({}, TITLE, SSE, None),
        ({"toolvocab_mode": "observe"}, REQUEST, GZIPPED_CHUNKS, "gzip"),
    ],
    ids=["mode-off", "no-tools", "observe-gzip"],
)
def test_a_saved_stream_toolvocab_does_not_read_streams_and_is_kept(
    fake_upstream, proxy, options, body, chunks, coding
):
    """mitmdump -w: an event stream toolvocab does not read — of a flow it leaves alone (mode
    ``off``; a request with no tools, as Claude Code's title requests) or one it cannot read as it
    streams (gzip in observe mode) — reaches the client as it arrives, and the saved flow keeps its
    body as it came, as mitmproxy keeps a body it buffered."""
    px = proxy(options=options)
    headers = {"content-type": "text/event-stream", **({"content-encoding": coding} if coding else {})}
    fake_upstream.enqueue(headers=headers, chunks=chunks, chunk_delay=1.0)
    seen = post_streaming(px.url, "/v1/messages", json.dumps(body).encode(), {"content-type": "application/json"})
    assert seen[-1][1] == b"".join(chunks)
    first = next(t for t, b in seen if b.startswith(chunks[0]))
    assert seen[-1][0] - first > 1.5, "the answer was held until the upstream finished"
    flows = px.flows()
    assert len(flows) == 1 and flows[0].response.raw_content == b"".join(chunks)
    assert flows[0].response.content == b"".join(SSE)
    assert_no_addon_errors(px)


LONG = "mcp__github_enterprise_server__list_pull_request_review_comments_for_repo"  # 73 characters


@pytest.mark.parametrize(("background", "kept"), [(True, True), (False, False)], ids=["background", "foreground"])
def test_a_background_response_keeps_every_name(fake_upstream, proxy, background, kept):
    """OpenAI Responses with ``background: true`` answers later, on a GET toolvocab does not read:
    a name aliased on the POST would reach the client unread (attack 82 V6). A foreground request
    is aliased, and its answer given back, as before."""
    px = proxy(save=False)
    body = {
        "model": "gpt-5",
        "input": "list the reviews",
        "background": background,
        "tools": [{"type": "function", "name": LONG, "parameters": {"type": "object", "properties": {}}}],
    }
    with httpx.Client(base_url=px.url, timeout=30, trust_env=False) as http:
        r = http.post("/v1/responses", json=body)
    assert r.status_code == 200, r.text
    sent = fake_upstream.wait_requests(1)[0]["body"]["tools"][0]["name"]
    assert (sent == LONG) is kept, sent
    assert_no_addon_errors(px)
