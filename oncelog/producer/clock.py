"""Where the SDK reads time and waits for it: the wall clock, or a test's clock.

Leases and retention are judged in log time (the broker's clock on Kafka). The
executor stands the local wall clock in for it, through this seam, so that an
in-process ledger (:mod:`oncelog.testing`) can run it on a clock the test
moves by hand instead of on real time.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Final, Protocol


class Clock(Protocol):
    """Time as the executor reads it, and the two ways it waits."""

    def now_ms(self) -> int:
        """Wall time (an estimate of log time) in milliseconds."""
        ...

    def pause(self, seconds: float) -> None:
        """Block while time itself passes (nothing else can end the wait)."""
        ...

    async def apause(self, seconds: float) -> None:
        """Async :meth:`pause`."""
        ...

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """Block up to ``seconds`` or until ``event`` is set; True when it is set."""
        ...

    async def timer(self, seconds: float) -> None:
        """Async: let ``seconds`` pass while other work runs (a heartbeat interval)."""
        ...


class WallClock:
    """Real time: ``time.time`` and real sleeps."""

    def now_ms(self) -> int:
        """Wall time in milliseconds."""
        return time.time_ns() // 1_000_000

    def pause(self, seconds: float) -> None:
        """``time.sleep``."""
        time.sleep(seconds)

    async def apause(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(seconds)

    def wait(self, event: threading.Event, seconds: float) -> bool:
        """``event.wait(seconds)``."""
        return event.wait(seconds)

    async def timer(self, seconds: float) -> None:
        """``asyncio.sleep``."""
        await asyncio.sleep(seconds)


WALL_CLOCK: Final = WallClock()
