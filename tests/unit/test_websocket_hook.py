"""The addon's ``websocket_message`` hook: Codex's Responses-over-WebSocket transport.

The script is loaded once for this module and appended to the addon chain (``tests/harness/``,
as for every hook test). A WebSocket flow from ``tflow.twebsocketflow()`` gets messages
appended one at a time, and the hook runs after each, as mitmproxy's WebSocket layer does:
first the client's ``response.create`` frame, then the server's event frames. Injections
(``inject.websocket``) are captured by replacing ``ctx.master.commands.call``
(``harness.capture_injections``); what the client
receives is every server frame that was not dropped, plus every injected frame, in order.
"""

from __future__ import annotations

import gc
import json
import os
import weakref
from dataclasses import dataclass
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy import http
from mitmproxy.proxy.layers.websocket import WebsocketEndHook
from mitmproxy.proxy.layers.websocket import WebsocketMessageHook
from mitmproxy.websocket import WebSocketMessage
from wsproto.frame_protocol import Opcode

import harness
import toolvocab.addons.state as state_module
from harness import Env
from harness.fixtures import loaded  # noqa: F401  (pytest fixture)

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "openai_responses"
KEY = harness.KEY


def load_frames(name: str = "websocket-foreign-shell.jsonl") -> tuple[dict, list[dict]]:
    """(the client's response.create frame, the server's event frames)."""
    lines = [json.loads(line) for line in (FIXTURES / name).read_text().splitlines() if line.strip()]
    assert lines[0]["from_client"] and not any(line["from_client"] for line in lines[1:])
    return lines[0]["frame"], [line["frame"] for line in lines[1:]]


def calling(name: str, arguments: str) -> list[dict]:
    """The fixture's server answer, its one call named ``name`` with ``arguments``."""
    _, frames = load_frames()
    out = json.loads(json.dumps(frames))
    for f in out:
        item = f.get("item")
        if isinstance(item, dict) and item.get("type") == "function_call":
            item["name"] = name
            if item["arguments"]:
                item["arguments"] = arguments
        if f["type"] == "response.function_call_arguments.delta":
            f["delta"] = arguments if f["sequence_number"] == 2 else ""
        if f["type"] == "response.function_call_arguments.done":
            f["arguments"] = arguments
        if f["type"] == "response.completed":
            for item in f["response"]["output"]:
                item["name"], item["arguments"] = name, arguments
    return out


def declared_frames() -> list[dict]:
    """The same server answer, but calling the declared exec_command with valid arguments."""
    return calling("exec_command", '{"cmd":"echo hi"}')


# -- harness (tests/harness/) -------------------------------------------------------------------


@pytest.fixture
def env(loaded):
    """``harness.Env`` with every ``inject.websocket`` captured in ``env.injected`` (any other
    command fails); the transport's per-socket state cleared afterwards."""
    with harness.configured(loaded) as e, harness.capture_injections(e):
        yield e
    harness.websocket(e.module)._ws.clear()


def ws_flow(path: str = "/v1/responses") -> http.HTTPFlow:
    return harness.ws_flow("api.openai.com", path)


@dataclass
class Step:
    message: WebSocketMessage
    original: bytes
    injected: list[bytes]


class Session:
    """One WebSocket: send frames through the hook and keep what each produced."""

    def __init__(self, env: Env, flow: http.HTTPFlow | None = None) -> None:
        self.env = env
        self.flow = flow or ws_flow()
        self.steps: list[Step] = []

    def send(self, frame: dict | bytes, *, from_client: bool = False, text: bool = True, deliver: bool = True) -> Step:
        content = frame if isinstance(frame, bytes) else orjson.dumps(frame)
        message, injected = harness.send_ws(
            self.env, self.flow, content, from_client=from_client, text=text, deliver=deliver
        )
        step = Step(message, content, injected)
        self.steps.append(step)
        return step

    def create(self, frame: dict | None = None) -> Step:
        return self.send(frame or load_frames()[0], from_client=True)

    def server(self, frames: list[dict]) -> list[Step]:
        return [self.send(f) for f in frames]

    def delivered(self) -> list[bytes]:
        """What the client receives from the server, in order."""
        out: list[bytes] = []
        for step in self.steps:
            if step.message.from_client:
                out.extend(step.injected)  # frames released to the client at a client frame
                continue
            if not step.message.dropped:
                out.append(step.message.content)
            out.extend(step.injected)
        return out

    def end(self) -> None:
        self.env.hook(WebsocketEndHook(self.flow))

    @property
    def record(self) -> dict | None:
        return self.flow.metadata.get(KEY)


def parsed(frames: list[bytes]) -> list[dict]:
    return [orjson.loads(f) for f in frames]


# -- the client's response.create frame ---------------------------------------------------------


def test_response_create_gets_the_sentence_in_auto_mode(env):
    s = Session(env)
    create, _ = load_frames()
    step = s.create(create)
    sent = orjson.loads(step.message.content)
    assert not step.message.dropped and step.injected == []
    assert sent["instructions"].startswith(create["instructions"] + "\n\n")
    sentence = sent["instructions"][len(create["instructions"]) + 2 :]
    assert "exec_command" in sentence and "apply_patch" in sentence
    assert {k: v for k, v in sent.items() if k != "instructions"} == {
        k: v for k, v in create.items() if k != "instructions"
    }
    rec = s.record
    assert rec["dialect"] == "openai_responses" and rec["streamed"] is True and rec["request_changed"] is True
    assert "mcp__github__create_issue" in rec["declared"]


def test_response_create_untouched_in_repair_mode(env):
    env.configure(toolvocab_mode="repair")
    s = Session(env)
    step = s.create()
    assert step.message.content == step.original
    assert s.record["request_changed"] is False


# -- server frames ------------------------------------------------------------------------------


def test_foreign_call_frames_are_held_then_reinjected_rewritten_in_order(env):
    s = Session(env)
    s.create()
    _, frames = load_frames()
    steps = s.server(frames)
    kinds = [f["type"] for f in frames]
    assert kinds == [
        "response.created",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    # response.created: unchanged, relayed by mitmproxy as it came
    assert not steps[0].message.dropped and steps[0].injected == [] and steps[0].message.content == steps[0].original
    # the call's frames: each dropped; nothing sent until output_item.done
    for step in steps[1:5]:
        assert step.message.dropped and step.injected == []
    assert steps[5].message.dropped
    released = parsed(steps[5].injected)
    assert [r["type"] for r in released] == kinds[1:6]
    assert [r["sequence_number"] for r in released] == [1, 2, 3, 4, 5]
    assert released[0]["item"] == {**frames[1]["item"], "name": "exec_command"}  # arguments stay ""
    assert [r["delta"] for r in released[1:3]] == ['{"cmd":"echo hi"}', ""]
    assert released[3]["arguments"] == '{"cmd":"echo hi"}'
    assert released[4]["item"] == {**frames[5]["item"], "name": "exec_command", "arguments": '{"cmd":"echo hi"}'}
    # response.completed: rewritten in place (its output echoes the call); the released frames
    # went through the hook before it, so it cannot overtake them
    assert not steps[6].message.dropped and steps[6].injected == []
    [final] = parsed([steps[6].message.content])
    assert final["response"]["output"] == [released[4]["item"]]
    assert {k: v for k, v in final.items() if k != "response"} == {
        k: v for k, v in frames[6].items() if k != "response"
    }
    # the client's view: every frame once, in order
    assert [f["type"] for f in parsed(s.delivered())] == kinds
    rec = s.record
    assert rec["response_changed"] is True
    assert [(d["name"], d["action"], d["target"]) for d in rec["decisions"]] == [("shell", "rename", "exec_command")]
    assert s.flow.marked == ":wrench:" and "shell→exec_command" in s.flow.comment


def test_declared_call_frames_arrive_byte_identical_in_order(env):
    s = Session(env)
    s.create()
    frames = declared_frames()
    steps = s.server(frames)
    assert s.delivered() == [orjson.dumps(f) for f in frames]
    # frames outside the call are relayed as they came; the call's frames are held and injected as they came
    for step in (steps[0], steps[-1]):
        assert not step.message.dropped and step.injected == [] and step.message.content == step.original
    assert all(step.message.dropped for step in steps[1:6])
    assert steps[5].injected == [orjson.dumps(f) for f in frames[1:6]]
    assert [d["action"] for d in s.record["decisions"]] == ["keep"]
    assert s.record["response_changed"] is False


def test_frames_keep_their_exact_bytes_when_unchanged(env):
    s = Session(env)
    s.create()
    spaced = [json.dumps(f, indent=1).encode() for f in declared_frames()]  # not orjson's compact form
    for raw in spaced:
        s.send(raw)
    assert s.delivered() == spaced


def test_frames_before_any_response_create_pass_untouched(env):
    s = Session(env)
    _, frames = load_frames()
    steps = s.server(frames)
    assert all(not st.message.dropped and st.injected == [] and st.message.content == st.original for st in steps)
    assert KEY not in s.flow.metadata


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "response.append", "input": []},
        {"type": "session.update"},
        b"not json at all",
        b"[1, 2, 3]",
    ],
)
def test_other_client_frames_are_not_requests(env, frame):
    s = Session(env)
    step = s.send(frame, from_client=True)
    assert step.message.content == step.original and not step.message.dropped
    assert KEY not in s.flow.metadata and s.flow.id not in harness.websocket(env.module)._ws


