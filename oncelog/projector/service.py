"""The projector: consume requests, fold them, publish decisions and snapshots, commit.

Per poll batch: decode, load the touched states in one query, fold in memory,
publish decisions + snapshots + dead letters and flush, then commit state,
history, audit and the per-partition positions in ONE DuckDB transaction. A
crash anywhere before that commit refolds the same records from the same state
and so only republishes identical records.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, Message, TopicPartition

from oncelog.errors import CodecError, InvalidRequestError, KafkaOperationError, LedgerError
from oncelog.kafka.producer import FutureProducer
from oncelog.kafka.reader import partition_count, where
from oncelog.projector.fold import PartitionClock, fold_batch, snapshot_of
from oncelog.projector.restore import restore_partition
from oncelog.projector.store import AuditEntry, Batch, DeadLetter, Position, Store
from oncelog.projector.sweeps import SweepScheduler
from oncelog.projector.validate import check_request
from oncelog.schemas.codec import decode_request, encode_decision, encode_snapshot
from oncelog.schemas.models import (
    Decision,
    ExecutionSnapshot,
    ExecutionState,
    Outcome,
    Request,
    evolve,
)
from oncelog.settings import Settings
from oncelog.topics import admin_client, check_topics, ledger_topics

_FLUSH_TIMEOUT_S = 60.0


@dataclass
class _Decoded:
    """The requests of one partition in this batch, in log order."""

    items: list[tuple[Request, int, int]] = field(default_factory=list)  # request, ts, offset
    keys: dict[int, bytes | None] = field(default_factory=dict)


@dataclass
class _Outputs:
    audit: list[AuditEntry] = field(default_factory=list)
    snapshots: list[ExecutionSnapshot] = field(default_factory=list)
    dead: list[DeadLetter] = field(default_factory=list)
    raw: dict[tuple[int, int], bytes] = field(default_factory=dict)  # dead letters' bytes


class Projector:
    """One projector process: owns the DuckDB file, consumes in a consumer group."""

    def __init__(
        self,
        settings: Settings,
        bootstrap: str,
        store: Store,
        *,
        batch_size: int = 5000,
        poll_timeout_s: float = 0.1,
        sweep_interval_s: float = 1.0,
        on_batch: Callable[[Batch], None] | None = None,
    ) -> None:
        self._settings = settings
        self._kafka = settings.kafka_config(bootstrap)
        self._store = store
        self._batch_size = batch_size
        self._poll_timeout_s = poll_timeout_s
        self._clocks: dict[int, PartitionClock] = {}
        self._producer = FutureProducer(self._kafka)
        self._consumer: Consumer | None = None
        self._partitions = 0
        self._sweeps = SweepScheduler(settings.requests_topic, sweep_interval_s)
        self._on_batch = on_batch

    # --- lifecycle -----------------------------------------------------------------

    def start(self) -> None:
        """Check the topics, then join the consumer group."""
        admin = admin_client(self._settings, self._kafka["bootstrap.servers"])
        check_topics(admin, ledger_topics(self._settings))
        consumer = Consumer(
            {
                **self._kafka,
                "group.id": f"{self._settings.topic_prefix}.projector",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "fetch.wait.max.ms": 10,
                "log_level": 3,
            }
        )
        self._partitions = partition_count(consumer, self._settings.requests_topic)
        consumer.subscribe(
            [self._settings.requests_topic], on_assign=self._on_assign, on_revoke=self._on_revoke
        )
        self._consumer = consumer

    def run(self, stop: threading.Event) -> None:
        """Process batches until ``stop`` is set."""
        if self._consumer is None:
            self.start()
        while not stop.is_set():
            self.run_once()

    def close(self) -> None:
        """Leave the group and flush what is queued."""
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
        self._producer.close()

    # --- assignment ----------------------------------------------------------------

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        positions = self._store.positions()
        for tp in partitions:
            position = positions.get(tp.partition)
            if position is None:
                position = restore_partition(self._settings, self._kafka, self._store, tp.partition)
            self._clocks[tp.partition] = PartitionClock(position.clock_ms)
            tp.offset = position.next_offset
        consumer.assign(partitions)

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:
            self._clocks.pop(tp.partition, None)
        consumer.unassign()

    # --- one batch -----------------------------------------------------------------

    def run_once(self) -> int:
        """Consume, fold, publish and commit one batch; return the records handled."""
        assert self._consumer is not None, "start() first"
        messages = self._consumer.consume(self._batch_size, timeout=self._poll_timeout_s)
        if messages:
            self._process(messages)
        self._sweeps.maybe_send(self._store, self._producer, sorted(self._clocks))
        return len(messages)

    def _process(self, messages: list[Message]) -> None:
        decoded: dict[int, _Decoded] = {}
        out = _Outputs()
        last: dict[int, int] = {}
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaOperationError(
                    f"consuming {msg.topic()}[{msg.partition()}] at {msg.offset()}: {err}"
                )
            p, offset = where(msg)
            last[p] = offset
            self._decode_one(msg, p, offset, decoded.setdefault(p, _Decoded()), out)
        states = self._store.load_states(
            {r.operation_id for part in decoded.values() for r, _, _ in part.items}
        )
        for p, part in decoded.items():
            self._fold_partition(p, part, states, out)
        self._publish(out)
        positions = {p: Position(off + 1, self._clocks[p].last_ms) for p, off in last.items()}
        batch = Batch(out.audit, out.snapshots, out.dead, positions)
        self._store.commit(batch)
        self._sweeps.folded(out.audit)
        if self._on_batch is not None:
            self._on_batch(batch)

    def _decode_one(self, msg: Message, p: int, offset: int, part: _Decoded, out: _Outputs) -> None:
        value = msg.value() or b""
        ts = msg.timestamp()[1]
        try:
            request = decode_request(value)
            check_request(request, msg.key(), p, self._partitions)
        except (CodecError, InvalidRequestError) as exc:
            out.dead.append(self._dead_letter(msg, p, offset, exc))
            out.raw[(p, offset)] = value
            if isinstance(exc, InvalidRequestError):
                # It decoded: its sender is waiting for an answer, so give one.
                out.audit.append(_invalid_entry(request, p, offset, ts, exc))
            return
        part.items.append((request, ts, offset))

    def _dead_letter(self, msg: Message, p: int, offset: int, exc: LedgerError) -> DeadLetter:
        return DeadLetter(
            topic=msg.topic() or self._settings.requests_topic,
            partition=p,
            offset=offset,
            log_time_ms=msg.timestamp()[1],
            code=exc.code,
            message=str(exc),
            raw_length=len(msg.value() or b""),
        )

    def _fold_partition(
        self, p: int, part: _Decoded, states: dict[str, ExecutionState], out: _Outputs
    ) -> None:
        if not part.items:
            return
        clock = self._clocks.get(p, PartitionClock())
        touched, clock, decisions = fold_batch(
            states, clock, [(req, ts) for req, ts, _ in part.items]
        )
        self._clocks[p] = clock
        states.update(touched)
        for (request, _, offset), folded in zip(part.items, decisions, strict=True):
            decision = evolve(folded, source_partition=p, source_offset=offset)
            out.audit.append(AuditEntry(p, offset, decision.log_time_ms, request, decision))
            if decision.changed:
                out.snapshots.append(snapshot_of(decision, p, offset))

    def _publish(self, out: _Outputs) -> None:
        """Send every decision, snapshot and dead letter of the batch, then flush."""
        s = self._settings
        send = self._producer.send
        for entry in out.audit:
            d = entry.decision
            send(s.decisions_topic, entry.partition, d.request_id.encode(), encode_decision(d))
        for snap in out.snapshots:
            key = snap.state.operation_id.encode()
            send(s.executions_topic, snap.source_partition, key, encode_snapshot(snap))
        for dead in out.dead:
            headers = [
                ("source_topic", dead.topic.encode()),
                ("source_partition", str(dead.partition).encode()),
                ("source_offset", str(dead.offset).encode()),
                ("error_code", dead.code.encode()),
                ("error", dead.message.encode()[:4096]),
            ]
            raw = out.raw[(dead.partition, dead.offset)]
            send(s.deadletter_topic, dead.partition, b"", raw, headers)
        self._producer.flush(_FLUSH_TIMEOUT_S)


def _invalid_entry(
    request: Request, p: int, offset: int, ts: int, exc: InvalidRequestError
) -> AuditEntry:
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
