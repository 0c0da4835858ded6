"""``toolvocab replay`` and ``toolvocab stats|explain|tools`` over recordings a user has, in process
(toolvocab/replay/__init__.py ``main``, toolvocab/cli.py ``main``):

* a recording whose outcome depended on timing or on the connections — the hold timeout released
  a held call, the upstream died mid-stream, the client hung up — is ``SKIP`` with the reason,
  never ``PASS`` or ``FAIL``; a stream that completed normally still replays and passes, and a
  flow that ended in an error before any answer still replays (its request is reproducible);
* a recording made under a rename profile fails with "recorded under profile NAME: give
  --profiles FILE" unless ``--profiles`` is given, and ``--help`` says the profile file is not
  stored;
* an unreadable flow file is one line on stderr and the other files are read; ``--profiles`` /
  ``--hosts`` that do not load are one ``toolvocab replay: error: …`` line naming the user's
  input, exit 2, no traceback.

The recordings in tests/fixtures/replay/ were made by a live proxy (their README says how).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from mitmproxy import flow as mflow

import flowreplay as fr
from toolvocab import cli
from toolvocab.replay import main as replay_main
from toolvocab.replay.flows import META_REPLAY
from toolvocab.replay.flows import replayable

RECORDINGS = fr.REPO / "tests" / "fixtures" / "replay"
#: A streamed answer (repaired in the stream callable) that completed normally, from the corpus.
STREAMED = fr.REPO / "flows" / "harness" / "br05-lowercase-bash-anthropic-sse.mitm"
#: A corpus flow made under the rename profile ``claude-code-names`` (its toolvocab_replay carries the file).
PROFILED = fr.REPO / "flows" / "harness" / "br06-renaming-proxy-anthropic-sse.mitm"

TIMEOUT = 120  # seconds, every subprocess


def replay(capsys, *args: str) -> tuple[int, str, str]:
    status = replay_main([*args, "--seeds", "1"])
    out, err = capsys.readouterr()
    return status, out, err


# -- B: outcomes that depended on timing or on the connections are SKIP ----------------------------

SKIPPED = {
    "hold-timeout-released.mitm": "the hold timeout (toolvocab_hold_timeout) released a held tool call",
    "upstream-died-mid-stream.mitm": "the answer ended in an error (HTTP/1 protocol error: peer closed connection",
    "client-hung-up.mitm": "the answer ended in an error (Client disconnected.)",
}


@pytest.mark.parametrize("name", sorted(SKIPPED))
def test_a_recording_that_depended_on_timing_or_the_connection_is_skipped(capsys, name):
    status, out, _ = replay(capsys, str(RECORDINGS / name), str(STREAMED))
    lines = out.splitlines()
    assert any(line.startswith(f"SKIP {RECORDINGS / name} flow ") and SKIPPED[name] in line for line in lines), out
    assert any(line.startswith(f"PASS {STREAMED} flow ") for line in lines), out
    assert lines[-1] == "toolvocab replay: 1 passed, 0 failed, 1 skipped" and status == 0, out


def test_a_directory_of_such_recordings_exits_0_with_what_passed(capsys, tmp_path):
    (tmp_path / "rec").mkdir()
    for name in SKIPPED:
        (tmp_path / "rec" / name).write_bytes((RECORDINGS / name).read_bytes())
    (tmp_path / "rec" / "ok.mitm").write_bytes(STREAMED.read_bytes())
    status, out, _ = replay(capsys, str(tmp_path / "rec"))
    assert out.splitlines()[-1] == "toolvocab replay: 1 passed, 0 failed, 3 skipped" and status == 0, out
    assert "FAIL" not in out


def test_replayable_names_the_reason_and_leaves_a_normal_stream():
    for name, reason in SKIPPED.items():
        (f,) = fr.load_flows(RECORDINGS / name)
        assert reason in (replayable(f) or ""), name
    (ok,) = fr.load_flows(STREAMED)
    assert ok.metadata["toolvocab"]["streamed"] and replayable(ok) is None


def test_a_flow_that_ended_in_an_error_before_any_answer_still_replays(capsys, tmp_path):
    # no response: the request the upstream received does not depend on the connection
    (f,) = fr.load_flows(fr.REPO / "flows" / "harness" / "br05-lowercase-bash-anthropic-json.mitm")
    f.response = None
    f.error = mflow.Error("Connection refused")
    fr.write_flows(tmp_path / "refused.mitm", [f])
    status, out, _ = replay(capsys, str(tmp_path / "refused.mitm"))
    assert out.startswith(f"PASS {tmp_path / 'refused.mitm'} flow ") and status == 0, out


# -- H: a recording made under a rename profile -------------------------------------------------


def recorded_under_profile(tmp_path: Path) -> tuple[Path, Path]:
    """PROFILED as toolvocab_record writes it (no toolvocab_replay: the profile file is not
    stored), and the profile file it was made with."""
    (f,) = fr.load_flows(PROFILED)
    profiles = tmp_path / "profiles.toml"
    profiles.write_text(f.metadata.pop(META_REPLAY)["profiles"])
    assert f.metadata["toolvocab"]["profile"] == "claude-code-names"
    fr.write_flows(tmp_path / "profiled.mitm", [f])
    return tmp_path / "profiled.mitm", profiles


def test_a_recording_made_under_a_profile_fails_naming_it_without_profiles(capsys, tmp_path):
    path, _ = recorded_under_profile(tmp_path)
    status, out, _ = replay(capsys, str(path))
    assert (
        out.splitlines()[0].startswith(f"FAIL {path} flow ")
        and "recorded under profile claude-code-names: give --profiles FILE" in out.splitlines()[0]
    ), out
    assert "differs in" not in out  # no misleading diff
    assert out.splitlines()[-1] == "toolvocab replay: 0 passed, 1 failed, 0 skipped" and status == 1


def test_a_recording_made_under_a_profile_passes_with_its_profile_file(capsys, tmp_path):
    path, profiles = recorded_under_profile(tmp_path)
    status, out, _ = replay(capsys, "--profiles", str(profiles), str(path))
    assert out.startswith(f"PASS {path} flow ") and status == 0, out


def test_help_says_the_profile_file_is_not_stored(capsys):
    with pytest.raises(SystemExit):
        replay_main(["--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "the flow's, else none" not in text
    assert "recordings do not store the profile file" in text


# -- F: unreadable inputs are one line, not a traceback -----------------------------------------


@pytest.mark.parametrize("command", ["stats", "explain", "tools"])
def test_an_unreadable_file_is_named_and_the_others_are_read(capsys, tmp_path, command):
    (tmp_path / "notaflow.mitm").write_text("hello\n")
    status = cli.main([command, str(tmp_path / "notaflow.mitm"), str(STREAMED)])
    out, err = capsys.readouterr()
    assert status == 0
    assert err.splitlines() == [
        f"toolvocab {command}: cannot read {tmp_path / 'notaflow.mitm'}: not a flow file mitmproxy can read, "
        "or truncated (Invalid data format.)"
    ]
    assert out.strip()  # the readable file's report
    if command == "stats":
        assert out.startswith("toolvocab stats: 1 flow with a record"), out


def test_a_directory_with_a_bad_file_goes_on(capsys, tmp_path):
    (tmp_path / "a-bad.mitm").write_text("hello\n")
    (tmp_path / "b-good.mitm").write_bytes(STREAMED.read_bytes())
    assert cli.main(["stats", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert err.count("\n") == 1 and "a-bad.mitm" in err and out.startswith("toolvocab stats: 1 flow with a record")


def test_nothing_readable_exits_1_with_one_line_per_file(capsys, tmp_path):
    (tmp_path / "notaflow.mitm").write_text("hello\n")
    assert cli.main(["explain", str(tmp_path / "notaflow.mitm"), str(tmp_path / "missing.mitm")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines() == [
        f"toolvocab explain: cannot read {tmp_path / 'notaflow.mitm'}: not a flow file mitmproxy can read, "
        "or truncated (Invalid data format.)",
        f"toolvocab explain: cannot read {tmp_path / 'missing.mitm'}: No such file or directory",
    ]


def test_a_truncated_file_keeps_the_flows_before_the_damage(capsys, tmp_path):
    whole = STREAMED.read_bytes()
    (tmp_path / "trunc.mitm").write_bytes(whole + whole[: len(whole) // 2])  # two flows, the second cut
    assert cli.main(["stats", str(tmp_path / "trunc.mitm")]) == 0
    out, err = capsys.readouterr()
    assert err.startswith(f"toolvocab stats: cannot read {tmp_path / 'trunc.mitm'} after its first 1 flow (")
    assert out.startswith("toolvocab stats: 1 flow with a record"), out


def test_read_flows_without_errors_still_raises(tmp_path):
    from mitmproxy import exceptions

    (tmp_path / "notaflow.mitm").write_text("hello\n")
    with pytest.raises(exceptions.FlowReadException):
        list(cli.read_flows([str(tmp_path / "notaflow.mitm")]))


def usage_error(capsys, *args: str) -> str:
    with pytest.raises(SystemExit) as exc:
        replay_main([*args, str(STREAMED)])
    out, err = capsys.readouterr()
    assert exc.value.code == 2 and out == ""
    assert len(err.splitlines()) == 1, err
    return err.strip()


def test_replay_profiles_that_do_not_load_are_a_usage_error_naming_the_users_file(capsys, tmp_path):
    missing = tmp_path / "missing.toml"
    assert usage_error(capsys, "--profiles", str(missing)).startswith(
        f"toolvocab replay: error: --profiles {missing}: cannot read:"
    )
    bad = tmp_path / "bad.toml"
    bad.write_text('[[profile]]\nname = "x"\nbogus = 1\n')
    line = usage_error(capsys, "--profiles", str(bad))
    assert line.startswith(f"toolvocab replay: error: --profiles {bad}:3: ") and "bogus" in line, line
    assert "toolvocab-replay-" not in line  # not the replay's temporary copy


def test_replay_hosts_that_is_no_regex_is_a_usage_error(capsys):
    line = usage_error(capsys, "--hosts", "(")
    assert line.startswith("toolvocab replay: error: --hosts '(': not a regular expression:"), line


@pytest.mark.parametrize(
    "args",
    [
        ["replay", "--profiles", "/nonexistent/profiles.toml"],
        ["replay", "--hosts", "("],
        ["stats", "NOTAFLOW"],
    ],
)
def test_the_console_command_prints_no_traceback(tmp_path, args):
    (tmp_path / "notaflow.mitm").write_text("hello\n")
    args = [str(tmp_path / "notaflow.mitm") if a == "NOTAFLOW" else a for a in args]
    if args[0] == "replay":
        args.append(str(STREAMED))
    script = "import sys; from toolvocab.run import main; sys.argv = ['toolvocab', *sys.argv[1:]]; main()"
    run = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path
    )
    assert run.returncode == (2 if args[0] == "replay" else 1), run.stderr
    assert "Traceback" not in run.stderr and len(run.stderr.splitlines()) == 1, run.stderr


def test_explain_names_each_flow_by_its_id_as_replay_does(capsys):
    """``toolvocab replay`` names a flow ``FILE flow 7ef0b99c``: ``explain`` names it the same way
    (with its request), so a FAIL can be looked up in the explanation."""
    flow = fr.load_flows(STREAMED)[0]
    assert cli.main(["explain", str(STREAMED)]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(f"flow {flow.id[:8]}: {flow.request.method} {flow.request.pretty_url} (")


@pytest.mark.parametrize("outer", [[], None])
def test_the_replay_reader_reads_a_code_assist_answer_as_the_gemini_dialect_does(outer):
    """``toolvocab replay``'s reader of an answer's calls (what a failure prints) unwraps a Code
    Assist envelope beside an empty ``candidates`` as the proxy does. Was: "no tool calls"."""
    import orjson

    from toolvocab.replay.calls import tool_calls

    inner = {"candidates": [{"content": {"parts": [{"functionCall": {"name": "shell", "args": {"command": "ls"}}}]}}]}
    calls = tool_calls("gemini", orjson.dumps({"candidates": outer, "response": inner}))
    assert [(c.name, c.arguments) for c in calls] == [("shell", {"command": "ls"})]
