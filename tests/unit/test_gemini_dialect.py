"""The Gemini dialect (``toolvocab.dialects.gemini``): detection over every path form (Gemini API,
Vertex AI, Code Assist), declared tools (``parametersJsonSchema`` and OpenAPI ``parameters``),
system texts, the request-side plan, whole JSON answers, and :class:`GeminiStream` over SSE and
over a bare JSON array sent incrementally; then the addon's hooks driving Gemini flows through
the shared hook harness (``tests/harness/``).

Fixtures are synthetic bodies in ``tests/fixtures/gemini/`` (see its README). Tool names follow
Gemini CLI's declared tools; every description and text is invented.
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import jsonschema
import orjson
import pytest
from mitmproxy import http

import harness
import toolvocab.dialects.gemini as gemini_module
from harness import dialects
from harness.dialects import Fixtures
from harness.dialects import context
from harness.dialects import drive
from harness.fixtures import env  # noqa: F401  (pytest fixtures)
from harness.fixtures import loaded  # noqa: F401
from toolvocab.dialects import detect
from toolvocab.dialects.gemini import DIALECT
from toolvocab.dialects.gemini import GeminiStream
from toolvocab.dialects.gemini import openapi_to_jsonschema
from toolvocab.engine.arguments import validation_error
from toolvocab.engine.ladder import Toolset
from toolvocab.engine.ladder import resolve
from toolvocab.engine.models import Action
from toolvocab.engine.models import Step
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import Plan
from toolvocab.engine.plan import make_plan

FX = Fixtures("gemini")
KEY = harness.KEY
SEEDS = range(60)  # random chunk splits per stream fixture in the dialect tests


load_json, load_bytes = FX.json, FX.bytes
random_chunks = harness.random_chunks


class Recorder(dialects.Recorder):
    """A resolver bound to one fixture request's declared tools; remembers every decision."""

    def __init__(self, request: str = "request-gemini-cli.json") -> None:
        super().__init__(Toolset(DIALECT.declared_tools(load_json(request))))


def run_stream(chunks: list[bytes], resolver=None) -> tuple[bytes, GeminiStream, Recorder]:
    resolver = resolver or Recorder()
    rw = DIALECT.stream_rewriter(context(resolver))
    assert isinstance(rw, GeminiStream)
    return drive(rw, chunks), rw, resolver


# -- expected rewrites (written out by hand, independent of the code under test) ---------------

#: What each foreign name in the stream fixtures must become: (name, args after or None = same).
REWRITES: dict[str, tuple[str, dict | None]] = {
    "default_api:run_shell_command": ("run_shell_command", None),
    "Bash": ("run_shell_command", None),
    "shell": ("run_shell_command", {"command": "make test", "dir_path": "/repo"}),
}


def expect_rewritten(obj: Any) -> bool:
    """Apply :data:`REWRITES` to a parsed response (or Code Assist chunk) in place."""
    if not isinstance(obj, dict):
        return False
    inner = obj["response"] if "response" in obj and "candidates" not in obj else obj
    changed = False
    for cand in inner.get("candidates", []):
        for part in cand.get("content", {}).get("parts", []):
            call = part.get("functionCall")
            if call and call["name"] in REWRITES:
                name, args = REWRITES[call["name"]]
                call["name"] = name
                if args is not None:
                    call["args"] = args
                changed = True
    return changed


def array_pieces(data: bytes) -> list[tuple[str, bytes]]:
    """Cut a (possibly truncated) JSON-array body into ``("sep", raw)``, ``("el", raw)`` and a
    final ``("rest", raw)`` when the last element never closes. Test oracle, built on
    ``json.JSONDecoder.raw_decode``."""
    text = data.decode("utf-8")
    dec = json.JSONDecoder()
    start = text.index("[") + 1
    pieces: list[tuple[str, str]] = [("sep", text[:start])]
    pos = start
    while True:
        j = pos
        while j < len(text) and text[j] in " \t\r\n,":
            j += 1
        if j >= len(text) or text[j] == "]":
            pieces.append(("sep", text[pos:]))
            break
        try:
            _, end = dec.raw_decode(text, j)
        except json.JSONDecodeError:
            pieces.append(("sep", text[pos:j]))
            pieces.append(("rest", text[j:]))
            break
        pieces.append(("sep", text[pos:j]))
        pieces.append(("el", text[j:end]))
        pos = end
    return [(kind, s.encode("utf-8")) for kind, s in pieces if s]


def expected_piece(kind: str, raw: bytes) -> bytes:
    if kind != "el":
        return raw
    obj = orjson.loads(raw)
    return orjson.dumps(obj) if expect_rewritten(obj) else raw


def expected_array(data: bytes) -> bytes:
    return b"".join(expected_piece(kind, raw) for kind, raw in array_pieces(data))


def sse_blocks(data: bytes, eol: bytes) -> list[bytes]:
    """The ``data: …`` blocks of a single-line-data SSE fixture, terminator included."""
    sep = eol + eol
    parts = data.split(sep)
    assert parts[-1] == b""
    return [p + sep for p in parts[:-1]]


def expected_sse(data: bytes, eol: bytes) -> bytes:
    out = []
    for block in sse_blocks(data, eol):
        assert block.startswith(b"data: ")
        obj = orjson.loads(block[len(b"data: ") : -2 * len(eol)])
        out.append(b"data: " + orjson.dumps(obj) + eol + eol if expect_rewritten(obj) else block)
    return b"".join(out)


def calls_in(obj: Any) -> list[dict]:
    inner = obj["response"] if isinstance(obj, dict) and "response" in obj and "candidates" not in obj else obj
    return [
        part["functionCall"]
        for cand in inner.get("candidates", [])
        for part in cand.get("content", {}).get("parts", [])
        if "functionCall" in part
    ]


def test_oracle_sanity():
    """The hand-written oracle sees every element of the array fixture."""
    pieces = array_pieces(load_bytes("stream-foreign-tool-array.json"))
    assert [k for k, _ in pieces].count("el") == 6
    assert b"".join(raw for _, raw in pieces) == load_bytes("stream-foreign-tool-array.json")
    assert expected_array(load_bytes("stream-declared-tool-array.json")) == load_bytes(
        "stream-declared-tool-array.json"
    )


# -- matches ------------------------------------------------------------------------------------

BODY = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
CODE_ASSIST_BODY = {"model": "gemini-2.5-pro", "project": "p-1", "user_prompt_id": "u-1", "request": BODY}

GEMINI_PATHS = [
    "/v1beta/models/gemini-2.5-pro:generateContent",
    "/v1beta/models/gemini-2.5-pro:generateContent?key=fixture-key",
    "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
    "/v1beta/models/gemini-2.5-flash:streamGenerateContent",
    "/v1beta/models/gemini-2.5-flash:streamGenerateContent?key=fixture-key",
    "/v1/models/gemini-2.5-pro:generateContent",
    "/v1alpha/models/gemini-2.5-pro:streamGenerateContent?alt=sse&key=k",
    "/v1/projects/demo/locations/us-central1/publishers/google/models/gemini-2.5-pro:generateContent",
    "/v1/projects/demo/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
    "/v1beta1/projects/demo/locations/global/publishers/google/models/gemini-2.5-flash:streamGenerateContent",
    "/v1beta1/projects/demo/locations/europe-west4/publishers/google/models/gemini-2.5-flash@001:generateContent",
]
CODE_ASSIST_PATHS = [
    "/v1internal:generateContent",
    "/v1internal:streamGenerateContent?alt=sse",
    "/v1internal:streamGenerateContent",
]


@pytest.mark.parametrize("path", GEMINI_PATHS)
def test_matches_gemini_and_vertex_paths(path):
    assert DIALECT.matches("POST", path, BODY)
    assert detect("POST", path, BODY) is DIALECT


@pytest.mark.parametrize("path", CODE_ASSIST_PATHS)
def test_matches_code_assist_envelope(path):
    assert DIALECT.matches("POST", path, CODE_ASSIST_BODY)
    assert detect("POST", path, CODE_ASSIST_BODY) is DIALECT
    assert DIALECT.matches("POST", path, load_json("request-code-assist.json"))


@pytest.mark.parametrize(
    "method,path,body",
    [
        ("POST", "/v1beta/models/gemini-2.5-pro:countTokens", BODY),
        ("POST", "/v1internal:countTokens", CODE_ASSIST_BODY),
        ("POST", "/v1beta/models/gemini-2.5-pro:embedContent", BODY),
        ("POST", "/v1beta/models/gemini-2.5-pro:batchGenerateContent", {"requests": [BODY]}),
        ("POST", "/v1internal:loadCodeAssist", {"metadata": {}}),
        ("POST", "/v1beta/cachedContents", BODY),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContentX", BODY),
        ("POST", "/v1beta/models?next=x:generateContent", BODY),
        ("GET", "/v1beta/models/gemini-2.5-pro:generateContent", BODY),
        ("GET", "/v1beta/models", None),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", {"prompt": "hi"}),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", {"contents": "hi"}),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", {}),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", [BODY]),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", None),
        ("POST", "/v1internal:generateContent", {"model": "m", "request": {"session_id": "s"}}),
        ("POST", "/v1internal:generateContent", {"model": "m", "request": "contents"}),
    ],
)
def test_does_not_match(method, path, body):
    assert not DIALECT.matches(method, path, body)
    assert detect(method, path, body) is None


@pytest.mark.parametrize("path", GEMINI_PATHS + CODE_ASSIST_PATHS)
def test_wants_stream_follows_the_method_name(path):
    assert DIALECT.wants_stream(path, BODY) is (":streamGenerateContent" in path)


def test_stream_rewriter_is_a_fresh_gemini_stream():
    a = DIALECT.stream_rewriter(context(Recorder()))
    b = DIALECT.stream_rewriter(context(Recorder()))
    assert isinstance(a, GeminiStream) and isinstance(b, GeminiStream) and a is not b


# -- declared_tools -----------------------------------------------------------------------------


def test_declared_tools_with_parameters_json_schema():
    body = load_json("request-gemini-cli.json")
    tools = DIALECT.declared_tools(body)
    decls = body["tools"][0]["functionDeclarations"]
    assert [t.name for t in tools] == [d["name"] for d in decls]
    assert "run_shell_command" in [t.name for t in tools]
    for tool, decl in zip(tools, decls):
        assert tool.kind is ToolKind.FUNCTION and tool.namespace is None
        assert tool.input_schema == decl["parametersJsonSchema"]
        assert tool.description == decl["description"]
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
    assert Toolset(tools).find("run_shell_command").capability == "shell"


def test_declared_tools_inside_code_assist_envelope():
    body = load_json("request-code-assist.json")
    assert [t.name for t in DIALECT.declared_tools(body)] == [
        d["name"] for d in body["request"]["tools"][0]["functionDeclarations"]
    ]


