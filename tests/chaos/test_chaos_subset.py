"""A fast subset of ``make chaos``: real worker processes, SIGKILL, retries, the cross-check."""

from __future__ import annotations

from pathlib import Path

from drills.chaos.harness import failed_expectations, run_chaos
from drills.chaos.model import (
    AFTER_CLAIM,
    AFTER_EFFECT,
    HONOUR,
    LEASE,
    NOT_IDEMPOTENT,
    PASSTHROUGH,
    RECONCILE,
    cell_name,
)
from drills.chaos.runner import ChaosConfig
from oncelog.settings import Settings

RUNS = 3


def test_chaos_subset(bootstrap: str, tmp_path: Path) -> None:
    config = ChaosConfig(
        runs=RUNS,
        points=(AFTER_EFFECT, AFTER_CLAIM),
        cells=((LEASE, NOT_IDEMPOTENT), (PASSTHROUGH, HONOUR), (RECONCILE, NOT_IDEMPOTENT)),
        concurrency=6,
    )
    report = run_chaos(Settings(bootstrap_servers=bootstrap), config, workdir=tmp_path)

    assert report.anomalies == []  # every first attempt died at its point; every retry finished
    lease, passthrough = cell_name(LEASE, NOT_IDEMPOTENT), cell_name(PASSTHROUGH, HONOUR)
    m = report.matrix
    for cell in (lease, passthrough):
        for point in (AFTER_EFFECT, AFTER_CLAIM):
            assert m[cell][point]["runs"] == RUNS
            assert m[cell][point]["lost"] == 0, (cell, point)
    assert m[passthrough][AFTER_EFFECT]["duplicates"] == 0
    assert m[passthrough][AFTER_CLAIM]["duplicates"] == 0
    # Without a key downstream, a worker that dies after its effect is a duplicate
    # every time; a worker that dies right after claiming never is.
    assert m[lease][AFTER_EFFECT]["duplicates"] == RUNS
    assert m[lease][AFTER_CLAIM]["duplicates"] == 0
    check = report.cross_check[lease][AFTER_EFFECT]
    assert check["in_ledger"] == check["duplicated_steps"] == RUNS
    # The audit flags each of them (verdict possible): the crashed attempt's outcome is
    # unknown, and the retry completed without reconciling (no late completion ever comes
    # from a SIGKILL). A double the audit did not flag would count as unlisted.
    after_effect = m[lease][AFTER_EFFECT]
    assert after_effect["unknown_outcome_unreconciled"] == RUNS
    assert (after_effect["stale_completion"], after_effect["unlisted"]) == (0, 0)
    assert after_effect["unresolved_unknown"] == RUNS
    reconcile = cell_name(RECONCILE, NOT_IDEMPOTENT)
    for point in (AFTER_EFFECT, AFTER_CLAIM):  # found after the effect, not_found before it
        assert m[reconcile][point]["duplicates"] == 0
        assert m[reconcile][point]["unresolved_unknown"] == 0
    assert set(report.audit["unlisted_duplicates"].values()) == {0}
    assert failed_expectations(report) == []
    # Every ledger call of every attempt was recorded and the history checked: at least a
    # claim and a completion per step of each retry, and linearizable per operation.
    lin = report.linearizability
    assert lin["operations_checked"] >= 2 * 6 * RUNS * 2 * 3, lin
    assert lin["linearizable"] is True, lin
