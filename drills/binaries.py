"""Where the drills find the programs ``make`` builds into the venv (Toxiproxy, the checker)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path


def beside_python(name: str) -> Path | None:
    """``name`` beside this Python (``make`` installs there), else on PATH; None if neither."""
    beside = Path(sys.executable).parent / name
    if beside.exists():
        return beside
    found = shutil.which(name)
    return None if found is None else Path(found)


def required(name: str, make_target: str, error: type[Exception], how: str) -> Path:
    """:func:`beside_python`, else ``error`` naming where it looked and ``make make_target``
    (``how``: what that target does)."""
    found = beside_python(name)
    if found is None:
        raise error(
            f"{name} not found beside {sys.executable} nor on PATH: run `make {make_target}` "
            f"({how})"
        )
    return found