def test_built_in_tools_are_ignored():
    tools = DIALECT.declared_tools(load_json("request-openapi-tools.json"))
    assert [t.name for t in tools] == ["run_shell_command", "search_notes", "ping"]
    body = {
        "contents": [],
        "tools": [{"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}, {"googleSearchRetrieval": {}}],
    }
    assert DIALECT.declared_tools(body) == []


SHELL_SCHEMA = {
    "type": "object",
    "properties": {
        "command": {"type": "string", "description": "the command line"},
        "dir_path": {"type": ["string", "null"]},
        "timeout_ms": {"type": ["integer", "null"]},
        "env": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"name": {"type": "string"}, "value": {"type": ["string", "null"]}},
                "required": ["name"],
            },
        },
    },
    "required": ["command"],
}


def test_openapi_parameters_become_json_schema():
    tools = {t.name: t for t in DIALECT.declared_tools(load_json("request-openapi-tools.json"))}
    assert tools["run_shell_command"].input_schema == SHELL_SCHEMA
    assert tools["run_shell_command"].description == "Execute a command."
    notes = tools["search_notes"].input_schema
    assert notes["type"] == "object" and notes["required"] == ["query"]
    assert notes["properties"]["mode"] == {"type": "string", "format": "enum", "enum": ["fast", "deep"]}
    assert notes["properties"]["filters"]["type"] == ["object", "null"]
    assert notes["properties"]["filters"]["properties"]["scores"] == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "number"}},
    }
    assert notes["properties"]["extra"] == {}  # TYPE_UNSPECIFIED: any value
    assert tools["ping"].input_schema is None
    for tool in tools.values():
        if tool.input_schema is not None:
            jsonschema.Draft202012Validator.check_schema(tool.input_schema)


@pytest.mark.parametrize(
    "tool,args,valid",
    [
        ("run_shell_command", {"command": "ls"}, True),
        ("run_shell_command", {"command": "ls", "dir_path": None, "timeout_ms": None}, True),
        (
            "run_shell_command",
            {"command": "ls", "timeout_ms": 500, "env": [{"name": "A", "value": None}, {"name": "B"}]},
            True,
        ),
        ("run_shell_command", {"command": None}, False),
        ("run_shell_command", {"dir_path": "/tmp"}, False),
        ("run_shell_command", {"command": "ls", "timeout_ms": "500"}, False),
        ("run_shell_command", {"command": "ls", "timeout_ms": 1.5}, False),
        ("run_shell_command", {"command": "ls", "env": [{"value": "x"}]}, False),
        ("run_shell_command", {"command": "ls", "env": {"name": "A"}}, False),
        ("search_notes", {"query": "deploy"}, True),
        ("search_notes", {"query": "deploy", "mode": "deep", "filters": None, "extra": [1, {"a": 2}]}, True),
        ("search_notes", {"query": "q", "filters": {"tags": ["a"], "scores": [[1.5, 2]], "archived": False}}, True),
        ("search_notes", {"query": 1}, False),
        ("search_notes", {"mode": "fast"}, False),
        ("search_notes", {"query": "q", "mode": "slow"}, False),
        ("search_notes", {"query": "q", "filters": {"tags": "a"}}, False),
        ("search_notes", {"query": "q", "filters": {"scores": [["high"]]}}, False),
        ("search_notes", {"query": "q", "filters": {"archived": "no"}}, False),
    ],
)
def test_converted_schema_validates_the_right_calls(tool, args, valid):
    tools = {t.name: t for t in DIALECT.declared_tools(load_json("request-openapi-tools.json"))}
    assert (validation_error(args, tools[tool].input_schema) is None) is valid


def test_openapi_tools_feed_the_ladder():
    tools = Toolset(DIALECT.declared_tools(load_json("request-openapi-tools.json")))
    # Codex's shell: an argv and a kill timeout in ms, as the declared run_shell_command's
    # (Claude Code's Bash moves a command to the background at its timeout: never this target)
    d = resolve(ToolCall(name="shell", arguments={"command": ["bash", "-lc", "ls -la"], "timeout_ms": None}), tools)
    assert (d.action, d.target) == (Action.RENAME, "run_shell_command")
    assert d.arguments_after == {"command": "ls -la", "timeout_ms": None}
    d = resolve(ToolCall(name="default_api:search_notes", arguments={"query": "x", "filters": None}), tools)
    assert (d.action, d.step, d.target) == (Action.RENAME, Step.NORMALIZED, "search_notes")


def test_openapi_to_jsonschema_is_pure_and_keeps_property_names():
    schema = {
        "type": "object",  # lower case is accepted too
        "properties": {
            "type": {"type": "STRING", "nullable": False},
            "nullable": {"type": "BOOLEAN", "nullable": True},
            "items": {"type": "ARRAY", "items": {"type": "INTEGER"}, "minItems": 1},
            "choice": {"anyOf": [{"type": "STRING"}, {"type": "NUMBER"}]},
            "nothing": {"type": "NULL"},
        },
        "required": ["type"],
    }
    before = copy.deepcopy(schema)
    out = openapi_to_jsonschema(schema)
    assert schema == before
    assert out == {
        "type": "object",
        "properties": {
            "type": {"type": "string"},
            "nullable": {"type": ["boolean", "null"]},
            "items": {"type": "array", "items": {"type": "integer"}, "minItems": 1},
            "choice": {"anyOf": [{"type": "string"}, {"type": "number"}]},
            "nothing": {"type": "null"},
        },
        "required": ["type"],
    }
    jsonschema.Draft202012Validator.check_schema(out)
    for value in (None, 3, "STRING", [1]):
        assert openapi_to_jsonschema(value) == value


def test_snake_case_declarations_are_read():
    body = {
        "contents": [],
        "tools": [{"function_declarations": [{"name": "read_file", "parameters": {"type": "OBJECT"}}]}],
    }
    [tool] = DIALECT.declared_tools(body)
    assert tool.name == "read_file" and tool.input_schema == {"type": "object"}


@pytest.mark.parametrize(
    "tools,expected",
    [
        ([], []),
        ([None, "x", 3], []),
        ([{"functionDeclarations": []}], []),
        ([{"functionDeclarations": [None, "x", {"description": "no name"}, {"name": 3}]}], []),
        (
            [{"functionDeclarations": [{"name": "odd", "parameters": "not a schema", "description": 7}]}],
            [("odd", None, None)],
        ),
        (
            [
                {
                    "functionDeclarations": [
                        {"name": "both", "parametersJsonSchema": {"type": "object"}, "parameters": {"type": "STRING"}}
                    ]
                }
            ],
            [("both", {"type": "object"}, None)],
        ),
    ],
)
def test_declarations_of_odd_shape_are_skipped(tools, expected):
    got = DIALECT.declared_tools({"contents": [], "tools": tools})
    assert [(t.name, t.input_schema, t.description) for t in got] == expected


def test_int64_schema_fields_sent_as_strings_give_a_valid_schema():
    params = {
        "type": "OBJECT",
        "properties": {
            "command": {"type": "STRING", "minLength": "1", "maxLength": "4096"},
            "args": {"type": "ARRAY", "items": {"type": "STRING"}, "minItems": "0", "maxItems": "16"},
            "env": {"type": "OBJECT", "maxProperties": "8"},
        },
        "required": ["command"],
    }
    schema = openapi_to_jsonschema(params)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert validation_error({"command": "ls"}, schema) is None
    assert validation_error({"command": ""}, schema) is not None


def test_rename_to_tool_with_string_int64_schema_fields():
    body = {
        "contents": [],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "run_shell_command",
                        "parameters": {
                            "type": "OBJECT",
                            "properties": {"command": {"type": "STRING", "maxLength": "4096"}},
                            "required": ["command"],
                        },
                    }
                ]
            }
        ],
    }
    d = resolve(ToolCall(name="Bash", arguments={"command": "ls"}), Toolset(DIALECT.declared_tools(body)))
    assert (d.action, d.target) == (Action.RENAME, "run_shell_command"), d.reason


# -- system_texts -------------------------------------------------------------------------------


def test_system_texts_plain_and_code_assist():
    plain = load_json("request-gemini-cli.json")
    wrapped = load_json("request-code-assist.json")
    assert DIALECT.system_texts(plain) == [plain["systemInstruction"]["parts"][0]["text"]]
    assert DIALECT.system_texts(wrapped) == [wrapped["request"]["systemInstruction"]["parts"][0]["text"]]


@pytest.mark.parametrize(
    "system,texts",
    [
        (None, []),
        ("be brief", ["be brief"]),
        (
            {
                "parts": [
                    {"text": "one"},
                    {"inlineData": {"mimeType": "text/plain", "data": "eA=="}},
                    {"text": "two"},
                    "x",
                    {"text": 3},
                ]
            },
            ["one", "two"],
        ),
        ({"role": "user"}, []),
        ({"parts": []}, []),
        (7, []),
    ],
)
def test_system_texts_shapes(system, texts):
    body: dict = {"contents": []}
    if system is not None:
        body["systemInstruction"] = system
    assert DIALECT.system_texts(body) == texts


def test_system_texts_router_classifier_and_headless():
    assert DIALECT.system_texts(load_json("request-router-classifier.json")) == ["Classify the task. Answer in JSON."]
    assert DIALECT.declared_tools(load_json("request-router-classifier.json")) == []


# -- apply_request ------------------------------------------------------------------------------

RENAME = {"run_shell_command": "shell_exec", "read_file": "fs_read"}


def _all_names(req: dict) -> dict[str, list[str]]:
    calls, results = [], []
    for content in req.get("contents", []):
        for part in content.get("parts", []):
            if "functionCall" in part:
                calls.append(part["functionCall"]["name"])
            if "functionResponse" in part:
                results.append(part["functionResponse"]["name"])
    decls = [d["name"] for t in req.get("tools", []) for d in t.get("functionDeclarations", [])]
    allowed = req.get("toolConfig", {}).get("functionCallingConfig", {}).get("allowedFunctionNames", [])
    return {"decls": decls, "calls": calls, "results": results, "allowed": allowed}


def _renamed(names: list[str], rename: dict[str, str]) -> list[str]:
    return [rename.get(n, n) for n in names]


@pytest.mark.parametrize(
    "fixture", ["request-gemini-cli.json", "request-openapi-tools.json", "request-code-assist.json"]
)
def test_rename_map_renames_every_name_slot_consistently(fixture):
    original = load_json(fixture)
    body = copy.deepcopy(original)
    assert DIALECT.apply_request(body, Plan(rename_map=RENAME)) is True
    inner_before = original.get("request", original)
    inner_after = body.get("request", body)
    before, after = _all_names(inner_before), _all_names(inner_after)
    for slot in before:
        assert after[slot] == _renamed(before[slot], RENAME), slot
    # the transcript stays consistent: every call and result names a declared tool
    assert set(after["calls"]) | set(after["results"]) | set(after["allowed"]) <= set(after["decls"])
    # nothing else moved: undo the renames and the body is the original
    undo = {v: k for k, v in RENAME.items()}
    restored = copy.deepcopy(body)
    restored_inner = restored.get("request", restored)
    for tool in restored_inner["tools"]:
        for decl in tool.get("functionDeclarations", []):
            decl["name"] = undo.get(decl["name"], decl["name"])
    for content in restored_inner["contents"]:
        for part in content["parts"]:
            for key in ("functionCall", "functionResponse"):
                if key in part:
                    part[key]["name"] = undo.get(part[key]["name"], part[key]["name"])
    fcc = restored_inner.get("toolConfig", {}).get("functionCallingConfig", {})
    if "allowedFunctionNames" in fcc:
        fcc["allowedFunctionNames"] = [undo.get(n, n) for n in fcc["allowedFunctionNames"]]
    assert restored == original


