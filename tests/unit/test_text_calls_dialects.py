"""Tool calls leaked into answer text, every markup family in every dialect.

Families: Hermes/Qwen JSON, Llama/Functionary ``<function=…>{json}</function>``, DeepSeek V3/R1
markers (plus the Qwen3-Coder XML and Kimi markers). Each is lifted only when the
text is nothing but markup, the name resolves through the ladder to a declared tool and the
arguments validate; each negative (prose quoting the markup, truncated markup, an undeclared
name, arguments that fail the schema) sits next to its positive, on the engine, on JSON answers
and on streams cut at random places — Anthropic text blocks, Chat content, Responses
``output_text`` and Gemini text parts. The expected values are written out here, never produced
by the code under test.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

import orjson
import pytest

from harness import random_chunks
from harness.dialects import Recorder
from harness.dialects import context
from harness.dialects import drive
from harness.dialects import rewrite
from harness.dialects import split_text
from harness.dialects import sse_events
from toolvocab.dialects import textcalls
from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
from toolvocab.dialects.gemini import DIALECT as GEMINI
from toolvocab.dialects.openai_chat import DIALECT as CHAT
from toolvocab.dialects.openai_responses import DIALECT as RESPONSES
from toolvocab.dialects.sse import SSEParser
from toolvocab.engine.ladder import Toolset

STR = {"type": "string"}
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.plan import Plan
from toolvocab.engine.wrapped import extract_text_calls

SCHEMA_READ = {
    "type": "object",
    "properties": {"path": {"type": "string"}},
    "required": ["path"],
    "additionalProperties": False,
}
SCHEMA_SQUARE = {"type": "object", "properties": {"input_num": {"type": "integer"}}, "required": ["input_num"]}
TOOLS = Toolset(
    [
        DeclaredTool(name="read_file", input_schema=SCHEMA_READ),
        DeclaredTool(name="square_the_number", input_schema=SCHEMA_SQUARE),
    ]
)
PLAN = Plan()
FLOW_KEY = "flow-text-calls-dialects"

READ = ("read_file", {"path": "README.md"})
SQUARE = ("square_the_number", {"input_num": 1024})

HERMES = '<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call>'
HERMES_SQUARE = '<tool_call>\n{"name": "square_the_number", "arguments": {"input_num": 1024}}\n</tool_call>'
LLAMA = '<function=read_file>{"path": "README.md"}</function>'
DS = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n"
    '{"path": "README.md"}\n```<｜tool▁call▁end｜>\n'
    "<｜tool▁call▁begin｜>function<｜tool▁sep｜>square_the_number\n```json\n"
    '{"input_num": 1024}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)
#: DeepSeek V3.1: name, separator, bare JSON object (no ``function`` type, no fence).
DS31 = (
    "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>read_file<｜tool▁sep｜>"
    '{"path": "README.md"}<｜tool▁call▁end｜>'
    "<｜tool▁call▁begin｜>square_the_number<｜tool▁sep｜>"
    '{"input_num": 1024}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
)
XML = "<tool_call>\n<function=square_the_number>\n<parameter=input_num>\n1024\n</parameter>\n</function>\n</tool_call>"
KIMI = (
    "<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>"
    '{"path":"README.md"}<|tool_call_end|><|tool_calls_section_end|>'
)
#: MiniMax M2 (MiniMax-AI/MiniMax-M2.5 docs/tool_calling_guide.md): values typed by the schema.
MINIMAX = (
    '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="path">README.md</parameter>\n</invoke>\n'
    '<invoke name="square_the_number">\n<parameter name="input_num">1024</parameter>\n</invoke>\n</minimax:tool_call>'
)
#: DeepSeek V3.2 DSML (U+FF5C bars): string="true" is text, string="false" a JSON value.
DSML = (
    '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n'
    '<｜DSML｜parameter name="path" string="true">README.md</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    '<｜DSML｜invoke name="square_the_number">\n'
    '<｜DSML｜parameter name="input_num" string="false">1024</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
    "</｜DSML｜function_calls>"
)
#: gpt-oss harmony with its special tokens, and with the server having dropped them.
HARMONY = '<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path":"README.md"}<|call|>'
HARMONY_BARE = 'commentary to=functions.read_file json{"path":"README.md"}'
#: Qwen3-Coder XML whose <tool_call> opener the server consumed (its closer still there).
XML_NO_OPENER = XML[len("<tool_call>") :]
THINK = "<think>\nI read the README first.\n</think>"
PARALLEL = (
    '<tool_call>\n{"name": "multi_tool_use.parallel", "arguments": {"tool_uses": ['
    '{"recipient_name": "functions.read_file", "parameters": {"path": "README.md"}}, '
    '{"recipient_name": "functions.square_the_number", "parameters": {"input_num": 1024}}]}}\n</tool_call>'
)

#: (text, calls as (declared name, arguments), reasoning that remains)
POSITIVE = [
    pytest.param(HERMES, [READ], "", id="hermes"),
    pytest.param("\n" + HERMES + "\n" + HERMES_SQUARE + "\n", [READ, SQUARE], "", id="hermes-two"),
    pytest.param(THINK + "\n\n" + HERMES, [READ], THINK, id="hermes-after-think"),
    pytest.param(
        HERMES.replace('"read_file"', '"functions.read_file"'), [READ], "", id="hermes-prefixed-name-resolves"
    ),
    pytest.param(LLAMA, [READ], "", id="llama"),
    pytest.param(LLAMA + "\n" + LLAMA.replace("README.md", "README.md"), [READ, READ], "", id="llama-two"),
    pytest.param(THINK + LLAMA, [READ], THINK, id="llama-after-think"),
    pytest.param(DS, [READ, SQUARE], "", id="deepseek"),
    pytest.param(THINK + "\n" + DS, [READ, SQUARE], THINK, id="deepseek-after-think"),
    pytest.param(DS31, [READ, SQUARE], "", id="deepseek-v3.1"),
    pytest.param(
        THINK + "\n" + DS31.replace("<｜tool▁sep｜>", "<｜tool▁sep｜>\n"),
        [READ, SQUARE],
        THINK,
        id="deepseek-v3.1-after-think",
    ),
    pytest.param(XML, [SQUARE], "", id="qwen3-coder-xml"),
    pytest.param(KIMI, [READ], "", id="kimi"),
    pytest.param(HERMES + "\n" + LLAMA + "\n" + XML, [READ, READ, SQUARE], "", id="mixed-families"),
    pytest.param(PARALLEL, [READ, SQUARE], "", id="hermes-parallel-wrapper"),
    pytest.param(MINIMAX, [READ, SQUARE], "", id="minimax"),
    pytest.param(THINK + "\n" + MINIMAX, [READ, SQUARE], THINK, id="minimax-after-think"),
    pytest.param(DSML, [READ, SQUARE], "", id="dsml"),
    pytest.param(
        DSML.replace('"read_file"', '"functions.read_file"'), [READ, SQUARE], "", id="dsml-prefixed-name-resolves"
    ),
    pytest.param(HARMONY, [READ], "", id="harmony-tokens"),
    pytest.param(
        "<|start|>assistant" + HARMONY.replace(" <|constrain|>json", " json"),
        [READ],
        "",
        id="harmony-start-no-constrain",
    ),
    pytest.param(HARMONY_BARE, [READ], "", id="harmony-tokens-dropped"),
    pytest.param(XML_NO_OPENER, [SQUARE], "", id="qwen3-coder-xml-opener-dropped"),
    pytest.param(XML_NO_OPENER[: -len("</tool_call>")], [SQUARE], "", id="qwen3-coder-xml-function-only"),
]

#: Text that must stay exactly as sent.
NEGATIVE = [
    pytest.param("Use this format: " + HERMES, id="hermes-after-prose"),
    pytest.param(HERMES + "\nThat reads it.", id="hermes-then-prose"),
    pytest.param("```\n" + LLAMA + "\n```", id="llama-in-a-fence"),
    pytest.param("I will not call " + DS, id="deepseek-quoted"),
    pytest.param(HERMES[:-5], id="hermes-truncated"),
    pytest.param(LLAMA[:-3], id="llama-truncated"),
    pytest.param(DS[: DS.index("<｜tool▁calls▁end｜>")], id="deepseek-truncated"),
    pytest.param(DS.replace('"input_num": 1024}', '"input_num": 10'), id="deepseek-json-cut-inside"),
    pytest.param(HERMES.replace("read_file", "delete_file"), id="hermes-undeclared-name"),
    pytest.param(LLAMA.replace("read_file", "write_file"), id="llama-undeclared-name"),
    pytest.param(DS.replace("square_the_number", "cube_the_number"), id="deepseek-one-undeclared-name"),
    pytest.param(HERMES.replace('{"path": "README.md"}', '{"path": 7}'), id="hermes-args-fail-schema"),
    pytest.param(
        LLAMA.replace('{"path": "README.md"}', '{"path": "README.md", "mode": "rw"}'), id="llama-extra-arg-fails-schema"
    ),
    pytest.param(HERMES.replace('"arguments"', '"args"'), id="hermes-not-the-documented-keys"),
    pytest.param(
        HERMES.replace('{"path": "README.md"}', '"{\\"path\\": \\"README.md\\"}"'), id="hermes-arguments-a-string"
    ),
    pytest.param(LLAMA.replace('{"path": "README.md"}', "path=README.md"), id="llama-not-json"),
    pytest.param(DS.replace(">function<", ">retrieval<", 1), id="deepseek-not-type-function"),
    pytest.param("I will not call " + DS31, id="deepseek-v3.1-quoted"),
    pytest.param(DS31[: DS31.index("<｜tool▁calls▁end｜>")], id="deepseek-v3.1-truncated"),
    pytest.param(DS31.replace('"input_num": 1024}', '"input_num": 10'), id="deepseek-v3.1-json-cut-inside"),
    pytest.param(DS31.replace("square_the_number", "cube_the_number"), id="deepseek-v3.1-one-undeclared-name"),
    pytest.param(DS31.replace('{"path": "README.md"}', '"README.md"'), id="deepseek-v3.1-arguments-not-an-object"),
    pytest.param(
        DS31.replace("<｜tool▁call▁end｜><｜tool▁call▁begin｜>", "<｜tool▁call▁end｜> then <｜tool▁call▁begin｜>"),
        id="deepseek-v3.1-prose-between-calls",
    ),
    pytest.param("<think>" + HERMES + "</think>", id="markup-only-inside-think"),
    pytest.param(
        PARALLEL.replace("functions.square_the_number", "functions.cube"), id="parallel-with-an-undeclared-part"
    ),
    pytest.param("The format is " + MINIMAX, id="minimax-quoted"),
    pytest.param(MINIMAX[: -len("</minimax:tool_call>")], id="minimax-cut-off"),
    pytest.param(MINIMAX.replace('"square_the_number"', '"cube_the_number"'), id="minimax-undeclared-name"),
    pytest.param(MINIMAX.replace('name="path"', 'name="file_path"'), id="minimax-undeclared-parameter"),
    pytest.param(MINIMAX.replace(">README.md<", "> README.md <"), id="minimax-string-read-two-ways"),
    pytest.param(MINIMAX.replace(">1024<", ">ten<"), id="minimax-not-its-type"),
    pytest.param(MINIMAX.replace("</invoke>\n<invoke", "</invoke>\nand\n<invoke"), id="minimax-prose-between-invokes"),
    pytest.param("Example: " + DSML, id="dsml-quoted"),
    pytest.param(DSML[: -len("</｜DSML｜function_calls>")], id="dsml-cut-off"),
    pytest.param(DSML.replace('"square_the_number"', '"cube_the_number"'), id="dsml-undeclared-name"),
    pytest.param(DSML.replace('string="false">1024', 'string="true">ten'), id="dsml-text-for-an-integer"),
    pytest.param(DSML.replace('string="false">1024', 'string="false">10 24'), id="dsml-not-json"),
    pytest.param(DSML.replace(">README.md<", ">README.md\n<"), id="dsml-string-with-edge-whitespace"),
    pytest.param(HARMONY_BARE + " and then I summarize it.", id="harmony-then-prose"),
    pytest.param("I would send " + HARMONY_BARE, id="harmony-quoted"),
    pytest.param(HARMONY[: HARMONY.index('"README')], id="harmony-cut-off"),
    pytest.param(HARMONY.replace("read_file", "delete_file"), id="harmony-undeclared-name"),
    pytest.param(HARMONY_BARE.replace(" json", "json"), id="harmony-json-glued-to-the-name"),
    pytest.param(XML_NO_OPENER.replace("</function>", ""), id="qwen3-coder-xml-opener-and-closer-dropped"),
    pytest.param(XML_NO_OPENER + " Done.", id="qwen3-coder-xml-opener-dropped-then-prose"),
    pytest.param(
        XML_NO_OPENER.replace("square_the_number", "cube_the_number"), id="qwen3-coder-xml-opener-dropped-undeclared"
    ),
]


#: The addon's per-flow resolver shape over TOOLS (callable, with ``tools``).
Resolver = partial(Recorder, TOOLS)


def split_bytes(data: bytes, rnd: random.Random) -> list[bytes]:
    return random_chunks(data, rnd, 1, 60)


def run_stream(dialect: Any, chunks: list[bytes]) -> bytes:
    return rewrite(dialect, Resolver(), PLAN, chunks, flow_key=FLOW_KEY)


def events(data: bytes) -> list[dict[str, Any]]:
    return [e.json() for e in sse_events(data) if isinstance(e.json(), dict)]


def sse(name: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {name}\n" if name else ""
    return (head + "data: " + orjson.dumps(data).decode() + "\n\n").encode()


# -- engine --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_lift_positive(text: str, calls: list, remaining: str) -> None:
    found = textcalls.lift(text, context(Resolver()), lambda i: f"id{i}")
    assert found is not None
    left, lifted = found
    assert [(c.name, c.arguments) for c in lifted] == calls
    assert left == remaining


@pytest.mark.parametrize("text", NEGATIVE)
def test_lift_negative(text: str) -> None:
    assert textcalls.lift(text, context(Resolver()), lambda i: f"id{i}") is None


def test_json_families_keep_the_models_spelling_for_the_ladder() -> None:
    """The engine reads the JSON families' names as written; the ladder decides (a prefixed name
    is resolved there, not in the parser)."""
    found = extract_text_calls(HERMES.replace('"read_file"', '"functions.read_file"'), TOOLS)
    assert found is not None and [c.name for c in found[1]] == ["functions.read_file"]


@pytest.mark.parametrize("extra", ['"mode": "append"', '"append": true', '"dry_run": false'])
def test_a_call_with_a_key_an_open_schema_does_not_declare_is_never_lifted(extra: str) -> None:
    # The schema allows other keys, so the call validates; a client that ignores what it does not
    # declare (Gemini CLI, Qwen Code, OpenCode) would run it without that key: lifting is a change.
    open_tools = Toolset(
        [
            DeclaredTool(
                name="write_file",
                input_schema={"type": "object", "properties": {"path": STR, "content": STR}, "required": ["path"]},
            )
        ]
    )
    text = (
        '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "x", '
        + extra
        + "}}\n</tool_call>"
    )
    assert textcalls.lift(text, context(partial(Recorder, open_tools)()), lambda i: f"id{i}") is None
    plain = '<tool_call>\n{"name": "write_file", "arguments": {"path": "a.txt", "content": "x"}}\n</tool_call>'
    assert textcalls.lift(plain, context(partial(Recorder, open_tools)()), lambda i: f"id{i}") is not None


def test_no_declared_tools_no_lift() -> None:
    assert textcalls.lift(HERMES, context(lambda call: resolve(call, TOOLS, {})), lambda i: "x") is None


# -- Anthropic -----------------------------------------------------------------------------------


def anthropic_json(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "m",
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": 3, "output_tokens": 5},
    }


def anthropic_sse(pieces: list[str]) -> bytes:
    out = [
        sse(
            "message_start",
            {"type": "message_start", "message": {**anthropic_json(""), "content": [], "stop_reason": None}},
        ),
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        ),
        sse("ping", {"type": "ping"}),
    ]
    out += [
        sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}},
        )
        for p in pieces
    ]
    out += [
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(out)


def anthropic_view(data: bytes) -> dict[str, Any]:
    """What the anthropic SDK's accumulator builds: blocks in index order, stop_reason."""
    blocks: list[dict[str, Any]] = []
    stop = None
    for e in events(data):
        if e["type"] == "content_block_start":
            assert e["index"] == len(blocks), "block indexes must be contiguous"
            blocks.append(dict(e["content_block"], _json=""))
        elif e["type"] == "content_block_delta":
            block, delta = blocks[e["index"]], e["delta"]
            if delta["type"] == "text_delta":
                block["text"] += delta["text"]
            else:
                block["_json"] += delta["partial_json"]
        elif e["type"] == "message_delta":
            stop = e["delta"]["stop_reason"]
    texts = "".join(b["text"] for b in blocks if b["type"] == "text")
    calls = [
        (b["name"], orjson.loads(b["_json"]) if b["_json"] else b["input"]) for b in blocks if b["type"] == "tool_use"
    ]
    ids = [b["id"] for b in blocks if b["type"] == "tool_use"]
    return {"text": texts, "calls": calls, "ids": ids, "stop_reason": stop}


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_anthropic_json_lift(text: str, calls: list, remaining: str) -> None:
    body = anthropic_json(text)
    assert ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert [(b["name"], b["input"]) for b in body["content"] if b["type"] == "tool_use"] == calls
    assert all(b["id"].startswith("tc_") for b in body["content"] if b["type"] == "tool_use")
    assert "".join(b["text"] for b in body["content"] if b["type"] == "text") == remaining
    assert body["stop_reason"] == "tool_use"


