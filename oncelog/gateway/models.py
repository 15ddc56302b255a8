"""What the HTTP write API takes and answers: its own models of the SDK's calls and results.

The answers are models of this API (:class:`ExecutionAnswer`, :class:`HeartbeatAnswer`,
:class:`ClaimAnswer`, :class:`CancelAnswer`), each made from the SDK's result by its
``of``: the HTTP contract is these models, not the SDK's classes. A claim's answer holds
the token only for its owner.

The bodies only carry the calls' arguments; every check of their values is the SDK's
own (:class:`~oncelog.producer.calls.RequestBuilder`), made once, when the request is
built (:mod:`oncelog.gateway.routes` maps each body to its call, field by field). Here
JSON types alone are checked, strictly (no "5" for 5) and with no unknown field, so
that a typo is a 400 rather than a silently ignored option; the ranges are the SDK's,
told to the schema's readers.
"""

from __future__ import annotations

import dataclasses
import typing
from typing import TYPE_CHECKING, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

from oncelog.identity import validation
from oncelog.producer.protocol import DEFAULT_RETENTION_S
from oncelog.producer.results import Claim, Execution, Heartbeat
from oncelog.schemas.models import PreviousAttempt

# --- bodies ------------------------------------------------------------------------------

# The limits the SDK checks, told to the schema's readers (its own checks still apply).
_MIN_LEASE_S: Final = validation.MIN_LEASE_MS / 1000
_MAX_LEASE_S: Final = validation.MAX_LEASE_MS / 1000
_MIN_RETENTION_S: Final = 1 / 1000
_MAX_RETENTION_S: Final = validation.MAX_RETENTION_MS / 1000


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class ApprovalBody(_Body):
    """A claim's approval policy: a person must approve these params before the effect
    (docs/guides/approvals.md). The first such claim records the intent and is answered
    ``awaiting_approval``; claim again (the same Idempotency-Key) to learn the decision."""

    timeout_seconds: float = Field(
        86_400, ge=_MIN_RETENTION_S, le=_MAX_RETENTION_S,
        description="The intent expires (approval_expired) this long after it is recorded.",
    )  # fmt: skip
    self_approval: bool = Field(False, description="May the claiming worker approve it?")


class ClaimBody(_Body):
    """``POST /v1/claims``: the arguments of ``claim_execution``, and who claims."""

    channel_id: str
    key_name: str | None = Field(None, description="Give this or step, not both.")
    step: int | None = Field(
        None, ge=0, le=validation.MAX_STEP, description="Stands for the key name step-<N>."
    )
    tool_name: str
    params: dict[str, Any]
    dedup_fields: list[str] | None = None
    lease_seconds: float = Field(60, ge=_MIN_LEASE_S, le=_MAX_LEASE_S)
    retention_seconds: float = Field(DEFAULT_RETENTION_S, ge=_MIN_RETENTION_S, le=_MAX_RETENTION_S)
    effect: Literal["pure", "external"] = "external"
    worker_id: str = Field(min_length=1, description="The claimer's name, kept in the audit.")
    approval: ApprovalBody | None = Field(
        None, description="Ask a person first (the gateway lists ONCELOG_APPROVERS on it)."
    )


class OperationBody(_Body):
    """Names the operation of the path, so that its request finds its partition."""

    channel_id: str
    key_name: str


class CancelBody(OperationBody):
    """``POST /v1/executions/{operation_id}/cancel``: anyone may ask the holder to stop."""

    reason: str | None = None


class HeldBody(OperationBody):
    """A call of the claim's holder: its token travels in the body, never in the URL."""

    claim_token: str


class HeartbeatBody(HeldBody):
    """``POST /v1/executions/{operation_id}/heartbeat``."""

    lease_seconds: float | None = Field(None, ge=_MIN_LEASE_S, le=_MAX_LEASE_S)


class CompleteBody(HeldBody):
    """``POST /v1/executions/{operation_id}/complete``: the result, any JSON value."""

    result: Any
    reconciled: Literal["found", "not_found"] | None = None


class FailBody(HeldBody):
    """``POST /v1/executions/{operation_id}/fail``."""

    error: str
    retryable: bool = False
    reconciled: Literal["found", "not_found"] | None = None