def test_non_json_and_binary_server_frames_pass(env):
    s = Session(env)
    s.create()
    a = s.send(b"\x00\x01binary", text=False)
    b = s.send(b"plain text, not JSON")
    c = s.send({"type": "response.output_text.delta", "delta": "hi", "sequence_number": 0})
    # binary frames are not toolvocab's; text frames, JSON or not, that change nothing: each
    # relayed as it came
    for step in (a, b, c):
        assert not step.message.dropped and step.injected == [] and step.message.content == step.original
    assert s.delivered() == [a.original, b.original, c.original]


def test_no_frame_overtakes_frames_still_on_their_way(env):
    """mitmproxy sends injected frames from tasks of their own: a server frame relayed while
    released frames are still on their way would reach the client before them (a binary one
    too). Until each has come through the hook, later frames are injected behind them; then
    frames are relayed as they come again."""
    s = Session(env)
    s.create()
    _, frames = load_frames()
    steps = [s.send(f, deliver=False) for f in frames[:6]]  # the call held, then released: 5 injected
    assert steps[5].message.dropped and len(steps[5].injected) == 5
    later = [s.send(b"\x00\x01binary", text=False, deliver=False), s.send(frames[6], deliver=False)]
    for step in later:
        assert step.message.dropped and len(step.injected) == 1
    order = [raw for step in steps + later for raw in step.injected]
    assert [f.get("type") for f in parsed([raw for raw in order if raw[:1] == b"{"])] == [
        f["type"] for f in frames[1:7]
    ]
    assert order[5] == b"\x00\x01binary"  # behind the released frames, before response.completed
    # the injected frames come through the hook as mitmproxy sends them; then relaying resumes
    for raw in order:
        s.flow.websocket.messages.append(WebSocketMessage(Opcode.TEXT, False, raw, injected=True))
        env.hook(WebsocketMessageHook(s.flow))
    after = s.send({"type": "response.output_text.delta", "delta": "hi", "sequence_number": 9})
    assert not after.message.dropped and after.injected == []


def test_injected_messages_are_not_processed_again(env):
    s = Session(env)
    s.create()
    _, frames = load_frames()
    message = WebSocketMessage(Opcode.TEXT, False, orjson.dumps(frames[1]), injected=True)
    s.flow.websocket.messages.append(message)
    env.hook(WebsocketMessageHook(s.flow))
    assert not message.dropped and env.injected == []


def test_not_a_responses_socket_is_ignored(env):
    s = Session(env, ws_flow("/v1/realtime?model=x"))
    step = s.create()
    assert step.message.content == step.original
    _, frames = load_frames()
    steps = s.server(frames)
    assert all(not st.message.dropped for st in steps) and env.injected == []


def test_second_response_create_on_the_same_socket_starts_a_new_turn(env):
    s = Session(env)
    s.create()
    _, frames = load_frames()
    s.server(frames)
    create2 = dict(
        load_frames()[0],
        input=[{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "again"}]}],
    )
    s.create(create2)
    s.server(frames)
    got = parsed(s.delivered())
    assert len(got) == 2 * len(frames)
    assert [g["item"]["name"] for g in got if g["type"] == "response.output_item.done"] == [
        "exec_command",
        "exec_command",
    ]
    assert [d["target"] for d in s.record["decisions"]] == ["exec_command", "exec_command"]


def test_websocket_end_keeps_the_record_and_forgets_the_state(env):
    s = Session(env)
    s.create()
    _, frames = load_frames()
    s.server(frames)
    s.end()
    assert s.flow.id not in harness.websocket(env.module)._ws
    assert s.record["decisions"][0]["target"] == "exec_command"


# -- modes --------------------------------------------------------------------------------------


def test_observe_mode_changes_no_frame_but_records(env):
    env.configure(toolvocab_mode="observe")
    s = Session(env)
    create_step = s.create()
    assert create_step.message.content == create_step.original
    _, frames = load_frames()
    steps = s.server(frames)
    assert all(not st.message.dropped and st.injected == [] and st.message.content == st.original for st in steps)
    assert env.injected == []
    rec = s.record
    assert rec["mode"] == "observe" and rec["request_changed"] is False and rec["response_changed"] is False
    assert [(d["name"], d["action"], d["target"]) for d in rec["decisions"]] == [("shell", "rename", "exec_command")]
    assert rec["prompt_sentence"]
    assert s.flow.marked == ":eyes:"


@pytest.mark.parametrize("to", ["observe", "off"])
def test_a_mode_changed_while_a_call_is_held_finishes_the_turn_in_its_own_mode(env, to):
    """The turn's ``response.create`` was handled in ``auto``: a mode set while its call is held
    (mitmweb's options) does not strand the held frames; the turn ends as it began, and the
    next ``response.create`` is handled in the new mode."""
    s = Session(env)
    s.create()
    _, frames = load_frames()
    s.server(frames[:3])  # created, the call's added and first delta: held
    assert len(s.delivered()) == 1
    env.configure(toolvocab_mode=to)
    s.server(frames[3:])
    got = parsed(s.delivered())
    assert [f["type"] for f in got] == [f["type"] for f in frames]
    assert [f["item"]["name"] for f in got if f["type"] == "response.output_item.done"] == ["exec_command"]
    assert not any("passed through" in n for n in s.record["notes"]), s.record["notes"]
    before = len(s.steps)
    create = s.create()
    s.server(frames)
    assert create.message.content == create.original  # not auto any more: no sentence
    assert [st.message.content for st in s.steps[before + 1 :]] == [orjson.dumps(f) for f in frames]
    assert all(not st.message.dropped and st.injected == [] for st in s.steps[before:])


