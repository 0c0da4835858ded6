"""Name grammars, deterministic aliases, rename profiles and the request-side plan.

* grammars: what each upstream accepts, ``sanitize``, ``alias`` (deterministic, readable prefix,
  length, never equal to a declared name or another alias), ``grammar_for`` by dialect, host and
  a profile's override;
* profiles: a good file parses and selects; every validation error is a ``ProfileError`` naming
  ``file:line`` (TOML syntax errors too), and the addon turns it into an ``OptionsError``;
* ``make_plan``: profile renames (schema and description untouched), collisions and ambiguous
  capabilities skipped and recorded, grammar aliases, duplicates (identical dropped, different
  aliased), transcript names, the prompt sentence naming upstream names;
* BR-14 / BR-15 / BR-17 / BR-31 end to end through each dialect's ``apply_request`` and the answer
  side (JSON and stream rewriters, the Responses ``tools`` / ``tool_choice`` echo);
* BR-28: with a profile active, an upstream's 403 passes through byte-identical (addon hooks via
  ``tests/harness/``), and the profile adds no tool and changes no header.

Known bugs are ``xfail(strict=True)`` tests named ``test_bug_*``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
from mitmproxy import exceptions
from mitmproxy import http
from mitmproxy.proxy.layers import http as hl

import harness
import toolvocab.dialects as tvdialects
from harness.dialects import context
from harness.fixtures import loaded  # noqa: F401  (pytest fixture)
from toolvocab.engine.grammar import DIALECT_GRAMMAR
from toolvocab.engine.grammar import GRAMMARS
from toolvocab.engine.grammar import alias
from toolvocab.engine.grammar import grammar_for
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import DuplicateCursor
from toolvocab.engine.plan import Plan
from toolvocab.engine.plan import make_plan
from toolvocab.engine.profiles import ProfileError
from toolvocab.engine.profiles import load_profiles
from toolvocab.engine.profiles import parse_profiles

ROOT = Path(__file__).resolve().parents[2]
KEY = harness.KEY

STR = {"type": "string"}
LONG = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance"  # 75 characters (BR-14)
TEMPLATE = {"type": "object", "properties": {"template_path": STR}, "required": ["template_path"]}
HEX8 = re.compile(r"_[0-9a-f]{8}$")
QUOTED = re.compile(rb'"(?:[^"\\]|\\.)*"')


def sha8(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:8]


def declared_of(value: str) -> str:
    """A ``reverse_map`` value's declared flat name: a repeated name's entry may also say which
    declaration it is, after a NUL mark (``"Read\\x00#2"``)."""
    return value.split("\x00", 1)[0]


def reverse_names(plan) -> dict[str, str]:
    """``plan.reverse_map`` with every value reduced to the declared flat name."""
    return {k: declared_of(v) for k, v in plan.reverse_map.items()}


def upstream_to_caller(plan) -> dict[str, str]:
    """Upstream name -> the caller's flat name, from ``rename_map`` and ``duplicates`` alone."""
    out = {v: k for k, v in plan.rename_map.items()}
    for name, aliases in plan.duplicates.items():
        out.update({a: name for a in aliases if a is not None})
    return out


# ======================================================================== grammars
VALIDITY = [
    # openai: ^[a-zA-Z0-9_-]{1,64}$
    ("openai", "Bash", True), ("openai", "read-file_2", True), ("openai", "a" * 64, True), ("openai", "a" * 65, False),
    ("openai", "1password", True), ("openai", "_x", True), ("openai", "binja.get_function", False),
    ("openai", "user-profile/update", False), ("openai", "fs:read", False), ("openai", "has space", False),
    ("openai", "naïve", False), ("openai", "", False), ("openai", "Bash\n", False),
    # anthropic: {1,128}
    ("anthropic", "a" * 128, True), ("anthropic", "a" * 129, False), ("anthropic", LONG, True),
    ("anthropic", "a.b", False), ("anthropic", "-x", True),
    # anthropic64
    ("anthropic64", "a" * 64, True), ("anthropic64", "a" * 65, False), ("anthropic64", LONG, False),
    # gemini: letter or _ first; . : - allowed; 63
    ("gemini", "binja.get_function", True), ("gemini", "fs:read", True), ("gemini", "x-y", True), ("gemini", "_x", True),
    ("gemini", "1password", False), ("gemini", "-x", False), ("gemini", ".x", False), ("gemini", "a/b", False),
    ("gemini", "a" * 63, True), ("gemini", "a" * 64, False),
    # bedrock: [a-zA-Z][a-zA-Z0-9_]*, 64
    ("bedrock", "gtr_cool", True), ("bedrock", "gtr-cool", False), ("bedrock", "_x", False), ("bedrock", "1x", False),
    ("bedrock", "a" * 64, True), ("bedrock", "a" * 65, False),
    # kimi: ^[a-zA-Z_][a-zA-Z0-9-_]{0,127}$
    ("kimi", "_x", True), ("kimi", "a-b", True), ("kimi", "1x", False), ("kimi", "a.b", False),
    ("kimi", "a" * 128, True), ("kimi", "a" * 129, False),
]  # fmt: skip


@pytest.mark.parametrize(("grammar", "name", "ok"), VALIDITY)
def test_grammar_accepts_exactly_the_documented_names(grammar: str, name: str, ok: bool) -> None:
    assert GRAMMARS[grammar].valid(name) is ok


def test_every_grammar_names_its_source() -> None:
    assert set(GRAMMARS) == {"openai", "anthropic", "anthropic64", "gemini", "bedrock", "kimi"}
    for g in GRAMMARS.values():
        assert g.source and g.max_length > 0


@pytest.mark.parametrize(
    ("grammar", "name", "clean"),
    [
        ("openai", "binja.get_function", "binja_get_function"),
        ("openai", "user-profile/update", "user-profile_update"),
        ("openai", "has space", "has_space"),
        ("openai", "naïve", "na_ve"),
        ("openai", "line\nbreak", "line_break"),
        ("openai", "", "t"),
        ("gemini", "1password", "t_1password"),
        ("gemini", "-x", "t_-x"),
        ("gemini", "a/b.c:d", "a_b.c:d"),
        ("bedrock", "gtr-cool", "gtr_cool"),
        ("bedrock", "_x", "t__x"),
        ("kimi", "9lives", "t_9lives"),
    ],
)
def test_sanitize(grammar: str, name: str, clean: str) -> None:
    assert GRAMMARS[grammar].sanitize(name) == clean


def test_sanitize_does_not_truncate() -> None:
    assert GRAMMARS["openai"].sanitize("a" * 100) == "a" * 100


def test_alias_is_readable_prefix_plus_sha256_and_fits() -> None:
    a = alias(LONG, GRAMMARS["openai"], [])
    assert a == LONG[:55] + "_" + sha8(LONG)  # LiteLLM's shape (BR-14): first 55 characters + 8 hex
    assert len(a) == 64 and GRAMMARS["openai"].valid(a)
    g = alias(LONG, GRAMMARS["gemini"], [])
    assert g == LONG[:54] + "_" + sha8(LONG) and len(g) == 63
    assert alias("binja.get_function", GRAMMARS["openai"], []) == "binja_get_function_" + sha8("binja.get_function")


def test_alias_is_deterministic_across_calls_and_unrelated_taken_sets() -> None:
    g = GRAMMARS["openai"]
    first = alias(LONG, g, [])
    assert alias(LONG, g, []) == first
    assert alias(LONG, g, ["Bash", "Read", LONG]) == first
    assert alias(LONG, g, [], salt="#2") != first  # the salt tells repeats apart
    assert alias(LONG, g, [], salt="#2") == alias(LONG, g, [], salt="#2")


