"""End to end: a flow recorded from a real agent run round-trips through save -> replay.

Each agent runs once through ``mitmdump -s addon/toolvocab.py -w FILE`` in front of the fake
upstream (auto mode, answered with a tool it never declared). Every flow the addon handled is
then read back from the ``-w`` file and replayed through the addon the way the flow corpus is
(tests/flowreplay/replay.py: the original request, the original upstream bytes through the stream
callable in random pieces): what the upstream and the client received must come out the same.
Then the flow is adopted the way ``flowtool add`` does it (scrubbed, re-blessed) and must hold
no credential or client prompt text and still replay as recorded.
"""

from __future__ import annotations

import pytest

import flowreplay as fr
from e2e.agents import ECHO_ARGS
from e2e.agents import FOREIGN_ARGS
from e2e.agents import PROMPT

pytestmark = pytest.mark.e2e

RUNS = {
    "qwen": dict(tool="Bash", args=ECHO_ARGS, prompt=PROMPT),
    "gemini": dict(tool="Bash", args=ECHO_ARGS, prompt=PROMPT),
    "codex": dict(tool="shell", args=FOREIGN_ARGS, prompt=PROMPT),
    "opencode": dict(
        tool="Read",
        args=lambda work: {"file_path": str(work / "notes.txt")},
        prompt="Show me what the notes say",
        files={"notes.txt": "first line\nlast line\n"},
    ),
}


def _roundtrip(flows: list, describe) -> None:
    handled = [
        f for f in flows if fr.replayable(f) is None and not (f.metadata.get(fr.META_RECORD) or {}).get("skipped")
    ]
    assert handled, f"no flow handled by the addon was saved\n{describe()}"
    with fr.Replayer() as r:
        for f in handled:
            for seed in range(3):
                res = r.replay(f, seed)
                if not res.ok:
                    pytest.fail(
                        "a saved agent flow does not replay as recorded:\n" + fr.render_failure(f, res), pytrace=False
                    )
            adopted = fr.clone(f)
            fr.scrub_flow(adopted)
            blessed = r.replay(adopted, 0).flow
            again = r.replay(blessed, 1)
            assert again.ok, fr.render_failure(blessed, again)
    assert any(fr.client_calls(f) for f in handled), "no tool call reached the agent"


def _leak_free(tmp_path, flows) -> None:
    with fr.Replayer() as r:
        out = []
        for f in flows:
            if fr.replayable(f) is None:
                fr.scrub_flow(f)
                out.append(r.replay(f, 0).flow)
    path = tmp_path / "adopted.mitm"
    fr.write_flows(path, out)
    assert fr.leaks(path) == []


@pytest.mark.parametrize("key", sorted(RUNS))
def test_agent_flow_roundtrips(agent_e2e, tmp_path, key):
    run = agent_e2e(key, "auto", **RUNS[key])
    run.check_common()
    flows = run.flows()
    _roundtrip(flows, run.describe)
    _leak_free(tmp_path, flows)


def test_claude_code_flow_roundtrips(claude_e2e, tmp_path):
    run = claude_e2e("auto")
    assert run.client.rc == 0, run.describe()
    flows = run.flows()
    _roundtrip(flows, run.describe)
    _leak_free(tmp_path, flows)
