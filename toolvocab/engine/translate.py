"""A call's arguments, translated into the target tool's keys: the one place that decides whether
two keys mean the same.

A repair may only change a call whose every argument has a counterpart of the same meaning in the
target (:mod:`toolvocab.engine.semantics`). The model's call is read every way it may have been
meant — a :class:`Reading` per tool the answered name names (``read_file`` is Qwen Code's, Gemini
CLI's, Cline's, Hermes'…), plus the target itself when the name is the target's own spelled
another way — and each reading is translated on its own. The call changes only when every
applicable reading gives the same arguments; a reading that cannot place one key (no sourced
meaning, no counterpart, another unit with no exact conversion, a value past what the target
honours) blocks the change. A reading the call's own values rule out (a string where that tool
takes an argv) is not applicable and is set aside.

Pure functions over plain data; no I/O.
"""

from __future__ import annotations

import functools
import re
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Iterable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from decimal import Decimal
from functools import lru_cache
from typing import Any

from toolvocab.engine import jsonio
from toolvocab.engine import vocabulary
from toolvocab.engine.models import ArgChange
from toolvocab.engine.semantics import TABLES
from toolvocab.engine.semantics import ArgTable
from toolvocab.engine.semantics import Meaning
from toolvocab.engine.shellwords import argv_to_command
from toolvocab.engine.shellwords import changes_directory
from toolvocab.engine.shellwords import changes_state
from toolvocab.engine.shellwords import command_to_argv
from toolvocab.engine.shellwords import is_portable
from toolvocab.engine.shellwords import posix_join

#: Annotation keys: in the vocabulary a model learned them from, they describe a call to the user
#: and carry no operation (Gemini CLI 0.61.0's ``replace`` ``instruction``, which only feeds an
#: optional LLM fix-up; Codex 0.171.0's ``justification``, a note shown with an escalation request;
#: Claude Code 2.1.197's ``Bash`` ``description``, "what this command does"; Cursor-style
#: ``explanation``). Never translated: kept under their own key where the target declares it, and
#: otherwise dropped only where the caller allows (a call in another agent's vocabulary to a closed
#: schema), else kept.
ANNOTATION_KEYS: frozenset[str] = frozenset({"instruction", "explanation", "justification", "description"})

#: Operands whose empty string means "absent" when another key of the call carries the value
#: (BR-27, OpenClaw PR #36420: ``{"path": "", "file_path": "/a"}``). Not content: an empty
#: replacement is a deletion.
_LOCATIONS = frozenset(
    {"read.path", "write.path", "edit.path", "list.path", "glob.path", "grep.path", "shell.command", "shell.cwd"}
)

#: A path some tools respell before resolving it: a leading @ (pi, Gemini CLI 0.61), a Unicode
#: space pi reads as a space, whitespace at either end (Claude Code 2.1.197 and Qwen Code 0.15.10
#: trim a path with JavaScript's ``trim``, which takes U+FEFF too; OpenCode 1.18.33 does not),
#: and a backslash before a character a shell reads
#: specially (Qwen Code 0.15.10 runs every ``file_path``, ``path`` and ``filePath`` argument
#: through ``unescapePath``, which drops it: ``notes\ v1.txt`` is ``notes v1.txt`` there); a NUL
#: (Gemini CLI 0.61's resolveDefensiveToolPath drops it, Claude Code refuses the path); a
#: screenshot's name (Claude Code 2.1.197's Read, on a missing ``… 10.00.00 AM.png``, reads the
#: same name with U+202F before AM/PM, and the other way round); a percent escape or a ``file:``
#: URL (Gemini CLI 0.61's resolveToRealPath decodes the path with decodeURIComponent and reads a
#: file URL as its path).
_RESPELLED = re.compile(
    "^@|[\u00a0\u2000-\u200a\u202f\u205f\u3000]|^[\\s\\ufeff]|[\\s\\ufeff]\\Z|\\\\[ \\t()\\[\\]{};|*?$`'\"#&<>!~]|\\x00"
    "| (?:AM|PM)\\.png\\Z|%[0-9A-Fa-f]{2}|^file:"
)
#: JavaScript's ``\s`` (ECMA-262 WhiteSpace and LineTerminator), for patterns the agents run.
_JS_SPACE = "\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
#: A command some agents' tools run trimmed (Gemini CLI's stripShellWrapper returns
#: ``command.trim()``; Qwen Code 0.15.10 runs ``params.command.trim()``) and others as given: a
#: trailing ``\ `` or the blank lines a here-document ends with are its text.
_EDGE_SPACE = re.compile(f"^[{_JS_SPACE}]|[{_JS_SPACE}]\\Z")
#: A command Gemini CLI runs with its start taken off (shell-utils stripShellWrapper): 0.61.0's
#: pattern and 0.1.14's (``(?:sh|bash|zsh|cmd.exe)\s+(?:\/c|-c)\s+``, its dot any character)
#: together, their ``\s`` and ``\S`` JavaScript's.
_UNWRAPPED = re.compile(
    "^[{s}]*(?:(?:(?:[^{s}]+/)?(?:sh|bash|zsh)|cmd.exe)[{s}]+(?:-c|/c)"
    "|(?:powershell|pwsh)(?:\\.exe)?[{s}]+(?:-NoProfile[{s}]+)?-Command)[{s}]+".format(s=_JS_SPACE),
    re.IGNORECASE,
)

#: Operands naming a file (not a directory): a trailing ``/`` on one is read two ways.
_FILE_OPERANDS = frozenset(
    {
        "read.path",
        "write.path",
        "edit.path",
        "create.path",
        "insert.path",
        "notebook.path",
        "view_image.path",
        "diff_edit.path",
    }
)

#: Where Claude Code's Grep splits its ``glob`` into several (whitespace, commas).
_LIST_SEPARATORS = re.compile(r"[\s,]")


def _is_path(what: str) -> bool:
    """An operand naming a file or a directory."""
    return what.endswith((".path", ".cwd"))


#: Operands whose value is a command line (a string for some shell, or an argv).
_COMMANDS = frozenset({"shell.command", "monitor.command"})
#: Counts a tool reads its own way at 0 or below (:func:`convert`).
_COUNTS = frozenset({"read.limit", "list.limit", "tool_search.limit"})


def _matching_allows(src: str | None, dst: str | None, named: bool = False) -> bool:
    """An edit's old text meant for ``src``'s matching may be matched with ``dst``'s: the same
    matching, or an exact target, which tries the literal every matcher tries first and refuses a
    missing one (the client reports it) where a looser source would have matched. A looser or
    another loose matcher never receives it: Qwen Code's fallback to trimmed-whitespace lines
    replaces the matched lines with the model's text, indentation and all; a fuzzy one
    (Levenshtein, similarity anchors) may edit a place the model did not name; and two loose
    matchers find different places (on a file holding ``MODE = ‘prod’`` and then
    ``MODE  = 'prod'``, OpenCode's whitespace-normalised matcher edits the second line where Claude
    Code's quote folding edits the first). ``named``: the call names the target itself and the
    source is another agent's tool of that name, read for its keys' spelling (OpenClaw's edit
    answered with OpenCode's ``filePath``, ``oldString``, ``newString``: the model used the
    client's tool, whose matcher runs); a source at least as loose then reaches it, as the bug
    report this case comes from asks (openclaw/openclaw#20229), and a stricter one still does not
    (:func:`_looseness`)."""
    if named and _looseness(src) >= _looseness(dst):
        return True
    if src == "exact-tabs":
        # a tab, a space or a line break in it (else it reads as exact, :data:`_EXPANDED`):
        # the text editor matches it, and counts its occurrences, in the file with tabs expanded
        # and line breaks read as \n, so another place, or none, may be the one it finds
        return dst == src
    return dst == src or dst == "exact"


def _looseness(form: str | None) -> int:
    """How much an edit's matching reads into an old text: 0 the literal, 1 the literal with one
    fold (Claude Code's quotes, the text editor's tabs), 2 normalised lines (Qwen Code's, Crush's),
    3 fuzzy (similarity, Levenshtein, several fallbacks)."""
    form = form or "exact"
    if form.startswith("fuzzy"):
        return 3
    if form.startswith("normalized"):
        return 2
    return 0 if form == "exact" else 1


# ------------------------------------------------------------------ the table, indexed
@lru_cache(maxsize=1)
def _index() -> tuple[
    dict[str, tuple[ArgTable, ...]],
    dict[tuple[str, str], tuple[ArgTable, ...]],
    dict[str, dict[str, tuple[Meaning, ...]]],
]:
    by_name: dict[str, list[ArgTable]] = {}
    by_row: dict[tuple[str, str], list[ArgTable]] = {}
    by_capability: dict[str, dict[str, list[Meaning]]] = {}
    for table in TABLES:
        by_name.setdefault(table.name, []).append(table)
        by_row.setdefault((table.name, table.clients), []).append(table)
        capability = vocabulary.capability_of(table.name)
        pairs = [(capability, key, meaning) for key, meaning in table.args.items()]
        for listed in table.by_command.values():
            pairs += [(meaning.what.split(".", 1)[0], key, meaning) for key, meaning in listed.items()]
        for cap, key, meaning in pairs:
            if cap is None:
                continue
            keys = by_capability.setdefault(cap, {})
            if meaning not in keys.setdefault(key, []):
                keys[key].append(meaning)
    caps = {cap: {k: tuple(v) for k, v in keys.items()} for cap, keys in by_capability.items()}
    return {k: tuple(v) for k, v in by_name.items()}, {k: tuple(v) for k, v in by_row.items()}, caps


def tables_named(name: str) -> tuple[ArgTable, ...]:
    """The tables of the tools spelled exactly ``name``."""
    return _index()[0].get(name, ())


def tables_for_answer(name: str) -> list[tuple[vocabulary.VocabEntry, ArgTable | None]]:
    """``(row, table)`` for every table of every vocabulary row
    :func:`toolvocab.engine.vocabulary.entries_for` gives ``name`` (a row sourced at two versions
    has two tables), and ``(row, None)`` for a row whose arguments are not sourced (every key is
    then read by what the capability's other tools mean by it)."""
    by_row = _index()[1]
    out: list[tuple[vocabulary.VocabEntry, ArgTable | None]] = []
    for entry in vocabulary.entries_for(name):
        tables = by_row.get((entry.name, entry.clients))
        out += [(entry, t) for t in tables] if tables else [(entry, None)]
    return out


