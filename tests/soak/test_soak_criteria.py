"""The soak's pass criteria and schedule on synthetic samples, without I/O."""

from __future__ import annotations

import random
import struct
import zlib
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from drills.soak.criteria import (
    Sample,
    caught_up_after,
    p99_growth,
    quiet_windows,
    rss_slope,
    theil_sen,
    within_limit,
)
from drills.soak.plot import MARGIN, WIDTH, plot
from drills.soak.report import serve_fit
from drills.soak.run import SoakConfig
from drills.soak.schedule import events

HOUR = 3600.0


def _rss(
    per_hour: float, level: float = 200.0, noise: float = 3.0, spikes: int = 0
) -> list[Sample]:
    """An hour of 10 s samples whose RSS grows ``per_hour``, with noise and a few spikes
    (a garbage collection's, a shared box's)."""
    rng = random.Random(7)
    out = []
    for i in range(360):
        t = i * 10.0
        value = level + per_hour * t / HOUR + rng.uniform(-noise, noise)
        out.append(Sample(t=t, rss_serve_mb=value + (300.0 if i % 40 == 3 and spikes else 0)))
    return out


@given(st.floats(-100, 100), st.floats(-1000, 1000))
def test_theil_sen_finds_the_slope_of_a_line(slope: float, intercept: float) -> None:
    xs = [float(x) for x in range(20)]
    assert abs(theil_sen(xs, [intercept + slope * x for x in xs]) - slope) < 1e-6


def test_a_flat_rss_with_spikes_passes() -> None:
    slope, ok = rss_slope(_rss(0.0, spikes=1), "rss_serve_mb", since_s=HOUR * 2 / 3)
    assert ok
    assert slope is not None
    assert abs(slope) < 10


def test_an_rss_that_leaks_fails() -> None:
    slope, ok = rss_slope(_rss(80.0), "rss_serve_mb", since_s=HOUR * 2 / 3)
    assert not ok
    assert slope is not None
    assert 60 < slope < 100


def test_an_rss_that_grows_within_a_tenth_of_its_level_an_hour_passes() -> None:
    _, ok = rss_slope(_rss(60.0, level=1000.0), "rss_serve_mb", since_s=HOUR * 2 / 3)
    assert ok


def test_too_few_rss_points_fail() -> None:
    assert rss_slope(_rss(0.0)[:3], "rss_serve_mb", since_s=0) == (None, False)


def _with_pool(rss_per_hour: float, pool_per_hour: float, pool_from: float = 8.0) -> list[Sample]:
    """An hour whose RSS grows ``rss_per_hour``, of which DuckDB's pool grows
    ``pool_per_hour`` (from ``pool_from`` MB)."""
    out = _rss(rss_per_hour)
    for s in out:
        s.duckdb_mb = pool_from + pool_per_hour * s.t / HOUR
    return out


def test_a_pool_filling_within_its_limit_is_left_out_of_serves_fit() -> None:
    samples = _with_pool(rss_per_hour=80.0, pool_per_hour=70.0)
    slope, ok, most = serve_fit(SoakConfig(seconds=HOUR, duckdb_memory_mb=96), samples, False)
    assert ok
    assert slope is not None
    assert abs(slope - 10.0) < 10
    assert most is not None
    assert 77 < most <= 78


def test_growth_outside_the_pool_fails_serves_fit() -> None:
    samples = _with_pool(rss_per_hour=140.0, pool_per_hour=70.0)
    slope, ok, _ = serve_fit(SoakConfig(seconds=HOUR, duckdb_memory_mb=96), samples, True)
    assert not ok
    assert slope is not None
    assert slope > 48


def test_a_pool_past_its_limit_fails_serves_fit() -> None:
    samples = _with_pool(rss_per_hour=80.0, pool_per_hour=70.0, pool_from=40.0)
    _, ok, most = serve_fit(SoakConfig(seconds=HOUR, duckdb_memory_mb=96), samples, True)
    assert not ok
    assert most is not None
    assert most > 96 * 1.048576


def test_without_a_memory_limit_the_whole_rss_is_fitted() -> None:
    samples = _with_pool(rss_per_hour=80.0, pool_per_hour=70.0)
    config = SoakConfig(seconds=HOUR, duckdb_memory_mb=None)
    assert serve_fit(config, samples, False) == (None, False, None)
    assert serve_fit(config, samples, True) == (None, True, None)


