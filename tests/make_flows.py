#!/usr/bin/env python3
"""Regenerate the harness part of the flow corpus (``flows/harness/``) — not run by pytest.

    uv run python tests/make_flows.py            # harness flows: every bug kind x dialect x streamed/not
    uv run python tests/make_flows.py --list     # the flows it would write
    uv run python tests/make_flows.py agents     # real agents via the e2e harness, adopted with flowtool add

How the harness flows are made (no mocks in the path): ``tests/fake_upstream.py`` runs as a process
and answers each request with exact bytes given through its ``enqueue`` endpoint, shaped like the
"Upstream answer" of a bug report in ``the project's bug log``; a real ``mitmdump -s addon/toolvocab.py
-w FILE`` in reverse mode sits in front of it; this script plays the client, with requests that
declare the report's tools (our own descriptions, a neutral system text, dummy credentials that
the addon must redact). Each saved flow becomes one file ``flows/harness/<scenario>-<dialect>-
<json|sse|array>.mitm`` carrying ``toolvocab_replay`` metadata (mode, profiles TOML), then is
replayed with several chunk seeds (a live/replay mismatch is reported) and entered in
``flows/MANIFEST.toml`` with the tool calls the bug report says the client must receive.

Upstream answers that use names the addon sent upstream (aliases for long / invalid /
duplicate names, profile renames) take those names from the addon's own planner
(``toolvocab.engine.plan.make_plan``), as a real upstream would take them from the request it got.

``agents`` runs the e2e tests in auto mode (``pytest -m e2e -k auto_mode --basetemp DIR``: real
Claude Code, Qwen Code, OpenCode, Codex CLI and Gemini CLI through mitmdump -w) and adopts
every flow the addon handled with ``tests/flowtool.py add`` — the same one step a user takes.
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import shutil
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
sys.path[:0] = [str(TESTS), str(REPO)]

import flowreplay as fr  # noqa: E402
import procs  # noqa: E402
from fakeup.anthropic import anthropic_message  # noqa: E402
from fakeup.anthropic import message_events  # noqa: E402
from fakeup.gemini import gemini_candidate  # noqa: E402
from fakeup.gemini import gemini_sse  # noqa: E402
from fakeup.gemini import json_array_chunks  # noqa: E402
from fakeup.openai_responses import response_events  # noqa: E402
from fakeup.wire import split_evenly as pieces  # noqa: E402
from fakeup.wire import sse_bytes as sse  # noqa: E402

HARNESS_DIR = fr.FLOWS_DIR / "harness"
AGENTS_DIR = fr.FLOWS_DIR / "agents"
HOST = "127.0.0.1"
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "openai_chat": "gpt-4o-mini",
    "openai_responses": "gpt-5",
    "gemini": "gemini-2.5-flash",
}
CREATED = 1761000000

# -- tool and call specs ------------------------------------------------------------------------

STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
ARGV = {"type": "array", "items": {"type": "string"}}


def obj(*required: str, **props: Any) -> dict:
    return {"type": "object", "properties": props, "required": list(required)}


@dataclasses.dataclass
class Tool:
    name: str
    schema: dict
    description: str = ""
    namespace: str | None = None  # Responses namespace (other dialects declare the flat name)

    @property
    def flat(self) -> str:
        from toolvocab.engine.names import join_namespace

        return join_namespace(self.namespace, self.name)


@dataclasses.dataclass
class Call:
    name: str
    args: Any  # dict (JSON-encoded where the wire wants a string), or a str sent verbatim
    id: str | None = None  # None: generated; "" stays empty (BR-20)
    namespace: str | None = None  # Responses only
    args_object: bool = False  # Chat/Responses: arguments as an object (BR-21)
    stream_name: str = "once"  # Chat streams: "once", "repeat" (every chunk), "split" (two chunks)


@dataclasses.dataclass
class Ctx:
    """What a scenario's calls may depend on: the dialect and the names the upstream was given."""

    dialect: str
    stream: bool
    rename_map: dict[str, str]
    duplicates: dict[str, list[str | None]]

    def up(self, name: str) -> str:
        return self.rename_map.get(name, name)


Calls = list[Call] | Callable[[Ctx], list[Call]]
#: What the client must receive, per the bug report: a name (arguments as the upstream sent them
#: in that position) or ``(name, arguments)``.
Want = list[str | tuple[str, Any]]


@dataclasses.dataclass
class Scenario:
    key: str
    bugs: list[str]
    prompt: str
    tools: list[Tool] | Callable[[str], list[Tool]]
    calls: Calls
    want: Want | Callable[[Ctx], Want]  # the calls the client must receive, per the bug report
    expected: str = "repair"  # repair | leave | pass
    expected_in: dict[str, str] = dataclasses.field(
        default_factory=dict
    )  # per-dialect (or "dialect-variant") exceptions
    text: str | None = None  # assistant text before the calls (a str, or the whole answer when no calls)
    transcript: list[tuple[Call, str]] = dataclasses.field(default_factory=list)
    dialects: tuple[str, ...] = fr.DIALECTS
    variants: tuple[str, ...] = ("json", "sse")  # + "array" for Gemini's streamed JSON array
    profile: str | None = None  # key of PROFILES
    mode: str = "auto"
    status: int = 200
    error_body: dict | None = None
    note: str | None = None
    chat_json_empty_tool_calls: bool = False  # BR-23: "tool_calls": [] with finish_reason "stop"
    responses_developer: bool = False  # system text as a developer message (Codex) instead of instructions


PROFILES = {
    "claude-names": """\
# BR-06: a proxy that presents Cline's tools to Claude under Claude Code's names
[[profile]]
name = "claude-code-names"
host = "^127\\\\.0\\\\.0\\\\.1$"
[profile.names]
shell = "Bash"
write = "Write"
read = "Read"
""",
    "gateway64": """\
# BR-14: an Anthropic-format gateway in front of an upstream that keeps the 64-character limit
[[profile]]
name = "anthropic-64-gateway"
host = "^127\\\\.0\\\\.0\\\\.1$"
path = "/v1/messages"
grammar = "anthropic64"
""",
}

PATCH = "*** Begin Patch\n*** Update File: app.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
LONG = "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance"

