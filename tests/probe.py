"""What a fresh interpreter prints: the probes of the compiled core and the Rust extension."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from oncelog import _compiled

ROOT = Path(__file__).resolve().parents[1]


def probe(script: str, **env: str) -> list[str]:
    """The words ``python -c script`` prints in a fresh interpreter under this one's
    environment, without ``ONCELOG_INTERPRETED`` unless ``env`` sets it, plus ``env``.

    Run from ``tests/``, outside the clone's root: the extensions (mypyc's and the Rust one)
    must be found through the installed package, not the working directory.
    """
    environ = {k: v for k, v in os.environ.items() if k != _compiled.INTERPRETED_ENV}
    return subprocess.run(
        [sys.executable, "-c", script],
        env=environ | env,
        cwd=ROOT / "tests",
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
