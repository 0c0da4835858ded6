#!/usr/bin/env python3
"""A stdlib fake LLM upstream for toolvocab's tests: the process entry of the ``fakeup``
package (tests/fakeup/, whose docstring describes the routes, the scripted behaviour and the
control endpoints).

    python tests/fake_upstream.py --port 0 [--log-dir DIR] [--tool-name NAME]
        [--tool-args JSON] [--chunk-size N] [--chunk-delay SECONDS] [--reject-long-names]

prints ``READY <port>`` on stdout once it listens (``--port 0`` picks a free port).
"""

from __future__ import annotations

import argparse
import json
import sys

import fakeup
from fakeup.policy import DEFAULT_FINAL_TEXT
from fakeup.policy import DEFAULT_TOOL_ARGS
from fakeup.policy import DEFAULT_TOOL_NAME
from fakeup.server import make_server


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=fakeup.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--log-dir", default=None)
    ap.add_argument("--tool-name", default=DEFAULT_TOOL_NAME)
    ap.add_argument("--tool-args", default=json.dumps(DEFAULT_TOOL_ARGS), help="JSON")
    ap.add_argument("--chunk-size", type=int, default=0, help="bytes per transport chunk (0: Content-Length)")
    ap.add_argument("--chunk-delay", type=float, default=0.0, help="seconds between chunks")
    ap.add_argument("--final-text", default=DEFAULT_FINAL_TEXT)
    ap.add_argument(
        "--reject-long-names",
        action="store_true",
        help="answer OpenAI's 400 string_above_max_length for declared tool names over 64 chars",
    )
    a = ap.parse_args(argv)
    server = make_server(
        a.port,
        tool_name=a.tool_name,
        tool_args=json.loads(a.tool_args),
        chunk_size=a.chunk_size,
        chunk_delay=a.chunk_delay,
        final_text=a.final_text,
        reject_long_names=a.reject_long_names,
        log_dir=a.log_dir,
    )
    print(f"READY {server.server_address[1]}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
