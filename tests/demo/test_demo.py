"""`make demo` end to end, on the session's broker, so CI keeps it working."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.kafka


def test_demo_runs_the_fleet_and_ends_with_verify_ok(bootstrap: str, tmp_path: Path) -> None:
    env = {**os.environ, "ONCELOG_BOOTSTRAP_SERVERS": bootstrap, "ONCELOG_DATA_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-m", "drills.demo"],
        env=env, capture_output=True, text=True, timeout=180, check=False,
    )  # fmt: skip
    out = done.stdout
    assert done.returncode == 0, out[-3000:] + done.stderr[-3000:]
    assert "reconciled ['run-" in out  # the crash after an effect was reconciled
    fleet = next(line for line in out.splitlines() if line.startswith("fleet:"))
    assert "'run-03/4'" in fleet.split("replayed")[1]  # the lost completion response replayed
    assert "suspected duplicate effects (1)" in out  # the zombie's late completion
    assert "by count per idempotency key: {1: 60}" in out  # every effect applied once
    assert out.splitlines()[-2] == "verify OK"
