"""Schema export: the tools a client declared, normalized and rendered in any wire format's shape.

What the seed's tool-call router calls provider-normalized schemas: one normalized view of
every declared tool (name, capability, namespace, kind, input schema, and the name it was sent
upstream under), rendered as Anthropic Messages, OpenAI Chat Completions, OpenAI Responses,
Gemini or LangChain tool definitions so a user sees at a glance what the model was offered.
Descriptions are cut to 1024 characters, as the seed's router does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel

from toolvocab.engine.ladder import Toolset
from toolvocab.engine.models import ToolKind
from toolvocab.engine.names import split_flat

#: Shapes :func:`render_tools` knows.
SHAPES: tuple[str, ...] = ("normalized", "anthropic", "openai_chat", "openai_responses", "gemini", "langchain")

MAX_DESCRIPTION = 1024


class ExportedTool(BaseModel):
    """One declared tool, normalized: ``name`` as the client declared it, ``upstream_name`` as
    it was sent upstream (differs only when toolvocab renamed it), ``namespace`` (Responses
    namespace tools), ``server`` (MCP server), ``kind``, ``capability`` (vocabulary),
    ``description`` (cut to 1024 characters), ``input_schema``."""

    name: str
    upstream_name: str
    namespace: str | None = None
    server: str | None = None
    kind: str
    capability: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] | None = None


def normalize_tools(tools: Toolset, rename_map: Mapping[str, str] | None = None) -> list[ExportedTool]:
    """Normalize every declared tool; ``rename_map`` (declared flat name → upstream flat name)
    fills ``upstream_name``."""
    rename_map = rename_map or {}
    out: list[ExportedTool] = []
    for tool in tools.tools:
        upstream = split_flat(tool.namespace, rename_map.get(tool.qualified, tool.qualified))
        desc = tool.description
        if desc is not None and len(desc) > MAX_DESCRIPTION:
            desc = desc[: MAX_DESCRIPTION - 1] + "…"
        out.append(
            ExportedTool(
                name=tool.name,
                upstream_name=upstream,
                namespace=tool.namespace,
                server=tool.server,
                kind=tool.kind.value,
                capability=tool.capability,
                description=desc,
                input_schema=tool.input_schema,
            )
        )
    return out


def _schema(tool: ExportedTool) -> dict[str, Any]:
    return tool.input_schema if tool.input_schema is not None else {"type": "object", "properties": {}}


def render_tools(tools: list[ExportedTool], shape: str, *, upstream: bool = False) -> Any:
    """Render normalized tools as ``shape`` (one of :data:`SHAPES`); ``upstream`` uses the names
    sent upstream instead of the client's. Returns JSON-ready data. Raises ``ValueError`` for an
    unknown shape.

    Shapes follow each API's tool declaration: Anthropic ``{name, description, input_schema}``
    (Messages API ``tools``); Chat ``{type: "function", function: {name, description,
    parameters}}`` and ``{type: "custom", custom: {name, description}}``; Responses ``{type:
    "function", name, description, parameters}``, namespaced tools grouped under ``{type:
    "namespace", name, tools}``; Gemini ``{functionDeclarations: [{name, description,
    parametersJsonSchema}]}``; LangChain ``{name, description, args_schema}`` (the seed's router).
    """
    if shape not in SHAPES:
        raise ValueError(f"unknown shape {shape!r}; one of {', '.join(SHAPES)}")
    if shape == "normalized":
        return [t.model_dump(mode="json") for t in tools]

    def name_of(t: ExportedTool) -> str:
        return t.upstream_name if upstream else t.name

    def desc(t: ExportedTool) -> dict[str, str]:
        return {"description": t.description} if t.description else {}

    client_tools = [t for t in tools if t.kind != ToolKind.PROVIDER.value]
    if shape == "anthropic":
        return [{"name": name_of(t), **desc(t), "input_schema": _schema(t)} for t in client_tools]
    if shape == "openai_chat":
        out = []
        for t in client_tools:
            if t.kind == ToolKind.FREEFORM.value:
                out.append({"type": "custom", "custom": {"name": name_of(t), **desc(t)}})
            else:
                out.append({"type": "function", "function": {"name": name_of(t), **desc(t), "parameters": _schema(t)}})
        return out
    if shape == "openai_responses":
        out: list[dict[str, Any]] = []
        groups: dict[str, dict[str, Any]] = {}
        for t in client_tools:
            entry = (
                {"type": "custom", "name": name_of(t), **desc(t)}
                if t.kind == ToolKind.FREEFORM.value
                else {"type": "function", "name": name_of(t), **desc(t), "parameters": _schema(t)}
            )
            if t.namespace:
                if t.namespace not in groups:
                    groups[t.namespace] = {"type": "namespace", "name": t.namespace, "tools": []}
                    out.append(groups[t.namespace])
                groups[t.namespace]["tools"].append(entry)
            else:
                out.append(entry)
        return out
    if shape == "gemini":
        decls = [
            {"name": name_of(t), **desc(t), "parametersJsonSchema": _schema(t)}
            for t in client_tools
            if t.kind == ToolKind.FUNCTION.value
        ]
        return [{"functionDeclarations": decls}]
    return [{"name": name_of(t), **desc(t), "args_schema": _schema(t)} for t in client_tools]
