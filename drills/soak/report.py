"""The soak's verdict: the figures of the JSON line, and whether every criterion held."""

from __future__ import annotations

import csv
import statistics
from collections import Counter
from pathlib import Path
from typing import Any

from drills.soak.criteria import (
    caught_up_after,
    p99_growth,
    quiet_windows,
    rss_slope,
    within_limit,
)
from drills.soak.run import SoakConfig, SoakRun

#: How long after a heal the projector may take to pass the high watermarks of then.
LAG_BOUND_S = 120.0
_WARM_UP = 0.1  # of the run: JIT, caches and the broker's heap settle first
_FIT_FROM = 2 / 3  # of the run: the RSS fit's part, after the last process kill
_ZERO = ("lost", "undecided", "divergent", "double_grants", "untyped_errors", "hung_calls",
         "verify_differences", "serve_crashes", "workers_failed", "lag_not_caught_up")  # fmt: skip


def figures(config: SoakConfig, run: SoakRun) -> dict[str, Any]:
    """Every figure of the run, and ``ok``."""
    samples, seconds = run.samples, config.seconds
    heals = [a for a in run.applied if a.event.kind != "worker_crash"]
    caught = [caught_up_after(samples, a.heal_s, LAG_BOUND_S) for a in heals]
    busy = [(a.start_s, a.heal_s + (c if c is not None else LAG_BOUND_S))
            for a, c in zip(heals, caught, strict=True)]  # fmt: skip
    quiet = quiet_windows(samples, busy, config.interval_s)
    first, last, p99_ok = p99_growth(samples, quiet, seconds * _WARM_UP)
    serve_slope, raw_ok = rss_slope(samples, "rss_serve_mb", seconds * _FIT_FROM)
    outside_slope, serve_ok, duckdb_max = serve_fit(config, samples, raw_ok)
    broker_slope, broker_ok = rss_slope(samples, "rss_broker_mb", seconds * _FIT_FROM)
    calls, log = run.calls, run.log
    claims = sum(s.claims for s in samples)
    p50s = [s.p50_ms for s in samples if s.p50_ms is not None]
    out: dict[str, Any] = {
        "minutes": round(seconds / 60, 1), "rate_target": config.rate,
        "claims_per_s": round(claims / run.seconds, 1) if run.seconds else 0,
        "samples": len(samples),
        "faults": dict(Counter(a.event.kind for a in run.applied)),
        "rss_serve_mb": _ends(samples, "rss_serve_mb"), "rss_serve_slope_mb_h": serve_slope,
        "rss_serve_outside_duckdb_slope_mb_h": outside_slope,
        "duckdb_mb": _ends(samples, "duckdb_mb"), "duckdb_max_mb": duckdb_max,
        "duckdb_limit_mib": config.duckdb_memory_mb,
        "rss_broker_mb": _ends(samples, "rss_broker_mb"), "rss_broker_slope_mb_h": broker_slope,
        "claim_p50_ms": round(statistics.median(p50s), 2) if p50s else None,
        "claim_p99_first_ms": first, "claim_p99_last_ms": last,
        "lag_caught_up_s": caught, "lag_not_caught_up": sum(c is None for c in caught),
        "calls": calls.calls, "acknowledged": len(calls.acknowledged), "lost": run.lost,
        "undecided": log.undecided,
        "divergent": log.divergent_decisions + log.divergent_snapshots + len(calls.wrong_answers),
        "double_grants": len(calls.double_grants), "untyped_errors": len(calls.untyped_errors),
        "hung_calls": len(calls.hung) + run.workers_hung,
        "verify_differences": len(log.verify_differences),
        "serve_crashes": len(run.serve_crashes), "workers_failed": run.workers_failed,
        "linearizability": None if run.history is None else run.history.figures(),
    }  # fmt: skip
    checks = {"rss_serve": serve_ok, "rss_broker": broker_ok, "p99": p99_ok,
              "zero": all(out[k] == 0 for k in _ZERO),
              "linearizable": run.history is not None and run.history.linearizable}  # fmt: skip
    out["failed"] = sorted(k for k, held in checks.items() if not held)
    out["ok"] = not out["failed"]
    return out


def serve_fit(
    config: SoakConfig, samples: list[Any], raw_ok: bool
) -> tuple[float | None, bool, float | None]:
    """The slope of ``serve``'s RSS outside DuckDB's buffer pool, whether ``serve`` passes,
    and the most the pool held. With a memory limit set, the pool is a cache DuckDB
    bounds by it (it fills at the rate the file grows, over more than the hour at the
    soak's rate): the fit leaves it out and the pool must stay within the limit. Without
    a limit, the whole RSS is fitted."""
    if config.duckdb_memory_mb is None:
        return None, raw_ok, None
    slope, flat = rss_slope(samples, "rss_serve_outside_duckdb_mb", config.seconds * _FIT_FROM)
    most, bounded = within_limit(samples, config.duckdb_memory_mb)
    return slope, flat and bounded, most


def _ends(samples: list[Any], attr: str) -> list[float | None]:
    values = [getattr(s, attr) for s in samples if getattr(s, attr) is not None]
    return [values[0], values[-1]] if values else [None, None]


COLUMNS = ("t", "rss_serve_mb", "rss_broker_mb", "claims", "p50_ms", "p99_ms", "lag", "duckdb_mb")


def write_csv(run: SoakRun, path: Path) -> None:
    """The samples, one row each (the columns of :data:`COLUMNS`)."""
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(COLUMNS)
        for s in run.samples:
            out.writerow(["" if getattr(s, c) is None else getattr(s, c) for c in COLUMNS])
