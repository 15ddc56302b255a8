"""A run like the demo's, written with real clients, for the timeline page to show.

One channel, eight steps of the sample workflow and two more, pure and external:
a reclaim after a worker died mid-step, heartbeats, a replay of a completion whose
answer was lost, a claim while another worker held the step, a fenced straggler
(a paused worker completing after its lease was taken: a suspected duplicate
effect), a result that expired, and a cancel followed by a failure. Used by the
browser test and by ``make screenshot`` (``docs/img/timeline.png``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from drills.sample.workflow import STEPS
from oncelog.errors import StaleClaimError
from oncelog.kafka.reader import topic_ends
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.source import QuerySource
from oncelog.settings import Settings

CHANNEL: Final = "run-07"
SHORT_LEASE_S: Final = 1.0  # the shortest lease the ledger accepts: lapses quickly
SHORT_RETENTION_S: Final = 1.0
_FOLD_TIMEOUT_S: Final = 60.0

MakeClient = Callable[[str], SyncLedgerClient]


@dataclass(frozen=True)
class Story:
    """What the story wrote: the channel and which step shows which fault."""

    channel: str
    reclaimed_step: int
    replayed_step: int
    fenced_step: int
    expired_step: int
    cancelled_step: int


def wait_past(log_ms: int) -> None:
    """Let wall time pass a lease deadline or a retention (both in broker time).

    A wait for time itself to pass, which is what a lease is about; no other
    component is being synchronised with.
    """
    delay = (log_ms - time.time() * 1000) / 1000 + 0.05
    if delay > 0:
        time.sleep(delay)


# The sample workflow's six steps, then two more for the expiry and the cancel.
TOOLS: Final = (*STEPS, ("archive", "pure"), ("refund", "external"))


def _params(step: int) -> dict[str, Any]:
    return {"run": CHANNEL, "step": step, "amount_cents": 100 * step}


class _Run:
    """Two workers and an operator on one channel."""

    def __init__(self, make_client: MakeClient) -> None:
        self.a = make_client("worker-1")
        self.b = make_client("worker-2")
        self.operator = make_client("operator")

    def claim(
        self, who: SyncLedgerClient, step: int, *, lease_s: float = 30, retention_s: float = 600
    ) -> Any:
        tool, effect = TOOLS[step - 1]
        return who.claim_execution(
            CHANNEL, step=step, tool_name=tool, params=_params(step), lease_seconds=lease_s,
            retention_seconds=retention_s, effect=effect,
        )  # fmt: skip

    def plain(self, step: int) -> None:
        claim = self.claim(self.a, step)
        self.a.complete_execution(claim.execution, claim.claim_token, {"step": step, "ok": True})

    def reclaim_after_crash(self, step: int) -> None:
        """worker-1 charges, then dies; worker-2 reclaims once the lease lapsed."""
        first = self.claim(self.a, step, lease_s=SHORT_LEASE_S)
        wait_past(first.execution.lease_deadline_ms)
        second = self.claim(self.b, step)
        self.b.heartbeat_execution(second.execution, second.claim_token, 30)
        # worker-2 asked the provider first: the charge was there (reconciled: found).
        self.b.complete_execution(
            second.execution, second.claim_token, {"charge": "ch_4471"}, reconciled="found"
        )

    def heartbeats(self, step: int) -> None:
        claim = self.claim(self.a, step)
        for _ in range(2):
            self.a.heartbeat_execution(claim.execution, claim.claim_token, 30)
        self.a.complete_execution(claim.execution, claim.claim_token, {"summary": "3 items"})

    def replay_after_lost_answer(self, step: int) -> None:
        """The completion lands, its answer is lost: the retry gets the recorded result."""
        claim = self.claim(self.a, step)
        self.a.complete_execution(claim.execution, claim.claim_token, {"email": "msg-88"})
        replay = self.claim(self.a, step)
        assert replay.status == "replayed", replay.status

    def claim_while_held(self, step: int) -> None:
        claim = self.claim(self.a, step)
        busy = self.claim(self.b, step)
        assert busy.status == "in_progress", busy.status
        self.a.complete_execution(claim.execution, claim.claim_token, {"label": "refund"})

    def fenced_straggler(self, step: int) -> None:
        """worker-1 pauses past its lease; worker-2 takes over; worker-1's late answer is fenced."""
        zombie = self.claim(self.a, step, lease_s=SHORT_LEASE_S)
        wait_past(zombie.execution.lease_deadline_ms)
        rescue = self.claim(self.b, step)
        self.b.complete_execution(rescue.execution, rescue.claim_token, {"notified": 2})
        try:
            self.a.complete_execution(zombie.execution, zombie.claim_token, {"notified": 1})
        except StaleClaimError:
            return
        raise AssertionError("the straggler's completion was not fenced")

    def expiring(self, step: int) -> int:
        """A result kept for a second: the projector's sweep expires it."""
        claim = self.claim(self.a, step, retention_s=SHORT_RETENTION_S)
        done = self.a.complete_execution(claim.execution, claim.claim_token, {"archived": True})
        assert done.expires_at_ms is not None
        return int(done.expires_at_ms)

    def cancelled(self, step: int) -> None:
        """An operator cancels; the holder learns it on its heartbeat and gives up."""
        claim = self.claim(self.a, step)
        self.operator.cancel_execution(claim.execution.id, "customer withdrew",
                                       channel_id=CHANNEL, key_name=f"step-{step}")  # fmt: skip
        beat = self.a.heartbeat_execution(claim.execution, claim.claim_token)
        assert beat.cancel_requested
        self.a.fail_execution(claim.execution, claim.claim_token, "cancelled by operator")


def play(make_client: MakeClient) -> Story:
    """Write the whole run; returns once every request was answered (not yet folded)."""
    run = _Run(make_client)
    run.plain(1)
    run.reclaim_after_crash(2)
    run.heartbeats(3)
    run.replay_after_lost_answer(4)
    run.claim_while_held(5)
    run.fenced_straggler(6)
    expires_at = run.expiring(7)
    run.cancelled(8)
    wait_past(expires_at)
    return Story(CHANNEL, reclaimed_step=2, replayed_step=4, fenced_step=6, expired_step=7,
                 cancelled_step=8)  # fmt: skip


def wait_shown(settings: Settings, source: QuerySource, story: Story) -> None:
    """Wait (bounded) until the projection holds every request, the expiry sweep included."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    deadline = time.monotonic() + _FOLD_TIMEOUT_S
    key = f"step-{story.expired_step}"
    while time.monotonic() < deadline:
        wait_until_folded(source, topic_ends(kafka, settings.requests_topic), _FOLD_TIMEOUT_S)
        rows = source.timeline(story.channel, 1000)
        if any(r.key_name == key and r.outcome == "expired" for r in rows):
            return
        time.sleep(0.2)  # the sweep is written about once a second; poll, bounded above
    raise AssertionError(f"{story.channel}/{key} did not expire within {_FOLD_TIMEOUT_S} s")
