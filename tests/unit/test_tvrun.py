"""The console scripts of an installed toolvocab (toolvocab/run.py): the addon path mitmproxy
loads, arguments passed through, and ``toolvocab --options`` / ``--commands``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import toolvocab.run as tvrun

ROOT = Path(__file__).resolve().parents[2]


def test_argv_puts_the_addon_first_and_passes_everything_else() -> None:
    argv = tvrun.argv_for(["--mode", "reverse:https://api.anthropic.com", "--set", "toolvocab_mode=observe"])
    assert argv[:2] == ["-s", str((ROOT / "addon" / "toolvocab.py").resolve())]
    assert argv[2:] == ["--mode", "reverse:https://api.anthropic.com", "--set", "toolvocab_mode=observe"]


def _console(*args: str, web: bool = False) -> subprocess.CompletedProcess:
    """``toolvocab ARGS`` (``toolvocab-web ARGS``) in a separate process, as the installed command runs."""
    name, main = ("toolvocab-web", "main_web") if web else ("toolvocab", "main")
    return subprocess.run(
        [sys.executable, "-c", f"import sys, toolvocab.run as r; sys.argv = [{name!r}, *{list(args)!r}]; r.{main}()"],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_options_lists_mitmdumps_options_and_every_toolvocab_option_with_its_default() -> None:
    out = _console("--options")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for line in (
        "toolvocab_mode: auto",
        "toolvocab_intercept: known",
        "toolvocab_hosts:",
        "toolvocab_profiles:",
        "toolvocab_record:",
        "toolvocab_redact: 'true'",
        "listen_port:",  # mitmdump's own, as mitmdump --options lists them
        "flow_detail: 1",  # an option of mitmdump's, not of mitmproxy's core
    ):
        assert line in lines, (line, out.stdout)
    assert "Valid values are 'auto', 'repair', 'observe', 'off'." in " ".join(out.stdout.replace("#", " ").split())
    assert "listening on" not in out.stderr, "nothing listens"


def test_commands_lists_mitmproxys_commands_and_toolvocabs() -> None:
    out = _console("--commands")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    for line in ("toolvocab.explain flows -> str", "toolvocab.stats flows -> str", "toolvocab.tools flow shape -> str"):
        assert line in lines, (line, out.stdout)
    assert "set option *value" in lines
    stats = lines.index("toolvocab.stats flows -> str")
    assert lines[stats - 3 : stats] == [
        "# Counts of toolvocab's decisions, ladder steps, clients, hosts,",
        "# dialects, models and tool errors over the flows, with call totals and",
        "# median latencies.",
    ]
    assert "listening on" not in out.stderr, "nothing listens"


def test_the_listen_host_defaults_to_127_0_0_1_unless_the_user_chose_one(tmp_path, capsys) -> None:
    confdir = tmp_path / "conf"
    confdir.mkdir()
    assert tvrun.with_local_default(["--mode", "reverse:https://x"]) == [
        "--listen-host",
        "127.0.0.1",
        "--mode",
        "reverse:https://x",
    ]
    assert "toolvocab: listening on 127.0.0.1 only" in capsys.readouterr().err
    for chosen in (
        ["--listen-host", "0.0.0.0"],
        ["--listen-host=::"],
        ["--set", "listen_host=10.0.0.1"],
        ["--set=listen_host=x"],
    ):
        assert tvrun.with_local_default(chosen) == chosen, chosen
    assert capsys.readouterr().err == ""
    # listen_host in mitmproxy's config.yaml (in --set confdir=...) is the user's choice too
    args = ["--set", f"confdir={confdir}"]
    assert not tvrun.chooses_listen_host(args)
    (confdir / "config.yaml").write_text("ssl_insecure: true\nlisten_host: 192.0.2.1\n")
    assert tvrun.chooses_listen_host(args)


def test_subcommands_are_toolvocabs_and_everything_else_is_mitmdumps() -> None:
    assert set(tvrun.SUBCOMMANDS) == {"demo", "replay", "explain", "stats", "tools"}
    assert tvrun.version() == __import__("toolvocab").__version__


def test_the_lists_come_with_other_arguments_abbreviated_and_from_mitmweb() -> None:
    """mitmproxy's parser takes ``--opt`` for ``--options``; other arguments may come with it;
    toolvocab-web lists mitmweb's own options (``web_port``)."""
    for args, web, want in (
        (
            ("--options", "--set", "toolvocab_mode=off", "--mode", "reverse:http://127.0.0.1:9"),
            False,
            "toolvocab_mode: auto",
        ),
        (("--opt",), False, "toolvocab_hosts:"),
        (("--o",), False, "toolvocab_record:"),
        (("--comm",), False, "toolvocab.stats flows -> str"),
        (("--options",), True, "web_port: 8081"),
        (("--options",), True, "toolvocab_mode: auto"),
        (("--commands",), True, "toolvocab.explain flows -> str"),
    ):
        out = _console(*args, web=web)
        assert out.returncode == 0, (args, out.stderr)
        assert want in out.stdout.splitlines(), (args, want)
        assert "listening on" not in out.stderr, (args, "nothing listens")


def test_a_list_read_by_head_ends_quietly() -> None:
    """``toolvocab --options | head -1``: the reader goes, the command ends with no traceback."""
    code = "import sys, toolvocab.run as r; sys.argv = ['toolvocab', '--options']; r.main()"
    with subprocess.Popen(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.read(10)
        proc.stdout.close()  # as head does after its line
        _, err = proc.communicate(timeout=60)
    assert b"Traceback" not in err and b"BrokenPipe" not in err, err.decode()
