"""Argument fitting: argv/string conversion, scalar coercion, annotation and undeclared keys, validation.

Translation between tools' keys is tested in ``test_translate.py``."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from schemas import ARGV
from schemas import BOOL
from schemas import INT
from schemas import NUM
from schemas import STR
from schemas import schema
from toolvocab.engine.arguments import argv_to_command
from toolvocab.engine.arguments import command_to_argv
from toolvocab.engine.arguments import declared_properties
from toolvocab.engine.arguments import fit_arguments
from toolvocab.engine.arguments import undeclared_keys
from toolvocab.engine.arguments import validation_error
from toolvocab.engine.translate import own_reading
from toolvocab.engine.translate import target_for


def ops(changes: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(c.op, c.key, c.to) for c in changes]


def fit(
    args: dict[str, Any], s: Any, *, target_capability: str | None = None, **kw: Any
) -> tuple[dict[str, Any] | None, list[Any]]:
    """Fit ``args`` as a call to an unnamed tool of ``target_capability`` with schema ``s``, read
    as the tool's own: ``(arguments, changes)``, or ``(None, [])`` when the call cannot change."""
    target = target_for("a_tool", target_capability, declared_properties(s))
    result = fit_arguments(
        args, s, [own_reading("a_tool", target_capability)], target, target_capability=target_capability, **kw
    )
    return (result.arguments, result.changes) if result.arguments is not None else (None, [])


def test_fit_never_mutates_its_input() -> None:
    args = {"command": ["bash", "-lc", "ls"], "n": "3", "nested": {"k": [1]}}
    frozen = copy.deepcopy(args)
    out, _ = fit(args, schema(command=STR, n=INT, nested={"type": "object"}), target_capability="shell")
    assert args == frozen and out is not None
    out["nested"]["k"].append(2)
    assert args == frozen


@pytest.mark.parametrize("s", [None, {}, {"type": "object"}, {"type": "object", "properties": "nope"}])
def test_a_schema_without_properties_takes_no_key(s: Any) -> None:
    # No declared key: a client reading this schema has no place for `path`; no change is made.
    assert fit({"path": "/a", "cmd": ["ls"]}, s) == (None, [])
    assert fit({"description": "annotation only"}, s) == ({"description": "annotation only"}, [])


# --- argv list -> command string --------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "command"),
    [
        (["bash", "-lc", "ls -la | wc -l"], "ls -la | wc -l"),
        # Unwrapped only when bash, zsh and dash read it alike: `$HOME`, `**`, `echo` keep bash.
        (["bash", "-c", "echo $HOME"], "bash -c 'echo $HOME'"),
        (["bash", "-lc", "rm -f **/*.orig"], "bash -lc 'rm -f **/*.orig'"),
        (["bash", "-lc", "cd src && make"], "cd src && make"),
        (["/bin/bash", "-lc", "git status"], "git status"),
        # an interactive bash reads ~/.bashrc and its aliases (rm='rm -i'): kept whole
        (["bash", "-ic", "rm -r build"], "bash -ic 'rm -r build'"),
        (["/usr/bin/bash", "-ci", "rm -r build"], "/usr/bin/bash -ci 'rm -r build'"),
        # Another shell's -c body means something else in bash: quoted, so that shell runs it.
        (["sh", "-c", "make test"], "sh -c 'make test'"),
        (["/usr/bin/zsh", "-c", "pwd"], "/usr/bin/zsh -c pwd"),
        (["zsh", "-c", "for f in $F; do rm $f; done"], "zsh -c 'for f in $F; do rm $f; done'"),
        (["ls", "-la"], "ls -la"),
        (["ls", "-la", "my dir"], "ls -la 'my dir'"),
        (["grep", "-r", "a;b", "."], "grep -r 'a;b' ."),
        (["python", "-c", "print(1)"], "python -c 'print(1)'"),
        (["bash", "-lc"], "bash -lc"),
        (["bash", "-lc", "a", "b"], "bash -lc a b"),
    ],
)
def test_argv_to_command(argv: list[str], command: str) -> None:
    assert argv_to_command(argv) == command
    out, changes = fit({"command": argv}, schema("command", command=STR), target_capability="shell")
    assert out == {"command": command}
    assert ops(changes) == [("argv_to_string", "command", None)]
    assert changes[0].before == argv and changes[0].after == command


