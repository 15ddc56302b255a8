"""What the SDK hands back: executions, claims and their statuses."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from enum import StrEnum
from typing import Any, Final, TypeVar

from oncelog.identity import ids
from oncelog.schemas.models import Decision, ExecutionState, Inheritance, PreviousAttempt


class ClaimStatus(StrEnum):
    """How a claim was answered; compares equal to the plain strings."""

    CLAIMED = "claimed"
    RECLAIMED = "reclaimed"
    IN_PROGRESS = "in_progress"
    REPLAYED = "replayed"
    #: The tool's policy requires approval: the intent is recorded, nothing runs yet.
    AWAITING_APPROVAL = "awaiting_approval"


T = TypeVar("T")
_JSON: Final = json.JSONDecoder()


def json_value(data: bytes) -> Any:
    """``json.loads(data)`` for canonical JSON bytes, without its encoding detection.

    ``json.loads`` of bytes detects UTF-8/16/32 and a BOM from the first bytes
    (``json.detect_encoding``, a third of its cost on a small value). A first
    byte that is ASCII and not NUL, and a second byte that is not NUL, is what
    the detection calls UTF-8 (as every canonical JSON is); anything else goes
    to ``json.loads`` itself. Same value, same errors.
    """
    if b"\x00" < data[:1] < b"\x80" and data[1:2] != b"\x00":
        return _JSON.decode(data.decode("utf-8", "surrogatepass"))
    return json.loads(data)


@dataclass(frozen=True, slots=True)
class Execution:
    """One operation as the ledger decided it.

    ``inherited`` says where a result taken from another channel came from: a fork
    (``adopted`` False) or a branch that adopted another branch's effect (True).
    """

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
    inherited: Inheritance | None = None

    @classmethod
    def of(cls, state: ExecutionState, decision: Decision | None = None) -> Execution:
        """Build from the decided state (params and result decoded from canonical JSON).

        ``position`` is the (partition, offset) of the request that was decided:
        the projection has caught up with this call once its position passes it.
        """
        where = None if decision is None else (decision.source_partition, decision.source_offset)
        values = (
            state.operation_id,
            state.channel_id,
            state.key_name,
            state.tool_name,
            json_value(state.params),
            state.request_hash,
            ids.idempotency_key(state.operation_id, state.request_hash),
            state.epoch,
            state.status.lower(),  # str.lower of the StrEnum member, not its interpreted .value
            state.worker_id,
            state.lease_deadline_ms,
            state.cancel_requested,
            None if state.result is None else json_value(state.result),
            state.result_hash,
            state.completed_at_ms,
            state.expires_at_ms,
            state.error,
            where,
            state.inherited,
        )
        if cls is not Execution:  # a subclass may have an __init__ of its own
            return cls(*values)
        return built(Execution, values)


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


# The slot setters of each frozen result class, in field order: :func:`built` fills a
# new instance through them. The dataclass __init__ of a frozen class makes one
# ``object.__setattr__`` call per field (18 for an Execution), about twice the cost.
_SETTERS: Final[dict[type, tuple[Any, ...]]] = {
    cls: tuple(getattr(cls, f.name).__set__ for f in fields(cls)) for cls in (Execution, Claim)
}


def built(cls: type[T], values: tuple[Any, ...]) -> T:
    """``cls(*values)`` for :class:`Execution` or :class:`Claim`, every field given."""
    obj = object.__new__(cls)
    for setter, value in zip(_SETTERS[cls], values, strict=True):
        setter(obj, value)
    return obj