@pytest.mark.parametrize("text", NEGATIVE)
def test_anthropic_json_negative_is_unchanged(text: str) -> None:
    body = anthropic_json(text)
    before = orjson.dumps(body)
    assert ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before


def test_anthropic_json_with_a_real_tool_use_keeps_the_text() -> None:
    body = anthropic_json(HERMES)
    body["content"].append({"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a"}})
    ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert body["content"][0] == {"type": "text", "text": HERMES}


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_anthropic_stream_lift(text: str, calls: list, remaining: str, seed: int) -> None:
    rnd = random.Random(seed)
    view = anthropic_view(run_stream(ANTHROPIC, split_bytes(anthropic_sse(split_text(text, rnd)), rnd)))
    assert view["calls"] == calls
    assert all(view["ids"])
    assert view["text"].strip() == remaining.strip()
    assert view["stop_reason"] == "tool_use"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text", NEGATIVE)
def test_anthropic_stream_negative_is_byte_identical(text: str, seed: int) -> None:
    rnd = random.Random(seed)
    upstream = anthropic_sse(split_text(text, rnd))
    assert run_stream(ANTHROPIC, split_bytes(upstream, rnd)) == upstream


def test_anthropic_stream_prose_goes_out_at_once() -> None:
    """No delay for ordinary text: every event of a prose answer goes out on the feed that
    completes it, unchanged — even when it later quotes markup."""
    upstream = anthropic_sse(["Here is ", "how: ", HERMES[:9], HERMES[9:]])
    rw = ANTHROPIC.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    for event in SSEParser().feed(upstream):
        assert rw.feed(event.raw) == [event.raw]
    assert rw.finish() == []


def test_anthropic_stream_markup_then_second_text_block_is_released_unchanged() -> None:
    upstream = anthropic_sse([HERMES]).replace(
        b"event: message_delta",
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        )
        + sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "Done."}},
        )
        + sse("content_block_stop", {"type": "content_block_stop", "index": 1})
        + b"event: message_delta",
    )
    assert run_stream(ANTHROPIC, [upstream]) == upstream


def test_anthropic_parallel_block_becomes_its_calls_json_and_stream() -> None:
    wrapper = {
        "tool_uses": [
            {"recipient_name": "functions.read_file", "parameters": {"path": "README.md"}},
            {"recipient_name": "square_the_number", "parameters": {"input_num": 1024}},
        ]
    }
    body = anthropic_json("Reading.")
    body["content"].append({"type": "tool_use", "id": "toolu_w", "name": "multi_tool_use.parallel", "input": wrapper})
    body["stop_reason"] = "tool_use"
    assert ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert [(b["id"], b["name"], b["input"]) for b in body["content"][1:]] == [
        ("toolu_w_0", "read_file", {"path": "README.md"}),
        ("toolu_w_1", "square_the_number", {"input_num": 1024}),
    ]
    upstream = b"".join(
        [
            sse("message_start", {"type": "message_start", "message": {**anthropic_json(""), "content": []}}),
            sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 0,
                    "content_block": {
                        "type": "tool_use",
                        "id": "toolu_w",
                        "name": "multi_tool_use.parallel",
                        "input": {},
                    },
                },
            ),
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": orjson.dumps(wrapper).decode()},
                },
            ),
            sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
            sse(
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": 1,
                    "content_block": {"type": "tool_use", "id": "toolu_x", "name": "read_file", "input": {}},
                },
            ),
            sse(
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 1,
                    "delta": {"type": "input_json_delta", "partial_json": '{"path": "b"}'},
                },
            ),
            sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
            sse(
                "message_delta",
                {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 5}},
            ),
            sse("message_stop", {"type": "message_stop"}),
        ]
    )
    view = anthropic_view(run_stream(ANTHROPIC, split_bytes(upstream, random.Random(1))))
    assert view["calls"] == [READ, SQUARE, ("read_file", {"path": "b"})]
    assert view["ids"] == ["toolu_w_0", "toolu_w_1", "toolu_x"]


# -- Chat (new families) -------------------------------------------------------------------------


