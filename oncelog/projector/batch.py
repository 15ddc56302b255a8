"""Fold one poll batch of raw request records into what must be published and stored.

Shared by the live projector and by rebuild/verify, so a rebuilt projection is
made by exactly the code that made the live one.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message

from oncelog.errors import CodecError, InvalidRequestError, LedgerError
from oncelog.kafka.failures import kafka_failure
from oncelog.kafka.reader import where
from oncelog.projector.store import AuditEntry, Batch, DeadLetter, Position
from oncelog.referee.fold import PartitionClock, fold_batch, snapshot_of
from oncelog.referee.validate import check_request
from oncelog.schemas.codec import decode_request
from oncelog.schemas.models import Decision, ExecutionSnapshot, ExecutionState, Outcome, Request
from oncelog.schemas.models import evolve as _evolve

StateLoader = Callable[[Collection[str]], dict[str, ExecutionState]]


@dataclass
class Folded:
    """The result of one batch: the store's batch plus the dead letters' raw bytes."""

    audit: list[AuditEntry] = field(default_factory=list)
    snapshots: list[ExecutionSnapshot] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    raw: dict[tuple[int, int], bytes] = field(default_factory=dict)
    positions: dict[int, Position] = field(default_factory=dict)

    def batch(self) -> Batch:
        """What :meth:`Store.commit` writes in one transaction."""
        return Batch(self.audit, self.snapshots, self.dead, self.positions)


@dataclass
class _PartitionRecords:
    """The decoded, valid requests of one partition in a batch, in log order."""

    items: list[tuple[Request, int, int]] = field(default_factory=list)  # request, ts, offset


class BatchFolder:
    """Decode, validate and fold records, keeping each partition's log-time clamp."""

    def __init__(self, topic: str, partitions: int, clocks: dict[int, PartitionClock]) -> None:
        self._topic = topic
        self._partitions = partitions
        self.clocks = clocks

    def fold(self, messages: list[Message], load_states: StateLoader) -> Folded:
        """Fold ``messages`` (any partitions, log order within each)."""
        out = Folded()
        parts: dict[int, _PartitionRecords] = {}
        last: dict[int, int] = {}
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                topic = msg.topic() or self._topic
                where_ = f"consuming {topic}[{msg.partition()}] at {msg.offset()}"
                raise kafka_failure(where_, topic, err)
            p, offset = where(msg)
            last[p] = offset
            self._decode(msg, p, offset, parts.setdefault(p, _PartitionRecords()), out)
        states = load_states({r.operation_id for part in parts.values() for r, _, _ in part.items})
        for p, part in parts.items():
            self._fold_partition(p, part, states, out)
        # Decisions go out in log order, whatever made them (fold or validation).
        out.audit.sort(key=lambda e: (e.partition, e.offset))
        for p, offset in last.items():
            out.positions[p] = Position(offset + 1, self.clocks.get(p, PartitionClock()).last_ms)
        return out

    def _decode(
        self, msg: Message, p: int, offset: int, part: _PartitionRecords, out: Folded
    ) -> None:
        value = msg.value() or b""
        ts = msg.timestamp()[1]
        request: Request | None = None
        try:
            request = decode_request(value)
            check_request(request, msg.key(), p, self._partitions)
        except (CodecError, InvalidRequestError) as exc:
            out.dead.append(self._dead_letter(p, offset, ts, len(value), exc))
            out.raw[(p, offset)] = value
            if request is not None:
                # It decoded: its sender is waiting for an answer, so give one.
                out.audit.append(_invalid_entry(request, p, offset, ts, exc))
            return
        part.items.append((request, ts, offset))

    def _dead_letter(
        self, p: int, offset: int, ts: int, length: int, exc: LedgerError
    ) -> DeadLetter:
        return DeadLetter(self._topic, p, offset, ts, exc.code, str(exc), length)

    def _fold_partition(
        self, p: int, part: _PartitionRecords, states: dict[str, ExecutionState], out: Folded
    ) -> None:
        if not part.items:
            return
        clock = self.clocks.get(p, PartitionClock())
        touched, clock, decisions = fold_batch(
            states, clock, [(req, ts) for req, ts, _ in part.items]
        )
        self.clocks[p] = clock
        states.update(touched)
        for (request, _, offset), folded in zip(part.items, decisions, strict=True):
            decision = _evolve(folded, source_partition=p, source_offset=offset)
            out.audit.append(AuditEntry(p, offset, decision.log_time_ms, request, decision))
            if decision.changed:
                out.snapshots.append(snapshot_of(decision, p, offset))


def _invalid_entry(request: Request, p: int, offset: int, ts: int, exc: LedgerError) -> AuditEntry:
    decision = Decision(
        request_id=request.request_id,
        operation_id=request.operation_id,
        kind=request.kind,
        outcome=Outcome.INVALID_REQUEST,
        changed=False,
        log_time_ms=ts,
        error=exc.message,
        source_partition=p,
        source_offset=offset,
    )
    return AuditEntry(p, offset, ts, request, decision)
