"""What every test that drives toolvocab's hooks shares: the script's path and its addons by role.

The script (``addon/toolvocab.py``) is loaded with mitmproxy's test context
(``taddons.context().script(SCRIPT)``) and never imported as a module; its ``addons`` list
holds one instance of each addon class (``toolvocab/addons/__init__.py``):

    module = tctx.script(harness.SCRIPT)
    harness.core(module)._states        # the repair addon's per-flow state
    harness.websocket(module)._ws       # the WebSocket transport's per-socket state
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "addon" / "toolvocab.py"


def addon(module: Any, kind: str) -> Any:
    """The addon of class ``kind`` (``ToolVocab``, ``ToolVocabRedaction``, ``ToolVocabIntercept``,
    ``ToolVocabWebSocket``, ``ToolVocabRecorder``, ``ToolVocabUI``) in a loaded script's ``addons``;
    raises ``LookupError`` when there is none."""
    for a in module.addons:
        if type(a).__name__ == kind:
            return a
    raise LookupError(f"no {kind} addon in {[type(a).__name__ for a in module.addons]}")


def core(module: Any) -> Any:
    """The repair addon (hooks, ``mode``, ``profiles``, ``hosts``, ``_states``)."""
    return addon(module, "ToolVocab")


def websocket(module: Any) -> Any:
    """The WebSocket transport (``_ws``)."""
    return addon(module, "ToolVocabWebSocket")


def intercept(module: Any) -> Any:
    """Regular mode's interception (``tls_clienthello``)."""
    return addon(module, "ToolVocabIntercept")
