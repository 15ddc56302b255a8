"""Bounded waiting for what has no position or event to wait on (a process, a server).

Where there is a log position, wait on it (:mod:`oncelog.query.catch_up`); where another
process's state must be polled, :func:`poll_until` is the one loop, bounded by a
``time.monotonic()`` deadline.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def poll_until(
    deadline: float,
    ready: Callable[[], T],
    *,
    pause_s: float = 0.05,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], object] = time.sleep,
) -> T | None:
    """Call ``ready`` until it answers something true; return that answer, or None once
    ``deadline`` (of ``clock``) has passed. ``ready`` is called at least once, and the
    pauses between calls never reach past the deadline. ``sleep`` may be an
    ``Event.wait`` (a drill's stop event), ``clock`` and ``sleep`` fakes in a test."""
    while True:
        answer = ready()
        if answer:
            return answer
        left = deadline - clock()
        if left <= 0:
            return None
        sleep(min(pause_s, left))
