"""A saved flow replayed through the current addon, offline, and compared with what it recorded:
what the upstream would receive, what the client would receive and (``strict``) the addon's
record, diff, marker and comment."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import random
import tempfile
from collections.abc import Iterable
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mitmproxy import http

from toolvocab.replay import drive as driving
from toolvocab.replay.flows import ADDON_KEYS
from toolvocab.replay.flows import META_DIFF
from toolvocab.replay.flows import META_HEADERS
from toolvocab.replay.flows import META_RECORD
from toolvocab.replay.flows import META_REQUEST
from toolvocab.replay.flows import META_UPSTREAM
from toolvocab.replay.flows import clone
from toolvocab.replay.flows import comparable_record
from toolvocab.replay.flows import load_flows
from toolvocab.replay.flows import original_request
from toolvocab.replay.flows import original_upstream
from toolvocab.replay.flows import replay_options
from toolvocab.replay.flows import replayable
from toolvocab.replay.flows import request_body


@dataclasses.dataclass
class Outcome:
    """What one flow looks like after the addon: the recorded one, or a replay's."""

    request: bytes  # what the upstream receives (content-decoded)
    response: bytes | None  # what the client receives (raw bytes), None without a response
    request_headers: list[tuple[bytes, bytes]]  # the headers the upstream receives
    response_headers: list[tuple[bytes, bytes]] | None  # the headers the client receives
    record: dict | None
    diff: str | None
    has_request: bool  # toolvocab_request present
    has_upstream: bool  # toolvocab_upstream present
    marked: str
    comment: str

    @classmethod
    def of(cls, f: http.HTTPFlow, response: bytes | None = None) -> Outcome:
        resp = response if response is not None else (f.response.raw_content if f.response else None)
        return cls(
            request=request_body(f.request),
            response=None if f.response is None else (resp or b""),
            request_headers=list(f.request.headers.fields),
            response_headers=None if f.response is None else list(f.response.headers.fields),
            record=comparable_record(f.metadata.get(META_RECORD)),
            diff=f.metadata.get(META_DIFF),
            has_request=f.metadata.get(META_REQUEST) is not None,
            has_upstream=f.metadata.get(META_UPSTREAM) is not None,
            marked=f.marked or "",
            comment=f.comment or "",
        )


def records_match(expected: Any, got: Any) -> bool:
    """Records are equal, except that a field the recording does not have yet (the record
    grew), at any depth (a decision's), may hold its empty default (``None``, ``[]``, ``{}``,
    ``0``, ``False``)."""
    if isinstance(expected, dict) and isinstance(got, dict):
        got = {k: v for k, v in got.items() if k in expected or v not in (None, [], {}, 0, False, "")}
        return expected.keys() == got.keys() and all(records_match(expected[k], got[k]) for k in expected)
    if isinstance(expected, list) and isinstance(got, list):
        return len(expected) == len(got) and all(records_match(e, g) for e, g in zip(expected, got, strict=True))
    return type(expected) is type(got) and expected == got


def _streamed(record: Any) -> Any:
    return record.get("streamed") if isinstance(record, dict) else None


def mismatches(expected: Outcome, got: Outcome, strict: bool = True) -> list[str]:
    """What differs, one short label per aspect (empty: the replay matches): the request the
    upstream receives and the response the client receives, bodies and headers, and whether the
    answer streams; with ``strict`` also the record, the diff text, which original bytes are
    kept, the marker and the comment."""
    out = []
    if expected.request != got.request:
        out.append("request the upstream receives")
    if expected.request_headers != got.request_headers:
        out.append("request headers the upstream receives")
    if expected.response != got.response:
        out.append("response the client receives")
    if expected.response_headers != got.response_headers:
        out.append("response headers the client receives")
    if expected.record is not None and got.record is not None and _streamed(expected.record) != _streamed(got.record):
        # both handled (a flow the addon leaves alone now differs in its bytes or headers)
        out.append("how the answer reaches the client (streamed or whole)")
    if not strict:
        return out
    if not records_match(expected.record, got.record):
        out.append("toolvocab record")
    if (expected.diff or None) != (got.diff or None):
        out.append("toolvocab_diff")
    if expected.has_request != got.has_request:
        out.append("toolvocab_request presence")
    if expected.has_upstream != got.has_upstream:
        out.append("toolvocab_upstream presence")
    if (expected.marked, expected.comment) != (got.marked, got.comment):
        out.append("marker/comment")
    return out


