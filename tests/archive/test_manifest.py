"""The manifest and the archive's columns, without I/O."""

from __future__ import annotations

import dataclasses

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from oncelog.archive import columns
from oncelog.archive.manifest import (
    FileEntry,
    Manifest,
    Record,
    file_name,
    parse_file_name,
    records_digest,
)
from oncelog.errors import ArchiveCorruptError
from oncelog.schemas import layout
from oncelog.schemas.codec import encode_request
from tests.archive.records import claim


def _entry(start: int, end: int) -> FileEntry:
    return FileEntry(
        file_name(start, end), start, end, end - start, start, end - 1, 1, 2, 9, "s", "d"
    )


def test_file_names_sort_as_offsets_and_parse_back() -> None:
    names = [file_name(s, s + 10) for s in (0, 10, 100, 9_000_000)]
    assert sorted(names) == names
    assert [parse_file_name(n) for n in names] == [(s, s + 10) for s in (0, 10, 100, 9_000_000)]
    assert parse_file_name(f"{names[0]}.tmp-abc") is None
    assert parse_file_name("manifest.json") is None


def test_a_manifest_is_contiguous_and_reads_back_equal() -> None:
    manifest = Manifest("t.requests", 3).with_file(_entry(0, 10)).with_file(_entry(10, 25))
    assert (manifest.start_offset, manifest.end_offset, manifest.records) == (0, 25, 25)
    assert Manifest.from_json(manifest.to_json(), "m") == manifest
    with pytest.raises(ArchiveCorruptError, match="starts at 26"):
        manifest.with_file(_entry(26, 30))


def test_a_document_that_is_not_a_manifest_is_corrupt() -> None:
    with pytest.raises(ArchiveCorruptError, match="not an archive manifest"):
        Manifest.from_json(b'{"format": 99}', "m")


def test_the_records_digest_sees_any_change() -> None:
    base = [Record(0, 5, b"k", b"v"), Record(1, 6, None, b"w")]
    variants = [
        [dataclasses.replace(base[0], offset=2), base[1]],
        [dataclasses.replace(base[0], timestamp_ms=7), base[1]],
        [dataclasses.replace(base[0], key=None), base[1]],
        [base[0], dataclasses.replace(base[1], value=b"x")],
        base[:1],
    ]
    assert len({records_digest(v) for v in [base, *variants]}) == len(variants) + 1


def test_every_field_of_request_avsc_is_a_column() -> None:
    fields = [f["name"] for f in layout.CURRENT[layout.REQUEST]["fields"]]
    assert set(fields) <= set(columns.SCHEMA.names)
    body = columns.SCHEMA.field("body").type
    claim_fields = [
        f["name"]
        for f in layout.named_types(layout.CURRENT[layout.REQUEST])["dev.oncelog.Claim"]["fields"]
    ]
    assert [
        body.field("Claim").type.field(i).name for i in range(len(claim_fields))
    ] == claim_fields


def test_a_file_keeps_the_raw_bytes_and_the_decoded_fields() -> None:
    value = encode_request(claim(7))
    records = [Record(40, 1000, b"op7", value), Record(42, 1001, b"x", b"not avro")]
    data = columns.parquet_bytes(5, records)
    assert columns.read_records(data) == records
    assert columns.parquet_bytes(5, records) == data  # the same records, the same bytes
    rows = pq.read_table(pa.BufferReader(data)).to_pylist()
    assert rows[0]["partition"] == 5
    assert (rows[0]["body_type"], rows[0]["body"]["Claim"]["tool_name"]) == ("Claim", "tool-7")
    assert rows[0]["body"]["Claim"]["effect"] == "external"
    assert rows[0]["decode_error"] is None
    assert rows[1]["value"] == b"not avro"
    assert rows[1]["request_id"] is None
    assert "codec_error" in rows[1]["decode_error"]