def test_alias_never_collides_with_declared_names_or_earlier_aliases() -> None:
    g = GRAMMARS["openai"]
    taken: set[str] = set()
    seen = []
    for _ in range(6):
        a = alias(LONG, g, taken)
        assert a not in taken and g.valid(a) and a.startswith(LONG[:55]) and HEX8.search(a)
        taken.add(a)
        seen.append(a)
    assert len(set(seen)) == 6


def test_alias_of_two_long_names_with_one_prefix_differ() -> None:
    g = GRAMMARS["openai"]
    a, b = LONG + "_alpha", LONG + "_beta"
    assert a[:55] == b[:55]
    assert alias(a, g, []) != alias(b, g, [])


@settings(max_examples=300, deadline=None, database=None)
@given(
    name=st.text(min_size=0, max_size=200),
    grammar=st.sampled_from(sorted(GRAMMARS)),
    taken=st.sets(st.text(min_size=1, max_size=70), max_size=5),
)
def test_alias_is_always_valid_and_free(name: str, grammar: str, taken: set[str]) -> None:
    g = GRAMMARS[grammar]
    a = alias(name, g, taken)
    assert g.valid(a), a
    assert a not in taken
    assert HEX8.search(a)
    assert alias(name, g, taken) == a


@pytest.mark.parametrize(
    ("dialect", "host", "override", "expected"),
    [
        ("anthropic", "api.anthropic.com", None, "anthropic"),
        ("openai_chat", "api.openai.com", None, "openai"),
        ("openai_responses", "api.openai.com", None, "openai"),
        ("gemini", "generativelanguage.googleapis.com", None, "gemini"),
        ("ollama", "127.0.0.1", None, "openai"),  # unknown dialect: the strictest common one
        ("anthropic", "api.deepseek.com", None, "anthropic64"),
        ("openai_chat", "api.deepseek.com", None, "openai"),  # the DeepSeek row is for its /anthropic shim
        ("anthropic", "notdeepseek.com", None, "anthropic"),
        ("openai_chat", "api.moonshot.ai", None, "kimi"),
        ("anthropic", "api.moonshot.cn", None, "kimi"),
        ("anthropic", "bedrock-runtime.us-east-1.amazonaws.com", None, "bedrock"),
        ("gemini", "bedrock-runtime.us-east-1.amazonaws.com", None, "bedrock"),
        ("anthropic", "api.deepseek.com", "gemini", "gemini"),  # a profile's grammar wins
        ("openai_chat", "api.openai.com", "bedrock", "bedrock"),
        ("openai_chat", "", None, "openai"),
    ],
)
def test_grammar_for(dialect: str, host: str, override: str | None, expected: str) -> None:
    assert grammar_for(dialect, host, override).name == expected


def test_grammar_for_unknown_override_raises() -> None:
    with pytest.raises(KeyError):
        grammar_for("anthropic", "", "nope")
    assert DIALECT_GRAMMAR == {
        "anthropic": "anthropic",
        "openai_chat": "openai",
        "openai_responses": "openai",
        "gemini": "gemini",
    }


# ======================================================================== profiles
GOOD = """\
# rename profiles
[[profile]]
name = "codex-vocabulary"
description = "Codex names for GPT-5"
model = "^gpt-5"
[profile.names]
shell = "shell"
todo = "update_plan"

[[profile]]
name = "local-qwen"
host = '^(127\\.0\\.0\\.1|localhost)$'
path = "/chat/completions$"
grammar = "openai"
names = { read = "read_file", shell = "run_shell_command" }

[[profile]]
name = "catch-all"
"""


def test_good_file_parses_in_order() -> None:
    ps = parse_profiles(GOOD, "p.toml")
    assert [p.name for p in ps.profile] == ["codex-vocabulary", "local-qwen", "catch-all"]
    codex, qwen, rest = ps.profile
    assert codex.names == {"shell": "shell", "todo": "update_plan"} and codex.model == "^gpt-5" and codex.host is None
    assert qwen.grammar == "openai" and qwen.names == {"read": "read_file", "shell": "run_shell_command"}
    assert rest.names == {} and rest.grammar is None


def test_select_first_match_by_host_path_and_model() -> None:
    ps = parse_profiles(GOOD, "p.toml")
    assert ps.select("api.openai.com", "/v1/responses", "gpt-5.5").name == "codex-vocabulary"
    assert ps.select("127.0.0.1", "/v1/chat/completions?x=1", "qwen3").name == "catch-all"  # path regex ends at $
    assert ps.select("127.0.0.1", "/v1/chat/completions", "qwen3").name == "local-qwen"
    assert ps.select("localhost", "/v1/chat/completions", None).name == "local-qwen"
    assert ps.select("127.0.0.1", "/v1/chat/completions", "gpt-5").name == "codex-vocabulary"  # first match wins
    assert ps.select("api.anthropic.com", "/v1/messages", None).name == "catch-all"


def test_select_none_without_a_match_and_empty_file() -> None:
    ps = parse_profiles('[[profile]]\nname = "x"\nhost = "^only\\\\.here$"\n', "p.toml")
    assert ps.select("api.openai.com", "/v1/responses", "gpt-5") is None
    assert ps.select("only.here", "/", None).name == "x"
    assert parse_profiles("", "p.toml").profile == []
    assert parse_profiles("# nothing\n", "p.toml").select("h", "/", None) is None


@pytest.mark.parametrize("path", sorted((ROOT / "docs" / "profiles").glob("*.toml")), ids=lambda p: p.name)
def test_shipped_example_profiles_load(path: Path) -> None:
    ps = load_profiles(str(path))
    assert ps.profile and all(p.name for p in ps.profile)


BAD = {
    # label: (text, line, words in the message)
    "unknown key": ('[[profile]]\nname = "a"\nhots = "x"\n', 3, ["hots", "Extra inputs"]),
    "missing name": ('# c\n[[profile]]\nhost = "x"\n', 2, ["profile.0.name", "Field required"]),
    "name not a string": ("[[profile]]\nname = 5\n", 2, ["profile.0.name", "valid string"]),
    "bad host regex": ('[[profile]]\nname = "a"\n\nhost = "("\n', 4, ["profile.0.host", "invalid regex"]),
    "bad path regex": ('[[profile]]\nname = "a"\npath = "[z-a]"\n', 3, ["profile.0.path", "invalid regex"]),
    "bad model regex": ('[[profile]]\nname = "a"\nmodel = "*gpt"\n', 3, ["profile.0.model", "invalid regex"]),
    "unknown grammar": (
        '[[profile]]\nname = "a"\n\n\ngrammar = "nope"\n',
        5,
        ["profile.0.grammar", "unknown grammar 'nope'", "openai"],
    ),
    "name value not a string": (
        '[[profile]]\nname = "a"\n[profile.names]\nshell = "shell"\nread = 5\n',
        5,
        ["profile.0.names.read"],
    ),
    "error in the second profile": (
        '[[profile]]\nname = "a"\nhost = "ok"\n\n[[profile]]\nname = "b"\nhost = "("\n',
        7,
        ["profile.1.host"],
    ),
    "key in a comment is not the key": ('[[profile]]\n# host = "old"\nname = "a"\nhost = "("\n', 4, ["profile.0.host"]),
    "TOML: missing value": ('[[profile]]\nname = "a"\nhost =\n', 3, ["TOML syntax error"]),
    "TOML: duplicate key": ('[[profile]]\nname = "a"\nname = "b"\n', 3, ["TOML syntax error"]),
    "TOML: unterminated string": ('[[profile]]\nname = "a\nhost = "x"\n', 2, ["TOML syntax error"]),
    "TOML: bad table header": ('[[profile]]\nname = "a"\n[profile.names\nshell = "x"\n', 3, ["TOML syntax error"]),
}


