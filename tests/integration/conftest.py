"""A running ledger per test: topics, an in-process projector thread, clients."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.service import Projector
from oncelog.projector.store import Store
from oncelog.settings import Settings
from oncelog.testing import InMemoryLedger
from oncelog.topics import admin_client, create_topics, ledger_topics
from tests.integration.contract import AsyncFacade, Backend, any_client


@dataclass
class RunningProjector:
    """A projector folding in a background thread."""

    projector: Projector
    store: Store
    stop: threading.Event
    thread: threading.Thread

    def halt(self) -> None:
        """Stop the thread and release the consumer (the store stays open)."""
        self.stop.set()
        self.thread.join(timeout=30)
        self.projector.close()


def start_projector(settings: Settings, store: Store, **kwargs: Any) -> RunningProjector:
    """Start a projector thread over ``store``; it joins the group before returning."""
    assert settings.bootstrap_servers is not None
    projector = Projector(settings, settings.bootstrap_servers, store, **kwargs)
    projector.start()
    stop = threading.Event()
    thread = threading.Thread(target=projector.run, args=(stop,), daemon=True)
    thread.start()
    return RunningProjector(projector, store, stop, thread)


@pytest.fixture
def topics(settings: Settings) -> Settings:
    """The ledger's topics, created for this test's prefix."""
    assert settings.bootstrap_servers is not None
    create_topics(admin_client(settings, settings.bootstrap_servers), ledger_topics(settings))
    return settings


@pytest.fixture
def projector(topics: Settings) -> Iterator[RunningProjector]:
    """A projector over a fresh DuckDB file, stopped after the test."""
    store = Store(topics.db_path)
    running = start_projector(topics, store, sweep_interval_s=0.2)
    try:
        yield running
    finally:
        running.halt()
        store.close()


FAST = Timeouts(total_s=30.0, resend_after_s=5.0)
PATIENT = Timeouts(total_s=120.0, resend_after_s=5.0)


@pytest.fixture(params=["memory", "kafka"])
def ledger_backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """The ledger of a contract test: in memory, or Kafka with a projector thread.

    The Kafka fixtures are asked for only by the ``kafka`` param (the ``kafka`` marker is
    added to those tests by ``tests/conftest.py``), so the memory half runs without a broker.
    """
    if request.param == "memory":
        ledger = InMemoryLedger(partitions=3)
        backend = Backend("memory", ledger.settings, FAST, memory=ledger)
    else:
        running: RunningProjector = request.getfixturevalue("projector")
        topics = request.getfixturevalue("topics")
        backend = Backend("kafka", topics, FAST, projector=running.projector)
    try:
        yield backend
    finally:
        backend.close()


@pytest.fixture(params=["sync", "async"])
def ledger_client(ledger_backend: Backend, request: pytest.FixtureRequest) -> Any:
    """The scenario suite's client: blocking, or async behind a blocking facade."""
    return any_client(ledger_backend, request.param)


@pytest.fixture
def make_worker(ledger_backend: Backend) -> Callable[..., SyncLedgerClient]:
    """Other workers (blocking clients) on the contract's ledger."""
    return ledger_backend.sync_client


@pytest.fixture(params=["sync", "async"])
def client(
    request: pytest.FixtureRequest, projector: RunningProjector, topics: Settings
) -> Iterator[Any]:
    """The same scenarios through SyncLedgerClient and LedgerClient."""
    if request.param == "sync":
        with SyncLedgerClient(topics, timeouts=FAST) as sync:
            yield sync
        return
    import asyncio  # noqa: PLC0415

    loop = asyncio.new_event_loop()
    client = LedgerClient(topics, timeouts=FAST)
    client.open()
    try:
        yield AsyncFacade(client, loop.run_until_complete)
    finally:
        client.close()
        loop.close()


@pytest.fixture
def make_client(topics: Settings) -> Iterator[Callable[..., SyncLedgerClient]]:
    """Extra sync clients (other workers), closed after the test."""
    made: list[SyncLedgerClient] = []

    def make(worker_id: str | None = None) -> SyncLedgerClient:
        client = SyncLedgerClient(topics, worker_id=worker_id, timeouts=FAST)
        client.open()
        made.append(client)
        return client

    yield make
    for c in made:
        c.close()
