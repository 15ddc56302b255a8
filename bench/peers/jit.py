"""Warm the broker's JIT before oncelog is measured.

A freshly started broker JVM compiles Kafka's request paths while it serves them: its C1/C2
compiler threads took up to half of the broker's CPU in a 6 s window of the 64-worker load,
minutes after its start (``docs/performance.md``). A long-running broker has done that once;
PostgreSQL, the peer, is compiled ahead of time. So the bench drives oncelog's own load in short
windows until the compiler threads use less than ``QUIET_SHARE`` of one core over a window
(bounded), and reports how long that took. Without a broker of ours (an external one) there is
nothing to read and no wait.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from bench.peers.cpu import CLOCK_TICKS, parse_stat

QUIET_SHARE = 0.05  # of one core, over one window
WINDOW_S = 2.0
MAX_S = 120.0
COMPILER_PREFIXES = ("C1 CompilerThre", "C2 CompilerThre")  # comm is cut at 15 bytes


def compiler_ticks(pid: int) -> int:
    """CPU ticks of the JVM's JIT compiler threads so far (0 when the process is gone)."""
    total = 0
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return 0
    for tid in tasks:
        task = Path(f"/proc/{pid}/task/{tid}")
        try:
            if task.joinpath("comm").read_text().startswith(COMPILER_PREFIXES):
                stat = parse_stat(task.joinpath("stat").read_text())
                total += stat.utime + stat.stime
        except (FileNotFoundError, ProcessLookupError, ValueError):
            continue  # a compiler thread that ended between listing and reading
    return total


async def warm(
    broker_pid: int | None, load: Callable[[float], Awaitable[object]],
    *, quiet_share: float = QUIET_SHARE, window_s: float = WINDOW_S, max_s: float = MAX_S,
) -> float:  # fmt: skip
    """Run ``load(window_s)`` until the broker's compiler threads are quiet; the seconds spent."""
    if broker_pid is None:
        return 0.0
    began = time.monotonic()
    while time.monotonic() - began < max_s:
        before, at = compiler_ticks(broker_pid), time.monotonic()
        await load(window_s)
        share = (compiler_ticks(broker_pid) - before) / CLOCK_TICKS / (time.monotonic() - at)
        if share < quiet_share:
            break
    return time.monotonic() - began
