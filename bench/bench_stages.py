"""The projector's work per record, stage by stage, for callgrind (not a test).

    python -m bench.bench_stages STAGE [N]

Runs ``bench_core``'s N (default 10,000) generated records through the projector's
steps up to STAGE, without Kafka or DuckDB: ``generate`` (nothing), ``decode``,
``fold``, ``publish`` (the decision and, for a new version, the snapshot and its
state blob encoded), ``rows`` (the audit, history and current rows). Under
``valgrind --tool=callgrind``, a stage's instructions per record are its run
minus the previous stage's, divided by the records.
"""

from __future__ import annotations

import gc
import sys

from bench.bench_core import generate
from oncelog.projector.rows import audit_row, execution_row, history_row
from oncelog.referee.fold import PartitionClock, fold, snapshot_of
from oncelog.schemas.codec import (
    decode_request,
    encode_decision,
    encode_snapshot,
    encode_state_body,
)
from oncelog.schemas.models import ExecutionState

STAGES = ("generate", "decode", "fold", "publish", "rows")


def run(records: list[tuple[bytes, int]], upto: int) -> int:
    """The stages ``STAGES[1:upto + 1]`` over ``records``; returns the records done."""
    states: dict[str, ExecutionState] = {}
    clock = PartitionClock()
    for offset, (data, broker_ts) in enumerate(records):
        request = decode_request(data)
        if upto < 2:
            continue
        clock, t = clock.advance(broker_ts)
        state, decision = fold(states.get(request.operation_id), request, t)
        if state is not None:
            states[request.operation_id] = state
        if upto < 3:
            continue
        encode_decision(decision)
        if decision.changed:
            snap = snapshot_of(decision, 0, offset)
            encode_snapshot(snap)
            blob = encode_state_body(snap.state)
        if upto < 4:
            continue
        audit_row(0, offset, t, request, decision)
        if decision.changed:
            history_row(snap, blob)
            execution_row(snap)
    return len(records)


def main() -> None:
    """Generate, then run the stages up to the one named."""
    stage = sys.argv[1] if len(sys.argv) > 1 else "rows"
    count = int(sys.argv[2]) if len(sys.argv) > 2 else 10_000
    records = generate(count)
    gc.collect()
    gc.freeze()
    if STAGES.index(stage) > 0:
        print(f"{stage}: {run(records, STAGES.index(stage))} records")


if __name__ == "__main__":
    main()
