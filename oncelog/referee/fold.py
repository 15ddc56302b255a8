"""The referee's fold: one request judged against the state of its operation.

``fold(state, request, log_time_ms, max_clock_step_ms=0, signed=False)`` is the table of
section 4 of the ledger spec, and its one implementation: Rust, in the package's extension
(``native/src/fold/``, :mod:`oncelog.native_core`), called by the projector, the rebuild,
:class:`oncelog.testing.InMemoryLedger` and the SDK alike. It is a pure function of its
arguments: no clock, no randomness, no I/O, no logging. Refolding the same requests from
the same state therefore yields the same states and decisions byte for byte, and a state
restored from the last snapshot plus the tail equals the live state.

It returns the state after (the same object when nothing changed; None while the
operation is absent) and exactly one decision, whose ``changed`` is True only when a new
state version was made. ``max_clock_step_ms`` is the ledger's bound on a step of the
leader's clock: a lapsed lease is reclaimed only once it lapsed by that much more, unless
it was released (docs/spec.md §4, "Clock steps"). ``signed``: for an approve or deny,
that an approver the intent lists signed it (the judge checks it; the fold does no
cryptography). Tokens are compared by fingerprint: the state never holds a token
(docs/spec.md §8).

What stays in Python is the log time's clamp per partition and the snapshot of a decision.
"""

from __future__ import annotations

from typing import Final, NamedTuple, Protocol

from oncelog.native_core import require
from oncelog.schemas.models import Decision, ExecutionSnapshot, ExecutionState, Request

__all__ = ["RETRY_MEMORY_MS", "PartitionClock", "Result", "fold", "snapshot_of"]

_NATIVE: Final = require()

Result = tuple[ExecutionState | None, Decision]
"""What :func:`fold` returns: the state after, and the decision."""


class Fold(Protocol):
    """The fold's signature (the extension's function has no annotations of its own)."""

    def __call__(
        self,
        state: ExecutionState | None,
        request: Request,
        log_time_ms: int,
        max_clock_step_ms: int = 0,
        signed: bool = False,
    ) -> Result:
        """Judge ``request`` against ``state`` at log time ``log_time_ms``."""


fold: Final[Fold] = _NATIVE.fold
"""The fold: ``oncelog._native.fold`` (the module's docstring says what it does)."""

RETRY_MEMORY_MS: Final[int] = _NATIVE.RETRY_MEMORY_MS
"""How long a state remembers a request id, so a re-sent copy is answered, not judged again
(docs/spec.md §4: the retry window)."""


class PartitionClock(NamedTuple):
    """The clamp that keeps log time non-decreasing on one partition.

    The caller owns it: persist it with the projector's position, pass it back.
    A NamedTuple like the models: a new clock per advancing record is cheap.
    """

    last_ms: int | None = None

    def advance(self, broker_ts_ms: int) -> tuple[PartitionClock, int]:
        """Clamp ``broker_ts_ms`` to at least the last log time; return the new clock."""
        last = self.last_ms
        clamped = broker_ts_ms if last is None or broker_ts_ms > last else last
        if clamped == last:
            return self, clamped
        # As ``_make`` makes it: the class's own ``__new__`` runs an interpreted frame.
        return tuple.__new__(PartitionClock, (clamped,)), clamped


def snapshot_of(decision: Decision, partition: int, offset: int) -> ExecutionSnapshot:
    """The executions-topic record for a decision that made a new state version."""
    if not decision.changed or decision.state is None:
        raise ValueError("only a decision that changed the state has a snapshot")
    return ExecutionSnapshot(
        state=decision.state,
        source_partition=partition,
        source_offset=offset,
        source_request_id=decision.request_id,
        outcome=decision.outcome,
        log_time_ms=decision.log_time_ms,
    )