CLINE_TOOLS = [
    Tool(
        "execute_command",
        obj("command", "requires_approval", command=STR, requires_approval=BOOL),
        "Run a CLI command.",
    ),
    Tool("read_file", obj("path", path=STR), "Read a file."),
    Tool("write_to_file", obj("path", "content", path=STR, content=STR), "Write a file."),
    Tool("replace_in_file", obj("path", "diff", path=STR, diff=STR), "Apply SEARCH/REPLACE blocks."),
    Tool("list_files", obj("path", path=STR, recursive=BOOL), "List a directory."),
    Tool("search_files", obj("path", "regex", path=STR, regex=STR), "Search file contents."),
]
CLAUDE_TOOLS = [
    Tool(
        "Bash",
        obj("command", command=STR, description=STR, timeout=NUM, run_in_background=BOOL),
        "Run a shell command.",
    ),
    Tool("Read", obj("file_path", file_path=STR, offset=INT, limit=INT), "Read a file."),
    Tool(
        "Edit",
        obj("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR, replace_all=BOOL),
        "Replace text in a file.",
    ),
    Tool("Write", obj("file_path", "content", file_path=STR, content=STR), "Write a file."),
]
QWEN_SHELL = Tool(
    "run_shell_command",
    obj("command", command=STR, description=STR, directory=STR, is_background=BOOL),
    "Run a shell command.",
)
CODEX_SHELL = Tool("shell", obj("command", command=ARGV, workdir=STR, timeout_ms=NUM), "Run a command (argv).")


def br12_tools(dialect: str) -> list[Tool]:
    if dialect == "openai_responses":
        return [
            Tool("exec_command", obj("cmd", cmd=STR), "Run a command."),
            Tool("js", obj("code", code=STR), "Evaluate JavaScript.", namespace="mcp__cua_repl"),
            Tool("js", obj("code", code=STR), "Evaluate JavaScript.", namespace="mcp__node_repl"),
        ]
    return [
        Tool("exec_command", obj("cmd", cmd=STR), "Run a command."),
        Tool("mcp__cua_repl__js", obj("code", code=STR), "Evaluate JavaScript."),
        Tool("mcp__node_repl__js", obj("code", code=STR), "Evaluate JavaScript."),
    ]


def br12_calls(ctx: Ctx) -> list[Call]:
    if ctx.dialect == "openai_responses":
        return [Call("mcp__cua_repl__js", {"code": "document.title"})]  # flattened, no namespace
    return [Call("mcp__cua_repl.js", {"code": "document.title"})]  # the same server's dotted notation


def br12_want(ctx: Ctx) -> Want:
    return [
        ("mcp__cua_repl/js" if ctx.dialect == "openai_responses" else "mcp__cua_repl__js", {"code": "document.title"})
    ]


def alias_calls(names: list[str], args: list[dict]) -> Callable[[Ctx], list[Call]]:
    """Calls to whatever names the addon sent upstream for ``names``."""

    def build(ctx: Ctx) -> list[Call]:
        return [Call(ctx.up(n), a) for n, a in zip(names, args)]

    return build


def br15_calls(ctx: Ctx) -> list[Call]:
    return [
        Call(ctx.up("binja.get_function"), {"address": "0x401000"}),
        Call(ctx.up("user-profile/update"), {"field": "email", "value": "a@example.org"}),
    ]


def br18_calls(ctx: Ctx) -> list[Call]:
    if ctx.dialect == "openai_chat" and ctx.stream:
        return [
            Call("read_file", {"path": "a.py"}, stream_name="repeat"),  # hermes-agent#8259
            Call("terminal", {"command": "ls"}, stream_name="split"),  # continue#5849
            Call("shell_commandshell_command", {"command": "pwd"}),  # codex#31771
        ]
    return [
        Call("read_fileread_file", {"path": "a.py"}),
        Call("shell_commandshell_command", {"command": "pwd"}),
    ]


def br18_want(ctx: Ctx) -> Want:
    out: Want = [("read_file", {"path": "a.py"})]
    if ctx.dialect == "openai_chat" and ctx.stream:
        out.append(("terminal", {"command": "ls"}))
    return out + [("shell_command", {"command": "pwd"})]


def br31_tools(dialect: str) -> list[Tool]:
    return [
        Tool("Bash", obj("command", command=STR), "Run a shell command."),
        Tool("Read", obj("file_path", file_path=STR), "Read a file (built-in)."),
        Tool("Read", obj("path", path=STR, encoding=STR), "Read a file (MCP server)."),
        Tool("Bash", obj("command", command=STR), "Run a shell command."),  # identical repeat
    ]


def br31_calls(ctx: Ctx) -> list[Call]:
    second = (ctx.duplicates.get("Read") or [None])[0] or "Read"
    return [Call(second, {"path": "notes.md"}), Call("Bash", {"command": "ls"})]


BR31_WANT: Want = [("Read", {"path": "notes.md"}), "Bash"]  # the MCP Read's own arguments, only the name mapped back


SCENARIOS: list[Scenario] = [
    Scenario(
        "br01-applypatch",
        ["BR-01"],
        "Change x to 2 in app.py.",
        [
            CODEX_SHELL,
            Tool(
                "update_plan",
                obj("plan", plan={"type": "array", "items": {"type": "object"}}, explanation=STR),
                "Update the plan.",
            ),
            Tool("apply_patch", obj("input", input=STR), "Apply a patch."),
        ],
        [
            Call("shell", {"command": ["bash", "-lc", f"applypatch <<'EOF'\n{PATCH}\nEOF"]}),
            Call("applypatch", {"input": PATCH}),
        ],
        ["shell", ("apply_patch", {"input": PATCH})],
        responses_developer=True,
        note="the shell call with applypatch inside its command is kept; the function named applypatch becomes the declared apply_patch",
    ),
    Scenario(
        "br03-qwen-bash",
        ["BR-03"],
        "Find the Rust files.",
        [
            QWEN_SHELL,
            Tool("read_file", obj("absolute_path", absolute_path=STR)),
            Tool("edit", obj("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR)),
            Tool("grep_search", obj("pattern", pattern=STR)),
            Tool("glob", obj("pattern", pattern=STR)),
            Tool("list_directory", obj("path", path=STR)),
        ],
        [Call("bash", {"command": "find . -name '*.rs' | head -20", "description": "Find Rust files"})],
        ["run_shell_command"],
        variants=("json", "sse", "array"),
    ),
    Scenario(
        "br04-str-replace-editor",
        ["BR-04"],
        "Add the rand import to main.rs.",
        [
            Tool(
                "edit",
                obj("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR),
                "Replace text in a file.",
            ),
            Tool("write_file", obj("file_path", "content", file_path=STR, content=STR)),
            Tool("read_file", obj("absolute_path", absolute_path=STR)),
            QWEN_SHELL,
        ],
        [
            Call(
                "str_replace_editor",
                {
                    "file_path": "src/main.rs",
                    "old_string": "use clap::Parser;",
                    "new_string": "use clap::Parser;\nuse rand::Rng;",
                },
            ),
            Call(
                "str_replace_editor",
                {"command": "str_replace", "path": "src/lib.rs", "old_str": "fn a()", "new_str": "fn b()"},
            ),
        ],
        ["str_replace_editor", "str_replace_editor"],
        expected="leave",
        note="the text editor needs the literal; Qwen Code's edit falls back to whitespace-trimmed line matching, so an exact "
        "edit is left for the client to report (it reaches an exact Edit: see test_bug_reports.py)",
    ),
    Scenario(
        "br05-lowercase-bash",
        ["BR-05"],
        "What is the git status?",
        CLAUDE_TOOLS,
        [Call("bash", {"command": "git status"})],
        [("Bash", {"command": "git status"})],
        text="Let me check.",
    ),
    Scenario(
        "br05-lowercase-bash-observe",
        ["BR-05"],
        "What is the git status?",
        CLAUDE_TOOLS,
        [Call("bash", {"command": "git status"})],
        ["bash"],
        expected="leave",
        text="Let me check.",
        mode="observe",
        dialects=("anthropic",),
        note="observe mode: the decision is recorded, no byte changes",
    ),
    Scenario(
        "br06-renaming-proxy",
        ["BR-06"],
        "Run the tests and write notes.md.",
        CLINE_TOOLS,
        [
            Call("Bash", {"command": "npm test", "description": "Run tests"}),
            Call("Write", {"file_path": "notes.md", "content": "ok\n"}),
            Call("Edit", {"file_path": "a.py", "old_string": "x", "new_string": "y"}),
        ],
        [
            ("execute_command", {"command": "npm test"}),
            ("write_to_file", {"path": "notes.md", "content": "ok\n"}),
            "Edit",
        ],
        profile="claude-names",
        note="profile renames execute_command/write_to_file/read_file to Bash/Write/Read upstream; answers map back; "
        "Edit has no converter to replace_in_file's diff and is left",
    ),
    Scenario(
        "br08-parallel-wrapper",
        ["BR-08"],
        "Find a cat joke and a cat picture.",
        [
            Tool("search_joke", obj("query", query=STR), "Find a joke."),
            Tool("search_image", obj("query", query=STR), "Find an image."),
        ],
        [
            Call(
                "multi_tool_use.parallel",
                {
                    "tool_uses": [
                        {"recipient_name": "functions.search_joke", "parameters": {"query": "cats"}},
                        {"recipient_name": "functions.search_image", "parameters": {"query": "cats"}},
                    ]
                },
                id="call_p",
            )
        ],
        [("search_joke", {"query": "cats"}), ("search_image", {"query": "cats"})],
        note="the wrapper is unwrapped into search_joke + search_image in every dialect, JSON and streamed (ids: the "
        "wrapper's id + _0/_1, call_p_0/call_p_1; Gemini parts carry none); later items and events move up",
    ),
    Scenario(
        "br10-provider-prefix",
        ["BR-10"],
        "Read the README and list files.",
        [
            Tool("read", obj("path", path=STR), "Read a file."),
            Tool("exec", obj("command", command=STR), "Run a command."),
            Tool("write", obj("path", "content", path=STR, content=STR), "Write a file."),
        ],
        [
            Call("functions:read", {"path": "README.md"}, id="functions.read:0"),
            Call("tools/exec", {"command": "ls"}),
            Call("functions.read", {"path": "a.txt"}),
            Call("", {"path": "b.txt"}),
        ],
        [("read", {"path": "README.md"}), ("exec", {"command": "ls"}), ("read", {"path": "a.txt"}), ""],
        note="prefixes functions: / functions. / tools/ stripped; the blank name is left",
    ),
    Scenario(
        "br12-flattened-namespace",
        ["BR-12"],
        "What is the page title?",
        br12_tools,
        br12_calls,
        br12_want,
        note="Responses: the flattened mcp__cua_repl__js is split back to namespace mcp__cua_repl + js; "
        "other dialects declare the flat name and the dotted notation of the same server maps to it",
    ),
    Scenario(
        "br14-long-name",
        ["BR-14"],
        "Check the template.",
        lambda d: [
            CLAUDE_TOOLS[0],
            CLAUDE_TOOLS[1],
            Tool(LONG, obj("template_path", template_path=STR), "Check a CloudFormation template."),
        ],
        alias_calls([LONG], [{"template_path": "cfn.yaml"}]),
        [(LONG, {"template_path": "cfn.yaml"})],
        transcript=[(Call(LONG, {"template_path": "old.yaml"}, id="call_h1"), "compliant")],
        note="the 75-character name goes upstream as a short alias (tools and history) and every answer maps back; "
        "Anthropic via a profile forcing the 64-character gateway grammar",
    ),
    Scenario(
        "br15-invalid-characters",
        ["BR-15"],
        "Look up the function at 0x401000.",
        [
            Tool("binja.get_function", obj("address", address=STR), "Get a function."),
            Tool("user-profile/update", obj("field", "value", field=STR, value=STR), "Update a profile field."),
            CLAUDE_TOOLS[1],
        ],
        br15_calls,
        [
            ("binja.get_function", {"address": "0x401000"}),
            ("user-profile/update", {"field": "email", "value": "a@example.org"}),
        ],
        note="names outside the upstream grammar go up as aliases and come back from the map (Gemini allows the dot)",
    ),
    Scenario(
        "replayed-kimi-id",
        [],
        "And the git status?",
        [CLAUDE_TOOLS[0], CLAUDE_TOOLS[1]],
        [Call("Bash", {"command": "git status"})],
        [("Bash", {"command": "git status"})],
        transcript=[(Call("Bash", {"command": "ls"}, id="functions.Bash:0"), "a.txt")],
        dialects=("anthropic",),
        expected="leave",
        note="a replayed tool_use id Anthropic refuses (Kimi's functions.Bash:0, maximhq/bifrost#5097) goes up as one "
        "valid alias in the tool_use and its tool_result (the request's change); the answer reaches the client unchanged",
    ),
    Scenario(
        "br17-dotted-hallucination",
        ["BR-17"],
        "Search the evidence again.",
        [
            Tool("search_evidence", obj("query", query=STR), "Search the evidence store."),
            Tool("fetch_doc", obj("id", id=STR), "Fetch a document."),
        ],
        [Call("search.evidence", {"query": "q"})],
        [("search_evidence", {"query": "q"})],
        transcript=[(Call("search.evidence", {"query": "q0"}, id="call_h1"), "Unknown tool search.evidence")],
        note="the answer's search.evidence becomes search_evidence; the replayed history name is sent upstream in the grammar",
    ),
    Scenario(
        "br18-name-assembly",
        ["BR-18"],
        "Read a.py and list the files.",
        [
            Tool("read_file", obj("path", path=STR), "Read a file."),
            Tool("terminal", obj("command", command=STR), "Run a command."),
            Tool("shell_command", obj("command", command=STR), "Run a shell command."),
        ],
        br18_calls,
        br18_want,
        note="Chat stream: a name repeated in every chunk and a name split over two chunks are assembled once; "
        "everywhere: a declared name written twice collapses",
    ),
    Scenario(
        "br20-empty-ids",
        ["BR-20"],
        "Weather in Denver, Moab and Boise?",
        [Tool("get_weather", obj("city", city=STR), "Current weather.")],
        [
            Call("get_weather", {"city": "Denver"}, id=""),
            Call("get_weather", {"city": "Moab"}, id=""),
            Call("get_weather", {"city": "Boise"}, id="call_ok"),
        ],
        ["get_weather", "get_weather", "get_weather"],
        expected_in={"gemini": "leave"},
        note="empty ids get stable distinct ids; the non-empty id is kept (Gemini: no ids on the native wire, nothing to do)",
    ),
    Scenario(
        "br21-object-arguments",
        ["BR-21"],
        "Weather in Paris?",
        [Tool("get_weather", obj("location", location=STR), "Current weather.")],
        [Call("get_weather", {"location": "Paris"}, args_object=True)],
        ["get_weather"],
        dialects=("openai_chat", "openai_responses"),
        note="arguments sent as a JSON object are serialized to the string OpenAI clients expect",
    ),
    Scenario(
        "br23-xml-in-content",
        ["BR-23"],
        "Square 1024.",
        [Tool("square_the_number", obj("input_num", input_num=INT), "Square a number.")],
        [],
        [("square_the_number", {"input_num": 1024})],
        text="<tool_call>\n<function=square_the_number>\n<parameter=input_num>\n1024\n\n\n</tool_call>",
        chat_json_empty_tool_calls=True,
        note="the closed <tool_call> block of a declared function is lifted into the dialect's call (Chat tool_calls, the "
        "report's wire; Anthropic tool_use; Responses function_call; Gemini functionCall)",
    ),
    Scenario(
        "br24-kimi-markers",
        ["BR-24"],
        "Read the README.",
        [
            Tool("read_file", obj("path", path=STR), "Read a file."),
            CLINE_TOOLS[0],
            CLINE_TOOLS[2],
            CLINE_TOOLS[3],
            CLINE_TOOLS[4],
        ],
        [],
        [("read_file", {"path": "README.md"})],
        text='<|tool_calls_section_begin|><|tool_call_begin|>functions.read_file:0<|tool_call_argument_begin|>{"path":"README.md"}<|tool_call_end|><|tool_calls_section_end|>',
        note="Kimi's markers become a call read_file in every dialect (Chat, the report's wire, and Responses keep the id "
        "functions.read_file:0; Anthropic gets a stable tc_ id, its id pattern refuses the dot and colon; Gemini none)",
    ),
    # --- tool calls leaked into text, every family in every dialect --------------------
    Scenario(
        "i14-hermes-json",
        ["I14"],
        "Read the README.",
        [Tool("read_file", obj("path", path=STR), "Read a file."), CLINE_TOOLS[0]],
        [],
        [("read_file", {"path": "README.md"})],
        text='<tool_call>\n{"name": "read_file", "arguments": {"path": "README.md"}}\n</tool_call>',
        variants=("json", "sse", "array"),
        note="Hermes / Qwen2.5 JSON in <tool_call> is lifted into the dialect's call (stable id); Gemini also as a "
        "streamed JSON array",
    ),
    Scenario(
        "i14-llama-function",
        ["I14"],
        "Read the README.",
        [Tool("read_file", obj("path", path=STR), "Read a file."), CLINE_TOOLS[0]],
        [],
        [("read_file", {"path": "README.md"})],
        text='<think>\nThe user wants the README.\n</think>\n<function=read_file>{"path": "README.md"}</function>',
        note="Llama 3.1 / Functionary <function=NAME>{json}</function> after a reasoning block: the call is lifted, the "
        "reasoning block stays as text",
    ),
    Scenario(
        "i14-deepseek-markers",
        ["I14"],
        "Read the README and list the files.",
        [
            Tool("read_file", obj("path", path=STR), "Read a file."),
            Tool("list_files", obj("path", path=STR), "List a directory."),
        ],
        [],
        [("read_file", {"path": "README.md"}), ("list_files", {"path": "."})],
        text=(
            '<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>read_file\n```json\n{"path": "README.md"}\n```'
            '<｜tool▁call▁end｜>\n<｜tool▁call▁begin｜>function<｜tool▁sep｜>list_files\n```json\n{"path": "."}\n```'
            "<｜tool▁call▁end｜><｜tool▁calls▁end｜>"
        ),
        note="DeepSeek V3/R1 markers (its chat template's shape) with two calls become two calls",
    ),
    Scenario(
        "i14-minimax-invoke",
        ["I14"],
        "Read the README and list the files.",
        [
            Tool("read_file", obj("path", path=STR), "Read a file."),
            Tool("list_files", obj("path", path=STR), "List a directory."),
        ],
        [],
        [("read_file", {"path": "README.md"}), ("list_files", {"path": "."})],
        text=(
            '<minimax:tool_call>\n<invoke name="read_file">\n<parameter name="path">README.md</parameter>\n</invoke>\n'
            '<invoke name="list_files">\n<parameter name="path">.</parameter>\n</invoke>\n</minimax:tool_call>'
        ),
        note="MiniMax M2 <minimax:tool_call> with two invokes (MiniMax-AI/MiniMax-M2.5 docs/tool_calling_guide.md) becomes "
        "two calls",
    ),
    Scenario(
        "i14-dsml",
        ["I14"],
        "Read the README.",
        [Tool("read_file", obj("path", path=STR), "Read a file."), CLINE_TOOLS[0]],
        [],
        [("read_file", {"path": "README.md"})],
        text=(
            '<｜DSML｜function_calls>\n<｜DSML｜invoke name="read_file">\n'
            '<｜DSML｜parameter name="path" string="true">README.md</｜DSML｜parameter>\n</｜DSML｜invoke>\n'
            "</｜DSML｜function_calls>"
        ),
        note="DeepSeek V3.2 DSML (ochafik/minja PR #11) is lifted into the dialect's call",
    ),
    Scenario(
        "i14-harmony",
        ["I14"],
        "Read the README.",
        [Tool("read_file", obj("path", path=STR), "Read a file."), CLINE_TOOLS[0]],
        [],
        [("read_file", {"path": "README.md"})],
        text='<|channel|>commentary to=functions.read_file <|constrain|>json<|message|>{"path":"README.md"}<|call|>',
        note="gpt-oss harmony leaked with its special tokens (kekzl/imp#1716) is lifted into the dialect's call",
    ),
    Scenario(
        "i14-harmony-tokens-dropped",
        ["I14"],
        "Read the README.",
        [Tool("read_file", obj("path", path=STR), "Read a file."), CLINE_TOOLS[0]],
        [],
        [("read_file", {"path": "README.md"})],
        text='commentary to=functions.read_file json{"path":"README.md"}',
        note="gpt-oss harmony whose special tokens the server dropped (raullenchai/Rapid-MLX#480) is lifted",
    ),
    Scenario(
        "i14-harmony-then-prose",
        ["I14"],
        "Read the README.",
        [Tool("read_file", obj("path", path=STR), "Read a file.")],
        [],
        [],
        expected="leave",
        text='commentary to=functions.read_file json{"path":"README.md"} and then I summarize it.',
        note="harmony markup followed by prose stays text, byte for byte (it has no closing tag: it must be the whole answer)",
    ),
    Scenario(
        "i14-qwen-xml-opener-dropped",
        ["I14"],
        "Square 1024.",
        [Tool("square_the_number", obj("input_num", input_num=INT), "Square a number.")],
        [],
        [("square_the_number", {"input_num": 1024})],
        text="<function=square_the_number>\n<parameter=input_num>\n1024\n</parameter>\n</function>\n</tool_call>",
        note="Qwen3-Coder XML whose <tool_call> opener the server consumed (ollama/ollama#16686): the whole, closed "
        "function block is lifted (docs/never.md)",
    ),
    Scenario(
        "glued-control-tokens",
        [],
        "Read the README.",
        [Tool("read_file", {**obj("path", path=STR), "additionalProperties": False}, "Read a file."), CLINE_TOOLS[0]],
        [Call("read_file</arg_value>", {"path</arg_key>": "README.md"})],
        [("read_file", {"path": "README.md"})],
        note="GLM's control tokens glued to the name and to a key (fw-ai-external/python-sdk#119, vllm-project/vllm PR #54971) "
        "are removed: one declared name and one declared key remain",
    ),
    Scenario(
        "glued-call-token-after-json",
        [],
        "Read the README.",
        [Tool("read_file", {**obj("path", path=STR), "additionalProperties": False}, "Read a file."), CLINE_TOOLS[0]],
        [Call("read_file", '{"path": "README.md"}<|call|>')],
        [("read_file", {"path": "README.md"})],
        dialects=("openai_chat", "openai_responses"),
        note="gpt-oss's <|call|> after complete argument JSON (mastra-ai/mastra PR #12823) is removed; the JSON is whole",
    ),
    Scenario(
        "i14-markup-undeclared",
        ["I14"],
        "Delete the README.",
        [Tool("read_file", obj("path", path=STR), "Read a file.")],
        [],
        [],
        expected="leave",
        text='<tool_call>\n{"name": "delete_file", "arguments": {"path": "README.md"}}\n</tool_call>',
        note="markup naming a tool that is not declared (and resolves to none) stays text, byte for byte",
    ),
    Scenario(
        "i14-markup-fails-schema",
        ["I14"],
        "Read the README.",
        [Tool("read_file", {**obj("path", path=STR), "additionalProperties": False}, "Read a file.")],
        [],
        [],
        expected="leave",
        text='<function=read_file>{"path": 7}</function>',
        note="markup whose arguments fail the declared schema stays text, byte for byte",
    ),
    Scenario(
        "br25-json-encoded-argv",
        ["BR-25"],
        "List the files.",
        [CODEX_SHELL],
        [Call("shell", {"command": '["ls", "-la"]'}), Call("shell", {"command": "ls -la"})],
        [("shell", {"command": ["ls", "-la"]}), "shell"],
        responses_developer=True,
        note="a command that is a JSON-encoded argv is decoded to the array; a plain command string is left",
    ),
    Scenario(
        "br27-argument-keys",
        ["BR-27"],
        "List my repos and fix the typo.",
        [
            Tool("exec", obj("command", command=STR, workdir=STR), "Run a command."),
            Tool(
                "edit",
                obj("path", "oldText", "newText", path={"type": "string", "minLength": 1}, oldText=STR, newText=STR),
                "Edit a file.",
            ),
        ],
        [
            Call("exec", {"cmd": "gh repo list someone --limit 5"}),
            Call("edit", {"filePath": "src/app.ts", "oldString": "teh", "newString": "the"}),
            Call("edit", {"path": "", "filePath": "src/b.ts", "oldText": "x", "newText": ""}),
        ],
        [
            ("exec", {"command": "gh repo list someone --limit 5"}),
            ("edit", {"path": "src/app.ts", "oldText": "teh", "newText": "the"}),
            ("edit", {"path": "src/b.ts", "oldText": "x", "newText": ""}),
        ],
        note="cmd→command; filePath/oldString/newString→path/oldText/newText; an empty path (the schema wants minLength 1) "
        "is filled from filePath, an empty newText is kept",
    ),
    Scenario(
        "br28-free-tier-403",
        ["BR-28"],
        "Hello.",
        [Tool(n, obj("x", x=STR), f"The {n} tool.") for n in ("read", "bash", "edit", "write", "grep", "find", "ls")],
        [],
        [],
        expected="pass",
        status=403,
        error_body={"type": "FreeTierError", "message": "OpenCode's free tier can only be used from within OpenCode"},
        note="an access gate's 403 passes through unchanged; no tool is renamed, added or dropped on the way up",
    ),
    Scenario(
        "br30-withheld-shell",
        ["BR-30"],
        "Run the terraform plan.",
        [
            Tool("read_file", obj("absolute_path", absolute_path=STR), "Read a file."),
            Tool("search_file_content", obj("pattern", pattern=STR), "Search files."),
            Tool("save_memory", obj("fact", fact=STR), "Remember a fact."),
        ],
        [Call("run_shell_command", {"command": "make terraform-plan"})],
        ["run_shell_command"],
        expected="leave",
        variants=("json", "sse", "array"),
        note="no declared tool can run a command: the call is left for the client to reject",
    ),
    # --- a repair changes spelling, never meaning --------------------------------------
    Scenario(
        "i10-operational-key",
        ["I10"],
        "Run the tests in pkg/b.",
        [
            Tool(
                "Bash",
                {**obj("command", command=STR, description=STR, timeout=NUM), "additionalProperties": False},
                "Run a shell command.",
            ),
            CLAUDE_TOOLS[1],
        ],
        [
            Call("Bash", {"command": "npm test", "working_dir": "pkg/b"}),
            Call("shell", {"command": "npm test", "working_dir": "pkg/b"}),
        ],
        ["Bash", "shell"],
        expected="leave",
        note="working_dir has no place in Bash's closed schema: the declared call keeps it (the client reports it) and the "
        "foreign shell is not renamed; the key is never dropped",
    ),
    Scenario(
        "i10-annotation-key",
        ["I10"],
        "Rename x to y in a.py.",
        [
            Tool(
                "Edit",
                {
                    **obj("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR),
                    "additionalProperties": False,
                },
                "Replace text in a file.",
            ),
            CLAUDE_TOOLS[1],
        ],
        [
            Call(
                "replace",
                {"file_path": "/repo/a.py", "old_string": "x", "new_string": "y", "instruction": "rename x to y"},
            )
        ],
        [("Edit", {"file_path": "/repo/a.py", "old_string": "x", "new_string": "y"})],
        note="Gemini CLI's replace → Edit; its instruction (an annotation) is dropped where the schema is closed",
    ),
    Scenario(
        "i10-cross-server",
        ["I10"],
        "Run CI job 7.",
        [Tool("mcp__ci_run__job", obj("id", id=STR), "Run a CI job."), CLAUDE_TOOLS[0]],
        [Call("mcp__ci__run_job", {"id": "7"})],
        ["mcp__ci__run_job"],
        expected="leave",
        note="server ci + run_job is not server ci_run + job: separators are never folded across the server boundary",
    ),
    Scenario(
        "i10-bridge-prefix",
        ["I10"],
        "Ask the wiki.",
        [Tool("mcp__wiki__ask", obj("q", q=STR), "Ask the wiki."), CLAUDE_TOOLS[0]],
        [Call("mcp__wiki__mcp__wiki__ask", {"q": "deploy steps"})],
        [("mcp__wiki__ask", {"q": "deploy steps"})],
        note="a server prefix a bridge applied twice is collapsed within the same server",
    ),
    Scenario(
        "i10-posix-not-powershell",
        ["I10"],
        "List the files.",
        [Tool("PowerShell", obj("command", command=STR), "Run a PowerShell command."), CLAUDE_TOOLS[1]],
        [Call("shell", {"command": ["bash", "-lc", "ls -la"]}), Call("bash", {"command": "ls"})],
        ["shell", "bash"],
        expected="leave",
        note="POSIX shell calls never land on PowerShell (another shell's syntax)",
    ),
    Scenario(
        "i10-posix-to-bash",
        ["I10"],
        "List the files.",
        [
            CLAUDE_TOOLS[0],
            Tool("PowerShell", obj("command", command=STR), "Run a PowerShell command."),
            CLAUDE_TOOLS[1],
        ],
        [Call("shell", {"command": ["bash", "-lc", "ls -la"]})],
        ["shell"],
        expected="leave",
        note="with Bash and PowerShell declared, the generic name shell names two shell tools: left (a POSIX-named call such as bash still reaches Bash)",
    ),
    Scenario(
        "i10-editor-create",
        ["I10"],
        "Create a.txt.",
        [
            Tool(
                "edit",
                obj("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR),
                "Replace text in a file.",
            ),
            Tool("write_file", obj("file_path", "content", file_path=STR, content=STR), "Write a file."),
            Tool("read_file", obj("absolute_path", absolute_path=STR)),
        ],
        [Call("str_replace_editor", {"command": "create", "path": "a.txt", "file_text": "hello"})],
        ["str_replace_editor"],
        expected="leave",
        note="create refuses to overwrite; every write tool overwrites: left for the client to reject",
    ),
    Scenario(
        "i10-alias-prefix",
        ["I10"],
        "Check the template.",
        [CLAUDE_TOOLS[0], Tool(LONG, obj("template_path", template_path=STR), "Check a CloudFormation template.")],
        lambda ctx: [Call("functions." + ctx.up(LONG), {"template_path": "cfn.yaml"})],
        [(LONG, {"template_path": "cfn.yaml"})],
        dialects=("openai_chat", "openai_responses"),
        note="the model writes this flow's alias with a provider prefix: read losslessly, it still maps back (the client never sees an alias)",
    ),
    Scenario(
        "i10-empty-arguments",
        ["I10"],
        "What is on the todo list?",
        [Tool("todo_read", {"type": "object", "properties": {}}, "Read the todo list."), CLAUDE_TOOLS[0]],
        [Call("todo_read", None)],
        [("todo_read", {})],
        note="null arguments for a tool that takes an object reach the client as {}",
    ),
    Scenario(
        "i10-prose-mentions-markup",
        ["I10"],
        "How would a tool call look?",
        [Tool("read_file", obj("path", path=STR), "Read a file.")],
        [],
        [],
        expected="leave",
        text='A call looks like `<tool_call>{"name": "read_file", "arguments": {"path": "a.txt"}}</tool_call>`, but I will not run it now.',
        note="text that merely mentions tool-call markup is prose and stays prose, byte for byte",
    ),
    Scenario(
        "i10-invented-namespace",
        ["I10"],
        "List the files.",
        [Tool("exec_command", obj("cmd", cmd=STR), "Run a command.")],
        [Call("exec_command", {"cmd": "ls"}, namespace="default")],
        [("exec_command", {"cmd": "ls"})],
        dialects=("openai_responses",),
        note="a namespace the client never declared (default) on its top-level function is dropped",
    ),
    Scenario(
        "br31-duplicate-names",
        ["BR-31"],
        "Read notes.md.",
        br31_tools,
        br31_calls,
        BR31_WANT,
        note="the identical repeat of Bash is dropped; the second, different Read goes up under an alias and maps back",
    ),
]

#: Where the addon does not do what the bug report says (flow file stem -> explanation); the
#: manifest marks these ``known_issue`` and tests/test_flows.py xfails their semantic check.
KNOWN_ISSUES: dict[str, str] = {
    # Empty: every harness flow matches its bug report (the BR-06, BR-20, BR-21, BR-23, BR-24 and
    # BR-31 entries were fixed by the reverse-map, stream-record and duplicate-alias work).
}


def known_issue(name: str) -> str | None:
    import fnmatch

    return next((text for pattern, text in KNOWN_ISSUES.items() if fnmatch.fnmatch(name, pattern)), None)


# -- request bodies ----------------------------------------------------------------------------


def _jdump(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def call_id(call: Call, dialect: str, n: int) -> str:
    if call.id is not None:
        return call.id
    return {"anthropic": f"toolu_h{n:02d}", "openai_responses": f"call_h{n:02d}"}.get(dialect, f"call_h{n:02d}")


def build_request(sc: Scenario, dialect: str, stream: bool) -> dict:
    tools = sc.tools(dialect) if callable(sc.tools) else sc.tools
    model = MODELS[dialect]
    desc = lambda t: t.description or f"The {t.name} tool."  # noqa: E731
    if dialect == "anthropic":
        messages: list[dict] = [{"role": "user", "content": sc.prompt}]
        for n, (call, result) in enumerate(sc.transcript):
            cid = call_id(call, dialect, 90 + n)
            messages.append(
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": cid, "name": call.name, "input": call.args}],
                }
            )
            messages.append(
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": cid, "content": result}]}
            )
        return {
            "model": model,
            "max_tokens": 1024,
            "system": fr.NEUTRAL_SYSTEM,
            "tools": [{"name": t.flat, "description": desc(t), "input_schema": t.schema} for t in tools],
            "messages": messages,
            "stream": stream,
        }
    if dialect == "openai_chat":
        messages = [{"role": "system", "content": fr.NEUTRAL_SYSTEM}, {"role": "user", "content": sc.prompt}]
        for n, (call, result) in enumerate(sc.transcript):
            cid = call_id(call, dialect, 90 + n)
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": cid, "type": "function", "function": {"name": call.name, "arguments": _jdump(call.args)}}
                    ],
                }
            )
            messages.append({"role": "tool", "tool_call_id": cid, "content": result})
        body = {
            "model": model,
            "messages": messages,
            "tools": [
                {"type": "function", "function": {"name": t.flat, "description": desc(t), "parameters": t.schema}}
                for t in tools
            ],
            "tool_choice": "auto",
            "stream": stream,
        }
        if stream:
            body["stream_options"] = {"include_usage": True}
        return body
    if dialect == "openai_responses":
        items: list[dict] = []
        if sc.responses_developer:
            items.append(
                {"type": "message", "role": "developer", "content": [{"type": "input_text", "text": fr.NEUTRAL_SYSTEM}]}
            )
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": sc.prompt}]})
        for n, (call, result) in enumerate(sc.transcript):
            cid = call_id(call, dialect, 90 + n)
            items.append({"type": "function_call", "call_id": cid, "name": call.name, "arguments": _jdump(call.args)})
            items.append({"type": "function_call_output", "call_id": cid, "output": result})
        decls: list[dict] = []
        spaces: dict[str, dict] = {}
        for t in tools:
            fn = {"type": "function", "name": t.name, "description": desc(t), "strict": False, "parameters": t.schema}
            if t.namespace:
                if t.namespace not in spaces:
                    spaces[t.namespace] = {
                        "type": "namespace",
                        "name": t.namespace,
                        "description": f"Tools of the {t.namespace} server.",
                        "tools": [],
                    }
                    decls.append(spaces[t.namespace])
                spaces[t.namespace]["tools"].append(fn)
            else:
                decls.append(fn)
        body = {
            "model": model,
            "input": items,
            "tools": decls,
            "tool_choice": "auto",
            "parallel_tool_calls": True,
            "store": False,
            "stream": stream,
        }
        if not sc.responses_developer:
            body["instructions"] = fr.NEUTRAL_SYSTEM
        return body
    # gemini
    contents: list[dict] = [{"role": "user", "parts": [{"text": sc.prompt}]}]
    for call, result in sc.transcript:
        contents.append({"role": "model", "parts": [{"functionCall": {"name": call.name, "args": call.args}}]})
        contents.append(
            {"role": "user", "parts": [{"functionResponse": {"name": call.name, "response": {"output": result}}}]}
        )
    return {
        "contents": contents,
        "systemInstruction": {"parts": [{"text": fr.NEUTRAL_SYSTEM}]},
        "tools": [
            {
                "functionDeclarations": [
                    {"name": t.flat, "description": desc(t), "parametersJsonSchema": t.schema} for t in tools
                ]
            }
        ],
        "generationConfig": {"temperature": 0},
    }


def request_path(dialect: str, variant: str) -> str:
    if dialect == "anthropic":
        return "/v1/messages"
    if dialect == "openai_chat":
        return "/v1/chat/completions"
    if dialect == "openai_responses":
        return "/v1/responses"
    model = MODELS["gemini"]
    if variant == "json":
        return f"/v1beta/models/{model}:generateContent?key=harness-dummy-key"
    if variant == "array":
        return f"/v1beta/models/{model}:streamGenerateContent"
    return f"/v1beta/models/{model}:streamGenerateContent?alt=sse"


def request_headers(dialect: str) -> dict[str, str]:
    h = {
        "content-type": "application/json",
        "user-agent": "toolvocab-flows/1 (harness)",
        "accept-encoding": "gzip, deflate, br, zstd",
    }
    if dialect == "anthropic":
        h.update({"anthropic-version": "2023-06-01", "x-api-key": "sk-ant-harness-dummy"})
    elif dialect in ("openai_chat", "openai_responses"):
        h["authorization"] = "Bearer sk-harness-dummy"
    else:
        h["x-goog-api-key"] = "harness-dummy-key"
    return h


# -- upstream answers ----------------------------------------------------------------------------


def args_text(call: Call) -> str:
    return call.args if isinstance(call.args, str) else _jdump(call.args)


def anthropic_answer(sc: Scenario, calls: list[Call], stream: bool) -> bytes:
    model = MODELS["anthropic"]
    blocks: list[dict] = []
    if sc.text:
        blocks.append({"type": "text", "text": sc.text})
    for n, c in enumerate(calls):
        blocks.append({"type": "tool_use", "id": call_id(c, "anthropic", n + 1), "name": c.name, "input": c.args})
    stop = "tool_use" if calls else "end_turn"
    message = anthropic_message("msg_harness01", model, blocks, stop, {"input_tokens": 120, "output_tokens": 30})
    if not stream:
        return _jdump(message).encode()
    return sse(message_events(message, text_pieces=3, json_pieces=3, json_text=_jdump))


# Anthropic and Responses answers come from the fake upstream's builders (fakeup.anthropic,
# fakeup.openai_responses), Gemini's candidates, SSE and JSON-array framing from fakeup.gemini.
# Chat keeps its own: the harness writes the reports' stream shapes (a name repeated in every chunk
# or split over two, arguments as an object) in the committed flows' byte layout, while
# fakeup.openai_chat writes OpenAI's own stream (role and the call in one first chunk, logprobs).
def chat_answer(sc: Scenario, calls: list[Call], stream: bool) -> bytes:
    model = MODELS["openai_chat"]
    base = {"id": "chatcmpl-harness01", "created": CREATED, "model": model}
    usage = {"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150}
    finish = "tool_calls" if calls else "stop"
    if not stream:
        tool_calls = [
            {
                "id": call_id(c, "openai_chat", n + 1),
                "type": "function",
                "function": {"name": c.name, "arguments": c.args if c.args_object else args_text(c)},
            }
            for n, c in enumerate(calls)
        ]
        message: dict[str, Any] = {"role": "assistant", "content": sc.text}
        if tool_calls or sc.chat_json_empty_tool_calls:
            message["tool_calls"] = tool_calls
        return _jdump(
            {
                **base,
                "object": "chat.completion",
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": usage,
            }
        ).encode()

    def chunk(delta: dict, finish_reason: str | None = None) -> dict:
        return {
            **base,
            "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish_reason}],
        }

    ev: list[tuple[str | None, Any]] = [(None, chunk({"role": "assistant", "content": ""}))]
    for p in pieces(sc.text or "", 4):
        ev.append((None, chunk({"content": p})))
    for n, c in enumerate(calls):
        cid = call_id(c, "openai_chat", n + 1)
        if c.args_object:
            ev.append(
                (
                    None,
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": n,
                                    "id": cid,
                                    "type": "function",
                                    "function": {"name": c.name, "arguments": c.args},
                                }
                            ]
                        }
                    ),
                )
            )
            continue
        frags = pieces(args_text(c), 3)
        if c.stream_name == "split":
            half = max(1, len(c.name) // 2)
            ev.append(
                (
                    None,
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": n,
                                    "id": cid,
                                    "type": "function",
                                    "function": {"name": c.name[:half], "arguments": ""},
                                }
                            ]
                        }
                    ),
                )
            )
            ev.append(
                (
                    None,
                    chunk({"tool_calls": [{"index": n, "function": {"name": c.name[half:], "arguments": frags[0]}}]}),
                )
            )
            frags = frags[1:]
        else:
            ev.append(
                (
                    None,
                    chunk(
                        {
                            "tool_calls": [
                                {
                                    "index": n,
                                    "id": cid,
                                    "type": "function",
                                    "function": {"name": c.name, "arguments": ""},
                                }
                            ]
                        }
                    ),
                )
            )
        for f in frags:
            fn: dict[str, Any] = {"arguments": f}
            entry: dict[str, Any] = {"index": n, "function": fn}
            if c.stream_name == "repeat":
                fn["name"] = c.name
                entry = {"index": n, "id": cid, "type": "function", "function": {"name": c.name, "arguments": f}}
            ev.append((None, chunk({"tool_calls": [entry]})))
    ev.append((None, chunk({}, finish)))
    ev.append((None, {**base, "object": "chat.completion.chunk", "choices": [], "usage": usage}))
    ev.append((None, "[DONE]"))
    return sse(ev)


