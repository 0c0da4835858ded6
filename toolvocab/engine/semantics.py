"""What each known tool's arguments mean: the sourced table a translation is checked against.

The vocabulary (:mod:`toolvocab.engine.vocabulary`) says which tools are substitutes by *name*.
This table says what every argument of those tools *means*: which operand it is (the command to
run, the line to start reading at), in which unit (seconds are not milliseconds), from which base
(a 1-based line is not a 0-based one), in which form (a command line for bash is not one for the
user's zsh; a fuzzy-matched edit is not an exact one), and the largest value the tool honours as
given. A call is only ever rewritten when every argument has a counterpart of the same meaning in
the target (:mod:`toolvocab.engine.translate`); a key this table cannot source is unknown, and
unknown blocks the change.

One :class:`ArgTable` per vocabulary row (same ``name`` and ``clients``). Each names the version
and the file or bundle it was read from. Meanings are ``<capability>.<operand>`` strings; two
tools' keys mean the same only when their :class:`Meaning` objects agree, or differ by a
conversion :func:`toolvocab.engine.translate.convert` lists (s ↔ ms, 1- ↔ 0-based).

How each client treats a key it does not declare is recorded too (``unknown_keys``): Claude Code
rejects one on most tools, Qwen Code and Gemini CLI pass it to a handler that ignores it,
OpenCode's decoder strips it (the research behind each row; ``tests/e2e`` checks the five agents).
The translation never relies on it: a key the target does not declare blocks every change.

What a shell tool keeps from one call to the next is ``fixed["shell.session"]``: ``"none"`` (each
call a new process), ``"cwd"`` (the working directory carries over: Claude Code's Bash), ``"shell"``
(one shell process for every call: trae-agent's bash). A row without it is unknown, and a command
that may change any shell state is then never moved to or from that tool.
``fixed["shell.moved_by"]``: the agent's other tools whose calls move the directory such a shell
keeps (Claude Code's ``EnterWorktree``); a call of one counts as a directory change.

Where a tool finds a relative path (and, for a search or a listing, the directory an absent
``path`` means) is ``fixed["path.base"]``: ``"start"`` (the directory the agent started in, or its
project root, which no tool call moves), ``"cwd"`` (the working directory the agent's own shell
tool keeps, so an earlier ``cd`` moves it: Claude Code's file tools after its ``Bash``, Hermes'
after its ``terminal``), ``"absolute"`` (a relative path is refused). A row without it is unknown,
and a relative path never moves to or from that tool.

Adding a row: read the tool's schema *and* its handler at a pinned version; write each key's
operand, unit, base, form and limit, with the file it came from; a key you cannot source stays
out (unknown). ``tests/unit/test_semantics.py`` checks every row against the vocabulary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any


@dataclass(frozen=True, slots=True)
class Meaning:
    """What one argument of one tool means.

    ``what``: the operand, ``<capability>.<operand>`` (``"shell.timeout"``). ``unit``: ``"ms"`` or
    ``"s"`` for durations, else ``None``. ``base``: 0 or 1 for a line or entry number, else
    ``None``. ``form``: how the value is read where tools differ — for ``shell.command`` the shell
    that runs a string (``"bash"``: ``bash -c``; ``"user"``: the user's login shell, bash or zsh or
    sh; ``"argv"``: an array executed directly, no shell); for patterns their flavour
    (``"rg"`` ripgrep's Rust regex, case-sensitive; ``"rg-i"`` the same, case-insensitive); for an
    edit's old text how it is matched (``"exact"``; ``"exact-tabs"``, the literal with tabs expanded
    in it and in the file, the text editor's; ``"normalized"``, Qwen Code's;
    ``"normalized-whitespace"``, Crush's; ``"fuzzy-<tool>"``: no two loose matchers are the same);
    for list-valued operands the item shape. ``most``: the largest value the tool honours as given,
    in ``unit`` (a larger one is clamped or refused). ``default``: the value the tool uses when
    the key is absent, recorded only where it selects an effect (``edit.all``, background flags)
    or what is read (``read.limit``'s line count).
    ``respells``: literal ``(from, to)`` replacements the client makes in the value before the
    tool runs it (Claude Code's Bash: two backslashes and a semicolon become one and one).
    ``unwraps``: the client takes a leading shell wrapper off a command before running the rest
    in its own shell (Gemini CLI's stripShellWrapper, 0.1.14 on: ``sh -c``, ``bash -c``, ``zsh -c``,
    a path to one of them, ``cmd.exe /c``, ``powershell``/``pwsh -Command``, and the quotes around
    what follows). ``rewrites``: regular expressions (Python ``re``) of command text the client
    reads otherwise than its shell would, rewriting it before the shell runs (Claude Code's Bash:
    a redirection to ``nul`` becomes one to ``/dev/null``) or handling it itself (Codex: an
    ``apply_patch`` command is applied, not run).

    Forms of written text (``write.content``, ``edit.new``): ``None`` written as given;
    ``"trimmed-lines"`` each line's trailing whitespace stripped first (and, for an edit, an empty
    replacement takes the line's newline too); ``"newline-on-empty"`` (an edit's) written as given,
    but an empty replacement takes the line's newline too; ``"eol-of-file"`` written with the line
    endings of the file it replaces (CRLF in a CRLF file; each such tool decides a file that mixes
    them its own way — OpenCode, Qwen Code, Gemini CLI and Crush by any CRLF, Claude Code by most
    of the first 4096 characters, pi by the first break — and some rewrite its other lines too:
    that is the client's handling of the file, as a formatter would be, not the call's text (Claude
    Code writes a CRLF file whose first 4096 characters hold no line break with LF, whatever the
    call); a carriage return in the text is kept by some and normalized by others, so it never
    moves); ``"final-newline-kept"`` (Gemini CLI 0.61's replace) the file keeps whether it ends in
    a newline, whatever the replacement;
    ``"escapes-corrected"`` a backslash before ``n``, ``t``, ``r``, a quote, a backtick, a
    backslash or a line break may be read as an escape, or the text rewritten by an LLM (Gemini
    CLI's editCorrector); several joined by ``+``. Of an edit's old text, ``"exact-quotes"``: the
    literal, else the literal with curly quotes read as straight ones, backslash-u escapes read as
    their characters, sanitized tags read whole.
    """

    what: str
    unit: str | None = None
    base: int | None = None
    form: str | None = None
    most: float | None = None
    default: Any = None
    respells: tuple[tuple[str, str], ...] = ()
    unwraps: bool = False
    rewrites: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class ArgTable:
    """The arguments of one vocabulary row: ``name`` and ``clients`` as in the vocabulary;
    ``client`` as :func:`toolvocab.engine.clients.identify_client` names the agent (``None`` for
    agents it does not identify); ``version`` and ``source`` say where each fact was read.

    ``args`` maps each sourced key to its :class:`Meaning`. ``by_command`` (text-editor tools)
    maps a ``command`` value to the keys' meanings for that command; the ``command`` key itself
    then only selects the operation. ``fixed`` gives effects the tool has without a key
    (``{"edit.all": False}``: every edit must match once). ``unknown_keys``: how the client treats
    a key it does not declare — ``"rejected"``, ``"ignored"`` (stripped or never read), or
    ``"mixed"`` (see ``source``). ``unescapes``: the client turns every backslash-u escape in
    every string of the input into its character before the tool runs (Claude Code 2.1.197: its
    bundled JS decodes the parsed tool_use input whole, before normalizeToolInput), so a string
    holding one means another text there than in a tool that takes it as written.
    """

    name: str
    clients: str
    client: str | None
    version: str
    source: str
    args: Mapping[str, Meaning] = field(default_factory=dict)
    by_command: Mapping[str, Mapping[str, Meaning]] = field(default_factory=dict)
    fixed: Mapping[str, Any] = field(default_factory=dict)
    unknown_keys: str = "ignored"
    unescapes: bool = False


def m(
    what: str,
    unit: str | None = None,
    base: int | None = None,
    form: str | None = None,
    most: float | None = None,
    default: Any = None,
    respells: tuple[tuple[str, str], ...] = (),
    unwraps: bool = False,
    rewrites: tuple[str, ...] = (),
) -> Meaning:
    """Shorthand for :class:`Meaning`."""
    return Meaning(
        what=what,
        unit=unit,
        base=base,
        form=form,
        most=most,
        default=default,
        respells=respells,
        unwraps=unwraps,
        rewrites=rewrites,
    )


# --- who (as the vocabulary spells them) and how the agents are identified ------------------------
_CC, _CC_ID = "Claude Code", "Claude Code"
_CODEX, _CODEX_ID = "Codex CLI", "Codex"
_CODEX_GUIDE = "OpenAI Codex prompting guide"
_OC, _OC_ID = "OpenCode", "OpenCode"
_QWEN, _QWEN_ID = "Qwen Code", "Qwen Code"
_GEM, _GEM_ID = "Gemini CLI", "Gemini CLI"
_CLINE = "Cline"
_OPENCLAW = "OpenClaw"
_HERMES = "Hermes Agent"
_TRAE = "trae-agent"
_PI = "pi"
_CRUSH = "Crush"
_ROO = "Roo Code"
_ANTHROPIC = "Anthropic text editor tool"

# --- where -----------------------------------------------------------------------------------------
_CC_SRC = "@anthropic-ai/claude-code 2.1.197 (bin/claude.exe's bundled JS: each tool's zod input schema and call)"
_CODEX_SRC = "openai/codex codex-rs/core/src/tools/handlers/ (argument structs, serde without deny_unknown_fields); the 0.171.0 binary's tool specs"
_QWEN_SRC = "@qwen-code/qwen-code 0.15.10 (cli.js: packages/core/src/tools/*, SchemaValidator)"
_GEM_SRC = "@google/gemini-cli 0.61.0 bundle; google-gemini/gemini-cli packages/core/src/tools/*.ts"
_GEM_OLD_SRC = "google-gemini/gemini-cli v0.1.9 (34935d6) .. v0.10.0 packages/core/src/tools/{read-file,ls,grep,shell,edit,write-file,glob}.ts"
_OC_SRC = "opencode-ai 1.18.33 binary (packages/opencode/src/tool/*.ts, Effect Schema decode)"
_PI_SRC = "badlogic/pi-mono v0.58.3 packages/coding-agent/src/core/tools/*.ts"
_CRUSH_SRC = "charmbracelet/crush v0.90.0 internal/agent/tools/view.go (ViewParams; readTextFile skips offset lines)"
_CRUSH_TOOLS = "charmbracelet/crush v0.90.0 internal/agent/tools/{bash,edit,edit_whitespace,write,grep,rg,glob,ls,fetch,fetch_types}.go"
_TRAE_SRC = "bytedance/trae-agent e839e55 trae_agent/tools/ (bash_tool.py, edit_tool.py)"
_HERMES_SRC = "hermes-agent 0.19.0 wheel: tools/terminal_tool.py, tools/file_tools.py"
_OPENCLAW_SRC = "openclaw 2026.9.6 (npm, commit eb377ac5): the exec, read, write and edit agent tools"
_CLINE_SRC = "cline/cline v3.89.2 src/core/prompts (tool specs) and src/core/task (handlers)"
_ROO_SRC = (
    "RooCodeInc/Roo-Code v3.52.1 src/core/prompts/tools/native-tools/*.ts (schemas), src/core/tools/*Tool.ts (handlers), "
    "src/core/assistant-message/NativeToolCallParser.ts (only known keys are read), src/services/ripgrep/index.ts"
)
_ANTHROPIC_SRC = (
    "platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool (text_editor_20250124/20250728)"
)


# --- shared meanings -------------------------------------------------------------------------------
#: Claude Code 2.1.197's Bash: a redirection to the Windows null device it writes as one to
#: /dev/null (its pattern: ``/(\d?&?>+[ \t]*)[Nn][Uu][Ll](?=\s|$|[|&;)\n])/g``; here with
#: JavaScript's U+FEFF in ``\s``).
_TO_NUL = r"(\d?&?>+[ \t]*)[Nn][Uu][Ll](?=[\s\ufeff]|$|[|&;)\n])"
#: Claude Code 2.1.197's Bash (normalizeToolInput): ``command.replace(`cd ${cwd} && `, "")``, the
#: first such text anywhere in the command taken out, inside a word (``etcd /repo && make``) or a
#: quoted argument too. Its working directory is not known here, only that it is absolute (the
#: process's: ``/…``; on Windows ``C:\\…``, a UNC ``\\\\…``, and the POSIX spelling of either it
#: also cuts, ``/c/…``), so any ``cd `` followed by such a path and, later, `` && `` is text it may
#: cut (a directory's name may hold anything, spaces and `` && `` too).
_CD_CWD = r"cd (?:/|\\\\|[A-Za-z]:)(?s:.*?) && "
#: Codex: a command that calls apply_patch (or applypatch) is parsed and applied by Codex itself
#: (codex-rs/core/src/tools/handlers: intercept_apply_patch, before any process starts), and its
#: shell finds an apply_patch alias of Codex on PATH (codex-rs/arg0: a symlink prepended to PATH),
#: so any word that runs as apply_patch applies a patch: the name (also with quotes or
#: backslashes in it: translate._check_rewritten reads the word without them), or a patch in the
#: command's text (``*** Begin Patch``, which a name spelled by an expansion would be given). A
#: name built at run time that reads a patch from a file is not seen.
_APPLY_PATCH = r"(?<![\w.-])apply_?patch(?![\w.-])|\*\*\* Begin Patch"


def _own(tool: str, key: str) -> Meaning:
    """A meaning no other tool shares (Codex's ``yield_time_ms`` is not a kill timeout)."""
    return m(f"{tool}.{key}")


_BG_FALSE = m("shell.background", default=False)
_EDIT_ALL = m("edit.all", default=False)


def _t(
    name: str, clients: str, client: str | None, version: str, source: str, unknown_keys: str = "ignored", **kw: Any
) -> ArgTable:
    return ArgTable(
        name=name,
        clients=clients,
        client=client,
        version=version,
        source=source,
        unknown_keys=unknown_keys,
        unescapes=clients in _UNESCAPING,
        **kw,
    )


#: Agents whose client decodes backslash-u escapes in every string of a tool's input
#: (:attr:`ArgTable.unescapes`): Claude Code 2.1.197, whose bundled JS walks the parsed input of
#: each tool_use and replaces each escape not itself escaped with its character.
_UNESCAPING = frozenset({_CC})


#: The text editor's commands. str_replace and insert expand tabs (Python's ``expandtabs``, to
#: columns of 8) in the file, the old text and the new one before matching and writing (trae-agent
#: e839e55 edit_tool.py; Anthropic's reference, anthropics/anthropic-quickstarts
#: computer-use-demo/computer_use_demo/tools/edit.py): a text holding a tab is matched and written
#: otherwise than elsewhere. It reads the file with universal newlines, so an old text holding a
#: carriage return matches nothing there.
_TEXT_EDITOR = {
    "view": {"path": m("read.path"), "view_range": m("read.view_range", base=1)},
    "str_replace": {
        "path": m("edit.path"),
        "old_str": m("edit.old", form="exact-tabs"),
        "new_str": m("edit.new", form="tabs-expanded"),
    },
    "create": {"path": m("create.path"), "file_text": m("create.content")},
    "insert": {
        "path": m("insert.path"),
        "insert_line": m("insert.after_line", base=0),
        "new_str": m("insert.text", form="tabs-expanded"),
    },
}

_ROWS: tuple[ArgTable, ...] = (
    # --- Claude Code 2.1.197 ------------------------------------------------------------------------
    # Bash runs its command in the user's shell (CLAUDE_CODE_SHELL, $SHELL, then zsh or bash), with
    # -c; timeout in ms, default 120000, silently clamped to 600000. Its description: "The working
    # directory persists between commands, but shell state does not." Other calls move that
    # directory too (shell.moved_by): EnterWorktree switches into a worktree, ExitWorktree out of
    # it (sdk-tools.d.ts). Not a subagent (Agent, Task): that the main session's Bash is sometimes
    # left where a subagent's was is a reported fault (anthropics/claude-code#45816), not the
    # tool's behaviour, and counting it would leave every later repair of a session that used one.
    _t(
        "Bash",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            # normalizeToolInput (the bundled JS) replaces every \\; in the command with \;, and
            # the first `cd <its working directory> && ` with nothing, wherever it is (_CD_CWD);
            # the bash provider's buildExecCommand turns a redirection to nul (`>nul`, `2>NUL`,
            # `&>nul`) into one to /dev/null in a command holding no <, $ or backtick
            "command": m("shell.command", form="user", respells=(("\\\\;", "\\;"),), rewrites=(_TO_NUL, _CD_CWD)),
            # at the timeout a command its parser reads as simple and not starting with sleep
            # goes on in the background (shouldAutoBackground), others are killed; the other
            # shell tools' timeouts kill
            "timeout": m("shell.timeout", unit="ms", most=600000, form="background-at-limit"),
            "run_in_background": _BG_FALSE,
            "dangerouslyDisableSandbox": _own("claude.bash", "dangerouslyDisableSandbox"),
        },
        fixed={
            "shell.session": "cwd",
            "shell.moved_by": ("EnterWorktree", "ExitWorktree"),
        },
    ),
    _t(
        "PowerShell",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            "command": m("powershell.command"),
            "timeout": m("powershell.timeout", unit="ms", most=600000),
            "run_in_background": m("powershell.background", default=False),
            "dangerouslyDisableSandbox": _own("claude.powershell", "dangerouslyDisableSandbox"),
        },
    ),
    # Read: offset a 1-based line number (0 read as 1), limit a count of lines (left out: 2000,
    # the bundle's "reads up to ${n} lines starting from the beginning of the file", n = 2000),
    # pages a PDF range.
    _t(
        "Read",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            "file_path": m("read.path"),
            "offset": m("read.offset", base=1),
            "limit": m("read.limit", default=2000),
            "pages": m("read.pages", base=1),
        },
    ),
    _t(
        "Write",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={"file_path": m("write.path"), "content": m("write.content", form="trimmed-lines")},
    ),
    # Edit: old_string matched exactly once unless replace_all: the literal, else with curly
    # quotes read as straight ones, \uXXXX escapes and non-ASCII spelled either way, sanitized tags
    # (<fnr>, <n>…) read whole (findActualString, desanitize), and new_string then written the same
    # way (preserveQuoteStyle: its straight quotes made curly; escapes and tags likewise: such an
    # old text never moves into it, translate._matching_allows). normalizeToolInput strips each line's trailing
    # whitespace from Write's content and Edit's new_string (not in a .md/.mdx file), and an empty
    # new_string also takes the line's newline when the file has one after old_string. The file is
    # written back with CRLF throughout when most line breaks of its first 4096 characters are CRLF
    # (readFileSyncWithMetadata, writeTextContent), with LF throughout otherwise.
    _t(
        "Edit",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            "file_path": m("edit.path"),
            "old_string": m("edit.old", form="exact-quotes"),
            "new_string": m("edit.new", form="eol-of-file+trimmed-lines"),
            "replace_all": _EDIT_ALL,
        },
    ),
    _t(
        "NotebookEdit",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            "notebook_path": m("notebook.path"),
            "cell_id": m("notebook.cell_id"),
            "new_source": m("notebook.source"),
            "cell_type": m("notebook.cell_type"),
            "edit_mode": m("notebook.edit_mode"),
        },
    ),
    # Glob and Grep use ripgrep: rg --files --glob, and rg's Rust regex (case-sensitive; -i).
    # Glob adds --no-ignore and --hidden (unless CLAUDE_CODE_GLOB_NO_IGNORE / _HIDDEN is false): it
    # lists gitignored files and dotfiles ("Glob does not respect .gitignore by default ... This
    # differs from Grep", https://code.claude.com/docs/en/tools-reference); an absolute pattern is
    # split into the directory searched and the rest. No other glob tool records what it skips.
    _t(
        "Glob",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={"pattern": m("glob.pattern", form="rg-glob"), "path": m("glob.path")},
        fixed={"glob.ignores": "none", "glob.hidden": True},
    ),
    _t(
        "Grep",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            # glob is split on whitespace and commas into several --glob arguments
            "pattern": m("grep.pattern", form="rg"),
            "path": m("grep.path"),
            "glob": m("grep.include", form="rg-glob-list"),
            "output_mode": _own("claude.grep", "output_mode"),
            "-A": _own("claude.grep", "-A"),
            "-B": _own("claude.grep", "-B"),
            "-C": _own("claude.grep", "-C"),
            "context": _own("claude.grep", "context"),
            "-n": _own("claude.grep", "-n"),
            "-i": m("grep.ignore_case", default=False),
            "-o": _own("claude.grep", "-o"),
            "type": _own("claude.grep", "type"),
            "head_limit": _own("claude.grep", "head_limit"),
            "offset": _own("claude.grep", "offset"),
            "multiline": _own("claude.grep", "multiline"),
        },
        # it runs rg --hidden with --glob !<dir> for each of these (its Grep call: [".git",".svn",
        # ".hg",".bzr",".jj",".sl"]): every other version control's metadata is searched elsewhere
        fixed={"grep.skips": (".bzr", ".git", ".hg", ".jj", ".sl", ".svn")},
    ),
    _t(
        "WebFetch",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={"url": m("web_fetch.url"), "prompt": m("web_fetch.prompt")},
    ),
    _t(
        "WebSearch",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            "query": m("web_search.query"),
            "allowed_domains": _own("claude.websearch", "allowed_domains"),
            "blocked_domains": _own("claude.websearch", "blocked_domains"),
        },
    ),
    # Agent (old name Task) is a plain zod object: unknown keys are stripped, not rejected.
    *(
        _t(
            name,
            _CC,
            _CC_ID,
            "2.1.197",
            _CC_SRC,
            "ignored",
            args={
                "prompt": m("subagent.prompt"),
                "subagent_type": m("subagent.type"),
                "model": _own("claude.agent", "model"),
                "run_in_background": m("subagent.background", default=False),
                "isolation": _own("claude.agent", "isolation"),
                "name": _own("claude.agent", "name"),
                "team_name": _own("claude.agent", "team_name"),
                "mode": _own("claude.agent", "mode"),
            },
        )
        for name in ("Agent", "Task")
    ),
    _t("TodoWrite", _CC, _CC_ID, "2.1.197", _CC_SRC, "rejected", args={"todos": m("todo.todos", form="claude")}),
    _t(
        "Monitor",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            "command": m("monitor.command", form="user"),
            "timeout_ms": m("monitor.timeout", unit="ms", most=3600000),
            "persistent": _own("claude.monitor", "persistent"),
            "ws": _own("claude.monitor", "ws"),
        },
    ),
    _t(
        "TaskOutput",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={
            "task_id": m("task_output.id"),
            "block": _own("claude.taskoutput", "block"),
            "timeout": _own("claude.taskoutput", "timeout"),
        },
    ),
    _t(
        "TaskStop",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "rejected",
        args={"task_id": m("task_stop.id"), "shell_id": _own("claude.taskstop", "shell_id")},
    ),
    _t(
        "Skill",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "ignored",
        args={"skill": m("skill.name"), "args": _own("claude.skill", "args")},
    ),
    _t(
        "ToolSearch",
        _CC,
        _CC_ID,
        "2.1.197",
        _CC_SRC,
        "ignored",
        # max_results: slice(0, max_results) of what it finds; with select:<names> every named
        # tool is loaded whatever it says (Qwen Code's tool_search: an integer 1-20, one loaded)
        args={"query": m("tool_search.query"), "max_results": _own("claude.tool_search", "max_results")},
    ),
    # --- Codex CLI 0.171.0 (serde: unknown keys ignored) ----------------------------------------------
    # exec_command runs cmd as [user's login shell from the passwd database, -lc, cmd], a new process
    # each call ("workdir: Working directory for the command. Defaults to the turn cwd."); yield_time_ms
    # is how long to wait for output before returning a session, not a kill timeout: a command
    # still running then goes on (write_stdin polls it), where OpenCode's bash kills one at its
    # default timeout and Claude Code's Bash moves a simple one to the background. What a tool
    # does with a command that outlives a call without a timeout is the client's policy, as its
    # default timeout is, and is not compared. A command calling apply_patch Codex applies itself.
    _t(
        "exec_command",
        _CODEX,
        _CODEX_ID,
        "0.171.0",
        _CODEX_SRC,
        args={
            "cmd": m("shell.command", form="user", rewrites=(_APPLY_PATCH,)),
            "workdir": m("shell.cwd"),
            # the program cmd runs in when the model names one (core/src/shell_detect.rs,
            # get_shell_by_model_provided_path: zsh, bash, powershell, pwsh, sh or cmd)
            "shell": m("shell.program"),
            **{
                k: _own("codex.exec_command", k)
                for k in (
                    "login",
                    "tty",
                    "yield_time_ms",
                    "max_output_tokens",
                    "sandbox_permissions",
                    "prefix_rule",
                )
            },
        },
        fixed={"shell.background": False, "shell.session": "none"},
    ),
    _t(
        "write_stdin",
        _CODEX,
        _CODEX_ID,
        "0.171.0",
        _CODEX_SRC,
        args={
            "session_id": m("stdin.session"),
            "chars": m("stdin.chars"),
            **{k: _own("codex.write_stdin", k) for k in ("yield_time_ms", "max_output_tokens")},
        },
    ),
    # The earlier shell tool: command an argv executed directly (execvp), a new process each call in
    # workdir or the turn's cwd; timeout_ms a kill timeout in ms, and a `timeout` key read as the
    # same milliseconds (serde alias).
    _t(
        "shell",
        _CODEX,
        _CODEX_ID,
        "0.20-0.160",
        _CODEX_SRC + " (handlers/shell.rs ShellToolCallParams)",
        args={
            "command": m("shell.command", form="argv", rewrites=(_APPLY_PATCH,)),
            "workdir": m("shell.cwd"),
            "timeout_ms": m("shell.timeout", unit="ms"),
            "timeout": m("shell.timeout", unit="ms"),
            **{k: _own("codex.shell", k) for k in ("with_escalated_permissions", "sandbox_permissions", "prefix_rule")},
        },
        fixed={"shell.background": False, "shell.session": "none"},
    ),
    _t(
        "shell_command",
        _CODEX,
        _CODEX_ID,
        "0.50-0.160",
        _CODEX_SRC + " (ShellCommandToolCallParams)",
        args={
            "command": m("shell.command", form="user", rewrites=(_APPLY_PATCH,)),
            "workdir": m("shell.cwd"),
            "timeout_ms": m("shell.timeout", unit="ms"),
            "timeout": m("shell.timeout", unit="ms"),
            **{k: _own("codex.shell_command", k) for k in ("login", "sandbox_permissions", "prefix_rule")},
        },
        fixed={"shell.background": False, "shell.session": "none"},
    ),
    # Codex's read_file / list_dir tools (the names the prompting guide uses): 1-based offsets.
    _t(
        "read_file",
        _CODEX_GUIDE,
        _CODEX_ID,
        "0.40-0.160",
        _CODEX_SRC + " (handlers/read_file.rs ReadFileArgs)",
        args={
            "file_path": m("read.path"),
            "offset": m("read.offset", base=1),
            "limit": m("read.limit", default=2000),  # "defaults to 2000" (defaults::limit)
            "mode": _own("codex.read_file", "mode"),
            "indentation": _own("codex.read_file", "indentation"),
        },
    ),
    _t(
        "list_dir",
        _CODEX_GUIDE,
        _CODEX_ID,
        "0.40-0.160",
        _CODEX_SRC + " (handlers/list_dir.rs ListDirArgs)",
        args={
            "dir_path": m("list.path"),
            "offset": m("list.offset", base=1),
            "limit": m("list.limit"),
            "depth": m("list.depth"),
        },
        # depth 2 when not given (default_depth), and it reads no ignore file: every entry is
        # listed, gitignored ones too (Qwen Code's and Gemini CLI's list_directory hide those)
        fixed={"list.ignores": "none"},
    ),
    _t(
        "view_image",
        _CODEX,
        _CODEX_ID,
        "0.171.0",
        _CODEX_SRC,
        args={"path": m("view_image.path"), "detail": _own("codex.view_image", "detail")},
    ),
    _t(
        "update_plan",
        _CODEX,
        _CODEX_ID,
        "0.171.0",
        _CODEX_SRC + " (codex-rs/protocol/src/plan_tool.rs, deny_unknown_fields)",
        "rejected",
        args={
            "plan": m("todo.todos", form="codex-plan"),
        },
    ),
    # --- Qwen Code 0.15.10 (ajv: unknown keys pass to a handler that ignores them) --------------------
    # run_shell_command runs `bash -c` (not the user's shell), "executed as a subprocess that leads
    # its own process group" each call; timeout ms, integer <= 600000.
    _t(
        "run_shell_command",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={
            "command": m("shell.command", form="bash"),
            "timeout": m("shell.timeout", unit="ms", most=600000),
            "is_background": _BG_FALSE,
            "directory": m("shell.cwd"),
        },
        fixed={"shell.session": "none"},
    ),
    # read_file: offset a 0-based line, limit a count of lines (left out: the
    # truncateToolOutputLines setting, DEFAULT_TRUNCATE_TOOL_OUTPUT_LINES = 1000:
    # processSingleFileContent reads `limit ?? config.getTruncateToolOutputLines()` lines).
    _t(
        "read_file",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={
            "file_path": m("read.path"),
            "offset": m("read.offset", base=0),
            "limit": m("read.limit", default=1000),
            "pages": m("read.pages", base=1),
        },
    ),
    # edit: a missing literal falls back to quote/dash-normalised and trimmed-whitespace line
    # matching, the matched lines replaced by new_string as written.
    _t(
        "edit",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={
            "file_path": m("edit.path"),
            "old_string": m("edit.old", form="normalized"),
            # an empty new_string: when old_string + "\n" is in the file, that is replaced
            # (cli.js maybeAugmentOldStringForDeletion); the file is written back with CRLF
            # throughout when it had one (detectLineEnding, writeTextFile's lineEnding)
            "new_string": m("edit.new", form="eol-of-file+newline-on-empty"),
            "replace_all": _EDIT_ALL,
        },
    ),
    _t(
        "write_file",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        # written with the line endings of the file it replaces: CRLF throughout when that file
        # has one (cli.js detectLineEnding, writeTextFile's ensureCrlfLineEndings)
        args={"file_path": m("write.path"), "content": m("write.content", form="eol-of-file")},
    ),
    # grep_search passes the pattern to `rg --ignore-case`.
    _t(
        "grep_search",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={
            "pattern": m("grep.pattern", form="rg-i"),
            "glob": m("grep.include", form="rg-glob"),
            "path": m("grep.path"),
            "limit": _own("qwen.grep_search", "limit"),
        },
    ),
    _t(
        "glob",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={"pattern": m("glob.pattern", form="node-glob"), "path": m("glob.path")},
    ),
    _t(
        "list_directory",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={
            "path": m("list.path"),
            "ignore": m("list.ignore"),
            "file_filtering_options": m("list.filtering", form="qwen"),
        },
        # git-ignored entries (and .qwenignore'd ones) hidden unless the call or the settings say
        # otherwise (cli.js DEFAULT_FILE_FILTERING_OPTIONS respectGitIgnore: true)
        fixed={"list.ignores": "gitignore"},
    ),
    _t(
        "web_fetch",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={"url": m("web_fetch.url"), "prompt": m("web_fetch.prompt"), "format": _own("qwen.web_fetch", "format")},
    ),
    _t("todo_write", _QWEN, _QWEN_ID, "0.15.10", _QWEN_SRC, args={"todos": m("todo.todos", form="qwen")}),
    # monitor's idle_timeout_ms is a timeout without output, not Claude Code's total timeout_ms.
    _t(
        "monitor",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={
            "command": m("monitor.command", form="bash"),
            "max_events": _own("qwen.monitor", "max_events"),
            "idle_timeout_ms": _own("qwen.monitor", "idle_timeout_ms"),
            "directory": m("monitor.cwd"),
        },
    ),
    _t(
        "agent",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        args={
            "prompt": m("subagent.prompt"),
            "subagent_type": m("subagent.type"),
            "run_in_background": m("subagent.background", default=False),
        },
    ),
    _t("task_stop", _QWEN, _QWEN_ID, "0.15.10", _QWEN_SRC, "rejected", args={"task_id": m("task_stop.id")}),
    _t(
        "send_message",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        "rejected",
        args={"task_id": m("agent_message.to"), "message": m("agent_message.text")},
    ),
    _t("skill", _QWEN, _QWEN_ID, "0.15.10", _QWEN_SRC, args={"skill": m("skill.name")}),
    _t(
        "tool_search",
        _QWEN,
        _QWEN_ID,
        "0.15.10",
        _QWEN_SRC,
        "rejected",
        # max_results: an integer from 1 to 20 (others refused), and it caps a select: list too
        args={"query": m("tool_search.query"), "max_results": _own("qwen.tool_search", "max_results")},
    ),
    # --- Gemini CLI 0.61.0 (ajv: unknown keys pass to the handler) ------------------------------------
    # run_shell_command runs `bash -c` on Linux and macOS, "executed as a subprocess that leads its
    # own process group" each call; it takes no timeout. It runs a command with a leading `sh -c`
    # (bash, zsh, a path to one; cmd.exe /c; powershell -Command) taken off, and the quotes around
    # the rest (shell-utils stripShellWrapper, called in execute).
    _t(
        "run_shell_command",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={
            "command": m("shell.command", form="bash", unwraps=True),
            "dir_path": m("shell.cwd"),
            "is_background": _BG_FALSE,
            "delay_ms": _own("gemini.run_shell_command", "delay_ms"),
            "additional_permissions": _own("gemini.run_shell_command", "additional_permissions"),
        },
        fixed={"shell.session": "none"},
    ),
    # read_file: a 1-based inclusive line range, not offset/limit; without end_line 2000 lines from
    # start_line (utils/fileUtils.ts processSingleFileContent: sliceStart +
    # DEFAULT_MAX_LINES_TEXT_FILE, DEFAULT_MAX_LINES_TEXT_FILE = 2000 in the 0.61.0 bundle).
    _t(
        "read_file",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={
            "file_path": m("read.path"),
            "start_line": m("read.start_line", base=1),
            "end_line": m("read.end_line", base=1),
        },
        fixed={"read.limit": 2000},
    ),
    _t(
        "write_file",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        # written with CRLF throughout when the file it replaces has one (write-file
        # getCorrectedFileContent: finalContent.replace(/\r?\n/g, "\r\n")); outside a .json
        # or .ipynb file, text with a backslash escape in it is unescaped first for a model not
        # of Gemini 2 or 3 nor custom, or rewritten by an LLM when the settings enable that
        # (ensureCorrectFileContent, unescapeStringForGeminiBug); content with an omission
        # placeholder line ("// rest of code ...") is refused (validateToolParamValues,
        # tools/omissionPlaceholderDetector.ts, in the 0.61.0 bundle)
        args={
            "file_path": m("write.path"),
            "content": m("write.content", form="eol-of-file+escapes-corrected+omission-refused"),
        },
    ),
    # replace: a missing literal falls back to flexible, regex and Levenshtein matching; the file is
    # written back with CRLF throughout when it had one.
    _t(
        "replace",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={
            "file_path": m("edit.path"),
            "old_string": m("edit.old", form="fuzzy-gemini"),
            # the file keeps whether it ends in a newline (restoreTrailingNewline after each
            # matcher): translate._check_edit_texts; a new text with an omission placeholder line
            # the old text lacks is refused (validateToolParamValues, omissionPlaceholderDetector)
            "new_string": m("edit.new", form="eol-of-file+final-newline-kept+omission-refused"),
            "allow_multiple": _EDIT_ALL,
        },
    ),
    # grep_search: ripgrep (`--ignore-case --regexp`, `--glob`) unless the settings turn it off
    # (useRipgrep, on by default), then git grep / grep -E, always case-insensitive: which one a
    # user runs is not known, so its pattern and glob match no other tool's form.
    _t(
        "grep_search",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={
            "pattern": m("grep.pattern", form="rg-i-or-ere-i"),
            "dir_path": m("grep.path"),
            "include_pattern": m("grep.include", form="rg-glob-or-git-glob"),
            **{
                k: _own("gemini.grep_search", k)
                for k in ("exclude_pattern", "names_only", "max_matches_per_file", "total_max_matches")
            },
        },
    ),
    _t(
        "glob",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={
            "pattern": m("glob.pattern", form="node-glob"),
            "dir_path": m("glob.path"),
            **{k: _own("gemini.glob", k) for k in ("case_sensitive", "respect_git_ignore", "respect_gemini_ignore")},
        },
    ),
    _t(
        "list_directory",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={
            "dir_path": m("list.path"),
            "ignore": m("list.ignore"),
            "file_filtering_options": m("list.filtering", form="gemini"),
        },
        # one level; git-ignored entries (and .geminiignore'd ones) hidden unless the call or the
        # settings say otherwise (tools/ls.ts filterFilesWithReport, config/constants.ts
        # DEFAULT_FILE_FILTERING_OPTIONS respectGitIgnore: true)
        fixed={"list.ignores": "gitignore"},
    ),
    # web_fetch takes the URLs inside its prompt.
    _t("web_fetch", _GEM, _GEM_ID, "0.61.0", _GEM_SRC, args={"prompt": m("web_fetch.prompt_with_urls")}),
    _t("google_web_search", _GEM, _GEM_ID, "0.61.0", _GEM_SRC, args={"query": m("web_search.query")}),
    _t("write_todos", _GEM, _GEM_ID, "0.61.0", _GEM_SRC, "rejected", args={"todos": m("todo.todos", form="gemini")}),
    _t(
        "invoke_agent",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={"agent_name": m("subagent.type"), "prompt": m("subagent.prompt")},
        fixed={"subagent.background": False},
    ),
    _t("activate_skill", _GEM, _GEM_ID, "0.61.0", _GEM_SRC, "rejected", args={"name": m("skill.name")}),
    _t(
        "read_background_output",
        _GEM,
        _GEM_ID,
        "0.61.0",
        _GEM_SRC,
        args={
            "pid": m("background_output.pid"),
            "lines": _own("gemini.read_background_output", "lines"),
            "delay_ms": _own("gemini.read_background_output", "delay_ms"),
        },
    ),
    # --- Gemini CLI before 0.11 (and Qwen Code forked from it) ----------------------------------------
    # read_file took absolute_path and a 0-based offset (a limit left out: 2000 lines,
    # utils/fileUtils.ts DEFAULT_MAX_LINES_TEXT_FILE); search_file_content ran git grep
    # --ignore-case; replace checked old_string with an LLM edit corrector (ensureCorrectEdit).
    _t(
        "read_file",
        _GEM,
        _GEM_ID,
        "0.1.9-0.10.0",
        _GEM_OLD_SRC,
        args={
            "absolute_path": m("read.path"),
            "offset": m("read.offset", base=0),
            "limit": m("read.limit", default=2000),
        },
    ),
    _t(
        "list_directory",
        _GEM,
        _GEM_ID,
        "0.1.9-0.10.0",
        _GEM_OLD_SRC,
        args={
            "path": m("list.path"),
            "ignore": m("list.ignore"),
            "respect_git_ignore": _own("gemini.ls", "respect_git_ignore"),
        },
        # git-ignored entries hidden unless the call or the settings say otherwise (v0.1.9
        # tools/ls.ts respect_git_ignore ?? getFileFilteringRespectGitIgnore(), true by default;
        # v0.10.0 DEFAULT_FILE_FILTERING_OPTIONS)
        fixed={"list.ignores": "gitignore"},
    ),
    _t(
        "search_file_content",
        _GEM,
        _GEM_ID,
        "0.1.9-0.10.0",
        _GEM_OLD_SRC,
        args={
            "pattern": m("grep.pattern", form="ere-i"),
            "path": m("grep.path"),
            "include": m("grep.include", form="git-glob"),
        },
    ),
    _t(
        "run_shell_command",
        _GEM,
        _GEM_ID,
        "0.1.9-0.10.0",
        _GEM_OLD_SRC,
        # from 0.1.14 it runs the command with a leading `sh -c` (bash, zsh, cmd.exe; `-c` or `/c`)
        # taken off (stripShellWrapper in execute)
        args={"command": m("shell.command", form="bash", unwraps=True), "directory": m("shell.cwd")},
        fixed={"shell.background": False, "shell.session": "none"},
    ),
    # expected_replacements defaults to 1: exactly one match, as an edit without replace_all.
    _t(
        "replace",
        _GEM,
        _GEM_ID,
        "0.1.9-0.10.0",
        _GEM_OLD_SRC,
        args={
            "file_path": m("edit.path"),
            "old_string": m("edit.old", form="fuzzy-gemini"),
            # a new_string with a backslash escape in it is rewritten by an LLM first
            # (editCorrector.ts ensureCorrectEdit, correctNewStringEscaping)
            "new_string": m("edit.new", form="escapes-corrected"),
            "expected_replacements": m("edit.expected_count"),
        },
        fixed={"edit.all": False},
    ),
    _t(
        "write_file",
        _GEM,
        _GEM_ID,
        "0.1.9-0.10.0",
        _GEM_OLD_SRC,
        # text with a backslash escape in it is rewritten by an LLM first (getCorrectedFileContent:
        # ensureCorrectEdit on an existing file, ensureCorrectFileContent on a new one)
        args={"file_path": m("write.path"), "content": m("write.content", form="escapes-corrected")},
    ),
    _t(
        "glob",
        _GEM,
        _GEM_ID,
        "0.1.9-0.10.0",
        _GEM_OLD_SRC,
        args={"pattern": m("glob.pattern", form="node-glob"), "path": m("glob.path")},
    ),
    # --- OpenCode 1.18.33 (Effect Schema decode: unknown keys stripped) -------------------------------
    # bash runs `<config shell, else $SHELL, else bash> -c`, a new process each call in workdir or the
    # project (its description's "persistent shell session" notwithstanding); timeout ms, no maximum.
    _t(
        "bash",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        args={
            "command": m("shell.command", form="user"),
            "timeout": m("shell.timeout", unit="ms"),
            "workdir": m("shell.cwd"),
        },
        fixed={"shell.background": False, "shell.session": "none"},
    ),
    # read: offset a 1-based line (0 read as 1), limit lines.
    _t(
        "read",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        # tool/read.ts: limit ?? 2000 lines
        args={"filePath": m("read.path"), "offset": m("read.offset", base=1), "limit": m("read.limit", default=2000)},
    ),
    _t("write", _OC, _OC_ID, "1.18.33", _OC_SRC, args={"filePath": m("write.path"), "content": m("write.content")}),
    # edit: nine matchers after the exact one (line-trimmed, Levenshtein block anchors, ...); the
    # old and new text are written with CRLF when the file holds one (detectLineEnding,
    # convertToLineEnding); with replaceAll the new text goes to String.prototype.replaceAll,
    # which reads $$, $&, $` and $' in it as patterns.
    _t(
        "edit",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        args={
            "filePath": m("edit.path"),
            "oldString": m("edit.old", form="fuzzy-opencode"),
            "newString": m("edit.new", form="dollar-patterns+eol-of-file"),
            "replaceAll": _EDIT_ALL,
        },
    ),
    _t(
        "glob",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        args={"pattern": m("glob.pattern", form="rg-glob"), "path": m("glob.path")},
    ),
    _t(
        "grep",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        args={
            "pattern": m("grep.pattern", form="rg"),
            # a file's path searches the file's whole directory (the tool runs rg with cwd set to
            # the path when stat says Directory, else to its dirname); ripgrep and the other
            # agents' tools search the file alone
            "path": m("grep.path", form="dir"),
            "include": m("grep.include", form="rg-glob"),
        },
        # rg --hidden … --glob=!**/.git/** (its Ripgrep service's grep): .git alone is skipped
        fixed={"grep.ignore_case": False, "grep.skips": (".git",)},
    ),
    # webfetch: timeout in seconds (default 30, at most 120).
    _t(
        "webfetch",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        args={
            "url": m("web_fetch.url"),
            "format": _own("opencode.webfetch", "format"),
            "timeout": m("web_fetch.timeout", unit="s", most=120),
        },
    ),
    _t(
        "websearch",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        args={
            "query": m("web_search.query"),
            **{k: _own("opencode.websearch", k) for k in ("numResults", "livecrawl", "type", "contextMaxCharacters")},
        },
    ),
    _t("todowrite", _OC, _OC_ID, "1.18.33", _OC_SRC, args={"todos": m("todo.todos", form="opencode")}),
    _t(
        "task",
        _OC,
        _OC_ID,
        "1.18.33",
        _OC_SRC,
        args={
            "prompt": m("subagent.prompt"),
            "subagent_type": m("subagent.type"),
            "task_id": _own("opencode.task", "task_id"),
            "command": _own("opencode.task", "command"),
        },
        fixed={"subagent.background": False},
    ),
    _t("skill", _OC, _OC_ID, "1.18.33", _OC_SRC, args={"name": m("skill.name")}),
    # --- pi 0.58.3 (ajv: unknown keys accepted, never read) -------------------------------------------
    # bash runs /bin/bash -c, a new process each call in the session's cwd (bash.ts spawn, unchanged
    # through 02c7218); timeout in seconds, none by default.
    _t(
        "bash",
        _PI,
        None,
        "0.58.3",
        _PI_SRC,
        args={"command": m("shell.command", form="bash"), "timeout": m("shell.timeout", unit="s")},
        fixed={"shell.background": False, "shell.session": "none"},
    ),
    _t(
        "read",
        _PI,
        None,
        "0.58.3",
        _PI_SRC,
        # core/tools/read.ts: what it selects goes through truncateHead (truncate.ts
        # DEFAULT_MAX_LINES = 2000), a limit or none: 2000 lines at most, and left out
        args={
            "path": m("read.path"),
            "offset": m("read.offset", base=1),
            "limit": m("read.limit", most=2000, default=2000),
        },
    ),
    # --- Crush 0.90.0 (Go encoding/json: unknown keys ignored) ----------------------------------------
    # view: offset a 0-based line ("The line number to start reading from (0-based)"; readTextFile
    # skips `offset` lines, numbering from offset+1), limit a count of lines (left out or <= 0:
    # DefaultReadLimit = 200, internal/agent/tools/view.go).
    _t(
        "view",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_SRC,
        args={
            "file_path": m("read.path"),
            "offset": m("read.offset", base=0),
            "limit": m("read.limit", default=200),
        },
    ),
    # bash: mvdan.cc/sh's POSIX interpreter with Go builtins, not bash or the user's shell.
    # run_in_background starts a background job at once. What happens to a long command the call
    # sets nothing for is each tool's default, as default timeouts are (not compared): Crush moves
    # it to the background after auto_background_after seconds (default 60) and never kills it.
    _t(
        "bash",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_TOOLS,
        args={
            "command": m("shell.command", form="mvdan-sh"),
            "working_dir": m("shell.cwd"),
            "run_in_background": _BG_FALSE,
            "auto_background_after": _own("crush.bash", "auto_background_after"),
        },
    ),
    # edit: exact first, then whitespace-normalised whole lines (edit_whitespace.go); a file holding
    # a CRLF is read with LF and written back with CRLF throughout (edit.go ToUnixLineEndings,
    # ToWindowsLineEndings).
    _t(
        "edit",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_TOOLS,
        args={
            "file_path": m("edit.path"),
            "old_string": m("edit.old", form="normalized-whitespace"),
            "new_string": m("edit.new", form="eol-of-file"),
            "replace_all": _EDIT_ALL,
        },
    ),
    _t(
        "write",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_TOOLS,
        args={"file_path": m("write.path"), "content": m("write.content")},
    ),
    # grep: `rg PATTERN --glob INCLUDE PATH` (case-sensitive; Go regexp without rg); literal_text
    # escapes the pattern.
    _t(
        "grep",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_TOOLS,
        args={
            "pattern": m("grep.pattern", form="rg"),
            "path": m("grep.path"),
            "include": m("grep.include", form="rg-glob"),
            "literal_text": _own("crush.grep", "literal_text"),
        },
        fixed={"grep.ignore_case": False},
    ),
    # glob: `rg --files --null --glob /PATTERN` from the pattern's literal directory (rg.go
    # getRgCmd puts "/" before a relative pattern): anchored at the search root, so `*.go` matches
    # only the root's own files where Claude Code's and OpenCode's rg match it at any depth.
    _t(
        "glob",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_TOOLS,
        args={"pattern": m("glob.pattern", form="rg-glob-rooted"), "path": m("glob.path")},
    ),
    _t(
        "ls",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_TOOLS,
        args={
            "path": m("list.path"),
            "ignore": _own("crush.ls", "ignore"),
            "depth": _own("crush.ls", "depth"),
        },
    ),
    # fetch: timeout in seconds, clamped to 120; format text, markdown or html (required).
    _t(
        "fetch",
        _CRUSH,
        None,
        "0.90.0",
        _CRUSH_TOOLS,
        args={
            "url": m("web_fetch.url"),
            "format": _own("crush.fetch", "format"),
            "timeout": m("web_fetch.timeout", unit="s", most=120),
        },
    ),
    _t("write", _PI, None, "0.58.3", _PI_SRC, args={"path": m("write.path"), "content": m("write.content")}),
    # edit: exactly one match; a fuzzy fallback rewrites the whole file normalised. The text is
    # matched and written with LF, the file then written with the line ending it had (edit.ts
    # normalizeToLF, restoreLineEndings(…, detectLineEnding(content))).
    _t(
        "edit",
        _PI,
        None,
        "0.58.3",
        _PI_SRC,
        args={
            "path": m("edit.path"),
            "oldText": m("edit.old", form="fuzzy-pi"),
            "newText": m("edit.new", form="eol-of-file"),
        },
        fixed={"edit.all": False},
    ),
    _t(
        "grep",
        _PI,
        None,
        "0.58.3",
        _PI_SRC,
        args={
            "pattern": m("grep.pattern", form="rg"),
            "path": m("grep.path"),
            "glob": m("grep.include", form="rg-glob"),
            "ignoreCase": m("grep.ignore_case", default=False),
            **{k: _own("pi.grep", k) for k in ("literal", "context", "limit")},
        },
    ),
    _t(
        "find",
        _PI,
        None,
        "0.58.3",
        _PI_SRC,
        args={"pattern": m("glob.pattern", form="fd-glob"), "path": m("glob.path"), "limit": _own("pi.find", "limit")},
    ),
    _t("ls", _PI, None, "0.58.3", _PI_SRC, args={"path": m("list.path"), "limit": _own("pi.ls", "limit")}),
    # --- trae-agent e839e55 (no validation) -----------------------------------------------------------
    # bash: one persistent /bin/bash, a fixed 120 s timeout; restart restarts it instead of running.
    _t(
        "bash",
        _TRAE,
        None,
        "e839e55",
        _TRAE_SRC,
        args={"command": m("shell.command", form="bash"), "restart": _own("trae.bash", "restart")},
        fixed={"shell.background": False, "shell.session": "shell"},
    ),
    _t(
        "str_replace_based_edit_tool",
        _TRAE,
        None,
        "e839e55",
        _TRAE_SRC,
        by_command=_TEXT_EDITOR,
        fixed={"edit.all": False},
    ),
    # --- Anthropic's text editor tool (str_replace must match exactly once; create refuses a file
    # that exists; view_range 1-based, -1 = end) ------------------------------------------------------
    _t(
        "str_replace_editor",
        _ANTHROPIC,
        None,
        "text_editor_20250124",
        _ANTHROPIC_SRC,
        by_command=_TEXT_EDITOR,
        fixed={"edit.all": False},
    ),
    _t(
        "str_replace_based_edit_tool",
        _ANTHROPIC,
        None,
        "text_editor_20250728",
        _ANTHROPIC_SRC,
        by_command=_TEXT_EDITOR,
        fixed={"edit.all": False},
    ),
    # --- Hermes Agent 0.19.0 (no validation: unknown keys never read) ---------------------------------
    # terminal: `bash -c` after a login-shell environment snapshot; timeout seconds, > 600 refused.
    _t(
        "terminal",
        _HERMES,
        None,
        "0.19.0",
        _HERMES_SRC,
        args={
            "command": m("shell.command", form="bash"),
            "background": _BG_FALSE,
            "timeout": m("shell.timeout", unit="s", most=600),
            "workdir": m("shell.cwd"),
            **{k: _own("hermes.terminal", k) for k in ("pty", "notify_on_complete", "watch_patterns")},
        },
    ),
    _t(
        "read_file",
        _HERMES,
        None,
        "0.19.0",
        _HERMES_SRC,
        # tools/file_operations.py normalize_read_pagination: min(limit, MAX_LINES = 2000)
        args={"path": m("read.path"), "offset": m("read.offset", base=1), "limit": m("read.limit", most=2000)},
    ),
    _t(
        "write_file",
        _HERMES,
        None,
        "0.19.0",
        _HERMES_SRC,
        args={
            "path": m("write.path"),
            "content": m("write.content"),
            "cross_profile": _own("hermes.write_file", "cross_profile"),
        },
    ),
    # --- OpenClaw 2026.9.6 (TypeBox: unknown keys reach handlers that ignore them) --------------------
    # exec: $SHELL -c; timeoutSeconds in seconds (a `timeout` key is refused); yieldMs is not a kill timeout.
    _t(
        "exec",
        _OPENCLAW,
        None,
        "2026.9.6",
        _OPENCLAW_SRC,
        "mixed",
        args={
            "command": m("shell.command", form="user"),
            "workdir": m("shell.cwd"),
            "timeoutSeconds": m("shell.timeout", unit="s"),
            "background": _BG_FALSE,
            **{
                k: _own("openclaw.exec", k)
                for k in ("env", "yieldMs", "pty", "elevated", "host", "ask", "node", "title")
            },
        },
    ),
    _t(
        "read",
        _OPENCLAW,
        None,
        "2026.9.6",
        _OPENCLAW_SRC,
        args={
            "path": m("read.path"),
            "offset": m("read.offset", base=1),
            "limit": m("read.limit"),
            "cursor": _own("openclaw.read", "cursor"),
            "optional": _own("openclaw.read", "optional"),
        },
    ),
    _t(
        "write",
        _OPENCLAW,
        None,
        "2026.9.6",
        _OPENCLAW_SRC,
        args={"path": m("write.path"), "content": m("write.content")},
    ),
    # edit: each oldText unique, exact match then a mild fuzzy fallback.
    _t(
        "edit",
        _OPENCLAW,
        None,
        "2026.9.6",
        _OPENCLAW_SRC,
        "mixed",
        args={
            "path": m("edit.path"),
            "oldText": m("edit.old", form="fuzzy-openclaw"),
            "newText": m("edit.new"),
            "edits": _own("openclaw.edit", "edits"),
        },
        fixed={"edit.all": False},
    ),
    # --- Roo Code 3.52.1 (native tools: the parser copies known keys, others never read) --------------
    # execute_command: timeout in seconds, after which the command keeps running in the background
    # and the output so far is returned: not a kill timeout (its own meaning).
    _t(
        "execute_command",
        _ROO,
        None,
        "3.52.1",
        _ROO_SRC,
        args={
            "command": m("shell.command", form="user"),
            "cwd": m("shell.cwd"),
            "timeout": _own("roo.execute_command", "timeout"),
        },
        fixed={"shell.background": False},
    ),
    # read_file: offset a 1-based line (slice mode), limit lines; mode and indentation its own.
    _t(
        "read_file",
        _ROO,
        None,
        "3.52.1",
        _ROO_SRC,
        args={
            "path": m("read.path"),
            "offset": m("read.offset", base=1),
            "limit": m("read.limit"),
            "mode": _own("roo.read_file", "mode"),
            "indentation": _own("roo.read_file", "indentation"),
        },
    ),
    # write_to_file drops a first and a last line of ``` and, for a model whose id does not
    # name claude, unescapes HTML entities (src/core/tools/WriteToFileTool.ts,
    # src/utils/text-normalization.ts unescapeHtmlEntities)
    _t(
        "write_to_file",
        _ROO,
        None,
        "3.52.1",
        _ROO_SRC,
        args={"path": m("write.path"), "content": m("write.content", form="roo-rewrites")},
    ),
    # search_files: `rg --json -e REGEX [--glob FILE_PATTERN] PATH` (case-sensitive).
    _t(
        "search_files",
        _ROO,
        None,
        "3.52.1",
        _ROO_SRC,
        args={
            "path": m("grep.path"),
            "regex": m("grep.pattern", form="rg"),
            "file_pattern": m("grep.include", form="rg-glob"),
        },
        fixed={"grep.ignore_case": False},
    ),
    _t(
        "list_files",
        _ROO,
        None,
        "3.52.1",
        _ROO_SRC,
        args={"path": m("list.path"), "recursive": _own("roo.list_files", "recursive")},
    ),
    # --- Cline 3.89.2 (classic tools: unknown parameters never read) ----------------------------------
    # execute_command: the VS Code terminal's shell (the user's); timeout in seconds.
    _t(
        "execute_command",
        _CLINE,
        None,
        "3.89.2",
        _CLINE_SRC,
        args={
            "command": m("shell.command", form="user"),
            "requires_approval": _own("cline.execute_command", "requires_approval"),
            "timeout": m("shell.timeout", unit="s"),
        },
        fixed={"shell.background": False},
    ),
    _t(
        "read_file",
        _CLINE,
        None,
        "3.89.2",
        _CLINE_SRC,
        args={
            "path": m("read.path"),
            "start_line": m("read.start_line", base=1),
            "end_line": m("read.end_line", base=1),
        },
    ),
    _t(
        "write_to_file",
        _CLINE,
        None,
        "3.89.2",
        _CLINE_SRC,
        # drops a first and a last line of ``` (trimming the rest) and, for a model whose id
        # does not name claude, unescapes HTML entities and drops U+FFFD
        # (apps/vscode/src/core/task/tools/handlers/WriteToFileToolHandler.ts,
        # tools/utils/ModelContentProcessor.ts, src/utils/string.ts fixModelHtmlEscaping)
        args={
            "path": m("write.path"),
            "content": m("write.content", form="cline-rewrites"),
            "absolutePath": _own("cline.write_to_file", "absolutePath"),
        },
    ),
    _t(
        "replace_in_file",
        _CLINE,
        None,
        "3.89.2",
        _CLINE_SRC,
        args={"path": m("diff_edit.path"), "diff": m("diff_edit.diff")},
    ),
    _t(
        "search_files",
        _CLINE,
        None,
        "3.89.2",
        _CLINE_SRC,
        args={
            "path": m("grep.path"),
            "regex": m("grep.pattern", form="rg"),
            "file_pattern": m("grep.include", form="rg-glob"),
        },
    ),
    _t(
        "list_files",
        _CLINE,
        None,
        "3.89.2",
        _CLINE_SRC,
        args={"path": m("list.path"), "recursive": _own("cline.list_files", "recursive")},
    ),
)


