"""One module per wire format; each knows where tool names live and nothing else.

``detect(method, path, body)`` returns the dialect whose request shape matches, or ``None``.
"""

from __future__ import annotations

from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
from toolvocab.dialects.base import JSON
from toolvocab.dialects.base import Dialect
from toolvocab.dialects.gemini import DIALECT as GEMINI
from toolvocab.dialects.openai_chat import DIALECT as OPENAI_CHAT
from toolvocab.dialects.openai_responses import DIALECT as OPENAI_RESPONSES

#: Every dialect, most specific path first.
DIALECTS: tuple[Dialect, ...] = (ANTHROPIC, OPENAI_CHAT, OPENAI_RESPONSES, GEMINI)


def detect(method: str, path: str, body: JSON) -> Dialect | None:
    """The dialect of a request, from its method, path (with query) and parsed JSON body."""
    for dialect in DIALECTS:
        if dialect.matches(method, path, body):
            return dialect
    return None


def by_name(name: str) -> Dialect | None:
    """The dialect called ``name`` (``"anthropic"``…), or ``None``."""
    for dialect in DIALECTS:
        if dialect.name == name:
            return dialect
    return None
