"""What the approval tests share: a served ledger, the approver's client, worker processes."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from oncelog.producer.results import Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from tests.integration.conftest import FAST
from tests.served import serving

ROOT = Path(__file__).resolve().parents[3]
WORKER_TIMEOUT_S = 120.0  # a framework's imports and broker round trips, on a loaded machine
REASON = "over the customer's balance"


@pytest.fixture(scope="module")
def served(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A real ``oncelog serve`` (its projector folds the requests) on topics of its own."""
    with serving(bootstrap, tmp_path_factory.mktemp("approvals")) as running:
        yield running.settings


@pytest.fixture
def desk(served: Settings) -> Iterator[SyncLedgerClient]:
    """The approver's client."""
    with SyncLedgerClient(served, worker_id="desk", timeouts=FAST) as client:
        yield client


def worker_env(settings: Settings) -> dict[str, str]:
    """A worker process's environment: the ledger's settings only."""
    assert settings.bootstrap_servers is not None
    return {
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_PARTITIONS": str(settings.partitions),
        "ONCELOG_HTTP_PORT": str(settings.http_port),  # the serve a LangGraph saver reads
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }


def effects_of(effects: Path) -> list[dict[str, Any]]:
    """The refunds that ran, with their params."""
    if not effects.exists():
        return []
    return [json.loads(line) for line in effects.read_text().splitlines()]


def decide(
    desk: SyncLedgerClient, channel: str, key: str, request_hash: str, approve: bool
) -> Execution:
    """A person's decision, as ``ann``."""
    return desk.decide_approval(
        channel, key, approver="ann", request_hash=request_hash, approve=approve,
        reason="" if approve else REASON,
    )  # fmt: skip
