"""End to end: real OpenCode (openai-compatible provider, Chat Completions) -> mitmdump + toolvocab
-> fake upstream.

The fake upstream answers OpenCode's main model call with ``Read {"file_path": <notes file>}``
(Claude Code's name and argument key).  OpenCode declares ``read {filePath, offset, limit}``.
OpenCode repairs a name that differs only in case by itself, so with the addon off it does run
``read`` -- with the wrong argument key, which its schema check rejects.  What happened shows up in
its *second* tool-bearing model call:

* ``toolvocab_mode=auto``: the addon renamed the call to ``read`` and fitted ``file_path`` to
  ``filePath``; OpenCode read the file and the ``role: tool`` message carries the file's marker.
* ``toolvocab_mode=off``: OpenCode's tool message is its invalid-arguments error about
  ``filePath``; the marker is absent.

Its title-generation side call (no tools) goes first and gets plain text.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.e2e

FOREIGN = "Read"
FILE_NAME = "notes.txt"
FILE_MARKER = "toolvocab-marker-5e1d"
FILES = {FILE_NAME: f"first line\n{FILE_MARKER}\nlast line\n"}
PROMPT = "Show me what the notes say"


def _args(work):
    return {"file_path": str(work / FILE_NAME)}


def test_auto_mode_read_call_runs_as_read_with_file_path(agent_e2e):
    run = agent_e2e("opencode", "auto", tool=FOREIGN, args=_args, prompt=PROMPT, files=FILES)
    run.check_common()
    call, message = run.call_and_result()
    result = run.text(message.get("content"))
    assert call["function"]["name"] == "read", f"expected the repaired call 'read', got {call!r}\n{run.describe()}"
    args = json.loads(call["function"]["arguments"])
    assert args.get("filePath") == str(run.work / FILE_NAME), f"unexpected arguments {args!r}\n{run.describe()}"
    assert FILE_MARKER in result, f"tool message does not carry the file's marker: {result!r}\n{run.describe()}"
    assert any(d.get("name") == FOREIGN and d.get("target") == "read" for d in run.decisions()), (
        f"no toolvocab decision Read -> read recorded\n{run.describe()}"
    )


def test_off_mode_read_call_fails_on_arguments(agent_e2e):
    run = agent_e2e("opencode", "off", tool=FOREIGN, args=_args, prompt=PROMPT, files=FILES)
    run.check_common()
    call, message = run.call_and_result()
    result = run.text(message.get("content"))
    # OpenCode itself lowercases "Read" to its "read" tool, then rejects the argument key.
    assert call["function"]["name"] == "read", f"unexpected call in history {call!r}\n{run.describe()}"
    assert "file_path" in json.loads(call["function"]["arguments"]), (
        f"mode off must not change the arguments, got {call!r}\n{run.describe()}"
    )
    assert "The read tool was called with invalid arguments" in result and "filePath" in result, (
        f"unexpected tool message: {result!r}\n{run.describe()}"
    )
    assert FILE_MARKER not in result, f"the file was read anyway: {result!r}\n{run.describe()}"
    print(f"OpenCode {run.binary.version}: declared tools the system text does not mention: {run.unmentioned()}")