def chat_json(text: str) -> dict[str, Any]:
    return {
        "id": "c",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_chat_json_lift(text: str, calls: list, remaining: str) -> None:
    body = chat_json(text)
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    message = body["choices"][0]["message"]
    assert [(c["function"]["name"], orjson.loads(c["function"]["arguments"])) for c in message["tool_calls"]] == calls
    assert message["content"] == (remaining or None)
    assert body["choices"][0]["finish_reason"] == "tool_calls"


@pytest.mark.parametrize("text", NEGATIVE)
def test_chat_json_negative_is_unchanged(text: str) -> None:
    body = chat_json(text)
    before = orjson.dumps(body)
    CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before


def chat_sse(pieces: list[str]) -> bytes:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    out = [
        sse(
            None,
            {**head, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}]},
        )
    ]
    out += [
        sse(None, {**head, "choices": [{"index": 0, "delta": {"content": p}, "finish_reason": None}]}) for p in pieces
    ]
    out.append(sse(None, {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}))
    return b"".join(out) + b"data: [DONE]\n\n"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_chat_stream_lift(text: str, calls: list, remaining: str, seed: int) -> None:
    rnd = random.Random(seed)
    slots: dict[int, dict[str, str]] = {}
    finish = None
    for e in events(run_stream(CHAT, split_bytes(chat_sse(split_text(text, rnd)), rnd))):
        for choice in e["choices"]:
            for tc in choice["delta"].get("tool_calls") or ():
                slot = slots.setdefault(tc["index"], {"name": "", "arguments": ""})
                slot["name"] += tc.get("function", {}).get("name") or ""
                slot["arguments"] += tc.get("function", {}).get("arguments") or ""
            finish = choice.get("finish_reason") or finish
    assert [(s["name"], orjson.loads(s["arguments"])) for _, s in sorted(slots.items())] == calls
    assert finish == "tool_calls"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text", NEGATIVE)
def test_chat_stream_negative_is_byte_identical(text: str, seed: int) -> None:
    rnd = random.Random(seed)
    upstream = chat_sse(split_text(text, rnd))
    assert run_stream(CHAT, split_bytes(upstream, rnd)) == upstream


# -- Responses -----------------------------------------------------------------------------------


def responses_json(text: str) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "model": "m",
        "output": [
            {
                "id": "msg_1",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
    }


def responses_sse(pieces: list[str]) -> bytes:
    seq = iter(range(10_000))

    def ev(d: dict[str, Any]) -> bytes:
        return sse(d["type"], {**d, "sequence_number": next(seq)})

    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    text = "".join(pieces)
    part = {"type": "output_text", "text": text, "annotations": []}
    msg = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [part]}
    out = [
        ev({"type": "response.created", "response": resp}),
        ev(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**msg, "status": "in_progress", "content": []},
            }
        ),
        ev(
            {
                "type": "response.content_part.added",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "part": {**part, "text": ""},
            }
        ),
    ]
    out += [
        ev(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "delta": p,
                "logprobs": [],
            }
        )
        for p in pieces
    ]
    out += [
        ev(
            {
                "type": "response.output_text.done",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "text": text,
                "logprobs": [],
            }
        ),
        ev(
            {
                "type": "response.content_part.done",
                "item_id": "msg_1",
                "output_index": 0,
                "content_index": 0,
                "part": part,
            }
        ),
        ev({"type": "response.output_item.done", "output_index": 0, "item": msg}),
        ev({"type": "response.completed", "response": {**resp, "status": "completed", "output": [msg]}}),
    ]
    return b"".join(out)


def responses_view(data: bytes) -> dict[str, Any]:
    """What the openai SDK's stream accumulator sees: output items by output_index (which must
    be appended in order), sequence numbers contiguous, and the completed response."""
    output: list[dict[str, Any]] = []
    seqs = []
    completed = None
    for e in events(data):
        seqs.append(e["sequence_number"])
        if e["type"] == "response.output_item.added":
            assert e["output_index"] == len(output)
            output.append(dict(e["item"]))
        elif e["type"] == "response.output_text.delta":
            output[e["output_index"]].setdefault("_text", "")
            output[e["output_index"]]["_text"] += e["delta"]
        elif e["type"] == "response.function_call_arguments.delta":
            output[e["output_index"]]["arguments"] += e["delta"]
        elif e["type"] == "response.function_call_arguments.done":
            assert e["arguments"] == output[e["output_index"]]["arguments"]
        elif e["type"] == "response.output_item.done":
            output[e["output_index"]]["_done"] = e["item"]
        elif e["type"] == "response.completed":
            completed = e["response"]
    assert seqs == list(range(len(seqs)))
    calls = [(o["name"], orjson.loads(o["arguments"])) for o in output if o["type"] == "function_call"]
    assert completed is not None
    echo = [(o["name"], orjson.loads(o["arguments"])) for o in completed["output"] if o["type"] == "function_call"]
    assert echo == calls
    assert [o["call_id"] for o in completed["output"] if o["type"] == "function_call"] == [
        o["call_id"] for o in output if o["type"] == "function_call"
    ]
    text = "".join(o.get("_text", "") for o in output if o["type"] == "message")
    return {"calls": calls, "text": text}


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_responses_json_lift(text: str, calls: list, remaining: str) -> None:
    body = responses_json(text)
    assert RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert [(o["name"], orjson.loads(o["arguments"])) for o in body["output"] if o["type"] == "function_call"] == calls
    assert all(o["call_id"] and o["id"].startswith("fc_") for o in body["output"] if o["type"] == "function_call")
    messages = [o for o in body["output"] if o["type"] == "message"]
    assert "".join(p["text"] for m in messages for p in m["content"]) == remaining


@pytest.mark.parametrize("text", NEGATIVE)
def test_responses_json_negative_is_unchanged(text: str) -> None:
    body = responses_json(text)
    before = orjson.dumps(body)
    RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_responses_stream_lift(text: str, calls: list, remaining: str, seed: int) -> None:
    rnd = random.Random(seed)
    view = responses_view(run_stream(RESPONSES, split_bytes(responses_sse(split_text(text, rnd)), rnd)))
    assert view["calls"] == calls
    assert view["text"].strip() == remaining.strip()


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text", NEGATIVE)
def test_responses_stream_negative_is_byte_identical(text: str, seed: int) -> None:
    rnd = random.Random(seed)
    upstream = responses_sse(split_text(text, rnd))
    assert run_stream(RESPONSES, split_bytes(upstream, rnd)) == upstream


def test_responses_parallel_item_becomes_its_calls() -> None:
    wrapper = {
        "tool_uses": [
            {"recipient_name": "functions.read_file", "parameters": {"path": "README.md"}},
            {"recipient_name": "square_the_number", "parameters": {"input_num": 1024}},
        ]
    }
    body = {
        "id": "r",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_w",
                "name": "multi_tool_use.parallel",
                "arguments": orjson.dumps(wrapper).decode(),
                "status": "completed",
            }
        ],
    }
    assert RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert [(o["call_id"], o["name"], orjson.loads(o["arguments"])) for o in body["output"]] == [
        ("call_w_0", "read_file", {"path": "README.md"}),
        ("call_w_1", "square_the_number", {"input_num": 1024}),
    ]


# -- Gemini --------------------------------------------------------------------------------------


def gemini_json(text: str) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "modelVersion": "m",
    }


def gemini_sse(pieces: list[str]) -> bytes:
    out = []
    for i, p in enumerate(pieces):
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}
        if i == len(pieces) - 1:
            cand["finishReason"] = "STOP"
        out.append(sse(None, {"candidates": [cand], "modelVersion": "m", "usageMetadata": {"totalTokenCount": i}}))
    return b"".join(out)


def gemini_view(data: bytes) -> dict[str, Any]:
    text, calls, finish = "", [], None
    for e in events(data):
        for cand in e.get("candidates") or ():
            for part in cand.get("content", {}).get("parts") or ():
                if "text" in part:
                    text += part["text"]
                if "functionCall" in part:
                    calls.append((part["functionCall"]["name"], part["functionCall"]["args"]))
            finish = cand.get("finishReason") or finish
    return {"text": text, "calls": calls, "finish": finish}


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_gemini_json_lift(text: str, calls: list, remaining: str) -> None:
    body = gemini_json(text)
    assert GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    view = gemini_view(b"data: " + orjson.dumps(body) + b"\n\n")
    assert view == {"text": remaining, "calls": calls, "finish": "STOP"}


@pytest.mark.parametrize("text", NEGATIVE)
def test_gemini_json_negative_is_unchanged(text: str) -> None:
    body = gemini_json(text)
    before = orjson.dumps(body)
    GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_gemini_stream_lift(text: str, calls: list, remaining: str, seed: int) -> None:
    rnd = random.Random(seed)
    view = gemini_view(run_stream(GEMINI, split_bytes(gemini_sse(split_text(text, rnd)), rnd)))
    assert view["calls"] == calls
    assert view["text"].strip() == remaining.strip()
    assert view["finish"] == "STOP"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text", NEGATIVE)
def test_gemini_stream_negative_is_byte_identical(text: str, seed: int) -> None:
    rnd = random.Random(seed)
    upstream = gemini_sse(split_text(text, rnd))
    assert run_stream(GEMINI, split_bytes(upstream, rnd)) == upstream


def test_gemini_stream_prose_goes_out_at_once() -> None:
    upstream = gemini_sse(["Sure, ", "here: ", LLAMA[:6], LLAMA[6:]])
    rw = GEMINI.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    for event in SSEParser().feed(upstream):
        assert rw.feed(event.raw) == [event.raw]
    assert rw.finish() == []


def test_gemini_parallel_part_becomes_its_calls() -> None:
    wrapper = {
        "tool_uses": [
            {"recipient_name": "functions.read_file", "parameters": {"path": "README.md"}},
            {"recipient_name": "square_the_number", "parameters": {"input_num": 1024}},
        ]
    }
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [{"functionCall": {"name": "multi_tool_use.parallel", "args": wrapper}}],
                },
                "finishReason": "STOP",
            }
        ]
    }
    assert GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    assert gemini_view(b"data: " + orjson.dumps(body) + b"\n\n")["calls"] == [READ, SQUARE]


def test_responses_stream_parallel_item_becomes_its_calls_and_later_items_move_up() -> None:
    """A streamed wrapper goes out as one item per call; the item after it moves up one
    ``output_index``, every later event keeps ``sequence_number`` contiguous, and the
    ``response.completed`` echo shows the same items (what the openai SDK's accumulator checks)."""
    wrapper = {
        "tool_uses": [
            {"recipient_name": "functions.read_file", "parameters": {"path": "README.md"}},
            {"recipient_name": "square_the_number", "parameters": {"input_num": 1024}},
        ]
    }
    seq = iter(range(100))

    def ev(d: dict[str, Any]) -> bytes:
        return sse(d["type"], {**d, "sequence_number": next(seq)})

    w = {
        "type": "function_call",
        "id": "fc_w",
        "call_id": "call_w",
        "name": "multi_tool_use.parallel",
        "arguments": orjson.dumps(wrapper).decode(),
        "status": "completed",
    }
    x = {
        "type": "function_call",
        "id": "fc_x",
        "call_id": "call_x",
        "name": "read_file",
        "arguments": '{"path": "b"}',
        "status": "completed",
    }
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    events = [ev({"type": "response.created", "response": resp})]
    for k, item in enumerate((w, x)):
        events += [
            ev(
                {
                    "type": "response.output_item.added",
                    "output_index": k,
                    "item": {**item, "arguments": "", "status": "in_progress"},
                }
            ),
            ev(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": item["id"],
                    "output_index": k,
                    "delta": item["arguments"],
                }
            ),
            ev(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": item["id"],
                    "output_index": k,
                    "name": item["name"],
                    "arguments": item["arguments"],
                }
            ),
            ev({"type": "response.output_item.done", "output_index": k, "item": item}),
        ]
    events.append(ev({"type": "response.completed", "response": {**resp, "status": "completed", "output": [w, x]}}))
    out = run_stream(RESPONSES, split_bytes(b"".join(events), random.Random(3)))
    output: list[dict[str, Any]] = []
    seqs = []
    completed = None
    for e in events_of(out):
        seqs.append(e["sequence_number"])
        if e["type"] == "response.output_item.added":
            assert e["output_index"] == len(output)
            output.append(dict(e["item"]))
        elif e["type"] == "response.function_call_arguments.delta":
            output[e["output_index"]]["arguments"] += e["delta"]
        elif e["type"] == "response.completed":
            completed = e["response"]
    assert seqs == list(range(len(seqs)))
    want = [
        ("call_w_0", "read_file", {"path": "README.md"}),
        ("call_w_1", "square_the_number", {"input_num": 1024}),
        ("call_x", "read_file", {"path": "b"}),
    ]
    assert [(o["call_id"], o["name"], orjson.loads(o["arguments"])) for o in output] == want
    assert completed is not None
    assert [(o["call_id"], o["name"], orjson.loads(o["arguments"])) for o in completed["output"]] == want


