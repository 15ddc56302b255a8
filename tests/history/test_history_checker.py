"""The history checker (drills/linearizability, Porcupine) against the model of
docs/spec.md §4: correct histories pass, and each injected bug fails with its visualization
written.

Without the checker binary (``make linearizability``, needs Go) the tests skip, unless
``ONCELOG_REQUIRE_GO`` is set (CI): then they fail.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from drills.history.check import Verdict, check
from tests.history_checker import require_checker


@pytest.fixture(scope="module", autouse=True)
def _checker() -> None:
    require_checker()


class History:
    """Builds a history of one operation; each call takes the next two clock ticks unless
    given its interval."""

    def __init__(self) -> None:
        self.ops: list[dict[str, Any]] = []
        self.clock = 0

    def add(self, kind: str, token: str, answer: tuple[str, int, str] | None,
            at: tuple[int, int] | None = None, op: str = "c/step-1",
            **payload: Any) -> None:  # fmt: skip
        if at is None:
            at = (self.clock + 1, self.clock + 2)
        self.clock = max(self.clock, at[1])
        inputs = {"kind": kind, "token": token, "hash": "h", **payload}
        output = None
        if answer is not None:
            output = dict(zip(("status", "epoch", "result"), answer, strict=True))
        ret = None if answer is None else at[1]
        self.ops.append({"client": len(self.ops), "op": op, "input": inputs, "call": at[0],
                         "output": output, "return": ret})  # fmt: skip

    def check(self, tmp_path: Path) -> Verdict:
        return check(self.ops, tmp_path / "history.json")


def _run_to_completion(h: History) -> None:
    """A claims, B meets its live lease, A heartbeats and completes, C gets the replay."""
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("claim", "B", ("in_progress", 1, ""))
    h.add("heartbeat", "A", ("ok", 0, ""))
    h.add("complete", "A", ("completed", 1, "r1"), result="r1")
    h.add("claim", "C", ("replayed", 1, "r1"))


def test_a_correct_history_passes(tmp_path: Path) -> None:
    h = History()
    _run_to_completion(h)
    verdict = h.check(tmp_path)
    assert verdict == Verdict(operations=5, unknown=0, linearizable=True)
    assert not (tmp_path / "history.html").exists()


def test_a_reclaim_after_a_crash_with_unknown_calls_passes(tmp_path: Path) -> None:
    # A dies after sending its completion: the completion is unknown and did not take
    # effect (B reclaims on the lapsed lease, A's token is fenced afterwards).
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("complete", "A", None, result="r1")
    h.add("claim", "B", ("reclaimed", 2, ""))
    h.add("complete", "A", ("stale", 0, ""), result="r1")
    h.add("complete", "B", ("completed", 2, "r2"), result="r2")
    h.add("claim", "C", ("replayed", 2, "r2"))
    verdict = h.check(tmp_path)
    assert verdict == Verdict(operations=6, unknown=1, linearizable=True)


def test_an_unknown_completion_that_took_effect_passes(tmp_path: Path) -> None:
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("complete", "A", None, result="r1")
    h.add("claim", "B", ("replayed", 1, "r1"))
    assert h.check(tmp_path).linearizable


def test_operations_are_checked_apart(tmp_path: Path) -> None:
    # Epoch 1 granted on two operations is no double grant.
    h = History()
    h.add("claim", "A", ("claimed", 1, ""), op="c/step-1")
    h.add("claim", "B", ("claimed", 1, ""), op="c/step-2")
    verdict = h.check(tmp_path)
    assert verdict == Verdict(operations=2, unknown=0, linearizable=True)


def test_a_double_grant_fails(tmp_path: Path) -> None:
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("claim", "B", ("claimed", 1, ""))  # a second grant of epoch 1
    verdict = h.check(tmp_path)
    assert not verdict.linearizable
    assert verdict.visualization == str(tmp_path / "history.html")
    assert "claim" in (tmp_path / "history.html").read_text()


def test_two_holders_completing_fails(tmp_path: Path) -> None:
    # B reclaimed epoch 2, yet A's completion by epoch 1 was accepted after it.
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("claim", "B", ("reclaimed", 2, ""))
    h.add("complete", "A", ("completed", 1, "r1"), result="r1")
    assert not h.check(tmp_path).linearizable


def test_a_replay_of_another_result_fails(tmp_path: Path) -> None:
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("complete", "A", ("completed", 1, "r1"), result="r1")
    h.add("claim", "B", ("replayed", 1, "r2"))
    assert not h.check(tmp_path).linearizable


@pytest.mark.parametrize("heartbeat_between", [False, True])
def test_a_lost_release_fails(tmp_path: Path, heartbeat_between: bool) -> None:
    # After A released, the operation is reclaimable at once: B cannot meet a live lease,
    # unless A heartbeat in between (a heartbeat takes the release back).
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("release", "A", ("released", 0, ""))
    if heartbeat_between:
        h.add("heartbeat", "A", ("ok", 0, ""))
    h.add("claim", "B", ("in_progress", 1, ""))
    assert h.check(tmp_path).linearizable is heartbeat_between


def _phantom(fixed: bool) -> History:
    """The phantom grant of issue 42: B's claim, concurrent with A's release, answered
    in_progress; afterwards the ledger names B (epoch 2) the holder."""
    h = History()
    h.add("claim", "A", ("claimed", 1, ""), at=(1, 2))
    h.add("claim", "B", ("in_progress", 1, ""), at=(3, 10))
    h.add("release", "A", ("released", 0, ""), at=(4, 5))
    answer = ("reclaimed", 2, "") if fixed else ("in_progress", 2, "")
    h.add("claim", "C", answer, at=(11, 12))
    return h


def test_the_phantom_grant_fails(tmp_path: Path) -> None:
    assert not _phantom(fixed=False).check(tmp_path).linearizable


def test_the_phantom_grant_fixed_passes(tmp_path: Path) -> None:
    assert _phantom(fixed=True).check(tmp_path).linearizable


def test_an_unknown_claim_may_have_granted(tmp_path: Path) -> None:
    # X's claim never answered; B's reclaim of epoch 3 is right only if X's took effect.
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("release", "A", ("released", 0, ""))
    h.add("claim", "X", None)
    h.add("claim", "B", ("reclaimed", 3, ""))
    assert h.check(tmp_path).linearizable


def test_a_retryable_failure_is_reclaimed_and_a_final_one_is_not(tmp_path: Path) -> None:
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("fail", "A", ("failed", 1, ""), retryable=True)
    h.add("claim", "B", ("reclaimed", 2, ""))
    h.add("fail", "B", ("failed", 2, ""), retryable=False)
    h.add("claim", "C", ("failed", 0, ""))
    h.add("heartbeat", "B", ("state", 0, ""))
    assert h.check(tmp_path).linearizable
    h.add("claim", "D", ("reclaimed", 3, ""))  # a reclaim of a failure for good
    assert not h.check(tmp_path).linearizable


def test_a_claim_with_another_payload_conflicts(tmp_path: Path) -> None:
    h = History()
    h.add("claim", "A", ("claimed", 1, ""))
    h.add("claim", "B", ("conflict", 0, ""), hash="other")
    h.add("claim", "C", ("in_progress", 1, ""), hash="other")  # must have conflicted
    assert not h.check(tmp_path).linearizable