class ReleaseBody(HeldBody):
    """``POST /v1/executions/{operation_id}/release``."""


# --- answers -----------------------------------------------------------------------------


class _Mirror(BaseModel):
    """An answer whose fields are an SDK result's dataclass fields, made by :func:`_mirror`."""

    @classmethod
    def of(cls, result: Any) -> _Mirror:
        """The answer for an SDK result, field by field."""
        values = {f.name: getattr(result, f.name) for f in dataclasses.fields(result)}
        return cls.model_construct(**values)


def _mirror(result: type[Any], name: str, doc: str) -> type[_Mirror]:
    """A response model with the fields, types and defaults of the dataclass ``result``.

    The SDK's dataclass is the one place its fields are spelled; the model built from it
    is what the OpenAPI schema describes, under its own name.
    """
    hints = typing.get_type_hints(result)
    fields: dict[str, Any] = {
        f.name: (hints[f.name], ... if f.default is dataclasses.MISSING else f.default)
        for f in dataclasses.fields(result)
    }
    return create_model(name, __base__=_Mirror, __module__=__name__, __doc__=doc, **fields)


if TYPE_CHECKING:
    ExecutionAnswer = _Mirror
else:
    ExecutionAnswer = _mirror(
        Execution,
        "ExecutionAnswer",
        "One operation as the ledger decided it (the SDK's ``Execution``).",
    )


def _same_fields(answer: type[BaseModel], result: type[Any]) -> None:
    """Refuse, at import, an answer model that drifted from the SDK result it answers."""
    mine, theirs = list(answer.model_fields), [f.name for f in dataclasses.fields(result)]
    if mine != theirs:
        raise TypeError(f"{answer.__name__} has fields {mine}, {result.__name__} {theirs}")


class HeartbeatAnswer(BaseModel):
    """The new lease deadline, and whether a cancel is pending (and why)."""

    lease_deadline_ms: int
    cancel_requested: bool
    cancel_reason: str | None = None

    @classmethod
    def of(cls, heartbeat: Heartbeat) -> HeartbeatAnswer:
        """The answer for an SDK heartbeat."""
        return cls(
            lease_deadline_ms=heartbeat.lease_deadline_ms,
            cancel_requested=heartbeat.cancel_requested,
            cancel_reason=heartbeat.cancel_reason,
        )


_same_fields(HeartbeatAnswer, Heartbeat)


class PreviousAnswer(BaseModel):
    """The attempt a grant superseded: what to reconcile with."""

    epoch: int
    token_fp: str = Field(description="A fingerprint of its token, never the token.")
    worker_id: str
    claimed_at_ms: int
    last_heartbeat_ms: int | None
    status: Literal["claimed", "completed", "failed", "expired"]
    error: str | None

    @classmethod
    def of(cls, previous: PreviousAttempt | None) -> PreviousAnswer | None:
        """The answer for a superseded attempt, if any."""
        if previous is None:
            return None
        values = previous._asdict()
        return cls.model_validate({**values, "status": previous.status.value.lower()})


class ClaimAnswer(BaseModel):
    """The answer to a claim; ``claim_token`` only when this claim holds the lease."""

    status: Literal["claimed", "reclaimed", "in_progress", "replayed", "awaiting_approval"]
    execution: ExecutionAnswer
    claim_token: str | None = Field(
        None, description="Only on claimed/reclaimed, only to this caller; send it back in bodies."
    )
    result: Any = None
    holder: str | None = None
    lease_deadline_ms: int | None = None
    previous: PreviousAnswer | None = None

    @classmethod
    def of(cls, claim: Claim) -> ClaimAnswer:
        """The answer for an SDK claim."""
        return cls(
            status=claim.status.value,
            execution=ExecutionAnswer.of(claim.execution),
            claim_token=claim.claim_token if claim.owned else None,
            result=claim.result,
            holder=claim.holder,
            lease_deadline_ms=claim.lease_deadline_ms,
            previous=PreviousAnswer.of(claim.previous),
        )


class CancelAnswer(BaseModel):
    """``cancel_requested``, or an outcome naming the state (``state_completed``, ...)."""

    outcome: str