@pytest.mark.parametrize("loads", [True, False], ids=["reloaded", "reload-fails"])
def test_a_turn_held_at_a_script_reload_gives_its_frames_up_in_order(env, loads):
    """mitmproxy reloads a changed script: ``done`` on the old addons, ``running`` on the new, if
    the new script loads at all. A turn holding frames gives them up at ``done``, as they came:
    every frame reaches the client once and in order whether or not a new addon takes over (they
    were lost when the reloaded script failed to load, or sent after the turn's end by a later
    addon's timer); the socket's record is handed over, and the next turn is repaired again."""
    s = Session(env)
    s.create()
    _, frames = load_frames()
    s.server(frames[:3])  # created goes on; the call's added and first delta are held
    sent = s.delivered()
    old = harness.websocket(env.module)
    before = len(env.injected)
    old.done()
    sent += [m for _, _, m, _ in env.injected[before:]]  # given up at done, as they came
    assert sent == [orjson.dumps(f) for f in frames[:3]]
    new = type(old)(old.core, old.recorder)
    at = env.module.addons.index(old)
    try:
        if loads:
            env.module.addons[at] = new
            new.running()
            assert s.flow.id in new._ws  # the socket's record is the new addon's now
        mark = len(s.steps)
        s.server(frames[3:])
        for step in s.steps[mark:]:
            sent += ([] if step.message.dropped else [step.message.content]) + step.injected
        assert sent == [orjson.dumps(f) for f in frames]  # every frame once, in order, as sent
        assert "the script was reloaded" in " ".join(s.record["notes"])
        if loads:
            s.create()
            mark = len(s.steps)
            s.server(frames)
            done = [f for f in parsed(s.delivered()[-len(frames) :]) if f["type"] == "response.output_item.done"]
            assert [f["item"]["name"] for f in done] == ["exec_command"]  # the next turn is repaired
    finally:
        env.module.addons[at] = old
        new._ws.clear()


def test_observe_mode_over_several_turns_passes_every_frame_once_and_records_each_turn(env):
    """Observe mode, three complete turns on one socket, then a turn whose end never comes
    followed by another ``response.create``: every frame reaches the client once, as sent (no held
    frame sent again when the unfinished turn is given up), and no complete turn is counted as
    passed through."""
    env.configure(toolvocab_mode="observe")
    s = Session(env)
    _, frames = load_frames()
    for _ in range(3):
        s.create()
        s.server(frames)
    assert not any("passed through" in n for n in s.record["notes"]), s.record["notes"]
    assert [d["name"] for d in s.record["decisions"]] == ["shell"] * 3
    s.create()
    s.server(frames[:4])  # no output_item.done, no response.completed
    s.create()
    s.server(frames)
    server = (
        [orjson.dumps(f) for f in frames] * 3
        + [orjson.dumps(f) for f in frames[:4]]
        + [orjson.dumps(f) for f in frames]
    )
    assert s.delivered() == server and env.injected == []
    assert sum("passed through" in n for n in s.record["notes"]) == 1


def test_off_mode_does_nothing(env):
    env.configure(toolvocab_mode="off")
    s = Session(env)
    create_step = s.create()
    _, frames = load_frames()
    steps = s.server(frames)
    assert create_step.message.content == create_step.original
    assert all(not st.message.dropped and st.message.content == st.original for st in steps)
    assert env.injected == [] and KEY not in s.flow.metadata and s.flow.id not in harness.websocket(env.module)._ws
    assert not s.flow.marked


# -- errors -------------------------------------------------------------------------------------


def _boom(*args, **kwargs):
    raise RuntimeError("injected")


def test_exception_outside_a_held_call_passes_the_frame(env, monkeypatch):
    s = Session(env)
    s.create()
    rewriter = harness.websocket(env.module)._ws[s.flow.id].ws_rewriter
    monkeypatch.setattr(rewriter, "on_unit", _boom)
    _, frames = load_frames()
    step = s.send(frames[0])
    assert s.delivered() == [orjson.dumps(frames[0])]
    assert not step.message.dropped or step.injected == [step.original]
    assert any("RuntimeError: injected" in n for n in harness.websocket(env.module)._ws[s.flow.id].record.notes)
    # afterwards the rest passes untouched
    rest = s.server(frames[1:])
    assert all(not st.message.dropped for st in rest)
    assert s.delivered() == [orjson.dumps(f) for f in frames]


def test_exception_while_releasing_a_call_delivers_every_frame_once(env, monkeypatch):
    monkeypatch.setattr(state_module, "resolve", _boom)
    s = Session(env)
    s.create()
    _, frames = load_frames()
    s.server(frames)
    assert s.delivered() == [orjson.dumps(f) for f in frames]


@pytest.mark.parametrize(
    "ending",
    [
        {"type": "error", "status_code": 429, "error": {"type": "usage_limit_reached", "message": "limit"}},
        {
            "type": "response.failed",
            "sequence_number": 3,
            "response": {
                "id": "resp_fxws",
                "status": "failed",
                "output": [],
                "error": {"code": "server_error", "message": "x"},
            },
        },
    ],
)
def test_error_frame_in_the_middle_of_a_call_reaches_the_client(env, ending):
    s = Session(env)
    s.create()
    _, frames = load_frames()
    sent = frames[:3] + [ending]
    s.server(sent)
    s.end()
    assert [f["type"] for f in parsed(s.delivered())] == [f["type"] for f in sent]


def test_a_frame_repeating_a_key_and_the_rest_of_the_turn_pass_as_they_came(env):
    # Which of two values the client reads is its parser's choice: the held call, the frame and
    # every later frame of the turn go out as they came; without the repeat the call
    # is renamed (test_foreign_call_frames_are_held_then_reinjected_rewritten_in_order).
    s = Session(env)
    s.create()
    _, frames = load_frames()
    raw = [orjson.dumps(f) for f in frames]
    raw[2] = raw[2].replace(b'"type":', b'"type":"x","type":', 1)  # an argument delta inside the held call
    for frame in raw:
        s.send(frame)
    assert s.delivered() == raw
    notes = " | ".join(s.record["notes"])
    assert "passed through: a frame's data repeats a key (this turn)" in notes, notes
    assert s.flow.marked == ":warning:"


def _with_arguments(frames: list[dict], arguments: str) -> list[dict]:
    """The fixture's foreign `shell` call with other arguments (one delta carries them all)."""
    out = json.loads(json.dumps(frames))
    for f in out:
        if f["type"] == "response.function_call_arguments.delta":
            f["delta"] = arguments if f["sequence_number"] == 2 else ""
        if f["type"] == "response.function_call_arguments.done":
            f["arguments"] = arguments
        item = f.get("item")
        if isinstance(item, dict) and item.get("arguments"):
            item["arguments"] = arguments
        if f["type"] == "response.completed":
            for item in f["response"]["output"]:
                item["arguments"] = arguments
    return out


@pytest.mark.parametrize(
    "arguments",
    [
        '{"command":["bash","-lc","make migrate"],"timeout_ms":600000}',  # exec_command has no kill timeout
        '{"command":["bash","-lc","make"],"workdir":"/srv","zz_unknown":1}',  # a key no shell tool knows
    ],
)
def test_a_call_that_would_lose_an_argument_reaches_the_socket_unchanged(env, arguments):
    """The same meaning rules on Codex's WebSocket transport: the call and every frame as they came."""
    s = Session(env)
    s.create()
    _, frames = load_frames()
    frames = _with_arguments(frames, arguments)
    s.server(frames)
    assert parsed(s.delivered()) == frames
    [decision] = s.record["decisions"]
    assert decision["action"] == "leave" and decision["name"] == "shell"


