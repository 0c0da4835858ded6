"""A command moved between shells starts where the model's own tool would have started it.

Claude Code's ``Bash`` keeps the working directory from one call to the next (its 2.1.197
description: "The working directory persists between commands"); Codex's ``exec_command`` starts
each call in a new process. After a ``Bash`` call that ran ``cd src``, an ``exec_command`` moved to
``Bash`` would run in ``src``, where Codex would not: such a call is left as sent. What ran before
is read from the request's transcript (each dialect's ``transcript_calls``) and from the calls
before it in the same answer; a Responses request that continues a kept response does not carry
its earlier calls, so where the call would start is not known. Through the addon's hooks
(``tests/harness``), with the body read whole (something saves the flow) and only peeked (plain
mitmdump); the controls, without the ``cd``, are repaired.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest

import harness
from harness.dialects import sse_events
from harness.fixtures import loaded  # noqa: F401  (pytest fixture)
from toolvocab import dialects
from toolvocab.report import METADATA_KEY

SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]}
CLAUDE = [("content-type", "application/json"), ("user-agent", "claude-cli/2.1.197 (external, sdk-cli)")]
PATH = {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]}
CC_TOOLS = {
    "Bash": {"name": "Bash", "description": "Run a command", "input_schema": SCHEMA},
    "Read": {"name": "Read", "description": "Read a file", "input_schema": PATH},
}


@pytest.fixture(params=["whole", "peeked"])
def addon(loaded, request):
    """The repair addon; ``peeked``: as plain mitmdump runs it (nothing saves or shows flows)."""
    with harness.configured(loaded) as e:
        if request.param == "peeked":
            e.addon.recorder.saves_bodies = lambda: False
        yield e.addon


def anthropic(
    addon,
    history: list[str | tuple[str, dict[str, Any]]],
    answer: list[dict[str, Any]],
    tools: tuple[str, ...] = ("Bash",),
    user: Any = "build it",
) -> tuple[list[dict[str, Any]], dict]:
    """Claude Code's request declaring ``tools`` (of ``CC_TOOLS``), the user's ``user`` content,
    then a transcript of ``Bash`` calls running ``history`` (or ``(name, input)`` of another
    tool's), answered with ``answer``'s blocks: the blocks the client got, and the flow's record."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": user}]
    for i, command in enumerate(history):
        name, given = command if isinstance(command, tuple) else ("Bash", {"command": command})
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": given}]}
        )
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "ok"}]}
        )
    body = {
        "model": "claude-x",
        "max_tokens": 10,
        "system": "Use Bash.",
        "tools": [CC_TOOLS[name] for name in tools],
        "messages": messages,
    }
    upstream = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "stop_reason": "tool_use",
        "content": answer,
    }
    f = harness.json_flow(
        addon, body, orjson.dumps(upstream), host="api.anthropic.com", path="/v1/messages", headers=CLAUDE
    )
    return json.loads(f.response.content)["content"], f.metadata[METADATA_KEY]


def event(data: dict[str, Any]) -> bytes:
    return f"event: {data['type']}\ndata: ".encode() + orjson.dumps(data) + b"\n\n"


