"""The fold calls no I/O builtin: what `lint-imports` cannot see.

Its imports (no clock, randomness, I/O, Kafka or DuckDB) are import-linter
contracts in pyproject.toml, checked by `make lint`. A builtin such as ``open``
needs no import, so the modules the fold loads are also read here.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import grimp

from oncelog._compiled import source_path

FORBIDDEN_CALLS = {"print", "open", "input", "exec", "eval", "__import__"}
FOLD = "oncelog.referee.fold"


def _fold_closure() -> set[str]:
    """The oncelog modules importing the fold runs, package ``__init__``s included."""
    graph = grimp.build_graph("oncelog", exclude_type_checking_imports=True)
    seen: set[str] = set()
    todo = {FOLD}
    while todo:
        module = todo.pop()
        seen.add(module)
        parent = module.rpartition(".")[0]  # importing a module runs its package's __init__
        todo |= (graph.find_modules_directly_imported_by(module) | {parent}) - seen - {""}
    return seen


def _source(module: str) -> str:
    spec = importlib.util.find_spec(module)
    assert spec is not None
    assert spec.origin is not None
    origin = Path(spec.origin)
    # A module mypyc compiled (setup.py) loads from a .so beside its source: read the source.
    # Not beside the spec's origin: a module of the compiled group first imported by another
    # one reports a path under the package twice (oncelog/oncelog/...).
    if origin.suffix != ".py":
        origin = source_path(module)
    return origin.read_text("utf-8")


def test_the_closure_reaches_the_models_and_the_packages() -> None:
    assert {"oncelog", "oncelog.referee", "oncelog.schemas.models"} <= _fold_closure()


def test_fold_closure_calls_no_io_builtins() -> None:
    for module in _fold_closure():
        for node in ast.walk(ast.parse(_source(module))):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in FORBIDDEN_CALLS, f"{module} calls {node.func.id}"
