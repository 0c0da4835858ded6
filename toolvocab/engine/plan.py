"""Request-side plan: the names sent upstream and the prompt sentence.

The upstream half of the design: "rename the tool, keep the caller's schema, keep the caller's
description, and record the map". A name changes on the way up only when the upstream's
grammar rejects it, when it is declared twice, or when a rename profile asks for the
capability's name; the map is a bijection per flow and every answer is renamed back.

The prompt layer (``auto`` mode only) adds one sentence naming the declared tools that the
client's own system text does not mention, so the model has the names on the table without a
second, competing list. A client that names all its tools in its prompt gets nothing.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Callable
from collections.abc import Iterable
from typing import Any
from typing import TypeVar

from pydantic import BaseModel
from pydantic import ConfigDict
from pydantic import Field

from toolvocab.engine.grammar import GRAMMARS
from toolvocab.engine.grammar import NameGrammar
from toolvocab.engine.grammar import alias
from toolvocab.engine.ladder import DUPLICATE_MARK
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import ToolKind
from toolvocab.engine.names import join_namespace
from toolvocab.engine.names import split_flat
from toolvocab.engine.profiles import Profile
from toolvocab.engine.vocabulary import entries_for


class Rename(BaseModel):
    """One name the request side changed: ``caller`` → ``upstream``, and ``why`` (``grammar``,
    ``profile``, ``duplicate`` or ``transcript``) with a sentence in ``detail``."""

    caller: str
    upstream: str | None
    why: str
    detail: str


class Plan(BaseModel):
    """What the request side changes for one flow.

    ``rename_map`` maps a declared tool's flat name (first declaration) — or a name replayed in
    the transcript — to the name sent upstream; it is a bijection. ``duplicates`` maps a name
    declared more than once to the upstream names of its second, third… declarations (``None``:
    an identical repeat, dropped; the name itself: a provider-defined or free-text tool, whose name
    is fixed, sent as declared). ``reverse_map`` inverts both, for the ladder's second step, with
    ``earlier``: the aliases a WebSocket's earlier turns sent upstream (:meth:`after`).
    ``prompt_sentence`` is the sentence added to the system text, or ``None``; ``unmentioned``
    lists the (upstream) names it names. ``renames`` explains every rename; ``skipped`` every
    rename a profile asked for and the plan declined (collision, ambiguity), and every repeated
    name it could not alias.

    A plan holds nothing of one flow: the requests that give :func:`make_plan` the same inputs
    share one (:class:`PlanCache`). It is frozen once built; its dicts and lists are never
    changed either (``tests/unit/test_plan_cache.py`` holds that for every dialect's readers and
    writers). What belongs to one flow (its key, the ids its request aliased) is the dialects'
    ``FlowContext``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    rename_map: dict[str, str] = Field(default_factory=dict)
    duplicates: dict[str, list[str | None]] = Field(default_factory=dict)
    prompt_sentence: str | None = None
    unmentioned: list[str] = Field(default_factory=list)
    renames: list[Rename] = Field(default_factory=list)
    skipped: list[str] = Field(default_factory=list)
    profile: str | None = None
    grammar: str | None = None
    earlier: dict[str, str] = Field(default_factory=dict)

    @property
    def reverse_map(self) -> dict[str, str]:
        """Upstream name → declared flat name; a duplicate's alias → ``flat + DUPLICATE_MARK + k``
        (its declaration number), for :func:`toolvocab.engine.ladder.resolve`; then
        :attr:`earlier`'s aliases this plan's own names do not take."""
        out = dict(self.earlier)
        out.update({v: k for k, v in self.rename_map.items()})
        for name, aliases in self.duplicates.items():
            for k, a in enumerate(aliases, start=2):
                if a is not None and a != name:  # a != name: sent under its own name (a provider tool)
                    out[a] = f"{name}{DUPLICATE_MARK}{k}"
        return out

    def after(self, earlier: dict[str, str]) -> Plan:
        """This plan for a later turn of the WebSocket whose earlier turns sent the upstream
        names ``earlier`` (a :attr:`reverse_map`): a copy whose :attr:`reverse_map` also reads back
        each transport alias among them (a name the upstream's grammar made, not another agent's
        name) that this plan's own names do not take, so an answer that repeats an alias the
        server kept from an earlier turn gives the client its own name (a tool this turn does not
        declare: the client reports it). A repeated declaration's alias reads back as the name
        alone: which declaration a number names is a request's own, and a client tells such
        tools apart by nothing but their name. ``self`` when nothing is added; a cached plan is
        never changed."""
        own = self.reverse_map
        kept = {
            upstream: flat.partition(DUPLICATE_MARK)[0]
            for upstream, flat in earlier.items()
            if upstream not in own and not entries_for(split_flat(None, upstream))
        }
        return self.model_copy(update={"earlier": {**self.earlier, **kept}}) if kept else self

    @property
    def changes_request(self) -> bool:
        """True when a dialect's ``apply_request`` has something to apply: a rename, a repeated
        declaration to drop or alias, or the prompt sentence."""
        return bool(self.rename_map or self.duplicates or self.prompt_sentence)

    def upstream_name(self, flat: str) -> str:
        """The name sent upstream for the declared flat name ``flat``."""
        return self.rename_map.get(flat, flat)


