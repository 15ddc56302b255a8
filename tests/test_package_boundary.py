"""The package stands alone: nothing under oncelog/ imports the drills, the benches or the tests."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "oncelog"
OUTSIDE = ("drills", "bench", "tests")


def _imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_package_imports_nothing_from_outside_it() -> None:
    offenders = {
        f"{path.relative_to(PACKAGE.parent)}: {name}"
        for path in PACKAGE.rglob("*.py")
        for name in _imported(path)
        if name.split(".")[0] in OUTSIDE
    }
    assert offenders == set()


def test_no_drill_folder_is_left_in_the_package() -> None:
    names = {"chaos", "faults", "demo", "sample"}
    assert [p for p in PACKAGE.rglob("*") if p.is_dir() and p.name in names] == []
