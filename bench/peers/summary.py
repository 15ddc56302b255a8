"""The report of ``make bench-peers``: one line per peer, then one JSON object.

Peers are named ``oncelog``, ``pg`` (synchronous_commit on), ``pg_off`` and ``dbos``; a
peer that could not run is None and its figures are null.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping
from typing import Any

from bench.common import pct
from bench.peers.workload import PeerResult

PEERS = ("oncelog", "pg", "pg_off", "dbos")
REQUESTS_PER_CYCLE = 2  # a claim and a completion


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _p50(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def combine(rounds: list[PeerResult]) -> PeerResult:
    """One peer's rounds as one result: rates and CPU per process are the rounds' medians
    (a machine that slows down during one round moves one sample, not the figure); the
    latencies are pooled, so the p50 and p99 are over every sequential claim."""
    if not rounds:
        raise ValueError("no rounds to combine")
    first = rounds[0]
    processes = [proc for proc in first.cpu_us_per_cycle if all(
        proc in r.cpu_us_per_cycle for r in rounds)]  # fmt: skip
    return PeerResult(
        first.name,
        claim_ms=[ms for r in rounds for ms in r.claim_ms],
        cycle_ms=[ms for r in rounds for ms in r.cycle_ms],
        cycles_per_s=statistics.median(r.cycles_per_s for r in rounds),
        mix_ops_per_s=statistics.median(r.mix_ops_per_s for r in rounds),
        cpu_us_per_cycle={
            proc: statistics.median(r.cpu_us_per_cycle[proc] for r in rounds) for proc in processes
        },
        warmup_s=sum(r.warmup_s for r in rounds),
        rounds_cycles_per_s=[r.cycles_per_s for r in rounds],
    )


def _peer_figures(name: str, result: PeerResult | None) -> dict[str, Any]:
    if result is None:
        return {f"{name}_cycles_per_s": None, f"{name}_mix_ops_per_s": None,
                f"{name}_claim_p50_ms": None, f"{name}_claim_p99_ms": None,
                f"{name}_cycle_p50_ms": None, f"{name}_cycles_per_s_rounds": None}  # fmt: skip
    return {
        f"{name}_cycles_per_s_rounds": [round(r, 1) for r in result.rounds_cycles_per_s] or None,
        f"{name}_cycles_per_s": result.cycles_per_s,
        f"{name}_mix_ops_per_s": result.mix_ops_per_s,
        f"{name}_claim_p50_ms": _p50(result.claim_ms),
        f"{name}_claim_p99_ms": pct(result.claim_ms, 0.99) if result.claim_ms else None,
        f"{name}_cycle_p50_ms": _p50(result.cycle_ms),
    }


def summary(
    raw_rtt_ms: list[float], results: Mapping[str, PeerResult | None],
    rebuild_rate: float | None, decode_fold_rate: float | None,
) -> dict[str, Any]:  # fmt: skip
    """The JSON object: every peer's figures, the CPU per process, the offline rates."""
    out: dict[str, Any] = {"raw_rtt_p50_ms": _p50(raw_rtt_ms)}
    for name in PEERS:
        out.update(_peer_figures(name, results.get(name)))
    oncelog = results.get("oncelog")
    cpu = oncelog.cpu_us_per_cycle if oncelog else {}
    out["client_cpu_us_per_cycle"] = cpu.get("client")
    projector = cpu.get("projector")
    out["projector_cpu_us_per_request"] = (
        None if projector is None else projector / REQUESTS_PER_CYCLE
    )
    out["broker_cpu_us_per_cycle"] = cpu.get("broker")
    out["broker_jit_warmup_s"] = oncelog.warmup_s if oncelog else None
    out["rebuild_rate"] = rebuild_rate
    out["decode_fold_rate"] = decode_fold_rate
    rounded: dict[str, Any] = {
        k: v if isinstance(v, list) or v is None else _round(v) for k, v in out.items()
    }
    rounded["cpu_us_per_cycle"] = {
        name: {proc: round(us, 1) for proc, us in result.cpu_us_per_cycle.items()}
        for name, result in results.items()
        if result is not None
    }
    return rounded


def peer_line(result: PeerResult) -> str:
    """One human-readable line of a peer's figures."""
    cpu = ", ".join(f"{proc} {us:.0f}" for proc, us in result.cpu_us_per_cycle.items())
    return (
        f"{result.name:8} claim p50 {_p50(result.claim_ms) or 0:.2f} ms, "
        f"p99 {pct(result.claim_ms, 0.99) if result.claim_ms else 0:.2f} ms; "
        f"cycle p50 {_p50(result.cycle_ms) or 0:.2f} ms; "
        f"{result.cycles_per_s:.0f} cycles/s{_rounds(result)}; "
        f"mix {result.mix_ops_per_s:.0f} ops/s; "
        f"CPU us/cycle: {cpu}"
    )


def _rounds(result: PeerResult) -> str:
    rates = result.rounds_cycles_per_s
    if len(rates) < 2:
        return ""
    return " (median of " + " / ".join(f"{r:.0f}" for r in rates) + ")"


def parse_decode_fold(output: str) -> float | None:
    """The rate from ``bench_core.py``'s last line ``decode+fold: N records/s``."""
    for line in reversed(output.splitlines()):
        if line.startswith("decode+fold:"):
            return float(line.split()[1])
    return None