#: The characters :func:`mentions` treats as part of an identifier.
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")


class DuplicateCursor:
    """Walks a request's tool declarations in order and says what to do with each one.

    ``step(flat)`` returns ``("keep", None)`` for a first declaration or a repeat sent as declared
    (a provider tool), ``("drop", None)`` for an identical repeat, or ``("rename", alias)`` for a
    different function tool under a repeated name.
    """

    def __init__(self, plan: Plan) -> None:
        self._plan = plan
        self._seen: dict[str, int] = {}

    def step(self, flat: str) -> tuple[str, str | None]:
        """The action for the next declaration named ``flat``."""
        n = self._seen.get(flat, 0)
        self._seen[flat] = n + 1
        if n == 0:
            return "keep", None
        aliases = self._plan.duplicates.get(flat) or []
        if n - 1 < len(aliases):
            target = aliases[n - 1]
            if target == flat:
                return "keep", None
            return ("drop", None) if target is None else ("rename", target)
        return "keep", None


def mentions(text: str, name: str) -> bool:
    """True when ``name`` occurs in ``text`` as a whole word (not inside a longer identifier).

    ``mentions("use the Bash tool", "Bash")`` is True; ``mentions("use BashOutput", "Bash")`` is
    False. Case-sensitive: the sentence exists to give the exact spelling.
    """
    if not name:
        return re.search(r"(?<![A-Za-z0-9_])(?![A-Za-z0-9_])", text) is not None
    # str.find, not a regex: a pattern that opens with a lookbehind is tried at every position
    # of the text (one pass per declared tool over a long system prompt).
    end = len(name)
    at = text.find(name)
    while at >= 0:
        if (at == 0 or text[at - 1] not in _WORD) and (at + end == len(text) or text[at + end] not in _WORD):
            return True
        at = text.find(name, at + 1)
    return False


def prompt_sentence(
    tools: Toolset, system_texts: Iterable[str], upstream_name: Callable[[str], str] | None = None
) -> tuple[str | None, list[str]]:
    """The sentence naming declared tools the system text does not mention, and those names.

    Only client tools (``function`` and ``freeform``) are named, by the name the model will
    see (``upstream_name(flat)``, default: as declared); provider-defined tools are the
    provider's own. Returns ``(None, [])`` when every such tool is mentioned or none is declared.
    """
    text = "\n".join(system_texts)
    missing = []
    for t in tools.tools:
        if t.kind not in (ToolKind.FUNCTION, ToolKind.FREEFORM):
            continue
        seen = upstream_name(t.qualified) if upstream_name else t.qualified
        wire = split_flat(t.namespace, seen)
        if not mentions(text, wire):
            missing.append(wire)
    missing = list(dict.fromkeys(missing))
    if not missing:
        return None, []
    if len(missing) == 1:
        listed = missing[0]
    else:
        listed = ", ".join(missing[:-1]) + " and " + missing[-1]
    sentence = f"Call tools only by the exact names declared in this request, which include {listed}."
    return sentence, missing


def declaration_text(value: object) -> str | None:
    """The canonical JSON text of one wire declaration (a tool entry as the client sent it):
    keys sorted at every level, no spaces, non-ASCII and lone surrogates as ``\\uXXXX``
    escapes, integers exact. Two entries are the same declaration exactly when these texts are
    equal (``true`` and ``1``, ``1`` and ``1.0`` differ, unlike Python's ``==``). ``None`` when
    the value cannot be written (it then repeats nothing)."""
    import json

    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        return None


def same_declaration(tool: DeclaredTool, earlier: DeclaredTool) -> bool:
    """True when ``tool`` repeats ``earlier`` byte for byte, so dropping it loses nothing.

    With the wire texts (:attr:`DeclaredTool.declaration`, set by the dialects for repeated
    names) only equal texts are the same. Tools built without them (engine callers) have
    nothing but the model to compare; one with a text and one without are different."""
    if tool.declaration is not None or earlier.declaration is not None:
        return tool.declaration is not None and tool.declaration == earlier.declaration
    return tool == earlier


