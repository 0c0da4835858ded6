"""The fake upstream's scripted behaviour, the same in every dialect: answer a tool call while
no tool result is pending, then a final text carrying the last result; plain text (or a JSON
document fitting a requested schema) when no tools are declared.  See ``fakeup``'s docstring."""

from __future__ import annotations

import json
import re
from typing import Any

DEFAULT_TOOL_NAME = "Bash"
DEFAULT_TOOL_ARGS: dict[str, Any] = {"command": "echo hi"}
DEFAULT_FINAL_TEXT = "Done. The tool returned:"
TITLE_TEXT = "Fake title"


def text_of(content: Any) -> str:
    """Text of a message/tool-result content: a string, or a list of text-ish parts."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for c in content:
            if isinstance(c, str):
                out.append(c)
            elif isinstance(c, dict):
                if isinstance(c.get("text"), str):
                    out.append(c["text"])
                elif "content" in c:
                    out.append(text_of(c["content"]))
        return "".join(out)
    if content is None:
        return ""
    return json.dumps(content, ensure_ascii=False)


def schema_instance(schema: Any, depth: int = 0) -> Any:
    """A small value that satisfies a JSON schema / Gemini ``Schema`` (structured-output side calls)."""
    if not isinstance(schema, dict) or depth > 8:
        return "ok"
    if schema.get("enum"):
        return schema["enum"][0]
    if "const" in schema:
        return schema["const"]
    for key in ("anyOf", "oneOf", "allOf"):
        if isinstance(schema.get(key), list) and schema[key]:
            return schema_instance(schema[key][0], depth + 1)
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if str(x).lower() != "null"), "string")
    t = str(t or "").lower()
    if t == "object" or (not t and "properties" in schema):
        props = schema.get("properties") or {}
        return {k: schema_instance(v, depth + 1) for k, v in props.items()}
    if t == "array":
        n = int(schema.get("minItems") or 0)
        return [schema_instance(schema.get("items") or {}, depth + 1) for _ in range(n)]
    if t in ("integer", "number"):
        lo = schema.get("minimum", schema.get("exclusiveMinimum", 1))
        try:
            lo = int(lo) + (1 if "minimum" not in schema and "exclusiveMinimum" in schema else 0)
        except (TypeError, ValueError):
            lo = 1
        return lo
    if t == "boolean":
        return False
    return "ok"


def plain_plan(cfg: dict, schema: Any = None, wants_json: bool = False) -> dict:
    """The answer to a request without tools: text, or a JSON document when one was asked for."""
    if schema is not None:
        return {"kind": "plain", "text": json.dumps(schema_instance(schema), ensure_ascii=False), "json": True}
    if wants_json:
        return {"kind": "plain", "text": "{}", "json": True}
    return {"kind": "plain", "text": TITLE_TEXT}


def pick_tool_name(configured: str, declared: list) -> str:
    """``configured``, or for ``re:<regex>`` the first declared name the regex finds
    (``re.search``), so a test can answer a tool whatever name a proxy gave it upstream (an
    alias of a long MCP name, say). No match: the regex text itself."""
    if isinstance(configured, str) and configured.startswith("re:"):
        pattern = re.compile(configured[3:])
        for name in declared:
            if isinstance(name, str) and pattern.search(name):
                return name
        return configured[3:]
    return configured


def decide(
    cfg: dict,
    tools: list[str],
    pending_result: bool,
    last_result: str | None,
    schema: Any = None,
    wants_json: bool = False,
) -> dict:
    """The stateless policy shared by every dialect (see the module docstring)."""
    if tools and not pending_result:
        name = pick_tool_name(cfg["tool_name"], tools)
        return {
            "kind": "tool",
            "name": name,
            "args": cfg["tool_args"],
            "text": f"Let me run that with the {name} tool.",
        }
    if last_result is not None:
        return {"kind": "final", "text": f"{cfg['final_text']} {last_result}"}
    return plain_plan(cfg, schema, wants_json)


def summary_of(plan: dict, stream: str) -> str:
    return plan["kind"] + (f" {plan['name']}" if plan["kind"] == "tool" else "") + f" {stream}"


def args_text(args: Any) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def want_stream(cfg: dict, body: dict, default: bool = False) -> bool:
    if cfg.get("force_stream") is not None:
        return bool(cfg["force_stream"])
    value = body.get("stream")
    return default if value is None else bool(value)
