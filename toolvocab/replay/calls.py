"""What a flow's bodies say, read as a client reads them: the tool calls in an answer (every
dialect, JSON, SSE or a JSON array), the names a request declares and its system texts."""

from __future__ import annotations

import dataclasses
import json
from typing import Any


@dataclasses.dataclass
class Call:
    name: str
    arguments: Any  # parsed JSON when possible, else the raw text
    id: str | None = None
    namespace: str | None = None
    object_arguments: bool = False  # Chat/Responses: arguments arrived as an object, not a string

    @property
    def qualified(self) -> str:
        return f"{self.namespace}/{self.name}" if self.namespace else self.name

    def key(self) -> str:
        """``name {compact sorted JSON}``: what the manifest's ``client_calls`` lists."""
        args = (
            self.arguments
            if isinstance(self.arguments, str)
            else json.dumps(self.arguments, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
        )
        return f"{self.qualified} {args}"

    def label(self) -> str:
        name = (
            f"{self.namespace}{self.name}"
            if self.namespace and self.namespace.endswith(("__", ".", "/", ":"))
            else (f"{self.namespace}/{self.name}" if self.namespace else self.name)
        )
        args = (
            self.arguments
            if isinstance(self.arguments, str)
            else json.dumps(self.arguments, ensure_ascii=False, sort_keys=True)
        )
        ident = f"  [id {self.id!r}]" if self.id is not None else ""
        kind = "  (arguments as a JSON object)" if self.object_arguments else ""
        return f"{name} {args}{ident}{kind}"


def _args(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def sse_events(data: bytes) -> list[tuple[str | None, str]]:
    """``(event name, data text)`` of every SSE event (any WHATWG line ending)."""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")
    out = []
    for block in text.split("\n\n"):
        name, lines = None, []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                lines.append(line[5:].removeprefix(" "))
        if lines:
            out.append((name, "\n".join(lines)))
    return out


def _json_units(data: bytes) -> list[Any]:
    """The JSON objects an answer body carries: the body itself, its array elements, or the
    ``data:`` payload of each SSE event."""
    stripped = data.lstrip()
    if stripped[:1] in (b"{", b"["):
        try:
            value = json.loads(data)
        except ValueError:
            value = None
        if isinstance(value, list):
            return value
        if value is not None:
            return [value]
    units = []
    for _, text in sse_events(data):
        try:
            units.append(json.loads(text))
        except ValueError:
            continue
    return units


def _unwrap_gemini(unit: Any) -> Any:
    # as the Gemini dialect reads it (toolvocab.dialects.gemini._unwrap): an empty or null outer
    # candidates beside the response is still a Code Assist envelope
    if isinstance(unit, dict) and isinstance(unit.get("response"), dict) and unit.get("candidates") in (None, []):
        return unit["response"]
    return unit


def tool_calls(dialect: str | None, data: bytes | None) -> list[Call]:
    """The tool calls a client would assemble from an answer body (JSON, SSE or a JSON array)."""
    if not data:
        return []
    units = _json_units(data)
    if dialect == "anthropic":
        return _anthropic_calls(units)
    if dialect == "openai_chat":
        return _chat_calls(units)
    if dialect == "openai_responses":
        return _responses_calls(units)
    if dialect == "gemini":
        return _gemini_calls(units)
    return []


def _anthropic_calls(units: list[Any]) -> list[Call]:
    calls: list[Call] = []
    blocks: dict[int, dict] = {}
    for u in units:
        if not isinstance(u, dict):
            continue
        if u.get("type") == "message" and isinstance(u.get("content"), list):
            for b in u["content"]:
                if isinstance(b, dict) and b.get("type") in ("tool_use", "server_tool_use"):
                    calls.append(Call(str(b.get("name")), b.get("input"), b.get("id")))
        elif u.get("type") == "content_block_start" and isinstance(u.get("content_block"), dict):
            b = u["content_block"]
            if b.get("type") in ("tool_use", "server_tool_use"):
                blocks[u.get("index", len(blocks))] = {
                    "name": str(b.get("name")),
                    "id": b.get("id"),
                    "json": "",
                    "input": b.get("input"),
                }
        elif u.get("type") == "content_block_delta" and isinstance(u.get("delta"), dict):
            d = u["delta"]
            if d.get("type") == "input_json_delta" and u.get("index") in blocks:
                blocks[u["index"]]["json"] += str(d.get("partial_json", ""))
    for _, b in sorted(blocks.items()):
        calls.append(Call(b["name"], _args(b["json"]) if b["json"] else (b["input"] or {}), b["id"]))
    return calls


def _chat_calls(units: list[Any]) -> list[Call]:
    calls: list[Call] = []
    slots: dict[tuple[int, int], dict] = {}
    for u in units:
        if not isinstance(u, dict) or not isinstance(u.get("choices"), list):
            continue
        for choice in u["choices"]:
            if not isinstance(choice, dict):
                continue
            message = choice.get("message")
            if isinstance(message, dict):
                for tc in message.get("tool_calls") or ():
                    if isinstance(tc, dict):
                        fn = tc.get("function") or tc.get("custom") or {}
                        raw = fn.get("arguments", fn.get("input"))
                        calls.append(
                            Call(
                                str(fn.get("name")),
                                _args(raw),
                                tc.get("id"),
                                object_arguments=isinstance(raw, (dict, list)),
                            )
                        )
                legacy = message.get("function_call")
                if isinstance(legacy, dict):
                    calls.append(Call(str(legacy.get("name")), _args(legacy.get("arguments"))))
            delta = choice.get("delta")
            if isinstance(delta, dict):
                for n, tc in enumerate(delta.get("tool_calls") or ()):
                    if not isinstance(tc, dict):
                        continue
                    key = (choice.get("index", 0), tc.get("index", n))
                    slot = slots.setdefault(key, {"name": "", "args": "", "id": None, "obj": None})
                    if tc.get("id"):
                        slot["id"] = slot["id"] or tc["id"]
                    fn = tc.get("function") or tc.get("custom") or {}
                    if isinstance(fn.get("name"), str):
                        slot["name"] += fn["name"]  # as the openai SDKs assemble it
                    piece = fn.get("arguments", fn.get("input"))
                    if isinstance(piece, str):
                        slot["args"] += piece
                    elif piece is not None:
                        slot["obj"] = piece
    for _, s in sorted(slots.items()):
        as_object = s["obj"] is not None and not s["args"]
        calls.append(Call(s["name"], s["obj"] if as_object else _args(s["args"]), s["id"], object_arguments=as_object))
    return calls


def _responses_item_call(item: dict) -> Call:
    args = item.get("arguments") if item.get("type") == "function_call" else item.get("input")
    return Call(
        str(item.get("name")),
        _args(args),
        item.get("call_id"),
        item.get("namespace"),
        object_arguments=isinstance(args, (dict, list)),
    )


def _responses_calls(units: list[Any]) -> list[Call]:
    done: dict[int, Call] = {}
    final: list[Call] | None = None
    for u in units:
        if not isinstance(u, dict):
            continue
        if isinstance(u.get("output"), list) and u.get("object") == "response":
            final = [
                _responses_item_call(i)
                for i in u["output"]
                if isinstance(i, dict) and i.get("type") in ("function_call", "custom_tool_call")
            ]
        elif u.get("type") == "response.output_item.done" and isinstance(u.get("item"), dict):
            item = u["item"]
            if item.get("type") in ("function_call", "custom_tool_call"):
                done[u.get("output_index", len(done))] = _responses_item_call(item)
        elif (
            u.get("type") in ("response.completed", "response.incomplete")
            and isinstance(u.get("response"), dict)
            and not done
        ):
            out = u["response"].get("output")
            if isinstance(out, list):
                final = [
                    _responses_item_call(i)
                    for i in out
                    if isinstance(i, dict) and i.get("type") in ("function_call", "custom_tool_call")
                ]
    if done:
        return [c for _, c in sorted(done.items())]
    return final or []


def _gemini_calls(units: list[Any]) -> list[Call]:
    calls: list[Call] = []
    for u in units:
        u = _unwrap_gemini(u)
        if not isinstance(u, dict):
            continue
        for cand in u.get("candidates") or ():
            content = cand.get("content") if isinstance(cand, dict) else None
            for part in (content or {}).get("parts") or () if isinstance(content, dict) else ():
                keys = [
                    k for k in ("functionCall", "function_call") if isinstance(part, dict) and part.get(k) is not None
                ]
                fc = part[keys[0]] if len(keys) == 1 else None  # both spellings: two readings, none taken
                if isinstance(fc, dict):
                    calls.append(Call(str(fc.get("name")), fc.get("args"), fc.get("id")))
    return calls


def parse_json(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _gemini_request(body: Any) -> Any:
    if isinstance(body, dict) and isinstance(body.get("request"), dict) and "contents" in body["request"]:
        return body["request"]
    return body


def declared_names(dialect: str | None, body: Any) -> list[str]:
    """Tool names a request declares, in order (Responses namespace members as ``ns/name``)."""
    names: list[str] = []
    if not isinstance(body, dict):
        return names
    if dialect == "gemini":
        body = _gemini_request(body)
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        if dialect == "anthropic" and isinstance(tool.get("name"), str):
            names.append(tool["name"])
        elif dialect == "openai_chat":
            inner = tool.get("function") or tool.get("custom") or {}
            if isinstance(inner.get("name"), str):
                names.append(inner["name"])
        elif dialect == "openai_responses":
            if tool.get("type") == "namespace":
                names += [f"{tool.get('name')}/{t.get('name')}" for t in tool.get("tools") or () if isinstance(t, dict)]
            elif isinstance(tool.get("name"), str):
                names.append(tool["name"])
        elif dialect == "gemini":
            for key in ("functionDeclarations", "function_declarations"):
                names += [
                    d.get("name") for d in tool.get(key) or () if isinstance(d, dict) and isinstance(d.get("name"), str)
                ]
    if dialect == "openai_chat":
        names += [
            f.get("name") for f in body.get("functions") or () if isinstance(f, dict) and isinstance(f.get("name"), str)
        ]
    return names


def _text_of(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    if isinstance(content, list):
        out = []
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                out.append(part["text"])
        return out
    return []


def system_slots(dialect: str | None, body: Any) -> list[str]:
    """Every text in a request's system slots: Anthropic ``system`` and system-role messages;
    Chat system/developer messages; Responses ``instructions`` and system/developer input
    messages; Gemini ``systemInstruction`` (Code Assist envelope included)."""
    texts: list[str] = []
    if not isinstance(body, dict):
        return texts
    if dialect == "anthropic":
        texts += _text_of(body.get("system"))
        texts += [
            t
            for m in body.get("messages") or ()
            if isinstance(m, dict) and m.get("role") == "system"
            for t in _text_of(m.get("content"))
        ]
    elif dialect == "openai_chat":
        texts += [
            t
            for m in body.get("messages") or ()
            if isinstance(m, dict) and m.get("role") in ("system", "developer")
            for t in _text_of(m.get("content"))
        ]
    elif dialect == "openai_responses":
        texts += _text_of(body.get("instructions"))
        items = body.get("input")
        for item in items if isinstance(items, list) else ():
            if (
                isinstance(item, dict)
                and item.get("type", "message") == "message"
                and item.get("role") in ("system", "developer")
            ):
                texts += _text_of(item.get("content"))
    elif dialect == "gemini":
        req = _gemini_request(body)
        for key in ("systemInstruction", "system_instruction"):
            value = req.get(key)
            if isinstance(value, str):
                texts.append(value)
            elif isinstance(value, dict):
                texts += _text_of(value.get("parts"))
    return texts
