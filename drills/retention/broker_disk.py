"""The bytes a topic takes on the broker's disk, as allocated (not as files claim)."""

from __future__ import annotations

import time
from pathlib import Path

from oncelog.waiting import poll_until


def log_bytes(logs: Path, topic: str) -> int:
    """The bytes allocated to ``topic``'s partition directories under ``logs``.

    Allocated blocks, not file sizes: the broker preallocates each segment's index files
    sparsely, and what a trim frees is what the disk held.
    """
    total = 0
    for folder in logs.glob(f"{topic}-*"):
        for path in folder.iterdir():
            try:
                total += path.stat().st_blocks * 512
            except FileNotFoundError:
                continue  # deleted between the listing and the stat
    return total


def wait_for_bytes(logs: Path, topic: str, bound: int, timeout_s: float) -> int:
    """Wait (bounded) until ``topic`` takes at most ``bound`` bytes; the bytes then."""
    poll_until(time.monotonic() + timeout_s, lambda: log_bytes(logs, topic) <= bound, pause_s=0.2)
    return log_bytes(logs, topic)
