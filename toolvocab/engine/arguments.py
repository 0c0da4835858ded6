"""Fit a tool call's arguments to the declared tool's JSON schema, then validate them.

Every change here is one a reader can check by eye: a key spelled another agent's way
(``file_path`` for ``path``), a command given as argv where the tool wants a string (or the
reverse), a number sent as a string. Nothing is invented: a key is only renamed to one the
schema declares, and a value is only re-typed when the schema asks for that type. The result is
validated with ``jsonschema``; the caller applies it only when it validates.
"""

from __future__ import annotations

import copy
import re
from typing import Any

import orjson

from toolvocab.engine.models import ArgChange
from toolvocab.engine.shellwords import is_portable
from toolvocab.engine.shellwords import posix_join

#: Groups of argument keys that agents spell differently for the same thing. Sources: the
#: declared schemas of Claude Code 2.1.197 (``file_path``, ``old_string``), OpenCode 1.18.33
#: (``filePath``, ``oldString``), Qwen Code 0.15.10 / Gemini CLI 0.61.0 (``file_path``,
#: ``dir_path``, ``directory``), Codex 0.171.0 (``cmd``, ``workdir``), trae-agent's
#: ``str_replace_editor`` (``path``, ``old_str``, ``new_str``, ``file_text``), Cline
#: (``path``, ``regex``) and OpenClaw (``oldText``, ``newText``) per the bug reports BR-04,
#: BR-06, BR-27. A key may sit in two groups (``path``); a rename happens only when exactly one
#: declared, absent key is a synonym.
SYNONYMS: tuple[frozenset[str], ...] = (
    frozenset({"path", "file_path", "filePath", "absolute_path", "filepath", "file", "target_file"}),
    frozenset({"path", "dir_path", "dirPath", "directory", "dir"}),
    frozenset({"workdir", "cwd", "directory", "dir_path", "working_directory"}),
    frozenset({"command", "cmd"}),
    frozenset({"old_string", "old_str", "oldString", "old_text", "oldText"}),
    frozenset({"new_string", "new_str", "newString", "new_text", "newText"}),
    frozenset({"content", "file_text", "contents"}),
    frozenset({"replace_all", "replaceAll"}),
    frozenset({"pattern", "regex"}),
    frozenset({"include", "include_pattern"}),
    frozenset({"is_background", "run_in_background"}),
    frozenset({"query", "search_query"}),
    frozenset({"url", "uri"}),
)

#: Annotation keys: in the vocabulary a model learned them from, they describe a call to the
#: user and carry no operation, so dropping one where the target schema is closed changes no
#: meaning — but only when the call came in that other vocabulary (a capability rename, or the
#: reverse of a profile name); on the client's own tool the same key may be its payload. Sources: Gemini CLI 0.61.0's ``replace``
#: declares ``instruction`` (a sentence about the edit), declared tools of Gemini CLI / Cursor-style
#: agents carry ``explanation`` (Cursor's tool schemas) and ``justification`` (Codex 0.171.0's
#: ``shell`` escalation note, a text shown to the user), and Claude Code 2.1.197's ``Bash``
#: ``description`` ("clear, concise description of what this command does"), which BR-06 drops
#: when the target does not declare it. Every other undeclared key carries meaning: a call that
#: keeps one after synonym renaming is never renamed by capability, and the key is never dropped.
ANNOTATION_KEYS: frozenset[str] = frozenset({"instruction", "explanation", "justification", "description"})

#: Keys naming a location: an empty string there counts as absent when a synonym carries a
#: value (BR-27, OpenClaw PR #36420). Not for content keys: an empty replacement is a deletion.
_EMPTY_MEANS_ABSENT = frozenset(
    {"path", "file_path", "filePath", "absolute_path", "filepath", "dir_path", "directory", "command", "cmd"}
)

#: ``argv`` prefixes that say "run this string in bash": ``["bash", "-lc", X]``. ``X`` alone is
#: unwrapped only when it reads the same in bash, zsh and dash
#: (:func:`~toolvocab.engine.shellwords.is_portable`): a shell tool may run it in the user's zsh.
#: Another shell's ``-c`` (``zsh -c``, ``sh -c``) and any other ``X`` are joined with POSIX
#: quoting, so the shell the model named still runs it.
_SHELL_WRAPPERS = re.compile(r"^(?:/(?:usr/(?:local/)?)?bin/)?bash$")
_SHELL_FLAGS = frozenset({"-c", "-lc", "-cl", "-ic", "-ci"})

#: Keys holding a command line: only these turn an argv list into a command string.
_COMMAND_KEYS = frozenset({"command", "cmd"})

_JSON_TYPES = {
    "string": str,
    "array": list,
    "object": dict,
    "boolean": bool,
}


def _synonyms_of(key: str) -> set[str]:
    out: set[str] = set()
    for group in SYNONYMS:
        if key in group:
            out |= group
    out.discard(key)
    return out


