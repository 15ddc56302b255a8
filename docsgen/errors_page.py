"""The error-code reference, generated from ``oncelog/errors.py`` and the package's subclasses."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import oncelog
from docsgen.text import md_cell
from oncelog.errors import LedgerError

INTRO = """\
# Error codes

Every error oncelog raises is an `oncelog.errors.LedgerError`. Its `code` is stable and
machine-readable (the CLI prints `[code] message` and exits 2; the HTTP API answers
`{"code", "message"}` with the error's HTTP status). Catch a class, or compare `exc.code`.
A subclass that declares no code of its own carries its parent's and is listed under it.
Classes are in `oncelog.errors` unless a module is named (`receipts.X` is
`oncelog.receipts.X`).

This page is generated from `oncelog/errors.py` and the package's other error classes
(`make docs-reference`).

| code | class | HTTP | what it means |
|---|---|---|---|
"""


def render() -> str:
    """The page: one row per declared code, its class first, then the classes sharing it."""
    _import_all()
    rows = []
    for cls in sorted(_classes(), key=lambda c: (c.code, _depth(c))):
        if "code" not in cls.__dict__ and cls is not LedgerError:
            continue
        sharing = [c for c in _classes() if c.code == cls.code and "code" not in c.__dict__]
        also = "".join(f"<br>also `{_name(c)}`: {_summary(c)}" for c in sharing)
        row = f"| `{cls.code}` | `{_name(cls)}` | {cls.http_status} | {_summary(cls)}{also} |"
        rows.append(row)
    return INTRO + "\n".join(rows) + "\n"


def _import_all() -> None:
    """Import every module, so that every subclass is defined (adapters need their extra)."""
    for info in pkgutil.walk_packages(oncelog.__path__, "oncelog."):
        if info.name.endswith("__main__"):  # importing it runs the CLI
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an adapter whose framework is not installed
            continue


def _classes() -> list[type[LedgerError]]:
    found: list[type[LedgerError]] = [LedgerError]
    for cls in found:
        found.extend(c for c in cls.__subclasses__() if c not in found)
    return [c for c in found if c.__module__.startswith("oncelog")]


def _depth(cls: type) -> int:
    return len(cls.__mro__)


def _name(cls: type) -> str:
    """``ConflictError`` for ``oncelog.errors``' classes; others keep their module's path."""
    module = cls.__module__.removeprefix("oncelog.").removeprefix("errors")
    return f"{module}.{cls.__qualname__}" if module else cls.__qualname__


def _summary(cls: type) -> str:
    doc = inspect.getdoc(cls) or ""
    return md_cell(doc.split("\n\n")[0])
