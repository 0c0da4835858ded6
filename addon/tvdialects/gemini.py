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
from typing import Any

from tvdialects.base import JSON
from tvdialects.base import CallIds
from tvdialects.base import Resolver
from tvdialects.base import apply_decision_name
from tvdialects.base import dedupe_tools
from tvdialects.base import object_arguments_call
from tvdialects.sse import EventStreamRewriter
from tvdialects.sse import SSEEvent
from tvengine.errors import ToolResult
from tvengine.models import DeclaredTool
from tvengine.models import ToolKind
from tvengine.plan import Plan

import orjson

_PATH = re.compile(r":(?:stream)?[gG]enerateContent$")

#: OpenAPI-subset ``Type`` enum of Gemini's ``Schema`` (``TYPE_UNSPECIFIED``, ``STRING``,
#: ``NUMBER``, ``INTEGER``, ``BOOLEAN``, ``ARRAY``, ``OBJECT``, ``NULL``) → JSON Schema types.
_TYPES = {"STRING": "string", "NUMBER": "number", "INTEGER": "integer", "BOOLEAN": "boolean", "ARRAY": "array", "OBJECT": "object", "NULL": "null"}


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


def _path_only(path: str) -> str:
    return path.split("?", 1)[0]


def _unwrap(body: Any) -> Any:
    """The ``GenerateContentRequest`` / response inside a Code Assist envelope, else ``body``."""
    if isinstance(body, dict) and isinstance(body.get("request"), dict) and "contents" in body["request"]:
        return body["request"]
    if isinstance(body, dict) and isinstance(body.get("response"), dict) and "candidates" not in body:
        return body["response"]
    return body


class Gemini:
    """The Gemini dialect (Gemini API, Vertex AI publisher models, Code Assist)."""

    name = "gemini"

    def matches(self, method: str, path: str, body: JSON) -> bool:
        """POST to ``…:generateContent`` / ``…:streamGenerateContent`` with ``contents``."""
        if method != "POST" or not _PATH.search(_path_only(path)):
            return False
        inner = _unwrap(body)
        return isinstance(inner, dict) and isinstance(inner.get("contents"), list)

    # -- request ------------------------------------------------------------------------------

    def declared_tools(self, body: JSON) -> list[DeclaredTool]:
        """Every ``functionDeclarations[]`` entry (``function``). Built-in tools
        (``googleSearch``, ``codeExecution``, ``urlContext``…) carry no name."""
        req = _unwrap(body)
        out: list[DeclaredTool] = []
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
        return out

    def transcript_names(self, body: JSON) -> list[str]:
        """Names in the transcript's ``functionCall`` and ``functionResponse`` parts."""
        names: list[str] = []
        for content in _list(_unwrap(body).get("contents")):
            for part in _list(content.get("parts")) if isinstance(content, dict) else ():
                for key in ("functionCall", "functionResponse"):
                    inner = part.get(key) if isinstance(part, dict) else None
                    if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                        names.append(inner["name"])
        return names

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
        m = re.search(r"models/([^/:?]+):", _path_only(path))
        if m:
            return m.group(1)
        return body.get("model") if isinstance(body, dict) and isinstance(body.get("model"), str) else None

    def system_texts(self, body: JSON) -> list[str]:
        """The text parts of ``systemInstruction``."""
        req = _unwrap(body)
        system = req.get("systemInstruction") or req.get("system_instruction")
        if isinstance(system, str):
            return [system]
        if isinstance(system, dict):
            return [p["text"] for p in _list(system.get("parts")) if isinstance(p, dict) and isinstance(p.get("text"), str)]
        return []

    def apply_request(self, body: JSON, plan: Plan) -> bool:
        """Rename per ``plan.rename_map`` in declarations, ``allowedFunctionNames`` and every
        transcript ``functionCall`` / ``functionResponse``; add the prompt sentence as a text
        part of ``systemInstruction``."""
        req = _unwrap(body)
        changed = False
        rename = plan.rename_map
        for tool in _list(req.get("tools")):
            key = _decl_key(tool)
            if key is not None:
                changed |= dedupe_tools(
                    tool[key],
                    plan,
                    lambda d: d["name"] if isinstance(d, dict) and isinstance(d.get("name"), str) else None,
                    lambda d, alias: d.__setitem__("name", alias),
                )
        if rename:
            for tool in _list(req.get("tools")):
                key = _decl_key(tool)
                for decl in tool[key] if key is not None else ():
                    changed |= _rename(decl, rename)
            config = (req.get("toolConfig") or {}).get("functionCallingConfig") if isinstance(req.get("toolConfig"), dict) else None
            if isinstance(config, dict) and isinstance(config.get("allowedFunctionNames"), list):
                names = config["allowedFunctionNames"]
                for i, name in enumerate(names):
                    if isinstance(name, str) and name in rename:
                        names[i] = rename[name]
                        changed = True
            for content in _list(req.get("contents")):
                for part in _list(content.get("parts")) if isinstance(content, dict) else ():
                    if isinstance(part, dict):
                        changed |= _rename(part.get("functionCall"), rename)
                        changed |= _rename(part.get("functionResponse"), rename)
        if plan.prompt_sentence:
            skey = "system_instruction" if "system_instruction" in req and "systemInstruction" not in req else "systemInstruction"
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

    # -- response -----------------------------------------------------------------------------

    def rewrite_response(self, body: JSON, resolve: Resolver, plan: Plan) -> bool:
        """Resolve every ``functionCall`` part; a JSON array (``streamGenerateContent`` without
        ``alt``) is rewritten element by element."""
        ids = CallIds(plan.flow_key)
        if isinstance(body, list):
            changed = False
            for element in body:
                changed |= _rewrite_candidates(element, resolve, ids)
            return changed
        return _rewrite_candidates(body, resolve, ids)

    def wants_stream(self, path: str, body: JSON) -> bool:
        """``:streamGenerateContent`` streams (SSE with ``alt=sse``, else a JSON array)."""
        return ":streamGenerateContent" in _path_only(path)

    def stream_rewriter(self, resolve: Resolver, plan: Plan) -> GeminiStream:
        """A rewriter that accepts both stream framings (SSE or a JSON array)."""
        return GeminiStream(resolve, plan)


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
        return orjson.dumps(value).decode()
    except TypeError:
        return str(value)


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _rewrite_candidates(body: Any, resolve: Resolver, ids: CallIds | None = None) -> bool:
    response = _unwrap(body)
    if not isinstance(response, dict):
        return False
    changed = False
    for candidate in _list(response.get("candidates")):
        content = candidate.get("content") if isinstance(candidate, dict) else None
        for part in _list(content.get("parts")) if isinstance(content, dict) else ():
            call = part.get("functionCall") if isinstance(part, dict) else None
            if isinstance(call, dict) and isinstance(call.get("name"), str):
                if ids is not None:
                    # Gemini usually sends no id (calls pair by name): only an empty or repeated
                    # id is replaced; an absent one stays absent (but counts as a position).
                    new_id = ids.fix(call.get("id"))
                    if new_id is not None and "id" in call:
                        call["id"] = new_id
                        changed = True
                # args null / "" / [] reach the engine as empty arguments and come back as {}
                # (issue 10); an absent args is a call without arguments and stays absent.
                decision = resolve(
                    object_arguments_call(
                        call["name"], call, "args", call.get("id") if isinstance(call.get("id"), str) else None, absent={}
                    )
                )
                if not decision.changed:
                    continue
                new_name = apply_decision_name(decision)
                if new_name is not None:
                    call["name"] = new_name
                if decision.arguments_after is not None:
                    call["args"] = decision.arguments_after
                changed = True
    return changed