def test_rename_keeps_ids_signatures_and_built_ins():
    body = load_json("request-gemini-cli.json")
    DIALECT.apply_request(body, Plan(rename_map=RENAME))
    model_turn = body["contents"][1]["parts"][0]
    assert model_turn["functionCall"]["name"] == "shell_exec"
    assert model_turn["thoughtSignature"] == "c2lnLWZpeHR1cmUtMDE="
    assert body["contents"][3]["parts"][0]["functionCall"] == {
        "id": "fc-fixture-0002",
        "name": "fs_read",
        "args": {"file_path": "src/[main].c", "start_line": 10},
    }
    assert body["contents"][4]["parts"][0]["functionResponse"]["id"] == "fc-fixture-0002"
    assert body["contents"][5]["parts"][0]["functionCall"]["name"] == "google_web_search"
    openapi = load_json("request-openapi-tools.json")
    DIALECT.apply_request(openapi, Plan(rename_map={"googleSearch": "x", "run_shell_command": "shell_exec"}))
    assert openapi["tools"][1:] == [{"googleSearch": {}}, {"codeExecution": {}}, {"urlContext": {}}]
    assert openapi["toolConfig"]["functionCallingConfig"] == {
        "mode": "ANY",
        "allowedFunctionNames": ["shell_exec", "search_notes"],
    }


@pytest.mark.parametrize(
    "fixture",
    [
        "request-gemini-cli.json",
        "request-openapi-tools.json",
        "request-code-assist.json",
        "request-router-classifier.json",
    ],
)
def test_empty_plan_or_unknown_names_change_nothing(fixture):
    body = load_json(fixture)
    assert DIALECT.apply_request(body, Plan()) is False
    assert DIALECT.apply_request(body, Plan(rename_map={"not_declared": "x"})) is False
    assert body == load_json(fixture)


SENTENCE = "Call tools only by the exact names declared in this request, which include glob and write_file."


def test_sentence_appended_to_existing_system_instruction():
    body = load_json("request-gemini-cli.json")
    assert DIALECT.apply_request(body, Plan(prompt_sentence=SENTENCE)) is True
    original = load_json("request-gemini-cli.json")
    assert body["systemInstruction"] == {
        "role": "user",
        "parts": original["systemInstruction"]["parts"] + [{"text": SENTENCE}],
    }
    assert {k: v for k, v in body.items() if k != "systemInstruction"} == {
        k: v for k, v in original.items() if k != "systemInstruction"
    }
    assert DIALECT.system_texts(body)[-1] == SENTENCE


def test_sentence_creates_system_instruction_when_absent():
    body = load_json("request-openapi-tools.json")
    assert "systemInstruction" not in body
    assert DIALECT.apply_request(body, Plan(prompt_sentence=SENTENCE)) is True
    assert body["systemInstruction"] == {"parts": [{"text": SENTENCE}]}
    assert DIALECT.system_texts(body) == [SENTENCE]


def test_sentence_goes_inside_the_code_assist_request():
    body = load_json("request-code-assist.json")
    assert DIALECT.apply_request(body, Plan(prompt_sentence=SENTENCE, rename_map=RENAME)) is True
    assert "systemInstruction" not in body
    assert body["request"]["systemInstruction"]["parts"][-1] == {"text": SENTENCE}
    assert len(body["request"]["systemInstruction"]["parts"]) == 2
    assert {k: body[k] for k in ("model", "project", "user_prompt_id")} == {
        k: load_json("request-code-assist.json")[k] for k in ("model", "project", "user_prompt_id")
    }
    assert _all_names(body["request"])["calls"] == ["shell_exec"]


def test_sentence_appended_to_string_system_instruction():
    body = {"contents": [], "systemInstruction": "be brief"}
    assert DIALECT.apply_request(body, Plan(prompt_sentence=SENTENCE)) is True
    assert body["systemInstruction"] == "be brief\n\n" + SENTENCE


def test_make_plan_names_the_unmentioned_tools():
    body = load_json("request-gemini-cli.json")
    tools = Toolset(DIALECT.declared_tools(body))
    plan = make_plan(tools, DIALECT.system_texts(body), add_sentence=True)
    # the fixture's system text mentions read_file and run_shell_command only
    assert "read_file" not in plan.unmentioned and "run_shell_command" not in plan.unmentioned
    assert plan.unmentioned == [n for n in tools.names() if n not in ("read_file", "run_shell_command")]
    DIALECT.apply_request(body, plan)
    assert body["systemInstruction"]["parts"][-1]["text"] == plan.prompt_sentence


def test_sentence_goes_into_snake_case_system_instruction():
    body = {
        "contents": [],
        "system_instruction": {"parts": [{"text": "sys"}]},
        "tools": [{"function_declarations": [{"name": "glob"}]}],
    }
    DIALECT.apply_request(body, Plan(prompt_sentence=SENTENCE))
    assert "systemInstruction" not in body
    assert body["system_instruction"]["parts"] == [{"text": "sys"}, {"text": SENTENCE}]


def test_rename_reaches_snake_case_declarations():
    body = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"name": "read_file", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "read_file", "response": {}}}]},
        ],
        "tools": [{"function_declarations": [{"name": "read_file"}]}],
    }
    DIALECT.apply_request(body, Plan(rename_map={"read_file": "fs_read"}))
    assert body["tools"][0]["function_declarations"][0]["name"] == "fs_read"
    assert body["contents"][0]["parts"][0]["functionCall"]["name"] == "fs_read"


@pytest.mark.parametrize(
    "body",
    [
        {
            "contents": [
                None,
                3,
                {"parts": None},
                {"parts": [None, "x", {"functionCall": "x"}, {"functionResponse": None}]},
            ]
        },
        {
            "contents": [],
            "tools": [None, {"functionDeclarations": None}, {"functionDeclarations": [None, {"name": 3}]}],
        },
        {"contents": [], "toolConfig": {"functionCallingConfig": {"allowedFunctionNames": [3, None]}}},
        {"contents": [], "toolConfig": {"functionCallingConfig": None}},
        {"contents": [], "toolConfig": "x"},
        {"contents": [], "systemInstruction": {"role": "user"}},
        {"contents": [], "systemInstruction": 5},
    ],
)
def test_apply_request_tolerates_odd_shapes(body):
    before = copy.deepcopy(body)
    DIALECT.apply_request(body, Plan(rename_map={"x": "y"}, prompt_sentence=SENTENCE))
    # only the sentence may have been added; nothing odd was touched
    body.pop("systemInstruction", None)
    before.pop("systemInstruction", None)
    assert body == before


# -- rewrite_response (whole JSON) --------------------------------------------------------------


def test_foreign_calls_in_json_answer_are_repaired():
    body = load_json("response-foreign-tool.json")
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is True
    original = load_json("response-foreign-tool.json")
    parts = body["candidates"][0]["content"]["parts"]
    assert parts[0] == original["candidates"][0]["content"]["parts"][0]
    assert parts[1] == {
        "functionCall": {"name": "run_shell_command", "args": {"command": "git status --short"}},
        "thoughtSignature": "c2lnLWZpeHR1cmUtMDI=",
    }
    assert parts[2] == {
        "functionCall": {"id": "fc-fixture-0003", "name": "read_file", "args": {"file_path": "/work/src/[main].c"}}
    }
    body["candidates"][0]["content"]["parts"] = original["candidates"][0]["content"]["parts"]
    assert body == original
    assert [(c.name, c.id) for c in rec.calls] == [("Bash", None), ("Read", "fc-fixture-0003")]
    assert [d.action for d in rec.decisions] == [Action.RENAME, Action.RENAME]


def test_declared_calls_in_json_answer_are_kept():
    body = load_json("response-declared-tool.json")
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body == load_json("response-declared-tool.json")
    assert [d.action for d in rec.decisions] == [Action.KEEP, Action.KEEP]


def test_json_array_answer_is_rewritten_element_by_element():
    body = orjson.loads(load_bytes("stream-foreign-tool-array.json"))
    expected = copy.deepcopy(body)
    assert [expect_rewritten(e) for e in expected] == [False, True, False, True, True, False]
    assert DIALECT.rewrite_response(body, context(Recorder())) is True
    assert body == expected


def test_code_assist_json_answer_is_unwrapped():
    inner = load_json("response-foreign-tool.json")
    body = {"response": inner, "traceId": "trace-fixture-02"}
    assert DIALECT.rewrite_response(body, context(Recorder())) is True
    assert body["traceId"] == "trace-fixture-02"
    assert [c["name"] for c in calls_in(body)] == ["run_shell_command", "read_file"]


@pytest.mark.parametrize("outer", [[], None])
def test_code_assist_answer_with_empty_outer_candidates_is_unwrapped(outer):
    """Gemini CLI reads only a Code Assist answer's ``response`` (``code_assist/converter.ts``,
    ``fromGenerateContentResponse``): an empty ``candidates`` beside it changes nothing. Was: such
    an envelope was not unwrapped, and its calls reached the client as the upstream sent them."""
    body = {"candidates": outer, "response": load_json("response-foreign-tool.json"), "traceId": "t"}
    assert DIALECT.rewrite_response(body, context(Recorder())) is True
    assert body["candidates"] == outer
    assert [c["name"] for c in calls_in(body["response"])] == ["run_shell_command", "read_file"]


def test_code_assist_answer_with_outer_candidates_of_its_own_is_left():
    """Two answers in one body (the envelope's own candidates and its ``response``'s): neither read."""
    inner = load_json("response-foreign-tool.json")
    body = {"candidates": copy.deepcopy(inner["candidates"]), "response": inner}
    before = copy.deepcopy(body)
    rec = Recorder()
    DIALECT.rewrite_response(body, context(rec))
    assert body["response"] == before["response"]


def test_prefixed_name_is_renamed_and_args_fitted():
    body = {
        "candidates": [
            {
                "content": {
                    "role": "model",
                    "parts": [
                        {
                            "functionCall": {
                                "name": "default_api:read_file",
                                "args": {"file_path": "a.py", "start_line": "3"},
                            }
                        },
                    ],
                }
            }
        ]
    }
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is True
    assert calls_in(body) == [{"name": "read_file", "args": {"file_path": "a.py", "start_line": 3}}]
    assert rec.decisions[0].step is Step.NORMALIZED


