"""Gemini ``generateContent`` / ``streamGenerateContent`` (Gemini API, Vertex AI, Code Assist).

Shapes from the Gemini API reference and the ``google-genai`` SDK types (``FunctionDeclaration``,
``FunctionCallingConfig``, ``Part``), wire-formats §4: declarations in
``tools[].functionDeclarations[]`` (schema in ``parametersJsonSchema``, or an OpenAPI-subset
``parameters`` with upper-case types), allowed names in
``toolConfig.functionCallingConfig.allowedFunctionNames``, calls in
``contents[].parts[].functionCall`` and results in ``functionResponse`` — paired **by name**, so
the transcript must stay consistent. Answers carry ``candidates[].content.parts[].functionCall``
whole in every chunk; ``?alt=sse`` streams one complete response per ``data:`` event, without
``alt`` the body is one JSON array sent element by element. Code Assist
(``/v1internal:…``, Gemini CLI's Google login) wraps the request in ``request`` and each
answer chunk in ``response``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import parse_qsl

import msgspec
import orjson

from toolvocab.dialects import textcalls
from toolvocab.dialects.base import JSON
from toolvocab.dialects.base import NAMED_BACK
from toolvocab.dialects.base import CallIds
from toolvocab.dialects.base import FlowContext
from toolvocab.dialects.base import Peek
from toolvocab.dialects.base import apply_decision_name
from toolvocab.dialects.base import dedupe_tools
from toolvocab.dialects.base import mark_repeats
from toolvocab.dialects.base import object_arguments_call
from toolvocab.dialects.base import path_only
from toolvocab.dialects.base import present
from toolvocab.dialects.base import sections_of
from toolvocab.dialects.base import typed_decode
from toolvocab.dialects.sse import EventStreamRewriter
from toolvocab.dialects.sse import RepeatedKey
from toolvocab.dialects.sse import SSEEvent
from toolvocab.dialects.sse import Unreadable
from toolvocab.engine import jsonio
from toolvocab.engine.errors import ToolResult
from toolvocab.engine.models import DeclaredTool
from toolvocab.engine.models import ToolCall
from toolvocab.engine.models import ToolKind
from toolvocab.engine.plan import DuplicateCursor
from toolvocab.engine.plan import Plan
from toolvocab.engine.wrapped import PARALLEL_WRAPPER

_PATH = re.compile(r":(?:stream)?[gG]enerateContent$")

#: OpenAPI-subset ``Type`` enum of Gemini's ``Schema`` (``TYPE_UNSPECIFIED``, ``STRING``,
#: ``NUMBER``, ``INTEGER``, ``BOOLEAN``, ``ARRAY``, ``OBJECT``, ``NULL``) → JSON Schema types.
_TYPES = {
    "STRING": "string",
    "NUMBER": "number",
    "INTEGER": "integer",
    "BOOLEAN": "boolean",
    "ARRAY": "array",
    "OBJECT": "object",
    "NULL": "null",
}


#: ``Schema`` fields typed int64, which the proto3 JSON mapping (and ``@google/genai``'s
#: TypeScript types) carry as strings: ``"maxLength": "4096"``.
_INT64_FIELDS = frozenset({"maxLength", "minLength", "minItems", "maxItems", "minProperties", "maxProperties"})


def openapi_to_jsonschema(schema: Any) -> Any:
    """Turn a Gemini ``Schema`` (OpenAPI subset) into JSON Schema for validation.

    Upper-case ``type`` values become JSON Schema types; ``nullable: true`` adds ``"null"``;
    ``TYPE_UNSPECIFIED`` drops the type; everything else is kept (``properties``, ``items``,
    ``required``, ``enum``, ``anyOf``, ``minItems``…). Pure; returns a new object.
    """
    if isinstance(schema, list):
        return [openapi_to_jsonschema(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "type" and isinstance(value, str):
            mapped = _TYPES.get(value.upper(), None if value.upper() == "TYPE_UNSPECIFIED" else value)
            if mapped is not None:
                out["type"] = mapped
        elif key in ("properties", "$defs", "definitions") and isinstance(value, dict):
            out[key] = {k: openapi_to_jsonschema(v) for k, v in value.items()}
        elif key in ("items", "anyOf", "oneOf", "allOf", "not", "additionalProperties"):
            out[key] = openapi_to_jsonschema(value)
        elif key == "nullable":
            continue
        elif key in _INT64_FIELDS and isinstance(value, str) and value.strip().lstrip("-").isdigit():
            out[key] = int(value)  # int64 fields travel as JSON strings (proto3 JSON mapping)
        else:
            out[key] = value
    if schema.get("nullable") is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out


def _unwrap(body: Any) -> Any:
    """The ``GenerateContentRequest`` / response inside a Code Assist envelope, else ``body``.
    An envelope that also holds an empty (or ``null``) ``candidates`` of its own is one: Gemini
    CLI reads only its ``response`` (``code_assist/converter.ts``, ``fromGenerateContentResponse``);
    one whose own ``candidates`` hold anything is not unwrapped (two answers in one body)."""
    if isinstance(body, dict) and isinstance(body.get("request"), dict) and "contents" in body["request"]:
        return body["request"]
    if isinstance(body, dict) and isinstance(body.get("response"), dict) and body.get("candidates") in (None, []):
        return body["response"]
    return body


#: ``FunctionCallingConfig.mode`` values that let the model call any declared function (or
#: none): absent, ``MODE_UNSPECIFIED`` (the default, ``AUTO``), ``AUTO``, ``ANY``, ``VALIDATED``.
_OPEN_MODES = (None, "MODE_UNSPECIFIED", "AUTO", "ANY", "VALIDATED")
#: The same modes as proto JSON also takes them, by number (``Mode``: 0 unspecified, 1 ``AUTO``,
#: 2 ``ANY``, 3 ``NONE``, 4 ``VALIDATED``; protobuf "JSON Mapping": an enum's name or its number).
_OPEN_MODE_NUMBERS = (0, 1, 2, 4)


def _open_mode(mode: Any) -> bool:
    """True for a ``functionCallingConfig.mode`` that lets the model call any declared function
    (:data:`_OPEN_MODES`, by name or number; a JSON ``true`` is no mode)."""
    if type(mode) is int:
        return mode in _OPEN_MODE_NUMBERS
    return mode in _OPEN_MODES and type(mode) is not bool


def _allowed_names(req: dict[str, Any]) -> list[list[Any]]:
    """Every ``allowedFunctionNames`` list of ``toolConfig.functionCallingConfig``, each of the
    three fields in either spelling: the API reads proto JSON, which accepts the lowerCamelCase
    JSON name or the original snake_case field name (protobuf "JSON Mapping": "Parsers accept
    both the lowerCamelCase name ... and the original proto field name"), as Gemini's own
    ``function_declarations`` show."""
    found: list[list[Any]] = []
    for config in (req.get("toolConfig"), req.get("tool_config")):
        if not isinstance(config, dict):
            continue
        for calling in (config.get("functionCallingConfig"), config.get("function_calling_config")):
            if not isinstance(calling, dict):
                continue
            for names in (calling.get("allowedFunctionNames"), calling.get("allowed_function_names")):
                if isinstance(names, list):
                    found.append(names)
    return found


class _Ref(msgspec.Struct, gc=False):
    """A ``functionCall`` / ``functionResponse`` as the request readers see it: ``args`` and ``response`` skipped."""

    name: Any = msgspec.UNSET
    id: Any = msgspec.UNSET


#: The keys of a part that name a tool, in the order the readers read them: the API's
#: ``functionCall`` / ``functionResponse`` and their proto field names, which its JSON parser
#: takes too (``function_call`` / ``function_response``, as google-genai's snake_case dicts).
_REF_KEYS = ("functionCall", "function_call", "functionResponse", "function_response")


class _Part(msgspec.Struct, gc=False):
    functionCall: _Ref | msgspec.UnsetType = msgspec.UNSET  # noqa: N815 (the wire's spelling)
    function_call: _Ref | msgspec.UnsetType = msgspec.UNSET
    functionResponse: _Ref | msgspec.UnsetType = msgspec.UNSET  # noqa: N815
    function_response: _Ref | msgspec.UnsetType = msgspec.UNSET


class _Content(msgspec.Struct, gc=False):
    role: Any = msgspec.UNSET
    parts: list[_Part] | msgspec.UnsetType = msgspec.UNSET


class _Request(msgspec.Struct, gc=False):
    """The keys the request readers read (:meth:`Gemini.peek`); ``request`` / ``response``
    only to see a Code Assist envelope."""

    model: Any = msgspec.UNSET
    systemInstruction: Any = msgspec.UNSET  # noqa: N815
    system_instruction: Any = msgspec.UNSET
    contents: list[_Content] | msgspec.UnsetType = msgspec.UNSET
    tools: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    generationConfig: Any = msgspec.UNSET  # noqa: N815
    generation_config: Any = msgspec.UNSET
    toolConfig: Any = msgspec.UNSET  # noqa: N815
    tool_config: Any = msgspec.UNSET
    request: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET
    response: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_PEEK = msgspec.json.Decoder(_Request)


class Gemini:
    """The Gemini dialect (Gemini API, Vertex AI publisher models, Code Assist)."""

    name = "gemini"

    def path_matches(self, method: str, path: str) -> bool:
        """POST to ``…:generateContent`` / ``…:streamGenerateContent``."""
        return method == "POST" and _PATH.search(path_only(path)) is not None

    def matches(self, method: str, path: str, body: JSON) -> bool:
        """POST to ``…:generateContent`` / ``…:streamGenerateContent`` with ``contents``."""
        if not self.path_matches(method, path):
            return False
        inner = _unwrap(body)
        return isinstance(inner, dict) and isinstance(inner.get("contents"), list)

    def peek(self, method: str, path: str, content: bytes) -> Peek | None:
        """``model``, the system instruction (either spelling), and of ``contents`` the names of
        the ``functionCall`` / ``functionResponse`` parts (either spelling); ``tools`` as sent. A Code Assist
        envelope (a ``request`` or ``response`` key) is not read: ``None``."""
        request = typed_decode(_PEEK, content) if self.path_matches(method, path) else None
        if request is None or request.contents is msgspec.UNSET:
            return None
        if request.request is not msgspec.UNSET or request.response is not msgspec.UNSET:
            return None
        names: list[str] = []
        for entry in request.contents:
            for part in entry.parts if entry.parts is not msgspec.UNSET else ():
                for ref in (part.functionCall, part.function_call, part.functionResponse, part.function_response):
                    if ref is not msgspec.UNSET and type(ref.name) is str:
                        names.append(ref.name)
        small = present(request, "model", "systemInstruction", "system_instruction")
        texts = self.system_texts(small)
        return Peek(
            self.model_of(path, small),
            self.wants_stream(path, small),
            texts,
            texts,
            names,
            sections_of(request, "tools"),
            stops=self.stop_sequences(present(request, "generationConfig", "generation_config")),
            limited=self.limits_calls(config := present(request, "toolConfig", "tool_config")),
            allowed=self.allowed_names(config),
        )

    # -- request ------------------------------------------------------------------------------

    def declared_tools(self, body: JSON) -> list[DeclaredTool]:
        """Every ``functionDeclarations[]`` entry (``function``). Built-in tools
        (``googleSearch``, ``codeExecution``, ``urlContext``…) carry no name."""
        req = _unwrap(body)
        out: list[DeclaredTool] = []
        raws: list[Any] = []
        for tool in _list(req.get("tools")):
            key = _decl_key(tool)
            for decl in tool[key] if key is not None else ():
                if not isinstance(decl, dict) or not isinstance(decl.get("name"), str):
                    continue
                # google-genai writes parameters_json_schema in snake_case (2.34.0), the API
                # documents parametersJsonSchema; both mean JSON Schema.
                schema = decl.get("parametersJsonSchema", decl.get("parameters_json_schema"))
                if not isinstance(schema, dict):
                    params = decl.get("parameters")
                    schema = openapi_to_jsonschema(params) if isinstance(params, dict) else None
                out.append(
                    DeclaredTool(
                        name=decl["name"],
                        kind=ToolKind.FUNCTION,
                        input_schema=schema,
                        description=decl.get("description") if isinstance(decl.get("description"), str) else None,
                    )
                )
                raws.append(decl)
        return mark_repeats(out, raws)

    def declarations(self, body: JSON) -> JSON:
        """``tools`` of the request (inside a Code Assist envelope when there is one): all that
        :meth:`declared_tools` reads."""
        req = _unwrap(body)
        return req.get("tools") if isinstance(req, dict) else None

    def transcript_names(self, body: JSON) -> list[str]:
        """Names in the transcript's ``functionCall`` and ``functionResponse`` parts (either
        spelling, :data:`_REF_KEYS`)."""
        names: list[str] = []
        for content in _list(_unwrap(body).get("contents")):
            for part in _list(content.get("parts")) if isinstance(content, dict) else ():
                for key in _REF_KEYS:
                    inner = part.get(key) if isinstance(part, dict) else None
                    if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                        names.append(inner["name"])
        return names

    def transcript_calls(self, body: JSON, keep: Callable[[str], bool] | None = None) -> list[tuple[str, Any]]:
        """``(name, args)`` of each ``functionCall`` part in ``contents`` (snake_case
        ``function_call`` too; Code Assist envelope unwrapped), in order; with ``keep``, of those
        whose name it accepts."""
        calls: list[tuple[str, Any]] = []
        for content in _list(_unwrap(body).get("contents")):
            for part in _list(content.get("parts")) if isinstance(content, dict) else ():
                for key in ("functionCall", "function_call"):
                    inner = part.get(key) if isinstance(part, dict) else None
                    if (
                        isinstance(inner, dict)
                        and isinstance(inner.get("name"), str)
                        and (keep is None or keep(inner["name"]))
                    ):
                        calls.append((inner["name"], inner.get("args")))
        return calls

    def tool_results(self, body: JSON) -> list[ToolResult]:
        """Every ``functionResponse`` part in ``contents`` (Code Assist envelope unwrapped;
        snake_case ``function_response`` too), in order.

        The name and id are the part's own. A ``response.error`` (Gemini CLI and Qwen Code put
        every tool error there) makes ``is_error`` ``True`` and is the text; otherwise the text
        is ``response.output`` when it is a string, else the whole ``response`` as compact JSON,
        and ``is_error`` is ``None``.
        """
        results: list[ToolResult] = []
        request = _unwrap(body)
        if not isinstance(request, dict):
            return results
        for content in _list(request.get("contents")):
            for part in _list(content.get("parts")) if isinstance(content, dict) else ():
                if not isinstance(part, dict):
                    continue
                inner = part.get("functionResponse", part.get("function_response"))
                if not isinstance(inner, dict):
                    continue
                response = inner.get("response")
                is_error: bool | None = None
                if isinstance(response, dict) and response.get("error") is not None:
                    text, is_error = _as_text(response["error"]), True
                elif isinstance(response, dict) and isinstance(response.get("output"), str):
                    text = response["output"]
                else:
                    text = _as_text(response) if response is not None else ""
                results.append(
                    ToolResult(
                        call_id=inner.get("id") if isinstance(inner.get("id"), str) else None,
                        name=inner.get("name") if isinstance(inner.get("name"), str) else None,
                        text=text,
                        is_error=is_error,
                    )
                )
        return results

    def model_of(self, path: str, body: JSON) -> str | None:
        """The model from the path (``models/{model}:…``) or a Code Assist body's ``model``."""
        m = re.search(r"models/([^/:?]+):", path_only(path))
        if m:
            return m.group(1)
        return body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None

    def platform_texts(self, body: JSON) -> list[str]:
        """The system texts (where this agent family describes its machine)."""
        return self.system_texts(body)

    def system_texts(self, body: JSON) -> list[str]:
        """The text parts of ``systemInstruction``."""
        req = _unwrap(body)
        system = req.get("systemInstruction") or req.get("system_instruction")
        if isinstance(system, str):
            return [system]
        if isinstance(system, dict):
            return [
                p["text"] for p in _list(system.get("parts")) if isinstance(p, dict) and isinstance(p.get("text"), str)
            ]
        return []

    def apply_request(self, body: JSON, plan: Plan) -> bool:
        """Rename per ``plan.rename_map`` in declarations, the allowed function names (either
        spelling, :func:`_allowed_names`) and every
        transcript ``functionCall`` / ``functionResponse`` (either spelling); add the prompt sentence as a text
        part of ``systemInstruction``."""
        req = _unwrap(body)
        changed = False
        rename = plan.rename_map
        cursor = DuplicateCursor(plan)  # one count over every tools[] entry, in order
        for tool in _list(req.get("tools")):
            key = _decl_key(tool)
            if key is not None:
                changed |= dedupe_tools(
                    tool[key],
                    plan,
                    lambda d: d["name"] if isinstance(d, dict) and isinstance(d.get("name"), str) else None,
                    lambda d, alias: d.__setitem__("name", alias),
                    cursor=cursor,
                )
        if rename:
            for tool in _list(req.get("tools")):
                key = _decl_key(tool)
                for decl in tool[key] if key is not None else ():
                    changed |= _rename(decl, rename)
            for names in _allowed_names(req):
                for i, name in enumerate(names):
                    if isinstance(name, str) and name in rename:
                        names[i] = rename[name]
                        changed = True
            for content in _list(req.get("contents")):
                for part in _list(content.get("parts")) if isinstance(content, dict) else ():
                    if isinstance(part, dict):
                        for key in _REF_KEYS:
                            changed |= _rename(part.get(key), rename)
        if plan.prompt_sentence:
            skey = (
                "system_instruction"
                if "system_instruction" in req and "systemInstruction" not in req
                else "systemInstruction"
            )
            system = req.get(skey)
            if system is None:
                req[skey] = {"parts": [{"text": plan.prompt_sentence}]}
                changed = True
            elif isinstance(system, dict) and isinstance(system.get("parts"), list):
                system["parts"].append({"text": plan.prompt_sentence})
                changed = True
            elif isinstance(system, str):
                req[skey] = system + "\n\n" + plan.prompt_sentence
                changed = True
        return changed

    def request_heads(self, body: JSON, plan: Plan) -> dict[str, int]:
        """``{}``: each list this dialect's plan changes is written whole."""
        return {}

    def request_keys(self, body: JSON, plan: Plan, aliases: dict[str, str] | None = None) -> frozenset[str] | None:
        """``tools`` and the tool config (either spelling); ``contents`` when names are renamed (earlier
        ``functionCall`` / ``functionResponse`` parts); the system instruction (either
        spelling) for the prompt sentence. ``None`` for a Code Assist envelope (all of it is
        under ``request``)."""
        if _unwrap(body) is not body:
            return None
        keys = {"tools", "toolConfig", "tool_config"}
        if plan.rename_map:
            keys.add("contents")
        if plan.prompt_sentence:
            keys |= {"systemInstruction", "system_instruction"}
        return frozenset(keys)

    # -- response -----------------------------------------------------------------------------

    def call_id_aliases(self, body: JSON) -> dict[str, str]:
        """``{}``: Gemini pairs calls and responses by name, and its ids are never refused."""
        return {}

    def alias_call_ids(self, body: JSON, aliases: dict[str, str] | None = None) -> dict[str, str]:
        """``{}``: Gemini pairs calls and responses by name, and its ids are never refused."""
        return {}

    def rewrite_response(self, body: JSON, flow: FlowContext) -> bool:
        """Resolve every ``functionCall`` part (a ``multi_tool_use.parallel`` one becomes its
        calls, BR-08); lift text that is nothing but tool-call markup into ``functionCall`` parts
        (:func:`lift_text_parts`); a JSON array (``streamGenerateContent`` without ``alt``) is
        rewritten element by element, without lifting."""
        ids = flow.ids()
        gave_up: list[str] = []
        if isinstance(body, list):
            changed = False
            for element in body:
                # An element holds a piece of the text: no lift from one piece.
                changed |= _rewrite_candidates(element, flow, ids, lift_text=False, gave_up=gave_up)
        else:
            changed = _rewrite_candidates(body, flow, ids, gave_up=gave_up)
        from toolvocab.report import passed_note  # the record's module imports the dialects

        for why in gave_up:
            but = " but for its name" if NAMED_BACK in why else ""
            flow.note(passed_note(why, f"the client got the call as the upstream sent it{but}"))
        return changed

    def answer_may_change(self, raw: bytes) -> bool:
        """True: every JSON answer is read (its ``functionCall`` parts and text are read whole)."""
        return True

    def wants_stream(self, path: str, body: JSON) -> bool:
        """``:streamGenerateContent`` streams (SSE with ``alt=sse``, else a JSON array)."""
        return ":streamGenerateContent" in path_only(path)

    def answers_unread(self, path: str, body: JSON) -> str | None:
        """An ``alt`` (or ``$alt``) query parameter other than ``json`` or ``sse``: the answer
        comes in that format (``alt=proto``: binary protobuf; Google APIs' system parameters,
        https://cloud.google.com/apis/docs/system-parameters), which toolvocab does not read.
        ``None`` otherwise: JSON, an event stream and a JSON array are read."""
        query = path.partition("?")[2]
        for key, value in parse_qsl(query, keep_blank_values=True) if query else ():
            if key in ("alt", "$alt") and value.lower() not in ("json", "sse"):
                return f"Gemini's answer to alt={value} is not JSON, which toolvocab does not read"
        return None

    def keeps_answer(self, body: JSON) -> bool:
        """False: no request of this API continues from a kept answer by its id."""
        return False

    def stop_sequences(self, body: JSON) -> bool:
        """A non-empty ``stopSequences`` in the generation config (either spelling of each key,
        inside a Code Assist envelope too): the API ends an answer at one with ``finishReason``
        ``STOP``, as at its natural end (Gemini API reference, ``GenerationConfig.stopSequences``;
        ``FinishReason.STOP``: "natural stop point of the model or provided stop sequence")."""
        req = _unwrap(body)
        if not isinstance(req, dict):
            return False
        for config in (req.get("generationConfig"), req.get("generation_config")):
            if isinstance(config, dict):
                for key in ("stopSequences", "stop_sequences"):
                    if config.get(key):
                        return True
        return False

    def limits_calls(self, body: JSON) -> bool:
        """A ``toolConfig.functionCallingConfig`` (either spelling of each key, inside a Code
        Assist envelope too) whose ``mode`` is ``NONE`` or not one this reader knows, or that
        lists ``allowedFunctionNames`` (Gemini API reference, ``FunctionCallingConfig``: ``AUTO``,
        ``ANY``, ``NONE``, ``VALIDATED``; absent: ``AUTO``)."""
        req = _unwrap(body)
        if not isinstance(req, dict):
            return False
        if _allowed_names(req):
            return True
        for config in (req.get("toolConfig"), req.get("tool_config")):
            if config is not None and not isinstance(config, dict):
                return True
            for calling in (
                (config.get("functionCallingConfig"), config.get("function_calling_config")) if config else ()
            ):
                if calling is None:
                    continue
                if not isinstance(calling, dict) or not _open_mode(calling.get("mode")):
                    return True
        return False

    def allowed_names(self, body: JSON) -> frozenset[str] | None:
        """Every tool unless ``toolConfig.functionCallingConfig`` (either spelling of each key,
        inside a Code Assist envelope too) says otherwise: none for ``mode`` ``NONE`` or one this
        reader does not know, else the names every ``allowedFunctionNames`` list holds (Gemini
        API reference, ``FunctionCallingConfig``)."""
        req = _unwrap(body)
        if not isinstance(req, dict):
            return None
        allowed: frozenset[str] | None = None
        for config in (req.get("toolConfig"), req.get("tool_config")):
            if config is not None and not isinstance(config, dict):
                return frozenset()
            for calling in (
                (config.get("functionCallingConfig"), config.get("function_calling_config")) if config else ()
            ):
                if calling is None:
                    continue
                if not isinstance(calling, dict) or not _open_mode(calling.get("mode")):
                    return frozenset()
        for names in _allowed_names(req):
            listed = frozenset(n for n in names if isinstance(n, str))
            allowed = listed if allowed is None else allowed & listed
        return allowed

    def stream_rewriter(self, flow: FlowContext) -> GeminiStream:
        """A rewriter that accepts both stream framings (SSE or a JSON array)."""
        return GeminiStream(flow)


