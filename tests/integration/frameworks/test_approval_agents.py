"""Per framework: the agent pauses on an approval-required refund, is SIGKILLed, and resumes.

A real broker and a real ``oncelog serve``. The worker process runs the agent (a scripted
model, no network) until the refund over the limit pauses in the framework's own way
(``oncelog.integrations.approvals``), and is SIGKILLed there. A person decides in Chromium
on the approvals page, with an approver's token (the intent lists the approver's key, so
only a signed decision counts); a new process resumes the agent: approved, the refund runs once with
exactly the approved params; denied, the agent's answer carries the reason and nothing ran.
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

from oncelog.settings import Settings
from oncelog.waiting import poll_until
from tests.integration.approval_browser import Person
from tests.integration.frameworks.approval_agents import AGENTS, ORDER_ID
from tests.integration.frameworks.approval_served import (
    REASON,
    ROOT,
    WORKER_TIMEOUT_S,
    decide,
    effects_of,
    person,
    served,
    worker_env,
)
from tests.integration.test_timeline_browser import chromium

pytestmark = pytest.mark.kafka
__all__ = ["chromium", "person", "served"]  # the fixtures

AMOUNT = 25_000
APPROVED = {"order_id": ORDER_ID, "amount_cents": AMOUNT}


def _args(
    framework: str, mode: str, channel: str, state: Path, effects: Path, amount: int = AMOUNT
) -> list[str]:
    return [sys.executable, "-m", "tests.integration.frameworks.approval_agent_worker",
            framework, mode, channel, str(amount), str(state), str(effects)]  # fmt: skip


def paused_and_killed(
    settings: Settings, framework: str, channel: str, state: Path, effects: Path
) -> dict[str, Any]:
    """Run the agent in a worker until it pauses on the approval, then SIGKILL it: the
    pending approval the framework was handed."""
    worker = subprocess.Popen(
        _args(framework, "pause", channel, state, effects), cwd=ROOT, env=worker_env(settings),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    marker = state.with_suffix(".pending")
    try:

        def paused() -> bool:
            assert worker.poll() is None, worker.communicate()
            return marker.exists() and bool(marker.read_text())

        assert poll_until(time.monotonic() + WORKER_TIMEOUT_S, paused, pause_s=0.2)
    finally:
        worker.kill()
        worker.wait(timeout=30)
    assert worker.returncode == -9
    pending: dict[str, Any] = json.loads(marker.read_text())
    return pending


def resumed(
    settings: Settings, framework: str, channel: str, state: Path, effects: Path, **how: Any
) -> Any:
    """A new worker process resumes the agent (``mode="rerun"``: runs it anew): what it
    printed."""
    mode, amount = how.get("mode", "resume"), how.get("amount", AMOUNT)
    done = subprocess.run(
        _args(framework, mode, channel, state, effects, amount), cwd=ROOT,
        env=worker_env(settings),
        capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("framework", sorted(AGENTS))
def test_approved_the_resumed_agent_refunds_once(
    served: Settings, person: Person, tmp_path: Path, framework: str
) -> None:
    channel, state, effects = f"run-{uuid.uuid4().hex[:8]}", tmp_path / "state", tmp_path / "fx"
    pending = paused_and_killed(served, framework, channel, state, effects)
    assert pending["approval_pending"] is True
    assert pending["params"] == APPROVED
    assert effects_of(effects) == []
    decide(person, channel, pending["key_name"], approve=True)
    answer = resumed(served, framework, channel, state, effects)
    assert "25000" in answer["answer"], answer
    assert effects_of(effects) == [APPROVED]
    # The agent run anew asks another amount of the approved call: a conflict, no effect.
    changed = resumed(served, framework, channel, state, effects, mode="rerun", amount=99_000)
    assert changed["code"] == "conflict", changed
    assert effects_of(effects) == [APPROVED]


@pytest.mark.parametrize("framework", sorted(AGENTS))
def test_denied_the_resumed_agent_is_told_the_reason(
    served: Settings, person: Person, tmp_path: Path, framework: str
) -> None:
    channel, state, effects = f"run-{uuid.uuid4().hex[:8]}", tmp_path / "state", tmp_path / "fx"
    pending = paused_and_killed(served, framework, channel, state, effects)
    decide(person, channel, pending["key_name"], approve=False)
    answer = resumed(served, framework, channel, state, effects)
    assert REASON in json.dumps(answer), answer
    assert effects_of(effects) == []
