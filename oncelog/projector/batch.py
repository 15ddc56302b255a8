"""Fold one poll batch of raw request records into what must be published and stored.

The live projector's sink around the one referee step (:mod:`oncelog.referee.judge`):
admit every record, load the admitted operations' states in one read, then judge each
partition's requests in log order. The bulk rebuild and the in-memory ledger call the
same step with sinks of their own.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass, field

from confluent_kafka import KafkaError, Message

from oncelog.kafka.failures import kafka_failure
from oncelog.kafka.reader import where
from oncelog.projector.store import AuditEntry, Batch, DeadLetter, Position
from oncelog.referee.fold import PartitionClock, snapshot_of
from oncelog.referee.judge import Refusal, admit, judge
from oncelog.schemas.models import ExecutionSnapshot, ExecutionState, Request

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


Admitted = list[tuple[Request, int, int]]  # one partition's requests: request, ts, offset


class BatchFolder:
    """Admit and judge records, keeping each partition's log-time clock."""

    def __init__(
        self,
        topic: str,
        partitions: int,
        clocks: dict[int, PartitionClock],
        max_clock_step_ms: int = 0,
    ) -> None:
        self._topic = topic
        self._partitions = partitions
        self.clocks = clocks
        self._max_step = max_clock_step_ms

    def fold(self, messages: list[Message], load_states: StateLoader) -> Folded:
        """Fold ``messages`` (any partitions, log order within each)."""
        out = Folded()
        parts: dict[int, Admitted] = {}
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
            value, ts = msg.value() or b"", msg.timestamp()[1]
            verdict = admit(
                value, msg.key(), partition=p, offset=offset, ts_ms=ts, partitions=self._partitions
            )
            if isinstance(verdict, Refusal):
                out.raw[(p, offset)] = value
                self._refuse(p, offset, ts, verdict, out)
            else:
                parts.setdefault(p, []).append((verdict, ts, offset))
        states = load_states({r.operation_id for part in parts.values() for r, _, _ in part})
        for p, part in parts.items():
            self._judge_partition(p, part, states, out)
        # Decisions go out in log order, whatever made them (fold or validation).
        out.audit.sort(key=lambda e: (e.partition, e.offset))
        for p, offset in last.items():
            out.positions[p] = Position(offset + 1, self.clocks.get(p, PartitionClock()).last_ms)
        return out

    def _refuse(self, p: int, offset: int, ts: int, refusal: Refusal, out: Folded) -> None:
        exc = refusal.error
        out.dead.append(DeadLetter(self._topic, p, offset, ts, exc.code, str(exc), refusal.length))
        if refusal.request is not None and refusal.answer is not None:
            # It decoded: its sender is waiting for an answer, so give one.
            out.audit.append(AuditEntry(p, offset, ts, refusal.request, refusal.answer))

    def _judge_partition(
        self, p: int, part: Admitted, states: dict[str, ExecutionState], out: Folded
    ) -> None:
        clock = self.clocks.get(p, PartitionClock())
        for request, ts, offset in part:
            op = request.operation_id
            before = states.get(op)
            clock, after, decision = judge(
                before,
                request,
                clock,
                ts_ms=ts,
                partition=p,
                offset=offset,
                max_clock_step_ms=self._max_step,
            )
            if after is not None and after is not before:
                states[op] = after
            out.audit.append(AuditEntry(p, offset, decision.log_time_ms, request, decision))
            if decision.changed:
                out.snapshots.append(snapshot_of(decision, p, offset))
        self.clocks[p] = clock
