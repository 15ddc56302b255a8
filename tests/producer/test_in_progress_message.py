"""An ``in_progress`` answer says who holds the operation, when the lease lapses, how to wait."""

from __future__ import annotations

from oncelog.producer.results import Claim, ClaimStatus, Execution
from oncelog.producer.tool_plan import in_progress_error

T0 = 1_764_755_000_000  # 2025-12-03T09:43:20Z


def held_until(deadline_ms: int | None) -> Claim:
    execution = Execution(
        "op-1", "run-42", "charge#1", "charge", {}, "h" * 64, "ik", 1, "claimed",
        "worker-dead", T0, False,
    )  # fmt: skip
    return Claim(
        ClaimStatus.IN_PROGRESS, execution, "t" * 32, holder="worker-dead",
        lease_deadline_ms=deadline_ms,
    )  # fmt: skip


def test_it_names_the_holder_the_lapse_and_the_wait_option() -> None:
    error = in_progress_error(held_until(T0 + 37_500), now_ms=T0)
    text = str(error)
    assert text.startswith("[in_progress] execution op-1 (call 'charge#1' of 'run-42')")
    assert "held by worker worker-dead" in text
    assert "lease lapses at 2025-12-03T09:43:57.500+00:00 (in 37.5s)" in text
    assert 'on_in_progress="wait"' in text
    assert (error.holder, error.lease_deadline_ms, error.execution_id) == (
        "worker-dead", T0 + 37_500, "op-1",
    )  # fmt: skip


def test_a_lapsed_or_unknown_deadline_still_reads() -> None:
    assert "(in 0.0s)" in str(in_progress_error(held_until(T0 - 10), now_ms=T0))
    assert "until its lease lapses." in str(in_progress_error(held_until(None), now_ms=T0))
