"""What a fresh interpreter prints: the probes of the compiled core and the Rust extension."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from oncelog import _compiled, native_core

ROOT = Path(__file__).resolve().parents[1]

# The switches a probe leaves unset unless its test sets them: the suite may run under one.
_SWITCHES = frozenset({_compiled.INTERPRETED_ENV, native_core.NATIVE_ENV})


def probe(script: str, **env: str) -> list[str]:
    """The words ``python -c script`` prints in a fresh interpreter under this one's
    environment, without ``ONCELOG_INTERPRETED`` or ``ONCELOG_NATIVE`` unless ``env`` sets
    them, plus ``env``.

    Run from ``tests/``, outside the clone's root: the extensions (mypyc's and the Rust one)
    must be found through the installed package, not the working directory.
    """
    environ = {k: v for k, v in os.environ.items() if k not in _SWITCHES}
    return subprocess.run(
        [sys.executable, "-c", script],
        env=environ | env,
        cwd=ROOT / "tests",
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split()
