"""The clock fault: each broker's JVM under ``libfaketime``, its offset changed at run time.

Debian's ``libfaketime`` (``apt-get install faketime libfaketime``) is preloaded into a
node's JVM with a control file: the file holds the node's offset from the real clock in
seconds (``+90``, ``-40``); libfaketime reads it again every second, so writing the file
steps that node's wall clock (and with it ``LogAppendTime``, the ledger's log time)
while the node runs. The monotonic clock is left alone: Kafka's timeouts and the JVM's
timers keep real time, as on a host whose NTP steps the wall clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Final

LIBRARY: Final = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
"""The multi-threaded libfaketime of Debian's ``libfaketime`` package."""


class FakeClocks:
    """One control file per node; :meth:`env` preloads libfaketime reading it."""

    def __init__(self, folder: Path, nodes: int) -> None:
        if not LIBRARY.exists():
            raise RuntimeError(
                f"{LIBRARY} is missing: install Debian's faketime and libfaketime "
                "(apt-get install faketime libfaketime; .ci/run does)"
            )
        folder.mkdir(parents=True, exist_ok=True)
        self._files = {n: folder / f"node-{n}.faketime" for n in range(1, nodes + 1)}
        self.offsets: dict[int, int] = {}
        self.set(dict.fromkeys(self._files, 0))

    def env(self, node: int) -> Mapping[str, str]:
        """The variables that put ``node``'s JVM on its control file."""
        return {
            "LD_PRELOAD": str(LIBRARY),
            "FAKETIME_TIMESTAMP_FILE": str(self._files[node]),
            "FAKETIME_CACHE_DURATION": "1",
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            # Without this, libfaketime's pthread_cond_timedwait on the monotonic clock
            # returns at once: every timed wait in the JVM (Object.wait) spins, and the
            # controllers never finish an election.
            "FAKETIME_FORCE_MONOTONIC_FIX": "0",
        }

    def set(self, offsets: Mapping[int, int]) -> None:
        """Step each node's wall clock to the real one plus ``offsets[node]`` seconds."""
        for node, seconds in offsets.items():
            path = self._files[node]
            scratch = path.with_suffix(".tmp")
            scratch.write_text(f"{seconds:+d}\n")
            scratch.replace(path)  # libfaketime never reads half a file
            self.offsets[node] = seconds


@dataclass(frozen=True)
class Phase:
    """The nodes' clock offsets (seconds) for one stretch of the drill."""

    name: str
    offsets: tuple[int, int, int]
    move_leader: bool = False  # SIGKILL the busiest leader: its partitions move on

    def largest_forward_s(self, before: tuple[int, int, int]) -> int:
        """The largest step forward any leader's log time can take into this phase."""
        return max(self.offsets) - max(before)


MINUTE: Final = 60
HOUR: Final = 3600

PHASES: Final = (
    Phase("forward 2 min", (2 * MINUTE,) * 3),
    Phase("back 1 min", (MINUTE,) * 3),
    Phase("clocks disagree by 3 min, the leader killed", (MINUTE, 3 * MINUTE, -MINUTE), True),
    Phase("forward 1 hour", (HOUR + 3 * MINUTE,) * 3),
    Phase("back 1 hour", (3 * MINUTE,) * 3),
)
"""Forward and back by minutes and by an hour, and leadership moved between brokers
whose clocks disagree. Offsets never undo a forward step before the next phase needs
one: a step back only holds log time (the clamp) until real time catches up."""