def test_br30_withheld_shell_is_left_in_json_answer():
    body = load_json("response-br30-shell.json")
    rec = Recorder("request-headless-no-shell.json")
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body == load_json("response-br30-shell.json")
    [d] = rec.decisions
    assert d.action is Action.LEAVE and d.target is None


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"candidates": []},
        {"candidates": None},
        {"candidates": [None, "x", {}, {"content": None}, {"content": {"parts": None}}]},
        {"candidates": [{"content": {"parts": [None, "x", {"functionCall": None}, {"functionCall": {"args": {}}}]}}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": 3, "args": {}}}]}}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "Bash", "args": "ls -la"}}]}}]},
        {"candidates": [{"content": {"parts": [{"functionCall": {"name": "Bash"}}]}}]},
        {"promptFeedback": {"blockReason": "SAFETY"}},
        {"error": {"code": 500, "message": "x", "status": "INTERNAL"}},
        {"response": None},
        [],
        [None, 3, {"candidates": None}],
        "text",
        None,
    ],
)
def test_rewrite_response_odd_shapes_change_nothing(body):
    before = copy.deepcopy(body)
    assert DIALECT.rewrite_response(body, context(Recorder())) is False
    assert body == before


@pytest.mark.parametrize(
    "body",
    [
        {"candidates": 5},
        {"candidates": [{"content": {"parts": 5}}]},
        {"response": {"candidates": True}},
    ],
)
def test_rewrite_response_non_iterable_fields_do_not_raise(body):
    before = copy.deepcopy(body)
    assert DIALECT.rewrite_response(body, context(Recorder())) is False
    assert body == before


# -- GeminiStream: SSE ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fixture,eol,req",
    [
        ("stream-foreign-tool.sse", b"\n", "request-gemini-cli.json"),
        ("stream-foreign-tool-crlf.sse", b"\r\n", "request-gemini-cli.json"),
        ("stream-code-assist.sse", b"\r\n", "request-code-assist.json"),
        ("stream-declared-tool.sse", b"\r\n", "request-gemini-cli.json"),
    ],
)
def test_sse_stream_random_splits(fixture, eol, req):
    data = load_bytes(fixture)
    expected = expected_sse(data, eol)
    for seed in SEEDS:
        out, rw, rec = run_stream(random_chunks(data, random.Random(seed)), Recorder(req))
        assert out == expected, f"seed {seed}"
        assert rw.error is None
    whole, _, rec = run_stream([data], Recorder(req))
    assert whole == expected
    if fixture == "stream-declared-tool.sse":
        assert whole == data
        assert all(d.action is Action.KEEP for d in rec.decisions)


def test_sse_foreign_calls_get_fitted_arguments():
    out, _, rec = run_stream([load_bytes("stream-foreign-tool-crlf.sse")])
    events = [orjson.loads(b[len(b"data: ") :]) for b in out.split(b"\r\n\r\n") if b]
    calls = [c for e in events for c in calls_in(e)]
    assert calls == [
        {"name": "run_shell_command", "args": {"command": 'ls -la "src/[x]"'}},
        {"name": "read_file", "args": {"file_path": "C:\\temp\\", "start_line": 3}},
        {"name": "run_shell_command", "args": {"command": 'grep -n "\\\\]" notes.txt'}},
        {"id": "fc-fixture-0004", "name": "run_shell_command", "args": {"command": "make test", "dir_path": "/repo"}},
    ]
    assert [(d.name, d.action, d.step) for d in rec.decisions] == [
        ("default_api:run_shell_command", Action.RENAME, Step.NORMALIZED),
        ("read_file", Action.KEEP, Step.DECLARED),
        ("Bash", Action.RENAME, Step.CAPABILITY),
        ("shell", Action.RENAME, Step.CAPABILITY),
    ]
    assert rec.decisions[1].call_id is None and rec.decisions[3].call_id == "fc-fixture-0004"
    # the thought signature stays on the rewritten part
    assert events[1]["candidates"][0]["content"]["parts"][0]["thoughtSignature"] == "c2lnLWZpeHR1cmUtMDM="
    assert b"\n" not in out.replace(b"\r\n", b"")


def test_sse_events_go_out_as_each_completes():
    data = load_bytes("stream-foreign-tool.sse")
    rw = DIALECT.stream_rewriter(context(Recorder()))
    expected = sse_blocks(expected_sse(data, b"\n"), b"\n")
    for block, want in zip(sse_blocks(data, b"\n"), expected):
        head, last = block[:-1], block[-1:]
        assert rw.feed(head) == []  # not complete until its blank line
        assert b"".join(rw.feed(last)) == want
    assert rw.finish() == []


@pytest.mark.parametrize(
    "data",
    [
        b"data: {not json}\n\n",
        b": keep-alive\r\n\r\ndata: [1, 2]\r\n\r\n",
        b'data: {"candidates": "x"}\n\n{"error": {"code": 500, "message": "raw line outside data"}}\n',
        b'event: odd\ndata: 42\n\ndata: {"candidates":[{"content":{"parts":[{"functionCall":{"name":"Bash"',
        b"\xff\xfe garbage \x00\n\n",
    ],
)
def test_sse_garbage_passes_unchanged(data):
    for seed in range(20):
        out, _, _ = run_stream(random_chunks(data, random.Random(seed), 1, 8))
        assert out == data, f"seed {seed}"


# -- GeminiStream: bare JSON array --------------------------------------------------------------


@pytest.mark.parametrize(
    "fixture,req",
    [
        ("stream-foreign-tool-array.json", "request-gemini-cli.json"),
        ("stream-declared-tool-array.json", "request-gemini-cli.json"),
        ("stream-code-assist-array.json", "request-code-assist.json"),
        ("stream-error-array.json", "request-gemini-cli.json"),
    ],
)
def test_array_stream_random_splits(fixture, req):
    data = load_bytes(fixture)
    expected = expected_array(data)
    for seed in SEEDS:
        out, rw, _ = run_stream(random_chunks(data, random.Random(seed)), Recorder(req))
        assert out == expected, f"seed {seed}"
        assert rw.error is None
    assert run_stream([data], Recorder(req))[0] == expected
    if fixture in ("stream-declared-tool-array.json", "stream-error-array.json"):
        assert expected == data


def test_array_foreign_calls_rewritten_with_fitted_args_and_everything_else_identical():
    data = load_bytes("stream-foreign-tool-array.json")
    out, _, rec = run_stream(random_chunks(data, random.Random(7)))
    elements = orjson.loads(out)
    calls = [c for e in elements for c in calls_in(e)]
    assert calls == [
        {"name": "run_shell_command", "args": {"command": 'ls -la "src/[x]"'}},
        {"name": "read_file", "args": {"file_path": "C:\\temp\\", "start_line": 3}},
        {"name": "run_shell_command", "args": {"command": 'grep -n "\\\\]" notes.txt'}},
        {"id": "fc-fixture-0004", "name": "run_shell_command", "args": {"command": "make test", "dir_path": "/repo"}},
    ]
    # the unchanged elements (text with brackets/quotes/backslashes, nested arrays) are byte-identical
    pieces = array_pieces(data)
    untouched = [raw for kind, raw in pieces if kind != "el" or not expect_rewritten(orjson.loads(raw))]
    for raw in untouched:
        assert raw in out
    assert [d.action for d in rec.decisions] == [Action.RENAME, Action.KEEP, Action.RENAME, Action.RENAME]


def _checkpoints(data: bytes) -> list[bytes]:
    """For each upstream prefix length n (1..len), what must have been emitted after n bytes:
    every byte outside elements at once, each element as soon as its last byte arrives."""
    marks: list[bytes] = []
    done = b""
    for kind, raw in array_pieces(data):
        if kind == "sep":
            for k in range(1, len(raw) + 1):
                marks.append(done + raw[:k])
            done += raw
        elif kind == "el":
            marks.extend([done] * (len(raw) - 1))
            done += expected_piece(kind, raw)
            marks.append(done)
        else:  # an element that never closes: held until the end
            marks.extend([done] * len(raw))
    return marks


@pytest.mark.parametrize(
    "fixture", ["stream-foreign-tool-array.json", "stream-code-assist-array.json", "stream-truncated-array.json"]
)
def test_array_elements_go_out_as_soon_as_each_closes(fixture):
    data = load_bytes(fixture)
    request = "request-code-assist.json" if "code-assist" in fixture else "request-gemini-cli.json"
    rw = DIALECT.stream_rewriter(context(Recorder(request)))
    marks = _checkpoints(data)
    emitted = b""
    for n in range(len(data)):
        emitted += b"".join(rw.feed(data[n : n + 1]))
        assert emitted == marks[n], f"after {n + 1} bytes"
    emitted += b"".join(rw.finish())
    assert emitted == expected_array(data)


def test_array_is_not_buffered_whole_when_fed_element_by_element():
    data = load_bytes("stream-foreign-tool-array.json")
    pieces = array_pieces(data)
    rw = DIALECT.stream_rewriter(context(Recorder()))
    sent = b""
    for kind, raw in pieces:
        got = b"".join(rw.feed(raw))
        assert got == expected_piece(kind, raw)  # each element out in the same call it closed
        sent += got
    assert rw.finish() == []
    assert sent == expected_array(data)


def test_truncated_array_passes_the_open_element_unchanged():
    data = load_bytes("stream-truncated-array.json")
    pieces = array_pieces(data)
    assert pieces[-1][0] == "rest" and b'"Ba' in pieces[-1][1]
    expected = expected_array(data)
    assert expected.endswith(pieces[-1][1])
    for seed in SEEDS:
        out, _, _ = run_stream(random_chunks(data, random.Random(seed)))
        assert out == expected, f"seed {seed}"


@pytest.mark.parametrize(
    "data",
    [
        b"[",
        b"[\n",
        b"[]",
        b"[ ]\n",
        b'[{"candidates": [}]',
        b"[not json at all",
        b"[{]}",
        b'[1, "a", null, true, {"x": ]',
        b"[[[[",
        b'[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"Bash","args":{"command":"ls"}}}]}}]',
        b'[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"Bash","args":{"command":"ls"}}}]}}], }',
        b'[{"functionCall": {"name": "Bash"}, }]',
        b'[{"candidates": "\xff\xfe"}]',
        b'[{"text": "unterminated \\"string ]}',
        b'[1, 2, "{\\"candidates\\": []}", [3, [4]]]',
        b'[[{"candidates":[{"content":{"parts":[{"functionCall":{"name":"Bash","args":{"command":"ls"}}}]}}]}]]',
    ],
)
def test_array_garbage_passes_unchanged(data):
    for seed in range(20):
        out, _, _ = run_stream(random_chunks(data, random.Random(seed), 1, 6))
        assert out == data, f"seed {seed}"