def _decl_key(tool: Any) -> str | None:
    """``functionDeclarations`` (or the snake_case ``function_declarations``) when it is a list."""
    if not isinstance(tool, dict):
        return None
    for key in ("functionDeclarations", "function_declarations"):
        if isinstance(tool.get(key), list):
            return key
    return None


def _rename(obj: Any, rename: dict[str, str]) -> bool:
    if isinstance(obj, dict) and isinstance(obj.get("name"), str) and obj["name"] in rename:
        obj["name"] = rename[obj["name"]]
        return True
    return False


def _as_text(value: Any) -> str:
    """A string as is; anything else as compact JSON."""
    if isinstance(value, str):
        return value
    try:
        return jsonio.dumps(value).decode()
    except TypeError:
        return str(value)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


#: The keys of a part's call: the API's JSON name and the proto field name, both of which
#: google-genai reads into ``Part.function_call`` (its pydantic models take either spelling;
#: protobuf's JSON printer writes the second with ``preserving_proto_field_name``).
_CALL_KEYS = ("functionCall", "function_call")
#: A part's thought signature and a candidate's finish reason, in the same two spellings.
_SIGNATURE_KEYS = ("thoughtSignature", "thought_signature")
_FINISH_KEYS = ("finishReason", "finish_reason")


def _call_key(part: Any) -> str | None:
    """The key under which ``part`` (a ``Part``) holds its ``functionCall``, in either spelling
    (a ``null`` value holds none: pydantic reads ``{"functionCall": {…}, "function_call": null}``
    as the one call); ``None`` when it holds none, or two (two readings: the part is left as it
    came; google-genai refuses such a part)."""
    if not isinstance(part, dict):
        return None
    keys = [key for key in _CALL_KEYS if part.get(key) is not None]
    return keys[0] if len(keys) == 1 else None


