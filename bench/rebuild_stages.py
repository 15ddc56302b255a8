"""Where a refold's CPU goes beyond decode+fold, stage by stage: ``python -m bench.rebuild_stages``.

    python -m bench.rebuild_stages [N]

Not a test. In one process, no Kafka and no DuckDB: ``bench/bench_core.py``'s N generated
records, each wrapped as the consumed record :class:`PartitionRefold` reads, then timed
(CPU time of this process, microseconds per record), each stage including the ones before it:
decode; admit (decode and the request checks); admit and judge; the refold's ``add`` (its
audit rows and versions too). Then, alone, ``take``: each version's state blob, the row
tuples, the Arrow tables. Last ``bench_core``'s decode+fold over the same records. A full
rebuild adds consuming (librdkafka) and DuckDB's inserts. The last line is JSON.
"""

from __future__ import annotations

import gc
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench import bench_core
from oncelog.projector.bulk_rebuild import PartitionRefold
from oncelog.referee.fold import PartitionClock
from oncelog.referee.judge import Refusal, admit, judge
from oncelog.schemas.codec import decode_request
from oncelog.schemas.models import ExecutionState


@dataclass(frozen=True, slots=True)
class Record:
    """What the refold reads of a consumed record (partition 0)."""

    data: bytes
    at: int
    ts_ms: int
    op: bytes

    def value(self) -> bytes:
        return self.data

    def key(self) -> bytes:
        return self.op

    def timestamp(self) -> tuple[int, int]:
        return (1, self.ts_ms)

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self.at


def _records(count: int) -> list[Record]:
    generated = bench_core.generate(count)
    ops = [decode_request(data).operation_id.encode() for data, _ in generated]
    return [
        Record(d, i, ts, op) for i, ((d, ts), op) in enumerate(zip(generated, ops, strict=True))
    ]


def _admit_judge(records: list[Record]) -> None:
    states: dict[str, ExecutionState] = {}
    clock = PartitionClock()
    for r in records:
        verdict = admit(r.data, r.op, partition=0, offset=r.at, ts_ms=r.ts_ms, partitions=1)
        if isinstance(verdict, Refusal):
            continue
        before = states.get(verdict.operation_id)
        clock, after, _ = judge(before, verdict, clock, ts_ms=r.ts_ms, partition=0, offset=r.at)
        if after is not None:
            states[verdict.operation_id] = after


def _add_all(refold: PartitionRefold, records: list[Record]) -> None:
    for r in records:
        refold.add(r)  # type: ignore[arg-type]  # a stand-in for confluent-kafka's Message


def _stages(records: list[Record]) -> dict[str, float]:
    """Microseconds of CPU per record of each cumulative stage."""
    refold = PartitionRefold("requests", 0, 1)
    plain = [(r.data, r.ts_ms) for r in records]
    steps: dict[str, Callable[[], object]] = {
        "decode": lambda: [decode_request(r.data) for r in records],
        "admit": lambda: [
            admit(r.data, r.op, partition=0, offset=r.at, ts_ms=r.ts_ms, partitions=1)
            for r in records
        ],
        "admit_judge": lambda: _admit_judge(records),
        "add": lambda: _add_all(refold, records),
        "take": refold.take,
        "decode_fold": lambda: bench_core.decode_and_fold(plain),
    }
    out: dict[str, float] = {}
    for name, step in steps.items():
        began = time.process_time()
        step()
        out[name] = round((time.process_time() - began) / len(records) * 1e6, 2)
    return out


def main() -> None:
    """Generate, time each stage with the collector paused (as the rebuild runs), print."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 200_000
    records = _records(count)
    gc.collect()
    gc.freeze()
    gc.disable()
    load = os.getloadavg()[0]
    figures: dict[str, object] = dict(_stages(records))
    figures["load_avg_1m"] = [round(load, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
