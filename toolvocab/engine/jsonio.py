"""JSON in and out of bodies: strict reading, and writing only what reads back the same.

Reading is strict (RFC 8259): ``NaN``, ``Infinity``, ``-Infinity``, numbers a double cannot hold
(``1e400``), invalid UTF-8 and nesting deeper than :data:`MAX_DEPTH` are refused with
``ValueError``, so a body a strict parser refuses is never read (and so never rewritten) by a
lenient one. The standard library's ``json`` accepts all of those; ``orjson`` refuses them but
reads an integer beyond 64 bits as a float (``123456789012345678901234567890`` becomes
``1.2345678901234568e+29``) and refuses a lone surrogate escape (``"\\ud800"``), which RFC 8259's
grammar allows (its section 8.2 only warns about it). A body that holds either is read with the
standard library under strict hooks, so integers stay exact and lone surrogates survive
(``orjson`` README, "Numbers" and "Strings"; Python ``json`` docs, ``parse_constant``).

Writing (:func:`dumps`) is compact UTF-8; a lone surrogate is written back as its ``\\uXXXX``
escape and big integers exactly. :func:`rewrite` is the one way a hook turns a changed body into
bytes: it refuses (returns ``None``) when the original holds a duplicate key (a rewrite would
drop one of them: left as sent), when the new value cannot be serialized, or when the bytes it
would send do not read back strictly. The caller then leaves the original bytes on the wire.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import orjson

#: Deepest nesting read. Real API bodies nest a few tens of levels; the engine and the dialects
#: walk bodies recursively, so much deeper values (a fuzzer's ``[[[[…]]]]``) would end in a
#: ``RecursionError`` far from here. Refused bodies pass through unread.
MAX_DEPTH = 400

_BIG_INT = re.compile(rb"\d{19,}")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_INNERMOST = re.compile(rb"\{\}|\[\]")
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_QUOTE_COLON = re.compile(rb'"[ \t\r\n]*:')
#: A backslash run, then a quote-colon pair. It opens with a literal backslash, so the regex engine
#: skips to each backslash at memchr speed (``(\\+)`` first would try every position).
_ESCAPED_QUOTE_COLON = re.compile(rb'\\\\*"[ \t\r\n]*:')
_STRING_OR_KEY = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"([ \t\r\n]*:)?')
_UNSET: Any = object()


class NotStrictJSON(ValueError):
    """The bytes are not JSON a strict parser accepts (or nest deeper than :data:`MAX_DEPTH`)."""


def _constant(name: str) -> Any:
    raise NotStrictJSON(f"{name} is not JSON")


def _float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise NotStrictJSON(f"number {text[:40]} does not fit a double")
    return value


#: A number as JSON spells it (RFC 8259 §6, leading zeros aside), ASCII digits only.
_NUMBER_TEXT = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?")


def number_in_text(text: str) -> int | float | None:
    """The number a string holds when it is spelled as a JSON number (``"600"``, ``"-1.5e3"``),
    JSON whitespace around it allowed: an ``int`` without a fraction or exponent, else a
    ``float``. ``None`` for anything else: other digits (``"６００"``), separators (``"6_0"``),
    a sign ``+``, ``"inf"``, ``"NaN"``, a value beyond a double (``"1e400"``) or an integer
    longer than Python converts (``sys.get_int_max_str_digits()``, 4300 digits). Never raises."""
    text = text.strip(" \t\r\n")
    if not _NUMBER_TEXT.fullmatch(text):
        return None
    try:
        value = float(text) if any(c in text for c in ".eE") else int(text)
    except ValueError:
        return None
    return None if isinstance(value, float) and not math.isfinite(value) else value


def too_deep(raw: bytes, limit: int = MAX_DEPTH) -> bool:
    """True when the JSON text ``raw`` nests arrays and objects deeper than ``limit`` (brackets
    inside strings do not count). Cost: one regex pass over ``raw``, then one pass over its
    brackets per level of nesting, at most ``limit``."""
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKETS)
    for _ in range(limit):
        if not brackets:
            return False
        shorter = _INNERMOST.sub(b"", brackets)  # one level per pass
        if len(shorter) == len(brackets):
            return False  # unbalanced: not JSON, the parser refuses it
        brackets = shorter
    return bool(brackets)


def _stdlib(raw: bytes) -> Any:
    try:
        # Decoded here, strictly: json.loads(bytes) would let UTF-8-encoded surrogates through.
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise NotStrictJSON(f"not UTF-8 ({exc.reason})") from None
    try:
        return json.loads(
            text,
            parse_constant=_constant,
            parse_float=_float,
        )
    except RecursionError:
        raise NotStrictJSON(f"nested deeper than {MAX_DEPTH}") from None


def loads(raw: bytes) -> Any:
    """Parse ``raw`` strictly; raises ``ValueError`` (:class:`NotStrictJSON`, or ``orjson`` /
    ``json`` ``JSONDecodeError``) when it is not JSON a strict parser accepts or nests deeper
    than :data:`MAX_DEPTH`. Integers of any size are exact; lone surrogate escapes are kept.
    Duplicate keys are read (the last one wins); :func:`rewrite` refuses to write them.

    orjson reads first (it refuses NaN, infinities, ``1e400``, invalid UTF-8 and nesting beyond
    1024); one walk of the result's containers (and floats) then checks the depth and looks for
    a float of 2**63 or more, which may be an integer orjson could not hold: only then is ``raw``
    searched for a run of 19 digits and read again by the standard library. No regex runs over
    every byte."""
    return _read(raw)[0]


def loads_unique(raw: bytes) -> tuple[Any, bool]:
    """``(loads(raw), not has_duplicate_keys(raw))``, the keys counted in the same walk: what a
    hook reads before it decides whether it may ever rewrite the body. Raises as :func:`loads`."""
    value, unique, _ = loads_checked(raw)
    return value, unique


def loads_arguments(raw: bytes) -> Any:
    """Tool-call argument text parsed strictly, as :func:`loads`, and refused when any object in
    it repeats a key: which of two values a client reads is its parser's choice (Python's and
    JavaScript's keep the last, others the first), so a call whose meaning depends on it is never
    read, fitted or rewritten. Raises ``ValueError`` (:class:`NotStrictJSON` for a repeated key)."""
    value, unique, _ = loads_checked(raw)
    if not unique:
        raise NotStrictJSON("an object repeats a key")
    return value


#: UTF-8's byte order mark, which JSON readers skip at a text's start (RFC 8259 §8.1 lets a
#: parser ignore it; Python's ``json.loads`` of bytes and ``Response.json()`` in a browser do).
BOM = b"\xef\xbb\xbf"


def split_bom(raw: bytes) -> tuple[bytes, bytes]:
    """``(BOM, the rest)`` for ``raw`` that begins with :data:`BOM`, else ``(b"", raw)``: the
    mark is kept apart, and written back in front of what is written for the rest."""
    return (BOM, raw[3:]) if raw.startswith(BOM) else (b"", raw)


def loads_checked(raw: bytes) -> tuple[Any, bool, bool]:
    """``(loads(raw), unique, canonical)``: :func:`loads_unique`, and whether ``raw`` is byte for
    byte ``orjson.dumps`` of the value (:func:`_canonical`; what :func:`layout` needs). Raises as
    :func:`loads`."""
    value, keys = _read(raw)
    return value, keys is None or not _repeats_key(raw, keys), keys is None


def _read(raw: bytes) -> tuple[Any, int | None]:
    """``(value, number of object keys in value)`` (see :func:`loads`); the count is ``None`` when
    ``raw`` is exactly ``orjson.dumps(value)`` (:func:`_canonical`): then no key repeats."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not _SURROGATE.search(raw):
            raise
        # orjson refuses a lone surrogate escape; the standard library reads it (strictly).
        if too_deep(raw):
            raise NotStrictJSON(f"nested deeper than {MAX_DEPTH}") from None
        value = _stdlib(raw)
        return value, _shape(value)[1]
    if _canonical(value, raw):
        return value, None
    depth, keys, big = _shape(value)
    if depth > MAX_DEPTH:
        raise NotStrictJSON(f"nested deeper than {MAX_DEPTH}")
    if big and _BIG_INT.search(raw):
        return _stdlib(raw), keys  # the same tree, integers exact
    return value, keys


