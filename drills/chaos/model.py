"""The chaos vocabulary: workflow steps, crash points, strategies and one run's spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from drills.sample.workflow import STEPS

EXTERNAL_STEPS: Final = tuple(n for n, (_, kind) in enumerate(STEPS, start=1) if kind == "external")

BEFORE_CLAIM: Final = "before-claim"
AFTER_CLAIM: Final = "after-claim"
AFTER_EFFECT: Final = "after-effect-before-complete"
AFTER_COMPLETE: Final = "after-complete-before-response"
DURING_HEARTBEAT: Final = "during-heartbeat"
CRASH_POINTS: Final = (BEFORE_CLAIM, AFTER_CLAIM, AFTER_EFFECT, AFTER_COMPLETE, DURING_HEARTBEAT)

NAIVE: Final = "naive"  # no ledger: the retry starts the workflow from scratch
LEASE: Final = "lease-and-retry"  # claim/complete; no reconcile, no key downstream
RECONCILE: Final = "reconcile-on-reclaim"  # on reclaimed, ask the downstream first
PASSTHROUGH: Final = "key-passthrough"  # the ledger's idempotency key goes downstream

HONOUR: Final = "honour"
NOT_IDEMPOTENT: Final = "naive"  # the downstream's own name for "applies every call"

# (strategy, downstream mode) cells of the matrix, in report order: from no ledger at all
# to the ledger's key passed downstream.
CELLS: Final = (
    (NAIVE, HONOUR),
    (NAIVE, NOT_IDEMPOTENT),
    (LEASE, HONOUR),
    (LEASE, NOT_IDEMPOTENT),
    (RECONCILE, NOT_IDEMPOTENT),
    (PASSTHROUGH, HONOUR),
)
STRATEGIES: Final = (NAIVE, LEASE, RECONCILE, PASSTHROUGH)
LEASE_SECONDS: Final = 1.0  # short, so that a retry reclaims a dead worker's step quickly


def cell_name(strategy: str, mode: str) -> str:
    """The matrix key of one (strategy, downstream mode) cell."""
    return f"{strategy}/{mode}"


@dataclass(frozen=True, slots=True)
class RunSpec:
    """One workflow run: which cell, where it crashes, and where everything lives.

    ``crash_point`` is None for the retry, which runs the workflow to completion.
    """

    strategy: str
    mode: str
    point: str
    index: int
    channel_id: str
    crash_step: int
    downstream_url: str
    bootstrap: str
    topic_prefix: str
    partitions: int
    result_path: str
    crash_point: str | None = None

    @property
    def ledger(self) -> bool:
        """True when the strategy goes through the ledger."""
        return self.strategy != NAIVE

    @property
    def history_path(self) -> str:
        """Where this attempt records its ledger calls (drills/history): one file per attempt."""
        return f"{self.result_path}.{'crash' if self.crash_point else 'retry'}.history.jsonl"

    def op(self, step: int) -> str:
        """The downstream's operation name of one step (the same for every strategy)."""
        return f"{self.channel_id}/step-{step}"
