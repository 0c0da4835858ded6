"""Issue 11 through a real mitmdump: what the request hook skips when nothing saves flows.

The transcript's tool errors are classified for whoever reads the record; plain mitmdump shows
no record, so it classifies nothing. With ``-w`` the saved record carries them, as before, and
an unchanged request goes upstream as the client's bytes either way.
"""

from __future__ import annotations

import base64
import json
import urllib.request

import pytest

import procs

pytestmark = pytest.mark.integration

BODY = json.dumps({
    "model": "m", "max_tokens": 10, "system": "Use Bash.",
    "tools": [{"name": "Bash", "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}}}],
    "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {"command": "ls"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "is_error": True,
                                      "content": "<tool_use_error>Error: No such tool available: shell</tool_use_error>"}]},
    ],
}, indent=1).encode()  # spaces and newlines: a re-serialized body would not be these bytes


def _post(port: int) -> None:
    req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/messages", data=BODY, method="POST",
                                 headers={"content-type": "application/json", "anthropic-version": "2023-06-01"})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    with opener.open(req, timeout=20) as resp:
        assert resp.status == 200
        resp.read()


@pytest.mark.parametrize("saving", [True, False], ids=["save", "plain"])
def test_unchanged_request_goes_up_as_sent_and_errors_are_classified_when_saved(tmp_path, saving):
    fake = procs.start_fake_upstream(tool_name="Bash", tool_args={"command": "ls"})
    save = tmp_path / "flows.mitm" if saving else None
    px = procs.start_mitmdump(fake.url, save_path=save)
    try:
        _post(px.port)
        got = fake.wait_requests(1)
        assert base64.b64decode(got[0]["body_b64"]) == BODY
        if saving:
            flows = px.flows()
            record = flows[0].metadata["toolvocab"]
            assert record["request_changed"] is False
            assert [(e["kind"], e["client"], e["tool"]) for e in record["tool_errors"]] == [("unknown_tool", "Claude Code", "shell")]
    finally:
        px.stop()
        fake.stop()
