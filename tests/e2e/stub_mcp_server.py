#!/usr/bin/env python3
"""A tiny MCP server over stdio (newline-delimited JSON-RPC 2.0), stdlib only, for the e2e tests.

It offers one tool whose name is long enough that an agent's flattened name
(``<server>_<tool>``, ``mcp__<server>__<tool>``) exceeds OpenAI's 64-character limit::

    python stub_mcp_server.py --tool NAME --marker TEXT --log FILE

* ``initialize`` -> protocol version (the client's), ``tools`` capability, server info;
* ``tools/list`` -> the one tool (``path``: string, required);
* ``tools/call`` -> a text result ``<marker> path=<path>``; every call is appended to ``--log``
  as one JSON line, so a test can tell the tool really ran;
* ``ping`` -> ``{}``; notifications get no answer; any other request -> ``-32601``.

Everything it receives is also logged (``{"recv": ...}``) for diagnostics. It exits at EOF.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tool", required=True)
    ap.add_argument("--marker", required=True)
    ap.add_argument("--log", required=True)
    a = ap.parse_args()

    def log(entry: dict) -> None:
        with open(a.log, "a", encoding="utf-8") as fp:
            fp.write(json.dumps(dict(entry, time=time.time())) + "\n")

    def send(message: dict) -> None:
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    tool = {
        "name": a.tool,
        "description": "Check one CloudFormation template for compliance and report the result.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "The template's path."}},
            "required": ["path"],
        },
    }
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            msg = json.loads(line)
        except ValueError:
            log({"bad_line": line})
            continue
        log({"recv": msg})
        method, mid = msg.get("method"), msg.get("id")
        if mid is None:
            continue  # a notification (notifications/initialized, cancelled, ...)
        if method == "initialize":
            version = (msg.get("params") or {}).get("protocolVersion") or "2025-06-18"
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "protocolVersion": version,
                        "capabilities": {"tools": {"listChanged": False}},
                        "serverInfo": {"name": "toolvocab-stub", "version": "1.0.0"},
                    },
                }
            )
        elif method == "tools/list":
            send({"jsonrpc": "2.0", "id": mid, "result": {"tools": [tool]}})
        elif method == "tools/call":
            params = msg.get("params") or {}
            args = params.get("arguments") or {}
            log({"call": params.get("name"), "arguments": args})
            if params.get("name") != a.tool:
                send(
                    {
                        "jsonrpc": "2.0",
                        "id": mid,
                        "error": {"code": -32602, "message": f"unknown tool {params.get('name')!r}"},
                    }
                )
                continue
            send(
                {
                    "jsonrpc": "2.0",
                    "id": mid,
                    "result": {
                        "content": [{"type": "text", "text": f"{a.marker} path={args.get('path')}"}],
                        "isError": False,
                    },
                }
            )
        elif method == "ping":
            send({"jsonrpc": "2.0", "id": mid, "result": {}})
        else:
            send({"jsonrpc": "2.0", "id": mid, "error": {"code": -32601, "message": f"method not found: {method}"}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