def _responses_item(c: Call, n: int) -> dict:
    item: dict[str, Any] = {
        "id": f"fc_harness{n:02d}",
        "type": "function_call",
        "status": "completed",
        "arguments": c.args if c.args_object else args_text(c),
        "call_id": call_id(c, "openai_responses", n),
        "name": c.name,
    }
    if c.namespace:
        item["namespace"] = c.namespace
    return item


def responses_answer(sc: Scenario, calls: list[Call], stream: bool, echo_tools: list[dict]) -> bytes:
    model = MODELS["openai_responses"]
    output: list[dict] = []
    if sc.text:
        output.append(
            {
                "id": "msg_harness00",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": sc.text, "annotations": []}],
            }
        )
    output += [_responses_item(c, n + 1) for n, c in enumerate(calls)]
    resp = {
        "id": "resp_harness01",
        "object": "response",
        "created_at": CREATED,
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": echo_tools,
        "usage": {"input_tokens": 120, "output_tokens": 30, "total_tokens": 150},
    }
    if not stream:
        return _jdump(resp).encode()
    return sse(response_events(resp, text_pieces=4, args_pieces=3))


def gemini_answer(sc: Scenario, calls: list[Call], variant: str) -> bytes:
    model = MODELS["gemini"]
    usage = {"promptTokenCount": 120, "candidatesTokenCount": 30, "totalTokenCount": 150}
    parts: list[dict] = []
    if sc.text:
        parts.append({"text": sc.text})
    parts += [{"functionCall": {"name": c.name, "args": c.args}} for c in calls]

    def resp(ps: list[dict], finish: bool) -> dict:
        # usageMetadata last and on the final response only (the fake upstream's go first, on every one)
        out: dict[str, Any] = {
            "candidates": [gemini_candidate(ps, finish)],
            "modelVersion": model,
            "responseId": "harness-resp-01",
        }
        if finish:
            out["usageMetadata"] = usage
        return out

    if variant == "json":
        return _jdump(resp(parts, True)).encode()
    chunks = [resp([p], i == len(parts) - 1) for i, p in enumerate(parts)] or [resp([{"text": ""}], True)]
    if variant == "array":
        return b"".join(json_array_chunks(chunks, sep=b",\r\n", close=b"]"))
    return gemini_sse(chunks)