_CONTAINERS_FLOATS = frozenset((dict, list, float))


def _canonical(value: Any, raw: bytes) -> bool:
    """True when ``raw`` is byte for byte ``orjson.dumps(value)``, ``value`` being what
    ``orjson.loads(raw)`` made of it. Then ``raw`` repeats no key (``value`` is a tree of dicts,
    whose keys are unique, and ``raw`` writes exactly its keys), holds no integer orjson read as a
    float (such a float is written back as ``1.2345678901234568e29``, not as the digits) and nests
    at most 254 levels (orjson refuses to write deeper: ``JSONEncodeError``, orjson README
    "Serialize": "raises JSONEncodeError ... on recursion"), below :data:`MAX_DEPTH`.

    This is the common case on the wire, and the cheap one (a C-level write and compare, about a
    sixth of ``orjson.loads`` on the same body): ``JSON.stringify`` (Claude Code, Gemini CLI, Qwen
    Code, OpenCode), serde_json (Codex CLI) and httpx 0.28's request encoder (the official Python
    SDKs: ``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``) all write compact JSON
    with orjson's escapes. Any other spelling (spaces, ``\\u00e9``, ``5e-07``) answers False and
    is checked the long way."""
    if len(raw) < 2 or raw[-1] not in b'}]"':
        return False  # trailing whitespace or a bare number: not orjson's spelling, skip the write
    try:
        return orjson.dumps(value) == raw
    except orjson.JSONEncodeError:
        return False