def test_a_response_create_frame_repeating_a_key_is_passed_through_as_an_http_body_is(env):
    # Which of two "instructions" (or "tools") the server reads is its parser's choice: the HTTP
    # request hook passes such a body through untouched, and so does the WebSocket path — the
    # frame, and the turn's server frames, which no plan built on a guess may rewrite.
    create, frames = load_frames()
    raw = orjson.dumps(create)
    repeated = raw[:-1] + b',"instructions":"Be brief."}'
    s = Session(env)
    step = s.create(repeated)
    assert step.message.content == repeated and not step.message.dropped
    steps = s.server(frames)
    assert all(not st.message.dropped and st.injected == [] and st.message.content == st.original for st in steps)
    assert s.flow.id not in harness.websocket(env.module)._ws
    record = s.record or {}
    assert "repeats a key" in " ".join(record.get("notes") or []) + (record.get("skipped") or "")


@pytest.mark.parametrize("stall", [0.6, 0.05])
def test_a_held_call_is_released_when_the_server_stalls(env, stall):
    """``toolvocab_hold_timeout`` bounds a WebSocket hold as it bounds an HTTP one: when the
    server sends no frame for that long while a call's frames are held, they go to the client as
    they came, and the rest of the turn passes unrepaired (the record says so). A pause shorter
    than the bound changes nothing: the call is held and repaired at its end."""
    import asyncio

    _, frames = load_frames()

    async def turn() -> Session:
        s = Session(env)
        s.create()
        for frame in frames[:3]:  # response.created, then the call's first frames: held
            s.send(frame)
        assert env.injected == []
        await asyncio.sleep(stall)
        for frame in frames[3:]:
            s.send(frame)
        return s

    env.configure(toolvocab_hold_timeout="0.2")
    try:
        s = asyncio.run(turn())
    finally:
        env.configure(toolvocab_hold_timeout="30")
        harness.websocket(env.module)._pending.clear()
    got = [s.steps[1].message.content] + [raw for _, _, raw, _ in env.injected]
    got += [st.message.content for st in s.steps[4:] if not st.message.dropped]
    names = [f["item"]["name"] for f in parsed(got) if f["type"] == "response.output_item.added"]
    if stall > 0.2:
        assert got == [orjson.dumps(f) for f in frames]  # every frame once, in order, as it came
        assert names == ["shell"]
        notes = " | ".join(s.record["notes"])
        assert "sent no frame for " in notes and "(toolvocab_hold_timeout 0.2)" in notes, notes
    else:
        assert names == ["exec_command"] and len(got) == len(frames)


def test_a_new_turn_while_a_call_is_held_leaves_both_turns_as_sent(env):
    """A client ``response.create`` while the last turn still streams (its call held): which
    turn a later frame belongs to is not known, so the held frames go out as they came, the new
    request goes up as sent, and every later frame passes as it came (no call renamed in one
    frame and not in another)."""
    s = Session(env)
    s.create()
    _, frames = load_frames()
    for frame in frames[:3]:  # response.created, then the call's first frames: held
        s.send(frame)
    assert [st.message.dropped for st in s.steps[1:]] == [False, True, True]
    second = s.create()
    assert second.message.content == second.original and not second.message.dropped
    assert second.injected == [orjson.dumps(f) for f in frames[1:3]]  # as they came, before the new turn
    rest = s.server(frames[3:])
    assert all(not st.message.dropped and st.message.content == st.original for st in rest)
    items = [f["item"]["name"] for f in parsed(s.delivered()) if f["type"].startswith("response.output_item")]
    assert items == ["shell", "shell"]  # added and done alike, as the upstream sent them
    notes = " | ".join(s.record["notes"])
    assert "a response.create came while the previous turn was still streaming" in notes, notes


def test_a_new_turn_after_the_last_one_ended_is_repaired(env):
    s = Session(env)
    _, frames = load_frames()
    for _ in range(2):
        s.create()
        s.server(frames)
    names = [f["item"]["name"] for f in parsed(s.delivered()) if f["type"] == "response.output_item.added"]
    assert names == ["exec_command", "exec_command"]


def test_a_binary_frame_inside_a_held_call_ends_the_hold_in_order(env):
    """A binary frame (not toolvocab's) inside a held call: the held frames go before it as they
    came, then it, then the rest of the turn as it came."""
    s = Session(env)
    s.create()
    _, frames = load_frames()
    for frame in frames[:3]:
        s.send(frame)
    b = s.send(b"\x00\x01binary", text=False)
    assert b.message.dropped and b.injected == [orjson.dumps(f) for f in frames[1:3]] + [b"\x00\x01binary"]
    s.server(frames[3:])
    assert s.delivered() == [orjson.dumps(frames[0]), *b.injected, *[orjson.dumps(f) for f in frames[3:]]]
    assert "a binary frame came while a tool call's frames were held" in " | ".join(s.record["notes"])


# -- turns toolvocab did not read; give-ups that keep the client's names -------------------------

FS_READ = {
    "type": "function",
    "name": "fs.read",
    "description": "Read a file.",
    "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
}


def names_seen(frames: list[bytes]) -> list[str]:
    """Every call name the client reads: output items, and the completed echo's output."""
    out = []
    for f in parsed(frames):
        if f["type"].startswith("response.output_item"):
            out.append(f["item"]["name"])
        if f["type"] == "response.completed":
            out += [i["name"] for i in f["response"]["output"]]
    return out


def test_a_turn_whose_create_cannot_be_read_is_never_repaired_with_the_last_turns_tools(env):
    """Turn 1 declares exec_command and is repaired. Turn 2's response.create is not JSON
    toolvocab reads (``NaN``): it declares only ``shell``, and its answer's ``shell`` call must
    reach the client as sent (only a tool this request declared is a target), every frame byte
    for byte; the record says why."""
    s = Session(env)
    create, frames = load_frames()
    s.create()
    s.server(frames)
    assert names_seen(s.delivered()) == ["exec_command"] * 3
    second = dict(create, tools=[{"type": "function", "name": "shell", "parameters": {"type": "object"}}])
    raw = orjson.dumps(second)[:-1] + b',"temperature":NaN}'
    sent = s.send(raw, from_client=True)
    assert sent.message.content == raw
    before = len(s.delivered())
    s.server(frames)
    assert s.delivered()[before:] == [orjson.dumps(f) for f in frames]  # every frame as it came
    assert [d["target"] for d in s.record["decisions"]] == ["exec_command"]
    assert "a client frame toolvocab cannot read began a turn whose tools toolvocab did not read" in " | ".join(
        s.record["notes"]
    )


def test_a_response_append_turn_is_read_with_the_last_creates_tools(env):
    """``response.append`` continues the socket's last response (its tools the last
    response.create's): its answer is read as a new turn, each call decided and recorded again."""
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server(frames)
    s.send(
        {"type": "response.append", "input": [{"type": "message", "role": "user", "content": "go on"}]},
        from_client=True,
    )
    s.server(frames)
    assert names_seen(s.delivered()) == ["exec_command"] * 6
    assert [d["target"] for d in s.record["decisions"]] == ["exec_command", "exec_command"]


def test_another_client_frame_mid_turn_is_named_in_the_give_up(env):
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server(frames[:3])
    s.send({"type": "response.noop"}, from_client=True)
    s.server(frames[3:])
    assert s.delivered() == [orjson.dumps(f) for f in frames]
    notes = " | ".join(s.record["notes"])
    assert "a response.noop came while the previous turn was still streaming" in notes, notes


def test_frames_held_when_the_socket_closes_are_noted(env):
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server(frames[:3])
    s.end()
    notes = " | ".join(s.record["notes"])
    assert "the socket closed while 2 frames of a tool call were held" in notes, notes


