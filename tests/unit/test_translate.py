"""Every argument keeps its meaning: translation between tools, checked against the sourced table.

Example tests for each kind of meaning a key carries (unit, base, shell, matching, effect,
unknown keys), then properties over every pair of table rows a repair can connect:

(a) intent — a call written in one row's vocabulary, with generated values, that the engine
    changes reads the same in the target row's semantics. The intent oracle is built here from
    the table's data (``Meaning`` fields), never by calling the translation: durations in ms,
    line numbers from 0, commands as what a shell runs, matching and pattern flavours as data;
(b) unknown — a key no sourced tool of the capability lists never survives into a changed call,
    and any key whose meaning differs between the readings leaves the call;
(c) undeclared — on any target schema, no changed call carries a key the schema does not declare
    (annotation keys aside), at any depth the schema describes.

Examples: ``TOOLVOCAB_PROPERTY_EXAMPLES`` (quick 300; ``.ci/run``'s long profile 2000; the closing
note's 10,000-example run sets it).
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import re
import shlex
import string
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import assume
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from schemas import BOOL
from schemas import INT
from schemas import NUM
from schemas import STR
from schemas import fn
from schemas import schema
from toolvocab.engine import vocabulary
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import ToolCall
from toolvocab.engine.semantics import TABLES
from toolvocab.engine.semantics import ArgTable
from toolvocab.engine.semantics import Meaning
from toolvocab.engine.shellwords import is_portable

EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "300"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

ANNOTATIONS = {"description", "instruction", "explanation", "justification"}


def decide(
    tools: list[Any],
    name: str,
    args: dict[str, Any],
    *,
    client: str | None = None,
    reverse_map: dict[str, str] | None = None,
):
    return resolve(ToolCall(name=name, arguments=args), Toolset(tools), reverse_map, client=client)


# ------------------------------------------------------------------ units: seconds are not milliseconds
BASH = fn("Bash", schema("command", additional=False, command=STR, timeout=NUM, run_in_background=BOOL))
RUN_SHELL = fn("run_shell_command", schema("command", command=STR, is_background=BOOL, timeout=NUM, directory=STR))
TERMINAL = fn("terminal", schema("command", command=STR, background=BOOL, timeout=INT, workdir=STR))


def test_a_timeout_in_seconds_reaches_a_millisecond_tool_converted() -> None:
    # Hermes' terminal takes seconds, Qwen Code's run_shell_command milliseconds: 600 s is
    # 600000 ms (both kill the command then; Claude Code's Bash backgrounds it: never a target).
    d = decide([RUN_SHELL], "terminal", {"command": "make migrate", "timeout": 600})
    assert d.action is Action.RENAME and d.target == "run_shell_command"
    assert d.arguments_after == {"command": "make migrate", "timeout": 600000}
    assert any(c.op == "convert" and c.before == 600 and c.after == 600000 for c in d.arg_changes)


@pytest.mark.parametrize("timeout", [0, -1, 0.0, "0", -5000])
def test_a_timeout_of_zero_or_less_never_moves_between_tools(timeout: Any) -> None:
    # 0 disables pi's timer (bash.ts); what 0 or a negative means to Hermes' terminal or to
    # Claude Code's Bash is not sourced: -1 s is not -1000 ms of anything.
    assert not decide([RUN_SHELL], "terminal", {"command": "make", "timeout": timeout}).changed
    assert not decide([BASH], "exec_command", {"cmd": "make", "timeout_ms": timeout}).changed


def test_a_timeout_past_what_the_target_honours_is_left() -> None:
    # Qwen Code's run_shell_command takes 600000 ms at most: OpenCode's bash would run 700 s.
    d = decide([RUN_SHELL], "bash", {"command": "make", "timeout": 700000})
    assert d.action is Action.LEAVE and "600000 the target honours" in d.reason


def test_milliseconds_to_seconds_only_when_exact() -> None:
    assert decide([TERMINAL], "run_shell_command", {"command": "make", "timeout": 120000}).arguments_after == {
        "command": "make",
        "timeout": 120,
    }
    assert decide([TERMINAL], "run_shell_command", {"command": "make", "timeout": 1500}).action is Action.LEAVE


@pytest.mark.parametrize(("seconds", "ms"), [(1.005, 1005), (2.5, 2500), (0.001, 1), (30, 30000)])
def test_seconds_become_a_whole_number_of_milliseconds(seconds: float, ms: int) -> None:
    d = decide([RUN_SHELL], "terminal", {"command": "make", "timeout": seconds})
    assert d.arguments_after == {"command": "make", "timeout": ms} and type(d.arguments_after["timeout"]) is int


def test_a_fraction_of_a_millisecond_has_no_exact_value() -> None:
    d = decide([RUN_SHELL], "terminal", {"command": "make", "timeout": 1.0005})
    assert d.action is Action.LEAVE and "no exact whole value" in d.reason, d.reason


def test_a_number_in_a_string_converts_only_when_spelled_as_json() -> None:
    # "600" is the number 600 to any reader; "６００" (fullwidth digits), "6_0", "+600" and " 600\u3000"
    # are numbers only to Python's int(): converted, they would become a timeout the model never wrote.
    assert decide([RUN_SHELL], "terminal", {"command": "make", "timeout": "600"}).arguments_after == {
        "command": "make",
        "timeout": 600000,
    }
    for text in ("６００", "6_0", "+600", "600\u3000", "١٢", "0x10", "inf", "NaN", "1e400"):
        d = decide([RUN_SHELL], "terminal", {"command": "make", "timeout": text})
        assert d.action is Action.LEAVE and "not a number to convert" in d.reason, (text, d)


@pytest.mark.parametrize("value", [700_000, 2**53 + 1, 10**20, 10**400, "1" + "0" * 30])
def test_a_value_past_the_targets_maximum_is_left_however_large(value: Any) -> None:
    # OpenCode's bash timeout is milliseconds as Qwen Code's run_shell_command is, which honours
    # 600000 at most: a larger value is not what the client would run, even one too large to convert.
    d = decide([RUN_SHELL], "bash", {"command": "make", "timeout": value})
    assert d.action is Action.LEAVE and "is past the" in d.reason, d


@pytest.mark.parametrize("value", ["9" * 5000, "-" + "9" * 4301, 10**400, 2**53, -(2**60)])
def test_a_number_no_client_reads_as_written_is_never_converted_and_never_raises(value: Any) -> None:
    # Integers past 2**53 - 1 are not what a JavaScript client reads (Number.MAX_SAFE_INTEGER);
    # a string of more digits than Python converts raised ValueError out of resolve().
    d = decide([RUN_SHELL], "terminal", {"command": "make", "timeout": value})
    assert d.action is Action.LEAVE and d.arguments_after is None
    read = fn("Read", schema("file_path", file_path=STR, offset=INT, limit=NUM))
    for key in ("offset", "limit"):
        d = decide([read], "Read", {"file_path": "/a", key: value})
        assert d.action is not Action.RENAME and (d.arguments_after or {}).get(key, value) == value


def test_a_timeout_whose_unit_the_name_does_not_settle_is_left() -> None:
    # `bash` is OpenCode's (ms) and pi's (s): 600 is ten minutes or ten seconds.
    d = decide([RUN_SHELL], "bash", {"command": "make", "timeout": 600})
    assert d.action is Action.LEAVE and "'timeout'" in d.reason


def test_a_key_with_its_unit_in_its_name_is_not_another_units_key() -> None:
    # `timeout_ms` spelled for OpenClaw's exec, whose kill timeout is `timeoutSeconds`: not moved.
    exec_tool = fn("exec", schema("command", command=STR, timeoutSeconds=NUM))
    d = decide([exec_tool], "exec", {"command": "make", "timeout_ms": 5000})
    assert d.action is Action.KEEP and d.arguments_after is None


def test_codex_yield_time_is_not_a_kill_timeout() -> None:
    d = decide([BASH], "exec_command", {"cmd": "make", "yield_time_ms": 10000})
    assert d.action is Action.LEAVE and "yield_time_ms" in d.reason


# ------------------------------------------------------------------ bases: 1-based is not 0-based
READ = fn("Read", schema("file_path", additional=False, file_path=STR, offset=INT, limit=INT))
QWEN_READ = fn("read_file", schema("file_path", file_path=STR, offset=NUM, limit=NUM, pages=STR))


def test_a_1_based_line_reaches_a_0_based_tool_rebased() -> None:
    # Claude Code's Read offset is a 1-based line, Qwen Code 0.15.10's read_file a 0-based one.
    d = decide([QWEN_READ], "Read", {"file_path": "/a", "offset": 10, "limit": 5}, client="Qwen Code")
    assert d.action is Action.RENAME and d.arguments_after == {"file_path": "/a", "offset": 9, "limit": 5}


def test_a_line_number_whose_base_the_name_does_not_settle_is_left() -> None:
    # `read_file` is Qwen Code's (0-based) and Codex's and Hermes' (1-based): line 10 is ambiguous.
    d = decide([READ], "read_file", {"file_path": "/a", "offset": 10})
    assert d.action is Action.LEAVE and "'offset'" in d.reason
    # Without an offset (and with a limit: without one, Qwen Code reads 1000 lines, Codex 2000)
    # nothing is ambiguous.
    assert decide([READ], "read_file", {"file_path": "/a", "limit": 100}).target == "Read"


CRUSH_VIEW = fn("view", schema("file_path", file_path=STR, offset=INT, limit=INT))
OC_READ_TOOL = fn("read", schema("filePath", filePath=STR, offset=INT, limit=INT))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "after"),
    [
        # Crush's view reads 200 lines when the call names none, Claude Code's Read 2000
        ([READ], "view", {"file_path": "/a"}, None, {"file_path": "/a", "limit": 200}),
        ([CRUSH_VIEW], "Read", {"file_path": "/a"}, None, {"file_path": "/a", "limit": 2000}),
        # Qwen Code's read_file 1000 (its truncateToolOutputLines setting's default)
        ([QWEN_READ], "Read", {"file_path": "/a"}, "Qwen Code", {"file_path": "/a", "limit": 2000}),
        ([READ], "read", {"filePath": "/a"}, None, {"file_path": "/a"}),  # OpenCode's read: 2000 too
        ([OC_READ_TOOL], "view", {"file_path": "/a"}, "OpenCode", {"filePath": "/a", "limit": 200}),
        # a limit the call names is the call's, whatever the defaults
        ([READ], "view", {"file_path": "/a", "limit": 50}, None, {"file_path": "/a", "limit": 50}),
    ],
)
def test_a_read_without_a_limit_gets_the_line_count_its_tool_reads(
    tools: list[Any], name: str, args: dict[str, Any], client: str | None, after: dict[str, Any]
) -> None:
    """A read that names no line count reads its tool's default: moved to a tool whose default
    differs, that count is written out. Was: ``view {file_path}`` reached Claude Code as
    ``Read {file_path}`` (2000 lines where Crush reads 200), ``Read`` reached Crush and Qwen Code
    as a read of 200 and 1000 lines."""
    d = decide(tools, name, args, client=client)
    assert d.changed and (d.arguments_after if d.arguments_after is not None else args) == after, d.reason
    if "limit" not in args and after.get("limit") is not None:
        assert [c.op for c in d.arg_changes if c.op == "add_default"] == ["add_default"]


@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("read_file", {"path": "/a", "limit": 5000}),  # Hermes Agent reads 2000 lines at most
        ("read", {"path": "/a", "limit": 5000}),  # pi: 2000 lines at most, a limit or none
    ],
)
def test_a_line_count_the_models_tool_caps_never_moves_to_one_that_reads_it(name: str, args: dict[str, Any]) -> None:
    d = decide([READ], name, args)
    assert d.action is Action.LEAVE and "5000" in d.reason, d.reason


def test_a_line_range_is_not_an_offset() -> None:
    # Gemini CLI's read_file takes start_line/end_line; Claude Code's Read an offset and a limit.
    d = decide([READ], "read_file", {"file_path": "/a", "start_line": 3, "end_line": 9})
    assert d.action is Action.LEAVE


# ------------------------------------------------------------------ effects
EDIT = fn(
    "Edit",
    schema(
        "file_path",
        "old_string",
        "new_string",
        additional=False,
        file_path=STR,
        old_string=STR,
        new_string=STR,
        replace_all=BOOL,
    ),
)
QWEN_EDIT = fn(
    "edit",
    schema("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR, replace_all=BOOL),
)
OC_EDIT = fn(
    "edit", schema("filePath", "oldString", "newString", filePath=STR, oldString=STR, newString=STR, replaceAll=BOOL)
)
WRITE_FILE = fn("write_file", schema("file_path", "content", file_path=STR, content=STR))


def test_replace_all_has_no_counterpart_in_expected_replacements() -> None:
    # Older Gemini CLI's replace takes expected_replacements (exactly N matches); Edit's
    # replace_all is every match. Different effects: left.
    d = decide([EDIT], "replace", {"file_path": "/a", "old_string": "x", "new_string": "y", "expected_replacements": 2})
    assert d.action is Action.LEAVE


def test_an_exact_edit_never_reaches_a_fuzzy_matcher() -> None:
    # OpenCode's edit falls back to nine looser matchers: text Edit would refuse to find can be
    # edited somewhere else.
    d = decide([OC_EDIT], "Edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}, client="OpenCode")
    assert d.action is Action.LEAVE and "fuzzy" in d.reason


@pytest.mark.parametrize(("name", "args"), [
    ("str_replace_editor", {"command": "str_replace", "path": "/a", "old_str": "    x = 1", "new_str": "    x = 2"}),
    ("Edit", {"file_path": "/a", "old_string": "    x = 1", "new_string": "    x = 2"}),
])  # fmt: skip
def test_an_exact_edit_never_reaches_qwen_codes_normalising_edit(name: str, args: dict[str, Any]) -> None:
    # Where the literal is missing, Qwen Code 0.15.10 matches whitespace-trimmed lines and writes
    # new_string over them as given: an exact tool would have refused (found by the adversarial pass).
    d = decide([QWEN_EDIT], name, args, client="Qwen Code")
    assert d.action is Action.LEAVE and "normalized" in d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        ([QWEN_EDIT], "edit", {"filePath": "/w/app.py", "oldString": "DEBUG = True", "newString": ""}, "Qwen Code"),
        ([QWEN_EDIT], "edit", {"path": "/w/app.py", "oldText": "DEBUG = True", "newText": ""}, "Qwen Code"),
        # read as Qwen Code's edit or Crush's (the same keys), into Claude Code's Edit
        ([EDIT], "edit", {"file_path": "/w/app.py", "old_string": "DEBUG = True", "new_string": ""}, "Claude Code"),
    ],
    ids=["opencode-spelling", "pi-spelling", "out-of-qwen"],
)
def test_an_empty_replacement_never_moves_into_or_out_of_qwen_codes_edit(tools, name, args, client) -> None:
    """Qwen Code 0.15.10's edit replaces ``old_string`` and its line's newline when
    ``new_string`` is empty and the file holds ``old_string + "\n"`` (cli.js
    maybeAugmentOldStringForDeletion); OpenCode's and pi's edits leave an empty line. Was:
    fitted into Qwen Code's edit (attack 66 H4)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and ("newline" in d.reason or "normalized" in d.reason), d.reason


def test_a_replacement_that_is_not_empty_still_moves_out_of_qwen_codes_edit() -> None:
    args = {"file_path": "/w/app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"}
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit" and d.arguments_after is None, d.reason


