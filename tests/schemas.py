"""The JSON Schema pieces the engine tests write by hand, and declared tools built from them.

    fn("Read", schema("file_path", file_path=STR, offset=INT))

``schema`` gives ``{"type": "object", "properties": …, "required": […]}`` (with
``additionalProperties`` only when ``additional`` is given); ``fn`` a client tool declared the way
a dialect declares it (:func:`toolvocab.engine.ladder.declared_tool`).
"""

from __future__ import annotations

from typing import Any

from toolvocab.engine.ladder import declared_tool
from toolvocab.engine.models import DeclaredTool

STR = {"type": "string"}
INT = {"type": "integer"}
NUM = {"type": "number"}
BOOL = {"type": "boolean"}
ARGV = {"type": "array", "items": {"type": "string"}}


def schema(*required: str, additional: bool | None = None, **props: Any) -> dict[str, Any]:
    """An object schema with ``props`` as its properties and ``required`` as its required keys."""
    out: dict[str, Any] = {"type": "object", "properties": props, "required": list(required)}
    if additional is not None:
        out["additionalProperties"] = additional
    return out


def fn(name: str, input_schema: dict[str, Any] | None = None, *, namespace: str | None = None) -> DeclaredTool:
    """A client function tool ``name`` (under MCP server ``namespace``, if given) with ``input_schema``."""
    return declared_tool(name, namespace=namespace, input_schema=input_schema)
