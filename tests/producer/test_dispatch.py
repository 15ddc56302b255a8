"""The Kafka transport's call loop, blocking and async, when no decision ever comes."""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable, Iterator
from types import SimpleNamespace

import pytest

from oncelog.errors import LedgerTimeoutError
from oncelog.producer import dispatch
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


def _counting(dispatcher: Dispatcher, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ids of the requests `dispatcher` sends from now on, in order."""
    sent: list[str] = []
    send = dispatcher._send

    def counted(request: Request, headers: Headers | None = None) -> None:
        sent.append(request.request_id)
        send(request, headers)

    monkeypatch.setattr(dispatcher, "_send", counted)
    return sent


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
    sent = _counting(silent, monkeypatch)
    requests = [build_get(Route("run-1", f"step-{i}")) for i in range(3)]
    outcomes = await asyncio.gather(*(silent.acall(r) for r in requests), return_exceptions=True)
    assert all(isinstance(o, LedgerTimeoutError) for o in outcomes)
    for request in requests:
        # Its own re-sends (at least one), never more than the timeouts allow.
        assert 2 <= sent.count(request.request_id) <= MAX_SENDS
    assert len(silent._resends or []) == 0  # nothing left queued


class _LateClock:
    """A clock that jumps past every deadline once it has been read ``reads`` times: the
    call was set up, then stalled (a loaded machine) before it could send."""

    def __init__(self, clock: Callable[[], float], reads: int = 1) -> None:
        self._clock, self._reads = clock, reads

    def __call__(self) -> float:
        self._reads -= 1
        return self._clock() + (0.0 if self._reads >= 0 else 10 * TOTAL_S)


def test_a_blocking_call_past_its_deadline_before_sending_still_sends_once(
    silent: Dispatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _counting(silent, monkeypatch)
    monkeypatch.setattr(dispatch, "time", SimpleNamespace(monotonic=_LateClock(time.monotonic)))
    request = build_get(Route("run-1", "step-1"))
    with pytest.raises(LedgerTimeoutError):
        silent.call(request)
    assert sent == [request.request_id]  # sent: its outcome is unknown, never "not sent"


async def test_an_async_call_past_its_deadline_before_sending_still_sends_once(
    silent: Dispatcher, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent = _counting(silent, monkeypatch)
    loop = asyncio.get_running_loop()
    monkeypatch.setattr(loop, "time", _LateClock(loop.time))
    request = build_get(Route("run-1", "step-1"))
    with pytest.raises(LedgerTimeoutError):
        await silent.acall(request)
    assert sent == [request.request_id]