def upstream_answer(
    sc: Scenario, dialect: str, variant: str, calls: list[Call], echo_tools: list[dict]
) -> tuple[int, dict, bytes]:
    stream = variant != "json"
    if sc.status != 200:
        return sc.status, {"Content-Type": "application/json"}, _jdump(sc.error_body or {}).encode()
    if dialect == "anthropic":
        body = anthropic_answer(sc, calls, stream)
    elif dialect == "openai_chat":
        body = chat_answer(sc, calls, stream)
    elif dialect == "openai_responses":
        body = responses_answer(sc, calls, stream, echo_tools)
    else:
        body = gemini_answer(sc, calls, variant)
    if not stream or variant == "array":
        ctype = "application/json"
    else:
        ctype = "text/event-stream; charset=utf-8" if dialect != "gemini" else "text/event-stream"
    return 200, {"Content-Type": ctype, "Cache-Control": "no-cache"}, body


# -- the addon's request-side plan (names the upstream is given) ----------------------------------


def upstream_plan(
    dialect: str, path: str, body: dict, profiles_toml: str | None
) -> tuple[dict[str, str], dict[str, list[str | None]]]:
    import toolvocab.dialects as tvdialects
    from toolvocab.engine.grammar import grammar_for
    from toolvocab.engine.ladder import Toolset
    from toolvocab.engine.plan import make_plan
    from toolvocab.engine.profiles import load_profiles

    d = tvdialects.by_name(dialect)
    assert d is not None
    profile = None
    if profiles_toml:
        with tempfile.NamedTemporaryFile("w", suffix=".toml", delete=False) as fp:
            fp.write(profiles_toml)
        try:
            profile = load_profiles(fp.name).select(HOST, path, d.model_of(path, body))
        finally:
            Path(fp.name).unlink()
    grammar = grammar_for(d.name, HOST, profile.grammar if profile else None)
    plan = make_plan(
        Toolset(d.declared_tools(body)),
        d.system_texts(body),
        add_sentence=False,
        grammar=grammar,
        profile=profile,
        transcript_names=d.transcript_names(body),
    )
    return dict(plan.rename_map), dict(plan.duplicates)


