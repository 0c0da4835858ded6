"""toolvocab.engine.jsonio: strict reading, and a rewrite only when the result reads back the same.

Expected values are written out here by hand from RFC 8259 (no NaN/Infinity tokens; numbers
are what a double or an integer holds) and Python's ``json`` docs, not produced by jsonio.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab.engine import jsonio


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": NaN}',
        b'{"a": Infinity}',
        b'{"a": -Infinity}',
        b'{"a": 1e400}',
        b'{"a": -1e400}',
        b'{"a": 1e400, "b": 12345678901234567890123}',  # the stdlib path must refuse it too
        b'{"a": NaN, "b": 12345678901234567890123}',
        b'{"a": "\xff"}',
        b'{"a": "\xed\xa0\x80", "b": 12345678901234567890123}',  # UTF-8-encoded surrogate
        b'{"a": "\\ud800", "b": NaN}',
        b"[" * 2000 + b"]" * 2000,
        b'{"a":' + b"[" * 401 + b"]" * 401 + b"}",
        b'{"a": 1',
    ],
)
def test_what_a_strict_reader_refuses_is_refused(raw):
    with pytest.raises(ValueError):
        jsonio.loads(raw)


def test_big_integers_and_lone_surrogates_are_read_exactly():
    value = jsonio.loads(b'{"n": 123456789012345678901234567890, "s": "a\\ud800b", "m": -98765432109876543210}')
    assert value == {"n": 123456789012345678901234567890, "s": "a\ud800b", "m": -98765432109876543210}
    out = jsonio.dumps(value)
    assert out == b'{"n":123456789012345678901234567890,"s":"a\\ud800b","m":-98765432109876543210}'
    assert jsonio.loads(out) == value


def test_depth_limit_is_exact():
    ok = b'{"a":' + b"[" * (jsonio.MAX_DEPTH - 1) + b"]" * (jsonio.MAX_DEPTH - 1) + b"}"
    deep = b'{"a":' + b"[" * jsonio.MAX_DEPTH + b"]" * jsonio.MAX_DEPTH + b"}"
    assert jsonio.loads(ok)["a"] is not None
    with pytest.raises(ValueError):
        jsonio.loads(deep)
    # brackets inside strings are text, not nesting
    assert jsonio.loads(b'{"a": "' + b"[" * 5000 + b'"}') == {"a": "[" * 5000}


def test_rewrite_refuses_a_body_with_a_repeated_key():
    raw = b'{"model": "a", "tools": [], "model": "b"}'
    value = jsonio.loads(raw)
    value["extra"] = 1
    assert jsonio.rewrite(raw, value) is None
    nested = b'{"tools": [{"name": "x", "name": "y"}]}'
    assert jsonio.rewrite(nested, jsonio.loads(nested)) is None


def test_rewrite_refuses_what_cannot_be_written():
    raw = b'{"a": 1}'
    assert jsonio.rewrite(raw, {"a": float("nan")}) is None
    assert jsonio.rewrite(raw, {"a": object()}) is None
    assert jsonio.rewrite(raw, {1: "non-string key"}) in (None, b'{"1":"non-string key"}')
    assert jsonio.rewrite(raw, {"a": 2}) == b'{"a":2}'


def test_duplicate_keys_are_detected_only_as_keys():
    assert jsonio.has_duplicate_keys(b'{"a": 1, "a": 2}')
    assert jsonio.has_duplicate_keys(b'[{"x": {"a": 1, "b": 2, "a" : 3}}]')
    assert not jsonio.has_duplicate_keys(b'{"a": "\\"a\\": 1", "b": {"a": 1}, "c": ["d", "e:"]}')
    raw = b'{"s": "\\\\", "k": {"\\"q\\"": 1, "q": 2}}'  # escaped backslash and quotes in strings and keys
    assert not jsonio.has_duplicate_keys(raw, jsonio.loads(raw))
    assert jsonio.has_duplicate_keys(b'{"\\u0061": 1, "a": 2}')  # the same key, spelled two ways


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=30,
)


@settings(max_examples=100, deadline=None)
@given(json_values)
def test_dumps_reads_back_as_the_same_value(value):
    """Whatever the value (big integers, lone surrogates in keys and strings), what dumps
    writes is strict JSON that the standard library reads back equal."""
    out = jsonio.dumps(value)
    out.decode("utf-8")  # valid UTF-8: a lone surrogate went out as its escape
    assert json.loads(out) == value
    assert jsonio.loads(out) == value


def _has_dupes_oracle(raw: bytes) -> bool:
    found = []

    def hook(pairs):
        keys = [k for k, _ in pairs]
        found.append(len(set(keys)) != len(keys))
        return dict(pairs)

    json.loads(raw, object_pairs_hook=hook)
    return any(found)


@settings(max_examples=100, deadline=None)
@given(st.dictionaries(st.text(max_size=4), json_values, max_size=5), st.data())
def test_duplicate_key_detection_agrees_with_the_standard_library(value, data):
    """Texts with and without a repeated key (inserted at the top level, spelled as JSON
    writes it) are told apart exactly as ``json.loads``'s ``object_pairs_hook`` sees them."""
    raw = json.dumps(value, ensure_ascii=data.draw(st.booleans())).encode()
    if value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        raw = b"{" + json.dumps(key).encode() + b": 0, " + raw[1:]
    assert jsonio.has_duplicate_keys(raw) == _has_dupes_oracle(raw)
    assert jsonio.has_duplicate_keys(raw, jsonio.loads(raw)) == _has_dupes_oracle(raw)