def _has_call(part: Any) -> bool:
    """True for a part that holds a ``functionCall`` (not ``null``) in either spelling, or both."""
    return isinstance(part, dict) and any(part.get(key) is not None for key in _CALL_KEYS)


def _finish(candidate: Any) -> Any:
    """A candidate's ``finishReason`` (either spelling; ``null`` is none), ``None`` without one;
    when both spellings hold one and they differ, ``"two readings"`` (not ``STOP``: the answer
    counts as cut)."""
    if not isinstance(candidate, dict):
        return None
    values = [candidate[key] for key in _FINISH_KEYS if candidate.get(key) is not None]
    if len(values) == 2 and values[0] != values[1]:
        return "two readings"
    return values[0] if values else None


def _signature(part: Any) -> tuple[str, Any] | None:
    """``(key, value)`` of a part's thought signature in the spelling it came in, or ``None``."""
    if isinstance(part, dict):
        for key in _SIGNATURE_KEYS:
            if part.get(key) is not None:
                return key, part[key]
    return None


def _streams_arguments(call: dict[str, Any]) -> bool:
    """True for a ``functionCall`` whose arguments come in later parts (Vertex AI's
    ``streamFunctionCallArguments``: ``partialArgs`` pieces keyed by JSON path, ``willContinue``
    until the last; google-genai 2.34 ``types.FunctionCall.partial_args`` / ``will_continue``):
    the call is not known whole in this part."""
    return (
        "partialArgs" in call
        or "partial_args" in call
        or call.get("willContinue") is True
        or call.get("will_continue") is True
    )


