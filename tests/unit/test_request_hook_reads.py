"""What the request hook reads of a flow, read the cheap way, is what mitmproxy's own accessors
give: the headers (:func:`toolvocab.addons.core.header_reader` against ``Headers.get``), whether
something saves or shows flows (``ToolVocabRecorder.saves_bodies``, worked out once per option
change), and the record put in ``flow.metadata`` at the request (the dump of a record copied from
the one its plan started: ``Caches.record``) — each flow's own."""

from __future__ import annotations

import gc
import logging
import weakref
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy import ctx
from mitmproxy import http
from mitmproxy.test import taddons
from test_addon_hooks import KEY
from test_addon_hooks import fixture_bytes
from test_addon_hooks import fixture_json
from test_addon_hooks import make_flow
from test_addon_hooks import replay

from harness.fixtures import env  # noqa: F401  (pytest fixtures)
from harness.fixtures import loaded  # noqa: F401
from toolvocab.addons.core import header_reader
from toolvocab.addons.recording import ToolVocabRecorder
from toolvocab.addons.state import FlowState
from toolvocab.dialects import pipeline
from toolvocab.engine.clients import HEADERS
from toolvocab.report import METADATA_DIFF

#: Header names as clients spell them, in any case, the ones the pipeline asks among them.
NAMES = st.sampled_from([*HEADERS, "User-Agent", "USER-AGENT", "X-Stainless-Lang", "content-type", "x-a"])
#: ``Accept-Encoding`` values as clients send them.
ENCODINGS = ["identity", "Identity", "gzip, deflate, br, zstd", "identity, gzip", ""]
VALUES = st.binary(max_size=12) | st.text(max_size=8).map(lambda t: t.encode("utf-8", "surrogatepass"))


@settings(max_examples=300, deadline=None)
@given(
    fields=st.lists(st.tuples(NAMES.map(str.encode), VALUES), max_size=8),
    asked=st.lists(NAMES, min_size=1, max_size=4),
)
def test_the_header_reader_gives_what_headers_get_gives(fields: list[tuple[bytes, bytes]], asked: list[str]) -> None:
    """Any case, repeated fields (joined), bytes that are not UTF-8 (surrogate-escaped)."""
    headers = http.Headers(fields)
    get = header_reader(headers)
    for name in [*asked, *(n.lower() for n in asked), *(n.upper() for n in asked)]:
        assert get(name) == headers.get(name)


class DumpMaster:
    """Stands for mitmdump's master: ``saves_bodies`` reads the master's class name."""


def test_saves_bodies_follows_every_option_change(monkeypatch) -> None:
    """Worked out once, and again after any option changes: ``-w`` set while mitmdump runs (a
    script, mitmproxy's ``set`` command) makes it true at once, and cleared, false again."""
    recorder = ToolVocabRecorder()
    with taddons.context(recorder) as tctx:
        tctx.options.add_option("save_stream_file", str | None, None, "as mitmproxy's Save addon declares it")
        monkeypatch.setattr(ctx, "master", DumpMaster())
        assert recorder.saves_bodies() is False
        assert recorder.saves_bodies() is False
        tctx.options.update(save_stream_file="/tmp/flows.mitm")
        assert recorder.saves_bodies() is True
        tctx.options.update(save_stream_file=None)
        assert recorder.saves_bodies() is False
        monkeypatch.setattr(ctx, "master", object())  # another master (mitmweb, a test): it shows flows
        assert recorder.saves_bodies() is True


def test_mitmdump_printing_bodies_shows_flows_and_toolvocab_record_keeps_only_its_own(monkeypatch, tmp_path) -> None:
    """``flow_detail`` 3 or more prints each body (mitmproxy's dumper): mitmproxy shows flows.
    ``toolvocab_record`` writes only the flows toolvocab handles: it is no saver of the others."""
    recorder = ToolVocabRecorder()
    with taddons.context(recorder) as tctx:
        tctx.options.add_option("flow_detail", int, 1, "as mitmproxy's dumper declares it")
        monkeypatch.setattr(ctx, "master", DumpMaster())
        assert recorder.mitmproxy_keeps() is False
        tctx.options.update(flow_detail=3)
        assert recorder.mitmproxy_keeps() is True and recorder.saves_bodies() is True
        tctx.options.update(flow_detail=2, toolvocab_record=str(tmp_path))
        assert recorder.mitmproxy_keeps() is False and recorder.saves_bodies() is True


