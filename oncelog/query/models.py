"""Frozen result models of the read-only queries; they are also the HTTP JSON bodies."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue

_REDACTED = "True when the server leaves results out (result is null; result_hash stays)"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class StepStatus(_Frozen):
    """Did one step (or key) of a channel finish, as of a position of its partition?"""

    channel_id: str
    key_name: str
    operation_id: str
    status: str = Field(description='"absent", or the lower-cased status, e.g. "completed"')
    finished: bool = Field(description="True when the status is completed or expired")
    result: JsonValue = Field(default=None, description="The decoded result, while kept")
    result_hash: str | None = None
    result_redacted: bool = Field(default=False, description=_REDACTED)
    epoch: int | None = Field(default=None, description="The fencing token of the last grant")
    worker_id: str | None = Field(default=None, description="The holder of the last grant")
    effect: str | None = Field(default=None, description='"pure" or "external", from the claim')
    version: int = Field(default=0, description="The state version; 0 while absent")
    as_of: int | datetime | None = Field(
        default=None, description="The position asked for: an offset, a time, or None (current)"
    )
    source_offset: int | None = Field(
        default=None, description="Offset (requests topic) of the request that made this version"
    )
    log_time_ms: int | None = None


class Version(_Frozen):
    """One state version of an operation, valid over ``[valid_from_offset, valid_to_offset)``."""

    operation_id: str
    version: int
    status: str
    outcome: str
    request_id: str
    epoch: int
    worker_id: str
    token_fp: str = Field(description="Fingerprint of the attempt's claim token (never the token)")
    effect: str
    valid_from_offset: int
    valid_to_offset: int | None
    log_time_ms: int
    result: JsonValue = None
    result_hash: str | None = None
    result_redacted: bool = Field(default=False, description=_REDACTED)
    lease_deadline_ms: int | None = Field(
        default=None, description="Log time the grant's lease ends at, as of this version"
    )
    tool_name: str | None = Field(default=None, description="The tool named at claim")


class TimelineEntry(_Frozen):
    """One request of a channel and the referee's verdict, in log order (reads left out).

    ``epoch``, ``worker_id`` and ``token_fp`` name the sender's attempt: the grant whose
    token the request carries (a claim that got none: its own worker, no epoch).
    ``state_epoch`` and ``state_worker_id`` name the state it met.
    """

    partition: int
    offset: int
    request_id: str
    operation_id: str
    key_name: str
    kind: str
    outcome: str
    changed: bool
    version: int
    epoch: int | None
    worker_id: str | None
    effect: str | None
    log_time_ms: int
    duplicate_effect_suspected: bool
    retried: bool
    token_fp: str | None = Field(
        default=None, description="Fingerprint of the request's claim token (never the token)"
    )
    state_epoch: int | None = Field(
        default=None, description="The epoch of the state the request met (before it)"
    )
    state_worker_id: str | None = Field(
        default=None, description="The holder of the state the request met (before it)"
    )
    outcome_unknown: bool = Field(
        default=False, description="A reclaim that left its previous attempt's outcome unknown"
    )
    reconciled: str | None = Field(
        default=None, description='On a completion or failure: "found", "not_found" or null'
    )
    from_channel: str | None = Field(default=None, description="An inherit's source branch")
    adopted: bool | None = Field(
        default=None,
        description="On an inherit: true when a branch adopted another branch's effect at a "
        "claim, false when a fork inherited it",
    )
    error_code: str | None = Field(
        default=None, description='On a failure: its code (e.g. "result_unrecordable")'
    )
    approver: str | None = Field(
        default=None, description="On an approve or a deny: the approver's name (never a token)"
    )
    reason: str | None = Field(default=None, description="On a deny or a cancel: its reason")


class SideEffects(_Frozen):
    """Which keys of a channel were declared pure and which external between two positions.

    The range is of the channel's partition of the requests topic, both ends included;
    each end was given as an offset, a time or a key (a key's own span on the log).
    """

    channel_id: str
    from_offset: int | None = Field(
        description="The first offset of the range (given, or the from key's first request)"
    )
    to_offset: int | None = Field(
        description="The last offset of the range (given, or the to key's last request)"
    )
    from_time: datetime | None = Field(description="The range starts at this log time, if given")
    to_time: datetime | None = Field(description="The range ends at this log time, if given")
    from_key: str | None = Field(description="The key that bounds the start, if given")
    to_key: str | None = Field(description="The key that bounds the end, if given")
    pure: list[str] = Field(description="Keys whose work in the range was declared pure")
    external: list[str] = Field(
        description="Keys whose work in the range was not declared pure: it may have touched "
        "the outside world"
    )
    truncated: bool = Field(description="More keys ran in the range than the limit")


DUPLICATE_KINDS = (
    "stale_completion",
    "unknown_outcome",
    "unrecordable_result",
    "forged_or_unknown_token",
    "cross_branch",
)
"""The kinds of evidence in the audit of doubles: a fenced completion, an unknown outcome,
a fenced failure whose result could not be recorded, a completion by a token never
granted (not a duplicate), and an external effect run again in another branch of a fork."""


class SuspectedDuplicate(_Frozen):
    """One item of the audit of doubles: evidence that a side effect may have run twice,
    and the verdict of its operation (:mod:`oncelog.query.verdicts`).

    ``stale_completion``: a late completion by a fenced attempt (its effect ran while
    another attempt held the operation); the position is the completion's.
    ``unknown_outcome``: a reclaim superseded an attempt of an external step that never
    completed, failed or released (its effect may have happened); the position is the
    reclaim's. ``unrecordable_result``: a fenced attempt failed with the code
    ``result_unrecordable`` (its tool ran; its result could not be recorded).
    ``forged_or_unknown_token``: a completion with a token no grant went to. Not a
    duplicate (no attempt of the operation ran it), listed apart. ``cross_branch``: an
    external step another branch of the fork's family had completed first.
    ``settled``/``reconciled`` tell how the attempt that took over ended.
    """

    # An older member of a group lists stale completions only, without a kind.
    kind: str = Field(default="stale_completion", description=" | ".join(DUPLICATE_KINDS))
    partition: int
    offset: int
    log_time_ms: int
    operation_id: str
    channel_id: str
    key_name: str
    request_id: str
    token_fp: str | None = Field(description="Fingerprint of the attempt's claim token")
    stale_epoch: int | None = Field(description="Epoch of the attempt that may have doubled")
    stale_worker_id: str | None = Field(description="Worker of the attempt that may have doubled")
    current_epoch: int | None = Field(description="The epoch holding the operation at that time")
    last_heartbeat_ms: int | None = Field(
        default=None, description="unknown_outcome: the attempt's last heartbeat (log time)"
    )
    settled: str | None = Field(
        default=None,
        description='"completed" or "failed" as the attempt that took over ended (the first '
        "completion or failure that took effect after the reclaim, or by a later epoch); "
        "null while it runs",
    )
    reconciled: str | None = Field(
        default=None,
        description='"found" or "not_found" as that completion or failure reported it; null '
        "when it did not",
    )
    other_channel_id: str | None = Field(
        default=None,
        description="cross_branch: the branch (channel) that completed the same request first",
    )
    settled_code: str | None = Field(
        default=None,
        description='The settling failure\'s code (e.g. "result_unrecordable"); null otherwise',
    )
    # An older member of a group judges nothing: its items are to be looked at.
    verdict: str = Field(
        default="possible",
        description="The operation's verdict: double (two effects proven), possible (may have "
        "run twice), unsettled (the attempt that took over has not ended), single (one effect)",
    )

    @property
    def possible_duplicate(self) -> bool:
        """The operation's verdict is ``possible``: its effect may have run twice."""
        return self.verdict == "possible"


class Positions(_Frozen):
    """How far the projection has folded the requests topic, per partition.

    A projection has caught up with the log when every ``next_offset`` is at least
    the partition's high watermark read before: every request written by then is
    folded and committed, so the other queries see it.
    """

    next_offsets: dict[int, int] = Field(
        description="Partition of the requests topic -> next offset to fold (committed)"
    )


T = TypeVar("T")


class Page(_Frozen, Generic[T]):
    """A capped list: ``truncated`` says that more rows exist beyond ``limit``."""

    items: list[T]
    limit: int
    truncated: bool


class PendingApproval(_Frozen):
    """An intent awaiting a person's approve or deny (docs/spec.md §4), oldest first."""

    operation_id: str
    channel_id: str = Field(description="The run (channel) whose step asked for approval")
    key_name: str
    tool_name: str
    request_hash: str | None = Field(
        default=None, description="What an approve or deny must name: the intent's params hash"
    )
    requested_at_ms: int = Field(description="Log time the intent was recorded")
    deadline_ms: int = Field(description="Log time after which the intent is approval_expired")
    partition: int
    offset: int = Field(description="Offset (requests topic) of the claim that recorded it")
    params: dict[str, Any] | None = Field(
        default=None, description="The params a decision approves, as the claim gave them"
    )
