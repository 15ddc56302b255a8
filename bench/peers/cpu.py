"""CPU time per process, read from /proc/<pid>/stat, for CPU microseconds per cycle.

A process's ``utime + stime`` counts every thread of it. A server with worker children
(the postmaster and its backends) is counted as a tree: its own time, the time of its
reaped children (``cutime + cstime``) and the time of its live children, so a backend that
exits between two samples moves from one term to the other without being lost.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from oncelog.broker.local import LocalBroker
from oncelog.settings import Settings

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


@dataclass(frozen=True)
class Stat:
    """The fields of one /proc/<pid>/stat line that CPU accounting needs (clock ticks)."""

    pid: int
    ppid: int
    utime: int
    stime: int
    cutime: int
    cstime: int


def parse_stat(line: str) -> Stat:
    """Parse a /proc/<pid>/stat line; the command name may hold spaces and parentheses."""
    pid, _, rest = line.partition(" (")
    fields = rest[rest.rindex(")") + 2 :].split()
    # fields[0] is field 3 (state): ppid is field 4, utime..cstime are fields 14..17.
    return Stat(int(pid), int(fields[1]), *(int(f) for f in fields[11:15]))


def _read(pid: int | str) -> Stat | None:
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text())
    except (FileNotFoundError, ProcessLookupError, ValueError):
        return None  # gone between listing and reading


def process_ticks(pid: int) -> int:
    """utime + stime of one process (all its threads); 0 once it is gone."""
    stat = _read(pid)
    return stat.utime + stat.stime if stat else 0


def tree_ticks(pid: int) -> int:
    """A parent's own, reaped children's and live direct children's CPU ticks."""
    own = _read(pid)
    if own is None:
        return 0
    total = own.utime + own.stime + own.cutime + own.cstime
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            child = _read(entry)
            if child is not None and child.ppid == pid:
                total += child.utime + child.stime
    return total


Readers = Mapping[str, Callable[[], int]]


def sample(readers: Readers) -> dict[str, int]:
    """Ticks of every named process now."""
    return {name: read() for name, read in readers.items()}


def us_per(before: Mapping[str, int], after: Mapping[str, int], count: int) -> dict[str, float]:
    """CPU microseconds per unit of work (a cycle) of each named process between two samples."""
    return {
        name: (after[name] - before[name]) * 1e6 / CLOCK_TICKS / max(count, 1) for name in before
    }


def own_ticks() -> int:
    """utime + stime of this process (the bench's client)."""
    return process_ticks(os.getpid())


def our_broker_pid(bootstrap: str) -> int | None:
    """The local broker JVM's pid when ``bootstrap`` is it, else None (an external broker)."""
    broker = LocalBroker(Settings()).status()
    return broker.pid if broker is not None and broker.bootstrap == bootstrap else None


def oncelog_readers(serve_pid: int, bootstrap: str) -> Readers:
    """The client (this process), the projector child and, when it is ours, the broker JVM."""
    readers = {
        "client": own_ticks,
        "projector": lambda: process_ticks(serve_pid),
    }
    broker_pid = our_broker_pid(bootstrap)
    if broker_pid is not None:
        readers["broker"] = lambda: process_ticks(broker_pid)
    return readers