GEMINI_SHELL = fn("run_shell_command", schema("command", command=STR, dir_path=STR, is_background=BOOL))
GEMINI_READ = fn("read_file", schema("file_path", file_path=STR, start_line=NUM, end_line=NUM))
OLD_GEMINI_SHELL = fn("run_shell_command", schema("command", command=STR, description=STR, directory=STR))
GEMINI_WRITE = fn("write_file", schema("file_path", "content", file_path=STR, content=STR))
GEMINI_GREP = fn("grep_search", schema("pattern", pattern=STR, dir_path=STR, include_pattern=STR))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "said"),
    [
        # Gemini CLI 0.61.0 takes a leading `sh -c` (bash, zsh, a path to one) and the quotes
        # around the rest off before running it in bash (stripShellWrapper)
        ([GEMINI_SHELL], "Bash", {"command": "sh -c 'echo $0' a"}, "Gemini CLI", "shell wrapper"),
        ([GEMINI_SHELL], "exec_command", {"cmd": 'bash -c "make" && echo "done"'}, "Gemini CLI", "shell wrapper"),
        ([BASH], "run_shell_command", {"command": "/bin/zsh -c 'echo hi'", "dir_path": "/w"}, None, "shell wrapper"),
        # an argv for Gemini's own command, joined, would start with a wrapper it takes off (and
        # `rm -r "$0"` with `$0` = "old tmp" would remove ./tmp): under its key or another
        # (attack 70 L1)
        (
            [GEMINI_SHELL],
            "run_shell_command",
            {"cmd": ["sh", "-c", 'rm -r "$0"', "old tmp"]},
            "Gemini CLI",
            "shell wrapper",
        ),
        (
            [GEMINI_SHELL],
            "run-shell-command",
            {"command": ["sh", "-c", 'rm -r "$0"', "old tmp"]},
            "Gemini CLI",
            "shell wrapper",
        ),
        # JavaScript's \s takes U+FEFF, Python's does not (attack 70 L2)
        ([GEMINI_SHELL], "terminal", {"command": "\ufeffsh -c 'rm -rf build'"}, "Gemini CLI", "whitespace"),
        ([GEMINI_SHELL], "terminal", {"command": "sh\ufeff-c 'rm -rf build'"}, "Gemini CLI", "shell wrapper"),
        # Gemini CLI (and Qwen Code) run the command trimmed: `echo a\\ ` prints `a\\` there, `a `
        # elsewhere; a here-document loses its last blank lines (attack 71 M2, M3)
        ([GEMINI_SHELL], "terminal", {"command": "echo a\\ "}, None, "whitespace"),
        ([BASH], "run_shell_command", {"command": "echo a\\ "}, None, "whitespace"),
        ([BASH], "run_shell_command", {"command": "cat > n <<EOF\nhi\n\n"}, None, "whitespace"),
        # Gemini CLI 0.1.14-0.10.0 takes `bash /c` off too (attack 70 L3)
        ([OLD_GEMINI_SHELL], "terminal", {"command": "bash /c 'rm -rf build'"}, None, "shell wrapper"),
        # it URL-decodes every path (resolveToRealPath: decodeURIComponent, file URLs)
        ([GEMINI_READ], "Read", {"file_path": "/p/a%20b.txt"}, "Gemini CLI", "percent escapes"),
        ([GEMINI_WRITE], "Write", {"file_path": "file:///p/a.txt", "content": "x"}, "Gemini CLI", "percent escapes"),
        # its write_file writes CRLF throughout in a file that has one
        ([GEMINI_WRITE], "write", {"filePath": "/p/a.txt", "content": "a\nb\n"}, "Gemini CLI", "line breaks"),
        # its grep_search runs ripgrep unless the settings turn it off, then git grep / grep -E
        ([GEMINI_GREP], "search_file_content", {"pattern": "\\d+", "path": "src"}, "Gemini CLI", "read as"),
    ],
    ids=[
        "sh-c",
        "bash-c-and",
        "zsh-c-back",
        "own-argv-cmd",
        "own-argv-respelled-name",
        "bom-before",
        "bom-between",
        "trailing-escaped-space-in",
        "trailing-escaped-space-out",
        "heredoc-blank-lines-out",
        "old-gemini-slash-c",
        "percent",
        "file-url",
        "write-lines",
        "grep",
    ],
)
def test_what_gemini_cli_and_qwen_code_run_otherwise_never_moves_into_or_out_of_them(
    tools: list, name: str, args: dict, client: str | None, said: str
) -> None:
    """Facts read in Gemini CLI 0.61.0's and Qwen Code 0.15.10's shipped bundles (shell-utils
    stripShellWrapper, resolveToRealPath, write-file's CRLF step, the ripgrep grep; Qwen's
    writeTextFile lineEnding): a call they would run otherwise than the model's own tool stays as
    sent. Was: moved (an audit of the tables against the bundles, A1-A5)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and said in d.reason, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "after"),
    [
        ([GEMINI_SHELL], "Bash", {"command": "git status"}, None),
        ([GEMINI_READ], "Read", {"file_path": "/p/a b.txt"}, None),
        ([GEMINI_WRITE], "write", {"filePath": "/p/a.txt", "content": "one line"}, {"file_path": "/p/a.txt", "content": "one line"}),
    ],
)  # fmt: skip
def test_what_gemini_cli_runs_as_given_still_moves_into_it(tools: list, name: str, args: dict, after) -> None:
    d = decide(tools, name, args, client="Gemini CLI")
    assert d.changed and d.arguments_after == after, d.reason


CLAUDE_MONITOR = fn(
    "Monitor",
    schema("command", additional=False, command=STR, description=STR, timeout_ms=NUM, persistent=BOOL),
)


@pytest.mark.parametrize("earlier", [[], ["cd sub && make"]], ids=["no-earlier-call", "after-cd"])
def test_a_watch_command_never_moves_between_monitors_that_start_it_in_unrecorded_places(earlier) -> None:
    """Qwen Code's ``monitor`` starts its command in the project root (no ``directory``);
    where Claude Code's ``Monitor`` starts it is not recorded (perhaps where its Bash was left,
    after ``cd sub``): ``tail -f app.log`` may watch another file there. Left as sent. Was:
    renamed to ``Monitor`` (attack 66 H2)."""
    calls = [{"command": c} for c in earlier]  # the Bash calls before it, known
    d = resolve(
        ToolCall(name="monitor", arguments={"command": "tail -f app.log"}),
        Toolset([CLAUDE_MONITOR, BASH]),
        client="Claude Code",
        earlier=lambda declared: calls if declared == "Bash" else [],
    )
    assert not d.changed and "start the command" in d.reason, d.reason


def test_a_normalising_edit_reaches_an_exact_one() -> None:
    d = decide([EDIT], "edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit"


CLAUDE_WRITE = fn("Write", schema("file_path", "content", additional=False, file_path=STR, content=STR))


@pytest.mark.parametrize(
    ("tools", "name", "args"),
    [
        # a patch's empty context line is one space: Claude Code's Write would drop it
        ([CLAUDE_WRITE], "write_file", {"file_path": "/r/fix.patch", "content": "@@ -1,2 +1,2 @@\n a\n \n-b\n+c\n"}),
        ([CLAUDE_WRITE], "write_file", {"file_path": "/r/a.py", "content": "x = 1  \r\ny = 2\u00a0"}),
        ([EDIT], "replace", {"file_path": "/r/a.py", "old_string": "x", "new_string": 'S = """a  \nb"""'}),
        # an empty replacement: Claude Code's Edit takes the line's newline too
        ([EDIT], "replace", {"file_path": "/r/a.py", "old_string": "import os", "new_string": ""}),
        # Claude Code's Edit finds a straight-quoted literal in a file that has curly quotes
        (
            [EDIT],
            "str_replace_editor",
            {"command": "str_replace", "path": "/r/a.py", "old_str": 'MSG = "it\'s done"', "new_str": "x"},
        ),
        (
            [EDIT],
            "str_replace_editor",
            {"command": "str_replace", "path": "/r/a.py", "old_str": "caf\u00e9", "new_str": "x"},
        ),
        # Claude Code's Bash hands its shell \; for \\;
        ([BASH], "run_shell_command", {"command": "printf '%s\\n' 'a\\\\;b' > o.txt"}),
        ([BASH], "exec_command", {"cmd": "find . -name '*.o' -exec rm {} \\\\;"}),
    ],
)
def test_text_claude_code_would_respell_never_moves_into_it(tools: list, name: str, args: dict) -> None:
    """Claude Code 2.1.197 rewrites a call's input before its tool runs (normalizeToolInput, in
    its bundled JS): each line's trailing whitespace goes from Write's content and Edit's
    new_string (outside .md/.mdx files), an empty new_string takes its line's newline, Edit finds
    the literal with curly quotes read as straight ones (and escapes, non-ASCII, sanitized tags
    read either way), and Bash gets \\; for \\\\;. Text those change never moves into them from a
    tool that writes, matches or runs it as given. Was: moved as sent."""
    d = decide(tools, name, args, client="Claude Code")
    assert not d.changed, d.reason


OC_WRITE = fn("write", schema("filePath", "content", filePath=STR, content=STR))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        ([WRITE_FILE], "write", {"filePath": "/w/notes.txt", "content": "line one\nline two\n"}, "Qwen Code"),
        ([WRITE_FILE], "write", {"path": "/w/notes.txt", "content": "a\nb"}, "Qwen Code"),
        ([OC_WRITE], "write_file", {"file_path": "/w/notes.txt", "content": "one\ntwo\n"}, "OpenCode"),
    ],
    ids=["opencode-to-qwen", "pi-to-qwen", "qwen-to-opencode"],
)
def test_text_with_line_breaks_never_moves_into_or_out_of_qwen_codes_write_file(tools, name, args, client) -> None:
    """Qwen Code 0.15.10's write_file writes CRLF throughout when the file it replaces has one
    (cli.js detectLineEnding, ensureCrlfLineEndings); OpenCode's and pi's write the text's own
    line breaks. Was: renamed to write_file as sent (attack 66 H5)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and "line breaks" in d.reason, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # one line of C: Gemini CLI would write a line break where the model wrote backslash-n
        ([GEMINI_WRITE], "Write", {"file_path": "/p/a.c", "content": 'printf("hi\\n");'}, "Gemini CLI"),
        ([GEMINI_WRITE], "write", {"filePath": "/p/a.sh", "content": "echo \\`date\\`"}, "Gemini CLI"),
        ([GEMINI_WRITE], "write", {"filePath": "/p/a.txt", "content": "C:\\\\temp"}, "Gemini CLI"),
        # a backslash before r too (its line breaks are another rule's)
        ([GEMINI_WRITE], "Write", {"file_path": "/p/a.py", "content": "s = 'a\\rb'"}, "Gemini CLI"),
        # the other way: what Gemini's write_file would have written is not known
        ([CLAUDE_WRITE], "write_file", {"file_path": "/p/a.c", "content": 'printf("hi\\n");'}, "Claude Code"),
    ],
    ids=["backslash-n", "backtick", "two-backslashes", "backslash-r", "out-of-gemini"],
)
def test_text_gemini_cli_would_unescape_never_moves_into_or_out_of_its_writes(tools, name, args, client) -> None:
    """Gemini CLI's write_file runs unescapeStringForGeminiBug over the text first (0.61.0, for a
    model not of Gemini 2 or 3 nor custom; 0.1.9-0.10.0 hand such text to an LLM to correct, and
    their replace its new_string: editCorrector.ts): a backslash before n, t, r, a quote, a
    backtick, a backslash or a line break may become the character it escapes. Was: renamed to
    write_file as sent."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and "escape" in d.reason, d.reason


def test_text_without_such_a_backslash_still_moves_into_gemini_clis_write_file() -> None:
    d = decide([GEMINI_WRITE], "Write", {"file_path": "/p/a.txt", "content": "C:\\x 1.2"}, client="Gemini CLI")
    assert d.action is Action.RENAME and d.target == "write_file" and d.arguments_after is None, d.reason


def test_one_line_of_text_still_moves_into_qwen_codes_write_file() -> None:
    d = decide([WRITE_FILE], "write", {"filePath": "/w/v.txt", "content": "1.2.3"}, client="Qwen Code")
    assert d.changed and d.arguments_after == {"file_path": "/w/v.txt", "content": "1.2.3"}, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # Claude Code decodes \u0024 to $ before Bash runs: the shell would expand $HOME
        ([BASH], "run_shell_command", {"command": 'printf %s "\\u0041\\u0024HOME" > o.txt'}, "Claude Code"),
        ([CLAUDE_WRITE], "write_file", {"file_path": "/r/a.js", "content": 'const Q = "\\u0022";\n'}, "Claude Code"),
        ([READ], "read_file", {"file_path": "/r/\\u0041.txt"}, "Claude Code"),
        ([EDIT], "replace", {"file_path": "/r/a.py", "old_string": "x", "new_string": "X = '\\u0024'"}, "Claude Code"),
        # the other way: the model's Claude Code tool would have decoded it, OpenCode's write does not
        ([OC_WRITE], "Write", {"file_path": "/r/a.js", "content": 'const Q = "\\u0022";\n'}, "OpenCode"),
    ],
)
def test_a_string_with_a_backslash_u_escape_never_moves_into_or_out_of_claude_code(
    tools: list, name: str, args: dict, client: str
) -> None:
    """Claude Code 2.1.197 decodes every backslash-u escape in every string of a tool's input
    before the tool runs (its bundled JS, before normalizeToolInput); the other agents' tools take
    the text as written. Such a string never moves between them. Was: moved as sent, and real
    Claude Code ran printf with $HOME expanded (/tmp/attack45)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed, d.reason
    assert "backslash-u escape" in d.reason, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "target"),
    [
        # one line: lines Qwen Code's write_file (one reading of the name) would write with CRLF
        # in a CRLF file never move (test_text_with_line_breaks_never_moves_…)
        ([CLAUDE_WRITE], "write_file", {"file_path": "/r/a.py", "content": "x = 1"}, "Write"),
        ([EDIT], "replace", {"file_path": "/r/a.py", "old_string": "x = 1", "new_string": "x = 2"}, "Edit"),
        ([BASH], "exec_command", {"cmd": "git status"}, "Bash"),
    ],
)
def test_text_claude_code_reads_as_sent_still_moves_into_it(tools: list, name: str, args: dict, target: str) -> None:
    d = decide(tools, name, args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == target, d.reason


@pytest.mark.parametrize("extra", [{"mode": "append"}, {"append": True}])
def test_an_append_the_client_would_ignore_is_never_made_a_valid_overwrite(extra: dict[str, Any]) -> None:
    # Qwen Code passes keys it does not declare to a handler that ignores them: renaming `path`
    # would turn a refused call into an overwrite.
    d = decide([WRITE_FILE], "write_file", {"path": "/a", "content": "x", **extra}, client="Qwen Code")
    assert d.action is Action.KEEP and d.arguments_after is None


def test_a_background_flag_the_target_has_no_key_for_is_left_unless_false() -> None:
    oc_bash = fn("bash", schema("command", command=STR, timeout=INT, workdir=STR))
    assert (
        decide(
            [oc_bash], "run_shell_command", {"command": "npm run dev", "is_background": True}, client="OpenCode"
        ).action
        is Action.LEAVE
    )
    d = decide([oc_bash], "run_shell_command", {"command": "npm test", "is_background": False}, client="OpenCode")
    assert d.action is Action.RENAME and d.arguments_after == {"command": "npm test"}


def test_an_isolation_a_subagent_tool_has_no_place_for_is_left() -> None:
    # Qwen Code 0.15.10 ran an `agent` call renamed from Agent with isolation: "worktree" in the
    # main tree (its validateToolParams never runs ajv): no counterpart, no rename.
    agent = fn(
        "agent",
        schema(
            "description",
            "prompt",
            additional=False,
            description=STR,
            prompt=STR,
            subagent_type=STR,
            run_in_background=BOOL,
        ),
    )
    d = decide(
        [agent],
        "Agent",
        {"description": "d", "prompt": "p", "subagent_type": "general-purpose", "isolation": "worktree"},
    )
    assert d.action is Action.LEAVE and "isolation" in d.reason


# ------------------------------------------------------------------ shells
def test_a_command_for_the_users_shell_reaches_bash_only_when_portable() -> None:
    # Claude Code's Bash runs the user's shell (zsh on a default macOS), Qwen Code's bash -c.
    assert decide([RUN_SHELL], "Bash", {"command": "git status"}).arguments_after is None
    assert decide([RUN_SHELL], "Bash", {"command": "rm -f **/*.orig"}).action is Action.LEAVE


def test_a_command_for_bash_reaches_the_users_shell_wrapped_in_bash() -> None:
    d = decide([BASH], "run_shell_command", {"command": "rm -f **/*.orig"})
    assert d.action is Action.RENAME and d.arguments_after == {"command": "bash -c 'rm -f **/*.orig'"}


def test_a_bash_argv_keeps_its_shell() -> None:
    d = decide([BASH], "shell", {"command": ["bash", "-lc", "rm -f **/*.orig"]})
    assert d.arguments_after == {"command": "bash -lc 'rm -f **/*.orig'"}
    assert decide([BASH], "shell", {"command": ["bash", "-lc", "git status"]}).arguments_after == {
        "command": "git status"
    }


# ------------------------------------------------------------------ what the next call inherits
OC_BASH = fn("bash", schema("command", command=STR, timeout=NUM, workdir=STR, description=STR))


@pytest.mark.parametrize("key", ["command", "cmd"])
@pytest.mark.parametrize(
    "argv",
    # (`cd sub; make`: with ` && ` after it, a `cd ` is also text Claude Code's Bash may cut)
    [["bash", "-lc", "cd sub; make"], ["cd", "/tmp"], ["bash", "-lc", "pushd build"]],
    ids=["bash-lc-cd", "cd-as-a-program", "pushd"],
)
def test_an_argv_for_the_targets_own_command_never_becomes_a_line_that_moves_its_directory(argv, key) -> None:
    """``Bash {"command": ["bash", "-lc", "cd sub && make"]}``: the argv changes the directory of
    a process of its own, which ends with it; as Bash's command line, ``cd sub && make`` moves
    Claude Code's kept directory for every later call. Left as sent (the client reports the
    argv), under Bash's own key or another tool's (``cmd``). Was: fitted to ``cd sub && make``
    (attack 66 H1; under ``cmd``, attack 68 K1)."""
    d = decide([BASH], "Bash", {key: argv}, client="Claude Code")
    assert not d.changed and "process of its own" in d.reason, d.reason


_MOVES = ["cd sub", "pushd build", "popd", "c''d sub", "{cd,} sub", "builtin cd /", "command cd -"]
_STAYS = ["make -j4", "git status", "ls -la", "echo cd", "grep -r cd .", "true"]


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    parts=st.lists(st.tuples(st.booleans(), st.integers(0, 6)), min_size=1, max_size=4),
    joins=st.lists(st.sampled_from([" && ", "; ", " || "]), min_size=3, max_size=3),
    wrapper=st.sampled_from([["bash", "-lc"], ["bash", "-c"]]),
    key=st.sampled_from(["command", "cmd"]),
)
def test_property_an_own_argv_is_written_as_a_line_only_when_it_moves_no_directory(parts, joins, wrapper, key) -> None:
    """Over command lines built from pieces known to change the directory or not: an argv given
    for Claude Code's own Bash command (which keeps its directory between calls) becomes a command
    line only when no piece changes the directory (the argv's own process would have dropped it)."""
    pieces = [(_MOVES if moves else _STAYS)[i % len(_MOVES if moves else _STAYS)] for moves, i in parts]
    line = pieces[0] + "".join(j + p for j, p in zip(joins, pieces[1:]))
    argv = [*wrapper, line]
    d = decide([BASH], "Bash", {key: argv}, client="Claude Code")
    moved = any(m for m, _ in parts)
    event("changed" if d.changed else "left")
    if moved:
        assert not d.changed, (argv, d.arguments_after, d.reason)


