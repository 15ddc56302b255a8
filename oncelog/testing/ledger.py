"""``InMemoryLedger``: the client's transport, folding each request in process.

The seam is :class:`oncelog.producer.transport.Transport`: on Kafka a request is
produced to the requests topic, the projector folds it and a listener reads the
decision back; here one lock does all three, with the same code on the way:
the Avro codec both ways, the projector's validation, the fold, and log time
taken from a :class:`~oncelog.testing.clock.ManualClock` (clamped per partition,
as the projector clamps broker timestamps).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from oncelog.identity.partitioner import partition_for
from oncelog.producer.client import LedgerClient
from oncelog.producer.results import Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.referee.fold import PartitionClock, snapshot_of
from oncelog.referee.judge import Refusal, admit, judge
from oncelog.schemas.codec import decode_decision, decode_request, encode_decision, encode_request
from oncelog.schemas.models import (
    Decision,
    ExecutionSnapshot,
    ExecutionState,
    Request,
    Status,
    Sweep,
)
from oncelog.settings import Settings
from oncelog.testing.clock import ManualClock
from oncelog.tracing.propagation import Headers


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One record of the in-memory requests log, with its decision (both as bytes)."""

    partition: int
    offset: int
    key: bytes
    value: bytes = field(default=b"", repr=False)  # the request carries its claim token
    decision: bytes = b""

    @property
    def request(self) -> Request:
        """The request, decoded."""
        return decode_request(self.value)

    @property
    def outcome(self) -> Decision:
        """The decision, decoded."""
        return decode_decision(self.decision)