@pytest.mark.parametrize("label", list(BAD))
def test_validation_errors_name_file_and_line(label: str) -> None:
    text, line, words = BAD[label]
    with pytest.raises(ProfileError) as info:
        parse_profiles(text, "profiles.toml")
    message = str(info.value)
    assert message.startswith(f"profiles.toml:{line}: "), message
    for word in words:
        assert word in message, message


def test_load_profiles_reads_the_file_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "bad.toml"
    path.write_text('[[profile]]\nname = "a"\ngrammar = "x"\n')
    with pytest.raises(ProfileError, match=rf"^{re.escape(str(path))}:3: profile\.0\.grammar"):
        load_profiles(str(path))
    with pytest.raises(ProfileError, match="cannot read"):
        load_profiles(str(tmp_path / "missing.toml"))
    with pytest.raises(ProfileError, match="cannot read"):
        load_profiles(str(tmp_path))  # a directory


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ('[[profile]]\nname = "a"\n\n[profile.names]\nshell = "shell"\nbogus = "x"\n', 6),  # unknown capability
        ('[[profile]]\nname = "a"\n[profile.names]\nshell = "shell"\nread = "has space"\n', 5),  # unusable target
        ('[[profile]]\nname = "a"\n[profile.names]\nshell = "x"\nread = "x"\n', 5),  # two capabilities, one name
        ('[[profile]]\nname = "a"\nnames.bogus = "x"\n', 3),  # dotted key
    ],
    ids=["unknown capability", "unusable target", "one target twice", "dotted key"],
)
def test_names_errors_point_at_the_entry_line(text: str, line: int) -> None:
    """Was a bug (strict xfail): the error pointed at the `[profile.names]` header."""
    with pytest.raises(ProfileError) as info:
        parse_profiles(text, "profiles.toml")
    assert str(info.value).startswith(f"profiles.toml:{line}: "), str(info.value)


def test_unknown_capability_names_a_close_match_and_every_valid_name() -> None:
    text = '[[profile]]\nname = "a"\n[profile.names]\nshel = "shell"\nread = "read_file"\n'
    with pytest.raises(ProfileError) as info:
        parse_profiles(text, "p.toml")
    message = str(info.value)
    assert message.startswith("p.toml:4: profile.0.names.shel: unknown capability 'shel'; did you mean 'shell'?"), (
        message
    )
    assert "Valid capabilities: " in message
    for capability in ("shell", "read", "write", "web_fetch", "todo"):
        assert re.search(rf"\b{capability}\b", message.split("Valid capabilities: ", 1)[1]), capability
    # nothing close: no guess, still the list
    with pytest.raises(ProfileError) as info:
        parse_profiles('[[profile]]\nname = "a"\nnames = { zzzzqqq = "x" }\n', "p.toml")
    assert str(info.value).startswith("p.toml:3: profile.0.names.zzzzqqq: unknown capability 'zzzzqqq'. Valid"), str(
        info.value
    )


def test_several_names_problems_each_at_its_line_in_file_order() -> None:
    text = '[[profile]]\nname = "a"\nhost = "("\n[profile.names]\nbogus = "x"\nshell = "has space"\n'
    with pytest.raises(ProfileError) as info:
        parse_profiles(text, "p.toml")
    parts = str(info.value).split("; ")
    starts = [p.split(": ", 1)[0] for p in parts if p.startswith("p.toml:")]
    assert starts == ["p.toml:3", "p.toml:5", "p.toml:6"], str(info.value)


@pytest.mark.parametrize(
    ("text", "line"),
    [('# profiles\n[[profiles]]\nname = "a"\n', 2), ('[profile]\nname = "a"\n', 1), ('\nprofile = "x"\n', 2)],
    ids=["[[profiles]]", "[profile]", "profile = string"],
)
def test_top_level_errors_name_a_line(text: str, line: int) -> None:
    """Errors outside a ``[[profile]]`` table name a line too (was a bug: no line at all)."""
    with pytest.raises(ProfileError) as info:
        parse_profiles(text, "profiles.toml")
    assert str(info.value).startswith(f"profiles.toml:{line}: "), str(info.value)


def test_toml_error_at_end_of_document_names_a_line() -> None:
    """tomllib says 'at end of document' for an unterminated last line (was a bug: no line)."""
    with pytest.raises(ProfileError) as info:
        parse_profiles('[[profile]]\nname = "a', "profiles.toml")
    assert str(info.value).startswith("profiles.toml:2: "), str(info.value)


def test_non_utf8_file_is_a_profile_error_naming_the_line(tmp_path: Path) -> None:
    """Was a bug twice over: UnicodeDecodeError escaped (no OptionsError), then a byte offset
    instead of the line."""
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[[profile]]\nname = "caf\xe9"\n')
    with pytest.raises(ProfileError, match=rf"^{re.escape(str(path))}:2: "):
        load_profiles(str(path))


# ======================================================================== make_plan
def fn(
    name: str, schema: dict[str, Any] | None = None, *, namespace: str | None = None, description: str | None = None
):
    return declared_tool(
        name, namespace=namespace, input_schema=schema or {"type": "object", "properties": {}}, description=description
    )


def profile_of(names: dict[str, str], **fields: str):
    lines = ["[[profile]]", 'name = "p"'] + [f'{k} = "{v}"' for k, v in fields.items()] + ["[profile.names]"]
    lines += [f'{k} = "{v}"' for k, v in names.items()]
    return parse_profiles("\n".join(lines) + "\n", "p.toml").profile[0]


def plan(
    tools: list, *, grammar: str | None = "openai", profile=None, transcript=(), system=(), sentence=False
) -> Plan:
    return make_plan(
        Toolset(tools),
        system,
        add_sentence=sentence,
        grammar=GRAMMARS[grammar] if grammar else None,
        profile=profile,
        transcript_names=transcript,
    )


def test_profile_renames_capabilities_and_records_why() -> None:
    p = plan([fn("Bash"), fn("Read"), fn("Grep")], profile=profile_of({"shell": "shell", "read": "read_file"}))
    assert p.rename_map == {"Bash": "shell", "Read": "read_file"}
    assert p.profile == "p" and p.skipped == []
    assert [(r.caller, r.upstream, r.why) for r in p.renames] == [
        ("Bash", "shell", "profile"),
        ("Read", "read_file", "profile"),
    ]
    assert reverse_names(p) == {"shell": "Bash", "read_file": "Read"}


def test_profile_target_the_client_declares_is_a_collision_skipped_and_recorded() -> None:
    p = plan([fn("Read"), fn("grep")], profile=profile_of({"read": "grep"}))
    assert p.rename_map == {}
    assert len(p.skipped) == 1 and "Read → grep skipped" in p.skipped[0] and "already declares" in p.skipped[0]
    # a provider or free-text tool's name is taken too
    p = plan([fn("Bash"), declared_tool("shell", kind=ToolKind.FREEFORM)], profile=profile_of({"shell": "shell"}))
    assert p.rename_map == {} and "already declares" in p.skipped[0]
    # and so is a namespaced tool's bare name
    p = plan([fn("Bash"), fn("shell", namespace="mcp__srv__")], profile=profile_of({"shell": "shell"}), grammar=None)
    assert p.rename_map == {} and "already declares" in p.skipped[0]


