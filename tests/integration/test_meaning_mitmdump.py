"""A repair changes spelling, never meaning, through a real mitmdump with the addon.

One fake upstream and one ``mitmdump -s addon/toolvocab.py`` (reverse mode) serve the module;
the official SDKs (``anthropic`` for Messages, ``openai`` for Chat Completions and Responses)
play the client, JSON and streamed, with the upstream's answer split in 7-byte transport chunks.
Each case checks the tool call the SDK received: the declared tool the model must have meant,
with the arguments it sent (lossless changes only) — or, when that cannot be sure, the call
exactly as the upstream sent it.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import procs
from sdk import anthropic_client
from sdk import openai_client

pytestmark = pytest.mark.integration


def schema(*required: str, closed: bool = False, **props: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props, "required": list(required)}
    if closed:
        out["additionalProperties"] = False
    return out


STR = {"type": "string"}
# Claude-Code-shaped tools: closed schemas (additionalProperties: false), as Claude Code declares them.
BASH = ("Bash", schema("command", closed=True, command=STR, description=STR, timeout={"type": "number"}))
POWERSHELL = ("PowerShell", schema("command", closed=True, command=STR, description=STR))
READ = ("Read", schema("file_path", closed=True, file_path=STR))
WRITE = ("Write", schema("file_path", "content", closed=True, file_path=STR, content=STR))
EDIT = (
    "Edit",
    schema("file_path", "old_string", "new_string", closed=True, file_path=STR, old_string=STR, new_string=STR),
)
CI_RUN_JOB = ("mcp__ci_run__job", schema("id", id=STR))
GH_ISSUE = (
    "mcp__github__create_issue",
    schema("owner", "repo", "title", closed=True, owner=STR, repo=STR, title=STR, body=STR),
)
WIKI_ASK = ("mcp__wiki__ask", schema("q", q=STR))
LONG = (
    "mcp__plugin_deploy_on_aws_awsiac__check_cloudformation_template_compliance",
    schema("template_path", template_path=STR),
)

# (case id, declared tools, upstream name, upstream arguments, the call the client must receive)
# The expected call is written from the issue's rules, never produced by the addon.
CASES: list[tuple[str, list[tuple[str, dict]], str, dict[str, Any], tuple[str, dict[str, Any]]]] = [
    # kind 1: an operational key is never dropped
    (
        "declared-extra-key",
        [BASH, READ],
        "Bash",
        {"command": "npm test", "working_dir": "pkg/b"},
        ("Bash", {"command": "npm test", "working_dir": "pkg/b"}),
    ),
    (
        "capability-extra-key",
        [BASH, READ],
        "shell",
        {"command": "npm test", "working_dir": "pkg/b"},
        ("shell", {"command": "npm test", "working_dir": "pkg/b"}),
    ),
    (
        "write-append",
        [WRITE, READ],
        "write_file",
        {"file_path": "/a", "content": "x", "append": True},
        ("write_file", {"file_path": "/a", "content": "x", "append": True}),
    ),
    (
        "own-tool-description-kept",
        [GH_ISSUE, BASH],
        "mcp__github__create_issue",
        {"owner": "o", "repo": "r", "title": "Crash", "description": "Steps: run X. Actual: segfault."},
        (
            "mcp__github__create_issue",
            {"owner": "o", "repo": "r", "title": "Crash", "description": "Steps: run X. Actual: segfault."},
        ),
    ),
    (
        "zsh-body-quoted",
        [BASH, READ],
        "shell",
        {"command": ["zsh", "-c", "for f in $F; do rm $f; done"]},
        ("Bash", {"command": "zsh -c 'for f in $F; do rm $f; done'"}),
    ),
    (
        "annotation-dropped",
        [EDIT, READ],
        "replace",
        {"file_path": "/a", "old_string": "x", "new_string": "y", "instruction": "rename x"},
        ("Edit", {"file_path": "/a", "old_string": "x", "new_string": "y"}),
    ),
    # kind 2: namespaces
    ("other-server", [CI_RUN_JOB, BASH], "mcp__ci__run_job", {"id": "7"}, ("mcp__ci__run_job", {"id": "7"})),
    ("doubled-prefix", [WIKI_ASK, BASH], "mcp__wiki__mcp__wiki__ask", {"q": "x"}, ("mcp__wiki__ask", {"q": "x"})),
    # kind 3: one shell's syntax never sent to another
    # Bash and PowerShell both declared: a generic shell name names two tools, whatever the argv says
    (
        "generic-shell-two-shells",
        [BASH, POWERSHELL, READ],
        "shell",
        {"command": ["bash", "-lc", "ls -la | wc -l"]},
        ("shell", {"command": ["bash", "-lc", "ls -la | wc -l"]}),
    ),
    (
        "posix-to-bash",
        [BASH, READ],
        "shell",
        {"command": ["bash", "-lc", "ls -la | wc -l"]},
        ("Bash", {"command": "ls -la | wc -l"}),
    ),
    (
        "posix-not-to-powershell",
        [POWERSHELL, READ],
        "shell",
        {"command": ["bash", "-lc", "ls"]},
        ("shell", {"command": ["bash", "-lc", "ls"]}),
    ),
    ("bash-not-to-powershell", [POWERSHELL, READ], "bash", {"command": "ls"}, ("bash", {"command": "ls"})),
    # kind 4: create is not a write
    (
        "editor-create",
        [WRITE, READ, EDIT],
        "str_replace_editor",
        {"command": "create", "path": "/a", "file_text": "x"},
        ("str_replace_editor", {"command": "create", "path": "/a", "file_text": "x"}),
    ),
    (
        "editor-view",
        [WRITE, READ, EDIT],
        "str_replace_editor",
        {"command": "view", "path": "/a"},
        ("Read", {"file_path": "/a"}),
    ),
]


#: sent to the fake upstream by the ``fake_and_proxy`` fixture (tests/conftest.py)
FAKE_CONFIG = {"chunk_size": 7}


def anthropic_call(px: procs.MitmdumpHandle, tools: list[tuple[str, dict]], stream: bool) -> tuple[str, dict]:
    client = anthropic_client(px.url)
    kwargs = dict(
        model="claude-test",
        max_tokens=64,
        system="Test.",
        tools=[{"name": n, "description": "t", "input_schema": s} for n, s in tools],
        messages=[{"role": "user", "content": "go"}],
    )
    if stream:
        with client.messages.stream(**kwargs) as s:
            msg = s.get_final_message()
    else:
        msg = client.messages.create(**kwargs)
    (block,) = [b for b in msg.content if b.type == "tool_use"]
    assert msg.stop_reason == "tool_use"
    return block.name, dict(block.input)


def chat_call(px: procs.MitmdumpHandle, tools: list[tuple[str, dict]], stream: bool) -> tuple[str, dict]:
    client = openai_client(px.url)
    kwargs = dict(
        model="gpt-test",
        messages=[{"role": "user", "content": "go"}],
        tools=[{"type": "function", "function": {"name": n, "description": "t", "parameters": s}} for n, s in tools],
    )
    if stream:
        name, args, finish = "", "", None
        for chunk in client.chat.completions.create(stream=True, **kwargs):
            for choice in chunk.choices:
                for tc in choice.delta.tool_calls or []:
                    name += tc.function.name or "" if tc.function else ""
                    args += tc.function.arguments or "" if tc.function else ""
                finish = choice.finish_reason or finish
    else:
        resp = client.chat.completions.create(**kwargs)
        (tc,) = resp.choices[0].message.tool_calls
        name, args, finish = tc.function.name, tc.function.arguments, resp.choices[0].finish_reason
    assert finish == "tool_calls"
    return name, json.loads(args)


def responses_call(px: procs.MitmdumpHandle, tools: list[tuple[str, dict]], stream: bool) -> tuple[str, dict]:
    client = openai_client(px.url)
    kwargs = dict(
        model="gpt-test",
        input="go",
        tools=[{"type": "function", "name": n, "description": "t", "parameters": s, "strict": False} for n, s in tools],
    )
    if stream:
        done = None
        for event in client.responses.create(stream=True, **kwargs):
            if event.type == "response.completed":
                done = event.response
        assert done is not None
        resp = done
    else:
        resp = client.responses.create(**kwargs)
    (item,) = [o for o in resp.output if o.type == "function_call"]
    return item.name, json.loads(item.arguments)


CLIENTS = {"anthropic": anthropic_call, "openai_chat": chat_call, "openai_responses": responses_call}


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("dialect", sorted(CLIENTS))
@pytest.mark.parametrize(("case", "tools", "name", "args", "want"), CASES, ids=[c[0] for c in CASES])
def test_the_client_runs_what_the_model_meant(fake_and_proxy, dialect, stream, case, tools, name, args, want):
    fake, px = fake_and_proxy
    fake.config(tool_name=name, tool_args=args)
    got = CLIENTS[dialect](px, tools, stream)
    assert got == want, f"{case}: upstream answered {name} {args}"


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("prefix", ["functions.", " ", "default_api:"])
def test_an_alias_read_losslessly_never_reaches_the_client(fake_and_proxy, stream, prefix):
    # kind 6: OpenAI-format names are limited to 64 characters, so LONG goes upstream as an
    # alias; a model that writes the alias with a provider prefix still gets the client's name.
    fake, px = fake_and_proxy
    fake.config(tool_name="re:^mcp__", tool_args={"template_path": "cfn.yaml"})
    before = len(fake.requests())
    assert chat_call(px, [LONG, BASH], False) == (LONG[0], {"template_path": "cfn.yaml"})
    sent = fake.wait_requests(before + 1)[before]["body"]
    alias = sent["tools"][0]["function"]["name"]
    assert alias != LONG[0] and len(alias) <= 64
    fake.config(tool_name=prefix + alias)
    assert chat_call(px, [LONG, BASH], stream) == (LONG[0], {"template_path": "cfn.yaml"})


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_an_invented_responses_namespace_is_dropped(fake_and_proxy, stream):
    # kind 2: `default/exec_command` answers a function_call with namespace "default", which
    # the client never declared; the call reaches it as its top-level exec_command.
    fake, px = fake_and_proxy
    fake.config(tool_name="default/exec_command", tool_args={"cmd": "ls"})
    client = openai_client(px.url)
    tools = [{"type": "function", "name": "exec_command", "parameters": schema("cmd", cmd=STR), "strict": False}]
    if stream:
        with client.responses.with_streaming_response.create(
            model="gpt-test", input="go", tools=tools, stream=True
        ) as r:
            raw = b"".join(r.iter_bytes())
        done = [
            json.loads(line[6:])
            for line in raw.splitlines()
            if line.startswith(b"data: ") and b"response.completed" in line
        ]
        output = done[-1]["response"]["output"]
    else:
        r = client.responses.with_raw_response.create(model="gpt-test", input="go", tools=tools)
        output = json.loads(r.http_response.content)["output"]
    (item,) = [o for o in output if o["type"] == "function_call"]
    assert item["name"] == "exec_command" and "namespace" not in item, item
