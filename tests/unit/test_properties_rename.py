"""Properties of the request-side renames (grammar aliases, duplicates, transcript names, rename
profiles) over generated tool lists, transcripts and answers, for all four dialects and the
Responses WebSocket path.

Every example drives the real addon script (loaded once per module by ``tests/harness/``, hooks
invoked as mitmproxy invokes them, streamed answers fed to the ``response.stream`` callable in
random chunk splits; WebSocket frames through ``websocket_message``) and checks bytes:

1. **the upstream never receives a name the map renamed** — at every name position of the
   forwarded request (declarations, ``tool_choice``, allowed names, transcript calls, results and
   nested references) and in the prompt sentence; every declared function name and replayed name
   the upstream receives is one its grammar accepts (checked against regexes written here, not
   the addon's grammar objects), and a name replayed in the transcript gets its declaration's
   upstream name;
2. **the client never receives an alias** — no upstream-only name occurs (as a JSON string) in
   the bytes the client gets, streamed or not;
3. **everything not renamed round-trips byte-identical** — the forwarded request, with each name
   put back and the prompt sentence removed, is byte-identical to the client's request minus the
   identical repeats; the client's answer is byte-identical to the upstream's with each alias
   replaced by the caller's name;
4. **the rename map is a bijection per flow** — over declarations (duplicates included) the
   upstream names are distinct, upstream → caller is a function, and the record's
   ``rename_map`` / ``duplicates`` say exactly what was observed on the wire;
5. **two flows' maps never mix** — two flows (or two WebSocket turns) interleaved hook by hook
   and chunk by chunk each satisfy 1–4, and an answer naming the *other* flow's alias is never
   renamed through this flow's map.

Generated: tool lists with short, long (> 64), dotted/slashed/colon, leading-digit, odd
(space, non-ASCII, leading underscore, hyphen) and namespaced (Responses) names, identical and
different repeats, custom and provider tools; transcripts replaying declared names and
hallucinated undeclared ones (with tool results and Anthropic ``tool_reference`` blocks);
``tool_choice`` / allowed names; hosts with other grammars (Bedrock, Moonshot, DeepSeek) and
rename profiles (``model`` regex selects them); modes auto / repair / observe / off; answers as
JSON, SSE, stream-requests answered with JSON, and Gemini's JSON array.

Known bugs are kept out of the generators and pinned by ``xfail(strict=True)`` tests at the end
of this file (each generator exclusion names its test).

Examples per test: ``TOOLVOCAB_PROPERTY_EXAMPLES`` (default 100, the quick profile of the README's
test command, about 30 s for this file on 2 cores; ``.ci/run`` runs the long profile, 2000).
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck
from hypothesis import event
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy.proxy.layers import http as hl
from mitmproxy.proxy.layers.websocket import WebsocketEndHook
from mitmproxy.websocket import WebSocketMessage

import harness
from toolvocab.engine import jsonio
from toolvocab.engine import vocabulary
from toolvocab.engine.names import name_key

KEY = harness.KEY

EXAMPLES = int(os.environ.get("TOOLVOCAB_PROPERTY_EXAMPLES", "100"))
SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
)

#: The real Responses API sends ``name`` in ``response.function_call_arguments.done`` (openai
#: SDK ``ResponseFunctionCallArgumentsDoneEvent.name``), and echoes ``instructions`` in every
#: response object: the generated answers do both.
DONE_EVENT_HAS_NAME = True

# ==================================================================== grammars, written here
#: What each upstream accepts (wire-formats §5), independent of ``toolvocab.engine.grammar``.
ACCEPTS: dict[str, re.Pattern[str]] = {
    "openai": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "anthropic": re.compile(r"[a-zA-Z0-9_-]{1,128}"),
    "anthropic64": re.compile(r"[a-zA-Z0-9_-]{1,64}"),
    "gemini": re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,62}"),
    "bedrock": re.compile(r"[a-zA-Z][a-zA-Z0-9_]{0,63}"),
    "kimi": re.compile(r"[a-zA-Z_][a-zA-Z0-9_-]{0,127}"),
}
FIRST_PARTY = {"anthropic": "anthropic", "openai_chat": "openai", "openai_responses": "openai", "gemini": "gemini"}
HOSTS = {
    "anthropic": "api.anthropic.com",
    "openai_chat": "api.openai.com",
    "openai_responses": "api.openai.com",
    "gemini": "generativelanguage.googleapis.com",
}
OTHER_HOSTS = ["bedrock-runtime.us-east-1.amazonaws.com", "api.moonshot.ai", "api.deepseek.com"]


def expected_grammar(dialect: str, host: str, model: str) -> str:
    if model.startswith("strict-"):
        return "bedrock"  # the "strict" profile below
    if "bedrock" in host:
        return "bedrock"
    if host.endswith("moonshot.ai"):
        return "kimi"
    if host.endswith("deepseek.com") and dialect == "anthropic":
        return "anthropic64"
    return FIRST_PARTY[dialect]


#: Profiles active in this module: ``model`` starting ``profiled-`` gets capability renames,
#: ``strict-`` the Bedrock grammar.
PROFILE_TOML = """\
[[profile]]
name = "vocab"
model = "^profiled-"
[profile.names]
shell = "shell"
read = "read_file"
todo = "update_plan"
write = "write_file"

[[profile]]
name = "strict"
model = "^strict-"
grammar = "bedrock"
"""
PROFILE_TARGETS = {"shell", "read_file", "update_plan", "write_file"}

# ========================================================================= names and schemas
SHORT = [
    "Bash", "Read", "Write", "Edit", "read_file", "run_shell_command", "exec_command", "TodoWrite", "update_plan",
    "grep", "glob", "create_issue", "get_weather", "search_evidence", "fetch_doc", "shell", "write_file", "bash",
]  # fmt: skip
DOTTED = [
    "binja.get_function",
    "user-profile/update",
    "fs:read_text",
    "a.b.c",
    "tools/exec",
    "search.evidence",
    "ns::op",
]
LEADING_DIGIT = ["1password_lookup", "9lives", "3d-render", "0"]
ODD = ["has space", "naïve_tool", "_private", "gtr-cool", "x" * 64, "y" * 63, "Z" * 128, "é", "tab\there"]
LONG_SERVERS = ["plugin_deploy_on_aws_awsiac", "github-enterprise-cloud-connector", "my_very_descriptive_server_name"]
LONG_TOOLS = ["check_cloudformation_template_compliance", "list_repository_pull_request_review_comments", "do"]
NAME_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.:/"
UNDECLARED = [
    "search.evidence",
    "$READFILE",
    "old_tool",
    "functions.read",
    "multi_tool_use.parallel",
    "9lives",
    "q" * 70,
    "shell",
    "read_file",
]  # the last two: profile targets
NAMESPACES = ["mcp__github__", "mcp__cua_repl", "mcp__plugin_deploy_on_aws_awsiac__", "mcp__x.y__"]
ANTHROPIC_PROVIDER = [
    {"type": "bash_20250124", "name": "bash"},
    {"type": "web_search_20250305", "name": "web_search", "max_uses": 2},
    {"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"},
]

STR = {"type": "string"}
INT = {"type": "integer"}
SCHEMAS: list[dict[str, Any] | None] = [
    None,
    {"type": "object", "properties": {}},
    {"type": "object", "properties": {"command": STR, "timeout": INT}, "required": ["command"]},
    {"type": "object", "properties": {"path": STR}, "required": ["path"], "additionalProperties": False},
    {"type": "object", "properties": {"query": STR, "limit": INT}},
]
#: Argument values: never equal to a tool name, so a quoted name occurs only at name positions.
VALUES = ["v0", "v1", "v two", "é✓", "", "C:\\\\x", '{"j":1}', "line\nbreak"]
DESCRIPTIONS = [None, "Runs things.", "Reads a file from disk.", "An MCP tool.", "Dupe with another text."]


@st.composite
def long_names(draw: st.DrawFn) -> str:
    if draw(st.booleans()):
        return f"mcp__{draw(st.sampled_from(LONG_SERVERS))}__{draw(st.sampled_from(LONG_TOOLS))}" + "_x" * draw(
            st.integers(0, 30)
        )
    return draw(st.text(NAME_CHARS, min_size=65, max_size=140))


def tool_names() -> st.SearchStrategy[str]:
    return st.one_of(
        st.sampled_from(SHORT),
        st.sampled_from(SHORT),
        long_names(),
        st.sampled_from(DOTTED),
        st.sampled_from(LEADING_DIGIT),
        st.sampled_from(ODD),
        st.text(NAME_CHARS, min_size=1, max_size=20),
    )


def args_for(schema_i: int, rnd: random.Random) -> dict[str, Any]:
    v = lambda: rnd.choice(VALUES)  # noqa: E731
    if schema_i == 0:
        # A key no schema declares (no schema here): an alias answer keeps it byte-identical
        # (test_was_bug_alias_answer_loses_keys_the_schema_allows).
        return {"region": v()} if rnd.random() < 0.5 else {}
    if schema_i == 1:
        return {}
    if schema_i == 2:
        out: dict[str, Any] = {"command": v()}
        if rnd.random() < 0.5:
            out["timeout"] = rnd.randint(0, 600)
        return out
    if schema_i == 3:
        return {"path": v()}
    out = {}
    if rnd.random() < 0.5:
        out["query"] = v()
    if rnd.random() < 0.5:
        out["limit"] = rnd.randint(1, 9)
    return out


# ========================================================================== the scenario
@dataclass
class Decl:
    """One declaration as the client sends it."""

    name: str
    ns: str | None = None  # Responses namespace
    kind: str = "function"  # function | custom | provider
    schema_i: int = 2
    desc: str | None = None
    provider: dict[str, Any] | None = None
    repeat_of: int | None = None  # index of the declaration this one repeats exactly (dropped)

    @property
    def flat(self) -> str:
        if not self.ns:
            return self.name
        return self.ns + self.name if self.ns.endswith(("__", ".", ":", "/")) else self.ns + "__" + self.name


@dataclass
class Call:
    name: str
    ns: str | None
    kind: str
    args: dict[str, Any]
    call_id: str
    ref: str | None = None  # Anthropic tool_reference name in the result


@dataclass
class Scenario:
    dialect: str
    host: str
    model: str
    mode: str
    decls: list[Decl]
    transcript: list[list[Call]]
    choice: tuple[str, list[int]] | None
    system: str | None
    system_shape: int
    stream: bool
    framing: str  # json | sse | json_for_stream | array
    answer: list[int]  # indexes into decls (kept, callable ones)
    foreign: list[str] = field(default_factory=list)  # other flow's aliases to call (property 5)
    seed: int = 0
    envelope: bool = False  # Gemini Code Assist (/v1internal:…): request under "request", answers under "response"
    proto_names: bool = False  # Gemini answers keyed function_call / finish_reason (proto field names)


@st.composite
def scenarios(draw: st.DrawFn, dialect: str, *, ws: bool = False) -> Scenario:
    """One client request (tools, transcript, choice, system text, host, model, mode, framing)
    and the calls the upstream will answer. Names come from hypothesis (so they shrink); the
    structure from a seeded ``random.Random`` — cheap enough for thousands of examples a minute."""
    rnd = random.Random(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(1, 7))
    decls: list[Decl] = []
    first: dict[str, int] = {}  # flat name -> index of its first declaration
    for _ in range(n):
        roll = rnd.random()
        if decls and roll < 0.18:  # a repeat: identical (dropped) or different (aliased)
            base_i = rnd.choice(list(first.values()))
            base = decls[base_i]
            if base.kind != "function":
                continue  # see test_bug_provider_tool_repeating_a_client_tool_name_is_dropped
            if rnd.random() < 0.5:
                decls.append(Decl(base.name, base.ns, base.kind, base.schema_i, base.desc, repeat_of=base_i))
            else:
                # Another tool under the name: a description no earlier declaration of the name
                # has, and any schema (its calls are checked against its own declaration:
                # test_duplicate_alias_is_checked_against_its_own_declaration).
                used = {d.desc for d in decls if d.flat == base.flat}
                other = next((x for x in DESCRIPTIONS[1:] if x not in used), None)
                if other is not None:
                    decls.append(Decl(base.name, base.ns, base.kind, rnd.randrange(len(SCHEMAS)), other))
            continue
        name = draw(tool_names())
        ns = None
        kind = "function"
        provider = None
        if dialect == "openai_responses" and roll < 0.45:
            ns = rnd.choice(NAMESPACES)
        elif dialect in ("openai_chat", "openai_responses") and roll > 0.92:
            kind = "custom"
        elif dialect == "anthropic" and roll > 0.92:
            kind = "provider"
            provider = dict(rnd.choice(ANTHROPIC_PROVIDER))
            name = provider["name"]
        d = Decl(name, ns, kind, rnd.randrange(len(SCHEMAS)), rnd.choice(DESCRIPTIONS), provider)
        if d.flat in first:
            # the same name drawn twice: skipped (a custom/provider tool repeating a function
            # name: test_bug_provider_tool_repeating_a_client_tool_name_is_dropped; a top-level
            # Responses name equal to a namespaced one is pinned by
            # test_was_bug_responses_repeat_across_namespace_entries)
            continue
        first[d.flat] = len(decls)
        decls.append(d)
    if not decls:
        decls = [Decl("Bash")]
    if dialect == "openai_responses":
        # the wire groups a namespace's members at its first member: keep decls in wire order
        groups: list[list[int]] = []
        where: dict[str, int] = {}
        for i, d in enumerate(decls):
            if d.ns and d.ns in where:
                groups[where[d.ns]].append(i)
                continue
            if d.ns:
                where[d.ns] = len(groups)
            groups.append([i])
        order = [i for g in groups for i in g]
        remap = {old: new for new, old in enumerate(order)}
        decls = [decls[i] for i in order]
        for d in decls:
            if d.repeat_of is not None:
                d.repeat_of = remap[d.repeat_of]
    first = {}
    for i, d in enumerate(decls):
        first.setdefault(d.flat, i)
    callable_decls = [i for i, d in enumerate(decls) if d.kind in ("function", "custom")]

    # transcript: declared names replayed (by their caller names) and hallucinated ones
    declared_flats = {d.flat for d in decls}
    transcript: list[list[Call]] = []
    for t in range(draw(st.integers(0, 3))):
        turn = []
        for c in range(rnd.randint(1, 2)):
            cid = f"call_t{t}_{c}"
            if callable_decls and rnd.random() < 0.75:
                d = decls[first[decls[rnd.choice(callable_decls)].flat]]
                if d.kind == "custom" and dialect not in ("openai_chat", "openai_responses"):
                    continue
                ref = None
                if dialect == "anthropic" and rnd.random() < 0.3:
                    ref = decls[first[decls[rnd.choice(callable_decls)].flat]].name
                turn.append(Call(d.name, d.ns, d.kind, args_for(d.schema_i, rnd), cid, ref))
            else:
                name = rnd.choice(UNDECLARED)
                # (an undeclared replayed name may equal a profile target: the profile then
                # leaves that tool alone, test_was_bug_profile_target_used_in_the_transcript_is_a_collision)
                if name in declared_flats:
                    continue
                turn.append(Call(name, None, "function", {"q": "v0"}, cid))
        if turn:
            transcript.append(turn)

    function_firsts = [i for i in callable_decls if decls[i].kind == "function" and first[decls[i].flat] == i]
    choice = None
    if function_firsts and rnd.random() < 0.4:
        if rnd.random() < 0.5:
            choice = ("one", [rnd.choice(function_firsts)])
        else:
            choice = ("allowed", rnd.sample(function_firsts, rnd.randint(1, len(function_firsts))))

    mentioned = [decls[i].name for i in rnd.sample(range(len(decls)), rnd.randint(0, len(decls)))]
    system = None if rnd.random() < 0.25 else "You are an agent." + "".join(f" Use {m} well." for m in mentioned)

    host = HOSTS[dialect] if rnd.random() < 0.6 else rnd.choice(OTHER_HOSTS)
    model = rnd.choice(["plain-model", "profiled-model", "strict-model"])
    mode = rnd.choices(["auto", "repair", "observe", "off"], weights=[45, 40, 10, 5])[0]
    if ws:
        stream, framing = True, "sse"
    else:
        stream = rnd.random() < 0.6
        if dialect == "gemini":
            framing = rnd.choice(["sse", "array"]) if stream else "json"
        else:
            framing = ("json_for_stream" if rnd.random() < 0.1 else "sse") if stream else "json"
    envelope = dialect == "gemini" and rnd.random() < 0.25
    if envelope and framing == "array":
        framing = "sse"  # Code Assist streams SSE
    kept_callable = [i for i in callable_decls if decls[i].repeat_of is None]
    answer = [rnd.choice(kept_callable) for _ in range(rnd.randint(0, 3))] if kept_callable else []
    return Scenario(
        dialect,
        host,
        model,
        mode,
        decls,
        transcript,
        choice,
        system,
        rnd.randrange(3),
        stream,
        framing,
        answer,
        seed=rnd.randrange(2**32),
        envelope=envelope,
        proto_names=dialect == "gemini" and rnd.random() < 0.3,
    )


# ============================================================================ wire builders
def _schema(d: Decl) -> dict[str, Any] | None:
    return SCHEMAS[d.schema_i]


class Wire:
    """One dialect's request body, name positions and answers (written from the wire formats)."""

    dialect: str
    path: str

    def request(self, s: Scenario) -> dict[str, Any]:
        raise NotImplementedError

    def name_paths(self, body: Any) -> list[tuple[tuple[Any, ...], str, str | None]]:
        """Every name position: (JSON path, role, namespace). Roles: ``decl`` (declared tool),
        ``custom`` / ``provider`` (declared, never renamed), ``choice``, ``call`` (transcript),
        ``custom_call`` (transcript, never renamed), ``result`` (transcript result naming a tool),
        ``ref`` (nested reference), ``ns`` (a Responses namespace)."""
        raise NotImplementedError

    def answer(
        self,
        s: Scenario,
        calls: list[tuple[str, str | None, str, dict[str, Any]]],
        fwd: dict[str, Any],
        echo: dict[str, Any] | None = None,
    ) -> tuple[bytes, str]:
        """(upstream body bytes, content type) calling ``(upstream name, namespace, kind, args)``.
        ``fwd`` is the request the upstream received; ``echo`` (default ``fwd``) the request whose
        ``instructions`` a Responses answer echoes — the client's own, for the expected bytes."""
        raise NotImplementedError

    def undo_sentence(self, fwd: dict[str, Any], orig: dict[str, Any], sentence: str) -> None:
        raise NotImplementedError