def events_of(data: bytes) -> list[dict[str, Any]]:
    return events(data)


@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE[:3])
def test_responses_websocket_frames_lift(text: str, calls: list, remaining: str) -> None:
    """Codex's WebSocket transport: one JSON event per frame through ``on_unit``; the frames
    that come out assemble like the SSE events (contiguous output_index and sequence_number)."""
    from toolvocab.dialects.base import JSONFrame

    rw = RESPONSES.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    out = []
    for event in events(responses_sse(split_text(text, random.Random(5)))):
        out += rw.on_unit(JSONFrame(orjson.dumps(event)))
    out += rw.held_units()
    view = responses_view(b"".join(b"data: " + frame.raw + b"\n\n" for frame in out))
    assert view["calls"] == calls
    assert view["text"].strip() == remaining.strip()


# -- property: text that is not markup alone stays as sent, in every dialect ---------------------

import os  # noqa: E402

from hypothesis import HealthCheck  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

#: Hypothesis examples (``TOOLVOCAB_PROPERTY_EXAMPLES``; quick default 100).
EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100"))
FRAGMENTS = st.sampled_from(
    [
        " ",
        "\n",
        "`",
        "```json\n",
        "\n```",
        "ok",
        "<",
        ">",
        "</",
        "<tool_call>",
        "</tool_call>",
        "<function=read_file>",
        "</function>",
        '{"name": "read_file", "arguments": {"path": "x"}}',
        '{"path": "x"}',
        "<think>",
        "</think>",
        "<｜tool▁calls▁begin｜>",
        "<｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n",
        "<｜tool▁call▁end｜>",
        "<｜tool▁calls▁end｜>",
        "<|tool_calls_section_begin|>",
        "<|tool_calls_section_end|>",
        HERMES,
        LLAMA,
        DS,
        DS31,
        "调用",
    ]
)
FILLER = st.lists(FRAGMENTS, max_size=6).map("".join)
#: A letter at the very start of the text makes it prose at once; at the very end it cannot be
#: inside a closed block (closers end with ">"): either way the text is not markup alone.
LETTER = st.characters(whitelist_categories=("Lu", "Ll", "Lo"))


def _split_all(text: str, rnd: random.Random) -> dict[str, bytes]:
    pieces = split_text(text, rnd)
    return {
        "anthropic": anthropic_sse(pieces),
        "chat": chat_sse(pieces),
        "responses": responses_sse(pieces),
        "gemini": gemini_sse(pieces),
        "gemini-array": gemini_array(pieces),
    }


STREAM_DIALECTS = {
    "anthropic": ANTHROPIC,
    "chat": CHAT,
    "responses": RESPONSES,
    "gemini": GEMINI,
    "gemini-array": GEMINI,
}


@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    letter=LETTER,
    filler=FILLER,
    markup=st.sampled_from([HERMES, LLAMA, DS, DS31, XML, KIMI, THINK + HERMES]),
    letter_first=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_text_that_is_not_markup_alone_stays_as_sent_in_every_dialect(
    letter: str, filler: str, markup: str, letter_first: bool, seed: int
) -> None:
    text = letter + filler + markup if letter_first else markup + filler + letter
    assert textcalls.lift(text, context(Resolver()), lambda i: "x") is None
    for dialect, body in (
        ("anthropic", anthropic_json(text)),
        ("chat", chat_json(text)),
        ("responses", responses_json(text)),
        ("gemini", gemini_json(text)),
    ):
        before = orjson.dumps(body)
        STREAM_DIALECTS[dialect].rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
        assert orjson.dumps(body) == before, dialect
    rnd = random.Random(seed)
    for dialect, upstream in _split_all(text, rnd).items():
        assert run_stream(STREAM_DIALECTS[dialect], split_bytes(upstream, rnd)) == upstream, dialect


def gemini_array(pieces: list[str]) -> bytes:
    """``streamGenerateContent`` without ``alt``: one JSON array, elements pretty-printed."""
    chunks = []
    for i, p in enumerate(pieces):
        cand: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": p}]}, "index": 0}
        if i == len(pieces) - 1:
            cand["finishReason"] = "STOP"
        chunks.append({"candidates": [cand], "modelVersion": "m"})
    return ("[" + ",\r\n".join(orjson.dumps(c, option=orjson.OPT_INDENT_2).decode() for c in chunks) + "]").encode()


def gemini_array_view(data: bytes) -> dict[str, Any]:
    body = orjson.loads(data)  # the whole array must still be valid JSON
    return gemini_view(b"".join(b"data: " + orjson.dumps(e) + b"\n\n" for e in body))


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_gemini_array_stream_lift(text: str, calls: list, remaining: str, seed: int) -> None:
    rnd = random.Random(seed)
    view = gemini_array_view(run_stream(GEMINI, split_bytes(gemini_array(split_text(text, rnd)), rnd)))
    assert view["calls"] == calls
    assert view["text"].strip() == remaining.strip()
    assert view["finish"] == "STOP"


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("text", NEGATIVE)
def test_gemini_array_stream_negative_is_byte_identical(text: str, seed: int) -> None:
    rnd = random.Random(seed)
    upstream = gemini_array(split_text(text, rnd))
    assert run_stream(GEMINI, split_bytes(upstream, rnd)) == upstream


