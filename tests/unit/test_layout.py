"""The package's layers, as the README's "Layout" draws them, checked on the source:

- ``toolvocab.engine`` imports neither mitmproxy nor any other part of toolvocab;
- ``toolvocab.dialects`` imports the engine only (no mitmproxy, no addon);
- ``toolvocab.report`` (text of records) imports no addon and no mitmproxy;
- no addon imports the command line (``toolvocab.cli``, ``toolvocab.run``, ``toolvocab.replay``,
  ``toolvocab.demo``);
- every addon's mitmproxy name is its own: none equals the name of an addon class mitmproxy ships
  (mitmdump, mitmweb and the console each load some; ``intercept`` is mitmweb's).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import pytest

import harness

PACKAGE = harness.ROOT / "toolvocab"


def imports_of(path: Path) -> set[str]:
    """Every module name ``path`` imports (absolute imports; ``from a import b`` gives ``a`` and ``a.b``)."""
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}
    return out


def modules_under(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.py") if "__pycache__" not in p.parts)


def test_every_part_of_the_package_is_where_the_layout_says() -> None:
    assert (PACKAGE / "__init__.py").is_file() and (PACKAGE / "addons" / "__init__.py").is_file()
    assert (
        modules_under(PACKAGE / "engine") and modules_under(PACKAGE / "dialects") and modules_under(PACKAGE / "addons")
    )
    script = harness.SCRIPT.read_text()
    assert "default_addons()" in script and len(script.splitlines()) < 60  # a thin script


@pytest.mark.parametrize("path", modules_under(PACKAGE / "engine"), ids=lambda p: p.name)
def test_the_engine_imports_no_mitmproxy_and_nothing_above_it(path: Path) -> None:
    bad = {
        m
        for m in imports_of(path)
        if m.split(".")[0] == "mitmproxy" or (m.startswith("toolvocab.") and not m.startswith("toolvocab.engine"))
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", modules_under(PACKAGE / "dialects") + [PACKAGE / "report.py"], ids=lambda p: p.name)
def test_dialects_and_report_import_no_addon_and_no_mitmproxy(path: Path) -> None:
    bad = {
        m
        for m in imports_of(path)
        if m.split(".")[0] == "mitmproxy"
        or m.startswith(("toolvocab.addons", "toolvocab.cli", "toolvocab.run", "toolvocab.replay"))
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


@pytest.mark.parametrize("path", modules_under(PACKAGE / "addons") + [harness.SCRIPT], ids=lambda p: p.name)
def test_no_addon_imports_the_command_line(path: Path) -> None:
    bad = {
        m
        for m in imports_of(path)
        if m.startswith(("toolvocab.cli", "toolvocab.run", "toolvocab.replay", "toolvocab.demo"))
    }
    assert not bad, f"{path.name} imports {sorted(bad)}"


def _mitmproxy_addon_names() -> set[str]:
    """Lower-cased names of every class in mitmproxy's own addon modules and UI tools (the
    names mitmproxy registers addons under: ``type(addon).__name__.lower()``)."""
    names: set[str] = set()
    for package in ("mitmproxy.addons", "mitmproxy.tools.web", "mitmproxy.tools.console"):
        pkg = importlib.import_module(package)
        for info in pkgutil.walk_packages(pkg.__path__, package + "."):
            try:
                module = importlib.import_module(info.name)
            except Exception:  # a UI module that needs its terminal: its classes are not addons we load with
                continue
            names |= {
                name.lower()
                for name, obj in inspect.getmembers(module, inspect.isclass)
                if obj.__module__ == module.__name__
            }
    return names


def test_every_addon_has_its_own_name_beside_mitmproxys() -> None:
    with harness.script_context() as (_, module):
        ours = [getattr(a, "name", type(a).__name__.lower()) for a in module.addons]
    assert len(set(ours)) == len(ours)
    theirs = _mitmproxy_addon_names()
    assert "intercept" in theirs and "view" in theirs  # the scan sees mitmweb's addons
    assert not set(ours) & theirs, sorted(set(ours) & theirs)
    assert all(name.startswith("toolvocab") for name in ours), ours