def test_an_argv_for_the_targets_own_command_that_moves_nothing_is_still_written_as_its_line() -> None:
    d = decide([BASH], "Bash", {"command": ["bash", "-lc", "make -j4"]}, client="Claude Code")
    assert d.changed and d.arguments_after == {"command": "make -j4"}, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # Codex runs each call in a new process; Claude Code's Bash keeps the working directory.
        # (`cd src; make`: with ` && ` after it, a `cd ` is also text Claude Code's Bash may cut)
        ([BASH], "exec_command", {"cmd": "cd src; make"}, None),
        ([BASH], "exec_command", {"cmd": "pushd src && make"}, None),
        ([BASH], "exec_command", {"cmd": "{cd,src} && make"}, None),  # brace expansion: cd src
        ([BASH], "exec_command", {"cmd": "c\\\nd src && make"}, None),  # a line continuation: cd src
        ([BASH], "shell", {"command": ["bash", "-lc", "cd src; make"]}, None),
        ([BASH], "run_shell_command", {"command": "cd src; make"}, None),
        # ... and the other way: a directory the model meant to keep is lost in OpenCode.
        ([OC_BASH], "Bash", {"command": "cd src; make"}, "OpenCode"),
        # Hermes' terminal is not recorded: no state may move, a variable no more than a directory.
        ([BASH], "terminal", {"command": "export CI=1 && make"}, None),
        ([BASH], "terminal", {"command": "cd src; make"}, None),
    ],
)
def test_a_command_that_changes_what_the_next_call_inherits_is_left(
    tools: list[Any], name: str, args: dict[str, Any], client: str | None
) -> None:
    d = decide(tools, name, args, client=client)
    assert d.action is Action.LEAVE and d.arguments_after is None, d.reason
    assert "the next call then" in (d.reason or ""), d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "after"),
    [
        ([BASH], "exec_command", {"cmd": "make"}, None, {"command": "make"}),
        ([BASH], "exec_command", {"cmd": "find . -name x"}, None, {"command": "find . -name x"}),
        ([BASH], "shell", {"command": ["bash", "-lc", "git status"]}, None, {"command": "git status"}),
        ([OC_BASH], "Bash", {"command": "make"}, "OpenCode", None),
        ([BASH], "terminal", {"command": "make test"}, None, None),
        # Both start each call afresh: the directory change dies with the call in either.
        ([GEMINI_SHELL], "exec_command", {"cmd": "cd src && make"}, "Gemini CLI", {"command": "cd src && make"}),
    ],
)
def test_a_command_whose_next_call_inherits_the_same_moves(
    tools: list[Any], name: str, args: dict[str, Any], client: str | None, after: dict[str, Any] | None
) -> None:
    d = decide(tools, name, args, client=client)
    assert d.action is Action.RENAME and d.target == tools[0].name, d.reason
    assert d.arguments_after == after


# ------------------------------------------------------------------ where the call starts
def decide_after(
    tools: list[Any], name: str, args: dict[str, Any], history: list[str] | None, client: str | None = None
):
    """``decide`` in a conversation whose declared shell tool ran ``history`` before (``None``: a
    request that does not carry its earlier calls)."""
    calls = None if history is None else [{"command": h} for h in history]
    return resolve(
        ToolCall(name=name, arguments=args),
        Toolset(tools),
        client=client,
        earlier=lambda declared: calls if declared == tools[0].name else [],
    )


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "history"),
    [
        # Claude Code's Bash kept the directory an earlier call changed; Codex's call starts afresh.
        ([BASH], "exec_command", {"cmd": "make"}, None, ["cd src"]),
        ([BASH], "shell", {"command": ["bash", "-lc", "make"]}, None, ["ls", "pushd build && cmake .."]),
        ([BASH], "run_shell_command", {"command": "make"}, None, ["cd src && ls"]),
        # ... and the other way: the model's Bash would run where its earlier call left it.
        ([OC_BASH], "Bash", {"command": "make"}, "OpenCode", ["cd src && ls"]),
        # Hermes' terminal is not recorded: it may keep a variable as much as a directory.
        ([BASH], "terminal", {"command": "make test"}, None, ["export CI=1"]),
        # The request does not carry the conversation's earlier calls: where it starts is unknown.
        ([BASH], "exec_command", {"cmd": "make"}, None, None),
        ([OC_BASH], "Bash", {"command": "make"}, "OpenCode", None),
    ],
)
def test_a_command_that_would_start_where_an_earlier_call_left_only_one_tool_is_left(
    tools: list[Any], name: str, args: dict[str, Any], client: str | None, history: list[str] | None
) -> None:
    d = decide_after(tools, name, args, history, client=client)
    assert d.action is Action.LEAVE and d.arguments_after is None, d.reason
    assert "earlier" in (d.reason or ""), d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "history"),
    [
        ([BASH], "exec_command", {"cmd": "make"}, None, []),
        ([BASH], "exec_command", {"cmd": "make"}, None, ["ls -la", "git status"]),
        # Bash keeps the directory only, and a new process keeps nothing: a variable dies in both.
        ([BASH], "exec_command", {"cmd": "make"}, None, ["export CI=1 && make"]),
        # Both start each call afresh: what ran before matters to neither, known or not.
        ([GEMINI_SHELL], "exec_command", {"cmd": "make"}, "Gemini CLI", ["cd src"]),
        ([GEMINI_SHELL], "exec_command", {"cmd": "make"}, "Gemini CLI", None),
    ],
)
def test_a_command_that_starts_alike_in_both_tools_moves(
    tools: list[Any], name: str, args: dict[str, Any], client: str | None, history: list[str] | None
) -> None:
    d = decide_after(tools, name, args, history, client=client)
    assert d.action is Action.RENAME and d.target == tools[0].name, d.reason


# ------------------------------------------------------------------ the table against the vocabulary
def test_every_table_is_a_vocabulary_row_with_a_version_and_a_source() -> None:
    rows = {(e.name, e.clients) for e in vocabulary.ENTRIES}
    for table in TABLES:
        assert (table.name, table.clients) in rows, table.name
        assert table.version and table.source, table.name
        assert table.unknown_keys in ("rejected", "ignored", "mixed")
        for meaning in [*table.args.values(), *(m for c in table.by_command.values() for m in c.values())]:
            assert meaning.unit in (None, "ms", "s") and meaning.base in (None, 0, 1)


def test_each_shell_tool_names_the_shell_that_runs_its_command() -> None:
    for table in TABLES:
        for key, meaning in table.args.items():
            if meaning.what == "shell.command":
                # mvdan-sh: Crush's bash, mvdan.cc/sh's POSIX interpreter (no bash, no zsh): only a
                # portable line (words, && || ; |: one reading in every POSIX shell) reaches it.
                assert meaning.form in ("argv", "bash", "user", "mvdan-sh"), (table.name, key)


# ------------------------------------------------------------------ the oracle, from the table alone
def _effective(meaning: Meaning, value: Any) -> Any:
    """A value as the table says the tool reads it: durations in ms, line numbers from 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return value
    if meaning.unit == "s":
        value = value * 1000
    if meaning.base is not None:
        value = value - meaning.base
    return value


_BASH = ("bash", "/bin/bash")
_OPS = ("&&", "||", ";", "|")


def _runs(form: str | None, value: Any) -> tuple[str, Any]:
    """What a shell runs for a command value: an argv, a portable line (the same in bash, zsh and
    dash: checked against the real shells in test_shellwords.py), or a line only one shell reads."""
    if isinstance(value, list):
        if len(value) == 3 and value[0] in _BASH and value[1] in ("-c", "-lc"):
            return _runs("bash", value[2])
        return ("argv", tuple(value))
    try:
        words = shlex.split(value)
    except ValueError:
        words = None
    if words and len(words) == 3 and words[0] in _BASH and words[1] in ("-c", "-lc"):
        return _runs("bash", words[2])
    if is_portable(value):
        if words is not None and not any(op in value for op in _OPS):
            return ("argv", tuple(words))
        return ("portable", value)
    return (form or "?", value)


#: What each command of ``COMMANDS`` changes in the shell process that runs it, written by hand
#: (not by the code under test): the working directory, or the environment.
LEAVES = {
    "cd src && make": frozenset({"cwd"}),
    "pushd src && make": frozenset({"cwd"}),
    "export CI=1 && make": frozenset({"env"}),
}


def _leaves(value: Any) -> frozenset[str]:
    """What a command value leaves in the shell that runs it: an argv runs without that shell
    (or in a child ``bash -c``), so nothing; a line, what ``LEAVES`` says."""
    if not isinstance(value, str):
        return frozenset()
    words = value.split()
    if len(words) >= 2 and words[0] in _BASH and words[1] in ("-c", "-lc"):
        return frozenset()  # a child bash: its directory and variables die with it
    return LEAVES.get(value, frozenset())


def _carried(table: ArgTable, value: Any) -> Any:
    """What the next call of ``table``'s tool inherits from this command: nothing from a tool that
    starts each call afresh, the directory from one that keeps it, everything from one shell; from
    a tool whose session is not recorded, something no other tool matches."""
    leaves = _leaves(value)
    session = table.fixed.get("shell.session")
    if not leaves or session == "none":
        return frozenset()
    if session == "cwd":
        return leaves & {"cwd"}
    if session == "shell":
        return leaves
    return ("unknown", table.clients, table.name, table.version)


def _floating(value: Any) -> bool:
    """Not a path from a root (on POSIX ``/`` or ``~``; ``C:\\x`` is a name there): found from a
    directory of its tool's."""
    return value is None or (isinstance(value, str) and not value.startswith(("/", "~")))


def _respelled(value: Any) -> bool:
    """A path some tool reads otherwise than written: a leading @ (pi's path-utils.ts, Gemini
    CLI), a Unicode space pi turns into a space, whitespace at an end (Claude Code and Qwen Code
    trim, OpenCode does not), a backslash before a shell's special character (Qwen Code's
    unescapePath drops it)."""
    if not isinstance(value, str):
        return False
    return (
        value.startswith("@")
        or any(c in value for c in "\u00a0\u202f\u205f\u3000")
        or any("\u2000" <= c <= "\u200a" for c in value)
        or value != value.strip()
        or value[:1] == "\ufeff"  # JavaScript's trim takes it, Python's strip does not
        or value[-1:] == "\ufeff"
        or "\x00" in value  # Gemini CLI drops it, Claude Code refuses the path
        or value.endswith((" AM.png", " PM.png"))  # Claude Code's screenshot-name fallback
        or any(value[i] == "\\" and value[i + 1] in " \t()[]{};|*?$`'\"#&<>!~" for i in range(len(value) - 1))
        or value.startswith("file:")  # Gemini CLI 0.61 URL-decodes a path and reads a file URL
        or any(
            value[i] == "%" and all(c in string.hexdigits for c in value[i + 1 : i + 3]) for i in range(len(value) - 2)
        )
    )


#: A relative path a tool refuses: the call runs nothing there, which the model reads.
REFUSED = ("refused",)


def _found_from(table: ArgTable, value: Any, moved: bool | None = False) -> Any:
    """Which file a relative ``value`` (``None``: "here") names in ``table``'s tool, from its
    ``path.base`` alone: from where the agent started for a tool that finds it there, and for
    one that finds it where its shell was left unless an earlier call ``moved`` that (``None``:
    not known); refused, or not known, means in no other tool."""
    base = table.fixed.get("path.base")
    if base == "start" or (base == "cwd" and moved is False):
        return ("start", value or None)
    if base == "absolute":
        return REFUSED
    return ("own", base, table.clients, table.name, value)


_PLACEHOLDER_PREFIXES = {
    "rest of",
    "rest of method",
    "rest of methods",
    "rest of code",
    "unchanged code",
    "unchanged method",
    "unchanged methods",
}


def _has_placeholder(value: Any) -> bool:
    """Gemini CLI 0.61.0's omission placeholder test (omissionPlaceholderDetector.ts), line by line:
    after ``//`` and one pair of parentheses, a listed prefix, ``...`` and nothing but dots."""
    if not isinstance(value, str):
        return False
    for line in value.replace("\r\n", "\n").split("\n"):
        text = line.strip(" \t\n\r\v\f\u00a0\ufeff")
        if text.startswith("//"):
            text = text[2:].strip(" \t\n\r\v\f\u00a0\ufeff")
        if text.startswith("(") and text.endswith(")"):
            text = text[1:-1].strip(" \t\n\r\v\f\u00a0\ufeff")
        at = text.find("...")
        if at < 0:
            continue
        prefix = " ".join(p for p in re.split("[ \t\n\r]+", text[:at].strip().lower()) if p)
        rest = text[at + 3 :].strip()
        if prefix in _PLACEHOLDER_PREFIXES and set(rest) <= {"."}:
            return True
    return False


def _cline_changes(value: Any) -> bool:
    """Cline 3.89.2's write_to_file writes ``value`` otherwise: a fence line dropped, HTML entities
    unescaped, U+FFFD dropped."""
    return isinstance(value, str) and (
        value.startswith("```")
        or value.endswith("```")
        or any(e in value for e in ("&gt;", "&lt;", "&quot;", "&amp;", "&apos;", "\ufffd"))
    )


def _roo_changes(value: Any) -> bool:
    """Roo Code 3.52.1's write_to_file writes ``value`` otherwise: a fence line dropped, entities
    unescaped."""
    entities = ("&lt;", "&gt;", "&quot;", "&#39;", "&apos;", "&#91;", "&#93;", "&lsqb;", "&rsqb;", "&amp;")
    return isinstance(value, str) and (
        value.startswith("```") or value.endswith("```") or any(e in value for e in entities)
    )


def intent(table: ArgTable, args: dict[str, Any]) -> dict[str, Any]:
    """Operand → what it means, for a call read as ``table``'s tool, from the table's data only."""
    out: dict[str, Any] = {}
    listed = table.args
    for key, value in args.items():
        if key in ANNOTATIONS:
            continue
        meaning = listed[key]
        if meaning.what == "monitor.command" and table.fixed.get("shell.session") is None:
            # where the watch command starts is not recorded: it means something in its tool only
            out[meaning.what] = ((value, table.clients, table.name), None)
        elif meaning.what == "edit.old" and value == "":
            # an empty old text: create the file (Claude Code, OpenCode, Qwen Code), or refused (pi,
            # the text editor), each tool its own way
            out[meaning.what] = (("", table.clients, table.name), None)
        elif (
            meaning.unwraps
            and isinstance(value, str)
            and value.lstrip().split(" ")[0].split("/")[-1]
            in (
                "sh",
                "bash",
                "zsh",
            )
        ):
            # Gemini CLI 0.61 takes a leading `sh -c` off (and the quotes after it): a command
            # that starts with a shell means what it does there only
            out[meaning.what] = ((value, table.clients, table.name), None)
        elif meaning.rewrites and any(
            re.search(pattern, word)
            for pattern in meaning.rewrites
            for word in (value if isinstance(value, list) else [value])
            if isinstance(word, str)
        ):
            # text its client rewrites before the shell runs it (Claude Code's `>nul`) or runs
            # itself (Codex's apply_patch) means what it does there only
            out[meaning.what] = ((value, table.clients, table.name), None)
        elif meaning.what in ("shell.command", "monitor.command"):
            for old, to in meaning.respells:  # what the client hands the shell
                value = value.replace(old, to) if isinstance(value, str) else value
            out[meaning.what] = _runs(meaning.form, value)
            if meaning.what == "shell.command" and _carried(table, value):
                out["shell.carried"] = (_carried(table, value), None)
        elif meaning.form and {
            "eol-of-file",
            "newline-on-empty",
            "escapes-corrected",
            "omission-refused",
            "cline-rewrites",
            "roo-rewrites",
        } & set(meaning.form.split("+")):
            # Qwen Code's, Gemini CLI's, OpenCode's, Claude Code's, pi's and Crush's writes and
            # edits: line breaks as the replaced file's (CRLF in a CRLF file), a carriage return
            # in the text kept by some and normalized by others; Qwen Code's edit: an empty
            # replacement also takes the line's newline; Gemini CLI's write_file (and old
            # replace): a backslash before n, t, r, a quote, a backtick, a backslash or a line
            # break read as an escape
            flags = set(meaning.form.split("+"))
            eol = "eol-of-file" in flags
            carriage = eol and isinstance(value, str) and "\r" in value
            # OpenCode's edit: with replaceAll (true, or not a boolean) String.prototype.replaceAll
            # reads $$, $&, $` and $' in the new text as patterns; once, it joins the text in as sent
            every = [args[k] for k, m in listed.items() if m.what == "edit.all" and k in args]
            dollared = (
                "dollar-patterns" in flags
                and isinstance(value, str)
                and re.search(r"\$[$&`']", value) is not None
                and (every[0] is not False if every else False)
            )
            emptied = "newline-on-empty" in flags and value == ""
            escaped = (
                "escapes-corrected" in flags
                and isinstance(value, str)
                and any(value[i] == "\\" and value[i + 1] in "ntr'\"`\\\n" for i in range(len(value) - 1))
            )
            # Gemini CLI 0.61.0 refuses a placeholder line; Cline and Roo Code change fenced text
            # and HTML entities before writing
            refused = "omission-refused" in flags and _has_placeholder(value)
            rewritten = ("cline-rewrites" in flags and _cline_changes(value)) or (
                "roo-rewrites" in flags and _roo_changes(value)
            )
            if carriage or emptied or escaped or dollared or refused or rewritten:
                out[meaning.what] = ((value, table.clients, table.name), None)
            else:
                shown: Any = value
                if "trimmed-lines" in flags:  # Claude Code's Edit: its file's line endings, and trimmed
                    shown = "empty, newline too" if meaning.what == "edit.new" and value == "" else _trimmed(value)
                if eol and isinstance(value, str) and "\n" in value:
                    shown = ("line breaks as the file's", shown)
                out[meaning.what] = (shown, None)
        elif meaning.form == "trimmed-lines":
            # Claude Code's Write and Edit write each line without its trailing whitespace (JS \s);
            # an empty replacement there also takes the line's newline
            gone = "empty, newline too" if meaning.what == "edit.new" and value == "" else None
            out[meaning.what] = (_trimmed(value) if gone is None else gone, None)
        elif (
            meaning.form == "exact-quotes"
            and isinstance(value, str)
            and value.isascii()
            and not any(c in value for c in "'\"\\<")
        ):
            out[meaning.what] = (value, "exact")  # nothing it could read another way: an exact match
        elif meaning.form == "tabs-expanded":
            # the text editor writes its new text with tabs expanded (new_str.expandtabs())
            out[meaning.what] = (value.expandtabs() if isinstance(value, str) else value, None)
        elif meaning.form == "exact-tabs" and isinstance(value, str) and not any(c in value for c in "\t \r"):
            # the text editor counts in the file with its tabs expanded and read with universal
            # newlines: only a text no tab can have become, holding no \r, is found literally
            out[meaning.what] = (value, "exact")
        elif meaning.what.endswith((".path", ".cwd")) and (
            isinstance(value, str) and value.startswith("~") or _respelled(value)
        ):
            # ~ is the home directory for some tools, a folder of the project for others: a
            # home-relative path means something only in its own tool.
            out[meaning.what] = (value, f"{table.clients} {table.name}")
        elif meaning.what.endswith((".path", ".cwd")) and _floating(value):
            out[meaning.what] = (_found_from(table, value), None)
        elif (
            meaning.form == "rg-glob-list"
            and isinstance(value, str)
            and not any(c.isspace() or c == "," for c in value)
        ):
            out[meaning.what] = (value, "rg-glob")  # a list of one glob is that glob
        elif (
            meaning.unit is not None and not isinstance(value, bool) and isinstance(value, (int, float)) and value <= 0
        ):
            # 0 disables pi's timer (bash.ts): a duration of 0 or less means what its tool says.
            out[meaning.what] = ((value, table.clients, table.name, table.version), meaning.form)
        elif (
            meaning.what.endswith(".limit")
            and not isinstance(value, bool)
            and isinstance(value, (int, float))
            and value <= 0
        ):
            # a count of lines or entries of 0: refused by Claude Code's Read and Qwen Code's
            # read_file, none read by OpenCode's read; each tool's own
            out[meaning.what] = ((value, table.clients, table.name, table.version), meaning.form)
        else:
            out[meaning.what] = (_effective(meaning, value), meaning.form)
    olds = [args[k] for k, m in listed.items() if m.what == "edit.old" and m.form == "exact-quotes" and k in args]
    news = [k for k, m in listed.items() if m.what == "edit.new" and k in args]
    if olds and news and _read_otherwise(olds[0]) and _read_otherwise(args[news[0]]):
        # Claude Code's Edit: an old text found with its quotes, escapes or tags read another way
        # has its new text written that way too
        out["edit.new"] = ((args[news[0]], table.clients, table.name), None)
    # Gemini CLI 0.61's replace: the file keeps whether it ends in a newline, so a replacement
    # that adds or takes one off at the file's end is written otherwise there
    keeps = any(m.what == "edit.new" and "final-newline-kept" in (m.form or "") for m in listed.values())
    ends = [args[k] for k, m in listed.items() if m.what in ("edit.old", "edit.new") and k in args]
    if keeps and len(ends) == 2 and all(isinstance(e, str) for e in ends):
        if ends[0].endswith("\n") != ends[1].endswith("\n"):
            out["edit.new"] = ((args[news[0]], table.clients, table.name), None)
    for key, meaning in listed.items():
        if meaning.what in ("glob.path", "grep.path", "list.path") and key not in args:
            out[meaning.what] = (_found_from(table, None), None)  # a search or listing of "here"
    for what, value in table.fixed.items():
        # shell.session: compared as what the next call inherits (shell.carried); path.base: as
        # where each relative path is found
        if what not in ("shell.session", "path.base", "shell.moved_by"):
            out.setdefault(what, (value, None))
    for meaning in listed.values():
        if meaning.default is not None:
            out.setdefault(meaning.what, (meaning.default, meaning.form))
    return out