FOREIGN_ELEMENT = b'{"candidates":[{"content":{"parts":[{"functionCall":{"name":"Bash","args":{"command":"echo \\"[}]\\" \\\\}"}}}]}}]}'


@pytest.mark.parametrize(
    "before,after",
    [
        (b"[", b"]"),
        (b"[\n\n,\r\n , ,\t", b" ,, \n]\r\n"),
        (b'["{", "\\"[", 1, null, [2, ["]"]], ', b", {}]"),
        (b'[{"candidates":[]}, "text with } and ] and \\\\", ', b"\n,\n" + FOREIGN_ELEMENT + b"]"),
    ],
)
def test_array_foreign_element_between_odd_separators_and_scalars(before, after):
    data = before + FOREIGN_ELEMENT + after
    rewritten = orjson.loads(FOREIGN_ELEMENT)
    assert expect_rewritten(rewritten)
    assert calls_in(rewritten) == [{"name": "run_shell_command", "args": {"command": 'echo "[}]" \\}'}}]
    expected = before + orjson.dumps(rewritten) + after.replace(FOREIGN_ELEMENT, orjson.dumps(rewritten))
    for seed in range(30):
        out, rw, _ = run_stream(random_chunks(data, random.Random(seed), 1, 8))
        assert out == expected, f"seed {seed}"
        assert rw.error is None


def test_leading_blank_bytes_before_the_array_are_kept():
    data = b"\r\n  \n" + load_bytes("stream-code-assist-array.json")
    rec = Recorder("request-code-assist.json")
    out, _, _ = run_stream([data[:1], data[1:3], data[3:5], data[5:]], rec)
    assert out == b"\r\n  \n" + expected_array(load_bytes("stream-code-assist-array.json"))
    for seed in range(20):
        got, _, _ = run_stream(random_chunks(data, random.Random(seed), 1, 16), Recorder("request-code-assist.json"))
        assert got == out, f"seed {seed}"
    assert run_stream([data], Recorder("request-code-assist.json"))[0] == out  # blank bytes and "[" in one chunk
    only_blank, _, _ = run_stream([b"\r\n", b"  "])
    assert only_blank == b"\r\n  "


def test_array_of_code_assist_chunks_unwraps_each():
    out, _, rec = run_stream([load_bytes("stream-code-assist-array.json")], Recorder("request-code-assist.json"))
    chunks = orjson.loads(out)
    assert [c["traceId"] for c in chunks] == ["trace-fixture-01"] * 3
    assert calls_in(chunks[1]) == [{"name": "run_shell_command", "args": {"command": "git diff --stat"}}]
    assert [d.action for d in rec.decisions] == [Action.RENAME]


@pytest.mark.parametrize("split", ["whole", "bytewise"])
def test_array_element_that_breaks_the_rewrite_is_passed_unchanged(split):
    good = b'{"candidates":[{"content":{"parts":[{"text":"ok"}]}}]}'
    bad = b'{"candidates":5}'
    data = b"[" + good + b",\r\n" + bad + b",\r\n" + good + b"]"
    chunks = [data] if split == "whole" else [data[i : i + 1] for i in range(len(data))]
    out, _, _ = run_stream(chunks)
    assert out == data


def test_sse_event_of_odd_shape_passes_unchanged_and_the_rest_is_still_repaired():
    bad = b'data: {"candidates":5}\r\n\r\n'
    data = bad + load_bytes("stream-foreign-tool-crlf.sse")
    expected = bad + run_stream([load_bytes("stream-foreign-tool-crlf.sse")])[0]
    for seed in range(10):
        out, rw, _ = run_stream(random_chunks(data, random.Random(seed)))
        assert out.startswith(bad) and out == expected, f"seed {seed}"
        assert rw.error is None


def test_sse_event_that_breaks_the_rewrite_is_passed_unchanged(monkeypatch):
    data = load_bytes("stream-foreign-tool-crlf.sse")

    def boom(*args, **kwargs):
        raise TypeError("injected")

    monkeypatch.setattr(gemini_module, "_rewrite_candidates", boom)
    for seed in range(10):
        out, rw, _ = run_stream(random_chunks(data, random.Random(seed)))
        assert out == data, f"seed {seed}"  # contained: the rest passes through untouched
        assert rw.error and "TypeError" in rw.error


def test_salvage_returns_every_held_byte():
    data = load_bytes("stream-foreign-tool-array.json")
    rw = DIALECT.stream_rewriter(context(Recorder()))
    cut = data.index(b'"Bash"')
    sent = b"".join(rw.feed(data[:cut]))
    sent += b"".join(rw.salvage())
    assert array_pieces(data[:cut])[-1][0] == "rest"
    assert sent == expected_array(data[:cut])  # the open element comes back unchanged
    # afterwards everything passes through untouched
    assert b"".join(rw.feed(data[cut:])) == data[cut:]


# -- BR-30: the client withheld its shell ---------------------------------------------------------


@pytest.mark.parametrize("framing", ["sse", "array"])
def test_br30_withheld_shell_is_left_in_streams(framing):
    element = load_json("response-br30-shell.json")
    if framing == "sse":
        data = b"data: " + orjson.dumps(element) + b"\r\n\r\n"
    else:
        data = b"[" + json.dumps(element, indent=2).encode() + b"\n]"
    for seed in range(10):
        rec = Recorder("request-headless-no-shell.json")
        out, _, _ = run_stream(random_chunks(data, random.Random(seed)), rec)
        assert out == data
        [d] = rec.decisions
        assert d.name == "run_shell_command" and d.action is Action.LEAVE


# -- addon hooks (taddons) ------------------------------------------------------------------------

GEMINI_HOST = "generativelanguage.googleapis.com"
VERTEX_HOST = "us-central1-aiplatform.googleapis.com"
CODE_ASSIST_HOST = "cloudcode-pa.googleapis.com"
STREAM_PATH = "/v1beta/models/gemini-2.5-pro:streamGenerateContent"
JSON_TYPE = "application/json; charset=UTF-8"
SSE_TYPE = "text/event-stream"


#: Gemini CLI's request headers (after ``host``).
GEMINI_HEADERS = [
    ("content-type", "application/json"),
    ("accept-encoding", "gzip, deflate"),
    ("x-goog-api-key", "fixture-key"),
    ("user-agent", "GeminiCLI/0.61.0 (linux; x64)"),
]
replay = harness.replay


def make_flow(
    body: bytes | dict | list | None,
    *,
    path: str = STREAM_PATH,
    host: str = GEMINI_HOST,
    resp_type: str | None = JSON_TYPE,
    **kw,
) -> http.HTTPFlow:
    """A Gemini flow from Gemini CLI (``harness.make_flow``)."""
    return harness.make_flow(body, host=host, path=path, headers=GEMINI_HEADERS, resp_type=resp_type, **kw)


def request_json(f: http.HTTPFlow) -> Any:
    return orjson.loads(f.request.content)


@pytest.mark.parametrize("seed", range(12))
def test_addon_stream_without_alt_rewrites_the_array(env, seed):
    upstream = load_bytes("stream-foreign-tool-array.json")
    f = make_flow(
        load_json("request-gemini-cli.json"), upstream=upstream, resp_headers=[("content-length", str(len(upstream)))]
    )
    r = replay(env, f, seed)
    assert r.streamed == "callable"
    assert r.out == expected_array(upstream)
    assert "content-length" not in f.response.headers
    assert f.response.headers["transfer-encoding"] == "chunked"
    rec = r.record
    assert rec["dialect"] == "gemini" and rec["streamed"] is True and rec["skipped"] is None
    assert rec["response_changed"] is True and rec["request_changed"] is True and rec["notes"] == []
    assert [(d["name"], d["action"], d["target"]) for d in rec["decisions"]] == [
        ("default_api:run_shell_command", "rename", "run_shell_command"),
        ("read_file", "keep", "read_file"),
        ("Bash", "rename", "run_shell_command"),
        ("shell", "rename", "run_shell_command"),
    ]
    assert rec["decisions"][3]["arguments_after"] == {"command": "make test", "dir_path": "/repo"}
    # request: sentence appended to systemInstruction, nothing else changed
    sent, original = request_json(f), load_json("request-gemini-cli.json")
    assert sent["systemInstruction"]["parts"][:-1] == original["systemInstruction"]["parts"]
    assert sent["systemInstruction"]["parts"][-1]["text"] == rec["prompt_sentence"]
    assert {k: v for k, v in sent.items() if k != "systemInstruction"} == {
        k: v for k, v in original.items() if k != "systemInstruction"
    }
    assert f.request.headers["accept-encoding"] == "identity"
    assert f.marked == ":wrench:" and "Bash→run_shell_command" in f.comment


@pytest.mark.parametrize("seed", range(4))
def test_addon_array_after_leading_blank_bytes(env, seed):
    upstream = b"\r\n " + load_bytes("stream-code-assist-array.json")
    f = make_flow(
        load_json("request-code-assist.json"),
        host=CODE_ASSIST_HOST,
        path="/v1internal:streamGenerateContent",
        upstream=upstream,
    )
    r = replay(env, f, seed)
    assert r.out == b"\r\n " + expected_array(load_bytes("stream-code-assist-array.json"))
    assert r.record["response_changed"] is True


def test_addon_array_elements_leave_the_callable_as_each_closes(env):
    upstream = load_bytes("stream-foreign-tool-array.json")
    pieces = array_pieces(upstream)
    f = make_flow(load_json("request-gemini-cli.json"), upstream=upstream)
    r = replay(env, f, chunks=[raw for _, raw in pieces])
    assert r.per_call[:-1] == [expected_piece(kind, raw) for kind, raw in pieces]
    assert r.per_call[-1] == b""
    assert r.out == expected_array(upstream)


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize(
    "host,path,fixture,req",
    [
        (GEMINI_HOST, STREAM_PATH + "?alt=sse", "stream-foreign-tool.sse", "request-gemini-cli.json"),
        (
            VERTEX_HOST,
            "/v1/projects/demo/locations/us-central1/publishers/google/models/gemini-2.5-pro:streamGenerateContent?alt=sse",
            "stream-foreign-tool-crlf.sse",
            "request-gemini-cli.json",
        ),
        (
            CODE_ASSIST_HOST,
            "/v1internal:streamGenerateContent?alt=sse",
            "stream-code-assist.sse",
            "request-code-assist.json",
        ),
    ],
)
def test_addon_stream_with_alt_sse_rewrites_events(env, seed, host, path, fixture, req):
    upstream = load_bytes(fixture)
    eol = b"\r\n" if b"\r\n" in upstream else b"\n"
    f = make_flow(load_json(req), host=host, path=path, upstream=upstream, resp_type=SSE_TYPE)
    r = replay(env, f, seed)
    assert r.streamed == "callable"
    assert r.out == expected_sse(upstream, eol)
    assert r.record["dialect"] == "gemini" and r.record["response_changed"] is True
    sent = request_json(f)
    inner = sent["request"] if "request" in sent else sent
    assert inner["systemInstruction"]["parts"][-1]["text"] == r.record["prompt_sentence"]
    if "request" in sent:
        assert "systemInstruction" not in sent


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize(
    "path,fixture,resp_type",
    [
        (STREAM_PATH, "stream-declared-tool-array.json", JSON_TYPE),
        (STREAM_PATH + "?alt=sse", "stream-declared-tool.sse", SSE_TYPE),
    ],
)
def test_addon_unchanged_stream_is_byte_identical(env, seed, path, fixture, resp_type):
    env.configure(toolvocab_mode="repair")
    upstream = load_bytes(fixture)
    body = load_json("request-gemini-cli.json")
    f = make_flow(body, path=path, upstream=upstream, resp_type=resp_type)
    raw_request = f.request.raw_content
    r = replay(env, f, seed)
    assert r.streamed == "callable"
    assert r.out == upstream
    assert f.request.raw_content == raw_request
    rec = r.record
    assert rec["response_changed"] is False and rec["request_changed"] is False and rec["notes"] == []
    assert {d["action"] for d in rec["decisions"]} == {"keep"}
    assert not f.marked


