"""Tool-call markup in a Chat answer's text (BR-23, BR-24).

Lifted only when the text is nothing but markup — whitespace and one leading reasoning block
aside; an answer that *mentions* a call (an example in backticks, a call the model says it will
not run, a sentence before or after, prose between two blocks) stays text, byte for byte. Each
negative sits next to its positive, on the engine (``extract_text_calls``), on a JSON answer and
on a stream fed over random chunk splits; a hypothesis property covers prose around valid markup.
"""

from __future__ import annotations

import os
import random
from functools import partial
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from harness import random_chunks
from harness.dialects import Recorder
from harness.dialects import context
from harness.dialects import rewrite
from harness.dialects import split_text
from harness.dialects import sse_events
from toolvocab.dialects.openai_chat import DIALECT
from toolvocab.dialects.sse import SSEParser
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.plan import Plan
from toolvocab.engine.wrapped import LEAD
from toolvocab.engine.wrapped import MARKUP
from toolvocab.engine.wrapped import PROSE
from toolvocab.engine.wrapped import extract_text_calls
from toolvocab.engine.wrapped import text_call_state

REQUEST = {
    "model": "qwen3-coder",
    "messages": [{"role": "user", "content": "Square 1024 and read the README."}],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "square_the_number",
                "parameters": {
                    "type": "object",
                    "properties": {"input_num": {"type": "integer"}},
                    "required": ["input_num"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
            },
        },
    ],
}
TOOLS = Toolset(DIALECT.declared_tools(REQUEST))

XML = "<tool_call>\n<function=square_the_number>\n<parameter=input_num>\n1024\n</parameter>\n</function>\n</tool_call>"
XML_READ = "<tool_call>\n<function=read_file>\n<parameter=path>\nREADME.md\n</parameter>\n</function>\n</tool_call>"
KIMI = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>"
    '{"path":"README.md"}<|tool_call_end|><|tool_calls_section_end|>'
)
THINK = "<think>\nThe user wants the square; I call the tool.\n</think>"
MINIMAX = (
    '<minimax:tool_call>\n<invoke name="square_the_number">\n<parameter name="input_num">1024</parameter>\n</invoke>\n'
    "</minimax:tool_call>"
)
DSML = (
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n'
    '<｜DSML｜parameter name="path" string="true">README.md</｜DSML｜parameter>\n</｜DSML｜invoke>\n</｜DSML｜function_calls>'
)
HARMONY = '<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path":"README.md"}<|call|>'
HARMONY_BARE = 'commentary to=functions.read_file json{"path":"README.md"}'

#: Hypothesis examples for the property (``TOOLVOCAB_PROPERTY_EXAMPLES``; quick default 300).
EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))

SQUARE = ("square_the_number", {"input_num": 1024})
READ = ("read_file", {"path": "README.md"})

#: (text, calls lifted as (name, arguments), content that remains) — whole markup.
POSITIVE = [
    (XML, [SQUARE], ""),
    ("\n\n" + XML + "\n", [SQUARE], ""),
    (XML + "\n" + XML_READ, [SQUARE, READ], ""),
    (KIMI, [READ], ""),
    (XML + "\n\n" + KIMI, [SQUARE, READ], ""),
    (THINK + "\n\n" + XML, [SQUARE], THINK),
    ("\n" + THINK + XML, [SQUARE], "\n" + THINK),
    ("<thinking>hmm</thinking>\n" + KIMI, [READ], "<thinking>hmm</thinking>"),
]

