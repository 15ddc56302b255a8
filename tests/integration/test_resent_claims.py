"""Re-sent claims on a real broker, with ``serve`` stopped and started inside each test.

- Issue 42's phantom grant: B's claim copy 1, A's release (or retryable failure), B's copy 2,
  all appended while no projector folds. B's call reads copy 1's answer; the ledger must
  agree with it (docs/spec.md §4: a copy is answered as its first copy was).
- Issue 40's abandoned claim: a claim call that gave up (``no_projector``, a cancelled task)
  must not block the same client's retry once ``serve`` is back.

No sleeps: each step waits on a log position (the requests partition's end) or an answer.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest

from oncelog.errors import NoProjectorError
from oncelog.identity.partitioner import partition_for
from oncelog.kafka.reader import topic_ends
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.results import Claim, ClaimStatus
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector, start_projector
from tests.integration.helpers import kafka

CHANNEL, KEY = "run-resent", "charge:1"
PARAMS = {"order_id": "1"}
PATIENT = Timeouts(total_s=60.0, resend_after_s=30.0)  # one copy per call, unless told
QUICK = Timeouts(total_s=2.0, resend_after_s=1.0)


class Serve:
    """A projector over one DuckDB file, stopped and started by the test."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.store = Store(settings.db_path)
        self.running: RunningProjector | None = None

    def start(self) -> None:
        self.running = start_projector(self.settings, self.store, sweep_interval_s=3600)

    def stop(self) -> None:
        if self.running is not None:
            self.running.halt()
            self.running = None

    def close(self) -> None:
        self.stop()
        self.store.close()


@pytest.fixture
def serve(topics: Settings) -> Iterator[Serve]:
    made = Serve(topics)
    try:
        yield made
    finally:
        made.close()


def _requests_end(settings: Settings) -> int:
    partition = partition_for(CHANNEL, settings.partitions)
    return topic_ends(kafka(settings), settings.requests_topic)[partition]


def _wait_for_end(settings: Settings, at_least: int, timeout_s: float = 30) -> None:
    """Wait (bounded) until the channel's requests partition holds ``at_least`` records."""
    give_up = time.monotonic() + timeout_s
    while _requests_end(settings) < at_least:
        assert time.monotonic() < give_up, f"the requests partition never reached {at_least}"


def _claim(client: SyncLedgerClient) -> Claim:
    return client.claim_execution(CHANNEL, KEY, tool_name="charge", params=PARAMS)


@pytest.mark.parametrize("letting_go", ["release", "fail_retryable"])
def test_a_claim_answered_in_progress_is_never_granted_by_its_copy(
    topics: Settings, serve: Serve, letting_go: str
) -> None:
    serve.start()
    with (
        SyncLedgerClient(topics, worker_id="wA", timeouts=PATIENT) as a,
        SyncLedgerClient(topics, worker_id="wB", timeouts=PATIENT) as b,
    ):
        held = _claim(a)
        assert held.status is ClaimStatus.CLAIMED
        serve.stop()
        b_claim = b.requests.claim_execution(CHANNEL, KEY, tool_name="charge", params=PARAMS)
        b.transport.send_acknowledged(b_claim.request, 10)  # copy 1
        ex, token = held.execution, held.claim_token
        if letting_go == "release":
            letting = a.requests.release_execution(ex, token)
        else:
            letting = a.requests.fail_execution(ex, token, "busy", retryable=True)
        a.transport.send_acknowledged(letting.request, 10)
        end = _requests_end(topics)
        with ThreadPoolExecutor(1) as pool:
            # B's call: sends copy 2 at once and reads the first answer for its request id.
            answer = pool.submit(lambda: b_claim.interpret(b.transport.call(b_claim.request)))
            _wait_for_end(topics, end + 1)  # copy 2 is on the log, after the release
            serve.start()
            b_answer = answer.result(timeout=60)
        state = a.get_execution(ex)
    assert state is not None
    b_holds = state.status == "claimed" and state.worker_id == "wB"
    # What B was told and what the ledger did agree: B holds iff B was told it does.
    assert b_answer.owned == b_holds, (b_answer.status, state.epoch, state.worker_id)
    assert b_answer.status is ClaimStatus.IN_PROGRESS
    assert state.epoch == 1  # the copy granted nothing


def test_a_claim_abandoned_with_no_projector_does_not_block_the_retry(
    topics: Settings, serve: Serve
) -> None:
    with SyncLedgerClient(topics, worker_id="wB", timeouts=QUICK) as b:
        with pytest.raises(NoProjectorError) as info:
            _claim(b)
        assert "re-sends it first and releases any grant it won" in info.value.message
        serve.start()  # folds the abandoned claim: a grant to the token nobody heard of
        dispatcher = b.transport
        assert isinstance(dispatcher, Dispatcher)
        dispatcher.timeouts = PATIENT  # a patient retry, on the same client
        retry = _claim(b)
    assert retry.status is ClaimStatus.RECLAIMED, retry.status  # not in_progress by itself
    assert retry.execution.epoch == 2
    assert retry.previous is not None
    assert retry.previous.outcome_unknown is False


async def test_a_claim_cancelled_while_waiting_does_not_block_the_retry(
    topics: Settings, serve: Serve
) -> None:
    async with LedgerClient(topics, worker_id="wB", timeouts=PATIENT) as b:
        end = _requests_end(topics)
        claiming = asyncio.ensure_future(
            b.claim_execution(CHANNEL, KEY, tool_name="charge", params=PARAMS)
        )
        await asyncio.to_thread(_wait_for_end, topics, end + 1)  # the claim is on the log
        claiming.cancel()  # Ctrl-C, or a task's timeout, before any answer
        with pytest.raises(asyncio.CancelledError):
            await claiming
        await asyncio.to_thread(serve.start)
        retry = await b.claim_execution(CHANNEL, KEY, tool_name="charge", params=PARAMS)
    assert retry.status is ClaimStatus.RECLAIMED, retry.status
    assert retry.previous is not None
    assert retry.previous.outcome_unknown is False
