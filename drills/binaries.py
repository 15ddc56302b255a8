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
