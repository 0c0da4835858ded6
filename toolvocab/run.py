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

import sys
from pathlib import Path


def addon_path() -> str:
    """The path of the mitmproxy script: ``toolvocab/_script/toolvocab.py`` in an installed copy
    (the wheel ships ``addon/toolvocab.py`` there), ``addon/toolvocab.py`` in a clone; raises
    ``RuntimeError`` when neither exists."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "_script" / "toolvocab.py", package.parent / "addon" / "toolvocab.py"):
        if candidate.is_file():
            return str(candidate)
    raise RuntimeError(f"the toolvocab script is neither in {package / '_script'} nor in {package.parent / 'addon'}")


def argv_for(args: list[str]) -> list[str]:
    """mitmproxy's arguments: ``-s <addon>`` first, then ``args`` unchanged."""
    return ["-s", addon_path(), *args]


def dump_options(out=None) -> None:
    """Print the ``toolvocab_*`` options with their defaults and help, as mitmproxy's
    ``--options`` prints its own (which cannot list a script's options: scripts load later)."""
    from mitmproxy import optmanager
    from mitmproxy import options

    from toolvocab.addons import default_addons

    opts = options.Options()
    known = set(opts.keys())

    class _Loader:
        def add_option(self, name, typespec, default, help, choices=None):  # noqa: A002 - mitmproxy's name
            opts.add_option(name, typespec, default, help, choices)

    for addon in default_addons():
        if hasattr(addon, "load"):
            addon.load(_Loader())
    ours = optmanager.OptManager()
    for name in sorted(set(opts.keys()) - known):
        ours._options[name] = opts._options[name]
    optmanager.dump_defaults(ours, out or sys.stdout)


def main() -> None:
    """``toolvocab [mitmdump arguments]``: mitmdump with the addon; ``toolvocab --options``
    prints toolvocab's options (``mitmdump --options`` for mitmproxy's own)."""
    from mitmproxy.tools.main import mitmdump

    if sys.argv[1:] == ["--options"]:
        dump_options()
        return
    sys.exit(mitmdump(argv_for(sys.argv[1:])))


def main_web() -> None:
    """``toolvocab-web [mitmweb arguments]``: mitmweb with the addon."""
    from mitmproxy.tools.main import mitmweb

    sys.exit(mitmweb(argv_for(sys.argv[1:])))


if __name__ == "__main__":
    main()