#: Where top-level values of a body lie in its bytes: key -> ``(start, end)`` offsets of a value
#: copied whole; for a list whose leading elements may change (``heads``), ``(start, end,
#: count)``: the offsets of its last ``count`` elements, joined as sent, kept at its end.
Layout = dict[str, tuple[int, ...]]

#: Bodies at least this long get a :data:`Layout` (below it, writing the whole costs little).
LAYOUT_MIN_BYTES = 32 * 1024


def layout(raw: bytes, value: Any, touched: frozenset[str], heads: Mapping[str, int] | None = None) -> Layout | None:
    """Where the top-level values outside ``touched`` lie in ``raw``, for :func:`rewrite` to copy
    them instead of writing them again; ``None`` when there is nothing worth copying (``raw``
    shorter than :data:`LAYOUT_MIN_BYTES`, ``value`` not an object, or every key touched).
    ``heads``: touched keys whose value is a list of which a change touches only the first ``n``
    elements (changes, adds before or removes among them), every later one staying as it is, in
    order, at the list's end: those later elements are located too, and copied as sent.

    ``raw`` must be exactly ``orjson.dumps(value)`` (:func:`loads_checked` says ``canonical``)
    and ``value`` not yet changed. ``raw`` is then ``{`` + ``"key":value`` pairs joined by
    ``,`` + ``}``, each as ``orjson.dumps`` writes it: every value but the largest one copied (by
    item count: a transcript) is written to learn its length (of a list with a head, only the
    head's elements), and that one is what is left. Each key, and each comma and bracket of a
    list with a head, is checked at the offset found. Cost: writing the rest of the body once
    (the tools and the system prompt, not the transcript), only for a body about to change.
    Never raises."""
    if len(raw) < LAYOUT_MIN_BYTES or type(value) is not dict or not value:
        return None
    heads = {
        k: n
        for k, n in (heads or {}).items()
        if k in touched and type(value.get(k)) is list and type(n) is int and 0 <= n < len(value[k])
    }
    keys = [k for k in value if k not in touched or k in heads]
    if not keys or any(type(k) is not str for k in value):
        return None
    big = max(keys, key=lambda k: len(value[k]) if type(value[k]) in (list, dict, str) else 0)
    try:
        names = {k: orjson.dumps(k) for k in value}
        sizes = {k: len(orjson.dumps(v)) for k, v in value.items() if k != big and k not in heads}
        # a list with a head: its first n elements, each followed by its comma
        leads = {k: sum(len(orjson.dumps(e)) + 1 for e in value[k][:n]) for k, n in heads.items()}
        tails = {k: orjson.dumps(value[k][n:]) for k, n in heads.items() if k != big}
    except orjson.JSONEncodeError:  # not what orjson writes after all
        return None
    for k, tail in tails.items():  # [ + lead + the tail's elements + ]
        sizes[k] = 1 + leads[k] + len(tail) - 1
    # {, then each pair "key":value, with a comma between pairs, then }
    fixed = 2 + (len(value) - 1) + sum(len(n) + 1 for n in names.values())
    sizes[big] = len(raw) - fixed - sum(sizes.values())
    out: Layout = {}
    pos = 1
    for k in value:
        name = names[k]
        if not raw.startswith(name + b":", pos):
            return None
        start = pos + len(name) + 1
        end = start + sizes[k]
        if raw[end : end + 1] != (b"," if end + 1 < len(raw) else b"}"):
            return None  # the value does not end where the next pair (or the object) does
        if k in heads:
            first = start + 1 + leads[k]  # where the kept elements start
            if raw[start : start + 1] != b"[" or raw[end - 1 : end] != b"]" or first >= end - 1:
                return None
            if heads[k] and raw[first - 1 : first] != b",":
                return None
            out[k] = (first, end - 1, len(value[k]) - heads[k])
        elif k not in touched:
            out[k] = (start, end)
        pos = end + 1  # past the comma, or the closing brace
    return out if pos == len(raw) and sizes[big] > 0 else None


