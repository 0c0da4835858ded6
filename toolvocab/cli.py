"""toolvocab's command line, over saved flow files (``mitmdump -w``, ``toolvocab_record``, ``flows/``).

    toolvocab tools FLOWFILE [--as SHAPE] [--upstream]      (or: python -m toolvocab.cli tools …)
    toolvocab stats FLOWFILE|DIR...
    toolvocab explain FLOWFILE|DIR...

``tools`` prints the tools each flow's client declared, normalized or in one API's shape
(``normalized``, ``anthropic``, ``openai_chat``, ``openai_responses``, ``gemini``,
``langchain``); ``--upstream`` shows the names they were sent upstream under. ``stats`` and
``explain`` print what the mitmproxy commands ``toolvocab.stats`` / ``toolvocab.explain`` print.
A file that cannot be read (not a flow file, truncated, missing) is named on stderr and the rest
are read; the exit status is 1 only when none of the files given could be read.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any

from toolvocab.engine.export import SHAPES
from toolvocab.report import METADATA_KEY
from toolvocab.report import explain_flows
from toolvocab.report import flow_tools  # noqa: F401 - part of the command line's API (tests, scripts)
from toolvocab.report import stats_text
from toolvocab.report import tools_text


def read_flows(paths: list[str], errors: list[str] | None = None) -> Iterator[Any]:
    """Every HTTP flow in the given flow files, and in every ``*.mitm`` under the directories
    given (mitmproxy's ``io.FlowReader``).

    A file that cannot be read (missing, unreadable, not a flow file, truncated): without
    ``errors`` the ``OSError`` / ``mitmproxy.exceptions.FlowReadException`` propagates; with
    ``errors`` one line naming the file and the problem is appended to it and reading goes on
    with the next file (the flows a truncated file held before the damage are yielded)."""
    from mitmproxy import exceptions
    from mitmproxy import http
    from mitmproxy import io

    from toolvocab.replay import flow_files

    for path in flow_files(paths):
        read = 0
        try:
            with open(path, "rb") as fp:
                for flow in io.FlowReader(fp).stream():
                    read += 1
                    if isinstance(flow, http.HTTPFlow):
                        yield flow
        except (OSError, exceptions.FlowReadException) as exc:
            if errors is None:
                raise
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            if isinstance(exc, OSError):
                errors.append(f"cannot read {path}: {why}")
            elif read:
                errors.append(
                    f"cannot read {path} after its first {read} flow{'' if read == 1 else 's'} ({why}); "
                    f"using {'it' if read == 1 else 'those'}"
                )
            else:
                errors.append(f"cannot read {path}: not a flow file mitmproxy can read, or truncated ({why})")


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code: 0, 1 when files were given and none of them
    could be read, 2 on bad usage (argparse). Each file that cannot be read is named on one
    line on stderr (``toolvocab stats: cannot read FILE: …``) and the others are read."""
    parser = argparse.ArgumentParser(prog="toolvocab", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_tools = sub.add_parser("tools", help="print the tools each flow's client declared")
    p_tools.add_argument("files", nargs="+")
    p_tools.add_argument("--as", dest="shape", choices=SHAPES, default="normalized")
    p_tools.add_argument("--upstream", action="store_true", help="show the names sent upstream")
    for name, text in (
        ("stats", "counts per decision, client, upstream"),
        ("explain", "why each name was or was not repaired"),
    ):
        p = sub.add_parser(name, help=text, description=f"toolvocab {name}: {text}, over saved flows.")
        p.add_argument("files", nargs="+", metavar="FILE|DIR", help="flow files, or directories of .mitm files")
    args = parser.parse_args(argv)
    errors: list[str] = []
    flows = list(read_flows(args.files, errors))
    for line in errors:
        print(f"toolvocab {args.command}: {line}", file=sys.stderr)
    if errors and len(errors) == _count_files(args.files) and not flows:
        return 1  # nothing could be read: no empty report
    if args.command == "tools":
        print(tools_text(flows, args.shape, upstream=args.upstream))
        return 0
    records = [f.metadata.get(METADATA_KEY) for f in flows if f.metadata.get(METADATA_KEY)]
    # explain names each flow by its id (as `toolvocab replay` does) and its request
    print(
        stats_text(records)
        if args.command == "stats"
        else explain_flows(f for f in flows if f.metadata.get(METADATA_KEY))
    )
    return 0


def _count_files(paths: list[str]) -> int:
    from toolvocab.replay import flow_files

    return sum(1 for _ in flow_files(paths))


if __name__ == "__main__":
    from toolvocab.run import run_cli

    raise SystemExit(run_cli(main, sys.argv[1:]))
