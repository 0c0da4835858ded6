"""Flow files and the corpus: where flows/ is, writing ``.mitm`` files, and the texts a committed
flow may hold in place of a client's prose. The metadata keys and reading a flow file are the
package's (:mod:`toolvocab.replay.flows`, re-exported here)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from mitmproxy import http
from mitmproxy import io as mio

import harness
from toolvocab.replay import flows as _flows

REPO = harness.ROOT


#: The corpus; ``TOOLVOCAB_FLOWS_DIR`` points the tools at another one (tests of flowtool itself).
FLOWS_DIR = Path(os.environ.get("TOOLVOCAB_FLOWS_DIR") or REPO / "flows")


MANIFEST = FLOWS_DIR / "MANIFEST.toml"


# The metadata keys, the record fields never compared and the dialects: toolvocab.replay.flows.
META_RECORD, META_REQUEST, META_UPSTREAM, META_DIFF, META_REPLAY = (
    _flows.META_RECORD,
    _flows.META_REQUEST,
    _flows.META_UPSTREAM,
    _flows.META_DIFF,
    _flows.META_REPLAY,
)
ADDON_KEYS = _flows.ADDON_KEYS
RUN_SPECIFIC = _flows.RUN_SPECIFIC
DIALECTS = _flows.DIALECTS
load_flows = _flows.load_flows


#: The only texts allowed in a committed flow's system slots (besides the sentence the addon
#: itself adds): the client's own prompt is never recorded.
NEUTRAL_SYSTEM = "You are a coding assistant in a recorded test conversation. Keep answers short."


#: Replaces context a client injects into user turns (Claude Code's <system-reminder>, Codex's
#: <environment_context>, Gemini CLI's and Qwen Code's session context).
NEUTRAL_CONTEXT = "(client context removed from this recorded test conversation)"


#: Replaces a tool's top-level description (the client's prose); names and schemas are kept.
NEUTRAL_DESCRIPTION = "(tool description removed)"


NEUTRAL_TEXTS = frozenset({NEUTRAL_SYSTEM, NEUTRAL_CONTEXT})


def write_flows(path: str | os.PathLike, flows: Iterable[http.HTTPFlow]) -> None:
    """Write ``flows`` to ``path`` atomically (a temp file renamed over it)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=path.name, suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fp:
            writer = mio.FlowWriter(fp)
            for f in flows:
                writer.add(f)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def corpus_files(root: Path | None = None) -> list[Path]:
    """``flows/*.mitm`` and ``flows/*/*.mitm``, sorted."""
    root = root or FLOWS_DIR
    return sorted({*root.glob("*.mitm"), *root.glob("*/*.mitm")})


def rel(path: Path) -> str:
    try:
        return str(Path(path).resolve().relative_to(FLOWS_DIR))
    except ValueError:
        return str(path)
