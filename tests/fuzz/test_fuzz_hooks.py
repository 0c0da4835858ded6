"""Fuzz: mutated request bodies and upstream answers of all four dialects through the addon's hooks.

Each example takes a recorded flow of the dialect (``flows/``), mutates its request body, its
answer or both (tests/fuzz/fuzzlib.py lists the mutations), drives it through requestheaders →
request → responseheaders → the stream callable (chunks of 1 byte up to 4 KB, in some inputs with
empty chunks ``b""`` mid-stream, then ``b""``) → response, and checks (half the inputs as plain
mitmdump runs them, nothing saving flows, some of those in repair mode: a request the plan leaves
as sent is then only peeked and read whole at its answer's first change, toolvocab.dialects.pipeline;
the figures count them as ``request_only_peeked``):

- a request body a strict JSON reader refuses, or that repeats a key, reaches the upstream
  byte-identical, and its answer reaches the client byte-identical;
- what the addon changed is strict JSON again and differs only in tool names, tool-call
  arguments, ids and the prompt sentence (the leaves of both sides are compared); in an answer
  where the record shows no call renamed or fitted, the arguments (whole or in fragments) come
  out as they came (empty arguments may be written as ``{}``);
- every flow completes within ``fuzzlib.STALL_SECONDS``;
- no log record at ERROR from the addon's own files (a traceback is one).

Examples per dialect: ``TOOLVOCAB_FUZZ_EXAMPLES`` (default 100: the quick profile of the README
command; ``.ci/run`` runs 10000). ``TOOLVOCAB_FUZZ_REPORT=FILE`` writes the figures (inputs,
altered, not handled, stalls, tracebacks, findings) as JSON; they are printed with ``-s`` too.

Findings marked ``known:`` are counted and reported, not failed on: a request whose rewrite
dropped a repeated tool declaration (now only a byte-for-byte repeat is dropped, so its
leaves are the first declaration's; the finding stays reported for what the oracle cannot tell).
An SSE event whose data repeats a key and that comes out changed is a failure (such an
event, what is held and the rest pass as they came).

:func:`test_rewriters_do_not_depend_on_how_the_stream_is_cut` feeds each dialect's stream
rewriter directly: the same answer whole, and in pieces of 1 to 64 bytes with empty pieces
``feed(b"")`` between them, must give the same bytes.
"""

from __future__ import annotations

import collections
import json
import logging
import os
import random
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flowreplay as fr  # noqa: E402
import fuzzlib as fz  # noqa: E402
from harness.dialects import context  # noqa: E402
from toolvocab.dialects import pipeline  # noqa: E402

EXAMPLES = int(os.environ.get("TOOLVOCAB_FUZZ_EXAMPLES", "100"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    # The long profile (.ci/run step 5) is a fixed corpus: the same 10,000 inputs per dialect on
    # every run, so CI replays exactly what was verified; the quick profile explores anew each run.
    derandomize=EXAMPLES >= 1000,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.function_scoped_fixture],
)
#: The rewriter-level properties below cost more per example (1-byte pieces of long events, a
#: rewrite twice): at most 2,000 examples per dialect, also in the long profile (fixed corpus).
REWRITER_SETTINGS = settings(SETTINGS, max_examples=min(EXAMPLES, 2000), derandomize=EXAMPLES >= 1000)
STATS: dict[str, collections.Counter] = {d: collections.Counter() for d in fz.DIALECTS}
FINDINGS: dict[str, collections.Counter] = {d: collections.Counter() for d in fz.DIALECTS}


#: Requests the pipeline handed out only peeked (read whole at the answer's first change).
PEEKED = [0]


