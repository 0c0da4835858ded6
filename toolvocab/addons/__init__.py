"""The addon classes, one per concern, composed like mitmproxy's own ``default_addons()``:

- :class:`~toolvocab.addons.core.ToolVocab` (``core.py``): options ``toolvocab_mode``,
  ``toolvocab_profiles``, ``toolvocab_hosts``, ``toolvocab_hold_timeout``; the request,
  responseheaders, response and error hooks; per-flow state (``state.py``) and the stream
  callable (``stream.py``);
- :class:`~toolvocab.addons.redaction.ToolVocabRedaction` (``redaction.py``): ``toolvocab_redact``;
- :class:`~toolvocab.addons.intercept.ToolVocabIntercept` (``intercept.py``): ``toolvocab_intercept``,
  regular mode's TLS interception, the start-up line;
- :class:`~toolvocab.addons.websocket.ToolVocabWebSocket` (``websocket.py``): Codex's Responses
  over WebSocket;
- :class:`~toolvocab.addons.recording.ToolVocabRecorder` (``recording.py``): ``toolvocab_record``; the
  record in ``flow.metadata``, marker, comment, log line, recorded flow files;
- :class:`~toolvocab.addons.ui.ToolVocabUI` (``ui.py``): the contentview and the
  ``toolvocab.explain`` / ``toolvocab.stats`` / ``toolvocab.tools`` commands.

The four that hold options share :class:`~toolvocab.addons.options.Configurable` (``options.py``):
``configure`` logs a bad value before mitmproxy reports it.

``addon/toolvocab.py`` (the script mitmproxy loads with ``-s``) is ``addons = default_addons()``.
"""

from __future__ import annotations

from typing import Any

from toolvocab.addons.core import ToolVocab
from toolvocab.addons.intercept import ToolVocabIntercept
from toolvocab.addons.recording import ToolVocabRecorder
from toolvocab.addons.redaction import ToolVocabRedaction
from toolvocab.addons.ui import ToolVocabUI
from toolvocab.addons.websocket import ToolVocabWebSocket


def default_addons() -> list[Any]:
    """A fresh set of toolvocab's addons, the repair addon first (mitmproxy calls each hook on
    them in this order)."""
    redaction = ToolVocabRedaction()
    recorder = ToolVocabRecorder(redaction)
    core = ToolVocab(recorder)
    return [core, redaction, ToolVocabIntercept(core), ToolVocabWebSocket(core, recorder), recorder, ToolVocabUI()]
