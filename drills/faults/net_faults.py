"""Put one :class:`~drills.faults.net_schedule.Fault` on its links, hold it, heal it."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence

from drills.faults.net_schedule import Fault
from drills.faults.toxiproxy import Toxiproxy

_STREAMS = ("upstream", "downstream")
_RESET_PULSE_S = 0.3  # how long a reset toxic stays: connections opened meanwhile are reset too


def hold(
    toxiproxy: Toxiproxy, fault: Fault, proxies: Mapping[str, Sequence[str]], stop: threading.Event
) -> int:
    """Apply ``fault`` to every proxy of its links for ``fault.seconds``, then heal them.

    ``proxies`` maps a link (``clients``) to its proxies (one per broker). Returns how
    many times the connections were reset (``resets``; 1 for the other kinds). Holding is
    the fault's length, not a synchronisation: ``stop`` cuts it short.
    """
    names = [name for link in fault.links for name in proxies[link]]
    try:
        if fault.kind == "resets":
            return _resets(toxiproxy, fault, names, stop)
        for name in names:
            _apply(toxiproxy, fault, name)
        stop.wait(fault.seconds)
        return 1
    finally:
        for name in names:
            toxiproxy.heal(name)


def _apply(toxiproxy: Toxiproxy, fault: Fault, name: str) -> None:
    if fault.kind == "cut":
        toxiproxy.enabled(name, False)
    elif fault.kind == "blackhole":  # timeout=0: data dropped, the connection never closed
        for stream in _STREAMS:
            toxiproxy.toxic(name, "timeout", stream, timeout=0)
    elif fault.kind == "latency":
        for stream in _STREAMS:
            toxiproxy.toxic(
                name, "latency", stream, latency=fault.latency_ms, jitter=fault.jitter_ms
            )
    elif fault.kind == "bandwidth":
        for stream in _STREAMS:
            toxiproxy.toxic(name, "bandwidth", stream, rate=fault.rate_kib)
    else:
        raise ValueError(f"unknown fault kind {fault.kind!r}")


def _resets(toxiproxy: Toxiproxy, fault: Fault, names: Sequence[str], stop: threading.Event) -> int:
    """A reset of every connection now and then every ``reset_every_s`` until the end."""
    end = time.monotonic() + fault.seconds
    resets = 0
    while not stop.is_set():
        pulse = [toxiproxy.toxic(name, "reset_peer", "downstream", timeout=0) for name in names]
        resets += 1
        stop.wait(_RESET_PULSE_S)
        for name, toxic in zip(names, pulse, strict=True):
            toxiproxy.remove(name, toxic)
        left = end - time.monotonic()
        if left <= 0:
            return resets
        stop.wait(min(left, fault.reset_every_s))
        if time.monotonic() >= end:
            return resets
    return resets
