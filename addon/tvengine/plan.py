"""Request-side plan: the rename map sent upstream and the prompt sentence.

The prompt layer (``auto`` mode only) adds one sentence naming the declared tools that the
client's own system text does not mention, so the model has the names on the table without a
second, competing list. A client that names all its tools in its prompt gets nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from pydantic import BaseModel
from pydantic import Field

from tvengine.ladder import Toolset
from tvengine.models import ToolKind


class Plan(BaseModel):
    """What the request side changes for one flow.

    ``rename_map`` maps a declared tool's flat name to the name sent upstream (empty unless a
    grammar or profile needs a different name). ``reverse_map`` is its inverse, used by the
    ladder's second step. ``prompt_sentence`` is the sentence added to the system text, or
    ``None``. ``unmentioned`` lists the declared names the sentence names. ``flow_key`` identifies
    the flow (for deterministic call ids, :mod:`tvengine.ids`).
    """

    rename_map: dict[str, str] = Field(default_factory=dict)
    prompt_sentence: str | None = None
    unmentioned: list[str] = Field(default_factory=list)
    flow_key: str = ""

    @property
    def reverse_map(self) -> dict[str, str]:
        """Upstream name → declared flat name."""
        return {v: k for k, v in self.rename_map.items()}


def mentions(text: str, name: str) -> bool:
    """True when ``name`` occurs in ``text`` as a whole word (not inside a longer identifier).

    ``mentions("use the Bash tool", "Bash")`` is True; ``mentions("use BashOutput", "Bash")`` is
    False. Case-sensitive: the sentence exists to give the exact spelling.
    """
    return re.search(rf"(?<![A-Za-z0-9_]){re.escape(name)}(?![A-Za-z0-9_])", text) is not None


def prompt_sentence(tools: Toolset, system_texts: Iterable[str]) -> tuple[str | None, list[str]]:
    """The sentence naming declared tools the system text does not mention, and those names.

    Only client tools (``function`` and ``freeform``) are named; provider-defined tools are the
    provider's own. Returns ``(None, [])`` when every such tool is mentioned or none is declared.
    """
    text = "\n".join(system_texts)
    missing = [
        t.name
        for t in tools.tools
        if t.kind in (ToolKind.FUNCTION, ToolKind.FREEFORM) and not mentions(text, t.name)
    ]
    missing = list(dict.fromkeys(missing))
    if not missing:
        return None, []
    if len(missing) == 1:
        listed = missing[0]
    else:
        listed = ", ".join(missing[:-1]) + " and " + missing[-1]
    sentence = f"Call tools only by the exact names declared in this request, which include {listed}."
    return sentence, missing


def make_plan(tools: Toolset, system_texts: Iterable[str], *, add_sentence: bool, flow_key: str = "") -> Plan:
    """Build the :class:`Plan` for one request (``add_sentence`` is true in ``auto`` mode only)."""
    sentence, missing = prompt_sentence(tools, system_texts) if add_sentence else (None, [])
    return Plan(prompt_sentence=sentence, unmentioned=missing, flow_key=flow_key)
