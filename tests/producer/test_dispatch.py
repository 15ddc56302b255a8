"""The Kafka transport's call loop, blocking and async, when no decision ever comes."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Iterator

import pytest

from oncelog.errors import LedgerTimeoutError
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.protocol import Route, build_get
from oncelog.schemas.models import Request
from oncelog.settings import Settings
from oncelog.tracing.propagation import Headers

TOTAL_S, RESEND_S = 0.3, 0.1
#: A call gives up at the first wake after its deadline, at most one re-send interval
#: late; this much more is scheduling on a shared, loaded machine.
SCHEDULING_S = 2.0
#: Sends at 0, R, 2R, ... before the deadline, one more when float sums fall just short of
#: it. Timers never fire early, so never more; a stalled loop may make fewer.
MAX_SENDS = math.ceil(TOTAL_S / RESEND_S) + 1


@pytest.fixture
def silent() -> Iterator[Dispatcher]:
    """A dispatcher whose requests go nowhere (never started: no broker needed)."""
    dispatcher = Dispatcher(
        Settings(topic_prefix="p", partitions=3), "127.0.0.1:1", Timeouts(TOTAL_S, RESEND_S)
    )
    dispatcher._partitions = 3  # what start() would read from the broker
    dispatcher._listener.reply_partition = 0  # and the reply partition it would choose
    yield dispatcher
    dispatcher._sender.close(timeout_s=0)  # nothing will ever be delivered: do not flush


def test_a_blocking_call_gives_up_at_its_deadline(silent: Dispatcher) -> None:
    started = time.monotonic()
    with pytest.raises(LedgerTimeoutError, match=f"within {TOTAL_S}s"):
        silent.call(build_get(Route("run-1", "step-1")))
    assert TOTAL_S <= time.monotonic() - started < TOTAL_S + RESEND_S + SCHEDULING_S


async def test_an_async_call_gives_up_at_its_deadline(silent: Dispatcher) -> None:
    started = time.monotonic()
    with pytest.raises(LedgerTimeoutError, match=f"within {TOTAL_S}s"):
        await silent.acall(build_get(Route("run-1", "step-1")))
    assert TOTAL_S <= time.monotonic() - started < TOTAL_S + RESEND_S + SCHEDULING_S


async def test_concurrent_async_calls_each_resend_their_own_request_until_the_deadline(
    silent: Dispatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    send = silent._send

    def counted(request: Request, headers: Headers | None = None) -> None:
        sent.append(request.request_id)
        send(request, headers)

    monkeypatch.setattr(silent, "_send", counted)
    requests = [build_get(Route("run-1", f"step-{i}")) for i in range(3)]
    outcomes = await asyncio.gather(*(silent.acall(r) for r in requests), return_exceptions=True)
    assert all(isinstance(o, LedgerTimeoutError) for o in outcomes)
    for request in requests:
        # Its own re-sends (at least one), never more than the timeouts allow.
        assert 2 <= sent.count(request.request_id) <= MAX_SENDS
    assert len(silent._resends or []) == 0  # nothing left queued