@pytest.mark.parametrize("give_up", ["stall", "binary"])
def test_a_give_up_sends_the_clients_name_not_the_alias_and_reads_on(env, give_up):
    """``fs.read`` goes upstream under an alias (a dot: the upstream refuses it). A stall
    (``toolvocab_hold_timeout``) or a binary frame inside the call's frames gives them up: the
    client gets them as they came but for ``fs.read`` named back, in every frame (the call's
    later ones and the completed echo too), never the alias; the record names it."""
    import asyncio

    create, _ = load_frames()
    create = dict(create, tools=[*create["tools"], FS_READ])

    async def turn() -> Session:
        s = Session(env)
        up = orjson.loads(s.create(create).message.content)
        [alias] = [t["name"] for t in up["tools"] if t.get("name", "").startswith("fs_read_")]
        frames = calling(alias, '{"path":"a"}')
        s.server(frames[:3])
        if give_up == "stall":
            await asyncio.sleep(0.6)
        else:
            s.send(b"\x00\x01", text=False)
        s.server(frames[3:])
        return s

    env.configure(toolvocab_hold_timeout="0.2")
    try:
        s = asyncio.run(asyncio.wait_for(turn(), 10))
    finally:
        env.configure(toolvocab_hold_timeout="30")
        harness.websocket(env.module)._pending.clear()
    got = [st.message.content for st in s.steps[1:] if not st.message.dropped and st.message.is_text]
    got += [raw for _, _, raw, text in env.injected if text]
    assert sorted(names_seen(got)) == ["fs.read"] * 3
    assert "names given back: fs.read" in " | ".join(s.record["notes"]) or "(fs.read)" in " | ".join(s.record["notes"])


def aliased_session(env: Env) -> tuple[Session, list[dict]]:
    """A socket whose create declares ``fs.read`` (sent upstream under an alias) and the
    server's answer calling the alias."""
    create, _ = load_frames()
    s = Session(env)
    up = orjson.loads(s.create(dict(create, tools=[*create["tools"], FS_READ])).message.content)
    [alias] = [t["name"] for t in up["tools"] if t.get("name", "").startswith("fs_read_")]
    return s, calling(alias, '{"path":"a"}')


@pytest.mark.parametrize(
    "frame",
    [
        {"type": "response.append", "input": []},
        {"type": "response.noop"},
        b"not json",
    ],
    ids=["append", "other", "unreadable"],
)
def test_after_a_mid_turn_give_up_every_later_frame_has_the_alias_named_back(env, frame):
    """A client frame while an aliased call is held gives the turn up (which turn a later frame
    is of is not known): the held frames, the call's later frames, the echo and the next turn's
    frames reach the client with ``fs.read``, never the alias, and nothing else is changed."""
    s, frames = aliased_session(env)
    alias = frames[1]["item"]["name"]
    s.server(frames[:3])
    s.send(frame, from_client=True)
    s.server(frames[3:])
    s.server(frames)  # the appended (or unknown) turn's answer, calling the alias too
    got = s.delivered()
    assert alias.encode() not in b"".join(got)
    assert names_seen(got) == ["fs.read"] * 6
    expected = [orjson.dumps(f).replace(alias.encode(), b"fs.read") for f in frames * 2]
    assert [orjson.loads(g) for g in got] == [orjson.loads(e) for e in expected]


def test_an_unread_turn_names_aliases_back_and_the_record_keeps_every_turn(env):
    """Turn 1 repaired; a client frame toolvocab cannot read, then an append: their answers
    have only the socket's aliases named back; a later create is read again, and the record
    still has turn 1's decision and the note."""
    s, frames = aliased_session(env)
    _, shell = load_frames()
    s.server(shell)
    s.send(b"not json", from_client=True)
    s.send({"type": "response.append", "input": []}, from_client=True)
    before = len(s.delivered())
    s.server(frames)
    assert names_seen(s.delivered()[before:]) == ["fs.read"] * 3
    s.create()
    s.server(shell)
    assert [d["target"] for d in s.record["decisions"] if d["action"] == "rename"][:1] == ["exec_command"]
    assert [d["target"] for d in s.record["decisions"] if d["action"] == "rename"][-1] == "exec_command"
    assert any("began a turn whose tools toolvocab did not read" in n for n in s.record["notes"])


def test_a_later_turn_that_no_longer_declares_a_tool_gets_its_earlier_alias_named_back(env):
    """Turn 1 declares ``fs.read`` (sent upstream under an alias); turns 2 and 3 continue the
    response the server kept and declare only ``exec_command``. A model that calls the alias
    from turn 1's context in turn 3 is answered with ``fs.read`` in every frame (the client then
    reports a tool it does not declare), never the alias; arguments as sent."""
    s, frames = aliased_session(env)
    alias = frames[1]["item"]["name"]
    _, shell = load_frames()
    s.server(shell)
    later = dict(load_frames()[0], previous_response_id="resp_1")
    for turn in range(2):
        up = s.create(later).message.content
        assert b"fs.read" not in up and alias.encode() not in up  # the turn declares neither
        if turn == 0:
            s.server(shell)
    before = len(s.delivered())
    s.server(frames)
    got = s.delivered()[before:]
    assert alias.encode() not in b"".join(got)
    assert names_seen(got) == ["fs.read"] * 3
    expected = [orjson.dumps(f).replace(alias.encode(), b"fs.read") for f in frames]
    assert [orjson.loads(g) for g in got] == [orjson.loads(e) for e in expected]
    last = s.record["decisions"][-1]
    assert (last["action"], last["target"]) == ("rename", "fs.read")
    assert "a name this request does not declare" in last["reason"]


@pytest.mark.parametrize("between", ["repeated-key", "off", "observe-then-repeated-key"])
def test_an_earlier_alias_is_named_back_after_a_turn_toolvocab_did_not_read(env, between):
    """Turn 1 aliases ``fs.read``; turn 2's response.create repeats a key (its frame goes as
    sent, no plan made of it), or comes in ``off`` mode; in turn 2 (repeated key) and in turn 3
    (read again) the server calls turn 1's alias: the client gets ``fs.read``, and the record
    still holds turn 1's decision. Was: the socket's state was dropped at turn 2, so the alias
    reached the client and the record began again (attack 68 K2)."""
    s, frames = aliased_session(env)
    alias = frames[1]["item"]["name"]
    _, shell = load_frames()
    s.server(shell)
    second = orjson.dumps(dict(load_frames()[0], previous_response_id="resp_1"))
    if between == "observe-then-repeated-key":  # the last read turn's mode was observe (attack 70 L4)
        env.configure(toolvocab_mode="observe")
        try:
            s.create(second)
            s.server(shell)
        finally:
            env.configure(toolvocab_mode="auto")
        between = "repeated-key"
    if between == "repeated-key":
        repeated = second[:-1] + b',"instructions":"Be brief."}'
        assert s.create(repeated).message.content == repeated
        before = len(s.delivered())
        s.server(frames)
        assert names_seen(s.delivered()[before:]) == ["fs.read"] * 3
    else:
        env.configure(toolvocab_mode="off")
        try:
            assert s.create(second).message.content == second
            before = len(s.delivered())
            s.server(frames)
            assert s.delivered()[before:] == [orjson.dumps(f) for f in frames]  # off: as they came
        finally:
            env.configure(toolvocab_mode="auto")
    s.create(dict(load_frames()[0], previous_response_id="resp_2"))
    before = len(s.delivered())
    s.server(frames)
    got = s.delivered()[before:]
    assert alias.encode() not in b"".join(got) and names_seen(got) == ["fs.read"] * 3
    assert s.record["decisions"][0]["target"] == "exec_command"  # turn 1's, kept