class InMemoryLedger:
    """A whole ledger in process, for tests: pass it as a client's ``transport``.

    ``ledger.sync_client()`` and ``ledger.client()`` build the normal clients
    on it; :meth:`advance` moves log time (leases, retention) without waiting.
    """

    def __init__(
        self,
        *,
        partitions: int = 3,
        clock: ManualClock | None = None,
        settings: Settings | None = None,
    ) -> None:
        self._clock = clock or ManualClock()
        self.settings = settings or Settings(topic_prefix="memory", partitions=partitions)
        self.partitions = self.settings.partitions
        self._states: dict[str, ExecutionState] = {}
        # The executions topic, compacted: the newest snapshot of each operation.
        self._snapshots: dict[str, ExecutionSnapshot] = {}
        self._log_times: dict[int, PartitionClock] = {}
        self._log: list[LoggedRequest] = []
        self._next_offset: dict[int, int] = {}
        self._appended = threading.Condition()

    # --- Transport -------------------------------------------------------------------

    @property
    def clock(self) -> ManualClock:
        """The ledger's log time; :meth:`advance` moves it."""
        return self._clock

    def start(self) -> None:
        """Nothing to connect."""

    def close(self) -> None:
        """Nothing to disconnect: the log stays readable."""

    def call(self, request: Request) -> Decision:
        """Append ``request`` (encoded, as the SDK would produce it) and return its decision."""
        partition = partition_for(request.channel_id, self.partitions)
        logged = self.append(partition, request.operation_id.encode(), encode_request(request))
        return decode_decision(logged.decision)

    async def acall(self, request: Request, headers: Headers | None = None) -> Decision:
        """The same as :meth:`call`: folding in process never blocks for long (its log
        keeps no headers)."""
        return self.call(request)

    def send_acknowledged(self, request: Request, timeout_s: float) -> None:
        """Append ``request``; its decision is in the log but nobody reads it."""
        self.call(request)

    def channel_snapshots(self, channel_id: str) -> list[ExecutionSnapshot]:
        """The newest snapshot of each of ``channel_id``'s operations, as compaction keeps."""
        with self._appended:
            return [s for s in self._snapshots.values() if s.state.channel_id == channel_id]

    # --- the log ---------------------------------------------------------------------

    def append(self, partition: int, key: bytes, value: bytes) -> LoggedRequest:
        """Append a raw record and fold it, as the projector would (a foreign writer's path).

        A record that does not decode raises :class:`~oncelog.errors.CodecError`; one that
        decodes but fails validation is answered ``invalid_request``, as on Kafka.
        """
        with self._appended:
            offset = self._next_offset.get(partition, 0)
            self._next_offset[partition] = offset + 1
            decision = self._decide(partition, offset, key, value)
            logged = LoggedRequest(partition, offset, key, value, encode_decision(decision))
            self._log.append(logged)
            self._appended.notify_all()
        return logged

    def _decide(self, partition: int, offset: int, key: bytes, value: bytes) -> Decision:
        """The projector's referee step, with the manual clock's time as the broker's."""
        ts = self._clock.now_ms()
        verdict = admit(
            value, key, partition=partition, offset=offset, ts_ms=ts, partitions=self.partitions
        )
        if isinstance(verdict, Refusal):
            if verdict.answer is None:  # Kafka would dead-letter it; the caller gets the error
                raise verdict.error
            return verdict.answer
        op = verdict.operation_id
        clock = self._log_times.get(partition, PartitionClock())
        clock, after, decision = judge(
            self._states.get(op),
            verdict,
            clock,
            ts_ms=ts,
            partition=partition,
            offset=offset,
            max_clock_step_ms=self.settings.max_clock_step_ms,
        )
        self._log_times[partition] = clock
        if after is not None:
            self._states[op] = after
        if decision.changed:
            self._snapshots[op] = snapshot_of(decision, partition, offset)
        return decision

    @property
    def log(self) -> list[LoggedRequest]:
        """Every record appended so far, in append order."""
        with self._appended:
            return list(self._log)

    def decisions(self, operation_id: str | None = None) -> Iterator[Decision]:
        """The decisions in log order, of one operation or of all."""
        for logged in self.log:
            decision = logged.outcome
            if operation_id is None or decision.operation_id == operation_id:
                yield decision

    def wait_for(self, condition: Callable[[InMemoryLedger], bool], timeout_s: float) -> None:
        """Block until ``condition(self)`` holds after an append (bounded; raises on timeout)."""
        with self._appended:
            if not self._appended.wait_for(lambda: condition(self), timeout_s):
                raise TimeoutError(f"the in-memory log did not get there within {timeout_s}s")

    # --- time and state --------------------------------------------------------------

    def advance(self, seconds: float) -> None:
        """Move log time forward by ``seconds``: leases lapse, results expire, timers fire."""
        self._clock.advance(seconds)

    def sweep(self) -> int:
        """Write a retention sweep for every completed result past expiry, as the projector
        does on a timer; return how many were written."""
        now = self._clock.now_ms()
        with self._appended:
            due = [
                s
                for s in self._states.values()
                if s.status is Status.COMPLETED and (s.expires_at_ms or now + 1) <= now
            ]
        for state in due:
            request = Request(
                str(uuid.uuid4()),
                state.operation_id,
                state.channel_id,
                state.key_name,
                None,
                Sweep(),
            )
            self.call(request)
        return len(due)

    def state(self, operation_id: str) -> ExecutionState | None:
        """The operation's state as the fold left it (None while absent)."""
        with self._appended:
            return self._states.get(operation_id)

    def execution(self, operation_id: str) -> Execution | None:
        """The operation as the fold left it, read without a request (None if absent)."""
        with self._appended:
            state = self._states.get(operation_id)
        return None if state is None else Execution.of(state)

    # --- clients ---------------------------------------------------------------------

    def sync_client(self, **options: Any) -> SyncLedgerClient:
        """A :class:`SyncLedgerClient` on this ledger (``worker_id=``, ``timeouts=``)."""
        return SyncLedgerClient(self.settings, transport=self, **options)

    def client(self, **options: Any) -> LedgerClient:
        """A :class:`LedgerClient` on this ledger (``worker_id=``, ``timeouts=``)."""
        return LedgerClient(self.settings, transport=self, **options)