def test_ambiguous_or_absent_capability_is_skipped_and_recorded() -> None:
    p = plan([fn("Bash"), fn("run_shell_command")], profile=profile_of({"shell": "shell"}))
    assert p.rename_map == {} and "2 declared tools have it (Bash, run_shell_command)" in p.skipped[0]
    p = plan([fn("Read")], profile=profile_of({"shell": "shell"}))
    assert p.rename_map == {} and "no declared tool has that capability" in p.skipped[0]
    # an MCP tool never holds a capability, even when its tool part is a known name
    p = plan([fn("mcp__srv__Bash")], profile=profile_of({"shell": "shell"}))
    assert p.rename_map == {} and "no declared tool" in p.skipped[0]


def test_profile_target_equal_to_the_declared_name_changes_nothing() -> None:
    p = plan([fn("shell")], profile=profile_of({"shell": "shell"}))
    assert p.rename_map == {} and p.skipped == [] and p.renames == []


def test_profile_target_outside_the_grammar_is_then_aliased() -> None:
    p = plan([fn("Read")], profile=profile_of({"read": "read.file"}))
    up = p.rename_map["Read"]
    assert up.startswith("read_file_") and HEX8.search(up) and GRAMMARS["openai"].valid(up)
    assert [r.why for r in p.renames] == ["profile", "grammar"]


def test_grammar_aliases_only_rejected_function_names() -> None:
    tools = [
        fn("Bash"),
        fn(LONG),
        fn("binja.get_function"),
        fn("1password"),
        declared_tool("user/update", kind=ToolKind.FREEFORM),
        declared_tool("web.search", kind=ToolKind.PROVIDER),
    ]
    p = plan(tools)
    assert set(p.rename_map) == {LONG, "binja.get_function"}  # 1password is a valid OpenAI name
    assert all(GRAMMARS["openai"].valid(v) for v in p.rename_map.values())
    assert {r.why for r in p.renames} == {"grammar"}
    g = plan(tools, grammar="gemini")
    assert set(g.rename_map) == {LONG, "1password"}  # dots are fine for Gemini, a leading digit is not
    assert g.rename_map["1password"] == "t_1password_" + sha8("1password")
    assert plan(tools, grammar=None).rename_map == {}


def test_grammar_alias_never_equals_another_declared_name() -> None:
    squatter = alias(LONG, GRAMMARS["openai"], [])
    p = plan([fn(squatter), fn(LONG)])
    assert p.rename_map[LONG] != squatter and GRAMMARS["openai"].valid(p.rename_map[LONG])
    assert squatter not in p.rename_map


def test_namespaced_tool_is_checked_and_aliased_inside_its_namespace() -> None:
    p = plan([fn("create.issue", namespace="mcp__github__"), fn("ok_name", namespace="mcp__" + "s" * 70 + "__")])
    assert list(p.rename_map) == ["mcp__github__create.issue"]
    assert p.rename_map["mcp__github__create.issue"] == "mcp__github__create_issue_" + sha8("create.issue")


def test_duplicates_identical_dropped_different_aliased() -> None:
    read_a = fn("Read", {"type": "object", "properties": {"file_path": STR}})
    read_b = fn("Read", {"type": "object", "properties": {"path": STR}}, description="MCP Read")
    bash = fn("Bash", {"type": "object", "properties": {"command": STR}})
    p = plan([read_a, bash, read_b, bash, read_a, read_b])
    assert p.duplicates["Bash"] == [None]
    aliases = p.duplicates["Read"]
    assert aliases[1] is None and aliases[2] is None  # repeats of the first and of the second
    assert aliases[0] != "Read" and aliases[0].startswith("Read_") and HEX8.search(aliases[0])
    assert aliases[0] == alias("Read", GRAMMARS["openai"], [], salt="#2")
    assert reverse_names(p) == {aliases[0]: "Read"}
    assert p.rename_map == {}
    cursor = DuplicateCursor(p)
    assert [cursor.step(n) for n in ["Read", "Bash", "Read", "Bash", "Read", "Read"]] == [
        ("keep", None),
        ("keep", None),
        ("rename", aliases[0]),
        ("drop", None),
        ("drop", None),
        ("drop", None),
    ]


def test_duplicate_of_a_long_name_gets_a_valid_alias_distinct_from_the_first() -> None:
    p = plan([fn(LONG, TEMPLATE), fn(LONG, TEMPLATE, description="other")])
    first, second = p.rename_map[LONG], p.duplicates[LONG][0]
    assert first != second and all(GRAMMARS["openai"].valid(x) for x in (first, second))
    assert reverse_names(p) == {first: LONG, second: LONG}


def test_transcript_names_outside_the_grammar_are_aliased_once() -> None:
    p = plan([fn("search_evidence")], transcript=["search.evidence", "search_evidence", "fetch", "search.evidence", ""])
    assert p.rename_map == {"search.evidence": "search_evidence_" + sha8("search.evidence")}
    assert [r.why for r in p.renames] == ["transcript"]
    # a replayed declared name uses the declaration's alias
    p = plan([fn(LONG)], transcript=[LONG])
    assert list(p.rename_map) == [LONG] and [r.why for r in p.renames] == ["grammar"]


@settings(max_examples=100, deadline=None)
@given(
    names=st.lists(
        st.text(alphabet="abc._-/", min_size=1, max_size=90).map(lambda s: "mcp__" + s),
        min_size=1,
        max_size=4,
        unique=True,
    ),
    leaked=st.sets(st.integers(0, 3)),
    duplicate=st.booleans(),
)
def test_an_alias_back_in_the_transcript_is_the_same_alias(names, leaked, duplicate) -> None:
    """An alias that reached the client (a stream given up, the hold timeout) comes back in its
    history: the declared tool keeps that alias, so the history call and the tool go up under one
    name and the model's repeat of it is named back; a new alias left the repeat "not declared"
    for the rest of the conversation. Also for a repeated declaration's alias."""
    tools = [fn(n) for n in names] + ([fn(names[0], description="another")] if duplicate else [])
    first = plan(tools)
    given_out = sorted(set(first.rename_map.values()) | {a for v in first.duplicates.values() for a in v if a})
    replayed = [a for k, a in enumerate(given_out) if k in leaked]
    again = plan(tools, transcript=[*replayed, "Bash"])
    assert again.rename_map == first.rename_map and again.duplicates == first.duplicates
    for name in replayed:  # the model repeating it is named back to the tool it was given for
        assert reverse_names(again)[name] == reverse_names(first)[name]


def test_prompt_sentence_names_upstream_names() -> None:
    p = plan(
        [fn("Bash"), fn(LONG), fn("Read")],
        profile=profile_of({"shell": "shell"}),
        system=["Use Bash and Read."],
        sentence=True,
    )
    assert p.prompt_sentence is not None
    assert p.unmentioned == ["shell", p.rename_map[LONG]]
    assert LONG not in p.prompt_sentence and " Bash" not in p.prompt_sentence
    assert p.prompt_sentence.endswith(f"which include shell and {p.rename_map[LONG]}.")
    assert plan([fn("Bash")], system=["Use Bash."], sentence=True).prompt_sentence is None
    assert plan([fn(LONG)], sentence=False).prompt_sentence is None