def property_types(schema: dict[str, Any], key: str) -> set[str]:
    """The JSON types ``schema`` allows for property ``key`` (``type``, a type list, or the
    types of ``anyOf`` / ``oneOf`` alternatives); empty when undeclared or untyped."""
    prop = (schema.get("properties") or {}).get(key)
    if not isinstance(prop, dict):
        return set()
    t = prop.get("type")
    if isinstance(t, str):
        return {t}
    if isinstance(t, list):
        return {x for x in t if isinstance(x, str)}
    types: set[str] = set()
    for alt in prop.get("anyOf") or prop.get("oneOf") or ():
        if isinstance(alt, dict) and isinstance(alt.get("type"), str):
            types.add(alt["type"])
    return types


def _has_type(value: Any, types: set[str]) -> bool:
    for t in types:
        if t == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return True
        if t == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return True
        if t == "null" and value is None:
            return True
        py = _JSON_TYPES.get(t)
        if py is not None and isinstance(value, py):
            return True
    return False


def argv_to_command(argv: list[str]) -> str:
    """Turn an argv list into one command string that runs the same argv in bash, zsh and dash.

    ``["bash", "-lc", X]`` is ``X`` itself when ``X`` is portable
    (:func:`~toolvocab.engine.shellwords.is_portable`: ``"git status"``, ``"cd src && make"``);
    anything else — ``["bash", "-lc", "rm -f **/*.orig"]``, another shell's ``-c``, a plain argv —
    is joined with :func:`~toolvocab.engine.shellwords.posix_join` (``bash -lc 'rm -f **/*.orig'``).
    Raises ``TypeError`` when an element is not a string, ``ValueError`` for a NUL character.
    """
    if len(argv) == 3 and isinstance(argv[0], str) and _SHELL_WRAPPERS.match(argv[0]) and argv[1] in _SHELL_FLAGS:
        if isinstance(argv[2], str) and is_portable(argv[2]):
            return argv[2]
    return posix_join(argv)


def command_to_argv(command: str) -> list[str] | None:
    """Turn a command string into argv without choosing a shell for the user, or ``None``.

    Only a string that is itself a JSON array of strings (``"[\\"ls\\", \\"-la\\"]"``, Codex
    answered by third-party models, openai/codex#3913, BR-25) becomes that array. A plain command
    string (``"ls -la"``) returns ``None`` and is left as sent: wrapping it in ``bash -lc`` would
    pick a shell for the user, and splitting it would change the meaning of any shell syntax in it.
    """
    text = command.strip()
    if not text.startswith("["):
        return None
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError:
        return None
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return value
    return None


