"""Typed, immutable models of the wire records.

The records the fold makes per request (``ExecutionState``, ``Decision`` and
their parts) and ``Request`` are ``typing.NamedTuple`` classes: a new state
version of a 28-field tuple is one C-level copy, where a frozen dataclass pays
an ``object.__setattr__`` per field (see ``bench/bench_core.py``). The request
bodies stay frozen slotted dataclasses, because tuples compare by value
regardless of class and ``Release() == Sweep()`` must stay false. Validation
happens at the edges (``oncelog.identity``), not here.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, NamedTuple, TypeVar

from oncelog.schemas import decision_derived

T = TypeVar("T")


class Kind(StrEnum):
    """What a request asks for."""

    CLAIM = "claim"
    HEARTBEAT = "heartbeat"
    COMPLETE = "complete"
    FAIL = "fail"
    RELEASE = "release"
    CANCEL = "cancel"
    SWEEP = "sweep"
    GET = "get"
    INHERIT = "inherit"
    APPROVE = "approve"
    DENY = "deny"


class Status(StrEnum):
    """The status of an existing execution (absent is ``None``)."""

    CLAIMED = "CLAIMED"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"
    EXPIRED = "EXPIRED"
    #: A claim's policy asked for approval: the intent is recorded, nothing granted yet.
    AWAITING_APPROVAL = "AWAITING_APPROVAL"
    #: Approved and not yet claimed: the next claim is granted.
    APPROVED = "APPROVED"
    #: Denied: terminal, every claim learns the reason.
    DENIED = "DENIED"


class Effect(StrEnum):
    """Whether a tool touches the outside world (declared at claim)."""

    PURE = "pure"
    EXTERNAL = "external"


class Outcome(StrEnum):
    """The referee's verdict on one request."""

    CLAIMED = "claimed"
    RECLAIMED = "reclaimed"
    IN_PROGRESS = "in_progress"
    REPLAYED = "replayed"
    CONFLICT = "conflict"
    RESULT_EXPIRED = "result_expired"
    FAILED = "failed"
    HEARTBEAT_OK = "heartbeat_ok"
    COMPLETED = "completed"
    STALE_CLAIM = "stale_claim"
    RELEASED = "released"
    CANCEL_REQUESTED = "cancel_requested"
    EXPIRED = "expired"
    INVALID_REQUEST = "invalid_request"
    STATE_ABSENT = "state_absent"
    STATE_CLAIMED = "state_claimed"
    STATE_COMPLETED = "state_completed"
    STATE_FAILED = "state_failed"
    STATE_EXPIRED = "state_expired"
    INHERITED = "inherited"
    AWAITING_APPROVAL = "awaiting_approval"
    APPROVED = "approved"
    DENIED = "denied"
    APPROVAL_EXPIRED = "approval_expired"
    APPROVAL_REFUSED = "approval_refused"


# --- request bodies ----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Claim:
    """Ask to run an operation (or learn its fate)."""

    tool_name: str
    params: bytes
    request_hash: str
    lease_ms: int
    retention_ms: int
    effect: Effect
    worker_id: str


@dataclass(frozen=True, slots=True)
class Heartbeat:
    """The holder is alive; extend the lease (by ``lease_ms`` or the claim's)."""

    lease_ms: int | None = None


@dataclass(frozen=True, slots=True)
class Complete:
    """The holder finished; ``result`` is canonical JSON."""

    result: bytes


@dataclass(frozen=True, slots=True)
class Fail:
    """The holder failed."""

    error: str
    retryable: bool


@dataclass(frozen=True, slots=True)
class Release:
    """The holder gives the lease back without a result."""


@dataclass(frozen=True, slots=True)
class Cancel:
    """Anyone asks the holder to stop; it learns at its next heartbeat."""

    reason: str | None = None


@dataclass(frozen=True, slots=True)
class Sweep:
    """The projector's retention tick for one operation."""


@dataclass(frozen=True, slots=True)
class Get:
    """Read the operation's state through the log: the answer reflects every earlier request."""


@dataclass(frozen=True, slots=True)
class Inherit:
    """Take the completion of the same key name on another channel (docs/spec.md §4, forks).

    A fork sends one per operation the parent had completed by the fork position
    (``adopted=False``); a branch that claims an external step another branch of its
    family completed with the same request hash sends one first (``adopted=True``),
    so that its own partition holds the result and the fold needs no other.
    """

    from_channel: str
    from_partition: int
    from_offset: int
    tool_name: str
    params: bytes
    request_hash: str
    effect: Effect
    result: bytes
    retention_ms: int
    adopted: bool


@dataclass(frozen=True, slots=True)
class Approve:
    """An approver's yes to an intent awaiting approval, bound to the request hash it saw."""

    approver: str
    request_hash: str
    #: Ed25519 signature by the approver's key (:mod:`oncelog.identity.approver_signature`);
    #: needed when the intent lists approvers. Out of the repr, which the retry memory
    #: hashes: a decision is the same decision whatever signs it.
    signature: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True, slots=True)
