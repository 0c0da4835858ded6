"""toolvocab's command line, over saved flow files (``mitmdump -w``, ``toolvocab_record``, ``flows/``).

    uv run python addon/tvcli.py tools FLOWFILE [--as SHAPE] [--upstream]
    uv run python addon/tvcli.py stats FLOWFILE...
    uv run python addon/tvcli.py explain FLOWFILE...

``tools`` prints the tools each flow's client declared, normalized or in one API's shape
(``normalized``, ``anthropic``, ``openai_chat``, ``openai_responses``, ``gemini``,
``langchain``); ``--upstream`` shows the names they were sent upstream under. ``stats`` and
``explain`` print what the mitmproxy commands ``toolvocab.stats`` / ``toolvocab.explain`` print.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from typing import Any

import orjson

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tvdialects  # noqa: E402
from tvengine.export import SHAPES  # noqa: E402
from tvengine.export import normalize_tools  # noqa: E402
from tvengine.export import render_tools  # noqa: E402
from tvengine.ladder import Toolset  # noqa: E402

METADATA_KEY = "toolvocab"
METADATA_REQUEST = "toolvocab_request"


def read_flows(paths: list[str]) -> Iterator[Any]:
    """Every HTTP flow in the given flow files (mitmproxy's ``io.FlowReader``)."""
    from mitmproxy import http
    from mitmproxy import io

    for path in paths:
        with open(path, "rb") as fp:
            for flow in io.FlowReader(fp).stream():
                if isinstance(flow, http.HTTPFlow):
                    yield flow


def flow_tools(flow: Any, shape: str = "normalized", *, upstream: bool = False) -> Any:
    """The tools ``flow``'s client declared, rendered as ``shape``; ``None`` when the flow is not
    an LLM request toolvocab understands. Uses the client's original request (metadata
    ``toolvocab_request`` when toolvocab changed it) and the record's rename map."""
    raw = flow.metadata.get(METADATA_REQUEST)
    if raw is None:
        try:
            raw = flow.request.content
        except ValueError:
            return None
    try:
        body = orjson.loads(raw or b"")
    except orjson.JSONDecodeError:
        return None
    dialect = tvdialects.detect(flow.request.method, flow.request.path, body)
    if dialect is None:
        return None
    record = flow.metadata.get(METADATA_KEY) or {}
    tools = Toolset(dialect.declared_tools(body))
    return render_tools(normalize_tools(tools, record.get("rename_map") or {}), shape, upstream=upstream)


def tools_text(flows: list[Any], shape: str, *, upstream: bool = False) -> str:
    """JSON text: one entry per flow with its dialect, client and declared tools."""
    out = []
    for flow in flows:
        rendered = flow_tools(flow, shape, upstream=upstream)
        if rendered is None:
            continue
        record = flow.metadata.get(METADATA_KEY) or {}
        out.append(
            {
                "flow": flow.id,
                "url": flow.request.pretty_url,
                "dialect": record.get("dialect"),
                "client": record.get("client"),
                "shape": shape,
                "tools": rendered,
            }
        )
    return orjson.dumps(out, option=orjson.OPT_INDENT_2).decode()


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code (2 on bad usage)."""
    parser = argparse.ArgumentParser(prog="tvcli", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_tools = sub.add_parser("tools", help="print the tools each flow's client declared")
    p_tools.add_argument("files", nargs="+")
    p_tools.add_argument("--as", dest="shape", choices=SHAPES, default="normalized")
    p_tools.add_argument("--upstream", action="store_true", help="show the names sent upstream")
    for name, text in (("stats", "counts per decision, client, upstream"), ("explain", "why each name was or was not repaired")):
        p = sub.add_parser(name, help=text)
        p.add_argument("files", nargs="+")
    args = parser.parse_args(argv)
    flows = list(read_flows(args.files))
    if args.command == "tools":
        print(tools_text(flows, args.shape, upstream=args.upstream))
        return 0
    import tvui

    records = [f.metadata.get(METADATA_KEY) for f in flows if f.metadata.get(METADATA_KEY)]
    print(tvui.stats_text(records) if args.command == "stats" else tvui.explain_flows(records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