#: Text that mentions markup: never lifted.
NEGATIVE = [
    pytest.param("Use this format:\n```\n" + XML + "\n```", id="example-in-fence"),
    pytest.param("Call it like `" + XML + "`.", id="example-in-backticks"),
    pytest.param("I will not run " + XML + " because it is not needed.", id="quoted-call-not-run"),
    pytest.param("I will not run " + XML, id="prose-before"),
    pytest.param(XML + "\nThat squares the number.", id="sentence-after"),
    pytest.param(XML + "\n\nDone", id="word-after"),
    pytest.param(XML + "\nand then\n" + XML_READ, id="prose-between-blocks"),
    pytest.param(KIMI + " ok", id="kimi-then-prose"),
    pytest.param("Kimi writes " + KIMI, id="prose-then-kimi"),
    pytest.param(KIMI.replace("<|tool_call_end|>", "<|tool_call_end|> and also ", 1), id="prose-inside-kimi-section"),
    pytest.param(THINK + "\nLet me call it:\n" + XML, id="think-then-prose-then-markup"),
    pytest.param(THINK + XML + " (squared)", id="think-markup-prose"),
    pytest.param("<think>I could call " + XML + "</think>", id="markup-only-inside-think"),
    pytest.param("<think>unclosed reasoning " + XML, id="unclosed-think"),
    pytest.param(THINK + THINK + XML, id="two-reasoning-blocks"),
    pytest.param(XML.replace("<parameter=", "note: <parameter=", 1), id="text-inside-the-function-body"),
    pytest.param(XML.replace("</tool_call>", ""), id="unclosed-block"),
    pytest.param(XML.replace("square_the_number", "cube_the_number"), id="undeclared-function"),
]


# -- engine --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_markup_alone_is_lifted(text: str, calls: list[tuple[str, dict]], remaining: str) -> None:
    found = extract_text_calls(text, TOOLS)
    assert found is not None
    left, lifted = found
    assert [(c.name, c.arguments) for c in lifted] == calls
    assert left == remaining


@pytest.mark.parametrize("text", NEGATIVE)
def test_markup_mentioned_in_prose_is_never_lifted(text: str) -> None:
    assert extract_text_calls(text, TOOLS) is None


def test_kimi_id_is_kept_and_xml_calls_have_none() -> None:
    found = extract_text_calls(XML + KIMI, TOOLS)
    assert found is not None
    assert [c.id for c in found[1]] == [None, "functions.read_file:0"]


@pytest.mark.parametrize(
    ("text", "state"),
    [
        ("", LEAD),
        ("  \n", LEAD),
        ("<think>still thinking", LEAD),
        (THINK + "\n", LEAD),
        ("<", MARKUP),
        ("<thi", MARKUP),
        ("<tool_", MARKUP),
        ("<tool_call>\n<function=x", MARKUP),
        (THINK + "\n<|tool_calls_sec", MARKUP),
        (XML + "\n", MARKUP),
        ("Sure", PROSE),
        ("I will not run <tool_call>", PROSE),
        (XML + " ok", PROSE),
        ("<b>", PROSE),
        (THINK + "Now", PROSE),
        ("comm", MARKUP),  # may be starting harmony with its tokens dropped
        ("commit the change", PROSE),
        ("Commentary", PROSE),
        (HARMONY_BARE[:30], MARKUP),
        (HARMONY_BARE + " and more", MARKUP),  # no closing tag: held to the end, then read whole
        ("<|channel|>final<|message|>Hi", PROSE),
        ("<minimax:tool", MARKUP),
        (MINIMAX + "\n", MARKUP),
        (MINIMAX + " ok", PROSE),
        (DSML[:40], MARKUP),
        (XML[len("<tool_call>") :], MARKUP),
        (XML[len("<tool_call>") : -3], MARKUP),
        (XML[len("<tool_call>") :] + " ok", PROSE),
    ],
)
def test_text_call_state_of_a_growing_text(text: str, state: str) -> None:
    assert text_call_state(text)[0] == state


# -- the Chat dialect: JSON and streamed --------------------------------------------------------


#: The addon's per-flow resolver shape over TOOLS (callable, with ``tools``).
Resolver = partial(Recorder, TOOLS)


PLAN = Plan()
FLOW_KEY = "flow-text-calls"


def chat_json(content: str, finish: str = "stop") -> dict[str, Any]:
    return {
        "id": "chatcmpl-t1",
        "object": "chat.completion",
        "created": 1761000000,
        "model": "qwen3-coder",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30},
    }


