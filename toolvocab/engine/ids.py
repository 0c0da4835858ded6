"""Deterministic tool-call ids for answers whose calls carry none (or a duplicate).

Same inputs, same id: a replay of the same flow gives the client the same ids (``tc_`` and 24
hex characters of a hash of the flow and the call's position).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from collections.abc import Iterable


def stable_call_id(flow_key: str, position: int) -> str:
    """``tc_`` + 24 hex chars of SHA-256 over ``"<flow_key>:<position>"``.

    ``flow_key`` identifies the flow (mitmproxy's ``flow.id``, kept in saved flows);
    ``position`` is the call's 0-based position in the answer. 27 characters: well under the
    64-character cap OpenAI puts on ``call_id`` (wire-formats §5).
    """
    digest = hashlib.sha256(f"{flow_key}:{position}".encode()).hexdigest()
    return "tc_" + digest[:24]


#: The tool-call id pattern Anthropic enforces on ``tool_use.id`` in a request's history: a 400
#: ``tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'`` (maximhq/bifrost#5097,
#: microsoft/vscode#327597) for ids another model produced, such as Kimi's ``functions.Bash:0``.
UPSTREAM_ID = re.compile(r"[a-zA-Z0-9_-]+")

#: The longest ``call_id`` OpenAI's Responses API takes in a request's input: a 400 ``Invalid
#: 'input[8].call_id': string too long. Expected max 64, got 86.`` (AstrBotDevs/AstrBot#7735).
RESPONSES_CALL_ID_MAX = 64


def anthropic_accepts(call_id: str) -> bool:
    """True for an id Anthropic takes in ``tool_use.id`` (:data:`UPSTREAM_ID`)."""
    return UPSTREAM_ID.fullmatch(call_id) is not None


#: The characters :data:`UPSTREAM_ID` takes, as bytes (:func:`anthropic_accepts_all`): all ASCII.
_UPSTREAM_ID_BYTES = bytes(c for c in range(128) if UPSTREAM_ID.fullmatch(chr(c)))


def anthropic_accepts_all(ids: Iterable[str]) -> bool:
    """True when :func:`id_aliases` of ``ids`` (strings) gives ``{}`` under Anthropic's rule:
    every non-empty id matches :data:`UPSTREAM_ID`. The pattern is one character class
    repeated, so the ids joined match it exactly when each does: the joined text is ASCII and
    deleting the class's characters from it leaves nothing (``bytes.translate``, a third or
    less of a regex match's time on a transcript's ids)."""
    joined = "".join(ids)
    return joined.isascii() and not joined.encode("ascii").translate(None, _UPSTREAM_ID_BYTES)


def responses_accepts(call_id: str) -> bool:
    """True for a ``call_id`` OpenAI's Responses API takes (:data:`RESPONSES_CALL_ID_MAX` characters)."""
    return len(call_id) <= RESPONSES_CALL_ID_MAX


def id_aliases(ids: Iterable[str], accepts: Callable[[str], bool] = anthropic_accepts) -> dict[str, str]:
    """Aliases for the ids in ``ids`` that ``accepts`` (the upstream's rule; Anthropic's pattern by
    default) rejects: original → alias.

    An alias is ``tvid_`` + 24 hex chars of SHA-256 over the id (29 characters, which every rule
    here accepts), the same for the
    same id in every request, so a transcript replayed turn after turn sends the same alias.
    Collision-free: an alias never equals an id in ``ids`` or another alias (on a clash the hash
    is taken over ``"<id>#<n>"``, ``n`` = 1, 2, …). Valid ids and empty strings (which nothing
    can pair unambiguously) get no alias; an empty input gives ``{}``. Under
    :func:`anthropic_accepts` and :func:`responses_accepts` all the ids are checked at once first
    (:func:`anthropic_accepts_all`, the longest one's length): a transcript whose ids all pass
    costs one check, not one call per id.
    """
    strings = [i for i in ids if isinstance(i, str)]
    if (accepts is anthropic_accepts and anthropic_accepts_all(strings)) or (
        accepts is responses_accepts and max(map(len, strings), default=0) <= RESPONSES_CALL_ID_MAX
    ):
        return {}  # every id taken: one check over all of them, not one call per id
    seen = list(dict.fromkeys(strings))
    taken = set(seen)
    out: dict[str, str] = {}
    for original in seen:
        if not original or accepts(original):
            continue
        n = 0
        while True:
            text = original if n == 0 else f"{original}#{n}"
            new = "tvid_" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:24]
            if new not in taken:
                break
            n += 1
        taken.add(new)
        out[original] = new
    return out
