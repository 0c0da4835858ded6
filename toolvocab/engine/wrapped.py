"""Tool calls that arrive wrapped: OpenAI's ``multi_tool_use.parallel`` and calls left in text.

Shapes models leak (bug reports BR-08, BR-23, BR-24):

- ``multi_tool_use.parallel`` with ``{"tool_uses": [{"recipient_name": "functions.X",
  "parameters": {...}}, ...]}`` (vercel/ai#1922): N calls in one wrapper;
- Qwen3-Coder's XML left in text (vllm-project/vllm#21571): ``<tool_call>
  <function=NAME> <parameter=P> VALUE [</parameter>] [</function>] </tool_call>``;
- Hermes / Qwen2.5 JSON in the same wrapper (the Hermes 2 Pro function-calling format, which
  Qwen2.5's and Qwen3's chat templates use): ``<tool_call>\n{"name": NAME, "arguments":
  {...}}\n</tool_call>``;
- Kimi K2's markers (cline/cline#12979):
  ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>
  {json}<|tool_call_end|><|tool_calls_section_end|>``;
- Llama 3.1 / Functionary v3.1 (Meta's Llama 3.1 prompt format for user-defined tools; MeetKai
  functionary-v3.1's template): ``<function=NAME>{json}</function>``;
- DeepSeek V3 / R1 (the ``chat_template`` of deepseek-ai/DeepSeek-V3 and DeepSeek-R1,
  ``tokenizer_config.json``; markers spelled with U+FF5C FULLWIDTH VERTICAL LINE and U+2581 LOWER
  ONE EIGHTH BLOCK): ``<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME\n
  ```json\n{json}\n```<｜tool▁call▁end｜>`` (further calls after ``\n``) ``<｜tool▁calls▁end｜>``;
- DeepSeek V3.1 (the ``chat_template`` of deepseek-ai/DeepSeek-V3.1; vLLM's ``deepseek_v31`` tool
  parser reads the same): the same section, each call ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}
  <｜tool▁call▁end｜>`` (no type, no fence).

- MiniMax M2 / M2.5 (MiniMax-AI/MiniMax-M2.5 ``docs/tool_calling_guide.md``, "Model Output
  Format"; MiniMax-AI/MiniMax-M2.5#10): ``<minimax:tool_call>\n<invoke name="NAME">\n<parameter
  name="KEY">VALUE</parameter>…</invoke>…</minimax:tool_call>``, values typed by the declared
  schema as in the Qwen3-Coder XML;
- DeepSeek V3.2 "DSML" (ochafik/minja PR #11; sglang's ``deepseekv32_detector.py``):
  ``<｜DSML｜function_calls>\n<｜DSML｜invoke name="NAME">\n<｜DSML｜parameter name="KEY"
  string="true|false">VALUE</｜DSML｜parameter>…</｜DSML｜invoke>…</｜DSML｜function_calls>``
  (U+FF5C bars); ``string="true"`` is the text itself, ``string="false"`` a JSON value;
- gpt-oss "harmony" (openai/harmony's format; raullenchai/Rapid-MLX#480, kekzl/imp#1716,
  ggml-org/llama.cpp PR #15158): ``[<|start|>assistant]<|channel|>commentary to=functions.NAME
  [<|constrain|>]json<|message|>{json}[<|call|>]``, or the same with its special tokens dropped by
  the server, ``commentary to=functions.NAME json{json}``; it has no closing tag, so it must be
  the whole rest of the text;
- Qwen3-Coder's XML whose ``<tool_call>`` opener the server consumed as a special token
  (ollama/ollama#16686, #18530): ``<function=NAME>\n<parameter=…>…</parameter>\n</function>``
  with or without the wrapper's ``</tool_call>`` after it: the function block is itself whole and
  closed (docs/never.md says why that is still nothing but markup).

Each is lifted into ordinary calls only when it is whole (and, for the XML and Kimi shapes, every
call names a declared tool and every XML parameter is declared); text is lifted only when it is
nothing but such markup (a leading reasoning block aside): anything else is left as it came. The
JSON shapes' names are checked by the caller (the ladder, :mod:`toolvocab.dialects.textcalls`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from typing import NamedTuple

from toolvocab.engine import jsonio
from toolvocab.engine.arguments import property_types
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.models import ToolCall

PARALLEL_WRAPPER = "multi_tool_use.parallel"


def unwrap_parallel(call: ToolCall) -> list[ToolCall] | None:
    """The calls inside a ``multi_tool_use.parallel`` wrapper, or ``None``.

    Sub-call ids are ``<wrapper id>_<i>`` (stable, distinct); names keep the model's spelling
    (``functions.search_joke``) for the ladder to resolve; arguments are the ``parameters``
    objects. ``None`` when ``call`` is not the wrapper or its arguments are not the documented
    shape.
    """
    if call.name.strip() != PARALLEL_WRAPPER or not isinstance(call.arguments, dict):
        return None
    uses = call.arguments.get("tool_uses")
    if not isinstance(uses, list) or not uses:
        return None
    out: list[ToolCall] = []
    base = call.id or "call"
    for i, use in enumerate(uses):
        if not isinstance(use, dict) or not isinstance(use.get("recipient_name"), str):
            return None
        params = use.get("parameters", {})
        if not isinstance(params, dict):
            return None
        out.append(ToolCall(name=use["recipient_name"], arguments=params, id=f"{base}_{i}"))
    return out


_XML_FUNCTION = re.compile(r"^<function=([^>\s]+)>\s*(.*?)\s*(?:</function>)?\s*$", re.DOTALL)
_XML_PARAM = re.compile(r"<parameter=([^>\s]+)>(.*?)(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
_KIMI_CALL = re.compile(
    r"<\|tool_call_begin\|>\s*(?P<id>[^<\s]+)\s*<\|tool_call_argument_begin\|>(?P<args>.*?)<\|tool_call_end\|>",
    re.DOTALL,
)
_KIMI_ID = re.compile(r"^(?:functions\.)?(?P<name>[^:]+)(?::\d+)?$")


def _typed(value: str, types: set[str]) -> tuple[bool, Any]:
    """Convert an XML parameter's text to the declared type; (ok, value).

    A string is the text with exactly one leading and one trailing newline removed (the template
    puts the value on its own lines; vLLM's qwen3coder tool parser reads it the same way): every
    other blank line, space and indent is content (a file's last newline, trailing spaces in an
    ``old_string``)."""
    text = value.strip()
    if not types or "string" in types:
        if value.startswith("\n"):
            value = value[1:]
        if value.endswith("\n"):
            value = value[:-1]
        return True, value
    if types & {"integer", "number", "boolean", "array", "object", "null"}:
        try:
            parsed = jsonio.loads_arguments(text.encode("utf-8"))
        except (ValueError, UnicodeEncodeError):
            return False, None
        return True, parsed
    return False, None


#: Reasoning blocks a model may open its text with (Qwen3, DeepSeek-R1 and Kimi chat templates
#: write ``<think>…</think>``; ``<thinking>`` is the other spelling models are prompted with).
REASONING_TAGS = (("<think>", "</think>"), ("<thinking>", "</thinking>"))
_XML_OPEN, _XML_CLOSE = "<tool_call>", "</tool_call>"
_KIMI_OPEN, _KIMI_CLOSE = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
_LLAMA_OPEN, _LLAMA_CLOSE = "<function=", "</function>"
_DS_OPEN, _DS_CLOSE = "<\uff5ctool\u2581calls\u2581begin\uff5c>", "<\uff5ctool\u2581calls\u2581end\uff5c>"
_DS_CALL = re.compile(
    "<\uff5ctool\u2581call\u2581begin\uff5c>function<\uff5ctool\u2581sep\uff5c>(?P<name>[^\\s<`]+)[ \\t]*\\n"
    "```json[ \\t]*\\n(?P<args>.*?)\\n?```\\s*<\uff5ctool\u2581call\u2581end\uff5c>",
    re.DOTALL,
)
_DS31_CALL = re.compile(
    "<\uff5ctool\u2581call\u2581begin\uff5c>(?P<name>[^\\s<`\uff5c]+)<\uff5ctool\u2581sep\uff5c>"
    "\\s*(?P<args>\\{.*?\\})\\s*<\uff5ctool\u2581call\u2581end\uff5c>",
    re.DOTALL,
)
_LLAMA_BODY = re.compile(r"^([^>\s]+)>\s*(\{.*\})\s*$", re.DOTALL)
_MM_OPEN, _MM_CLOSE = "<minimax:tool_call>", "</minimax:tool_call>"
_MM_INVOKE = re.compile(r'<invoke name="(?P<name>[^"<>\s]+)">(?P<body>.*?)</invoke>', re.DOTALL)
_MM_PARAM = re.compile(r'<parameter name="(?P<key>[^"<>\s]+)">(?P<value>.*?)</parameter>', re.DOTALL)
_DSML = "\uff5cDSML\uff5c"
_DSML_OPEN, _DSML_CLOSE = f"<{_DSML}function_calls>", f"</{_DSML}function_calls>"
_DSML_INVOKE = re.compile(f'<{_DSML}invoke name="(?P<name>[^"<>\\s]+)">(?P<body>.*?)</{_DSML}invoke>', re.DOTALL)
_DSML_PARAM = re.compile(
    f'<{_DSML}parameter name="(?P<key>[^"<>\\s]+)" string="(?P<string>true|false)">(?P<value>.*?)</{_DSML}parameter>',
    re.DOTALL,
)
#: gpt-oss harmony: the whole rest of the text, with its special tokens or with them dropped.
_HARMONY = (
    re.compile(
        r"(?:<\|start\|>assistant)?<\|channel\|>commentary to=functions\.(?P<name>[^\s<{]+)\s*(?:<\|constrain\|>)?json"
        r"<\|message\|>(?P<args>\{.*\})(?:<\|call\|>)?\s*",
        re.DOTALL,
    ),
    re.compile(r"commentary to=functions\.(?P<name>[^\s<{]+)\s+json\s*(?P<args>\{.*\})\s*", re.DOTALL),
)
_HARMONY_END = "<|call|>"

#: :func:`text_call_state` results.
LEAD = "lead"  # only whitespace and (part of) one leading reasoning block so far
MARKUP = "markup"  # markup started (or may be starting) after the lead, nothing else so far
PROSE = "prose"  # other text: this answer's text can never be lifted


def _skip_ws(text: str, i: int) -> int:
    n = len(text)
    while i < n and text[i].isspace():
        i += 1
    return i


def _reasoning_end(text: str, i: int) -> tuple[int, bool]:
    """``(end, open)`` for a reasoning block starting at ``i``: ``end`` is the index after its
    closing tag (``i`` when there is no reasoning block at ``i``); ``open`` is True when one is
    opened and not closed."""
    for opener, closer in REASONING_TAGS:
        if text.startswith(opener, i):
            close = text.find(closer, i + len(opener))
            if close < 0:
                return len(text), True
            return close + len(closer), False
    return i, False


def text_call_state(text: str) -> tuple[str, bool]:
    """Where the text of an answer that is still streaming stands for :func:`extract_text_calls`.

    Returns ``(state, open)``: ``state`` is :data:`LEAD` (nothing but whitespace and one
    leading reasoning block yet), :data:`MARKUP` (after the lead, only whole markup blocks,
    whitespace, and an open block or the start of an opener at the end) or :data:`PROSE` (any
    other text: whatever follows, the text stays text). ``open`` is True when ``text`` ends
    inside a reasoning block or a markup block (more text can only change the state once a
    closing tag, which ends with ``>``, arrives). Markup is not validated here (names,
    parameters): that is :func:`extract_text_calls`'s job once the text is complete.
    """
    i = _skip_ws(text, 0)
    if i == len(text):
        return LEAD, False
    end, is_open = _reasoning_end(text, i)
    if is_open:
        return LEAD, True
    if end == i and any(o.startswith(text[i:]) for o, _ in REASONING_TAGS):
        return MARKUP, False  # "<thin": hold until it is known to be a reasoning block or markup
    i = end
    seen = False
    while True:
        i = _skip_ws(text, i)
        if i == len(text):
            return (MARKUP if seen else LEAD), False
        for block in _BLOCKS:
            if text.startswith(block.opener, i):
                if block.to_end:
                    return MARKUP, True  # no closing tag: the rest of the text is the block
                close = text.find(block.closer, i + len(block.opener))
                if close < 0:
                    return MARKUP, True
                i, seen = close + len(block.closer), True
                if block.trailer:
                    j = _skip_ws(text, i)
                    if text.startswith(block.trailer, j):
                        i = j + len(block.trailer)
                    elif j < len(text) and block.trailer.startswith(text[j:]):
                        return MARKUP, False
                break
        else:
            rest = text[i:]
            if any(o.startswith(rest) for o, _ in MARKUP_OPENERS):
                return MARKUP, False
            return PROSE, False


def _json_object(text: str) -> dict[str, Any] | None:
    """``text`` parsed as one JSON object (strict JSON, no object repeating a key), else ``None``."""
    try:
        value = jsonio.loads_arguments(text.encode("utf-8"))
    except (ValueError, UnicodeEncodeError):
        return None
    return value if isinstance(value, dict) else None


def _hermes_call(block: str) -> ToolCall | None:
    """A Hermes / Qwen2.5 ``<tool_call>`` block's inside: exactly ``{"name": str, "arguments":
    object}`` (nothing else in the object or around it), else ``None``."""
    obj = _json_object(block)
    if obj is None or set(obj) != {"name", "arguments"}:
        return None
    name, args = obj["name"], obj["arguments"]
    if not isinstance(name, str) or not name.strip() or not isinstance(args, dict):
        return None
    return ToolCall(name=name, arguments=args)


def _llama_call(inside: str) -> ToolCall | None:
    """A Llama 3.1 / Functionary ``<function=NAME>{json}</function>`` block's inside (``NAME>
    {json}``): a name without whitespace and one JSON object, else ``None``."""
    if _LLAMA_OPEN in inside:
        return None  # nested or doubled opener
    m = _LLAMA_BODY.match(inside)
    if m is None:
        return None
    args = _json_object(m.group(2))
    if args is None:
        return None
    return ToolCall(name=m.group(1), arguments=args)


def _deepseek_calls(section: str) -> list[ToolCall] | None:
    """The calls of one DeepSeek section's inside (whole calls separated by whitespace, each of
    type ``function`` with a fenced JSON object (V3, R1), or a name and a bare JSON object
    (V3.1)), else ``None``."""
    calls: list[ToolCall] = []
    i = _skip_ws(section, 0)
    while i < len(section):
        m = _DS_CALL.match(section, i) or _DS31_CALL.match(section, i)
        if m is None:
            return None
        args = _json_object(m.group("args"))
        if args is None:
            return None
        calls.append(ToolCall(name=m.group("name"), arguments=args))
        i = _skip_ws(section, m.end())
    return calls or None


def _xml_call(block: str, tools: Toolset) -> ToolCall | None:
    """One ``<tool_call>`` block's inside as a call (Qwen3-Coder XML, or Hermes JSON when it
    starts with ``{``), or ``None`` (see :func:`extract_text_calls`)."""
    if _XML_OPEN in block:
        return None  # nested or doubled opener
    if block.lstrip().startswith("{"):
        return _hermes_call(block)
    fm = _XML_FUNCTION.match(block.strip())
    if fm is None:
        return None
    name, body = fm.group(1), fm.group(2)
    tool = tools.find(name)
    if tool is None or tool.input_schema is None:
        return None
    props = tool.input_schema.get("properties") or {}
    args: dict[str, Any] = {}
    last = 0
    for pm in _XML_PARAM.finditer(body):
        if body[last : pm.start()].strip():
            return None  # text between parameters: not the documented shape
        if pm.end() < len(body) and not pm.group(0).endswith("</parameter>"):
            # ended where the next <parameter= begins, not by its own </parameter> (the
            # template closes each): that text may as well be the value's own (a command
            # holding "<parameter=description>"), two readings: the text stays text
            return None
        last = pm.end()
        key = pm.group(1)
        if key not in props or key in args:
            return None
        types = property_types(tool.input_schema, key)
        if (not types or "string" in types) and pm.group(2).strip().lower() == "null":
            # vLLM's qwen3coder parser reads any ``null`` (any case) as null, the template's
            # reading keeps the text: two meanings, so the text stays text.
            return None
        if "string" in types and types - {"string", "null"} and _typed(pm.group(2), types - {"string"})[0]:
            return None  # "5" for integer-or-string: a number or a string, two meanings
        ok, value = _typed(pm.group(2), types)
        if not ok:
            return None
        if (
            pm.end() == len(body)
            and not pm.group(0).endswith("</parameter>")
            and value != _unclosed_value(block, key, types)
        ):
            # the last value, unclosed, ended in whitespace the read above took for the block's
            # own: it is the value's too, or not (two readings): the text stays text
            return None
        args[key] = value
    if body[last:].strip():
        return None
    return ToolCall(name=name, arguments=args)


def _unclosed_value(block: str, key: str, types: set[str]) -> Any:
    """The value of a block's last parameter ``key``, not closed by ``</parameter>``, read with
    every character up to ``</function>`` (or the block's end): :func:`_typed` of it, or ``None``."""
    opener = f"<parameter={key}>"
    start = block.rfind(opener) + len(opener)
    end = block.rfind("</function>")
    raw = block[start : end if end > start else len(block)]
    ok, value = _typed(raw, types)
    return value if ok else None


def _xml_unclosed(inside: str) -> bool:
    """True for a ``<tool_call>`` block's inside in Qwen3-Coder XML that :func:`_xml_call` reads
    without all its closing tags: a parameter not ended by ``</parameter>``, or no
    ``</function>``. Such a block's last value may have held the ``</tool_call>`` that ended it."""
    fm = _XML_FUNCTION.match(inside.strip())
    if fm is None or inside.lstrip().startswith("{"):
        return False
    if not inside.rstrip().endswith("</function>"):
        return True
    return any(not pm.group(0).endswith("</parameter>") for pm in _XML_PARAM.finditer(fm.group(2)))


def _kimi_calls(section: str, tools: Toolset) -> list[ToolCall] | None:
    """The calls of one Kimi section's inside, or ``None`` (see :func:`extract_text_calls`)."""
    calls: list[ToolCall] = []
    i = _skip_ws(section, 0)
    while i < len(section):
        cm = _KIMI_CALL.match(section, i)
        if cm is None:
            return None  # anything but whole calls and whitespace inside the section
        im = _KIMI_ID.match(cm.group("id"))
        if im is None or tools.find(im.group("name")) is None:
            return None
        args = _json_object(cm.group("args"))
        if args is None:
            return None
        calls.append(ToolCall(name=im.group("name"), arguments=args, id=cm.group("id")))
        i = _skip_ws(section, cm.end())
    return calls or None


def _function_call(inside: str, tools: Toolset) -> ToolCall | None:
    """A ``<function=…>…</function>`` block's inside: Llama 3.1 / Functionary JSON, or a
    Qwen3-Coder XML function whose ``<tool_call>`` opener the server consumed (read exactly as
    inside ``<tool_call>``)."""
    if _LLAMA_BODY.match(inside):
        return _llama_call(inside)
    if _LLAMA_OPEN in inside:
        return None
    return _xml_call(_LLAMA_OPEN + inside + _LLAMA_CLOSE, tools)


def _sequence(body: str, pattern: re.Pattern[str]) -> list[re.Match[str]] | None:
    """The matches of ``pattern`` that make up ``body`` whole, separated only by whitespace
    (none is an empty list), else ``None``."""
    out: list[re.Match[str]] = []
    i = _skip_ws(body, 0)
    while i < len(body):
        m = pattern.match(body, i)
        if m is None:
            return None
        out.append(m)
        i = _skip_ws(body, m.end())
    return out


def _minimax_value(value: str, types: set[str]) -> tuple[bool, Any]:
    """A MiniMax parameter's text as the declared type; (ok, value).

    MiniMax's own parser (``docs/tool_calling_guide.md``, ``parse_tool_calls``) strips the text
    and reads ``null`` as null whatever the type; the Qwen3-Coder reading (one newline off each
    end) is the template's. Only a value both read alike is taken: a string with other leading
    or trailing whitespace, a ``null`` for a string, or a type that is not exactly one is unknown."""
    if len(types) != 1:
        return False, None
    stripped = value.strip()
    ok, typed = _typed(value, types)
    if not ok:
        return False, None
    if "string" in types:
        if typed != stripped or stripped.lower() == "null":
            return False, None
    return True, typed


def _minimax_calls(section: str, tools: Toolset) -> list[ToolCall] | None:
    """The calls of one ``<minimax:tool_call>`` block's inside: whole ``<invoke>`` elements of a
    declared tool, each parameter declared once and read as its declared type, else ``None``."""
    invokes = _sequence(section, _MM_INVOKE)
    if not invokes:
        return None
    calls: list[ToolCall] = []
    for inv in invokes:
        tool = tools.find(inv.group("name"))
        if tool is None or tool.input_schema is None:
            return None
        props = tool.input_schema.get("properties") or {}
        params = _sequence(inv.group("body"), _MM_PARAM)
        if params is None:
            return None
        args: dict[str, Any] = {}
        for pm in params:
            key = pm.group("key")
            if key not in props or key in args:
                return None
            ok, value = _minimax_value(pm.group("value"), property_types(tool.input_schema, key))
            if not ok:
                return None
            args[key] = value
        calls.append(ToolCall(name=inv.group("name"), arguments=args))
    return calls


def _dsml_calls(section: str, _tools: Toolset) -> list[ToolCall] | None:
    """The calls of one DSML ``function_calls`` block's inside: whole ``invoke`` elements, each
    parameter once, ``string="true"`` the text itself (no whitespace at its ends: whether a
    server strips it is unknown), ``string="false"`` one JSON value; else ``None``. Names are the
    model's spelling, for the ladder (the values carry their own types)."""
    invokes = _sequence(section, _DSML_INVOKE)
    if not invokes:
        return None
    calls: list[ToolCall] = []
    for inv in invokes:
        params = _sequence(inv.group("body"), _DSML_PARAM)
        if params is None:
            return None
        args: dict[str, Any] = {}
        for pm in params:
            key, text = pm.group("key"), pm.group("value")
            if key in args:
                return None
            if pm.group("string") == "true":
                if text != text.strip():
                    return None
                args[key] = text
                continue
            try:
                args[key] = jsonio.loads_arguments(text.strip().encode("utf-8"))
            except (ValueError, UnicodeEncodeError):
                return None
        calls.append(ToolCall(name=inv.group("name"), arguments=args))
    return calls


def _harmony_call(rest: str, _tools: Toolset) -> list[ToolCall] | None:
    """The rest of the text as one gpt-oss harmony call (either form in :data:`_HARMONY`), else
    ``None``. The name after ``functions.`` is the model's spelling, for the ladder."""
    for pattern in _HARMONY:
        m = pattern.fullmatch(rest)
        if m is not None:
            args = _json_object(m.group("args"))
            return None if args is None else [ToolCall(name=m.group("name"), arguments=args)]
    return None


def _one(call: ToolCall | None) -> list[ToolCall] | None:
    return None if call is None else [call]


class _Block(NamedTuple):
    """One kind of markup block. ``read(inside, tools)`` gives the block's calls, or ``None``
    when it is not exactly the documented shape; ``inside`` is the text between opener and
    closer, or, for a block with ``to_end``, the rest of the text from the opener on (it has no
    closing tag: ``closer`` is only the token it may end with). ``trailer`` is a closing tag
    that may follow the block (a wrapper whose opener the server consumed)."""

    opener: str
    closer: str
    read: Callable[[str, Toolset], list[ToolCall] | None]
    to_end: bool = False
    trailer: str = ""


#: Each kind of markup block, in the order :func:`extract_text_calls` tries them.
_BLOCKS = (
    _Block(_XML_OPEN, _XML_CLOSE, lambda inside, tools: _one(_xml_call(inside, tools))),
    _Block(_KIMI_OPEN, _KIMI_CLOSE, _kimi_calls),
    _Block(_LLAMA_OPEN, _LLAMA_CLOSE, lambda inside, tools: _one(_function_call(inside, tools)), trailer=_XML_CLOSE),
    _Block(_DS_OPEN, _DS_CLOSE, lambda inside, _tools: _deepseek_calls(inside)),
    _Block(_MM_OPEN, _MM_CLOSE, _minimax_calls),
    _Block(_DSML_OPEN, _DSML_CLOSE, _dsml_calls),
    _Block("<|start|>assistant<|channel|>commentary to=", _HARMONY_END, _harmony_call, to_end=True),
    _Block("<|channel|>commentary to=", _HARMONY_END, _harmony_call, to_end=True),
    _Block("commentary to=functions.", _HARMONY_END, _harmony_call, to_end=True),
)
#: What can open tool-call markup in text, with its closer (Kimi and DeepSeek calls count only
#: inside their section). ``<tool_call>`` opens both the Qwen3-Coder XML and the Hermes JSON.
MARKUP_OPENERS = tuple((b.opener, b.closer) for b in _BLOCKS)


def extract_text_calls(text: str, tools: Toolset) -> tuple[str, list[ToolCall]] | None:
    """Lift tool calls a model left in its text; ``(text that remains, calls)`` or ``None``.

    Lifts only when the text is nothing but tool-call markup: optional whitespace, at most one
    leading reasoning block (:data:`REASONING_TAGS`, e.g. ``<think>…</think>``), then one or more
    whole blocks — ``<tool_call>…</tool_call>`` (Qwen3-Coder XML or Hermes JSON), Kimi
    ``<|tool_calls_section_begin|>…<|tool_calls_section_end|>``, Llama ``<function=…>…
    </function>`` or a DeepSeek ``<｜tool▁calls▁begin｜>…<｜tool▁calls▁end｜>`` section (module
    docstring) — separated only by whitespace. Any other text before, between
    or after the blocks (an example in backticks, "I will not run <tool_call>…", a closing
    sentence) means the model is writing *about* a call: ``None``, and the text stays text,
    byte for byte. Markup inside the reasoning block is never read.

    Also ``None`` when a Qwen3-Coder XML block read without all its closing tags
    (:func:`_xml_unclosed`; inside ``<tool_call>`` or with that opener dropped) is one of several:
    its last value may hold the ``</tool_call>`` or ``</function>`` taken for its end, and the text
    then reads as one call or as several (a ``Write`` whose content holds markup would become an
    emptied file and a ``Bash`` call).

    Also ``None`` unless every block is closed and holds exactly the documented shape, every
    XML and Kimi function is declared exactly (Kimi's ``functions.`` prefix and ``:n`` suffix
    stripped from its id) and, for the XML, every parameter is declared once and converts to its
    declared type. The JSON shapes (Hermes, Llama, DeepSeek) need a JSON object for arguments;
    their names are the model's spelling, for the caller to resolve through the ladder. The text that remains is ``text`` up to the end of the reasoning block (whitespace
    before it included), or ``""`` when there is none: the model's reasoning stays visible as
    content, as the client would have shown it. Ids: Kimi's own (``functions.read_file:0``,
    which its chat template replays); other calls get none (the dialect assigns stable ones).
    """
    i = _skip_ws(text, 0)
    end, is_open = _reasoning_end(text, i)
    if is_open:
        return None
    remaining = text[:end] if end > i else ""
    i = end
    calls: list[ToolCall] = []
    blocks = 0
    unclosed = False
    while True:
        i = _skip_ws(text, i)
        if i == len(text):
            break
        blocks += 1
        for block in _BLOCKS:
            if text.startswith(block.opener, i):
                if block.to_end:
                    found = block.read(text[i:], tools)
                    if found is None:
                        return None
                    calls.extend(found)
                    i = len(text)
                    break
                close = text.find(block.closer, i + len(block.opener))
                if close < 0:
                    return None
                inside = text[i + len(block.opener) : close]
                found = block.read(inside, tools)
                if found is None:
                    return None
                unclosed |= (block.opener == _XML_OPEN and _xml_unclosed(inside)) or (
                    block.opener == _LLAMA_OPEN
                    and not _LLAMA_BODY.match(inside)
                    and _xml_unclosed(_LLAMA_OPEN + inside + _LLAMA_CLOSE)
                )
                calls.extend(found)
                i = close + len(block.closer)
                if block.trailer and text.startswith(block.trailer, _skip_ws(text, i)):
                    i = _skip_ws(text, i) + len(block.trailer)
                break
        else:
            return None  # prose around or between the blocks
    if not calls or (unclosed and blocks > 1):
        return None
    return remaining, calls
