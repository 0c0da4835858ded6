"""Console scripts of toolvocab (installed, or ``uv run`` in a clone): ``toolvocab`` (mitmdump)
and ``toolvocab-web`` (mitmweb), each started with ``-s <the toolvocab.py script>`` and every
other argument passed through, and toolvocab's own subcommands::

    toolvocab                                     # regular mode on 127.0.0.1:8080, known LLM hosts
    toolvocab --mode reverse:https://api.anthropic.com
    toolvocab --listen-host 0.0.0.0               # accept other machines (a team proxy)
    toolvocab-web --set toolvocab_mode=observe
    toolvocab demo                                # a repair, with no agent and no API key
    toolvocab replay FILE|DIR…                    # saved flows through the current addon
    toolvocab explain|stats|tools FILE…           # what saved flows' records say

Safe by default: without ``--listen-host`` (or ``listen_host`` in ``--set`` or mitmproxy's
``config.yaml``) the proxy listens on 127.0.0.1 only, and says so — mitmdump's own default is
every interface, for a proxy that carries API keys. ``--version`` names toolvocab's version,
``--help`` lists toolvocab's options and subcommands before mitmdump's help; ``--options`` and
``--commands`` list mitmproxy's options and commands with toolvocab's among them.

The addon is the same file as ``addon/toolvocab.py`` in a clone; mitmproxy loads it as a script
(``-s``), so its hot reload and options work as there. Python's own mitmproxy (the ``mitmproxy``
dependency) runs it; mitmproxy's standalone binaries bundle their own Python and cannot import
toolvocab's dependencies.
"""

from __future__ import annotations

import os
import re
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

#: toolvocab's subcommands: the first argument; anything else goes to mitmdump / mitmweb.
SUBCOMMANDS = {
    "demo": "a repair through a local proxy and fake upstream: no agent, no API key",
    "replay": "replay saved flows through the current addon, offline; PASS or a readable diff",
    "explain": "why each tool name in saved flows was or was not repaired",
    "stats": "counts over saved flows: states, decisions, clients, hosts",
    "tools": "the tools each saved flow's client declared",
}
#: Where the console scripts listen unless told otherwise.
LOCAL_HOST = "127.0.0.1"


def addon_path() -> str:
    """The path of the mitmproxy script: ``toolvocab/_script/toolvocab.py`` in an installed copy
    (the wheel ships ``addon/toolvocab.py`` there), ``addon/toolvocab.py`` in a clone; raises
    ``RuntimeError`` when neither exists."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "_script" / "toolvocab.py", package.parent / "addon" / "toolvocab.py"):
        if candidate.is_file():
            return str(candidate)
    raise RuntimeError(f"the toolvocab script is neither in {package / '_script'} nor in {package.parent / 'addon'}")


def version() -> str:
    """toolvocab's version (``toolvocab.__version__``)."""
    from toolvocab import __version__

    return __version__


def argv_for(args: list[str]) -> list[str]:
    """mitmproxy's arguments: ``-s <addon>`` first, then ``args`` unchanged."""
    return ["-s", addon_path(), *args]


def chooses_listen_host(args: list[str], confdir: str | None = None) -> bool:
    """Whether the user chose where to listen: ``--listen-host`` (``=``), ``--set listen_host=…``,
    or ``listen_host`` in mitmproxy's ``config.yaml`` / ``config.yml`` (in ``--set confdir=`` or
    ``~/.mitmproxy``)."""
    for i, arg in enumerate(args):
        if arg == "--listen-host" or arg.startswith("--listen-host="):
            return True
        if arg == "--set" and i + 1 < len(args) and args[i + 1].startswith("listen_host="):
            return True
        if arg.startswith("--set=listen_host="):
            return True
        if arg == "--set" and i + 1 < len(args) and args[i + 1].startswith("confdir="):
            confdir = args[i + 1].split("=", 1)[1]
    folder = Path(os.path.expanduser(confdir or "~/.mitmproxy"))
    for name in ("config.yaml", "config.yml"):
        try:
            text = (folder / name).read_text()
        except OSError:
            continue
        if re.search(r"(?m)^\s*listen_host\s*:", text):
            return True
    return False


def with_local_default(args: list[str], out=None) -> list[str]:
    """``args`` with ``--listen-host 127.0.0.1`` added (and a line on ``out`` saying so) unless
    the user chose a listen host (:func:`chooses_listen_host`)."""
    if chooses_listen_host(args):
        return args
    print(
        f"toolvocab: listening on {LOCAL_HOST} only (mitmproxy's default would be every interface); "
        "--listen-host 0.0.0.0 accepts other machines",
        file=out or sys.stderr,
    )
    return ["--listen-host", LOCAL_HOST, *args]


def lists(args: list[str]) -> bool:
    """Whether ``args`` ask mitmproxy to list its options or commands: ``--options``,
    ``--commands``, or a prefix of either that its argument parser takes for it (``--opt``)."""
    return any(
        len(a) > 2 and a.startswith("--") and ("--options".startswith(a) or "--commands".startswith(a)) for a in args
    )


