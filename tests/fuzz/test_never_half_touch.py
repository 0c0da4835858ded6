"""Never half-touch a body: each shape the independent fuzz run found, by name.

A recorded flow of each dialect (flows/, mode auto, JSON answer needing a repair) is driven
through the hooks with one targeted change to its request or its answer. Expectations are
written here by hand: what a strict JSON reader refuses, or what repeats a key, reaches the
other side byte-identical and its answer is not repaired; the wrong-typed fields that raised
tracebacks pass without an ERROR record.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import random
import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flowreplay as fr  # noqa: E402
import fuzzlib as fz  # noqa: E402


@pytest.fixture(scope="module", params=["saved", "plain"])
def harness(request):
    """The hooks as mitmproxy drives them: ``saved`` as when something saves or shows flows (every
    request read whole), ``plain`` as plain mitmdump (a request the plan leaves as sent only
    peeked, and read whole at its answer's first change: toolvocab.dialects.pipeline)."""
    counter = fz.ErrorCounter()
    logging.getLogger().addHandler(counter)
    seeds = fz.load_seeds()
    try:
        with fr.Replayer() as replayer:
            if request.param == "plain":
                replayer.addon.recorder.saves_bodies = lambda: False
            yield replayer, seeds, counter
    finally:
        logging.getLogger().removeHandler(counter)


def repaired_seed(seeds, dialect: str, sse: bool = False) -> fz.Seed:
    """A flow of ``dialect`` in auto mode whose answer (JSON, or with ``sse`` streamed) the addon repairs."""
    for seed in seeds[dialect]:
        if (
            seed.sse == sse
            and seed.options.get("mode") == "auto"
            and not seed.options.get("profiles")
            and "br05" in seed.name
        ):
            return seed
    raise AssertionError(f"no br05 {'streamed' if sse else 'JSON'} seed for {dialect}")


#: Where each dialect's transcript starts in a request: a value put in its first entry lies where
#: the peek skips it.
TRANSCRIPT = {"anthropic": b"messages", "openai_chat": b"messages", "openai_responses": b"input", "gemini": b"contents"}


def in_transcript(raw: bytes, dialect: str, token: bytes) -> bytes:
    """``raw`` with ``"x_fuzz": <token>`` as the first key of the transcript's first entry."""
    m = re.search(rb'"' + TRANSCRIPT[dialect] + rb'"\s*:\s*\[\s*\{', raw)
    assert m is not None
    return raw[: m.end()] + b'"x_fuzz":' + token + b"," + raw[m.end() :]


def drive(harness, seed: fz.Seed, request: bytes, answer: bytes) -> fz.Outcome:
    replayer, _, counter = harness
    return fz.drive(replayer, fz.Mutated(seed, request, answer), random.Random(0), counter)


def with_field(raw: bytes, token: bytes) -> bytes:
    """``raw`` (a JSON object) with ``"x_fuzz": <token>`` added as its first key, token as is."""
    assert raw.lstrip().startswith(b"{")
    start = raw.index(b"{") + 1
    return raw[:start] + b'"x_fuzz":' + token + b"," + raw[start:]


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_the_seed_is_repaired_as_is(harness, dialect):
    """The control: unchanged, the flow's answer is repaired (so 'not repaired' below means something)."""
    seed = repaired_seed(harness[1], dialect)
    o = drive(harness, seed, seed.request, seed.answer)
    assert o.answer_out != seed.answer and not o.errors


@pytest.mark.parametrize("dialect", fz.DIALECTS)
@pytest.mark.parametrize(
    "token",
    [
        b"NaN",
        b"Infinity",
        b"-Infinity",
        b"1e400",
        b"[1e400, 123456789012345678901234567890]",
        b'"\xff"',
        b"[" * 1100 + b"]" * 1100,
        b"[" * 500 + b"]" * 500,
    ],
    ids=["NaN", "Infinity", "-Infinity", "1e400", "1e400+bigint", "invalid-utf8", "depth1100", "depth500"],
)
def test_a_request_a_strict_reader_refuses_is_not_touched_nor_its_answer(harness, dialect, token):
    seed = repaired_seed(harness[1], dialect)
    request = with_field(seed.request, token)
    o = drive(harness, seed, request, seed.answer)
    assert o.request_out == request
    assert o.answer_out == seed.answer
    assert not o.errors
    assert o.record and o.record.get("skipped")


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_a_request_with_a_repeated_key_is_left_as_sent(harness, dialect):
    seed = repaired_seed(harness[1], dialect)
    request = with_field(seed.request, b'"a","x_fuzz":"b"')
    o = drive(harness, seed, request, seed.answer)
    assert o.request_out == request and o.answer_out == seed.answer and not o.errors


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_a_repeated_key_in_a_request_left_unchanged_still_leaves_its_answer(harness, dialect):
    """Repair mode adds no prompt sentence, so the request would not be rewritten: its answer is
    still left as sent (a JSON answer's ids and lifted calls change outside the resolver, a
    stream's first change cannot wait for a late look: the request hook decides)."""
    seed = dataclasses.replace(repaired_seed(harness[1], dialect))
    seed.options = {**seed.options, "mode": "repair"}
    control = drive(harness, seed, seed.request, seed.answer)
    assert control.request_out == seed.request and control.answer_out != seed.answer and not control.errors
    request = with_field(seed.request, b'"a","x_fuzz":"b"')
    o = drive(harness, seed, request, seed.answer)
    assert o.request_out == request and o.answer_out == seed.answer and not o.errors
    assert o.record and "repeats a key" in (o.record.get("skipped") or "")


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_big_integers_and_lone_surrogates_survive_a_rewritten_request(harness, dialect):
    seed = repaired_seed(harness[1], dialect)
    request = with_field(seed.request, b'[123456789012345678901234567890, "a\\udfffb", -98765432109876543210]')
    o = drive(harness, seed, request, seed.answer)
    assert not o.errors
    assert o.request_out != request  # the prompt sentence went in
    assert b"123456789012345678901234567890" in o.request_out and b"-98765432109876543210" in o.request_out
    assert json.loads(o.request_out)["x_fuzz"][1] == "a\udfffb"
    assert o.answer_out != seed.answer  # and the answer is repaired as usual


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_an_answer_a_strict_reader_refuses_or_with_a_repeated_key_passes_as_sent(harness, dialect):
    seed = repaired_seed(harness[1], dialect)
    for token in (b"NaN", b"1e400", b'"a","x_fuzz":"b"', b"[" * 600 + b"]" * 600):
        answer = with_field(seed.answer, token)
        o = drive(harness, seed, seed.request, answer)
        assert o.answer_out == answer, token[:20]
        assert not o.errors


@pytest.mark.parametrize(
    "dialect,field,value",
    [
        ("openai_chat", "tools", True),
        ("openai_chat", "tools", 7),
        ("openai_chat", "functions", 1.5),
        ("openai_chat", "messages", False),
        ("openai_responses", "tools", True),
        ("openai_responses", "tools", 3),
        ("anthropic", "messages", 0),
        ("gemini", "contents", True),
    ],
)
def test_wrong_types_in_the_request_pass_without_a_traceback(harness, dialect, field, value):
    seed = repaired_seed(harness[1], dialect)
    body = json.loads(seed.request)
    body[field] = value
    request = json.dumps(body).encode()
    o = drive(harness, seed, request, seed.answer)
    assert not o.errors, o.errors


@pytest.mark.parametrize("value", [3, 1.5, True, "x", {"a": 1}, [[1]], [{"type": ["function_call"]}]])
def test_a_responses_output_of_any_type_passes_without_a_traceback(harness, value):
    seed = repaired_seed(harness[1], "openai_responses")
    answer = json.loads(seed.answer)
    answer["output"] = value
    raw = json.dumps(answer).encode()
    o = drive(harness, seed, seed.request, raw)
    assert not o.errors, o.errors
    assert o.answer_out == raw


def test_an_unknown_event_with_a_delta_object_inside_a_call_changes_nothing(harness):
    """A Responses stream whose calls need no repair, with an unknown event carrying a ``delta``
    object between a call's argument fragments, reaches the client byte-identical (the issue's
    independent run: the rewriter rewrote that call's fragments)."""
    replayer, seeds, counter = harness
    unchanged = []
    for seed in seeds["openai_responses"]:
        if seed.sse and seed.options.get("mode") == "auto" and b"function_call_arguments.delta" in seed.answer:
            if drive(harness, seed, seed.request, seed.answer).answer_out == seed.answer:
                unchanged.append(seed)
    assert unchanged, "no Responses stream that passes unchanged"
    unknown = (
        b'event: response.x_unknown\ndata: {"type":"response.x_unknown","output_index":0,"delta":{"partial":"{"}}\n\n'
    )
    for seed in unchanged:
        at = seed.answer.index(b"event: response.function_call_arguments.delta")
        answer = seed.answer[:at] + unknown + seed.answer[at:]
        o = drive(harness, seed, seed.request, answer)
        assert o.answer_out == answer, seed.name
        assert not o.errors


@pytest.mark.parametrize("dialect", fz.DIALECTS)
@pytest.mark.parametrize("sse", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize(
    "token,why",
    [
        (b'{"a":1,"a":2}', "repeats a key"),
        (b"1e400", "not JSON"),
        (b'"\xff"', "not JSON"),
        (b"[" * 401 + b"]" * 401, "not JSON"),
        (b"123456789012345678901234567890", None),
    ],
    ids=["repeated-key", "1e400", "invalid-utf8", "depth401", "bigint"],
)
def test_what_a_strict_reader_refuses_deep_in_a_transcript_leaves_the_answer(harness, dialect, sse, token, why):
    """A request the plan leaves as sent (repair mode), with a value deep in its transcript that
    a strict reader refuses: the request goes as sent, and so does its answer, whether the
    request was read whole at once or only peeked (then read whole at the answer's first change,
    for JSON and streamed answers in pieces of 1-64 bytes). A big integer is strict JSON: the
    answer is repaired."""
    seed = dataclasses.replace(repaired_seed(harness[1], dialect, sse=sse))
    seed.options = {**seed.options, "mode": "repair"}
    control = drive(harness, seed, seed.request, seed.answer)
    assert control.request_out == seed.request and control.answer_out != seed.answer and not control.errors
    request = in_transcript(seed.request, dialect, token)
    from toolvocab import dialects

    # the peek reads it: the check is left for later
    assert dialects.by_name(dialect).peek("POST", seed.flow.request.path, request) is not None
    o = drive(harness, seed, request, seed.answer)
    assert o.request_out == request and not o.errors
    if why is None:
        assert o.answer_out == control.answer_out
    else:
        assert o.answer_out == seed.answer
        assert o.record and why in (o.record.get("skipped") or "")