# --- where a relative path is found (fixed["path.base"]) -----------------------------------------
_START, _CWD, _ABSOLUTE = "start", "cwd", "absolute"
#: (clients, name, version) -> the row's ``path.base``; each read at the row's version and source.
#: A row not here is unknown: a relative path never moves to or from it.
_PATH_BASES: dict[tuple[str, str, str], str] = {
    # Claude Code 2.1.197: the real binary, after its own Bash ran `cd sub`, reads `f.txt` as
    # sub/f.txt and asks to write sub/w.txt (Read, Write, Edit; tests/e2e/test_argument_meaning.py).
    # Glob and Grep: "If not specified, the current working directory will be used" (sdk-tools.d.ts),
    # the directory Bash keeps. NotebookEdit not observed: unknown.
    (_CC, "Read", "2.1.197"): _CWD,
    (_CC, "Write", "2.1.197"): _CWD,
    (_CC, "Edit", "2.1.197"): _CWD,
    (_CC, "Glob", "2.1.197"): _CWD,
    (_CC, "Grep", "2.1.197"): _CWD,
    # Qwen Code 0.15.10 cli.js: read_file, edit, write_file, list_directory refuse a relative path
    # ("File path must be absolute"), run_shell_command and monitor a relative directory ("Directory
    # must be an absolute path."); glob and grep_search resolve one against config.getTargetDir(),
    # set once at start (resolveAndValidatePath).
    (_QWEN, "read_file", "0.15.10"): _ABSOLUTE,
    (_QWEN, "edit", "0.15.10"): _ABSOLUTE,
    (_QWEN, "write_file", "0.15.10"): _ABSOLUTE,
    (_QWEN, "list_directory", "0.15.10"): _ABSOLUTE,
    (_QWEN, "run_shell_command", "0.15.10"): _ABSOLUTE,
    (_QWEN, "monitor", "0.15.10"): _ABSOLUTE,
    (_QWEN, "glob", "0.15.10"): _START,
    (_QWEN, "grep_search", "0.15.10"): _START,
    # Gemini CLI 0.61.0: path.resolve(config.getTargetDir(), p) in each tool. Not replace: its
    # correctPath() takes the one workspace file whose path ends in p when <target>/p is missing.
    (_GEM, "run_shell_command", "0.61.0"): _START,
    (_GEM, "read_file", "0.61.0"): _START,
    (_GEM, "write_file", "0.61.0"): _START,
    (_GEM, "grep_search", "0.61.0"): _START,
    (_GEM, "glob", "0.61.0"): _START,
    (_GEM, "list_directory", "0.61.0"): _START,
    # Gemini CLI v0.1.9 and v0.10.0 alike: read_file, list_directory, write_file refuse a relative
    # path; search_file_content and glob resolve it against the target directory. replace and
    # run_shell_command differ between the two (v0.10.0's smart edit searches; v0.1.9's directory
    # must be relative, v0.10.0's absolute): unknown.
    (_GEM, "read_file", "0.1.9-0.10.0"): _ABSOLUTE,
    (_GEM, "list_directory", "0.1.9-0.10.0"): _ABSOLUTE,
    (_GEM, "write_file", "0.1.9-0.10.0"): _ABSOLUTE,
    (_GEM, "search_file_content", "0.1.9-0.10.0"): _START,
    (_GEM, "glob", "0.1.9-0.10.0"): _START,
    # OpenCode 1.18.33 (the binary's tool code): path.resolve / path.join of Instance.directory,
    # fixed when the instance loads; bash starts a new process in it (or in workdir) each call.
    **{(_OC, name, "1.18.33"): _START for name in ("read", "write", "edit", "glob", "grep", "bash")},
    # Codex: workdir and view_image's path are joined to the turn's cwd, which no tool call moves.
    (_CODEX, "exec_command", "0.171.0"): _START,
    (_CODEX, "view_image", "0.171.0"): _START,
    (_CODEX, "shell", "0.20-0.160"): _START,
    (_CODEX, "shell_command", "0.50-0.160"): _START,
    # Crush v0.90.0: filepathext.SmartJoin(cfg.WorkingDir(), p) (view, edit, write, ls); grep, glob
    # and bash's working_dir take the process's directory, which ResolveCwd sets to it at start.
    **{(_CRUSH, name, "0.90.0"): _START for name in ("view", "edit", "write", "ls", "grep", "glob", "bash")},
    # pi v0.58.3 path-utils.ts resolveToCwd(path, cwd): the cwd given to createAllTools, fixed.
    **{(_PI, name, "0.58.3"): _START for name in ("read", "write", "edit", "grep", "find", "ls")},
    # OpenClaw 2026.9.6 (npm): read, write, edit resolve against codingRoot; exec joins a relative
    # workdir to its default cwd (the same root).
    **{(_OPENCLAW, name, "2026.9.6"): _START for name in ("read", "write", "edit", "exec")},
    # Hermes Agent 0.19.0: terminal records `pwd -P` after each command and starts the next there;
    # read_file and write_file resolve a relative path against that recorded directory.
    (_HERMES, "terminal", "0.19.0"): _CWD,
    (_HERMES, "read_file", "0.19.0"): _CWD,
    (_HERMES, "write_file", "0.19.0"): _CWD,
    # trae-agent e839e55 edit_tool.py: "The path {path} is not an absolute path".
    (_TRAE, "str_replace_based_edit_tool", "e839e55"): _ABSOLUTE,
    # Roo Code v3.52.1: path.resolve(task.cwd, relPath), task.cwd the workspace path.
    **{
        (_ROO, name, "3.52.1"): _START
        for name in ("read_file", "write_to_file", "search_files", "list_files", "execute_command")
    },
    # Cline v3.89.2 WorkspaceResolver: path.resolve(cwd, relativePath), the task's cwd.
    **{
        (_CLINE, name, "3.89.2"): _START
        for name in ("read_file", "write_to_file", "replace_in_file", "search_files", "list_files")
    },
}


def _with_base(table: ArgTable) -> ArgTable:
    base = _PATH_BASES.get((table.clients, table.name, table.version))
    return table if base is None else replace(table, fixed={**table.fixed, "path.base": base})


TABLES: tuple[ArgTable, ...] = tuple(map(_with_base, _ROWS))