def _shape(value: Any) -> tuple[int, int, bool]:
    """``(depth, keys, big)`` of a value a JSON parser made: its nesting depth (a walk of the
    containers, level by level, that stops past :data:`MAX_DEPTH`), the number of object keys,
    and whether it holds a float of magnitude 2**63 or more. Exact types: a parser makes no
    subclasses. Iterative: any depth."""
    depth = keys = 0
    big = False
    deep = _CONTAINERS_FLOATS
    level = [value] if type(value) in deep else []
    while level and depth <= MAX_DEPTH:
        items: list[Any] = []  # every value one level down; one filter over all of them
        containers = False
        for v in level:
            kind = type(v)
            if kind is dict:
                keys += len(v)
                items += v.values()
                containers = True
            elif kind is list:
                items += v
                containers = True
            elif abs(v) >= 9.2e18:  # a float
                big = True
        depth += containers
        level = [x for x in items if type(x) in deep]
    return depth, keys, big


def has_duplicate_keys(raw: bytes, value: Any = _UNSET) -> bool:
    """True when some object in the JSON text ``raw`` repeats a key. ``value``: what
    :func:`loads` made of ``raw``, not yet changed (else ``raw`` is parsed again). ``raw`` must be
    JSON that :func:`loads` accepts; anything else also answers True ("do not rewrite").

    Counts the keys written in ``raw`` (every string followed by a colon) against the keys the
    parsed value holds: a repeated key collapses into one. No second tree is built from ``raw``."""
    if value is _UNSET:
        try:
            return not loads_unique(raw)[1]
        except ValueError:
            return True
    return _repeats_key(raw, _key_count(value))


def _repeats_key(raw: bytes, keys: int) -> bool:
    """True when the JSON text ``raw``, whose parsed value holds ``keys`` keys, writes more.

    Every key written is a string followed by a colon, so the quote-colon pairs in ``raw`` are at
    least the keys written, which are at least ``keys``: when the pairs (less those whose quote a
    backslash escapes) are exactly ``keys``, no key repeats. Two C-level regex passes; only when
    they count more is every pair looked at (:func:`_written_keys`). (``bytes.count`` per
    backslash run was measured slower: its search is no faster than the regex's on ``":``.)"""
    pairs = len(_QUOTE_COLON.findall(raw))
    if pairs == keys:
        return False
    escaped = sum(pair.index(b'"') % 2 for pair in _ESCAPED_QUOTE_COLON.findall(raw))
    if pairs - escaped == keys:
        return False
    return _written_keys(raw) != keys


def _written_keys(raw: bytes) -> int:
    """How many keys the JSON text ``raw`` writes.

    Fast path: every quote followed by a colon ends a key, unless an odd run of backslashes
    escapes it (it sits inside a string: ``"say \\": hi"``) — searching for the quote lets the
    regex engine skip long strings at memchr speed. A quote preceded by ``{ [ , :`` may instead
    open a string that starts with a colon (``{":": 1}``), or close one ending in such a
    character; then every string is scanned exactly (a slower pass)."""
    count = 0
    for match in _QUOTE_COLON.finditer(raw):
        start = match.start()
        if start and raw[start - 1] == 0x5C:  # a backslash right before: count the run
            run = start - 1
            while run > 0 and raw[run - 1] == 0x5C:
                run -= 1
            if (start - run) % 2:
                continue  # escaped quote inside a string
        before = start - 1
        while before >= 0 and raw[before] in b" \t\r\n":
            before -= 1
        if before >= 0 and raw[before] in b"{[,:":
            return sum(1 for colon in _STRING_OR_KEY.findall(raw) if colon)
        count += 1
    return count