def _counting_peeks() -> Any:
    real = pipeline._peeked

    def counted(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        PEEKED[0] += out is not None
        return out

    pipeline._peeked = counted
    return real


@pytest.fixture(scope="module")
def harness():
    counter = fz.ErrorCounter()
    root = logging.getLogger()
    root.addHandler(counter)
    seeds = fz.load_seeds()
    real_peeked = _counting_peeks()
    try:
        with fr.Replayer() as replayer:
            fz.calibrate(replayer, seeds, counter)
            yield replayer, seeds, counter
    finally:
        pipeline._peeked = real_peeked
        root.removeHandler(counter)
        report()


def report() -> None:
    figures = {
        d: {
            "inputs": STATS[d]["inputs"],
            "altered_request": STATS[d]["altered_request"],
            "altered_answer": STATS[d]["altered_answer"],
            "request_not_strict_json": STATS[d]["not_strict"],
            "request_only_peeked": STATS[d]["peeked"],
            "stalls": STATS[d]["stalls"],
            "tracebacks": STATS[d]["tracebacks"],
            "max_seconds": round(STATS[d]["max_ms"] / 1000, 3),
            "failures": STATS[d]["failures"],
            "known_findings": dict(FINDINGS[d]),
        }
        for d in fz.DIALECTS
        if STATS[d]["inputs"]
    }
    if not figures:
        return
    print("\nfuzz figures:", json.dumps(figures, indent=1))
    path = os.environ.get("TOOLVOCAB_FUZZ_REPORT")
    if path:
        Path(path).write_text(json.dumps(figures, indent=1))


def check(dialect: str, harness, data) -> None:
    replayer, seeds, counter = harness
    rnd = fz.DrawRandom(data)
    seed = rnd.choice(seeds[dialect])
    m = fz.mutate(seed, rnd)
    chunk_seed = data.draw(st.integers(0, 2**32 - 1))
    before = PEEKED[0]
    o = fz.drive(replayer, m, random.Random(chunk_seed), counter)
    found = fz.problems(m, o)
    s = STATS[dialect]
    s["inputs"] += 1
    s["peeked"] += PEEKED[0] - before
    s["altered_request"] += o.request_out != m.request
    s["altered_answer"] += o.answer_out != m.answer
    s["not_strict"] += not fz.strict_json(m.request)[0]
    s["stalls"] += o.seconds > fz.STALL_SECONDS
    s["tracebacks"] += sum(1 for e in o.errors if "Traceback" in e or "Error" in e)
    s["max_ms"] = max(s["max_ms"], int(o.seconds * 1000))
    known = [p for p in found if p.startswith("known:")]
    for p in known:
        FINDINGS[dialect][p[:60]] += 1
    failures = [p for p in found if not p.startswith("known:")]
    s["failures"] += bool(failures)
    assert not failures, f"{seed.name} {m.labels}: " + "; ".join(failures)


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_mutated_flows_pass_or_change_only_tool_calls(dialect, harness):
    @SETTINGS
    @given(st.data())
    def run(data):
        check(dialect, harness, data)

    run()


def test_seeds_cover_every_dialect_both_ways(harness):
    _, seeds, _ = harness
    for dialect in fz.DIALECTS:
        group = seeds[dialect]
        assert len(group) >= 20, dialect
        assert any(s.sse for s in group) and any(not s.sse for s in group), dialect


def test_oracle_catches_what_it_must():
    """The oracle itself: an altered non-strict request, an added number and a dropped key
    are each reported (so a passing fuzz run means something)."""
    seed = fz.Seed("x", "anthropic", None, b'{"a": NaN}', b"{}", False, {})
    m = fz.Mutated(seed, seed.request, seed.answer)
    o = fz.Outcome(b'{"a": null}', b"{}", None, 0.0, [], "buffered")
    assert any("not strict JSON was altered" in p for p in fz.problems(m, o))
    seed = fz.Seed(
        "x", "anthropic", None, b'{"model": "m", "n": 123456789012345678901}', b'{"content": [], "x": 1}', False, {}
    )
    m = fz.Mutated(seed, seed.request, seed.answer)
    o = fz.Outcome(b'{"model": "m", "n": 1.2345678901234568e+20}', b'{"content": []}', {}, 0.0, [], "buffered")
    found = fz.problems(m, o)
    assert any("request changed beyond" in p for p in found)
    assert any("answer changed beyond" in p for p in found)
    o = fz.Outcome(seed.request, seed.answer, {}, 9.0, ["ERROR boom"], "buffered")
    found = fz.problems(m, o)
    assert any(p.startswith("stall") for p in found) and any(p.startswith("log:") for p in found)
    # a renamed tool and new arguments are allowed when the record has a call renamed or fitted
    seed = fz.Seed(
        "x",
        "anthropic",
        None,
        b'{"model": "m"}',
        b'{"content": [{"type": "tool_use", "name": "a", "input": {"x": 1}, "id": "1"}]}',
        False,
        {},
    )
    m = fz.Mutated(seed, seed.request, seed.answer)
    renamed = b'{"content":[{"type":"tool_use","name":"b","input":{"y":2},"id":"2"}]}'
    o = fz.Outcome(seed.request, renamed, {"decisions": [{"action": "rename"}]}, 0.0, [], "buffered")
    assert fz.problems(m, o) == []
    # ... and not otherwise (arguments must stay then)
    o = fz.Outcome(seed.request, renamed, {"decisions": [{"action": "keep"}]}, 0.0, [], "buffered")
    assert any("answer changed beyond" in p for p in fz.problems(m, o))
    o = fz.Outcome(
        seed.request,
        b'{"content":[{"type":"tool_use","name":"a","input":{"x":1},"id":"2"}]}',
        {"decisions": []},
        0.0,
        [],
        "buffered",
    )
    assert fz.problems(m, o) == []  # only the id changed
    # a stream whose argument fragments changed with no call repaired
    sse_in = b'event: response.function_call_arguments.delta\ndata: {"type":"response.function_call_arguments.delta","delta":"{\\"a\\""}\n\n'
    sse_out = sse_in.replace(b'\\"a', b'\\"b')
    seed = fz.Seed("x", "openai_responses", None, b'{"model": "m"}', sse_in, True, {})
    m = fz.Mutated(seed, seed.request, seed.answer)
    o = fz.Outcome(seed.request, sse_out, {"decisions": [{"action": "keep"}]}, 0.0, [], "callable")
    assert any("stream changed beyond" in p for p in fz.problems(m, o))
    # a call lifted out of text markup: allowed when the text names the call and writes every
    # argument it came with, under an id the upstream never sent; not when a value differs, the
    # text does not name the call, or the id is the upstream's
    text = json.dumps(
        {"id": "msg_1", "content": [{"type": "text", "text": '<function=read_file>{"path": 7}</function>'}]}
    ).encode()
    seed = fz.Seed("x", "anthropic", None, b'{"model": "m"}', text, False, {})
    m = fz.Mutated(seed, seed.request, seed.answer)
    lifted = {"decisions": [{"action": "keep", "name": "read_file", "target": "read_file", "call_id": "tc_1"}]}
    for value, record, ok in (
        (7, lifted, True),
        (8, lifted, False),
        (7, {"decisions": [{**lifted["decisions"][0], "target": "write_file", "name": "write_file"}]}, False),
        (7, {"decisions": [{**lifted["decisions"][0], "call_id": "msg_1"}]}, False),
    ):
        out = json.dumps(
            {
                "id": "msg_1",
                "content": [{"type": "tool_use", "id": "tc_1", "name": "read_file", "input": {"path": value}}],
            }
        ).encode()
        found = fz.problems(m, fz.Outcome(seed.request, out, record, 0.0, [], "buffered"))
        assert (found == []) is ok, (value, record, found)


def test_a_tool_name_with_a_lone_surrogate_is_aliased_mapped_back_and_saved(harness):
    """A declared name holding a lone surrogate escape (valid JSON grammar): the request goes out
    with an alias the grammar accepts, the upstream's call under that alias comes back under the
    client's exact name (escape included), and the flow can be saved."""
    replayer, seeds, counter = harness
    seed = next(
        s for s in seeds["anthropic"] if not s.sse and s.options.get("mode") == "auto" and not s.options.get("profiles")
    )
    body = (
        b'{"model":"m","stream":false,"tools":[{"name":"Bash\\ud800","input_schema":{"type":"object",'
        b'"properties":{"command":{"type":"string"}}}},{"name":"Read","input_schema":{"type":"object"}}],'
        b'"messages":[{"role":"user","content":"hi"}]}'
    )
    first = fz.Mutated(seed, body, b"{}")
    o = fz.drive(replayer, first, random.Random(0), counter)
    assert not o.errors
    sent = json.loads(o.request_out)
    alias = sent["tools"][0]["name"]
    assert alias.startswith("Bash") and alias.isascii() and "\\" not in alias
    answer = json.dumps(
        {
            "content": [{"type": "tool_use", "id": "t1", "name": alias, "input": {"command": "ls"}}],
            "stop_reason": "tool_use",
        }
    ).encode()
    o = fz.drive(replayer, fz.Mutated(seed, body, answer), random.Random(0), counter)
    assert not o.errors
    got = json.loads(o.answer_out)
    assert got["content"][0]["name"] == "Bash\ud800"
    assert b"Bash\\ud800" in o.answer_out  # written back as the escape the client sent


def _bound(dialect: str, request: bytes) -> tuple:
    """As the addon binds a flow: ``dialect``'s module, a resolver over the tools ``request``
    declares (with the plan's reverse map) and the plan (aliases, no sentence)."""
    import toolvocab.dialects as tvdialects
    from harness.dialects import Recorder
    from toolvocab.engine import jsonio
    from toolvocab.engine.ladder import Toolset
    from toolvocab.engine.plan import make_plan

    d = tvdialects.by_name(dialect)
    body = jsonio.loads(request)
    tools = Toolset(d.declared_tools(body))
    plan = make_plan(tools, d.system_texts(body), add_sentence=False, transcript_names=d.transcript_names(body))
    return d, Recorder(tools, plan), plan


def _rewrite(dialect: str, request: bytes, pieces: list[bytes]) -> bytes:
    """``pieces`` through a fresh stream rewriter of ``dialect`` bound to ``request``'s tools."""
    from harness.dialects import drive

    d, resolver, plan = _bound(dialect, request)
    return drive(d.stream_rewriter(context(resolver, plan, flow_key="fuzz")), pieces)


def _draw_answer(data, dialect: str, seeds: list) -> tuple:
    """A seed flow drawn from ``seeds`` and its answer, its SSE mutated (a JSON array as it came):
    (the draw's random source, the seed, the mutations' labels, the answer)."""
    rnd = fz.DrawRandom(data)
    seed = rnd.choice(seeds)
    labels: list[str] = []
    answer = fz.mutate_sse(seed.answer, dialect, rnd, labels) if seed.answer.lstrip()[:1] != b"[" else seed.answer
    return rnd, seed, labels, answer


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_rewriters_do_not_depend_on_how_the_stream_is_cut(dialect):
    seeds = [s for s in fz.load_seeds()[dialect] if s.sse]

    @REWRITER_SETTINGS
    @given(st.data())
    def run(data):
        rnd, seed, labels, answer = _draw_answer(data, dialect, seeds)
        whole = _rewrite(dialect, seed.request, [answer])
        cuts = random.Random(data.draw(st.integers(0, 2**32 - 1)))
        lo, hi = rnd.choice([(1, 1), (1, 3), (1, 64)])
        if len(answer) > 50_000:
            lo, hi = 100, 400  # a long event in small pieces (at most ~2,000), as in fz.mutate
        pieces: list[bytes] = [b""]
        i = 0
        while i < len(answer):
            n = cuts.randint(lo, hi)
            pieces.append(answer[i : i + n])
            i += n
            if cuts.random() < 0.3:
                pieces.append(b"")
        assert _rewrite(dialect, seed.request, pieces) == whole, f"{seed.name} {labels} pieces {lo}..{hi}"

    run()


STALLS_CHECKED: collections.Counter = collections.Counter()


@pytest.mark.parametrize("dialect", fz.DIALECTS)
def test_a_stall_release_sends_every_byte_not_yet_sent_once_and_then_passes_through(dialect):
    """The stall bound's path (``_StreamCallable._release_stalled`` calls the rewriter's
    ``salvage()`` while a block is held): from that moment the client gets the upstream's bytes
    exactly, from the first one not yet sent on — nothing lost, nothing twice."""
    seeds = [s for s in fz.load_seeds()[dialect] if s.sse]

    @REWRITER_SETTINGS
    @given(st.data())
    def run(data):
        rnd, seed, labels, answer = _draw_answer(data, dialect, seeds)
        d, resolver, plan = _bound(dialect, seed.request)
        tools = resolver.tools
        if dialect == "gemini" and tools.tools and rnd.choice([True, False]):
            # Gemini holds only text that may be a call written as markup (its calls come whole):
            # a leaked Hermes call in pieces, to a declared tool.
            text = '<tool_call>\n{"name": %s, "arguments": {}}\n</tool_call>' % json.dumps(tools.tools[0].name)
            cut = sorted({rnd.randint(1, len(text) - 1) for _ in range(3)})
            pieces = [text[a:b] for a, b in zip([0, *cut], [*cut, len(text)])]
            answer = b"".join(
                b"data: "
                + json.dumps(
                    {
                        "candidates": [
                            {
                                "content": {"role": "model", "parts": [{"text": p}]},
                                **({"finishReason": "STOP"} if k == len(pieces) - 1 else {}),
                            }
                        ]
                    }
                ).encode()
                + b"\r\n\r\n"
                for k, p in enumerate(pieces)
            )
            labels.append(f"leaked_call_in_{len(pieces)}_events")
        rw = d.stream_rewriter(context(resolver, plan, flow_key="fuzz"))
        cuts = random.Random(data.draw(st.integers(0, 2**32 - 1)))
        at_held = data.draw(st.integers(0, 5))  # which moment with a block held the stall hits
        before: list[bytes] = []
        after: list[bytes] = []
        consumed, stalled_at, i = 0, None, 0
        while i < len(answer):
            piece = answer[i : i + cuts.randint(1, 64 if len(answer) < 50_000 else 4096)]
            i += len(piece)
            consumed += len(piece)
            (before if stalled_at is None else after).extend(rw.feed(piece))
            if stalled_at is None and rw.has_held():
                if at_held == 0:
                    released = b"".join(rw.salvage())
                    stalled_at = consumed - len(released)
                    after.append(released)
                at_held -= 1
        (before if stalled_at is None else after).extend(rw.finish())
        if stalled_at is None:
            return  # no block held at the chosen moment: nothing to check here
        assert b"".join(after) == answer[stalled_at:], f"{seed.name} {labels}"
        assert rw.error == "salvaged"
        STALLS_CHECKED[dialect] += 1

    run()
    assert STALLS_CHECKED[dialect] > 0, "no input held a block: the property was never checked"