def with_toolvocab(master_cls: type) -> type:
    """``master_cls`` (mitmproxy's ``DumpMaster`` or ``WebMaster``) with toolvocab's addons added
    as it is made: for ``--options`` and ``--commands``, which mitmproxy answers before it loads
    any script (``mitmproxy/tools/main.py``, ``run``), so that toolvocab's options and commands
    are listed among mitmproxy's own. Never used to run a proxy: there the script loads them."""
    from toolvocab.addons import default_addons

    class WithToolvocab(master_cls):  # type: ignore[misc,valid-type]
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            self.addons.add(*default_addons())

    return WithToolvocab


def toolvocab_options():
    """An ``OptManager`` holding only the options toolvocab's addons declare."""
    from mitmproxy import options
    from mitmproxy import optmanager

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
    return ours


def print_help(tool: str, out=None) -> None:
    """toolvocab's part of ``--help``: what it is, its subcommands, its options (name, default,
    help); mitmproxy's own help follows it."""
    out = out or sys.stdout
    web = tool == "mitmweb"
    name = "toolvocab-web" if web else "toolvocab"
    print(
        f"{name} {version()}: {tool} with the toolvocab addon (repairs tool calls between coding agents and LLM APIs).",
        file=out,
    )
    print(f"\nusage: {name} [{tool} options]   listens on {LOCAL_HOST} unless --listen-host is given", file=out)
    if not web:
        print(
            "       toolvocab SUBCOMMAND …       (toolvocab SUBCOMMAND --help for its arguments)\n\nsubcommands:",
            file=out,
        )
        for sub, text in SUBCOMMANDS.items():
            print(f"  {sub:<9} {text}", file=out)
    print("\ntoolvocab options (--set NAME=VALUE):", file=out)
    opts = toolvocab_options()
    for opt in sorted(opts.keys()):
        o = opts._options[opt]
        choices = f" ({', '.join(o.choices)})" if o.choices else ""
        print(f"  {opt} = {o.default!r}{choices}", file=out)
        for line in textwrap.wrap(o.help, 88):
            print(f"      {line}", file=out)
    print(f"\n{tool}'s own help follows.\n", file=out)


def _subcommand(name: str) -> Callable[[list[str]], int]:
    if name == "replay":
        from toolvocab.replay import main as replay_main

        return replay_main
    if name == "demo":
        from toolvocab.demo import main as demo_main

        return demo_main
    from toolvocab import cli

    return lambda args: cli.main([name, *args])


def run_cli(func: Callable[[list[str]], int], args: list[str]) -> int:
    """``func(args)``, the exit status; a reader that closed the pipe (``… | head``) ends it
    quietly, as Python's documentation recommends (library/signal.html, "Note on SIGPIPE"):
    stdout is pointed at ``os.devnull`` so that the final flush cannot raise again."""
    try:
        status = func(args)
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 1


def _start(tool: str, args: list[str]) -> int:
    from mitmproxy.tools import main as tools

    start = tools.mitmweb if tool == "mitmweb" else tools.mitmdump
    if "--version" in args:
        print(f"toolvocab: {version()}")
    elif lists(args) and not any(a in ("-h", "--help") for a in args):
        from mitmproxy.tools import cmdline

        if tool == "mitmweb":
            from mitmproxy.tools.web.master import WebMaster as master_cls
        else:
            from mitmproxy.tools.dump import DumpMaster as master_cls
        # mitmproxy prints them and exits before it would start a proxy: nothing listens
        parser = cmdline.mitmweb if tool == "mitmweb" else cmdline.mitmdump
        return run_cli(lambda _: tools.run(with_toolvocab(master_cls), parser, args) or 0, [])
    elif any(a in ("-h", "--help") for a in args):
        try:
            print_help(tool)
            sys.stdout.flush()
            try:
                start(argv_for(args))
            except SystemExit:  # mitmproxy exits 1 after printing its help (tools/main.py)
                pass
        except BrokenPipeError:  # `toolvocab --help | head`: the reader has gone
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    else:
        args = with_local_default(args)
    return start(argv_for(args)) or 0


def main() -> None:
    """``toolvocab [mitmdump arguments]``: mitmdump with the addon, on 127.0.0.1 unless told
    otherwise; ``toolvocab SUBCOMMAND …`` (:data:`SUBCOMMANDS`)."""
    args = sys.argv[1:]
    if args[:1] and args[0] in SUBCOMMANDS:
        sys.exit(run_cli(_subcommand(args[0]), args[1:]))
    sys.exit(_start("mitmdump", args))


def main_web() -> None:
    """``toolvocab-web [mitmweb arguments]``: mitmweb with the addon, on 127.0.0.1 unless told otherwise."""
    sys.exit(_start("mitmweb", sys.argv[1:]))


if __name__ == "__main__":
    main()
