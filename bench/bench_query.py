"""Benchmark ``step_status`` over a synthetic projection with N history rows.

Usage: ``python bench/bench_query.py [N] [path]`` (N defaults to 1_000_000).

The file is built with set-based SQL only: the bulk of the rows comes from
``INSERT … SELECT FROM range()`` (synthetic operation ids, four versions each),
and a few thousand real operations (whose ids the query derives with
``ids.operation_id``) are appended through Arrow so that the lookups hit real
rows inside the haystack. The schema is the store's own. Then 2,000 random
lookups (current, as of an offset, as of a time; a few absent) are timed
through a read-only connection. The last line is ``step_status p99: <x> ms``.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa

from oncelog.identity.ids import operation_id, step_key_name
from oncelog.projector.store import Store
from oncelog.query.queries import step_status

VERSIONS = 4
CHANNELS = 1_000
STEPS = 5
LOOKUPS = 2_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
STATE_BLOB = "repeat('x', 200)::BLOB"

_SYNTHETIC = f"""
INSERT INTO history
SELECT md5((i // {VERSIONS})::VARCHAR), i % {VERSIONS} + 1, 0, 'syn-' || (i // 20)::VARCHAR,
       'step-' || ((i // {VERSIONS}) % 5)::VARCHAR, i, i * 10,
       CASE WHEN i % {VERSIONS} = {VERSIONS - 1} THEN 'completed' ELSE 'claimed' END,
       'req-' || i::VARCHAR,
       CASE WHEN i % {VERSIONS} = {VERSIONS - 1} THEN 'COMPLETED' ELSE 'CLAIMED' END,
       1, 'w1', 'tok', 'pure', '"ok"'::BLOB, NULL, NULL, {STATE_BLOB}
FROM range(?) t(i)
"""
_CURRENT = f"""
INSERT INTO executions
SELECT operation_id, partition, channel_id, key_name, status, version, epoch, worker_id,
       effect, result, result_hash, expires_at_ms, valid_from_offset, log_time_ms
FROM history WHERE version = {VERSIONS}
"""


def _real_rows(base_offset: int) -> pa.Table:
    """Four versions of each real (channel, step) operation, offsets after the synthetic ones."""
    cols: dict[str, list[object]] = {name: [] for name in ("op", "ch", "key", "ver", "off")}
    offset = base_offset
    for channel in range(CHANNELS):
        for step in range(1, STEPS + 1):
            key = step_key_name(step)
            op = operation_id(f"bench-{channel}", key)
            for version in range(1, VERSIONS + 1):
                row = (op, f"bench-{channel}", key, version, offset)
                for name, value in zip(cols, row, strict=True):
                    cols[name].append(value)
                offset += 1
    return pa.table(cols)


def build(path: Path, rows: int) -> None:
    """Create the store's schema and fill it with ``rows`` history rows."""
    with Store(path) as store:
        con = store.cursor()
        # Bulk load first, index after: one ART build instead of millions of inserts.
        con.execute("DROP INDEX history_operation")
        synthetic = max(rows - CHANNELS * STEPS * VERSIONS, 0)
        con.execute(_SYNTHETIC, [synthetic])
        con.register("real", _real_rows(synthetic))
        con.execute(f"""
            INSERT INTO history
            SELECT op, ver, 0, ch, key, off, off * 10,
                   CASE WHEN ver = {VERSIONS} THEN 'completed' ELSE 'claimed' END,
                   'req-' || off::VARCHAR,
                   CASE WHEN ver = {VERSIONS} THEN 'COMPLETED' ELSE 'CLAIMED' END,
                   1, 'w1', 'tok', 'external', '"ok"'::BLOB, NULL, NULL, {STATE_BLOB}
            FROM real""")
        con.execute("CREATE INDEX history_operation ON history (operation_id)")
        con.execute(_CURRENT)
        con.close()
    with duckdb.connect(str(path)) as con:
        con.execute("CHECKPOINT")


def lookups(path: Path, seed: int = 7) -> list[float]:
    """Time random ``step_status`` calls; milliseconds each."""
    rng = random.Random(seed)
    con = duckdb.connect(str(path), read_only=True)
    row = con.execute("SELECT max(valid_from_offset) FROM history").fetchone()
    top = int(row[0]) if row and row[0] is not None else 0
    timings = []
    for _ in range(LOOKUPS):
        channel = f"bench-{rng.randrange(CHANNELS + 50)}"  # a few channels are absent
        step = rng.randint(1, STEPS)
        kind = rng.randrange(3)
        as_of: int | datetime | None = None
        if kind == 1:
            as_of = rng.randrange(top + 1)
        elif kind == 2:
            as_of = _EPOCH + timedelta(milliseconds=rng.randrange(top * 10 + 1))
        start = time.perf_counter()
        step_status(con, channel, step=step, as_of=as_of)
        timings.append((time.perf_counter() - start) * 1000)
    con.close()
    return timings


def main(argv: list[str]) -> None:
    rows = int(argv[1]) if len(argv) > 1 else 1_000_000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(argv[2]) if len(argv) > 2 else Path(tmp) / "bench.duckdb"
        start = time.perf_counter()
        build(path, rows)
        print(f"built {rows:,} history rows in {time.perf_counter() - start:.1f} s at {path}")
        timings = sorted(lookups(path))
        p50 = statistics.median(timings)
        p99 = timings[int(len(timings) * 0.99) - 1]
        print(f"{LOOKUPS} lookups: p50 {p50:.3f} ms, max {timings[-1]:.3f} ms")
        print(f"step_status p99: {p99:.3f} ms")


if __name__ == "__main__":
    main(sys.argv)
