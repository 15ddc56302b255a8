"""The Kafka transport's call loop, blocking and async, when no decision ever comes."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from oncelog.errors import LedgerTimeoutError
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.protocol import Route, build_get
from oncelog.settings import Settings

TOTAL_S = 0.3


@pytest.fixture
def silent() -> Iterator[Dispatcher]:
    """A dispatcher whose requests go nowhere (never started: no broker needed)."""
    dispatcher = Dispatcher(
        Settings(topic_prefix="p", partitions=3), "127.0.0.1:1", Timeouts(TOTAL_S, 0.1)
    )
    dispatcher._partitions = 3  # what start() would read from the broker
    dispatcher._listener.reply_partition = 0  # and the reply partition it would choose
    yield dispatcher
    dispatcher._sender.close(timeout_s=0)  # nothing will ever be delivered: do not flush


def test_a_blocking_call_gives_up_at_its_deadline(silent: Dispatcher) -> None:
    started = time.monotonic()
    with pytest.raises(LedgerTimeoutError, match=f"within {TOTAL_S}s"):
        silent.call(build_get(Route("run-1", "step-1")))
    assert TOTAL_S <= time.monotonic() - started < TOTAL_S + 2


async def test_an_async_call_gives_up_at_its_deadline(silent: Dispatcher) -> None:
    started = time.monotonic()
    with pytest.raises(LedgerTimeoutError, match=f"within {TOTAL_S}s"):
        await silent.acall(build_get(Route("run-1", "step-1")))
    assert TOTAL_S <= time.monotonic() - started < TOTAL_S + 2
