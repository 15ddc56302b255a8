"""Memory of the projector's in-memory structures per million operations (tracemalloc).

``python -m bench.bench_memory [--operations N]``: N operations claimed and completed by
the fold, their states encoded as DuckDB blobs and decoded again (as a miss reloads
them, sharing nothing with the requests), put into a :class:`StateCache`, and their
ids into the projector's filter of known operation ids (:class:`KnownIds`, a fixed size
whatever the count). Prints bytes per operation and the extrapolation to one million.
"""

from __future__ import annotations

import argparse
import gc
import json
import tracemalloc

from bench.synthetic import claim_complete
from oncelog.projector.known_ids import KnownIds
from oncelog.projector.state_blob import decode_state, encode_state
from oncelog.projector.states import StateCache
from oncelog.referee.fold import PartitionClock
from oncelog.referee.judge import judge
from oncelog.schemas.models import ExecutionState


def _blobs(operations: int) -> list[bytes]:
    blobs: list[bytes] = []
    clock = PartitionClock()
    for start in range(0, operations, 5000):
        end = min(start + 5000, operations)
        pairs = [claim_complete("ch", f"k-{i}") for i in range(start, end)]
        records = [(r, 1_700_000_000_000 + i) for i, r in enumerate(x for p in pairs for x in p)]
        touched: dict[str, ExecutionState] = {}
        for offset, (request, ts_ms) in enumerate(records, start):
            clock, state, _ = judge(
                touched.get(request.operation_id),
                request,
                clock,
                ts_ms=ts_ms,
                partition=0,
                offset=offset,
            )
            if state is not None:
                touched[request.operation_id] = state
        blobs += [encode_state(s) for s in touched.values()]
    return blobs


def measure(operations: int) -> dict[str, float]:
    """Bytes per operation of the state cache and of the known-id filter."""
    blobs = _blobs(operations)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    cache = StateCache(max_states=operations)
    for blob in blobs:
        cache.put(0, decode_state(blob))
    states = tracemalloc.get_traced_memory()[0]
    known = KnownIds()
    known.update(f"{i:08d}-0000-5000-8000-000000000000" for i in range(operations))
    ids = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    assert len(cache) == operations
    per_state = (states - base) / operations
    return {
        "operations": operations,
        "state_cache_bytes_per_op": round(per_state),
        "mib_per_million_states": round(per_state * 1e6 / 2**20),
        "known_ids_mib": round((ids - states) / 2**20, 1),
    }


def main() -> None:
    """Print the figures as one JSON line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--operations", type=int, default=1_000_000)
    print(json.dumps(measure(parser.parse_args().operations)))


if __name__ == "__main__":
    main()