def test_argv_with_a_non_string_element_is_not_joined() -> None:
    with pytest.raises(TypeError):
        argv_to_command(["ls", 1])
    out, changes = fit({"command": ["ls", 1]}, schema("command", command=STR), target_capability="shell")
    assert out == {"command": ["ls", 1]} and changes == []


def test_argv_is_left_when_the_schema_accepts_an_array() -> None:
    args = {"command": ["ls", "-la"]}
    out, changes = fit(args, schema("command", command=ARGV))
    assert out == args and changes == []


def test_argv_converted_for_string_or_null_union() -> None:
    out, _ = fit(
        {"command": ["bash", "-c", "ls"]}, schema(command={"type": ["string", "null"]}), target_capability="shell"
    )
    assert out == {"command": "ls"}


@pytest.mark.parametrize("capability", [None, "powershell", "read"])
def test_argv_never_quoted_for_a_tool_that_is_not_a_posix_shell(capability: str | None) -> None:
    # POSIX quoting (shlex.join) and "bash -lc X" → X mean nothing to PowerShell or an unknown
    # tool: one shell's syntax is never sent to another.
    for argv in (["bash", "-lc", "echo $HOME"], ["ls", "-la", "my dir"]):
        out, changes = fit({"command": argv}, schema("command", command=STR), target_capability=capability)
        assert out == {"command": argv} and changes == []


# --- command string -> argv -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "argv"),
    [
        ('["ls", "-la"]', ["ls", "-la"]),
        ('  ["git","status"] ', ["git", "status"]),
        ('["bash", "-lc", "ls | wc -l"]', ["bash", "-lc", "ls | wc -l"]),
    ],
)
def test_json_array_string_becomes_the_array(text: str, argv: list[str]) -> None:
    assert command_to_argv(text) == argv
    out, changes = fit({"command": text}, schema("command", command=ARGV))
    assert out == {"command": argv}
    assert ops(changes) == [("json_to_array", "command", None)]


@pytest.mark.parametrize("text", ["[]", '["ls", 1]', "[not json", '[["ls"]]', '{"a": 1}'])
def test_json_like_string_that_is_not_an_argv_is_unchanged(text: str) -> None:
    out, changes = fit({"command": text}, schema("command", command=ARGV))
    assert out == {"command": text} and changes == []


@pytest.mark.parametrize(
    "text",
    [
        "ls | wc -l",
        'echo "hi there"',
        "echo 'hi'",
        "ls *.py",
        "echo $HOME",
        "make && make test",
        "cat <<EOF\nx\nEOF",
        "a; b",
        "cd /repo\nls",
        "",
        "   ",
        "ls -la",
    ],
)
def test_string_needing_a_shell_is_never_split(text: str) -> None:
    assert command_to_argv(text) is None
    out, changes = fit({"command": text}, schema("command", command=ARGV))
    assert out == {"command": text} and changes == []


@pytest.mark.parametrize("text", ["ls -la", "git status", "make"])
def test_plain_command_string_for_an_array_schema_is_left_unchanged(text: str) -> None:
    # BR-25: splitting or wrapping a plain string would pick a shell for the user.
    assert command_to_argv(text) is None
    out, changes = fit({"command": text}, schema("command", command=ARGV))
    assert out == {"command": text} and changes == []