def _read_otherwise(text: Any) -> bool:
    """Whether Claude Code 2.1.197's Edit may read ``text`` otherwise than literally (written by
    hand from its findActualString and desanitize: a quote, straight or curly, a backslash-u
    escape, a character past ASCII, a sanitized tag)."""
    if not isinstance(text, str):
        return False
    if any(c in "'\"\u2018\u2019\u201c\u201d" or ord(c) > 127 for c in text):
        return True
    return bool(re.search(r"\\u[0-9a-fA-F]{4}|</?[noesr]>|<fnr>|< [A-Z_]+ >|\n\n[HA]:", text))


def _trimmed(text: Any) -> Any:
    """``text`` with each line's trailing whitespace gone (the test's own reading of Claude Code's
    normalizeToolInput: lines split at CRLF, LF or CR; JavaScript's ``\\s``)."""
    if not isinstance(text, str):
        return text
    js_space = "\t\n\v\f\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
        chr(c) for c in range(0x2000, 0x200B)
    )
    parts = re.split(r"(\r\n|\n|\r)", text)
    return "".join(p if i % 2 else p.rstrip(js_space) for i, p in enumerate(parts))


def _same_form(source: Any, target: Any, what: str) -> bool:
    if what == "edit.old":
        # A target that matches exactly refuses what it cannot find; a source that matched
        # fuzzily may reach any matcher; no source reaches a looser matcher than its own.
        if source in ("exact-tabs", "fuzzy-pi"):
            # the text editor: a tab, a space or a line break in it (else read as exact above);
            # pi: it counts occurrences in normalised text, the literal found or not
            return target == source
        if str(source).startswith("fuzzy"):
            return True
        return source == target or target == "exact"
    return source == target


def same_intent(source: dict[str, Any], target: dict[str, Any]) -> bool:
    for what, meant in source.items():
        if what not in target:
            return False
        got = target[what]
        if what in ("shell.command", "monitor.command"):
            if meant != got:
                return False
            continue
        if got[0] == REFUSED and meant[0] != REFUSED:
            continue  # refused in the target: nothing runs, the model reads why
        if meant[0] != got[0] or not _same_form(meant[1], got[1], what):
            return False
    # The target may hold an effect the source left to its default only if they agree.
    for what, got in target.items():
        if what not in source and got[0] not in (None, False):
            return False
    return True


def _json_type(meaning: Meaning) -> dict[str, Any]:
    if meaning.what in ("shell.command", "monitor.command"):
        return {"type": "array", "items": STR} if meaning.form == "argv" else STR
    if meaning.unit or meaning.base is not None or meaning.what.endswith((".limit", ".depth")):
        return NUM
    if meaning.default in (True, False) or meaning.what.endswith((".background", ".all", ".ignore_case")):
        return BOOL
    if meaning.what.startswith("todo.") or meaning.what.endswith(".ignore"):
        return {"type": "array"}
    return {}


def declared_from(table: ArgTable, closed: bool) -> Any:
    props = {key: _json_type(m) for key, m in table.args.items()}
    return fn(
        table.name, {"type": "object", "properties": props, **({"additionalProperties": False} if closed else {})}
    )


COMMANDS = [
    "git status",
    "ls -la | wc -l",
    "rm -f **/*.orig",
    "echo $HOME",
    "grep -n 'a b' x",
    "find . -name '*.o' -exec rm {} \\\\;",  # \\; : Claude Code's Bash hands its shell \;
    "make 2>nul",  # Claude Code's Bash runs it as make 2>/dev/null
    "apply_patch < fix.diff",  # Codex applies it itself
    *LEAVES,
]
#: Written text: as given everywhere; a line ending in whitespace (stripped by Claude Code's Write
#: and Edit); quotes and non-ASCII (read another way by its Edit when the literal is missing); a
#: space, a lone carriage return (the text editor); a $ pattern (OpenCode's edit with replaceAll).
TEXTS = [
    "x",
    "needle",
    "2020-2021",
    "a  \nb",
    "a\nb",
    "a\r\nb",
    "a\rb",
    "a b",
    "$$x",
    "b\n",
    "line\t",
    'it\'s "q"',
    "",
    "caf\u00e9 ok",
    "<n>",
    # what Gemini CLI 0.61.0 refuses, Cline and Roo Code write otherwise
    "// rest of code ...",
    "x\n  (Rest of  methods ....)",
    "a &gt; b",
    "it&#39;s",
    "```py\nx\n```",
]


def value_for(meaning: Meaning) -> st.SearchStrategy[Any]:
    if meaning.what in ("shell.command", "monitor.command"):
        if meaning.form == "argv":
            return st.sampled_from(
                [["bash", "-lc", c] for c in COMMANDS] + [["ls", "-la"], ["git", "status"], ["apply_patch", "x"]]
            )
        return st.sampled_from(COMMANDS)
    if meaning.unit is not None:
        return st.sampled_from([0, 1, 5, 30, 120, 600, 1500, 120000, 600000, 900000])
    if meaning.base is not None:
        return st.integers(0, 40)
    if meaning.what in ("write.content", "edit.new", "edit.old"):
        return st.sampled_from(TEXTS)
    t = _json_type(meaning)
    if t == BOOL:
        return st.booleans()
    if t == NUM:
        return st.integers(-1, 500)
    if t.get("type") == "array":
        return st.just([])
    return st.sampled_from(["/repo/a.py", "src", "needle", "x"])


PLAIN = [t for t in TABLES if t.args and vocabulary.capability_of(t.name) is not None]
PAIRS = [
    (s, t)
    for s in PLAIN
    for t in PLAIN
    if vocabulary.capability_of(s.name) == vocabulary.capability_of(t.name)
    and (s.name, s.version) != (t.name, t.version)
]


@st.composite
def connected_calls(draw: st.DrawFn) -> tuple[ArgTable, ArgTable, dict[str, Any], bool]:
    source, target = draw(st.sampled_from(PAIRS))
    keys = draw(st.lists(st.sampled_from(sorted(source.args)), unique=True, max_size=4))
    args = {k: draw(value_for(source.args[k])) for k in keys}
    return source, target, args, draw(st.booleans())


@SETTINGS
@given(connected_calls())
def test_a_changed_call_reads_the_same_in_the_target_as_in_the_source(
    case: tuple[ArgTable, ArgTable, dict[str, Any], bool],
) -> None:
    """(a) and (c): over every pair of rows of one capability, a call the engine changes means
    in the target what it meant in the source, and carries no key the target does not declare."""
    source, target, args, closed = case
    tool = declared_from(target, closed)
    d = decide([tool], source.name, args, client=target.client)
    event(f"{d.action.value} at {d.step.value}")
    if not d.changed:
        return
    after = d.arguments_after if d.arguments_after is not None else args
    props = tool.input_schema["properties"]
    assert all(k in props or k in ANNOTATIONS for k in after), (after, sorted(props))
    # The source name may be several agents' tool: the change must hold for the one generated.
    readings = [t for t in TABLES if t.name == source.name and all(k in t.args or k in ANNOTATIONS for k in args)]
    for reading in readings:
        if reading.name == target.name and d.action is Action.FIT and vocabulary.capability_of(target.name) == "edit":
            continue  # the client's own edit tool, in another agent's key spelling: its call (BR-27)
        meant, got = intent(reading, args), intent(target, after)
        if "read.limit" not in meant:
            # a read whose tool records no line count for a call without one is not compared
            # (translate._SOURCE_SIDE: those counts are not sourced); any other is
            got.pop("read.limit", None)
        assert same_intent(meant, got), (
            source.name,
            reading.clients,
            reading.version,
            args,
            target.name,
            target.version,
            after,
            d.reason,
        )


def _starts(table: ArgTable, history: list[str | None] | None) -> Any:
    """Where a call of ``table``'s tool starts after the conversation's shell ran ``history``
    (``None``: not known), from the table's session and ``LEAVES`` alone: afresh in a tool that
    keeps nothing, after the directory changes in one that keeps the directory, after every
    change in one shell; in a tool whose session is not recorded, somewhere no other tool is."""
    session = table.fixed.get("shell.session")
    if session == "none":
        return frozenset()
    if history is None or None in history:  # not carried, or a call whose arguments cannot be read
        return ("not known", session, None if session else (table.clients, table.name))
    leaves = frozenset().union(*(_leaves(h) for h in history))
    if session == "cwd":
        return leaves & {"cwd"}
    if session == "shell":
        return leaves
    return ("unknown", table.clients, table.name) if leaves else frozenset()


EDIT_PAIRS = [(s, t) for s, t in PAIRS if vocabulary.capability_of(s.name) == "edit"]


#: The text editor's rows, read by the command a call names (``by_command``): PLAIN holds none.
EDITORS = [t for t in TABLES if "str_replace" in t.by_command]
EDIT_ROWS = [t for t in PLAIN if vocabulary.capability_of(t.name) == "edit"]


@SETTINGS
@given(
    editor=st.sampled_from(EDITORS),
    target=st.sampled_from(EDIT_ROWS),
    old=st.sampled_from(TEXTS),
    new=st.sampled_from(TEXTS),
    closed=st.booleans(),
)
def test_property_a_text_editor_edit_means_the_same_where_it_moves(editor, target, old, new, closed) -> None:
    """(a) for the text editor's str_replace, over every edit row as the client's tool: a call the
    engine changes means in the target what it meant in the editor (which counts its old text
    in the file with tabs expanded, so a text with a space, a tab or a carriage return is found
    another way there). Was: an old text with a space reached Claude Code's Edit (attack 78 T1)."""
    args = {"path": "/w/a.py", "old_str": old, "new_str": new}
    tool = declared_from(target, closed)
    d = decide([tool], editor.name, {"command": "str_replace", **args}, client=target.client)
    event(f"{d.action.value} into {target.name}")
    if not d.changed:
        return
    after = d.arguments_after if d.arguments_after is not None else args
    read = dataclasses.replace(editor, args=editor.by_command["str_replace"])
    assert same_intent(intent(read, args), intent(target, after)), (editor.version, args, target.name, after)


@SETTINGS
@given(pair=st.sampled_from(EDIT_PAIRS), closed=st.booleans(), new=st.sampled_from(TEXTS))
def test_property_an_empty_old_text_never_moves_between_edit_tools(pair, closed, new) -> None:
    """Over every pair of edit rows: an empty old text (a file created in Claude Code's Edit and
    OpenCode's and Qwen Code's edit, refused by pi's edit and the text editor) never reaches
    another tool, whatever the replacement. Was: pi's ``edit`` with ``oldText: ""`` fitted into
    OpenCode's ``edit``, renamed to Claude Code's ``Edit`` (attack 66 H3)."""
    source, target = pair
    args: dict[str, Any] = {}
    for key, meaning in source.args.items():
        if meaning.what == "edit.path":
            args[key] = "/repo/a.py"
        elif meaning.what == "edit.old":
            args[key] = ""
        elif meaning.what == "edit.new":
            args[key] = new
        elif meaning.what == "edit.command":
            args[key] = "str_replace"
    tool = declared_from(target, closed)
    d = decide([tool], source.name, args, client=target.client)
    event(f"{d.action.value}")
    moved = d.changed and not (source.name == target.name and d.arguments_after in (None, args))
    assert not moved, (source.clients, target.clients, args, d.reason)


@pytest.mark.parametrize(
    "pair",
    EDIT_PAIRS,
    ids=[f"{s.clients}-{s.name}-{s.version}>{t.clients}-{t.name}-{t.version}" for s, t in EDIT_PAIRS],
)
def test_a_whole_edit_call_means_the_same_where_it_moves(pair) -> None:
    """(a) over every pair of edit rows, for whole calls: the path, an old text (one line, two
    lines), every new text of TEXTS, and the replace-all flag absent, false or true, each against
    an open and a closed schema: what property (a) draws by chance, a key at a time, swept here. A
    change means in the target what it meant in the source."""
    source, target = pair
    for old, new, every, closed in itertools.product(["x", "a\nb"], TEXTS, [None, False, True], [False, True]):
        args: dict[str, Any] = {}
        for key, meaning in source.args.items():
            value = {"edit.path": "/repo/a.py", "edit.old": old, "edit.new": new, "edit.all": every}.get(meaning.what)
            if value is not None:
                args[key] = value
        tool = declared_from(target, closed)
        d = decide([tool], source.name, args, client=target.client)
        if not d.changed:
            continue
        after = d.arguments_after if d.arguments_after is not None else args
        readings = [t for t in TABLES if t.name == source.name and all(k in t.args for k in args)]
        for reading in readings:
            if reading.name == target.name and d.action is Action.FIT:
                continue  # the client's own tool, in another agent's key spelling: its call (BR-27)
            assert same_intent(intent(reading, args), intent(target, after)), (
                reading.clients,
                args,
                target.clients,
                target.name,
                after,
                d.reason,
            )


#: Edit tools that count an old text's occurrences overlapping when they require one (read by hand:
#: OpenCode 1.18.33 edit.ts replace, indexOf against lastIndexOf; Crush 0.90.0 edit.go
#: findAndReplace, strings.Index against strings.LastIndex); the others count them apart.
COUNTS_OVERLAPS = {("OpenCode", "edit"), ("Crush", "edit")}
#: Old texts two occurrences of which can overlap (``"aa"`` twice in ``"aaa"``).
OVERLAPPING = ["aa", "x\nx", "}\n}", "abab"]


