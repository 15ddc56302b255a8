"""Run ``oncelog serve`` as a real subprocess, for crash tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from oncelog.projector import process
from oncelog.settings import Settings


def start_serve(settings: Settings, db: Path, *extra: str, log: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m oncelog serve --db db EXTRA``; its output goes to ``log``."""
    return process.start_serve(settings, log, "--db", str(db), *extra)


stop_serve = process.stop