class GeminiStream(EventStreamRewriter):
    """Rewrites a Gemini stream, SSE (``alt=sse``) or a bare JSON array, chunk by chunk.

    Each SSE event or array element is a complete response and goes out as soon as it is
    whole, rewritten only when a ``functionCall`` in it changes; everything between elements
    (brackets, commas, whitespace) passes through as received. Never buffers the whole body.
    """

    #: Only a ``functionCall`` is ever changed (issue 11: other SSE events pass unparsed).
    MARKERS = (b'"functionCall"',)

    def __init__(self, resolve: Resolver, plan: Plan | None = None) -> None:
        super().__init__()
        self._resolve = resolve
        self._ids = CallIds(plan.flow_key if plan is not None else "")
        self._framing: str | None = None  # "sse" | "array", decided by the first non-blank byte
        self._array = _ArraySplitter()
        self._prefix = bytearray()  # blank bytes seen before the framing was known

    def on_event(self, event: SSEEvent) -> list[bytes]:
        """One SSE event: rewrite its response if a call changes."""
        data = event.json()
        if data is None:
            return [event.raw]
        if _rewrite_candidates(data, self._resolve, self._ids):
            return [event.with_json(data).raw]
        return [event.raw]

    def feed(self, chunk: bytes) -> list[bytes]:
        """Route to SSE or JSON-array framing, decided by the body's first non-blank byte."""
        if self._framing is None:
            if not chunk.strip():
                self._prefix += chunk
                return []
            self._framing = "array" if chunk.lstrip()[:1] == b"[" else "sse"
            chunk, self._prefix = bytes(self._prefix) + chunk, bytearray()
        if self._framing == "sse":
            return super().feed(chunk)
        if self.error is not None and not self._array.pending:
            return [chunk] if chunk else []
        # Elements are contained one by one in _element; after an error the splitter keeps
        # cutting (so no byte is lost) and every element passes through as received.
        out = [b for b in self._array.feed(chunk, self._element) if b]
        if self._array.error is not None and self.error is None:
            self.error = self._array.error
        return out

    def salvage(self) -> list[bytes]:
        """Every byte taken in but not sent, unchanged; then pass everything through."""
        if self._framing == "sse":
            return super().salvage()
        self.error = self.error or "salvaged"
        rest = bytes(self._prefix) + self._array.drain()
        self._prefix = bytearray()
        return [rest] if rest else []

    def finish(self) -> list[bytes]:
        """End of stream: whatever is left, unchanged."""
        if self._framing is None:
            rest, self._prefix = bytes(self._prefix), bytearray()
            return [rest] if rest else []
        if self._framing == "array":
            rest = self._array.drain()
            return [rest] if rest else []
        return super().finish()

    def _element(self, raw: bytes) -> bytes:
        """One whole array element: rewritten if a call in it changes; on any error, as is."""
        if self.error is not None:
            return raw
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
        try:
            if _rewrite_candidates(data, self._resolve, self._ids):
                return orjson.dumps(data)
        except Exception as exc:  # contain: this element and the rest pass through unchanged
            self.error = f"{type(exc).__name__}: {exc}"
        return raw


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