@SETTINGS
@given(
    pair=st.sampled_from([(s, t) for s, t in EDIT_PAIRS if s.name != t.name]),
    old=st.sampled_from(OVERLAPPING),
    new=st.sampled_from(TEXTS),
    once=st.sampled_from([None, False]),
    closed=st.booleans(),
)
def test_property_an_old_text_counted_otherwise_never_moves(pair, old, new, once, closed) -> None:
    """Over every pair of edit rows: an old text that can overlap itself, replaced once, never
    moves between a tool that counts overlapping occurrences and one that counts them apart (the
    first refuses ``x\nx`` in ``x\nx\nx`` as not unique, the second edits the first). Was:
    OpenCode's and Crush's edit renamed to Claude Code's Edit (attack 75 Q4, attack 76 R4)."""
    source, target = pair
    assert any(old[:k] == old[-k:] for k in range(1, len(old)))  # the texts drawn can overlap
    args: dict[str, Any] = {}
    for key, meaning in source.args.items():
        if meaning.what == "edit.path":
            args[key] = "/repo/a.py"
        elif meaning.what == "edit.old":
            args[key] = old
        elif meaning.what == "edit.new":
            args[key] = new
        elif meaning.what == "edit.all" and once is not None:
            args[key] = once
    tool = declared_from(target, closed)
    d = decide([tool], source.name, args, client=target.client)
    event(f"{d.action.value}")
    differ = ((source.clients, source.name) in COUNTS_OVERLAPS) != ((target.clients, target.name) in COUNTS_OVERLAPS)
    assert not (differ and d.changed), (source.clients, target.clients, args, d.reason)


@SETTINGS
@given(connected_calls(), st.one_of(st.none(), st.lists(st.sampled_from([*COMMANDS, None]), max_size=3)))
def test_a_changed_command_starts_where_it_would_have_in_its_own_tool(
    case: tuple[ArgTable, ArgTable, dict[str, Any], bool], history: list[str | None] | None
) -> None:
    """A command the engine moves starts in the target where the model's own tool would have
    started it, after the commands the conversation ran before (the target's earlier calls;
    ``None`` among them: a call whose arguments cannot be read)."""
    source, target, args, closed = case
    tool = declared_from(target, closed)
    keys = [k for k, m in target.args.items() if m.what == "shell.command"]
    calls = None if history is None else [None if h is None else dict.fromkeys(keys, h) for h in history]
    d = resolve(
        ToolCall(name=source.name, arguments=args),
        Toolset([tool]),
        client=target.client,
        earlier=lambda declared: calls if declared == tool.name else [],
    )
    event(f"{d.action.value}; history {'unknown' if history is None else len(history)}")
    if not d.changed or not any(source.args[k].what == "shell.command" for k in args if k in source.args):
        return
    readings = [t for t in TABLES if t.name == source.name and all(k in t.args or k in ANNOTATIONS for k in args)]
    for reading in readings:
        assert _starts(reading, history) == _starts(target, history), (
            source.name,
            reading.clients,
            target.name,
            target.clients,
            args,
            history,
            d.reason,
        )


PATH_PAIRS = [
    (s, t)
    for s, t in PAIRS
    if any(m.what.endswith((".path", ".cwd")) for m in s.args.values())
    and any(m.what.endswith((".path", ".cwd")) for m in t.args.values())
]


@st.composite
def path_calls(draw: st.DrawFn) -> tuple[ArgTable, ArgTable, dict[str, Any], bool]:
    source, target = draw(st.sampled_from(PATH_PAIRS))
    keys = draw(st.lists(st.sampled_from(sorted(source.args)), unique=True, max_size=4))
    args = {
        k: draw(
            st.sampled_from(
                [
                    *("/repo/src", "src", "./a.py", "", "C:\\repo\\a.py", "~/a.py", "@src/a.py", "/r/a\u3000b"),
                    *("/r/a\\ b.txt", "/r/a.txt ", " /r/a.txt", "a\\#b", "/r/a\\x", "\ufeff/r/a.txt"),
                ]
            )
            if source.args[k].what.endswith((".path", ".cwd"))
            else value_for(source.args[k])
        )
        for k in keys
    }
    return source, target, args, draw(st.booleans())


@SETTINGS
@given(path_calls(), st.one_of(st.none(), st.lists(st.sampled_from([*COMMANDS, None]), max_size=3)))
def test_a_moved_relative_path_names_the_file_its_own_tool_would(
    case: tuple[ArgTable, ArgTable, dict[str, Any], bool], history: list[str | None] | None
) -> None:
    """A call the engine changes names, with each path not from a root (and with a search or
    listing given no directory, "here"), the file or directory the model's own tool would have
    named, after the commands the target agent's shell ran before (``None``: not carried, or a
    call whose arguments cannot be read); a target that refuses a relative path runs nothing."""
    source, target, args, closed = case
    tool = declared_from(target, closed)
    shells = {t.name: t for t in TABLES if t.clients == target.clients and "shell.command" in _whats(t)}

    def earlier(name: str) -> Any:
        if history is None:
            return None
        if name not in shells:
            return []
        keys = [k for k, m in shells[name].args.items() if m.what == "shell.command"]
        return [None if h is None else dict.fromkeys(keys, h) for h in history]

    d = resolve(ToolCall(name=source.name, arguments=args), Toolset([tool]), client=target.client, earlier=earlier)
    event(f"{d.action.value}; history {'unknown' if history is None else len(history)}")
    if not d.changed or not args:  # no key: another agent's tool of the name is no reading of it
        return
    after = d.arguments_after if d.arguments_after is not None else args
    moved = None if history is None or None in history else any("cwd" in _leaves(h) for h in history)
    readings = [t for t in TABLES if t.name == source.name and all(k in t.args or k in ANNOTATIONS for k in args)]
    for reading in readings:
        meant = _places(reading, args, moved)
        got = _places(target, after, moved)
        for what, place in meant.items():
            assert got.get(what) in (place, REFUSED), (
                source.name,
                reading.clients,
                args,
                target.name,
                target.clients,
                after,
                history,
                d.reason,
            )


def _whats(table: ArgTable) -> set[str]:
    return {m.what for m in table.args.values()}


def _places(table: ArgTable, args: dict[str, Any], moved: bool | None) -> dict[str, Any]:
    """Operand → the file or directory each path of ``args`` names in ``table``'s tool (a search
    or listing with no directory: "here"); paths from a root are where they say."""
    out: dict[str, Any] = {}
    for key, meaning in table.args.items():
        if not meaning.what.endswith((".path", ".cwd")):
            continue
        value = args.get(key)
        if _respelled(value):
            out[meaning.what] = ("own", table.clients, table.name, value)  # respelled by some tools
        elif key in args and not _floating(value):
            out[meaning.what] = ("rooted", value)
        elif key in args or meaning.what in ("glob.path", "grep.path", "list.path"):
            out[meaning.what] = _found_from(table, value, moved)
    return out


UNKNOWN_KEYS = ["mode", "append", "dry_run", "working_dir", "timeout_s", "zz", "preview"]


@SETTINGS
@given(connected_calls(), st.sampled_from(UNKNOWN_KEYS), st.sampled_from(["x", True, 3]))
def test_a_key_no_tool_of_the_capability_knows_never_survives_a_change(
    case: tuple[ArgTable, ArgTable, dict[str, Any], bool], key: str, value: Any
) -> None:
    """(b): a key with no sourced meaning leaves the call (or keeps a declared call as sent)."""
    source, target, args, closed = case
    capability = vocabulary.capability_of(source.name)
    assume(not any(key in t.args for t in TABLES if vocabulary.capability_of(t.name) == capability))
    tool = declared_from(target, closed)
    d = decide([tool], source.name, {**args, key: value}, client=target.client)
    assert not d.changed, (source.name, target.name, d.reason)


@SETTINGS
@given(
    st.dictionaries(
        st.sampled_from(["path", "file_path", "command", "mode", "n", "content"]),
        st.sampled_from(["x", 1, True]),
        max_size=4,
    ),
    st.dictionaries(
        st.sampled_from(["path", "file_path", "command", "content", "n"]),
        st.sampled_from([STR, INT, BOOL, {}]),
        max_size=4,
    ),
    st.sampled_from(["write_file", "Write", "read_file", "Read", "bash", "Bash", "exec", "edit", "tool_x"]),
    st.sampled_from(
        [
            "write_file",
            "Write",
            "read_file",
            "Read",
            "bash",
            "Bash",
            "exec",
            "edit",
            "tool_x",
            "WRITE",
            "functions.read",
        ]
    ),
    st.booleans(),
)
def test_no_change_ever_carries_a_key_the_target_does_not_declare(
    args: dict[str, Any], props: dict[str, Any], declared: str, answered: str, closed: bool
) -> None:
    """(c) on arbitrary schemas and names: declared, lossless and capability steps alike."""
    s = {"type": "object", "properties": props, **({"additionalProperties": False} if closed else {})}
    d = decide([fn(declared, s)], answered, args)
    if d.changed:
        after = d.arguments_after if d.arguments_after is not None else args
        assert all(k in props or k in ANNOTATIONS for k in after), (declared, answered, args, props, d)


# ------------------------------------------------------------------ a repeated key is no argument
@pytest.mark.parametrize(
    "text",
    [
        '{"command":["bash","-lc","ls"],"command":["bash","-lc","rm -rf /tmp/x"]}',
        '{"command":"ls","command":"rm -rf build",}',  # a lossless repair must not pick one either
        '{"file_path":"/a","offset":3,"offset":"50"}',
        '```json\n{"command":"ls","command":"rm"}\n```',
    ],
)
def test_argument_text_that_repeats_a_key_is_never_read(text: str) -> None:
    # Which value a client reads is its parser's choice: the call is left exactly as sent.
    call = ToolCall.read("shell", text)
    assert call.arguments is None and call.raw_arguments == text
    for tools, name in (([RUN_SHELL], "shell"), ([RUN_SHELL], "run_shell_command"), ([READ], "read_file")):
        d = resolve(ToolCall.read(name, text), Toolset(tools))
        assert d.arguments_after is None, d


def test_a_repeated_key_in_markup_or_a_stream_is_never_lifted_or_repaired() -> None:
    from harness.dialects import Recorder
    from harness.dialects import context
    from harness.dialects import rewrite
    from toolvocab.dialects import textcalls
    from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
    from toolvocab.engine.plan import Plan

    tools = Toolset([RUN_SHELL])
    markup = '<tool_call>\n{"name": "run_shell_command", "arguments": {"command": "ls", "command": "rm -rf build"}}\n</tool_call>'
    assert textcalls.lift(markup, context(Recorder(tools)), lambda i: f"id{i}") is None
    # Anthropic stream: the input_json_delta fragments join into argument text that repeats a key.
    events = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "x"},
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": "shell", "input": {}},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '{"command":["bash","-lc","ls"],'},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": '"command":["bash","-lc","rm -rf /tmp/x"]}'},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_stop", {"type": "message_stop"}),
    ]
    import orjson

    data = b"".join(f"event: {n}\ndata: ".encode() + orjson.dumps(d) + b"\n\n" for n, d in events)
    assert rewrite(ANTHROPIC, Recorder(Toolset([BASH])), Plan(), [data], flow_key="dup") == data


# ------------------------------------------------------------------ a bare name that is an MCP operation
MCP_EXEC = fn("mcp__ssh__execute_command", schema("command", command=STR))
MCP_BASH = fn("mcp__remote__Bash", schema("command", command=STR))
MCP_READ = fn("mcp__fs__read_file", schema("path", path=STR))


@pytest.mark.parametrize(
    ("tools", "name", "args"),
    [
        ([BASH, MCP_EXEC], "execute_command", {"command": "rm -rf /var/www/cache"}),  # capability step
        ([BASH, MCP_BASH], "bash", {"command": "ls"}),  # lossless step
        ([READ, MCP_READ], "read_file", {"file_path": "/a"}),
        ([BASH, MCP_EXEC], "EXECUTE_COMMAND", {"command": "ls"}),
    ],
)
def test_a_bare_name_that_is_an_mcp_tools_operation_is_left(tools: list[Any], name: str, args: dict[str, Any]) -> None:
    # Found by the adversarial pass: `execute_command` ran locally as Bash with the remote
    # server's mcp__ssh__execute_command declared. The MCP tool is a candidate: two, not guessing.
    d = decide(tools, name, args)
    assert d.action is Action.LEAVE and any(c.startswith("mcp__") for c in d.candidates), d


# ------------------------------------------------------------------ Windows
EXEC_COMMAND = fn("exec_command", schema("cmd", cmd=STR, workdir=STR))


@pytest.mark.parametrize(
    ("tools", "name", "args"),
    [
        ([EXEC_COMMAND], "Bash", {"command": "echo a b > notes.txt"}),  # PowerShell would write two lines
        ([EXEC_COMMAND], "Bash", {"command": "git status"}),
        ([RUN_SHELL], "terminal", {"command": "git status"}),  # Qwen Code: cmd.exe on Windows
        ([BASH], "shell", {"command": ["git", "status"]}),  # a POSIX join means nothing to PowerShell
        ([BASH], "Bash", {"command": ["git", "status"]}),  # not even respelled for the client's own tool
    ],
)
def test_on_windows_no_command_moves_between_tools_or_is_respelled(
    tools: list[Any], name: str, args: dict[str, Any]
) -> None:
    # Found by the adversarial pass: a POSIX redirection reached Codex's exec_command, which runs
    # PowerShell on Windows. The same calls off Windows still repair.
    d = resolve(ToolCall(name=name, arguments=args), Toolset(tools), windows=True)
    assert d.arguments_after is None and d.target in (None, name), d
    assert resolve(ToolCall(name=name, arguments=args), Toolset(tools)).changed


#: Codex 0.171.0's exec_command: ``shell`` names the program ``cmd`` runs in when the model gives
#: one (codex-rs core/src/shell_detect.rs, get_shell_by_model_provided_path).
CODEX_EXEC = fn("exec_command", schema("cmd", additional=False, cmd=STR, workdir=STR, shell=STR, login=BOOL))


@pytest.mark.parametrize("program", ["pwsh", "powershell", "cmd", "C:\\Program Files\\PowerShell\\7\\pwsh.exe", "fish"])
@pytest.mark.parametrize(
    ("name", "args"),
    [
        ("exec_command", {"cmd": ["bash", "-lc", "rm a\\ b.txt"]}),  # the client's own tool, an argv for its string
        ("shell", {"command": ["rm", "a b.txt"]}),  # Codex's earlier shell tool
        ("exec_command", {"command": ["bash", "-lc", "rm a\\ b.txt"]}),  # its key spelled as the shell tool's
    ],
)
def test_a_command_is_not_written_again_for_a_call_that_names_its_program(
    program: str, name: str, args: dict[str, Any]
) -> None:
    """Found by an attack round: the argv joined for a POSIX shell (``rm a\\ b.txt``) ran in
    PowerShell, where the backslash escapes nothing (about_Special_Characters: the backtick
    does): ``rm`` got ``a\\`` and ``b.txt`` and removed another file. Without ``shell`` the same
    calls still repair."""
    d = decide([CODEX_EXEC], name, {**args, "shell": program}, client="Codex")
    assert d.arguments_after is None and d.target in (None, name), d
    assert "the call names the program that runs its command ('shell'" in d.reason, d
    control = decide([CODEX_EXEC], name, args, client="Codex")
    assert control.changed and isinstance(control.arguments_after["cmd"], str), control


@pytest.mark.parametrize("program", ["bash", "zsh", "sh", "/bin/zsh", "/usr/bin/bash"])
def test_a_command_is_written_again_for_a_posix_program(program: str) -> None:
    """bash, zsh and sh read a command written for the user's shell alike (the portable join):
    naming one of them changes nothing of its meaning."""
    d = decide([CODEX_EXEC], "exec_command", {"cmd": ["bash", "-lc", "git status"], "shell": program}, client="Codex")
    assert d.changed and d.arguments_after == {"cmd": "git status", "shell": program}, d


@pytest.mark.parametrize(
    ("text", "windows"),
    [
        ("Platform: win32\nOS Version: Windows 11 Pro", True),
        ("My operating system is: win32", True),
        ("<environment_context><cwd>C:\\\\repo</cwd><shell>powershell</shell></environment_context>", True),
        ("Platform: linux\nOS Version: Linux 6.8", False),
        ("My operating system is: darwin", False),
        ("<environment_context><shell>zsh</shell></environment_context>", False),
    ],
)
def test_windows_is_read_from_the_agents_own_words(text: str, windows: bool) -> None:
    from toolvocab.engine.clients import announces_windows

    assert announces_windows([text]) is windows


# ------------------------------------------------------------------ paths and globs
OC_WRITE = fn("write", schema("filePath", "content", filePath=STR, content=STR))
OC_READ = fn("read", schema("filePath", filePath=STR, offset=INT, limit=INT))
GEM_READ = fn("read_file", schema("file_path", file_path=STR, start_line=INT, end_line=INT))
CC_GREP = fn("Grep", schema("pattern", additional=False, pattern=STR, path=STR, glob=STR))
QWEN_WRITE = fn("write_file", schema("file_path", "content", file_path=STR, content=STR))
OC_GREP = fn("grep", schema("pattern", pattern=STR, path=STR, include=STR))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        ([OC_WRITE], "write_file", {"path": "~/notes.md", "content": "x"}, "OpenCode"),
        ([OC_READ], "Read", {"file_path": "~/.bashrc"}, "OpenCode"),
    ],
)
def test_a_home_relative_path_never_moves_between_tools(
    tools: list[Any], name: str, args: dict[str, Any], client: str
) -> None:
    # Found by the adversarial pass: OpenCode resolves ~ against the project, pi, Hermes and
    # Claude Code's Read against the home directory.
    d = decide(tools, name, args, client=client)
    assert not d.changed, d
    plain = {k: (v.replace("~", "/home/u") if isinstance(v, str) else v) for k, v in args.items()}
    assert decide(tools, name, plain, client=client).changed


def decide_with(
    tools: list[Any], name: str, args: dict[str, Any], ran: dict[str, list[str]] | None, client: str | None = None
):
    """``decide`` in a conversation whose shell tools ran ``ran`` (tool name -> its earlier
    command lines; a name not in it ran nothing); ``None``: a request that does not carry them."""

    def earlier(shell: str) -> Any:
        if ran is None:
            return None
        keys = {"exec_command": "cmd"}
        return [{keys.get(shell, "command"): line} for line in ran.get(shell, [])]

    return resolve(ToolCall(name=name, arguments=args), Toolset(tools), client=client, earlier=earlier)