@dataclasses.dataclass
class Replay:
    flow: http.HTTPFlow  # the replayed flow: what -w would save now
    expected: Outcome
    got: Outcome
    streamed: str  # "callable", "passthrough", "buffered" or "none"
    seed: int
    problems: list[str]

    @property
    def ok(self) -> bool:
        return not self.problems


class Replayer:
    """The addon script loaded once in a mitmproxy test context; replays flows through it.

    ``with Replayer() as r: result = r.replay(flow, seed=3)``; ``script``: the mitmproxy script
    to load (default: the installed or clone's ``toolvocab.py``, :func:`toolvocab.run.addon_path`);
    ``overrides``: options for every flow instead of the flow's own (``mode``, ``profiles`` as
    TOML text, ``hosts``); ``strict``: compare the record, diff, marker and comment too.
    """

    def __init__(
        self, script: str | None = None, *, overrides: dict[str, Any] | None = None, strict: bool = True
    ) -> None:
        if script is None:
            from toolvocab.run import addon_path

            script = addon_path()
        self.script = script
        self.overrides = dict(overrides or {})
        self.strict = strict
        self._cm: Any = None
        self.tctx: Any = None
        self.module: Any = None
        self._profile_files: dict[str, str] = {}
        self._tmpdir: tempfile.TemporaryDirectory | None = None

    def __enter__(self) -> Replayer:
        self._tmpdir = tempfile.TemporaryDirectory(prefix="toolvocab-replay-")
        self._cm = driving.script_context(self.script)  # the script loaded and in the addon chain
        self.tctx, self.module = self._cm.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._cm.__exit__(*exc)
        finally:
            if self._tmpdir is not None:
                self._tmpdir.cleanup()

    @property
    def addon(self) -> Any:
        return driving.addon(self.module, "ToolVocab")

    def _activate(self) -> None:
        driving.activate(self.tctx)  # another mitmproxy test context may have been created since

    def _profiles_path(self, text: str | None) -> str | None:
        if not text:
            return None
        if text not in self._profile_files:
            assert self._tmpdir is not None
            p = Path(self._tmpdir.name) / f"profiles-{len(self._profile_files)}.toml"
            p.write_text(text)
            self._profile_files[text] = str(p)
        return self._profile_files[text]

    def configure(self, opts: dict[str, Any]) -> None:
        self._activate()
        self.tctx.configure(
            self.module,
            toolvocab_mode=opts.get("mode") or "auto",
            toolvocab_hosts=opts.get("hosts") or None,
            toolvocab_profiles=self._profiles_path(opts.get("profiles")),
            toolvocab_record=None,
            toolvocab_redact="true",
        )

    def replay(self, saved: http.HTTPFlow, seed: int = 0, *, lo: int = 1, hi: int = 64) -> Replay:
        """Replay a saved flow (not modified) and compare with what it recorded."""
        why = replayable(saved)
        if why is not None:
            raise ValueError(f"flow {saved.id} cannot be replayed: {why}")
        expected = Outcome.of(saved)
        f = prepare(saved)
        self.configure({**replay_options(saved), **self.overrides})
        out, kind = asyncio.run(self._drive(f, random.Random(seed), lo, hi))
        if f.id in self.addon._states:
            raise AssertionError(f"per-flow state of {f.id} outlived the flow")
        got = Outcome.of(f, response=out)
        problems = mismatches(expected, got, self.strict)
        # the stream is kept in the flow only when something saves it (ToolVocabRecorder.saves_bodies)
        keeps = self.addon.recorder.saves_bodies()
        if keeps and kind == "callable" and f.response is not None and f.response.raw_content != out:
            problems.append("saved response.raw_content differs from the bytes the stream callable emitted")
        return Replay(flow=f, expected=expected, got=got, streamed=kind, seed=seed, problems=problems)

    async def _drive(
        self, f: http.HTTPFlow, rnd: random.Random, lo: int, hi: int, blanks: float = 0.0
    ) -> tuple[bytes | None, str]:
        """The hooks over ``f`` as mitmproxy's proxy core calls them (:func:`drive.drive`): the
        stream callable gets the upstream body in pieces of ``lo..hi`` bytes, after each of which
        an empty piece ``b""`` comes with probability ``blanks``, then the final ``b""``. What the
        client got, and how it was sent."""
        got = await driving.drive(self.tctx, self.module, f, rnd, lo=lo, hi=hi, blanks=blanks)
        return got.out, got.streamed


