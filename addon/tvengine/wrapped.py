"""Tool calls that arrive wrapped: OpenAI's ``multi_tool_use.parallel`` and calls left in text.

Three shapes models leak (bug reports BR-08, BR-23, BR-24):

- ``multi_tool_use.parallel`` with ``{"tool_uses": [{"recipient_name": "functions.X",
  "parameters": {...}}, ...]}`` (vercel/ai#1922): N calls in one wrapper;
- Qwen3-Coder's XML left in ``content`` (vllm-project/vllm#21571): ``<tool_call>
  <function=NAME> <parameter=P> VALUE [</parameter>] [</function>] </tool_call>``;
- Kimi K2's markers left in ``content`` (cline/cline#12979):
  ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>
  {json}<|tool_call_end|><|tool_calls_section_end|>``.

Each is lifted into ordinary calls only when it is whole and every call in it names a declared
tool (and, for the XML, every parameter is declared): anything else is left as it came.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

from tvengine.arguments import property_types
from tvengine.ladder import Toolset
from tvengine.models import ToolCall

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


_XML_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)
_XML_FUNCTION = re.compile(r"^<function=([^>\s]+)>\s*(.*?)\s*(?:</function>)?\s*$", re.DOTALL)
_XML_PARAM = re.compile(r"<parameter=([^>\s]+)>\n?(.*?)\n?\s*(?:</parameter>|(?=<parameter=)|\Z)", re.DOTALL)
_KIMI_SECTION = re.compile(r"<\|tool_calls_section_begin\|>(.*?)<\|tool_calls_section_end\|>", re.DOTALL)
_KIMI_CALL = re.compile(
    r"<\|tool_call_begin\|>\s*(?P<id>[^<\s]+)\s*<\|tool_call_argument_begin\|>(?P<args>.*?)<\|tool_call_end\|>", re.DOTALL
)
_KIMI_ID = re.compile(r"^(?:functions\.)?(?P<name>[^:]+)(?::\d+)?$")


def _typed(value: str, types: set[str]) -> tuple[bool, Any]:
    """Convert an XML parameter's text to the declared type; (ok, value)."""
    text = value.strip()
    if not types or "string" in types:
        return True, value.strip("\n")
    if types & {"integer", "number", "boolean", "array", "object", "null"}:
        try:
            parsed = orjson.loads(text)
        except orjson.JSONDecodeError:
            return False, None
        return True, parsed
    return False, None


def extract_text_calls(text: str, tools: Toolset) -> tuple[str, list[ToolCall]] | None:
    """Lift tool calls a model left in its text; ``(text without them, calls)`` or ``None``.

    Returns ``None`` (leave the text as it came) unless every block is closed, every function is
    declared exactly (Kimi's ``functions.`` prefix and ``:n`` suffix stripped from its id) and,
    for the XML, every parameter is declared and converts to its declared type. Ids: Kimi's own
    (``functions.read_file:0``, which its chat template replays); XML calls get none (the dialect
    assigns stable ones).
    """
    calls: list[ToolCall] = []
    remaining = text
    if "<tool_call>" in text:
        if text.count("<tool_call>") != text.count("</tool_call>"):
            return None
        for block in _XML_BLOCK.finditer(text):
            fm = _XML_FUNCTION.match(block.group(1))
            if fm is None:
                return None
            name, body = fm.group(1), fm.group(2)
            tool = tools.find(name)
            if tool is None or tool.input_schema is None:
                return None
            props = tool.input_schema.get("properties") or {}
            args: dict[str, Any] = {}
            for pm in _XML_PARAM.finditer(body):
                key = pm.group(1)
                if key not in props:
                    return None
                ok, value = _typed(pm.group(2), property_types(tool.input_schema, key))
                if not ok:
                    return None
                args[key] = value
            calls.append(ToolCall(name=name, arguments=args))
        remaining = _XML_BLOCK.sub("", remaining)
    if "<|tool_calls_section_begin|>" in text or "<|tool_call_begin|>" in text:
        sections = list(_KIMI_SECTION.finditer(remaining))
        if not sections or remaining.count("<|tool_call_begin|>") != remaining.count("<|tool_call_end|>"):
            return None
        for section in sections:
            found = list(_KIMI_CALL.finditer(section.group(1)))
            if not found:
                return None
            for cm in found:
                im = _KIMI_ID.match(cm.group("id"))
                if im is None or tools.find(im.group("name")) is None:
                    return None
                try:
                    args = orjson.loads(cm.group("args"))
                except orjson.JSONDecodeError:
                    return None
                if not isinstance(args, dict):
                    return None
                calls.append(ToolCall(name=im.group("name"), arguments=args, id=cm.group("id")))
        remaining = _KIMI_SECTION.sub("", remaining)
    if not calls:
        return None
    return remaining, calls
