"""End to end: a repaired call means what the model meant, in the real agent.

* Qwen Code 0.15.10's ``read_file`` offset is a 0-based line; Claude Code's ``Read`` offset a
  1-based one. ``Read {offset: 2, limit: 1}`` must reach Qwen Code as ``offset: 1`` and read the
  file's second line. ``Read {file_path}`` (2000 lines) reaches it with ``limit: 2000``, where
  its own default is 1000.
* ``write_file {path, content, mode: "append"}`` to Qwen Code (which ignores keys it does not
  declare): renaming ``path`` would overwrite the file; the call is left, the file keeps its text.
* ``terminal {command, timeout: 30}`` (Hermes Agent: seconds, then killed) reaches Qwen Code's
  ``run_shell_command`` with ``timeout: 30000`` (milliseconds, then killed), and is left for Claude
  Code, whose ``Bash`` moves a command still running at its timeout to the background.
* ``exec_command {cmd: "cd ..; echo …"}`` (Codex: a new process each call) is left for Claude
  Code, whose ``Bash`` keeps the working directory for the next call: Claude Code answers with its
  own "No such tool" error and runs nothing.
* After Claude Code's own ``Bash`` ran ``cd sub``, an ``exec_command {cmd: "echo …"}`` is left too:
  in ``Bash`` it would run in ``sub``, in Codex where a new process starts. Without the ``cd``
  (the control) the same call reaches ``Bash`` and runs.
* Claude Code's own ``Read`` finds a relative path from where its ``Bash`` was left (``f.txt``
  after ``cd sub`` is ``sub/f.txt``), OpenCode's ``read`` from where OpenCode started: after that
  ``cd``, ``read {filePath: "f.txt"}`` is left; without it (the control) it reaches ``Read`` and
  reads the top ``f.txt``.
"""

from __future__ import annotations

import json

import pytest

from e2e.agents import MARKER

pytestmark = pytest.mark.e2e

LINES = "first line\nsecond line\nthird line\n"


def test_a_1_based_offset_reaches_qwen_code_0_based(agent_e2e):
    run = agent_e2e(
        "qwen",
        "auto",
        tool="Read",
        args=lambda work: {"file_path": str(work / "notes.txt"), "offset": 2, "limit": 1},
        prompt="Read the second line of notes.txt.",
        files={"notes.txt": LINES},
    )
    run.check_common()
    call, message = run.call_and_result()
    args = json.loads(call["function"]["arguments"])
    assert call["function"]["name"] == "read_file" and args["offset"] == 1 and args["limit"] == 1, (
        f"{call!r}\n{run.describe()}"
    )
    result = run.text(message.get("content"))
    assert "second line" in result and "first line" not in result and "third line" not in result, (
        f"{result!r}\n{run.describe()}"
    )


def test_a_read_without_a_limit_reads_in_qwen_code_what_claude_codes_read_would(agent_e2e):
    """``Read {file_path}`` reads 2000 lines in Claude Code; Qwen Code's ``read_file`` without a
    limit 1000 (its truncateToolOutputLines default). The call reaches Qwen Code with
    ``limit: 2000`` and line 1500 of a 1500-line file is read."""
    run = agent_e2e(
        "qwen",
        "auto",
        tool="Read",
        args=lambda work: {"file_path": str(work / "long.txt")},
        prompt="Read long.txt.",
        files={"long.txt": "".join(f"row {n}\n" for n in range(1, 1501))},
    )
    run.check_common()
    call, message = run.call_and_result()
    args = json.loads(call["function"]["arguments"])
    assert call["function"]["name"] == "read_file" and args.get("limit") == 2000, f"{call!r}\n{run.describe()}"
    result = run.text(message.get("content"))
    assert "row 1500" in result, f"{result[-400:]!r}\n{run.describe()}"


