"""toolvocab: a mitmproxy addon that repairs tool-call names and arguments between coding agents
and LLM APIs.

Where a newcomer starts:

- ``addon/toolvocab.py``: the script mitmproxy loads (``mitmdump -s addon/toolvocab.py``);
- :mod:`toolvocab.addons`: the addon classes, one per concern (repair hooks, stream callable,
  recording, redaction, regular-mode interception, WebSocket, UI);
- :mod:`toolvocab.dialects`: one module per wire format — where tool names live in request and
  answer bodies and in stream events;
- :mod:`toolvocab.engine`: no mitmproxy — declared tools and a tool call in, a decision and its
  reason out (the ladder), the sourced vocabulary, argument fitting, grammars, profiles, plan;
- :mod:`toolvocab.report`: the record as text (log lines, contentview, explain, stats, tools);
- :mod:`toolvocab.cli` (``python -m toolvocab.cli``) and :mod:`toolvocab.run` (the installed
  ``toolvocab`` / ``toolvocab-web`` commands); :mod:`toolvocab.hosts`: the known LLM API hosts.
"""

__version__ = "0.1.0"