def responses_echo(body: dict, rename_map: dict[str, str]) -> list[dict]:
    """The ``tools`` a Responses upstream echoes: what it was given (names as sent upstream)."""
    from toolvocab.engine.names import join_namespace
    from toolvocab.engine.names import split_flat

    tools = copy.deepcopy(body.get("tools") or [])
    for t in tools:
        if t.get("type") == "function" and t.get("name") in rename_map:
            t["name"] = rename_map[t["name"]]
        for inner in t.get("tools") or ():
            flat = join_namespace(t.get("name"), inner.get("name"))
            if flat in rename_map:
                inner["name"] = split_flat(t.get("name"), rename_map[flat])
    return tools


# -- running the harness ---------------------------------------------------------------------------


@dataclasses.dataclass
class Planned:
    name: str
    sc: Scenario
    dialect: str
    variant: str
    path: str
    body: dict
    status: int
    headers: dict
    answer: bytes
    want: list[str]


def plan_all() -> list[Planned]:
    out = []
    for sc in SCENARIOS:
        for dialect in sc.dialects:
            for variant in sc.variants:
                if variant == "array" and dialect != "gemini":
                    continue
                stream = variant != "json"
                profile = sc.profile or ("gateway64" if sc.key.startswith("br14") and dialect == "anthropic" else None)
                body = build_request(sc, dialect, stream)
                path = request_path(dialect, variant)
                rename_map, duplicates = upstream_plan(dialect, path, body, PROFILES.get(profile) if profile else None)
                ctx = Ctx(dialect, stream, rename_map, duplicates)
                calls = sc.calls(ctx) if callable(sc.calls) else sc.calls
                want = want_keys(sc.want(ctx) if callable(sc.want) else sc.want, calls, dialect)
                echo = responses_echo(body, rename_map) if dialect == "openai_responses" else []
                status, headers, answer = upstream_answer(sc, dialect, variant, calls, echo)
                sc_run = dataclasses.replace(sc, profile=profile)
                out.append(
                    Planned(
                        f"{sc.key}-{dialect}-{variant}",
                        sc_run,
                        dialect,
                        variant,
                        path,
                        body,
                        status,
                        headers,
                        answer,
                        want,
                    )
                )
    return out


