"""Command lines that mean the same in bash, zsh and dash, and argv joined so that they do.

A shell tool runs its command string in *some* shell: Claude Code's ``Bash`` in the user's shell
(zsh on a default macOS), Codex's ``exec_command`` in "the user's default shell", Gemini CLI's
``run_shell_command`` in ``bash -c``. A model that answered ``["bash", "-lc", X]`` named bash; the
string ``X`` alone may be read by zsh instead, and zsh reads ``**``, unquoted ``$var``, ``=cmd``,
arrays and ``echo`` differently (zsh manual, "Expansion": GLOB_STAR_SHORT, SH_WORD_SPLIT and
EQUALS are zsh's own). So ``X`` is unwrapped only when :func:`is_portable` holds — plain words and
the operators ``&&``, ``||``, ``;``, ``|`` — and anything else is joined with :func:`posix_join`
(``bash -lc 'rm -f **/*.orig'``), which every POSIX shell and zsh split back into the same argv.

Both rules are checked against the real shells (``tests/unit/test_shellwords.py`` runs generated
commands through bash, zsh and dash and compares the argv each executes).
"""

from __future__ import annotations

import re

import orjson

#: A word bash, zsh and dash all read literally: runs of the characters ``shlex.quote`` leaves
#: unquoted (Python's ``shlex`` module, ASCII only), a backslash before any character but a
#: newline, single-quoted text (no expansion in any of them), and double-quoted text without ``$``,
#: backquote or ``!`` in which a backslash escapes one character (POSIX.1-2017 2.2.3: inside double
#: quotes a backslash is literal unless ``$`` `` ` `` ``"`` ``\`` or a newline follows; zsh reads it
#: the same).
_WORD = re.compile(r"""(?:[A-Za-z0-9_@%+=:,./-]|\\[^\n]|'[^']*'|"(?:[^"$`\\!\n]|\\[^\n])*")+""", re.ASCII)

#: Words a shell reads as syntax, or runs as its own builtin, at the head of a simple command:
#: the reserved words and builtins of bash 5.2 (``compgen -k``, ``compgen -b``), zsh 5.9
#: (``${(k)reswords}``, ``${(k)builtins}``) and dash 0.5.12 (dash(1), "Builtins"). Their behaviour
#: differs between the shells (``echo`` reads backslashes in dash and zsh, ``cd a b`` substitutes in
#: zsh, ``shopt`` exists only in bash, ``noglob`` / ``-`` are zsh precommand modifiers), so a command
#: naming one is not portable — except ``cd`` with at most one argument, ``true``, ``false`` and
#: ``pwd`` with none, and ``echo`` (its words hold no backslash, so only its flags differ), each with
#: no argument that starts with ``-`` (``cd -e`` and ``echo -e`` differ), which the three run alike.
_SHELL_WORDS = frozenset(
    """
    ! - . : [ [[ ]] { } alias autoload bg bind bindkey break builtin bye caller case cd chdir command
    compadd comparguments compcall compctl compdescribe compfiles compgen compgroups complete compopt
    compquote compset comptags comptry compvalues continue coproc declare dirs disable disown do done
    echo echotc echoti elif else emulate enable end esac eval exec exit export false fc fg fi float for
    foreach function functions getln getopts hash help history if in integer jobs kill let limit local
    log logout mapfile nocorrect noglob popd print printf private pushd pushln pwd r read readarray
    readonly rehash repeat return sched select set setopt shift shopt source suspend test then time
    times trap true ttyctl type typeset ulimit umask unalias unfunction unhash unlimit unset unsetopt
    until vared wait whence where which while zcompile zformat zle zmodload zparseopts zregexparse zstyle
    """.split()
)
#: The shell words above that run alike in all three, with at most this many arguments (none of
#: them starting with ``-``).
_ALIKE = {"cd": 1, "true": 0, "false": 0, "pwd": 0, "echo": 1_000_000}

_OPERATORS = ("&&", "||", ";", "|")
_TOKEN = re.compile(r"""[ \t]*(&&|\|\||;|\||(?:[^ \t;&|'"\\]|\\.|'[^']*'|"(?:[^"\\]|\\.)*")+)""", re.ASCII | re.DOTALL)
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=", re.ASCII)