def get(body: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        body = body[p]
    return body


def put(body: Any, path: tuple[Any, ...], value: Any) -> None:
    for p in path[:-1]:
        body = body[p]
    body[path[-1]] = value


def _strip(text: str, sentence: str) -> str:
    if text == sentence:
        return ""
    assert text.endswith("\n\n" + sentence), (text, sentence)
    return text[: -len(sentence) - 2]


def sse(events: list[tuple[str | None, Any]]) -> bytes:
    out = bytearray()
    for name, data in events:
        if name:
            out += b"event: " + name.encode() + b"\n"
        out += b"data: " + (data if isinstance(data, bytes) else orjson.dumps(data)) + b"\n\n"
    return bytes(out)


def pieces(text: str, rnd: random.Random) -> list[str]:
    if not text:
        return []
    cuts = sorted(rnd.sample(range(1, len(text)), min(len(text) - 1, rnd.randint(0, 3)))) if len(text) > 1 else []
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:])]


class AnthropicWire(Wire):
    dialect = "anthropic"
    path = "/v1/messages?beta=true"

    def request(self, s: Scenario) -> dict[str, Any]:
        tools = []
        for d in s.decls:
            if d.kind == "provider":
                tools.append(dict(d.provider or {}))
                continue
            t: dict[str, Any] = {"name": d.name}
            if d.desc:
                t["description"] = d.desc
            t["input_schema"] = _schema(d) or {"type": "object"}
            tools.append(t)
        messages: list[dict[str, Any]] = [{"role": "user", "content": "Do the task."}]
        for turn in s.transcript:
            messages.append(
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "Working."}]
                    + [{"type": "tool_use", "id": c.call_id, "name": c.name, "input": c.args} for c in turn],
                }
            )
            results = []
            for c in turn:
                content: list[dict[str, Any]] = [{"type": "text", "text": "result"}]
                if c.ref:
                    content.append({"type": "tool_reference", "tool_name": c.ref})
                results.append({"type": "tool_result", "tool_use_id": c.call_id, "content": content})
            messages.append({"role": "user", "content": results})
        body: dict[str, Any] = {"model": s.model, "max_tokens": 1024}
        if s.system is not None:
            body["system"] = s.system if s.system_shape else [{"type": "text", "text": s.system}]
        body["messages"] = messages
        body["tools"] = tools
        if s.choice and s.choice[0] == "one":
            body["tool_choice"] = {"type": "tool", "name": s.decls[s.choice[1][0]].name}
        elif s.choice:
            body["tool_choice"] = {"type": "any"}
        body["stream"] = s.stream
        return body

    def name_paths(self, body: Any) -> list[tuple[tuple[Any, ...], str, str | None]]:
        out: list[tuple[tuple[Any, ...], str, str | None]] = []
        for i, t in enumerate(body.get("tools") or ()):
            out.append((("tools", i, "name"), "decl" if t.get("type") in (None, "custom") else "provider", None))
        if (body.get("tool_choice") or {}).get("type") == "tool":
            out.append((("tool_choice", "name"), "choice", None))
        for m, message in enumerate(body["messages"]):
            if not isinstance(message["content"], list):
                continue
            for b, block in enumerate(message["content"]):
                if block["type"] == "tool_use":
                    out.append((("messages", m, "content", b, "name"), "call", None))
                elif block["type"] == "tool_result":
                    for k, inner in enumerate(block["content"]):
                        if inner["type"] == "tool_reference":
                            out.append((("messages", m, "content", b, "content", k, "tool_name"), "ref", None))
        return out

    def answer(self, s, calls, fwd, echo=None):
        rnd = random.Random(s.seed)
        blocks: list[dict[str, Any]] = [{"type": "text", "text": "Calling tools."}]
        for k, (name, _ns, _kind, args) in enumerate(calls):
            blocks.append({"type": "tool_use", "id": f"toolu_{k:02d}", "name": name, "input": args})
        usage = {"input_tokens": 10, "output_tokens": 5}
        stop = "tool_use" if calls else "end_turn"
        if s.framing in ("json", "json_for_stream"):
            return orjson.dumps(
                {
                    "id": "msg_01",
                    "type": "message",
                    "role": "assistant",
                    "model": s.model,
                    "content": blocks,
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            ), "application/json"
        ev: list[tuple[str | None, Any]] = [
            (
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": "msg_01",
                        "type": "message",
                        "role": "assistant",
                        "model": s.model,
                        "content": [],
                        "stop_reason": None,
                        "usage": usage,
                    },
                },
            ),
            ("ping", {"type": "ping"}),
        ]
        for i, block in enumerate(blocks):
            if block["type"] == "text":
                ev.append(
                    (
                        "content_block_start",
                        {"type": "content_block_start", "index": i, "content_block": {"type": "text", "text": ""}},
                    )
                )
                for p in pieces(block["text"], rnd):
                    ev.append(
                        (
                            "content_block_delta",
                            {"type": "content_block_delta", "index": i, "delta": {"type": "text_delta", "text": p}},
                        )
                    )
            else:
                ev.append(
                    (
                        "content_block_start",
                        {
                            "type": "content_block_start",
                            "index": i,
                            "content_block": {
                                "type": "tool_use",
                                "id": block["id"],
                                "name": block["name"],
                                "input": {},
                            },
                        },
                    )
                )
                for p in pieces(orjson.dumps(block["input"]).decode(), rnd):
                    ev.append(
                        (
                            "content_block_delta",
                            {
                                "type": "content_block_delta",
                                "index": i,
                                "delta": {"type": "input_json_delta", "partial_json": p},
                            },
                        )
                    )
            ev.append(("content_block_stop", {"type": "content_block_stop", "index": i}))
        ev.append(
            (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 5},
                },
            )
        )
        ev.append(("message_stop", {"type": "message_stop"}))
        return sse(ev), "text/event-stream; charset=utf-8"

    def undo_sentence(self, fwd, orig, sentence):
        if "system" not in orig:
            assert fwd.pop("system") == sentence
        elif isinstance(orig["system"], str):
            fwd["system"] = _strip(fwd["system"], sentence)
        else:
            assert fwd["system"].pop() == {"type": "text", "text": sentence}