def _rewrite_candidates(
    body: Any,
    flow: FlowContext,
    ids: CallIds | None = None,
    *,
    lift_text: bool = True,
    gave_up: list[str] | None = None,
) -> bool:
    """Resolve each ``functionCall`` of ``body``'s candidates in place (and, with ``lift_text``,
    lift a single candidate's text into calls); True when anything changed. A call whose
    arguments are streamed in later parts (:func:`_streams_arguments`) is not resolved: it goes
    as it came but for an upstream alias of the client's own tool, named back, and ``gave_up``
    (a stream rewriter's ``unrepaired``) gets a sentence saying why."""
    resolve = flow.resolve
    response = _unwrap(body)
    if not isinstance(response, dict):
        return False
    changed = False
    for candidate in _list(response.get("candidates")):
        content = candidate.get("content") if isinstance(candidate, dict) else None
        parts = _list(content.get("parts")) if isinstance(content, dict) else []
        # Only STOP is the model's own end: MAX_TOKENS, SAFETY, MALFORMED_FUNCTION_CALL, OTHER…,
        # or no finishReason yet (a stream's earlier chunk), may have cut a call's arguments,
        # which are then never completed; and only a natural end's text is lifted.
        cut = not isinstance(candidate, dict) or _finish(candidate) != "STOP"
        new_parts: list[Any] = []
        for part in parts:
            key = _call_key(part)
            call = part[key] if key is not None else None
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                if ids is not None:
                    # Gemini usually sends no id (calls pair by name): only an empty or repeated
                    # id is replaced; an absent one stays absent (but counts as a position).
                    new_id = ids.fix(call.get("id"))
                    if new_id is not None and "id" in call:
                        call["id"] = new_id
                        changed = True
                expanded = _expand_parallel_part(part, call, flow)
                if expanded is not None:  # BR-08: the wrapper becomes its calls
                    new_parts.extend(expanded)
                    changed = True
                    continue
                new_parts.append(part)
                if _streams_arguments(call):
                    # Its arguments are not all here (they come as partialArgs in later parts):
                    # a decision on what is here could move them under another schema's reading.
                    back = flow.name_back(call["name"])
                    if gave_up is not None:
                        gave_up.append(
                            f"the tool call {call['name']}'s arguments are streamed in later parts (partialArgs), "
                            "so the call is not known whole" + (NAMED_BACK + back[0] if back is not None else "")
                        )
                    if back is not None:
                        call["name"] = back[0]
                        changed = True
                    continue
                # args null / "" / [] reach the engine as empty arguments and come back as {}
                # after a natural end; an absent args is a call without arguments and stays absent.
                read = object_arguments_call(
                    call["name"], call, "args", call.get("id") if isinstance(call.get("id"), str) else None, absent={}
                )
                decision = resolve(read.model_copy(update={"truncated": True}) if cut else read)
                if not decision.changed:
                    continue
                new_name = apply_decision_name(decision)
                if new_name is not None:
                    call["name"] = new_name
                if decision.arguments_after is not None:
                    call["args"] = decision.arguments_after
                changed = True
            else:
                new_parts.append(part)
        if isinstance(content, dict) and new_parts != parts:
            content["parts"] = new_parts
        if (
            lift_text
            and not cut
            and isinstance(content, dict)
            and len(_list(response.get("candidates"))) == 1
            and not _cites(candidate)
        ):
            lifted = lift_text_parts(new_parts, flow)
            if lifted is not None:
                content["parts"] = lifted
                changed = True
    return changed


