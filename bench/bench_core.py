"""Decode+fold throughput of the referee on one core (not a test).

    python bench/bench_core.py [N] [--profile] [--generate-only] [--fastavro-requests] [--publish]

Generates N (default 1,000,000) encoded requests over many operations, in a
realistic mix (a claim, a few heartbeats, a completion; some contention,
failures and retries), then times decoding and folding them. The last line is
``decode+fold: <N> records/s``.

For instruction counts, which the other sessions on a shared machine do not
disturb, run it under ``valgrind --tool=callgrind`` with a small N, and subtract
a ``--generate-only`` run. ``--fastavro-requests`` decodes with fastavro instead
of the request reader generated from request.avsc. ``--publish`` adds what the
projector does with each verdict (encode the decision; for a new state version
its snapshot, its state blob and its history and executions rows; the audit row):
subtract a run without it for the publish stage alone.
"""

from __future__ import annotations

import cProfile
import gc
import pstats
import random
import sys
import time
from collections.abc import Callable

from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.ids import operation_id, request_hash
from oncelog.projector.rows import audit_row, execution_row, history_row
from oncelog.projector.state_blob import encode_state
from oncelog.referee.fold import PartitionClock, fold
from oncelog.schemas import codec, convert
from oncelog.schemas.codec import decode_request, encode_decision, encode_request, encode_snapshot
from oncelog.schemas.models import (
    Body,
    Claim,
    Complete,
    Decision,
    Effect,
    ExecutionSnapshot,
    ExecutionState,
    Fail,
    Heartbeat,
    Request,
)

LEASE_MS = 30_000


def _lifecycle(rng: random.Random, index: int, t: int) -> list[tuple[bytes, int]]:
    """The encoded requests of one operation, with broker timestamps."""
    channel, key = f"run-{index // 8}", f"step-{index % 8}"
    op = operation_id(channel, key)
    params = {"order_id": str(index), "amount_cents": rng.randrange(10_000), "ts": t}
    claim = Claim(
        "charge",
        canonical_json(params),
        request_hash("charge", params, ["order_id"]),
        LEASE_MS,
        86_400_000,
        Effect.EXTERNAL,
        "w1",
    )
    token = f"tok-{index}"
    n = 0

    def make(body: Body, tok: str | None = token) -> Request:
        nonlocal n
        n += 1
        return Request(f"{op}-{n}", op, channel, key, tok, body)

    out = [make(claim)]
    if rng.random() < 0.2:
        out.append(make(claim, f"other-{index}"))  # contention: in_progress
    out.extend(make(Heartbeat()) for _ in range(rng.randrange(1, 6)))
    if rng.random() < 0.05:
        out.append(make(Fail("transient", True)))
    else:
        out.append(make(Complete(canonical_json({"charge_id": f"ch_{index}"}))))
    if rng.random() < 0.1:
        out.append(out[-1])  # a producer retry of the same request id
    return [(encode_request(r), t + i * 1_000) for i, r in enumerate(out)]


def generate(count: int, seed: int = 7) -> list[tuple[bytes, int]]:
    """At least ``count`` encoded requests, interleaved across live operations."""
    rng = random.Random(seed)
    records: list[tuple[bytes, int]] = []
    index = 0
    while len(records) < count:
        batch = [_lifecycle(rng, index + i, len(records)) for i in range(64)]
        index += 64
        # interleave 64 concurrent operations, as a partition would
        for step in range(max(len(b) for b in batch)):
            records.extend(b[step] for b in batch if step < len(b))
    return records


def _decode_with_fastavro(data: bytes) -> Request:
    return codec._decode(codec.REGISTRY, codec.REQUEST, data, convert.request_from_avro)


def publish(offset: int, request: Request, decision: Decision) -> int:
    """What the projector makes of one verdict (encodings and rows); their size."""
    size = len(encode_decision(decision))
    audit = audit_row(0, offset, decision.log_time_ms, request, decision)
    state = decision.state
    if decision.changed and state is not None:
        snap = ExecutionSnapshot(
            state, 0, offset, decision.request_id, decision.outcome, decision.log_time_ms
        )
        size += len(encode_snapshot(snap))
        size += len(history_row(snap, encode_state(state)))
        size += len(execution_row(snap))
    return size + len(audit)


def decode_and_fold(
    records: list[tuple[bytes, int]],
    decode: Callable[[bytes], Request] = decode_request,
    then: Callable[[int, Request, Decision], int] | None = None,
) -> dict[str, ExecutionState]:
    """The projector's hot loop without I/O; ``then`` (:func:`publish`) gets each verdict."""
    states: dict[str, ExecutionState] = {}
    clock = PartitionClock()
    get = states.get
    for offset, (data, broker_ts) in enumerate(records):
        request = decode(data)
        clock, t = clock.advance(broker_ts)
        state, decision = fold(get(request.operation_id), request, t)
        if then is not None:
            then(offset, request, decision)
        if state is not None:
            states[request.operation_id] = state
    return states


def main() -> None:
    """Generate, time, print; ``--profile`` adds the top cProfile entries."""
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 1_000_000
    started = time.perf_counter()
    records = generate(count)
    print(f"generated {len(records):,} records in {time.perf_counter() - started:.1f} s")
    # The 1M input records stand for librdkafka's fetch buffers, which are not Python
    # objects: keep the collector from rescanning them on every full collection. Both runs
    # freeze them, so that the difference of the two under callgrind is decode+fold alone.
    gc.collect()
    gc.freeze()
    if "--generate-only" in sys.argv:
        return
    decode = _decode_with_fastavro if "--fastavro-requests" in sys.argv else decode_request
    started = time.perf_counter()
    states = decode_and_fold(records, decode, publish if "--publish" in sys.argv else None)
    elapsed = time.perf_counter() - started
    print(f"folded into {len(states):,} operations in {elapsed:.2f} s")
    print(f"{elapsed / len(records) * 1e6:.2f} us per record")
    if "--profile" in sys.argv:
        profiler = cProfile.Profile()
        profiler.runcall(decode_and_fold, records[:200_000])
        pstats.Stats(profiler).sort_stats("tottime").print_stats(12)
    stage = "decode+fold+publish" if "--publish" in sys.argv else "decode+fold"
    print(f"{stage}: {int(len(records) / elapsed)} records/s")


if __name__ == "__main__":
    main()