@pytest.mark.parametrize(
    ("args", "ran", "moves"),
    [
        # Hermes' terminal runs `cd <workdir>` and starts its next call there; Codex's starts afresh
        ({"command": "ls", "workdir": "/p/sub"}, {}, False),
        ({"command": "make"}, {"exec_command": []}, True),
    ],
)
def test_a_working_directory_the_models_shell_keeps_never_moves_to_one_that_does_not(
    args: dict[str, Any], ran: dict[str, list[str]], moves: bool
) -> None:
    d = decide_with([EXEC_COMMAND], "terminal", args, ran, client="Codex")
    assert d.changed is moves, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "ran", "moves"),
    [
        # Claude Code's Read finds f.txt where its Bash was left (sub/f.txt after `cd sub`);
        # OpenCode's read where OpenCode started.
        ([READ], "read", {"filePath": "f.txt"}, "Claude Code", {"Bash": ["cd sub && ls"]}, False),
        ([READ], "read", {"filePath": "f.txt"}, "Claude Code", {"Bash": ["ls", "make test"]}, True),
        ([READ], "read", {"filePath": "f.txt"}, "Claude Code", {}, True),
        ([READ], "read", {"filePath": "f.txt"}, "Claude Code", None, False),  # not carried
        ([READ], "read", {"filePath": "f.txt"}, "Claude Code", {"PowerShell": ["Get-ChildItem"]}, False),
        ([READ], "read", {"filePath": "/repo/f.txt"}, "Claude Code", {"Bash": ["cd sub"]}, True),  # from a root
        # on POSIX a backslash or a drive is part of a name: C:\repo\f.txt is relative there
        ([READ], "read", {"filePath": "C:\\repo\\f.txt"}, "Claude Code", {"Bash": ["cd sub"]}, False),
        # pi and Gemini CLI drop a leading @ (pi's Unicode spaces too): not the same name elsewhere
        ([READ], "read", {"path": "@/repo/f.txt"}, "Claude Code", {}, False),
        ([READ], "read", {"path": "/repo/a\u00a0b.txt"}, "Claude Code", {}, False),
        ([READ], "read", {"path": "/repo/a b.txt"}, "Claude Code", {}, True),
        # Claude Code trims a path, OpenCode does not: another file at either end
        ([READ], "read", {"filePath": "/repo/f.txt "}, "Claude Code", {}, False),
        ([OC_READ], "Read", {"file_path": " /repo/f.txt"}, "OpenCode", {}, False),
        ([READ], "read", {"filePath": "\ufeff/repo/f.txt"}, "Claude Code", {}, False),  # JavaScript trims U+FEFF
        ([GEM_READ], "Read", {"file_path": "/repo/a\x00.txt"}, "Gemini CLI", {}, False),  # a NUL: dropped or refused
        ([READ], "read", {"filePath": "/r/Screenshot 2026-01-02 at 10.00.00 AM.png"}, "Claude Code", {}, False),
        ([READ], "read", {"filePath": "/r/Screenshot 2026-01-02.png"}, "Claude Code", {}, True),
        # a file named as a directory: Claude Code's Read fails, Gemini CLI's read_file reads it
        ([GEM_READ], "Read", {"file_path": "/repo/a.txt/"}, "Gemini CLI", {}, False),
        ([GEM_READ], "Read", {"file_path": "/repo/a.txt/."}, "Gemini CLI", {}, False),
        ([GEM_READ], "Read", {"file_path": "/repo/a.txt"}, "Gemini CLI", {}, True),
        # Qwen Code drops a backslash before a shell's special character (unescapePath)
        ([QWEN_WRITE], "write", {"filePath": "/p/notes\\ v1.txt", "content": "x"}, "Qwen Code", {}, False),
        ([QWEN_WRITE], "write", {"filePath": "/p/notes v1.txt", "content": "x"}, "Qwen Code", {}, True),
        # Gemini CLI v0.10's read_file refused a relative absolute_path; 0.61's finds file_path
        ([GEM_READ], "read_file", {"absolute_path": "src/a.c"}, "Gemini CLI", {}, False),
        ([GEM_READ], "read_file", {"absolute_path": "/repo/src/a.c"}, "Gemini CLI", {}, True),
        # the declared name with Hermes' key: Hermes finds it where its terminal was left
        ([GEM_READ], "read_file", {"path": "src/a.c"}, "Gemini CLI", None, False),
        ([GEM_READ], "read_file", {"path": "src/a.c"}, "Gemini CLI", {"run_shell_command": ["cd sub"]}, False),
        ([GEM_READ], "read_file", {"path": "src/a.c"}, "Gemini CLI", {}, True),
        # other calls move Claude Code's directory: a worktree
        ([READ], "read", {"filePath": "f.txt"}, "Claude Code", {"EnterWorktree": ["feat"]}, False),
        # not a subagent: that it sometimes moves the session's is a reported fault (#45816)
        ([READ], "read", {"filePath": "f.txt"}, "Claude Code", {"Agent": ["look around"]}, True),
        # a list of one path (a repair may write it as its path)
        ([READ], "read", {"filePath": ["f.txt"]}, "Claude Code", {"Bash": ["cd sub"]}, False),
        ([CC_GREP], "grep", {"pattern": "x", "path": ["src"]}, "Claude Code", {"Bash": ["cd sub"]}, False),
        # ... and the other way: the model's Read would find it where the shell was left
        ([OC_READ], "Read", {"file_path": "f.txt"}, "OpenCode", {"bash": ["cd sub"]}, False),
        ([OC_READ], "Read", {"file_path": "f.txt"}, "OpenCode", {"bash": ["git status"]}, True),
        # a search with no directory searches "here"
        ([CC_GREP], "grep", {"pattern": "TODO"}, "Claude Code", {"Bash": ["pushd src"]}, False),
        # (with no earlier cd it is left all the same: the two skip other directories, grep.skips)
        ([CC_GREP], "grep", {"pattern": "TODO"}, "Claude Code", {"Bash": ["ls"]}, False),
        # read as OpenCode's grep, whose path names a file's whole directory (Claude Code's Grep
        # searches the file alone): a path that may be a file never moves, rooted or not
        ([CC_GREP], "grep", {"pattern": "TODO", "path": "/repo"}, "Claude Code", {"Bash": ["cd src"]}, False),
        ([OC_GREP], "Grep", {"pattern": "TODO", "path": "/repo/a.py"}, "OpenCode", {}, False),
        ([OC_GREP], "Grep", {"pattern": "TODO"}, "OpenCode", {}, False),  # grep.skips
        # Qwen Code's read_file refuses a relative path: the model's call meant no file
        ([OC_READ], "read_file", {"file_path": "f.txt"}, "OpenCode", {}, False),
        # ... and reaches Qwen Code to be refused there, in its own words
        ([QWEN_READ], "read", {"filePath": "f.txt"}, "Qwen Code", {}, True),
        # Gemini CLI's replace takes the one workspace file ending in the path when it is missing
        ([EDIT], "replace", {"file_path": "a.py", "old_string": "x", "new_string": "y"}, "Claude Code", {}, False),
        ([EDIT], "replace", {"file_path": "/r/a.py", "old_string": "x", "new_string": "y"}, "Claude Code", {}, True),
    ],
)
def test_a_relative_path_moves_only_where_it_names_the_same_file(
    tools: list[Any], name: str, args: dict[str, Any], client: str, ran: dict[str, list[str]] | None, moves: bool
) -> None:
    d = decide_with(tools, name, args, ran, client=client)
    assert d.changed is moves, d.reason


@pytest.mark.parametrize(("include", "same"), [("*.md", True), ("docs/My Notes/*.md", False), ("a,b.py", False)])
def test_one_glob_reads_the_same_in_claude_codes_grep_and_a_list_does_not(include: str, same: bool) -> None:
    # Claude Code's Grep splits glob on whitespace and commas; OpenCode's grep reads one glob.
    from toolvocab.engine.translate import convert

    grep = next(t for t in TABLES if t.name == "grep" and t.clients == "OpenCode").args["include"]
    claude = next(t for t in TABLES if t.name == "Grep").args["glob"]
    if same:
        assert convert(include, grep, claude) == include
    else:
        with pytest.raises(Exception, match="split into several globs"):
            convert(include, grep, claude)


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        ([OC_GREP], "Grep", {"pattern": "FIXME"}, "OpenCode"),
        ([OC_GREP], "Grep", {"pattern": "FIXME", "glob": "*.c"}, "OpenCode"),
        ([CC_GREP], "grep", {"pattern": "FIXME"}, "Claude Code"),
    ],
)
def test_a_search_never_moves_between_greps_that_skip_other_directories(tools, name, args, client) -> None:
    """Claude Code 2.1.197's Grep skips .git, .svn, .hg, .bzr, .jj and .sl (rg --glob !<dir> for
    each); OpenCode 1.18.33's grep skips .git alone (--glob=!**/.git/**): in an SVN working copy
    one finds every match again in .svn/pristine, the other does not. As for Glob and glob, no
    search moves between them. Was: renamed as sent (attack 100)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and "grep.skips" in d.reason, d.reason


# ------------------------------------------------------------------ Crush (charmbracelet/crush v0.90.0)
CRUSH_VIEW = fn("view", schema("file_path", file_path=STR, offset=INT, limit=INT))
CRUSH_BASH = fn(
    "bash",
    schema(
        "description",
        "command",
        description=STR,
        command=STR,
        working_dir=STR,
        run_in_background=BOOL,
        auto_background_after=INT,
    ),
)


def test_a_claude_read_reaches_crushs_view_with_its_offset_rebased() -> None:
    # Claude Code's Read offset is a 1-based line; Crush's view skips `offset` lines (0-based).
    d = decide([CRUSH_VIEW], "Read", {"file_path": "/a", "offset": 10, "limit": 5})
    assert d.action is Action.RENAME and d.target == "view"
    assert d.arguments_after == {"file_path": "/a", "offset": 9, "limit": 5}


def test_a_read_to_a_client_declaring_no_view_or_a_different_view_is_left() -> None:
    # negative twins: Crush's view not declared; a `view` whose offset is not a line.
    assert decide([CRUSH_BASH], "Read", {"file_path": "/a"}).action is not Action.RENAME
    other = fn("view", schema("file_path", file_path=STR, offset=STR))
    d = decide([other], "Read", {"file_path": "/a", "offset": 10})
    assert d.action is not Action.RENAME or d.arguments_after.get("offset") != 10


def test_a_bash_call_without_the_description_crush_requires_is_not_given_one() -> None:
    # The case step renames Bash -> bash (a missing key is reported by the client), but the
    # arguments go as the model wrote them: no description is made up.
    d = decide([CRUSH_BASH], "Bash", {"command": "ls"})
    assert d.arguments_after is None or "description" not in d.arguments_after
    assert not any(c.after is not None and "description" in str(c) for c in d.arg_changes)
    # The twin: a call that carries one keeps it.
    d = decide([CRUSH_BASH], "Bash", {"command": "ls", "description": "List files"})
    assert d.target == "bash" and (d.arguments_after or {"description": "List files"})["description"] == "List files"


CRUSH_TOOLS = [
    CRUSH_VIEW,
    CRUSH_BASH,
    fn(
        "edit",
        schema(
            "file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR, replace_all=BOOL
        ),
    ),
    fn("write", schema("file_path", "content", file_path=STR, content=STR)),
    fn("grep", schema("pattern", pattern=STR, path=STR, include=STR, literal_text=BOOL)),
    fn("glob", schema("pattern", pattern=STR, path=STR)),
    fn("ls", schema(path=STR, ignore={"type": "array", "items": STR}, depth=INT)),
    fn("fetch", schema("url", "format", url=STR, format=STR, timeout=INT)),
]


@pytest.mark.parametrize(
    ("name", "args", "target", "after"),
    [
        ("Write", {"file_path": "/a", "content": "x"}, "write", None),
        ("write_file", {"file_path": "/a", "content": "x"}, "write", None),  # Qwen Code's
        ("Bash", {"command": "go test ./... && go vet ./...", "description": "Test"}, "bash", None),  # portable
    ],
)
def test_other_agents_calls_reach_crushs_tools_as_meant(name: str, args: dict, target: str, after: dict | None) -> None:
    d = decide(CRUSH_TOOLS, name, args)
    assert d.action is Action.RENAME and d.target == target, d.reason
    assert d.arguments_after == after


@pytest.mark.parametrize(
    ("name", "args", "why"),
    [
        (
            "Edit",
            {"file_path": "/a", "old_string": "    x = 1", "new_string": "y"},
            "an exact edit never reaches Crush's whitespace-normalising matcher",
        ),
        (
            "Bash",
            {"command": "rm -f **/*.orig", "description": "Clean"},
            "a line zsh and bash read apart never reaches mvdan.cc/sh",
        ),
        ("terminal", {"command": "make", "timeout": 600}, "Crush's bash has no kill timeout"),
        (
            "list_directory",
            {"path": "src"},
            "Qwen Code's list_directory refuses a relative path that Crush's ls finds from its start",
        ),
        (
            "WebFetch",
            {"url": "https://a.example", "prompt": "summarize"},
            "Crush's fetch has no prompt and requires format",
        ),
        (
            "webfetch",
            {"url": "https://a.example", "format": "markdown"},
            "OpenCode's format is not Crush's (sourced apart)",
        ),
        ("list_directory", {"path": "src", "ignore": ["*.log"]}, "Crush's ls ignore is not sourced as the same globs"),
        (
            "Glob",
            {"pattern": "**/*.go"},
            "a declared glob of an agent not identified is Qwen Code's and Gemini CLI's too (node-glob)",
        ),
    ],
)
def test_calls_crushs_tools_would_read_otherwise_are_left(name: str, args: dict, why: str) -> None:
    d = decide(CRUSH_TOOLS, name, args)
    assert not d.changed, (why, d.reason)


# ------------------------------------------------------------------ glob: which files a search skips
OPENCODE_GLOB = fn("glob", schema("pattern", pattern=STR, path=STR))
CLAUDE_GLOB = fn("Glob", schema("pattern", additional=False, pattern=STR, path=STR))


@pytest.mark.parametrize("args", [{"pattern": "**/*.log"}, {"pattern": "*.py", "path": "/repo"}, {}])
def test_claude_codes_glob_never_moves_to_a_glob_that_skips_other_files(args: dict) -> None:
    """Claude Code's Glob lists gitignored files and dotfiles (--no-ignore --hidden,
    code.claude.com/docs/en/tools-reference); OpenCode's and Crush's run rg without --no-ignore,
    which skips them: `**/*.log` would find fewer files. Either way round, the call is left.
    Was: renamed with its arguments as sent (the name differs only by case)."""
    for client, tools, name in (("OpenCode", [OPENCODE_GLOB], "Glob"), ("Claude Code", [CLAUDE_GLOB], "glob")):
        d = decide(tools, name, args, client=client)
        assert not d.changed, (client, name, args, d.reason)
        if name == "Glob":  # one reading, Claude Code's (the other way, each agent's glob is one)
            assert "glob.hidden is not recorded" in d.reason, d.reason
    d = decide(CRUSH_TOOLS, "Glob", args)  # Crush: no client header to know it by
    assert not d.changed, d.reason


# ------------------------------------------------------------------ Roo Code (RooCodeInc/Roo-Code v3.52.1)
ROO_TOOLS = [
    fn(
        "execute_command",
        schema("command", command=STR, cwd={"type": ["string", "null"]}, timeout={"type": ["number", "null"]}),
    ),
    fn(
        "read_file",
        schema(
            "path",
            path=STR,
            mode={"type": "string", "enum": ["slice", "indentation"]},
            offset=INT,
            limit=INT,
            indentation={"type": "object"},
        ),
    ),
    fn("write_to_file", schema("path", "content", path=STR, content=STR)),
    fn("search_files", schema("path", "regex", path=STR, regex=STR, file_pattern={"type": ["string", "null"]})),
    fn("list_files", schema("path", "recursive", path=STR, recursive=BOOL)),
]


@pytest.mark.parametrize(
    ("name", "args", "target", "after"),
    [
        ("Write", {"file_path": "/a", "content": "x"}, "write_to_file", {"path": "/a", "content": "x"}),
        ("shell", {"command": ["bash", "-lc", "ls"]}, "execute_command", {"command": "ls"}),
    ],
)
def test_other_agents_calls_reach_roo_codes_tools_as_meant(name: str, args: dict, target: str, after: dict) -> None:
    d = decide(ROO_TOOLS, name, args)
    assert d.action is Action.RENAME and d.target == target, d.reason
    assert d.arguments_after == after


@pytest.mark.parametrize(
    ("name", "args", "why"),
    [
        (
            "Bash",
            {"command": "make", "timeout": 60000},
            "Roo's timeout (s) moves the command to the background, it does not kill it",
        ),
        ("terminal", {"command": "make", "timeout": 60}, "the same in seconds: still not a kill timeout"),
        (
            "Read",
            {"file_path": "/a", "offset": 10},
            "read_file's offset is 0-based in Qwen Code and 1-based in Roo Code: the agent is not identified",
        ),
        ("list_directory", {"path": "src"}, "Roo's list_files requires recursive, which is never invented"),
        (
            "Grep",
            {"pattern": "foo", "path": "src", "glob": "*.py"},
            "search_files is Cline's too, whose case-sensitivity is not recorded: unknown",
        ),
    ],
)
def test_calls_roo_codes_tools_would_read_otherwise_are_left(name: str, args: dict, why: str) -> None:
    d = decide(ROO_TOOLS, name, args)
    assert not d.changed, (why, d.reason)


@SETTINGS
@given(
    text=st.one_of(st.text(max_size=12), st.from_regex(r"\A[ \t]?-?[0-9]{1,30}(\.[0-9]{1,8})?([eE][-+]?[0-9]{1,3})?\Z"))
)
def test_property_a_number_in_text_is_what_json_spells(text: str) -> None:
    """``jsonio.number_in_text`` never raises, and gives a number only for ASCII JSON number
    text, with exactly the value Python reads from it (finite)."""
    from toolvocab.engine import jsonio

    value = jsonio.number_in_text(text)
    core = text.strip(" \t\r\n")
    if value is None:
        return
    event("number")
    assert set(core) <= set("0123456789-+.eE") and core[:1] in "-0123456789"
    if any(c in core for c in ".eE"):
        assert type(value) is float and value == float(core) and value not in (float("inf"), float("-inf"))
    else:
        assert type(value) is int and value == int(core)


def test_the_earlier_commands_read_are_kept_within_their_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    # each turn carries the conversation's earlier commands again: they are read once, while they
    # stay among the last CHECKED_BUDGET characters; what a check finds is the same either way
    from toolvocab.engine import translate
    from toolvocab.engine.shellwords import changes_directory

    monkeypatch.setattr(translate, "CHECKED_BUDGET", 64 * 40)
    monkeypatch.setattr(translate, "_CHECKED", type(translate._CHECKED)())
    monkeypatch.setattr(translate, "_CHECKED_CHARS", [0])
    calls = [0]

    def counted(line: object) -> str | None:
        calls[0] += 1
        return changes_directory(line)

    lines = [f"echo {i:036d}" for i in range(200)] + ["cd src", "ls"]
    first = [translate._checked(counted, line) for line in lines]
    assert first == [changes_directory(line) for line in lines] and first[-2] == "cd"
    assert translate._CHECKED_CHARS[0] <= translate.CHECKED_BUDGET
    assert sum(len(line) for _, line in translate._CHECKED) == translate._CHECKED_CHARS[0]
    before = calls[0]
    assert [translate._checked(counted, line) for line in lines[-2:]] == first[-2:]
    assert calls[0] == before  # the last lines read are kept
    translate._checked(counted, lines[0])
    assert calls[0] == before + 1  # the first were let go


@pytest.mark.parametrize(
    ("tools", "name", "args"),
    [
        # Qwen Code's run_shell_command runs 600000 ms at most: OpenCode's bash would run 900 s
        ([OC_BASH], "run_shell_command", {"command": "make", "timeout": 900000}),
        # Claude Code's Read refuses a negative offset; OpenCode's read takes offset || 1 (-5: from the end)
        ([OC_READ], "Read", {"file_path": "/r/a.py", "offset": -5}),
        # Qwen Code's read_file counts from 0: -1 is before its first line
        ([READ], "read_file", {"file_path": "/r/a.py", "offset": -1}),
    ],
)
def test_a_number_the_models_own_tool_clamps_or_refuses_never_moves(tools: list[Any], name: str, args: dict) -> None:
    d = decide(tools, name, args)
    assert d.action is Action.LEAVE, d
    assert "model's tool" in d.reason or "first line" in d.reason, d.reason


CODEX_SHELL = fn("shell", schema("command", command={"type": "array", "items": STR}, workdir=STR, timeout_ms=NUM))
CODEX_SHELL_COMMAND = fn("shell_command", schema("command", command=STR, workdir=STR, timeout_ms=NUM))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # Claude Code's Bash runs `echo hi >/dev/null`; Codex's and OpenCode's shells write ./nul
        ([BASH], "exec_command", {"cmd": "echo hi >nul"}, "Claude Code"),
        ([BASH], "shell_command", {"command": "make 2>NUL && ls"}, "Claude Code"),
        ([OC_BASH], "Bash", {"command": "echo hi > nul"}, "OpenCode"),
        # Codex applies a patch an apply_patch command holds; the others run a program of that name
        ([OC_BASH], "exec_command", {"cmd": "apply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF"}, "OpenCode"),
        ([OC_BASH], "shell", {"command": ["apply_patch", "*** Begin Patch\n*** End Patch"]}, "OpenCode"),
        ([CODEX_EXEC], "Bash", {"command": "apply_patch < fix.diff"}, "Codex"),
        # Claude Code's Bash takes the first `cd <its cwd> && ` out of the command, wherever it is
        ([BASH], "exec_command", {"cmd": "cp -r vendor/etcd /home/u/proj && go build ./..."}, "Claude Code"),
        ([BASH], "exec_command", {"cmd": "echo 'see abcd /home/u/proj && notes' >> log.txt"}, "Claude Code"),
        ([BASH], "shell", {"command": ["git", "commit", "-m", "import etcd /home/u/proj && bump"]}, "Claude Code"),
        # ... and an argv given to Bash itself, which takes a line: the line written must not hold it
        ([BASH], "Bash", {"command": ["git", "commit", "-m", "import etcd /home/u/proj && bump"]}, "Claude Code"),
        ([BASH], "Bash", {"command": ["printf", "%s\n", "a\\\\;b"]}, "Claude Code"),
    ],
    ids=[
        "nul-into-claude",
        "NUL-shell-command",
        "nul-out-of-claude",
        "patch-exec",
        "patch-argv",
        "patch-into-codex",
        "cd-cwd-in-a-word",
        "cd-cwd-quoted",
        "cd-cwd-argv",
        "cd-cwd-own-argv",
        "respelled-own-argv",
    ],
)
def test_a_command_a_client_rewrites_or_runs_itself_never_moves(tools, name, args, client) -> None:
    """Claude Code 2.1.197's Bash writes a redirection to nul as one to /dev/null before its shell
    runs it (buildExecCommand) and takes the first `cd <its working directory> && ` out of it
    (normalizeToolInput: `command.replace(`cd ${cwd} && `, "")`, inside a word or quotes too);
    Codex applies an apply_patch command itself (intercept_apply_patch): such a command never
    moves between them and a tool that hands it to a shell. Was: renamed as sent (audit 73 B1,
    B8; attack 98: `cp -r vendor/etcd /home/u/proj && go build` ran as `cp -r vendor/etgo build`)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and ("rewrites or runs it itself" in d.reason or "respells" in d.reason), d.reason


