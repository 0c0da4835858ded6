"""``benchmarks/inlined.py`` does what the addon does for the flows it takes the fast way: the
same record, marker, comment, request and answer bytes (a column of ``request.py`` that differed
would measure less work than the addon's, or the addon itself without saying so)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from mitmproxy import http
from mitmproxy.proxy.layers import http as http_layer

from toolvocab.replay import drive

_BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
_ADDON = str(_BENCH.parent / "addon" / "toolvocab.py")
_INLINED = str(_BENCH / "inlined.py")


@pytest.fixture(scope="module")
def bench():
    sys.path.insert(0, str(_BENCH))
    try:
        import request  # benchmarks/request.py

        yield request
    finally:
        sys.path.remove(str(_BENCH))


def _answer(body: bytes, ctype: str = "application/json") -> http.Response:
    resp = http.Response.make(200, body, {"content-type": ctype})
    resp.timestamp_start, resp.timestamp_end = 946681200.5, 946681200.75  # the timings compared too
    return resp


def _run(script: str, bench, flows: list[tuple[bytes, bytes, str]], profiles: str = "") -> tuple[list[tuple], object]:
    """Each (request body, answer, mode; ``+profiles``: with ``profiles`` as ``toolvocab_profiles``) through ``script`` in one process, as mitmdump runs a
    script: its options set through the chain, and each hook invoked on the script's module and
    its addons (a module-level function named like a hook runs too); what each flow ended with,
    and the script's module."""
    out = []
    with drive.script_context(script) as (tctx, module):
        drive.activate(tctx)
        core = drive.addon(module, "ToolVocab")
        core.recorder.saves_bodies = lambda: False  # as in plain mitmdump: nothing saves or shows flows
        for body, answer, mode in flows:
            mode, _, with_profiles = mode.partition("+")
            tctx.configure(module, toolvocab_mode=mode, toolvocab_profiles=profiles if with_profiles else "")
            assert core.mode == mode and (core.profiles is not None) is bool(with_profiles)
            f = bench.request_flow(body)
            for hook in (http_layer.HttpRequestHeadersHook(f), http_layer.HttpRequestHook(f)):
                tctx.master.addons.invoke_addon_sync(module, hook)
            sent = (f.request.content, tuple(f.request.headers.fields))
            f.response = _answer(answer)
            for hook in (http_layer.HttpResponseHeadersHook(f), http_layer.HttpResponseHook(f)):
                tctx.master.addons.invoke_addon_sync(module, hook)
            out.append((f.metadata.get("toolvocab"), f.marked, f.comment, sent, f.response.content))
        return out, module


def test_the_inlined_column_gives_every_flow_what_the_addon_gives(bench, tmp_path) -> None:
    plain = bench.transcript(200_000)
    spaced = bench.transcript(200_000, spaced=True)
    unmentioned = bench.transcript(200_000, mention_all=False)  # auto adds the sentence: written
    repeats = b'{"x":1,"x":2,' + plain[1:]  # peeked alike; the strict read refuses it at a change
    flows = [
        (plain, bench.ANSWER, "auto"),
        (plain, bench.ANSWER, "auto"),  # the fast way from here
        (plain, bench.REPAIR_ANSWER, "auto"),  # the request the fast way, the answer the addon's
        (plain, bench.ANSWER, "auto"),
        (repeats, bench.REPAIR_ANSWER, "auto"),  # left as sent: the request repeats a key
        (plain, b"[1, 2]", "auto"),  # not an object: the addon's answer hook notes it
        (plain, b"not json", "auto"),
        (plain, bench.ANSWER, "auto+profiles"),  # a profile renames Bash upstream: written
        (plain, bench.ANSWER, "auto"),
        (plain, bench.ANSWER, "auto"),
        (plain, bench.ANSWER, "repair"),  # another mode: the addon's hook, then the fast way
        (plain, bench.ANSWER, "repair"),
        (spaced, bench.ANSWER, "auto"),  # the tools section spelled otherwise: the addon's hook
        (unmentioned, bench.ANSWER, "auto"),  # written: the client's next request is read whole
        (plain, bench.ANSWER, "auto"),
        (plain, bench.ANSWER, "observe"),
    ]
    profiles = tmp_path / "profiles.toml"
    profiles.write_text('[[profile]]\nname = "b"\nhost = "anthropic"\n[profile.names]\nshell = "shell"\n')
    addon, _ = _run(_ADDON, bench, flows, str(profiles))
    inlined, module = _run(_INLINED, bench, flows, str(profiles))
    for i, (want, got) in enumerate(zip(addon, inlined, strict=True)):
        assert got == want, f"flow {i}: {flows[i][1][:40]!r} in {flows[i][2]}"
    # the fast way was taken, for requests and for answers, else this compared the addon with itself
    # flows 1-6, 9 and 11 (each after a request of the same inputs the addon peeked), and of their
    # answers those of 1, 3, 9 and 11 (the others change, or are not an object): no more, so that
    # no flow went through the fast way twice (a module-level function named like a hook would)
    assert module.taken == {"request": 8, "response": 4}
    # and what the flows got is what each kind should get
    assert addon[2][0]["calls_repaired"] == 1 and b'"Bash"' in addon[2][4]
    assert addon[4][0]["skipped"] == "request body repeats a key; passed through"
    assert addon[4][4] == bench.REPAIR_ANSWER
    assert addon[5][0]["notes"] == ["answer body is not a JSON object; passed through"]
    assert addon[7][0]["profile"] == "b" and b'"name":"shell"' in addon[7][3][0]
    assert addon[13][0]["request_changed"] is True


def test_the_dropped_column_leaves_out_only_what_it_names(bench, monkeypatch) -> None:
    """``--drop``'s parts are the script's, and with every one left out the plain flows still take
    the fast way and get the addon's bytes (what differs is the record: no timings, no marker)."""
    monkeypatch.setenv("TOOLVOCAB_INLINED_DROP", ",".join(bench._DROPS))
    plain = bench.transcript(200_000)
    flows = [(plain, bench.ANSWER, "auto")] * 3 + [(plain, bench.REPAIR_ANSWER, "auto")]
    addon, _ = _run(_ADDON, bench, flows)
    dropped, module = _run(_INLINED, bench, flows)
    assert tuple(module.DROPS) == bench._DROPS
    assert module.taken == {"request": 3, "response": 2}
    assert [flow[3:] for flow in dropped] == [flow[3:] for flow in addon]
    assert addon[1][0]["ttfb_ms"] == 500.0 and dropped[1][0]["ttfb_ms"] is None  # the finish left out
    assert dropped[3][0] == addon[3][0]  # a repaired answer is the addon's hook's