def make_plan(
    tools: Toolset,
    system_texts: Iterable[str],
    *,
    add_sentence: bool,
    grammar: NameGrammar | None = None,
    profile: Profile | None = None,
    transcript_names: Iterable[str] = (),
    renames: bool = True,
) -> Plan:
    """Build the :class:`Plan` for one request.

    Order: the profile's capability renames (skipped on a collision with a declared name, or
    when the capability is held by zero or two+ declared tools); then every declared name the
    ``grammar`` rejects gets an alias (:func:`toolvocab.engine.grammar.alias`); then repeated names
    (identical repeats dropped, different function tools aliased, a provider-defined or free-text
    tool sent as declared); then names replayed in the transcript
    that the grammar rejects. A repeat is identical only byte for byte (:func:`same_declaration`:
    a field the model does not read, ``strict`` or ``cache_control``, makes it another tool).
    Provider-defined and free-text tools are never renamed. The
    prompt sentence (``add_sentence``: ``auto`` mode) names tools by their upstream names.
    ``renames=False``: no name changes upstream (the answer will not be read, so none could be
    given back): no profile, no grammar, a differing repeat sent as declared; identical repeats
    are still dropped (nothing to give back for them).
    """
    if not renames:
        profile, grammar = None, None
    plan = Plan(profile=profile.name if profile else None, grammar=grammar.name if grammar else None)
    firsts: dict[str, DeclaredTool] = {}
    for tool in tools.tools:
        firsts.setdefault(tool.qualified, tool)
    transcript_names = tuple(dict.fromkeys(transcript_names))
    # A name the upstream will see for another tool: declared, or replayed in the transcript (an
    # earlier call, maybe to a tool no longer declared). No rename or alias may land on one.
    taken: set[str] = set(firsts) | {t.name for t in tools.tools} | set(transcript_names)
    # What a declared tool's alias may not land on: ``taken`` but the transcript's names. An
    # alias is a hash of the tool's own name (:func:`alias`), so a transcript name it lands on is
    # this tool's alias from an earlier turn that reached the client (a stream given up): taken
    # again, the conversation stays one tool under one name and the model's repeat of it is
    # named back, where a new alias would leave the client's history under a name no tool has.
    own = taken - set(transcript_names)

    if profile is not None:
        for capability, target in profile.names.items():
            holders = [
                t
                for t in firsts.values()
                if t.kind is ToolKind.FUNCTION and t.server is None and t.capability == capability
            ]
            if len(holders) != 1:
                plan.skipped.append(
                    f"profile {profile.name}: {capability} → {target} skipped: "
                    + (
                        "no declared tool has that capability"
                        if not holders
                        else f"{len(holders)} declared tools have it ({', '.join(t.qualified for t in holders)})"
                    )
                )
                continue
            tool = holders[0]
            if target == tool.name:
                continue
            if target in taken:
                plan.skipped.append(
                    f"profile {profile.name}: {tool.qualified} → {target} skipped: the client already declares or uses {target}"
                )
                continue
            plan.rename_map[tool.qualified] = target
            taken.add(target)
            own.add(target)
            plan.renames.append(
                Rename(
                    caller=tool.qualified,
                    upstream=target,
                    why="profile",
                    detail=f"profile {profile.name}: {capability} is sent as {target}",
                )
            )

    if grammar is not None:
        for flat, tool in firsts.items():
            if tool.kind is not ToolKind.FUNCTION:
                continue
            wire = split_flat(tool.namespace, plan.rename_map.get(flat, flat))
            if grammar.valid(wire):
                continue
            new = alias(wire, grammar, own)
            taken.add(new)
            own.add(new)
            plan.rename_map[flat] = join_namespace(tool.namespace, new)
            plan.renames.append(
                Rename(
                    caller=flat,
                    upstream=plan.rename_map[flat],
                    why="grammar",
                    detail=f"{wire!r} is not a valid {grammar.name} tool name",
                )
            )

    counts: dict[str, list[DeclaredTool]] = {}
    for tool in tools.tools:
        counts.setdefault(tool.qualified, []).append(tool)
    for flat, group in counts.items():
        if len(group) < 2:
            continue
        aliases: list[str | None] = []
        for k, tool in enumerate(group[1:], start=2):
            if any(same_declaration(tool, earlier) for earlier in group[: k - 1]):
                aliases.append(None)
                plan.renames.append(
                    Rename(
                        caller=flat,
                        upstream=None,
                        why="duplicate",
                        detail=f"declaration {k} of {flat} repeats an earlier one exactly; dropped",
                    )
                )
                continue
            if tool.kind is not ToolKind.FUNCTION or not renames:
                # A provider-defined or free-text tool keeps the name it is defined by, and it is
                # another tool than the earlier one: dropping it would take a tool from the model
                # unseen. It goes up as declared; the upstream says whether it takes the name twice.
                aliases.append(flat)
                why = "is not a function tool, so its name cannot change" if renames else "cannot be renamed"
                plan.skipped.append(
                    f"declaration {k} of {flat} {why}, and it differs "
                    f"from an earlier one: sent as declared (the upstream sees {flat} more than once)"
                )
                continue
            g = grammar or GRAMMARS["openai"]
            new = alias(tool.name, g, own, salt=f"#{k}")
            taken.add(new)
            own.add(new)
            aliases.append(join_namespace(tool.namespace, new))
            plan.renames.append(
                Rename(
                    caller=flat,
                    upstream=aliases[-1],
                    why="duplicate",
                    detail=f"declaration {k} of {flat} differs from the first; the client cannot tell them apart",
                )
            )
        if any(a != flat for a in aliases):
            plan.duplicates[flat] = aliases

    if grammar is not None:
        for name in transcript_names:
            if name in firsts or name in plan.rename_map or grammar.valid(name) or not name:
                continue
            new = alias(name, grammar, taken)
            taken.add(new)
            plan.rename_map[name] = new
            plan.renames.append(
                Rename(
                    caller=name,
                    upstream=new,
                    why="transcript",
                    detail=f"{name!r}, replayed in the transcript, is not a valid {grammar.name} tool name",
                )
            )

    if add_sentence:
        sentence, unmentioned = prompt_sentence(tools, system_texts, plan.upstream_name)
        return plan.model_copy(update={"prompt_sentence": sentence, "unmentioned": unmentioned})
    return plan