def chat_sse(pieces: list[str], finish: str = "stop") -> bytes:
    head = {"id": "chatcmpl-t1", "object": "chat.completion.chunk", "created": 1761000000, "model": "qwen3-coder"}
    events = [{**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]}]
    events += [{**head, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]} for p in pieces]
    events.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
    events.append({**head, "choices": [], "usage": {"prompt_tokens": 10, "completion_tokens": 20, "total_tokens": 30}})
    return b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in events) + b"data: [DONE]\n\n"


def split_bytes(data: bytes, rnd: random.Random) -> list[bytes]:
    return random_chunks(data, rnd, 1, 40)


def run_stream(chunks: list[bytes]) -> bytes:
    return rewrite(DIALECT, Resolver(), PLAN, chunks, flow_key=FLOW_KEY)


def client_view(out: bytes) -> dict[str, Any]:
    """What a client assembles from the stream: content, tool calls, finish_reason."""
    content, calls, finish = "", {}, None
    for event in sse_events(out):
        data = event.json()
        if not isinstance(data, dict):
            continue
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            content += delta.get("content") or ""
            for tc in delta.get("tool_calls") or ():
                slot = calls.setdefault(tc["index"], {"id": "", "name": "", "arguments": ""})
                slot["id"] += tc.get("id") or ""
                fn = tc.get("function") or {}
                slot["name"] += fn.get("name") or ""
                slot["arguments"] += fn.get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    return {
        "content": content,
        "calls": [(c["name"], orjson.loads(c["arguments"])) for _, c in sorted(calls.items())],
        "ids": [c["id"] for _, c in sorted(calls.items())],
        "finish_reason": finish,
    }


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_json_answer_of_markup_alone_becomes_tool_calls(text: str, calls: list, remaining: str) -> None:
    body = chat_json(text)
    assert DIALECT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    choice = body["choices"][0]
    assert [
        (c["function"]["name"], orjson.loads(c["function"]["arguments"])) for c in choice["message"]["tool_calls"]
    ] == calls
    assert choice["message"]["content"] == (remaining.strip() or None)
    assert choice["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("text", NEGATIVE)
def test_json_answer_mentioning_markup_is_byte_identical(text: str) -> None:
    body = chat_json(text)
    before = orjson.dumps(body)
    assert DIALECT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_stream_of_markup_alone_becomes_tool_calls(text: str, calls: list, remaining: str, seed: int) -> None:
    rnd = random.Random(seed)
    upstream = chat_sse(split_text(text, rnd))
    view = client_view(run_stream(split_bytes(upstream, rnd)))
    assert view["calls"] == calls
    assert all(view["ids"])
    # The reasoning block stays visible; whitespace that went out before the markup may remain.
    assert view["content"].strip() == remaining.strip()
    assert view["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("text", NEGATIVE)
def test_stream_mentioning_markup_is_byte_identical(text: str, seed: int) -> None:
    rnd = random.Random(seed)
    upstream = chat_sse(split_text(text, rnd))
    assert run_stream(split_bytes(upstream, rnd)) == upstream


def test_stream_releases_content_at_once_once_prose_came_before_any_markup() -> None:
    """No delay for an answer that talks about a call: every chunk after the prose goes out as
    soon as it is whole, the opener and the markup included."""
    pieces = [
        "I will not run ",
        "<tool_",
        "call>\n<function=square_the_number>",
        "\n<parameter=input_num>\n1024\n",
        "</tool_call>",
    ]
    upstream = chat_sse(pieces)
    parser = SSEParser()
    events = parser.feed(upstream)
    rw = DIALECT.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    for event in events:
        assert rw.feed(event.raw) == [event.raw]
    assert rw.finish() == []


def test_stream_holds_markup_until_the_end_of_the_choice() -> None:
    """Markup alone is held (a sentence after it would make it prose); the lift goes out at the
    stream's end, with the finish chunk held to it (a chunk after the finish may still carry a
    refusal or a citation)."""
    upstream = chat_sse([XML[:20], XML[20:], "\n"])
    events = SSEParser().feed(upstream)
    rw = DIALECT.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert rw.feed(events[0].raw) == [events[0].raw]  # the role chunk
    for event in events[1:6]:  # the markup, the finish_reason chunk and the usage chunk
        assert rw.feed(event.raw) == []
    released = rw.feed(events[6].raw)  # [DONE]
    view = client_view(b"".join(released))
    assert view["calls"] == [SQUARE] and view["finish_reason"] == "tool_calls"


def test_stream_reasoning_goes_out_as_it_comes_then_the_markup_is_lifted() -> None:
    upstream = chat_sse(["<think>\nI", " should square it.\n</think>", "\n\n", XML])
    events = SSEParser().feed(upstream)
    rw = DIALECT.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    for event in events[:4]:  # role, two reasoning chunks, whitespace: none held
        assert rw.feed(event.raw) == [event.raw]
    assert rw.feed(events[4].raw) == []
    out = b"".join(events[i].raw for i in range(4)) + b"".join(rw.feed(events[5].raw))
    out += b"".join(b for e in events[6:] for b in rw.feed(e.raw)) + b"".join(rw.finish())
    view = client_view(out)
    assert view["content"] == "<think>\nI should square it.\n</think>\n\n"
    assert view["calls"] == [SQUARE]
    assert view["finish_reason"] == "tool_calls"


def test_stream_reasoning_and_markup_in_one_chunk_keep_the_reasoning_as_content() -> None:
    view = client_view(run_stream([chat_sse([THINK + "\n" + XML])]))
    assert view["content"] == THINK
    assert view["calls"] == [SQUARE]


def test_stream_scans_a_long_block_once_not_per_chunk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Inside an open block only its closing tag can change anything: the text is not rescanned
    for every chunk (a long markup answer costs linear time), and the lift is still right."""
    import toolvocab.dialects.textcalls as textcalls  # the shared TextHold's watch scans the text

    calls = []
    real = textcalls.text_call_state

    def counting(text: str):
        calls.append(len(text))
        return real(text)

    monkeypatch.setattr(textcalls, "text_call_state", counting)
    path = "a->b/" * 2000
    text = f"<tool_call>\n<function=read_file>\n<parameter=path>\n{path}\n</parameter>\n</function>\n</tool_call>"
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    view = client_view(run_stream([chat_sse(pieces)]))
    assert view["calls"] == [("read_file", {"path": path})]
    assert len(pieces) > 1400 and len(calls) < 20, len(calls)


@pytest.mark.parametrize("finish", ["tool_calls", "function_call"])
def test_lift_keeps_a_natural_finish_reason_other_than_stop(finish: str) -> None:
    # A server whose parser saw the call but left it in the text ends with tool_calls: lifted, the
    # reason kept. content_filter, length…: never lifted (test_text_calls_dialects).
    body = chat_json(XML, finish)
    assert DIALECT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert body["choices"][0]["finish_reason"] == finish


# -- property: prose around valid markup is never lifted ---------------------------------------

#: Pieces of prose; markup fragments included, but no reasoning tag and no whole function (so the
#: core character below is outside markup or inside a block that is not a call).
PIECES = st.sampled_from(
    [
        " ",
        "\n",
        "\t",
        "`",
        "```",
        "ok",
        "Run",
        ".",
        "<",
        ">",
        "</",
        "<b>",
        "<tool_call>",
        "</tool_call>",
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        "<|tool_call_begin|>",
        "<|tool_call_end|>",
        "functions.read_file:0",
        '{"path":"x"}',
        "<parameter=path>",
        "</function>",
        "é",
        "调用",
        "<minimax:tool_call>",
        "</minimax:tool_call>",
        '<invoke name="read_file">',
        "</invoke>",
        "<｜DSML｜function_calls>",
        "</｜DSML｜function_calls>",
        "<|call|>",
        "commentary to=functions.",
        "json",
        "}",
    ]
)
FILLER = st.lists(PIECES, max_size=6).map("".join)
#: One non-whitespace character that sits outside any markup block in the prose.
CORE = st.characters(blacklist_categories=("Zs", "Zl", "Zp", "Cc", "Cs"))
MARKUP_TEXTS = st.sampled_from(
    [
        XML,
        KIMI,
        XML + "\n" + XML_READ,
        "\n" + XML + "\n",
        KIMI + "\n" + XML,
        MINIMAX,
        DSML,
        HARMONY,
        HARMONY_BARE,
        XML[len("<tool_call>") :],
        MINIMAX + "\n" + XML,
    ]
)


@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    before=FILLER, core=CORE, after=FILLER, markup=MARKUP_TEXTS, prose_first=st.booleans(), seed=st.integers(0, 2**16)
)
def test_prose_around_markup_is_never_lifted(
    before: str, core: str, after: str, markup: str, prose_first: bool, seed: int
) -> None:
    assert extract_text_calls(markup, TOOLS) is not None  # the markup alone would be lifted
    prose = before + core + after
    text = prose + markup if prose_first else markup + prose
    assert extract_text_calls(text, TOOLS) is None
    body = chat_json(text)
    before_bytes = orjson.dumps(body)
    assert DIALECT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before_bytes
    rnd = random.Random(seed)
    upstream = chat_sse(split_text(text, rnd))
    assert run_stream(split_bytes(upstream, rnd)) == upstream


@pytest.mark.parametrize(
    ("inner", "value"),
    [
        ("\nline1\n\n", "line1\n"),
        ("\n\nline1\n", "\nline1"),
        ("\nx  \n", "x  "),
        ("\n  \n", "  "),
        ("\ndef f():\n    return 1\n\n", "def f():\n    return 1\n"),
    ],
)
def test_xml_string_parameter_keeps_every_blank_but_the_template_newlines(inner: str, value: str) -> None:
    # Exactly one leading and one trailing newline belong to the template (vLLM's qwen3coder
    # parser reads it so); every other blank line, space and indent is the file's content.
    from toolvocab.engine.ladder import Toolset
    from toolvocab.engine.ladder import declared_tool
    from toolvocab.engine.wrapped import extract_text_calls

    tools = Toolset(
        [
            declared_tool(
                "write_file",
                input_schema={
                    "type": "object",
                    "properties": {"path": {"type": "string"}, "content": {"type": "string"}},
                },
            )
        ]
    )
    text = f"<tool_call>\n<function=write_file>\n<parameter=path>\na.py\n</parameter>\n<parameter=content>{inner}</parameter>\n</function>\n</tool_call>"
    found = extract_text_calls(text, tools)
    assert found is not None
    (call,) = found[1]
    assert call.arguments == {"path": "a.py", "content": value}


@pytest.mark.parametrize("value", ["null", "Null", "NULL", " null ", "\nnull\n"])
def test_xml_string_parameter_reading_null_stays_text(value: str) -> None:
    # vLLM's qwen3coder parser reads ``null`` in any case as null whatever the declared type; the
    # template's reading keeps the text "null": a grep in a folder named null, or in the project.
    from toolvocab.engine.ladder import Toolset
    from toolvocab.engine.ladder import declared_tool
    from toolvocab.engine.wrapped import extract_text_calls

    schema = {"type": "object", "properties": {"pattern": {"type": "string"}, "path": {"type": "string"}}}
    tools = Toolset([declared_tool("grep_search", input_schema=schema)])
    text = (
        "<tool_call>\n<function=grep_search>\n<parameter=pattern>\nTODO\n</parameter>\n"
        f"<parameter=path>{value}</parameter>\n</function>\n</tool_call>"
    )
    assert extract_text_calls(text, tools) is None
    control = text.replace(f"<parameter=path>{value}</parameter>", "<parameter=path>\nsrc\n</parameter>")
    found = extract_text_calls(control, tools)
    assert found is not None and found[1][0].arguments == {"pattern": "TODO", "path": "src"}


@pytest.mark.parametrize(("value", "lifted"), [("\n5\n", False), ("\ntrue\n", False), ("\nsrc\n", True)])
def test_xml_parameter_of_a_string_or_other_type_reading_as_both_stays_text(value: str, lifted: bool) -> None:
    # integer-or-string: "5" is the number 5 to one reader and the text "5" to another.
    from toolvocab.engine.ladder import Toolset
    from toolvocab.engine.ladder import declared_tool
    from toolvocab.engine.wrapped import extract_text_calls

    schema = {"type": "object", "properties": {"ref": {"type": ["integer", "boolean", "string"]}}}
    tools = Toolset([declared_tool("checkout", input_schema=schema)])
    text = f"<tool_call>\n<function=checkout>\n<parameter=ref>{value}</parameter>\n</function>\n</tool_call>"
    found = extract_text_calls(text, tools)
    assert (found is not None) is lifted
    if lifted:
        assert found[1][0].arguments == {"ref": "src"}


# -- a Qwen3-Coder XML block read without all its closing tags -----------------------------------

WRITE_TOOLS = Toolset(
    DIALECT.declared_tools(
        {
            "tools": [
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "parameters": {"type": "object", "properties": {k: {"type": "string"} for k in keys}},
                    },
                }
                for name, keys in (("Write", ("file_path", "content")), ("Bash", ("command",)))
            ]
        }
    )
)


def xml_block(
    name: str,
    params: list[tuple[str, str]],
    *,
    close_last: bool = True,
    close_function: bool = True,
    wrapped: bool = True,
) -> str:
    """One ``<tool_call>`` block in Qwen3-Coder XML (``wrapped`` False: without the ``<tool_call>``
    the server may consume); ``close_last``/``close_function`` False leave out the last
    ``</parameter>`` / the ``</function>`` (a block the readers still take alone)."""
    out = f"<tool_call>\n<function={name}>\n" if wrapped else f"<function={name}>\n"
    for i, (key, value) in enumerate(params):
        last = i == len(params) - 1
        out += f"<parameter={key}>\n{value}\n" + ("</parameter>\n" if close_last or not last else "")
    return out + ("</function>\n" if close_function else "") + ("</tool_call>" if wrapped else "")


def test_a_write_whose_content_holds_markup_is_not_split_into_two_calls() -> None:
    """One Write whose content holds ``</tool_call>`` and a Bash call: read at the first
    ``</tool_call>``, the first block lacks its closing tags and a second block follows — one
    call or two, so neither is made (it was an emptied file and ``rm -rf``)."""
    content = "</tool_call>\n<tool_call>\n<function=Bash>\n<parameter=command>\nrm -rf ~/work"
    text = xml_block("Write", [("file_path", "/p/fixture.txt"), ("content", content)])
    assert extract_text_calls(text, WRITE_TOOLS) is None
    # a lone block without its closing tags is still read as its one call
    alone = xml_block("Bash", [("command", "ls")], close_last=False, close_function=False)
    lifted = extract_text_calls(alone, WRITE_TOOLS)
    assert lifted is not None and [(c.name, c.arguments) for c in lifted[1]] == [("Bash", {"command": "ls"})]


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(
    calls=st.lists(
        st.sampled_from(
            [
                ("Write", [("file_path", "/p/a.txt"), ("content", "x = 1")]),
                ("Bash", [("command", "rm -rf build")]),
                ("Write", [("file_path", "/p/b.txt")]),
            ]
        ),
        min_size=2,
        max_size=4,
    ),
    which=st.integers(0, 3),
    drop=st.sampled_from(["parameter", "function", "both"]),
    wrapped=st.booleans(),
)
def test_property_several_blocks_one_of_them_unclosed_are_never_lifted(
    calls: list[tuple[str, list[tuple[str, str]]]], which: int, drop: str, wrapped: bool
) -> None:
    """Blocks that would each lift, one of them missing its last ``</parameter>`` or its
    ``</function>``: its end may be a value's text, so the text stays text. Also with the
    ``<tool_call>`` opener the server consumed (the block then always has its ``</function>``)."""
    which %= len(calls)
    if not wrapped:
        drop = "parameter"  # </function> is what ends a block without <tool_call>
    blocks = [
        xml_block(
            name,
            params,
            close_last=not (i == which and drop in ("parameter", "both")),
            close_function=not (i == which and drop in ("function", "both")),
            wrapped=wrapped,
        )
        for i, (name, params) in enumerate(calls)
    ]
    assert extract_text_calls("\n".join(blocks), WRITE_TOOLS) is None
    whole = "\n".join(xml_block(name, params, wrapped=wrapped) for name, params in calls)
    lifted = extract_text_calls(whole, WRITE_TOOLS)
    assert lifted is not None and [c.name for c in lifted[1]] == [name for name, _ in calls]


_BASH_TOOLS = Toolset(
    [
        declared_tool(
            "Bash",
            input_schema={"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        )
    ]
)


@pytest.mark.parametrize(
    "tail",
    [
        "echo a\\ </function>\n</tool_call>",
        "echo a\\ \n</tool_call>",
        "cat > f <<EOF\nhi\n\n\n</function>\n</tool_call>",
    ],
    ids=["space-before-function-end", "space-before-block-end", "blank-lines"],
)
def test_an_unclosed_last_parameter_ending_in_whitespace_stays_text(tail: str) -> None:
    """The last parameter not closed by ``</parameter>``: whitespace before ``</function>`` (or
    the block's end) is the value's (``echo a\\ `` prints ``a `` where ``echo a\\`` prints
    ``a\\``; a here-document's blank lines are the file's) or the layout's: two readings, so the
    text stays text. Was: lifted with the whitespace taken off (attack 72 N4)."""
    text = "<tool_call>\n<function=Bash>\n<parameter=command>\n" + tail
    assert extract_text_calls(text, _BASH_TOOLS) is None


@pytest.mark.parametrize(
    "tail", ["ls -la\n</function>\n</tool_call>", "ls -la</function>\n</tool_call>", "ls -la\n</tool_call>"]
)
def test_an_unclosed_last_parameter_that_ends_in_no_whitespace_is_still_lifted(tail: str) -> None:
    text = "<tool_call>\n<function=Bash>\n<parameter=command>\n" + tail
    found = extract_text_calls(text, _BASH_TOOLS)
    assert found is not None and [(c.name, c.arguments) for c in found[1]] == [("Bash", {"command": "ls -la"})]


_BASH_DESCRIBED = Toolset(
    [
        declared_tool(
            "Bash",
            input_schema={
                "type": "object",
                "properties": {"command": {"type": "string"}, "description": {"type": "string"}},
                "required": ["command"],
            },
        )
    ]
)


@settings(max_examples=EXAMPLES, deadline=None, database=None)
@given(
    before=st.sampled_from(["rm -rf /srv/app/", "echo ", "", "cat <<EOF\n"]),
    after=st.sampled_from(["/cache", " done", "", "\nEOF"]),
    inner=st.sampled_from(["command", "description"]),
    close=st.sampled_from(["all", "none", "last"]),
    wrapped=st.booleans(),
    second=st.booleans(),
)
def test_property_a_parameter_is_never_split_at_a_parameter_tag_in_its_value(
    before: str, after: str, inner: str, close: str, wrapped: bool, second: bool
) -> None:
    """A value holding the text ``<parameter=NAME>`` (NAME declared): read as the template
    writes (each value closed by its own ``</parameter>``) it is one value; cut at that tag it
    is two parameters, a shorter command and another key. Two readings: whatever the closing
    tags, the call is never made with a value cut at the tag (was: ``rm -rf /srv/app/`` with
    ``description: /cache`` for the command ``rm -rf /srv/app/<parameter=description>/cache``,
    in every dialect)."""
    value = f"{before}<parameter={inner}>{after}"
    params = [("command", value)] + ([("description", "d")] if second else [])
    body = "".join(
        f"<parameter={key}>\n{v}\n"
        + ("</parameter>\n" if close == "all" or (close == "last" and i == len(params) - 1) else "")
        for i, (key, v) in enumerate(params)
    )
    text = ("<tool_call>\n<function=Bash>\n" if wrapped else "<function=Bash>\n") + body + "</function>\n"
    text += "</tool_call>" if wrapped else ""
    found = extract_text_calls(text, _BASH_DESCRIBED)
    if found is not None:
        for call in found[1]:
            assert call.arguments.get("command") == value, (text, call.arguments)
