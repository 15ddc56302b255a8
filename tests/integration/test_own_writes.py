"""A client reads its own writes on the executions topic: a read of a channel waits for
the snapshots of the states its calls changed, which the projector publishes beside the
decisions, not before them."""

from __future__ import annotations

import asyncio
import dataclasses
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any

import pytest

from oncelog.producer.client import LedgerClient
from oncelog.producer.results import Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.batch import Folded
from oncelog.projector.publisher import Publisher
from oncelog.settings import Settings
from tests.integration.conftest import FAST, RunningProjector

pytestmark = pytest.mark.kafka

#: Long enough for a read that does not wait to return (it takes milliseconds).
STILL_WAITING_S = 1.0


class HeldSnapshots:
    """The projector's publisher, with the snapshots held back while ``holding`` is set:
    its decisions reach the clients first, as they may when the two records travel apart."""

    def __init__(self, publisher: Publisher) -> None:
        self._publisher = publisher
        self._publish = publisher.publish
        self._lock = threading.Lock()
        self.holding = threading.Event()
        self.held: list[Any] = []

    def publish(self, out: Folded, traces: Any = None) -> None:
        with self._lock:
            if self.holding.is_set():
                self.held.extend(out.snapshots)
                out = dataclasses.replace(out, snapshots=[])
            self._publish(out, traces)

    def release(self) -> None:
        with self._lock:
            self.holding.clear()
            self._publish(Folded(snapshots=self.held))
            self._publisher.flush()


@pytest.fixture
def held(projector: RunningProjector, monkeypatch: pytest.MonkeyPatch) -> HeldSnapshots:
    publisher = projector.projector._publisher
    holder = HeldSnapshots(publisher)
    monkeypatch.setattr(publisher, "publish", holder.publish)
    return holder


def _fork_held(client: Any, held: HeldSnapshots) -> None:
    """Complete a step of ``order-1`` and fork it into ``order-1~b`` (a blocking client);
    the fork's decisions come back, its snapshots are held."""
    claim = client.claim_execution("order-1", "charge", tool_name="charge", params={"a": 1})
    client.complete_execution(claim.execution, claim.claim_token, {"id": "ch_1"})
    held.holding.set()
    fork = client.fork_channel("order-1", "order-1~b")
    assert [e.key_name for e in fork.inherited] == ["charge"]
    assert held.held  # the fork's decisions came back; its snapshots are not out yet


def _the_fork(executions: list[Execution]) -> None:
    assert [e.key_name for e in executions] == ["charge"]
    assert executions[0].inherited is not None
    assert executions[0].inherited.from_channel == "order-1"


def test_a_blocking_client_reads_its_fork_once_the_snapshots_are_out(
    make_client: Callable[[], SyncLedgerClient], held: HeldSnapshots
) -> None:
    client = make_client()
    _fork_held(client, held)
    with ThreadPoolExecutor(1) as pool:
        read = pool.submit(client.channel_executions, "order-1~b")
        with pytest.raises(FutureTimeout):
            read.result(timeout=STILL_WAITING_S)  # it waits for its own writes
        held.release()
        _the_fork(read.result(timeout=60))


async def test_an_async_client_reads_its_fork_once_the_snapshots_are_out(
    topics: Settings, held: HeldSnapshots
) -> None:
    async with LedgerClient(topics, timeouts=FAST) as client:
        claim = await client.claim_execution(
            "order-1", "charge", tool_name="charge", params={"a": 1}
        )
        await client.complete_execution(claim.execution, claim.claim_token, {"id": "ch_1"})
        held.holding.set()
        await client.fork_channel("order-1", "order-1~b")
        assert held.held
        read = asyncio.ensure_future(client.channel_executions("order-1~b"))
        done, _ = await asyncio.wait([read], timeout=STILL_WAITING_S)
        assert not done  # it waits for its own writes
        await asyncio.to_thread(held.release)
        _the_fork(await asyncio.wait_for(read, 60))


def test_a_read_without_own_writes_does_not_wait(
    make_client: Callable[[], SyncLedgerClient], held: HeldSnapshots
) -> None:
    held.holding.set()
    assert make_client().channel_executions("nobody-wrote-here") == []