class ChatWire(Wire):
    dialect = "openai_chat"
    path = "/v1/chat/completions"

    def request(self, s: Scenario) -> dict[str, Any]:
        tools = []
        for d in s.decls:
            if d.kind == "custom":
                inner: dict[str, Any] = {"name": d.name}
                if d.desc:
                    inner["description"] = d.desc
                tools.append({"type": "custom", "custom": inner})
                continue
            fn: dict[str, Any] = {"name": d.name}
            if d.desc:
                fn["description"] = d.desc
            if _schema(d) is not None:
                fn["parameters"] = _schema(d)
            tools.append({"type": "function", "function": fn})
        messages: list[dict[str, Any]] = []
        if s.system is not None:
            messages.append(
                {
                    "role": "system" if s.system_shape else "developer",
                    "content": s.system if s.system_shape != 2 else [{"type": "text", "text": s.system}],
                }
            )
        messages.append({"role": "user", "content": "Do the task."})
        for turn in s.transcript:
            calls = []
            for c in turn:
                if c.kind == "custom":
                    calls.append({"id": c.call_id, "type": "custom", "custom": {"name": c.name, "input": "raw text"}})
                else:
                    calls.append(
                        {
                            "id": c.call_id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": orjson.dumps(c.args).decode()},
                        }
                    )
            messages.append({"role": "assistant", "content": None, "tool_calls": calls})
            for c in turn:
                messages.append({"role": "tool", "tool_call_id": c.call_id, "content": "result"})
        body: dict[str, Any] = {"model": s.model, "messages": messages, "tools": tools}
        if s.choice and s.choice[0] == "one":
            body["tool_choice"] = {"type": "function", "function": {"name": s.decls[s.choice[1][0]].name}}
        elif s.choice:
            body["tool_choice"] = {
                "type": "allowed_tools",
                "allowed_tools": {
                    "mode": "auto",
                    "tools": [{"type": "function", "function": {"name": s.decls[i].name}} for i in s.choice[1]],
                },
            }
        if s.stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def name_paths(self, body):
        out: list[tuple[tuple[Any, ...], str, str | None]] = []
        for i, t in enumerate(body.get("tools") or ()):
            out.append((("tools", i, t["type"], "name"), "decl" if t["type"] == "function" else "custom", None))
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "function":
            out.append((("tool_choice", "function", "name"), "choice", None))
        elif isinstance(choice, dict):
            for k, _ in enumerate(choice["allowed_tools"]["tools"]):
                out.append((("tool_choice", "allowed_tools", "tools", k, "function", "name"), "choice", None))
        for m, message in enumerate(body["messages"]):
            for k, call in enumerate(message.get("tool_calls") or ()):
                out.append(
                    (
                        ("messages", m, "tool_calls", k, call["type"], "name"),
                        "call" if call["type"] == "function" else "custom_call",
                        None,
                    )
                )
        return out

    def answer(self, s, calls, fwd, echo=None):
        rnd = random.Random(s.seed)
        wire_calls = []
        for k, (name, _ns, kind, args) in enumerate(calls):
            if kind == "custom":
                wire_calls.append(
                    {"id": f"call_{k:02d}", "type": "custom", "custom": {"name": name, "input": "raw input"}}
                )
            else:
                wire_calls.append(
                    {
                        "id": f"call_{k:02d}",
                        "type": "function",
                        "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                    }
                )
        usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
        finish = "tool_calls" if calls else "stop"
        if s.framing in ("json", "json_for_stream"):
            message: dict[str, Any] = {"role": "assistant", "content": None if calls else "Done."}
            if calls:
                message["tool_calls"] = wire_calls
            return orjson.dumps(
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion",
                    "created": 1,
                    "model": s.model,
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": usage,
                }
            ), "application/json"

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> tuple[None, Any]:
            return None, {
                "id": "chatcmpl-1",
                "object": "chat.completion.chunk",
                "created": 1,
                "model": s.model,
                "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
                "usage": None,
            }

        ev: list[tuple[str | None, Any]] = [chunk({"role": "assistant", "content": ""})]
        for p in pieces("Calling tools.", rnd):
            ev.append(chunk({"content": p}))
        for k, call in enumerate(wire_calls):
            if call["type"] == "custom":
                ev.append(
                    chunk({"tool_calls": [{"index": k, "id": call["id"], "type": "custom", "custom": call["custom"]}]})
                )
                continue
            ev.append(
                chunk(
                    {
                        "tool_calls": [
                            {
                                "index": k,
                                "id": call["id"],
                                "type": "function",
                                "function": {"name": call["function"]["name"], "arguments": ""},
                            }
                        ]
                    }
                )
            )
            for p in pieces(call["function"]["arguments"], rnd):
                ev.append(chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]}))
        ev.append(chunk({}, finish))
        ev.append(
            (
                None,
                {
                    "id": "chatcmpl-1",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": s.model,
                    "choices": [],
                    "usage": usage,
                },
            )
        )
        ev.append((None, b"[DONE]"))
        return sse(ev), "text/event-stream"

    def undo_sentence(self, fwd, orig, sentence):
        first = next((i for i, m in enumerate(orig["messages"]) if m["role"] in ("system", "developer")), None)
        if first is None:
            assert fwd["messages"].pop(0) == {"role": "system", "content": sentence}
            return
        content = fwd["messages"][first]["content"]
        if isinstance(content, str):
            fwd["messages"][first]["content"] = _strip(content, sentence)
        else:
            assert content.pop() == {"type": "text", "text": sentence}


class ResponsesWire(Wire):
    dialect = "openai_responses"
    path = "/v1/responses"

    def request(self, s: Scenario) -> dict[str, Any]:
        tools: list[dict[str, Any]] = []
        spaces: dict[str, dict[str, Any]] = {}
        for d in s.decls:
            if d.kind == "custom":
                t: dict[str, Any] = {"type": "custom", "name": d.name}
                if d.desc:
                    t["description"] = d.desc
            else:
                t = {"type": "function", "name": d.name}
                if d.desc:
                    t["description"] = d.desc
                t["parameters"] = _schema(d) or {"type": "object", "properties": {}}
                t["strict"] = False
            if d.ns:
                if d.ns not in spaces:
                    spaces[d.ns] = {"type": "namespace", "name": d.ns, "description": "MCP server", "tools": []}
                    tools.append(spaces[d.ns])
                spaces[d.ns]["tools"].append(t)
            else:
                tools.append(t)
        tools.append({"type": "web_search"})
        items: list[dict[str, Any]] = []
        body: dict[str, Any] = {"model": s.model}
        if s.system is not None:
            if s.system_shape == 0:
                body["instructions"] = s.system
            else:
                items.append(
                    {
                        "type": "message",
                        "role": "developer",
                        "content": s.system if s.system_shape == 1 else [{"type": "input_text", "text": s.system}],
                    }
                )
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Do the task."}]})
        for turn in s.transcript:
            for c in turn:
                if c.kind == "custom":
                    items.append({"type": "custom_tool_call", "call_id": c.call_id, "name": c.name, "input": "raw"})
                else:
                    item = {
                        "type": "function_call",
                        "call_id": c.call_id,
                        "name": c.name,
                        "arguments": orjson.dumps(c.args).decode(),
                    }
                    if c.ns:
                        item["namespace"] = c.ns
                    items.append(item)
            for c in turn:
                items.append(
                    {
                        "type": "custom_tool_call_output" if c.kind == "custom" else "function_call_output",
                        "call_id": c.call_id,
                        "output": "result",
                    }
                )
        body["input"] = items
        body["tools"] = tools
        if s.choice and s.choice[0] == "one" and not s.decls[s.choice[1][0]].ns:
            body["tool_choice"] = {"type": "function", "name": s.decls[s.choice[1][0]].name}
        elif s.choice:
            entries = []
            for i in s.choice[1]:
                e: dict[str, Any] = {"type": "function", "name": s.decls[i].name}
                if s.decls[i].ns:
                    e["namespace"] = s.decls[i].ns
                entries.append(e)
            body["tool_choice"] = {"type": "allowed_tools", "mode": "auto", "tools": entries}
        body["stream"] = s.stream
        return body

    def name_paths(self, body):
        out: list[tuple[tuple[Any, ...], str, str | None]] = []
        for i, t in enumerate(body.get("tools") or ()):
            if t["type"] == "namespace":
                out.append((("tools", i, "name"), "ns", None))
                for j, inner in enumerate(t["tools"]):
                    out.append(
                        (
                            ("tools", i, "tools", j, "name"),
                            "decl" if inner["type"] == "function" else "custom",
                            t["name"],
                        )
                    )
            elif "name" in t:
                out.append((("tools", i, "name"), "decl" if t["type"] == "function" else "custom", None))
        choice = body.get("tool_choice")
        if isinstance(choice, dict) and choice.get("type") == "function":
            out.append((("tool_choice", "name"), "choice", None))
        elif isinstance(choice, dict):
            for k, e in enumerate(choice["tools"]):
                out.append((("tool_choice", "tools", k, "name"), "choice", e.get("namespace")))
        for k, item in enumerate(body["input"]):
            if item["type"] in ("function_call", "custom_tool_call"):
                out.append(
                    (
                        ("input", k, "name"),
                        "call" if item["type"] == "function_call" else "custom_call",
                        item.get("namespace"),
                    )
                )
        return out

    def events(self, s, calls, fwd, echo=None) -> list[tuple[str, dict[str, Any]]]:
        rnd = random.Random(s.seed)
        output = []
        for k, (name, ns, kind, args) in enumerate(calls):
            if kind == "custom":
                item: dict[str, Any] = {
                    "id": f"ctc_{k:02d}",
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": f"call_{k:02d}",
                    "name": name,
                    "input": "raw input",
                }
            else:
                item = {
                    "id": f"fc_{k:02d}",
                    "type": "function_call",
                    "status": "completed",
                    "arguments": orjson.dumps(args).decode(),
                    "call_id": f"call_{k:02d}",
                    "name": name,
                }
            if ns:
                item["namespace"] = ns
            output.append(item)
        text_item = {
            "id": "msg_01",
            "type": "message",
            "status": "completed",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Calling tools.", "annotations": []}],
        }
        output.insert(0, text_item)
        if random.Random(s.seed ^ 0x7553).random() < 0.3:
            # A hosted tool search's result: the definitions it loaded, under the upstream's names
            loaded = [t for t in fwd.get("tools", []) if t.get("type") in ("function", "namespace")]
            output.insert(1, {"id": "tso_01", "type": "tool_search_output", "status": "completed", "tools": loaded})
        echo = {
            "instructions": (fwd if echo is None else echo).get("instructions"),
            "tools": fwd.get("tools", []),
            "tool_choice": fwd.get("tool_choice", "auto"),
        }

        def response(status: str, out: list[Any]) -> dict[str, Any]:
            return {
                "id": "resp_01",
                "object": "response",
                "created_at": 1,
                "status": status,
                "model": s.model,
                "output": out,
                **echo,
                "usage": None,
            }

        seq = iter(range(10_000))
        ev: list[tuple[str, dict[str, Any]]] = []

        def add(kind: str, **fields: Any) -> None:
            ev.append((kind, {"type": kind, "sequence_number": next(seq), **fields}))

        add("response.created", response=response("in_progress", []))
        add("response.in_progress", response=response("in_progress", []))
        for idx, item in enumerate(output):
            if item["type"] == "message":
                add("response.output_item.added", output_index=idx, item=dict(item, status="in_progress", content=[]))
                add(
                    "response.output_text.delta",
                    item_id=item["id"],
                    output_index=idx,
                    content_index=0,
                    delta="Calling tools.",
                )
            elif item["type"] == "tool_search_output":
                add("response.output_item.added", output_index=idx, item=item)
            elif item["type"] == "function_call":
                add("response.output_item.added", output_index=idx, item=dict(item, status="in_progress", arguments=""))
                for p in pieces(item["arguments"], rnd):
                    add("response.function_call_arguments.delta", item_id=item["id"], output_index=idx, delta=p)
                done: dict[str, Any] = {"item_id": item["id"], "output_index": idx, "arguments": item["arguments"]}
                if DONE_EVENT_HAS_NAME:
                    done["name"] = item["name"]
                add("response.function_call_arguments.done", **done)
            else:
                add("response.output_item.added", output_index=idx, item=dict(item, status="in_progress", input=""))
                add("response.custom_tool_call_input.delta", item_id=item["id"], output_index=idx, delta="raw input")
                add("response.custom_tool_call_input.done", item_id=item["id"], output_index=idx, input="raw input")
            add("response.output_item.done", output_index=idx, item=item)
        add("response.completed", response=response("completed", output))
        return ev

    def answer(self, s, calls, fwd, echo=None):
        ev = self.events(s, calls, fwd, echo)
        if s.framing in ("json", "json_for_stream"):
            return orjson.dumps(ev[-1][1]["response"]), "application/json"
        return sse([(k, d) for k, d in ev]), "text/event-stream; charset=utf-8"

    def undo_sentence(self, fwd, orig, sentence):
        instructions = orig.get("instructions")
        if isinstance(instructions, str) and instructions:
            fwd["instructions"] = _strip(fwd["instructions"], sentence)
            return
        for k, item in enumerate(orig["input"]):
            if item.get("type", "message") == "message" and item.get("role") in ("developer", "system"):
                content = fwd["input"][k]["content"]
                if isinstance(content, str):
                    fwd["input"][k]["content"] = _strip(content, sentence)
                else:
                    assert content.pop() == {"type": "input_text", "text": sentence}
                return
        assert fwd.pop("instructions") == sentence