#: Characters of system text a :class:`PlanCache` entry may hold (1 Mi).
PLAN_CACHE_TEXT = 1 << 20


V = TypeVar("V")


def cache_get(cache: OrderedDict[Any, V], key: Any) -> V | None:
    """``cache.get(key)`` for a cache kept in order of use: a hit becomes the newest entry
    (``move_to_end``). The newest entry is compared with ``key`` whole first, before any hash: an
    agent sends the same tools section and system prompt every turn, each a fresh object, and
    hashing one reads every byte (several times the compare). ``None`` when ``key`` is absent."""
    if cache:
        last, value = next(reversed(cache.items()))
        if last == key:
            return value
    value = cache.get(key)
    if value is not None:
        cache.move_to_end(key)
    return value


class PlanCache:
    """:func:`make_plan` for a stream of requests, each distinct input planned once.

    An agent sends the same tools, system prompt and (nearly) the same transcript names every
    turn; the plan for them is the same. :meth:`plan` takes :func:`make_plan`'s arguments and
    returns the plan :func:`make_plan` made of them first (plans are never changed: flows share
    one). Keys: the
    :class:`Toolset`, the :class:`Profile` and the grammar by identity (each entry holds a
    reference to all three, so an identity cannot be reused while its entry lives), the system
    texts themselves (a dict compares them whole on a hash match: no digest can collide; a hash
    of a string is computed once per string object, at memory speed), the transcript's distinct
    names in order of first appearance (a name's repeats change nothing in :func:`make_plan`),
    ``add_sentence``, ``renames``. ``size``: entries kept (the least recently used dropped; :func:`cache_get`). System texts longer than
    :data:`PLAN_CACHE_TEXT` characters in all are planned afresh, uncached: a cache entry holds at
    most that much of a body."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._plans: OrderedDict[tuple[Any, ...], tuple[tuple[Any, ...], Plan]] = OrderedDict()

    def plan(
        self,
        tools: Toolset,
        system_texts: Iterable[str],
        *,
        add_sentence: bool,
        grammar: NameGrammar | None = None,
        profile: Profile | None = None,
        transcript_names: Iterable[str] = (),
        renames: bool = True,
    ) -> Plan:
        """The plan :func:`make_plan` makes of these arguments (see the class docstring)."""
        texts = tuple(system_texts)
        names = tuple(dict.fromkeys(transcript_names))
        options = {
            "add_sentence": add_sentence,
            "grammar": grammar,
            "profile": profile,
            "transcript_names": names,
            "renames": renames,
        }
        if sum(map(len, texts)) > PLAN_CACHE_TEXT:
            return make_plan(tools, texts, **options)
        key = (id(tools), id(profile), id(grammar), texts, names, add_sentence, renames)
        hit = cache_get(self._plans, key)
        if hit is not None:
            return hit[1]
        plan = make_plan(tools, texts, **options)
        self._plans[key] = ((tools, profile, grammar), plan)
        if len(self._plans) > self.size:
            self._plans.popitem(last=False)
        return plan

    def holds(self, plan: Plan) -> bool:
        """True when ``plan`` is one this cache keeps (a plan made afresh, of system texts past
        :data:`PLAN_CACHE_TEXT`, is not): the last used is looked at first."""
        if not self._plans:
            return False
        if next(reversed(self._plans.values()))[1] is plan:
            return True
        return any(kept is plan for _, kept in self._plans.values())