def test_a_pool_never_sampled_is_not_within_its_limit() -> None:
    assert within_limit(_rss(0.0), 96) == (None, False)


def _p99(growth: float, slow_windows: int = 0) -> list[Sample]:
    rng = random.Random(3)
    out = []
    for i in range(360):
        p99 = 20.0 * (1 + growth * i / 360) + rng.uniform(-4, 4)
        out.append(
            Sample(t=i * 10.0, p99_ms=p99 + (500.0 if i < slow_windows * 7 and i % 7 == 0 else 0))
        )
    return out


def test_a_steady_p99_with_noisy_windows_passes() -> None:
    samples = _p99(0.0, slow_windows=20)
    first, last, ok = p99_growth(samples, [True] * len(samples), since_s=360)
    assert ok
    assert first is not None
    assert last is not None


def test_a_p99_that_grows_fivefold_fails() -> None:
    samples = _p99(5.0)
    first, last, ok = p99_growth(samples, [True] * len(samples), since_s=360)
    assert not ok
    assert first is not None
    assert last is not None
    assert last > 2 * first


def test_windows_of_a_fault_are_left_out_of_the_p99() -> None:
    samples = _p99(0.0)
    for s in samples[-60:]:
        s.p99_ms = 5000.0  # a fault's windows
    quiet = quiet_windows(samples, [(samples[-60].t - 5, samples[-1].t)], interval_s=10)
    assert p99_growth(samples, quiet, since_s=360)[2]
    assert not p99_growth(samples, [True] * len(samples), since_s=360)[2]


def _lag(catch_up_at: float | None) -> list[Sample]:
    """The group falls behind at 100 s and passes the ends of then at ``catch_up_at``."""
    out = []
    for i in range(60):
        t = i * 10.0
        ends = {0: 1000 + i * 10, 1: 1000 + i * 10}
        behind = t >= 100 and (catch_up_at is None or t < catch_up_at)
        committed = {p: (1000 if behind else e) for p, e in ends.items()}
        out.append(Sample(t=t, ends=ends, committed=committed))
    return out


def test_lag_that_returns_is_timed_from_the_heal() -> None:
    assert caught_up_after(_lag(200.0), heal_s=150.0, bound_s=120) == 50.0


def test_lag_that_never_returns_fails() -> None:
    assert caught_up_after(_lag(None), heal_s=150.0, bound_s=120) is None


def test_lag_that_returns_only_past_the_bound_fails() -> None:
    assert caught_up_after(_lag(400.0), heal_s=150.0, bound_s=120) is None


def test_a_group_without_commits_has_not_caught_up() -> None:
    samples = [Sample(t=10.0 * i, ends={0: 5}, committed={0: -1001}) for i in range(5)]
    assert caught_up_after(samples, heal_s=0.0, bound_s=60) is None


def test_the_hours_schedule() -> None:
    run = events(HOUR)
    kinds = [e.kind for e in run]
    assert kinds.count("broker_restart") == 1
    assert kinds.count("projector_kill") >= 5
    assert kinds.count("network") >= 9
    assert kinds.count("worker_crash") >= 50
    # the RSS fit's part (the last third) keeps one broker JVM and one serve, 14 minutes
    # old or more
    assert max(e.at_s for e in run if e.kind == "broker_restart") < HOUR * 2 / 3
    assert max(e.at_s for e in run if e.kind == "projector_kill") < HOUR * 2 / 3 - 14 * 60
    assert [e.at_s for e in run] == sorted(e.at_s for e in run)


def test_the_plot_is_a_png_of_the_samples(tmp_path: Path) -> None:
    path = tmp_path / "soak.png"
    samples = [Sample(t=10.0 * i, rss_serve_mb=100.0 + i, p50_ms=2.0, p99_ms=9.0, lag=i % 4)
               for i in range(30)]  # fmt: skip
    plot(samples, [(50.0, "projector_kill")], path)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    raw = zlib.decompress(data[data.index(b"IDAT") + 4 : data.index(b"IEND") - 8])
    assert len(raw) == height * (width * 3 + 1)
    # The kill's red line crosses the first panel, above its series, at the kill's time.
    x = MARGIN + round((WIDTH - 2 * MARGIN) * 50.0 / 290.0)
    row = MARGIN + 20
    at = row * (width * 3 + 1) + 1 + x * 3
    assert raw[at : at + 3] == bytes((220, 40, 40))
    assert raw[at + 30 : at + 33] == b"\xff\xff\xff"  # and only there