def streamed(loaded, first: str, *, overlap: bool) -> tuple[list[str], list[str]]:
    """Claude Code's stream of two tool_use blocks, ``Bash`` running ``first`` then
    ``exec_command make``; with ``overlap`` the second starts before the first stops (events
    out of order: the first goes through undecided). The names the client got (by index) and
    the record's decisions (name, action)."""
    start = [
        {"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": f"t{i}", "name": n}}
        for i, n in enumerate(["Bash", "exec_command"])
    ]
    delta = [
        {"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": j}}
        for i, j in enumerate([json.dumps({"command": first}), '{"cmd":"make"}'])
    ]
    stop = [{"type": "content_block_stop", "index": i} for i in range(2)]
    blocks = (
        [start[0], start[1], delta[0], delta[1], stop[0], stop[1]]
        if overlap
        else [start[0], delta[0], stop[0], start[1], delta[1], stop[1]]
    )
    message = {"id": "m", "type": "message", "role": "assistant", "content": [], "model": "claude-x"}
    events = [
        {"type": "message_start", "message": message},
        *blocks,
        {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {"output_tokens": 1}},
        {"type": "message_stop"},
    ]
    body = {
        "model": "claude-x",
        "max_tokens": 10,
        "stream": True,
        "system": "Use Bash.",
        "tools": [{"name": "Bash", "description": "Run a command", "input_schema": SCHEMA}],
        "messages": [{"role": "user", "content": "build"}],
    }
    with harness.configured(loaded) as e:
        f = harness.make_flow(
            body,
            host="api.anthropic.com",
            path="/v1/messages",
            headers=CLAUDE,
            upstream=b"".join(map(event, events)),
            resp_type="text/event-stream",
        )
        r = harness.replay(e, f)
    names = {}
    for ev in sse_events(r.out):
        data = ev.json()
        if isinstance(data, dict) and data.get("type") == "content_block_start":
            names[data["index"]] = data["content_block"]["name"]
    return [names[i] for i in sorted(names)], [(d["name"], d["action"]) for d in r.record["decisions"]]


def test_a_call_the_stream_let_through_undecided_makes_the_past_unknown(loaded) -> None:
    # the first block is passed as it came (events out of order): its cd is never read
    names, decisions = streamed(loaded, "cd src", overlap=True)
    assert names == ["Bash", "exec_command"] and decisions[-1] == ("exec_command", "leave"), decisions
    names, decisions = streamed(loaded, "ls", overlap=True)
    assert names == ["Bash", "exec_command"], decisions  # even a harmless one: it was not read
    # the controls, in order: the first is read
    assert streamed(loaded, "cd src", overlap=False)[0] == ["Bash", "exec_command"]
    assert streamed(loaded, "ls", overlap=False)[0] == ["Bash", "Bash"]


def use(name: str, arguments: dict[str, Any], call_id: str = "toolu_9") -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


@pytest.mark.parametrize("history", [["cd src && make"], ["ls", "pushd build"]])
def test_after_a_bash_call_that_changed_directory_exec_command_is_left(addon, history) -> None:
    got, record = anthropic(addon, history, [use("exec_command", {"cmd": "make"})])
    assert got == [use("exec_command", {"cmd": "make"})]
    (decision,) = record["decisions"]
    assert decision["action"] == "leave" and "an earlier Bash call" in decision["reason"], decision


@pytest.mark.parametrize("history", [[], ["ls -la", "git status"], ["export CI=1"]])
def test_without_one_exec_command_reaches_bash(addon, history) -> None:
    # the controls; a variable dies with the call in Bash as in a new process
    got, _ = anthropic(addon, history, [use("exec_command", {"cmd": "make"})])
    assert got == [use("Bash", {"command": "make"})]


def test_an_earlier_call_in_the_same_answer_counts(addon) -> None:
    # Claude Code runs the answer's calls in order: the second would run in src.
    answer = [use("Bash", {"command": "cd src"}, "toolu_1"), use("exec_command", {"cmd": "make"}, "toolu_2")]
    got, record = anthropic(addon, [], answer)
    assert got == answer
    assert [d["action"] for d in record["decisions"]] == ["keep", "leave"], record["decisions"]
    # the control: a first call that changes no directory
    answer = [use("Bash", {"command": "ls"}, "toolu_1"), use("exec_command", {"cmd": "make"}, "toolu_2")]
    got, _ = anthropic(addon, [], answer)
    assert got[1] == use("Bash", {"command": "make"}, "toolu_2")


