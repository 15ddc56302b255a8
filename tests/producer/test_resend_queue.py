"""One queue and one loop timer for every async call's first re-send."""

from __future__ import annotations

import asyncio

from oncelog.producer.resend_queue import ResendQueue

BOUND_S = 5.0  # how long a test waits for what must happen: far beyond the delays


async def test_actions_run_in_order_once_due_and_a_discarded_one_never() -> None:
    loop = asyncio.get_running_loop()
    queue = ResendQueue(loop)
    ran: list[str] = []
    last = loop.create_future()

    def record(name: str) -> None:
        ran.append(name)
        if name == "c":
            last.set_result(loop.time())

    a, b, c = (lambda n=name: record(n) for name in "abc")
    started = loop.time()
    assert queue.add(a, 0.02)
    assert queue.add(b, 0.03)
    assert queue.add(c, 0.05)
    queue.discard(b)
    finished = await asyncio.wait_for(last, BOUND_S)
    assert ran == ["a", "c"]
    assert finished - started >= 0.05
    assert len(queue) == 0


async def test_an_earlier_due_time_than_the_last_queued_is_refused() -> None:
    queue = ResendQueue(asyncio.get_running_loop())
    assert queue.add(lambda: None, 10.0)
    assert not queue.add(lambda: None, 1.0)
    assert len(queue) == 1


async def test_a_failing_action_stops_no_other() -> None:
    loop = asyncio.get_running_loop()
    errors: list[object] = []
    loop_handler = loop.get_exception_handler()
    loop.set_exception_handler(lambda _loop, context: errors.append(context["exception"]))
    try:
        queue = ResendQueue(loop)
        done = loop.create_future()

        def fail() -> None:
            raise RuntimeError("boom")

        queue.add(fail, 0.01)
        queue.add(lambda: done.set_result(True), 0.01)
        assert await asyncio.wait_for(done, BOUND_S)
    finally:
        loop.set_exception_handler(loop_handler)
    assert [str(e) for e in errors] == ["boom"]
