"""What the documents name exists: every test README.md and docs/*.md name (a backticked
``test_…``, as docs/never.md names the test that holds each rule) is a test function of
``tests/``, and every file they name under ``toolvocab/``, ``tests/``, ``benchmarks/``, ``docs/`` or
``flows/`` is in the tree. A rename that leaves a document behind fails here."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _defined_tests() -> set[str]:
    names = set()
    for path in (ROOT / "tests").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test_"):
                names.add(node.name)
    return names


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_test_a_document_names_exists(doc: Path) -> None:
    named = set(re.findall(r"`(test_[A-Za-z0-9_]+)`", doc.read_text(encoding="utf-8")))
    missing = sorted(named - _defined_tests())
    assert not missing, f"{doc.name} names tests that do not exist: {missing}"


@pytest.mark.parametrize("doc", DOCS, ids=[d.name for d in DOCS])
def test_every_file_a_document_names_exists(doc: Path) -> None:
    text = doc.read_text(encoding="utf-8")
    # a path after another repository's name (``MiniMax-AI/MiniMax-M2.5 `docs/…` ``) is that
    # repository's; one in capitals (``flows/NAME-N.mitm``) is a pattern
    found = re.findall(
        r"(\S*\s?)`((?:toolvocab|tests|benchmarks|docs|flows|addon)/[A-Za-z0-9_./-]+\.(?:py|md|toml|mitm))`", text
    )
    named = {
        path
        for before, path in found
        if not re.fullmatch(r"[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+\s", before) and not re.search(r"[A-Z]{2,}", path)
    }
    missing = sorted(p for p in named if not (ROOT / p).exists())
    assert not missing, f"{doc.name} names files that are not in the tree: {missing}"
