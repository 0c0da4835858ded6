"""Portable command lines and POSIX joins, checked against the real shells.

Every generated command runs under bash, zsh and dash (``sh -c`` style, no rc files) with a
``PATH`` of stub commands that print the argv they were given (NUL-separated) and exit with a
status fixed by their name. A command :func:`is_portable` accepts must print the same bytes and
succeed or fail alike in all three; a :func:`posix_join` of any argv must hand the stub exactly that
argv in all three. The oracle is the shells themselves, not the code under test.

Skipped (with the reason) when a shell is not installed; ``.ci/run`` installs zsh.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import example
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab.engine.shellwords import changes_directory
from toolvocab.engine.shellwords import changes_state
from toolvocab.engine.shellwords import is_portable
from toolvocab.engine.shellwords import posix_join

SHELLS = {name: shutil.which(name) for name in ("bash", "zsh", "dash")}
MISSING = [name for name, path in SHELLS.items() if path is None]
pytestmark = pytest.mark.skipif(bool(MISSING), reason=f"shell(s) not installed: {', '.join(MISSING)}")

EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "150"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

#: Stub commands: each prints its name and arguments, NUL-terminated, and exits 0 (``ok*``) or 1
#: (``no*``).
STUBS = {"oka": 0, "okb": 0, "noa": 1, "nob": 1}


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("shells")
    bin_dir = root / "bin"
    bin_dir.mkdir()
    for name, status in STUBS.items():
        stub = bin_dir / name
        stub.write_text(f"#!/bin/sh\nprintf '%s\\0' {name} \"$@\"\nexit {status}\n")
        stub.chmod(0o755)
    # Files for globs to find, at two depths, so `*` and `**` differ between shells.
    work = root / "work"
    (work / "sub" / "deep").mkdir(parents=True)
    for rel in ("a.orig", "sub/b.orig", "sub/deep/c.orig", "x.txt"):
        (work / rel).write_text("")
    (root / "home").mkdir()
    return root


def run(shell: str, command: str, root: Path) -> tuple[bytes, int]:
    """(stdout, exit status) of ``command`` under ``shell -c``, in the sandbox, no rc files."""
    argv = [SHELLS[shell], "-f", "-c", command] if shell == "zsh" else [SHELLS[shell], "-c", command]
    env = {
        "PATH": f"{root / 'bin'}:/usr/bin:/bin",
        "HOME": str(root / "home"),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
    }
    proc = subprocess.run(argv, cwd=root / "work", env=env, capture_output=True, timeout=60, check=False)
    return proc.stdout, proc.returncode


def outcomes(command: str, root: Path) -> dict[str, tuple[bytes, bool]]:
    """Per shell: what the stubs printed, and whether the command line succeeded (the status
    *value* of a failing builtin differs — dash's ``cd`` exits 2, bash's 1 — its success does not)."""
    out = {}
    for shell in SHELLS:
        stdout, status = run(shell, command, root)
        out[shell] = (stdout, status == 0)
    return out


# ------------------------------------------------------------------ generators
_SAFE = "abz09_@%+=:,./-"
_SPECIAL = "*?[]{}~$'\"\\!#&<>()^`"
safe_word = st.text(alphabet=st.sampled_from(list(_SAFE)), min_size=1, max_size=6)
_QUOTABLE = list(_SAFE) + list(" *?[]{}~$;&|<>()^#!\\`")
single_quoted = st.text(alphabet=st.sampled_from(_QUOTABLE + ['"']), max_size=6).map(lambda t: f"'{t}'")
double_quoted = st.text(alphabet=st.sampled_from(_QUOTABLE + ["'"]), max_size=6).map(lambda t: f'"{t}"')
escaped = st.sampled_from(list(_QUOTABLE) + ["n", "t", "\\", '"', "'"]).map(lambda c: "\\" + c)
double_escaped = st.lists(
    st.sampled_from(list(_SAFE) + [" ", "'", "*", "\\n", "\\t", "\\\\", '\\"', "\\$", "\\]"]), max_size=4
).map(lambda p: '"' + "".join(p) + '"')
quoted_word = st.lists(
    safe_word | single_quoted | double_quoted | escaped | double_escaped, min_size=1, max_size=3
).map("".join)
word = safe_word | safe_word | st.text(alphabet=st.sampled_from(list(_SAFE) + list(_SPECIAL)), min_size=1, max_size=6)
command_word = st.sampled_from(sorted(STUBS)) | st.sampled_from(
    ["cd", "echo", "pwd", "true", "false", "noglob", "shopt", "-", "%1", "time", "=oka", "A=1"]
)
simple = st.tuples(
    command_word,
    st.lists(word | st.sampled_from(["**/*.orig", "*.orig", "=oka", "$HOME", "a=b", "sub", "-1"]), max_size=4),
)
operator = st.sampled_from(["&&", "||", ";", "|"]) | st.sampled_from(["&", "\n", ";;"])
gap = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def command_lines(draw: st.DrawFn) -> str:
    parts = [draw(simple) for _ in range(draw(st.integers(1, 3)))]
    text = ""
    for i, (name, args) in enumerate(parts):
        if i:
            text += draw(gap) + draw(operator) + draw(gap)
        text += " ".join([name, *args])
    return text


@st.composite
def plain_lines(draw: st.DrawFn) -> str:
    """Command lines of the portable shape (safe words, the four operators, assignments, ``cd``),
    so that most of them are portable and the shells' agreement is checked on many."""
    text = ""
    for i in range(draw(st.integers(1, 4))):
        if i:
            text += draw(gap) + draw(st.sampled_from(["&&", "||", ";", "|"])) + draw(gap)
        words = draw(st.lists(st.sampled_from(["A=1", "B_2=x"]), max_size=1))
        words.append(
            draw(st.sampled_from([*sorted(STUBS), "cd", "true", "false", "pwd", "echo", "'echo'", "e'ch'o", '"oka"']))
        )
        words += draw(
            st.lists(
                safe_word
                | quoted_word
                | st.sampled_from(["sub", "sub/deep", "..", "-1", "-n", "-e", "-E", "'-e'", "'=oka'", "''=0"]),
                max_size=3,
            )
        )
        text += " ".join(words)
    return text