def test_a_bash_call_never_moves_to_a_shell_that_starts_afresh_after_a_cd(addon) -> None:
    # OpenCode's bash runs each call in a new process: the model's Bash would have run in src.
    names, decisions = chat(addon, ['{"command":"cd src"}'], ['Bash {"command":"make"}'])
    assert names == ["Bash"] and decisions[-1]["action"] == "leave", decisions
    assert chat(addon, ['{"command":"ls"}'], ['Bash {"command":"make"}'])[0] == ["bash"]  # the control


def chat(
    addon,
    history: list[str],
    calls: list[str],
    tools: tuple[str, ...] = ("bash",),
    agent: str = "opencode/1.18.33",
) -> tuple[list[str], list[dict[str, Any]]]:
    """A Chat request of ``agent`` (OpenCode's) declaring ``tools`` (of ``CHAT_TOOLS``), a
    transcript of calls of the first tool whose argument text is ``history``, answered with
    ``calls`` (``name`` then ``arguments`` text, split at the first space): the names the client
    got, and the record's decisions."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "build"}]
    for i, text in enumerate(history):
        call = {"id": f"h{i}", "type": "function", "function": {"name": tools[0], "arguments": text}}
        messages += [
            {"role": "assistant", "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"h{i}", "content": "ok"},
        ]
    body = {
        "model": "m",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": name, "parameters": CHAT_TOOLS[name]}} for name in tools],
    }
    tool_calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": c.split(" ", 1)[0], "arguments": c.split(" ", 1)[1]}}
        for i, c in enumerate(calls)
    ]
    answer = {
        "id": "c",
        "object": "chat.completion",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {"role": "assistant", "content": None, "tool_calls": tool_calls},
            }
        ],
    }
    headers = [("content-type", "application/json"), ("user-agent", agent)]
    f = harness.json_flow(
        addon, body, orjson.dumps(answer), host="api.openai.com", path="/v1/chat/completions", headers=headers
    )
    got = json.loads(f.response.content)["choices"][0]["message"]["tool_calls"]
    return [c["function"]["name"] for c in got], f.metadata[METADATA_KEY]["decisions"]


TERMINAL = {
    "type": "object",
    "properties": {"command": {"type": "string"}, "workdir": {"type": "string"}},
    "required": ["command"],
}
CHAT_TOOLS = {
    "bash": SCHEMA,
    "terminal": TERMINAL,
    "read": {"type": "object", "properties": {"filePath": {"type": "string"}}, "required": ["filePath"]},
}


#: Argument text a strict reader refuses but a client's own reader may run: JavaScript's
#: JSON.parse keeps a repeated key's last value; Claude Code strips a leading BOM; Qwen Code
#: falls back to jsonrepair, which reads single quotes, bare keys and a cut-off object.
UNREAD_CD = [
    '{"command":"ls","command":"cd src"}',
    '\ufeff{"command":"cd src"}',
    "{'command': 'cd src'}",
    '{command: "cd src"}',
    '{"command":"cd src"',
]


@pytest.mark.parametrize("text", UNREAD_CD)
def test_an_earlier_call_whose_arguments_cannot_be_read_counts_as_unknown(addon, text) -> None:
    # in the transcript
    names, decisions = chat(addon, [text], ['Bash {"command":"make"}'])
    assert names == ["Bash"] and decisions[-1]["action"] == "leave", decisions
    # earlier in the same answer
    names, decisions = chat(addon, [], [f"bash {text}", 'Bash {"command":"make"}'])
    assert names[1] == "Bash" and decisions[-1]["action"] == "leave", decisions


def test_an_earlier_call_that_reads_changes_nothing_lets_the_command_move(addon) -> None:
    # the controls of the test above
    assert chat(addon, ['{"command":"ls"}'], ['Bash {"command":"make"}'])[0] == ["bash"]
    assert chat(addon, [], ['bash {"command":"ls"}', 'Bash {"command":"make"}'])[0] == ["bash", "bash"]


def responses(addon, extra: dict[str, Any], items: list[dict[str, Any]] | None = None) -> str:
    """A Responses flow declaring a ``Bash`` function with no earlier call in its ``input`` (but
    ``items``), answered ``exec_command make``: the name the client got."""
    body = {
        "model": "m",
        "store": False,
        "input": [{"type": "message", "role": "user", "content": "build"}, *(items or [])],
        "tools": [{"type": "function", "name": "Bash", "parameters": SCHEMA}],
        **extra,
    }
    answer = {
        "id": "resp_1",
        "object": "response",
        "status": "completed",
        "output": [
            {
                "type": "function_call",
                "id": "fc_1",
                "call_id": "call_1",
                "status": "completed",
                "name": "exec_command",
                "arguments": '{"cmd":"make"}',
            }
        ],
    }
    f = harness.json_flow(
        addon,
        body,
        orjson.dumps(answer),
        host="api.openai.com",
        path="/v1/responses",
        headers=[("content-type", "application/json")],
    )
    return json.loads(f.response.content)["output"][0]["name"]


def test_a_request_that_continues_a_kept_response_does_not_carry_its_earlier_calls(addon) -> None:
    assert responses(addon, {"previous_response_id": "resp_0"}) == "exec_command"
    assert responses(addon, {}) == "Bash"  # the control: the whole conversation is in the request


@pytest.mark.parametrize(
    "item",
    [
        {"type": "item_reference", "id": "fc_1"},
        {"id": "fc_1"},  # an item reference without its type
        {"type": "compaction", "encrypted_content": "gAAAA-opaque"},  # Codex 0.171.0
    ],
)
def test_a_request_that_stands_for_items_it_does_not_carry_moves_no_command(addon, item) -> None:
    assert responses(addon, {}, [item]) == "exec_command"


# ------------------------------------------------------------------ each dialect's reader
def test_each_dialect_reads_the_earlier_calls_it_replays() -> None:
    cd = {"command": "cd src"}
    anthropic_body = {
        "messages": [
            {"role": "assistant", "content": [{"type": "text", "text": "x"}, use("Bash", cd, "t1")]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
        ]
    }
    assert dialects.by_name("anthropic").transcript_calls(anthropic_body) == [("Bash", cd)]
    # the model's calls are in the assistant's turns: a block elsewhere is none of them
    anthropic_body["messages"][1]["content"].append(use("Bash", {"command": "ls"}, "t2"))
    assert dialects.by_name("anthropic").transcript_calls(anthropic_body) == [("Bash", cd)]
    chat_body = {
        "messages": [
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "a", "function": {"name": "bash", "arguments": '{"command":"cd src"}'}},
                    {"id": "b", "function": {"name": "bash", "arguments": "not json"}},
                    {"id": "d", "function": {"name": "bash", "arguments": '{"command":"a","command":"b"}'}},
                    {"id": "c", "function": {"name": "bash", "arguments": {"command": "ls"}}},  # llama-server
                ],
            },
            {"role": "assistant", "function_call": {"name": "legacy", "arguments": "{}"}},
        ]
    }
    assert dialects.by_name("openai_chat").transcript_calls(chat_body) == [
        ("bash", cd),
        ("bash", "not json"),
        ("bash", '{"command":"a","command":"b"}'),  # a repeated key is no argument
        ("bash", {"command": "ls"}),
        ("legacy", {}),
    ]
    responses_body = {
        "input": [
            {"type": "function_call", "name": "shell", "arguments": '{"command":"cd src"}', "call_id": "1"},
            {"type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "2"},
            {"type": "function_call", "namespace": "mcp__srv__", "name": "run", "arguments": "{}", "call_id": "3"},
        ]
    }
    reader = dialects.by_name("openai_responses")
    assert reader.transcript_calls(responses_body) == [
        ("shell", cd),
        ("apply_patch", "*** Begin Patch"),
        ("mcp__srv__run", {}),
    ]
    assert reader.transcript_calls({**responses_body, "previous_response_id": "resp_1"}) is None
    assert reader.transcript_calls({**responses_body, "conversation": "conv_1"}) is None
    for hidden in ({"type": "item_reference", "id": "fc_0"}, {"id": "fc_0"}, {"type": "compaction"}):
        assert reader.transcript_calls({"input": [hidden, *responses_body["input"]]}) is None
    # a message without its type is no reference
    assert reader.transcript_calls({"input": [{"role": "user", "content": "hi"}]}) == []
    gemini_body = {
        "contents": [
            {"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": cd}}]},
            {"role": "model", "parts": [{"function_call": {"name": "run_shell_command", "args": {"command": "ls"}}}]},
        ]
    }
    expected = [("run_shell_command", cd), ("run_shell_command", {"command": "ls"})]
    assert dialects.by_name("gemini").transcript_calls(gemini_body) == expected
    # Code Assist's envelope
    assert dialects.by_name("gemini").transcript_calls({"request": gemini_body}) == expected


# --- a relative path finds its file where the model's own tool would ---------------------------
# Claude Code 2.1.197's Read finds a relative path from the directory its Bash was left in (after
# `cd sub`, f.txt is sub/f.txt: tests/e2e/test_argument_meaning.py); OpenCode's read from where
# OpenCode started.
READ_F = use("read", {"filePath": "f.txt"})


@pytest.mark.parametrize("history", [["cd sub && ls"], ["ls", "pushd sub"]])
def test_after_a_bash_call_that_changed_directory_a_relative_read_is_left(addon, history) -> None:
    got, record = anthropic(addon, history, [READ_F], tools=["Bash", "Read"])
    assert got == [READ_F]
    (decision,) = record["decisions"]
    assert decision["action"] == "leave" and "an earlier Bash call" in decision["reason"], decision


@pytest.mark.parametrize("history", [[], ["ls -la", "git status"]])
def test_without_one_a_relative_read_reaches_read(addon, history) -> None:
    got, _ = anthropic(addon, history, [READ_F], tools=["Bash", "Read"])
    assert got == [use("Read", {"file_path": "f.txt"})]


def test_a_path_from_a_root_reaches_read_after_a_cd(addon) -> None:
    got, _ = anthropic(addon, ["cd sub"], [use("read", {"filePath": "/repo/f.txt"})], tools=["Bash", "Read"])
    assert got == [use("Read", {"file_path": "/repo/f.txt"})]


def test_a_cd_earlier_in_the_same_answer_counts_for_a_path(addon) -> None:
    answer = [use("Bash", {"command": "cd sub"}, "toolu_1"), use("read", {"filePath": "f.txt"}, "toolu_2")]
    got, record = anthropic(addon, [], answer, tools=["Bash", "Read"])
    assert got == answer
    assert [d["action"] for d in record["decisions"]] == ["keep", "leave"], record["decisions"]


def test_a_bash_the_request_does_not_declare_still_counts_when_its_calls_are_replayed(addon) -> None:
    # Bash left out of this request's tools: its replayed cd may still have moved the directory
    got, record = anthropic(addon, ["cd sub"], [READ_F], tools=["Read"])
    assert got == [READ_F], record["decisions"]
    got, _ = anthropic(addon, [], [READ_F], tools=["Read"])  # the control: no shell ran
    assert got == [use("Read", {"file_path": "f.txt"})]


def test_a_relative_read_never_moves_out_of_claude_codes_vocabulary_after_a_cd(addon) -> None:
    # OpenCode's read finds f.txt where OpenCode started; the model's Read, where its shell was left
    names, decisions = chat(addon, ['{"command":"cd sub"}'], ['Read {"file_path":"f.txt"}'], tools=["bash", "read"])
    assert names == ["Read"] and decisions[-1]["action"] == "leave", decisions
    assert chat(addon, ['{"command":"ls"}'], ['Read {"file_path":"f.txt"}'], tools=["bash", "read"])[0] == ["read"]


@pytest.mark.parametrize("moved", [("EnterWorktree", {"name": "feat"}), ("ExitWorktree", {"action": "keep"})])
def test_a_worktree_moves_the_directory_a_relative_read_is_found_from(addon, moved) -> None:
    # Claude Code switches into a worktree (sdk-tools.d.ts): not a Bash call, the same move
    got, record = anthropic(addon, [moved], [READ_F], tools=["Bash", "Read"])
    assert got == [READ_F], record["decisions"]
    assert f"an earlier {moved[0]} call" in record["decisions"][0]["reason"], record["decisions"]
    got, _ = anthropic(addon, [moved], [use("exec_command", {"cmd": "make"})], tools=["Bash", "Read"])
    assert got == [use("exec_command", {"cmd": "make"})]  # and a command is not moved into that Bash


def test_an_earlier_workdir_of_a_shell_that_keeps_its_directory_counts(addon) -> None:
    # Hermes' terminal runs `cd <workdir>` and starts its next call where that left it
    def run(earlier: str) -> list[str]:
        return chat(addon, [earlier], ['exec_command {"cmd":"make"}'], tools=("terminal",), agent="hermes-agent")[0]

    assert run('{"command": "ls", "workdir": "/other"}') == ["exec_command"]
    assert run('{"command": "ls"}') == ["terminal"]  # the control


@pytest.mark.parametrize(
    "user",
    [
        "<bash-input>cd sub</bash-input>",
        [{"type": "text", "text": "<bash-input>pushd sub</bash-input><bash-stdout></bash-stdout>"}],
        "<bash-input>cd sub",  # unclosed: the rest of the text
    ],
)
def test_a_cd_the_user_ran_in_bash_mode_counts(addon, user) -> None:
    # `!cd sub` runs where Bash runs and reaches the model as user text in <bash-input> tags
    got, record = anthropic(addon, [], [READ_F], tools=["Bash", "Read"], user=user)
    assert got == [READ_F], record["decisions"]
    got, _ = anthropic(addon, [], [READ_F], tools=["Bash", "Read"], user="<bash-input>ls</bash-input>")
    assert got == [use("Read", {"file_path": "f.txt"})]  # the control


@pytest.mark.parametrize("subagent", ["Agent", "Task"])
def test_a_subagent_call_leaves_the_repairs_after_it_alone(addon, subagent) -> None:
    # A subagent's own Bash is not the session's; that the session's is sometimes left where the
    # subagent's was is a reported fault (anthropics/claude-code#45816), not counted: most
    # sessions use one, and every later repair would be lost (found by an attack: bash -> Bash)
    moved = (subagent, {"prompt": "look around", "description": "x", "subagent_type": "Explore"})
    got, _ = anthropic(addon, [moved], [use("bash", {"command": "ls"})], tools=["Bash", "Read"])
    assert got == [use("Bash", {"command": "ls"})]
    got, _ = anthropic(addon, [moved], [READ_F], tools=["Bash", "Read"])
    assert got == [use("Read", {"file_path": "f.txt"})]


def test_a_workdir_of_a_shell_that_keeps_nothing_moves_nothing_after_it(addon) -> None:
    # OpenCode's bash workdir lasts one call (found by an attack: Grep was left after one)
    earlier = '{"command":"npm test","workdir":"/p/pkg"}'
    names, decisions = chat(addon, [earlier], ['Read {"file_path":"f.txt"}'], tools=("bash", "read"))
    assert names == ["read"], decisions


def chat_chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
    """One Chat Completions stream event of choice 0 carrying ``delta``."""
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    return b"data: " + orjson.dumps({"id": "c", "object": "chat.completion.chunk", "choices": [choice]}) + b"\n\n"


@pytest.mark.parametrize("repeated", [True, False])
def test_a_request_refused_by_the_earlier_calls_read_holds_its_answer_back(loaded, repeated: bool) -> None:
    """As plain mitmdump runs it in repair mode, the request only peeked. The stream's first
    argument piece comes before the event that names the call: the shell call's session check reads
    the transcript (the whole body) before any byte of the answer differs, and the body repeats a
    key: the whole read refuses it, so the answer goes to the client as the upstream sent it (a
    byte-for-byte answer is what the long fuzz profile checks); the control, with no repeated key,
    is repaired."""
    body = orjson.dumps(
        {
            "model": "m",
            "stream": True,
            "messages": [{"role": "user", "content": "find the rust files"}],
            "tools": [{"type": "function", "function": {"name": "run_shell_command", "parameters": SCHEMA}}],
        }
    )
    if repeated:
        body = body.replace(b'{"model":"m"', b'{"model":{},"model":"m"', 1)
    answer = b"".join(
        [
            chat_chunk({"role": "assistant", "content": ""}),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"command":"find . -name '}}]}),
            chat_chunk(
                {"tool_calls": [{"index": 0, "id": "call_1", "type": "function", "function": {"name": "bash"}}]}
            ),
            chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "'*.rs'\"}"}}]}),
            chat_chunk({}, "tool_calls"),
            b"data: [DONE]\n\n",
        ]
    )
    with harness.configured(loaded, toolvocab_mode="repair") as e:
        e.addon.recorder.saves_bodies = lambda: False
        f = harness.make_flow(
            body,
            host="api.openai.com",
            path="/v1/chat/completions",
            headers=[("content-type", "application/json")],
            upstream=answer,
            resp_type="text/event-stream",
        )
        r = harness.replay(e, f)
    assert f.request.content == body
    if repeated:
        assert r.out == answer
        assert r.record["skipped"] == "request body repeats a key; passed through", r.record
    else:
        names = [
            c["function"]["name"]
            for ev in sse_events(r.out)
            if isinstance(data := ev.json(), dict)
            for c in (data.get("choices") or [{}])[0].get("delta", {}).get("tool_calls") or ()
            if "name" in c.get("function", {})
        ]
        assert names == ["run_shell_command"], r.out


@pytest.mark.parametrize(
    "user",
    [
        "This session is being continued from a previous conversation that ran out of context. The summary "
        "below covers the earlier portion of the conversation.\n\nSummary:\n1. The assistant ran `cd packages/api`.",
        [
            {"type": "text", "text": "<system-reminder>x</system-reminder>"},
            {"type": "text", "text": "This session is being continued from a previous conversation that ran out."},
        ],
    ],
)
def test_a_compacted_conversation_hides_where_bash_is(addon, user) -> None:
    # Claude Code's compaction summary replaces the turns it summarized (a `cd` among them, gone from
    # the request, still where Bash is): earlier calls are not known, so nothing moves into Bash
    shell = use("shell", {"command": ["rm", "-rf", "build"]})
    got, record = anthropic(addon, [], [shell], tools=["Bash", "Read"], user=user)
    assert got == [shell], record["decisions"]
    got, _ = anthropic(addon, [], [READ_F], tools=["Bash", "Read"], user=user)
    assert got == [READ_F]  # a relative read is found from that directory too
    got, _ = anthropic(addon, [], [shell], tools=["Bash", "Read"], user="Summary: the build is broken.")
    assert got == [use("Bash", {"command": "rm -rf build"})]  # the control


def test_an_api_compaction_block_hides_where_bash_is(addon) -> None:
    # the Messages API's own compaction (compact_20260112) leaves a `compaction` block for the turns
    # it summarized, which the client sends back in place of them (read in a message of any role:
    # here the first one)
    shell = use("shell", {"command": ["rm", "-rf", "build"]})
    user = [{"type": "text", "text": "build it"}]
    got, record = anthropic(
        addon, [], [shell], tools=["Bash", "Read"], user=[{"type": "compaction", "content": "..."}, *user]
    )
    assert got == [shell], record["decisions"]
    got, _ = anthropic(addon, [], [shell], tools=["Bash", "Read"], user=user)
    assert got == [use("Bash", {"command": "rm -rf build"})]  # the control
