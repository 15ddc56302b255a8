"""The fold reads no clock, no randomness, does no I/O: checked on the import graph."""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

NEVER = {"confluent_kafka", "duckdb"}
FORBIDDEN = NEVER | {
    "time",
    "datetime",
    "random",
    "secrets",
    "os",
    "socket",
    "logging",
    "threading",
    "asyncio",
    "subprocess",
    "io",
    "pathlib",
    "urllib",
    "requests",
    "uuid",
}
# The package root re-exports Settings (which names paths and reads the environment
# when built, never at import); the fold never touches it, so it is only held to NEVER.
CONFIG_ONLY = {"oncelog", "oncelog.settings"}
FORBIDDEN_CALLS = {"print", "open", "input", "exec", "eval", "__import__"}


def _module_path(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None
    assert spec.origin is not None
    return Path(spec.origin)


def _type_checking_only(tree: ast.AST) -> set[int]:
    """ids of the nodes under ``if TYPE_CHECKING:``: they never run."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        guard = isinstance(node, ast.If) and isinstance(node.test, ast.Name)
        if guard and node.test.id == "TYPE_CHECKING":  # type: ignore[attr-defined]
            skipped.update(id(n) for stmt in node.body for n in ast.walk(stmt))  # type: ignore[attr-defined]
    return skipped


def _imports(tree: ast.AST, package: str) -> set[str]:
    found: set[str] = set()
    skipped = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                base = f"{base}.{node.module}" if node.module else base
            found.add(base)
    return found


def _closure(root: str) -> dict[str, set[str]]:
    """Every oncelog module reachable from ``root`` with its direct imports."""
    seen: dict[str, set[str]] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        path = _module_path(name)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imports = _imports(ast.parse(path.read_text("utf-8")), package)
        seen[name] = imports
        todo.extend(i for i in imports if i.startswith("oncelog"))
        parent = name.rpartition(".")[0]
        if parent:
            todo.append(parent)  # importing a module runs its package's __init__
    return seen


def test_fold_closure_imports_no_io_clock_or_randomness() -> None:
    closure = _closure("oncelog.projector.fold")
    assert "oncelog.schemas.models" in closure
    for module, imports in closure.items():
        tops = {i.split(".")[0] for i in imports}
        bad = tops & (NEVER if module in CONFIG_ONLY else FORBIDDEN)
        assert not bad, f"{module} imports {bad}"
    assert "oncelog.schemas.codec" not in closure, "the fold must not import the codec"


def test_fold_closure_calls_no_io_builtins() -> None:
    for module in set(_closure("oncelog.projector.fold")) - CONFIG_ONLY:
        tree = ast.parse(_module_path(module).read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id not in FORBIDDEN_CALLS, f"{module} calls {node.func.id}"


def test_closure_walker_sees_through_packages() -> None:
    closure = _closure("oncelog.projector.fold")
    assert {"oncelog", "oncelog.projector", "oncelog.schemas"} <= set(closure)
