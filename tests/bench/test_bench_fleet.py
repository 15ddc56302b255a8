"""``make bench-fleet`` in quick mode: real processes on the test's broker; the report's
shape, and that no idle client received more than 15 % of the fleet's decisions."""

from __future__ import annotations

from pathlib import Path

from bench.bench_fleet import measure, parse

KEYS = ("idle_client_share", "busy_claim_p50_ms", "busy_cycles_per_s")


def test_bench_fleet_quick_reports_small_idle_shares(bootstrap: str, tmp_path: Path) -> None:
    report = measure(parse(["--quick"]), bootstrap, tmp_path)
    for key in (*KEYS, "single_claim_p50_ms", "single_cycles_per_s", "p50_vs_single"):
        assert isinstance(report[key], float), key
    assert set(KEYS) <= set(report["two_projectors"])
    for name in ("one_projector", "two_projectors"):
        run = report["runs"][name]
        assert len(run["idle_shares"]) == 3
        assert run["fleet_decisions"] > 0  # measured, not a constant
        assert max(run["idle_shares"]) == run["idle_client_share"] <= 0.15
        # The idle clients avoided the busy client's partition (it was busy when they started).
        assert run["busy_reply_partition"] not in run["idle_reply_partitions"]
    assert report["runs"]["alone"]["idle_shares"] == []
    assert report["busy_cycles_per_s"] > 0