# ============================================================ BR cases through the dialects
class Flow:
    """A request through a dialect's apply_request with the plan the addon makes, and answers
    through the same dialect's rewriters, resolved as the addon resolves them."""

    def __init__(
        self, dialect: str, body: dict[str, Any], *, host: str = "", profile=None, sentence: bool = False
    ) -> None:
        self.d = tvdialects.by_name(dialect)
        assert self.d is not None
        self.tools = Toolset(self.d.declared_tools(body))
        self.plan = make_plan(
            self.tools,
            self.d.system_texts(body),
            add_sentence=sentence,
            grammar=grammar_for(self.d.name, host, profile.grammar if profile else None),
            profile=profile,
            transcript_names=self.d.transcript_names(body),
        )
        self.fwd = copy.deepcopy(body)
        self.changed = self.d.apply_request(self.fwd, self.plan)
        self.decisions: list = []

    def resolve(self, call):
        decision = resolve(call, self.tools, self.plan.reverse_map)
        self.decisions.append(decision)
        return decision

    def json(self, answer: dict[str, Any]) -> dict[str, Any]:
        out = copy.deepcopy(answer)
        self.d.rewrite_response(out, context(self.resolve, self.plan, flow_key="f"))
        return out

    def stream(self, data: bytes, seed: int = 0) -> bytes:
        rnd = random.Random(seed)
        rw = self.d.stream_rewriter(context(self.resolve, self.plan, flow_key="f"))
        out: list[bytes] = []
        i = 0
        while i < len(data):
            n = rnd.randint(1, 40)
            out += rw.feed(data[i : i + n])
            i += n
        out += rw.finish()
        return b"".join(out)


def sse(events: list[tuple[str | None, Any]]) -> bytes:
    return b"".join((f"event: {n}\n".encode() if n else b"") + b"data: " + orjson.dumps(d) + b"\n\n" for n, d in events)


def anthropic_answer(name: str, args: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": args}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": [block], "stop_reason": "tool_use"}
    stream = sse(
        [
            ("message_start", {"type": "message_start", "message": dict(message, content=[])}),
            (
                "content_block_start",
                {"type": "content_block_start", "index": 0, "content_block": dict(block, input={})},
            ),
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": orjson.dumps(args).decode()},
                },
            ),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_stop", {"type": "message_stop"}),
        ]
    )
    return message, stream


def chat_answer(name: str, args: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    arguments = orjson.dumps(args).decode()
    message = {
        "id": "c",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": name, "arguments": arguments}}
                    ],
                },
                "finish_reason": "tool_calls",
            }
        ],
    }
    chunk = lambda delta, fin=None: (
        None,
        {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": delta, "finish_reason": fin}]},
    )  # noqa: E731
    stream = sse(
        [
            chunk(
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"index": 0, "id": "call_1", "type": "function", "function": {"name": name, "arguments": ""}}
                    ],
                }
            ),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[:5]}}]}),
            chunk({"tool_calls": [{"index": 0, "function": {"arguments": arguments[5:]}}]}),
            chunk({}, "tool_calls"),
            (None, "[DONE]"),
        ]
    )
    return message, stream


def responses_answer(
    name: str, args: dict[str, Any], fwd: dict[str, Any], namespace: str | None = None
) -> tuple[dict[str, Any], bytes]:
    item = {
        "id": "fc_1",
        "type": "function_call",
        "status": "completed",
        "arguments": orjson.dumps(args).decode(),
        "call_id": "call_1",
        "name": name,
    }
    if namespace:
        item["namespace"] = namespace
    response = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [item],
        "tools": fwd.get("tools", []),
        "tool_choice": fwd.get("tool_choice", "auto"),
    }
    stream = sse(
        [
            (
                "response.created",
                {
                    "type": "response.created",
                    "sequence_number": 0,
                    "response": dict(response, status="in_progress", output=[]),
                },
            ),
            (
                "response.output_item.added",
                {
                    "type": "response.output_item.added",
                    "sequence_number": 1,
                    "output_index": 0,
                    "item": dict(item, arguments="", status="in_progress"),
                },
            ),
            (
                "response.function_call_arguments.delta",
                {
                    "type": "response.function_call_arguments.delta",
                    "sequence_number": 2,
                    "item_id": "fc_1",
                    "output_index": 0,
                    "delta": item["arguments"],
                },
            ),
            (
                "response.function_call_arguments.done",
                {
                    "type": "response.function_call_arguments.done",
                    "sequence_number": 3,
                    "item_id": "fc_1",
                    "output_index": 0,
                    "arguments": item["arguments"],
                },
            ),
            (
                "response.output_item.done",
                {"type": "response.output_item.done", "sequence_number": 4, "output_index": 0, "item": item},
            ),
            ("response.completed", {"type": "response.completed", "sequence_number": 5, "response": response}),
        ]
    )
    return response, stream


def gemini_answer(name: str, args: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    response = {
        "candidates": [
            {
                "content": {"role": "model", "parts": [{"functionCall": {"name": name, "args": args}}]},
                "finishReason": "STOP",
            }
        ]
    }
    return response, b"data: " + orjson.dumps(
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]}
    ) + b"\r\n\r\ndata: " + orjson.dumps(response) + b"\r\n\r\n"


def answered_names(dialect: str, answer: dict[str, Any]) -> list[str]:
    if dialect == "anthropic":
        return [b["name"] for b in answer["content"] if b["type"] == "tool_use"]
    if dialect == "openai_chat":
        return [c["function"]["name"] for c in answer["choices"][0]["message"]["tool_calls"]]
    if dialect == "openai_responses":
        return [i["name"] for i in answer["output"] if i["type"] == "function_call"]
    return [p["functionCall"]["name"] for p in answer["candidates"][0]["content"]["parts"] if "functionCall" in p]


def answer_for(dialect: str, name: str, args: dict[str, Any], fwd: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
    if dialect == "anthropic":
        return anthropic_answer(name, args)
    if dialect == "openai_chat":
        return chat_answer(name, args)
    if dialect == "openai_responses":
        return responses_answer(name, args, fwd)
    return gemini_answer(name, args)


def request_for(
    dialect: str,
    tools: list[tuple[str, dict[str, Any], str | None]],
    *,
    transcript: list[tuple[str, dict[str, Any]]] = (),
    choice: str | None = None,
    system: str = "You are an agent.",
) -> dict[str, Any]:
    """A request declaring ``tools`` (name, schema, description), replaying ``transcript`` calls
    (each with its result) and forcing ``choice``."""
    if dialect == "anthropic":
        msgs: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
        for k, (n, a) in enumerate(transcript):
            msgs.append({"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": n, "input": a}]})
            msgs.append(
                {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": f"t{k}",
                            "content": [{"type": "text", "text": "ok"}, {"type": "tool_reference", "tool_name": n}],
                        }
                    ],
                }
            )
        body = {
            "model": "m",
            "max_tokens": 10,
            "system": system,
            "messages": msgs,
            "tools": [dict({"name": n, "input_schema": s}, **({"description": d} if d else {})) for n, s, d in tools],
        }
        if choice:
            body["tool_choice"] = {"type": "tool", "name": choice}
        return body
    if dialect == "openai_chat":
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": "go"}]
        for k, (n, a) in enumerate(transcript):
            msgs.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": f"t{k}",
                            "type": "function",
                            "function": {"name": n, "arguments": orjson.dumps(a).decode()},
                        }
                    ],
                }
            )
            msgs.append({"role": "tool", "tool_call_id": f"t{k}", "content": "ok"})
        body = {
            "model": "m",
            "messages": msgs,
            "tools": [
                {
                    "type": "function",
                    "function": dict({"name": n, "parameters": s}, **({"description": d} if d else {})),
                }
                for n, s, d in tools
            ],
        }
        if choice:
            body["tool_choice"] = {"type": "function", "function": {"name": choice}}
        return body
    if dialect == "openai_responses":
        items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "go"}]
        for k, (n, a) in enumerate(transcript):
            items.append(
                {"type": "function_call", "call_id": f"t{k}", "name": n, "arguments": orjson.dumps(a).decode()}
            )
            items.append({"type": "function_call_output", "call_id": f"t{k}", "output": "ok"})
        body = {
            "model": "m",
            "instructions": system,
            "input": items,
            "tools": [
                dict({"type": "function", "name": n, "parameters": s}, **({"description": d} if d else {}))
                for n, s, d in tools
            ],
        }
        if choice:
            body["tool_choice"] = {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": choice}],
            }
        return body
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go"}]}]
    for n, a in transcript:
        contents.append({"role": "model", "parts": [{"functionCall": {"name": n, "args": a}}]})
        contents.append({"role": "user", "parts": [{"functionResponse": {"name": n, "response": {"result": "ok"}}}]})
    body = {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": system}]},
        "tools": [
            {
                "functionDeclarations": [
                    dict({"name": n, "parametersJsonSchema": s}, **({"description": d} if d else {}))
                    for n, s, d in tools
                ]
            }
        ],
    }
    if choice:
        body["toolConfig"] = {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [choice]}}
    return body


