"""A saved flow replays as a test of the headers too: toolvocab asks the upstream for an answer
it can read as it streams (``Accept-Encoding: identity``) and sends a rewritten stream chunked
(its ``Content-Length`` no longer true). The headers it changed are kept as they were
(``metadata["toolvocab_headers"]``), a replay starts from them, and a build that stops changing
them — or stops streaming — fails the replay, strict or not."""

from __future__ import annotations

import pytest
from mitmproxy import http

import flowreplay as fr
from harness.fixtures import env  # noqa: F401  (pytest fixture)
from harness.fixtures import loaded  # noqa: F401
from toolvocab.replay.flows import original_upstream

SAMPLE = fr.REPO / "flows" / "harness" / "br05-lowercase-bash-anthropic-sse.mitm"


@pytest.fixture(scope="module")
def replayer():
    with fr.Replayer(strict=False) as r:
        yield r


def as_first_seen() -> http.HTTPFlow:
    """The sample flow saved as if the client had accepted compressed answers and the upstream
    had given a length (``toolvocab_headers`` by hand: a replay starts from them)."""
    f = fr.load_flows(SAMPLE)[0]
    length = str(len(original_upstream(f)))
    f.metadata["toolvocab_headers"] = {
        "request": {"accept-encoding": "gzip, deflate, br, zstd"},
        "response": {"content-length": length, "transfer-encoding": None},
    }
    return f


def recording(replayer) -> http.HTTPFlow:
    """What mitmdump -w would save of :func:`as_first_seen` through the current addon."""
    replayer._activate()
    result = replayer.replay(as_first_seen())
    assert result.got.response is not None
    return result.flow


def test_the_headers_toolvocab_changed_are_kept_as_they_were(replayer):
    saved = recording(replayer)
    assert saved.request.headers["accept-encoding"] == "identity"
    assert "content-length" not in saved.response.headers and saved.response.headers["transfer-encoding"] == "chunked"
    assert saved.metadata["toolvocab_headers"] == {
        "request": {"accept-encoding": "gzip, deflate, br, zstd"},
        "response": {"content-length": str(len(original_upstream(saved))), "transfer-encoding": None},
    }
    assert replayer.replay(saved).problems == []


def test_a_build_that_no_longer_asks_for_identity_fails_the_replay(replayer, monkeypatch):
    saved = recording(replayer)
    monkeypatch.setattr(http.Request, "anticomp", lambda self: None)
    assert replayer.replay(saved).problems == ["request headers the upstream receives"]


def test_a_build_that_no_longer_streams_fails_the_replay(replayer, monkeypatch):
    """Held whole, the answer keeps the upstream's ``Content-Length`` and reaches the client at
    the end: both are differences a non-strict replay reports."""
    saved = recording(replayer)
    core = type(replayer.addon)
    monkeypatch.setattr(core, "_responseheaders", lambda self, flow, state: None)
    problems = replayer.replay(saved).problems
    assert "response headers the client receives" in problems
    assert "how the answer reaches the client (streamed or whole)" in problems


def test_a_recording_made_before_headers_were_kept_still_replays(replayer):
    """Flows saved without ``toolvocab_headers`` (the corpus, older recordings) start from the
    headers as saved: the addon changes nothing there again."""
    replayer._activate()
    assert replayer.replay(fr.load_flows(SAMPLE)[0]).problems == []


def test_the_addon_keeps_the_headers_it_changes_on_a_live_flow(env):
    """Through the hooks as mitmproxy runs them (not a replay): the client's ``Accept-Encoding``
    and the upstream's ``Content-Length`` are kept as they were; a header it left alone is not."""
    import orjson

    import harness

    request = orjson.loads((fr.REPO / "tests" / "fixtures" / "anthropic" / "request-claude-code.json").read_bytes())
    upstream = (fr.REPO / "tests" / "fixtures" / "anthropic" / "stream-foreign-tool.sse").read_bytes()
    f = harness.make_flow(
        {**request, "stream": True},
        host="api.anthropic.com",
        path="/v1/messages",
        headers=[("content-type", "application/json"), ("accept-encoding", "gzip, br")],
        upstream=upstream,
        resp_type="text/event-stream",
        resp_headers=[("content-length", str(len(upstream)))],
    )
    harness.replay(env, f, 0)
    assert f.request.headers["accept-encoding"] == "identity"
    assert f.metadata["toolvocab_headers"] == {
        "request": {"accept-encoding": "gzip, br"},
        "response": {"content-length": str(len(upstream)), "transfer-encoding": None},
    }


def test_a_flow_the_addon_no_longer_handles_is_not_said_to_stream_differently(replayer):
    """Replayed with ``--hosts`` that match nothing, a buffered answer is still buffered: no
    streamed-or-whole difference is made up from the missing record."""
    saved = fr.load_flows(fr.REPO / "flows" / "harness" / "br03-qwen-bash-anthropic-json.mitm")[0]
    replayer._activate()
    replayer.overrides = {"hosts": "^nothing-matches$"}
    try:
        problems = replayer.replay(saved).problems
    finally:
        replayer.overrides = {}
    assert "how the answer reaches the client (streamed or whole)" not in problems


def test_a_stream_the_upstream_compressed_replays_from_its_compressed_bytes(replayer):
    """An upstream that gzips its stream although asked for identity: the client gets it decoded
    (no ``content-encoding``), the saved flow keeps the upstream's gzip bytes and header, and a
    replay starts from them and replays as recorded."""
    import gzip

    first = as_first_seen()
    plain = original_upstream(first)
    first.metadata["toolvocab_upstream"] = gzip.compress(plain)
    first.response.headers["content-encoding"] = "gzip"
    replayer._activate()
    saved = replayer.replay(first).flow
    assert "content-encoding" not in saved.response.headers
    assert saved.metadata["toolvocab_headers"]["response"]["content-encoding"] == "gzip"
    assert gzip.decompress(original_upstream(saved)) == plain
    assert b'"name":"Bash"' in saved.response.raw_content  # decoded, repaired
    assert replayer.replay(saved).problems == []