def _command_ok(words: list[str]) -> bool:
    """One simple command's words: assignments first (``A=1``), then a command that is not a
    shell word (or one of ``_ALIKE`` with few enough arguments). A command of assignments alone
    is not portable (``noa | A=1`` fails in zsh, succeeds in bash)."""
    head = 0
    while head < len(words) and _ASSIGNMENT.match(words[head]):
        head += 1
    if head == len(words):
        return False  # only assignments: in a pipeline zsh and bash give them other statuses
    name = _unquoted(words[head])
    if name.startswith("%"):
        return False  # ``%1`` resumes a job in bash and zsh
    if name in _SHELL_WORDS:
        args = words[head + 1 :]
        limit = _ALIKE.get(name)
        if name == "echo" and any("\\" in _unquoted(word) for word in args):
            return False  # dash's and zsh's echo read backslash escapes, bash's does not
        return limit is not None and len(args) <= limit and not any(_unquoted(word).startswith("-") for word in args)
    return True


def _unquoted(word: str) -> str:
    """A portable word with its quotes and escapes removed (what the shell sees)."""
    return _QUOTED.sub(_unquote_one, word)


def _unquote_one(m: re.Match[str]) -> str:
    if m.group(1) is not None:
        return m.group(1)
    if m.group(2) is not None:
        return re.sub(r'\\([$`"\\])', r"\1", m.group(2))
    return m.group(3)