@pytest.mark.parametrize(
    ("key", "value"),
    [("file_path", ["/repo/my notes.txt"]), ("pattern", ["*.py"]), ("path", ["/repo/a b", "/repo/c"])],
)
def test_list_for_a_non_command_string_key_is_never_shell_quoted(key: str, value: list[str]) -> None:
    out, _ = fit({key: value}, schema(key, **{key: STR}))
    # Left as sent (the call then fails validation and is not repaired), or a one-element list
    # unwrapped; never a shell-quoted join that names a different file or glob.
    allowed = [value] + ([value[0]] if len(value) == 1 else [])
    assert out[key] in allowed


# --- scalar coercion --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("prop", "before", "after"),
    [
        (INT, "1024", 1024),
        (INT, "-3", -3),
        (INT, " 7 ", 7),
        (NUM, "1.5", 1.5),
        (NUM, "2", 2),
        (NUM, "1e3", 1000.0),
        (BOOL, "true", True),
        (BOOL, "false", False),
        ({"type": ["integer", "null"]}, "30", 30),
        ({"anyOf": [INT, {"type": "null"}]}, "30", 30),
    ],
)
def test_scalar_string_is_coerced_to_the_declared_type(prop: dict[str, Any], before: str, after: Any) -> None:
    out, changes = fit({"v": before}, schema("v", v=prop))
    assert out == {"v": after}
    assert type(out["v"]) is type(after)
    assert ops(changes) == [("coerce", "v", None)]
    assert validation_error(out, schema("v", v=prop)) is None


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        (INT, "1.5"),
        (INT, "ten"),
        (INT, ""),
        (NUM, "1,5"),
        (BOOL, "yes"),
        (BOOL, "True"),
        (BOOL, "1"),
        (INT, 3.5),
        (STR, 3),
    ],
)
def test_scalar_that_does_not_parse_is_unchanged(prop: dict[str, Any], value: Any) -> None:
    out, changes = fit({"v": value}, schema(v=prop))
    assert out == {"v": value} and changes == []


def test_value_already_of_the_declared_type_is_unchanged() -> None:
    args = {"n": 3, "b": False, "s": "x", "a": ["x"]}
    out, changes = fit(args, schema(n=INT, b=BOOL, s=STR, a=ARGV))
    assert out == args and changes == []


# --- additionalProperties: false --------------------------------------------------------------


def test_only_annotation_keys_are_dropped_when_the_schema_forbids_them() -> None:
    s = schema("command", additional=False, command=STR, requires_approval=BOOL)
    out, changes = fit(
        {"command": "npm test", "description": "Run tests"}, s, drop_annotations=True, target_capability="shell"
    )
    assert out == {"command": "npm test"}
    assert ops(changes) == [("drop_annotation", "description", None)]


@pytest.mark.parametrize("key", ["working_dir", "append", "dry_run", "preview", "timeout_s", "zz"])
@pytest.mark.parametrize("additional", [False, None])
def test_a_key_the_schema_does_not_declare_blocks_the_change(key: str, additional: bool | None) -> None:
    # Open or closed, a client may ignore a key it does not declare (Gemini CLI and Qwen Code pass
    # it to handlers that never read it, OpenCode strips it): no change is made with one.
    s = schema("command", additional=additional, command=STR)
    assert fit({"command": ["ls"], key: "x"}, s, closed=True, target_capability="shell") == (None, [])


def test_renamed_key_survives_additional_properties_false() -> None:
    s = schema("command", additional=False, command=STR)
    out, changes = fit({"cmd": "ls", "description": "d"}, s, drop_annotations=True, target_capability="shell")
    assert out == {"command": "ls"}
    assert ("rename_key", "cmd", "command") in ops(changes)


@pytest.mark.parametrize("key", ["description", "instruction", "justification", "explanation"])
def test_annotation_keys_are_kept_on_the_clients_own_tool(key: str) -> None:
    # An issue's `description`, a browser action's `instruction`: on the client's own tool the
    # same key may be the payload. Dropped only when the call came in another vocabulary.
    s = schema("title", additional=False, title=STR)
    out, changes = fit({"title": "Crash", key: "Steps: run X."}, s)
    assert out == {"title": "Crash", key: "Steps: run X."} and changes == []


