"""The async client's wait machinery alone, without Kafka: CPU per answered call. Not a test.

    python -m bench.bench_waits [CALLS]

64 coroutines each wait for an answer that a resolver thread delivers in batches of
whatever is pending (as the decisions listener does with a fetched batch). "before":
a concurrent Future per call, ``asyncio.wrap_future`` and ``asyncio.wait`` with a timeout
per attempt, so one ``call_soon_threadsafe`` per answer. "after": a loop future per call,
one re-send timer, and one ``call_soon_threadsafe`` per batch (``listener.deliver``).
"queued": as "after", the re-send queued in a ``ResendQueue`` instead of a timer per call.
"""

from __future__ import annotations

import asyncio
import queue
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from oncelog.producer.listener import deliver
from oncelog.producer.resend_queue import ResendQueue

Waiter = Any


def _resolver(pending: queue.SimpleQueue[Waiter], batch: Callable[[list[Waiter]], None]) -> None:
    while True:
        first = pending.get()
        if first is None:
            return
        items = [first]
        while not pending.empty():
            items.append(pending.get())
        batch([w for w in items if w is not None])


def _before(items: list[Waiter]) -> None:
    for waiter in items:
        waiter.set_result(1)


def _after(items: list[Waiter]) -> None:
    deliver([(waiter, 1) for waiter in items])  # type: ignore[misc]


async def _old_call(pending: queue.SimpleQueue[Waiter]) -> None:
    waiter: Future[int] = Future()
    answer = asyncio.wrap_future(waiter)
    pending.put(waiter)
    done, _ = await asyncio.wait({answer}, timeout=5.0)
    assert done


async def _new_call(pending: queue.SimpleQueue[Waiter]) -> None:
    loop = asyncio.get_running_loop()
    answer = loop.create_future()
    timer = loop.call_later(5.0, lambda: None)
    pending.put(answer)
    await answer
    timer.cancel()


_QUEUES: dict[asyncio.AbstractEventLoop, ResendQueue] = {}


async def _queued_call(pending: queue.SimpleQueue[Waiter]) -> None:
    loop = asyncio.get_running_loop()
    resends = _QUEUES.get(loop) or _QUEUES.setdefault(loop, ResendQueue(loop))
    answer = loop.create_future()

    def resend() -> None:
        pass

    resends.add(resend, 5.0)
    pending.put(answer)
    await answer
    resends.discard(resend)


async def _run(call: Callable[[queue.SimpleQueue[Waiter]], Any], calls: int) -> None:
    pending: queue.SimpleQueue[Waiter] = queue.SimpleQueue()
    batch = _before if call is _old_call else _after
    thread = threading.Thread(target=_resolver, args=(pending, batch), daemon=True)
    thread.start()

    async def worker(n: int) -> None:
        for _ in range(n):
            await call(pending)

    await asyncio.gather(*(worker(calls // 64) for _ in range(64)))
    pending.put(None)
    thread.join()


def main() -> None:
    """Print CPU microseconds per answered call of each variant."""
    calls = int(sys.argv[1]) if len(sys.argv) > 1 else 64_000
    calls_of = (("before", _old_call), ("after", _new_call), ("queued", _queued_call))
    for name, call in calls_of:
        began = time.process_time()
        asyncio.run(_run(call, calls))
        print(f"{name}: {(time.process_time() - began) * 1e6 / calls:.1f} us CPU per call")


if __name__ == "__main__":
    main()