def test_an_append_is_never_made_an_overwrite(agent_e2e):
    run = agent_e2e(
        "qwen",
        "auto",
        tool="write_file",
        args=lambda work: {"path": str(work / "log.txt"), "content": "new\n", "mode": "append"},
        prompt="Append a line to log.txt.",
        files={"log.txt": "keep\n"},
    )
    run.check_common()
    call, message = run.call_and_result()
    assert json.loads(call["function"]["arguments"]).get("mode") == "append", (
        f"the call changed: {call!r}\n{run.describe()}"
    )
    assert (run.work / "log.txt").read_text() == "keep\n", f"log.txt was overwritten\n{run.describe()}"
    assert any(d.get("name") == "write_file" and d.get("action") == "keep" for d in run.decisions()), run.describe()


def test_a_timeout_in_seconds_reaches_qwen_code_in_milliseconds(agent_e2e):
    run = agent_e2e(
        "qwen",
        "auto",
        tool="terminal",
        args={"command": "echo " + MARKER, "timeout": 30},
        prompt="Run echo " + MARKER,
    )
    run.check_common()
    call, message = run.call_and_result()
    args = json.loads(call["function"]["arguments"])
    assert call["function"]["name"] == "run_shell_command" and args.get("timeout") == 30000, (
        f"{call!r}\n{run.describe()}"
    )
    assert run.shows_marker_output(run.text(message.get("content"))), run.describe()


def test_a_timeout_never_reaches_claude_codes_bash(agent_e2e):
    run = agent_e2e(
        "claude",
        "auto",
        tool="terminal",
        args={"command": "echo " + MARKER, "timeout": 30},
        prompt="Run echo " + MARKER,
    )
    run.check_common()
    call, answer = run.call_and_result()
    assert call.get("name") == "terminal", f"the call changed: {call!r}\n{run.describe()}"
    assert answer.get("is_error") is True, f"{answer!r}\n{run.describe()}"
    assert "No such tool available: terminal" in run.text(answer.get("content")), run.describe()


def test_a_directory_change_never_moves_into_a_bash_that_keeps_it(agent_e2e):
    run = agent_e2e(
        "claude",
        "auto",
        tool="exec_command",
        args={"cmd": "cd ..; echo " + MARKER},  # ` && ` after a `cd `: also text Bash may cut
        prompt="Run echo " + MARKER + " one directory up",
    )
    run.check_common()
    call, answer = run.call_and_result()
    assert call.get("name") == "exec_command", f"the call changed: {call!r}\n{run.describe()}"
    assert answer.get("is_error") is True, f"{answer!r}\n{run.describe()}"
    assert "No such tool available: exec_command" in run.text(answer.get("content")), run.describe()
    assert not run.shows_marker_output(run.text(answer.get("content"))), run.describe()
    left = [d for d in run.decisions() if d.get("name") == "exec_command"]
    assert left and all("the next call then" in (d.get("reason") or "") for d in left), (left, run.describe())


@pytest.mark.parametrize("first", ["mkdir -p sub && cd sub && echo FIRST", "mkdir -p sub && echo FIRST"])
def test_a_command_never_moves_into_a_bash_an_earlier_call_left_elsewhere(agent_e2e, first):
    changed_directory = "cd sub" in first
    run = agent_e2e(
        "claude",
        "auto",
        tool="Bash",
        args={"command": first, "description": "Make sub"},
        prompt="Make a folder sub, then run echo " + MARKER,
        fake_config={"more_calls": [["exec_command", {"cmd": "echo " + MARKER}]]},
    )
    run.check_common()
    body = run.body(run.tool_calls[-1])  # the last model call holds both calls
    uses = [b for m in body.get("messages") or [] for b in m.get("content") or [] if isinstance(b, dict)]
    assert sum(b.get("type") == "tool_use" for b in uses) == 2, run.describe()
    call, answer = run.call_and_result(body)  # the last tool call and its result
    result = run.text(answer.get("content"))
    if changed_directory:
        assert call.get("name") == "exec_command", f"the call changed: {call!r}\n{run.describe()}"
        assert "No such tool available: exec_command" in result, run.describe()
        assert not run.shows_marker_output(result), run.describe()
        left = [d for d in run.decisions() if d.get("name") == "exec_command"]
        assert left and all("an earlier Bash call" in (d.get("reason") or "") for d in left), (left, run.describe())
    else:  # the control: the same call, with no earlier cd, is repaired and runs
        assert call.get("name") == "Bash" and call.get("input", {}).get("command") == "echo " + MARKER, (
            f"{call!r}\n{run.describe()}"
        )
        assert run.shows_marker_output(result), run.describe()


