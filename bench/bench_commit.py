"""CPU time of ``Store.commit`` per folded request, by batch size, in process.

``python -m bench.bench_commit [--records N] [--batch B ...] [--threads T]``: claim + complete of
fresh operations on one partition, folded in memory ahead of time, then committed in
batches of B records to a fresh DuckDB file. Process CPU time (every thread, DuckDB's
included) is divided by the records committed.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench.synthetic import claim_complete
from oncelog.projector.store import AuditEntry, Batch, Position, Store
from oncelog.referee.fold import PartitionClock, snapshot_of
from oncelog.referee.judge import judge
from oncelog.schemas.models import ExecutionState


def fold_batches(records: int, size: int) -> list[Batch]:
    """Claim + complete of ``records // 2`` fresh operations, folded into batches of ``size``."""
    states: dict[str, ExecutionState] = {}
    clock = PartitionClock()
    out: list[Batch] = []
    requests = [r for i in range(records // 2) for r in claim_complete("ch", f"k-{i}")]
    for start in range(0, len(requests), size):
        chunk = [(r, 1_700_000_000_000 + start + i) for i, r in enumerate(requests[start:][:size])]
        audit, snaps = [], []
        for offset, (request, ts_ms) in enumerate(chunk, start):
            op = request.operation_id
            clock, state, decision = judge(
                states.get(op), request, clock, ts_ms=ts_ms, partition=0, offset=offset
            )
            if state is not None:
                states[op] = state
            audit.append(AuditEntry(0, offset, decision.log_time_ms, request, decision))
            if decision.changed:
                snaps.append(snapshot_of(decision, 0, offset))
        out.append(Batch(audit, snaps, [], {0: Position(start + len(chunk), clock.last_ms)}))
    return out


def measure(records: int, size: int, threads: int | None = None) -> float:
    """CPU microseconds per record of committing ``records`` in batches of ``size``
    (``threads``: DuckDB's worker threads; None: its default, one per core)."""
    batches = fold_batches(records, size)
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store(Path(tmp) / "c.duckdb", threads=threads) as store,
    ):
        began = time.process_time()
        for batch in batches:
            store.commit(batch)
        return (time.process_time() - began) * 1e6 / records


def main() -> None:
    """Print CPU us per record for each batch size, as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 500, 5000])
    parser.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    args = parser.parse_args()
    result = {f"batch_{b}": round(measure(args.records, b, args.threads), 1) for b in args.batch}
    print(json.dumps({"records": args.records, "threads": args.threads,
                      "commit_cpu_us_per_record": result}))  # fmt: skip


if __name__ == "__main__":
    main()