@pytest.mark.parametrize(
    "raw,dupes",
    [
        (b'{":": 1, "a": 2}', False),
        (b'{":": 1, ":": 2}', True),
        (b'{" :": 1, "b": {" :": 2}}', False),
        (b'{"a,": 1, "a,": 2}', True),
        (b'{"x": "\\": not a key", "y": 1}', False),
        (b'{"x": "\\\\", "x" : 1}', True),  # an escaped backslash ends the string: a real key follows
        (b'{"": 1, "": 2}', True),
        (b'{"{": [":"], "[": {"": ","}}', False),
    ],
)
def test_written_keys_edge_cases(raw, dupes):
    assert _has_dupes_oracle(raw) is dupes  # the expectation itself, by the standard library
    assert jsonio.has_duplicate_keys(raw) is dupes


tricky_text = st.text(alphabet='"\\:{}[], a\n\t', max_size=6)
tricky_values = st.recursive(
    st.none() | st.integers() | tricky_text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(tricky_text, tricky_values, max_size=4), st.data())
def test_duplicate_keys_with_quotes_colons_and_backslashes_in_strings(value, data):
    """Keys and strings made of quotes, colons, backslashes, brackets and whitespace (escaped
    quotes before a colon, strings that open with a colon): :func:`jsonio.loads_unique` and
    :func:`jsonio.has_duplicate_keys` agree with ``json.loads``'s ``object_pairs_hook``."""
    raw = json.dumps(
        value,
        indent=data.draw(st.sampled_from([None, 1])),
        separators=data.draw(st.sampled_from([None, (",", ":"), (", ", " : ")])),
    ).encode()
    if value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        raw = b"{" + json.dumps(key).encode() + b": 0, " + raw.lstrip()[1:]
    want = _has_dupes_oracle(raw)
    parsed, unique = jsonio.loads_unique(raw)
    assert parsed == json.loads(raw)
    assert unique is not want
    assert jsonio.has_duplicate_keys(raw) == want
    assert jsonio.has_duplicate_keys(raw, jsonio.loads(raw)) == want


@pytest.mark.parametrize("run", [1, 2, 3, 15, 16, 17, 40])
@pytest.mark.parametrize("dupe", [False, True])
def test_long_backslash_runs_before_a_quote_colon(run, dupe):
    """A string holding ``run`` backslashes (each written as two) then ``":``, and one more
    escaped quote: escaped pairs are told from key ends whatever the run's length."""
    inner = "\\" * run + '":x'
    raw = json.dumps({"a": inner, "b": {"c": inner + '\\"'}}, separators=(",", ":")).encode()
    if dupe:
        raw = b'{"a":0,' + raw[1:]
    assert jsonio.has_duplicate_keys(raw) is dupe
    assert jsonio.loads_unique(raw)[1] is not dupe