def _claude_code_runs(command: str, cwd: str) -> str:
    """What Claude Code 2.1.197's Bash hands its shell for ``command`` in ``cwd``, as far as the
    working directory goes (normalizeToolInput: the first `cd <cwd> && ` taken out)."""
    return command.replace(f"cd {cwd} && ", "", 1)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    words=st.lists(
        st.sampled_from(
            ["cd", "etcd", "abcd", "/home/u/proj", "/", "&&", "a b", "'x", "make", "&", "etcd /x && y", "abcd / && z"]
        ),
        max_size=8,
    )
)
@pytest.mark.parametrize("how", ["exec_command", "own-argv", "codex-argv"])
def test_a_command_moved_into_bash_is_the_one_it_runs_in_any_working_directory(how: str, words: list[str]) -> None:
    """Property: a command written for Claude Code's Bash (moved from another agent's shell
    tool, or an argv the model gave Bash itself joined into the line it takes) is the command
    Claude Code runs whatever its working directory is: for every absolute path between a `cd `
    and a later ` && ` in it (each a directory Claude Code may be in: its process's, so
    absolute), its input rewrite changes nothing."""
    command = " ".join(words)
    assume(command.strip() == command and command)
    if how == "exec_command":
        d = decide([BASH], "exec_command", {"cmd": command}, client="Claude Code")
    else:
        name, key = ("Bash", "command") if how == "own-argv" else ("shell", "command")
        d = decide([BASH], name, {key: ["echo", *words]}, client="Claude Code")
    if not d.changed:
        return
    event("moved")
    moved = d.arguments_after["command"] if d.arguments_after else command
    starts = [i + 3 for i in range(len(moved)) if moved.startswith("cd ", i)]
    for start in starts:
        for end in range(start + 1, len(moved) + 1):
            cwd = moved[start:end]
            if cwd.startswith(("/", "\\\\")) or re.match(r"[A-Za-z]:", cwd):  # its directory is absolute
                assert _claude_code_runs(moved, cwd) == moved, (moved, cwd)


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        ([BASH], "shell", {"command": ["make", "test"], "timeout_ms": 5000}, "Claude Code"),
        ([BASH], "terminal", {"command": "make test", "timeout": 5}, "Claude Code"),
        ([OC_BASH], "Bash", {"command": "make test", "timeout": 5000}, "OpenCode"),
        ([CODEX_SHELL_COMMAND], "Bash", {"command": "make test", "timeout": 5000}, "Codex"),
    ],
    ids=["codex-shell", "hermes-seconds", "to-opencode", "to-codex-shell-command"],
)
def test_a_timeout_never_moves_into_or_out_of_claude_codes_bash(tools, name, args, client) -> None:
    """At its timeout Claude Code 2.1.197's Bash moves a simple command to the background
    (shouldAutoBackground) where every other shell tool kills it: the same number is another
    effect. Was: renamed with the timeout carried over (converted from seconds)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and "background-at-limit" in d.reason, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "target"),
    [
        ([BASH], "exec_command", {"cmd": "echo hi > nul.txt"}, "Claude Code", "Bash"),
        ([BASH], "shell", {"command": ["make", "test"]}, "Claude Code", "Bash"),
        ([CODEX_EXEC], "Bash", {"command": "echo apply_patches"}, "Codex", "exec_command"),
    ],
)
def test_commands_no_client_reads_otherwise_still_move(tools, name, args, client, target) -> None:
    d = decide(tools, name, args, client=client)
    assert d.action is Action.RENAME and d.target == target, d.reason


PI_EDIT = fn("edit", schema("path", "oldText", "newText", path=STR, oldText=STR, newText=STR))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # the file holds say “hi”: Claude Code's Edit finds it and writes say “bye”
        ([EDIT], "edit", {"filePath": "/p/a.py", "oldString": 'say "hi"', "newString": 'say "bye"'}, "Claude Code"),
        # the file holds it’s: Claude Code's Edit writes it’s fine
        ([EDIT], "edit", {"filePath": "/p/a.py", "oldString": "it's", "newString": "it's fine"}, "Claude Code"),
    ],
    ids=["quotes", "apostrophe"],
)
def test_a_replacement_claude_codes_edit_would_respell_never_moves_into_it(tools, name, args, client) -> None:
    """Claude Code 2.1.197's Edit, when the old text matched only with its quotes read as curly
    ones (or escapes, tags), writes the new text the same way (preserveQuoteStyle). Was: renamed
    to Edit, and the model's straight quotes written curly (audit 73 B6). Such an old text, which
    Edit may find where OpenCode's matchers find another place, never reaches Edit."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and "exact-quotes in the target" in d.reason, d.reason


def test_an_old_text_claude_codes_edit_reads_literally_still_moves_into_it() -> None:
    args = {"filePath": "/p/a.py", "oldString": "say hi", "newString": 'say "bye"'}
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # OpenClaw's edit (pi's keys; its writing not checked) is read as writing its text as
        # given; OpenCode's writes it with the CRLF of a CRLF file
        ([OC_EDIT], "edit", {"path": "/p/a.txt", "oldText": "a\nb", "newText": "c\nd"}, "OpenCode"),
        ([PI_EDIT], "edit", {"filePath": "/p/a.txt", "oldString": "a\nb", "newString": "c\nd"}, None),
    ],
    ids=["openclaw-to-opencode", "opencode-to-openclaw"],
)
def test_lines_never_move_between_an_edit_that_keeps_crlf_and_one_that_does_not(tools, name, args, client) -> None:
    """OpenCode 1.18.33's edit (and Claude Code 2.1.197's Edit) write the new text with the
    replaced file's line endings (convertToLineEnding; writeTextContent): CRLF in a CRLF file.
    Was: moved between them and edits recorded as writing text as given (audit 73 B5). (Two loose
    matchers never hand each other an old text now, whatever the new text.)"""
    d = decide(tools, name, args, client=client)
    assert not d.changed and ("line breaks" in d.reason or "fuzzy" in d.reason), d.reason


def test_lines_still_move_between_opencodes_edit_and_claude_codes() -> None:
    args = {"filePath": "/p/a.txt", "oldString": "a\nb", "newString": "c\nd"}
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # an LF file: OpenCode's edit writes LF, Claude Code's Edit the CRLF as sent
        (
            [EDIT],
            "edit",
            {"filePath": "/w/n.txt", "oldString": "old line", "newString": "first\r\nsecond"},
            "Claude Code",
        ),
        # read as Qwen Code's edit or Crush's; Gemini CLI's replace
        ([EDIT], "edit", {"file_path": "/w/n.txt", "old_string": "old", "new_string": "a\r\nb"}, "Claude Code"),
        ([EDIT], "replace", {"file_path": "/w/n.txt", "old_string": "x", "new_string": "a\rb"}, "Claude Code"),
    ],
    ids=["opencode-to-claude", "qwen-to-claude", "gemini-to-claude"],
)
def test_a_carriage_return_never_moves_between_edits_that_keep_the_files_line_endings(
    tools, name, args, client
) -> None:
    """OpenCode 1.18.33's edit reads a CRLF in its text as a line break and writes the file's own
    (normalizeLineEndings, then convertToLineEnding); Claude Code's Edit and Qwen Code's edit
    write it as sent into an LF file. Was: moved (attack 74 P1)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and "carriage return" in d.reason, d.reason


def test_lines_move_into_claude_codes_edit_from_edits_that_keep_the_files_line_endings() -> None:
    # read as Qwen Code's edit or Crush's (the same keys): both write a CRLF file's line endings,
    # as Claude Code's Edit does (edit.go ToWindowsLineEndings; was read as written as given)
    args = {"file_path": "/p/a.txt", "old_string": "a\nb", "new_string": "c\nd"}
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason


@pytest.mark.parametrize(
    "cmd",
    [
        "apply\\_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF",
        "ap''ply_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF",
        "a=apply_; ${a}patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF",
    ],
    ids=["backslash", "quotes", "expansion"],
)
def test_an_apply_patch_spelled_for_the_shell_never_leaves_codex(cmd: str) -> None:
    """Codex's shell finds an apply_patch alias of Codex on PATH (codex-rs/arg0): a word the shell
    runs as apply_patch applies the patch there, and is "command not found" in OpenCode's bash.
    Was: renamed to bash (attack 74 P4)."""
    d = decide([OC_BASH], "exec_command", {"cmd": cmd}, client="OpenCode")
    assert not d.changed and "rewrites or runs it itself" in d.reason, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # at the end of a file that ends in a newline: Gemini CLI writes a\nc\n, Claude Code a\nc
        ([EDIT], "replace", {"file_path": "/p/a", "old_string": "b\n", "new_string": "c"}, "Claude Code"),
        ([EDIT], "replace", {"file_path": "/p/a", "old_string": "b", "new_string": "c\n"}, "Claude Code"),
    ],
    ids=["newline-taken-off", "newline-added"],
)
def test_a_replacement_changing_the_final_newline_never_leaves_gemini_clis_replace(tools, name, args, client) -> None:
    """Gemini CLI 0.61.0's replace keeps whether the file ends in a newline (restoreTrailingNewline,
    after each matcher); the other edits write the replacement as sent. Was: renamed (attack 75
    Q3)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and "ends in a newline" in d.reason, d.reason


def test_a_replacement_keeping_the_final_newline_still_leaves_gemini_clis_replace() -> None:
    d = decide([EDIT], "replace", {"file_path": "/p/a", "old_string": "b", "new_string": "c"}, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason


@pytest.mark.parametrize(
    "command",
    [
        "${HOME:+app}ly_patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF",
        "\"$a\"patch <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF",
        "$'\\x61pply_patch' <<'EOF'\n*** Begin Patch\n*** End Patch\nEOF",
    ],
    ids=["expansion-split", "quoted-expansion", "ansi-c"],
)
def test_a_patch_never_moves_into_codex(command: str) -> None:
    """A name a shell builds runs Codex's apply_patch there (on PATH) and is "command not found"
    in Qwen Code's shell: a command holding a patch never moves into Codex. Was: renamed to
    exec_command, and Codex applied the patch (attack 75 Q2)."""
    d = decide([CODEX_EXEC], "run_shell_command", {"command": command}, client="Codex")
    assert not d.changed and "rewrites or runs it itself" in d.reason, d.reason


def test_a_name_ending_in_patch_still_moves_out_of_codex() -> None:
    d = decide([OC_BASH], "exec_command", {"cmd": "git checkout -b ${USER}_patch"}, client="OpenCode")
    assert d.action is Action.RENAME and d.target == "bash", d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # MODE = ‘prod’ then MODE  = 'prod': OpenCode edits the second line, Claude Code the first
        ([EDIT], "edit", {"filePath": "/p/a.py", "oldString": "MODE = 'prod'", "newString": "x"}, "Claude Code"),
        # pi's folding (NFKC, quotes, dashes) finds its own place too
        ([EDIT], "edit", {"path": "/p/a.py", "oldText": "MODE = 'prod'", "newText": "x"}, "Claude Code"),
    ],
    ids=["opencode-to-claude", "pi-to-claude"],
)
def test_a_loose_matcher_never_hands_its_old_text_to_another(tools, name, args, client) -> None:
    """Two loose matchers find different places for one old text: only the literal is common to
    all, so an old text moves only to the same matching or to one that takes the literal alone.
    Was: a fuzzy source reached any matcher (attack 76 R2). A call naming the client's own tool
    in another agent's key spelling is that tool's (test_br27_edit_keys_are_renamed)."""
    d = decide(tools, name, args, client=client)
    assert not d.changed and " in the target" in d.reason, d.reason


def test_a_dollar_pattern_never_leaves_opencodes_edit() -> None:
    """OpenCode 1.18.33's edit with replaceAll hands the new text to String.prototype.replaceAll,
    which reads $$ as $ (and $&, $`, $'); Claude Code's Edit writes it as sent. Was: renamed
    (attack 76 R1)."""
    args = {"filePath": "/w/run.sh", "oldString": "PID_FILE", "newString": "/tmp/app.$$.pid", "replaceAll": True}
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert not d.changed and "replacement pattern" in d.reason, d.reason


