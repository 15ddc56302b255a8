"""The compiled core: which modules mypyc compiles, and the switch back to their source.

The modules below are plain typed Python that ``setup.py`` also compiles with mypyc
into C extensions beside their ``.py`` files; Python then imports the extension. The
source is the fallback: an install without these extensions (``ONCELOG_INTERPRETED=1``
at build time) runs it as it is. The fold itself is Rust, in every install
(:mod:`oncelog.native_core`).

``ONCELOG_INTERPRETED=1`` at run time imports the source even where an extension
exists (a debugger, a profiler that reads lines, a suspected compiler difference).
In a source checkout an extension older than its ``.py`` is stale (the source was
edited since ``make venv`` built it): then every listed module's source is imported
instead (the compiled modules call one another directly), with a warning, so an edit
always takes effect. Standard library only: ``setup.py``
reads :data:`COMPILED` from here before any dependency is installed.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import logging
import os
import sys
from collections.abc import Mapping, Sequence
from importlib.abc import MetaPathFinder
from pathlib import Path
from types import ModuleType
from typing import Final

COMPILED: Final = (
    "oncelog.referee.fold",
    "oncelog.referee.judge",
    "oncelog.referee.validate",
    "oncelog.identity.tokens",
    "oncelog.identity.canonical_json",
    "oncelog.identity.ids",
    "oncelog.identity.validation",
    "oncelog.identity.partitioner",
    "oncelog.schemas.request_reader",
    "oncelog.schemas.request_reader_previous",
    "oncelog.schemas.decision_reader",
    "oncelog.schemas.decision_reader_previous",
    "oncelog.schemas.avro_read",
    "oncelog.schemas.previous",
    "oncelog.schemas.decision_derived",
    "oncelog.schemas.avro_write",
    "oncelog.schemas.byte_budget",
    "oncelog.schemas.record_writers",
    "oncelog.schemas.fast_paths",
    "oncelog.projector.row_builders",
    "oncelog.projector.known_ids",
    "oncelog.projector.states",
)
"""The modules mypyc compiles, by import name."""

INTERPRETED_ENV: Final = "ONCELOG_INTERPRETED"
"""Set to ``1``: build none of these (``setup.py``) and import their source (run time)."""

_PACKAGE_ROOT: Final = Path(__file__).resolve().parent


def source_path(name: str) -> Path:
    """The ``.py`` file of the compiled module ``name``."""
    return _PACKAGE_ROOT.parent.joinpath(*name.split(".")).with_suffix(".py")


def extension_path(name: str) -> Path | None:
    """The built extension of ``name`` beside its source, if there is one."""
    source = source_path(name)
    for suffix in importlib.machinery.EXTENSION_SUFFIXES:
        candidate = source.with_suffix(suffix)
        if candidate.exists():
            return candidate
    return None


def is_compiled(module: ModuleType) -> bool:
    """True when ``module`` was imported from a C extension rather than its source."""
    origin = getattr(module, "__file__", None) or ""
    return origin.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


def _stale(name: str) -> bool:
    """In a source checkout: the extension is older than the source it was built from."""
    built = extension_path(name)
    if built is None or not (_PACKAGE_ROOT.parent / ".git").exists():
        return False
    return built.stat().st_mtime < source_path(name).stat().st_mtime


class _SourceFinder(MetaPathFinder):
    """Finds the listed modules' ``.py`` files ahead of their extensions."""

    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in self.names:
            return None
        return importlib.util.spec_from_file_location(fullname, source_path(fullname))


def routed(environ: Mapping[str, str]) -> frozenset[str]:
    """The compiled modules to import from source under ``environ``, each stale one warned of."""
    if environ.get(INTERPRETED_ENV) == "1":
        return frozenset(COMPILED)
    stale = sorted(name for name in COMPILED if _stale(name))
    if not stale:
        return frozenset()
    # The extensions call each other's functions directly, not through the import system:
    # one edited module takes effect only if all of them run from source.
    logging.getLogger("oncelog").warning(
        "compiled %s older than its source: importing every compiled module's source "
        "(make venv rebuilds)",
        ", ".join(stale),
    )
    return frozenset(COMPILED)


def install(environ: Mapping[str, str] = os.environ) -> frozenset[str]:
    """Route the modules that must run from source to it (:func:`routed`); return their names."""
    names = routed(environ)
    if names and not any(isinstance(f, _SourceFinder) for f in sys.meta_path):
        sys.meta_path.insert(0, _SourceFinder(names))
    return names