def _first_signature(held: list[Any]) -> tuple[str, Any] | None:
    """``(key, value)`` of the thought signature of the first text part that has one in the
    held events (candidate 0's parts, either spelling), or ``None``."""
    for event in held:
        inner = _unwrap(event.json())
        candidates = _list(inner.get("candidates")) if isinstance(inner, dict) else []
        candidate = candidates[0] if candidates and isinstance(candidates[0], dict) else {}
        content = candidate.get("content")
        for part in _list(content.get("parts")) if isinstance(content, dict) else []:
            if _is_text_part(part) and _signature(part) is not None:
                return _signature(part)
    return None


def _call_part(name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A new call part, spelled ``functionCall`` whatever the answer's spelling: the key every
    client reads (``@google/genai``, Gemini CLI's SDK, reads only it: ``partFromMldev``;
    google-genai both)."""
    return {"functionCall": {"name": name, "args": args}}


def _expand_parallel_part(part: dict[str, Any], call: dict[str, Any], flow: FlowContext) -> list[dict[str, Any]] | None:
    """The ``functionCall`` parts a ``multi_tool_use.parallel`` call stands for (BR-08), or
    ``None`` (not a wrapper, or a part does not resolve: the wrapper stays whole)."""
    if call["name"].strip() != PARALLEL_WRAPPER or not isinstance(call.get("args"), dict):
        return None
    expanded = textcalls.expand_parallel(
        ToolCall(
            name=call["name"], arguments=call["args"], id=call.get("id") if isinstance(call.get("id"), str) else None
        ),
        flow,
    )
    if expanded is None:
        return None
    out = []
    for k, (sub, decision) in enumerate(expanded):
        args = decision.arguments_after if decision.arguments_after is not None else sub.arguments
        new = _call_part(decision.target or sub.name, args if isinstance(args, dict) else {})
        signature = _signature(part)
        if k == 0 and signature is not None:
            new[signature[0]] = signature[1]
        out.append(new)
    return out


#: The candidate keys that say its text quotes or rests on a source (Gemini API reference,
#: ``Candidate``: ``citationMetadata``, ``groundingMetadata``; either spelling of each).
_CITING = ("citationMetadata", "citation_metadata", "groundingMetadata", "grounding_metadata")


def _cites(candidate: Any) -> bool:
    """True for a candidate that carries citation or grounding metadata (any value but ``null``
    or an empty one): markup in its text may be quoted from a source, and is never lifted."""
    return isinstance(candidate, dict) and any(candidate.get(key) not in (None, {}, []) for key in _CITING)


def _is_text_part(part: Any) -> bool:
    """A text part that is answer text (not a ``thought`` summary)."""
    return isinstance(part, dict) and isinstance(part.get("text"), str) and not part.get("thought")


def lift_text_parts(parts: list[Any], flow: FlowContext) -> list[Any] | None:
    """``parts`` with the answer's text lifted into ``functionCall`` parts, or ``None`` to leave
    them as they are.

    Lifted only when no part is a ``functionCall`` and the text parts (``thought`` parts aside),
    joined, are nothing but tool-call markup whose calls resolve and validate
    (:func:`toolvocab.dialects.textcalls.lift`). The call parts take the place of the first text part,
    after the reasoning text that remains (if any); they carry no ``id`` (Gemini pairs calls and
    responses by name and sends none itself) and the first keeps the text's
    ``thoughtSignature`` (the first text part's that has one; on the remaining text, if any).
    The candidate's ``finishReason`` stays (``STOP`` is what Gemini sends with calls)."""
    if any(_has_call(p) for p in parts):
        return None
    texts = [i for i, p in enumerate(parts) if _is_text_part(p)]
    if not texts:
        return None
    found = textcalls.lift("".join(parts[i]["text"] for i in texts), flow, lambda i: "")
    if found is None:
        return None
    remaining, calls = found
    first = parts[texts[0]]
    # the first text part's signature that has one (Gemini 3 may stream it on a last empty part)
    signed = next((_signature(parts[i]) for i in texts if _signature(parts[i]) is not None), None)
    new: list[Any] = []
    if remaining.strip():
        kept = {k: v for k, v in first.items() if k not in _SIGNATURE_KEYS}
        new.append({**kept, "text": remaining, **({signed[0]: signed[1]} if signed else {})})
    for k, call in enumerate(calls):
        part = _call_part(call.name, call.arguments)
        if k == 0 and signed is not None and not new:
            part[signed[0]] = signed[1]
        new.append(part)
    text_set = set(texts)
    return (
        [p for i, p in enumerate(parts) if i < texts[0] and i not in text_set]
        + new
        + [p for i, p in enumerate(parts) if i > texts[0] and i not in text_set]
    )


class GeminiStream(EventStreamRewriter):
    """Rewrites a Gemini stream, SSE (``alt=sse``) or a bare JSON array, chunk by chunk.

    Each SSE event or array element is a complete response and goes out as soon as it is
    whole, rewritten only when a ``functionCall`` in it changes; everything between elements
    (brackets, commas, whitespace) passes through as received. Never buffers the whole body.

    Tool calls left in text (a single-candidate answer): events go out at
    once while the text so far is whitespace or a leading reasoning block, and for good once it
    is prose. From the event where markup may start, events are held to the one carrying the
    candidate's ``finishReason``; then the held text is lifted into ``functionCall`` parts, sent
    in one event built on that last one (its ``finishReason`` and ``usageMetadata`` kept), or,
    when it does not lift, every held event goes out as it came. A ``functionCall`` part, a
    second candidate or the end of the stream release the hold unchanged. In a JSON array the
    same holds element by element (the bytes between elements wait with them); an earlier held
    element is kept, its text emptied, as dropping it would leave a comma.
    """

    #: A ``functionCall`` is changed; text events are read only while a lift is possible
    #: (:meth:`holding`). Other SSE events pass unparsed.
    MARKERS = (b'"functionCall"', b'"function_call"')
    #: google-genai dispatches every ``data:`` line as it ends, the last one at the end of the
    #: stream too, blank line or not (google/genai/_api_client.py, HttpResponse._iter_response_stream).
    READS_UNTERMINATED = True

    def __init__(self, flow: FlowContext) -> None:
        super().__init__()
        self._flow = flow
        self._ids = flow.ids()
        self._framing: str | None = None  # "sse" | "array", decided by the first non-blank byte
        self._array = _ArraySplitter()
        self._prefix = bytearray()  # blank bytes seen before the framing was known
        # The answer's text, watched (and held from where markup may start) while a lift is possible
        self._text: textcalls.TextHold | None = (
            None if flow.tools is None or flow.stops or flow.limited else textcalls.TextHold()
        )  # none: nothing will be lifted, no text is held
        self._names_only = False  # give_back: every later event as it came but for an alias named back

    def holding(self) -> bool:
        """While the text may still be tool-call markup, every event goes to :meth:`on_event`."""
        return self._text is not None

    def has_held(self) -> bool:
        """Text events that may be tool-call markup are held."""
        return self._text is not None and bool(self._text.held)

    def held(self) -> list[bytes]:
        """Raw bytes of the held text events (clears them; no lift after this)."""
        held = self._text.release() if self._text is not None else []
        self._text = None
        return [e.raw for e in held]

    def at_end(self) -> list[bytes]:
        """End of stream: held text goes out as it came (no ``finishReason`` arrived)."""
        return self.held()

    def give_back(self, why: str) -> list[bytes] | None:
        """:meth:`EventStreamRewriter.give_back`, in either framing (a JSON array's elements as
        :meth:`feed` and :meth:`_element` read them after one that cannot be read): held text as
        it came (:meth:`let_go`), then every later event or element as it came but for a
        ``functionCall``'s upstream alias of the client's own tool, named back."""
        out = self.let_go(why)
        self._names_only = True
        self.repairs_after_let_go = False  # a later stall's note: nothing after this is repaired
        return out

    def _name_back(self, event: SSEEvent, data: Any) -> list[bytes]:
        """One event after :meth:`give_back`: as it came but for the names it gives back."""
        return [event.with_json(data).raw] if self._names_back_in(data) else [event.raw]

    def _names_back_in(self, data: Any) -> bool:
        """Give back, in ``data`` (a response, or its Code Assist envelope), each ``functionCall``
        name that is an upstream alias of this flow; whether one was."""
        response = _unwrap(data)
        changed = False
        for candidate in _list(response.get("candidates")) if isinstance(response, dict) else []:
            content = candidate.get("content") if isinstance(candidate, dict) else None
            for part in _list(content.get("parts")) if isinstance(content, dict) else []:
                key = _call_key(part)
                call = part[key] if key is not None else None
                back = (
                    self._flow.name_back(call["name"])
                    if isinstance(call, dict) and isinstance(call.get("name"), str)
                    else None
                )
                if back is not None:
                    call["name"] = back[0]
                    changed = True
        return changed

    def on_event(self, event: SSEEvent) -> list[bytes]:
        """One SSE event: rewrite its response if a call changes; hold text that may be a call."""
        data = event.json()
        if self._names_only:
            return self._name_back(event, data)
        if self._text is not None:
            return self._on_text(event, data)
        if data is None:
            return [event.raw]
        if _rewrite_candidates(data, self._flow, self._ids, lift_text=False, gave_up=self.unrepaired):
            return [event.with_json(data).raw]
        return [event.raw]

    def _on_text(self, event: Any, data: Any) -> list[bytes]:
        text = self._text
        assert text is not None
        if data is None and event.data is not None:
            # Not JSON: it may hold the text that makes the rest prose, so nothing is lifted
            return self._give_up() + [event.raw]
        response = _unwrap(data)
        candidates = _list(response.get("candidates")) if isinstance(response, dict) else []
        if event.data is None or not candidates:
            # A comment, keep-alive or a chunk without candidates (usage, prompt feedback).
            if text.held is not None:
                return text.keep(event)
            return self._plain(event, data)
        candidate = (
            candidates[0]
            if len(candidates) == 1 and isinstance(candidates[0], dict) and candidates[0].get("index", 0) == 0
            else None
        )  # another candidate (candidateCount > 1, one per event): the texts are not one text
        content = candidate.get("content") if candidate is not None else None
        parts = _list(content.get("parts")) if isinstance(content, dict) else []
        if candidate is None or _cites(candidate) or any(_has_call(p) for p in parts):
            # another candidate, a citation of a source (quoted markup is quoted), a real call
            return self._give_up() + self._plain(event, data)
        piece = "".join(p["text"] for p in parts if _is_text_part(p))
        state, out = text.add(piece, event)
        done = bool(_finish(candidate))
        if state == textcalls.PROSE:
            self._text = None
            return [e.raw for e in out[:-1]] + self._plain(event, data)
        if state == textcalls.LEAD:  # out: this event, after what was held ("<thin" became reasoning)
            if done:
                self._text = None
            return self._plain(event, data) if len(out) == 1 else [e.raw for e in out]
        if done:
            if _finish(candidate) != "STOP":
                # MAX_TOKENS, SAFETY, RECITATION, OTHER…: perhaps cut short or withheld, never lifted
                return self._give_up()
            return self._lift_held()
        return []

    def _plain(self, event: Any, data: Any) -> list[bytes]:
        if isinstance(event, _ArrayUnit):
            return [event.raw]  # an array element: its calls were resolved when it was cut
        if data is not None and _rewrite_candidates(
            data, self._flow, self._ids, lift_text=False, gave_up=self.unrepaired
        ):
            return [event.with_json(data).raw]
        return [event.raw]

    def _give_up(self) -> list[bytes]:
        """No lift in this answer: what is held goes out as it came."""
        return self.held()

    def _lift_held(self) -> list[bytes]:
        hold = self._text
        assert hold is not None and hold.held is not None
        held = hold.held
        found = textcalls.lift(hold.watch.text, self._flow, lambda i: "")
        if found is None:
            return self.held()
        remaining, calls = found
        last = held[-1]
        data = jsonio.loads(jsonio.dumps(last.json()))
        response = _unwrap(data)
        candidate = response["candidates"][0]
        content = candidate.setdefault("content", {"role": "model"})
        parts = [p for p in _list(content.get("parts")) if not _is_text_part(p)]
        new: list[Any] = []
        extra = hold.remaining_after_release(remaining)
        # The first held text part's thoughtSignature goes where the JSON path puts it
        # (lift_text_parts): on the text that remains, else on the first call.
        signature = _first_signature(held)
        if extra:
            new.append({"text": extra} if signature is None else {"text": extra, signature[0]: signature[1]})
        new += [_call_part(call.name, call.arguments) for call in calls]
        if signature is not None and not extra and len(new) > 0:
            new[0][signature[0]] = signature[1]
        out: list[bytes] = []
        for event in held[:-1]:
            earlier = event.json()
            inner = _unwrap(earlier)
            if not isinstance(inner, dict) or not _list(inner.get("candidates")):
                out.append(event.raw)  # keep-alives and chunks without candidates keep going out
                continue
            cand = inner["candidates"][0]
            earlier_parts = _list((cand.get("content") or {}).get("parts") if isinstance(cand, dict) else None)
            kept = [p for p in earlier_parts if not _is_text_part(p)]
            if len(kept) == len(earlier_parts):
                out.append(event.raw)  # none of the lifted text in it (a safetyRatings-only chunk)
                continue
            if isinstance(event, _ArrayUnit):
                # An array element cannot be dropped (its comma stays): its text becomes "".
                copy = jsonio.loads(jsonio.dumps(earlier))
                _unwrap(copy)["candidates"][0]["content"]["parts"] = [
                    {**{k: v for k, v in p.items() if k not in _SIGNATURE_KEYS}, "text": ""} if _is_text_part(p) else p
                    for p in earlier_parts
                ]  # its signature, if any, went with the lifted parts
                out.append(event.with_json(copy).raw)
            elif kept:  # thought parts in a held event still go out, without the text
                copy = jsonio.loads(jsonio.dumps(earlier))
                _unwrap(copy)["candidates"][0]["content"]["parts"] = kept
                out.append(event.with_json(copy).raw)
        content["parts"] = parts + new
        out.append(last.with_json(data).raw)
        self._text = None
        return out

    def feed(self, chunk: bytes) -> list[bytes]:
        """Route to SSE or JSON-array framing, decided by the body's first non-blank byte."""
        if self._framing is None:
            head = jsonio.split_bom(bytes(self._prefix) + chunk)[1].lstrip()
            if not head or jsonio.BOM.startswith(head):  # blank, or a byte order mark's first bytes
                self._prefix += chunk
                return []
            self._framing = "array" if head[:1] == b"[" else "sse"
            chunk, self._prefix = bytes(self._prefix) + chunk, bytearray()
        if self._framing == "sse":
            return super().feed(chunk)
        if self.error is not None and not self._array.pending:
            return [chunk] if chunk else []
        # Elements are contained one by one in _element; after an error the splitter keeps
        # cutting (so no byte is lost) and every element passes through as received.
        pieces = [b for b in self._array.feed(chunk, self._element) if b]
        if self._array.error is not None and self.error is None:
            self.error = self._array.error
        if self._names_only and self._text is not None:
            return [bytes(b) for b in self.held() + pieces]  # the text watch ends: held text as it came
        if self._text is None or self.error is not None:
            held = self._text is not None and bool(self._text.held)
            return [bytes(b) for b in self.held() + pieces] if held else [bytes(b) for b in pieces]
        out: list[bytes] = []
        for i, piece in enumerate(pieces):
            unit = _ArrayUnit(bytes(piece), isinstance(piece, _Element))
            try:
                out += self._on_text(unit, unit.json()) if self._text is not None else [unit.raw]
            except Exception as exc:  # contain: what is held and the rest go out as received
                if isinstance(exc, (RepeatedKey, Unreadable)):
                    # an element that cannot be read: later ones are read for aliases only
                    self.contained = self.contained or f"{type(exc).__name__}: {exc}"
                    self._names_only = True
                    self.repairs_after_let_go = False
                else:
                    self.error = f"{type(exc).__name__}: {exc}"
                out += self.held()
                if not out or out[-1] is not unit.raw:
                    out.append(unit.raw)
                out += [bytes(b) for b in pieces[i + 1 :]]
                break
        return out

    def let_go(self, why: str) -> list[bytes]:
        """What is held, given up (:meth:`EventStreamRewriter.let_go`): only text is ever held
        (each call goes out with its event), as it came, never lifted; an unfinished event or
        element stays to be completed. The rewrite goes on."""
        if self.error is not None:
            return self.salvage()
        return self.held()

    def salvage(self) -> list[bytes]:
        """Every byte taken in but not sent, unchanged; then pass everything through."""
        if self._framing == "sse":
            return super().salvage()
        self.error = self.error or "salvaged"
        rest = b"".join(self.held()) + bytes(self._prefix) + self._array.drain()
        self._prefix = bytearray()
        return [rest] if rest else []

    def finish(self) -> list[bytes]:
        """End of stream: whatever is left, unchanged."""
        if self._framing is None:
            rest, self._prefix = bytes(self._prefix), bytearray()
            return [rest] if rest else []
        if self._framing == "array":
            rest = b"".join(self.held()) + self._array.drain()
            return [rest] if rest else []
        return super().finish()

    def _element(self, raw: bytes) -> bytes:
        """One whole array element: rewritten if a call in it changes; on any error, as is (one
        that repeats a key: as is, and later ones only have this flow's aliases given back).
        While a lift is possible the result is marked as an element (:class:`_Element`) for the
        text watch in :meth:`feed`."""
        mark = _Element if self._text is not None else bytes
        if self.error is not None:
            return raw
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        if (b'"functionCall"' in raw or b'"function_call"' in raw or b"\\u" in raw) and jsonio.has_duplicate_keys(
            raw, data
        ):
            # Which value the client reads is its parser's choice: this element passes as it
            # came, and the rest as they come but for this flow's aliases, given back.
            self.contained = self.contained or f"RepeatedKey: {RepeatedKey.NOTE}"
            self._names_only = True
            self.repairs_after_let_go = False
            return raw
        if self._names_only:
            return jsonio.dumps(data) if self._names_back_in(data) else raw
        try:
            if _rewrite_candidates(data, self._flow, self._ids, lift_text=False, gave_up=self.unrepaired):
                return mark(jsonio.dumps(data))
        except Exception as exc:  # contain: this element and the rest pass through unchanged
            self.error = f"{type(exc).__name__}: {exc}"
            return raw
        return mark(raw)


class _Element(bytes):
    """An array element's bytes (what :meth:`GeminiStream._element` made of it)."""


class _ArrayUnit:
    """A piece of a streamed JSON array with the surface the text watch uses (``raw``,
    ``data``, ``json()``, ``with_json()``): an element, or the bytes between elements
    (``data`` ``None``, like an SSE comment). Its calls were already resolved by
    :meth:`GeminiStream._element`."""

    __slots__ = ("raw", "data", "_json", "_repeated")

    def __init__(self, raw: bytes, element: bool) -> None:
        self.raw = raw
        self.data = raw if element else None
        self._json: Any = None
        self._repeated = False
        if element:
            try:
                self._json = orjson.loads(raw)
            except orjson.JSONDecodeError:
                self.data = None
            else:
                self._repeated = jsonio.has_duplicate_keys(raw, self._json)

    def json(self) -> Any:
        """The element parsed (``None`` between elements); raises
        :class:`~toolvocab.dialects.sse.RepeatedKey` when it repeats a key."""
        if self._repeated:
            raise RepeatedKey()
        return self._json

    def with_json(self, value: Any) -> _ArrayUnit:
        return _ArrayUnit(jsonio.dumps(value), True)


class _ArraySplitter:
    """Cuts a streamed top-level JSON array into its elements without buffering the array.

    Tracks nesting depth outside strings (escapes honoured). Bytes outside elements are
    returned at once; an element's bytes are held until it closes, then passed to the callback.
    """

    _STRING_END = re.compile(rb'["\\]')

    def __init__(self) -> None:
        self.pending = bytearray()  # bytes of the current (open) element
        self.depth = 0  # nesting depth including the outer array
        self.in_string = False
        self.escape = False
        self.started = False  # the outer "[" was seen
        self.error: str | None = None  # set when on_element raised (that element went out as is)

    def feed(self, chunk: bytes, on_element: Any) -> list[bytes]:
        out: list[bytes] = []
        passthrough_from = 0
        i = 0
        n = len(chunk)
        in_element = self.depth >= 2
        while i < n:
            if self.in_string:
                if self.escape:
                    self.escape = False
                    i += 1
                    continue
                m = self._STRING_END.search(chunk, i)
                if m is None:
                    i = n
                    break
                i = m.start()
                if chunk[i] == 0x5C:  # backslash
                    self.escape = True
                else:
                    self.in_string = False
                i += 1
                continue
            b = chunk[i]
            if b == 0x22:  # "
                self.in_string = True
            elif b in (0x7B, 0x5B):  # { [
                self.depth += 1
                if not self.started and b == 0x5B and self.depth == 1:
                    self.started = True
                elif self.depth == 2:
                    # An element starts: flush what came before it.
                    out.append(chunk[passthrough_from:i])
                    passthrough_from = i
                    in_element = True
            elif b in (0x7D, 0x5D):  # } ]
                self.depth -= 1
                if self.depth == 1 and in_element:
                    element = bytes(self.pending) + chunk[passthrough_from : i + 1]
                    self.pending = bytearray()
                    try:
                        out.append(on_element(element))
                    except Exception as exc:  # never lose an element: send it as received
                        self.error = f"{type(exc).__name__}: {exc}"
                        out.append(element)
                    passthrough_from = i + 1
                    in_element = False
            i += 1
        if in_element:
            self.pending += chunk[passthrough_from:]
        else:
            out.append(chunk[passthrough_from:])
        return out

    def drain(self) -> bytes:
        rest = bytes(self.pending)
        self.pending = bytearray()
        return rest


DIALECT = Gemini()
