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
    value, unique, _ = loads_layout(raw)
    return value, unique


#: Where each top-level value of a body lies in its bytes: key -> (start, end) offsets.
Layout = dict[str, tuple[int, int]]

#: Bodies at least this long get a :data:`Layout` (below it one ``orjson.dumps`` of the whole is
#: cheaper than one per top-level value, and re-writing the whole costs little).
LAYOUT_MIN_BYTES = 32 * 1024


def loads_layout(raw: bytes) -> tuple[Any, bool, Layout | None]:
    """:func:`loads_unique` and, when ``raw`` is a JSON object of at least
    :data:`LAYOUT_MIN_BYTES` written byte for byte as ``orjson.dumps`` writes it, its
    :data:`Layout`: the span of every top-level value, which :func:`rewrite` copies instead of
    writing again when the change left that value alone (``None`` otherwise). Raises as
    :func:`loads`."""
    value, keys, layout = _read(raw)
    return value, keys is None or not _repeats_key(raw, keys), layout


def _read(raw: bytes) -> tuple[Any, int | None, Layout | None]:
    """``(value, number of object keys in value, layout)`` (see :func:`loads`); the count is
    ``None`` when ``raw`` is exactly ``orjson.dumps(value)`` (:func:`_canonical`): then no key
    repeats, and a large object's layout comes with it (:func:`_canonical_layout`)."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if not _SURROGATE.search(raw):
            raise
        # orjson refuses a lone surrogate escape; the standard library reads it (strictly).
        if too_deep(raw):
            raise NotStrictJSON(f"nested deeper than {MAX_DEPTH}") from None
        value = _stdlib(raw)
        return value, _shape(value)[1], None
    if len(raw) >= LAYOUT_MIN_BYTES and type(value) is dict:
        layout = _canonical_layout(value, raw)
        if layout is not None:
            return value, None, layout
    elif _canonical(value, raw):
        return value, None, None
    depth, keys, big = _shape(value)
    if depth > MAX_DEPTH:
        raise NotStrictJSON(f"nested deeper than {MAX_DEPTH}")
    if big and _BIG_INT.search(raw):
        return _stdlib(raw), keys, None  # the same tree, integers exact
    return value, keys, None


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
    if len(raw) < 2 or raw[-1] not in b"}]\"":
        return False  # trailing whitespace or a bare number: not orjson's spelling, skip the write
    try:
        return orjson.dumps(value) == raw
    except orjson.JSONEncodeError:
        return False


def _canonical_layout(value: dict[str, Any], raw: bytes) -> Layout | None:
    """:func:`_canonical` for an object, written one top-level value at a time: the spans of
    its values when ``raw`` is ``{`` + ``"key":value`` pairs joined by ``,`` + ``}`` with each key
    and value exactly as ``orjson.dumps`` writes it (which is ``orjson.dumps(value)``), else
    ``None``. The same writes and compares as the whole at once (no copy). orjson refuses to
    write a value nested 255 levels deep, so ``raw`` nests at most 256 levels, under
    :data:`MAX_DEPTH`; and a repeated top-level key cannot pass (the dict holds it once, so
    fewer pairs are written than ``raw`` holds)."""
    if raw[:1] != b"{" or raw[-1:] != b"}":
        return None
    dumps_ = orjson.dumps
    startswith = raw.startswith
    layout: Layout = {}
    pos = 1
    try:
        for key, item in value.items():
            if pos != 1:
                if raw[pos] != 0x2C:  # ","
                    return None
                pos += 1
            name = dumps_(key)
            if not startswith(name, pos):
                return None
            pos += len(name)
            if raw[pos] != 0x3A:  # ":"
                return None
            pos += 1
            text = dumps_(item)
            if not startswith(text, pos):
                return None
            layout[key] = (pos, pos + len(text))
            pos += len(text)
    except (orjson.JSONEncodeError, IndexError):
        return None
    return layout if pos == len(raw) - 1 else None


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
    touched: frozenset[str] | None = None,
) -> bytes | None:
    """The bytes to send in place of ``original`` (JSON text :func:`loads` accepted) now that
    ``value`` (what it was parsed into, changed) should go out, or ``None`` to leave
    ``original`` as sent: it repeats a key, ``value`` holds a NaN or an infinity (which orjson
    would write as ``null``) or cannot be serialized. ``unique_keys``: the caller already knows
    ``original`` repeats no key (:func:`has_duplicate_keys` on the unchanged value; cheaper and
    builds no second tree). ``finite``: the caller knows ``value`` holds no NaN or infinity
    (:func:`loads` refuses them, and the change added no float): the walk that looks is skipped.
    ``layout`` (:func:`loads_layout` of ``original``) and ``touched`` (the top-level keys the
    change may have written, added or removed; ``None``: any): every other top-level value is
    copied from ``original`` instead of written again, which gives the same bytes, since
    ``original`` is what ``orjson.dumps`` writes (a 2 MB transcript whose system prompt changed
    writes only the prompt). Never raises."""
    try:
        if not unique_keys and has_duplicate_keys(original):
            return None
        if not finite and not _finite(value):
            return None
        if layout is not None and touched is not None and type(value) is dict:
            return _splice(original, value, layout, touched)
        return dumps(value)
    except (ValueError, RecursionError):
        return None


def _splice(original: bytes, value: dict[str, Any], layout: Layout, touched: frozenset[str]) -> bytes:
    """``dumps(value)``, each top-level value not in ``touched`` copied from its span in
    ``original`` (:func:`rewrite`). Raises ``ValueError`` as :func:`dumps`."""
    if any(type(key) is not str for key in value):
        return dumps(value)  # dumps decides (a JSON key is a string)
    view = memoryview(original)
    parts: list[Any] = []
    for key, item in value.items():
        parts.append(b"," if parts else b"{")
        parts.append(dumps(key))
        parts.append(b":")
        span = layout.get(key) if key not in touched else None
        parts.append(view[span[0] : span[1]] if span is not None else dumps(item))
    parts.append(b"}" if parts else b"{}")
    return b"".join(parts)
