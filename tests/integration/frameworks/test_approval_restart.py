"""A worker killed while it waits for an approval; after the decision a new process resumes.

A real broker and a real ``oncelog serve`` (its projector folds the requests). The worker
(``approval_worker.py``) records the intent and waits; the test SIGKILLs it, a person
decides in Chromium on the approvals page (signed as ann, whom the intent lists), and a new
worker process calls again without asking anew: approved, the
refund runs once with exactly the approved params; denied, it ends with the reason and no
effect; another amount after the approval is a conflict.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from oncelog.identity.ids import operation_id
from oncelog.producer.results import Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.integration.approval_browser import Person
from tests.integration.frameworks.approval_served import (
    ROOT,
    WORKER_TIMEOUT_S,
    decide,
    desk,
    effects_of,
    person,
    served,
    worker_env,
)
from tests.integration.frameworks.approval_worker import KEY
from tests.integration.test_timeline_browser import chromium

pytestmark = pytest.mark.kafka

AMOUNT = 25_000
APPROVED: dict[str, object] = {"order_id": "4471", "amount_cents": AMOUNT}
__all__ = ["chromium", "desk", "person", "served"]  # the fixtures


def _args(channel: str, amount: int, effects: Path, on_pending: str) -> list[str]:
    return [sys.executable, "-m", "tests.integration.frameworks.approval_worker",
            channel, str(amount), str(effects), on_pending]  # fmt: skip


def killed_while_waiting(
    settings: Settings, desk: SyncLedgerClient, channel: str, effects: Path
) -> Execution:
    """Start a worker that waits for the approval, see its intent, SIGKILL it: the intent."""
    worker = subprocess.Popen(
        _args(channel, AMOUNT, effects, "wait"), cwd=ROOT,
        env=worker_env(settings), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:

        def intent() -> Execution | None:
            assert worker.poll() is None, worker.communicate()
            seen = desk.get_execution(operation_id(channel, KEY), channel_id=channel, key_name=KEY)
            return seen if seen is not None and seen.status == "awaiting_approval" else None

        seen = poll_until(time.monotonic() + WORKER_TIMEOUT_S, intent, pause_s=0.2)
        assert seen is not None, "the worker recorded no intent"
    finally:
        worker.kill()
        worker.wait(timeout=30)
    assert worker.returncode == -9
    return seen


def resumed(settings: Settings, channel: str, effects: Path, amount: int) -> dict[str, Any]:
    """A new worker process calls again (pending at once would raise): what it printed."""
    done = subprocess.run(
        _args(channel, amount, effects, "raise"), cwd=ROOT, env=worker_env(settings),
        capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    answer: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return answer


def test_approved_after_the_kill_the_new_process_refunds_once(
    served: Settings, desk: SyncLedgerClient, person: Person, tmp_path: Path
) -> None:
    channel, effects = f"run-{uuid.uuid4().hex[:8]}", tmp_path / "effects.jsonl"
    intent = killed_while_waiting(served, desk, channel, effects)
    assert intent.params == APPROVED
    assert effects_of(effects) == []
    decide(person, channel, KEY, approve=True)
    answer = resumed(served, channel, effects, AMOUNT)
    assert answer == {"status": "claimed", "result": {"refunded": 25_000}}
    assert resumed(served, channel, effects, AMOUNT)["status"] == "replayed"
    assert effects_of(effects) == [APPROVED]
    changed = resumed(served, channel, effects, 30_000)
    assert changed["code"] == "conflict"
    assert effects_of(effects) == [APPROVED]


def test_denied_after_the_kill_the_new_process_ends_with_the_reason(
    served: Settings, desk: SyncLedgerClient, person: Person, tmp_path: Path
) -> None:
    channel, effects = f"run-{uuid.uuid4().hex[:8]}", tmp_path / "effects.jsonl"
    killed_while_waiting(served, desk, channel, effects)
    decide(person, channel, KEY, approve=False)
    answer = resumed(served, channel, effects, AMOUNT)
    assert answer["code"] == "approval_denied"
    assert "over the customer's balance" in answer["message"]
    assert effects_of(effects) == []


def test_undecided_the_new_process_is_told_it_is_pending(
    served: Settings, desk: SyncLedgerClient, tmp_path: Path
) -> None:
    channel, effects = f"run-{uuid.uuid4().hex[:8]}", tmp_path / "effects.jsonl"
    killed_while_waiting(served, desk, channel, effects)
    answer = resumed(served, channel, effects, AMOUNT)
    assert answer["code"] == "approval_pending"
    assert effects_of(effects) == []
