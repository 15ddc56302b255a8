"""Pure logic of ``make bench-peers``: /proc stat parsing, CPU accounting, the JSON summary."""

from __future__ import annotations

from bench.peers import cpu, summary
from bench.peers.workload import PeerResult

# A real /proc/<pid>/stat line, with a command name holding a space and a parenthesis.
STAT = (
    "4242 (tricky ) name) S 17 4242 4242 0 -1 4194304 2000 0 0 0 "
    "150 30 7 3 20 0 12 0 1000 100000 500 18446744073709551615"
)


def test_parse_stat_reads_ppid_and_cpu_fields_past_an_odd_command_name() -> None:
    stat = cpu.parse_stat(STAT)
    assert (stat.pid, stat.ppid) == (4242, 17)
    assert (stat.utime, stat.stime, stat.cutime, stat.cstime) == (150, 30, 7, 3)


def test_us_per_divides_tick_deltas_by_the_count() -> None:
    ticks = cpu.CLOCK_TICKS
    before, after = {"client": 0, "postgres": 10}, {"client": ticks, "postgres": 10 + 2 * ticks}
    assert cpu.us_per(before, after, 1000) == {"client": 1000.0, "postgres": 2000.0}
    assert cpu.us_per(before, after, 0)["client"] == 1e6  # no work: per one, not a crash


def _result(name: str, cpu_us: dict[str, float]) -> PeerResult:
    return PeerResult(name, [1.0, 2.0, 3.0], [2.0, 4.0, 6.0], 500.0, 800.0, cpu_us)


def test_summary_has_every_key_and_null_for_absent_peers() -> None:
    results = {
        "oncelog": _result("oncelog", {"client": 300.0, "projector": 400.0, "broker": 50.0}),
        "pg": _result("pg", {"client": 100.0, "postgres": 200.0}),
        "pg_off": None,
        "dbos": None,
    }
    out = summary.summary([0.5, 0.4, 0.6], results, 9000.0, 110000.0)
    required = ["oncelog_cycles_per_s", "pg_cycles_per_s", "pg_off_cycles_per_s",
                "dbos_cycles_per_s", "raw_rtt_p50_ms", "oncelog_claim_p50_ms",
                "oncelog_claim_p99_ms", "pg_claim_p50_ms", "client_cpu_us_per_cycle",
                "projector_cpu_us_per_request", "rebuild_rate", "decode_fold_rate"]  # fmt: skip
    assert set(required) <= set(out)
    assert out["dbos_cycles_per_s"] is None
    assert out["pg_off_cycles_per_s"] is None
    assert out["oncelog_claim_p50_ms"] == 2.0
    assert out["raw_rtt_p50_ms"] == 0.5
    assert out["projector_cpu_us_per_request"] == 200.0  # two requests per cycle
    assert out["cpu_us_per_cycle"] == {
        "oncelog": {"client": 300.0, "projector": 400.0, "broker": 50.0},
        "pg": {"client": 100.0, "postgres": 200.0},
    }


def test_parse_decode_fold_takes_bench_cores_last_line() -> None:
    output = "generated 1,000 records\nfolded\ndecode+fold: 109596 records/s\n"
    assert summary.parse_decode_fold(output) == 109596.0
    assert summary.parse_decode_fold("crashed") is None


def test_combine_takes_medians_of_rates_and_cpu_and_pools_latencies() -> None:
    rounds = [
        PeerResult("pg", [1.0], [2.0], 900.0, 1000.0, {"client": 100.0, "postgres": 300.0}),
        PeerResult("pg", [5.0, 6.0], [7.0], 1500.0, 1200.0, {"client": 140.0, "postgres": 200.0}),
        PeerResult("pg", [9.0], [8.0], 1100.0, 1100.0, {"client": 120.0, "postgres": 250.0}),
    ]
    combined = summary.combine(rounds)
    assert combined.name == "pg"
    assert combined.cycles_per_s == 1100.0  # the median, not the mean (1166.7)
    assert combined.mix_ops_per_s == 1100.0
    assert combined.cpu_us_per_cycle == {"client": 120.0, "postgres": 250.0}
    assert combined.claim_ms == [1.0, 5.0, 6.0, 9.0]
    assert combined.cycle_ms == [2.0, 7.0, 8.0]
    assert combined.rounds_cycles_per_s == [900.0, 1500.0, 1100.0]
    out = summary.summary([0.5], {"pg": combined}, None, None)
    assert out["pg_cycles_per_s_rounds"] == [900.0, 1500.0, 1100.0]
    assert out["pg_claim_p50_ms"] == 5.5
    assert "(median of 900 / 1500 / 1100)" in summary.peer_line(combined)


def test_combine_of_one_round_is_that_round() -> None:
    one = _result("oncelog", {"client": 300.0, "projector": 400.0})
    combined = summary.combine([one])
    assert (combined.cycles_per_s, combined.cpu_us_per_cycle) == (500.0, one.cpu_us_per_cycle)
    assert "median of" not in summary.peer_line(combined)
    assert summary.summary([0.5], {"oncelog": combined}, None, None)[
        "oncelog_cycles_per_s_rounds"] == [500.0]  # fmt: skip
