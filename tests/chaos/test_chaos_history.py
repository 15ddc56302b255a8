"""The chaos drill checks its recorded history: a non-linearizable one fails the drill."""

from __future__ import annotations

from pathlib import Path

import pytest

from drills.chaos.harness import ChaosReport, check_history, failed_expectations
from drills.chaos.runner import ChaosConfig
from drills.history.record import Recorder
from tests.history_checker import require_checker


def _attempt(path: Path, token: str, epoch: int) -> None:
    rec = Recorder(path)
    call = rec.call("run/step-1", "claim", token, hash="h")
    rec.answer(call, "claimed" if epoch == 1 else "reclaimed", epoch)
    rec.close()


@pytest.mark.parametrize(("second_epoch", "linearizable"), [(2, True), (1, False)])
def test_the_drill_fails_on_a_history_that_is_not_linearizable(
    tmp_path: Path, second_epoch: int, linearizable: bool
) -> None:
    require_checker()
    _attempt(tmp_path / "run.json.crash.history.jsonl", "first", 1)
    _attempt(tmp_path / "run.json.retry.history.jsonl", "second", second_epoch)
    verdict = check_history(tmp_path)
    assert verdict is not None
    assert (verdict.operations, verdict.unknown, verdict.linearizable) == (2, 0, linearizable)
    report = ChaosReport({}, 0.0, ChaosConfig(), verdict)
    failed = failed_expectations(report)
    assert report.linearizability["linearizable"] is linearizable
    assert any("not linearizable" in line for line in failed) is not linearizable
    assert (tmp_path / "history.html").exists() is not linearizable


def test_no_ledger_calls_is_nothing_to_check(tmp_path: Path) -> None:
    assert check_history(tmp_path) is None
    assert ChaosReport({}, 0.0, ChaosConfig()).linearizability["operations_checked"] == 0