def _proto_names(chunk: dict[str, Any]) -> dict[str, Any]:
    """A Gemini answer chunk with its call and finish keys spelled as proto field names."""
    inner = chunk.get("response", chunk)
    for cand in inner["candidates"]:
        if "finishReason" in cand:
            cand["finish_reason"] = cand.pop("finishReason")
        cand["content"]["parts"] = [
            {"function_call": p["functionCall"]} if "functionCall" in p else p for p in cand["content"]["parts"]
        ]
    return chunk


class GeminiWire(Wire):
    dialect = "gemini"

    def request(self, s: Scenario) -> dict[str, Any]:
        decls = []
        for d in s.decls:
            fd: dict[str, Any] = {"name": d.name}
            if d.desc:
                fd["description"] = d.desc
            if _schema(d) is not None:
                fd["parametersJsonSchema"] = _schema(d)
            decls.append(fd)
        # Declarations split over two tools[] entries (repeats too: one count over all entries)
        tools: list[dict[str, Any]]
        if len(decls) > 1 and s.system_shape == 2:
            tools = [{"functionDeclarations": decls[:1]}, {"functionDeclarations": decls[1:]}]
        else:
            tools = [{"functionDeclarations": decls}]
        tools.append({"googleSearch": {}})
        contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "Do the task."}]}]
        for turn in s.transcript:
            parts = []
            for c in turn:
                call: dict[str, Any] = {"name": c.name, "args": c.args}
                if c.call_id.endswith("1"):
                    call["id"] = c.call_id
                parts.append({"functionCall": call})
            contents.append({"role": "model", "parts": parts})
            contents.append(
                {
                    "role": "user",
                    "parts": [{"functionResponse": {"name": c.name, "response": {"result": "r"}}} for c in turn],
                }
            )
        body: dict[str, Any] = {"contents": contents, "tools": tools}
        if s.choice:
            body["toolConfig"] = {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [s.decls[i].name for i in s.choice[1]]}
            }
        if s.system is not None:
            body["systemInstruction"] = {"role": "user", "parts": [{"text": s.system}]}
        body["generationConfig"] = {"temperature": 0}
        if s.envelope:
            return {"model": s.model, "project": "proj-1", "user_prompt_id": "p1", "request": body}
        return body

    @staticmethod
    def inner(body: dict[str, Any]) -> dict[str, Any]:
        return body["request"] if isinstance(body.get("request"), dict) else body

    def name_paths(self, body):
        if isinstance(body.get("request"), dict):
            return [(("request", *p), r, ns) for p, r, ns in self.name_paths(body["request"])]
        out: list[tuple[tuple[Any, ...], str, str | None]] = []
        for i, t in enumerate(body["tools"]):
            for j, _ in enumerate(t.get("functionDeclarations") or ()):
                out.append((("tools", i, "functionDeclarations", j, "name"), "decl", None))
        config = (body.get("toolConfig") or {}).get("functionCallingConfig") or {}
        for k, _ in enumerate(config.get("allowedFunctionNames") or ()):
            out.append((("toolConfig", "functionCallingConfig", "allowedFunctionNames", k), "choice", None))
        for c, content in enumerate(body["contents"]):
            for p, part in enumerate(content["parts"]):
                if "functionCall" in part:
                    out.append((("contents", c, "parts", p, "functionCall", "name"), "call", None))
                if "functionResponse" in part:
                    out.append((("contents", c, "parts", p, "functionResponse", "name"), "result", None))
        return out

    def chunks(self, s, calls) -> list[dict[str, Any]]:
        usage = {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15}
        parts_list: list[list[dict[str, Any]]] = [[{"text": "Calling tools."}]]
        for k, (name, _ns, _kind, args) in enumerate(calls):
            call: dict[str, Any] = {"name": name, "args": args}
            if k % 2:
                call["id"] = f"fc-{k}"
            parts_list.append([{"functionCall": call}])
        out = []
        for i, parts in enumerate(parts_list):
            cand: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
            if i == len(parts_list) - 1:
                cand["finishReason"] = "STOP"
            out.append({"candidates": [cand], "usageMetadata": usage, "modelVersion": s.model})
        return out

    def answer(self, s, calls, fwd, echo=None):
        chunks = self.chunks(s, calls)
        if s.framing == "json":
            merged = chunks[-1]
            merged["candidates"][0]["content"]["parts"] = [
                p for c in chunks for p in c["candidates"][0]["content"]["parts"]
            ]
            chunks = [merged]
        if s.envelope:
            chunks = [{"response": c, "traceId": "trace-1"} for c in chunks]
        if s.proto_names:  # google-genai reads both spellings of these keys
            chunks = [_proto_names(c) for c in chunks]
        if s.framing == "json":
            return orjson.dumps(chunks[0]), "application/json; charset=UTF-8"
        if s.framing == "sse":
            return b"".join(b"data: " + orjson.dumps(c) + b"\r\n\r\n" for c in chunks), "text/event-stream"
        return b"[" + b"\n,\r\n".join(orjson.dumps(c) for c in chunks) + b"\n]", "application/json; charset=UTF-8"

    def undo_sentence(self, fwd, orig, sentence):
        fwd, orig = self.inner(fwd), self.inner(orig)
        if "systemInstruction" not in orig:
            assert fwd.pop("systemInstruction") == {"parts": [{"text": sentence}]}
            return
        assert fwd["systemInstruction"]["parts"].pop() == {"text": sentence}


WIRES: dict[str, Wire] = {w.dialect: w for w in (AnthropicWire(), ChatWire(), ResponsesWire(), GeminiWire())}


def request_path(s: Scenario) -> str:
    if s.dialect == "gemini":
        if s.envelope:
            return "/v1internal:" + ("generateContent" if s.framing == "json" else "streamGenerateContent?alt=sse")
        if s.framing == "json":
            return f"/v1beta/models/{s.model}:generateContent"
        return f"/v1beta/models/{s.model}:streamGenerateContent" + ("?alt=sse" if s.framing == "sse" else "")
    return WIRES[s.dialect].path


# =============================================================================== harness
@dataclass
class Env(harness.Env):
    """``harness.Env`` with the module's profile file and the mode last set."""

    profiles: str = ""
    mode: str | None = None

    def set_mode(self, mode: str) -> None:
        if mode != self.mode:
            self.configure(toolvocab_mode=mode)
            self.mode = mode


@pytest.fixture(scope="module")
def env():
    """The addon script loaded once, in the addon chain (as the ScriptLoader puts it), with the
    module's profile file configured; ``inject.websocket`` captured."""
    with tempfile.TemporaryDirectory() as tmp, harness.script_context() as (tctx, module):
        profiles = os.path.join(tmp, "profiles.toml")
        Path(profiles).write_text(PROFILE_TOML)
        e = Env(tctx, module, profiles=profiles)
        with harness.capture_injections(e, others=True):
            harness.activate(tctx)
            e.configure(toolvocab_profiles=profiles, toolvocab_hosts=None, toolvocab_mode="auto")
            e.mode = "auto"
            yield e


@contextlib.contextmanager
def layouts(data: st.DataObject):
    """Half the examples give every request body a layout (``jsonio.LAYOUT_MIN_BYTES`` 0, where
    real bodies need 32 KB): a changed body then goes up with the top-level values outside the
    dialect's ``request_keys`` copied from the client's bytes, so a key the plan writes and
    ``request_keys`` leaves out fails the request checks (its change never reaches the upstream).
    The other half write every changed body whole."""
    before = jsonio.LAYOUT_MIN_BYTES
    jsonio.LAYOUT_MIN_BYTES = 0 if data.draw(st.booleans(), label="layout") else before
    try:
        yield
    finally:
        jsonio.LAYOUT_MIN_BYTES = before


def random_chunks(data: bytes, rnd: random.Random) -> list[bytes]:
    """Pieces of one of three styles: mostly 1..128 bytes, sometimes 1..8, sometimes the whole body."""
    style = rnd.random()
    lo, hi = (1, 8) if style < 0.05 else (1, 128) if style < 0.8 else (len(data) or 1, len(data) or 1)
    return harness.random_chunks(data, rnd, lo, hi)


class HTTPRun:
    """One HTTP flow through the real hooks, in stages (so two flows can interleave)."""

    def __init__(
        self,
        env: Env,
        s: Scenario,
        body: dict[str, Any] | None = None,
        path: str | None = None,
        rnd: random.Random | None = None,
    ) -> None:
        self.env = env
        self.s = s
        self.wire = WIRES[s.dialect]
        self.orig = self.wire.request(s) if body is None else body
        self.orig_bytes = orjson.dumps(self.orig)
        self.flow = harness.make_flow(
            self.orig_bytes,
            host=s.host,
            path=path or request_path(s),
            headers=[("content-type", "application/json")],
            response=False,
        )
        self.rnd = rnd or random.Random(s.seed ^ 0x5EED)
        self.feeder: harness.Feeder | None = None
        self.upstream = b""

    def request(self) -> None:
        self.env.hook(hl.HttpRequestHook(self.flow))
        self.fwd_bytes = self.flow.request.content
        self.fwd = orjson.loads(self.fwd_bytes)
        self.record = self.flow.metadata.get(KEY) or {}

    def respond(self, upstream: bytes, ctype: str) -> None:
        self.upstream = upstream
        self.flow.response = harness.answer(upstream, ctype, [("content-length", str(len(upstream)))])
        self.flow.response.stream = False
        self.env.hook(hl.HttpResponseHeadersHook(self.flow))
        stream = self.flow.response.stream
        if callable(stream):
            self.feeder = harness.Feeder(stream, random_chunks(upstream, self.rnd) + [b""])
        else:  # an event stream (or Gemini's JSON-array stream) toolvocab leaves alone (mode off)
            # still streams, as it came
            array = "json" in ctype and ":streamGenerateContent" in self.flow.request.path
            assert stream is False or (stream is True and ("event-stream" in ctype or array)), stream

    def feed_one(self) -> bool:
        """Feed the next chunk to the stream callable; False when nothing is left (or no callable)."""
        return self.feeder is not None and self.feeder.feed_one()

    def finish(self) -> bytes:
        if self.feeder is not None:
            self.feeder.run()
            self.flow.response.raw_content = None  # as after real streaming
        self.env.hook(hl.HttpResponseHook(self.flow))
        assert self.flow.id not in self.env.addon._states
        self.record = self.flow.metadata.get(KEY) or {}
        self.client = b"".join(self.feeder.per_call) if self.feeder is not None else self.flow.response.raw_content
        return self.client