@pytest.mark.parametrize("cut", ["<", "</", "</th", "</think"])
def test_anthropic_stream_long_reasoning_lead_then_markup(cut: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Deltas inside an open reasoning block that cannot close it go out unparsed; the closing
    tag split across two deltas (``cut`` | rest) is still seen, and the markup after it lifts."""
    from toolvocab.dialects.sse import SSEEvent

    parsed: list[bytes] = []
    real_json = SSEEvent.json

    def counting(self: SSEEvent) -> object:
        parsed.append(self.raw)
        return real_json(self)

    monkeypatch.setattr(SSEEvent, "json", counting)
    reasoning = ["<think>\n"] + [f"step {i}: look at src/a{i}.py\\n " for i in range(50)] + ["done" + cut]
    rest = "</think>"[len(cut) :] + "\n" + HERMES
    upstream = anthropic_sse(reasoning + [rest])
    rw = ANTHROPIC.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    events_in = SSEParser().feed(upstream)
    out = b""
    for event in events_in:
        got = rw.feed(event.raw)
        if b"step " in event.raw:
            assert got == [event.raw]  # no delay inside the reasoning block
        out += b"".join(got)
    out += b"".join(rw.finish())
    read_by_the_rewriter = sum(b"step " in raw for raw in parsed if b"text_delta" in raw)
    view = anthropic_view(out)
    assert view["calls"] == [READ]
    # The reasoning stays whole; the whitespace after it, in the held delta, goes with the markup.
    assert view["text"] == "".join(reasoning) + "</think>"[len(cut) :]
    assert read_by_the_rewriter <= 1, read_by_the_rewriter  # the one right after "<think>" (a "<" is near)
    assert view["stop_reason"] == "tool_use"


# -- an answer cut off is never lifted -------------------------------------------------------------
# Markup at a token-limit stop, or in a stream that ended before its answer did, may be the start of
# more (prose, another call): it reaches the client as the text it was.


def test_chat_json_at_the_token_limit_is_not_lifted() -> None:
    body = chat_json(HERMES)
    body["choices"][0]["finish_reason"] = "length"
    before = orjson.dumps(body)
    assert (
        CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        and orjson.dumps(body) == before
    )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("ending", ["length", "no-finish-reason", "no-done"])
def test_chat_stream_cut_off_is_not_lifted(seed: int, ending: str) -> None:
    rnd = random.Random(seed)
    data = chat_sse(split_text(HERMES, rnd))
    if ending == "length":
        data = data.replace(b'"finish_reason":"stop"', b'"finish_reason":"length"')
    elif ending == "no-finish-reason":
        data = data.replace(b',"finish_reason":"stop"', b',"finish_reason":null')
    else:
        data = data[
            : data.index(
                b'data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"stop"'
            )
        ]
    assert run_stream(CHAT, split_bytes(data, rnd)) == data


def test_anthropic_at_max_tokens_is_not_lifted() -> None:
    body = anthropic_json(HERMES)
    body["stop_reason"] = "max_tokens"
    before = orjson.dumps(body)
    assert (
        ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        and orjson.dumps(body) == before
    )
    data = anthropic_sse([HERMES]).replace(b'"stop_reason":"end_turn"', b'"stop_reason":"max_tokens"')
    assert run_stream(ANTHROPIC, split_bytes(data, random.Random(1))) == data


def test_responses_incomplete_is_not_lifted() -> None:
    body = responses_json(HERMES)
    body["status"] = "incomplete"
    before = orjson.dumps(body)
    assert (
        RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        and orjson.dumps(body) == before
    )
    data = (
        responses_sse([HERMES])
        .replace(b"response.completed", b"response.incomplete")
        .replace(b'"status":"completed"}', b'"status":"incomplete"}')
    )
    assert run_stream(RESPONSES, split_bytes(data, random.Random(2))) == data


def test_gemini_at_max_tokens_is_not_lifted() -> None:
    body = gemini_json(HERMES)
    body["candidates"][0]["finishReason"] = "MAX_TOKENS"
    before = orjson.dumps(body)
    assert (
        GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        and orjson.dumps(body) == before
    )
    data = gemini_sse(split_text(HERMES, random.Random(3))).replace(
        b'"finishReason":"STOP"', b'"finishReason":"MAX_TOKENS"'
    )
    assert run_stream(GEMINI, split_bytes(data, random.Random(3))) == data


# -- only a natural end is lifted --------------------------------------------------------------------
# Any stop but the model ending its turn may have cut the text short or withheld what followed (a
# stop sequence, a content filter, a refusal, a paused turn, a safety stop): the markup stays text,
# whichever family it is, JSON and streamed. Harmony has no closing tag: only a natural end shows
# it was the whole answer.

ABNORMAL = {
    "openai_chat": ["content_filter", "length", "insufficient_system_resource"],
    "anthropic": ["stop_sequence", "refusal", "pause_turn", "max_tokens"],
    "gemini": ["SAFETY", "RECITATION", "OTHER", "BLOCKLIST", "MAX_TOKENS"],
}
FAMILIES = {"hermes": HERMES, "minimax": MINIMAX, "harmony": HARMONY_BARE, "dsml": DSML}


def _with_stop(dialect: str, text: str, stop: str) -> tuple[dict, bytes]:
    if dialect == "openai_chat":
        body = chat_json(text)
        body["choices"][0]["finish_reason"] = stop
        return body, chat_sse(split_text(text, random.Random(5))).replace(
            b'"finish_reason":"stop"', f'"finish_reason":"{stop}"'.encode()
        )
    if dialect == "anthropic":
        body = anthropic_json(text)
        body["stop_reason"] = stop
        return body, anthropic_sse([text[:7], text[7:]]).replace(
            b'"stop_reason":"end_turn"', f'"stop_reason":"{stop}"'.encode()
        )
    body = gemini_json(text)
    body["candidates"][0]["finishReason"] = stop
    return body, gemini_sse(split_text(text, random.Random(5))).replace(
        b'"finishReason":"STOP"', f'"finishReason":"{stop}"'.encode()
    )


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize(("dialect", "stop"), [(d, s) for d, stops in ABNORMAL.items() for s in stops])
def test_markup_at_a_stop_that_is_not_a_natural_end_is_never_lifted(dialect: str, stop: str, family: str) -> None:
    module = {"openai_chat": CHAT, "anthropic": ANTHROPIC, "gemini": GEMINI}[dialect]
    body, data = _with_stop(dialect, FAMILIES[family], stop)
    before = orjson.dumps(body)
    assert (
        module.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        and orjson.dumps(body) == before
    )
    assert stop.encode() in data
    assert run_stream(module, split_bytes(data, random.Random(4))) == data


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_responses_failed_is_never_lifted(family: str) -> None:
    body = responses_json(FAMILIES[family])
    body["status"] = "failed"
    before = orjson.dumps(body)
    assert (
        RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        and orjson.dumps(body) == before
    )
    data = (
        responses_sse([FAMILIES[family]])
        .replace(b"response.completed", b"response.failed")
        .replace(b'"status":"completed"}', b'"status":"failed"}')
    )
    assert run_stream(RESPONSES, split_bytes(data, random.Random(2))) == data


ODD_TYPES = [["end_turn"], {"reason": "stop"}, 1, None, True]


@pytest.mark.parametrize("value", ODD_TYPES, ids=repr)
@pytest.mark.parametrize("dialect", ["openai_chat", "anthropic", "gemini"])
def test_a_stop_reason_of_any_json_type_is_no_natural_end_and_never_raises(dialect: str, value: Any) -> None:
    # A mutated or odd server's stop reason (a list, an object, a number) is no natural end: the
    # text stays text, JSON and streamed, and nothing raises on the value's type.
    module = {"openai_chat": CHAT, "anthropic": ANTHROPIC, "gemini": GEMINI}[dialect]
    body, data = _with_stop(dialect, HERMES, "X")
    field = {"openai_chat": "finish_reason", "anthropic": "stop_reason", "gemini": "finishReason"}[dialect]
    where = body["choices"][0] if dialect == "openai_chat" else body["candidates"][0] if dialect == "gemini" else body
    where[field] = value
    before = orjson.dumps(body)
    assert (
        module.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
        and orjson.dumps(body) == before
    )
    data = data.replace(f'"{field}":"X"'.encode(), f'"{field}":'.encode() + orjson.dumps(value))
    assert run_stream(module, split_bytes(data, random.Random(6))) == data


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize(("text", "calls", "remaining"), POSITIVE)
def test_responses_stream_of_a_kept_answer_is_byte_identical_and_never_held(
    text: str, calls: list, remaining: str, seed: int
) -> None:
    """A response the upstream keeps (``store`` not false, a WebSocket turn): a later request
    may continue from it, so no call it never sent appears, and its text goes out as it comes
    (the markup's first delta is sent as soon as its event is whole); not kept, it is lifted."""
    import dataclasses

    rnd = random.Random(seed)
    upstream = responses_sse(split_text(text, rnd))
    first_delta = upstream.index(b"\n\n", upstream.index(b"response.output_text.delta")) + 2
    for stored in (True, False):
        rw = RESPONSES.stream_rewriter(dataclasses.replace(context(Resolver(), PLAN, flow_key=FLOW_KEY), stored=stored))
        head = b"".join(rw.feed(upstream[:first_delta]))
        assert head == upstream[:first_delta] or not stored, head[-200:]
        out = (
            head
            + b"".join(b"".join(rw.feed(c)) for c in split_bytes(upstream[first_delta:], rnd))
            + b"".join(rw.finish())
        )
        assert (out == upstream) is stored


STREAM_BUILDERS = {"anthropic": anthropic_sse, "chat": chat_sse, "responses": responses_sse, "gemini": gemini_sse}


@settings(max_examples=EXAMPLES, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dialect=st.sampled_from(sorted(STREAM_BUILDERS)),
    markup=st.sampled_from([HERMES, LLAMA, XML, KIMI]),
    cut=st.integers(1, 12),
    seed=st.integers(0, 2**16),
)
def test_markup_whose_next_text_event_is_not_json_is_never_lifted(
    dialect: str, markup: str, cut: int, seed: int
) -> None:
    # The event that is not JSON may hold the prose that makes the text more than markup (found
    # by an attack: Gemini and Responses lifted `rm -rf build` past "On second thought, do not").
    upstream = STREAM_BUILDERS[dialect]([markup, "\n\nOn second thought, do not run this."])
    blocks = upstream.split(b"\n\n")
    i = next(k for k, b in enumerate(blocks) if b"second thought" in b)
    blocks[i] = blocks[i][:-cut]  # cut off inside its data: not JSON
    broken = b"\n\n".join(blocks)
    rw = STREAM_DIALECTS[dialect].stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert drive(rw, split_bytes(broken, random.Random(seed))) == broken
    # the control: whole, the text is prose and stays; the markup alone is lifted
    assert run_stream(STREAM_DIALECTS[dialect], [upstream]) == upstream
    alone = STREAM_BUILDERS[dialect]([markup])
    assert run_stream(STREAM_DIALECTS[dialect], [alone]) != alone


# -- a request that names stop sequences: its answer may have ended at one ----------------------

CHAT_TOOLS = [
    {"type": "function", "function": {"name": "read_file", "parameters": SCHEMA_READ}},
]
GEMINI_TOOLS = [{"functionDeclarations": [{"name": "read_file", "parametersJsonSchema": SCHEMA_READ}]}]


def _through_hooks(
    dialect: str, stop: bool, stream: bool, peeked: bool, stop_key: str = "stop"
) -> tuple[bytes, dict[str, Any]]:
    """A request that declares ``read_file`` (naming a stop sequence when ``stop``) through the
    real hooks, as plain mitmdump runs them when ``peeked``; its answer is :data:`HERMES` alone,
    ended the way a stop sequence ends it. What the client got, and the record."""
    import harness

    if dialect == "chat":
        body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": CHAT_TOOLS}
        if stop:
            body[stop_key] = ["\n\nUser:"] if stop_key == "stop" else [151645]
        host, path = "api.openai.com", "/v1/chat/completions"
        message = {"role": "assistant", "content": HERMES}
        if stream:
            body["stream"] = True
            upstream = sse(None, {"choices": [{"index": 0, "delta": message}]}) + sse(
                None, {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
            )
        else:
            upstream = orjson.dumps({"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]})
    else:
        body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": GEMINI_TOOLS}
        if stop:
            body["generationConfig"] = {"stopSequences": ["\n\nUser:"]}
        host = "generativelanguage.googleapis.com"
        method = "streamGenerateContent?alt=sse" if stream else "generateContent"
        path = f"/v1beta/models/gemini-2.5-pro:{method}"
        answer = {"candidates": [{"content": {"role": "model", "parts": [{"text": HERMES}]}, "finishReason": "STOP"}]}
        upstream = sse(None, answer) if stream else orjson.dumps(answer)
    ctype = "text/event-stream" if stream else "application/json"
    with harness.script_context() as (tctx, module):
        e = harness.Env(tctx, module)
        e.configure(**harness.DEFAULTS)
        if peeked:
            harness.addon(module, "ToolVocabRecorder").saves_bodies = lambda: False
        f = harness.make_flow(body, host=host, path=path, upstream=upstream, resp_type=ctype)
        got = harness.replay(e, f, seed=1)
    return got.out, f.metadata["toolvocab"]


@pytest.mark.parametrize("peeked", [False, True])
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("dialect", ["chat", "gemini"])
def test_markup_in_an_answer_a_stop_sequence_may_have_cut_is_never_lifted(dialect: str, stream: bool, peeked: bool):
    """Chat reports an end at one of the request's ``stop`` sequences as ``finish_reason``
    ``stop``, Gemini at one of its ``stopSequences`` as ``STOP``: the same as a natural end, so
    the text may have been cut there (a call cut before an argument the model meant to give).
    With stop sequences in the request the markup stays text; without, it is lifted."""
    out, record = _through_hooks(dialect, stop=True, stream=stream, peeked=peeked)
    assert b"<tool_call>" in out and not record.get("decisions"), out
    out, record = _through_hooks(dialect, stop=False, stream=stream, peeked=peeked)
    assert [d["target"] for d in record["decisions"]] == ["read_file"], out


@pytest.mark.parametrize("peeked", [False, True])
@pytest.mark.parametrize("stream", [False, True])
def test_markup_in_an_answer_a_stop_token_may_have_cut_is_never_lifted(stream: bool, peeked: bool):
    """vLLM's ``stop_token_ids`` (an extra parameter of its OpenAI-compatible server) end an
    answer with ``finish_reason`` ``stop`` too."""
    out, record = _through_hooks("chat", stop=True, stream=stream, peeked=peeked, stop_key="stop_token_ids")
    assert b"<tool_call>" in out and not record.get("decisions"), out


@pytest.mark.parametrize("peeked", [False, True])
@pytest.mark.parametrize("dialect", ["anthropic", "responses"])
def test_markup_after_a_stop_a_compatible_server_calls_natural_is_never_lifted(dialect: str, peeked: bool):
    """Messages-compatible servers in front of open models (vLLM's ``/v1/messages``) report an
    end at one of ``stop_sequences`` as ``end_turn``; vLLM's ``/v1/responses`` takes ``stop`` and
    reports ``completed``. A request naming them has no text lifted; without them it is."""
    import harness

    def run(stop: bool) -> tuple[bytes, dict[str, Any]]:
        if dialect == "anthropic":
            tools: list[dict[str, Any]] = [{"name": "read_file", "input_schema": SCHEMA_READ}]
            body: dict[str, Any] = {"model": "m", "max_tokens": 9, "messages": [{"role": "user", "content": "x"}]}
            body["tools"] = tools
            if stop:
                body["stop_sequences"] = ["\n\nHuman:"]
            path = "/v1/messages"
            host = "api.anthropic.com"
            answer = {"type": "message", "role": "assistant", "content": [{"type": "text", "text": HERMES}]}
            answer["stop_reason"] = "end_turn"
        else:
            body = {"model": "m", "store": False, "input": "x"}
            body["tools"] = [{"type": "function", "name": "read_file", "parameters": SCHEMA_READ}]
            if stop:
                body["stop"] = ["\nDone"]
            path, host = "/v1/responses", "api.openai.com"
            text = {"type": "output_text", "text": HERMES, "annotations": []}
            message = {"type": "message", "id": "m1", "role": "assistant", "status": "completed", "content": [text]}
            answer = {"id": "r1", "object": "response", "status": "completed", "output": [message]}
        with harness.script_context() as (tctx, module):
            e = harness.Env(tctx, module)
            e.configure(**harness.DEFAULTS)
            if peeked:
                harness.addon(module, "ToolVocabRecorder").saves_bodies = lambda: False
            f = harness.make_flow(body, host=host, path=path, upstream=orjson.dumps(answer))
            got = harness.replay(e, f, seed=1)
        return got.out, f.metadata["toolvocab"]

    out, record = run(stop=True)
    assert b"<tool_call>" in out and not record.get("decisions"), out
    out, record = run(stop=False)
    assert [d["target"] for d in record["decisions"]] == ["read_file"], out


# -- what makes markup prose: a cut-short end, a refusal, a citation, another call, text sent whole ---
# Each answer below holds markup that would lift alone; something else in it says the model did
# not mean it as a call (or may not have finished it): JSON and streamed, the answer goes as sent.


def _responses_end(data: bytes, kind: str, status: str | None) -> bytes:
    """``data`` (:func:`responses_sse`) ending with ``kind`` whose response has ``status``
    (``None``: no ``status`` key)."""
    data = data.replace(b"response.completed", kind.encode())
    new = b'"object":"response"' + (b',"status":"' + status.encode() + b'"' if status is not None else b"")
    assert data.count(b'"object":"response","status":"completed"') == 1
    return data.replace(b'"object":"response","status":"completed"', new)


@pytest.mark.parametrize(
    ("kind", "status"),
    [
        ("response.done", "incomplete"),
        ("response.done", "failed"),
        ("response.done", "cancelled"),
        ("response.done", None),
        ("response.completed", "incomplete"),
    ],
)
@pytest.mark.parametrize("seed", range(2))
def test_responses_stream_whose_end_says_it_stopped_short_is_never_lifted(kind: str, status: Any, seed: int) -> None:
    """The status of the response the terminal event carries counts, not only the event's type:
    ``response.done`` (the WebSocket transport's end) with ``incomplete`` may have cut the markup."""
    data = _responses_end(responses_sse(split_text(HERMES, random.Random(seed))), kind, status)
    assert run_stream(RESPONSES, split_bytes(data, random.Random(seed))) == data
    # the control: the same end with "completed" lifts
    lifted = _responses_end(responses_sse(split_text(HERMES, random.Random(seed))), kind, "completed")
    assert run_stream(RESPONSES, split_bytes(lifted, random.Random(seed))) != lifted


def test_chat_json_with_a_refusal_or_a_legacy_call_keeps_its_text() -> None:
    for extra in (
        {"refusal": "I will not run this; shown for reference."},
        {"function_call": {"name": "read_file", "arguments": "{}"}},
    ):
        body = chat_json(HERMES)
        body["choices"][0]["message"].update(extra)
        before = orjson.dumps(body)
        CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
        assert orjson.dumps(body) == before
    body = chat_json(HERMES)
    body["choices"][0]["message"]["refusal"] = None  # no refusal: the control lifts
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True


@pytest.mark.parametrize("where", ["before", "after"])
@pytest.mark.parametrize("seed", range(3))
def test_chat_stream_with_a_refusal_keeps_its_text(where: str, seed: int) -> None:
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    refusal = sse(
        None, {**head, "choices": [{"index": 0, "delta": {"refusal": "I will not run it."}, "finish_reason": None}]}
    )
    data = chat_sse(split_text(HERMES, random.Random(seed)))
    cut = data.index(b"data: ", 1) if where == "before" else data.rindex(b"data: ", 0, data.rindex(b"data: [DONE]"))
    data = data[:cut] + refusal + data[cut:]
    assert run_stream(CHAT, split_bytes(data, random.Random(seed))) == data


def test_responses_json_a_refusal_message_keeps_the_other_messages_text() -> None:
    body = responses_json(HERMES)
    refusal = {
        "id": "msg_0",
        "type": "message",
        "status": "completed",
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "I will not run it. For reference, it would be:"}],
    }
    body["output"].insert(0, refusal)
    before = orjson.dumps(body)
    RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before


def test_text_that_cites_a_source_is_never_lifted() -> None:
    body = anthropic_json(HERMES)
    body["content"][0]["citations"] = [
        {"type": "char_location", "cited_text": HERMES, "document_index": 0, "start_char_index": 0, "end_char_index": 9}
    ]
    before = orjson.dumps(body)
    assert ANTHROPIC.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is False
    assert orjson.dumps(body) == before
    body = responses_json(HERMES)
    body["output"][0]["content"][0]["annotations"] = [
        {"type": "file_citation", "file_id": "file-1", "filename": "runbook.md", "index": 0}
    ]
    before = orjson.dumps(body)
    RESPONSES.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before
    # streamed, the annotation only in the parts and the item at their ends
    cited = [{"type": "file_citation", "file_id": "file-1", "filename": "runbook.md", "index": 0}]
    data = responses_sse(split_text(HERMES, random.Random(1))).replace(
        b'"annotations":[]', b'"annotations":' + orjson.dumps(cited)
    )
    assert data.count(b"file_citation") >= 2
    assert run_stream(RESPONSES, split_bytes(data, random.Random(1))) == data


def _anthropic_two_blocks(first: dict[str, Any], markup: list[str]) -> bytes:
    """An Anthropic stream: block 0 as ``first`` (its text in its start, no delta), then a text
    block of ``markup`` deltas."""
    out = [
        sse(
            "message_start",
            {"type": "message_start", "message": {**anthropic_json(""), "content": [], "stop_reason": None}},
        ),
        sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": first}),
        sse("content_block_stop", {"type": "content_block_stop", "index": 0}),
        sse(
            "content_block_start",
            {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        ),
    ]
    out += [
        sse(
            "content_block_delta",
            {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": p}},
        )
        for p in markup
    ]
    out += [
        sse("content_block_stop", {"type": "content_block_stop", "index": 1}),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                "usage": {"output_tokens": 5},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]
    return b"".join(out)


@pytest.mark.parametrize("seed", range(3))
def test_anthropic_stream_a_block_sent_with_its_text_makes_later_markup_prose(seed: int) -> None:
    pieces = split_text(HERMES, random.Random(seed))
    data = _anthropic_two_blocks(
        {"type": "text", "text": "Here is the call I would make, but I will not run it:"}, pieces
    )
    assert run_stream(ANTHROPIC, split_bytes(data, random.Random(seed))) == data
    # the control: an empty first block leaves the markup the one text, and it lifts
    blank = _anthropic_two_blocks({"type": "text", "text": ""}, pieces)
    assert run_stream(ANTHROPIC, split_bytes(blank, random.Random(seed))) != blank


def _responses_two_messages(prose: str, markup: list[str], *, added_with_text: bool) -> bytes:
    """A Responses stream: message 0 holding ``prose`` sent whole (in its item at ``added`` when
    ``added_with_text``, else only in its ``done`` events: no delta), then message 1 of ``markup``
    deltas, then ``response.completed``."""
    seq = iter(range(10_000))

    def ev(d: dict[str, Any]) -> bytes:
        return sse(d["type"], {**d, "sequence_number": next(seq)})

    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    part0 = {"type": "output_text", "text": prose, "annotations": []}
    msg0 = {"id": "msg_0", "type": "message", "status": "completed", "role": "assistant", "content": [part0]}
    text = "".join(markup)
    part1 = {"type": "output_text", "text": text, "annotations": []}
    msg1 = {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [part1]}
    out = [
        ev({"type": "response.created", "response": resp}),
        ev(
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": msg0 if added_with_text else {**msg0, "status": "in_progress", "content": []},
            }
        ),
        ev(
            {
                "type": "response.output_text.done",
                "item_id": "msg_0",
                "output_index": 0,
                "content_index": 0,
                "text": prose,
                "logprobs": [],
            }
        ),
        ev(
            {
                "type": "response.content_part.done",
                "item_id": "msg_0",
                "output_index": 0,
                "content_index": 0,
                "part": part0,
            }
        ),
        ev({"type": "response.output_item.done", "output_index": 0, "item": msg0}),
        ev(
            {
                "type": "response.output_item.added",
                "output_index": 1,
                "item": {**msg1, "status": "in_progress", "content": []},
            }
        ),
        ev(
            {
                "type": "response.content_part.added",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "part": {**part1, "text": ""},
            }
        ),
    ]
    out += [
        ev(
            {
                "type": "response.output_text.delta",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "delta": p,
                "logprobs": [],
            }
        )
        for p in markup
    ]
    out += [
        ev(
            {
                "type": "response.output_text.done",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "text": text,
                "logprobs": [],
            }
        ),
        ev(
            {
                "type": "response.content_part.done",
                "item_id": "msg_1",
                "output_index": 1,
                "content_index": 0,
                "part": part1,
            }
        ),
        ev({"type": "response.output_item.done", "output_index": 1, "item": msg1}),
        ev({"type": "response.completed", "response": {**resp, "status": "completed", "output": [msg0, msg1]}}),
    ]
    return b"".join(out)


@pytest.mark.parametrize("added_with_text", [True, False])
@pytest.mark.parametrize("seed", range(3))
def test_responses_stream_a_message_sent_whole_makes_later_markup_prose(added_with_text: bool, seed: int) -> None:
    pieces = split_text(HERMES, random.Random(seed))
    data = _responses_two_messages(
        "Here is the call I would make, but I will not run it:", pieces, added_with_text=added_with_text
    )
    assert run_stream(RESPONSES, split_bytes(data, random.Random(seed))) == data
    # the control: a blank first message, its text in deltas only, leaves the markup the one text,
    # and it lifts (added with content, even blank, its deltas are not watched: nothing lifts)
    blank = _responses_two_messages(" ", pieces, added_with_text=False)
    assert run_stream(RESPONSES, split_bytes(blank, random.Random(seed))) != blank


def test_a_models_id_used_twice_in_lifted_markup_gives_each_call_its_own() -> None:
    second = KIMI.replace("README.md", "NOTES.md")
    body = chat_json(KIMI + "\n" + second)
    assert CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY)) is True
    calls = body["choices"][0]["message"]["tool_calls"]
    assert [orjson.loads(c["function"]["arguments"]) for c in calls] == [{"path": "README.md"}, {"path": "NOTES.md"}]
    assert calls[0]["id"] == "functions.read_file:0" and calls[1]["id"] != calls[0]["id"]


# -- a request that limits the calls: nothing is lifted -------------------------------------------
# tool_choice "none" (or one named tool, an allowed list): a call made out of text might be one the
# client ruled out for this answer, and the upstream, told so, made no call. Read from the request
# by each dialect (Dialect.limits_calls), JSON and streamed.

LIMITS = [
    ("anthropic", {"tool_choice": {"type": "none"}}, True),
    ("anthropic", {"tool_choice": {"type": "tool", "name": "read_file"}}, True),
    ("anthropic", {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}}, True),  # one call at most
    ("anthropic", {"tool_choice": {"type": "any", "disable_parallel_tool_use": False}}, False),
    ("anthropic", {"tool_choice": {"type": "any"}}, False),
    ("anthropic", {}, False),
    ("openai_chat", {"tool_choice": "none"}, True),
    ("openai_chat", {"tool_choice": {"type": "function", "function": {"name": "read_file"}}}, True),
    (
        "openai_chat",
        {"tool_choice": {"type": "allowed_tools", "allowed_tools": {"mode": "auto", "tools": []}}},
        True,
    ),
    ("openai_chat", {"function_call": "none"}, True),
    ("openai_chat", {"tool_choice": "required", "function_call": "auto"}, False),
    ("openai_chat", {"tool_choice": "any"}, False),  # Mistral's "required"
    ("openai_chat", {"tool_choice": None}, False),
    ("openai_chat", {"parallel_tool_calls": False}, True),
    ("openai_chat", {"parallel_tool_calls": True}, False),
    ("openai_responses", {"parallel_tool_calls": False}, True),
    ("openai_responses", {"function_call": "none"}, False),  # Chat's legacy key: Responses has none
    ("openai_responses", {"tool_choice": "none"}, True),
    ("openai_responses", {"tool_choice": {"type": "file_search"}}, True),
    ("openai_responses", {"tool_choice": "auto"}, False),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}, True),
    ("gemini", {"tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["x"]}}}, True),
    ("gemini", {"request": {"contents": [], "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}}, True),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, False),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": "VALIDATED"}}}, False),
    ("gemini", {}, False),
]
MODULES = {"anthropic": ANTHROPIC, "openai_chat": CHAT, "openai_responses": RESPONSES, "gemini": GEMINI}


