"""Argument fitting: key synonyms, argv/string conversion, scalar coercion, validation."""

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
from toolvocab.engine.arguments import fit_arguments
from toolvocab.engine.arguments import validation_error

def ops(changes: list[Any]) -> list[tuple[str, str, str | None]]:
    return [(c.op, c.key, c.to) for c in changes]


# --- key synonyms -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"),
    [
        ("path", "file_path"),
        ("file_path", "path"),
        ("filePath", "file_path"),
        ("file_path", "filePath"),
        ("absolute_path", "file_path"),
        ("filePath", "path"),
        ("path", "absolute_path"),
        ("cmd", "command"),
        ("command", "cmd"),
        ("old_str", "old_string"),
        ("old_string", "old_str"),
        ("oldString", "old_string"),
        ("old_string", "oldString"),
        ("oldString", "oldText"),
        ("new_str", "new_string"),
        ("new_string", "new_str"),
        ("newString", "new_string"),
        ("new_string", "newString"),
        ("newString", "newText"),
        ("file_text", "content"),
        ("content", "file_text"),
        ("replaceAll", "replace_all"),
        ("replace_all", "replaceAll"),
        ("regex", "pattern"),
        ("pattern", "regex"),
        ("run_in_background", "is_background"),
        ("is_background", "run_in_background"),
        ("cwd", "workdir"),
        ("workdir", "cwd"),
        ("uri", "url"),
        ("search_query", "query"),
    ],
)
def test_synonym_key_is_renamed_to_the_declared_key(source: str, target: str) -> None:
    value: Any = True if "all" in source.lower() or "background" in source else "v"
    args = {source: value}
    out, changes = fit_arguments(args, schema(target, **{target: {"type": "boolean"} if value is True else STR}))
    assert out == {target: value}
    assert ops(changes) == [("rename_key", source, target)]
    assert changes[0].before == value and changes[0].after == value
    assert args == {source: value}  # input untouched


def test_several_synonyms_are_renamed_in_one_call() -> None:
    args = {"filePath": "/a", "oldString": "x", "newString": "y", "replaceAll": False}
    s = schema("file_path", "old_string", "new_string", file_path=STR, old_string=STR, new_string=STR, replace_all=BOOL)
    out, changes = fit_arguments(args, s)
    assert out == {"file_path": "/a", "old_string": "x", "new_string": "y", "replace_all": False}
    assert {c.key: c.to for c in changes} == {
        "filePath": "file_path",
        "oldString": "old_string",
        "newString": "new_string",
        "replaceAll": "replace_all",
    }
    assert validation_error(out, s) is None


def test_no_rename_when_the_target_key_is_not_declared() -> None:
    out, changes = fit_arguments({"cmd": "ls"}, schema("script", script=STR))
    assert out == {"cmd": "ls"} and changes == []


def test_no_rename_when_the_source_key_is_declared() -> None:
    out, changes = fit_arguments({"cmd": "ls"}, schema(cmd=STR, command=STR))
    assert out == {"cmd": "ls"} and changes == []


def test_no_rename_when_the_target_key_is_present() -> None:
    out, changes = fit_arguments({"cmd": "ls", "command": "pwd"}, schema("command", command=STR))
    assert out == {"cmd": "ls", "command": "pwd"} and changes == []


def test_no_rename_when_the_target_is_present_even_if_falsy_for_non_location_keys() -> None:
    out, changes = fit_arguments({"new_str": "x", "new_string": ""}, schema(new_string=STR))
    assert out == {"new_str": "x", "new_string": ""} and changes == []


@pytest.mark.parametrize(
    ("args", "s"),
    [
        ({"path": "/a"}, schema(file_path=STR, dir_path=STR)),  # file or directory?
        ({"path": "/a"}, schema(file_path=STR, filePath=STR)),
        ({"directory": "/a"}, schema(path=STR, workdir=STR)),
    ],
)
def test_no_rename_when_two_declared_keys_could_be_meant(args: dict[str, Any], s: dict[str, Any]) -> None:
    out, changes = fit_arguments(args, s)
    assert out == args and changes == []