# ============================================================================ the checks
@dataclass
class Observed:
    """What one flow's request side did, read off the wire (never from the addon's record)."""

    pairs: list[tuple[str, str, str, str | None]]  # (role, caller flat, upstream flat, namespace)
    decl_up: dict[int, str]  # kept declaration index -> upstream (inner) name
    renamed: dict[str, str]  # upstream inner name -> caller inner name, for declarations renamed
    replayed: dict[str, str] = field(default_factory=dict)  # upstream -> caller, undeclared replayed names renamed

    @property
    def aliases(self) -> dict[str, str]:
        """Every upstream-only name of this flow -> the caller's name."""
        return {**self.replayed, **self.renamed}


def flat(ns: str | None, name: str) -> str:
    return Decl(name, ns).flat


def check_request(
    s: Scenario, orig: dict[str, Any], fwd: dict[str, Any], fwd_bytes: bytes, record: dict[str, Any], orig_bytes: bytes
) -> Observed:
    """Properties 1, 3 (request side) and 4 for one forwarded request."""
    wire = WIRES[s.dialect]
    applies = s.mode in ("auto", "repair")
    if not applies:
        assert fwd_bytes == orig_bytes, "observe/off must not change the request"
    expected = orjson.loads(orig_bytes)
    # identical repeats are dropped
    dropped = [i for i, d in enumerate(s.decls) if d.repeat_of is not None]
    if applies and dropped:
        _drop_decls(s, expected, dropped)
    # the prompt sentence out first (a new system message moves the other positions)
    fwd_ns = orjson.loads(fwd_bytes)
    sentence = record.get("prompt_sentence") if s.mode == "auto" else None
    if sentence:
        wire.undo_sentence(fwd_ns, expected, sentence)
    paths_e = wire.name_paths(expected)
    paths_f = wire.name_paths(fwd_ns)
    assert [(p, r) for p, r, _ in paths_e] == [(p, r) for p, r, _ in paths_f], (
        "name positions differ",
        s.decls,
        paths_e,
        paths_f,
    )
    restored = orjson.loads(orjson.dumps(fwd_ns))
    pairs = []
    for (path, role, ns), (_, _, fns) in zip(paths_e, paths_f):
        caller, up = get(expected, path), get(fwd_ns, path)
        assert ns == fns
        pairs.append((role, caller, up, ns))
        put(restored, path, caller)
    # Property 3 (request): all but names and the sentence byte-identical.
    assert orjson.dumps(restored) == orjson.dumps(expected), "the request changed beyond names and the sentence"

    grammar = ACCEPTS[expected_grammar(s.dialect, s.host, s.model)]
    kept = [i for i in range(len(s.decls)) if not (applies and s.decls[i].repeat_of is not None)]
    decl_at = [k for k, p in enumerate(pairs) if p[0] in ("decl", "custom", "provider")]
    assert len(decl_at) == len(kept)
    first = {}
    for i, d in enumerate(s.decls):
        first.setdefault(d.flat, i)
    decl_up = {}
    for i, k in zip(kept, decl_at):
        decl_up[i] = pairs[k][2]
        if first[s.decls[i].flat] != i:
            pairs[k] = ("repeat",) + pairs[k][1:]  # a later declaration of a repeated name
    renamed = {pairs[k][2]: pairs[k][1] for k in decl_at if pairs[k][1] != pairs[k][2]}
    # An alias of a name only replayed in the transcript goes back to that name too (BR-17).
    for _, c, u, _ in pairs:
        if c != u:
            renamed.setdefault(u, c)
    if not applies:
        assert not renamed and all(c == u for _, c, u, _ in pairs)
        return Observed([(r, flat(ns, c), flat(ns, u), ns) for r, c, u, ns in pairs], decl_up, {})

    # Property 1: names the upstream receives.
    first_up: dict[str, str] = {}
    for i in kept:
        d = s.decls[i]
        up = decl_up[i]
        if d.kind != "function":
            assert up == d.name, f"a {d.kind} tool was renamed: {d.name!r} -> {up!r}"
            continue
        assert grammar.fullmatch(up), f"upstream got {up!r} for {d.name!r}, outside its grammar {grammar.pattern}"
        first_up.setdefault(d.flat, up)
    # the names the map renamed (a repeated name's first declaration may keep it)
    renamed_callers = {flat(ns, c) for r, c, u, ns in pairs if c != u and r != "repeat"}
    for role, caller, up, ns in pairs:
        if role in ("ns", "custom", "provider", "custom_call"):
            assert caller == up
            continue
        f_caller, f_up = flat(ns, caller), flat(ns, up)
        assert f_up not in renamed_callers, f"the upstream received {f_up!r}, a name the map renamed"
        if f_caller in first_up and role not in ("decl", "repeat"):
            assert up == first_up[f_caller], (
                f"{role} {caller!r} sent as {up!r}, its declaration as {first_up[f_caller]!r}"
            )
        if role in ("call", "result") and f_caller not in first_up:
            assert grammar.fullmatch(up), f"replayed {caller!r} sent as {up!r}, outside the grammar"
            # (an undeclared name: sent as is when valid, else as an alias)
            assert up == caller or not grammar.fullmatch(caller)
    replayed = {
        up: caller
        for role, caller, up, ns in pairs
        if role in ("call", "result") and flat(ns, caller) not in first_up and caller != up
    }
    for name in record.get("prompt_names") or []:
        assert name in set(decl_up.values()), f"the sentence names {name!r}, not a name the upstream got"

    # Property 4: a bijection, and the record says what the wire shows.
    all_up = [flat(s.decls[i].ns, decl_up[i]) for i in kept]
    assert len(set(all_up)) == len(all_up), f"two declarations share an upstream name: {all_up}"
    back: dict[str, str] = {}  # upstream -> caller, over every position
    forth: dict[str, str] = {}  # caller -> upstream, over every position but later declarations
    for role, caller, up, ns in pairs:
        if role in ("ns", "custom", "provider", "custom_call"):
            continue
        f_caller, f_up = flat(ns, caller), flat(ns, up)
        assert back.setdefault(f_up, f_caller) == f_caller, f"{f_up!r} stands for {back[f_up]!r} and {f_caller!r}"
        if role != "repeat":
            assert forth.setdefault(f_caller, f_up) == f_up, f"{f_caller!r} sent as {forth[f_caller]!r} and {f_up!r}"
    rmap = record.get("rename_map") or {}
    dups = record.get("duplicates") or {}
    for f_caller, f_up in forth.items():
        if f_caller != f_up:
            assert rmap.get(f_caller) == f_up, (f_caller, f_up, rmap)
        else:
            assert f_caller not in rmap, (f_caller, rmap)
    assert len(set(rmap.values())) == len(rmap), f"rename_map is not injective: {rmap}"
    observed_dups: dict[str, list[str | None]] = {}
    for i, d in enumerate(s.decls):
        if d.kind == "function" and i != next(j for j, e in enumerate(s.decls) if e.flat == d.flat):
            observed_dups.setdefault(d.flat, []).append(None if d.repeat_of is not None else flat(d.ns, decl_up[i]))
    assert dups == observed_dups, (dups, observed_dups)
    reverse = {v: k for k, v in rmap.items()}
    for name, aliases in dups.items():
        for a in aliases:
            if a is not None:
                reverse[a] = name
    for f_up, f_caller in back.items():
        if f_up != f_caller:
            assert reverse.get(f_up) == f_caller
    return Observed([(r, flat(ns, c), flat(ns, u), ns) for r, c, u, ns in pairs], decl_up, renamed, replayed)


def _drop_decls(s: Scenario, body: dict[str, Any], dropped: list[int]) -> None:
    """Remove the identical repeats from a request body (the expected forwarded tools)."""
    drop = set(dropped)
    if s.dialect == "gemini":
        k = 0
        for t in GeminiWire.inner(body)["tools"]:
            if "functionDeclarations" not in t:
                continue
            keep = []
            for d in t["functionDeclarations"]:
                if k not in drop:
                    keep.append(d)
                k += 1
            t["functionDeclarations"] = keep
        return
    if s.dialect == "openai_responses":
        k = 0
        top = []
        for t in body["tools"]:
            if t["type"] == "namespace":
                members = []
                for inner in t["tools"]:
                    if k not in drop:
                        members.append(inner)
                    k += 1
                t["tools"] = members
            elif "name" in t:
                if k in drop:
                    k += 1
                    continue
                k += 1
            top.append(t)
        body["tools"] = top
        return
    body["tools"] = [t for i, t in enumerate(body["tools"]) if i not in drop]


def answer_calls(s: Scenario, obs: Observed) -> list[tuple[str, str | None, str, dict[str, Any]]]:
    """The upstream answers with the names it received (and maybe another flow's alias)."""
    rnd = random.Random(s.seed ^ 0xA5)
    calls = []
    for i in s.answer:
        d = s.decls[i]
        args = args_for(d.schema_i, rnd)
        up = obs.decl_up[i]
        if up in obs.renamed and profile_alias(up, obs.renamed[up]):
            # Under a profile's name the model may mean another agent's keys: a key the schema
            # lacks leaves the call (test_a_profile_alias_with_a_key_the_tool_lacks_is_left); and
            # that agent may find a relative path elsewhere, which leaves it when the earlier
            # shell calls are not all known (test_a_profile_alias_with_a_relative_path_*), and
            # a path some agent respells is never moved: the model here means what both read
            # alike, a plain file's path from the root.
            declared = (SCHEMAS[d.schema_i] or {}).get("properties") or {}
            args = {k: plain_path(v) if k == "path" else v for k, v in args.items() if k in declared}
        calls.append((up, d.ns, d.kind, args))
    # a name the client only replayed, which went up as an alias: the model may repeat it
    for up in sorted(obs.replayed):
        if rnd.random() < 0.5:
            calls.append((up, None, "function", {"q": "v0"}))
            event("the alias of a replayed undeclared name is answered")
    for name in s.foreign:
        calls.append((name, None, "function", {}))
    return calls


QUOTED = re.compile(rb'"((?:[^"\\]|\\.)*)"')


def plain_path(value: Any) -> str:
    """``value`` as a plain file's path from the root (``"v two"`` → ``/srv/v_two.txt``)."""
    return "/srv/" + (re.sub(r"\W", "_", str(value), flags=re.ASCII) or "f") + ".txt"


def profile_alias(upstream: str, caller: str) -> bool:
    """A profile's rename: the upstream name is a vocabulary name, another agent's (a grammar or
    duplicate alias is a transport name no vocabulary row spells)."""
    return bool(vocabulary.entries_for(upstream)) and upstream != caller


def expected_client(upstream: bytes, renamed: dict[str, str]) -> bytes:
    """The upstream's bytes with every JSON string that is an alias replaced by the caller's name."""
    if not renamed:
        return upstream
    table = {orjson.dumps(k): orjson.dumps(v) for k, v in renamed.items()}
    return QUOTED.sub(lambda m: table.get(m.group(0), m.group(0)), upstream)