@pytest.mark.parametrize(("dialect", "body", "limited"), LIMITS)
def test_which_tool_choices_limit_the_calls(dialect: str, body: dict[str, Any], limited: bool) -> None:
    assert MODULES[dialect].limits_calls(body) is limited


def _answers(dialect: str) -> tuple[dict[str, Any], bytes]:
    pieces = split_text(HERMES, random.Random(7))
    return {
        "anthropic": (anthropic_json(HERMES), anthropic_sse(pieces)),
        "openai_chat": (chat_json(HERMES), chat_sse(pieces)),
        "openai_responses": (responses_json(HERMES), responses_sse(pieces)),
        "gemini": (gemini_json(HERMES), gemini_sse(pieces)),
    }[dialect]


@pytest.mark.parametrize("dialect", sorted(MODULES))
def test_markup_is_never_lifted_when_the_request_limits_the_calls(dialect: str) -> None:
    import dataclasses

    module = MODULES[dialect]
    for limited in (True, False):
        flow = dataclasses.replace(context(Resolver(), PLAN, flow_key=FLOW_KEY), limited=limited)
        body, data = _answers(dialect)
        before = orjson.dumps(body)
        module.rewrite_response(body, flow)
        rw = module.stream_rewriter(dataclasses.replace(context(Resolver(), PLAN, flow_key=FLOW_KEY), limited=limited))
        out = drive(rw, split_bytes(data, random.Random(3)))
        # limited: as sent; not limited (the control): lifted
        assert (orjson.dumps(body) == before) is limited
        assert (out == data) is limited


