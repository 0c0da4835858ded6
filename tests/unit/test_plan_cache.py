""":class:`PlanCache` plans each distinct request once and must give every request the
plan :func:`make_plan` gives it: a wrong cache key would send one request's renames or prompt
sentence with another's."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from pydantic import ValidationError

from toolvocab.engine.grammar import GRAMMARS
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import PlanCache
from toolvocab.engine.plan import make_plan
from toolvocab.engine.profiles import Profile

#: Names that differ in what a grammar accepts (dots, a leading digit, 70 characters) and in
#: what a profile can rename (Bash and shell share a capability; Read and read_file another).
NAMES = ["Read", "Bash", "read_file", "shell", "Edit", "mcp__files__read", "web.search", "1tool", "x" * 70]
TOOL_SPECS = st.lists(
    st.tuples(st.sampled_from(NAMES), st.sampled_from(["function", "provider", "freeform"]), st.sampled_from([0, 1])),
    max_size=5,
)
SYSTEM = st.lists(
    st.sampled_from(["", "Use Read and Bash.", "Use the shell.", "web.search finds things", "Edit files"]), max_size=3
)
TRANSCRIPT = st.lists(st.sampled_from(NAMES + ["old.tool", "gone-tool", ""]), max_size=6)
PROFILES = [
    None,
    Profile(name="p1", names={"shell": "exec_command"}),
    Profile(name="p2", names={"read": "Read", "shell": "Bash"}, grammar="openai"),
    Profile(name="p1", names={"shell": "run"}),
]  # same name as another: identity, not name, tells them apart


def _toolset(spec: tuple[tuple[str, str, int], ...]) -> Toolset:
    tools = []
    for name, kind, schema in spec:
        tools.append(
            declared_tool(
                name,
                kind=ToolKind(kind),
                input_schema={
                    "type": "object",
                    "properties": {"a": {"type": "string"} if schema else {"type": "integer"}},
                },
            )
        )
    return Toolset(tools)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_every_request_gets_the_plan_make_plan_gives_it(data: Any) -> None:
    """A run of requests whose parts are drawn from pools of two or three (so inputs repeat, in
    part or whole), each Toolset either shared with earlier requests (as the request hook shares
    them) or built afresh: the cached plan equals :func:`make_plan`'s, field by field, flow key
    included."""
    cache = PlanCache(size=data.draw(st.integers(min_value=1, max_value=8)))
    pools = {
        "spec": data.draw(st.lists(TOOL_SPECS.map(tuple), min_size=1, max_size=3)),
        "system": data.draw(st.lists(SYSTEM, min_size=1, max_size=3)),
        "transcript": data.draw(st.lists(TRANSCRIPT, min_size=1, max_size=3)),
        "grammar": data.draw(st.lists(st.sampled_from([None, *GRAMMARS.values()]), min_size=1, max_size=2)),
        "profile": data.draw(st.lists(st.sampled_from(PROFILES), min_size=1, max_size=2)),
    }
    shared: dict[tuple, Toolset] = {}
    for k in range(data.draw(st.integers(min_value=2, max_value=20))):
        spec = data.draw(st.sampled_from(pools["spec"]))
        tools = shared.setdefault(spec, _toolset(spec)) if data.draw(st.booleans()) else _toolset(spec)
        args = dict(
            system_texts=data.draw(st.sampled_from(pools["system"])),
            add_sentence=data.draw(st.booleans()),
            grammar=data.draw(st.sampled_from(pools["grammar"])),
            profile=data.draw(st.sampled_from(pools["profile"])),
            transcript_names=data.draw(st.sampled_from(pools["transcript"])),
        )
        got = cache.plan(tools, **args)
        want = make_plan(tools, **args)
        assert got.model_dump() == want.model_dump()


def test_the_cache_hands_out_the_plan_itself() -> None:
    """Plans are never changed, so the cache keeps no copy per request: the same inputs get the
    same plan object, equal to :func:`make_plan`'s, and it cannot be changed."""
    cache = PlanCache()
    tools = _toolset((("web.search", "function", 0),))
    first = cache.plan(tools, [], add_sentence=True, grammar=GRAMMARS["openai"])
    assert first.rename_map and first.prompt_sentence
    second = cache.plan(tools, [], add_sentence=True, grammar=GRAMMARS["openai"])
    assert second is first
    assert second.model_dump() == make_plan(tools, [], add_sentence=True, grammar=GRAMMARS["openai"]).model_dump()
    with pytest.raises(ValidationError):
        first.rename_map = {}


def test_long_system_texts_are_planned_afresh(monkeypatch) -> None:
    """Past :data:`PLAN_CACHE_TEXT` characters of system text nothing is kept, and the plan is
    still :func:`make_plan`'s."""
    from toolvocab.engine import plan as plan_module

    monkeypatch.setattr(plan_module, "PLAN_CACHE_TEXT", 10)
    cache = PlanCache()
    tools = _toolset((("Read", "function", 0), ("Bash", "function", 1)))
    for text in ("use Read", "use Read and Bash, always"):
        got = cache.plan(tools, [text], add_sentence=True)
        assert got.model_dump() == make_plan(tools, [text], add_sentence=True).model_dump()
    assert len(cache._plans) == 1  # only the short one
    assert cache.holds(cache.plan(tools, ["use Read"], add_sentence=True))
    assert not cache.holds(cache.plan(tools, ["use Read and Bash, always"], add_sentence=True))


def test_a_plan_made_afresh_starts_a_record_nothing_keeps(monkeypatch) -> None:
    """The records :meth:`Caches.record` keeps are those of plans the plan cache keeps: a request
    whose system text is planned afresh every time gets its record built, each time, and the
    same record as a kept plan's would be."""
    from toolvocab.dialects import pipeline
    from toolvocab.engine import plan as plan_module

    body = {
        "model": "m",
        "max_tokens": 1,
        "system": "use Read and Bash, always",
        "tools": [{"name": n, "input_schema": {"type": "object"}} for n in ("Read", "Bash")],
        "messages": [{"role": "user", "content": "hi"}],
    }
    raw = orjson.dumps(body)
    request = pipeline.Request(raw, "POST", "/v1/messages", "api.example.com", {}.get)
    settings = pipeline.Settings(mode="repair")
    kept = pipeline.handle(request, settings, pipeline.Caches())
    monkeypatch.setattr(plan_module, "PLAN_CACHE_TEXT", 10)
    caches = pipeline.Caches()
    for _ in range(3):
        got = pipeline.handle(request, settings, caches)
        assert got.record.dump() == kept.record.dump()
        assert got.record_json is None
    assert len(caches._records) == 0
