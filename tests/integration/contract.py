"""The ledger a contract test runs against: Kafka plus a projector, or the in-memory ledger.

The scenario and executor suites are contracts: the same tests pass on both. What differs is
behind :class:`Backend`: how time passes (real time on Kafka, the manual clock in memory) and
where the published decisions are read back.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from oncelog.identity.partitioner import partition_for
from oncelog.kafka.reader import topic_ends
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.producer.tool_model import ToolContext
from oncelog.projector.service import Projector
from oncelog.schemas.models import Decision, ExecutionState, Kind, Status
from oncelog.settings import Settings
from oncelog.testing import InMemoryLedger
from tests.integration.helpers import (
    decisions_on,
    kafka,
    snapshots_of,
    wait_for_projection,
    wait_until_log_time_passes,
)

BEAT_TIMEOUT_S = 10.0  # bounds the wait for one heartbeat's decision, in real time
SWEEP_WAIT_S = 60.0  # a sweep interval, a commit and a fold, on a loaded machine


@dataclass
class Backend:
    """One ledger under contract: clients on it, its time, its published decisions."""

    name: str
    settings: Settings
    timeouts: Timeouts
    memory: InMemoryLedger | None = None
    projector: Projector | None = None  # on Kafka: the projector thread's
    made: list[SyncLedgerClient | LedgerClient] = field(default_factory=list)
    loops: list[asyncio.AbstractEventLoop] = field(default_factory=list)

    def sync_client(self, worker_id: str | None = None) -> SyncLedgerClient:
        """An open blocking client (closed after the test)."""
        client = SyncLedgerClient(
            self.settings, worker_id=worker_id, timeouts=self.timeouts, transport=self.memory
        )
        client.open()
        self.made.append(client)
        return client

    def async_client(self, worker_id: str | None = None) -> LedgerClient:
        """An open async client (closed after the test)."""
        client = LedgerClient(
            self.settings, worker_id=worker_id, timeouts=self.timeouts, transport=self.memory
        )
        client.open()
        self.made.append(client)
        return client

    def close(self) -> None:
        """Close every client made here."""
        for client in self.made:
            client.close()
        for loop in self.loops:
            loop.close()

    # --- time ---------------------------------------------------------------------------

    def now_s(self) -> float:
        """Log time as the clients see it, in seconds."""
        if self.memory is None:
            return time.time()
        return self.memory.clock.now_ms() / 1000

    def pass_log_time(self, log_ms: int) -> None:
        """Let log time pass ``log_ms`` (a deadline, an expiry), with nobody heartbeating."""
        if self.memory is None:
            wait_until_log_time_passes(log_ms)
        else:
            self.memory.advance(max(0, log_ms + 1 - self.memory.clock.now_ms()) / 1000)

    def work(self, ctx: ToolContext, seconds: float) -> bool:
        """A tool working ``seconds`` of log time under its heartbeat; True if stopped early.

        In memory, time moves one heartbeat interval at a time, and each step waits
        (bounded) for the heartbeat it made due, so the lease is kept as on Kafka.
        """
        if self.memory is None:
            return ctx.wait(seconds)
        ledger, op = self.memory, ctx.execution.id
        state = ledger.state(op)
        assert state is not None
        interval = state.lease_ms / 3000
        until = self.now_s() + seconds
        while not ctx.stopped and self.now_s() < until:
            if not _heartbeat_armed(ledger, ctx):
                break  # stopped meanwhile: the heartbeat ended
            beats = _heartbeats(ledger, op)
            step = min(interval, until - self.now_s())
            ledger.advance(step)
            if step == interval:  # a heartbeat fell due: let it answer before moving on
                ledger.wait_for(_more_heartbeats(op, beats), BEAT_TIMEOUT_S)
        return ctx.stopped

    # --- what was published ---------------------------------------------------------------

    def _settle(self, channel_id: str) -> None:
        """On Kafka, wait (bounded) until every request sent so far on the channel's
        partition is committed: its decision and snapshot are then published and
        flushed. A client's answer comes before that; a read right after it may miss
        the snapshot still in the producer's queue."""
        assert self.projector is not None
        p = partition_for(channel_id, self.settings.partitions)
        end = topic_ends(kafka(self.settings), self.settings.requests_topic)[p]
        if end > 0:
            wait_for_projection(self.projector, (p, end - 1), self.timeouts.total_s)

    def outcomes(self, channel_id: str, operation_id: str) -> list[str]:
        """The outcome of every state version of one operation, in log order."""
        if self.memory is None:
            self._settle(channel_id)
            snaps = snapshots_of(self.settings, channel_id, operation_id)
            return [s.outcome.value for s in snaps]
        return [d.outcome.value for d in self.memory.decisions(operation_id) if d.changed]

    def decisions(self, channel_id: str) -> list[Decision]:
        """Every decision on the channel's partition, in log order."""
        if self.memory is None:
            self._settle(channel_id)
            return decisions_on(self.settings, partition_for(channel_id, self.settings.partitions))
        p = partition_for(channel_id, self.memory.partitions)
        return [r.outcome for r in self.memory.log if r.partition == p]

    def swept_state(self, channel_id: str, operation_id: str) -> ExecutionState:
        """The state after the projector's retention sweep has judged the operation."""
        if self.memory is not None:
            self.memory.sweep()
            state = self.memory.state(operation_id)
            assert state is not None
            return state
        snaps = snapshots_of(self.settings, channel_id, operation_id)
        # The projector sweeps on a timer, from what it committed: wait out log time, then
        # re-read, bounded by time (a count of re-reads ran out on a loaded CI machine).
        give_up = time.monotonic() + SWEEP_WAIT_S
        while snaps[-1].state.status is not Status.EXPIRED and time.monotonic() < give_up:
            wait_until_log_time_passes(int(snaps[-1].log_time_ms) + 100)
            snaps = snapshots_of(self.settings, channel_id, operation_id)
        return snaps[-1].state


def _heartbeat_armed(ledger: InMemoryLedger, ctx: ToolContext) -> bool:
    """Wait (bounded) until the heartbeat's timer is armed; False if the tool stops first."""
    give_up = time.monotonic() + BEAT_TIMEOUT_S
    while not ctx.stopped:
        try:
            ledger.clock.wait_for_timers(1, 0.05)
            return True
        except TimeoutError:
            if time.monotonic() > give_up:
                raise
    return False


def _heartbeats(ledger: InMemoryLedger, operation_id: str) -> int:
    return sum(1 for d in ledger.decisions(operation_id) if d.kind is Kind.HEARTBEAT)


def _more_heartbeats(operation_id: str, seen: int) -> Callable[[InMemoryLedger], bool]:
    return lambda ledger: _heartbeats(ledger, operation_id) > seen


class AsyncFacade:
    """Runs the sync scenario suite through the async client (one loop per call)."""

    def __init__(self, client: LedgerClient, runner: Callable[[Awaitable[Any]], Any]) -> None:
        self._client = client
        self._run = runner

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._client, name)
        if not name.endswith("_execution"):
            return method
        return lambda *a, **k: self._run(method(*a, **k))


def any_client(backend: Backend, kind: str, worker_id: str | None = None) -> Any:
    """A blocking client, or the async one behind a blocking facade (for the scenario suite)."""
    if kind == "sync":
        return backend.sync_client(worker_id)
    loop = asyncio.new_event_loop()
    backend.loops.append(loop)
    return AsyncFacade(backend.async_client(worker_id), loop.run_until_complete)
