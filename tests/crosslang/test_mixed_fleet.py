"""A mixed fleet shares one ledger: Python dies after the effect, TypeScript finishes the step.

A Python worker (the SDK, over Kafka) claims an external step, charges the downstream and
is SIGKILLed before it completes. A TypeScript worker (over the HTTP write API) waits for
the lease to lapse, reclaims, finds the charge downstream by its idempotency key and
completes with it (``reconciled: "found"``). The audit in DuckDB shows both attempts,
with their workers and epochs; the downstream saw one charge.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from oncelog.identity.ids import operation_id
from oncelog.projector import process
from tests.served import ROOT, SDK, build, require_node, run, serving

pytestmark = pytest.mark.kafka

HERE = Path(__file__).parent
CHANNEL = "run-mixed"
KEY_NAME = "charge:order-1"


def test_python_dies_after_the_effect_and_typescript_reconciles(
    bootstrap: str, tmp_path: Path
) -> None:
    node, _ = require_node()
    build(SDK)
    downstream = tmp_path / "downstream.jsonl"
    downstream.touch()
    with serving(bootstrap, tmp_path) as served:
        env = process.serve_env(served.settings)
        python = subprocess.run(
            [sys.executable, str(HERE / "python_worker.py"), str(downstream), CHANNEL],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert python.returncode == -signal.SIGKILL, python.stdout + python.stderr
        worker = [node, str(HERE / "ts_worker.mjs"), str(downstream), CHANNEL]
        out = run(worker, ROOT, served.node_env())
    tool_run = json.loads(out.strip().splitlines()[-1])
    assert (tool_run["status"], tool_run["reconciled"]) == ("reclaimed", "found")
    assert tool_run["result"] == {"charged_by": "py-worker"}
    assert tool_run["execution"]["epoch"] == 2
    assert tool_run["previous"]["workerId"] == "py-worker"

    effects = [json.loads(line) for line in downstream.read_text().splitlines()]
    assert [e["by"] for e in effects] == ["py-worker"]  # one charge, by the worker that died

    with duckdb.connect(str(served.settings.db_path), read_only=True) as con:
        rows = con.execute(
            "SELECT kind, outcome, epoch, worker_id, reconciled FROM requests "
            "WHERE operation_id = ? AND kind IN ('claim', 'complete') ORDER BY log_time_ms",
            [operation_id(CHANNEL, KEY_NAME)],
        ).fetchall()
    claims = [r for r in rows if r[0] == "claim" and r[1] in ("claimed", "reclaimed")]
    assert [(r[1], r[2], r[3]) for r in claims] == [
        ("claimed", 1, "py-worker"),
        ("reclaimed", 2, "ts-worker"),
    ]
    assert ("complete", "completed", 2, "ts-worker", "found") in rows