# ------------------------------------------------------------------ properties
@SETTINGS
@given(command=command_lines() | plain_lines())
@example(command="oka -la && okb src")
@example(command="noa x || oka y ; okb z | oka w")
@example(command="cd sub && oka deep")
def test_a_portable_command_runs_alike_in_bash_zsh_and_dash(sandbox: Path, command: str) -> None:
    portable = is_portable(command)
    event(f"portable: {portable}")
    if not portable:
        return
    seen = outcomes(command, sandbox)
    assert len(set(seen.values())) == 1, f"{command!r} is called portable but the shells differ: {seen}"


@SETTINGS
@given(
    argv=st.lists(
        st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=8), max_size=5
    )
)
@example(argv=["-f", "**/*.orig"])
@example(argv=["=oka", "it's", "$HOME", "a b", "\n", "~", "!x", "\\"])
def test_a_posix_join_hands_every_shell_the_same_argv(sandbox: Path, argv: list[str]) -> None:
    expected = b"".join(w.encode() + b"\x00" for w in ["oka", *argv])
    line = posix_join(["oka", *argv])
    for shell, (out, status) in outcomes(line, sandbox).items():
        assert (out, status) == (expected, True), f"{shell} read {line!r} as {out!r}"


# ------------------------------------------------------------------ the oracle can see a difference
def test_the_shells_really_differ_where_the_rule_says_so(sandbox: Path) -> None:
    """``**`` recurses in zsh and not in bash or dash; ``=oka`` is a path in zsh: these are the
    commands the rule keeps wrapped, and the harness sees the difference."""
    globbed = outcomes("oka **/*.orig", sandbox)
    assert globbed["zsh"] != globbed["bash"] and globbed["bash"] == globbed["dash"]
    equals = outcomes("oka =oka", sandbox)
    assert equals["zsh"] != equals["bash"]
    assert not is_portable("oka **/*.orig") and not is_portable("oka =oka")


@pytest.mark.parametrize(
    "command",
    [
        "ls -la",
        "git status",
        "echo toolvocab-ok",
        "cd src && make test",
        "find /repo -name '*.rs' | head -20",
        'grep -rn "foo bar" src',
        "npm test || true",
        "ls | head -5",
        "FOO=1 make",
        "a -x; b --y=z",
    ],
)
def test_plain_commands_are_portable(command: str) -> None:
    assert is_portable(command)


@pytest.mark.parametrize(
    "command",
    ["rm -f **/*.orig", "echo $HOME", "echo -e hi", "echo -n x", "ls ~", "ls > out", "a & b", "a\nb", "ls;", "cd a b",
     "noglob ls", "shopt -s globstar", "for f in a; do x; done", "'echo' -e x", "%1", "=ls", "x =y", "",
     'echo "$HOME"', "echo 'a", 'echo "a\\b"', "FOO=1", "oka | A=1"],
)  # fmt: skip
def test_anything_else_is_not_portable(command: str) -> None:
    assert not is_portable(command)


def test_join_rejects_what_no_shell_word_can_hold() -> None:
    with pytest.raises(ValueError):
        posix_join(["a\x00b"])
    with pytest.raises(TypeError):
        posix_join(["a", 1])  # type: ignore[list-item]


