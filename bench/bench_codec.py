"""Cost of the projector's publishing encoders, per record (not a test).

    python bench/bench_codec.py [N]

Folds N (default 100,000) synthetic requests like ``bench_core`` (log times
at a realistic epoch, so timestamps take their real varint width), then times
``encode_decision`` on changed and unchanged decisions, ``encode_snapshot``
and the DuckDB ``encode_state`` blob, each on its own ("cold": the same state
is encoded there for the first time) and as the projector runs them for a
batch ("publish": decisions, then snapshots, then blobs, sharing the states),
next to the same records written the old way (convert's dicts + fastavro).
"""

from __future__ import annotations

import io
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, TypeVar

import fastavro

from bench.bench_core import generate
from oncelog.projector import state_blob
from oncelog.projector.state_blob import encode_state
from oncelog.referee.fold import PartitionClock, fold, snapshot_of
from oncelog.schemas import codec, convert
from oncelog.schemas.codec import decode_request, encode_decision, encode_snapshot
from oncelog.schemas.models import Decision, ExecutionSnapshot, ExecutionState, evolve

T = TypeVar("T")
EPOCH_MS = 1_700_000_000_000
# CPU time of this process, best of a few rounds: steadier than wall time on a
# shared machine (other processes preempting us do not count).
_clock = time.process_time


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


class Encoders(NamedTuple):
    """The three publishing encoders of one implementation."""

    decision: Callable[[Decision], bytes]
    snapshot: Callable[[ExecutionSnapshot], bytes]
    state: Callable[[ExecutionState], bytes]


def _fastavro(schema: Any, to_avro: Callable[[T], dict[str, Any]]) -> Callable[[T], bytes]:
    """An encoder as the codec was before the hand-written writer: dict, then fastavro."""
    header = codec.MAGIC + codec.schema_fingerprint(schema)

    def encode(item: T) -> bytes:
        buf = io.BytesIO()
        buf.write(header)
        fastavro.schemaless_writer(buf, schema, to_avro(item))
        return buf.getvalue()

    return encode


FASTAVRO = Encoders(
    _fastavro(codec.REGISTRY.current[codec.DECISION], convert.decision_to_avro),
    _fastavro(codec.REGISTRY.current[codec.SNAPSHOT], convert.snapshot_to_avro),
    _fastavro(state_blob._SCHEMA, convert.state_to_avro),
)
CURRENT = Encoders(encode_decision, encode_snapshot, encode_state)


def _forget() -> None:
    """Drop the memo of state bodies, so that a pass starts cold.

    The memos of encoded longs and strings stay warm, as in a running projector.
    """
    clear = getattr(codec, "clear_state_bodies", None)
    if clear is not None:
        clear()


def per_item_us(encode: Callable[[T], bytes], items: Sequence[T], rounds: int = 3) -> float:
    """The best of ``rounds`` cold passes, in microseconds per item."""
    best = float("inf")
    for _ in range(rounds):
        _forget()
        started = _clock()
        for item in items:
            encode(item)
        best = min(best, _clock() - started)
    return best / max(len(items), 1) * 1e6


def _batches(
    decisions: Sequence[Decision], snapshots: Sequence[ExecutionSnapshot], size: int = 5000
) -> list[tuple[Sequence[Decision], list[ExecutionSnapshot]]]:
    """The decisions in batches of ``size``, each with the snapshots it made."""
    out = []
    snap_at = 0
    for start in range(0, len(decisions), size):
        chunk = decisions[start : start + size]
        mine = []
        last = chunk[-1].source_offset
        while snap_at < len(snapshots) and snapshots[snap_at].source_offset <= last:
            mine.append(snapshots[snap_at])
            snap_at += 1
        out.append((chunk, mine))
    return out


def publish_us(
    encoders: Encoders, batches: list[tuple[Sequence[Decision], list[ExecutionSnapshot]]]
) -> float:
    """The projector's order per batch (decisions, snapshots, blobs); us per request."""
    best = float("inf")
    requests = sum(len(chunk) for chunk, _ in batches)
    for _ in range(3):
        _forget()
        started = _clock()
        for chunk, mine in batches:
            for d in chunk:
                encoders.decision(d)
            for snap in mine:
                encoders.snapshot(snap)
            for snap in mine:
                encoders.state(snap.state)
        best = min(best, _clock() - started)
    return best / requests * 1e6


def main() -> None:
    """Fold, time, print one line per measurement: fastavro, then the current codec."""
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    decisions, snapshots = fold_all(count)
    changed = [d for d in decisions if d.changed]
    unchanged = [d for d in decisions if not d.changed]
    states = [s.state for s in snapshots]
    batches = _batches(decisions, snapshots)
    print(f"{len(decisions):,} decisions ({len(changed):,} changed), {len(snapshots):,} snapshots")
    print(f"{'us per encode':28}{'fastavro':>10}{'oncelog':>10}")
    rows: list[tuple[str, Callable[[Encoders], float]]] = [
        ("decision, changed", lambda e: per_item_us(e.decision, changed)),
        ("decision, unchanged", lambda e: per_item_us(e.decision, unchanged)),
        ("snapshot", lambda e: per_item_us(e.snapshot, snapshots)),
        ("state blob", lambda e: per_item_us(e.state, states)),
        ("publish path, per request", lambda e: publish_us(e, batches)),
    ]
    for label, measure in rows:
        print(f"{label:28}{measure(FASTAVRO):10.2f}{measure(CURRENT):10.2f}")


if __name__ == "__main__":
    main()