def _key_count(value: Any) -> int:
    count, stack = 0, [value]
    while stack:
        v = stack.pop()
        if isinstance(v, dict):
            count += len(v)
            stack.extend(x for x in v.values() if isinstance(x, (dict, list)))
        elif isinstance(v, list):
            stack.extend(x for x in v if isinstance(x, (dict, list)))
    return count


_LEAVES = frozenset((str, int, bool, type(None)))


def _finite(value: Any) -> bool:
    """No NaN or infinite float anywhere in ``value`` (iterative: any depth). Walks level by
    level and sets strings, integers, booleans and nulls aside in list comprehensions: a long
    transcript is mostly strings."""
    level = [value]
    while level:
        below: list[Any] = []
        for v in level:
            if isinstance(v, dict):
                below += [x for x in v.values() if type(x) not in _LEAVES]
            elif isinstance(v, list):
                below += [x for x in v if type(x) not in _LEAVES]
            elif isinstance(v, float) and not math.isfinite(v):
                return False
        level = below
    return True


def dumps(value: Any) -> bytes:
    """Compact JSON bytes (UTF-8, no spaces); integers of any size exact, a lone surrogate as
    its ``\\uXXXX`` escape. Raises ``ValueError`` for types JSON cannot hold and for nesting
    beyond the interpreter's recursion limit. A NaN or infinite float is written as ``null``
    (``orjson``'s choice): :func:`rewrite` refuses such a result."""
    try:
        return orjson.dumps(value)
    except TypeError:
        pass  # big integer, lone surrogate, or nesting beyond orjson's limit: the stdlib decides
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, RecursionError) as exc:
        raise ValueError(f"not serializable as JSON ({type(exc).__name__}: {exc})") from None
    # A lone surrogate can only sit inside a string: "backslashreplace" writes it as \udXXX,
    # which is its JSON escape.
    return text.encode("utf-8", "backslashreplace")


def rewrite(
    original: bytes,
    value: Any,
    *,
    unique_keys: bool = False,
    finite: bool = False,
    layout: Layout | None = None,
) -> bytes | None:
    """The bytes to send in place of ``original`` (JSON text :func:`loads` accepted) now that
    ``value`` (what it was parsed into, changed) should go out, or ``None`` to leave
    ``original`` as sent: it repeats a key, ``value`` holds a NaN or an infinity (which orjson
    would write as ``null``) or cannot be serialized. ``unique_keys``: the caller already knows
    ``original`` repeats no key (:func:`has_duplicate_keys` on the unchanged value; cheaper and
    builds no second tree). ``finite``: the caller knows ``value`` holds no NaN or infinity
    (:func:`loads` refuses them, and the change added no float): the walk that looks is skipped.
    ``layout`` (:func:`layout` of ``original``, taken before the change, outside the top-level
    keys the change may write, add or remove): the values it locates are copied from
    ``original`` instead of written again, which gives the same bytes, since ``original`` is what
    ``orjson.dumps`` writes (a 2 MB transcript whose system prompt changed writes only the
    prompt). Never raises."""
    try:
        if not unique_keys and has_duplicate_keys(original):
            return None
        if not finite and not _finite(value):
            return None
        if layout is not None and type(value) is dict:
            return _splice(original, value, layout)
        return dumps(value)
    except (ValueError, RecursionError):
        return None


def _splice(original: bytes, value: dict[str, Any], layout: Layout) -> bytes:
    """``dumps(value)``, each top-level value ``layout`` holds copied from its span in
    ``original`` (:func:`rewrite`). Raises ``ValueError`` as :func:`dumps`."""
    if any(type(key) is not str for key in value):
        return dumps(value)  # dumps decides (a JSON key is a string)
    view = memoryview(original)
    parts: list[Any] = []
    for key, item in value.items():
        parts.append(b"," if parts else b"{")
        parts.append(dumps(key))
        parts.append(b":")
        span = layout.get(key)
        if span is None:
            parts.append(dumps(item))
        elif len(span) == 2:
            parts.append(view[span[0] : span[1]])
        elif type(item) is not list or len(item) < span[2]:
            parts.append(dumps(item))  # not the list the layout was taken of: written whole
        else:  # a list with a head: its new first elements written, its kept ones copied
            parts.append(b"[")
            for element in item[: len(item) - span[2]]:
                parts.append(dumps(element))
                parts.append(b",")
            parts.append(view[span[0] : span[1]])
            parts.append(b"]")
    parts.append(b"}" if parts else b"{}")
    return b"".join(parts)