def test_empty_location_key_is_filled_from_a_non_empty_synonym() -> None:
    # BR-27 / OpenClaw PR #36420: {"path": "", "file_path": "x"} means path x.
    out, changes = fit_arguments({"path": "", "file_path": "/repo/a.md"}, schema("path", path=STR))
    assert out == {"path": "/repo/a.md"}
    assert ops(changes) == [("fill_empty", "path", None), ("rename_key", "file_path", "path")]
    assert changes[0].before == "" and changes[0].after == "/repo/a.md"


def test_empty_command_is_filled_from_cmd() -> None:
    out, _ = fit_arguments({"command": "", "cmd": "ls"}, schema("command", command=STR))
    assert out == {"command": "ls"}


@pytest.mark.parametrize(("target", "alias"), [("newText", "new_string"), ("new_string", "new_str"), ("content", "file_text")])
def test_empty_content_key_is_a_legitimate_value_and_not_filled(target: str, alias: str) -> None:
    args = {target: "", alias: "replacement"}
    out, changes = fit_arguments(args, schema(target, **{target: STR}))
    assert out == args and changes == []


def test_both_location_keys_empty_is_left() -> None:
    args = {"path": "", "file_path": ""}
    out, changes = fit_arguments(args, schema("path", path=STR))
    assert out == args and changes == []


def test_fit_never_mutates_its_input() -> None:
    args = {"filePath": "/a", "command": ["bash", "-lc", "ls"], "n": "3", "nested": {"k": [1]}}
    frozen = copy.deepcopy(args)
    out, _ = fit_arguments(args, schema(file_path=STR, command=STR, n=INT, nested={"type": "object"}))
    assert args == frozen
    out["nested"]["k"].append(2)
    assert args == frozen


@pytest.mark.parametrize("s", [None, {}, {"type": "object"}, {"type": "object", "properties": "nope"}])
def test_without_properties_nothing_changes(s: Any) -> None:
    args = {"path": "/a", "cmd": ["ls"]}
    out, changes = fit_arguments(args, s)
    assert out == args and changes == []
    assert out is not args


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
    out, changes = fit_arguments({"command": argv}, schema("command", command=STR), target_capability="shell")
    assert out == {"command": command}
    assert ops(changes) == [("argv_to_string", "command", None)]
    assert changes[0].before == argv and changes[0].after == command


def test_argv_with_a_non_string_element_is_not_joined() -> None:
    with pytest.raises(TypeError):
        argv_to_command(["ls", 1])
    out, changes = fit_arguments({"command": ["ls", 1]}, schema("command", command=STR))
    assert out == {"command": ["ls", 1]} and changes == []


def test_argv_is_left_when_the_schema_accepts_an_array() -> None:
    args = {"command": ["ls", "-la"]}
    out, changes = fit_arguments(args, schema("command", command=ARGV))
    assert out == args and changes == []


def test_argv_converted_for_string_or_null_union() -> None:
    out, _ = fit_arguments({"command": ["bash", "-c", "ls"]}, schema(command={"type": ["string", "null"]}), target_capability="shell")
    assert out == {"command": "ls"}


@pytest.mark.parametrize("capability", [None, "powershell", "read"])
def test_argv_never_quoted_for_a_tool_that_is_not_a_posix_shell(capability: str | None) -> None:
    # POSIX quoting (shlex.join) and "bash -lc X" → X mean nothing to PowerShell or an unknown
    # tool: one shell's syntax is never sent to another (issue 10, kind 3).
    for argv in (["bash", "-lc", "echo $HOME"], ["ls", "-la", "my dir"]):
        out, changes = fit_arguments({"command": argv}, schema("command", command=STR), target_capability=capability)
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
    out, changes = fit_arguments({"command": text}, schema("command", command=ARGV))
    assert out == {"command": argv}
    assert ops(changes) == [("json_to_array", "command", None)]


@pytest.mark.parametrize("text", ["[]", '["ls", 1]', "[not json", '[["ls"]]', '{"a": 1}'])
def test_json_like_string_that_is_not_an_argv_is_unchanged(text: str) -> None:
    out, changes = fit_arguments({"command": text}, schema("command", command=ARGV))
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
    out, changes = fit_arguments({"command": text}, schema("command", command=ARGV))
    assert out == {"command": text} and changes == []


@pytest.mark.parametrize("text", ["ls -la", "git status", "make"])
def test_plain_command_string_for_an_array_schema_is_left_unchanged(text: str) -> None:
    # BR-25: splitting or wrapping a plain string would pick a shell for the user.
    assert command_to_argv(text) is None
    out, changes = fit_arguments({"command": text}, schema("command", command=ARGV))
    assert out == {"command": text} and changes == []


