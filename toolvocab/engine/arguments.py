"""Fit a tool call's arguments to the declared tool's JSON schema, then validate them.

Two kinds of change, each one a reader can check by eye:

1. **Translation** (:mod:`toolvocab.engine.translate`): a key moves to the target's key of the
   same sourced meaning (``file_path`` → ``filePath``; ``timeout`` in seconds → ``timeout`` in
   milliseconds), only when every reading of the call agrees and every key finds a counterpart.
2. **Spelling** of a value the target's schema types otherwise: a command given as an argv where a
   shell tool wants a string (:func:`argv_to_command`), a string holding a JSON array where an
   array is wanted (BR-25), ``"1024"`` where a number is wanted, a one-element list around a string.

Nothing is invented; no key the target does not declare is ever kept in a changed call (an
annotation key aside, see :data:`~toolvocab.engine.translate.ANNOTATION_KEYS`). The result is
validated with ``jsonschema``; the caller applies it only when the step's rule allows.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field
from typing import Any

import orjson

from toolvocab.engine import jsonio
from toolvocab.engine.models import ArgChange
from toolvocab.engine.shellwords import argv_to_command
from toolvocab.engine.shellwords import command_to_argv
from toolvocab.engine.tokens import strip_glued
from toolvocab.engine.translate import ANNOTATION_KEYS
from toolvocab.engine.translate import Earlier
from toolvocab.engine.translate import Reading
from toolvocab.engine.translate import Target
from toolvocab.engine.translate import program_named
from toolvocab.engine.translate import translate

#: Keys holding a command line: only these turn an argv list into a command string.
_COMMAND_KEYS = frozenset({"command", "cmd"})

_JSON_TYPES = {
    "string": str,
    "array": list,
    "object": dict,
    "boolean": bool,
}


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


def _coerce_scalar(value: Any, types: set[str]) -> tuple[bool, Any]:
    """Re-type a string the schema wants as a number or boolean; (changed, new value)."""
    if not isinstance(value, str):
        return False, value
    text = value.strip(" \t\r\n")
    number = jsonio.number_in_text(text)
    if "integer" in types and type(number) is int:
        return True, number
    if "number" in types and number is not None:
        return True, number
    if "boolean" in types and text in ("true", "false"):
        return True, text == "true"
    return False, value


@dataclass
class Fit:
    """What fitting gives: the new ``arguments`` and their ``changes``, or ``arguments`` ``None``
    and the ``reason`` the call cannot be changed without changing its meaning."""

    arguments: dict[str, Any] | None
    changes: list[ArgChange] = field(default_factory=list)
    reason: str | None = None


def respell(
    arguments: dict[str, Any], schema: dict[str, Any], *, target_capability: str | None = None
) -> tuple[dict[str, Any], list[ArgChange]]:
    """Re-type values the schema types otherwise, losslessly; ``(new arguments, changes)``.

    An argv list → one command string for ``command`` / ``cmd`` of a POSIX shell tool
    (``target_capability == "shell"``; :func:`argv_to_command`), a one-element list around a string
    elsewhere; a string holding a JSON array of strings → that array where an array is wanted
    (:func:`command_to_argv`); ``"1024"`` → ``1024``, ``"true"`` → ``True`` where a number or
    boolean is wanted. ``arguments`` is not modified.
    """
    out = dict(arguments)
    changes: list[ArgChange] = []
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
    return out, changes


def declared_properties(schema: dict[str, Any] | None) -> dict[str, Any]:
    """The ``properties`` of an object schema (empty when it declares none)."""
    if isinstance(schema, dict) and isinstance(schema.get("properties"), dict):
        return schema["properties"]
    return {}


def unglue_keys(arguments: dict[str, Any], schema: dict[str, Any] | None) -> tuple[dict[str, Any], list[ArgChange]]:
    """Top-level keys with a model family's control token glued to their end (``"path</arg_key>"``,
    :func:`toolvocab.engine.tokens.strip_glued`) renamed to the declared key that remains;
    ``(arguments, changes)``, ``arguments`` itself (and no change) when there is none.

    Only a key the schema does not declare, only when what remains is a declared key the call
    does not already carry and no other key cleans to (a collision leaves both as sent). Values are
    never touched. ``arguments`` is not modified.
    """
    props = declared_properties(schema)
    renames: dict[str, str] = {}
    for key in arguments:
        if key in props:
            continue
        clean = strip_glued(key)
        if clean is not None and clean in props:
            renames[key] = clean
    targets = list(renames.values())
    renames = {k: c for k, c in renames.items() if c not in arguments and targets.count(c) == 1}
    if not renames:
        return arguments, []
    out = {renames.get(k, k): v for k, v in arguments.items()}
    return out, [ArgChange(op="unglue_key", key=k, to=c) for k, c in renames.items()]


def fit_arguments(
    arguments: dict[str, Any],
    schema: dict[str, Any] | None,
    readings: Sequence[Reading],
    target: Target,
    *,
    consumed: frozenset[str] = frozenset(),
    closed: bool = False,
    drop_annotations: bool = False,
    target_capability: str | None = None,
    posix: bool = True,
    earlier: Earlier | None = None,
) -> Fit:
    """Fit ``arguments`` to ``schema``: translate them under every one of ``readings`` into
    ``target``'s keys (:func:`~toolvocab.engine.translate.translate`), then respell values
    (:func:`respell`). ``posix`` False: the agent runs on Windows, where no command line is moved
    between tools or an argv joined with POSIX quoting. ``earlier``: what the conversation ran
    before the call (:data:`~toolvocab.engine.translate.Earlier`). ``arguments`` is not modified.

    Annotation keys (:data:`~toolvocab.engine.translate.ANNOTATION_KEYS`) the schema does not
    declare are dropped only with ``drop_annotations`` (the call came in *another agent's
    vocabulary*: a capability rename, or the reverse of a profile name, BR-06) and a closed schema
    (``additionalProperties: false``, or ``closed``); on the client's own tool such a key may be
    its payload and stays. A schema that declares no properties takes no key at all: a call with
    any non-annotation key gets no change. Returns a :class:`Fit` with ``arguments`` ``None`` and
    the reason when a key cannot keep its meaning.
    """
    props = declared_properties(schema)
    arguments, unglued = unglue_keys(arguments, schema)
    if not props:
        extra = [k for k in arguments if k not in ANNOTATION_KEYS]
        if extra:
            return Fit(
                None, reason=f"its schema declares no argument, and the call carries {', '.join(map(repr, extra))}"
            )
        return Fit(dict(arguments))
    translation = translate(arguments, readings, target, consumed=consumed, posix=posix, earlier=earlier)
    if translation.arguments is None:
        return Fit(None, reason=translation.reason)
    out, changes = respell(translation.arguments, schema, target_capability=target_capability if posix else None)  # type: ignore[arg-type]
    program = program_named(out, changes, target)
    if program is not None:  # an argv joined for a POSIX shell, run by the program the call names
        return Fit(None, reason=program)
    changes = unglued + translation.changes + changes
    drop = drop_annotations and (closed or schema.get("additionalProperties") is False)  # type: ignore[union-attr]
    for key in list(out):
        if key in props:
            continue
        if key in ANNOTATION_KEYS:
            if drop:
                changes.append(ArgChange(op="drop_annotation", key=key, before=out[key]))
                del out[key]
            continue
        return Fit(None, reason=f"{key!r} is not an argument of the target")  # never: translate places every key
    nested = undeclared_keys(out, schema)
    if nested:
        return Fit(
            None, reason=f"{', '.join(nested)} is not declared in the target's schema; the client would not read it"
        )
    return Fit(copy.deepcopy(out), changes)


def undeclared_keys(arguments: Any, schema: dict[str, Any] | None, path: str = "") -> list[str]:
    """Paths (``"mode"``, ``"todos/0/priority"``) of keys ``arguments`` carries that ``schema``
    does not declare, annotation keys aside at the top level: each would be stripped or ignored by
    a client that does not enforce its schema (Gemini CLI and Qwen Code pass them to handlers that
    never read them; OpenCode's decoder strips them), so a call carrying one is never changed.
    Only objects whose schema lists ``properties`` are checked (an undescribed object takes any
    key); arrays are checked item by item against ``items``."""
    if not isinstance(schema, dict):
        return []
    out: list[str] = []
    if isinstance(arguments, dict):
        props = schema.get("properties")
        if not isinstance(props, dict):
            return []
        for key, value in arguments.items():
            where = f"{path}/{key}" if path else key
            if key not in props:
                if not (path == "" and key in ANNOTATION_KEYS):
                    out.append(where)
                continue
            out += undeclared_keys(value, props[key], where)
    elif isinstance(arguments, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(arguments):
            out += undeclared_keys(item, schema["items"], f"{path}/{i}")
    return out


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