def test_the_record_at_the_request_is_each_flows_own_dump(env, monkeypatch) -> None:  # noqa: F811
    """As plain mitmdump runs it (the request only peeked, the record copied from the one its
    plan started from the second flow on): after the request hook, ``flow.metadata`` holds what
    the flow's record dumps to, and a dict of its own — a script that changes one flow's record
    changes no other's, and the next flow's is what the first one's was."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)
    env.configure(toolvocab_mode="repair")
    body = fixture_json("request-claude-code.json")
    seen: list[dict] = []
    first = b""
    for _ in range(3):
        f = make_flow(body)
        env.addon.request(f)
        state = env.addon._states.pop(f.id)
        assert state.unverified is not None  # peeked: the record came from the pipeline's copy
        record = f.metadata[KEY]
        assert record == state.record.dump()
        assert record["declared"] and record["dialect"] == "anthropic"
        first = first or orjson.dumps(record)
        assert orjson.dumps(record) == first
        seen.append(record)
        record["declared"].append("changed by a script")
        record["notes"].append("changed by a script")
        state.record.notes.append("changed by the flow")
        state.record.declared.append("changed by the flow")
    assert len({id(r) for r in seen}) == 3


#: Answers as the upstream sends them: (body, content-type, status).
ANSWERS = st.sampled_from(
    [
        (fixture_bytes("response-declared-tool.json"), "application/json", 200),
        (fixture_bytes("response-foreign-tool.json"), "application/json", 200),
        (fixture_bytes("stream-declared-tool.sse"), "text/event-stream", 200),
        (fixture_bytes("stream-foreign-tool.sse"), "text/event-stream", 200),
        (b'{"type":"error","error":{"type":"overloaded_error","message":"busy"}}', "application/json", 529),
        (b"not json", "application/json", 200),
        (b"", "application/json", 200),
        (b"[1]", "application/json", 200),
        (b'{"type":"message","content":"x","content":[]}', "application/json", 200),
    ]
) | st.builds(
    lambda text, reason: (
        b'{"type":"message","role":"assistant","content":[{"type":"text","text":'
        + text
        + b'}],"stop_reason":"'
        + reason
        + b'"}',
        "application/json",
        200,
    ),
    st.sampled_from(
        [
            b'"Done."',
            b'""',
            orjson.dumps('<tool_call>{"name": "shell", "arguments": {"command": ["ls"]}}</tool_call>'),
            b'"a lone surrogate \\ud800"',
        ]
    ),
    st.sampled_from([b"end_turn", b"max_tokens"]),
)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(
    answers=st.lists(ANSWERS, min_size=1, max_size=4),
    mode=st.sampled_from(["auto", "repair"]),
    stream=st.booleans(),
    scripted=st.booleans(),
)
def test_a_flow_whose_record_nothing_touched_ends_as_if_it_had_its_own(
    env,  # noqa: F811
    monkeypatch,
    caplog,
    answers: list[tuple[bytes, str, int]],
    mode: str,
    stream: bool,
    scripted: bool,
) -> None:
    """As plain mitmdump runs it (requests peeked, records shared from the second flow on): each
    flow, whatever its answer, ends with the record, diff, marker, comment and log lines it ends
    with when its record is copied at the request (``FlowState.record_untouched`` never true:
    every flow the way a flow that changes its record goes; the metadata compared as its ``repr``:
    each value's type and each key's place count), whatever another script put on the flow, and
    the shared record is never changed."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)
    env.configure(toolvocab_mode=mode)
    request = orjson.dumps({**fixture_json("request-claude-code.json"), "stream": stream})

    def run() -> list[Any]:
        ends = []
        for i, (body, ctype, status) in enumerate(answers):
            caplog.clear()
            f = make_flow(request, upstream=body, resp_type=ctype, status=status)
            f.id = f"flow-{i}"  # the ids of lifted calls are made of it
            if scripted:  # another script's diff and comment, each with a lone surrogate
                f.metadata[METADATA_DIFF] = "x \ud800"
                f.comment = "y \ud800"
            result = replay(env, f)
            logged = [(r.levelno, r.getMessage()) for r in caplog.records if r.name.startswith("toolvocab")]
            # repr: a JSON type (2000 for 2000.0) counts, and the order of the keys
            ends.append((result.out, repr(f.metadata), f.marked, f.comment, logged))
        return ends

    with caplog.at_level(logging.DEBUG):
        run()  # the first flow of a plan builds its shared record
        shared = run()
        with monkeypatch.context() as m:
            m.setattr(FlowState, "record_untouched", property(lambda self: False))
            own = run()
    assert shared == own
    for _plan, template, dumped in env.addon.caches._records.values():
        assert dumped is None or orjson.loads(dumped) == template.dump()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    encodings=st.lists(
        st.tuples(st.sampled_from(["accept-encoding", "Accept-Encoding"]), st.sampled_from(ENCODINGS)), max_size=2
    ),
    peek=st.booleans(),
)
def test_the_request_asks_for_an_identity_answer_as_anticomp_asks(
    env,  # noqa: F811
    monkeypatch,
    encodings: list[tuple[str, str]],
    peek: bool,
) -> None:
    """Whatever ``Accept-Encoding`` fields the client sent (none, ``identity`` already, another
    case or coding, two fields), the handled request's headers are those mitmproxy's
    ``Request.anticomp()`` makes of them: the answer comes uncompressed (mitmproxy G5)."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: not peek)
    env.configure(toolvocab_mode="repair")
    f = make_flow(fixture_json("request-claude-code.json"), response=False)
    del f.request.headers["accept-encoding"]
    for name, value in encodings:
        f.request.headers.add(name, value)
    expected = f.request.copy()
    expected.anticomp()
    env.addon.request(f)
    assert env.addon._states.pop(f.id) is not None
    assert f.request.headers.fields == expected.headers.fields


#: JSON answers: calls kept, renamed with their arguments fitted, left (not declared), lifted
#: out of text; an error status; a body that is not JSON.
JSON_ANSWERS = [
    fixture_bytes("response-declared-tool.json"),
    fixture_bytes("response-foreign-tool.json"),
    b'{"type":"message","content":[{"type":"tool_use","id":"toolu_1","name":"frobnicate","input":{}}],'
    b'"stop_reason":"tool_use"}',
    b'{"type":"message","content":[{"type":"tool_use","id":"toolu_2","name":"read_file","input":{"path":"a",'
    b'"offset":0}}],"stop_reason":"tool_use"}',
    b'{"type":"message","content":[{"type":"text","text":'
    + orjson.dumps('<tool_call>{"name": "shell", "arguments": {"command": ["ls"]}}</tool_call>')
    + b'}],"stop_reason":"end_turn"}',
    b"not json",
]


#: Streamed answers: text only; a call kept; a call renamed with its arguments fitted; an
#: error event after the 200.
SSE_ANSWERS = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","type":"message","role":'
    b'"assistant","content":[]}}\n\nevent: content_block_start\ndata: {"type":"content_block_start",'
    b'"index":0,"content_block":{"type":"text","text":""}}\n\nevent: content_block_delta\ndata: '
    b'{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Done."}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\nevent: message_stop\n'
    b'data: {"type":"message_stop"}\n\n',
    fixture_bytes("stream-declared-tool.sse"),
    fixture_bytes("stream-foreign-tool.sse"),
    fixture_bytes("stream-error-after-200.sse"),
]


@pytest.mark.parametrize(("answer", "streamed"), [(a, False) for a in JSON_ANSWERS] + [(a, True) for a in SSE_ANSWERS])
@pytest.mark.parametrize("peek", [True, False])
def test_a_flow_state_goes_when_its_flow_ends_without_the_cyclic_gc(
    env, monkeypatch, answer: bytes, streamed: bool, peek: bool
) -> None:  # noqa: F811
    """A flow's state (which holds the request body while it is only peeked) is in no reference
    cycle once its flow ends: it is freed then, not at some later collection of the cyclic GC
    (which, with 2 MB bodies and few allocations between flows, let several pile up). A stream
    callable, which the flow keeps as ``response.stream``, lets go of it at the finish, whichever
    way the record is finished (a stream that changed nothing keeps the shared record to the end)."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: not peek)
    env.configure(toolvocab_mode="repair")
    states: list[weakref.ref] = []
    init = FlowState.__init__

    def tracked(self: FlowState, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        states.append(weakref.ref(self))

    monkeypatch.setattr(FlowState, "__init__", tracked)
    body = orjson.dumps({**fixture_json("request-claude-code.json"), "stream": streamed})
    resp_type = "text/event-stream" if streamed else "application/json"
    gc.collect()
    gc.disable()
    try:
        for _ in range(2):  # the second with the cached plan's shared record
            f = make_flow(body, upstream=answer, resp_type=resp_type)
            replay(env, f)
            assert f.metadata[KEY]["dialect"] == "anthropic"
            assert f.metadata[KEY]["streamed"] is streamed, f.metadata[KEY]
            del f
        assert len(states) == 2
        assert [ref() for ref in states] == [None, None]
    finally:
        gc.enable()


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_with_nothing_to_change_copies_no_record(env, monkeypatch, stream: bool) -> None:  # noqa: F811
    """As plain mitmdump runs it (mode ``repair``: the request is only peeked), a flow whose
    answer (JSON, or streamed) has no call and no note ends on its request's shared record: reading the record's mode or how many decisions
    it holds copies nothing (``FlowState.shared_record``), so the finish takes the shared
    record's dump (``ToolVocabRecorder._finish_untouched``) and builds no record of its own."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)
    env.configure(toolvocab_mode="repair")
    request = orjson.dumps({**fixture_json("request-claude-code.json"), "stream": stream})
    answer = (
        SSE_ANSWERS[0]
        if stream
        else b'{"type":"message","role":"assistant","content":[{"type":"text","text":"Done."}],"stop_reason":"end_turn"}'
    )
    ctype = "text/event-stream" if stream else "application/json"
    replay(env, make_flow(request, upstream=answer, resp_type=ctype))  # the plan's shared record is built
    copies: list[Any] = []
    real = pipeline.fresh_record
    monkeypatch.setattr(pipeline, "fresh_record", lambda template: copies.append(template) or real(template))
    f = make_flow(request, upstream=answer, resp_type=ctype)
    result = replay(env, f)
    assert result.out == answer
    assert f.metadata[KEY]["streamed"] is stream and f.metadata[KEY]["decisions"] == []
    assert copies == []


def _one_block_answer(block: dict[str, Any], stop_reason: str, stream: bool) -> bytes:
    """An Anthropic answer of one content block (``text`` or ``tool_use``), as JSON or as the
    event stream the API sends for it: the block opened empty, its content in one delta."""
    if not stream:
        return orjson.dumps({"type": "message", "role": "assistant", "content": [block], "stop_reason": stop_reason})
    if block["type"] == "text":
        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": block["text"]}
    else:
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": orjson.dumps(block["input"]).decode()}
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "m", "stop_reason": None}
    events = [
        {"type": "message_start", "message": message},
        {"type": "content_block_start", "index": 0, "content_block": start},
        {"type": "content_block_delta", "index": 0, "delta": delta},
        {"type": "content_block_stop", "index": 0},
        {"type": "message_delta", "delta": {"stop_reason": stop_reason}},
        {"type": "message_stop"},
    ]
    return b"".join(b"event: " + e["type"].encode() + b"\ndata: " + orjson.dumps(e) + b"\n\n" for e in events)


def _with_tool_choice(env: Any, choice: Any, answer: bytes, stream: bool) -> tuple[Any, Any]:
    """Claude Code's fixture request with ``tool_choice`` (none: absent) through the hooks, the
    upstream answering ``answer``: the flow and what the client got."""
    request = {**fixture_json("request-claude-code.json"), "stream": stream}
    if choice is not None:
        request["tool_choice"] = choice
    f = make_flow(
        orjson.dumps(request), upstream=answer, resp_type="text/event-stream" if stream else "application/json"
    )
    return f, replay(env, f)


@pytest.mark.parametrize("mode", ["auto", "repair"])  # repair: the request only peeked
@pytest.mark.parametrize("stream", [False, True])
def test_a_request_whose_tool_choice_is_none_gets_its_markup_as_text(  # noqa: F811
    env, monkeypatch, mode: str, stream: bool
) -> None:
    """From the request as the client sent it to the answer the client gets: with
    ``tool_choice: {"type": "none"}`` the markup stays text; without it (the control) it is lifted
    into the declared ``Read``."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)
    env.configure(toolvocab_mode=mode)
    markup = '<tool_call>\n{"name": "Read", "arguments": {"file_path": "/tmp/notes.txt"}}\n</tool_call>'
    answer = _one_block_answer({"type": "text", "text": markup}, "end_turn", stream)
    for choice, lifted in (({"type": "none"}, False), (None, True)):
        _, result = _with_tool_choice(env, choice, answer, stream)
        assert (result.out == answer) is not lifted
        assert (b'"tool_use"' in result.out) is lifted


@pytest.mark.parametrize("mode", ["auto", "repair"])  # repair: the request only peeked
@pytest.mark.parametrize("stream", [False, True])
def test_a_call_is_renamed_only_to_a_tool_the_tool_choice_allows(  # noqa: F811
    env, monkeypatch, mode: str, stream: bool
) -> None:
    """Codex's ``shell`` means Claude Code's ``Bash``; under ``tool_choice`` ``none``, or one named
    tool other than ``Bash``, the model was not offered ``Bash``: the call is left as answered
    (was: renamed to ``Bash`` all the same, ``rm -rf build`` handed to a client that ruled shell
    calls out). ``{"type": "tool", "name": "Bash"}`` and no choice (the controls) rename it."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)
    env.configure(toolvocab_mode=mode)
    call = {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": ["rm", "-rf", "build"]}}
    answer = _one_block_answer(call, "tool_use", stream)
    for choice, renamed in (
        ({"type": "none"}, False),
        ({"type": "tool", "name": "Read"}, False),
        ({"type": "tool", "name": "Bash"}, True),
        (None, True),
    ):
        f, result = _with_tool_choice(env, choice, answer, stream)
        assert (result.out == answer) is not renamed, (choice, result.out[:300])
        assert (b'"name":"Bash"' in result.out) is renamed, choice
        [decision] = f.metadata[KEY]["decisions"]
        assert decision["action"] == ("rename" if renamed else "leave"), decision
        if not renamed:  # what mitmweb's comment column and the log line say
            assert "shell (the tool choice does not allow Bash)" in f.comment, f.comment


@pytest.mark.parametrize("stream", [False, True])  # True: a stream request answered with JSON
def test_a_json_answer_behind_a_byte_order_mark_is_read(env, monkeypatch, stream: bool) -> None:  # noqa: F811
    """A JSON answer that begins with UTF-8's byte order mark, which clients' JSON readers skip
    (Python's ``json.loads`` of bytes, a browser's ``Response.json()``): read and repaired as
    without it, the mark kept in front (was: "answer body is not JSON", the call left as sent)."""
    monkeypatch.setattr(env.addon.recorder, "saves_bodies", lambda: False)
    env.configure(toolvocab_mode="repair")
    call = {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": ["git", "status"]}}
    answer = b"\xef\xbb\xbf" + orjson.dumps(
        {"type": "message", "role": "assistant", "content": [call], "stop_reason": "tool_use"}
    )
    request = {**fixture_json("request-claude-code.json"), "stream": stream}
    f = make_flow(orjson.dumps(request), upstream=answer, resp_type="application/json")
    out = replay(env, f).out
    assert out.startswith(b"\xef\xbb\xbf")
    [block] = orjson.loads(out[3:])["content"]
    assert (block["name"], block["input"]) == ("Bash", {"command": "git status"})


@pytest.mark.parametrize(
    ("choice", "renamed"),
    [
        ({"type": "function", "name": "create_issue", "namespace": "mcp__github__"}, True),
        ({"type": "function", "name": "create_issue", "namespace": "mcp__linear__"}, False),
        (
            {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "function", "name": "mcp__github__create_issue"}],
            },
            True,
        ),
        ("auto", True),
    ],
)
def test_a_tool_choice_names_a_namespaced_tool_with_its_namespace(choice: Any, renamed: bool) -> None:
    """Two MCP servers declare ``create_issue`` (Responses namespaces); the model's flat
    ``mcp__github__create_issue`` means github's. A choice naming github's (with its namespace, or
    flat in an allowed list) lets the call be renamed into it; one naming linear's does not (was:
    compared without the namespace both ways)."""
    from toolvocab.addons.state import FlowState
    from toolvocab.dialects import pipeline
    from toolvocab.engine.models import ToolCall

    def namespace(name: str) -> dict[str, Any]:
        fn = {"type": "function", "name": "create_issue", "parameters": {"type": "object", "properties": {}}}
        return {"type": "namespace", "name": name, "tools": [fn]}

    body = {
        "model": "gpt-5",
        "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "file it"}]}],
        "tools": [namespace("mcp__github__"), namespace("mcp__linear__")],
        "tool_choice": choice,
    }
    request = pipeline.Request(orjson.dumps(body), "POST", "/v1/responses", "api.openai.com", {}.get)
    handled = pipeline.handle(request, pipeline.Settings(mode="repair"), pipeline.Caches())
    assert isinstance(handled, pipeline.Handled)
    state = FlowState(handled.dialect, handled.tools, handled.plan, handled.record, False, allowed=handled.allowed)
    decision = state.resolve(ToolCall(name="mcp__github__create_issue", arguments={}, call_id="c1"))
    assert (decision.action.value, decision.target_namespace) == (
        ("rename", "mcp__github__") if renamed else ("leave", None)
    ), decision.reason


@pytest.mark.parametrize("coding", ["gzip", "deflate", "br", "zstd"])
def test_an_encoded_request_body_is_read_decoded(env, coding: str) -> None:
    """The hook takes the raw bytes as the body only when no ``content-encoding`` names a coding
    (as ``Message.get_content`` does); an encoded body is read decoded, and the upstream gets it
    encoded as it came."""
    from mitmproxy.net import encoding

    body = fixture_json("request-claude-code.json")
    f = make_flow(body, upstream=b'{"type":"message","content":[]}', resp_type="application/json")
    f.request.headers["content-encoding"] = coding
    f.request.raw_content = encoding.encode(orjson.dumps(body), coding)
    r = replay(env, f)
    assert r.record["declared"] == [t["name"] for t in body["tools"]]
    assert f.request.headers["content-encoding"] == coding
    assert orjson.loads(encoding.decode(f.request.raw_content, coding))["messages"] == body["messages"]


def test_a_request_body_whose_coding_does_not_decode_is_left_as_sent(env) -> None:
    body = fixture_bytes("request-claude-code.json")
    f = make_flow(body, upstream=b'{"type":"message","content":[]}', resp_type="application/json")
    f.request.headers["content-encoding"] = "gzip"
    r = replay(env, f)
    assert r.record["skipped"].startswith("request body could not be decoded")
    assert f.request.raw_content == body


HOSTS = st.sampled_from(
    ["api.anthropic.com", "127.0.0.1:8080", "[::1]:443", "EXAMPLE.com.", "bücher.example", "a b", "x:99999", ""]
)


@settings(max_examples=300, deadline=None)
@given(
    version=st.sampled_from(["HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/3"]),
    authority=HOSTS | st.text(max_size=12),
    hosts=st.lists(HOSTS | st.text(max_size=12), max_size=2),
)
def test_the_requests_host_is_what_pretty_host_gives(version: str, authority: str, hosts: list[str]) -> None:
    """``core.pretty_host`` (each authority parsed once) against mitmproxy's own, twice (the
    second from the kept parse): HTTP/1 and HTTP/2 or 3, a ``Host`` header or several or none,
    hosts that are not valid."""
    from mitmproxy.test import tutils

    from toolvocab.addons.core import pretty_host

    fields = [(b"Host", h.encode("utf-8", "surrogateescape")) for h in hosts]
    req = tutils.treq(http_version=version.encode(), headers=http.Headers(fields), authority=authority.encode())
    assert pretty_host(req) == req.pretty_host
    assert pretty_host(req) == req.pretty_host