def note(s: Scenario, obs: Observed) -> None:
    """Coverage labels (``--hypothesis-show-statistics``)."""
    event(
        f"mode={s.mode} framing={s.framing}"
        + (" (Code Assist)" if s.envelope else "")
        + (" (proto field names)" if s.proto_names else "")
    )
    if s.mode in ("auto", "repair"):
        event("renamed a declaration" if obs.renamed else "no declaration renamed")
        event("an alias is answered" if any(obs.decl_up[i] in obs.renamed for i in s.answer) else "no alias answered")
        kinds = {r for r, c, u, _ in obs.pairs if c != u}
        for k in sorted(kinds):
            event(f"renamed at a {k} position")
        if any(d.repeat_of is not None for d in s.decls):
            event("identical repeat dropped")


def check_answer(s: Scenario, obs: Observed, upstream: bytes, client: bytes, client_view: bytes) -> None:
    """Properties 2 and 3 (answer side). ``client_view``: the upstream's answer as it would be
    to the client's own request (a Responses echo of the client's ``instructions``)."""
    note(s, obs)
    applies = s.mode in ("auto", "repair")
    if not applies:
        assert client == upstream, "observe/off must not change the answer"
        return
    # Property 2: no alias reaches the client.
    for alias in obs.aliases:
        assert orjson.dumps(alias) not in client, f"the client received the alias {alias!r}"
    # Property 3: everything else byte-identical.
    want = expected_client(client_view, obs.aliases)
    assert client == want, _diff(client, want)


def _diff(got: bytes, want: bytes) -> str:
    i = next((k for k, (a, b) in enumerate(zip(got, want)) if a != b), min(len(got), len(want)))
    return f"client bytes differ at {i}:\n got  {got[max(0, i - 120) : i + 120]!r}\n want {want[max(0, i - 120) : i + 120]!r}"


def run_http(env: Env, s: Scenario) -> tuple[HTTPRun, Observed]:
    env.set_mode(s.mode)
    r = HTTPRun(env, s)
    r.request()
    obs = check_request(s, r.orig, r.fwd, r.fwd_bytes, r.record, r.orig_bytes)
    calls = answer_calls(s, obs)
    body, ctype = r.wire.answer(s, calls, r.fwd)
    r.client_view = r.wire.answer(s, calls, r.fwd, echo=r.orig)[0]
    r.respond(body, ctype)
    return r, obs


# ============================================================================ properties
DIALECTS = ["anthropic", "openai_chat", "openai_responses", "gemini"]
#: A grammar or duplicate alias (readable prefix + ``_`` + 8 hex): no ladder step other than
#: reverse_map can reach a declared tool from it, so another flow's alias must be left.
HASH_ALIAS = re.compile(r"_[0-9a-f]{8}$")


def foreign_aliases(other: Observed, this: Observed) -> list[str]:
    """Up to two of ``other`` flow's hash aliases that ``this`` flow neither sent nor declares,
    in no spelling: one that differs from this flow's own alias (or a declared name) only in
    case or separators is that name (the ladder's rule 3), as two flows' aliases of the same
    name under two grammars can (``A…-0…`` sanitized to ``A…__73c05bb8`` and ``A…_73c05bb8``)."""
    mine = set(this.aliases) | set(this.decl_up.values()) | {c for _, c, _, _ in this.pairs}
    keys = {name_key(n) for n in mine}
    return [n for n in sorted(set(other.aliases) - mine) if HASH_ALIAS.search(n) and name_key(n) not in keys][:2]


@pytest.mark.parametrize("dialect", DIALECTS)
@SETTINGS
@given(data=st.data())
def test_single_flow_properties(env: Env, dialect: str, data: st.DataObject) -> None:
    """Properties 1–4 for one flow at a time, every framing (JSON, SSE, array, JSON to a stream request)."""
    s = data.draw(scenarios(dialect), label="scenario")
    with layouts(data):
        r, obs = run_http(env, s)
        client = r.finish()
    check_answer(s, obs, r.upstream, client, r.client_view)


@pytest.mark.parametrize("dialect", DIALECTS)
@SETTINGS
@given(data=st.data())
def test_concurrent_flows_never_mix_maps(env: Env, dialect: str, data: st.DataObject) -> None:
    """Property 5: two flows through one addon, hooks and stream chunks interleaved; each answer
    also calls an alias of the other flow, which must not be renamed through this flow's map."""
    a = data.draw(scenarios(dialect), label="flow a")
    b = data.draw(scenarios(dialect), label="flow b")
    order = random.Random(data.draw(st.integers(0, 2**32 - 1), label="interleaving seed"))
    b.mode = a.mode  # one option value for the whole addon
    env.set_mode(a.mode)
    ra, rb = HTTPRun(env, a), HTTPRun(env, b)
    first, second = (ra, rb) if order.random() < 0.5 else (rb, ra)
    with layouts(data):
        first.request()
        second.request()
    oa = check_request(a, ra.orig, ra.fwd, ra.fwd_bytes, ra.record, ra.orig_bytes)
    ob = check_request(b, rb.orig, rb.fwd, rb.fwd_bytes, rb.record, rb.orig_bytes)
    # each answer also names the other flow's aliases this flow never gave
    a.foreign = foreign_aliases(ob, oa)
    b.foreign = foreign_aliases(oa, ob)
    for r, s, o in ((ra, a, oa), (rb, b, ob)):
        calls = answer_calls(s, o)
        body, ctype = r.wire.answer(s, calls, r.fwd)
        r.client_view = r.wire.answer(s, calls, r.fwd, echo=r.orig)[0]
        r.respond(body, ctype)
    while True:
        progressed = False
        for r in (first, second) if order.random() < 0.5 else (second, first):
            if r.feed_one():
                progressed = True
        if not progressed:
            break
    for r in (first, second) if order.random() < 0.5 else (second, first):
        r.finish()
    for r, s, o in ((ra, a, oa), (rb, b, ob)):
        check_answer(s, o, r.upstream, r.client, r.client_view)
        if s.mode in ("auto", "repair"):
            for name in s.foreign:
                d = [x for x in r.record["decisions"] if x["name"] == name]
                assert d and all(x["step"] != "reverse_map" for x in d), (name, d)


# ================================================================== Responses over WebSocket
class WSRun:
    """One WebSocket turn (or several) through ``websocket_message``."""

    def __init__(self, env: Env, host: str) -> None:
        self.env = env
        self.flow = harness.ws_flow(host)
        self.delivered: list[bytes] = []
        self.upstream: list[bytes] = []

    def send(self, content: bytes, *, from_client: bool) -> WebSocketMessage:
        message, injected = harness.send_ws(self.env, self.flow, content, from_client=from_client)
        if not from_client:
            if not message.dropped:
                self.delivered.append(message.content)
            self.delivered.extend(injected)
        return message

    def create(self, s: Scenario) -> Observed:
        body = WIRES["openai_responses"].request(s)
        body.pop("stream", None)
        frame = {"type": "response.create", **body}
        self.orig = frame
        orig_bytes = orjson.dumps(frame)
        message = self.send(orig_bytes, from_client=True)
        fwd = orjson.loads(message.content)
        record = self.flow.metadata.get(KEY) or {}
        return check_request(s, frame, fwd, message.content, record, orig_bytes)

    def server_frames(self, s: Scenario, obs: Observed, fwd: dict[str, Any]) -> tuple[list[bytes], list[bytes]]:
        """(the upstream's frames, the same frames as they would be to the client's own request)."""
        calls = answer_calls(s, obs)
        wire = WIRES["openai_responses"]
        return (
            [orjson.dumps(d) for _, d in wire.events(s, calls, fwd)],
            [orjson.dumps(d) for _, d in wire.events(s, calls, fwd, echo=self.orig)],
        )

    def end(self) -> None:
        self.env.hook(WebsocketEndHook(self.flow))
        assert self.flow.id not in harness.websocket(self.env.module)._ws
        self.env.injected[:] = [x for x in self.env.injected if x[0] is not self.flow]  # keep memory flat


def _ws_fwd(run: WSRun) -> dict[str, Any]:
    return orjson.loads([m for m in run.flow.websocket.messages if m.from_client][-1].content)


@SETTINGS
@given(data=st.data())
def test_websocket_turns_properties(env: Env, data: st.DataObject) -> None:
    """Properties 1–4 on the Responses WebSocket path (each server frame one ``on_unit``), and 5
    across two turns on one socket: turn 2's answers use turn 2's map only."""
    a = data.draw(scenarios("openai_responses", ws=True), label="turn 1")
    b = data.draw(scenarios("openai_responses", ws=True), label="turn 2")
    b.mode, b.host = a.mode, a.host  # one socket: one host
    env.set_mode(a.mode)
    run = WSRun(env, a.host)
    try:
        for s in (a, b):
            oa = run.create(s)
            frames, views = run.server_frames(s, oa, _ws_fwd(run))
            mark = len(run.delivered)
            for fr in frames:
                run.send(fr, from_client=False)
            got = run.delivered[mark:]
            if s.mode in ("auto", "repair"):
                want = [expected_client(v, oa.aliases) for v in views]
                for alias in oa.aliases:
                    assert not any(orjson.dumps(alias) in g for g in got), f"alias {alias!r} reached the client"
            else:
                want = frames
            assert got == want, _diff(b"\n".join(got), b"\n".join(want))
    finally:
        run.end()


@SETTINGS
@given(data=st.data())
def test_websocket_concurrent_sockets_never_mix_maps(env: Env, data: st.DataObject) -> None:
    """Property 5 on the WebSocket path: two sockets, frames interleaved at random."""
    a = data.draw(scenarios("openai_responses", ws=True), label="socket a")
    b = data.draw(scenarios("openai_responses", ws=True), label="socket b")
    order = random.Random(data.draw(st.integers(0, 2**32 - 1), label="interleaving seed"))
    b.mode = a.mode
    env.set_mode(a.mode)
    ra, rb = WSRun(env, a.host), WSRun(env, b.host)
    try:
        oa = ra.create(a)
        ob = rb.create(b)
        a.foreign = foreign_aliases(ob, oa)
        b.foreign = foreign_aliases(oa, ob)
        (qa, va), (qb, vb) = ra.server_frames(a, oa, _ws_fwd(ra)), rb.server_frames(b, ob, _ws_fwd(rb))
        fa, fb = list(qa), list(qb)
        while qa or qb:
            if qa and (not qb or order.random() < 0.5):
                ra.send(qa.pop(0), from_client=False)
            else:
                rb.send(qb.pop(0), from_client=False)
        for run, s, o, frames, views in ((ra, a, oa, fa, va), (rb, b, ob, fb, vb)):
            want = [expected_client(v, o.aliases) for v in views] if s.mode in ("auto", "repair") else frames
            assert run.delivered == want, _diff(b"\n".join(run.delivered), b"\n".join(want))
            if s.mode in ("auto", "repair"):
                record = run.flow.metadata.get(KEY) or {}
                for name in s.foreign:
                    d = [x for x in record["decisions"] if x["name"] == name]
                    assert d and all(x["step"] != "reverse_map" for x in d), (name, d)
    finally:
        ra.end()
        rb.end()


# ============================================================== known bugs (xfail, strict)
#: Upstream names the answers below use: the alias the addon sends for ``LONG``.
LONG = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance"  # 75 characters
TEMPLATE = {"type": "object", "properties": {"template_path": STR}, "required": ["template_path"]}


def through(
    env: Env,
    dialect: str,
    body: dict[str, Any],
    answer: Callable[[dict[str, Any]], tuple[bytes, str]],
    *,
    mode: str = "repair",
    host: str | None = None,
    path: str | None = None,
) -> tuple[dict[str, Any], bytes, dict[str, Any]]:
    """One flow through the real hooks: (forwarded body, client bytes, record)."""
    env.set_mode(mode)
    s = Scenario(
        dialect,
        host or HOSTS[dialect],
        str(body.get("model", "m")),
        mode,
        [],
        [],
        None,
        None,
        0,
        bool(body.get("stream")),
        "sse" if body.get("stream") else "json",
        [],
    )
    r = HTTPRun(env, s, body=body, path=path or WIRES[dialect].path, rnd=random.Random(1))
    r.request()
    upstream, ctype = answer(r.fwd)
    r.respond(upstream, ctype)
    return r.fwd, r.finish(), r.record


