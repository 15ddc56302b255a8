"""Expected retries of a leaderless partition stay quiet unless the application logs."""

from __future__ import annotations

import subprocess
import sys

_RETRY = "import logging, oncelog.kafka.reader; logging.getLogger('stamina').warning('retry')"


def _stderr(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    return done.stderr


def test_a_retry_prints_nothing_without_logging_configured() -> None:
    assert _stderr(_RETRY) == ""


def test_a_retry_reaches_the_handlers_an_application_configured() -> None:
    assert "retry" in _stderr("import logging; logging.basicConfig(); " + _RETRY)
