"""The soak's pass criteria, pure: an RSS slope, a p99 that grows, lag after a fault.

Each takes the samples (one every few seconds) and says what it found; none does I/O,
so the tests feed them synthetic samples. The fits are robust on purpose: the box is
shared, so one slow window or one garbage collection must not fail an hour.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_SECONDS_PER_HOUR = 3600.0
_MIB_IN_MB = 1.048576


@dataclass
class Sample:
    """One look at the running ledger: memory, claim latency, the projector's lag."""

    t: float  # seconds since the soak began
    rss_serve_mb: float | None = None
    rss_broker_mb: float | None = None
    claims: int = 0  # claims answered since the previous sample
    p50_ms: float | None = None
    p99_ms: float | None = None
    lag: int | None = None  # records on the requests topic not folded yet
    ends: dict[int, int] = field(default_factory=dict)  # partition -> high watermark
    committed: dict[int, int] = field(default_factory=dict)  # partition -> next to fold
    duckdb_mb: float | None = None  # what DuckDB holds in serve (oncelog_duckdb_memory_bytes)

    @property
    def rss_serve_outside_duckdb_mb(self) -> float | None:
        """``serve``'s RSS less what DuckDB's buffer pool holds (None: either unknown)."""
        if self.rss_serve_mb is None or self.duckdb_mb is None:
            return None
        return self.rss_serve_mb - self.duckdb_mb


def theil_sen(xs: Sequence[float], ys: Sequence[float]) -> float:
    """The median of the slopes between every two points: robust to outliers (up to
    about 29 % of them), unlike a least-squares line."""
    slopes = [
        (ys[j] - ys[i]) / (xs[j] - xs[i])
        for i in range(len(xs))
        for j in range(i + 1, len(xs))
        if xs[j] != xs[i]
    ]
    return statistics.median(slopes) if slopes else 0.0


@dataclass(frozen=True)
class RssLimit:
    """How much an RSS may grow per hour over the fitted part: an absolute floor, or a
    fraction of its median level, whichever is larger."""

    mb_per_hour: float = 48.0
    fraction_per_hour: float = 0.10


def rss_slope(
    samples: Sequence[Sample], attr: str, since_s: float, limit: RssLimit = RssLimit()
) -> tuple[float | None, bool]:
    """The Theil-Sen slope (MB/hour) of ``attr`` over the samples from ``since_s`` on, and
    whether it stays within ``limit``; (None, False) with fewer than 5 points to fit."""
    points = [(s.t, getattr(s, attr)) for s in samples if s.t >= since_s]
    points = [(t, v) for t, v in points if v is not None]
    if len(points) < 5:
        return None, False
    slope = theil_sen([t for t, _ in points], [v for _, v in points]) * _SECONDS_PER_HOUR
    level = statistics.median(v for _, v in points)
    allowed = max(limit.mb_per_hour, limit.fraction_per_hour * level)
    return round(slope, 2), slope <= allowed


def within_limit(samples: Sequence[Sample], limit_mib: int) -> tuple[float | None, bool]:
    """The most DuckDB held in any sample (MB), and whether it stayed under ``limit_mib``
    (MiB, its memory limit); (None, False) when no sample has the gauge."""
    held = [s.duckdb_mb for s in samples if s.duckdb_mb is not None]
    if not held:
        return None, False
    return max(held), max(held) <= limit_mib * _MIB_IN_MB


@dataclass(frozen=True)
class P99Limit:
    """The last third's p99 may be at most ``factor`` times the first third's plus
    ``slack_ms`` (a shared box's noise), each the median of its windows' p99."""

    factor: float = 2.0
    slack_ms: float = 10.0


def p99_growth(
    samples: Sequence[Sample],
    quiet: Sequence[bool],
    since_s: float,
    limit: P99Limit = P99Limit(),
) -> tuple[float | None, float | None, bool]:
    """The median p99 of the first and of the last third of the windows after ``since_s``
    that ``quiet`` marks (no fault or recovery in them), and whether it did not grow."""
    kept = [s.p99_ms for s, q in zip(samples, quiet, strict=True)
            if q and s.t >= since_s and s.p99_ms is not None]  # fmt: skip
    if len(kept) < 6:
        return None, None, False
    third = len(kept) // 3
    first, last = statistics.median(kept[:third]), statistics.median(kept[-third:])
    return round(first, 2), round(last, 2), last <= first * limit.factor + limit.slack_ms


def caught_up_after(samples: Sequence[Sample], heal_s: float, bound_s: float) -> float | None:
    """Seconds from ``heal_s`` until ``serve`` had folded, on every partition, what was on
    the log at the first sample after it (None: not within ``bound_s``).

    Under steady load the lag is rarely 0 at one instant; "back to 0" is the projector
    passing every high watermark seen once the fault healed.
    """
    after = [s for s in samples if s.t >= heal_s and s.ends]
    if not after:
        return None
    target = after[0].ends
    for s in after:
        if s.t > heal_s + bound_s:
            return None
        if _passed(s.committed, target):
            return round(s.t - heal_s, 1)
    return None


def _passed(committed: Mapping[int, int], ends: Mapping[int, int]) -> bool:
    return all(committed.get(p, -1) >= end for p, end in ends.items())


def quiet_windows(
    samples: Sequence[Sample], busy: Sequence[tuple[float, float]], interval_s: float
) -> list[bool]:
    """For each sample, whether its window (the ``interval_s`` before it) misses every
    ``busy`` interval (a fault, from its start to its recovery)."""
    return [all(s.t <= start or s.t - interval_s >= end for start, end in busy) for s in samples]
