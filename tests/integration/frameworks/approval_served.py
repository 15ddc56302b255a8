"""What the approval tests share: a served ledger, the approver's client, worker processes."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from drills.demo.browser import headless_chromium
from oncelog.identity.approver_signature import new_private_key, public_key_of
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from tests.integration.approval_browser import Person
from tests.integration.conftest import FAST
from tests.served import serving

ROOT = Path(__file__).resolve().parents[3]
WORKER_TIMEOUT_S = 120.0  # a framework's imports and broker round trips, on a loaded machine
REASON = "over the customer's balance"


ANN_TOKEN = "ann-approvals-desk-token"
_ANN_KEY = new_private_key()
_ANN_PUBLIC = base64.b64encode(public_key_of(base64.b64decode(_ANN_KEY))).decode()


@pytest.fixture(scope="module")
def served(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A real ``oncelog serve`` (its projector folds the requests) on topics of its own, with
    one approver, ann: the workers list her public key, ``serve`` holds her token and key."""
    with serving(
        bootstrap, tmp_path_factory.mktemp("approvals"), approvers={"ann": _ANN_PUBLIC},
        approver_keys={"ann": _ANN_KEY}, http_approver_tokens={"ann": ANN_TOKEN},
    ) as running:  # fmt: skip
        unsigned: dict[str, object] = {"approver_keys": {}, "http_approver_tokens": {}}
        yield running.settings.model_copy(update=unsigned)


@pytest.fixture
def person(served: Settings, chromium: tuple[str, str]) -> Iterator[Person]:
    """ann at the approvals page of ``serve``, in Chromium."""
    with headless_chromium(chromium) as browser:
        yield Person(browser, f"http://127.0.0.1:{served.http_port}/ui/approvals", ANN_TOKEN)


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
        "ONCELOG_APPROVERS": json.dumps(settings.approvers),  # its intents list ann
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    }


def effects_of(effects: Path) -> list[dict[str, Any]]:
    """The refunds that ran, with their params."""
    if not effects.exists():
        return []
    return [json.loads(line) for line in effects.read_text().splitlines()]


def decide(person: Person, channel: str, key: str, approve: bool) -> None:
    """ann decides in the browser: approve, or deny with :data:`REASON`."""
    verb = "approve" if approve else "deny"
    banner = person.decide(channel, key, verb, reason="" if approve else REASON)
    assert banner.startswith("approved:" if approve else "denied:"), banner
    assert banner.endswith(" by ann"), banner
