"""The soak sampler's readers: serve's folded offsets, the claims' latency, an RSS."""

from __future__ import annotations

import json
import os
from pathlib import Path

from drills.soak.sampler import CallTail, duckdb_mb, folded, percentile, rss_mb

_METRICS = """# HELP oncelog_last_folded_offset Offset of the last request folded
# TYPE oncelog_last_folded_offset gauge
oncelog_last_folded_offset{partition="0",topic="soak.requests"} 41.0
oncelog_last_folded_offset{partition="2",topic="soak.requests"} -1.0
oncelog_consumer_lag{partition="0",topic="soak.requests"} 3.0
"""


def test_folded_reads_the_next_offset_per_partition() -> None:
    assert folded(_METRICS) == {0: 42, 2: 0}


def test_call_tail_reads_each_answered_claim_once(tmp_path: Path) -> None:
    path = tmp_path / "calls-0.jsonl"
    claim = {"kind": "claim", "t0": 1.0, "t1": 1.004, "status": "claimed"}
    lines = [claim, {**claim, "t1": 1.5, "status": None, "code": "timeout"},
             {"kind": "complete", "t0": 2.0, "t1": 2.1, "status": "completed"}]  # fmt: skip
    del lines[1]["status"]  # an error: no answer, no latency
    path.write_text("".join(json.dumps(x) + "\n" for x in lines) + '{"kind": "cla')
    tail = CallTail(tmp_path)
    assert [round(ms, 3) for ms in tail.claim_latencies_ms()] == [4.0]
    assert tail.claim_latencies_ms() == []  # read once; the cut line waits
    with path.open("a") as f:
        f.write('im", "t0": 3.0, "t1": 3.02, "status": "in_progress"}\n')
    assert [round(ms, 3) for ms in tail.claim_latencies_ms()] == [20.0]


def test_percentile_is_the_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 0.5) == 50.0
    assert percentile([7.0], 0.99) == 7.0


def test_rss_of_this_process_and_of_none() -> None:
    mine = rss_mb(os.getpid())
    assert mine is not None
    assert mine > 1
    assert rss_mb(None) is None


def test_duckdb_memory_is_summed_over_its_tags_from_a_metrics_page() -> None:
    page = (
        "# TYPE oncelog_duckdb_memory_bytes gauge\n"
        'oncelog_duckdb_memory_bytes{tag="base_table"} 4.0e+07\n'
        'oncelog_duckdb_memory_bytes{tag="art_index"} 2500000.0\n'
        'oncelog_last_folded_offset{partition="0"} 9.0\n'
    )
    assert duckdb_mb(page) == 42.5
    assert duckdb_mb('oncelog_last_folded_offset{partition="0"} 9.0\n') is None
