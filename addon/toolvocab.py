"""toolvocab: repair LLM tool calls between coding agents and LLM APIs — the mitmproxy script.

    mitmdump -s addon/toolvocab.py --mode reverse:https://api.anthropic.com --listen-host 127.0.0.1
    ANTHROPIC_BASE_URL=http://127.0.0.1:8080 claude

Between any client and any upstream, with no protocol conversion, toolvocab resolves every tool
call in the answer against the tools the client declared in that request: a name the client
never declared is renamed to the one declared tool it must mean (and its arguments fitted to
that tool's schema), or left alone when no single tool fits. The code is the ``toolvocab``
package next to this folder (or installed); this file only puts that package on ``sys.path``
and lists its addons (``toolvocab/addons/__init__.py`` says which does what). mitmproxy loads a
script by path with the script's folder on ``sys.path``, so relative imports cannot work here
(mitmproxy G7).
"""

from __future__ import annotations

import os
import sys


def _package_root() -> str | None:
    """The nearest folder above this file that holds the ``toolvocab`` package: the clone's root,
    or the site-packages of an installed copy (which ships this file inside the package)."""
    here = os.path.dirname(os.path.abspath(__file__))
    for _ in range(4):
        here = os.path.dirname(here)
        if os.path.isfile(os.path.join(here, "toolvocab", "__init__.py")):
            return here
    return None


# mitmproxy put this file's folder first on sys.path (and leaves it there). This file is named
# toolvocab too: with the folder on the path, a later ``import toolvocab`` would find this file
# instead of the package. The folder holds nothing else to import, so it goes, and the package's
# root comes first.
_here = os.path.dirname(os.path.abspath(__file__))
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != _here]
_root = _package_root()
if _root is not None and sys.path[:1] != [_root]:
    sys.path.insert(0, _root)

from toolvocab.addons import default_addons  # noqa: E402

addons = default_addons()
