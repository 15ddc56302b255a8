"""Run the projector as a real subprocess, for crash tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from drills.faults.projector_entry import MODULE as KILLING_SERVE
from oncelog.projector import process
from oncelog.settings import Settings


def start_serve(settings: Settings, db: Path, *extra: str, log: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m oncelog serve --db db EXTRA``; its output goes to ``log``."""
    return process.start_serve(settings, log, "--db", str(db), *extra)


def start_serve_killed_before_commit(
    settings: Settings, db: Path, batches: int, *, log: Path
) -> subprocess.Popen[bytes]:
    """The same service (no HTTP) that SIGKILLs itself after publishing batch ``batches``."""
    args = ["-m", KILLING_SERVE, "--kill-before-commit", str(batches), "--db", str(db), "--no-http"]
    return process.spawn(args, log, process.serve_env(settings))


stop_serve = process.stop