def test_a_turn_not_read_in_observe_mode_leaves_the_record_of_a_repaired_turn_as_it_was(env):
    """Turn 1, read in ``auto``, went to the client repaired; then, in ``observe``, a client frame
    toolvocab does not read. That turn is handled in observe (nothing of it changes), and the
    record still says what turn 1 did: mode ``auto``, changed. Was: the record took the unread
    turn's mode and said the repair only would have been made (attack 71 M1)."""
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server(frames)
    assert names_seen(s.delivered()) == ["exec_command"] * 3
    env.configure(toolvocab_mode="observe")
    try:
        s.send({"type": "response.noop"}, from_client=True)  # a frame toolvocab does not read
        before = len(s.delivered())
        s.server(frames)
        assert s.delivered()[before:] == [orjson.dumps(f) for f in frames]  # observe: as they came
    finally:
        env.configure(toolvocab_mode="auto")
    assert s.record["mode"] == "auto" and s.flow.comment.startswith("changed:"), (s.record["mode"], s.flow.comment)


def test_a_frame_in_auto_while_an_observed_turn_streams_names_the_aliases_back_after_it(env):
    """Turn 1 aliases ``fs.read`` (auto); turn 2 is read in ``observe`` and still streams when,
    back in ``auto``, the client sends an append: which turn a later frame is of is not known,
    and the new one is not observed, so later frames get the socket's names back (the server's
    call of turn 1's alias reaches the client as ``fs.read``). Was: every later frame passed as it
    came, alias included (attack 72 N2)."""
    s, frames = aliased_session(env)
    alias = frames[1]["item"]["name"]
    s.server(declared_frames())
    env.configure(toolvocab_mode="observe")
    try:
        s.create(dict(load_frames()[0], previous_response_id="resp_1"))
        s.server(declared_frames()[:3])
    finally:
        env.configure(toolvocab_mode="auto")
    s.send({"type": "response.append", "input": []}, from_client=True)
    before = len(s.delivered())
    s.server(declared_frames()[3:])
    s.server(frames)
    got = s.delivered()[before:]
    assert alias.encode() not in b"".join(got) and names_seen(got)[-3:] == ["fs.read"] * 3


def test_an_earlier_alias_of_a_repeated_declaration_is_named_back_as_its_name(env):
    """Turn 1 declares ``read_file`` twice with different schemas (the second sent upstream
    under an alias); turn 2 declares it once, and the server calls the alias: the client gets
    ``read_file``. Was: the alias (attack 68 K3)."""
    create, _ = load_frames()
    s = Session(env)
    two = [dict(FS_READ, name="read_file"), dict(FS_READ, name="read_file", description="Read lines.")]
    up = orjson.loads(s.create(dict(create, tools=two)).message.content)
    [alias] = [t["name"] for t in up["tools"] if t.get("name", "").startswith("read_file_")]
    s.server(calling("read_file", '{"path":"a"}'))
    s.create(dict(create, tools=[two[0]], previous_response_id="resp_1"))
    before = len(s.delivered())
    s.server(calling(alias, '{"path":"a"}'))
    got = s.delivered()[before:]
    assert alias.encode() not in b"".join(got) and names_seen(got) == ["read_file"] * 3


_NAMED = st.lists(
    st.sampled_from(["fs.read", "mcp.server.write", "a/b", "x" * 70, "read_file", "spaces in name"]),
    min_size=1,
    max_size=4,
    unique=True,
)


@settings(
    max_examples=int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "40")),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(first=_NAMED, second=_NAMED, called=st.data())
def test_property_no_alias_of_any_turn_of_a_socket_reaches_the_client(env, first, second, called):
    """Over generated tool names declared in two turns of one socket: whichever name the upstream
    got in either turn the server answers turn 2 with, the client reads the client's own name
    (the tool's, declared in turn 1 or 2), never a name toolvocab made."""
    create, _ = load_frames()

    def tools(names: list[str]) -> list[dict]:
        return [dict(FS_READ, name=n) for n in names]

    s = Session(env)
    sent: dict[str, str] = {}  # upstream name -> the client's
    for names, extra in ((first, {}), (second, {"previous_response_id": "resp_1"})):
        up = orjson.loads(s.create(dict(create, tools=tools(names), **extra)).message.content)
        ups = [t["name"] for t in up["tools"] if t.get("type") == "function"]
        assert len(ups) == len(names)
        sent.update(zip(ups, names))
        s.server(calling(ups[0], '{"path":"a"}'))
    upstream = called.draw(st.sampled_from(sorted(sent)))
    before = len(s.delivered())
    s.server(calling(upstream, '{"path":"a"}'))
    got = s.delivered()[before:]
    made = [u for u, n in sent.items() if u != n and u not in first + second]
    assert not any(m.encode() in g for m in made for g in got), (upstream, got)
    assert names_seen(got) == [sent[upstream]] * 3
    harness.websocket(env.module)._ws.clear()


def test_an_append_after_the_mode_became_observe_is_not_rewritten(env):
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server(frames)
    env.configure(toolvocab_mode="observe")
    try:
        s.send({"type": "response.append", "input": []}, from_client=True)
        before = len(s.delivered())
        s.server(frames)
    finally:
        env.configure(toolvocab_mode="auto")
    assert s.delivered()[before:] == [orjson.dumps(f) for f in frames]


def test_a_frame_repeating_a_key_in_a_hold_still_gives_the_alias_back(env):
    s, frames = aliased_session(env)
    alias = frames[1]["item"]["name"]
    s.server(frames[:3])
    repeated = orjson.dumps(frames[3])[:-1] + b',"type":"response.function_call_arguments.delta"}'
    s.send(repeated)
    s.server(frames[4:])
    got = s.delivered()
    assert repeated in got  # the frame itself as it came
    assert names_seen([g for g in got if g != repeated]) == ["fs.read"] * 3
    assert alias.encode() not in b"".join(g for g in got if g != repeated)


def test_a_turn_not_read_changes_nothing_but_an_alias(env):
    """In a turn toolvocab did not read, arguments sent as an object stay an object (the read
    path writes them as the string the API specifies: a repair, not a name): every frame as it
    came, the alias call's but for its name."""
    s, frames = aliased_session(env)
    alias = frames[1]["item"]["name"]
    s.send(b"not json", from_client=True)
    objects = json.loads(json.dumps(frames))
    for f in objects:
        for item in [f.get("item"), *((f.get("response") or {}).get("output") or [])]:
            if isinstance(item, dict) and item.get("arguments"):
                item["arguments"] = {"path": "a"}
        if f["type"] == "response.function_call_arguments.done":
            f["arguments"] = {"path": "a"}
    s.server(objects)
    got = [orjson.loads(g) for g in s.delivered()]
    want = [orjson.loads(orjson.dumps(f).replace(alias.encode(), b"fs.read")) for f in objects]
    assert got == want


def test_a_mid_turn_frame_in_off_mode_still_names_the_turns_aliases_back(env):
    """The mode becomes ``off`` while an aliased call is held; the client's next frame gives the
    turn up: its later frames and echo still come with ``fs.read``, until the turn ends."""
    s, frames = aliased_session(env)
    alias = frames[1]["item"]["name"]
    s.server(frames[:3])
    env.configure(toolvocab_mode="off")
    try:
        s.create()
        s.server(frames[3:])
    finally:
        env.configure(toolvocab_mode="auto")
    assert alias.encode() not in b"".join(s.delivered())
    assert names_seen(s.delivered()) == ["fs.read"] * 3


# -- Windows, said once for the socket ----------------------------------------------------------

_ENV_CONTEXT = (
    "<environment_context>\n  <cwd>C:\\Users\\dev\\proj</cwd>\n  <shell>powershell</shell>\n</environment_context>"
)


def _windows_create() -> dict:
    """The fixture's full response.create, with Codex's environment context naming PowerShell."""
    create = json.loads(json.dumps(load_frames()[0]))
    context = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": _ENV_CONTEXT}]}
    create["input"].insert(1, context)
    return create