def want_keys(want: Want, calls: list[Call], dialect: str) -> list[str]:
    keys = []
    for n, w in enumerate(want):
        name, args = (w, calls[n].args) if isinstance(w, str) else w
        if isinstance(args, str) and dialect != "gemini":
            args = json.loads(args)
        keys.append(fr.Call(name, args).key())
    return keys


def send(url: str, p: Planned) -> tuple[int, bytes]:
    data = json.dumps(p.body, ensure_ascii=False).encode()
    req = urllib.request.Request(url + p.path, data=data, method="POST", headers=request_headers(p.dialect))
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(req, timeout=30) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def record_all(planned: list[Planned], workdir: Path) -> dict[str, Any]:
    """Send every planned request through a real mitmdump + addon in front of the fake upstream."""
    groups: dict[tuple[str, str | None], list[Planned]] = {}
    for p in planned:
        groups.setdefault((p.sc.mode, p.sc.profile), []).append(p)
    flows: dict[str, Any] = {}
    fake = procs.start_fake_upstream()
    try:
        for n, ((mode, profile), items) in enumerate(sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or ""))):
            options = {"toolvocab_mode": mode, "confdir": str(workdir / f"conf-{n}")}
            if profile:
                prof_path = workdir / f"{profile}.toml"
                prof_path.write_text(PROFILES[profile])
                options["toolvocab_profiles"] = str(prof_path)
            save = workdir / f"group-{n}.mitm"
            mitm = procs.start_mitmdump(fake.url, options=options, save_path=save)
            try:
                for p in items:
                    chunk = 37 if p.variant != "json" and p.status == 200 else 0
                    fake.enqueue(p.answer, status=p.status, headers=p.headers, chunk_size=chunk)
                    status, _ = send(mitm.url, p)
                    if status != p.status:
                        raise SystemExit(
                            f"{p.name}: client got {status}, upstream answered {p.status}\n{mitm.output()}"
                        )
                saved = mitm.flows()
            finally:
                mitm.stop()
            if len(saved) != len(items):
                raise SystemExit(
                    f"group {mode}/{profile}: {len(saved)} flows saved for {len(items)} requests\n{mitm.output()}"
                )
            for p, f in zip(items, saved):
                sent = json.loads(fr.original_request(f))
                if sent != p.body:
                    raise SystemExit(f"{p.name}: saved flow does not hold the request sent (order mix-up?)")
                f.metadata[fr.META_REPLAY] = {"mode": mode, **({"profiles": PROFILES[profile]} if profile else {})}
                flows[p.name] = f
    finally:
        fake.stop()
    return flows


