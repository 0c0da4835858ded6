"""Tool-name grammars of LLM APIs, and deterministic aliases for names an upstream rejects.

A grammar says which names an upstream accepts: allowed characters, the allowed first
character, the maximum length. A declared name outside the grammar is sent upstream as an
alias — a readable prefix plus a short hash, never colliding with another declared name — and
renamed back in every answer (the ladder's ``reverse_map`` step). Sources per grammar below.
"""

from __future__ import annotations

import functools
import hashlib
import re
from collections.abc import Iterable

from pydantic import BaseModel
from pydantic import ConfigDict


class NameGrammar(BaseModel):
    """The tool names one upstream accepts.

    ``chars``: a regex character class every character must match; ``first``: a class the
    first character must match (``None``: same as ``chars``); ``max_length``: characters.
    ``source``: where the rule is written down (API docs, SDK source, a reported error text).
    """

    model_config = ConfigDict(frozen=True)

    name: str
    chars: str
    first: str | None = None
    max_length: int
    source: str

    def valid(self, tool_name: str) -> bool:
        """True when the upstream accepts ``tool_name``."""
        if not tool_name or len(tool_name) > self.max_length:
            return False
        if not re.fullmatch(f"{self.chars}+", tool_name):
            return False
        return self.first is None or re.match(self.first, tool_name) is not None

    def sanitize(self, tool_name: str) -> str:
        """``tool_name`` with every disallowed character replaced by ``_`` and, when the first
        character is not allowed first, ``t_`` in front. Not truncated."""
        out = re.sub(f"(?!{self.chars}).", "_", tool_name, flags=re.DOTALL) or "t"
        if self.first is not None and not re.match(self.first, out):
            out = "t_" + out
        return out


#: The grammars toolvocab knows (wire-formats §5 in ``docs/references.md``; each cites its source).
GRAMMARS: dict[str, NameGrammar] = {
    g.name: g
    for g in (
        NameGrammar(
            name="openai",
            chars=r"[a-zA-Z0-9_-]",
            max_length=64,
            source="openai SDK shared_params/function_definition.py: a-z, A-Z, 0-9, underscores and dashes, "
            "maximum length 64; API error 'string does not match pattern ^[a-zA-Z0-9_-]+$' / "
            "'string_above_max_length'",
        ),
        NameGrammar(
            name="anthropic",
            chars=r"[a-zA-Z0-9_-]",
            max_length=128,
            source="Messages API error text since mid-2025: tools.N.custom.name: String should match pattern "
            "'^[a-zA-Z0-9_-]{1,128}$' (modelcontextprotocol/modelcontextprotocol#1345)",
        ),
        NameGrammar(
            name="anthropic64",
            chars=r"[a-zA-Z0-9_-]",
            max_length=64,
            source="Anthropic-format gateways that keep the documented 64 limit (Kiro #7684; DeepSeek /anthropic)",
        ),
        NameGrammar(
            name="gemini",
            chars=r"[a-zA-Z0-9_.:-]",
            first=r"[a-zA-Z_]",
            max_length=63,
            source="Gemini API INVALID_ARGUMENT text: must start with a letter or an underscore; a-z, A-Z, 0-9, "
            "underscores, dots, dashes (newer docs: colons); maximum length 64 — 63 used, as Gemini CLI's "
            "generateValidName notes the real limit is 63 (google-gemini/gemini-cli#6704)",
        ),
        NameGrammar(
            name="bedrock",
            chars=r"[a-zA-Z0-9_]",
            first=r"[a-zA-Z]",
            max_length=64,
            source="Bedrock Converse: toolSpec.name must satisfy [a-zA-Z][a-zA-Z0-9_]* (elastic/kibana#206487); 64",
        ),
        NameGrammar(
            name="kimi",
            chars=r"[a-zA-Z0-9_-]",
            first=r"[a-zA-Z_]",
            max_length=128,
            source="Moonshot Kimi: ^[a-zA-Z_][a-zA-Z0-9-_]{0,127}$ (third-party documentation)",
        ),
    )
}

#: The grammar of each dialect's first-party API.
DIALECT_GRAMMAR: dict[str, str] = {
    "anthropic": "anthropic",
    "openai_chat": "openai",
    "openai_responses": "openai",
    "gemini": "gemini",
}

#: Known hosts whose grammar differs from their dialect's first-party API: (host regex, dialect
#: or ``None`` for any, grammar name). First match wins.
HOST_GRAMMAR: tuple[tuple[str, str | None, str], ...] = (
    (r"(^|\.)deepseek\.com$", "anthropic", "anthropic64"),
    (r"(^|\.)moonshot\.(ai|cn)$", None, "kimi"),
    (r"bedrock", None, "bedrock"),
)


@functools.lru_cache(maxsize=256)
def grammar_for(dialect: str, host: str = "", override: str | None = None) -> NameGrammar:
    """The grammar for a request of ``dialect`` to ``host``; ``override`` names one of
    :data:`GRAMMARS` (a profile's choice). Raises ``KeyError`` for an unknown override.
    Memoized (a pure function of constant tables; 256 combinations kept)."""
    if override:
        return GRAMMARS[override]
    for pattern, only, grammar in HOST_GRAMMAR:
        if (only is None or only == dialect) and re.search(pattern, host or ""):
            return GRAMMARS[grammar]
    return GRAMMARS[DIALECT_GRAMMAR.get(dialect, "openai")]


def alias(tool_name: str, grammar: NameGrammar, taken: Iterable[str], *, salt: str = "") -> str:
    """A name ``grammar`` accepts for ``tool_name``: readable prefix + ``_`` + 8 hex.

    The hash is SHA-256 over ``tool_name`` (+ ``salt``, used to tell duplicates apart), so the
    same name always gets the same alias; a prefix is the sanitized name cut to fit. If the
    result is in ``taken`` (declared names, aliases already given) the hash is taken over a
    counter too until it is free. ``mcp__plugin_x__a_very_long_tool`` →
    ``mcp__plugin_x__a_very_…_1a2b3c4d``.
    """
    used = set(taken)
    clean = grammar.sanitize(tool_name)
    if not re.search(r"[A-Za-z0-9]", clean):
        clean = "tool"  # nothing readable survives (a non-ASCII name): a neutral prefix
    n = 0
    while True:
        # surrogatepass: a name may hold a lone surrogate (an escape JSON allows)
        digest = hashlib.sha256(
            f"{tool_name}{salt}{'#' + str(n) if n else ''}".encode("utf-8", "surrogatepass")
        ).hexdigest()[:8]
        room = grammar.max_length - 9
        candidate = f"{clean[:room]}_{digest}"
        if not grammar.valid(candidate):  # e.g. a prefix ending in a char not allowed last: none today
            candidate = f"t_{digest}"
        if candidate not in used:
            return candidate
        n += 1
