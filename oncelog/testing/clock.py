"""A clock that moves only when told: log time for :class:`InMemoryLedger`.

Like a time-skipping test environment, waiting for time itself (the executor
waiting out another holder's lease) skips ahead at once; timers that run beside
other work (heartbeats, ``ctx.wait``) fire when :meth:`ManualClock.advance` moves
time past them.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from typing import Final

_RECHECK_S: Final = 0.01  # a blocking timer also ends on its event, which cannot notify us


class ManualClock:
    """Milliseconds that pass only through :meth:`advance` (thread-safe)."""

    def __init__(self, start_ms: int | None = None) -> None:
        self._now_ms = time.time_ns() // 1_000_000 if start_ms is None else start_ms
        self._changed = threading.Condition()
        self._timers: list[tuple[int, asyncio.Future[None]]] = []
        self._blocked = 0  # blocking waits in progress

    def now_ms(self) -> int:
        """The current (virtual) time in milliseconds."""
        return self._now_ms

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds``, firing every timer that falls due."""
        if seconds < 0:
            raise ValueError("time does not go backwards")
        with self._changed:
            self._now_ms += round(seconds * 1000)
            due = [f for at, f in self._timers if at <= self._now_ms]
            self._timers = [(at, f) for at, f in self._timers if at > self._now_ms]
            self._changed.notify_all()
        for future in due:
            with contextlib.suppress(RuntimeError):  # its loop closed: nobody waits
                future.get_loop().call_soon_threadsafe(_fire, future)

    def pause(self, seconds: float) -> None:
        """Waiting for time itself: skip ahead by ``seconds`` at once."""
        self.advance(seconds)

    async def apause(self, seconds: float) -> None:
        """Async :meth:`pause` (it still yields to the loop once)."""
        self.advance(seconds)
        await asyncio.sleep(0)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Block until ``event`` is set or time is advanced ``seconds`` past now."""
        with self._changed:
            until = self._now_ms + round(seconds * 1000)
            self._blocked += 1
            self._changed.notify_all()
            try:
                while not event.is_set() and self._now_ms < until:
                    self._changed.wait(_RECHECK_S)
            finally:
                self._blocked -= 1
        return event.is_set()

    async def timer(self, seconds: float) -> None:
        """Return once time is advanced ``seconds`` past now."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        with self._changed:
            at = self._now_ms + round(seconds * 1000)
            if at <= self._now_ms:
                return
            self._timers.append((at, future))
            self._changed.notify_all()
        await future

    def wait_for_timers(self, count: int, timeout_s: float) -> None:
        """Block (bounded, in real time) until ``count`` timers wait on this clock.

        A test moves time once the timers it means to fire are armed, instead of
        racing the threads and tasks that arm them.
        """

        def armed() -> bool:
            pending = sum(1 for _, f in self._timers if not f.done())
            return self._blocked + pending >= count

        with self._changed:
            if not self._changed.wait_for(armed, timeout_s):
                raise TimeoutError(f"{count} timer(s) not armed within {timeout_s}s")


def _fire(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)
