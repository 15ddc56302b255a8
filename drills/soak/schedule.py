"""The soak's fault schedule (pure): when each fault happens, scaled to the run's length.

Projector kills and network faults alternate every tenth of the run; the broker restarts
once, near the middle. The second half has no process kill, so that the RSS fit (the last
third) sees one ``serve`` and one broker JVM, the ``serve`` past the minutes in which a
restarted one fills its caches; network faults and worker crashes go on to the end.
"""

from __future__ import annotations

from dataclasses import dataclass

from drills.faults.net_schedule import Fault

_NETWORK = (
    Fault(("clients",), "latency", 20.0, latency_ms=200, jitter_ms=40),
    Fault(("projector",), "cut", 10.0),
    Fault(("clients",), "resets", 15.0, reset_every_s=3.0),
    Fault(("projector",), "blackhole", 10.0),
    Fault(("clients",), "cut", 10.0),
)
WORKER_CRASH_EVERY_S = 60.0
_KILLS_UNTIL = 1 / 2  # of the run: then only faults that keep the processes


@dataclass(frozen=True)
class Event:
    """One fault at ``at_s`` seconds into the run."""

    at_s: float
    kind: str  # projector_kill, broker_restart, network, worker_crash
    fault: Fault | None = None  # the network fault

    def label(self) -> str:
        """E.g. ``network: cut 10.0 s on projector``."""
        return self.kind if self.fault is None else f"{self.kind}: {self.fault.label()}"


def events(seconds: float) -> list[Event]:
    """Every fault of a run of ``seconds``, in time order."""
    period = seconds / 10
    out = [Event(seconds * 0.45, "broker_restart")]
    for k in range(10):
        kill, net = (k + 0.25) * period, (k + 0.75) * period
        if kill < seconds * _KILLS_UNTIL:
            out.append(Event(kill, "projector_kill"))
        if net < seconds * 0.95:
            out.append(Event(net, "network", _NETWORK[k % len(_NETWORK)]))
    crash = WORKER_CRASH_EVERY_S
    while crash < seconds * 0.95:
        out.append(Event(crash, "worker_crash"))
        crash += WORKER_CRASH_EVERY_S
    return sorted(out, key=lambda e: (e.at_s, e.kind))