# ------------------------------------------------------------------ what a command leaves to the next
#: Command words that change (or may change) the shell's directory or state, spelled as a model
#: might, with a few that change nothing; arguments that name directories of the sandbox.
_STATEFUL_HEADS = ["cd", "c'd'", '"cd"', "\\cd", "c''d", "c\\\nd", "{cd,sub}", "{.,cdsub.sh}", "{source,cdsub.sh}",
                   "c``d", "c`true`d", ">/dev/null c$()d", "</dev/null source", ">/dev/null .", "command -- .",
                   "command -p source", "builtin -- source", "time -p cd", "{c,}d", "alias go=cd\ngo",
                   ">/dev/null set -e", "2>/dev/null umask", "echo ${a[x++]}", "echo $[x++]", "[[ x++ -eq 0 ]] ||",
                   "pushd", "popd", "chdir", "builtin cd", "command cd",
                   ".", "source", "eval cd", "eval", "exec", "A=1 cd", "export", "unset", "set", "alias",
                   "read", "shopt -s", "umask", "trap", "f()", "oka", "echo", "true", "pwd", "A=1", "B=2 oka",
                   # what pwd reports moves without cd: Claude Code records its Bash's directory with pwd -P
                   "pwd()", "function pwd", "trap \"$(printf '\\x63d') sub\" DEBUG;"]  # fmt: skip
_STATEFUL_ARGS = ["sub", "sub", "sub/deep", "..", "./cdsub.sh", "cdsub.sh", "-", "$HOME", "'sub'", "X=1", "{ :; }", "022",
                  ":", "dotglob", "echo", "'cd sub'", "-e"]  # fmt: skip


@st.composite
def stateful_lines(draw: st.DrawFn) -> str:
    text = ""
    for i in range(draw(st.integers(1, 3))):
        if i:
            text += draw(gap) + draw(st.sampled_from(["&&", ";", "\n", "&&", ";", "||", "|", "&"])) + draw(gap)
        words = [draw(st.sampled_from(_STATEFUL_HEADS)), *draw(st.lists(st.sampled_from(_STATEFUL_ARGS), max_size=2))]
        part = " ".join(words)
        text += draw(st.sampled_from(["{}", "{}", "{}", "{{ {}; }}", "({})", "$({})", "oka `{}`"])).format(part)
    return text


@pytest.fixture(scope="module")
def stateful_sandbox(sandbox: Path) -> Path:
    (sandbox / "work" / "cdsub.sh").write_text("cd sub\n")
    (sandbox / "work" / "d").mkdir(exist_ok=True)  # {c,}d is cd d in bash and zsh
    return sandbox


def _pwd_after(shell: str, command: str, root: Path) -> str | None:
    """The shell's working directory after ``command``, as ``$PWD`` and as ``pwd -P`` reports it
    (how Claude Code 2.1.197 records its Bash's), one of them when they differ (``None`` when the
    shell did not get to the line after it: a syntax error, ``exec``, ``exit``)."""
    out = root / "pwd.out"
    out.unlink(missing_ok=True)
    script = f'{command}\nprintf \'PWD:%s|%s\' "$PWD" "$(pwd -P)" > {out}\n'
    run(shell, script, root)
    text = out.read_text() if out.exists() else ""
    if not text.startswith("PWD:"):
        return None
    logical, _, reported = text[4:].partition("|")
    start = str((root / "work").resolve())
    return reported if logical == start else logical


#: bash variables that change on their own between two lines (bash(1), "Shell Variables").
_VOLATILE = re.compile(
    r"^(?:_|PIPESTATUS|LINENO|BASH_LINENO|BASH_COMMAND|RANDOM|SRANDOM|SECONDS|EPOCHSECONDS|EPOCHREALTIME|BASHPID"
    r"|BASH_ARGC|BASH_ARGV|BASH_SOURCE|FUNCNAME|BASH_SUBSHELL|COLUMNS|LINES|OLDPWD|BASH_REMATCH)="
)


def _bash_state_changed(command: str, root: Path) -> bool | None:
    """Whether ``command`` changed what the next line of the same bash sees: variables, functions,
    aliases, options, traps, the umask, the directory (``None`` when bash did not reach the line
    after it)."""
    before, after = root / "state.before", root / "state.after"
    for f in (before, after):
        f.unlink(missing_ok=True)
    snap = "{ set; alias; shopt; set -o; trap; umask; pwd; } > %s 2>/dev/null"
    script = f"{snap % before}\n{command}\n{snap % after}\n"
    run("bash", script, root)
    if not after.exists():
        return None

    def lines(f: Path) -> list[str]:
        return [ln for ln in f.read_text(errors="replace").splitlines() if not _VOLATILE.match(ln)]

    return lines(before) != lines(after)