def write_harness(planned: list[Planned], flows: dict[str, Any], only: bool = False) -> list[str]:
    """Write the planned flows and their manifest entries; with ``only``, the other harness
    flows and entries stay as they are (else every harness flow is written anew)."""
    problems: list[str] = []
    names = {p.name for p in planned}
    if HARNESS_DIR.exists():
        for old in HARNESS_DIR.glob("*.mitm"):
            if not only or old.stem in names:
                old.unlink()
    manifest = fr.read_manifest()
    manifest["flows"] = {
        k: v
        for k, v in manifest["flows"].items()
        if v.get("source") != "harness" or (only and Path(k).stem not in names)
    }
    with fr.Replayer() as r:
        for p in planned:
            f = flows[p.name]
            path = HARNESS_DIR / f"{p.name}.mitm"
            fr.write_flows(path, [f])
            saved = fr.load_flows(path)[0]
            for seed in range(5):
                res = r.replay(saved, seed)
                if not res.ok:
                    problems.append(f"{p.name}: the live run and the replay differ\n" + fr.render_failure(saved, res))
                    break
            leaks = fr.leaks(path)
            if leaks:
                problems.append(f"{p.name}: leaks: {leaks}")
            entry = fr.manifest_entry(
                saved,
                source="harness",
                bugs=p.sc.bugs,
                expected=p.sc.expected_in.get(
                    f"{p.dialect}-{p.variant}", p.sc.expected_in.get(p.dialect, p.sc.expected)
                ),
                note=p.sc.note,
            )
            got = entry["client_calls"]
            entry["client_calls"] = p.want
            issue = known_issue(p.name)
            semantic = fr.semantic_problems(saved, entry)
            if semantic and issue:
                entry["known_issue"] = issue
            elif semantic:
                entry["known_issue"] = "; ".join(semantic)
                problems.append(f"{p.name}: {'; '.join(semantic)}")
            elif issue:
                problems.append(f"{p.name}: listed in KNOWN_ISSUES but matches the bug report now (client gets {got})")
            manifest["flows"][fr.rel(path)] = entry
    manifest["required_bugs"] = sorted({b for sc in SCENARIOS for b in sc.bugs})
    manifest["required_agents"] = ["claude-code", "codex", "gemini-cli", "opencode", "qwen-code"]
    fr.write_manifest(
        {k: manifest[k] for k in ("required_bugs", "required_agents", "flows")}, header=fr.MANIFEST_HEADER
    )
    return problems


