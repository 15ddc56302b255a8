"""The history checker for tests: skip without it, unless ``ONCELOG_REQUIRE_GO`` is set (CI)."""

from __future__ import annotations

import os

import pytest

from drills.history.check import HistoryCheckError, find_checker


def require_checker() -> None:
    """Skip the calling test when ``make linearizability`` has not built the checker (it
    needs Go); fail instead when ``ONCELOG_REQUIRE_GO`` is set."""
    try:
        find_checker()
    except HistoryCheckError as exc:
        if os.environ.get("ONCELOG_REQUIRE_GO"):
            pytest.fail(f"ONCELOG_REQUIRE_GO is set: {exc}")
        pytest.skip(str(exc))