class Deny:
    """An approver's no to an intent awaiting approval: terminal, with its reason."""

    approver: str
    request_hash: str
    reason: str
    #: As an :class:`Approve`'s.
    signature: bytes | None = field(default=None, repr=False)


Body = (
    Claim | Heartbeat | Complete | Fail | Release | Cancel | Sweep | Get | Inherit | Approve | Deny
)

BODY_KIND: dict[type, Kind] = {
    Claim: Kind.CLAIM,
    Heartbeat: Kind.HEARTBEAT,
    Complete: Kind.COMPLETE,
    Fail: Kind.FAIL,
    Release: Kind.RELEASE,
    Cancel: Kind.CANCEL,
    Sweep: Kind.SWEEP,
    Get: Kind.GET,
    Inherit: Kind.INHERIT,
    Approve: Kind.APPROVE,
    Deny: Kind.DENY,
}


class ApproverKey(NamedTuple):
    """An approver: the name a decision records, and the raw 32-byte Ed25519 public key
    that must have signed it."""

    name: str
    public_key: bytes


class ApprovalPolicy(NamedTuple):
    """On a claim: a person must approve these params before the effect (docs/spec.md §4)."""

    #: The intent expires (``approval_expired``) this long after it is recorded, in log time.
    timeout_ms: int
    #: Whether the requesting worker may approve its own intent.
    self_approval: bool = False
    #: Who may decide: a decision must be signed by one of them. Empty: decided by name.
    approvers: tuple[ApproverKey, ...] = ()


class Request(NamedTuple):
    """One record of ``<prefix>.requests``, keyed by ``operation_id``."""

    request_id: str
    operation_id: str
    channel_id: str
    key_name: str
    claim_token: str | None
    body: Body
    #: The partition of ``<prefix>.decisions`` the sender listens on (routing, not state:
    #: the fold never reads it). ``None`` from older writers and the projector's sweeps.
    reply_partition: int | None = None
    #: On a complete or fail: how the sender settled a previous attempt's unknown outcome
    #: with the downstream (``"found"`` or ``"not_found"``); ``None``: not reconciled.
    reconciled: str | None = None
    #: On a claim: the tool's approval policy asks for a person's yes first.
    approval: ApprovalPolicy | None = None

    @property
    def kind(self) -> Kind:
        """The kind of the body."""
        return BODY_KIND[type(self.body)]


# --- state -------------------------------------------------------------------------


class PreviousAttempt(NamedTuple):
    """The attempt a grant superseded, for the new holder to reconcile with."""

    epoch: int
    token_fp: str
    worker_id: str
    claimed_at_ms: int
    last_heartbeat_ms: int | None
    status: Status
    error: str | None = None
    #: Superseded while its effect may have happened: an ``external`` step that neither
    #: completed, failed nor released before the reclaim (docs/spec.md §4). The audit lists it.
    outcome_unknown: bool = False


class RecentRequest(NamedTuple):
    """A request that changed the state, remembered so that a retry takes no effect.

    ``token_fp`` and ``payload_fp`` tell a retry (same id, same token, same
    payload) from a reused id, which is judged as new; both are empty on
    entries upgraded from records written before they were kept (such an entry
    matches any retry of its id, as it did then). ``log_time_ms`` ages the entry.
    ``worker_id`` is the worker a grant went to (empty on other entries): the grants
    are kept for the life of the state, so a request by any earlier attempt's token
    can be attributed to its own worker and epoch.
    """

    request_id: str
    outcome: Outcome
    epoch: int
    token_fp: str = ""
    payload_fp: str = ""
    log_time_ms: int = 0
    worker_id: str = ""


class Inheritance(NamedTuple):
    """Where a completion taken from another channel came from (an :class:`Inherit`)."""

    from_channel: str
    from_partition: int
    from_offset: int
    #: True: adopted at a claim instead of running the effect again; False: a fork's.
    adopted: bool


class Approval(NamedTuple):
    """The intent a claim recorded when its policy required approval, and its decision."""

    requested_at_ms: int
    #: Undecided at this log time: every later claim or decision is ``approval_expired``.
    deadline_ms: int
    #: The worker whose claim recorded the intent.
    requested_by: str
    self_approval: bool = False
    approved: bool = False
    #: The approver's name (never a token), once decided.
    decided_by: str | None = None
    decided_at_ms: int | None = None
    #: A denial's reason.
    reason: str | None = None
    #: The policy's approvers, recorded with the intent. Empty: decided by name, unsigned.
    approvers: tuple[ApproverKey, ...] = ()