def forwarded_names(dialect: str, fwd: dict[str, Any]) -> dict[str, list[str]]:
    """Names at each kind of position of a forwarded request."""
    out: dict[str, list[str]] = {"tools": [], "choice": [], "transcript": []}
    if dialect == "anthropic":
        out["tools"] = [t["name"] for t in fwd["tools"]]
        if "tool_choice" in fwd:
            out["choice"] = [fwd["tool_choice"]["name"]]
        for m in fwd["messages"]:
            for b in m["content"] if isinstance(m["content"], list) else ():
                if b["type"] == "tool_use":
                    out["transcript"].append(b["name"])
                if b["type"] == "tool_result":
                    out["transcript"] += [x["tool_name"] for x in b["content"] if x["type"] == "tool_reference"]
    elif dialect == "openai_chat":
        out["tools"] = [t["function"]["name"] for t in fwd["tools"]]
        if "tool_choice" in fwd:
            out["choice"] = [fwd["tool_choice"]["function"]["name"]]
        out["transcript"] = [c["function"]["name"] for m in fwd["messages"] for c in m.get("tool_calls") or ()]
    elif dialect == "openai_responses":
        out["tools"] = [t["name"] for t in fwd["tools"]]
        if "tool_choice" in fwd:
            out["choice"] = [t["name"] for t in fwd["tool_choice"]["tools"]]
        out["transcript"] = [i["name"] for i in fwd["input"] if i["type"] == "function_call"]
    else:
        out["tools"] = [d["name"] for t in fwd["tools"] for d in t["functionDeclarations"]]
        if "toolConfig" in fwd:
            out["choice"] = list(fwd["toolConfig"]["functionCallingConfig"]["allowedFunctionNames"])
        for c in fwd["contents"]:
            for p in c["parts"]:
                for k in ("functionCall", "functionResponse"):
                    if k in p:
                        out["transcript"].append(p[k]["name"])
    return out


DIALECTS = ["anthropic", "openai_chat", "openai_responses", "gemini"]
#: A host per dialect whose grammar rejects LONG (Anthropic's own API takes 128: DeepSeek's /anthropic takes 64).
LIMITED_HOST = {
    "anthropic": "api.deepseek.com",
    "openai_chat": "api.openai.com",
    "openai_responses": "api.openai.com",
    "gemini": "generativelanguage.googleapis.com",
}


def check_round_trip(flow: Flow, dialect: str, upstream_name: str, caller: str, args: dict[str, Any]) -> None:
    """The upstream answers ``upstream_name``: the JSON answer and the stream (in random chunk
    splits) reach the client byte-identical except that name, which is ``caller``."""
    answer, stream = answer_for(dialect, upstream_name, args, flow.fwd)
    # every upstream name back (the Responses echo lists all the tools)
    table = {orjson.dumps(up): orjson.dumps(name) for up, name in upstream_to_caller(flow.plan).items()}
    table[orjson.dumps(upstream_name)] = orjson.dumps(caller)
    swap = lambda b: QUOTED.sub(lambda m: table.get(m.group(0), m.group(0)), b)  # noqa: E731
    got = flow.json(answer)
    assert answered_names(dialect, got) == [caller]
    assert orjson.dumps(got) == swap(orjson.dumps(answer))
    for seed in range(3):
        client = flow.stream(stream, seed)
        assert client == swap(stream)
        if upstream_name != caller:
            assert orjson.dumps(upstream_name) not in client


@pytest.mark.parametrize("dialect", DIALECTS)
def test_br14_long_name_aliased_everywhere_and_restored_in_every_answer(dialect: str) -> None:
    tools = [
        ("Bash", {"type": "object", "properties": {"command": STR}}, "Run a command."),
        (LONG, TEMPLATE, "Check a template."),
    ]
    body = request_for(dialect, tools, transcript=[(LONG, {"template_path": "a.yaml"})], choice=LONG)
    flow = Flow(dialect, body, host=LIMITED_HOST[dialect])
    up = flow.plan.rename_map[LONG]
    limit = GRAMMARS[grammar_for(dialect, LIMITED_HOST[dialect]).name].max_length
    assert len(up) == limit and up.startswith(LONG[: limit - 9]) and up.endswith("_" + sha8(LONG))
    names = forwarded_names(dialect, flow.fwd)
    assert names["tools"] == ["Bash", up]
    assert names["choice"] == [up]
    assert set(names["transcript"]) == {up}  # the replayed call (and its result / reference) get the same alias
    assert LONG not in json.dumps(flow.fwd)
    # schema and description untouched
    assert json.dumps(flow.fwd).count("Check a template.") == 1 and json.dumps(flow.fwd).count("template_path") >= 2
    check_round_trip(flow, dialect, up, LONG, {"template_path": "cfn.yaml"})
    assert any(d.step.value == "reverse_map" and d.target == LONG for d in flow.decisions)


def test_br14_responses_echo_gets_the_callers_names_back() -> None:
    tools = [(LONG, TEMPLATE, None), ("Bash", {"type": "object", "properties": {}}, None)]
    flow = Flow("openai_responses", request_for("openai_responses", tools, choice=LONG))
    up = flow.plan.rename_map[LONG]
    answer, stream = responses_answer(up, {"template_path": "x"}, flow.fwd)
    got = flow.json(answer)
    assert [t["name"] for t in got["tools"]] == [LONG, "Bash"]
    assert got["tool_choice"]["tools"] == [{"type": "function", "name": LONG}]
    client = flow.stream(stream)
    assert up.encode() not in client
    events = [orjson.loads(line[6:]) for line in client.split(b"\n") if line.startswith(b"data: ")]
    assert [t["name"] for t in events[0]["response"]["tools"]] == [LONG, "Bash"]  # response.created echo too
    assert [t["name"] for t in events[-1]["response"]["tools"]] == [LONG, "Bash"]