@pytest.mark.parametrize(
    "raw,value",
    [
        (b'{"n": 18446744073709551616}', {"n": 18446744073709551616}),  # 2**64: beyond orjson's integers
        (b'{"n": 9223372036854775807, "m": -9223372036854775808}', {"n": 2**63 - 1, "m": -(2**63)}),
        (b'[[{"deep": [1, 123456789012345678901234567890]}]]', [[{"deep": [1, 123456789012345678901234567890]}]]),
        (b'{"f": 1e19, "s": "1234567890123456789012"}', {"f": 1e19, "s": "1234567890123456789012"}),
    ],
)
def test_long_integers_are_exact_wherever_they_sit(raw, value):
    got = jsonio.loads(raw)
    assert got == value
    assert jsonio.dumps(got) == json.dumps(value, separators=(",", ":")).encode()


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_rewrite_refuses_a_non_finite_float_at_any_depth(bad):
    raw = b'{"a": [{"b": [1, 2.5, "x"]}], "c": null}'
    value = jsonio.loads(raw)
    assert jsonio.rewrite(raw, value) == b'{"a":[{"b":[1,2.5,"x"]}],"c":null}'
    value["a"][0]["b"].append(bad)
    assert jsonio.rewrite(raw, value) is None
    assert jsonio.rewrite(raw, [[[{"deep": {"er": bad}}]]]) is None


compact_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=2**63 - 4, max_value=2**70)
    | st.floats(allow_nan=False, allow_infinity=False)
    | tricky_text
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(tricky_text | st.text(max_size=3), inner, max_size=3),
    max_leaves=16,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(tricky_text, compact_values, max_size=4), st.data())
def test_compact_bodies_as_clients_write_them(value, data):
    """The spelling real clients send (compact, non-ASCII as is: httpx 0.28's encoder, the same
    bytes ``JSON.stringify`` and serde_json write), which :func:`jsonio.loads_unique` takes on its
    cheap path when the bytes are exactly ``orjson.dumps`` of what they read as: a key repeated
    anywhere (top level or nested, spelled compactly too) and integers beyond 64 bits are still
    seen, as ``json.loads``'s ``object_pairs_hook`` and exact integers see them."""
    raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    where = data.draw(st.sampled_from(["none", "top", "nested"]))
    if where == "top" and value:
        key = data.draw(st.sampled_from(sorted(value)))
        raw = b"{" + json.dumps(key, ensure_ascii=False).encode() + b":0," + raw[1:]
    elif where == "nested":
        key = data.draw(tricky_text)
        inner = json.dumps({key: 1}, ensure_ascii=False, separators=(",", ":")).encode()
        raw = (
            b'{"x":[' + inner[:-1] + b"," + inner[1:] + b"]," + raw[1:]
            if value
            else b'{"x":[' + inner[:-1] + b"," + inner[1:] + b"]}"
        )
    want = _has_dupes_oracle(raw)
    parsed, unique = jsonio.loads_unique(raw)
    assert parsed == json.loads(raw)  # integers exact
    assert unique is not want


@pytest.mark.parametrize("depth", [254, 255, 300, 400])
@pytest.mark.parametrize("dupe", [False, True])
def test_deep_compact_bodies_still_find_a_repeated_key(depth, dupe):
    """Compact bodies nested past what ``orjson.dumps`` writes (254 levels): the cheap path
    cannot vouch for them, and a key repeated at the bottom is still found; past
    :data:`jsonio.MAX_DEPTH` they are refused."""
    bottom = b'{"b":1,"b":2}' if dupe else b'{"b":1,"c":2}'
    raw = b'{"a":' * (depth - 1) + bottom + b"}" * (depth - 1)
    assert _has_dupes_oracle(raw) is dupe
    parsed, unique = jsonio.loads_unique(raw)
    assert unique is not dupe
    raw = b"[" * (jsonio.MAX_DEPTH + 1) + b"]" * (jsonio.MAX_DEPTH + 1)
    with pytest.raises(ValueError):
        jsonio.loads_unique(raw)