class ExecutionState(NamedTuple):
    """The full decided state of one operation: what a snapshot carries."""

    operation_id: str
    channel_id: str
    key_name: str
    status: Status
    version: int
    epoch: int
    request_hash: str
    tool_name: str
    params: bytes
    effect: Effect
    lease_ms: int
    retention_ms: int
    token_fp: str
    worker_id: str
    claimed_at_ms: int
    lease_deadline_ms: int
    last_heartbeat_ms: int | None = None
    cancel_requested: bool = False
    cancel_reason: str | None = None
    result: bytes | None = None
    result_hash: str | None = None
    completed_at_ms: int | None = None
    expires_at_ms: int | None = None
    error: str | None = None
    retryable: bool = False
    #: The current attempt released its lease without a result: its outcome is known
    #: (nothing to reconcile) if it is reclaimed before it completes.
    released: bool = False
    previous: PreviousAttempt | None = None
    recent: tuple[RecentRequest, ...] = ()
    updated_at_ms: int = 0
    #: Set when the completion was taken from another channel (a fork, an adoption).
    inherited: Inheritance | None = None
    #: The approval intent and its decision, when the claim's policy required one.
    approval: Approval | None = None


class ExecutionSnapshot(NamedTuple):
    """One record of ``<prefix>.executions``: a state version and what made it."""

    state: ExecutionState
    source_partition: int
    source_offset: int
    source_request_id: str
    outcome: Outcome
    log_time_ms: int


class Decision(NamedTuple):
    """The referee's answer to one request; exactly one per request.

    ``state`` is the state after (the unchanged state too), ``None`` while the
    operation is absent. ``source_partition``/``source_offset`` are -1 out of
    the pure fold, which does not know where the request sat; the runtime
    stamps them. Holder, deadline, version and the cancel flag are read from
    ``state`` rather than stored twice (the Avro record carries them flat).
    """

    request_id: str
    operation_id: str
    kind: Kind
    outcome: Outcome
    changed: bool
    log_time_ms: int
    state: ExecutionState | None = None
    epoch: int | None = None
    retried: bool = False
    stored_hash: str | None = None
    request_hash: str | None = None
    result: bytes | None = None
    error: str | None = None
    duplicate_effect_suspected: bool = False
    previous: PreviousAttempt | None = None
    source_partition: int = -1
    source_offset: int = -1

    # Each reads ``state`` in a compiled function, which the generated writers call directly.
    @property
    def version(self) -> int:
        """The state version after the decision; 0 while absent."""
        return decision_derived.version(self)

    @property
    def holder_worker_id(self) -> str | None:
        """The worker holding the lease, when the state is CLAIMED."""
        return decision_derived.holder_worker_id(self)

    @property
    def lease_deadline_ms(self) -> int | None:
        """The holder's lease deadline (log time), when the state is CLAIMED."""
        return decision_derived.lease_deadline_ms(self)

    @property
    def cancel_requested(self) -> bool:
        """Whether a cancel is pending for the current holder."""
        return decision_derived.cancel_requested(self)


class CheckpointKind(StrEnum):
    """What one record of the checkpoints topic carries (LangGraph's three tables)."""

    CHECKPOINT = "checkpoint"
    WRITE = "write"
    BLOB = "blob"


@dataclass(frozen=True, slots=True)
class CheckpointRecord:
    """One record of ``<prefix>.checkpoints``: a part of a checkpoint, write or channel value.

    Written by :mod:`oncelog.integrations.langgraph`, folded by ``oncelog serve``
    (:mod:`oncelog.projector.checkpoints`). ``data`` is part ``part`` of ``parts`` of the
    value the saver's serde made; the other fields repeat on every part.
    """

    kind: CheckpointKind
    thread_id: str
    checkpoint_ns: str
    checkpoint_id: str
    value_type: str
    part: int
    parts: int
    data: bytes
    parent_checkpoint_id: str | None = None
    run_id: str | None = None
    channel: str | None = None
    version: str | None = None
    task_id: str | None = None
    task_path: str | None = None
    idx: int | None = None
    metadata_type: str | None = None
    metadata: bytes | None = None
    metadata_json: str | None = None
    channel_versions_json: str | None = None
    copied_from: str | None = None


# Field name -> tuple index of each NamedTuple model, built on first use.
_TUPLE_INDEX: dict[type, dict[str, int]] = {}


def evolve(obj: T, /, **changes: Any) -> T:
    """A copy of the model ``obj`` with ``changes`` applied (``dataclasses.replace``).

    Works for every model; an unknown field name raises ``TypeError``. A
    NamedTuple model is copied as a list and rebuilt with ``_make`` (the
    projector stamps every decision's position this way); a request body goes
    through ``dataclasses.replace``.
    """
    if not isinstance(obj, tuple):
        for name in changes:
            if name not in obj.__dataclass_fields__:  # type: ignore[attr-defined]
                raise TypeError(f"{type(obj).__name__} has no field {name!r}")
        new_body: T = dataclasses.replace(obj, **changes)  # type: ignore[type-var]
        return new_body
    cls = type(obj)
    index = _TUPLE_INDEX.get(cls)
    if index is None:
        fields: tuple[str, ...] = cls._fields  # type: ignore[attr-defined]
        index = _TUPLE_INDEX[cls] = {name: i for i, name in enumerate(fields)}
    values = list(obj)
    for name, value in changes.items():
        position = index.get(name)
        if position is None:
            raise TypeError(f"{cls.__name__} has no field {name!r}")
        values[position] = value
    new: T = cls._make(values)  # type: ignore[attr-defined]
    return new
