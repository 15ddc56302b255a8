"""The network drill's schedule: which fault, on which links, for how long (pure, seeded).

Each link alone, then the given pairs of links at once, each given every kind of fault in
turn, for a number of rounds with fresh parameters in the issue's ranges:

- ``latency``: 50-500 ms each way, with a jitter of up to a fifth of it;
- ``bandwidth``: 64-256 KiB/s each way;
- ``resets``: every open connection reset every 2-4 s (new ones too, while it lasts);
- ``blackhole``: 5-30 s in which connections are accepted and nothing is ever answered
  (the half-open case: no error, no FIN, no RST);
- ``cut``: 5-30 s in which connections are closed and refused, then it heals.

``short`` is the suite's version: one fault per link, a few seconds each.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence
from dataclasses import dataclass

KINDS = ("latency", "bandwidth", "resets", "blackhole", "cut")
_SHORT_KINDS = ("cut", "blackhole", "latency", "resets")


@dataclass(frozen=True)
class Fault:
    """One fault on one or more links, held ``seconds`` and then healed."""

    links: tuple[str, ...]
    kind: str
    seconds: float
    latency_ms: int = 0
    jitter_ms: int = 0
    rate_kib: int = 0
    reset_every_s: float = 0.0

    def label(self) -> str:
        """E.g. ``cut 12.0 s on clients+projector``."""
        detail = {
            "latency": f" {self.latency_ms}±{self.jitter_ms} ms",
            "bandwidth": f" {self.rate_kib} KiB/s",
            "resets": f" every {self.reset_every_s:.1f} s",
        }.get(self.kind, "")
        return f"{self.kind}{detail} {self.seconds:.1f} s on {'+'.join(self.links)}"


def link_groups(
    links: Sequence[str], pairs: Sequence[tuple[str, str]] | None = None
) -> list[tuple[str, ...]]:
    """Each link alone, then each of ``pairs`` (default: every pair of links)."""
    both: list[tuple[str, ...]] = list(itertools.combinations(links, 2) if pairs is None else pairs)
    alone: list[tuple[str, ...]] = [(link,) for link in links]
    return alone + both


def schedule(
    links: Sequence[str],
    *,
    rounds: int,
    seed: int,
    max_hold_s: float = 30.0,
    pairs: Sequence[tuple[str, str]] | None = None,
    kinds: Sequence[str] = KINDS,
) -> list[Fault]:
    """``rounds`` x every link group x each of ``kinds``, parameters drawn from ``seed``.

    ``max_hold_s`` bounds the blackholes and cuts (5 s up to it); the other kinds
    last 5-10 s.
    """
    rng = random.Random(seed)
    faults = []
    for _ in range(rounds):
        for group in link_groups(links, pairs):
            faults += [_fault(rng, group, kind, max_hold_s) for kind in kinds]
    return faults


def short_schedule(links: Sequence[str], hold_s: float = 3.0) -> list[Fault]:
    """One fault per link, ``hold_s`` each: a different kind on each, cut and blackhole first."""
    rng = random.Random(0)
    return [
        _fault(rng, (link,), kind, hold_s, hold_s)
        for link, kind in zip(links, itertools.cycle(_SHORT_KINDS), strict=False)
    ]


def _fault(
    rng: random.Random, links: tuple[str, ...], kind: str, max_hold_s: float, hold_s: float = 0
) -> Fault:
    if kind in ("blackhole", "cut"):
        seconds = hold_s or rng.uniform(min(5.0, max_hold_s), max_hold_s)
        return Fault(links, kind, round(seconds, 1))
    seconds = round(hold_s or rng.uniform(5.0, 10.0), 1)
    if kind == "latency":
        latency = rng.randint(50, 500)
        return Fault(
            links, kind, seconds, latency_ms=latency, jitter_ms=rng.randint(0, latency // 5)
        )
    if kind == "bandwidth":
        return Fault(links, kind, seconds, rate_kib=rng.choice((64, 128, 256)))
    if kind == "resets":
        return Fault(links, kind, seconds, reset_every_s=round(rng.uniform(2.0, 4.0), 1))
    raise ValueError(f"unknown fault kind {kind!r}")
