"""Flow files and the corpus: where flows/ is, the metadata keys the addon writes, reading and
writing ``.mitm`` files, and the texts a committed flow may hold in place of a client's prose."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from mitmproxy import http
from mitmproxy import io as mio
import harness


REPO = harness.ROOT


#: The corpus; ``TOOLVOCAB_FLOWS_DIR`` points the tools at another one (tests of flowtool itself).
FLOWS_DIR = Path(os.environ.get("TOOLVOCAB_FLOWS_DIR") or REPO / "flows")


MANIFEST = FLOWS_DIR / "MANIFEST.toml"


META_RECORD = "toolvocab"


META_REQUEST = "toolvocab_request"


META_UPSTREAM = "toolvocab_upstream"


META_DIFF = "toolvocab_diff"


META_REPLAY = "toolvocab_replay"


#: Metadata the addon writes; cleared before a replay so the replay writes it afresh.
ADDON_KEYS = (META_RECORD, META_REQUEST, META_UPSTREAM, META_DIFF)


#: Record fields that differ from run to run and are never compared.
RUN_SPECIFIC = frozenset({"ttfb_ms", "total_ms"})


DIALECTS = ("anthropic", "openai_chat", "openai_responses", "gemini")


#: The only texts allowed in a committed flow's system slots (besides the sentence the addon
#: itself adds): the client's own prompt is never recorded.
NEUTRAL_SYSTEM = "You are a coding assistant in a recorded test conversation. Keep answers short."


#: Replaces context a client injects into user turns (Claude Code's <system-reminder>, Codex's
#: <environment_context>, Gemini CLI's and Qwen Code's session context).
NEUTRAL_CONTEXT = "(client context removed from this recorded test conversation)"


#: Replaces a tool's top-level description (the client's prose); names and schemas are kept.
NEUTRAL_DESCRIPTION = "(tool description removed)"


NEUTRAL_TEXTS = frozenset({NEUTRAL_SYSTEM, NEUTRAL_CONTEXT})


def load_flows(path: str | os.PathLike) -> list[http.HTTPFlow]:
    """Every HTTP flow in a ``.mitm`` file (other flow types are skipped)."""
    with open(path, "rb") as fp:
        return [f for f in mio.FlowReader(fp).stream() if isinstance(f, http.HTTPFlow)]


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