@SETTINGS
@given(command=st.one_of(stateful_lines(), stateful_lines(), stateful_lines(), plain_lines(), command_lines()))
@example(command="c'd' sub")
@example(command="{cd,sub}")
@example(command="{c,}d")
@example(command="c``d sub")
@example(command=">/dev/null c$()d sub")
@example(command="</dev/null source ./cdsub.sh")
@example(command="command -- . ./cdsub.sh")
@example(command="c\\\nd sub")
@example(command=". ./cdsub.sh")
@example(command="{ pushd sub; }")
@example(command="pwd() { :; }")
@example(command="function pwd { echo sub; }")
@example(command="trap \"$(printf '\\x63d') sub\" DEBUG; oka")
@example(command="emulate sh -c $'\\x63d sub'")  # zsh runs the text in this shell
@example(command="repeat 1 eval $'\\x63d sub'")  # zsh
@example(command="if [[ -n 1 ]] eval $'\\x63d sub'")  # zsh's short if
@example(command="mapfile -t -C $'\\x63d sub #' -c 1 arr <<< x")  # bash's callback
def test_a_command_that_moves_the_shell_is_seen_to(stateful_sandbox: Path, command: str) -> None:
    """The oracle is the shells: whenever bash, zsh or dash ends a command line in another
    directory than it started in, :func:`changes_directory` names something in it."""
    start = str((stateful_sandbox / "work").resolve())
    moved = [s for s in SHELLS if (p := _pwd_after(s, command, stateful_sandbox)) is not None and p != start]
    event(f"moved: {bool(moved)}")
    if moved:
        assert changes_directory(command) is not None, (command, moved)
        assert changes_state(command) is not None, command


@SETTINGS
@given(command=st.one_of(stateful_lines(), stateful_lines(), stateful_lines(), plain_lines(), command_lines()))
@example(command="A=1")
@example(command="f() { :; }")
@example(command="oka | read X")
@example(command="set -e")
@example(command=">/dev/null set -e")
@example(command="echo ${a[x++]}")
@example(command="echo $[x++]")
@example(command="[[ x++ -eq 0 ]]")
@example(command="[[ 1 -eq --x ]]")
@example(command="echo ${a[--x]}")
def test_a_command_that_changes_the_shell_is_seen_to(stateful_sandbox: Path, command: str) -> None:
    """Whenever the next line of the same bash sees another state (a variable, a function, an
    alias, an option, a trap, the umask, the directory), :func:`changes_state` names something."""
    changed = _bash_state_changed(command, stateful_sandbox)
    event(f"changed: {changed}")
    if changed:
        assert changes_state(command) is not None, command


@pytest.mark.parametrize(
    "command",
    ["git status", "ls -la | wc -l", "find . -name '*.py'", "grep -rn foo .", "git checkout cd-fix", "ls /tmp/cd",
     "make -C src", 'ls "$HOME"', "find . -exec rm {} \\;", "npm test || true", "FOO=$x oka"],
)  # fmt: skip
def test_commands_that_leave_the_directory_are_not_flagged(command: str) -> None:
    """No false alarm on everyday commands: each of these leaves the directory where it was."""
    assert changes_directory(command) is None


def test_a_command_that_acts_on_the_shells_own_process_changes_its_state() -> None:
    # the shell stays alive between calls in a tool that keeps it: its priority and limits too
    assert changes_state("renice -n 19 -p $$") is not None
    assert changes_state("prlimit --pid $$ -n 16:16") is not None
    assert changes_state("git log --oneline -3") is None


def test_the_state_oracle_sees_a_change() -> None:
    """The bash oracle above can fail: it sees an assignment, a function and ``cd``."""
    root = Path(__import__("tempfile").mkdtemp())
    (root / "work" / "sub").mkdir(parents=True)
    (root / "bin").mkdir()
    (root / "home").mkdir()
    assert _bash_state_changed("A=1", root) is True
    assert _bash_state_changed("f() { :; }", root) is True
    assert _bash_state_changed("cd sub", root) is True
    assert _bash_state_changed("true", root) is False
    assert _pwd_after("dash", "cd sub", root) == str((root / "work" / "sub").resolve())


def test_a_command_line_too_long_to_read_gets_the_answer_that_changes_nothing():
    """Over ``MAX_READ`` characters (a file written through the shell) a command is not scanned
    (its regular expressions would hold mitmproxy's event loop about a second a megabyte): it is
    not portable and may change a directory or state, so no tool moves it."""
    from toolvocab.engine.shellwords import MAX_READ
    from toolvocab.engine.shellwords import TOO_LONG

    long = "echo " + "x" * MAX_READ
    assert is_portable("echo " + "x" * (MAX_READ - 10)) and not is_portable(long)
    assert changes_directory(long) == TOO_LONG and changes_state(long) == TOO_LONG
    assert changes_directory(["bash", "-lc", long]) == TOO_LONG
    assert changes_state("echo " + "x" * (MAX_READ - 10)) is None
