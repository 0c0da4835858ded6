"""Console scripts of an installed toolvocab: ``toolvocab`` (mitmdump) and ``toolvocab-web``
(mitmweb), each started with ``-s <installed toolvocab.py>`` and every other argument passed
through::

    toolvocab                                           # regular mode on :8080, known LLM hosts
    toolvocab --mode reverse:https://api.anthropic.com --listen-host 127.0.0.1
    toolvocab-web --set toolvocab_mode=observe

The addon is the same file as ``addon/toolvocab.py`` in a clone; mitmproxy loads it as a script
(``-s``), so its hot reload and options work as there. Python's own mitmproxy (the ``mitmproxy``
dependency) runs it; mitmproxy's standalone binaries bundle their own Python and cannot import
toolvocab's dependencies.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def addon_path() -> str:
    """The path of the installed ``toolvocab.py`` (the mitmproxy script); raises
    ``RuntimeError`` when it is not importable."""
    spec = importlib.util.find_spec("toolvocab")
    if spec is None or not spec.origin:
        raise RuntimeError("toolvocab.py is not installed next to tvrun.py")
    return str(Path(spec.origin).resolve())


def argv_for(args: list[str]) -> list[str]:
    """mitmproxy's arguments: ``-s <addon>`` first, then ``args`` unchanged."""
    return ["-s", addon_path(), *args]


def main() -> None:
    """``toolvocab [mitmdump arguments]``: mitmdump with the addon."""
    from mitmproxy.tools.main import mitmdump

    sys.exit(mitmdump(argv_for(sys.argv[1:])))


def main_web() -> None:
    """``toolvocab-web [mitmweb arguments]``: mitmweb with the addon."""
    from mitmproxy.tools.main import mitmweb

    sys.exit(mitmweb(argv_for(sys.argv[1:])))


if __name__ == "__main__":
    main()