def test_annotation_keys_stay_when_the_schema_allows_them() -> None:
    out, changes = fit({"command": "ls", "description": "d"}, schema("command", command=STR), target_capability="shell")
    assert out == {"command": "ls", "description": "d"} and changes == []


def test_consumed_key_is_dropped_even_without_additional_properties_false() -> None:
    out, changes = fit(
        {"command": "view", "path": "/a"},
        schema("file_path", file_path=STR),
        consumed=frozenset({"command"}),
        target_capability="read",
    )
    assert out == {"file_path": "/a"}
    assert ("drop_key", "command", None) in ops(changes)


@pytest.mark.parametrize(
    ("args", "found"),
    [
        ({"todos": [{"content": "x", "status": "pending", "priority": "high"}]}, ["todos/0/priority"]),
        ({"todos": [{"content": "x", "status": "pending"}], "mode": "merge"}, ["mode"]),
        ({"todos": [{"content": "x", "status": "pending"}], "description": "annotation"}, []),
        ({"todos": []}, []),
    ],
)
def test_undeclared_keys_are_found_at_every_depth_the_schema_describes(args: dict[str, Any], found: list[str]) -> None:
    item = {"type": "object", "properties": {"content": STR, "status": STR}}
    s = schema("todos", todos={"type": "array", "items": item})
    assert undeclared_keys(args, s) == found


def test_consumed_key_is_kept_when_the_schema_declares_it() -> None:
    out, _ = fit({"command": "ls"}, schema("command", command=STR), consumed=frozenset({"command"}))
    assert out == {"command": "ls"}


# --- validation_error -------------------------------------------------------------------------


def test_valid_arguments_give_none() -> None:
    assert validation_error({"a": 1}, schema("a", a=INT)) is None


@pytest.mark.parametrize("s", [None, {}])
def test_no_schema_means_nothing_to_check(s: Any) -> None:
    assert validation_error({"anything": object.__name__}, s) is None


def test_missing_required_message() -> None:
    assert validation_error({}, schema("command", command=STR)) == "'command' is a required property"


def test_wrong_type_message_names_the_key() -> None:
    msg = validation_error({"timeout": "soon"}, schema(timeout=INT))
    assert msg is not None
    assert msg.startswith("timeout: ") and "'soon' is not of type 'integer'" in msg


def test_nested_error_path_is_joined() -> None:
    s = schema(todos={"type": "array", "items": schema("content", content=STR)})
    msg = validation_error({"todos": [{"content": "a"}, {}]}, s)
    assert msg == "todos/1: 'content' is a required property"


def test_additional_property_message() -> None:
    msg = validation_error({"a": 1, "zz": 2}, schema(additional=False, a=INT))
    assert msg is not None and "zz" in msg


def test_invalid_schema_is_an_error_string_not_an_exception() -> None:
    msg = validation_error({"a": 1}, {"type": "object", "properties": {"a": {"type": "bogus"}}})
    assert isinstance(msg, str) and msg.startswith("schema is not valid JSON Schema")


def test_unresolvable_ref_is_an_error_string_not_an_exception() -> None:
    msg = validation_error({"a": 1}, {"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})
    assert isinstance(msg, str) and msg.startswith("schema could not be applied")


def test_schema_dialect_from_dollar_schema_is_used() -> None:
    # Draft 4 ``exclusiveMaximum`` is a boolean; 2020-12 would reject the schema itself.
    s = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "integer", "maximum": 5, "exclusiveMaximum": True}},
    }
    assert validation_error({"n": 4}, s) is None
    assert validation_error({"n": 5}, s) is not None


def test_validation_is_stable_across_calls() -> None:
    s = schema("a", a=INT)
    for _ in range(3):
        assert validation_error({"a": "x"}, s) == "a: 'x' is not of type 'integer'"
        assert validation_error({"a": 1}, s) is None
