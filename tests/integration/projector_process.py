"""Run ``oncelog serve`` as a real subprocess, for crash tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from oncelog.settings import Settings


def serve_env(settings: Settings) -> dict[str, str]:
    """The environment that points a subprocess at the test's broker and topics."""
    assert settings.bootstrap_servers is not None
    return {
        **os.environ,
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_PARTITIONS": str(settings.partitions),
    }


def start_serve(settings: Settings, db: Path, *extra: str, log: Path) -> subprocess.Popen[bytes]:
    """Start ``python -m oncelog serve --db db``; its output goes to ``log``."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "oncelog", "serve", "--db", str(db), *extra],
            env=serve_env(settings),
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def stop_serve(proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> int:
    """SIGTERM, then wait (bounded); SIGKILL if it does not stop."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
    return proc.wait(timeout=timeout_s)