@pytest.mark.parametrize("seed", range(4))
def test_addon_observe_mode_array_stream_unchanged_but_recorded(env, seed):
    env.configure(toolvocab_mode="observe")
    upstream = load_bytes("stream-foreign-tool-array.json")
    f = make_flow(load_json("request-gemini-cli.json"), upstream=upstream)
    raw_request = f.request.raw_content
    r = replay(env, f, seed)
    assert r.out == upstream and f.request.raw_content == raw_request
    assert [d["action"] for d in r.record["decisions"]] == ["rename", "keep", "rename", "rename"]
    assert r.record["response_changed"] is False and f.marked == ":eyes:"


@pytest.mark.parametrize("path", [STREAM_PATH, STREAM_PATH + "?alt=sse"])
@pytest.mark.parametrize("status", [400, 429, 500])
def test_addon_json_error_object_answered_to_stream_request(env, path, status):
    upstream = load_bytes("error-invalid-argument.json")
    f = make_flow(load_json("request-gemini-cli.json"), path=path, upstream=upstream, status=status)
    r = replay(env, f)
    assert r.out == upstream
    assert r.record["decisions"] == [] and r.record["response_changed"] is False
    assert any(str(status) in n for n in r.record["notes"])


@pytest.mark.parametrize("seed", range(5))
def test_addon_json_error_array_answered_to_stream_request(env, seed):
    upstream = load_bytes("stream-error-array.json")
    for status in (200, 429):
        f = make_flow(load_json("request-gemini-cli.json"), upstream=upstream, status=status)
        r = replay(env, f, seed)
        assert r.out == upstream
        assert r.record["decisions"] == [] and r.record["response_changed"] is False


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("resp_type", [JSON_TYPE, None])
def test_addon_stream_request_answered_with_json_object_is_rewritten_whole(env, seed, resp_type):
    # a 200 JSON object (error or a server that did not stream) is buffered inside the callable
    for name, changed in (("error-invalid-argument.json", False), ("response-foreign-tool.json", True)):
        upstream = b"\n " + load_bytes(name)
        f = make_flow(load_json("request-gemini-cli.json"), upstream=upstream, resp_type=resp_type)
        r = replay(env, f, seed)
        assert r.streamed == "callable"
        assert all(out == b"" for out in r.per_call[:-1])  # held until the end
        if changed:
            assert [c["name"] for c in calls_in(orjson.loads(r.out))] == ["run_shell_command", "read_file"]
        else:
            assert r.out == upstream
        assert r.record["response_changed"] is changed


def test_addon_generate_content_json_answer_repaired(env):
    upstream = load_bytes("response-foreign-tool.json")
    f = make_flow(
        load_json("request-gemini-cli.json"),
        path="/v1beta/models/gemini-2.5-pro:generateContent",
        upstream=upstream,
        resp_headers=[("content-length", str(len(upstream)))],
    )
    r = replay(env, f)
    assert r.streamed == "buffered"
    body = orjson.loads(r.out)
    expected = load_json("response-foreign-tool.json")
    expected["candidates"][0]["content"]["parts"][1]["functionCall"]["name"] = "run_shell_command"
    expected["candidates"][0]["content"]["parts"][2]["functionCall"] = {
        "id": "fc-fixture-0003",
        "name": "read_file",
        "args": {"file_path": "/work/src/[main].c"},
    }
    assert body == expected
    assert f.response.headers["content-length"] == str(len(r.out))
    assert r.record["response_changed"] is True


def test_addon_router_classifier_passes_untouched(env):
    raw = orjson.dumps(load_json("request-router-classifier.json"))
    upstream = b'{"candidates":[{"content":{"parts":[{"text":"{\\"reasoning\\":\\"small\\",\\"model_choice\\":\\"flash\\"}"}],"role":"model"},"finishReason":"STOP","index":0}]}'
    f = make_flow(raw, path="/v1beta/models/gemini-2.5-flash-lite:generateContent", upstream=upstream)
    headers_before = f.request.headers.copy()
    r = replay(env, f)
    assert f.request.raw_content == raw and f.request.headers == headers_before
    assert r.out == upstream and r.streamed == "buffered"
    assert r.record["dialect"] == "gemini" and r.record["skipped"] == "the request declares no tools"
    assert not f.marked


def test_addon_code_assist_classifier_passes_untouched(env):
    body = {
        "model": "gemini-2.5-flash-lite",
        "project": "p",
        "user_prompt_id": "u",
        "request": load_json("request-router-classifier.json"),
    }
    raw = orjson.dumps(body)
    f = make_flow(
        raw, host=CODE_ASSIST_HOST, path="/v1internal:generateContent", upstream=b'{"response":{"candidates":[]}}'
    )
    r = replay(env, f)
    assert f.request.raw_content == raw and r.out == b'{"response":{"candidates":[]}}'
    assert r.record["skipped"] == "the request declares no tools"


@pytest.mark.parametrize("path", ["/v1beta/models/gemini-2.5-pro:countTokens", "/v1internal:countTokens"])
def test_addon_count_tokens_is_not_handled(env, path):
    body = load_json("request-code-assist.json") if "internal" in path else load_json("request-gemini-cli.json")
    raw = orjson.dumps(body)
    f = make_flow(raw, path=path, upstream=b'{"totalTokens": 12}')
    r = replay(env, f)
    assert f.request.raw_content == raw and r.out == b'{"totalTokens": 12}'
    assert r.record["skipped"] and "not an LLM API request" in r.record["skipped"]


@pytest.mark.parametrize("seed", range(5))
@pytest.mark.parametrize("framing", ["sse", "array"])
def test_addon_br30_withheld_shell_left(env, seed, framing):
    element = load_json("response-br30-shell.json")
    if framing == "sse":
        path, resp_type, upstream = STREAM_PATH + "?alt=sse", SSE_TYPE, b"data: " + orjson.dumps(element) + b"\r\n\r\n"
    else:
        path, resp_type, upstream = STREAM_PATH, JSON_TYPE, b"[" + json.dumps(element, indent=2).encode() + b"\n]"
    f = make_flow(load_json("request-headless-no-shell.json"), path=path, upstream=upstream, resp_type=resp_type)
    r = replay(env, f, seed)
    assert r.out == upstream
    [d] = r.record["decisions"]
    assert (d["name"], d["action"], d["target"]) == ("run_shell_command", "leave", None)
    assert r.record["response_changed"] is False


@pytest.mark.parametrize("seed", range(6))
def test_addon_truncated_array_passes_the_tail_unchanged(env, seed):
    upstream = load_bytes("stream-truncated-array.json")
    f = make_flow(load_json("request-gemini-cli.json"), upstream=upstream)
    r = replay(env, f, seed)
    assert r.out == expected_array(upstream)
    assert r.out.endswith(array_pieces(upstream)[-1][1])


@pytest.mark.parametrize(
    "body",
    [
        {"contents": [], "tools": 5},
        {"contents": [], "tools": [{"functionDeclarations": 5}]},
        {"contents": [5, {"parts": 5}], "tools": [{"functionDeclarations": 5}]},
    ],
)
def test_addon_bad_request_shapes_pass_byte_identical(env, body):
    raw = orjson.dumps(body)
    upstream = load_bytes("stream-foreign-tool-array.json")
    f = make_flow(raw, upstream=upstream)
    r = replay(env, f)
    assert f.request.raw_content == raw
    assert r.out == upstream
    assert r.record is not None and r.record["decisions"] == []


@pytest.mark.parametrize(
    "body",
    [
        {"contents": [], "systemInstruction": {"parts": 5}, "tools": [{"functionDeclarations": [{"name": "glob"}]}]},
        {"contents": [5, {"parts": 5}], "tools": [{"functionDeclarations": [{"name": "glob"}]}]},
    ],
)
def test_addon_odd_request_shapes_with_a_usable_tool_are_handled_without_error(env, body):
    # Odd fields are skipped; the one well-formed declaration still counts.
    f = make_flow(orjson.dumps(body), upstream=load_bytes("stream-declared-tool-array.json"))
    r = replay(env, f)
    assert r.record is not None and r.record["declared"] == ["glob"]
    assert not any("internal error" in n for n in r.record["notes"])


@pytest.mark.parametrize("seed", range(8))
def test_addon_exception_in_sse_rewrite_passes_the_rest_through(env, monkeypatch, seed):
    calls = {"n": 0}
    original = gemini_module.GeminiStream.on_event

    def flaky(self, event):
        # on_event sees only events that can carry a functionCall: fail on the
        # first, before anything was rewritten
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("injected")
        return original(self, event)

    monkeypatch.setattr(gemini_module.GeminiStream, "on_event", flaky)
    upstream = load_bytes("stream-foreign-tool-crlf.sse")
    f = make_flow(
        load_json("request-gemini-cli.json"), path=STREAM_PATH + "?alt=sse", upstream=upstream, resp_type=SSE_TYPE
    )
    r = replay(env, f, seed)
    assert r.out == upstream
    assert any("RuntimeError: injected" in n for n in r.record["notes"])


@pytest.mark.parametrize("seed", range(4))
def test_addon_exception_in_array_rewrite_passes_the_rest_through(env, monkeypatch, seed):
    calls = {"n": 0}
    original = gemini_module.GeminiStream._element

    def flaky(self, raw):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("injected")
        return original(self, raw)

    monkeypatch.setattr(gemini_module.GeminiStream, "_element", flaky)
    upstream = load_bytes("stream-declared-tool-array.json")
    f = make_flow(load_json("request-gemini-cli.json"), upstream=upstream)
    r = replay(env, f, seed)
    assert r.out == upstream
    assert any("RuntimeError: injected" in n for n in r.record["notes"])