def test_chat_text_that_cites_a_source_is_never_lifted() -> None:
    cited = [
        {"type": "url_citation", "url_citation": {"url": "https://x.test/runbook", "start_index": 0, "end_index": 9}}
    ]
    body = chat_json(HERMES)
    body["choices"][0]["message"]["annotations"] = cited
    before = orjson.dumps(body)
    CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before
    for refusal in (False, 0, [], {}):  # a refusal of any other JSON type than null or "" counts too
        body = chat_json(HERMES)
        body["choices"][0]["message"]["refusal"] = refusal
        before = orjson.dumps(body)
        CHAT.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
        assert orjson.dumps(body) == before
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    note = sse(None, {**head, "choices": [{"index": 0, "delta": {"annotations": cited}, "finish_reason": None}]})
    data = chat_sse(split_text(HERMES, random.Random(2)))
    cut = data.rindex(b"data: ", 0, data.rindex(b"data: [DONE]"))
    data = data[:cut] + note + data[cut:]
    assert run_stream(CHAT, split_bytes(data, random.Random(2))) == data


@pytest.mark.parametrize("key", ["citationMetadata", "groundingMetadata", "citation_metadata"])
@pytest.mark.parametrize("seed", range(2))
def test_gemini_text_that_cites_a_source_is_never_lifted(key: str, seed: int) -> None:
    meta = {"citationSources": [{"startIndex": 0, "endIndex": 9, "uri": "https://x.test/runbook"}]}
    body = gemini_json(HERMES)
    body["candidates"][0][key] = meta
    before = orjson.dumps(body)
    GEMINI.rewrite_response(body, context(Resolver(), PLAN, flow_key=FLOW_KEY))
    assert orjson.dumps(body) == before
    data = gemini_sse(split_text(HERMES, random.Random(seed)))
    marked = data.replace(
        b'"finishReason":"STOP"', b'"finishReason":"STOP","' + key.encode() + b'":' + orjson.dumps(meta)
    )
    assert marked != data
    assert run_stream(GEMINI, split_bytes(marked, random.Random(seed))) == marked
    assert run_stream(GEMINI, split_bytes(data, random.Random(seed))) != data  # the control lifts


@pytest.mark.parametrize("start", ["\n", " ", "Here is the call I would make:"])
@pytest.mark.parametrize("seed", range(2))
def test_anthropic_stream_a_block_whose_start_has_text_is_never_the_lifted_one(start: str, seed: int) -> None:
    # its deltas are not watched: they may say "I will not run this", which the JSON path reads
    first = {"type": "text", "text": start}
    data = _anthropic_two_blocks(first, split_text(HERMES, random.Random(seed)))
    assert run_stream(ANTHROPIC, split_bytes(data, random.Random(seed))) == data
    cited = {"type": "text", "text": "", "citations": [{"type": "char_location", "cited_text": "x"}]}
    data = _anthropic_two_blocks(cited, split_text(HERMES, random.Random(seed)))
    assert run_stream(ANTHROPIC, split_bytes(data, random.Random(seed))) == data


@pytest.mark.parametrize("seed", range(2))
def test_responses_stream_a_message_added_with_a_blank_part_is_never_the_lifted_one(seed: int) -> None:
    # added with content (a blank part), so its text is not watched: what it goes on to say (here
    # only in its done events) may make the other message's markup prose, as the JSON path reads it
    prose = "I will not run this destructive command. For reference only:"
    data = _responses_two_messages(prose, split_text(HERMES, random.Random(seed)), added_with_text=True)
    added = orjson.dumps({"type": "output_text", "text": prose, "annotations": []})
    assert data.count(added) >= 1
    first_added = data.index(added)
    data = data[:first_added] + data[first_added:].replace(
        added, orjson.dumps({"type": "output_text", "text": "", "annotations": []}), 1
    )
    assert run_stream(RESPONSES, split_bytes(data, random.Random(seed))) == data


@pytest.mark.parametrize("seed", range(3))
def test_responses_stream_a_keepalive_among_held_markup_goes_out(seed: int) -> None:
    # OpenAI sends {"type": "keepalive"} on a long stream: one held with the markup goes out once,
    # before the lifted items, every sequence number in order (responses_view checks them)
    data = responses_sse(split_text(HERMES, random.Random(seed)))
    at = data.index(b"event: response.output_text.done")
    beat = sse("keepalive", {"type": "keepalive", "sequence_number": 0})
    data = data[:at] + beat + data[at:]
    # renumber every event: the keep-alive took a place in the sequence
    events_in = [e for e in sse_events(data)]
    data = b"".join(sse(e.event, {**e.json(), "sequence_number": i}) for i, e in enumerate(events_in))
    out = run_stream(RESPONSES, split_bytes(data, random.Random(seed)))
    kinds = [e["type"] for e in events(out)]
    assert kinds.count("keepalive") == 1
    assert responses_view(out)["calls"] == [READ]


def test_responses_stream_an_annotation_without_its_index_keeps_the_text() -> None:
    # a server that leaves output_index out: the annotation is still the message's (by item_id)
    data = responses_sse(split_text(HERMES, random.Random(1)))
    at = data.index(b"event: response.output_text.done")
    note = sse(
        "response.output_text.annotation.added",
        {
            "type": "response.output_text.annotation.added",
            "item_id": "msg_1",
            "content_index": 0,
            "annotation_index": 0,
            "annotation": {"type": "url_citation", "url": "https://x.test/runbook", "start_index": 0, "end_index": 9},
            "sequence_number": 0,
        },
    )
    data = data[:at] + note + data[at:]
    events_in = [e for e in sse_events(data)]
    data = b"".join(sse(e.event, {**e.json(), "sequence_number": i}) for i, e in enumerate(events_in))
    assert run_stream(RESPONSES, split_bytes(data, random.Random(1))) == data


def test_responses_stream_a_keepalive_among_a_held_parallel_wrapper_goes_out() -> None:
    wrapper = {
        "tool_uses": [
            {"recipient_name": "functions.read_file", "parameters": {"path": "README.md"}},
            {"recipient_name": "square_the_number", "parameters": {"input_num": 1024}},
        ]
    }
    seq = iter(range(100))

    def ev(d: dict[str, Any]) -> bytes:
        return sse(d["type"], {**d, "sequence_number": next(seq)})

    w = {
        "type": "function_call",
        "id": "fc_w",
        "call_id": "call_w",
        "name": "multi_tool_use.parallel",
        "arguments": orjson.dumps(wrapper).decode(),
        "status": "completed",
    }
    resp = {"id": "resp_1", "object": "response", "status": "in_progress", "model": "m", "output": []}
    data = b"".join(
        [
            ev({"type": "response.created", "response": resp}),
            ev({"type": "response.output_item.added", "output_index": 0, "item": {**w, "arguments": ""}}),
            ev(
                {
                    "type": "response.function_call_arguments.delta",
                    "item_id": "fc_w",
                    "output_index": 0,
                    "delta": w["arguments"],
                }
            ),
            ev({"type": "keepalive"}),
            ev(
                {
                    "type": "response.function_call_arguments.done",
                    "item_id": "fc_w",
                    "output_index": 0,
                    "name": w["name"],
                    "arguments": w["arguments"],
                }
            ),
            ev({"type": "response.output_item.done", "output_index": 0, "item": w}),
            ev({"type": "response.completed", "response": {**resp, "status": "completed", "output": [w]}}),
        ]
    )
    out = run_stream(RESPONSES, split_bytes(data, random.Random(5)))
    got = events(out)
    assert [e["type"] for e in got].count("keepalive") == 1
    assert [e["sequence_number"] for e in got] == list(range(len(got)))
    assert [e["item"]["name"] for e in got if e["type"] == "response.output_item.done"] == [
        "read_file",
        "square_the_number",
    ]