def test_br14_responses_namespaced_long_tool_keeps_its_namespace() -> None:
    ns = "mcp__plugin_deploy_on_aws_awsiac__"
    inner = "check_cloudformation_template_compliance_and_report_every_finding_x"  # 67 characters
    body = {
        "model": "m",
        "input": "go",
        "tools": [
            {
                "type": "namespace",
                "name": ns,
                "description": "AWS",
                "tools": [{"type": "function", "name": inner, "parameters": TEMPLATE}],
            }
        ],
    }
    flow = Flow("openai_responses", body)
    up_inner = flow.fwd["tools"][0]["tools"][0]["name"]
    assert flow.fwd["tools"][0]["name"] == ns and up_inner != inner and len(up_inner) == 64
    assert flow.plan.rename_map == {ns + inner: ns + up_inner}
    answer, _ = responses_answer(up_inner, {"template_path": "x"}, flow.fwd, namespace=ns)
    got = flow.json(answer)
    assert (got["output"][0]["name"], got["output"][0]["namespace"]) == (inner, ns)
    assert got["tools"][0]["tools"][0]["name"] == inner


@pytest.mark.parametrize("dialect", ["anthropic", "openai_chat", "openai_responses"])
def test_br15_dots_and_slashes_aliased_and_restored_from_the_map(dialect: str) -> None:
    s = {"type": "object", "properties": {"address": STR}}
    tools = [
        ("binja.get_function", s, None),
        ("user-profile/update", {"type": "object", "properties": {}}, None),
        ("binja_get_function", s, None),
    ]
    flow = Flow(dialect, request_for(dialect, tools))
    up = flow.plan.rename_map
    assert set(up) == {"binja.get_function", "user-profile/update"}
    assert up["binja.get_function"] == "binja_get_function_" + sha8(
        "binja.get_function"
    )  # never the declared sanitized name
    assert up["user-profile/update"] == "user-profile_update_" + sha8("user-profile/update")
    assert forwarded_names(dialect, flow.fwd)["tools"] == [
        up["binja.get_function"],
        up["user-profile/update"],
        "binja_get_function",
    ]
    check_round_trip(flow, dialect, up["binja.get_function"], "binja.get_function", {"address": "0x401000"})
    # the declared binja_get_function stays itself: never reversed by replacing _ with .
    check_round_trip(flow, dialect, "binja_get_function", "binja_get_function", {"address": "0x1"})


def test_br15_gemini_keeps_dots_and_aliases_slashes() -> None:
    tools = [
        ("binja.get_function", {"type": "object", "properties": {}}, None),
        ("user-profile/update", {"type": "object", "properties": {}}, None),
    ]
    flow = Flow("gemini", request_for("gemini", tools))
    assert list(flow.plan.rename_map) == ["user-profile/update"]
    check_round_trip(flow, "gemini", flow.plan.rename_map["user-profile/update"], "user-profile/update", {})


@pytest.mark.parametrize("dialect", DIALECTS)
def test_br17_invalid_replayed_name_is_sanitized_and_the_answer_repaired(dialect: str) -> None:
    tools = [
        ("search_evidence", {"type": "object", "properties": {"query": STR}}, None),
        ("fetch_doc", {"type": "object", "properties": {"id": STR}}, None),
    ]
    body = request_for(dialect, tools, transcript=[("search$evidence", {"query": "q"})])
    flow = Flow(dialect, body, host="bedrock-runtime.us-east-1.amazonaws.com")
    replayed = forwarded_names(dialect, flow.fwd)["transcript"]
    up = flow.plan.rename_map["search$evidence"]
    assert set(replayed) == {up} and GRAMMARS["bedrock"].valid(up)
    assert [r.why for r in flow.plan.renames] == ["transcript"]
    # turn N+1: the model hallucinates the dotted name again; one declared tool matches it
    answer, stream = answer_for(dialect, "search.evidence", {"query": "q"}, flow.fwd)
    assert answered_names(dialect, flow.json(answer)) == ["search_evidence"]
    assert b'"search_evidence"' in flow.stream(stream)


@pytest.mark.parametrize("dialect", DIALECTS)
def test_br31_repeats_dropped_or_aliased_and_restored(dialect: str) -> None:
    read = {"type": "object", "properties": {"file_path": STR}}
    bash = {"type": "object", "properties": {"command": STR}}
    tools = [("Read", read, "Built-in Read."), ("Bash", bash, None), ("Read", read, "MCP Read."), ("Bash", bash, None)]
    flow = Flow(dialect, request_for(dialect, tools))
    second = flow.plan.duplicates["Read"][0]
    assert flow.plan.duplicates == {"Read": [second], "Bash": [None]}
    assert forwarded_names(dialect, flow.fwd)["tools"] == ["Read", "Bash", second]
    check_round_trip(flow, dialect, second, "Read", {"file_path": "/a"})
    check_round_trip(flow, dialect, "Read", "Read", {"file_path": "/b"})
    assert any("the client cannot tell them apart" in r.detail for r in flow.plan.renames)


