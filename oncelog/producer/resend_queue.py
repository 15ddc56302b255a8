"""The first re-send of every async call of one event loop: one queue, one loop timer.

Each call of a client waits the same time before its first re-send, so the due
times come in the order the calls were sent: an insertion-ordered map and one
loop timer, armed for the earliest, do what a ``call_later`` per call did. A
``TimerHandle`` per call cost its creation, a push on the loop's heap (whose
comparisons run in Python, ``TimerHandle.__lt__``), its cancellation with the
answer and the loop's later sweep of cancelled handles; here a call is one map
insertion and one removal. Only a due time earlier than the last one queued
(the timeouts changed) is refused: the caller then arms a timer of its own.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Final

Action = Callable[[], None]

# A loop runs a timer once its clock is within its resolution of the due time
# (asyncio.BaseEventLoop._clock_resolution): do the same, or the queue would re-arm
# a timer for a due time the clock can never be seen to reach.
_RESOLUTION_S: Final = time.get_clock_info("monotonic").resolution


class ResendQueue:
    """Actions due at non-decreasing loop times, run by one timer of ``loop``."""

    __slots__ = ("_due", "_last_due", "_loop", "_timer")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._due: OrderedDict[Action, float] = OrderedDict()
        self._last_due = 0.0
        self._timer: asyncio.TimerHandle | None = None

    @property
    def loop(self) -> asyncio.AbstractEventLoop:
        """The loop whose timer runs the actions."""
        return self._loop

    def __len__(self) -> int:
        return len(self._due)

    def add(self, action: Action, delay_s: float) -> bool:
        """Run ``action`` on the loop ``delay_s`` from now, unless discarded first.

        False (nothing queued) when that is earlier than an action already queued.
        """
        due = self._loop.time() + delay_s
        if due < self._last_due:
            return False
        self._last_due = due
        self._due[action] = due
        if self._timer is None:
            self._timer = self._loop.call_at(due, self._run_due)
        return True

    def discard(self, action: Action) -> None:
        """Do not run ``action`` (it may have run, or never been queued)."""
        self._due.pop(action, None)

    def _run_due(self) -> None:
        self._timer = None
        due = self._due
        now = self._loop.time() + _RESOLUTION_S
        while due:
            action, at = next(iter(due.items()))
            if at > now:
                self._timer = self._loop.call_at(at, self._run_due)
                return
            del due[action]
            # Each in a callback of its own, as with a timer each: one that raises
            # is reported by the loop and stops no other.
            self._loop.call_soon(action)