def _incremental_create(call_id: str) -> dict:
    """Codex's next response.create on the same socket: ``previous_response_id`` and only the new
    item (codex-rs core/src/client.rs ``get_incremental_items``): no environment context."""
    create = {k: v for k, v in load_frames()[0].items() if k != "input"}
    return dict(
        create,
        previous_response_id="resp_1",
        input=[{"type": "function_call_output", "call_id": call_id, "output": "unsupported call: shell"}],
    )


#: Qwen Code's shell call: on POSIX it reaches exec_command as ``bash -c '…'``.
_FOREIGN = ("run_shell_command", json.dumps({"command": "rm -f **/*.orig"}))


def test_a_socket_that_said_windows_once_keeps_every_later_turns_command_in_its_shell(env):
    """Turn 1 says PowerShell; turn 2 is incremental and says nothing of the machine: its foreign
    shell call still reaches the client as the upstream sent it, and the record says why. The same
    turn 2 on a socket that never said Windows is repaired (the control)."""
    frames = calling(*_FOREIGN)
    s = Session(env)
    s.create(_windows_create())
    s.server(frames)
    [first] = [f["item"] for f in parsed(s.delivered()) if f["type"] == "response.output_item.done"]
    assert (first["name"], first["arguments"]) == _FOREIGN
    seen = len(s.delivered())
    s.create(_incremental_create(first["call_id"]))
    s.server(frames)
    got = parsed(s.delivered()[seen:])
    assert got == frames  # the second turn's frames reach the client as sent
    decisions = s.record["decisions"]
    assert [(d["name"], d["action"]) for d in decisions] == [("run_shell_command", "leave")] * 2, decisions
    assert "the agent runs on Windows" in decisions[1]["reason"], decisions[1]
    notes = " | ".join(s.record["notes"])
    assert "an earlier turn of this socket did: read as Windows" in notes, notes
    s.end()

    control = Session(env)
    control.create(_incremental_create(first["call_id"]))
    control.server(frames)
    [item] = [f["item"] for f in parsed(control.delivered()) if f["type"] == "response.output_item.done"]
    assert (item["name"], item["arguments"]) == ("exec_command", '{"cmd":"bash -c \'rm -f **/*.orig\'"}'), item
    control.end()


def test_windows_in_a_sockets_upgrade_user_agent_holds_for_every_turn(env):
    """Codex's User-Agent on the upgrade request (``(Windows 10.0.26100; x86_64)``) says Windows
    for an incremental turn too, with no environment context in any frame."""
    frames = calling(*_FOREIGN)
    flow = ws_flow()
    flow.request.headers["user-agent"] = "codex_cli_rs/0.171.0 (Windows 10.0.26100; x86_64) WindowsTerminal"
    s = Session(env, flow)
    s.create(_incremental_create("call_1"))
    s.server(frames)
    assert parsed(s.delivered()) == frames
    [decision] = s.record["decisions"]
    assert decision["action"] == "leave" and "Windows" in decision["reason"], decision
    s.end()


def test_windows_said_before_a_script_reload_holds_after_it(env):
    """The sockets that said Windows are handed over to the reloaded addon with the rest."""
    frames = calling(*_FOREIGN)
    s = Session(env)
    s.create(_windows_create())
    s.server(frames)
    old = harness.websocket(env.module)
    old.done()
    new = type(old)(old.core, old.recorder)
    at = env.module.addons.index(old)
    try:
        env.module.addons[at] = new
        new.running()
        assert new._windows.get(s.flow.id) is False  # handed over, no turn read so yet
        s.create(_incremental_create("call_1"))
        s.server(frames)
        assert [d["action"] for d in s.record["decisions"]] == ["leave", "leave"]
        assert "Windows" in s.record["decisions"][1]["reason"]
        s.end()
        assert s.flow.id not in new._windows
    finally:
        env.module.addons[at] = old
        new._ws.clear()


@pytest.mark.parametrize("odd", [[], ["response.completed"], {"t": 1}])
def test_a_frame_whose_type_is_not_a_string_passes_and_the_turn_goes_on(env, odd):
    """A server frame whose ``type`` is an array or an object (JSON a broken or hostile upstream
    may send) is no turn's end and no event this reads: it reaches the client as it came, and
    the turn's call after it is still repaired."""
    s = Session(env)
    s.create()
    odd_step = s.send({"type": odd})
    s.server(load_frames()[1])
    assert not odd_step.message.dropped and odd_step.message.content == odd_step.original
    delivered = parsed(s.delivered())
    assert delivered[0] == {"type": odd}
    assert [f["item"]["name"] for f in delivered if f["type"] == "response.output_item.done"] == ["exec_command"]
    assert [(d["name"], d["action"], d["target"]) for d in s.record["decisions"]] == [
        ("shell", "rename", "exec_command")
    ]
    assert not any("internal error" in n for n in s.record.get("notes", []))


@pytest.mark.parametrize("mid_turn", [False, True], ids=["after-the-turn", "mid-turn"])
def test_a_binary_client_frame_begins_a_turn_whose_tools_are_not_read(env, mid_turn):
    """Turn 1 declares exec_command. A ``response.create`` sent as a *binary* frame (toolvocab
    reads text frames only) declares only ``shell``: its answer's ``shell`` call must not be
    repaired with turn 1's tools (only a tool this request declared is a target); every frame of
    it reaches the client as the upstream sent it."""
    s = Session(env)
    create, frames = load_frames()
    s.create()
    s.server(frames if not mid_turn else frames[:3])
    second = dict(create, tools=[{"type": "function", "name": "shell", "parameters": {"type": "object"}}])
    raw = orjson.dumps(second)
    sent = s.send(raw, from_client=True, text=False)
    assert sent.message.content == raw and not sent.message.dropped
    if mid_turn:  # turn 1's held frames go before the new turn, as they came
        assert sent.injected == [orjson.dumps(f) for f in frames[1:3]]
        s.server(frames[3:])
    before = len(s.delivered())
    s.server(frames)
    assert s.delivered()[before:] == [orjson.dumps(f) for f in frames]  # every frame as it came
    assert [d["target"] for d in s.record["decisions"]] == ([] if mid_turn else ["exec_command"])
    assert "a binary client frame" in " | ".join(s.record["notes"]), s.record["notes"]


@pytest.mark.parametrize("to", ["auto", "off"])
@pytest.mark.parametrize("frame", [{"type": "response.cancel"}, None], ids=["cancel", "create"])
def test_frames_an_observed_turn_relayed_are_not_sent_again_at_a_give_up(env, to, frame):
    """A turn read in ``observe`` relays every frame as it came. Switched to another mode while
    its call is under way, a client frame before the turn ends gives the turn up: the frames the
    client already got must not be injected a second time (a call's arguments would arrive twice,
    ``{"cmd{"cmd":"echo hi"}``)."""
    env.configure(toolvocab_mode="observe")
    s = Session(env)
    create, frames = load_frames()
    s.create()
    s.server(frames[:3])  # created, the call's added and its first delta: relayed as they came
    assert s.delivered() == [orjson.dumps(f) for f in frames[:3]]
    env.configure(toolvocab_mode=to)
    given_up = s.send(frame or create, from_client=True)
    assert given_up.injected == []
    s.server(frames[3:])
    got = s.delivered()
    assert got == [orjson.dumps(f) for f in frames], [f["type"] for f in parsed(got)]


SHELL_ONLY = [{"type": "function", "name": "shell", "parameters": {"type": "object"}}]