def chat_tools(*tools: tuple[str, dict[str, Any] | None]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, **({"parameters": p} if p else {})}} for n, p in tools]


def chat_answer(name: str, args: dict[str, Any]) -> bytes:
    return orjson.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": "call_1",
                                "type": "function",
                                "function": {"name": name, "arguments": orjson.dumps(args).decode()},
                            }
                        ],
                    },
                    "finish_reason": "tool_calls",
                }
            ],
        }
    )


def chat_names(fwd: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in fwd["tools"]]


def test_was_bug_responses_arguments_done_event_name_keeps_the_alias(env: Env) -> None:
    body = {
        "model": "gpt-5",
        "input": "x",
        "stream": True,
        "tools": [{"type": "function", "name": LONG, "parameters": TEMPLATE}],
    }

    def answer(fwd: dict[str, Any]) -> tuple[bytes, str]:
        alias = fwd["tools"][0]["name"]
        item = {
            "id": "fc_1",
            "type": "function_call",
            "status": "completed",
            "arguments": '{"template_path":"cfn.yaml"}',
            "call_id": "call_1",
            "name": alias,
        }
        return sse(
            [
                (
                    "response.output_item.added",
                    {
                        "type": "response.output_item.added",
                        "sequence_number": 0,
                        "output_index": 0,
                        "item": dict(item, status="in_progress", arguments=""),
                    },
                ),
                (
                    "response.function_call_arguments.delta",
                    {
                        "type": "response.function_call_arguments.delta",
                        "sequence_number": 1,
                        "item_id": "fc_1",
                        "output_index": 0,
                        "delta": item["arguments"],
                    },
                ),
                (
                    "response.function_call_arguments.done",
                    {
                        "type": "response.function_call_arguments.done",
                        "sequence_number": 2,
                        "item_id": "fc_1",
                        "output_index": 0,
                        "name": alias,
                        "arguments": item["arguments"],
                    },
                ),
                (
                    "response.output_item.done",
                    {"type": "response.output_item.done", "sequence_number": 3, "output_index": 0, "item": item},
                ),
            ]
        ), "text/event-stream"

    fwd, client, _ = through(env, "openai_responses", body, answer)
    alias = fwd["tools"][0]["name"]
    assert alias != LONG
    assert orjson.dumps(LONG) in client
    assert alias.encode() not in client, "the alias reached the client in response.function_call_arguments.done"


def test_was_bug_responses_instructions_echo_carries_aliases(env: Env) -> None:
    body = {
        "model": "gpt-5",
        "instructions": "You are a coding agent.",
        "input": "x",
        "tools": [{"type": "function", "name": LONG, "parameters": TEMPLATE}],
    }

    def answer(fwd: dict[str, Any]) -> tuple[bytes, str]:
        return orjson.dumps(
            {
                "id": "resp_1",
                "object": "response",
                "status": "completed",
                "model": "gpt-5",
                "output": [],
                "instructions": fwd["instructions"],
                "tools": fwd["tools"],
                "tool_choice": "auto",
            }
        ), "application/json"

    fwd, client, _ = through(env, "openai_responses", body, answer, mode="auto")
    alias = fwd["tools"][0]["name"]
    assert alias in fwd["instructions"]  # the sentence names the tool by its upstream name
    assert alias.encode() not in client, "the echoed instructions carry the alias to the client"


@pytest.mark.parametrize("arguments", ["{}", "not json"])
def test_alias_with_arguments_failing_the_schema_still_gets_the_callers_name(env: Env, arguments: str) -> None:
    """The alias is this flow's own: it goes back whatever the arguments (the client then reports
    its own validation error). Was a bug: the reverse_map step LEFT such a call, alias and all."""
    body = {"model": "gpt-5", "messages": [{"role": "user", "content": "x"}], "tools": chat_tools((LONG, TEMPLATE))}

    def answer(fwd: dict[str, Any]) -> tuple[bytes, str]:
        return orjson.dumps(
            {
                "id": "c",
                "object": "chat.completion",
                "created": 1,
                "model": "m",
                "choices": [
                    {
                        "index": 0,
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": chat_names(fwd)[0], "arguments": arguments},
                                }
                            ],
                        },
                        "finish_reason": "tool_calls",
                    }
                ],
            }
        ), "application/json"

    fwd, client, _ = through(env, "openai_chat", body, answer)
    alias = chat_names(fwd)[0]
    assert alias != LONG
    assert alias.encode() not in client, "the client received the alias"
    fn = orjson.loads(client)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert fn == {"name": LONG, "arguments": arguments}


def test_duplicate_alias_is_checked_against_its_own_declaration(env: Env) -> None:
    """BR-31 with two schemas: a call to the second ``Read``'s alias comes back as ``Read`` with
    its arguments as sent. Was a bug: the alias resolved to the FIRST declaration, whose schema
    the call fails, and was left (alias and all)."""
    first = {"type": "object", "properties": {"uri": STR}, "required": ["uri"]}
    second = {"type": "object", "properties": {"path": STR}, "required": ["path"], "additionalProperties": False}
    body = {
        "model": "claude",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "x"}],
        "tools": [
            {"name": "Read", "input_schema": first},
            {"name": "Read", "description": "MCP", "input_schema": second},
        ],
    }

    def answer(fwd: dict[str, Any]) -> tuple[bytes, str]:
        return orjson.dumps(
            {
                "id": "msg",
                "type": "message",
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": fwd["tools"][1]["name"], "input": {"path": "/a"}}
                ],
                "stop_reason": "tool_use",
            }
        ), "application/json"

    fwd, client, _ = through(env, "anthropic", body, answer)
    alias = fwd["tools"][1]["name"]
    assert alias != "Read" and fwd["tools"][0]["name"] == "Read"
    assert alias.encode() not in client, "the second Read's alias reached the client"
    assert orjson.loads(client)["content"][0] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "Read",
        "input": {"path": "/a"},
    }


@pytest.mark.parametrize("provider_first", [False, True])
def test_a_provider_tool_repeating_a_client_tool_name_is_never_dropped(env: Env, provider_first: bool) -> None:
    """Was a bug (strict xfail): a provider tool declared after a client tool of the same name
    was removed from the request, so the model lost web search unseen. Its name is fixed, so it
    goes up as declared (the client tool after it gets an alias, the one before it keeps its
    name: the upstream sees the name twice and says so itself), and the client's tool is called
    by the name the client declared."""
    client_tool = {"name": "web_search", "input_schema": {"type": "object", "properties": {"query": STR}}}
    provider = {"type": "web_search_20250305", "name": "web_search", "max_uses": 2}
    body = {
        "model": "claude",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "x"}],
        "tools": [provider, client_tool] if provider_first else [client_tool, provider],
    }
    answer = {
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "?", "input": {"query": "q"}}],
        "stop_reason": "tool_use",
    }

    def upstream(fwd: dict[str, Any]) -> tuple[bytes, str]:
        (function,) = [t for t in fwd["tools"] if "type" not in t]
        answer["content"][0]["name"] = function["name"]  # the model calls the client's tool as sent
        return orjson.dumps(answer), "application/json"

    fwd, client, record = through(env, "anthropic", body, upstream)
    assert len(fwd["tools"]) == 2, f"a declared tool vanished: {fwd['tools']}"
    assert provider in fwd["tools"]  # byte for byte as declared
    if provider_first:
        assert fwd["tools"][1]["name"] != "web_search"  # the client tool after it is aliased
    else:
        assert fwd["tools"] == body["tools"]  # nothing to alias: the upstream sees the name twice
        assert any("sent as declared" in n for n in record["notes"]), record["notes"]
    got = orjson.loads(client)["content"][0]
    assert got["name"] == "web_search" and got["input"] == {"query": "q"}


# Was a bug: Gemini's apply_request ran dedupe_tools once per tools[] entry, each with a fresh
# DuplicateCursor, so a name repeated in a second functionDeclarations list was neither aliased nor
# dropped: the upstream received the name twice while the record claimed an alias.
def test_was_bug_gemini_repeat_across_tools_entries_is_deduplicated(env: Env) -> None:
    s1 = {"type": "object", "properties": {"file_path": STR}}
    s2 = {"type": "object", "properties": {"path": STR}}
    body = {
        "contents": [{"role": "user", "parts": [{"text": "x"}]}],
        "tools": [
            {"functionDeclarations": [{"name": "Read", "parametersJsonSchema": s1}]},
            {"functionDeclarations": [{"name": "Read", "parametersJsonSchema": s2}]},
        ],
    }
    fwd, _, record = through(
        env,
        "gemini",
        body,
        lambda fwd: (b'{"candidates":[]}', "application/json"),
        path="/v1beta/models/gemini-2.5-pro:generateContent",
    )
    names = [d["name"] for t in fwd["tools"] for d in t["functionDeclarations"]]
    assert record["duplicates"] == {"Read": [record["duplicates"]["Read"][0]]}
    assert len(set(names)) == len(names), f"the upstream receives a repeated name: {names}"


# Was a bug: OpenAI Responses apply_request ran dedupe_tools for the top-level list and again per
# namespace entry, each with a fresh DuplicateCursor, while make_plan counts repeats by flat name
# across all of them: one namespace declared in two entries sent the same (namespace, name) twice,
# and a top-level name equal to a namespaced flat name was planned as aliased but sent unchanged.
@pytest.mark.parametrize("shape", ["namespace twice", "top-level and namespace"])
def test_was_bug_responses_repeat_across_namespace_entries(env: Env, shape: str) -> None:
    s1 = {"type": "object", "properties": {"title": STR}}
    s2 = {"type": "object", "properties": {"body": STR}}
    if shape == "namespace twice":
        tools = [
            {
                "type": "namespace",
                "name": "mcp__gh__",
                "tools": [{"type": "function", "name": "create_issue", "parameters": s1}],
            },
            {
                "type": "namespace",
                "name": "mcp__gh__",
                "tools": [{"type": "function", "name": "create_issue", "parameters": s2}],
            },
        ]
    else:
        tools = [
            {"type": "function", "name": "mcp__gh__create_issue", "parameters": s1},
            {
                "type": "namespace",
                "name": "mcp__gh__",
                "tools": [{"type": "function", "name": "create_issue", "parameters": s2}],
            },
        ]
    body = {"model": "gpt-5", "input": "x", "tools": tools}
    fwd, _, record = through(env, "openai_responses", body, lambda fwd: (b'{"output":[]}', "application/json"))
    (planned,) = record["duplicates"]["mcp__gh__create_issue"]
    sent = [flat(t["name"], x["name"]) for t in fwd["tools"] if t["type"] == "namespace" for x in t["tools"]]
    sent += [t["name"] for t in fwd["tools"] if t["type"] == "function"]
    assert planned in sent, f"the record says the second declaration went up as {planned!r}; the upstream got {sent}"


# Was a bug: make_plan's profile step treated a target as a collision only when a tool was DECLARED
# under it (its note says 'declares or uses'), so a name the client replays in the transcript (an
# earlier, undeclared call) and a renamed tool reached the upstream under one name: not a bijection.
def test_was_bug_profile_target_used_in_the_transcript_is_a_collision(env: Env) -> None:
    body = {
        "model": "profiled-model",
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "shell", "arguments": "{}"}},
                    {"id": "c2", "type": "function", "function": {"name": "Bash", "arguments": '{"command":"ls"}'}},
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "unknown tool"},
            {"role": "tool", "tool_call_id": "c2", "content": "ok"},
        ],
        "tools": chat_tools(("Bash", {"type": "object", "properties": {"command": STR}})),
    }
    fwd, _, _ = through(env, "openai_chat", body, lambda fwd: (b'{"choices":[]}', "application/json"))
    replayed = [c["function"]["name"] for c in fwd["messages"][1]["tool_calls"]]
    assert len(set(replayed)) == 2, f"two different tools reach the upstream under one name: {replayed}"


