"""The checkpoints' fold keeps what compaction keeps: the last record of each key. Pure."""

from __future__ import annotations

import dataclasses
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from oncelog.projector.checkpoint_fold import RawRecord, checkpoint_row, fold_records
from oncelog.projector.tables import CHECKPOINTS
from oncelog.schemas.checkpoint_parts import (
    join_parts,
    kafka_key,
    record_key,
    split_kafka_key,
    split_value,
)
from oncelog.schemas.codec import decode_checkpoint, encode_checkpoint
from oncelog.schemas.models import CheckpointKind, CheckpointRecord

TOPIC = "t.checkpoints"


def _record(n: int, data: bytes, part: int = 0, parts: int = 1) -> CheckpointRecord:
    return CheckpointRecord(
        CheckpointKind.BLOB,
        "thread-1",
        "",
        "",
        "bytes",
        part,
        parts,
        data,
        channel=f"c{n}",
        version="1",
    )


def _raw(offset: int, n: int, data: bytes | None) -> RawRecord:
    """A record of key ``n`` (a blob of channel c<n>), or its tombstone when ``data`` is None."""
    rec = _record(n, data or b"")
    value = None if data is None else encode_checkpoint(rec)
    return RawRecord(0, offset, kafka_key(record_key(rec), 0), value, 1_000 + offset)


Ops = st.lists(st.tuples(st.integers(0, 4), st.none() | st.binary(max_size=8)), max_size=40)


def _apply(rows: dict[Any, Any], records: list[RawRecord]) -> dict[Any, Any]:
    """What the store does with a batch's changes: delete the touched keys, insert the held."""
    out = dict(rows)
    for key, row in fold_records(TOPIC, records).rows.items():
        out.pop(key, None)
        if row is not None:
            out[key] = row
    return out


@given(Ops, st.integers(0, 40))
def test_rows_are_the_last_value_per_key_however_the_log_is_batched(
    ops: list[tuple[int, bytes | None]], cut: int
) -> None:
    log = [_raw(offset, n, data) for offset, (n, data) in enumerate(ops)]
    whole = _apply({}, log)
    assert _apply(_apply({}, log[:cut]), log[cut:]) == whole  # a restart between batches
    last = {n: (offset, data) for offset, (n, data) in enumerate(ops)}
    held = {n: v for n, v in last.items() if v[1] is not None}
    named = [_named(row) for row in whole.values()]
    assert {r["channel"]: (r["offset"], r["data"]) for r in named} == {
        f"c{n}": v for n, v in held.items()
    }


def _named(row: tuple[Any, ...]) -> dict[str, Any]:
    return dict(zip((c.name for c in CHECKPOINTS), row, strict=True))


def test_a_row_holds_every_field_of_its_record_under_the_field_s_name() -> None:
    rec = dataclasses.replace(_record(3, b"v"), run_id="r", idx=-2, metadata=b"{}")
    row = _named(checkpoint_row(2, 9, record_key(rec), rec))
    fields = {f.name: getattr(rec, f.name) for f in dataclasses.fields(rec)}
    assert row == {**fields, "record_key": record_key(rec), "partition": 2, "offset": 9}


@given(Ops)
def test_the_compacted_log_folds_to_the_same_rows(ops: list[tuple[int, bytes | None]]) -> None:
    log = [_raw(offset, n, data) for offset, (n, data) in enumerate(ops)]
    survivors = {r.key: r for r in log}  # compaction: the last record per key, same offsets
    compacted = sorted(survivors.values(), key=lambda r: r.offset)
    assert _apply({}, compacted) == _apply({}, log)


def test_a_record_that_cannot_be_read_is_a_dead_letter_and_the_partition_goes_on() -> None:
    good = _raw(1, 1, b"x")
    out = fold_records(TOPIC, [RawRecord(0, 0, b'["x"]', b"junk", 5), good])
    assert [(d.offset, d.code) for d in out.dead] == [(0, "invalid_argument")]
    assert out.positions == {0: 2}
    assert len(out.rows) == 1
    junk_value = RawRecord(0, 3, good.key, b"\xc3\x01junk", 6)
    assert [d.code for d in fold_records(TOPIC, [junk_value]).dead] == ["codec_error"]


def test_a_value_under_another_records_key_is_refused() -> None:
    other = _raw(0, 2, b"y")
    moved = RawRecord(0, 0, _raw(0, 1, b"x").key, other.value, 5)
    assert [d.code for d in fold_records(TOPIC, [moved]).dead] == ["invalid_argument"]


@given(st.binary(max_size=100), st.integers(1, 16))
def test_parts_join_back_to_the_value(data: bytes, size: int) -> None:
    chunks = split_value(data, size)
    assert all(0 < len(c) <= size for c in chunks) or data == b""
    assert join_parts(dict(enumerate(chunks)), len(chunks)) == data
    if len(chunks) > 1:
        assert join_parts(dict(enumerate(chunks[:-1])), len(chunks)) is None


@given(st.text(), st.text(), st.integers(0, 1000))
def test_a_kafka_key_names_its_record_and_part(thread: str, ns: str, part: int) -> None:
    rec = CheckpointRecord(
        CheckpointKind.WRITE, thread, ns, "c1", "json", 0, 1, b"", task_id="t", idx=-1
    )
    assert split_kafka_key(kafka_key(record_key(rec), part)) == (record_key(rec), part)


def test_a_record_round_trips_through_its_avro_schema() -> None:
    rec = CheckpointRecord(
        CheckpointKind.CHECKPOINT,
        "th",
        "ns",
        "c1",
        "msgpack",
        0,
        1,
        b"\x00\x01",
        parent_checkpoint_id="c0",
        run_id="r",
        metadata_type="msgpack",
        metadata=b"m",
        metadata_json='{"step": 1}',
        channel_versions_json="{}",
    )
    assert decode_checkpoint(encode_checkpoint(rec)) == rec
