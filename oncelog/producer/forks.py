"""Forks of a channel, and effects taken across the branches of one family.

**Forking.** ``client.fork_channel(parent, child, at=...)`` gives ``child`` what ``parent``
had completed by the position ``at`` (an offset of the parent's partition, a timezone-aware
time, or None for now), in the parent's log order: one ``Inherit`` request per operation,
written to the child's own partition and addressed to the child's operation of the same
key name. The fold judges it there like any request (docs/spec.md §4), so the child's state
stays a function of its own partition: refold, restore and rebuild need no other.

A fork is idempotent: the same inheritance sent again changes nothing. A fork interrupted
half-way (the process died) is finished by calling ``fork_channel`` again. A fork never
overwrites what the child decided itself: a key the child claimed, failed, or completed
otherwise raises :class:`~oncelog.errors.ForkConflictError`.

**Adoption.** ``client.adopt_execution(channel, key, ..., from_channels=[...])`` looks for
the same key completed with the same request hash on another channel of the family (a
parent or a sibling branch) and, when it finds one, writes an ``Inherit`` marked
``adopted`` to ``channel`` first: the claim that follows replays that result, marked as
taken from that branch (``Execution.inherited``), instead of running the effect again.
Different arguments (another request hash) find nothing: the branch runs its own.

The parent's operations are read from the compacted executions topic (on Kafka) or the
in-memory ledger's states: what the projector has published. A completion decided a moment
ago may not be there yet; fork at a position the parent has passed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from oncelog.errors import ForkConflictError, InvalidArgumentError, InvalidStateError
from oncelog.identity import ids, validation
from oncelog.producer import protocol
from oncelog.producer.ledger_plan import LedgerPlan, ReadChannel, Send
from oncelog.producer.protocol import Route
from oncelog.producer.results import Execution
from oncelog.schemas import models as m
from oncelog.schemas.models import Decision, ExecutionSnapshot, ExecutionState, Outcome, Status

ForkAt = int | datetime | None
"""Where a fork reads its parent: an offset of the parent's partition (inclusive), a
timezone-aware time (log time, inclusive), or None (everything published now)."""

_EPOCH: Final = datetime(1970, 1, 1, tzinfo=UTC)
_MS: Final = timedelta(milliseconds=1)
# An inherit that met the child's own matching completion, or its own inheritance: done.
_ACCEPTED: Final = frozenset({Outcome.INHERITED, Outcome.STATE_COMPLETED, Outcome.STATE_EXPIRED})


@dataclass(frozen=True, slots=True)
class Fork:
    """What a fork gave the child: its executions, one per inherited operation, in order."""

    parent_channel: str
    child_channel: str
    inherited: tuple[Execution, ...]


@dataclass(frozen=True, slots=True)
class ForkPlan:
    """A fork's checked arguments, and the requests it makes of the parent's snapshots."""

    parent: str
    child: str
    at_offset: int | None
    at_ms: int | None

    @classmethod
    def of(cls, parent_channel: str, child_channel: str, at: ForkAt) -> ForkPlan:
        """Check the caller's arguments once, before anything is read or produced."""
        parent = validation.validate_id("parent_channel", parent_channel)
        child = validation.validate_id("child_channel", child_channel)
        if parent == child:
            raise InvalidArgumentError(f"a channel cannot fork itself ({parent!r})")
        if at is None:
            return cls(parent, child, None, None)
        if isinstance(at, datetime):
            if at.tzinfo is None or at.utcoffset() is None:
                raise InvalidArgumentError(
                    "at must be a timezone-aware datetime, an offset or None"
                )
            return cls(parent, child, None, (at - _EPOCH) // _MS)
        if isinstance(at, bool) or not isinstance(at, int) or at < 0:
            raise InvalidArgumentError(f"at must be an offset >= 0, a datetime or None: {at!r}")
        return cls(parent, child, at, None)

    def completed(self, snapshots: Iterable[ExecutionSnapshot]) -> list[ExecutionSnapshot]:
        """The parent's operations COMPLETED at ``at``, in the parent's log order.

        The newest version of each operation counts (a compacted topic may still hold
        older ones). An operation completed later, or expired since, is not inherited.
        """
        newest = newest_of(snapshots, self.parent)
        return [s for s in newest if s.state.status is Status.COMPLETED and self._by_at(s)]

    def _by_at(self, snap: ExecutionSnapshot) -> bool:
        if self.at_offset is not None:
            return snap.source_offset <= self.at_offset
        return self.at_ms is None or snap.log_time_ms <= self.at_ms

    def requests(self, snapshots: Iterable[ExecutionSnapshot]) -> list[m.Request]:
        """One inherit request per operation the child gets."""
        return [
            inherit_request(self.child, s.state, s.source_partition, s.source_offset, False)
            for s in self.completed(snapshots)
        ]

    def result(self, executions: Sequence[Execution]) -> Fork:
        """The fork's answer."""
        return Fork(self.parent, self.child, tuple(executions))


def newest_of(snapshots: Iterable[ExecutionSnapshot], channel_id: str) -> list[ExecutionSnapshot]:
    """The newest version of each of ``channel_id``'s operations, in log order."""
    newest: dict[str, ExecutionSnapshot] = {}
    for snap in snapshots:
        state = snap.state
        held = newest.get(state.operation_id)
        if state.channel_id == channel_id and (held is None or held.state.version <= state.version):
            newest[state.operation_id] = snap
    return sorted(newest.values(), key=lambda s: s.source_offset)


def executions_of(snapshots: Iterable[ExecutionSnapshot], channel_id: str) -> list[Execution]:
    """Each of ``channel_id``'s operations as last published, in log order; ``position`` is
    where the request that made that version sits."""
    return [
        dataclasses.replace(Execution.of(s.state), position=(s.source_partition, s.source_offset))
        for s in newest_of(snapshots, channel_id)
    ]


#: What an inherit carries of the state it copies, as it is.
_CARRIED: Final = ("tool_name", "params", "request_hash", "effect", "result", "retention_ms")


def inherit_request(
    channel_id: str, state: ExecutionState, partition: int, offset: int, adopted: bool
) -> m.Request:
    """The inherit of ``state`` (another channel's completion) into ``channel_id``'s same key."""
    assert state.result is not None  # only a COMPLETED state is inherited
    carried = {name: getattr(state, name) for name in _CARRIED}
    where: dict[str, Any] = {
        "from_channel": state.channel_id,
        "from_partition": partition,
        "from_offset": offset,
    }
    body = m.Inherit(**where, **carried, adopted=adopted)
    return protocol.make_request(Route(channel_id, state.key_name), None, body)


def inherit_result(decision: Decision) -> Execution:
    """The child's execution after an inherit, or :class:`ForkConflictError`."""
    state = decision.state
    if decision.outcome is Outcome.CONFLICT and state is not None:
        raise ForkConflictError(
            f"operation {decision.operation_id} ({state.channel_id!r}, {state.key_name!r}) is "
            f"{state.status.value} there already and is not the parent's completion: "
            "fork into a new channel, or before the child runs this key itself",
            stored_hash=decision.stored_hash or "",
            request_hash=decision.request_hash or "",
        )
    protocol.raise_for(decision)
    if decision.outcome not in _ACCEPTED or state is None:
        raise InvalidStateError(
            f"inherit of {decision.operation_id} answered {decision.outcome.value}",
            state="absent" if state is None else state.status.value.lower(),
        )
    return Execution.of(state, decision)


@dataclass(frozen=True, slots=True)
class Adoption:
    """An external step's search of its family for the same completed request."""

    channel: str
    key_name: str
    request_hash: str
    from_channels: tuple[str, ...]

    @classmethod
    def of(
        cls,
        channel_id: str,
        key_name: str,
        *,
        tool_name: str,
        params: Any,
        dedup_fields: Sequence[str] | None,
        from_channels: Sequence[str],
    ) -> Adoption:
        """Check the arguments once; the request hash is the one the claim will carry."""
        channel = validation.validate_id("channel_id", channel_id)
        key = validation.validate_id("key_name", key_name)
        tool = validation.validate_id("tool_name", tool_name)
        validation.validate_params(params)
        fields = validation.validate_dedup_fields(params, dedup_fields)
        others = tuple(validation.validate_id("from_channels", c) for c in from_channels)
        return cls(channel, key, ids.request_hash(tool, params, fields), others)

    def reads(self) -> list[m.Request]:
        """The reads of the same key on each other channel, in the order given."""
        others = (c for c in self.from_channels if c != self.channel)
        return [protocol.build_get(Route(c, self.key_name)) for c in others]

    def adopt(self, read: Decision) -> m.Request | None:
        """The adopting inherit, when ``read`` found the same request completed."""
        state = read.state
        if state is None or state.status is not Status.COMPLETED:
            return None
        if state.request_hash != self.request_hash:
            return None
        # The read's own position: one at which that branch held this completion.
        return inherit_request(self.channel, state, read.source_partition, read.source_offset, True)

    @staticmethod
    def adopted(decision: Decision) -> Execution | None:
        """The execution after the adopting inherit; None when the channel decided otherwise
        (its own claim, say, after a crash): the claim that follows judges it as usual."""
        if decision.outcome is Outcome.CONFLICT:
            return None
        return inherit_result(decision)


# --- the plans both clients run (oncelog.producer.ledger_plan) --------------------------


def fork_channel(parent_channel: str, child_channel: str, *, at: ForkAt = None) -> LedgerPlan[Fork]:
    """Give ``child_channel`` what ``parent_channel`` had completed by ``at``: see
    :mod:`oncelog.producer.forks` (idempotent; call again to finish an interrupted fork)."""
    plan = ForkPlan.of(parent_channel, child_channel, at)
    snapshots = yield ReadChannel(plan.parent)
    inherited = []
    # In the parent's log order, one at a time: an interrupted fork is a prefix.
    for request in plan.requests(snapshots):
        inherited.append(inherit_result((yield Send(request))))
    return plan.result(inherited)


def channel_executions(channel_id: str) -> LedgerPlan[list[Execution]]:
    """Each operation of ``channel_id`` as the projector last published it (the compacted
    executions topic), in log order, with the position of the request that made it."""
    channel = validation.validate_id("channel_id", channel_id)
    return executions_of((yield ReadChannel(channel)), channel)


def adopt_execution(
    channel_id: str,
    key_name: str,
    *,
    tool_name: str,
    params: Mapping[str, Any],
    from_channels: Sequence[str],
    dedup_fields: Sequence[str] | None = None,
) -> LedgerPlan[Execution | None]:
    """Take the same request's completion from another branch of the family, if one
    has it: see :mod:`oncelog.producer.forks`. None: nobody has; claim and run."""
    adoption = Adoption.of(
        channel_id,
        key_name,
        tool_name=tool_name,
        params=params,
        dedup_fields=dedup_fields,
        from_channels=from_channels,
    )
    for read in adoption.reads():
        inherit = adoption.adopt((yield Send(read)))
        if inherit is not None:
            return adoption.adopted((yield Send(inherit)))
    return None
