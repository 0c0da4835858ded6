"""``toolvocab replay FILE|DIR…``: saved flows as regression tests of the addon a user runs.

Each flow toolvocab recorded (``mitmdump -w``, ``--set toolvocab_record=DIR``, mitmweb's
File → Save) is replayed offline through the current addon, exactly as mitmproxy drives it
(:mod:`toolvocab.replay.drive`): the client's original request through the request hooks, the
upstream's original answer through the stream callable in random pieces (several chunkings, and
once byte by byte) and the response hook. What the upstream and the client would receive now is
compared with what was recorded (``--strict``: also the record, diff, marker and comment); a
flow that matches prints ``PASS``, one that does not a readable diff of the tool calls the client
gets and of the request the upstream gets. Exit status 0 when every flow matched, 1 when one
differed (or a file could not be read), 2 when there was nothing to replay.

Modules: :mod:`~toolvocab.replay.flows` (saved flows, metadata keys), :mod:`~toolvocab.replay.drive`
(the hooks over a flow), :mod:`~toolvocab.replay.compare` (replay and compare),
:mod:`~toolvocab.replay.calls` (tool calls read from bodies), :mod:`~toolvocab.replay.render`
(differences as text). ``tests/flowtool.py replay`` (the repository's corpus) runs the same code.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from pathlib import Path


def flow_files(args: list[str]) -> Iterator[Path]:
    """The files named, and every ``*.mitm`` under the directories named (sorted)."""
    for arg in args:
        path = Path(arg)
        if path.is_dir():
            yield from sorted(path.glob("**/*.mitm"))
        else:
            yield path


def main(argv: list[str] | None = None) -> int:
    """``toolvocab replay``; returns the exit status (0 all matched, 1 a difference, 2 nothing to replay)."""
    from mitmproxy import exceptions

    from toolvocab.replay.compare import SEEDS
    from toolvocab.replay.compare import Replayer
    from toolvocab.replay.compare import first_difference
    from toolvocab.replay.flows import load_flows
    from toolvocab.replay.flows import replayable
    from toolvocab.replay.render import render_failure

    parser = argparse.ArgumentParser(
        prog="toolvocab replay",
        description="Replay saved toolvocab flows through the current addon, offline; PASS or a readable diff.",
        epilog="Exit status: 0 every flow matched, 1 one differed (or a file could not be read), 2 nothing to replay.",
    )
    parser.add_argument(
        "paths",
        nargs="+",
        metavar="FILE|DIR",
        help="flow files (mitmdump -w, toolvocab_record), or directories of .mitm files",
    )
    parser.add_argument(
        "--strict", action="store_true", help="also compare the record, diff, marker and comment, not only the bytes"
    )
    parser.add_argument(
        "--mode",
        choices=("auto", "repair", "observe", "off"),
        help="replay with this toolvocab_mode (default: each flow's own)",
    )
    parser.add_argument(
        "--profiles", metavar="FILE", help="replay with this toolvocab_profiles file (default: the flow's, else none)"
    )
    parser.add_argument("--hosts", metavar="REGEX", help="replay with this toolvocab_hosts")
    parser.add_argument(
        "--seeds",
        type=int,
        default=len(SEEDS),
        metavar="N",
        help=f"random chunkings per flow (default {len(SEEDS)}), plus one byte by byte",
    )
    args = parser.parse_args(argv)
    overrides = {k: v for k, v in (("mode", args.mode), ("hosts", args.hosts)) if v}
    if args.profiles:
        overrides["profiles"] = Path(args.profiles).read_text()
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    with Replayer(overrides=overrides, strict=args.strict) as r:
        for path in flow_files(args.paths):
            try:
                flows = load_flows(path)
            except (OSError, exceptions.FlowReadException) as exc:
                counts["failed"] += 1
                print(f"ERROR {path}: not a flow file mitmproxy can read ({exc})")
                continue
            for f in flows:
                why = replayable(f)
                if why is not None:
                    counts["skipped"] += 1
                    print(f"SKIP {path} flow {f.id[:8]}: {why}")
                    continue
                bad = first_difference(r, f, range(args.seeds))
                if bad is None:
                    counts["passed"] += 1
                    print(f"PASS {path} flow {f.id[:8]}")
                else:
                    counts["failed"] += 1
                    print(f"FAIL {path}\n" + "\n".join("    " + line for line in render_failure(f, bad).splitlines()))
    print(f"toolvocab replay: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    if counts["failed"]:
        return 1
    return 0 if counts["passed"] else 2


if __name__ == "__main__":
    sys.exit(main())