@pytest.mark.parametrize("seed", range(4))
def test_addon_array_element_of_odd_shape_passes_through(env, seed):
    upstream = b'[{"candidates":[{"content":{"parts":[{"text":"hi"}]}}]},\r\n{"candidates":5}\r\n]'
    f = make_flow(load_json("request-gemini-cli.json"), upstream=upstream)
    r = replay(env, f, seed)
    assert r.out == upstream


def test_an_alias_reaches_the_transcript_written_in_snake_case():
    """google-genai's dicts and the API's JSON parser take the proto field names
    (``function_call`` / ``function_response``) as well as ``functionCall`` /
    ``functionResponse``: an alias must reach both, or the upstream sees an earlier call to a
    name it was never declared under. Was a fault: only the camelCase parts were renamed."""
    from toolvocab.engine.grammar import grammar_for

    long = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance"  # 75 > 64
    body = {
        "contents": [
            {"role": "user", "parts": [{"text": "check it"}]},
            {"role": "model", "parts": [{"function_call": {"name": long, "args": {"command": "a"}}}]},
            {"role": "user", "parts": [{"function_response": {"name": long, "response": {"output": "ok"}}}]},
            {"role": "model", "parts": [{"functionCall": {"name": long, "args": {"command": "b"}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": long, "response": {"output": "ok"}}}]},
        ],
        "tools": [{"function_declarations": [{"name": long, "parameters_json_schema": {"type": "object"}}]}],
        "tool_config": {"function_calling_config": {"mode": "ANY", "allowed_function_names": [long]}},
    }
    names = DIALECT.transcript_names(body)
    assert names == [long] * 4
    peek = DIALECT.peek("POST", "/v1beta/models/gemini-2.5-pro:generateContent", orjson.dumps(body))
    assert peek is not None and peek.transcript_names == names
    plan = make_plan(
        Toolset(DIALECT.declared_tools(body)),
        [],
        add_sentence=False,
        grammar=grammar_for("gemini", "generativelanguage.googleapis.com", None),
        transcript_names=names,
    )
    alias = plan.rename_map[long]
    assert alias != long
    assert DIALECT.apply_request(body, plan) is True
    parts = [next(iter(c["parts"][0].values())) for c in body["contents"][1:]]
    assert [p["name"] for p in parts] == [alias] * 4
    assert body["tools"][0]["function_declarations"][0]["name"] == alias
    assert body["tool_config"]["function_calling_config"]["allowed_function_names"] == [alias]


# -- arguments streamed in pieces (Vertex AI streamFunctionCallArguments) -------------------------

#: Claude Code's ``Bash`` (its ``timeout`` is in milliseconds), declared to Gemini.
BASH_DECL = {
    "name": "Bash",
    "parametersJsonSchema": {
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
        "required": ["command"],
    },
}


def _gemini_sse(*responses: dict) -> bytes:
    return b"".join(b"data: " + orjson.dumps(r) + b"\r\n\r\n" for r in responses)


def _candidate(parts: list[dict], finish: str | None = None) -> dict:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


def _partial_stream(name: str) -> bytes:
    """A call of ``name`` as Vertex AI streams its arguments (google-genai 2.34
    ``FunctionCall.partial_args`` / ``will_continue``): the name first, then ``partialArgs``
    pieces keyed by JSON path, then an empty call with the natural end."""
    return _gemini_sse(
        _candidate([{"functionCall": {"name": name, "willContinue": True}}]),
        _candidate(
            [
                {
                    "functionCall": {
                        "partialArgs": [
                            {"jsonPath": "$.command", "stringValue": "npm test"},
                            {"jsonPath": "$.timeout", "numberValue": 600},
                        ],
                        "willContinue": True,
                    }
                }
            ]
        ),
        _candidate([{"functionCall": {}}], "STOP"),
    )


VERTEX_STREAM = "/v1/projects/p/locations/global/publishers/google/models/gemini-3-pro:streamGenerateContent?alt=sse"


@pytest.mark.parametrize("seed", range(4))
def test_a_call_whose_arguments_stream_in_pieces_is_left_as_sent(env, seed):
    """Its name alone is no call known whole: renaming ``bash`` (whose ``timeout`` is in
    seconds in the agents that declare it) to Claude Code's ``Bash`` (milliseconds) before
    ``$.timeout = 600`` arrives would make 600 s 600 ms. The control, the same call with its
    arguments whole and no timeout, is repaired."""
    body = {
        "contents": [{"role": "user", "parts": [{"text": "run the tests"}]}],
        "tools": [{"functionDeclarations": [BASH_DECL]}],
    }
    upstream = _partial_stream("bash")
    f = make_flow(body, host=VERTEX_HOST, path=VERTEX_STREAM, resp_type=SSE_TYPE, upstream=upstream)
    r = replay(env, f, seed)
    assert r.out == upstream
    notes = " | ".join(r.record["notes"])
    assert "passed through: the tool call bash's arguments are streamed in later parts (partialArgs)" in notes, notes
    whole = _gemini_sse(_candidate([{"functionCall": {"name": "bash", "args": {"command": "npm test"}}}], "STOP"))
    g = make_flow(body, host=VERTEX_HOST, path=VERTEX_STREAM, resp_type=SSE_TYPE, upstream=whole)
    assert [c["name"] for c in calls_in(orjson.loads(replay(env, g, seed).out[len(b"data: ") :]))] == ["Bash"]


@pytest.mark.parametrize("seed", range(4))
def test_a_call_whose_arguments_stream_in_pieces_gets_its_own_name_back(env, seed):
    """Under the alias this flow sent for a name the API refuses (over 64 characters) the call
    is the client's own tool: the alias is named back, every other byte as it came."""
    long = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance"
    body = {
        "contents": [{"role": "user", "parts": [{"text": "check it"}]}],
        "tools": [{"functionDeclarations": [{**BASH_DECL, "name": long}]}],
    }
    f = make_flow(body, host=VERTEX_HOST, path=VERTEX_STREAM, resp_type=SSE_TYPE, response=False)
    env.addon.request(f)
    [alias] = [d["name"] for d in request_json(f)["tools"][0]["functionDeclarations"]]
    assert alias != long
    upstream = _partial_stream(alias)
    g = make_flow(body, host=VERTEX_HOST, path=VERTEX_STREAM, resp_type=SSE_TYPE, upstream=upstream)
    r = replay(env, g, seed)
    assert r.out == upstream.replace(alias.encode(), long.encode(), 1)
    assert any(
        n.endswith("the client got the call as the upstream sent it but for its name") for n in r.record["notes"]
    )


def test_a_json_answer_with_arguments_in_pieces_is_left_and_noted(env):
    """The same in a buffered JSON array (the stream request answered whole)."""
    body = {
        "contents": [{"role": "user", "parts": [{"text": "run the tests"}]}],
        "tools": [{"functionDeclarations": [BASH_DECL]}],
    }
    upstream = (
        b"[" + b",".join(line[len(b"data: ") :] for line in _partial_stream("bash").split(b"\r\n\r\n") if line) + b"]"
    )
    f = make_flow(body, host=VERTEX_HOST, path=VERTEX_STREAM.split("?")[0], resp_type=JSON_TYPE, upstream=upstream)
    r = replay(env, f)
    assert orjson.loads(r.out) == orjson.loads(upstream)
    assert any("streamed in later parts (partialArgs)" in n for n in r.record["notes"]), r.record["notes"]


def _markup(path: str) -> str:
    return '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "%s"}}\n</tool_call>' % path


def _candidate_event(index: int, text: str, finish: str | None = None) -> dict:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": [{"text": text}]}, "index": index}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


@pytest.mark.parametrize("seed", range(6))
def test_the_texts_of_several_candidates_are_never_lifted_as_one(seed):
    """candidateCount 2, each candidate streamed in events of its own, each one call written as
    markup. Was a fault: both calls landed in candidate 0 and candidate 1's text became "".
    The stream goes out as it came; the control, candidate 0 alone, is lifted."""
    two = _gemini_sse(
        _candidate_event(0, _markup("/tmp/a.txt")),
        _candidate_event(1, _markup("/tmp/b.txt")),
        _candidate_event(0, "", "STOP"),
        _candidate_event(1, "", "STOP"),
    )
    out, _, _ = run_stream(random_chunks(two, random.Random(seed)))
    assert out == two
    one = _gemini_sse(_candidate_event(0, _markup("/tmp/a.txt")), _candidate_event(0, "", "STOP"))
    out, _, _ = run_stream(random_chunks(one, random.Random(seed)))
    calls = [c for block in out.split(b"\r\n\r\n") if block for c in calls_in(orjson.loads(block[len(b"data: ") :]))]
    assert [(c["name"], c["args"]) for c in calls] == [("read_file", {"file_path": "/tmp/a.txt"})]


MARKUP = '<tool_call>\n{"name": "read_file", "arguments": {"file_path": "/tmp/a.txt"}}\n</tool_call>'


def _text_event(parts: list[dict], finish: str | None = None) -> dict:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    return {"candidates": [candidate]}


#: Markup streamed in two events, the text's thoughtSignature on the first text part or on a
#: last empty one (Gemini 3 streams it either way).
SIGNED = {
    "on_the_first_text": [
        _text_event([{"text": MARKUP[:30], "thoughtSignature": "U0lH"}]),
        _text_event([{"text": MARKUP[30:]}], "STOP"),
    ],
    "on_a_last_empty_text": [
        _text_event([{"text": MARKUP}]),
        _text_event([{"text": "", "thoughtSignature": "U0lH"}], "STOP"),
    ],
}


def _parts_out(out: bytes, framing: str) -> list[dict]:
    if framing == "array":
        elements = orjson.loads(out)
    else:
        elements = [orjson.loads(b[len(b"data: ") :]) for b in out.split(b"\r\n\r\n") if b]
    return [p for e in elements for c in e["candidates"] for p in c["content"].get("parts", [])]


@pytest.mark.parametrize("framing", ["sse", "array"])
@pytest.mark.parametrize("where", SIGNED)
@pytest.mark.parametrize("seed", range(4))
def test_a_lifted_call_keeps_the_texts_thought_signature(framing, where, seed):
    """As the JSON path does (lift_text_parts): the text's signature goes on the first call.
    Was a fault: a stream dropped it (SSE) or left it on an emptied text part (array)."""
    events = SIGNED[where]
    if framing == "sse":
        data = _gemini_sse(*events)
    else:
        data = b"[" + b",\r\n".join(orjson.dumps(e) for e in events) + b"]"
    out, _, _ = run_stream(random_chunks(data, random.Random(seed)))
    signed = [p for p in _parts_out(out, framing) if "thoughtSignature" in p]
    assert signed == [
        {"functionCall": {"name": "read_file", "args": {"file_path": "/tmp/a.txt"}}, "thoughtSignature": "U0lH"}
    ]


def test_text_let_go_at_a_stall_goes_as_it_came_and_later_calls_are_repaired():
    """The stall bound gives up held text that may be markup (``let_go``): it goes as it came and
    is never lifted; the rewrite goes on, so a later ``functionCall`` of another agent's tool
    (``Bash``) still reaches Gemini CLI's ``run_shell_command``. Was: the rest passed through."""
    head = _gemini_sse(_text_event([{"text": MARKUP[:30]}]))
    tail = _gemini_sse(
        _text_event([{"text": MARKUP[30:]}]),
        _text_event([{"functionCall": {"name": "Bash", "args": {"command": "make test"}}}], "STOP"),
    )
    rw = DIALECT.stream_rewriter(context(Recorder()))
    out = b"".join(rw.feed(head))
    assert out == b"" and rw.has_held()
    released = b"".join(rw.let_go("the upstream sent no byte for 31.0 s"))
    assert released == head and not rw.has_held() and rw.error is None
    rest = b"".join(rw.feed(tail)) + b"".join(rw.finish())
    first, second = [orjson.loads(b[len(b"data: ") :]) for b in rest.split(b"\r\n\r\n") if b]
    assert first == _text_event([{"text": MARKUP[30:]}])  # text, never lifted
    assert calls_in(second) == [{"name": "run_shell_command", "args": {"command": "make test"}}]


@pytest.mark.parametrize("where", SIGNED)
def test_a_lifted_json_answer_keeps_the_signature_as_a_stream_does(where):
    """The JSON path (generateContent) and the stream put the text's signature in the same
    place, wherever the text part that carries it is. Was: a signature on a last empty text part
    was dropped from a JSON answer."""
    parts = [p for e in SIGNED[where] for p in e["candidates"][0]["content"]["parts"]]
    lifted = gemini_module.lift_text_parts(parts, context(Recorder()))
    assert lifted == [
        {"functionCall": {"name": "read_file", "args": {"file_path": "/tmp/a.txt"}}, "thoughtSignature": "U0lH"}
    ]


@pytest.mark.parametrize(
    ("query", "unread"),
    [("", False), ("?alt=sse", False), ("?alt=json", False), ("?alt=proto", True), ("?$alt=proto", True)],
)
def test_no_name_changes_upstream_for_an_answer_in_protobuf(query: str, unread: bool) -> None:
    """``alt=proto`` asks Google's API for a binary protobuf answer, which toolvocab does not read:
    a name renamed upstream could not be given back (was: the long name renamed, its alias handed
    to the client)."""
    from toolvocab.dialects import pipeline

    long_name = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance_v2"
    body = {
        "contents": [{"role": "user", "parts": [{"text": "check"}]}],
        "tools": [{"functionDeclarations": [{"name": long_name, "parametersJsonSchema": {"type": "object"}}]}],
    }
    request = pipeline.Request(
        orjson.dumps(body),
        "POST",
        "/v1beta/models/m:generateContent" + query,
        "generativelanguage.googleapis.com",
        {}.get,
    )
    got = pipeline.handle(request, pipeline.Settings(mode="auto"), pipeline.Caches())
    assert isinstance(got, pipeline.Handled)
    assert (got.plan.rename_map == {}) is unread
    if unread:
        assert any("not JSON" in note for note in got.record.notes), got.record.notes


# -- answers written with proto field names ------------------------------------------------------

#: The answer keys whose proto field name google-genai reads as well (its pydantic models take
#: ``function_call`` for ``Part.function_call`` as they take ``functionCall``; protobuf's JSON
#: printer writes these with ``preserving_proto_field_name``).
SNAKE = {
    b'"functionCall"': b'"function_call"',
    b'"finishReason"': b'"finish_reason"',
    b'"thoughtSignature"': b'"thought_signature"',
}


def snake(data: bytes) -> bytes:
    """``data`` with every :data:`SNAKE` key in its proto field spelling."""
    for camel, proto in SNAKE.items():
        data = data.replace(camel, proto)
    return data


@pytest.mark.parametrize(
    ("fixture", "eol", "req"),
    [
        ("stream-foreign-tool.sse", b"\n", "request-gemini-cli.json"),
        ("stream-foreign-tool-crlf.sse", b"\r\n", "request-gemini-cli.json"),
        ("stream-code-assist.sse", b"\r\n", "request-code-assist.json"),
    ],
)
def test_a_stream_in_proto_field_names_is_repaired_as_in_json_names(fixture, eol, req):
    """Each ``function_call`` of another agent's tool reaches the client as its own, as the
    ``functionCall`` one does (the oracle: :data:`REWRITES`, applied to the camelCase fixture,
    then spelled in proto field names). Was a fault: such answers were not read at all, and an
    alias the request had given a long tool name reached google-genai."""
    data = snake(load_bytes(fixture))
    assert data != load_bytes(fixture)
    expected = snake(expected_sse(load_bytes(fixture), eol))
    for seed in range(12):
        out, rw, rec = run_stream(random_chunks(data, random.Random(seed)), Recorder(req))
        assert out == expected, f"seed {seed}"
        assert rw.error is None
    assert any(d.action is Action.RENAME for d in rec.decisions)


@pytest.mark.parametrize("fixture", ["stream-foreign-tool-array.json", "stream-code-assist-array.json"])
def test_an_array_in_proto_field_names_is_repaired_as_in_json_names(fixture):
    data = snake(load_bytes(fixture))
    req = "request-code-assist.json" if "code-assist" in fixture else "request-gemini-cli.json"
    for seed in range(12):
        out, rw, _ = run_stream(random_chunks(data, random.Random(seed)), Recorder(req))
        assert out == snake(expected_array(load_bytes(fixture))), f"seed {seed}"


def test_a_json_answer_in_proto_field_names_is_repaired():
    body = orjson.loads(snake(load_bytes("response-foreign-tool.json")))
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is True
    parts = body["candidates"][0]["content"]["parts"]
    assert parts[1] == {
        "function_call": {"name": "run_shell_command", "args": {"command": "git status --short"}},
        "thought_signature": "c2lnLWZpeHR1cmUtMDI=",
    }
    assert parts[2] == {
        "function_call": {"id": "fc-fixture-0003", "name": "read_file", "args": {"file_path": "/work/src/[main].c"}}
    }
    assert [d.action for d in rec.decisions] == [Action.RENAME, Action.RENAME]


@pytest.mark.parametrize("finish", ["MAX_TOKENS", None])
def test_a_cut_call_in_proto_field_names_is_never_completed(finish):
    """``finish_reason`` is the end as ``finishReason`` is: a call in an answer that did not end
    with ``STOP`` is never completed (a ``shell`` argv with ``timeout`` stays out of ``Bash``;
    was read as a natural end, whatever ``finish_reason`` said)."""
    candidate: dict[str, Any] = {
        "content": {"role": "model", "parts": [{"function_call": {"name": "shell", "args": {"command": ["ls"]}}}]}
    }
    if finish:
        candidate["finish_reason"] = finish
    body = {"candidates": [candidate]}
    rec = Recorder()
    DIALECT.rewrite_response(body, context(rec))
    assert rec.calls and all(c.truncated for c in rec.calls)


def test_a_call_in_both_spellings_is_left_as_it_came():
    """One part holding ``functionCall`` and ``function_call``: which the client runs is its
    parser's choice (two readings), so neither is changed and no text beside it is lifted."""
    part = {
        "functionCall": {"name": "Bash", "args": {"command": "ls"}},
        "function_call": {"name": "shell", "args": {"command": ["rm", "-rf", "build"]}},
    }
    body = {"candidates": [{"content": {"role": "model", "parts": [{"text": MARKUP}, part]}, "finishReason": "STOP"}]}
    before = copy.deepcopy(body)
    rec = Recorder()
    assert DIALECT.rewrite_response(body, context(rec)) is False
    assert body == before and rec.calls == []


@pytest.mark.parametrize("framing", ["json", "sse"])
def test_text_lifted_in_an_answer_in_proto_field_names_is_spelled_for_every_client(framing):
    """A call lifted from the text of a ``finish_reason`` answer is written ``functionCall``, the
    key every client reads (``@google/genai`` reads no other: ``partFromMldev``), with the text's
    ``thought_signature``. Was: ``function_call``, which a JS client reads as nothing."""
    events = [
        _text_event([{"text": MARKUP[:30], "thoughtSignature": "U0lH"}]),
        _text_event([{"text": MARKUP[30:]}], "STOP"),
    ]
    expected = [
        {"functionCall": {"name": "read_file", "args": {"file_path": "/tmp/a.txt"}}, "thought_signature": "U0lH"}
    ]
    if framing == "json":
        parts = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
        body = orjson.loads(snake(orjson.dumps(_text_event(parts, "STOP"))))
        assert DIALECT.rewrite_response(body, context(Recorder())) is True
        assert body["candidates"][0]["content"]["parts"] == expected
    else:
        out, _, _ = run_stream([snake(_gemini_sse(*events))])
        parts = [
            p
            for b in out.split(b"\r\n\r\n")
            if b
            for c in orjson.loads(b[6:])["candidates"]
            for p in c["content"]["parts"]
        ]
        assert [p for p in parts if "functionCall" in p] == expected


LONG_TOOL = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance_v2"  # 76 > 64
LONG_ALIAS = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_77743514"


@pytest.mark.parametrize("order", ["camel_first", "null_first"])
@pytest.mark.parametrize("framing", ["json", "sse", "array"])
def test_a_null_sibling_spelling_is_no_second_reading(order, framing):
    """``{"functionCall": {…}, "function_call": null}`` is one call to google-genai (pydantic
    takes the set key; a ``null`` sibling is nothing), so the alias a long name got upstream is
    named back; and ``finish_reason: null`` beside ``finishReason: "STOP"`` is a natural end. Was
    a fault: any second key, ``null`` too, made the part two readings and the alias reached the
    client."""
    call = {"name": LONG_ALIAS, "args": {"template_path": "a"}}
    part = {"functionCall": call, "function_call": None}
    if order == "null_first":
        part = {"function_call": None, "functionCall": call}
    candidate = {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "finish_reason": None}
    answer = {"candidates": [candidate]}
    body = {"tools": [{"functionDeclarations": [{"name": LONG_TOOL}]}]}
    plan = Plan(rename_map={LONG_TOOL: LONG_ALIAS})
    rec = dialects.Recorder(Toolset(DIALECT.declared_tools(body)), plan)
    if framing == "json":
        assert DIALECT.rewrite_response(answer, context(rec, plan)) is True
        out = [answer]
    else:
        data = _gemini_sse(answer) if framing == "sse" else b"[" + orjson.dumps(answer) + b"]"
        raw = drive(DIALECT.stream_rewriter(context(rec, plan)), [data])
        out = orjson.loads(raw) if framing == "array" else [orjson.loads(raw[len(b"data: ") : -4])]
    parts = out[0]["candidates"][0]["content"]["parts"]
    assert parts[0]["functionCall"]["name"] == LONG_TOOL and parts[0]["function_call"] is None
    assert rec.calls and not any(c.truncated for c in rec.calls)