def test_was_bug_transcript_alias_answered_reaches_the_client(env: Env) -> None:
    body = {
        "model": "gpt-5",
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search.evidence", "arguments": '{"query":"q"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "unknown tool"},
        ],
        "tools": chat_tools(("fetch_doc", {"type": "object", "properties": {"id": STR}})),
    }

    def answer(fwd: dict[str, Any]) -> tuple[bytes, str]:
        return chat_answer(fwd["messages"][1]["tool_calls"][0]["function"]["name"], {"query": "q"}), "application/json"

    fwd, client, _ = through(env, "openai_chat", body, answer)
    alias = fwd["messages"][1]["tool_calls"][0]["function"]["name"]
    assert alias != "search.evidence"
    assert alias.encode() not in client, "the client received the alias of its own replayed name"


# Was a bug: Gemini's apply_request renamed snake_case `function_declarations` but read allowed
# names only from camelCase toolConfig.functionCallingConfig.allowedFunctionNames, so a snake_case
# `tool_config.function_calling_config.allowed_function_names` (proto JSON accepts either spelling
# of each field) kept the long name while its declaration went up as an alias.
@pytest.mark.parametrize(
    "config, calling, allowed",
    [
        ("tool_config", "function_calling_config", "allowed_function_names"),
        ("toolConfig", "function_calling_config", "allowedFunctionNames"),
        ("tool_config", "functionCallingConfig", "allowed_function_names"),
    ],
)
def test_was_bug_gemini_snake_case_allowed_function_names_are_renamed(
    env: Env, config: str, calling: str, allowed: str
) -> None:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "x"}]}],
        "tools": [{"function_declarations": [{"name": LONG, "parameters": {"type": "OBJECT"}}]}],
        config: {calling: {"mode": "ANY", allowed: [LONG]}},
    }
    fwd, _, _ = through(
        env,
        "gemini",
        body,
        lambda fwd: (b'{"candidates":[]}', "application/json"),
        path="/v1beta/models/gemini-2.5-pro:generateContent",
    )
    alias = fwd["tools"][0]["function_declarations"][0]["name"]
    assert alias != LONG
    assert fwd[config][calling][allowed] == [alias]


# Was a bug: OpenAI Chat apply_request de-duplicated `tools` only; a name repeated in the legacy
# `functions` list was planned as an alias (record) but sent twice. Also across the two lists.
@pytest.mark.parametrize("where", ["functions", "tools and functions"])
def test_was_bug_chat_legacy_functions_repeat_is_deduplicated(env: Env, where: str) -> None:
    first = {"name": "Read", "parameters": {"type": "object", "properties": {"a": STR}}}
    second = {"name": "Read", "parameters": {"type": "object", "properties": {"b": STR}}}
    body: dict[str, Any] = {
        "model": "gpt-4",
        "messages": [{"role": "user", "content": "x"}],
        "functions": [first, second],
    }
    if where == "tools and functions":
        body["tools"] = [{"type": "function", "function": first}]
        body["functions"] = [second]
    fwd, _, record = through(env, "openai_chat", body, lambda fwd: (b'{"choices":[]}', "application/json"))
    (alias,) = record["duplicates"]["Read"]
    assert alias not in (None, "Read")
    names = [t["function"]["name"] for t in fwd.get("tools", [])] + [f["name"] for f in fwd["functions"]]
    assert names == ["Read", alias], f"the upstream receives {names}"


# Was a bug: an answer to this flow's alias was fitted with closed=True and lost keys its own
# schema accepts. Only annotation keys are dropped on that path.
@pytest.mark.parametrize("dialect", ["openai_chat", "anthropic"])
def test_was_bug_alias_answer_loses_keys_the_schema_allows(env: Env, dialect: str) -> None:
    open_schema = {"type": "object", "properties": {"template_path": STR}, "required": ["template_path"]}
    args = {"template_path": "cfn.yaml", "region": "eu-west-1"}  # valid: the schema allows other keys
    if dialect == "openai_chat":
        body = {
            "model": "gpt-5",
            "messages": [{"role": "user", "content": "x"}],
            "tools": chat_tools((LONG, open_schema), ("short_tool", open_schema)),
        }
        fwd, client, _ = through(
            env, dialect, body, lambda fwd: (chat_answer(chat_names(fwd)[0], args), "application/json")
        )
        short_fwd, short_client, _ = through(
            env, dialect, body, lambda fwd: (chat_answer("short_tool", args), "application/json")
        )
        assert (
            orjson.loads(orjson.loads(short_client)["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"])
            == args
        )
        got = orjson.loads(client)["choices"][0]["message"]["tool_calls"][0]["function"]
        assert got["name"] == LONG
        assert orjson.loads(got["arguments"]) == args, f"arguments changed under the alias: {got['arguments']}"
    else:
        body = {
            "model": "claude",
            "max_tokens": 10,
            "messages": [{"role": "user", "content": "x"}],
            "tools": [
                {"name": "Read", "input_schema": open_schema},
                {"name": "Read", "description": "MCP", "input_schema": open_schema},
            ],
        }

        def answer(fwd: dict[str, Any]) -> tuple[bytes, str]:
            return orjson.dumps(
                {
                    "id": "m",
                    "type": "message",
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "toolu_1", "name": fwd["tools"][1]["name"], "input": args}],
                }
            ), "application/json"

        _, client, _ = through(env, dialect, body, answer)
        block = orjson.loads(client)["content"][0]
        assert block["name"] == "Read"
        assert block["input"] == args, f"arguments changed under the duplicate's alias: {block['input']}"


def test_a_profile_alias_with_a_key_the_tool_lacks_is_left(env: Env) -> None:
    """A profile shows Bash upstream as `shell`; `shell {command, workdir}` is a Codex habit Bash
    has no key for: renamed back, a client that ignored `workdir` would run in the wrong
    directory. The call is left (the client reports `shell`) and the record says why."""
    body = {
        "model": "profiled-model",
        "messages": [{"role": "user", "content": "x"}],
        "tools": chat_tools(("Bash", {"type": "object", "properties": {"command": STR}, "required": ["command"]})),
    }
    args = {"command": "make", "workdir": "/srv/app"}
    fwd, client, record = through(
        env, "openai_chat", body, lambda fwd: (chat_answer(chat_names(fwd)[0], args), "application/json")
    )
    assert chat_names(fwd) == ["shell"]
    got = orjson.loads(client)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert got["name"] == "shell" and orjson.loads(got["arguments"]) == args
    (decision,) = record["decisions"]
    assert decision["action"] == "leave" and "'workdir'" in decision["reason"]


@pytest.mark.parametrize(
    ("earlier", "path", "left"), [("cd sub", "f.txt", True), ("ls", "f.txt", False), ("cd sub", "/repo/f.txt", False)]
)
def test_a_profile_alias_with_a_relative_path_is_read_where_that_agent_finds_it(
    env: Env, earlier: str, path: str, left: bool
) -> None:
    """A profile shows Read upstream as `read_file`, a name other agents resolve relative paths
    with from where they started, while Claude Code's Read resolves one where its Bash was left.
    After `Bash {command: "cd sub"}`, `read_file {path: "f.txt"}` names two files: the call is
    left (the client reports `read_file`, an alias it never declared) and the record says why.
    Without the `cd`, or with a path from the root, both read alike and it goes back as Read."""
    schema = {"type": "object", "properties": {"path": STR}, "required": ["path"], "additionalProperties": False}
    body = {
        "model": "profiled-model",
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "Bash", "arguments": orjson.dumps({"command": earlier}).decode()},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ok"},
        ],
        "tools": chat_tools(("Read", schema), ("Bash", {"type": "object", "properties": {"command": STR}})),
    }
    fwd, client, record = through(
        env, "openai_chat", body, lambda fwd: (chat_answer("read_file", {"path": path}), "application/json")
    )
    assert chat_names(fwd) == ["read_file", "shell"]
    got = orjson.loads(client)["choices"][0]["message"]["tool_calls"][0]["function"]
    assert orjson.loads(got["arguments"]) == {"path": path}
    (decision,) = record["decisions"]
    if left:
        assert got["name"] == "read_file" and decision["action"] == "leave"
        assert "an earlier Bash call" in decision["reason"] and "'f.txt'" in decision["reason"]
    else:
        assert got["name"] == "Read" and decision["action"] == "rename"


@pytest.mark.parametrize("sent", ["absent", None, ""])
@pytest.mark.parametrize("stream", [False, True])
def test_was_bug_responses_echo_of_absent_instructions_is_empty_string(env: Env, stream: bool, sent: Any) -> None:
    """A client that sends no instructions (or ``null``) gets the prompt sentence as
    ``instructions``; the echo gives back null, as the upstream would have for the client's own
    request (it gave ``""``). One that sends ``""`` gets ``""`` back."""
    body = {
        "model": "gpt-5",
        "input": "x",
        "stream": stream,
        "tools": [{"type": "function", "name": LONG, "parameters": TEMPLATE}],
        **({} if sent == "absent" else {"instructions": sent}),
    }

    def answer(fwd: dict[str, Any]) -> tuple[bytes, str]:
        response = {
            "id": "resp_1",
            "object": "response",
            "status": "completed",
            "output": [],
            "instructions": fwd.get("instructions"),
            "tools": fwd["tools"],
            "tool_choice": "auto",
        }
        if stream:
            return sse(
                [("response.completed", {"type": "response.completed", "sequence_number": 0, "response": response})]
            ), "text/event-stream"
        return orjson.dumps(response), "application/json"

    fwd, client, _ = through(env, "openai_responses", body, answer, mode="auto")
    assert fwd["instructions"].strip().startswith("Call tools only by")  # the sentence went up as the instructions
    echoed = orjson.loads(client.split(b"data: ", 1)[1])["response"] if stream else orjson.loads(client)
    want = "" if sent == "" else None
    assert echoed["instructions"] == want, f"the client sent {sent!r}; the echo shows {echoed['instructions']!r}"


# Was a bug: a Chat `role: "tool"` result that carries its call's `name` (some clients send it)
# kept the client's rejected name beside its call's alias; `role: "function"` results were renamed.
def test_was_bug_chat_tool_result_name_is_renamed_with_its_call(env: Env) -> None:
    body = {
        "model": "gpt-4o",
        "messages": [
            {"role": "user", "content": "x"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "files.read", "arguments": "{}"}}],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "files.read", "content": "ok"},
        ],
        "tools": chat_tools(("files.read", None)),
    }
    fwd, _, _ = through(env, "openai_chat", body, lambda fwd: (b'{"choices":[]}', "application/json"))
    alias = fwd["tools"][0]["function"]["name"]
    assert alias != "files.read"
    assert fwd["messages"][1]["tool_calls"][0]["function"]["name"] == alias
    assert fwd["messages"][2]["name"] == alias


# Was a bug: a Responses `tool_choice` forcing one function of a namespace (`{"type": "function",
# "namespace": …, "name": …}`) kept its rejected name while the namespace's declaration was renamed.
@pytest.mark.parametrize("stream", [False, True])
def test_was_bug_responses_namespaced_tool_choice_is_renamed(env: Env, stream: bool) -> None:
    body = {
        "model": "gpt-5",
        "stream": stream,
        "input": [{"role": "user", "content": "x"}],
        "tools": [
            {
                "type": "namespace",
                "name": "mcp__gh__",
                "tools": [{"type": "function", "name": "get.issue", "parameters": {"type": "object"}}],
            }
        ],
        "tool_choice": {"type": "function", "namespace": "mcp__gh__", "name": "get.issue"},
    }

    def echo(fwd: dict[str, Any]) -> tuple[bytes, str]:
        response = {"id": "r", "object": "response", "status": "completed", "output": [], **fwd}
        if not stream:
            return orjson.dumps(response), "application/json"
        event = {"type": "response.completed", "sequence_number": 0, "response": response}
        return sse([("response.completed", event)]), "text/event-stream"

    fwd, client, _ = through(env, "openai_responses", body, echo)
    alias = fwd["tools"][0]["tools"][0]["name"]
    assert alias != "get.issue"
    assert fwd["tool_choice"] == {"type": "function", "namespace": "mcp__gh__", "name": alias}
    # the answer's echo of the request gives the client its own name back
    assert alias.encode() not in client and b'"get.issue"' in client
