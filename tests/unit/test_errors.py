"""Tool results that report errors (``toolvocab.engine.errors``) and each dialect's ``tool_results``.

Every client's exact unknown-tool and invalid-arguments text is classified with the right kind,
client and tool; the generic categories follow the seed table; results that are not errors give
``None``. The dialect tests read synthetic second requests in ``tests/fixtures/transcripts/``
(see its README), shaped after each real client's request following a foreign tool call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st

from toolvocab.dialects.anthropic import DIALECT as ANTHROPIC
from toolvocab.dialects.gemini import DIALECT as GEMINI
from toolvocab.dialects.openai_chat import DIALECT as OPENAI_CHAT
from toolvocab.dialects.openai_responses import DIALECT as OPENAI_RESPONSES
from toolvocab.engine import errors
from toolvocab.engine.errors import TEXT_LIMIT
from toolvocab.engine.errors import ErrorKind
from toolvocab.engine.errors import ToolError
from toolvocab.engine.errors import ToolResult
from toolvocab.engine.errors import classify_tool_result
from toolvocab.engine.errors import classify_tool_results
from toolvocab.engine.errors import generic_kind

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "transcripts"

U = ErrorKind.UNKNOWN_TOOL
A = ErrorKind.INVALID_ARGUMENTS

OC_TOOLS = "bash, edit, glob, grep, invalid, read, skill, task, todowrite, webfetch, write"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


# -- exact client texts ----------------------------------------------------------------------

#: (id, text, is_error, result name, kind, client, tool)
EXACT = [
    # Claude Code 2.1.197 (captured)
    (
        "claude-unknown",
        "<tool_use_error>Error: No such tool available: shell</tool_use_error>",
        True,
        "shell",
        U,
        "Claude Code",
        "shell",
    ),
    (
        "claude-unknown-read_file",
        "<tool_use_error>Error: No such tool available: read_file</tool_use_error>",
        True,
        "read_file",
        U,
        "Claude Code",
        "read_file",
    ),
    (
        "claude-unknown-case",
        "<tool_use_error>Error: No such tool available: bash</tool_use_error>",
        True,
        "bash",
        U,
        "Claude Code",
        "bash",
    ),
    (
        "claude-unknown-mcp",
        "<tool_use_error>Error: No such tool available: mcp__nothing</tool_use_error>",
        True,
        None,
        U,
        "Claude Code",
        "mcp__nothing",
    ),
    (
        "claude-unknown-sentence",
        "<tool_use_error>Error: No such tool available: SendMessage. SendMessage is disabled for this session.</tool_use_error>",
        True,
        "SendMessage",
        U,
        "Claude Code",
        "SendMessage",
    ),
    (
        "claude-args",
        "<tool_use_error>InputValidationError: Bash failed due to the following issue:\nThe parameter `command` type is expected as `string` but provided as `array`</tool_use_error>",
        True,
        "Bash",
        A,
        "Claude Code",
        "Bash",
    ),
    (
        "claude-args-plural",
        "<tool_use_error>InputValidationError: Edit failed due to the following issues:\nThe required parameter `old_string` is missing\nThe required parameter `new_string` is missing</tool_use_error>",
        True,
        "Edit",
        A,
        "Claude Code",
        "Edit",
    ),
    (
        "claude-args-unnamed",
        '<tool_use_error>InputValidationError: [{"code":"invalid_type"}]</tool_use_error>',
        True,
        "Read",
        A,
        "Claude Code",
        "Read",
    ),
    # Codex CLI 0.171.0
    ("codex-unknown", "unsupported call: shell", None, "shell", U, "Codex", "shell"),
    ("codex-unknown-read_file", "unsupported call: read_file", None, "read_file", U, "Codex", "read_file"),
    ("codex-unknown-custom", "unsupported custom tool call: apply_diff", None, "apply_diff", U, "Codex", "apply_diff"),
    (
        "codex-args",
        "failed to parse function arguments: missing field `cmd` at line 1 column 21",
        None,
        "exec_command",
        A,
        "Codex",
        "exec_command",
    ),
    (
        "codex-args-type",
        "failed to parse function arguments: invalid type: sequence, expected a string at line 1 column 8",
        None,
        "exec_command",
        A,
        "Codex",
        "exec_command",
    ),
    # OpenCode 1.18.33
    (
        "opencode-unknown",
        f"The arguments provided to the tool are invalid: Model tried to call unavailable tool 'shell'. Available tools: {OC_TOOLS}.",
        None,
        "invalid",
        U,
        "OpenCode",
        "shell",
    ),
    (
        "opencode-unknown-flagged",
        f"The arguments provided to the tool are invalid: Model tried to call unavailable tool 'read_file'. Available tools: {OC_TOOLS}.",
        True,
        "invalid",
        U,
        "OpenCode",
        "read_file",
    ),
    (
        "opencode-unknown-bare",
        f"Model tried to call unavailable tool 'shell'. Available tools: {OC_TOOLS}.",
        None,
        None,
        U,
        "OpenCode",
        "shell",
    ),
    (
        "opencode-args-schemaerror",
        'The read tool was called with invalid arguments: SchemaError(Missing key at ["filePath"]).\nPlease rewrite the input so it satisfies the expected schema.',
        None,
        "read",
        A,
        "OpenCode",
        "read",
    ),
    (
        "opencode-args-error-prefix",
        'Error: The todowrite tool was called with invalid arguments: SchemaError(Missing key at ["todos"][0]["priority"]).',
        None,
        "todowrite",
        A,
        "OpenCode",
        "todowrite",
    ),
    (
        "opencode-args-zod",
        'The edit tool was called with invalid arguments: [\n  {\n    "expected": "string",\n    "code": "invalid_type",\n    "path": [\n      "oldString"\n    ]\n  }\n].\nPlease rewrite the input so it satisfies the expected schema.',
        None,
        "edit",
        A,
        "OpenCode",
        "edit",
    ),
    (
        "opencode-args-json",
        'The arguments provided to the tool are invalid: Invalid input for tool bash: JSON parsing failed: Text: {"command":ls}.\nError message: JSON Parse error: Unexpected identifier "ls"',
        None,
        "invalid",
        A,
        "OpenCode",
        "bash",
    ),
    (
        "opencode-args-other",
        "The arguments provided to the tool are invalid: something else went wrong",
        None,
        "invalid",
        A,
        "OpenCode",
        None,
    ),
    # Qwen Code 0.15.10 (captured), newer variants (source)
    (
        "qwen-unknown",
        'Tool "shell" not found in registry. Tools must use the exact names that are registered. Did you mean one of: "skill", "agent", "glob"?',
        None,
        "shell",
        U,
        "Qwen Code or Gemini CLI",
        "shell",
    ),
    (
        "qwen-unknown-case",
        'Tool "Bash" not found in registry. Tools must use the exact names that are registered. Did you mean one of: "skill", "agent", "glob"?',
        None,
        "Bash",
        U,
        "Qwen Code or Gemini CLI",
        "Bash",
    ),
    (
        "qwen-unknown-skill",
        '"pdf" is a skill name, not a tool name. To use this skill, invoke the "skill" tool with parameter: skill: "pdf"',
        None,
        "pdf",
        U,
        "Qwen Code",
        "pdf",
    ),
    (
        "qwen-unknown-mcp-none",
        'Tool "mcp__gh__create_issue" not found: no MCP server providing it is currently configured. If you recently removed or renamed an MCP server, its tools are no longer available.',
        None,
        "mcp__gh__create_issue",
        U,
        "Qwen Code",
        "mcp__gh__create_issue",
    ),
    (
        "qwen-unknown-mcp-removed",
        'Tool "mcp__gh__create_issue" is unavailable: the MCP server "gh" was removed during this session, so its tools were unloaded.',
        None,
        None,
        U,
        "Qwen Code",
        "mcp__gh__create_issue",
    ),
    (
        "qwen-unknown-mcp-on",
        'Tool "mcp__gh__open_issue" not found on MCP server "gh". The server may be disconnected, still starting up, or the tool was renamed.',
        None,
        None,
        U,
        "Qwen Code",
        "mcp__gh__open_issue",
    ),
    # Gemini CLI 0.61.0 (captured)
    (
        "gemini-unknown",
        'Tool "shell" not found. Did you mean one of: "glob", "replace", "read_file"?',
        True,
        "shell",
        U,
        "Gemini CLI",
        "shell",
    ),
    ("gemini-unknown-one", 'Tool "Bash" not found. Did you mean "glob"?', True, "Bash", U, "Gemini CLI", "Bash"),
    ("gemini-unknown-no-suggestion", 'Tool "shell" not found.', True, "shell", U, "Gemini CLI", "shell"),
    # Qwen Code / Gemini CLI parameter validation (ajv, source)
    (
        "ajv-required",
        "params must have required property 'file_path'",
        None,
        "read_file",
        A,
        "Qwen Code or Gemini CLI",
        "read_file",
    ),
    (
        "ajv-type",
        "params/command must be string",
        True,
        "run_shell_command",
        A,
        "Qwen Code or Gemini CLI",
        "run_shell_command",
    ),
    (
        "ajv-several",
        "params/todos/0/status must be equal to one of the allowed values, params must NOT have additional properties",
        None,
        "todo_write",
        A,
        "Qwen Code or Gemini CLI",
        "todo_write",
    ),
    ("ajv-not-object", "Value of params must be an object", None, "edit", A, "Qwen Code or Gemini CLI", "edit"),
]


@pytest.mark.parametrize(
    ("text", "is_error", "name", "kind", "client", "tool"), [e[1:] for e in EXACT], ids=[e[0] for e in EXACT]
)
def test_exact_client_texts(text, is_error, name, kind, client, tool):
    result = ToolResult(call_id="c1", name=name, text=text, is_error=is_error)
    error = classify_tool_result(result)
    assert error is not None
    assert (error.kind, error.client, error.tool) == (kind, client, tool)
    assert error.call_id == "c1" and error.name == name
    assert error.text == text[:TEXT_LIMIT]


@pytest.mark.parametrize(
    ("text", "hint", "client"),
    [
        (
            'Tool "shell" not found in registry. Tools must use the exact names that are registered.',
            "Qwen Code",
            "Qwen Code",
        ),
        (
            'Tool "shell" not found in registry. Tools must use the exact names that are registered.',
            "Gemini CLI",
            "Gemini CLI",
        ),
        (
            'Tool "shell" not found in registry. Tools must use the exact names that are registered.',
            "OpenCode",
            "Qwen Code or Gemini CLI",
        ),
        ("params/command must be string", "Gemini CLI", "Gemini CLI"),
        ("params/command must be string", "Qwen Code", "Qwen Code"),
        ("unsupported call: shell", "Gemini CLI", "Codex"),  # a hint never overrides a single-client text
    ],
)
def test_client_hint_attributes_shared_texts(text, hint, client):
    error = classify_tool_result(ToolResult(text=text), client=hint)
    assert error is not None and error.client == client


def test_unknown_tool_texts_win_over_generic_words():
    # "not found" would be the generic not_found; the exact text is checked first.
    error = classify_tool_result(ToolResult(name="shell", text='Tool "shell" not found.', is_error=True))
    assert error is not None and error.kind is ErrorKind.UNKNOWN_TOOL
    # "validation" / "json" would be schema; the exact texts say invalid_arguments.
    error = classify_tool_result(
        ToolResult(
            name="Bash",
            text="<tool_use_error>InputValidationError: Bash failed due to the following issue:\nx</tool_use_error>",
            is_error=True,
        )
    )
    assert error is not None and error.kind is ErrorKind.INVALID_ARGUMENTS


def test_exact_texts_match_only_at_the_start():
    # A successful output that merely quotes an error text is not an error when the wire has no flag.
    for text in (
        "$ grep -r 'unsupported call: shell' logs\nlogs/a.txt: unsupported call: shell",
        'README mentions: Tool "shell" not found. Did you mean…',
        "notes: The read tool was called with invalid arguments: …",
    ):
        assert classify_tool_result(ToolResult(name="exec_command", text=text)) is None


# -- generic categories -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("Command timed out after 120000ms", ErrorKind.TIMEOUT),
        ("Request Timeout", ErrorKind.TIMEOUT),
        ("EACCES: permission denied, open '/etc/shadow'", ErrorKind.PERMISSION),
        ("Access denied for user", ErrorKind.PERMISSION),
        ("403 Forbidden", ErrorKind.PERMISSION),
        ("File not found: /tmp/x", ErrorKind.NOT_FOUND),
        ("Resource exhausted", ErrorKind.RESOURCE),
        ("JavaScript heap out of memory", ErrorKind.RESOURCE),
        ("No space left on disk", ErrorKind.RESOURCE),
        ("Output does not match the schema", ErrorKind.SCHEMA),
        ("Validation error in field x", ErrorKind.SCHEMA),
        ("Unexpected token in JSON at position 3", ErrorKind.SCHEMA),
        ("Could not parse the diff", ErrorKind.PARSE),
        ("UnicodeDecodeError: 'utf-8' codec can't decode byte", ErrorKind.PARSE),
        ("failed to deserialize payload", ErrorKind.PARSE),
        ("Exit code 1\nbash: foo: command", ErrorKind.EXECUTION),
        ("", ErrorKind.UNKNOWN),
        ("   \n", ErrorKind.UNKNOWN),
    ],
)
def test_generic_categories(text, kind):
    assert generic_kind(text) is kind
    error = classify_tool_result(ToolResult(call_id="c", name="Bash", text=text, is_error=True))
    assert error is not None
    assert (error.kind, error.client, error.tool) == (kind, None, "Bash")


def test_generic_order_first_match_wins():
    # timeout before permission before not_found …
    assert generic_kind("permission check timed out") is ErrorKind.TIMEOUT
    assert generic_kind("config not found: permission file") is ErrorKind.PERMISSION
    assert generic_kind("JSON decode failed") is ErrorKind.SCHEMA


def test_claude_code_wrapper_is_an_error_even_without_the_flag():
    error = classify_tool_result(ToolResult(name="Read", text="<tool_use_error>File does not exist.</tool_use_error>"))
    assert error is not None
    assert (error.kind, error.client, error.tool) == (ErrorKind.EXECUTION, "Claude Code", "Read")
    error = classify_tool_result(
        ToolResult(
            name="Edit",
            text="<tool_use_error>String to replace not found in file.\nString: foo</tool_use_error>",
            is_error=True,
        )
    )
    assert error is not None and (error.kind, error.client) == (ErrorKind.NOT_FOUND, "Claude Code")


# -- not errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "result",
    [
        ToolResult(call_id="t1", name="Bash", text="hi", is_error=False),
        ToolResult(call_id="t1", name="Bash", text="hi", is_error=None),
        ToolResult(call_id="c", name="exec_command", text="Chunk ID: 1\nProcess exited with code 0\nOutput:\nhi\n"),
        ToolResult(name="run_shell_command", text="Command: echo hi\nOutput: hi\nError: (none)\nExit Code: 0"),
        ToolResult(name="bash", text="file not found in cache, rebuilding\n"),  # generic words, no flag
        ToolResult(name="x", text=""),
        # an explicit is_error: false wins over any text
        ToolResult(
            name="shell", text="<tool_use_error>Error: No such tool available: shell</tool_use_error>", is_error=False
        ),
        ToolResult(name="shell", text="unsupported call: shell", is_error=False),
    ],
)
def test_not_an_error(result):
    assert classify_tool_result(result) is None


def test_text_is_cut_to_300_characters():
    long = f"The arguments provided to the tool are invalid: Model tried to call unavailable tool 'shell'. Available tools: {', '.join(f'tool_{i}' for i in range(200))}."
    error = classify_tool_result(ToolResult(text=long))
    assert error is not None and len(error.text) == TEXT_LIMIT == 300 and long.startswith(error.text)
    assert error.tool == "shell"


def test_models_dump_to_json():
    error = classify_tool_result(ToolResult(call_id="c", name="shell", text="unsupported call: shell"))
    assert isinstance(error, ToolError)
    dumped = error.model_dump(mode="json")
    assert dumped == {
        "call_id": "c",
        "name": "shell",
        "kind": "unknown_tool",
        "client": "Codex",
        "tool": "shell",
        "text": "unsupported call: shell",
    }
    assert json.loads(json.dumps(dumped)) == dumped
    assert ErrorKind("invalid_arguments") is ErrorKind.INVALID_ARGUMENTS and ErrorKind.TIMEOUT == "timeout"
    assert [k.value for k in ErrorKind] == [
        "unknown_tool",
        "invalid_arguments",
        "permission",
        "not_found",
        "timeout",
        "resource",
        "schema",
        "parse",
        "execution",
        "unknown",
    ]


def test_classify_tool_results_keeps_errors_in_order():
    results = [
        ToolResult(call_id="a", name="Bash", text="hi", is_error=False),
        ToolResult(
            call_id="b",
            name="shell",
            text="<tool_use_error>Error: No such tool available: shell</tool_use_error>",
            is_error=True,
        ),
        ToolResult(call_id="c", name="Bash", text="Exit code 2", is_error=True),
    ]
    assert [(e.call_id, e.kind) for e in classify_tool_results(results)] == [
        ("b", ErrorKind.UNKNOWN_TOOL),
        ("c", ErrorKind.EXECUTION),
    ]


# -- dialects: tool_results over each client's second request ----------------------------------


def summary(results: list[ToolResult]) -> list[tuple[Any, ...]]:
    return [(r.call_id, r.name, r.is_error) for r in results]


def kinds(results: list[ToolResult], client: str | None = None) -> list[tuple[Any, ...]]:
    out = []
    for r in results:
        e = classify_tool_result(r, client)
        out.append(None if e is None else (e.kind, e.client, e.tool))
    return out


def test_anthropic_claude_code_foreign():
    body = load("claude-code-foreign.json")
    assert ANTHROPIC.matches("POST", "/v1/messages?beta=true", body)
    results = ANTHROPIC.tool_results(body)
    assert summary(results) == [("toolu_01Fgn1", "shell", True)]
    assert results[0].text == "<tool_use_error>Error: No such tool available: shell</tool_use_error>"
    assert kinds(results, "Claude Code") == [(U, "Claude Code", "shell")]


def test_anthropic_claude_code_invalid_args():
    results = ANTHROPIC.tool_results(load("claude-code-invalid-args.json"))
    assert summary(results) == [("toolu_01Own1", "Bash", False), ("toolu_01Arr1", "Bash", True)]
    assert results[0].text == "hi"  # text blocks
    assert kinds(results) == [None, (A, "Claude Code", "Bash")]


def test_anthropic_opencode_invalid_sink():
    body = load("opencode-anthropic-foreign.json")
    results = ANTHROPIC.tool_results(body)
    # no is_error on the wire: the invalid sink is an error by construction
    assert summary(results) == [("toolu_oc_1", "invalid", True)]
    assert kinds(results, "OpenCode") == [(U, "OpenCode", "shell")]
    # even when the SDK writes is_error: false for the sink's "successful" run
    body["messages"][-1]["content"][0]["is_error"] = False
    assert kinds(ANTHROPIC.tool_results(body)) == [(U, "OpenCode", "shell")]


def test_anthropic_qwen_code():
    results = ANTHROPIC.tool_results(load("qwen-code-anthropic-foreign.json"))
    assert summary(results) == [("toolu_q_1", "Bash", None)]
    assert kinds(results, "Qwen Code") == [(U, "Qwen Code", "Bash")]


def test_anthropic_odd_shapes():
    body = {
        "messages": [
            "junk",
            {"role": "user", "content": "plain text"},
            {
                "role": "user",
                "content": [
                    None,
                    {
                        "type": "tool_result",
                        "tool_use_id": "orphan",
                        "content": [
                            {"type": "text", "text": "a"},
                            {"type": "image", "source": {}},
                            {"type": "text", "text": "b"},
                        ],
                    },
                    {"type": "tool_result", "content": None, "is_error": "yes"},
                ],
            },
        ]
    }
    assert [(r.call_id, r.name, r.text, r.is_error) for r in ANTHROPIC.tool_results(body)] == [
        ("orphan", None, "a\nb", None),
        (None, None, "", None),
    ]
    assert ANTHROPIC.tool_results({}) == [] and ANTHROPIC.tool_results({"messages": None}) == []


def test_chat_opencode_foreign():
    body = load("opencode-foreign.json")
    assert OPENAI_CHAT.matches("POST", "/v1/chat/completions", body)
    results = OPENAI_CHAT.tool_results(body)
    assert summary(results) == [("call_oc_1", "invalid", True)]
    assert kinds(results, "OpenCode") == [(U, "OpenCode", "shell")]


def test_chat_opencode_invalid_args():
    results = OPENAI_CHAT.tool_results(load("opencode-invalid-args.json"))
    assert summary(results) == [
        ("call_oc_2", "read", None),
        ("call_oc_3", "invalid", True),
        ("call_oc_4", "bash", None),
    ]
    assert results[1].text.startswith(
        "The arguments provided to the tool are invalid: Invalid input for tool bash"
    )  # text parts
    assert kinds(results) == [(A, "OpenCode", "read"), (A, "OpenCode", "bash"), None]


def test_chat_qwen_code_foreign():
    results = OPENAI_CHAT.tool_results(load("qwen-code-foreign.json"))
    assert summary(results) == [
        ("call_q_1", "run_shell_command", None),
        ("call_q_2", "shell", None),
        ("call_q_3", "read_file", None),
    ]
    assert results[0].text.startswith("Command: echo hi\n")
    assert kinds(results, "Qwen Code") == [None, (U, "Qwen Code", "shell"), (A, "Qwen Code", "read_file")]


def test_chat_odd_shapes():
    body = {
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "k1", "type": "custom", "custom": {"name": "apply_patch", "input": "x"}},
                    {"id": "k2", "type": "function", "function": {"name": "invalid", "arguments": "not json"}},
                    {
                        "id": "k3",
                        "type": "function",
                        "function": {"name": "invalid", "arguments": {"tool": "x", "error": "y"}},
                    },
                    "junk",
                ],
            },
            {"role": "tool", "tool_call_id": "k1", "content": "done"},
            {"role": "tool", "tool_call_id": "k2", "content": None},
            {"role": "tool", "tool_call_id": "k3", "content": "The arguments provided to the tool are invalid: y"},
            {"role": "tool", "content": "no id"},
            {"role": "function", "name": "legacy_fn", "content": "legacy output"},
        ]
    }
    got = [(r.call_id, r.name, r.text, r.is_error) for r in OPENAI_CHAT.tool_results(body)]
    assert got == [
        ("k1", "apply_patch", "done", None),
        ("k2", "invalid", "", None),  # arguments not JSON: not recognized as the sink
        ("k3", "invalid", "The arguments provided to the tool are invalid: y", True),
        (None, None, "no id", None),
        (None, "legacy_fn", "legacy output", None),
    ]
    assert OPENAI_CHAT.tool_results({}) == []


def test_responses_codex_foreign():
    body = load("codex-foreign.json")
    assert OPENAI_RESPONSES.matches("POST", "/v1/responses", body)
    results = OPENAI_RESPONSES.tool_results(body)
    assert summary(results) == [("call_shell_1", "shell", None)]
    assert kinds(results, "Codex") == [(U, "Codex", "shell")]


def test_responses_codex_invalid_args():
    results = OPENAI_RESPONSES.tool_results(load("codex-invalid-args.json"))
    assert summary(results) == [
        ("call_exec_ok", "exec_command", None),
        ("call_exec_bad", "exec_command", None),
        ("call_patch_1", "apply_patch", None),
        ("call_mcp_1", "mcp__github__create_issue", None),
    ]
    assert results[1].text.startswith("failed to parse function arguments: missing field `cmd`")  # content list
    assert kinds(results) == [None, (A, "Codex", "exec_command"), None, None]


def test_responses_output_name_and_odd_shapes():
    body = {
        "input": [
            {
                "type": "function_call_output",
                "call_id": "x1",
                "name": "own_name",
                "output": "unsupported call: own_name",
            },
            {"type": "function_call_output", "call_id": "x2", "output": {"unexpected": True}},
            {
                "type": "custom_tool_call_output",
                "output": [{"type": "output_text", "text": "a"}, {"type": "input_image"}],
            },
            "junk",
        ]
    }
    got = [(r.call_id, r.name, r.text) for r in OPENAI_RESPONSES.tool_results(body)]
    assert got == [("x1", "own_name", "unsupported call: own_name"), ("x2", None, ""), (None, None, "a")]
    assert OPENAI_RESPONSES.tool_results({"input": "a string prompt"}) == []


def test_gemini_cli_foreign():
    body = load("gemini-cli-foreign.json")
    assert GEMINI.matches("POST", "/v1beta/models/gemini-3.8-flash:streamGenerateContent?alt=sse", body)
    results = GEMINI.tool_results(body)
    assert summary(results) == [("run_shell_command_1760000000000_0", "run_shell_command", None), (None, "shell", True)]
    assert results[0].text.startswith("<untrusted_context>\nOutput: hi")
    assert kinds(results, "Gemini CLI") == [None, (U, "Gemini CLI", "shell")]


def test_gemini_cli_invalid_args():
    results = GEMINI.tool_results(load("gemini-cli-invalid-args.json"))
    assert summary(results) == [
        ("read_file_1760000000001_0", "read_file", True),
        ("read_file_1760000000002_0", "read_file", None),
    ]
    assert kinds(results, "Gemini CLI") == [(A, "Gemini CLI", "read_file"), None]


def test_gemini_code_assist_envelope_and_odd_shapes():
    inner = load("gemini-cli-foreign.json")
    wrapped = {"model": "gemini-2.5-pro", "project": "p", "user_prompt_id": "u", "request": inner}
    assert summary(GEMINI.tool_results(wrapped)) == summary(GEMINI.tool_results(inner))
    body = {
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"function_response": {"name": "snake", "response": {"result": 1}}},
                    {"functionResponse": {"name": "err_obj", "response": {"error": {"code": 5, "message": "boom"}}}},
                    {"functionResponse": {"name": "no_response"}},
                    {"functionResponse": "junk"},
                    "junk",
                ],
            },
            "junk",
        ]
    }
    got = [(r.name, r.text, r.is_error) for r in GEMINI.tool_results(body)]
    assert got == [
        ("snake", '{"result":1}', None),
        ("err_obj", '{"code":5,"message":"boom"}', True),
        ("no_response", "", None),
    ]
    assert kinds(GEMINI.tool_results(body)) == [None, (ErrorKind.EXECUTION, None, "err_obj"), None]
    assert GEMINI.tool_results({}) == [] and GEMINI.tool_results([]) == []


@pytest.mark.parametrize(
    ("dialect", "fixture", "client", "expected"),
    [
        (ANTHROPIC, "claude-code-foreign.json", "Claude Code", [(U, "shell")]),
        (OPENAI_RESPONSES, "codex-foreign.json", "Codex", [(U, "shell")]),
        (OPENAI_CHAT, "opencode-foreign.json", "OpenCode", [(U, "shell")]),
        (ANTHROPIC, "opencode-anthropic-foreign.json", "OpenCode", [(U, "shell")]),
        (OPENAI_CHAT, "qwen-code-foreign.json", "Qwen Code", [(U, "shell"), (A, "read_file")]),
        (ANTHROPIC, "qwen-code-anthropic-foreign.json", "Qwen Code", [(U, "Bash")]),
        (GEMINI, "gemini-cli-foreign.json", "Gemini CLI", [(U, "shell")]),
    ],
)
def test_every_client_second_request_shows_the_missed_call(dialect, fixture, client, expected):
    errors = classify_tool_results(dialect.tool_results(load(fixture)), client)
    assert [(e.kind, e.tool) for e in errors] == expected
    assert {e.client for e in errors} == {client}


# -- the prefilter ---------------------------------------------------------------------------

#: Pieces of the client texts and of texts that are not errors, to splice together.
_PIECES = [
    " ",
    "\n",
    "<tool_use_error>",
    "</tool_use_error>",
    "Error: ",
    "The ",
    "read",
    " tool was called with invalid arguments: ",
    "arguments provided to the tool are invalid: ",
    "unsupported ",
    "call: x",
    "failed to parse function arguments: ",
    "Model tried to call unavailable tool 'x'. ",
    "Available tools: ",
    'Tool "x" not found',
    ".",
    " in registry",
    '"x" is a skill name, not a tool name.',
    "Value of params must be an object",
    "params",
    "/a",
    " must ",
    "ok",
    "X",
]


@settings(max_examples=500, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=6).map("".join))
def test_prefilter_passes_every_text_a_pattern_matches(text):
    """A result without an error flag is looked at only when its text begins like a client
    text: every text that one of the client patterns (or Claude Code's wrapper) matches passes
    the prefilter, so the prefilter changes no classification."""
    matched = any(p.regex.match(text) for p in errors._PATTERNS) or errors._CLAUDE_WRAPPER.match(text) is not None
    if matched:
        assert errors._CANDIDATE.match(text) is not None


@pytest.mark.parametrize("text", [e[1] for e in EXACT], ids=[e[0] for e in EXACT])
def test_prefilter_passes_every_captured_client_text(text):
    assert errors._CANDIDATE.match(text) is not None
    assert errors._CANDIDATE.match("  \n" + text) is not None
