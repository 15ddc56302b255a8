"""oncelog.testing: the in-memory ledger decides as the fold does, on a clock moved by hand."""

from __future__ import annotations

import asyncio
import threading

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oncelog.errors import CodecError
from oncelog.identity.partitioner import partition_for
from oncelog.referee.fold import fold
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Decision, ExecutionState, Outcome, Request, evolve
from oncelog.settings import Settings
from oncelog.testing import InMemoryLedger, ManualClock
from tests.budget import examples
from tests.projector.fold_factories import Op

T0 = 1_000_000
OP = Op(channel_id="run-1", key_name="charge:1")


def _request(kind: str, token: str) -> Request:
    if kind == "claim":
        return OP.claim(token, lease_ms=2_000)
    if kind == "heartbeat":
        return OP.heartbeat(token)
    if kind == "complete":
        return OP.complete(token)
    if kind == "fail":
        return OP.fail(token, retryable=True)
    if kind == "release":
        return OP.release(token)
    return OP.cancel() if kind == "cancel" else OP.get()


KINDS = ["claim", "heartbeat", "complete", "fail", "release", "cancel", "get"]
STEPS = st.lists(
    st.tuples(st.sampled_from(KINDS), st.sampled_from(["t1", "t2"]), st.integers(0, 3_000)),
    max_size=25,
)


@settings(max_examples=examples(300), deadline=None)
@given(STEPS)
def test_it_decides_exactly_as_the_fold(steps: list[tuple[str, str, int]]) -> None:
    """Through the codec, validation and the clock, the decisions are the fold's, byte for byte
    but for where the request sits in the log."""
    ledger = InMemoryLedger(clock=ManualClock(T0))
    state: ExecutionState | None = None
    for offset, (kind, token, elapsed_ms) in enumerate(steps):
        ledger.advance(elapsed_ms / 1000)
        request = _request(kind, token)
        answered = ledger.call(request)
        state, expected = fold(state, request, ledger.clock.now_ms())
        p = partition_for(OP.channel_id, ledger.partitions)
        assert answered == evolve(expected, source_partition=p, source_offset=offset)
    assert ledger.state(OP.operation_id) == state


def test_a_lease_lapses_when_the_clock_is_advanced_not_before() -> None:
    ledger = InMemoryLedger(clock=ManualClock(T0))
    assert ledger.call(OP.claim("t1", lease_ms=2_000)).outcome is Outcome.CLAIMED
    ledger.advance(1.999)
    assert ledger.call(OP.claim("t2", lease_ms=2_000)).outcome is Outcome.IN_PROGRESS
    ledger.advance(0.001)
    assert ledger.call(OP.claim("t2", lease_ms=2_000)).outcome is Outcome.RECLAIMED


def test_a_ledger_with_a_clock_step_bound_reclaims_only_past_it() -> None:
    """ONCELOG_MAX_CLOCK_STEP_MS reaches the fold (docs/spec.md §4, "Clock steps")."""
    bounded = Settings(topic_prefix="memory", partitions=3, max_clock_step_ms=5_000)
    ledger = InMemoryLedger(clock=ManualClock(T0), settings=bounded)
    assert ledger.call(OP.claim("t1", lease_ms=2_000)).outcome is Outcome.CLAIMED
    ledger.advance(6.999)
    assert ledger.call(OP.claim("t2", lease_ms=2_000)).outcome is Outcome.IN_PROGRESS
    ledger.advance(0.001)
    assert ledger.call(OP.claim("t3", lease_ms=2_000)).outcome is Outcome.RECLAIMED


def test_a_record_that_fails_validation_is_answered_invalid_request() -> None:
    ledger = InMemoryLedger()
    request = OP.claim("t1")
    wrong = (partition_for(OP.channel_id, ledger.partitions) + 1) % ledger.partitions
    logged = ledger.append(wrong, request.operation_id.encode(), encode_request(request))
    assert logged.outcome.outcome is Outcome.INVALID_REQUEST
    assert "partition" in (logged.outcome.error or "")
    assert ledger.state(OP.operation_id) is None


def test_a_record_that_does_not_decode_raises() -> None:
    with pytest.raises(CodecError):
        InMemoryLedger().append(0, b"op", b"not avro")


def test_wait_for_is_bounded() -> None:
    ledger = InMemoryLedger()
    with pytest.raises(TimeoutError):
        ledger.wait_for(lambda led: len(led.log) > 0, timeout_s=0.05)


def test_a_blocking_timer_fires_on_advance_or_on_its_event() -> None:
    clock = ManualClock(T0)
    fired: list[bool] = []
    waiter = threading.Thread(target=lambda: fired.append(clock.wait(threading.Event(), 5)))
    waiter.start()
    clock.wait_for_timers(1, timeout_s=5)
    clock.advance(4.999)
    assert waiter.is_alive()
    clock.advance(0.001)
    waiter.join(timeout=5)
    assert fired == [False]
    event = threading.Event()
    event.set()
    assert clock.wait(event, 60) is True  # no time needs to pass
    assert clock.now_ms() == T0 + 5_000


async def test_an_async_timer_fires_when_time_is_advanced_past_it() -> None:
    clock = ManualClock(T0)
    timer = asyncio.ensure_future(clock.timer(1.0))
    await asyncio.to_thread(clock.wait_for_timers, 1, 5)
    clock.advance(0.5)
    await asyncio.sleep(0)
    assert not timer.done()
    clock.advance(0.5)
    await asyncio.wait_for(timer, timeout=5)


def test_pause_skips_time_ahead_at_once() -> None:
    clock = ManualClock(T0)
    clock.pause(30)
    assert clock.now_ms() == T0 + 30_000


def test_decisions_and_log_read_back_through_the_codec() -> None:
    ledger = InMemoryLedger()
    ledger.call(OP.claim("t1"))
    ledger.call(OP.get())
    decisions: list[Decision] = list(ledger.decisions(OP.operation_id))
    assert [d.outcome for d in decisions] == [Outcome.CLAIMED, Outcome.STATE_CLAIMED]
    assert [r.request.body for r in ledger.log] == [OP.claim("t1").body, OP.get().body]


def test_no_claim_token_in_the_reprs_of_the_log_or_of_a_pending_call() -> None:
    ledger = InMemoryLedger()
    client = ledger.sync_client()
    pending = client.requests.claim_execution("run-1", "k", tool_name="t", params={})
    token = pending.request.claim_token
    assert token is not None
    client.transport.call(pending.request)
    assert token not in repr(pending)
    assert token not in repr(ledger.log)
