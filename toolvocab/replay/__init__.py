"""``toolvocab replay FILE|DIR…``: saved flows as regression tests of the addon a user runs.

Each flow toolvocab recorded (``mitmdump -w``, ``--set toolvocab_record=DIR``, mitmweb's
File → Save) is replayed offline through the current addon, exactly as mitmproxy drives it
(:mod:`toolvocab.replay.drive`): the client's original request through the request hooks, the
upstream's original answer through the stream callable in random pieces (several chunkings, and
once byte by byte) and the response hook. What the upstream and the client would receive now is
compared with what was recorded (``--strict``: also the record, diff, marker and comment); a
flow that matches prints ``PASS``, one that does not a readable diff of the tool calls the client
gets and of the request the upstream gets. A flow that cannot be replayed, or whose recorded
outcome depended on timing or on the connections (the hold timeout released a held call, the
answer ended in an error: :func:`toolvocab.replay.flows.replayable`), prints ``SKIP`` and why. A
flow recorded under a rename profile (the record's ``profile``) fails unless ``--profiles``
gives the profile file: recordings do not store it. Exit status 0 when every flow matched, 1
when one differed or failed (or a file could not be read), 2 on bad usage (a ``--profiles`` file
that does not load, a ``--hosts`` that is no regex) or when there was nothing to replay.

Modules: :mod:`~toolvocab.replay.flows` (saved flows, metadata keys), :mod:`~toolvocab.replay.drive`
(the hooks over a flow), :mod:`~toolvocab.replay.compare` (replay and compare),
:mod:`~toolvocab.replay.calls` (tool calls read from bodies), :mod:`~toolvocab.replay.render`
(differences as text). ``tests/flowtool.py replay`` (the repository's corpus) runs the same code.
"""

from __future__ import annotations

import argparse
import re
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
    """``toolvocab replay``; returns the exit status (0 all matched, 1 a difference or failure, 2
    nothing to replay). A usage error raises ``SystemExit(2)`` after argparse's message on stderr:
    bad arguments (argparse's usage and error), a ``--profiles`` file that does not load or a
    ``--hosts`` that is not a regex (one line, ``toolvocab replay: error: …``, naming the argument
    and the user's file)."""
    from mitmproxy import exceptions

    from toolvocab.engine.profiles import ProfileError
    from toolvocab.engine.profiles import load_profiles
    from toolvocab.replay.compare import SEEDS
    from toolvocab.replay.compare import Replayer
    from toolvocab.replay.compare import first_difference
    from toolvocab.replay.flows import load_flows
    from toolvocab.replay.flows import missing_profile
    from toolvocab.replay.flows import replayable
    from toolvocab.replay.render import render_failure

    parser = argparse.ArgumentParser(
        prog="toolvocab replay",
        description="Replay saved toolvocab flows through the current addon, offline; PASS or a readable diff.",
        epilog=(
            "Exit status: 0 every flow matched, 1 one differed or failed (or a file could not be read), "
            "2 bad usage or nothing to replay. SKIP: a flow that cannot be replayed offline (no toolvocab record, "
            "a WebSocket, no saved answer, or an outcome that depended on timing or the connections)."
        ),
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
        "--profiles",
        metavar="FILE",
        help=(
            "replay every flow with this toolvocab_profiles file (default: none; recordings do not store the "
            "profile file, so a flow recorded under a profile fails until it is given)"
        ),
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

    def usage_error(message: str) -> None:  # argparse's error line, without the usage block
        parser.exit(2, f"{parser.prog}: error: {message}\n")

    overrides = {k: v for k, v in (("mode", args.mode), ("hosts", args.hosts)) if v}
    if args.hosts:
        try:
            re.compile(args.hosts)
        except re.error as exc:
            usage_error(f"--hosts {args.hosts!r}: not a regular expression: {exc}")
    if args.profiles:
        try:
            load_profiles(args.profiles)  # its errors name the user's file, not the replay's copy
            overrides["profiles"] = Path(args.profiles).read_bytes().decode("utf-8")
        except ProfileError as exc:
            usage_error(f"--profiles {exc}")
        except OSError as exc:
            usage_error(f"--profiles {args.profiles}: cannot read: {exc}")
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
                why = missing_profile(f, bool(args.profiles))
                if why is not None:
                    counts["failed"] += 1
                    print(f"FAIL {path} flow {f.id[:8]}: {why}")
                    continue
                try:
                    bad = first_difference(r, f, range(args.seeds))
                except exceptions.OptionsError as exc:  # options the flow carries (toolvocab_replay)
                    counts["failed"] += 1
                    print(f"FAIL {path} flow {f.id[:8]}: cannot replay with the flow's options: {exc}")
                    continue
                if bad is None:
                    counts["passed"] += 1
                    print(f"PASS {path} flow {f.id[:8]}")
                else:
                    counts["failed"] += 1
                    print(f"FAIL {path}\n" + "\n".join("    " + line for line in render_failure(f, bad).splitlines()))
    print(f"toolvocab replay: {counts['passed']} passed, {counts['failed']} failed, {counts['skipped']} skipped")
    if counts["failed"]:
        return 1
    if not counts["passed"]:
        why = "every flow was skipped" if counts["skipped"] else "no flow found (a directory is read for *.mitm files)"
        print(f"toolvocab replay: nothing to replay: {why}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
