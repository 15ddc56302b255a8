"""The checkpoint store on a real DuckDB file with batches of more keys than one delete holds."""

from __future__ import annotations

from pathlib import Path

from oncelog.projector.checkpoint_fold import RawRecord, fold_records
from oncelog.projector.checkpoint_store import CheckpointStore
from oncelog.projector.store import Store
from oncelog.schemas.checkpoint_parts import kafka_key, record_key
from oncelog.schemas.codec import encode_checkpoint
from oncelog.schemas.models import CheckpointKind, CheckpointRecord

TOPIC = "t.checkpoints"
KEYS = 200  # over three times the keys one DELETE statement names


def _blob(n: int, data: bytes) -> CheckpointRecord:
    return CheckpointRecord(
        kind=CheckpointKind.BLOB,
        thread_id="th",
        checkpoint_ns="",
        checkpoint_id="",
        value_type="bytes",
        part=0,
        parts=1,
        data=data,
        channel=f"c{n:03}",
        version="1",
    )


def _batch(first_offset: int, data: bytes | None) -> list[RawRecord]:
    """One record per key (its tombstone when ``data`` is None), all in one batch."""
    records = [_blob(n, data or b"") for n in range(KEYS)]
    return [
        RawRecord(
            0,
            first_offset + i,
            kafka_key(record_key(r), r.part),
            None if data is None else encode_checkpoint(r),
            1_000 + i,
        )
        for i, r in enumerate(records)
    ]


def _stored(store: Store) -> list[tuple[str, bytes]]:
    """The thread's rows (every row, duplicates included), by channel."""
    con = store.cursor()
    try:
        sql = "SELECT channel, data FROM checkpoints WHERE thread_id = 'th' ORDER BY channel"
        return [(channel, bytes(data)) for channel, data in con.execute(sql).fetchall()]
    finally:
        con.close()


def test_a_batch_of_many_keys_replaces_and_deletes_every_one(tmp_path: Path) -> None:
    with Store(tmp_path / "p.duckdb") as store:
        target = CheckpointStore(store)
        target.commit(fold_records(TOPIC, _batch(0, b"v1")))
        target.commit(fold_records(TOPIC, _batch(KEYS, b"v2")))  # the same keys again
        assert _stored(store) == [(f"c{n:03}", b"v2") for n in range(KEYS)]
        target.commit(fold_records(TOPIC, _batch(2 * KEYS, None)))  # a tombstone for each
        assert _stored(store) == []
        assert target.positions() == {0: 3 * KEYS}