MAKE_TWO = "mkdir -p sub && echo WHERE-INNER > sub/f.txt && echo WHERE-OUTER > f.txt"


@pytest.mark.parametrize(
    ("first", "second"),
    [
        (MAKE_TWO + " && cd sub", ["Read", {"file_path": "f.txt"}]),  # the fact the rule rests on
        (MAKE_TWO + " && cd sub", ["read", {"filePath": "f.txt"}]),
        (MAKE_TWO, ["read", {"filePath": "f.txt"}]),  # the control
    ],
)
def test_a_relative_path_never_moves_into_a_read_an_earlier_cd_moved(agent_e2e, first, second):
    run = agent_e2e(
        "claude",
        "auto",
        tool="Bash",
        args={"command": first, "description": "Make two files"},
        prompt="Make two files, then read f.txt",
        fake_config={"more_calls": [second]},
    )
    run.check_common()
    body = run.body(run.tool_calls[-1])
    call, answer = run.call_and_result(body)
    result = run.text(answer.get("content"))
    if second[0] == "Read":  # Claude Code's own Read reads sub/f.txt after the cd
        assert call == {**call, "name": "Read", "input": {"file_path": "f.txt"}}, run.describe()
        assert "WHERE-INNER" in result and "WHERE-OUTER" not in result, f"{result!r}\n{run.describe()}"
    elif "cd sub" in first:
        assert call.get("name") == "read", f"the call changed: {call!r}\n{run.describe()}"
        assert "No such tool available: read" in result and "WHERE-" not in result, run.describe()
        left = [d for d in run.decisions() if d.get("name") == "read"]
        assert left and all("an earlier Bash call" in (d.get("reason") or "") for d in left), (left, run.describe())
    else:
        assert call.get("name") == "Read" and call.get("input") == {"file_path": "f.txt"}, f"{call!r}\n{run.describe()}"
        assert "WHERE-OUTER" in result and "WHERE-INNER" not in result, f"{result!r}\n{run.describe()}"


@pytest.mark.parametrize("tool", ["Bash", "exec_command"])
def test_text_claude_codes_bash_would_cut_never_moves_into_it(agent_e2e, tool):
    """Claude Code's Bash takes the first `cd <its working directory> && ` out of a command
    wherever it stands (normalizeToolInput), inside a word or quotes too: its own call
    ``echo 'see abcd <work> && notes' > note.txt`` writes ``see abnotes`` (the fact the rule rests
    on). So Codex's ``exec_command`` with that text is left: Claude Code answers "No such tool"
    and writes nothing. Was: moved into Bash, the note written cut."""
    run = agent_e2e(
        "claude",
        "auto",
        tool=tool,
        args=lambda work: {("command" if tool == "Bash" else "cmd"): f"echo 'see abcd {work} && notes' > note.txt"},
        prompt="Write the note",
    )
    run.check_common()
    call, answer = run.call_and_result()
    note = run.work / "note.txt"
    if tool == "Bash":  # the client's own tool, as the model sent it
        assert note.read_text().strip() == "see abnotes", run.describe()
        return
    assert call.get("name") == "exec_command", f"the call changed: {call!r}\n{run.describe()}"
    assert "No such tool available: exec_command" in run.text(answer.get("content")), run.describe()
    assert not note.exists(), run.describe()