# -- real agents ---------------------------------------------------------------------------------

AGENT_RUNS = {
    # agent name -> (e2e test file, flow file glob, bug kinds the run exemplifies)
    "claude-code": ("test_claude_code.py", "flows-claude-auto-*.mitm", []),
    "codex": ("test_codex.py", "flows-codex-auto-*.mitm", []),
    "gemini-cli": ("test_gemini_cli.py", "flows-gemini-auto-*.mitm", ["BR-03"]),
    "opencode": ("test_opencode.py", "flows-opencode-auto-*.mitm", ["BR-27"]),
    "qwen-code": ("test_qwen_code.py", "flows-qwen-auto-*.mitm", ["BR-03"]),
}


def make_agents(only: list[str]) -> int:
    names = only or sorted(AGENT_RUNS)
    base = Path(tempfile.mkdtemp(prefix="toolvocab-agent-flows-"))
    status = 0
    try:
        for name in names:
            test_file, pattern, bugs = AGENT_RUNS[name]
            tmp = base / name
            cmd = [
                "uv",
                "run",
                "--extra",
                "test",
                "pytest",
                "-m",
                "e2e",
                "-k",
                "auto_mode",
                "-p",
                "no:cacheprovider",
                "--basetemp",
                str(tmp),
                str(TESTS / "e2e" / test_file),
            ]
            print("$", " ".join(cmd), flush=True)
            res = subprocess.run(cmd, cwd=REPO)
            if res.returncode != 0:
                print(f"{name}: the e2e run failed (rc {res.returncode}); not adopting its flows")
                status = 1
                continue
            files = sorted(tmp.glob(f"*/{pattern}"))
            if not files:
                print(f"{name}: no flow file found under {tmp}")
                status = 1
                continue
            for old in AGENTS_DIR.glob(f"{name}-*.mitm"):
                old.unlink()
            manifest = fr.read_manifest()
            manifest["flows"] = {k: v for k, v in manifest["flows"].items() if not k.startswith(f"agents/{name}-")}
            fr.write_manifest(manifest, header=fr.MANIFEST_HEADER)
            cmd = [
                sys.executable,
                str(TESTS / "flowtool.py"),
                "add",
                str(files[0]),
                name,
                "--folder",
                "agents",
                "--source",
                f"agent:{name}",
            ] + [a for b in bugs for a in ("--bug", b)]
            print("$", " ".join(cmd), flush=True)
            status |= subprocess.run(cmd, cwd=REPO).returncode
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return status


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("what", nargs="?", default="harness", choices=("harness", "agents"))
    p.add_argument("agents", nargs="*", help="with 'agents': which ones (default all)")
    p.add_argument("--list", action="store_true", help="list the harness flows and exit")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="SCENARIO",
        help="record only these scenarios (their key, e.g. i14-dsml; repeatable); the other flows stay",
    )
    ns = p.parse_args(argv)
    if ns.what == "agents":
        return make_agents(ns.agents)
    planned = plan_all()
    if ns.only:
        unknown = set(ns.only) - {sc.key for sc in SCENARIOS}
        if unknown:
            p.error(f"no scenario {sorted(unknown)}")
        planned = [pl for pl in planned if pl.sc.key in ns.only]
    if ns.list:
        for pl in planned:
            print(f"{pl.name:55} {pl.sc.expected:7} {','.join(pl.sc.bugs):6} want {pl.want}")
        return 0
    with tempfile.TemporaryDirectory(prefix="toolvocab-make-flows-") as tmp:
        flows = record_all(planned, Path(tmp))
        problems = write_harness(planned, flows, only=bool(ns.only))
    print(f"wrote {len(planned)} harness flows to {HARNESS_DIR.relative_to(REPO)} and flows/MANIFEST.toml")
    for problem in problems:
        print("PROBLEM:", problem)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