def _coerce_scalar(value: Any, types: set[str]) -> tuple[bool, Any]:
    """Re-type a string the schema wants as a number or boolean; (changed, new value)."""
    if not isinstance(value, str):
        return False, value
    text = value.strip(" \t\r\n")
    if "integer" in types and re.fullmatch(r"-?[0-9]+", text):
        return True, int(text)
    if "number" in types and re.fullmatch(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", text):
        return True, float(text) if any(c in text for c in ".eE") else int(text)
    if "boolean" in types and text in ("true", "false"):
        return True, text == "true"
    return False, value


def fit_arguments(
    arguments: dict[str, Any],
    schema: dict[str, Any] | None,
    *,
    consumed: frozenset[str] = frozenset(),
    closed: bool = False,
    drop_annotations: bool = False,
    target_capability: str | None = None,
) -> tuple[dict[str, Any], list[ArgChange]]:
    """Fit ``arguments`` to ``schema`` and return ``(new_arguments, changes)``.

    ``arguments`` is not modified. ``consumed`` names keys that the repair already used up (the
    ``command`` of ``str_replace_editor`` once it chose the capability); they are dropped when
    the schema does not declare them. Steps, each recorded as an :class:`ArgChange`:

    1. key synonyms: a key the schema does not declare is renamed to the one synonym the schema
       declares and the call lacks (an empty location value counts as lacking);
    2. types: argv list → command string where the schema wants a string for ``command`` /
       ``cmd`` and the target is a POSIX shell (``target_capability == "shell"``: the quoting
       is POSIX, never sent to PowerShell or an unknown tool); a one-element list elsewhere is
       unwrapped, never shell-quoted; a string holding a
       JSON array → that array where it wants an array (see :func:`command_to_argv`); ``"1024"`` → ``1024``,
       ``"true"`` → ``True`` where it wants a number or boolean;
    3. a consumed key the schema does not declare is dropped; with ``drop_annotations`` (the
       call came in *another agent's vocabulary*: a capability rename, or the reverse of a
       profile name, BR-06) an annotation key (:data:`ANNOTATION_KEYS`) the schema does not
       declare is dropped when the schema is closed (``additionalProperties: false``) or
       ``closed`` is true. On a call to the client's own tool (declared, or spelled another way)
       an annotation key is content the model chose to send (an issue's ``description``, a
       browser action's ``instruction``) and is never dropped. **No other key is ever dropped**: an operational key the target does not
       declare stays, so the call fails the schema or is refused by the ladder
       (:func:`unaccounted_keys`) instead of running without it.

    Without a schema (or without ``properties``) nothing is changed.
    """
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return dict(arguments), []
    props: dict[str, Any] = schema["properties"]
    out = copy.deepcopy(arguments)
    changes: list[ArgChange] = []

    for key in list(out):
        if key in props:
            continue
        value = out[key]
        targets = []
        for syn in _synonyms_of(key):
            if syn not in props:
                continue
            present = syn in out
            if present and syn in _EMPTY_MEANS_ABSENT and out[syn] == "" and value not in ("", None):
                present = False
            if not present:
                targets.append(syn)
        if len(targets) == 1:
            target = targets[0]
            if target in out:
                changes.append(ArgChange(op="fill_empty", key=target, before=out[target], after=value))
            del out[key]
            out[target] = value
            changes.append(ArgChange(op="rename_key", key=key, to=target, before=value, after=value))

    for key, value in list(out.items()):
        types = property_types(schema, key)
        if not types or _has_type(value, types):
            continue
        if "string" in types and isinstance(value, list):
            if key in _COMMAND_KEYS:
                if target_capability != "shell":
                    continue
                try:
                    new = argv_to_command(value)
                except (TypeError, ValueError):
                    continue
                out[key] = new
                changes.append(ArgChange(op="argv_to_string", key=key, before=value, after=new))
            elif len(value) == 1 and isinstance(value[0], str):
                # A path or pattern wrapped in a list: unwrap it, never shell-quote it.
                out[key] = value[0]
                changes.append(ArgChange(op="unwrap_list", key=key, before=value, after=value[0]))
        elif "array" in types and isinstance(value, str):
            argv = command_to_argv(value)
            if argv is not None:
                out[key] = argv
                changes.append(ArgChange(op="json_to_array", key=key, before=value, after=argv))
        else:
            did, new = _coerce_scalar(value, types)
            if did:
                out[key] = new
                changes.append(ArgChange(op="coerce", key=key, before=value, after=new))

    drop_annotations = drop_annotations and (closed or schema.get("additionalProperties") is False)
    for key in list(out):
        if key in props:
            continue
        if key in consumed:
            changes.append(ArgChange(op="drop_key", key=key, before=out[key]))
            del out[key]
        elif drop_annotations and key in ANNOTATION_KEYS:
            changes.append(ArgChange(op="drop_annotation", key=key, before=out[key]))
            del out[key]
    return out, changes


def unaccounted_keys(arguments: dict[str, Any], schema: dict[str, Any] | None) -> list[str]:
    """Keys of ``arguments`` (already fitted) that ``schema`` does not declare and that are not
    annotation keys: each carries meaning the target tool has no place for. Empty when the schema
    declares no ``properties`` (nothing to check against)."""
    if not isinstance(schema, dict) or not isinstance(schema.get("properties"), dict):
        return []
    props = schema["properties"]
    return [k for k in arguments if k not in props and k not in ANNOTATION_KEYS]


_VALIDATORS: dict[bytes, Any] = {}


def _validator(schema: dict[str, Any]) -> Any:
    """A checked validator for ``schema``, cached by the schema's canonical JSON (256 kept)."""
    key = orjson.dumps(schema, option=orjson.OPT_SORT_KEYS)
    validator = _VALIDATORS.get(key)
    if validator is None:
        import jsonschema  # at the first tool call checked (~70 ms once): a proxy that sees no tool call never loads it

        cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        cls.check_schema(schema)
        validator = cls(schema)
        if len(_VALIDATORS) >= 256:
            _VALIDATORS.pop(next(iter(_VALIDATORS)))
        _VALIDATORS[key] = validator
    return validator


def validation_error(arguments: dict[str, Any], schema: dict[str, Any] | None) -> str | None:
    """Validate ``arguments`` against ``schema``; the first error's message, or ``None``.

    Uses the validator class the schema's ``$schema`` names (default: Draft 2020-12, which the
    Anthropic and OpenAI tool docs accept). A schema that is itself invalid returns an error
    (``"schema is not valid JSON Schema: …"``): a repair that cannot be checked is not made.
    """
    if not schema:
        return None
    import jsonschema.exceptions
    from jsonschema.exceptions import SchemaError

    try:
        validator = _validator(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except SchemaError as exc:
        return f"schema is not valid JSON Schema: {exc.message}"
    except Exception as exc:  # an unresolvable $ref or similar: treat as not checkable
        return f"schema could not be applied: {exc}"
    if error is None:
        return None
    where = "/".join(str(p) for p in error.absolute_path)
    return f"{where}: {error.message}" if where else error.message
