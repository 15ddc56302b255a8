"""The Rust extension ``oncelog._native``: the fold, and the codecs' native path.

``setup.py`` builds the extension with cargo in every build of the package: ``make venv``
in place, ``pip install .`` and ``make wheel`` (with or without the mypyc core). It holds
the referee's fold, the one judge (:mod:`oncelog.referee.fold`), so the package does not
run without it: :func:`require` returns it, or raises
:class:`~oncelog.errors.NativeCoreError` where it is not built or, in a source checkout,
older than a file of its crate (edited since the last build: an edit never runs as its old
build).

:data:`NATIVE` is what the codecs read and write records with: the extension, or None with
``ONCELOG_INTERPRETED=1`` (the same switch as the compiled core's) or ``ONCELOG_NATIVE=0``
(the Rust codecs alone off: to rule them out, or to measure them against the generated
Python codecs). Neither switch changes the fold.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Final

from oncelog._compiled import INTERPRETED_ENV
from oncelog.errors import NativeCoreError

MODULE: Final = "oncelog._native"
"""The extension's import name."""

NATIVE_ENV: Final = "ONCELOG_NATIVE"
"""``ONCELOG_NATIVE=0`` reads and writes records without the extension (the fold keeps it)."""

_CHECKOUT: Final = Path(__file__).resolve().parent.parent


def crate_sources(root: Path) -> list[Path]:
    """The files under ``root/native`` that a build of the extension reads."""
    crate = root / "native"
    return [crate / "Cargo.toml", crate / "Cargo.lock", *sorted((crate / "src").rglob("*.rs"))]


def is_stale(built: Path) -> bool:
    """In a source checkout: ``built`` is older than one of the crate's files."""
    if not (_CHECKOUT / ".git").exists():
        return False
    built_at = built.stat().st_mtime
    return any(p.stat().st_mtime > built_at for p in crate_sources(_CHECKOUT) if p.exists())


def require() -> ModuleType:
    """The extension; :class:`~oncelog.errors.NativeCoreError` if not built, or stale."""
    spec = importlib.util.find_spec(MODULE)
    if spec is None or spec.origin is None:
        raise NativeCoreError(
            f"{MODULE} is not built: oncelog's fold is Rust. In a clone run make venv; "
            "pip install . and make wheel build it too (they need cargo, https://rustup.rs)"
        )
    if is_stale(Path(spec.origin)):
        raise NativeCoreError(
            f"{spec.origin} is older than native/ (edited since the build), so it is not "
            "what the source says: make venv rebuilds it"
        )
    return importlib.import_module(MODULE)


def load(environ: Mapping[str, str] = os.environ) -> ModuleType | None:
    """The extension for the codecs, or None where a switch turns them off (:data:`NATIVE`)."""
    if environ.get(INTERPRETED_ENV) == "1" or environ.get(NATIVE_ENV) == "0":
        return None
    return require()


NATIVE: Final = load()
"""``oncelog._native`` as the codecs use it, or None (see the module's docstring)."""
