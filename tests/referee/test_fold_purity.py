"""The fold reads no clock, randomness or I/O: what `lint-imports` cannot see.

The Python the fold loads is held by import-linter contracts in pyproject.toml (no clock,
randomness, I/O, Kafka or DuckDB), checked by `make lint`; a builtin such as ``open``
needs no import, so those modules are also read here. The fold's rules are Rust
(``native/src/fold/``): its sources are read for the same, with the crate's dependencies
and the Python modules it imports.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import tomllib
from pathlib import Path

import grimp

from oncelog._compiled import source_path

FORBIDDEN_CALLS = {"print", "open", "input", "exec", "eval", "__import__"}
FOLD = "oncelog.referee.fold"
CRATE = Path(__file__).resolve().parents[2] / "native"
# The fold's Rust: its module and the object helpers it calls.
RUST_FOLD = [*sorted((CRATE / "src" / "fold").glob("*.rs")), CRATE / "src" / "objects.rs"]
RUST_FORBIDDEN = re.compile(
    r"\bstd::(?:time|fs|net|env|io|process|thread)\b|\b(?:SystemTime|Instant)\b"
    r"|\b(?:println|eprintln|print|eprint|dbg)!|\brand\b|PyImport_|PyObject_Call|PyEval_"
)


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


def _rust_code(path: Path) -> str:
    """``path`` without its comments (``//`` to the end of a line; the sources have no ``/*``)."""
    text = path.read_text("utf-8")
    assert "/*" not in text, f"{path}: a block comment this reader does not strip"
    return re.sub(r"//.*", "", text)


def test_the_rust_fold_reads_no_clock_randomness_nor_io() -> None:
    assert len(RUST_FOLD) > 5
    for path in RUST_FOLD:
        found = RUST_FORBIDDEN.search(_rust_code(path))
        assert found is None, f"{path.name}: {found.group(0) if found else ''}"


def test_the_rust_fold_imports_the_models_and_nothing_impure() -> None:
    code = "".join(_rust_code(path) for path in RUST_FOLD)
    imported = set(re.findall(r'\.import\("([^"]+)"\)', code))
    assert imported == {"oncelog.schemas.models", "oncelog.identity.tokens", "dataclasses"}
    # The package's modules among them are held by the fold's import-linter contract too.
    pyproject = tomllib.loads((CRATE.parent / "pyproject.toml").read_text("utf-8"))
    contracts = pyproject["tool"]["importlinter"]["contracts"]
    (pure,) = [c for c in contracts if c["name"].startswith("The fold is pure")]
    assert {"oncelog.schemas.models", "oncelog.identity.tokens"} <= set(pure["source_modules"])


def test_the_crate_depends_on_pyo3_and_sha256_alone() -> None:
    manifest = tomllib.loads((CRATE / "Cargo.toml").read_text("utf-8"))
    assert set(manifest["dependencies"]) == {"pyo3", "sha2"}