@pytest.mark.parametrize(
    "args",
    [
        {"filePath": "/w/a.txt", "oldString": "aa", "newString": "bb"},
        {"filePath": "/w/a.txt", "oldString": "aa", "newString": "bb", "replaceAll": False},
        {"file_path": "/w/a.txt", "old_string": "x\nx", "new_string": "y\ny"},
        {"filePath": "/w/main.go", "oldString": "}\n}", "newString": "}"},
    ],
    ids=["opencode", "opencode-once", "crush", "braces"],
)
def test_an_old_text_that_overlaps_itself_never_leaves_a_tool_counting_overlaps(args: dict) -> None:
    """OpenCode's edit and Crush's refuse an old text whose occurrences overlap (``aa`` in
    ``x = aaa``: indexOf is not lastIndexOf) as not unique; Claude Code's Edit counts
    ``split(old).length - 1`` and edits the first. Was: renamed to Edit (attack 76 R4, attack 75
    Q4)."""
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert not d.changed and "overlap" in d.reason, d.reason


@pytest.mark.parametrize(
    "args",
    [
        {"filePath": "/w/a.txt", "oldString": "aa", "newString": "bb", "replaceAll": True},
        {"filePath": "/w/a.txt", "oldString": "abc", "newString": "abd"},
        {"filePath": "/w/main.go", "oldString": "}\n", "newString": "}\n\n"},
    ],
    ids=["replace-all", "no-border", "brace-line"],
)
def test_an_old_text_that_cannot_overlap_still_leaves_opencodes_edit(args: dict) -> None:
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason


@pytest.mark.parametrize(
    "args",
    [
        {"filePath": "/w/Makefile", "oldString": "$(SRC)", "newString": "$$SRC"},
        {"filePath": "/w/Makefile", "oldString": "$(SRC)", "newString": "$$SRC", "replaceAll": False},
    ],
    ids=["absent", "false"],
)
def test_a_dollar_pattern_leaves_opencodes_edit_when_it_replaces_once(args: dict) -> None:
    """Without replaceAll OpenCode's edit joins the new text in literally (``substring(0, index) +
    newString + …``), as Claude Code's Edit writes it. Was: left, the flag read without the call's
    replaceAll (attack 77 S2)."""
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason
    assert d.arguments_after["new_string"] == "$$SRC"


@pytest.mark.parametrize("replace_all", [True, "true"], ids=["true", "string"])
def test_a_dollar_pattern_with_replace_all_still_stays(replace_all: Any) -> None:
    args = {"filePath": "/w/Makefile", "oldString": "$(SRC)", "newString": "$$SRC", "replaceAll": replace_all}
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert not d.changed, d.reason


@pytest.mark.parametrize(
    "args",
    [
        {"path": "/w/NOTICE.md", "oldText": "2020-2021", "newText": "2020-2022"},
        {"path": "/w/a.py", "oldText": "a()\nb()", "newText": "c()"},
        {"path": "/w/a.py", "oldText": "x = 1", "newText": "x = 2"},
    ],
    ids=["dash", "trailing-space", "plain"],
)
def test_an_old_text_pi_counts_normalised_never_leaves_it(args: dict) -> None:
    """pi 0.58.3's edit counts occurrences in the file and the old text normalised (NFKC,
    trailing whitespace, quotes and dashes folded) even when the literal is found: it refuses
    ``2020-2021`` in a file that also holds ``2020–2021``, where Claude Code's Edit edits the
    literal one. Was: renamed to Edit (attack 82 V1)."""
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert not d.changed and "normalised" in d.reason, d.reason


@pytest.mark.parametrize(
    "args",
    [
        {"filePath": "/w/a.txt", "oldString": "aa", "newString": "bb", "replaceAll": "true"},
        {"filePath": "/w/a.txt", "oldString": "aa", "newString": "bb", "replace_all": True},
        {"file_path": "/w/a.txt", "old_string": "aa", "new_string": "bb", "replaceAll": True},
    ],
    ids=["string-true", "opencode-keys-snake-flag", "crush-keys-camel-flag"],
)
def test_an_overlapping_old_text_replaced_everywhere_still_moves(args: dict) -> None:
    """Replacing every occurrence, no tool counts them: the flag as the translation writes it
    counts, "true" and another agent's spelling included. Was: left (attack 82 V2, V3)."""
    d = decide([EDIT], "edit", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason
    assert d.arguments_after["replace_all"] is True


def test_a_line_break_never_leaves_the_text_editor() -> None:
    """The text editor reads the file with universal newlines: a lone carriage return of the file
    is a line break there, so ``x=1\ny=2`` is found twice in ``x=1\ry=2\nx=1\ny=2`` (refused)
    where Claude Code's Edit, folding only CRLF, finds it once and edits (attack 82 V8)."""
    args = {**TEXT_EDITOR_CALL, "old_str": "x=1\ny=2", "new_str": "z=0"}
    d = decide([EDIT], "str_replace_based_edit_tool", args, client="Claude Code")
    assert not d.changed and "exact-tabs" in d.reason, d.reason


TEXT_EDITOR_CALL = {"command": "str_replace", "path": "/w/main.go"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ({**TEXT_EDITOR_CALL, "old_str": "return nil", "new_str": "\treturn err"}, "tabs"),
        ({**TEXT_EDITOR_CALL, "old_str": "\treturn nil", "new_str": "return err"}, "exact-tabs"),
        ({**TEXT_EDITOR_CALL, "old_str": "id\tname", "new_str": "id\tname\temail"}, "tabs"),
        # read with universal newlines, a \r matches nothing there; Edit finds it in a progress log
        ({**TEXT_EDITOR_CALL, "old_str": "50%\r100%", "new_str": "done"}, "exact-tabs"),
    ],
    ids=["new-tab", "old-tab", "tsv", "carriage-return"],
)
def test_a_tab_never_leaves_the_text_editor(args: dict, said: str) -> None:
    """The text editor's str_replace expands tabs in the file, the old text and the new one
    (trae-agent e839e55 edit_tool.py; Anthropic's reference computer-use-demo edit.py): Claude
    Code's Edit writes a tab as sent and finds only the literal. Was: renamed to Edit (attack 77
    S1)."""
    d = decide([EDIT], "str_replace_based_edit_tool", args, client="Claude Code")
    assert not d.changed and said in d.reason, d.reason


@pytest.mark.parametrize(
    "old",
    ["        return nil", "return nil", "abc = 1", "id      name"],
    ids=["indent", "one-space", "column-7", "aligned"],
)
def test_a_space_never_leaves_the_text_editor(old: str) -> None:
    """The text editor counts its old text in the file with every tab expanded (trae-agent e839e55
    edit_tool.py ``read_file(path).expandtabs()``): spaces match a tab-indented line as well as a
    space-indented copy (Go code and the same lines in a raw-string example), and it refuses
    both where Claude Code's Edit, counting the literal, edits the copy. A tab at column 7 expands
    to one space, so any space may be one. Was: renamed to Edit (attack 78 T1)."""
    args = {**TEXT_EDITOR_CALL, "old_str": old, "new_str": "err"}
    d = decide([EDIT], "str_replace_based_edit_tool", args, client="Claude Code")
    assert not d.changed and "exact-tabs" in d.reason, d.reason


def test_an_edit_without_tabs_or_spaces_still_leaves_the_text_editor() -> None:
    args = {**TEXT_EDITOR_CALL, "old_str": "nil", "new_str": "err"}
    d = decide([EDIT], "str_replace_based_edit_tool", args, client="Claude Code")
    assert d.action is Action.RENAME and d.target == "Edit", d.reason
    assert d.arguments_after == {"file_path": "/w/main.go", "old_string": "nil", "new_string": "err"}


def test_a_space_never_reaches_the_text_editor() -> None:
    """The other way: Claude Code's Edit finds the literal alone; the text editor may find the
    same text at a tab-indented line where the literal is missing (a client whose text editor
    does not require ``command``)."""
    editor = fn(
        "str_replace_based_edit_tool",
        schema("path", command=STR, path=STR, old_str=STR, new_str=STR),
    )
    args = {"file_path": "/w/main.go", "old_string": "        return nil", "new_string": "        return err"}
    d = decide([editor], "Edit", args)
    assert not d.changed and "exact-tabs" in d.reason, d.reason


@pytest.mark.parametrize(
    "args",
    [
        {"file_path": "/w/app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False", "replace_all": "false"},
        {"path": "/w/app.py", "old_string": "DEBUG = True", "new_string": "DEBUG = False"},
    ],
    ids=["string-flag", "path-key"],
)
def test_a_call_of_qwen_codes_own_edit_is_still_fitted(args: dict) -> None:
    """Crush's edit is spelled with Qwen Code's keys; a call naming Qwen Code's own edit is that
    tool's, and Crush's matcher (no looser than Qwen's) does not stand in the way (regression of
    the loose-matcher rule, attack 77 S3)."""
    d = decide([QWEN_EDIT], "edit", args, client="Qwen Code")
    assert d.action is Action.FIT, d.reason


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "moves"),
    [
        ([OC_READ], "Read", {"file_path": "/p/app.py", "limit": 0}, "OpenCode", False),
        ([OC_READ], "Read", {"file_path": "/p/app.py", "offset": 40, "limit": "0"}, "OpenCode", False),
        ([READ], "read", {"filePath": "/p/app.py", "limit": 0}, "Claude Code", False),
        ([OC_READ], "Read", {"file_path": "/p/app.py", "limit": 1}, "OpenCode", True),  # the control
    ],
    ids=["into-opencode", "string-into-opencode", "into-claude-code", "one-line"],
)
def test_a_limit_claude_codes_read_refuses_never_moves(tools, name, args, client, moves) -> None:
    """Claude Code 2.1.197's Read takes a positive ``limit`` (int().positive(): 0 is an input
    error); OpenCode 1.18.33's read honours 0 (``limit ?? 2000``: zero lines, a success), Qwen
    Code 0.15.10's read_file refuses it. A count of 0 or less moves between no two tools: the
    model's own tool would refuse what the other runs, or the other way. Was: renamed as sent
    (attack 100)."""
    d = decide(tools, name, args, client=client)
    assert d.changed is moves, d.reason
    if not moves:
        assert "a count of" in d.reason, d.reason


QWEN_LIST = fn("list_directory", schema("path", path=STR, ignore={"type": "array"}))
QWEN_TOOL_SEARCH = fn("tool_search", schema("query", query=STR, max_results=INT))
CC_TOOL_SEARCH = fn("ToolSearch", schema("query", query=STR, max_results=NUM))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "moves", "why"),
    [
        # a count that is not a whole number: Claude Code's Read refuses 0.5, Qwen Code's read_file
        # reads lines.slice(0, 0.5), none, as a success
        ([QWEN_READ], "Read", {"file_path": "/p/a.py", "limit": 0.5}, "Qwen Code", False, "a count of"),
        ([QWEN_READ], "Read", {"file_path": "/p/a.py", "limit": "2.5"}, "Qwen Code", False, "a count of"),
        ([QWEN_READ], "Read", {"file_path": "/p/a.py", "limit": 2}, "Qwen Code", True, ""),
        # max_results: Claude Code slices what it finds (select: loads every named tool), Qwen Code
        # takes 1-20 and caps a select: list too
        (
            [CC_TOOL_SEARCH],
            "tool_search",
            {"query": "select:a,b,c", "max_results": 1},
            "Claude Code",
            False,
            "max_results",
        ),
        ([QWEN_TOOL_SEARCH], "ToolSearch", {"query": "git", "max_results": 50}, "Qwen Code", False, "max_results"),
        # Codex's list_dir lists two levels and every entry; Qwen Code's one level, gitignored hidden
        ([QWEN_LIST], "list_dir", {"dir_path": "/repo"}, "Qwen Code", False, "list.ignores"),
    ],
    ids=["half-a-line", "string-2.5", "two-lines", "select-into-claude", "fifty-into-qwen", "list-dir-into-qwen"],
)
def test_a_number_or_listing_another_tool_reads_otherwise_never_moves(tools, name, args, client, moves, why) -> None:
    """Attack 101: each of these reached the client as a call its own tool would run otherwise
    (sources in each row's comment; the tables in semantics.py cite them)."""
    d = decide(tools, name, args, client=client)
    assert d.changed is moves, d.reason
    assert why in d.reason, d.reason


def test_a_command_with_no_absolute_cd_still_moves_into_bash() -> None:
    """Claude Code cuts only `cd <its working directory> && `, an absolute path: `etcd && make` is
    no such text, and the command moves (was: left since da29347, a lost repair)."""
    d = decide(
        [BASH], "exec_command", {"cmd": "docker compose up -d etcd && make test && make lint"}, client="Claude Code"
    )
    assert d.action is Action.RENAME and d.arguments_after == {
        "command": "docker compose up -d etcd && make test && make lint"
    }, d.reason


GEM_LIST = fn("list_directory", schema("dir_path", dir_path=STR, ignore={"type": "array"}))


@pytest.mark.parametrize(
    ("tools", "name", "args", "client"),
    [
        # pi 0.58.3's ls: readdirSync, every entry (dotfiles, git-ignored ones); Crush 0.90.0's ls a
        # whole tree; Cline 3.89.2's list_files (not recursive) globs "*" with dot: true,
        # gitignore: false, Roo Code 3.52.1's the same: Gemini CLI's and Qwen Code's
        # list_directory hide git-ignored entries
        ([GEM_LIST], "ls", {"path": "/home/dev/proj"}, "Gemini CLI"),
        ([GEM_LIST], "list_files", {"path": "/home/dev/proj"}, "Gemini CLI"),
        ([QWEN_LIST], "ls", {"path": "/home/dev/proj"}, "Qwen Code"),
        ([QWEN_LIST], "list_files", {"path": "/home/dev/proj"}, "Qwen Code"),
        # and out of them: Crush's ls lists a tree, gitignored entries not recorded
        (
            [fn("ls", schema(path=STR, ignore={"type": "array", "items": STR}, depth=INT))],
            "list_directory",
            {"path": "/repo/src"},
            None,
        ),
        # Gemini CLI 0.61.0 refuses an omission placeholder line in write_file's content and in
        # replace's new text; Claude Code's Write and Edit would write it over the code
        ([CLAUDE_WRITE], "write_file", {"file_path": "/p/util.js", "content": "// rest of code ..."}, "Claude Code"),
        ([OC_WRITE], "write_file", {"file_path": "/p/util.js", "content": "(rest of code ...)"}, "OpenCode"),
        (
            [EDIT],
            "replace",
            {
                "file_path": "/p/a.js",
                "instruction": "shorten",
                "old_string": "export function render(x) {\n  return String(x);\n}",
                "new_string": "// rest of methods ...",
            },
            "Claude Code",
        ),
        # Cline's and Roo Code's write_to_file unescape HTML entities (a model not named claude)
        # and drop a code fence line at either end; these write the text as given
        (
            [GEMINI_WRITE],
            "write_to_file",
            {"path": "/p/gt.js", "content": "export const gt = (a, b) =&gt; a &gt; b;"},
            "Gemini CLI",
        ),
        ([QWEN_WRITE], "write_to_file", {"path": "/p/gt.js", "content": "const s = &quot;hi&quot;;"}, "Qwen Code"),
        (
            [CLAUDE_WRITE],
            "write_to_file",
            {"path": "/p/hello.py", "content": "```python\nprint('hi')\n```"},
            "Claude Code",
        ),
        ([OC_WRITE], "write_to_file", {"path": "/p/hello.py", "content": "print('hi')\n```"}, "OpenCode"),
    ],
    ids=[
        "pi-ls-into-gemini",
        "cline-list-into-gemini",
        "pi-ls-into-qwen",
        "cline-list-into-qwen",
        "qwen-list-into-crush",
        "placeholder-write-into-claude",
        "placeholder-write-into-opencode",
        "placeholder-replace-into-claude",
        "entities-into-gemini",
        "entities-into-qwen",
        "fences-into-claude",
        "closing-fence-into-opencode",
    ],
)
def test_what_the_models_tool_would_list_refuse_or_rewrite_never_moves(tools, name, args, client) -> None:
    """Each of these reached the client renamed while the model's own tool lists other entries,
    refuses the text, or rewrites it before writing (sources in the rows' comments and in
    semantics.py): left as sent."""
    d = decide(tools, name, args, client=client)
    assert d.action is Action.LEAVE, (d.action, d.target, d.arguments_after, d.reason)


@pytest.mark.parametrize(
    ("tools", "name", "args", "client", "after"),
    [
        # the same tools still take what each writes as given
        (
            [GEMINI_WRITE],
            "write_to_file",
            {"path": "/p/a.js", "content": "const a = 1;"},
            "Gemini CLI",
            {"file_path": "/p/a.js", "content": "const a = 1;"},
        ),
        (
            [CLAUDE_WRITE],
            "write_file",
            {"file_path": "/p/notes.txt", "content": "the rest of it"},
            "Claude Code",
            {"file_path": "/p/notes.txt", "content": "the rest of it"},
        ),
        # a listing that hides git-ignored entries (Gemini CLI's key) fits another that does
        ([QWEN_LIST], "list_directory", {"dir_path": "/repo"}, "Qwen Code", {"path": "/repo"}),
    ],
    ids=["plain-write-into-gemini", "no-placeholder-into-claude", "gemini-list-into-qwen"],
)
def test_what_both_tools_list_or_write_alike_still_moves(tools, name, args, client, after) -> None:
    """A rename (or, for a declared name, a fit) whose arguments are ``after``."""
    d = decide(tools, name, args, client=client)
    assert d.action in (Action.RENAME, Action.FIT), (d.action, d.reason)
    assert (d.arguments_after if d.arguments_after is not None else args) == after, (d.arguments_after, d.reason)