@pytest.mark.parametrize(
    ("key", "value"),
    [("file_path", ["/repo/my notes.txt"]), ("pattern", ["*.py"]), ("path", ["/repo/a b", "/repo/c"])],
)
def test_list_for_a_non_command_string_key_is_never_shell_quoted(key: str, value: list[str]) -> None:
    out, _ = fit_arguments({key: value}, schema(key, **{key: STR}))
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
    out, changes = fit_arguments({"v": before}, schema("v", v=prop))
    assert out == {"v": after}
    assert type(out["v"]) is type(after)
    assert ops(changes) == [("coerce", "v", None)]
    assert validation_error(out, schema("v", v=prop)) is None


@pytest.mark.parametrize(
    ("prop", "value"),
    [(INT, "1.5"), (INT, "ten"), (INT, ""), (NUM, "1,5"), (BOOL, "yes"), (BOOL, "True"), (BOOL, "1"), (INT, 3.5), (STR, 3)],
)
def test_scalar_that_does_not_parse_is_unchanged(prop: dict[str, Any], value: Any) -> None:
    out, changes = fit_arguments({"v": value}, schema(v=prop))
    assert out == {"v": value} and changes == []


def test_value_already_of_the_declared_type_is_unchanged() -> None:
    args = {"n": 3, "b": False, "s": "x", "a": ["x"]}
    out, changes = fit_arguments(args, schema(n=INT, b=BOOL, s=STR, a=ARGV))
    assert out == args and changes == []


# --- additionalProperties: false --------------------------------------------------------------


def test_only_annotation_keys_are_dropped_when_the_schema_forbids_them() -> None:
    # issue 10, kind 1: `zz` carries meaning the schema has no place for; it stays, and the call
    # then fails the schema (the client reports it) instead of running without it.
    s = schema("command", additional=False, command=STR, requires_approval=BOOL)
    out, changes = fit_arguments({"command": "npm test", "description": "Run tests", "zz": 1}, s, drop_annotations=True)
    assert out == {"command": "npm test", "zz": 1}
    assert sorted(ops(changes)) == [("drop_annotation", "description", None)]
    assert validation_error(out, s) is not None


@pytest.mark.parametrize("key", ["working_dir", "append", "dry_run", "preview", "timeout_s"])
def test_operational_keys_are_never_dropped(key: str) -> None:
    s = schema("command", additional=False, command=STR)
    out, changes = fit_arguments({"command": "npm test", key: "x"}, s, closed=True)
    assert out == {"command": "npm test", key: "x"} and changes == []


def test_renamed_key_survives_additional_properties_false() -> None:
    s = schema("command", additional=False, command=STR)
    out, changes = fit_arguments({"cmd": "ls", "description": "d"}, s, drop_annotations=True)
    assert out == {"command": "ls"}
    assert ("rename_key", "cmd", "command") in ops(changes)


@pytest.mark.parametrize("key", ["description", "instruction", "justification", "explanation"])
def test_annotation_keys_are_kept_on_the_clients_own_tool(key: str) -> None:
    # An issue's `description`, a browser action's `instruction`: on the client's own tool the
    # same key may be the payload. Dropped only when the call came in another vocabulary.
    s = schema("title", additional=False, title=STR)
    out, changes = fit_arguments({"title": "Crash", key: "Steps: run X."}, s)
    assert out == {"title": "Crash", key: "Steps: run X."} and changes == []


def test_undeclared_keys_kept_when_the_schema_allows_them() -> None:
    out, changes = fit_arguments({"command": "ls", "description": "d"}, schema("command", command=STR))
    assert out == {"command": "ls", "description": "d"} and changes == []


def test_consumed_key_is_dropped_even_without_additional_properties_false() -> None:
    out, changes = fit_arguments(
        {"command": "view", "path": "/a"}, schema("file_path", file_path=STR), consumed=frozenset({"command"})
    )
    assert out == {"file_path": "/a"}
    assert ("drop_key", "command", None) in ops(changes)


def test_consumed_key_is_kept_when_the_schema_declares_it() -> None:
    out, _ = fit_arguments({"command": "ls"}, schema("command", command=STR), consumed=frozenset({"command"}))
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
