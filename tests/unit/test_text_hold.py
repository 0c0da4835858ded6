"""The text hold every dialect's stream shares (``textcalls.TextHold``): whatever pieces the
text comes in, each unit goes out once, in order, and a unit is held only while the text so
far may be a lead followed by tool-call markup."""

from __future__ import annotations

from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab.dialects import textcalls
from toolvocab.engine.wrapped import text_call_state

TEXTS = st.sampled_from(
    [
        "plain prose, no markup at all",
        '<think>reasoning first</think>\n<tool_call>\n{"name": "Bash", "arguments": {}}\n</tool_call>',
        '<tool_call>\n{"name": "Bash", "arguments": {}}\n</tool_call> and then prose',
        "  \n<thin",
        "<think>only reasoning</think>",
        "<function=read_file>\n<parameter=path>\na.txt\n</parameter>\n</function>",
    ]
)


@settings(max_examples=300, deadline=None)
@given(text=TEXTS, cuts=st.sets(st.integers(1, 200), max_size=8), keepalives=st.sets(st.integers(0, 9), max_size=3))
def test_every_unit_goes_out_once_in_order(text: str, cuts: set[int], keepalives: set[int]) -> None:
    bounds = [0, *sorted(c for c in cuts if c < len(text)), len(text)]
    pieces = [text[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]
    hold = textcalls.TextHold()
    sent: list[object] = []
    units: list[object] = []
    watching = True
    for k, piece in enumerate(pieces):
        if k in keepalives:
            unit = ("keepalive", k)
            units.append(unit)
            sent += hold.keep(unit) if watching else [unit]
        unit = ("text", k)
        units.append(unit)
        if not watching:
            sent.append(unit)
            continue
        state, out = hold.add(piece, unit)
        sent += out
        # held exactly while the text so far is markup (after any lead)
        assert (hold.held is not None) == (state == textcalls.MARKUP)
        if state == textcalls.PROSE:
            watching = False
    sent += hold.release()
    assert sent == units
    whole = text_call_state(text)[0]
    assert hold.state == whole or not watching


def test_a_chat_lift_that_fails_midway_sends_every_held_chunk_as_it_came() -> None:
    """A lift whose rewrite of the held chunks raises (a choice that is not an object): the
    rewriter contains the error and the client gets every chunk as the upstream sent it."""
    import json

    from harness.dialects import Recorder
    from harness.dialects import context
    from harness.dialects import drive
    from toolvocab.dialects.openai_chat import DIALECT
    from toolvocab.engine.ladder import Toolset
    from toolvocab.engine.ladder import declared_tool

    tools = Toolset(
        [
            declared_tool(
                "read_file",
                input_schema={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            )
        ]
    )
    markup = '<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call>'
    chunks = [
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {"content": markup}}]}).encode() + b"\n\n",
        b"data: " + json.dumps({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}, 7]}).encode() + b"\n\n",
    ]
    rw = DIALECT.stream_rewriter(context(Recorder(tools)))
    assert drive(rw, chunks) == b"".join(chunks)
    assert rw.error is not None
