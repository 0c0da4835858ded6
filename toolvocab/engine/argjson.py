"""Lossless repairs of tool-call argument JSON that does not parse.

Open models behind vLLM, SGLang, Ollama or LM Studio (and gateways) sometimes send argument text
that a strict JSON parser refuses although every character of the intended value is there. Each
repair here rewrites only *spelling* — the value a reader sees is the value the client gets:

- ``code_fence``: the whole text is one Markdown code block (```` ```json\\n{…}\\n``` ````);
- ``trailing_comma``: a ``,`` after a value and directly before ``}`` or ``]`` (outside strings;
  after ``[``, ``{``, ``,`` or ``:`` it is an elided element, and the text is left);
- ``python_literal``: ``True`` / ``False`` / ``None`` outside strings (a Python ``repr``);
- ``control_character``: a raw newline, tab or other control character inside a string, escaped;
- ``double_encoded``: the text is a JSON string whose content is the object (encoded twice);
- ``control_token``: a model family's control token after the complete object
  (``{"command": "ls"}<|call|>``, mastra-ai/mastra PR #12823; :mod:`toolvocab.engine.tokens`).

Never: closing a truncated string, object or array, guessing a missing quote or comma, turning
single quotes into double quotes, dropping any content. A text that still does not parse after these
rewrites is left exactly as sent (the record says why: :func:`describe_unparsed`).

Source: the transforms are what open models served by vLLM, SGLang, Ollama and LM Studio write
(docs/never.md lists them with their tests); "never close truncated JSON" because json-repair based
middlewares turn a cut-off command into a shorter, valid and wrong one; a value encoded as a JSON string once too often is
the same habit as BR-25 (openai/codex#3913), there for one argument.
"""

from __future__ import annotations

import re
from typing import Any

from toolvocab.engine import jsonio
from toolvocab.engine.tokens import strip_after_json

_FENCE = re.compile(r"\A\s*```[A-Za-z0-9_-]*[ \t]*\r?\n(?P<body>.*?)\r?\n?[ \t]*```\s*\Z", re.DOTALL)
_LITERALS = {"True": "true", "False": "false", "None": "null"}
#: The order repairs are reported in (stable whatever the text's order).
_ORDER = ("control_token", "code_fence", "trailing_comma", "python_literal", "control_character", "double_encoded")
_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\b": "\\b", "\f": "\\f"}


def _ends_value(out: list[str]) -> bool:
    """True when the text written so far ends with a value (a string, a number, a literal, a
    closed object or array), so a ``,`` before ``}`` or ``]`` trails it. After ``[``, ``{``, ``,``
    or ``:`` it would be an elided element (``[,]`` has length 1 in JavaScript): not ours to drop."""
    for piece in reversed(out):
        stripped = piece.rstrip(" \t\r\n")
        if stripped:
            return stripped[-1] not in "[{,:"
    return False


def _rewrite(text: str) -> tuple[str, list[str]]:
    """One pass over ``text`` outside/inside strings: trailing commas, Python literals, raw
    control characters. Returns the new text and the repairs made (possibly none)."""
    out: list[str] = []
    done: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\" and i + 1 < n:
                out.append(text[i : i + 2])
                i += 2
                continue
            if c == '"':
                in_string = False
            elif ord(c) < 0x20:
                out.append(_ESCAPES.get(c, f"\\u{ord(c):04x}"))
                if "control_character" not in done:
                    done.append("control_character")
                i += 1
                continue
            out.append(c)
            i += 1
            continue
        if c == '"':
            in_string = True
            out.append(c)
            i += 1
            continue
        if c == ",":
            j = i + 1
            while j < n and text[j] in " \t\r\n":
                j += 1
            if j < n and text[j] in "}]" and _ends_value(out):
                if "trailing_comma" not in done:
                    done.append("trailing_comma")
                i += 1
                continue
        if c.isalpha():
            j = i
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            word = text[i:j]
            if word in _LITERALS:
                out.append(_LITERALS[word])
                if "python_literal" not in done:
                    done.append("python_literal")
            else:
                out.append(word)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out), done


def repair_arguments(text: str) -> tuple[dict[str, Any], list[str]] | None:
    """Parse tool-call argument ``text`` that strict JSON refuses, by lossless rewrites only.

    Returns ``(object, repairs)`` — ``repairs`` names each rewrite applied, in order
    (``control_token``, ``code_fence``, ``trailing_comma``, ``python_literal``, ``control_character``,
    ``double_encoded``) — or ``None`` when no lossless rewrite yields a JSON object (truncated or
    otherwise broken text is never completed). Text that already parses is not this function's
    business: it returns ``None`` for it too. Never raises.
    """
    value = _parse(text)
    strict_ok = value is not None or text.strip() == "null"
    repairs: list[str] = []
    body = text
    if strict_ok:
        if isinstance(value, str):
            inner = _parse(value)
            if isinstance(inner, dict):
                return inner, ["double_encoded"]
        return None
    unglued = strip_after_json(body)
    if unglued is not None:
        body = unglued
        repairs.append("control_token")
    m = _FENCE.match(body)
    if m:
        body = m.group("body")
        repairs.append("code_fence")
    value = _parse(body)
    if value is None:
        body, done = _rewrite(body)
        repairs.extend(done)
        if not done and not repairs:
            return None
        value = _parse(body)
    if isinstance(value, str):
        inner = _parse(value)
        if isinstance(inner, dict):
            return inner, sorted(repairs + ["double_encoded"], key=_ORDER.index)
        return None
    if isinstance(value, dict):
        return value, sorted(repairs, key=_ORDER.index)
    return None


def _parse(text: str) -> Any:
    """Strict JSON (integers of any size exact, no object repeating a key), or ``None``."""
    try:
        return jsonio.loads_arguments(text.encode("utf-8"))
    except (ValueError, UnicodeEncodeError):
        return None


def describe_unparsed(text: str) -> str:
    """One phrase saying why ``text`` (argument JSON that does not parse) is left as sent:
    cut off (an unclosed string, object or array: a stream stopped by ``max_tokens``) or
    otherwise malformed."""
    depth = 0
    in_string = False
    escaped = False
    for c in text:
        if in_string:
            if escaped:
                escaped = False
            elif c == "\\":
                escaped = True
            elif c == '"':
                in_string = False
            continue
        if c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
    if in_string or depth > 0:
        return "the arguments are not a JSON object: cut off (unclosed JSON, never completed by a guess), left exactly as sent"
    return "the arguments are not a JSON object and no lossless repair applies, left exactly as sent"
