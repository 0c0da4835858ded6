"""Name helpers shared by the vocabulary and the repair ladder.

Pure functions over ``str``; no I/O.
"""

from __future__ import annotations

import re

#: Characters treated as interchangeable word separators in a tool name (``read_file``,
#: ``read-file``, ``read.file``, ``read file``, ``readFile`` after case folding all compare equal).
_SEPARATORS = re.compile(r"[ \t\r\n_\-.:/]+")

#: ASCII whitespace: the only blanks a name reading ignores (``\u3000`` or a no-break space is
#: part of a name, not padding).
ASCII_BLANKS = " \t\r\n"


def ascii_lower(text: str) -> str:
    """``text`` with ASCII letters lower-cased and every other character kept: ``ſ`` (long s)
    or ``K`` (Kelvin sign) never fold into ``s`` / ``k`` (resemblance is not spelling)."""
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = {c: c + 32 for c in range(ord("A"), ord("Z") + 1)}

#: ``mcp__<server>__<tool>``: Claude Code's MCP naming (code.claude.com docs, "MCP"); Codex
#: used the same flat form before it declared MCP servers as Responses ``namespace`` tools.
_MCP = re.compile(r"^mcp__(?P<server>.+?)__(?P<tool>.+)$")


def name_key(name: str) -> str:
    """Return the comparison key of a tool name: case-folded, separators removed.

    ``name_key("Read_File") == name_key("read-file") == name_key("readFile") == "readfile"``.
    Two names with the same key differ only by ASCII case and separators, which the ladder treats
    as lossless (rule 3); non-ASCII letters and blanks are compared as they are. Never used to *produce* a name: only declared names are ever emitted.
    """
    return ascii_lower(_SEPARATORS.sub("", name.strip(ASCII_BLANKS)))


def split_mcp(name: str) -> tuple[str, str] | None:
    """Split ``mcp__server__tool`` into ``("server", "tool")``; ``None`` for other names.

    A Responses namespace (``"mcp__server__"``) followed by its tool name splits the same way
    once joined: ``split_mcp("mcp__github__" + "create_issue") == ("github", "create_issue")``.
    """
    m = _MCP.match(name)
    if not m:
        return None
    return m.group("server"), m.group("tool")


def join_namespace(namespace: str | None, name: str) -> str:
    """The flat name of ``name`` inside a Responses ``namespace``.

    Codex declares ``{"type": "namespace", "name": "mcp__github__", ...}`` and joins namespace and
    name by concatenation (``mcp__github__create_issue``); a namespace written without the
    trailing ``__`` (``mcp__cua_repl``, BR-12) joins with ``__``. No namespace: ``name``.
    """
    if not namespace:
        return name
    if namespace.endswith(("__", ".", ":", "/")):
        return namespace + name
    return namespace + "__" + name


def split_flat(namespace: str | None, flat: str) -> str:
    """The name inside ``namespace`` whose flat name is ``flat`` (inverse of
    :func:`join_namespace`); ``flat`` itself when it does not start with the namespace's prefix."""
    prefix = join_namespace(namespace, "") if namespace else ""
    return flat[len(prefix) :] if prefix and flat.startswith(prefix) else flat
