#!/usr/bin/env python3
"""flowtool: work with the saved-flow corpus in ``flows/`` (see docs/flows.md).

    uv run python tests/flowtool.py replay FILE...        check as tests/test_flows.py does (replay, manifest,
                                                          credentials, system text); PASS or a readable diff
    uv run python tests/flowtool.py diff FILE...          what the addon did (from the metadata), and
                                                          expected vs got tool calls when a replay differs
    uv run python tests/flowtool.py bless FILE...         re-record the expectations with the current addon
    uv run python tests/flowtool.py add SRC [NAME]        adopt a user's saved .mitm (or a toolvocab_record
                                                          directory): scrub, re-bless, write flows/NAME-N.mitm
                                                          and add it to flows/MANIFEST.toml
    uv run python tests/flowtool.py scrub FILE...         remove credentials, cookies and client prompt
                                                          text in place, then re-bless
    uv run python tests/flowtool.py check [FILE...]       look for credentials / client prompt text

FILE defaults to every flow of the corpus for ``replay``, ``diff`` and ``check``.
Exit status: 0 when everything passed, 1 otherwise.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import flowreplay as fr  # noqa: E402
from toolvocab.replay.compare import first_difference  # noqa: E402

SEEDS = (0, 1, 2)


def _files(args: list[str]) -> list[Path]:
    if not args:
        return fr.corpus_files()
    out: list[Path] = []
    for a in args:
        p = Path(a)
        out += sorted(p.glob("**/*.mitm")) if p.is_dir() else [p]
    return out


def cmd_replay(ns: argparse.Namespace) -> int:
    """What tests/test_flows.py checks (tests/flowreplay/checks.py), per file: a corpus file is
    replayed as recorded (three chunkings and byte by byte) and checked against its manifest
    table, for credentials and for neutral system text; a file outside the corpus is replayed
    only; with no FILE, the corpus-wide checks too. PASS, XFAIL (a known issue) or FAIL with
    each problem."""
    failed = 0
    manifest = fr.read_manifest()
    paths = _files(ns.files)
    with fr.Replayer() as r:
        for path in paths:
            if fr.checks.in_corpus(path):
                problems, issue = fr.checks.file_checks(r, path, manifest)
            elif ns.seeds:
                problems, issue = _replay_seeds(r, path, range(ns.seeds)), None
            else:
                problems, issue = fr.checks.replay_problems(r, path), None
            if problems:
                failed += 1
                print(f"FAIL {fr.rel(path)}\n" + "\n".join(_indent(p) for p in problems))
            elif issue:
                print(f"XFAIL {fr.rel(path)}: {issue}")
            else:
                print(f"PASS {fr.rel(path)}" + ("" if fr.checks.in_corpus(path) else " (not in flows/: replayed only)"))
    if not ns.files:
        problems = fr.checks.corpus_checks(paths, manifest)
        failed += bool(problems)
        print(
            "\n".join(f"FAIL corpus: {p}" for p in problems) or "PASS corpus: manifest, dialects, bug reports, agents"
        )
    return 1 if failed else 0


def _replay_seeds(r: fr.Replayer, path: Path, seeds) -> list[str]:
    """Replay problems of ``path`` with ``seeds`` random chunkings (and byte by byte)."""
    problems = []
    for f in fr.load_flows(path):
        why = fr.replayable(f)
        if why is not None:
            problems.append(f"flow {f.id[:8]} cannot be replayed: {why}")
            continue
        bad = first_difference(r, f, seeds)
        if bad is not None:
            problems.append(fr.render_failure(f, bad))
    return problems


def cmd_diff(ns: argparse.Namespace) -> int:
    status = 0
    with fr.Replayer() as r:
        for path in _files(ns.files):
            print(f"=== {fr.rel(path)}")
            for f in fr.load_flows(path):
                print(fr.describe_flow(f))
                if fr.replayable(f) is None:
                    res = r.replay(f, 0)
                    if res.ok:
                        print("replay: matches the recording")
                    else:
                        status = 1
                        print("replay: DIFFERS\n" + _indent(fr.render_failure(f, res)))
                print()
    return status


def bless_flows(r: fr.Replayer, flows: list, label: str) -> tuple[list, list[str]]:
    """Replay each flow and take what the addon produces now as its new expectations."""
    out, report = [], []
    for f in flows:
        why = fr.replayable(f)
        if why is not None:
            out.append(f)
            report.append(f"  kept as is: flow {f.id[:8]} ({why})")
            continue
        res = r.replay(f, 0)
        for seed in SEEDS[1:]:  # the new expectation must not depend on chunk boundaries
            again = r.replay(f, seed)
            if (again.got.request, again.got.response, again.got.record) != (
                res.got.request,
                res.got.response,
                res.got.record,
            ):
                raise SystemExit(
                    f"{label}: flow {f.id[:8]}: the addon's output depends on chunk boundaries "
                    f"(seed 0 vs {seed}); not blessing\n" + fr.render_failure(f, again)
                )
        if res.ok:
            report.append(f"  unchanged: flow {f.id[:8]}")
            out.append(f)  # kept as saved: the file is written again only when a flow changed
            continue
        else:
            before = [
                c.label()
                for c in fr.tool_calls(
                    res.expected.record and res.expected.record.get("dialect"), res.expected.response
                )
            ]
            after = [
                c.label() for c in fr.tool_calls(res.got.record and res.got.record.get("dialect"), res.got.response)
            ]
            report.append(f"  re-blessed: flow {f.id[:8]} ({', '.join(res.problems)})")
            if before != after:
                report.append("    client tool calls: " + " | ".join(before) + "  →  " + " | ".join(after))
        out.append(res.flow)
    return out, report


def cmd_bless(ns: argparse.Namespace) -> int:
    manifest = fr.read_manifest()
    status = 0
    with fr.Replayer() as r:
        for path in _files(ns.files):
            saved = fr.load_flows(path)
            flows, report = bless_flows(r, saved, str(path))
            if any(a is not b for a, b in zip(flows, saved)):
                fr.write_flows(path, flows)
                print(f"blessed {fr.rel(path)}")
            else:
                print(f"unchanged {fr.rel(path)} (every flow replays as saved; the file is not written)")
            print("\n".join(report))
            entry = manifest["flows"].get(fr.rel(path))
            if entry is None:
                print("  not in flows/MANIFEST.toml (tests fail until it is; flowtool add writes entries)")
                status = 1
                continue
            problems = [p for f in flows for p in fr.semantic_problems(f, entry)]
            if entry.get("known_issue"):
                if problems:
                    print("  manifest: known issue persists")
                elif ns.manifest:
                    del entry["known_issue"]
                    print("  manifest: the known issue is fixed; known_issue removed")
                else:
                    status = 1
                    print("  manifest: the known issue looks fixed; rerun with --manifest to remove known_issue")
                continue
            if problems and ns.manifest:
                entry["client_calls"] = [k for f in flows for k in fr.client_call_keys(f)]
                print(f"  manifest: client_calls updated to {entry['client_calls']}")
                problems = [p for f in flows for p in fr.semantic_problems(f, entry)]
            if problems:
                status = 1
                print(
                    "  manifest: the flow no longer does what flows/MANIFEST.toml says:\n    " + "\n    ".join(problems)
                )
                print("  check the change; --manifest takes the new tool calls; edit 'expected' by hand if it changed")
    if ns.manifest:
        fr.write_manifest(manifest, header=fr.MANIFEST_HEADER)
    return status


def cmd_scrub(ns: argparse.Namespace) -> int:
    with fr.Replayer() as r:
        for path in _files(ns.files):
            flows = fr.load_flows(path)
            for f in flows:
                notes = fr.scrub_flow(f, descriptions=not ns.keep_descriptions)
                print(f"{fr.rel(path)} flow {f.id[:8]}: " + ("; ".join(notes) if notes else "nothing to scrub"))
            if not ns.no_bless:
                flows, report = bless_flows(r, flows, str(path))
                print("\n".join(report))
            fr.write_flows(path, flows)
            problems = fr.leaks(path)
            for p in problems:
                print(f"  still found: {p}")
    return 0


def cmd_check(ns: argparse.Namespace) -> int:
    bad = 0
    for path in _files(ns.files):
        problems = fr.leaks(path)
        if problems:
            bad += 1
            print(f"LEAK {fr.rel(path)}")
            for p in problems:
                print(f"  {p}")
        else:
            print(f"clean {fr.rel(path)}")
    return 1 if bad else 0


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "flow"


def cmd_add(ns: argparse.Namespace) -> int:
    src = Path(ns.src)
    sources = sorted(src.glob("*.mitm")) if src.is_dir() else [src]
    name = _slug(ns.name or src.stem)
    dest_dir = fr.FLOWS_DIR / ns.folder if ns.folder else fr.FLOWS_DIR
    manifest = fr.read_manifest()
    n = 0
    added = []
    with fr.Replayer() as r:
        for source in sources:
            for f in fr.load_flows(source):
                why = fr.replayable(f)
                record = f.metadata.get(fr.META_RECORD) or {}
                if why is None and record.get("skipped") and not ns.include_skipped:
                    why = f"skipped by the addon ({record['skipped']}); --include-skipped adopts it"
                if why is not None:
                    print(f"not adopted: {source.name} flow {f.id[:8]}: {why}")
                    continue
                # The recording as it came: does it round-trip through the replay unchanged?
                res = r.replay(f, 0)
                if res.ok:
                    print(f"round-trip: {source.name} flow {f.id[:8]} replays as recorded")
                else:
                    print(
                        f"round-trip: {source.name} flow {f.id[:8]} DIFFERS from its recording "
                        f"(re-blessed below with the current addon)\n" + _indent(fr.render_failure(f, res))
                    )
                if ns.mode:
                    f.metadata[fr.META_REPLAY] = {**fr.replay_options(f), "mode": ns.mode}
                if ns.profiles:
                    f.metadata[fr.META_REPLAY] = {**fr.replay_options(f), "profiles": Path(ns.profiles).read_text()}
                notes = fr.scrub_flow(f, descriptions=not ns.keep_descriptions)
                blessed, report = bless_flows(r, [f], str(source))
                n += 1
                while True:
                    dest = dest_dir / f"{name}-{n}.mitm"
                    if not dest.exists():
                        break
                    n += 1
                fr.write_flows(dest, blessed)
                problems = fr.leaks(dest)
                if problems:
                    dest.unlink()
                    print(f"NOT written: {dest} still holds: " + "; ".join(problems))
                    return 1
                # --bug tags the flows that carry tool calls (an agent's follow-up turn is no example)
                has_calls = bool((blessed[0].metadata.get(fr.META_RECORD) or {}).get("decisions"))
                entry = fr.manifest_entry(blessed[0], source=ns.source, bugs=(ns.bug or ()) if has_calls else ())
                manifest["flows"][fr.rel(dest)] = entry
                added.append(dest)
                print(f"added {fr.rel(dest)}: {fr.flow_title(blessed[0])}")
                print(f"  scrubbed: {'; '.join(notes) or 'nothing to scrub'}")
                print("\n".join(report))
    if added:
        fr.write_manifest(manifest, header=fr.MANIFEST_HEADER)
        print(
            f"{len(added)} flow(s) added to flows/ and flows/MANIFEST.toml; run: uv run --extra test pytest tests/test_flows.py"
        )
        return 0
    print("no toolvocab flow to adopt")
    return 1


def _indent(text: str, by: str = "    ") -> str:
    return "\n".join(by + line for line in text.splitlines())


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="flowtool", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("replay", help="check flows as tests/test_flows.py does; PASS or a readable diff")
    s.add_argument("files", nargs="*")
    s.add_argument(
        "--seeds",
        type=int,
        default=0,
        help="a file outside flows/: this many random chunk splits (default 3), plus byte by byte",
    )
    s.set_defaults(func=cmd_replay)

    s = sub.add_parser("diff", help="print what the addon did in each flow (and any replay difference)")
    s.add_argument("files", nargs="*")
    s.set_defaults(func=cmd_diff)

    s = sub.add_parser("bless", help="overwrite the recorded expectations with what the addon produces now")
    s.add_argument("files", nargs="+")
    s.add_argument("--manifest", action="store_true", help="also update client_calls in flows/MANIFEST.toml")
    s.set_defaults(func=cmd_bless)

    s = sub.add_parser("add", help="adopt a user's saved .mitm file (or toolvocab_record directory) into flows/")
    s.add_argument("src")
    s.add_argument("name", nargs="?", help="file name stem (default: the source's); files are NAME-N.mitm")
    s.add_argument("--source", default="user", help='manifest source: "user" (default), "agent:<name>", "harness"')
    s.add_argument("--bug", action="append", help="a bug-report id the flows with tool calls exemplify (repeatable)")
    s.add_argument("--folder", default="", help="subfolder of flows/ (default: flows/ itself)")
    s.add_argument("--mode", help="replay with this toolvocab_mode (default: the record's)")
    s.add_argument("--profiles", help="the toolvocab_profiles TOML file the flow was recorded with")
    s.add_argument("--include-skipped", action="store_true", help="also adopt flows the addon skipped")
    s.add_argument("--keep-descriptions", action="store_true", help="keep the client's tool descriptions")
    s.set_defaults(func=cmd_add)

    s = sub.add_parser("scrub", help="remove credentials, cookies and client prompt text in place, then re-bless")
    s.add_argument("files", nargs="+")
    s.add_argument("--no-bless", action="store_true", help="scrub only (the expectations go stale)")
    s.add_argument("--keep-descriptions", action="store_true")
    s.set_defaults(func=cmd_scrub)

    s = sub.add_parser("check", help="look for credentials and client prompt text in flow files")
    s.add_argument("files", nargs="*")
    s.set_defaults(func=cmd_check)

    ns = p.parse_args(argv)
    return ns.func(ns)


if __name__ == "__main__":
    sys.exit(main())
