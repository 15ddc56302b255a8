"""CPU time of ``Store.commit`` per folded request, by batch size, in process.

``python -m bench.bench_commit [--records N] [--batch B ...] [--threads T] [--checkpoint-mb M]
[--row-group-rows R]``: claim + complete of fresh operations on one partition, folded in
memory ahead of time, then committed in batches of B records to a fresh DuckDB file (with
``serve``'s checkpoint threshold unless told otherwise). Process CPU time (every thread,
DuckDB's included) is divided by the records committed; ``by_fifth`` gives it for each fifth
of the run, as the file grows. ``--row-group-rows 122880`` writes DuckDB's default row groups
(:mod:`oncelog.projector.store_file`).
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.synthetic import claim_complete
from oncelog.projector import store_file
from oncelog.projector.store import AuditEntry, Batch, Position, Store
from oncelog.referee.fold import PartitionClock, snapshot_of
from oncelog.referee.judge import judge
from oncelog.schemas.models import ExecutionState
from oncelog.settings import Settings

#: ``serve``'s checkpoint threshold (``ONCELOG_DUCKDB_CHECKPOINT_MB``), the bench's default.
SERVE_CHECKPOINT_MB: int = Settings.model_fields["duckdb_checkpoint_mb"].default


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


def measure(
    records: int, size: int, threads: int | None = None, checkpoint_mb: int = SERVE_CHECKPOINT_MB
) -> dict[str, Any]:
    """CPU microseconds per record of committing ``records`` in batches of ``size``, in all
    and by fifth of the batches (``threads``: DuckDB's worker threads; None: its default,
    one per core)."""
    batches = fold_batches(records, size)
    costs = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        Store(Path(tmp) / "c.duckdb", threads=threads, checkpoint_mb=checkpoint_mb) as store,
    ):
        for batch in batches:
            began = time.process_time()
            store.commit(batch)
            costs.append(((time.process_time() - began) * 1e6, len(batch.audit)))
    fifths = [costs[i * len(costs) // 5 : (i + 1) * len(costs) // 5] for i in range(5)]
    return {
        "all": _per_record(costs),
        "by_fifth": [_per_record(part) for part in fifths if part],
    }


def _per_record(costs: list[tuple[float, int]]) -> float:
    return round(sum(us for us, _ in costs) / sum(n for _, n in costs), 1)


def main() -> None:
    """Print CPU us per record for each batch size, as JSON."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--batch", type=int, nargs="+", default=[64, 500, 5000])
    parser.add_argument("--threads", type=int, default=None, help="DuckDB threads (default: all)")
    parser.add_argument(
        "--checkpoint-mb",
        type=int,
        default=SERVE_CHECKPOINT_MB,
        help="as ONCELOG_DUCKDB_CHECKPOINT_MB",
    )
    parser.add_argument("--row-group-rows", type=int, default=store_file.ROW_GROUP_ROWS)
    args = parser.parse_args()
    store_file.ROW_GROUP_ROWS = args.row_group_rows  # type: ignore[misc]  # a bench's knob
    result = {
        f"batch_{b}": measure(args.records, b, args.threads, args.checkpoint_mb) for b in args.batch
    }
    print(json.dumps({"records": args.records, "threads": args.threads,
                      "checkpoint_mb": args.checkpoint_mb, "row_group_rows": args.row_group_rows,
                      "commit_cpu_us_per_record": result}))  # fmt: skip


if __name__ == "__main__":
    main()
