"""Cost of the projector's publishing encoders, per record (not a test).

    python bench/bench_codec.py [N]

Folds N (default 100,000) synthetic requests like ``bench_core`` (log times
at a realistic epoch, so timestamps take their real varint width), then times
``encode_decision`` on changed and unchanged decisions, ``encode_snapshot``
and the DuckDB ``encode_state`` blob, each on its own ("cold": the same state
is encoded there for the first time) and as the projector runs them for a
batch ("publish": decisions, then snapshots, then blobs, sharing the states).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from typing import TypeVar

from bench.bench_core import generate
from oncelog.projector.fold import PartitionClock, fold, snapshot_of
from oncelog.projector.state_blob import encode_state
from oncelog.schemas import codec
from oncelog.schemas.codec import decode_request, encode_decision, encode_snapshot
from oncelog.schemas.models import Decision, ExecutionSnapshot, ExecutionState, evolve

T = TypeVar("T")
EPOCH_MS = 1_700_000_000_000


def fold_all(count: int) -> tuple[list[Decision], list[ExecutionSnapshot]]:
    """Every decision (stamped with a source position) and snapshot of ``count`` requests."""
    states: dict[str, ExecutionState] = {}
    clock = PartitionClock()
    decisions: list[Decision] = []
    snapshots: list[ExecutionSnapshot] = []
    for offset, (data, broker_ts) in enumerate(generate(count)):
        request = decode_request(data)
        clock, t = clock.advance(EPOCH_MS + broker_ts)
        state, decision = fold(states.get(request.operation_id), request, t)
        if state is not None:
            states[request.operation_id] = state
        decision = evolve(decision, source_partition=3, source_offset=offset)
        decisions.append(decision)
        if decision.changed:
            snapshots.append(snapshot_of(decision, 3, offset))
    return decisions, snapshots


def _forget() -> None:
    """Drop any memo of encoded states, so that a section starts cold."""
    clear = getattr(codec, "clear_state_bodies", None)
    if clear is not None:
        clear()


def per_item_us(encode: Callable[[T], bytes], items: Sequence[T], rounds: int = 3) -> float:
    """The best of ``rounds`` cold passes, in microseconds per item."""
    best = float("inf")
    for _ in range(rounds):
        _forget()
        started = time.perf_counter()
        for item in items:
            encode(item)
        best = min(best, time.perf_counter() - started)
    return best / max(len(items), 1) * 1e6


def publish_us(
    decisions: Sequence[Decision], snapshots: Sequence[ExecutionSnapshot], batch: int = 5000
) -> float:
    """The projector's order per batch; microseconds per request."""
    best = float("inf")
    for _ in range(3):
        _forget()
        started = time.perf_counter()
        snap_at = 0
        for start in range(0, len(decisions), batch):
            chunk = decisions[start : start + batch]
            last = chunk[-1].source_offset
            for d in chunk:
                encode_decision(d)
            mine = []
            while snap_at < len(snapshots) and snapshots[snap_at].source_offset <= last:
                mine.append(snapshots[snap_at])
                snap_at += 1
            for s in mine:
                encode_snapshot(s)
            for s in mine:
                encode_state(s.state)
        best = min(best, time.perf_counter() - started)
    return best / len(decisions) * 1e6


def main() -> None:
    """Fold, time, print one line per measurement."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    decisions, snapshots = fold_all(count)
    changed = [d for d in decisions if d.changed]
    unchanged = [d for d in decisions if not d.changed]
    print(f"{len(decisions):,} decisions ({len(changed):,} changed), {len(snapshots):,} snapshots")
    print(f"encode_decision changed:   {per_item_us(encode_decision, changed):6.2f} us")
    print(f"encode_decision unchanged: {per_item_us(encode_decision, unchanged):6.2f} us")
    print(f"encode_snapshot:           {per_item_us(encode_snapshot, snapshots):6.2f} us")
    states = [s.state for s in snapshots]
    print(f"encode_state (blob):       {per_item_us(encode_state, states):6.2f} us")
    print(f"publish path per request:  {publish_us(decisions, snapshots):6.2f} us")


if __name__ == "__main__":
    main()
