"""Checkpoints read out of a real DuckDB file: parts joined, incomplete values skipped."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from oncelog.projector.checkpoint_fold import RawRecord, fold_records
from oncelog.projector.checkpoint_store import CheckpointStore
from oncelog.projector.store import Store
from oncelog.projector.tables import CHECKPOINTS
from oncelog.query.checkpoints import CheckpointQuery, list_checkpoints, list_parts
from oncelog.schemas.checkpoint_parts import kafka_key, record_key
from oncelog.schemas.codec import encode_checkpoint
from oncelog.schemas.models import CheckpointKind, CheckpointRecord

TOPIC = "t.checkpoints"


def _raws(records: list[CheckpointRecord], first_offset: int = 0) -> list[RawRecord]:
    return [
        RawRecord(0, first_offset + i, kafka_key(record_key(r), r.part), encode_checkpoint(r), 1)
        for i, r in enumerate(records)
    ]


def _checkpoint(cid: str, parts: list[bytes], **fields: object) -> list[CheckpointRecord]:
    return [
        CheckpointRecord(
            CheckpointKind.CHECKPOINT, "th", "", cid, "bytes", i, len(parts), data,
            metadata_type="json", metadata=b"{}", channel_versions_json=json.dumps({"c": "1"}),
            **fields,  # type: ignore[arg-type]
        )
        for i, data in enumerate(parts)
    ]  # fmt: skip


def _blob(version: str, data: bytes) -> CheckpointRecord:
    return CheckpointRecord(
        CheckpointKind.BLOB, "th", "", "", "bytes", 0, 1, data, channel="c", version=version
    )


def test_a_checkpoint_is_listed_once_all_its_parts_are_folded(tmp_path: Path) -> None:
    with Store(tmp_path / "p.duckdb") as store:
        target = CheckpointStore(store)
        head, tail = _checkpoint("c2", [b"ab", b"cd"])
        target.commit(fold_records(TOPIC, _raws([_blob("1", b"v1"), *_checkpoint("c1", [b"x"])])))
        target.commit(fold_records(TOPIC, _raws([head], 2)))
        con = store.cursor()
        items, more = list_checkpoints(con, CheckpointQuery("th"), 10)
        assert ([i.checkpoint_id for i in items], more) == (["c1"], False)  # c2: half there
        target.commit(fold_records(TOPIC, _raws([tail], 3)))
        items, more = list_checkpoints(con, CheckpointQuery("th"), 1)
        assert [(i.checkpoint_id, i.data) for i in items] == [("c2", b"abcd")]
        assert more  # c1 is on the next page
        assert [(b.channel, b.data) for b in items[0].blobs] == [("c", b"v1")]
        assert target.positions() == {0: 4}


def test_a_tombstone_deletes_one_part_and_the_filter_matches_metadata(tmp_path: Path) -> None:
    with Store(tmp_path / "p.duckdb") as store:
        target = CheckpointStore(store)
        one = _checkpoint("c1", [b"x"], metadata_json='{"source": "input", "step": 1}')
        two = _checkpoint("c2", [b"y"], metadata_json='{"source": "loop", "step": 2}')
        target.commit(fold_records(TOPIC, _raws([*one, *two])))
        con = store.cursor()
        loop = CheckpointQuery("th", filter={"source": "loop"})
        assert [i.checkpoint_id for i in list_checkpoints(con, loop, 10)[0]] == ["c2"]
        gone = RawRecord(0, 2, kafka_key(record_key(two[0]), 0), None, 1)
        target.commit(fold_records(TOPIC, [gone]))
        assert list_checkpoints(con, loop, 10) == ([], False)
        assert [p.checkpoint_id for p in list_parts(con, thread_id="th", limit=10)] == ["c1"]


def test_a_file_without_a_newer_optional_column_gains_it_and_takes_commits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "p.duckdb"
    older = ", ".join(f'"{c.name}" {c.sql}' for c in CHECKPOINTS if c.name != "run_id")
    with duckdb.connect(str(path)) as con:
        con.execute(f"CREATE TABLE checkpoints ({older})")
    with Store(path) as store:  # the migration adds the nullable column back
        target = CheckpointStore(store)
        target.commit(fold_records(TOPIC, _raws(_checkpoint("c1", [b"x"], run_id="r1"))))
        con = store.cursor()
        assert [p.run_id for p in list_parts(con, thread_id="th", limit=10)] == ["r1"]
        assert [p.checkpoint_id for p in list_parts(con, run_ids=["r1"], limit=10)] == ["c1"]
