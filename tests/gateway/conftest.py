"""The write API over a real broker: a projector thread, a transport, the app in process."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from oncelog.gateway import WriteApi
from oncelog.gateway.idempotency import KeyMemory
from oncelog.producer.dispatch import Dispatcher
from oncelog.query.http import create_app
from oncelog.settings import Settings
from tests.integration.conftest import FAST, RunningProjector, projector, topics

__all__ = ["WriteClient", "open_reads_api", "projector", "topics", "write_api"]

WRITE_TOKEN = "write-token-of-the-tests"
READ_TOKEN = "read-token-of-the-tests"


@dataclass
class WriteClient:
    """An HTTP client of the app (write token by default), and the app's key memory."""

    http: TestClient
    keys: KeyMemory
    settings: Settings


@contextmanager
def _write_client(
    topics: Settings, projector: RunningProjector, read_token: str | None
) -> Iterator[WriteClient]:
    assert topics.bootstrap_servers is not None
    transport = Dispatcher(topics, topics.bootstrap_servers, FAST)
    transport.start()
    writes = WriteApi(transport, SecretStr(WRITE_TOKEN), KeyMemory())
    token = None if read_token is None else SecretStr(read_token)
    app = create_app(projector.store.cursor, token=token, writes=writes)
    headers = {"Authorization": f"Bearer {WRITE_TOKEN}"}
    try:
        with TestClient(app, headers=headers) as http:
            yield WriteClient(http, writes.keys, topics)
    finally:
        transport.close()


@pytest.fixture
def write_api(topics: Settings, projector: RunningProjector) -> Iterator[WriteClient]:
    """The read and the write API in one app, each with its own token."""
    with _write_client(topics, projector, READ_TOKEN) as client:
        yield client


@pytest.fixture
def open_reads_api(topics: Settings, projector: RunningProjector) -> Iterator[WriteClient]:
    """The same app with its read routes open (loopback-only, as without a read token)."""
    with _write_client(topics, projector, None) as client:
        yield client
