"""The Rust extension ``oncelog._native``, or None where the package runs without it.

``setup.py`` builds the extension with cargo from ``native/`` wherever it builds the
compiled core (``oncelog._compiled``): ``make venv`` in place, ``pip install .`` and
``make wheel``. :data:`NATIVE` is the imported extension, or None

- with ``ONCELOG_INTERPRETED=1`` at run time (the same switch as the compiled core's), or
  ``ONCELOG_NATIVE=0`` (this extension alone off, the mypyc core still on: to rule it out,
  or to measure it against the generated Python codecs),
- where the install has none (an editable install before ``make venv``, a build with
  ``ONCELOG_INTERPRETED=1``),
- in a source checkout, where it is older than a file of the crate (edited since the
  last build): a warning says so, and an edit never runs as its old build.

Whatever uses it keeps a Python path for None.
"""

from __future__ import annotations

import importlib
import importlib.util
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from types import ModuleType
from typing import Final

from oncelog._compiled import INTERPRETED_ENV

MODULE: Final = "oncelog._native"
"""The extension's import name."""

NATIVE_ENV: Final = "ONCELOG_NATIVE"
"""``ONCELOG_NATIVE=0`` runs without the extension (and only without it)."""

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


def load(environ: Mapping[str, str] = os.environ) -> ModuleType | None:
    """The extension, or None: switched off, not built, or stale (then with a warning)."""
    if environ.get(INTERPRETED_ENV) == "1" or environ.get(NATIVE_ENV) == "0":
        return None
    spec = importlib.util.find_spec(MODULE)
    if spec is None or spec.origin is None:
        return None
    if is_stale(Path(spec.origin)):
        logging.getLogger("oncelog").warning(
            "%s is older than native/ (edited since the build): running without it "
            "(make venv rebuilds)",
            spec.origin,
        )
        return None
    return importlib.import_module(MODULE)


NATIVE: Final = load()
"""``oncelog._native`` as this process runs it, or None (see the module's docstring)."""