@pytest.mark.parametrize(
    "after",
    [
        {
            "annotations": [
                {"type": "url_citation", "url_citation": {"url": "https://x.test", "start_index": 0, "end_index": 9}}
            ]
        },
        {"refusal": "I can't help run that."},
        {"content": "\n"},
    ],
    ids=["annotations", "refusal", "more-content"],
)
@pytest.mark.parametrize("seed", range(2))
def test_chat_stream_a_chunk_after_the_finish_that_says_prose_keeps_the_text(after: dict[str, Any], seed: int) -> None:
    # the JSON answer reads a refusal or a citation wherever it sits: the stream lifts only at its
    # end, and a chunk after the finish_reason that says one leaves the text as it came
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    usage = sse(None, {**head, "choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}})
    late = sse(None, {**head, "choices": [{"index": 0, "delta": after, "finish_reason": None}]})
    data = chat_sse(split_text(HERMES, random.Random(seed)))
    done = data.rindex(b"data: [DONE]")
    said = data[:done] + late + usage + data[done:]
    assert run_stream(CHAT, split_bytes(said, random.Random(seed))) == said
    # the control: only usage after the finish, and the markup is lifted (the usage chunk kept)
    plain = data[:done] + usage + data[done:]
    out = run_stream(CHAT, split_bytes(plain, random.Random(seed)))
    assert (
        out != plain
        and b'"tool_calls"' in out
        and b'"completion_tokens":2' in out
        and out.endswith(b"data: [DONE]\n\n")
    )


@pytest.mark.parametrize("dialect", sorted(MODULES))
@pytest.mark.parametrize("flag", ["limited", "stops"])
def test_markup_that_will_not_be_lifted_is_never_held(dialect: str, flag: str) -> None:
    # a request that limits the calls (or names stop sequences) lifts nothing: each event of the
    # answer goes out as soon as it is whole, no markup held to the end
    import dataclasses

    _, data = _answers(dialect)
    rw = MODULES[dialect].stream_rewriter(
        dataclasses.replace(context(Resolver(), PLAN, flow_key=FLOW_KEY), **{flag: True})
    )
    for event in sse_events(data):
        out = b"".join(rw.feed(event.raw))
        assert out == event.raw, (event.raw[:80], out[:80])
    assert b"".join(rw.finish()) == b""


@pytest.mark.parametrize("ending", [b"\n", b""], ids=["one-newline", "none"])
def test_chat_stream_an_unterminated_last_chunk_after_the_finish_keeps_the_text(ending: bytes) -> None:
    # the stream closes on a chunk without its blank line (no [DONE]): unread, it may be a refusal
    head = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    data = chat_sse(split_text(HERMES, random.Random(4)))
    body = data[: data.rindex(b"data: [DONE]")]
    late = b"data: " + orjson.dumps({**head, "choices": [{"index": 0, "delta": {"refusal": "No."}}]}) + ending
    assert run_stream(CHAT, split_bytes(body + late, random.Random(4))) == body + late
    # the control: the stream closes right after the finish chunk, and the markup is lifted
    assert b'"tool_calls"' in run_stream(CHAT, split_bytes(body, random.Random(4)))


@pytest.mark.parametrize(
    "tail",
    [
        b": keep-alive\n\n",  # a ping: a refusal may follow it, and pings would hold past every stall bound
        b"id: 7\n\n",
        b'data: {"error": {"message": "overloaded", "type": "server_error"}}\n\n',
        b'data: {"object": "error", "message": "CUDA out of memory", "code": 500}\n\n',  # vLLM's
        b'event: error\ndata: {"message": "overloaded"}\n\n',
        b'data: {"choices": [], "usage": {"total_tokens": 3}}\n\ndata: {"choices": [], "usage": {"total_tokens": 3}}\n\n',
    ],
    ids=["ping", "id-only", "error", "vllm-error", "error-event", "second-usage"],
)
def test_chat_stream_anything_but_the_usual_tail_after_the_finish_keeps_the_text(tail: bytes) -> None:
    data = chat_sse(split_text(HERMES, random.Random(6)))
    done = data.rindex(b"data: [DONE]")
    rw = CHAT.stream_rewriter(context(Resolver(), PLAN, flow_key=FLOW_KEY))
    out = b"".join(rw.feed(data[:done]))
    assert b'"tool_calls"' not in out  # held: the finish chunk waits for the stream's end
    out += b"".join(rw.feed(tail))  # the text goes out as it came at once: no hold past this event
    assert out == data[:done] + tail
    out += b"".join(rw.feed(data[done:])) + b"".join(rw.finish())
    assert out == data[:done] + tail + data[done:]


# -- which declared tools a call may be renamed to under the request's tool choice ---------------

ALLOWED = [
    ("anthropic", {}, None),
    ("anthropic", {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}}, None),
    ("anthropic", {"tool_choice": {"type": "none"}}, frozenset()),
    ("anthropic", {"tool_choice": {"type": "tool", "name": "read_file"}}, frozenset({"read_file"})),
    ("anthropic", {"tool_choice": "auto"}, frozenset()),  # not a shape the API takes
    ("openai_chat", {"tool_choice": "required", "parallel_tool_calls": False}, None),
    ("openai_chat", {"tool_choice": "none"}, frozenset()),
    ("openai_chat", {"tool_choice": "any"}, None),  # Mistral's "required"
    ("openai_chat", {"tool_choice": {"type": "function", "function": {"name": "read_file"}}}, frozenset({"read_file"})),
    (
        "openai_chat",
        {
            "tool_choice": {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "auto",
                    "tools": [
                        {"type": "function", "function": {"name": "a"}},
                        {"type": "custom", "custom": {"name": "b"}},
                    ],
                },
            }
        },
        frozenset({"a", "b"}),
    ),
    ("openai_chat", {"function_call": {"name": "a"}}, frozenset({"a"})),
    ("openai_chat", {"function_call": "none", "tool_choice": "auto"}, frozenset()),
    ("openai_responses", {"tool_choice": {"type": "function", "name": "a"}}, frozenset({"a"})),
    (
        "openai_responses",
        {"tool_choice": {"type": "allowed_tools", "mode": "required", "tools": [{"type": "function", "name": "a"}]}},
        frozenset({"a"}),
    ),
    ("openai_responses", {"tool_choice": {"type": "file_search"}}, frozenset()),
    # a namespaced tool, as a flat name (the namespace joined in front)
    (
        "openai_responses",
        {"tool_choice": {"type": "function", "name": "create_issue", "namespace": "mcp__github__"}},
        frozenset({"mcp__github__create_issue"}),
    ),
    ("openai_responses", {"function_call": "none"}, None),  # Chat's legacy key: Responses has none
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}, frozenset()),
    (
        "gemini",
        {"tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": ["x"]}}},
        frozenset({"x"}),
    ),
    ("gemini", {"request": {"contents": [], "toolConfig": {"functionCallingConfig": {"mode": "NONE"}}}}, frozenset()),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}}, None),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": "SOMETIMES"}}}, frozenset()),
    # proto JSON takes an enum by number: 2 ANY, 1 AUTO, 3 NONE; true is no mode
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": 2}}}, None),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": 1}}}, None),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": 3}}}, frozenset()),
    ("gemini", {"toolConfig": {"functionCallingConfig": {"mode": True}}}, frozenset()),
    ("gemini", {}, None),
]


@pytest.mark.parametrize(("dialect", "body", "allowed"), ALLOWED)
def test_which_tools_the_tool_choice_lets_a_call_name(dialect: str, body: dict[str, Any], allowed: Any) -> None:
    assert MODULES[dialect].allowed_names(body) == allowed


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("framing", ["array", "sse"])
def test_gemini_a_held_chunk_without_content_goes_out_as_it_came_and_the_text_lifts(framing: str, seed: int) -> None:
    """Between two pieces of markup a chunk whose candidate has no ``content`` (safety ratings
    only): it holds none of the text, so it goes out as it came, and the markup lifts (was: the
    array stream's lift raised ``KeyError('content')`` and the rest passed unread; the event
    stream dropped the chunk)."""
    rnd = random.Random(seed)
    first, second = HERMES[:20], HERMES[20:]
    middle = {"candidates": [{"index": 0, "safetyRatings": [{"category": "X", "probability": "NEGLIGIBLE"}]}]}
    pieces = [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": first}]}, "index": 0}], "modelVersion": "m"},
        middle,
        {
            "candidates": [
                {"content": {"role": "model", "parts": [{"text": second}]}, "finishReason": "STOP", "index": 0}
            ],
            "modelVersion": "m",
        },
    ]
    if framing == "array":
        upstream = ("[" + ",\n".join(orjson.dumps(p).decode() for p in pieces) + "]").encode()
        out = run_stream(GEMINI, split_bytes(upstream, rnd))
        view, elements = gemini_array_view(out), orjson.loads(out)
    else:
        upstream = b"".join(sse(None, p) for p in pieces)
        out = run_stream(GEMINI, split_bytes(upstream, rnd))
        view, elements = gemini_view(out), events(out)
    assert view["calls"] == [("read_file", {"path": "README.md"})]
    assert middle in elements


@pytest.mark.parametrize("seed", range(6))
def test_gemini_array_stream_behind_a_byte_order_mark_is_read(seed: int) -> None:
    """A JSON-array stream that begins with a byte order mark (a client's JSON reader skips it),
    split anywhere, the mark's own bytes too: read as an array, the markup lifted, the mark kept
    in front (was: taken for an event stream, no element read)."""
    rnd = random.Random(seed)
    upstream = b"\xef\xbb\xbf" + gemini_array(split_text(HERMES, rnd))
    out = run_stream(GEMINI, split_bytes(upstream, rnd))
    assert out.startswith(b"\xef\xbb\xbf")
    assert gemini_array_view(out[3:])["calls"] == [("read_file", {"path": "README.md"})]


@pytest.mark.parametrize("limited", [True, False])
def test_a_parallel_wrapper_is_expanded_only_when_the_tool_choice_allows_several_calls(limited: bool) -> None:
    """``multi_tool_use.parallel`` wrapping a declared tool's call: under a tool choice that
    limits the calls (``none``, one named tool, an allowed list, at most one call) it stays whole
    (was: expanded into the wrapped call, an exact name counting as kept, so ``tool_choice:
    "none"`` still handed the client ``Bash {"command": "rm -rf build"}``); the control expands."""
    import dataclasses

    wrapped = {"tool_uses": [{"recipient_name": "read_file", "parameters": {"path": "README.md"}}]}
    call = {
        "id": "call_w",
        "type": "function",
        "function": {"name": "multi_tool_use.parallel", "arguments": orjson.dumps(wrapped).decode()},
    }
    body = {
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant", "tool_calls": [call]}}]
    }
    before = orjson.dumps(body)
    flow = dataclasses.replace(context(Resolver(), PLAN, flow_key=FLOW_KEY), limited=limited)
    CHAT.rewrite_response(body, flow)
    names = [c["function"]["name"] for c in body["choices"][0]["message"]["tool_calls"]]
    assert (orjson.dumps(body) == before) is limited
    assert names == (["multi_tool_use.parallel"] if limited else ["read_file"])