def prepare(saved: http.HTTPFlow) -> http.HTTPFlow:
    """A copy of ``saved`` as the addon first saw it: the original request and upstream answer,
    the headers the addon changed as they were (``toolvocab_headers``), no addon metadata, no
    marker or comment, ``live`` (G11). Same flow id."""
    f = clone(saved)
    body = original_request(saved)
    upstream = original_upstream(saved)
    changed = saved.metadata.get(META_HEADERS)
    for side, message in (("request", f.request), ("response", f.response)):
        before = changed.get(side) if isinstance(changed, dict) else None
        for name, value in before.items() if isinstance(before, dict) and message is not None else ():
            if value is None:
                message.headers.pop(name, None)
            else:
                message.headers[name] = value
    for key in ADDON_KEYS:
        f.metadata.pop(key, None)
    f.marked = ""
    f.comment = ""
    f.live = True
    if saved.metadata.get(META_REQUEST) is not None:
        f.request.content = body
    if f.response is not None:
        f.response.raw_content = upstream
        if "content-length" in f.response.headers:
            f.response.headers["content-length"] = str(len(upstream or b""))
    return f


def replay_file(
    path: str | os.PathLike, seeds: Iterable[int] = (0,), replayer: Replayer | None = None
) -> Iterator[Replay]:
    """Replay every flow of a file with each seed."""
    flows = load_flows(path)
    if replayer is None:
        with Replayer() as r:
            yield from _replay_all(r, flows, seeds)
    else:
        yield from _replay_all(replayer, flows, seeds)


def _replay_all(r: Replayer, flows: list[http.HTTPFlow], seeds: Iterable[int]) -> Iterator[Replay]:
    seeds = list(seeds)
    for f in flows:
        if replayable(f) is not None:
            continue
        for seed in seeds:
            yield r.replay(f, seed)


#: The random chunkings every flow is replayed with (``toolvocab replay``, tests/test_flows.py),
#: and the seed of the run that feeds the stream callable one byte at a time.
SEEDS = (0, 1, 2)
BYTEWISE_SEED = 99


def first_difference(
    r: Replayer, saved: http.HTTPFlow, seeds: Iterable[int] = SEEDS, *, bytewise: bool = True
) -> Replay | None:
    """Replay ``saved`` with each of ``seeds`` (pieces of 1–64 bytes) and, with ``bytewise``, once
    byte by byte; the first replay that differs from the recording, or ``None``."""
    runs = [(seed, 1, 64) for seed in seeds] + ([(BYTEWISE_SEED, 1, 1)] if bytewise else [])
    for seed, lo, hi in runs:
        result = r.replay(saved, seed, lo=lo, hi=hi)
        if not result.ok:
            return result
    return None
