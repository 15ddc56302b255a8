"""What the SDK hands back: executions, claims and their statuses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from oncelog.identity import ids
from oncelog.schemas.models import Decision, ExecutionState, PreviousAttempt


class ClaimStatus(StrEnum):
    """How a claim was answered; compares equal to the plain strings."""

    CLAIMED = "claimed"
    RECLAIMED = "reclaimed"
    IN_PROGRESS = "in_progress"
    REPLAYED = "replayed"


@dataclass(frozen=True, slots=True)
class Execution:
    """One operation as the ledger decided it."""

    id: str
    channel_id: str
    key_name: str
    tool_name: str
    params: dict[str, Any]
    request_hash: str
    idempotency_key: str
    epoch: int
    status: str
    worker_id: str
    lease_deadline_ms: int
    cancel_requested: bool
    result: Any = None
    result_hash: str | None = None
    completed_at_ms: int | None = None
    expires_at_ms: int | None = None
    error: str | None = None
    position: tuple[int, int] | None = None

    @classmethod
    def of(cls, state: ExecutionState, decision: Decision | None = None) -> Execution:
        """Build from the decided state (params and result decoded from canonical JSON).

        ``position`` is the (partition, offset) of the request that was decided:
        the projection has caught up with this call once its position passes it.
        """
        where = None if decision is None else (decision.source_partition, decision.source_offset)
        return cls(
            id=state.operation_id,
            channel_id=state.channel_id,
            key_name=state.key_name,
            tool_name=state.tool_name,
            params=json.loads(state.params),
            request_hash=state.request_hash,
            idempotency_key=ids.idempotency_key(state.operation_id, state.request_hash),
            epoch=state.epoch,
            status=state.status.value.lower(),
            worker_id=state.worker_id,
            lease_deadline_ms=state.lease_deadline_ms,
            cancel_requested=state.cancel_requested,
            result=None if state.result is None else json.loads(state.result),
            result_hash=state.result_hash,
            completed_at_ms=state.completed_at_ms,
            expires_at_ms=state.expires_at_ms,
            error=state.error,
            position=where,
        )


@dataclass(frozen=True, slots=True)
class Claim:
    """The answer to ``claim_execution``.

    ``claimed``/``reclaimed``: you hold the lease with ``claim_token`` and must
    complete, fail or release. ``replayed``: ``result`` is the recorded result.
    ``in_progress``: ``holder`` has a live lease until ``lease_deadline_ms``.
    On ``reclaimed``, ``previous`` is the superseded attempt to reconcile with.
    """

    status: ClaimStatus
    execution: Execution
    claim_token: str = field(repr=False)  # a capability: kept out of logs and reprs
    result: Any = None
    holder: str | None = None
    lease_deadline_ms: int | None = None
    previous: PreviousAttempt | None = None
    decision: Decision | None = None

    @property
    def owned(self) -> bool:
        """True when this claim holds the lease."""
        return self.status in (ClaimStatus.CLAIMED, ClaimStatus.RECLAIMED)


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The answer to a heartbeat: the new deadline, and whether a cancel is pending."""

    lease_deadline_ms: int
    cancel_requested: bool
    cancel_reason: str | None = None