@pytest.mark.parametrize("second", ["text", "binary"])
def test_a_turn_begun_while_another_streams_is_never_read_with_a_later_turns_tools(env, second):
    """Turn A (declaring exec_command) is mid-call when the client sends B's request (declaring
    only ``shell``): A is given up. A's ``response.completed`` ends A, not B: a request C sent
    before B's answer must not have B's ``shell`` call repaired to C's exec_command (only a tool
    B declared is a target). Once every turn the server owed has ended, the next is read again."""
    s = Session(env)
    create, frames = load_frames()
    s.create()
    s.server(frames[:3])
    s.send(orjson.dumps(dict(create, tools=SHELL_ONLY)), from_client=True, text=second == "text")
    s.server(frames[3:])  # the rest of A
    s.create()  # C, before B's answer
    before = len(s.delivered())
    s.server(frames)  # B's answer
    assert names_seen(s.delivered()[before:]) == ["shell"] * 3
    before = len(s.delivered())
    s.server(frames)  # C's answer, read for names only
    assert s.delivered()[before:] == [orjson.dumps(f) for f in frames]
    before = len(s.delivered())
    s.create()
    s.server(frames)
    assert names_seen(s.delivered()[before:]) == ["exec_command"] * 3


@pytest.mark.parametrize("first", ["binary", "off"])
def test_a_request_sent_while_an_unread_first_turn_streams_is_not_read(env, first):
    """The socket's first request is not read (sent binary, or in off mode): while its answer
    has not ended, a request read in auto mode must leave that answer's ``shell`` call as sent."""
    s = Session(env)
    create, frames = load_frames()
    if first == "off":
        env.configure(toolvocab_mode="off")
    s.send(orjson.dumps(dict(create, tools=SHELL_ONLY)), from_client=True, text=first == "off")
    env.configure(toolvocab_mode="auto")
    s.create()
    s.server(frames)  # the first request's answer
    assert s.delivered() == [orjson.dumps(f) for f in frames]
    s.server(frames)  # the second's, not read either
    before = len(s.delivered())
    s.create()
    s.server(frames)
    assert names_seen(s.delivered()[before:]) == ["exec_command"] * 3


def test_a_binary_keep_alive_begins_no_turn(env):
    """A binary client frame that is no request (not JSON) begins no turn: the next request is
    read and repaired as usual, and a turn under way is not given up for it."""
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server(frames[:3])
    s.send(b"\x00\x01keepalive", from_client=True, text=False)
    s.server(frames[3:])
    s.send(b"\x00\x01keepalive", from_client=True, text=False)
    s.create()
    s.server(frames)
    assert names_seen(s.delivered()) == ["exec_command"] * 6
    assert not any("binary" in n for n in s.record["notes"]), s.record["notes"]


def test_an_observed_turn_given_up_claims_no_name_given_back(env):
    """An observed turn relays a call under an alias an earlier auto turn sent (observe names
    nothing back). Given up after a switch to auto, its note must not say the held frames got
    the name back: the client already had them as they came."""
    long = "mcp__some_really_long_server_name__some_really_long_tool_name_exceeding_limits"
    create, _ = load_frames()
    first = dict(create, tools=[{"type": "function", "name": long, "parameters": {"type": "object"}}])
    s = Session(env)
    s.create(first)
    alias = s.record["rename_map"][long]
    frames = calling(alias, '{"a":1}')
    s.server(frames)
    env.configure(toolvocab_mode="observe")
    s.create(first)
    s.server(frames[:3])
    assert [f["item"]["name"] for f in parsed(s.delivered()[-2:-1])] == [alias]
    env.configure(toolvocab_mode="auto")
    s.send({"type": "response.cancel"}, from_client=True)
    note = [n for n in s.record["notes"] if "response.cancel came" in n]
    assert note and "names given back" not in note[-1], s.record["notes"]


@pytest.mark.parametrize("when", ["after-the-turn", "mid-turn"])
def test_a_response_processed_frame_costs_no_turn_its_repair(env, when):
    """codex-rs sends ``response.processed`` (ResponseProcessedWsRequest) on a reused connection
    once it has read a response: it begins no turn and ends none. The turn under way is still
    repaired, and so is the next request's."""
    s = Session(env)
    _, frames = load_frames()
    s.create()
    cut = 3 if when == "mid-turn" else len(frames)
    s.server(frames[:cut])
    s.send({"type": "response.processed", "response_id": "resp_1"}, from_client=True)
    s.server(frames[cut:])
    s.create()
    s.server(frames)
    assert names_seen(s.delivered()) == ["exec_command"] * 6
    assert not any("passed through" in n for n in s.record["notes"]), s.record["notes"]


ERROR_FRAME = {"type": "error", "error": {"type": "server_error", "message": "boom"}}


@pytest.mark.parametrize("ends", ["error-mid-turn", "error-then-failed"])
def test_an_error_frame_ends_no_turn_that_streams_on(env, ends):
    """An ``error`` event while a response is active may be that response's, which may go on;
    and a turn's ``error`` then its ``response.failed`` are one end, not two. A request sent
    after either must not be read with its tools while an earlier turn can still send a call:
    A's own ``shell`` call must not reach the client as the later request's exec_command."""
    s = Session(env)
    create, frames = load_frames()
    s.send(orjson.dumps(dict(create, tools=SHELL_ONLY)), from_client=True)  # A declares shell
    if ends == "error-mid-turn":
        s.server(frames[:1])  # response.created
        s.server([ERROR_FRAME])
        s.create()  # B declares exec_command, while A streams on
        s.server(frames[1:])
        assert names_seen(s.delivered()) == ["shell"] * 3
    else:
        s.server(frames[:2])
        s.send(orjson.dumps(dict(create, tools=SHELL_ONLY)), from_client=True)  # B, while A streams
        s.server(frames[2:-1])
        failed = dict(frames[-1], type="response.failed")
        s.server([ERROR_FRAME, failed])  # A's one end
        s.create()  # C declares exec_command, before B's answer
        before = len(s.delivered())
        s.server(frames)  # B's answer
        assert names_seen(s.delivered()[before:]) == ["shell"] * 3


def test_an_error_refusing_a_request_ends_its_turn(env):
    """An ``error`` while no response is active answers the oldest request (refused before a
    response began): the next request is read and repaired as usual."""
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server([ERROR_FRAME])
    s.create()
    s.server(frames)
    assert names_seen(s.delivered()) == ["exec_command"] * 3


def test_a_cancel_after_the_turn_ended_begins_no_turn(env):
    """A ``response.cancel`` that comes once the turn has ended cancels nothing and begins no
    turn: a ``response.append`` after it is still read with the last request's tools."""
    s = Session(env)
    _, frames = load_frames()
    s.create()
    s.server(frames)
    s.send({"type": "response.cancel"}, from_client=True)
    s.send(
        {"type": "response.append", "input": [{"type": "message", "role": "user", "content": "go on"}]},
        from_client=True,
    )
    s.server(frames)
    assert names_seen(s.delivered()) == ["exec_command"] * 6
    assert not any("did not read" in n for n in s.record["notes"]), s.record["notes"]


def test_a_socket_is_freed_without_the_cyclic_collector(env):
    """A Codex socket whose foreign call is held, repaired and released, then ended, is freed by
    reference counting alone once dropped: nothing the transport keeps refers back to the flow
    (a cycle would keep every socket's frames until the cyclic collector ran;
    ``test_flow_lifetime.py`` holds HTTP flows to the same)."""
    s = Session(env)
    harness.addon(env.module, "ToolVocabRedaction").requestheaders(s.flow)  # as at the handshake
    gc.collect(1)  # the flow's own making left young garbage
    gc.disable()
    try:
        assert s.flow._toolvocab_redacting
        s.create()
        s.server(calling("shell", '{"command":["bash","-lc","echo hi"]}'))
        s.end()
        assert s.record is not None and s.record["decisions"]
        env.injected.clear()  # the capture holds each injected frame's flow
        ref = weakref.ref(s.flow)
        del s
        assert ref() is None
    finally:
        gc.enable()
