"""No class over 250 lines and no function over 60 in ``oncelog/`` (issue 25, point 3).

How it counts: every ``class``, ``def`` and ``async def`` found by walking each module's
``ast``, at any depth (methods, nested functions, classes in functions), measures
``end_lineno - lineno + 1`` of its statement. ``lineno`` is the line of the ``class`` or
``def`` keyword, so decorators are excluded; the docstring, comments and blank lines
inside the body count. A nested function counts inside its outer function too, and on its
own as ``outer.inner``.

What is over today stands in :data:`ALLOWED`, with its length now: it may shrink, never
grow, and an entry that is no longer over must go, so the list shows what remains.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "oncelog"
MAX_CLASS_LINES = 250
MAX_FUNCTION_LINES = 60

#: ``path/from/oncelog:qualname`` -> its length in lines when it was listed.
#: A new entry says why, next to its length.
ALLOWED: dict[str, int] = {
    # Generated from the Avro schemas (oncelog.schemas.inline_reader), straight-line on purpose.
    "schemas/request_reader.py:read": 627,
    "schemas/request_reader_previous.py:read": 442,
    "schemas/decision_reader.py:read": 1344,
    "schemas/decision_reader_previous.py:read": 1155,
}

_Def = ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def _defs(node: ast.AST, prefix: str = "") -> Iterator[tuple[str, _Def]]:
    """Every class and function under ``node``, with its dotted qualname."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, _Def):
            name = f"{prefix}{child.name}"
            yield name, child
            yield from _defs(child, f"{name}.")
        else:
            yield from _defs(child, prefix)


def _lines(node: _Def) -> int:
    assert node.end_lineno is not None
    return node.end_lineno - node.lineno + 1


def _limit(node: _Def) -> int:
    return MAX_CLASS_LINES if isinstance(node, ast.ClassDef) else MAX_FUNCTION_LINES


def measure(root: Path = ROOT) -> dict[str, int]:
    """Every class and function of the package over its limit: ``file:qualname`` -> lines."""
    over: dict[str, int] = {}
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for name, node in _defs(tree):
            if _lines(node) > _limit(node):
                over[f"{path.relative_to(root).as_posix()}:{name}"] = _lines(node)
    return over


def test_no_class_or_function_is_over_its_limit_unless_listed() -> None:
    over = measure()
    unlisted = {name: n for name, n in over.items() if name not in ALLOWED}
    assert not unlisted, (
        f"over {MAX_CLASS_LINES} lines a class or {MAX_FUNCTION_LINES} a function: {unlisted}"
    )


def test_a_listed_one_does_not_grow() -> None:
    over = measure()
    grown = {name: (ALLOWED[name], n) for name, n in over.items() if n > ALLOWED.get(name, n)}
    assert not grown, f"grown past its listed length (listed, now): {grown}"


def test_the_list_names_only_what_is_still_over() -> None:
    over = measure()
    fixed = sorted(set(ALLOWED) - set(over))
    assert not fixed, f"no longer over its limit, take it off ALLOWED: {fixed}"


def test_the_count_excludes_decorators_and_includes_nested_functions(tmp_path: Path) -> None:
    body = "\n".join(f"    x{i} = {i}" for i in range(MAX_FUNCTION_LINES - 2))
    source = (
        "import functools\n\n"
        "@functools.cache\n@functools.cache\n"
        f"def exactly_at_the_limit():\n    '''doc'''\n{body}\n\n"
        "class Holder:\n    def outer(self):\n        def inner():\n"
        + "\n".join(f"            y{i} = {i}" for i in range(MAX_FUNCTION_LINES))
        + "\n"
    )
    (tmp_path / "sample.py").write_text(source, encoding="utf-8")
    over = measure(tmp_path)
    assert "sample.py:exactly_at_the_limit" not in over  # 60 lines: the decorators not counted
    assert over == {
        "sample.py:Holder.outer": MAX_FUNCTION_LINES + 2,
        "sample.py:Holder.outer.inner": MAX_FUNCTION_LINES + 1,
    }