_QUOTED = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\\(.)""", re.DOTALL)


#: The longest command line (characters) these readings scan; a longer one is not read and gets
#: the answer that changes nothing (not portable; may change a directory or state). Their
#: regular expressions cost about 1 s a megabyte on this machine, on mitmproxy's event loop (every
#: other flow waits): a command this long is a file written through the shell, rarely another
#: agent's call to move.
MAX_READ = 64 * 1024
#: What :func:`changes_directory` / :func:`changes_state` give for a command line over :data:`MAX_READ`.
TOO_LONG = f"a command line over {MAX_READ // 1024} KiB (not read)"


def _too_long(command: object) -> bool:
    if isinstance(command, str):
        return len(command) > MAX_READ
    return isinstance(command, list) and sum(len(w) for w in command if isinstance(w, str)) > MAX_READ


def is_portable(command: str) -> bool:
    """True when ``command`` runs the same argv, in the same order, in bash, zsh and dash.

    That is: one or more simple commands joined by ``&&``, ``||``, ``;`` or ``|`` (spaces or tabs
    around them), each made of words of the characters in ``_WORD``; no word starts with ``=``
    (zsh's EQUALS expansion); no command is a reserved word or builtin of one of the shells
    (``_SHELL_WORDS``, ``cd DIR`` and a few others aside). Anything else — quotes, ``$``, globs,
    ``~``, redirections, newlines, ``&`` — is not portable, even where it happens to agree.
    A command over :data:`MAX_READ` characters is not read: not portable.
    """
    if _too_long(command):
        return False
    text = command.rstrip(" \t")
    pos = 0
    words: list[str] = []
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None:
            return False
        token = m.group(1)
        pos = m.end()
        if token in _OPERATORS:
            if not words or not _command_ok(words):
                return False
            words = []
            continue
        if not _WORD.fullmatch(token) or _unquoted(token).startswith("="):
            return False  # zsh expands a leading `=` even after an empty quote (``''=x``)
        words.append(token)
    return bool(words) and _command_ok(words)


_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+", re.ASCII)


def posix_quote(word: str) -> str:
    """``word`` as one shell word for bash, zsh and dash alike.

    ``shlex.quote``'s rule (single quotes unless every character is in its safe set, ``'`` written
    as ``'"'"'``), plus quoting a word that starts with ``=``, which zsh would expand to a path.
    """
    if word and _SAFE.fullmatch(word) and not word.startswith("="):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def posix_join(argv: list[str]) -> str:
    """The command line whose words are ``argv`` in bash, zsh and dash.

    Raises ``TypeError`` when an element is not a string and ``ValueError`` for a NUL character
    (no shell word can hold one).
    """
    for word in argv:
        if not isinstance(word, str):
            raise TypeError("argv holds a non-string")
        if "\x00" in word:
            raise ValueError("argv holds a NUL character")
    return " ".join(posix_quote(word) for word in argv)


#: ``argv`` prefixes that say "run this string in bash": ``["bash", "-lc", X]``. ``X`` alone is
#: unwrapped only when it reads the same in bash, zsh and dash
#: (:func:`is_portable`): a shell tool may run it in the user's zsh.
#: Another shell's ``-c`` (``zsh -c``, ``sh -c``) and any other ``X`` are joined with POSIX
#: quoting, so the shell the model named still runs it; so is an interactive bash's (``-ic``:
#: it reads ``~/.bashrc`` and expands its aliases, bash(1) INVOCATION and ALIASES, where every
#: agent's shell tool runs a non-interactive one: ``alias rm='rm -i'`` asks, or does not).
_SHELL_WRAPPERS = re.compile(r"^(?:/(?:usr/(?:local/)?)?bin/)?bash$")
_SHELL_FLAGS = frozenset({"-c", "-lc", "-cl"})


def argv_to_command(argv: list[str]) -> str:
    """Turn an argv list into one command string that runs the same argv in bash, zsh and dash.

    ``["bash", "-lc", X]`` is ``X`` itself when ``X`` is portable
    (:func:`~toolvocab.engine.shellwords.is_portable`: ``"git status"``, ``"cd src && make"``);
    anything else — ``["bash", "-lc", "rm -f **/*.orig"]``, another shell's ``-c``, a plain argv —
    is joined with :func:`~toolvocab.engine.shellwords.posix_join` (``bash -lc 'rm -f **/*.orig'``).
    Raises ``TypeError`` when an element is not a string, ``ValueError`` for a NUL character.
    """
    if len(argv) == 3 and isinstance(argv[0], str) and _SHELL_WRAPPERS.match(argv[0]) and argv[1] in _SHELL_FLAGS:
        if isinstance(argv[2], str) and is_portable(argv[2]):
            return argv[2]
    return posix_join(argv)


def command_to_argv(command: str) -> list[str] | None:
    """Turn a command string into argv without choosing a shell for the user, or ``None``.

    Only a string that is itself a JSON array of strings (``"[\\"ls\\", \\"-la\\"]"``, Codex
    answered by third-party models, openai/codex#3913, BR-25) becomes that array. A plain command
    string (``"ls -la"``) returns ``None`` and is left as sent: wrapping it in ``bash -lc`` would
    pick a shell for the user, and splitting it would change the meaning of any shell syntax in it.
    """
    text = command.strip()
    if not text.startswith("["):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


# ------------------------------------------------------------------ what a command may leave behind
#: Builtins that change the shell's working directory wherever they stand (bash 5.2 ``cd``
#: ``pushd`` ``popd``, zsh 5.9's ``chdir``, dash 0.5.12 ``cd``): even quoted or as an argument
#: (``echo cd``) they count, since a false alarm only leaves a call as sent.
_DIRECTORY_WORDS = frozenset({"cd", "chdir", "pushd", "popd"})
#: Builtins that run other text in the same shell or replace it, so may do anything a command of
#: that shell can (``eval``, ``source``, ``.``, ``exec``): they count at the head of a command.
_RUNNER_WORDS = frozenset({"eval", "source", ".", "exec"})
#: Reserved words and builtins (``_SHELL_WORDS``) that change nothing a later command of the same
#: shell sees: tests, output, lookups, grouping and control flow. Every other one may set a
#: variable (``read``, ``for``, ``getopts``, ``printf -v``), an option, an alias, a function, a
#: trap, a limit or the directory.
_STATELESS_WORDS = frozenset(
    """! [ [[ ]] { } case do done echo elif else esac false fi help if in jobs kill pwd test then
    time times true type until wait whence where which while""".split()
)
_STATE_WORDS = (_SHELL_WORDS - _STATELESS_WORDS) | _RUNNER_WORDS
#: Tokens of a command line: a redirection operator (its target word is no command), a
#: separator after which a command may start (an operator, a parenthesis, a newline, ``!``; a
#: brace standing alone), or a word: a run of anything else, quotes, backquotes, ``$`` and
#: braces included (``{c,}d`` is one word, brace-expanded). A quoted
#: blank or operator splits a word here where the shell would not: a false alarm at worst.
_TOKENS = re.compile(r"""[0-9]*(?:&>>?|<<<|<<-?|<>|>>|>&|<&|>\||<|>)|[;&|()\n!]|[^\s;&|()<>!]+""")
_REDIRECT = re.compile(r"[0-9]*&?[<>]")
#: Words after which the next word is still a command's head (reserved words, precommand
#: modifiers), and those whose flags (``command -p``, ``time -p``) keep it there too.
_STILL_HEAD = frozenset("then do else elif if while until time builtin command noglob nocorrect ]]".split())
_MODIFIERS = frozenset({"time", "builtin", "command"})
#: Deleted before a word is read: quotes and backslashes (``c'd'``, ``"c"d`` and ``c\d`` run ``cd``).
_UNQUOTE = str.maketrans("", "", "'\"\\")
#: Deleted for a second reading: what an expansion may leave nothing of (``c``d``, ``c$()d``,
#: ``{c,}d`` all make ``cd``).
_SQUEEZE = str.maketrans("", "", "'\"\\`$(){},")
#: Splits a word into the words it may hold: ``alias go=cd``, ``{cd,src}``, ``x`cd x```.
_PARTS = re.compile(r"[=,{}`$()\[\]]+")
#: Marks that change shell state wherever they stand: ``=`` (an assignment, ``${A:=x}``,
#: ``let a=1``), ``((`` and ``$[`` (arithmetic that may assign), ``++`` / ``--`` after a name
#: (``${a[x++]}``, ``[[ x++ ]]``) or before one where bash reads arithmetic (a subscript,
#: ``${a[--x]}``; an operand of ``-eq`` and the like in ``[[ ]]``), ``()`` (a function definition),
#: ``$$`` (the shell's own process: ``renice -p $$``, ``prlimit --pid $$``).
_STATE_MARKS = re.compile(
    r"=|\(\(|\$\[|\+\+|\w--(?![\w-])|\[\s*--\w|-(?:eq|ne|lt|le|gt|ge)\s+--\w|--\w+\s+-(?:eq|ne|lt|le|gt|ge)\b"
    r"|\(\s*\)|\$\$"
)
#: A character that makes a line more than one command's blank-separated plain words.
_PLAIN = re.compile(r"""[;&|(){}\n`!'"\\$=<>\[*?,]""")


def _lines_of(command: object) -> list[str]:
    """The command lines in a command value: a string is one, each element of an argv one (any
    of them may be a shell's ``-c`` body), and a string that is a JSON argv (BR-25) its
    elements; a value of another type none."""
    if isinstance(command, str):
        argv = command_to_argv(command) if command.lstrip().startswith("[") else None
        return argv if argv is not None else [command]
    if isinstance(command, list) and all(isinstance(w, str) for w in command):
        return command
    return []


def _find(text: str, at_head: frozenset[str]) -> str | None:
    """What in ``text`` may do what ``at_head`` words do, or ``None``: a word of
    ``_DIRECTORY_WORDS`` anywhere (quoted, inside another word's expansion or value: ``go=cd``,
    ``{cd,x}``, ``c``d``); at the head of a command (after a separator, a reserved word, a
    modifier and its flags, assignments and redirections), a word of ``at_head`` or one whose
    name an expansion or a glob makes (``$CMD``, ``c`true`d``, ``[c]d``). A backslash-newline (a
    line continuation: ``c\\<newline>d`` is ``cd``) is deleted first."""
    text = text.replace("\\\n", "")
    if _PLAIN.search(text) is None:
        # Blank-separated plain words only: one command, read without the tokenizer.
        head, previous = True, ""
        for word in text.split():
            if word in _DIRECTORY_WORDS or (head and word in at_head):
                return word
            head = word in _STILL_HEAD or (head and word.startswith("-") and previous in _MODIFIERS)
            previous = word
        return None
    head, target, previous = True, False, ""
    for m in _TOKENS.finditer(text):
        token = m.group(0)
        if _REDIRECT.match(token):
            target = True  # the next word is where the redirection goes, not a command
            continue
        if len(token) == 1 and token in ";&|(){}\n!":  # a brace alone opens or closes a group
            head, target = True, False
            continue
        if target:
            target = False
            continue
        word = token.translate(_UNQUOTE)
        parts = [p for p in _PARTS.split(word) if p]
        squeezed = token.translate(_SQUEEZE)
        for candidate in (*parts, squeezed):
            if candidate in _DIRECTORY_WORDS:
                return candidate
        assignment = _ASSIGNMENT.match(word) is not None
        if head and not assignment:
            if word in at_head or squeezed in at_head or any(p in at_head for p in parts):
                return word  # parts: brace expansion ({.,env.sh}), a command substitution
            if ("$" in token or "`" in token) or (word not in ("[", "[[") and any(c in word for c in "*?[")):
                return word  # the command's name is made by an expansion or a glob
        elif "`" in token and any(p in at_head for p in word.split("`")[1:]):
            return word  # a command substitution begins a command of its own
        keep = word in _STILL_HEAD or assignment or (head and word.startswith("-") and previous in _MODIFIERS)
        head = keep
        if not word.startswith("-"):
            previous = word
    return None


#: Builtins and reserved words that may change the directory a shell reports without moving it
#: (``trap … DEBUG`` runs any text before each command; ``function`` defines one): Claude Code
#: records the directory its ``Bash`` keeps with ``pwd -P`` in the same shell after the command
#: (2.1.197), so a function named ``pwd`` moves it as much as ``cd`` does. At the head of a command.
_REPORT_WORDS = frozenset({"trap", "function"})
#: Builtins that run text given to them in the same shell, beyond ``_RUNNER_WORDS``: zsh 5.9's
#: ``emulate … -c`` and ``repeat N`` (its count comes before the command it runs), bash 5.2's
#: ``mapfile``/``readarray -C`` (a callback). At the head of a command.
_ALSO_RUN = frozenset({"emulate", "repeat", "mapfile", "readarray"})
_DIRECTORY_HEADS = _RUNNER_WORDS | _REPORT_WORDS | _ALSO_RUN
#: A function definition (``pwd() { …; }``), wherever it stands.
_DEFINITION = re.compile(r"\(\s*\)")
#: Every word :func:`changes_directory` may name holds one of these (a test before the scan).
_MAY_MOVE = re.compile(
    r"cd|chdir|pushd|popd|\.|eval|source|exec|trap|function|emulate|repeat|mapfile|readarray|\$|`|[*?\[]|\(\s*\)"
)


def changes_directory(command: object) -> str | None:
    """What in ``command`` (a command string, or an argv list: each element read as a command
    line) may change the working directory of the shell that runs it; ``None`` when nothing does.

    Conservative (:func:`_find`): a word of ``_DIRECTORY_WORDS`` anywhere, quoted or not, or one
    of ``_RUNNER_WORDS``, ``_REPORT_WORDS`` or ``_ALSO_RUN``, an expansion or a glob at the head of
    a command, or
    a function definition anywhere (what the shell reports as its directory, ``pwd``, may then
    be another). Not seen: a function or alias of the user's profile that changes directory
    (zoxide's ``z``) and zsh's ``AUTO_CD`` (a directory named as a command). A value of another
    type gives ``None`` (no shell runs it). 1–12 µs a command line on this machine; called only
    for a command that moves. Over :data:`MAX_READ` characters: :data:`TOO_LONG`, unread."""
    if _too_long(command):
        return TOO_LONG
    for line in _lines_of(command):
        flat = line.replace("\\\n", "").translate(_SQUEEZE)
        if _MAY_MOVE.search(flat) is not None or _MAY_MOVE.search(line) is not None:
            found = _find(line, _DIRECTORY_HEADS)
            if found is None and (m := _DEFINITION.search(line)) is not None:
                found = m.group(0)
            if found is not None:
                return found
    return None


def changes_state(command: object) -> str | None:
    """What in ``command`` may change any state a later command of the same shell process sees
    (the working directory, a variable, an option, an alias, a function, a trap, a limit);
    ``None`` when nothing does. Conservative as :func:`changes_directory`: any builtin or reserved
    word but the stateless ones at the head of a command, and every mark of ``_STATE_MARKS``
    (``=``, ``((``, ``$[``, ``x++``, ``()``). Over :data:`MAX_READ` characters: :data:`TOO_LONG`, unread."""
    if _too_long(command):
        return TOO_LONG
    for line in _lines_of(command):
        found = _find(line, _STATE_WORDS)
        if found is None and (m := _STATE_MARKS.search(line)) is not None:
            found = m.group(0)
        if found is not None:
            return found
    return None