def declarations(dialect: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """The declaration objects (the dicts holding ``name``) of a request, in order."""
    if dialect == "anthropic":
        return list(body["tools"])
    if dialect == "openai_chat":
        return [t["function"] for t in body["tools"]]
    if dialect == "openai_responses":
        return list(body["tools"])
    return [d for t in body["tools"] for d in t["functionDeclarations"]]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_profile_renames_through_the_dialect_keep_schema_and_description(dialect: str) -> None:
    schema = {"type": "object", "properties": {"command": STR, "timeout": {"type": "integer"}}, "required": ["command"]}
    body = request_for(
        dialect,
        [("bash", schema, "OpenCode's bash."), ("read", {"type": "object", "properties": {"filePath": STR}}, None)],
        transcript=[("bash", {"command": "ls"})],
    )
    flow = Flow(dialect, body, profile=profile_of({"shell": "shell"}), sentence=True)
    assert flow.plan.rename_map == {"bash": "shell"}
    assert forwarded_names(dialect, flow.fwd)["transcript"][0] == "shell"
    assert '"bash"' not in json.dumps(flow.fwd)
    # the same declaration objects, only the name changed; no tool added or removed
    sent, declared = declarations(dialect, flow.fwd), declarations(dialect, body)
    assert len(sent) == len(declared)
    assert [dict(d, name="bash") if d["name"] == "shell" else d for d in sent] == declared
    assert "shell" in (flow.plan.prompt_sentence or "") and "bash" not in (flow.plan.prompt_sentence or "")
    check_round_trip(flow, dialect, "shell", "bash", {"command": "ls"})


# =========================================================== BR-28: a 403 with a profile
@pytest.fixture
def addon_env(loaded):
    """``(tctx, module)`` of the script loaded by ``tests/harness/``, no profile file set before
    and after."""
    with harness.configured(loaded, toolvocab_profiles=None):
        yield loaded


ZEN_PROFILE = """\
[[profile]]
name = "codex-names-on-zen"
host = "(^|\\\\.)opencode\\\\.ai$"
[profile.names]
shell = "shell"
"""
FREE_TIER_403 = b'{"type":"FreeTierError","message":"OpenCode\'s free tier can only be used from within OpenCode"}'
OPENCODE_TOOLS = ["bash", "edit", "glob", "grep", "read", "write", "todowrite", "webfetch"]


def zen_flow(stream: bool) -> http.HTTPFlow:
    body = {
        "model": "big-pickle",
        "instructions": "You are opencode.",
        "input": [{"type": "message", "role": "user", "content": "hi"}],
        "tools": [
            {
                "type": "function",
                "name": n,
                "description": f"the {n} tool",
                "parameters": {"type": "object", "properties": {"x": STR}},
            }
            for n in OPENCODE_TOOLS
        ],
        "stream": stream,
    }
    return harness.make_flow(
        body,
        host="opencode.ai",
        path="/zen/v1/responses",
        headers=[("content-type", "application/json"), ("user-agent", "pi/0.1"), ("authorization", "Bearer sk-x")],
        upstream=FREE_TIER_403,
        resp_type="application/json",
        status=403,
        resp_headers=[("x-request-id", "req_403"), ("content-length", str(len(FREE_TIER_403)))],
    )


def run_hooks(tctx, module, f: http.HTTPFlow) -> bytes:
    """``f`` through the hooks (``harness.replay``, the upstream body in one piece); what the client got."""
    return harness.replay(harness.Env(tctx, module), f, chunks=[f.response.raw_content]).out


@pytest.mark.parametrize("stream", [False, True])
def test_br28_403_passes_through_byte_identical_with_a_profile_active(addon_env, tmp_path: Path, stream: bool) -> None:
    tctx, module = addon_env
    path = tmp_path / "zen.toml"
    path.write_text(ZEN_PROFILE)
    tctx.configure(module, toolvocab_profiles=str(path))
    f = zen_flow(stream)
    before_headers = [(k, v) for k, v in f.request.headers.fields if k.lower() != b"content-length"]
    original = orjson.loads(f.request.content)
    resp_headers = list(f.response.headers.fields)
    client = run_hooks(tctx, module, f)
    # the answer: status, headers and bytes exactly as the upstream sent them
    assert f.response.status_code == 403
    assert client == FREE_TIER_403
    assert list(f.response.headers.fields) == resp_headers
    record = f.metadata[KEY]
    # At a known access gate no profile applies (BR-28): OpenCode's own tools go up as declared.
    assert record["profile"] is None and record["rename_map"] == {}
    assert any("access gate" in n for n in record["notes"]), record["notes"]
    assert record["response_changed"] is False and record["decisions"] == []
    assert any("403" in n for n in record["notes"]), record["notes"]
    # nothing renamed, no tool added, no header changed
    sent = orjson.loads(f.request.content)
    assert [t["name"] for t in sent["tools"]] == OPENCODE_TOOLS
    assert [{k: v for k, v in t.items() if k != "name"} for t in sent["tools"]] == [
        {k: v for k, v in t.items() if k != "name"} for t in original["tools"]
    ]
    assert [
        (k, v) for k, v in f.request.headers.fields if k.lower() not in (b"content-length", b"accept-encoding")
    ] == [(k, v) for k, v in before_headers if k.lower() != b"accept-encoding"]


@pytest.mark.parametrize("stream", [False, True])
def test_403_passes_through_byte_identical_while_a_profile_renames(addon_env, tmp_path: Path, stream: bool) -> None:
    """Any upstream's refusal passes through untouched with a profile in force (here one that
    does apply: not a known access gate), and the profile renamed only the client's own tool."""
    tctx, module = addon_env
    path = tmp_path / "gateway.toml"
    path.write_text(ZEN_PROFILE.replace("opencode\\\\.ai", "gateway\\\\.example"))
    tctx.configure(module, toolvocab_profiles=str(path))
    f = zen_flow(stream)
    f.request.host = f.request.headers["host"] = "llm.gateway.example"
    before_headers = [
        (k, v) for k, v in f.request.headers.fields if k.lower() not in (b"content-length", b"accept-encoding")
    ]
    original = orjson.loads(f.request.content)
    resp_headers = list(f.response.headers.fields)
    client = run_hooks(tctx, module, f)
    assert f.response.status_code == 403 and client == FREE_TIER_403
    assert list(f.response.headers.fields) == resp_headers
    record = f.metadata[KEY]
    assert record["profile"] == "codex-names-on-zen" and record["rename_map"] == {"bash": "shell"}, record
    assert record["request_changed"] is True and record["response_changed"] is False and record["decisions"] == []
    assert any("403" in n for n in record["notes"]), record["notes"]
    sent = orjson.loads(f.request.content)
    assert [t["name"] for t in sent["tools"]] == ["shell"] + OPENCODE_TOOLS[1:]
    assert [dict(t, name=None) for t in sent["tools"]] == [dict(t, name=None) for t in original["tools"]]
    assert [
        (k, v) for k, v in f.request.headers.fields if k.lower() not in (b"content-length", b"accept-encoding")
    ] == before_headers


def test_br28_without_a_profile_opencode_core_tools_reach_the_gate_unchanged(addon_env) -> None:
    tctx, module = addon_env
    f = zen_flow(False)
    client = run_hooks(tctx, module, f)
    assert client == FREE_TIER_403
    sent = orjson.loads(f.request.content)
    assert [t["name"] for t in sent["tools"]] == OPENCODE_TOOLS
    assert f.metadata[KEY]["rename_map"] == {}


def test_bad_profile_file_is_an_options_error_naming_the_line(addon_env, tmp_path: Path) -> None:
    tctx, module = addon_env
    path = tmp_path / "bad.toml"
    path.write_text('[[profile]]\nname = "x"\n\nmodel = "(gpt"\n')
    with pytest.raises(exceptions.OptionsError) as info:
        tctx.configure(module, toolvocab_profiles=str(path))
    assert str(info.value).startswith(f"toolvocab_profiles: {path}:4: profile.0.model: Value error, invalid regex"), (
        str(info.value)
    )
    assert module.addons[0].profiles is None  # the option change was rolled back


def test_non_utf8_profile_file_is_an_options_error(addon_env, tmp_path: Path) -> None:
    tctx, module = addon_env
    path = tmp_path / "latin1.toml"
    path.write_bytes(b'[[profile]]\nname = "caf\xe9"\n')
    with pytest.raises(exceptions.OptionsError, match=rf"^toolvocab_profiles: {re.escape(str(path))}:2: "):
        tctx.configure(module, toolvocab_profiles=str(path))


PI_TOOLS = ["read", "bash", "edit", "write", "grep", "find", "ls"]  # pi's tools (BR-28): no glob
GATE_PROFILE = """\
[[profile]]
name = "look-like-opencode"
host = "(^|\\\\.)opencode\\\\.ai$"
[profile.names]
glob = "glob"
"""


def test_was_bug_a_profile_cannot_complete_an_access_gates_tool_set(addon_env, tmp_path: Path) -> None:
    tctx, module = addon_env
    path = tmp_path / "gate.toml"
    path.write_text(GATE_PROFILE)
    try:
        tctx.configure(module, toolvocab_profiles=str(path))
    except exceptions.OptionsError:
        return  # refusing the profile is one acceptable fix
    body = {
        "model": "big-pickle",
        "input": "hi",
        "stream": True,
        "tools": [
            {"type": "function", "name": n, "parameters": {"type": "object", "properties": {}}} for n in PI_TOOLS
        ],
    }
    f = harness.make_flow(
        body,
        host="opencode.ai",
        path="/zen/v1/responses",
        headers=[("content-type", "application/json")],
        response=False,
    )
    harness.Env(tctx, module).hook(hl.HttpRequestHook(f))
    sent = [t["name"] for t in orjson.loads(f.request.content)["tools"]]
    assert not {"bash", "edit", "glob", "grep", "read"} <= set(sent), (
        f"the gate's tool set was completed by a rename: {sent}"
    )