@lru_cache(maxsize=256)
def capability_effect(capability: str | None, what: str) -> tuple[bool, Any]:
    """``(known, value)`` of an effect every sourced tool of ``capability`` that records it has
    alike when the call leaves it out (a tool whose arguments are not sourced is taken to behave as
    they all do; tools that disagree leave it unknown)."""
    values = []
    for table in TABLES:
        if vocabulary.capability_of(table.name) != capability:
            continue
        if what in table.fixed:
            values.append(table.fixed[what])
        values += [m.default for m in table.args.values() if m.what == what and m.default is not None]
    if values and all(_same(v, values[0]) for v in values):
        return True, values[0]
    return False, None


def capability_meanings(capability: str | None, key: str) -> tuple[Meaning, ...]:
    """Every meaning ``key`` has in the sourced tools of ``capability`` (empty when none lists it)."""
    if capability is None:
        return ()
    return _index()[2].get(capability, {}).get(key, ())


# ------------------------------------------------------------------ one value, one meaning to another
class _Unusable(Exception):
    """This reading cannot place the value (``applicable`` False: the value rules the reading out;
    ``unknown``: no sourced meaning at all)."""

    def __init__(self, reason: str, applicable: bool = True, unknown: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.applicable = applicable
        self.unknown = unknown


#: The largest integer a JavaScript client holds exactly (``Number.MAX_SAFE_INTEGER``, ECMA-262
#: "Number.MAX_SAFE_INTEGER"): the agents parse arguments in JavaScript or as doubles.
_SAFE_INTEGER = 2**53 - 1


def _number(value: Any, *, bounded: bool = True) -> int | float | None:
    """The number ``value`` is, for a unit or base conversion: a JSON number, or a string spelled
    as one (:func:`toolvocab.engine.jsonio.number_in_text`: not ``"６００"`` or ``"6_0"``, which no
    JSON reader takes for a number). ``None`` for anything else, and (``bounded``) for a value
    beyond :data:`_SAFE_INTEGER`, which a client would not read as written; unbounded, for a
    comparison only (Python compares an int of any size with a float exactly). Never raises."""
    if isinstance(value, str):
        value = jsonio.number_in_text(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return value if not bounded or abs(value) <= _SAFE_INTEGER else None


def _command(value: Any, src: Meaning, dst: Meaning, posix: bool = True) -> Any:
    if not posix:
        if src is dst and isinstance(value, str):
            return value  # the target's own command, as sent
        raise _Unusable(
            "the agent runs on Windows, where each tool runs its own shell (PowerShell, cmd.exe, Git Bash): the command stays as sent"
        )
    if isinstance(value, list):
        if not all(isinstance(a, str) for a in value):
            # Not a command any tool runs: the value passes as sent, the client reports its type.
            raise _Unusable("the command's argv holds a non-string", applicable=False)
        if dst.form == "argv":
            return value
        try:
            return argv_to_command(value)
        except (TypeError, ValueError) as exc:
            raise _Unusable(f"the argv cannot be written as one command line ({exc})") from None
    if not isinstance(value, str):
        raise _Unusable("the command is neither a string nor an argv", applicable=False)
    encoded = command_to_argv(value)  # an argv written as JSON text (BR-25)
    if src.form == "argv":
        if encoded is None:
            raise _Unusable("a command string for a tool that takes an argv", applicable=False)
        return _command(encoded, src, dst)
    if dst.form == "argv":
        if encoded is not None:
            return encoded
        raise _Unusable("a command string cannot become an argv without choosing a shell")
    if src.form == dst.form or is_portable(value):
        return value
    if src.form == "bash":
        return posix_join(["bash", "-c", value])
    raise _Unusable(
        f"the command is read one way by {src.form!r}'s shell and another by {dst.form!r}'s, and it is not portable"
    )


#: JavaScript's ``\s`` (ECMA-262 WhiteSpace and LineTerminator), which Claude Code's ``/\s+$/``
#: strips from the end of each line of Write's content and Edit's new_string.
_JS_TRAILING_SPACE = re.compile(f"[{_JS_SPACE}]$")
_LINE_BREAK = re.compile(r"\r\n|\n|\r")
#: What Claude Code 2.1.197's Edit reads another way than literally when the literal is missing
#: (findActualString, desanitize): a quote (curly ones read as straight), a backslash-u escape or
#: a character past ASCII (each spelled either way), a sanitized tag (``<fnr>``, ``<n>``, ``< EOT >``,
#: a blank line then ``H:`` or ``A:``).
_QUOTES_READ = re.compile(
    r"""['"\u2018\u2019\u201c\u201d]|\\u[0-9a-fA-F]{4}|[^\x00-\x7f]|</?[noesr]>|<fnr>|< [A-Z_]+ >|\n\n[HA]:"""
)


#: A backslash-u escape written in a string (:attr:`ArgTable.unescapes`).
_ESCAPE_IN = re.compile(r"\\u[0-9a-fA-F]{4}")


def _has_escape(value: Any, depth: int = 0) -> bool:
    """Whether a string in ``value`` (a key too) holds a backslash-u escape; nesting past a depth
    no JSON writer keeps holds none. Stops at the first; copies nothing."""
    if isinstance(value, str):
        return _ESCAPE_IN.search(value) is not None
    if depth > 64:
        return False
    if isinstance(value, Mapping):
        return any(_has_escape(k) or _has_escape(v, depth + 1) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_escape(v, depth + 1) for v in value)
    return False


def _check_trimmed(value: Any, what: str) -> None:
    """``value`` (written text) moves between a tool that writes it as given and one that strips
    each line's trailing whitespace first (Claude Code's Write and Edit: normalizeToolInput,
    outside a .md/.mdx file) only when that changes nothing; an empty replacement never (Claude
    Code's Edit then also deletes the line's newline, the others leave an empty line)."""
    if not isinstance(value, str):
        raise _Unusable("the text is not a string", applicable=False)
    if what == "edit.new" and value == "":
        raise _Unusable("an empty replacement also deletes its line's newline in Claude Code's Edit, not elsewhere")
    if any(_JS_TRAILING_SPACE.search(line) for line in _LINE_BREAK.split(value)):
        raise _Unusable(
            "a line of it ends in whitespace, which Claude Code's Write and Edit strip and the other tools write"
        )


#: What Gemini CLI's unescapeStringForGeminiBug changes (editCorrector.ts, v0.1.9 to 0.61.0:
#: ``/\\+(n|t|r|'|"|`|\\|\n)/g``, each match one character shorter).
_CORRECTED_ESCAPE = re.compile("\\\\[ntr'\"`\\\\\n]")

#: A line Gemini CLI 0.61.0 reads as an omission placeholder (omissionPlaceholderDetector.ts: a
#: line, after an optional ``//`` and parentheses, that is "rest of", "rest of code", "unchanged
#: methods"… then ``...`` and only dots), matched loosely: every such line, and some lines it
#: does not read so (a text that matches is left, never moved).
_OMISSION = re.compile(
    r"^[\s\ufeff]*(?://[\s\ufeff]*)?\(?[\s\ufeff]*(?:rest[\s\ufeff]+of|unchanged)\b.*?\.\.\.", re.I | re.M
)
#: What Cline's fixModelHtmlEscaping and removeInvalidChars change (apps/vscode/src/utils/string.ts).
_CLINE_REWRITTEN = re.compile("&(?:gt|lt|quot|amp|apos);|\ufffd")
#: What Roo Code's unescapeHtmlEntities changes (src/utils/text-normalization.ts).
_ROO_REWRITTEN = re.compile("&(?:lt|gt|quot|#39|apos|#91|#93|lsqb|rsqb|amp);")


def _fenced(text: str) -> bool:
    """``text`` begins or ends with three backticks: Cline and Roo Code drop that line."""
    return text.startswith("```") or text.endswith("```")


#: What the text editor's str_replace may find otherwise than literally in an old text
#: (trae-agent e839e55 trae_agent/tools/edit_tool.py str_replace: ``read_file(path).expandtabs()``
#: and ``old_str.expandtabs()`` before ``count``; read_file is ``Path.read_text()``, universal
#: newlines; Anthropic's reference computer-use-demo edit.py the same): a tab, a space (a tab of
#: the file expands to one to eight of them), a carriage return (never in the file as read) or a
#: line break (a lone carriage return of the file reads as one there; Claude Code's Edit folds
#: only CRLF).
_EXPANDED = re.compile("[\t \r\n]")

#: What ECMAScript's GetSubstitution reads in a string replacement (no capture groups).
_DOLLAR_PATTERN = re.compile(r"\$[$&`']")

#: Ways a tool writes text otherwise than given (``Meaning.form`` of ``write.content`` and
#: ``edit.new``, joined with ``+``): each with the text it changes.
_WRITTEN_FLAGS = {
    # Qwen Code 0.15.10's edit: an empty replacement takes the line's newline too
    "newline-on-empty": (lambda text: text == "", "an empty replacement also deletes its line's newline"),
    # Qwen Code 0.15.10's and Gemini CLI 0.61.0's writes: CRLF throughout in a file that has one
    "eol-of-file": (
        lambda text: isinstance(text, str) and ("\n" in text or "\r" in text),
        "its line breaks are written as the replaced file's (CRLF in a CRLF file)",
    ),
    # OpenCode 1.18.33's edit with replaceAll: String.prototype.replaceAll(old, new) reads $$,
    # $&, $` and $' in the new text as replacement patterns (the others write them as sent);
    # without replaceAll it writes them as sent: read with the call's replaceAll
    # (_check_edit_texts), never alone
    "dollar-patterns": (lambda text: False, ""),
    # the text editor's str_replace and insert (trae-agent, Anthropic's reference): expandtabs
    "tabs-expanded": (lambda text: isinstance(text, str) and "\t" in text, "its tabs are written as spaces"),
    # Gemini CLI's write_file (0.1.9-0.10.0 and 0.61.0) and replace (0.1.9-0.10.0): text that
    # unescapeStringForGeminiBug would change is unescaped or rewritten by an LLM first
    # Gemini CLI 0.61's replace: read with the old text (_check_edit_texts), never alone
    "final-newline-kept": (lambda text: False, ""),
    "escapes-corrected": (
        lambda text: isinstance(text, str) and _CORRECTED_ESCAPE.search(text) is not None,
        "a backslash in it before n, t, r, a quote, a backtick, a backslash or a line break may be read as an "
        "escape (or the text rewritten by an LLM)",
    ),
    # Gemini CLI 0.61.0's write_file and replace: refused with an omission placeholder line
    "omission-refused": (
        lambda text: isinstance(text, str) and _OMISSION.search(text) is not None,
        "it holds an omission placeholder line (such as '// rest of code ...'), which one of the tools refuses",
    ),
    # Cline 3.89.2's and Roo Code 3.52.1's write_to_file: a code fence line dropped at either end,
    # HTML entities unescaped (for a model whose id does not name claude)
    "cline-rewrites": (
        lambda text: isinstance(text, str) and (_fenced(text) or _CLINE_REWRITTEN.search(text) is not None),
        "it begins or ends with a code fence or holds an HTML entity or U+FFFD, which Cline drops or unescapes",
    ),
    "roo-rewrites": (
        lambda text: isinstance(text, str) and (_fenced(text) or _ROO_REWRITTEN.search(text) is not None),
        "it begins or ends with a code fence or holds an HTML entity, which Roo Code drops or unescapes",
    ),
}


def _written_as_given(value: Any, src_form: str | None, dst_form: str | None) -> tuple[str | None, str | None]:
    """The two forms of written text without the ways of :data:`_WRITTEN_FLAGS` both tools share
    or the text does not meet; raises :class:`_Unusable` when one tool writes ``value`` one such
    way and the other does not."""
    parts = [set(f.split("+")) if f else set() for f in (src_form, dst_form)]
    for flag, (applies, said) in _WRITTEN_FLAGS.items():
        if (flag in parts[0]) != (flag in parts[1]) and applies(value):
            raise _Unusable(f"{said} by one of the tools, not the other")
    rest = ["+".join(sorted(p - _WRITTEN_FLAGS.keys())) or None for p in parts]
    return rest[0], rest[1]


def _check_respelled(value: Any, new: Any, src: Meaning, dst: Meaning) -> None:
    """A command moves between tools that respell it differently (``Meaning.respells``: Claude
    Code's Bash turns two backslashes and a semicolon into one and one) only when neither
    respelling applies to it, as sent or as written for the target."""
    for text in (value, new):
        if isinstance(text, str):
            for old, _ in (*src.respells, *dst.respells):
                if old in text:
                    raise _Unusable(f"it holds {old!r}, which one of the tools respells before running it")


#: What a shell's quote removal takes out of a word (approximately: every quote and backslash).
_SHELL_QUOTING = re.compile("[\\\\'\"]")


def _check_rewritten(value: Any, new: Any, src: Meaning, dst: Meaning) -> None:
    """A command moves between tools whose clients read different command text their own way
    (``Meaning.rewrites``: Claude Code's Bash writes ``>nul`` as ``>/dev/null``, Codex applies an
    ``apply_patch`` command itself) only when no such text is in it, as sent or as written for
    the target (each word of an argv)."""
    patterns = _compiled((*src.rewrites, *dst.rewrites))
    for text in (value, new):
        for word in text if isinstance(text, list) else (text,):
            if isinstance(word, str):
                # as written, and with the quotes and backslashes a shell takes out of a word
                # (`ap''ply_patch`, `apply\_patch` run apply_patch)
                unquoted = _SHELL_QUOTING.sub("", word)
                for pattern in patterns:
                    if pattern.search(word) or (unquoted != word and pattern.search(unquoted)):
                        raise _Unusable(
                            "one of the clients reads it otherwise than its shell would (rewrites or runs it itself)"
                        )


@functools.lru_cache(maxsize=64)
def _compiled(patterns: tuple[str, ...]) -> tuple[re.Pattern[str], ...]:
    """``patterns`` (``Meaning.rewrites`` of two tools) compiled, once per distinct tuple."""
    return tuple(re.compile(p) for p in patterns)


def _check_unwrapped_line(line: Any, dst: Meaning) -> None:
    """A command line written for a tool that takes a leading shell wrapper off
    (``Meaning.unwraps``: an argv joined, ``["sh", "-c", X, "a"]`` as ``sh -c 'X' a``) must not start
    with one: the tool would run the rest without it, its arguments read otherwise."""
    if dst.unwraps and isinstance(line, str) and _UNWRAPPED.match(line):
        raise _Unusable("written as a command line it starts with a shell wrapper, which the tool takes off")


def convert(value: Any, src: Meaning, dst: Meaning, *, posix: bool = True, named: bool = False) -> Any:
    """``value`` as meant by ``src``, written for ``dst``; raises :class:`_Unusable` when no exact
    conversion exists.

    Listed conversions: seconds ↔ milliseconds (to a whole number of the target's unit only), 1-based ↔ 0-based
    numbers (±1), a command between shells (:func:`_command`), an edit's old text to the same
    matching or an exact one (:func:`_matching_allows`; ``named``: the call names the target, read
    as another agent's tool of that name). Everything else must be equal: operand, form, unit, base. A
    number past ``src.most`` or below ``src.base`` never moves (the model's own tool clamps,
    refuses or reads it its own way). With
    ``posix`` False (the agent runs on Windows) a command never changes form or tool. A
    number past ``dst.most`` (the largest the target honours) is refused: the tool would clamp or
    reject it. A duration of 0 or less never moves between tools (pi reads 0 as no limit).
    """
    if src.what != dst.what:
        raise _Unusable(f"it means {src.what}, the target's {dst.what}")
    if src.what in _COMMANDS:
        new = _command(value, src, dst, posix)
        if src is not dst and src.respells != dst.respells:
            _check_respelled(value, new, src, dst)
        if src is not dst and src.rewrites != dst.rewrites:
            _check_rewritten(value, new, src, dst)
        if src is dst and new is not value:
            # Written for the model's own tool (an argv it refuses, joined into the line it
            # takes): what the client rewrites in that line is text the model never wrote there.
            _check_respelled(new, new, dst, dst)
            _check_rewritten(new, new, dst, dst)
        if src is not dst and any(isinstance(t, str) and _EDGE_SPACE.search(t) for t in (value, new)):
            raise _Unusable("it begins or ends with whitespace, which some agents' tools trim before running it")
        if src is not dst and src.unwraps != dst.unwraps:
            # the text the unwrapping tool gets: the model's (its own tool's) or the one written
            text = value if src.unwraps else new
            if isinstance(text, str) and _UNWRAPPED.match(text):
                raise _Unusable(
                    "it starts with a shell wrapper, which one of the tools takes off before running the rest"
                )
        elif dst.unwraps and new is not value:
            _check_unwrapped_line(new, dst)
        return new
    if _is_path(src.what) and isinstance(value, str) and value.startswith("~") and src is not dst:
        # Hermes, pi, OpenClaw and Claude Code's Read expand ~ to the home directory; OpenCode and
        # Gemini CLI resolve it against the project (<project>/~/…): another file.
        raise _Unusable(f"{value!r} is the home directory for some tools and a folder named ~ for others")
    if _is_path(src.what) and isinstance(value, str) and src is not dst and _RESPELLED.search(value):
        # pi (path-utils.ts normalizeAtPrefix, and its Unicode spaces) and Gemini CLI 0.61
        # (resolveDefensiveToolPath) drop a leading @; Claude Code and Qwen Code trim the path;
        # Qwen Code unescapes it (unescapePath); Gemini CLI 0.61 URL-decodes it. The others read
        # the path as written.
        raise _Unusable(
            f"{value!r} is read with a leading @ dropped, its spaces trimmed or respelled, its backslashes "
            "dropped or its percent escapes decoded by some tools"
        )
    if src.what in _FILE_OPERANDS and isinstance(value, str) and src is not dst and value.endswith(("/", "/.")):
        # A file's path written as a directory's: Claude Code's Read fails (ENOTDIR, path.normalize
        # keeps the slash), Gemini CLI's read_file reads the file (path.resolve drops it).
        raise _Unusable(f"{value!r} names a file as a directory: refused by some tools, read by others")
    if src.what == "edit.old" and value == "" and src is not dst:
        # Claude Code's Edit, OpenCode 1.18's and Qwen Code 0.15.10's edit create a missing file
        # for an empty old text (each refusing an existing one its own way); pi's edit answers
        # "File not found", and the text editor's str_replace refuses a missing path
        raise _Unusable("an empty old text creates the file in some tools and is refused in others")
    if {src.form, dst.form} == {"rg-glob", "rg-glob-list"}:
        if isinstance(value, str) and not _LIST_SEPARATORS.search(value):
            return value  # one glob: the same in a tool that reads a list of them
        raise _Unusable(f"{value!r} is split into several globs by one tool and read as one by the other")
    src_form, dst_form = src.form, dst.form
    if (
        src.what in ("edit.new", "write.content")
        and src is not dst
        and isinstance(value, str)
        and "\r" in value
        and any("eol-of-file" in (f or "").split("+") for f in (src_form, dst_form))
    ):
        # OpenCode's edit reads a CRLF in its text as a line break and writes the file's own;
        # Claude Code's Edit and Qwen Code's write it as sent into an LF file
        raise _Unusable("a carriage return in it is kept by some tools and made the file's line ending by others")
    if src.what in ("edit.new", "write.content") and src_form != dst_form:
        src_form, dst_form = _written_as_given(value, src_form, dst_form)
    if src_form != dst_form and "trimmed-lines" in (src_form, dst_form) and src_form in (None, "trimmed-lines"):
        _check_trimmed(value, src.what)  # text no line of which ends in whitespace is written as given
        src_form = dst_form
    if src.what == "edit.old" and isinstance(value, str):
        # nothing Claude Code's Edit reads another way; for the text editor, nothing a tab of the
        # file can be: it counts the old text in the file with every tab expanded to spaces (a
        # space-indented line in a tab-indented Go file is a second occurrence there, and only
        # the literal one elsewhere) and read with universal newlines (a \r never matches)
        plain = {"exact-quotes": not _QUOTES_READ.search(value), "exact-tabs": not _EXPANDED.search(value)}
        src_form, dst_form = ("exact" if plain.get(f or "") else f for f in (src_form, dst_form))
    if src_form != dst_form and not (src.what == "edit.old" and _matching_allows(src_form, dst_form, named)):
        raise _Unusable(f"it is read as {src.form or 'plain'} there and as {dst.form or 'plain'} in the target")
    if src.unit is not None and src is not dst:
        number = _number(value, bounded=False)
        if number is not None and number <= 0:
            # 0 disables pi's timer; for the others 0 or a negative is the default, refused or
            # unsourced: its meaning is each tool's own.
            raise _Unusable(f"a duration of {value!r} means something of its own in each tool (no limit, the default)")
    if src.what in _COUNTS and src is not dst:
        number = _number(value, bounded=False)
        if number is not None and (number <= 0 or not float(number).is_integer()):
            # Claude Code 2.1.197's Read refuses a limit of 0 or 0.5 (int().positive()), OpenCode
            # 1.18.33's read reads zero lines at 0 (limit ?? 2000), Qwen Code 0.15.10's read_file
            # refuses 0 and reads lines.slice(0, 0.5), none; the others are unsourced: a count
            # that is not a whole number above 0 means what each tool makes of it.
            raise _Unusable(f"a count of {value!r} means something of its own in each tool (none, refused, rounded)")
    if src is not dst and (src.most is not None or src.base is not None):
        number = _number(value, bounded=False)
        if number is not None and src.most is not None and number > src.most:
            # The source clamps or refuses it (Claude Code's Bash runs 600000 ms at most): in a
            # tool that honours more it would run longer than the model's own tool ever would.
            raise _Unusable(f"{value!r} is past the {src.most:g} the model's tool honours")
        if number is not None and src.base is not None and number < src.base:
            # Below the first line: refused, or read as the first, or from the end, tool by tool
            # (OpenCode's read takes offset || 1; Claude Code's schema refuses a negative).
            raise _Unusable(f"{value!r} is before the first line of a {src.base}-based count")
    if src.unit == dst.unit and src.base == dst.base:
        new = value
    else:
        number = _number(value)
        if number is None:
            # Not a number in any unit: the value passes as sent, the client reports its type.
            raise _Unusable(f"{value!r} is not a number to convert", applicable=False)
        if src.unit != dst.unit:
            # Decimal, so 1.005 s is 1005 ms (a float product gives 1004.9999999999999); only a
            # whole number of milliseconds or seconds is exact for every target.
            exact = Decimal(str(number))
            scaled = (
                exact * 1000
                if (src.unit, dst.unit) == ("s", "ms")
                else exact / 1000
                if (src.unit, dst.unit) == ("ms", "s")
                else None
            )
            if scaled is None or scaled != scaled.to_integral_value():
                raise _Unusable(f"{value!r} {src.unit} has no exact whole value in {dst.unit}")
            number = int(scaled)
        if src.base != dst.base:
            if src.base is None or dst.base is None or not float(number).is_integer() or number < src.base:
                raise _Unusable(f"{value!r} is not a {src.base}-based number to rebase")
            number = int(number) - src.base + dst.base
        new = number
    if dst.most is not None:
        number = _number(new, bounded=False)
        if number is not None and number > dst.most:
            raise _Unusable(f"{new!r} is past the {dst.most:g} the target honours")
    return new


# ------------------------------------------------------------------ readings and the target
@dataclass(frozen=True)
class Reading:
    """One way the model's call may have been meant.

    ``label`` names it in reasons (``"Qwen Code's read_file"``). ``table`` is the tool's sourced
    table, ``None`` when its arguments are not sourced. ``own``: the target itself (the call names
    it, or spells its name another way): a key the target declares is its own, as sent.
    ``capability``: whose tools explain a key the table does not list. ``command``: for a text
    editor's table, the operation the call was dispatched on. ``competing``: another agent's tool
    spelled like the answer, read beside the target's own: it constrains only the keys it has a
    meaning for (a key it knows nothing of is the target's, as sent). ``shown``: the tool a
    profile showed the model under this reading's name, with the client's own schema and
    description: what it does with a key left out (:data:`_SOURCE_SIDE`) is the client's tool's.
    """

    label: str
    table: ArgTable | None
    capability: str | None
    own: bool = False
    command: str | None = None
    competing: bool = False
    shown: bool = False

    def listed(self) -> Mapping[str, Meaning]:
        """The keys this reading's tool lists, with their meanings."""
        if self.table is None:
            return {}
        if self.table.by_command:
            return self.table.by_command.get(self.command or "", {})
        return self.table.args

    def fixed(self, what: str) -> tuple[bool, Any]:
        """``(known, value)`` of an effect the call leaves out: the key's default, or the tool's
        fixed behaviour."""
        if self.table is None:
            return capability_effect(self.capability, what)
        if what in self.table.fixed:
            return True, self.table.fixed[what]
        for meaning in self.listed().values():
            if meaning.what == what and meaning.default is not None:
                return True, meaning.default
        return False, None


class _NotThisTool(Exception):
    """The call cannot be a call of this reading's tool (it has nothing a key could be)."""


def _source(key: str, reading: Reading) -> tuple[Meaning, ...]:
    """The meanings ``key`` may have under another agent's tool (``reading``).

    A key the tool lists means what the table says. Any other key is that tool's operand spelled
    another way only when the capability's tools agree on which operand it is and the tool has
    that operand (``file_path`` for pi's ``read``, whose ``path`` it then is); its unit and base
    must then match the tool's own (``timeout_ms`` is never pi's ``timeout`` in seconds). A tool
    with none of the operands the key may be cannot be what the model called
    (:class:`_NotThisTool`); a tool whose arguments are not sourced reads the key every way the
    capability's tools do.
    """
    listed = reading.listed()
    if key in listed:
        return (listed[key],)
    candidates = capability_meanings(reading.capability, key)
    if not candidates:
        raise _Unusable(f"{key!r} has no sourced meaning in {reading.label}", unknown=True)
    if reading.table is None:
        return candidates
    own = {m.what: m for m in listed.values()}
    whats = {c.what for c in candidates} & set(own)
    if not whats:
        raise _NotThisTool(f"{reading.label} has nothing {key!r} could be")
    if len(whats) > 1:
        raise _Unusable(f"{key!r} may be {' or '.join(sorted(whats))} in {reading.label}")
    what = whats.pop()
    mine = own[what]
    for c in candidates:
        if c.what == what and (c.unit, c.base) != (mine.unit, mine.base):
            raise _Unusable(f"{key!r} is {_unit_text(c)} elsewhere and {_unit_text(mine)} in {reading.label}")
    return (mine,)


def _own_operand(key: str, reading: Reading, target: Target) -> tuple[str, str]:
    """``(operand, target key)`` for a key the target does not declare, read as the target's own
    operand spelled another way (``cmd`` for ``exec``'s ``command``): the capability's tools must
    agree on which operand the key is, the target must have exactly one key for it, and the key's
    unit and base elsewhere must be the target's (``timeout_ms`` is never a ``timeoutSeconds``).
    The value is then the target's, unchanged."""
    candidates = capability_meanings(reading.capability, key)
    if not candidates:
        raise _Unusable(f"{key!r} has no sourced meaning in {reading.label}")
    ours = {m.what for meanings in target.meanings.values() for m in meanings}
    whats = {c.what for c in candidates} & ours
    if not whats:
        raise _Unusable(
            f"{target.name} has nothing {key!r} could be ({', '.join(sorted({c.what for c in candidates}))})"
        )
    if len(whats) > 1:
        raise _Unusable(f"{key!r} may be {' or '.join(sorted(whats))} in {target.name}")
    what = whats.pop()
    dst_key = target.key_for(what)
    if not dst_key:
        raise _Unusable(f"{target.name} has no one argument meaning {what}")
    for c in candidates:
        if c.what != what:
            continue
        for t in target.meanings[dst_key]:
            if (c.unit, c.base) != (t.unit, t.base):
                raise _Unusable(
                    f"{key!r} is {_unit_text(c)} elsewhere and {target.name}'s {dst_key!r} is {_unit_text(t)}"
                )
    return what, dst_key


def _unit_text(meaning: Meaning) -> str:
    parts = [p for p in (meaning.unit, f"{meaning.base}-based" if meaning.base is not None else None) if p]
    return " ".join(parts) or "unitless"


@dataclass
class Target:
    """The declared tool a call would go to: its declared keys and what each means.

    Built by :func:`target_for`. ``meanings[key]`` holds the candidate meanings of a declared key
    (one when a table lists it; the capability's when none does).
    """

    name: str
    declared: frozenset[str]
    meanings: dict[str, tuple[Meaning, ...]]
    tables: tuple[ArgTable, ...] = ()
    fixed: dict[str, Any] = field(default_factory=dict)

    def key_for(self, what: str) -> str | None | bool:
        """The one declared key meaning ``what``; ``None`` for none, ``False`` for two or more."""
        keys = [key for key, meanings in self.meanings.items() if meanings and all(m.what == what for m in meanings)]
        if len(keys) > 1:
            return False
        return keys[0] if keys else None


def target_for(name: str, capability: str | None, properties: Iterable[str], client: str | None = None) -> Target:
    """The :class:`Target` for a declared tool ``name`` with the declared ``properties``.

    Its keys' meanings come from the tables spelled ``name`` — only the table of ``client`` (as
    :func:`toolvocab.engine.clients.identify_client` names the agent) when there is one, else every
    table that lists the key, which must agree — and, for a key no table lists, from the
    capability's other tools. What it does when a call leaves an effect out (``fixed``) comes
    from the tables that list every declared key (all of them when none does), where all record
    the same.
    """
    tables = tables_named(name)
    if client is not None:
        mine = tuple(t for t in tables if t.client == client)
        if mine:
            tables = mine
    declared = frozenset(properties)
    meanings: dict[str, tuple[Meaning, ...]] = {}
    for key in declared:
        listed = tuple(dict.fromkeys(t.args[key] for t in tables if key in t.args))
        meanings[key] = listed if listed else capability_meanings(capability, key)
    fixed: dict[str, Any] = {}
    conflicting: set[str] = set()
    recorded: dict[str, int] = {}
    # The tool's effects come from the tables it may be: a table with no key for one the request
    # declares is another tool of that name (OpenClaw's read takes `path`, OpenCode's `filePath`).
    candidates = tuple(t for t in tables if declared <= t.args.keys()) or tables
    for table in candidates:
        # What the tool does when a call leaves an effect out: its fixed behaviour, or the default
        # of its key for it (declared in this request or not).
        effects = dict(table.fixed)
        for meaning in table.args.values():
            if meaning.default is not None:
                effects.setdefault(meaning.what, meaning.default)
        for what, value in effects.items():
            if what in fixed and not _same(fixed[what], value):
                conflicting.add(what)
            fixed.setdefault(what, value)
            recorded[what] = recorded.get(what, 0) + 1
    # An effect is the target's only when every table the target may be records it alike: one
    # table's silence is unknown, and unknown is no agreement.
    conflicting.update(what for what, n in recorded.items() if n < len(candidates))
    for what in conflicting:
        del fixed[what]
    return Target(name=name, declared=declared, meanings=meanings, tables=tables, fixed=fixed)


# ------------------------------------------------------------------ translation
@dataclass
class Translation:
    """The outcome: ``arguments`` and their ``changes`` when every applicable reading agreed,
    else ``arguments`` is ``None`` and ``reason`` says which key blocked it and why."""

    arguments: dict[str, Any] | None
    changes: list[ArgChange] = field(default_factory=list)
    reason: str | None = None
    readings: int = 0


def _one_value(
    key: str, value: Any, srcs: Sequence[Meaning], dsts: Sequence[Meaning], posix: bool = True, named: bool = False
) -> Any:
    """The value every (source, target) meaning pair gives, or :class:`_Unusable` (``named``: as
    :func:`convert`'s)."""
    results: list[Any] = []
    applicable = False
    # the reason, not the exception: a kept exception's traceback holds this frame, and through
    # it its callers' (a reference cycle only the cyclic GC frees, with every flow state in it)
    last: str | None = None
    for src in srcs:
        for dst in dsts:
            try:
                results.append(convert(value, src, dst, posix=posix, named=named))
                applicable = True
            except _Unusable as exc:
                if exc.applicable:
                    applicable = True
                    raise
                last = exc.reason
    if not applicable:
        raise _Unusable(last if last is not None else f"{key!r} has no sourced meaning", applicable=False)
    first = results[0]
    if any(not _equal(r, first) for r in results[1:]):
        raise _Unusable(f"{key!r} reads differently in the tools that share its name")
    return first


def _read(
    arguments: Mapping[str, Any],
    reading: Reading,
    target: Target,
    consumed: frozenset[str],
    posix: bool = True,
    earlier: Earlier | None = None,
    escaped: bool = False,
) -> tuple[dict[str, Any], list[ArgChange]]:
    out: dict[str, Any] = {}
    changes: list[ArgChange] = []
    placed: dict[str, str] = {}  # target key -> the source key that filled it
    if not reading.own and escaped:
        ours = reading.table.unescapes if reading.table is not None else None
        theirs = {t.unescapes for t in target.tables}
        if ours is None or theirs != {ours}:
            raise _Unusable(
                "a string in it holds a backslash-u escape, which Claude Code decodes in every tool's input "
                "before the tool runs and the other agents' tools take as written"
            )
    keys = [k for k in arguments if k not in ANNOTATION_KEYS]
    if reading.competing and keys and not any(k in reading.listed() for k in keys):
        # Another agent's tool of the same name is a reading only when the call uses its spelling;
        # a call with no key uses every such tool's, and leaves each tool's defaults to it.
        raise _NotThisTool(f"the call uses none of {reading.label}'s keys")
    if not reading.own:
        # A key this tool has nothing for rules the tool out, whatever the other keys say.
        for key in arguments:
            if key not in ANNOTATION_KEYS and not (key in consumed and key not in target.declared):
                try:
                    _source(key, reading)
                except _Unusable:
                    pass
    # The target's own keys first (as sent), then the keys that must move.
    order = sorted(arguments, key=lambda k: not (reading.own and k in target.declared))
    for key in order:
        value = arguments[key]
        if key in consumed and key not in target.declared:
            changes.append(ArgChange(op="drop_key", key=key, before=value))
            continue
        if key in ANNOTATION_KEYS or (reading.own and key in target.declared):
            if key in out:
                raise _Unusable(f"{key!r} and {placed[key]!r} both give {target.name}'s {key!r}")
            meanings = target.meanings.get(key, ())
            if reading.own and len(meanings) == 1 and meanings[0].what in _COMMANDS:
                # The target's own command, spelled as another value form (an argv for a string);
                # a value no shell runs stays as sent, for the client to report.
                try:
                    value = _one_value(key, value, meanings, meanings, posix)
                except _Unusable as exc:
                    if exc.applicable:
                        raise
                if not _equal(value, arguments[key]):
                    changes.append(
                        ArgChange(
                            op=_value_op(meanings[0].what, arguments[key], value),
                            key=key,
                            before=arguments[key],
                            after=value,
                        )
                    )
            out[key] = value
            placed[key] = key
            continue
        if reading.own:
            what, dst_key = _own_operand(key, reading, target)
            new = value
        else:
            try:
                srcs = _source(key, reading)
            except _Unusable as exc:
                if not (reading.competing and key in target.declared and exc.unknown):
                    raise
                out[key] = value  # this tool has no meaning for the key: the target's reads it
                placed[key] = key
                continue
            whats = {s.what for s in srcs}
            if len(whats) != 1:
                raise _Unusable(f"{key!r} means {' or '.join(sorted(whats))} in the tools of that capability")
            what = whats.pop()
            found = target.key_for(what)
            if found is False:
                raise _Unusable(f"{target.name} has two arguments meaning {what}")
            if found is None:
                if what in target.fixed and _same(value, target.fixed[what]):
                    changes.append(ArgChange(op="drop_default", key=key, before=value))
                    continue
                raise _Unusable(f"{target.name} has no argument for {key!r} ({what})")
            dst_key = found
            # another agent's tool spelled as the declared one (OpenCode's `edit` to OpenClaw's)
            named = reading.competing and reading.table is not None and reading.table.name == target.name
            new = _one_value(key, value, srcs, target.meanings[dst_key], posix, named=named)
        if dst_key in out:
            current = out[dst_key]
            if what in _LOCATIONS and current == "" and new not in ("", None):
                changes.append(ArgChange(op="fill_empty", key=dst_key, before=current, after=new))
            elif what in _LOCATIONS and new == "" and current not in ("", None):
                changes.append(ArgChange(op="drop_key", key=key, before=value))
                continue
            else:
                raise _Unusable(f"{key!r} and {placed[dst_key]!r} both give {target.name}'s {dst_key!r}")
        out[dst_key] = new
        placed[dst_key] = key
        if dst_key != key:
            changes.append(ArgChange(op="rename_key", key=key, to=dst_key, before=value, after=value))
        if not _equal(new, value):
            changes.append(ArgChange(op=_value_op(what, value, new), key=dst_key, before=value, after=new))
    program = program_named(out, changes, target)
    if program is not None:
        raise _Unusable(program)
    _check_session(arguments, out, placed, reading, target, earlier)
    _check_base(out, placed, reading, target, earlier, posix)
    _write_defaults(arguments, out, changes, reading, target)
    _check_effects(arguments, out, reading, target)
    _check_edit_texts(arguments, out, reading, target)
    # Keys moved first, then values rewritten, then keys dropped (the order a reader checks them).
    order_of = {"rename_key": 0, "fill_empty": 0, "drop_key": 2, "drop_default": 2, "add_default": 3}
    return out, sorted(changes, key=lambda c: order_of.get(c.op, 1))


def program_named(out: Mapping[str, Any], changes: Sequence[ArgChange], target: Target) -> str | None:
    """The reason there is no change, or ``None``: ``changes`` write a command of ``out`` again
    (an argv joined, a line rewrapped: for the shell its meaning's form names) while ``out`` also
    names a program that runs it other than bash, zsh or sh (Codex's ``exec_command`` ``shell``:
    ``pwsh``, ``cmd``…), where the same text may mean otherwise (PowerShell's escape is the
    backtick, not the backslash)."""
    program = [
        k for k in out if any(m.what == _PROGRAM for m in target.meanings.get(k, ())) and not _posix_program(out[k])
    ]
    if not program:
        return None
    commands = {k for k in out if any(m.what in _COMMANDS for m in target.meanings.get(k, ()))}
    if any(c.op in _COMMAND_OPS and c.key in commands for c in changes):
        return f"the call names the program that runs its command ({program[0]!r}: {out[program[0]]!r})"
    return None


#: The operand naming the program a command runs in (:data:`toolvocab.engine.semantics`).
_PROGRAM = "shell.program"
#: Programs a command written for the user's shell (form ``"user"``: bash, zsh or sh, the forms'
#: common reading) means the same in, named bare or by a path (``/bin/zsh``).
_POSIX_PROGRAMS = frozenset({"bash", "zsh", "sh"})


def _posix_program(value: Any) -> bool:
    """True for a program name (``"bash"``, ``"/usr/bin/zsh"``) of :data:`_POSIX_PROGRAMS`."""
    return isinstance(value, str) and value.rsplit("/", 1)[-1] in _POSIX_PROGRAMS


#: The :class:`ArgChange` ops that write a command again (:func:`_value_op`,
#: :func:`toolvocab.engine.arguments.respell`).
_COMMAND_OPS = frozenset({"argv_to_string", "json_to_array", "rewrap_command"})


def _value_op(what: str, before: Any, after: Any) -> str:
    """The :class:`ArgChange` op of a value the translation rewrote."""
    if what in _COMMANDS:
        return (
            "argv_to_string"
            if isinstance(after, str) and isinstance(before, list)
            else "json_to_array"
            if isinstance(after, list)
            else "rewrap_command"
        )
    return "convert"


def _equal(a: Any, b: Any, depth: int = 0) -> bool:
    """JSON values equal with their types (``1`` is not ``1.0``, ``True`` is not ``1``); past a
    depth no JSON writer keeps, only the same object is equal (never raises on deep nesting)."""
    if type(a) is not type(b):
        return False
    if depth > 200:
        return a is b
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_equal(a[k], b[k], depth + 1) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_equal(x, y, depth + 1) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _same(a: Any, b: Any) -> bool:
    return type(a) is type(b) and a == b


def _forms(what: str, key: str, reading: Reading, target: Target) -> list[str | None]:
    """The forms of operand ``what`` in the target (its key ``key``) and in the reading's tool."""
    forms = [m.form for m in target.meanings[key]]
    if reading.table is not None:
        forms += [m.form for m in reading.table.args.values() if m.what == what]
    return forms


#: How an edit tool counts its old text's occurrences when it requires one, by the old text's
#: form, where it differs from counting the literal's occurrences apart (Claude Code 2.1.197's
#: Edit: ``split(old).length - 1``; Qwen Code 0.15.10's countOccurrences, an ``indexOf`` loop
#: past each match; the text editor's ``str.count``; Gemini CLI's replace and OpenClaw's edit,
#: a ``split`` of the literal when it is found): ``"overlapping"`` for OpenCode 1.18.33's edit
#: (packages/opencode/src/tool/edit.ts ``replace``: a match whose ``indexOf`` is not its
#: ``lastIndexOf`` is not unique) and Crush 0.90.0's (internal/agent/tools/edit.go
#: ``findAndReplace``: ``index != strings.LastIndex(content, old)``); ``"normalized"`` for pi
#: 0.58.3's edit, which counts in the file and the old text both normalised
#: (``normalizeForFuzzyMatch``: NFKC, each line's trailing whitespace stripped, quotes, dashes
#: and special spaces folded) even when the literal is found, so ``2020-2021`` is two
#: occurrences in a file that also holds ``2020–2021``.
_COUNTING = {"fuzzy-opencode": "overlapping", "normalized-whitespace": "overlapping", "fuzzy-pi": "normalized"}


def _overlaps_itself(text: str) -> bool:
    """Whether two occurrences of ``text`` can overlap: a proper prefix of it is also its suffix
    (the border of the Knuth–Morris–Pratt failure function; ``"}\n}"``, ``"aa"``)."""
    border = [0] * len(text)
    k = 0
    for i in range(1, len(text)):
        while k and text[i] != text[k]:
            k = border[k - 1]
        if text[i] == text[k]:
            k += 1
        border[i] = k
    return bool(text) and border[-1] > 0


def _check_edit_texts(arguments: Mapping[str, Any], out: Mapping[str, Any], reading: Reading, target: Target) -> None:
    """What an edit's old and new text together make a tool write, where tools differ: Gemini CLI
    0.61's replace (new text ``"final-newline-kept"``) keeps whether the file ends in a newline
    (restoreTrailingNewline), so an old and a new text of which one ends in a newline never move
    into or out of it: at the file's end it puts back or takes off what the others leave as
    replaced. An old text replaced once never moves between tools that count its occurrences
    otherwise (:data:`_COUNTING`): one that can overlap itself between a tool counting overlapping
    occurrences and one counting them apart (on ``x\nx\nx`` the first refuses ``x\nx`` as not
    unique, the second edits the first), any out of or into pi's edit, which counts in normalised
    text — unless the call names the client's own tool (:func:`_matching_allows`). (Claude Code's Edit
    writes the new text with the quotes it read the old text with only when it found the old
    text another way than literally: such an old text never moves into it,
    :func:`_matching_allows`.)"""
    if reading.own:
        return
    old_key, new_key = target.key_for("edit.old"), target.key_for("edit.new")
    new_text = out.get(new_key) if isinstance(new_key, str) else None
    if isinstance(new_text, str) and _DOLLAR_PATTERN.search(new_text):
        # OpenCode's edit reads $$, $&, $` and $' as patterns only when it replaces every
        # occurrence (String.prototype.replaceAll); once, it writes the text as sent
        src_reads = _replaces_all(arguments, out, reading, target) is not False and any(
            "dollar-patterns" in (m.form or "").split("+")
            for m in (reading.table.args.values() if reading.table is not None else ())
            if m.what == "edit.new"
        )
        all_key = target.key_for("edit.all")
        dst_all = (
            out.get(all_key)
            if isinstance(all_key, str) and all_key in out
            else _target_defaults(target).get("edit.all")
        )
        dst_reads = dst_all is True and any(
            "dollar-patterns" in (m.form or "").split("+") for m in target.meanings[new_key]
        )  # type: ignore[index]
        if src_reads != dst_reads:
            raise _Unusable(
                "a $$, $&, $` or $' in the new text is read as a replacement pattern by one of the tools, not the other"
            )
    old = out.get(old_key) if isinstance(old_key, str) else None
    named = reading.competing and reading.table is not None and reading.table.name == target.name
    if isinstance(old, str) and not named and _replaces_all(arguments, out, reading, target) is not True:
        counts = {_COUNTING.get(f or "", "apart") for f in _forms("edit.old", old_key, reading, target)}  # type: ignore[arg-type]
        if "normalized" in counts and len(counts) > 1:
            raise _Unusable(
                "one of the tools counts the old text's occurrences in normalised text (quotes, dashes, trailing "
                "whitespace and compatibility characters folded) and refuses a second found that way, the other "
                "counts the literal"
            )
        if len(counts) > 1 and _overlaps_itself(old):
            raise _Unusable(
                "its old text can overlap itself, and one of the tools counts overlapping occurrences (refusing "
                "it as not unique) where the other edits the first"
            )
    if not isinstance(old_key, str) or not isinstance(new_key, str):
        return
    old, new = out.get(old_key), out.get(new_key)
    if not (isinstance(old, str) and isinstance(new, str)):
        return
    if old.endswith("\n") != new.endswith("\n"):
        keeps = {"final-newline-kept" in (f or "").split("+") for f in _forms("edit.new", new_key, reading, target)}
        if len(keeps) > 1:
            raise _Unusable(
                "one of the tools keeps whether the file ends in a newline, the other writes the replacement as sent"
            )


def _flag(value: Any) -> bool | None:
    """A boolean as the call's schema fitting reads it (``"true"``, ``"false"`` too), else ``None``."""
    if isinstance(value, bool):
        return value
    return {"true": True, "false": False}.get(value) if isinstance(value, str) else None


def _replaces_all(
    arguments: Mapping[str, Any], out: Mapping[str, Any], reading: Reading, target: Target
) -> bool | None:
    """Whether the call replaces every occurrence: its ``edit.all`` as written for the target
    (``"true"`` and another agent's key spelling read as the translation reads them), else as
    sent for the reading's tool, else that tool's default; ``None`` when not known."""
    all_key = target.key_for("edit.all")
    if isinstance(all_key, str) and all_key in out:
        return _flag(out[all_key])
    for key, meaning in reading.listed().items():
        if meaning.what == "edit.all" and key in arguments:
            return _flag(arguments[key])
    known, value = reading.fixed("edit.all")
    return value if known and isinstance(value, bool) else None


def _write_defaults(
    arguments: Mapping[str, Any], out: dict[str, Any], changes: list[ArgChange], reading: Reading, target: Target
) -> None:
    """A count the call leaves to its tool (:data:`_WRITTEN_DEFAULTS`: how many lines a read
    returns) written out for a target whose own default differs or is not recorded: the value the
    reading's tool records, under the target's one key for it, when the target honours it
    (its ``most``). Anything else is left to :func:`_check_effects`, which refuses it."""
    if reading.own or reading.shown:
        return
    for what in _WRITTEN_DEFAULTS:
        key = target.key_for(what)
        if not isinstance(key, str) or key in out:
            continue
        if any(m.what == what for k, m in reading.listed().items() if k in arguments):
            continue  # set, under a key the translation did not place
        known, value = reading.fixed(what)
        if not known or not isinstance(value, int):
            continue
        target_value = _target_defaults(target).get(what)
        if target_value is not None and _same(value, target_value):
            continue
        if any(m.most is not None and value > m.most for m in target.meanings[key]):
            continue
        out[key] = value
        changes.append(ArgChange(op="add_default", key=key, after=value))


def _check_effects(arguments: Mapping[str, Any], out: Mapping[str, Any], reading: Reading, target: Target) -> None:
    """An effect the call leaves to the tool (``edit.all``, a background flag) must be known and
    the same in the reading's tool and the target: the model relied on its tool's default, and an
    effect only one side records is unknown on the other."""
    if reading.own:
        return
    # Only the effects of the operation the target performs (a text editor's edit.all says nothing
    # of a read).
    scope = {what.split(".", 1)[0] for meanings in target.meanings.values() for what in (m.what for m in meanings)}
    target_effects = {w: v for w, v in _target_defaults(target).items() if w.split(".", 1)[0] in scope}
    source_effects = {
        what
        for what in _EFFECTS
        if what.split(".", 1)[0] in scope and reading.fixed(what)[0] and not (reading.shown and what in _SOURCE_SIDE)
    }
    # a count the reading's tool does not record is not compared (its default is not sourced)
    target_effects = {w: v for w, v in target_effects.items() if w not in _SOURCE_SIDE or w in source_effects}
    for what in sorted(source_effects | set(target_effects)):
        if any(m.what == what for k in out for m in target.meanings.get(k, ())):
            continue  # set explicitly
        if any(m.what == what for k, m in reading.listed().items() if k in arguments):
            continue
        known, source_value = reading.fixed(what)
        if what not in target_effects or not known:
            side = reading.label if not known else target.name
            raise _Unusable(f"left out, {what} is not recorded for {side}")
        if not _same(source_value, target_effects[what]):
            raise _Unusable(
                f"left out, {what} is {source_value!r} in {reading.label} and {target_effects[what]!r} in {target.name}"
            )


#: What a shell tool keeps from one call to the next (its table's ``fixed``): ``"none"`` (each
#: call a new process), ``"cwd"`` (the working directory a command leaves), ``"shell"`` (one shell
#: process for every call: directory, variables, options, functions, aliases).
_SESSION = "shell.session"
_MOVED_BY = "shell.moved_by"
_KEEPS = {
    "none": "starts afresh",
    "cwd": "keeps the working directory",
    "shell": "keeps the whole shell",
    None: "may keep it (not recorded)",
}

#: (check, command line) -> what the check found, for the earlier commands of the last
#: conversations (:func:`_checked`), and the characters of the lines it holds.
_CHECKED: OrderedDict[tuple[Callable[[object], str | None], str], str | None] = OrderedDict()
_CHECKED_CHARS = [0]
#: At most this many characters of command lines are kept in ``_CHECKED``.
CHECKED_BUDGET = 1 << 21


def _checked(check: Callable[[object], str | None], line: str) -> str | None:
    """``check(line)``, kept for the lines read last: a request carries its conversation's
    earlier commands every turn, and each command moved in an answer reads them again, so each
    line is read once while it stays among the last :data:`CHECKED_BUDGET` characters."""
    key = (check, line)
    if key in _CHECKED:
        _CHECKED.move_to_end(key)
        return _CHECKED[key]
    found = check(line)
    if len(line) <= CHECKED_BUDGET // 64:
        _CHECKED[key] = found
        _CHECKED_CHARS[0] += len(line)
        while _CHECKED_CHARS[0] > CHECKED_BUDGET:
            (_, gone), _ = _CHECKED.popitem(last=False)
            _CHECKED_CHARS[0] -= len(gone)
    return found


#: What a call's conversation ran before it, for :func:`translate`: a shell tool's name to the
#: arguments of every earlier call of it the client ran (none for a tool it does not declare) (the request's transcript, then the calls
#: before this one in the same answer; an object, or anything else for arguments that cannot be
#: read), or ``None`` when the request does not carry them all (a Responses request that
#: continues a response the upstream kept, or refers to items it does not carry).
Earlier = Callable[[str], "Sequence[Mapping[str, Any]] | None"]


def _check_session(
    arguments: Mapping[str, Any],
    out: Mapping[str, Any],
    placed: Mapping[str, str],
    reading: Reading,
    target: Target,
    earlier: Earlier | None = None,
) -> None:
    """A command moved between shell tools must leave behind only what both keep for the next
    call: ``cd src && make`` moved from a tool that runs each call in a new process into one that
    keeps the working directory would run every later call of the model's somewhere else. Tools
    that keep the same (``_SESSION``) take any command; ``"none"`` and ``"cwd"`` one that changes no
    directory (:func:`~toolvocab.engine.shellwords.changes_directory`); any other pair, or a tool
    whose session is not recorded, one that changes no shell state at all
    (:func:`~toolvocab.engine.shellwords.changes_state`). What is read is what each tool's shell
    runs: the command line as the model sent it and as the target gets it; an argv runs with no
    shell of the tool's (``["zsh", "-c", X]`` runs ``X`` in a zsh of its own), so only a command
    line made of it counts (``["bash", "-lc", "cd src"]`` reaching ``Bash`` as ``cd src``).

    The conversation has a past too: a tool that keeps something runs the command where the
    earlier calls left it, one that starts afresh does not. So with ``earlier`` (:data:`Earlier`)
    the commands the target ran before in this conversation must pass the same check (after a
    ``Bash`` call that ran ``cd src``, an ``exec_command`` moved to ``Bash`` would run in ``src``,
    and a ``Bash`` call moved to OpenCode's ``bash`` would not), and a conversation the request
    does not carry whole (``None``) moves no command between such tools. A working directory an
    earlier call gave a tool that may keep it counts as a change (Hermes' ``terminal``
    ``workdir``), and so does an earlier call of a tool the target's table says moves its
    directory (``shell.moved_by``: Claude Code's ``EnterWorktree``, a subagent)."""
    if reading.own:
        _check_own_argv(arguments, out, placed, target)
        return
    for dst_key, src_key in placed.items():
        if any(m.what == "monitor.command" for m in target.meanings.get(dst_key, ())):
            known, source = reading.fixed(_SESSION)
            if not known or source is None or target.fixed.get(_SESSION) is None:
                # A watch command runs where its tool starts it: Qwen Code's monitor in the
                # project root, Claude Code's Monitor not recorded (perhaps where Bash was left)
                raise _Unusable(
                    f"where {reading.label} and {target.name} start the command is not recorded for both "
                    "(one may start it where an earlier shell call left the directory)"
                )
        if not any(m.what == "shell.command" for m in target.meanings.get(dst_key, ())):
            continue
        known, source = reading.fixed(_SESSION)
        source = source if known else None
        dest = target.fixed.get(_SESSION)
        if source is not None and source == dest:
            continue
        check = changes_directory if {source, dest} <= {"none", "cwd"} else changes_state
        lines = [v for v in (arguments[src_key], out.get(dst_key)) if isinstance(v, str)]
        found = next((f for f in map(check, lines) if f is not None), None)
        if found is None and source != "none":
            # a working directory the model's tool keeps after the call (Hermes' terminal workdir)
            found = _ran(
                [arguments], [(k, "shell.cwd") for k, m in reading.listed().items() if m.what == "shell.cwd"], check
            )
        if found is not None:
            raise _Unusable(
                f"the command may change the shell's state ({found!r}); the next call then "
                f"{_KEEPS[source]} in {reading.label} and {_KEEPS[dest]} in {target.name}"
            )
        if earlier is None:
            continue
        calls = earlier(target.name)
        if calls is None:
            raise _Unusable(
                f"the command would start where the conversation's earlier calls left the shell, which "
                f"{reading.label} and {target.name} keep differently, and those calls are not known (this request "
                "does not carry them, or one before it in this answer went to the client undecided)"
            )
        if not all(isinstance(c, Mapping) for c in calls):
            # arguments a strict reader refuses (a repeated key, a cut-off object, a stray
            # byte): the client's own reader may still have run them
            raise _Unusable(
                f"an earlier {target.name} call in this conversation has arguments that cannot be read, so "
                f"where the command would start in {reading.label} and in {target.name} is not known"
            )
        keys = [k for k, meanings in target.meanings.items() if any(m.what == "shell.command" for m in meanings)]
        cwd_keys = [k for k, meanings in target.meanings.items() if any(m.what == "shell.cwd" for m in meanings)]
        found = _ran(calls, [(k, "shell.command") for k in keys], check)
        if found is None and (dest != "none" or source != "none"):
            found = _ran(calls, [(k, "shell.cwd") for k in cwd_keys], check)
        ran = f"an earlier {target.name} call in this conversation ran {found!r}"
        if found is None and (mover := _moved_by(target.fixed.get(_MOVED_BY), earlier, target.name)) is not None:
            found, ran = mover, f"an earlier {mover} call in this conversation may have moved {target.name}'s directory"
        if found is not None:
            raise _Unusable(
                f"{ran}: the command would start "
                f"where that left the shell in {reading.label} (its next call {_KEEPS[source]}) or in "
                f"{target.name} (its next call {_KEEPS[dest]}), not in both"
            )


def _check_own_argv(
    arguments: Mapping[str, Any], out: Mapping[str, Any], placed: Mapping[str, str], target: Target
) -> None:
    """An argv given for the target's own command (a call that names the target) runs as a
    process of its own: ``["bash", "-lc", "cd src && make"]`` changes the directory of a child
    shell, which ends with it. Written as the target's command line it runs in the target's
    shell, which may keep what the command changes (Claude Code's ``Bash`` keeps the working
    directory): then the line must change nothing the target keeps, as a command moved from a
    tool that starts afresh must (:func:`_check_session`). Where the conversation's earlier calls
    left the shell is the target's either way: the call is the target's."""
    dest = target.fixed.get(_SESSION)
    check = changes_directory if dest == "cwd" else changes_state
    for dst_key, src_key in placed.items():
        meanings = [m for m in target.meanings.get(dst_key, ()) if m.what == "shell.command"]
        argv, line = arguments.get(src_key), out.get(dst_key)
        if not meanings or not isinstance(argv, list) or any(m.form == "argv" for m in meanings):
            continue
        if not isinstance(line, str):
            # under another key of the target's (``cmd`` for ``command``), joined later
            try:
                line = argv_to_command(argv)
            except (TypeError, ValueError):
                continue  # no command line: the client reports the argv
        for meaning in meanings:
            _check_unwrapped_line(line, meaning)
        if dest == "none":
            continue
        found = check(line)
        if found is not None:
            raise _Unusable(
                f"the argv runs as a process of its own, so what its command changes ({found!r}) ends with it; "
                f"as {target.name}'s command line, the next call {_KEEPS[dest]} in {target.name}"
            )


_BASE = "path.base"
#: Operands a tool reads as "here" when the call leaves them out: a search or a listing of the
#: directory it resolves relative paths against (OpenCode's glob, Claude Code's Grep).
_HERE = frozenset({"glob.path", "grep.path", "list.path"})
#: A path from a root (``~`` is :func:`convert`'s): on POSIX ``/``; on Windows also ``\\``, a
#: drive (``C:\\``) or a share (Node's path.win32.isAbsolute; ``C:\\x`` is relative on POSIX).
_ROOTED = re.compile(r"[/~]")
_ROOTED_WINDOWS = re.compile(r"[/\\~]|[A-Za-z]:[/\\]")
_BASES = {
    "start": "against the directory the agent started in",
    "cwd": "against the directory its shell was left in",
    "absolute": "not at all (a relative path is refused)",
    None: "against a directory not recorded",
}


def _floating(value: Any, posix: bool = True) -> bool:
    """A path a tool resolves against a directory of its own: a string not from a root (or
    empty, or null: "here" for a tool that defaults the key)."""
    if isinstance(value, list):  # a list of paths (or one a repair unwraps to its path)
        return any(_floating(v, posix) for v in value)
    rooted = _ROOTED if posix else _ROOTED_WINDOWS
    return value is None or (isinstance(value, str) and not rooted.match(value))


@lru_cache(maxsize=64)
def _shells_of(clients: frozenset[str]) -> tuple[str, ...]:
    """The names of the shell tools (POSIX or PowerShell) of the agents spelled ``clients``."""
    return tuple(
        sorted(
            {
                t.name
                for t in TABLES
                if t.clients in clients
                and any(m.what in ("shell.command", "powershell.command") for m in t.args.values())
            }
        )
    )


def _check_base(
    out: Mapping[str, Any],
    placed: Mapping[str, str],
    reading: Reading,
    target: Target,
    earlier: Earlier | None = None,
    posix: bool = True,
) -> None:
    """A relative path must name the same file in the target as in the model's tool. Tools
    resolve one against different directories (``fixed["path.base"]``): where the agent started
    (OpenCode, Gemini CLI), where its shell was left (Claude Code's Read after a ``Bash`` that
    ran ``cd sub`` reads ``sub/f.txt``), or nowhere (Qwen Code's read_file refuses it). So a path
    not from a root — or a search or listing with no directory, which means "here" — moves only
    between two tools that find it from where the agent started, or between that and a kept
    directory while no shell tool of the target's agent has run a directory change in this
    conversation (``earlier``; ``None``: not asked). A tool whose base is not recorded moves none."""
    if reading.table is not None and target.tables == (reading.table,):
        return  # the target itself
    if reading.own:
        # The target's name: only a key spelled as another version of it spells it (Gemini CLI
        # v0.10's absolute_path for 0.61's file_path) is read as that version's.
        placed = {dst: src for dst, src in placed.items() if dst != src}
        versions = {t.fixed.get(_BASE) for t in target.tables if any(src in t.args for src in placed.values())}
        if not versions:
            return  # a key no version lists: another agent's, which its own reading judges
        known, source = len(versions) == 1, (versions.pop() if len(versions) == 1 else None)
    else:
        known, source = reading.fixed(_BASE)
    given = {k: out[k] for k in placed if any(_is_path(m.what) for m in target.meanings.get(k, ()))}
    floating = [v for v in given.values() if _floating(v, posix)]
    here = [] if reading.own else [k for k, ms in target.meanings.items() if any(m.what in _HERE for m in ms)]
    here += [] if reading.own else [k for k, m in reading.listed().items() if m.what in _HERE]
    if here and not any(k in given and not _floating(given[k], posix) for k in here):
        floating.append(None)  # the tool searches or lists "here"
    if not floating:
        return
    source = source if known else None
    dest = _target_base(target)
    if dest == "absolute" or source == dest == "start":
        return  # the target refuses a relative path (the model reads why), or finds it as meant
    shown = next((v for v in floating if v is not None), "no directory (here)")
    if source not in ("start", "cwd") or dest not in ("start", "cwd"):
        raise _Unusable(
            f"{shown!r} is resolved {_BASES[source]} in {reading.label} and {_BASES[dest]} in {target.name}"
        )
    if earlier is None:
        return
    clients = frozenset(t.clients for t in target.tables)
    for shell in _shells_of(clients):
        calls = earlier(shell)
        if calls is None or not all(isinstance(c, Mapping) for c in calls):
            raise _Unusable(
                f"{shown!r} is resolved where the agent's shell was left in one of {reading.label} and "
                f"{target.name} and where it started in the other, and the earlier {shell} calls of this "
                f"conversation are not all known"
            )
        keys = _command_keys(shell, clients)
        kept = _session_of(shell, clients) != "none"  # a working directory given outlasts the call
        found = _ran(calls, [k for k in keys if k[1] != "shell.cwd" or kept], changes_directory)
        what = f"an earlier {shell} call in this conversation ran {found!r}"
        if found is None and (mover := _moved_by(_moved_by_of(shell, clients), earlier, shell)) is not None:
            found, what = mover, f"an earlier {mover} call in this conversation may have moved {shell}'s directory"
        if found is not None:
            raise _Unusable(
                f"{what}: {shown!r} would be resolved where that left the shell in one of {reading.label} "
                f"and {target.name} and where the agent started in the other"
            )


def _ran(
    calls: Sequence[Mapping[str, Any]], keys: Sequence[tuple[str, str]], check: Callable[[object], str | None]
) -> str | None:
    """What in the earlier ``calls`` (readable arguments) may have moved the shell's directory
    (``check`` of a command line; any PowerShell command; a working directory given, which a tool
    that keeps its directory keeps: Hermes' terminal starts the next call where ``workdir`` took
    it); ``None`` when nothing did. ``keys``: ``(key, meaning)`` of the command and directory keys."""
    for call in calls:
        for key, what in keys:
            value = call.get(key)
            if value is None:
                continue
            if what == "powershell.command":
                return str(value)  # not read: any PowerShell command may move it
            if what == "shell.cwd":
                if value != "":
                    return f"{key}: {value!r}"
                continue
            found = _checked(check, value) if isinstance(value, str) else check(value)
            if found is not None:
                return found
    return None


def _moved_by(names: Any, earlier: Earlier | None, shell: str) -> str | None:
    """The name of the first tool of ``names`` (the shell's ``shell.moved_by``: tools whose
    calls move ``shell``'s directory) with an earlier call; raises :class:`_Unusable` when
    those calls are not known."""
    for name in names or ():
        calls = earlier(name) if earlier is not None else []
        if calls is None:
            raise _Unusable(f"whether an earlier {name} call moved {shell}'s directory is not known")
        if calls:
            return str(name)
    return None


def _target_base(target: Target) -> str | None:
    """Where the target finds a relative path: its tables' ``path.base`` when they agree, a
    table that refuses one (``"absolute"``, Gemini CLI before 0.11) agreeing with any other (the
    call is then refused or found there); ``None`` when one is not recorded or two differ."""
    bases = {t.fixed.get(_BASE) for t in target.tables} or {None}
    found = bases - {"absolute"} or {"absolute"}
    return found.pop() if len(found) == 1 else None


def _rows(shell: str, clients: frozenset[str]) -> list[ArgTable]:
    """The tables of the tools spelled ``shell`` of the agents ``clients`` (all such tables when
    none is theirs)."""
    tables = tables_named(shell)
    return [t for t in tables if t.clients in clients] or list(tables)


@lru_cache(maxsize=64)
def _command_keys(shell: str, clients: frozenset[str]) -> tuple[tuple[str, str], ...]:
    """``(key, meaning)`` of the command and working-directory keys of ``shell`` (:func:`_rows`)."""
    return tuple(
        sorted(
            {
                (k, m.what)
                for t in _rows(shell, clients)
                for k, m in t.args.items()
                if m.what in ("shell.command", "powershell.command", "shell.cwd")
            }
        )
    )


def _session_of(shell: str, clients: frozenset[str]) -> Any:
    """What ``shell`` (:func:`_rows`) keeps between calls when its tables record it alike, else ``None``."""
    sessions = {t.fixed.get(_SESSION) for t in _rows(shell, clients)}
    return sessions.pop() if len(sessions) == 1 else None


def _moved_by_of(shell: str, clients: frozenset[str]) -> tuple[str, ...]:
    """Every tool a table of ``shell`` (:func:`_rows`) says moves its directory (``shell.moved_by``)."""
    return tuple(sorted({n for t in _rows(shell, clients) for n in t.fixed.get(_MOVED_BY, ())}))


#: The tools whose calls move a shell's kept directory, of every table (:attr:`ArgTable.fixed`
#: ``shell.moved_by``): the earlier calls a flow keeps beside its shells'.
DIRECTORY_MOVERS: frozenset[str] = frozenset(n for t in TABLES for n in t.fixed.get("shell.moved_by", ()))


#: Effects a tool has when the call leaves them out, recorded per tool (a key's ``default`` or the
#: table's ``fixed``): compared between the reading and the target. ``glob.ignores`` and
#: ``glob.hidden``: which files a glob search skips (ignore files, dotfiles); ``read.limit``: how
#: many lines a read without one returns (Crush's view 200, Qwen Code's read_file 1000, Claude
#: Code's Read 2000).
_EFFECTS = frozenset(
    {
        "edit.all",
        "read.limit",
        "shell.background",
        "subagent.background",
        "grep.ignore_case",
        "grep.skips",
        "list.ignores",
        "powershell.background",
        "glob.ignores",
        "glob.hidden",
    }
)


#: Effects compared only where the reading's tool records one (a read's line count is sourced for
#: some tools: :data:`toolvocab.engine.semantics.TABLES`); then the target must record the same,
#: or :func:`_write_defaults` writes it out.
_SOURCE_SIDE = frozenset({"read.limit"})
#: Counts a call may leave to its tool that are written out for a target whose own differs.
_WRITTEN_DEFAULTS = ("read.limit",)


def _target_defaults(target: Target) -> dict[str, Any]:
    out = {what: v for what, v in target.fixed.items() if what in _EFFECTS}
    for meanings in target.meanings.values():
        if len(meanings) == 1 and meanings[0].default is not None and meanings[0].what in _EFFECTS:
            out.setdefault(meanings[0].what, meanings[0].default)
    return out


def translate(
    arguments: Mapping[str, Any],
    readings: Sequence[Reading],
    target: Target,
    *,
    consumed: frozenset[str] = frozenset(),
    posix: bool = True,
    earlier: Earlier | None = None,
) -> Translation:
    """Translate ``arguments`` under each of ``readings`` into ``target``'s keys.

    Returns the common result when every applicable reading gives the same arguments (and at
    least one applies); else a :class:`Translation` whose ``arguments`` is ``None`` and whose
    ``reason`` names the key that could not be placed. ``consumed`` keys (a text editor's
    ``command`` once it chose the operation) are dropped unless the target declares them.
    Annotation keys stay as they are (the caller decides whether one may be dropped). ``posix``
    False: the agent runs on Windows (no command line changes form or tool). ``earlier``
    (:data:`Earlier`): what the conversation ran before the call, for a command moved into a tool
    that keeps state between calls; ``None``: not asked (no such check).
    """
    results: list[tuple[Reading, dict[str, Any], list[ArgChange]]] = []
    unusable: list[tuple[Reading, _Unusable]] = []
    escaped = any(not r.own for r in readings) and _has_escape(arguments)  # read once, not per reading
    for reading in readings:
        try:
            out, changes = _read(arguments, reading, target, consumed, posix, earlier, escaped)
        except _NotThisTool as exc:
            # The target's own reading is never set aside: the call names the target.
            unusable.append((reading, _Unusable(str(exc), applicable=reading.own)))
            continue
        except _Unusable as exc:
            # kept without its traceback, which holds this frame and its callers' (a cycle)
            unusable.append((reading, exc.with_traceback(None)))
            continue
        results.append((reading, out, changes))
    blocking = [(r, e) for r, e in unusable if e.applicable]
    if blocking:
        reading, exc = blocking[0]
        return Translation(None, reason=f"read as {reading.label}, {exc.reason}", readings=len(readings))
    if not results:
        reason = unusable[0][1].reason if unusable else "no reading of the call applies"
        return Translation(None, reason=reason, readings=len(readings))
    results = _fill_written_defaults(results, target)
    first_reading, first, changes = results[0]
    for reading, out, _ in results[1:]:
        if not _equal(out, first):
            differing = sorted(k for k in set(out) | set(first) if out.get(k) != first.get(k))
            return Translation(
                None,
                reason=f"it reads differently as {first_reading.label} and as {reading.label} ({', '.join(map(repr, differing))})",
                readings=len(readings),
            )
    return Translation(first, changes, readings=len(readings))


def _fill_written_defaults(
    results: list[tuple[Reading, dict[str, Any], list[ArgChange]]], target: Target
) -> list[tuple[Reading, dict[str, Any], list[ArgChange]]]:
    """``results`` with a count one reading wrote out (:func:`_write_defaults`) given too to each
    reading whose tool records no such count (not compared: :data:`_SOURCE_SIDE`), which left
    the key out; a reading that records one and left it out keeps its own (the target's)."""
    written: dict[str, Any] = {}
    for _, _, changes in results:
        for change in changes:
            if change.op == "add_default":
                written.setdefault(change.key, change.after)
    if not written:
        return results
    filled = []
    for reading, out, changes in results:
        missing = {
            key: value
            for key, value in written.items()
            if key not in out
            and not any(
                reading.fixed(m.what)[0] and not reading.shown
                for m in target.meanings.get(key, ())
                if m.what in _SOURCE_SIDE
            )
        }
        if missing:
            out = {**out, **missing}
            changes = [*changes, *(ArgChange(op="add_default", key=k, after=v) for k, v in missing.items())]
        filled.append((reading, out, changes))
    return filled


def readings_of(name: str, capability: str | None = None, command: str | None = None) -> list[Reading]:
    """One :class:`Reading` per vocabulary row of the answered ``name`` (``capability`` overrides
    the rows' own, for a text editor dispatched on ``command``)."""
    out: list[Reading] = []
    for entry, table in tables_for_answer(name):
        label = (
            f"{entry.clients} {table.version}'s {entry.name}"
            if table is not None
            else f"{entry.clients}'s {entry.name}"
        )
        out.append(Reading(label=label, table=table, capability=capability or entry.capability, command=command))
    return out


def own_reading(name: str, capability: str | None) -> Reading:
    """The target itself, spelled ``name``."""
    return Reading(label=name, table=None, capability=capability, own=True)
