"""The per-flow record the addon keeps in ``flow.metadata["toolvocab"]``.

A pydantic model dumped with ``model_dump(mode="json")``: only str keys and JSON values, which
mitmproxy's tnetstring flow format stores and reads back (mitmproxy ``io/tnetstring.py``; a set,
datetime or model object would make ``-w`` drop the flow).
"""

from __future__ import annotations

import orjson
from pydantic import BaseModel
from pydantic import Field

from toolvocab.engine.errors import ToolError
from toolvocab.engine.models import Decision
from toolvocab.engine.plan import Rename


class FlowRecord(BaseModel):
    """What toolvocab saw and did in one flow.

    ``dialect``: wire format (``"anthropic"``…) or ``None`` when the flow was not handled;
    ``mode``: the ``toolvocab_mode`` in force; ``skipped``: one sentence on why nothing was
    done (``None`` when the flow was handled); ``declared``: the client's declared tool names
    (flat); ``rename_map``: declared name → upstream name, ``duplicates``: a name declared more
    than once → the upstream names of its later declarations (``None``: dropped), ``renames``:
    why each name changed (grammar, profile, duplicate, transcript; declined profile renames are
    in ``notes``), ``id_aliases``: a replayed tool-call id the upstream rejects → the alias sent in
    its place, ``profile`` / ``grammar``: what was in force; ``prompt_sentence``: the sentence
    added (or, in ``observe``, that would be added) and ``prompt_names`` the names it lists; ``request_changed`` / ``response_changed``:
    whether bytes were changed on each side; ``streamed``: the answer was rewritten as a stream;
    ``decisions``: one per tool call in the answer; ``tool_errors``: every tool result in the
    request's transcript that reports an error, classified (:mod:`toolvocab.engine.errors`; the same
    call id recurs in later requests of a session, so count distinct ids; only when something
    saves or shows flows: ``-w``, ``toolvocab_record``, mitmweb — plain mitmdump leaves it empty); ``notes``: anything else worth knowing
    (passthrough reasons, errors caught).
    """

    version: int = 1
    dialect: str | None = None
    mode: str
    host: str | None = None
    path: str | None = None
    model: str | None = None
    client: str | None = None
    status: int | None = None
    ttfb_ms: float | None = None
    total_ms: float | None = None
    calls_seen: int = 0
    calls_kept: int = 0
    calls_repaired: int = 0
    calls_left: int = 0
    skipped: str | None = None
    declared: list[str] = Field(default_factory=list)
    rename_map: dict[str, str] = Field(default_factory=dict)
    duplicates: dict[str, list[str | None]] = Field(default_factory=dict)
    renames: list[Rename] = Field(default_factory=list)
    id_aliases: dict[str, str] = Field(default_factory=dict)
    profile: str | None = None
    grammar: str | None = None
    prompt_sentence: str | None = None
    prompt_names: list[str] = Field(default_factory=list)
    request_changed: bool = False
    response_changed: bool = False
    streamed: bool = False
    decisions: list[Decision] = Field(default_factory=list)
    tool_errors: list[ToolError] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)

    def count_calls(self) -> None:
        """Fill the ``calls_*`` counters from ``decisions``."""
        self.calls_seen = len(self.decisions)
        self.calls_kept = sum(d.action.value == "keep" for d in self.decisions)
        self.calls_repaired = sum(d.action.value in ("rename", "fit") for d in self.decisions)
        self.calls_left = sum(d.action.value == "leave" for d in self.decisions)

    def dump(self) -> dict:
        """The JSON-safe dict stored in ``flow.metadata``.

        Arguments nested too deep for pydantic's serializer (about 255 levels) are dropped from
        the decisions, with a note, rather than losing the record.
        """
        try:
            return self.model_dump(mode="json")
        except ValueError:
            slim = self.model_copy(deep=False)
            slim.decisions = [
                d.model_copy(update={"arguments_before": None, "arguments_after": None, "arg_changes": []})
                for d in self.decisions
            ]
            slim.notes = [*self.notes, "tool-call arguments too deeply nested to record; left out"]
            return slim.model_dump(mode="json")

    def diff_lines(self) -> list[str]:
        """A readable before/after of every tool call and of the request side, one item a line.

        ``- shell {"command": ["bash", "-lc", "echo hi"]}`` / ``+ Bash {"command": "echo hi"}``
        followed by ``  rename at capability: <reason>``; unchanged calls show as ``= name``.
        """
        lines: list[str] = []
        for r in self.renames:
            lines.append(
                f"request: {r.caller} → {r.upstream if r.upstream is not None else '(dropped)'} ({r.why}: {r.detail})"
            )
        if self.prompt_sentence:
            lines.append(
                f"request: {'added' if self.request_changed else 'would add'} to the system prompt: {self.prompt_sentence}"
            )
        for d in self.decisions:
            before = _call_text(d.namespace, d.name, d.arguments_before)
            if d.changed:
                target = d.target or d.name
                after = _call_text(
                    d.target_namespace,
                    target,
                    d.arguments_after if d.arguments_after is not None else d.arguments_before,
                )
                lines += [f"- {before}", f"+ {after}"]
            else:
                lines.append(f"= {before}")
            lines.append(f"  {d.action.value} at {d.step.value}: {d.reason}")
            if d.lifted:
                lines.append("  lifted from the answer's text (the model wrote it as tool-call markup)")
        return lines

    def summary(self) -> str:
        """A one-line comment for mitmproxy's UI, e.g. ``toolvocab: shell→Bash (capability)``."""
        parts = []
        for d in self.decisions:
            if d.action.value == "rename":
                parts.append(f"{d.name}→{d.target} ({d.step.value})")
            elif d.action.value == "fit":
                parts.append(f"{d.name}: arguments fitted")
            elif d.action.value == "leave":
                parts.append(f"{d.name} left ({d.step.value})")
        if self.prompt_sentence:
            n = len(self.prompt_names)
            parts.append(f"prompt names {n} tool{'' if n == 1 else 's'}")
        if self.rename_map and self.request_changed:
            parts.append(f"{len(self.rename_map)} tools renamed upstream")
        if self.id_aliases and self.request_changed:
            parts.append(f"{len(self.id_aliases)} replayed ids aliased upstream")
        return "toolvocab: " + ("; ".join(parts) if parts else "no change")


def _call_text(namespace: str | None, name: str, arguments: dict | None) -> str:
    label = f"{namespace}{name}" if namespace else name
    if arguments is None:
        return f"{label} (arguments not a JSON object)"
    try:
        return f"{label} {orjson.dumps(arguments).decode()}"
    except TypeError:
        return f"{label} {arguments!r}"
