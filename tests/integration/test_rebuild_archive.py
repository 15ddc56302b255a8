"""Rebuild and verify from the archive, then the log's tail, after the archived log is gone."""

from __future__ import annotations

from pathlib import Path

import pytest

from oncelog.archive.archiver import archive_partition, archived_head, load_manifest
from oncelog.archive.location import ArchiveLocation
from oncelog.archive.manifest import partition_dir
from oncelog.archive.retention import trim_partition
from oncelog.errors import ArchiveCorruptError, ArchiveError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.bulk_rebuild import Head
from oncelog.projector.rebuild import rebuild_from_requests, verify
from oncelog.projector.store import Store
from oncelog.settings import Settings
from oncelog.topics import admin_client
from tests.integration.conftest import FAST, RunningProjector
from tests.integration.helpers import wait_for_projection

pytestmark = pytest.mark.kafka


def _heads(location: ArchiveLocation, topic: str, partitions: list[int]) -> dict[int, Head]:
    return {p: archived_head(location, topic, p) for p in partitions}


def test_a_trimmed_log_rebuilds_and_verifies_from_archive_and_tail(
    topics: Settings, projector: RunningProjector, tmp_path: Path
) -> None:
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        for step in range(1, 6):
            claim = client.claim_execution("run-a", step=step, tool_name="t", params={"s": step})
            done = client.complete_execution(claim.execution, claim.claim_token, {"n": step})
        client.claim_execution("run-a", step=9, tool_name="t", params={})  # held, not done
        other = client.claim_execution("run-b", step=1, tool_name="t", params={})
        last = client.complete_execution(other.execution, other.claim_token, {"n": 0})
    wait_for_projection(projector.projector, done.position)
    wait_for_projection(projector.projector, last.position)
    projector.halt()
    location = ArchiveLocation.from_settings(
        topics.model_copy(update={"archive_url": str(tmp_path / "archive")})
    )
    kafka = topics.kafka_config(str(topics.bootstrap_servers))
    topic = topics.requests_topic
    admin = admin_client(topics, str(topics.bootstrap_servers))
    partitions = sorted(projector.store.positions())
    trimmed = []
    for p in partitions:
        archive_partition(location, kafka, topic, p, file_records=2)
        if load_manifest(location, topic, p).files:
            trimmed.append(trim_partition(admin, location, kafka, topic, p))
    assert any(t.after > 0 for t in trimmed)  # records left the log

    with (
        pytest.raises(ArchiveError, match="no archive was read") as caught,
        Store(tmp_path / "log-only.duckdb") as store,
    ):
        rebuild_from_requests(topics, kafka, store)
    assert caught.value.code == "archive_error"

    heads = _heads(location, topic, partitions)
    with Store(tmp_path / "rebuilt.duckdb") as store:
        refolded = rebuild_from_requests(topics, kafka, store, heads=heads)
        rebuilt = {s.operation_id: s for s in store.current_states()}
    live = {s.operation_id: s for s in projector.store.current_states()}
    assert refolded == sum(projector.store.positions()[p].next_offset for p in partitions)
    assert rebuilt == live

    report = verify(
        topics,
        kafka,
        tmp_path / "v.duckdb",
        projector.store,
        heads=_heads(location, topic, partitions),
    )
    assert report.ok, report.differences
    assert report.history_missing == 0

    p = next(t.partition for t in trimmed if t.after > 0)
    entry = load_manifest(location, topic, p).files[0]
    path = Path(location.root) / partition_dir(topic, p) / entry.name
    path.write_bytes(path.read_bytes()[:-7] + bytes(7))
    with pytest.raises(ArchiveCorruptError, match="SHA-256 differs") as corrupt:
        verify(
            topics,
            kafka,
            tmp_path / "c.duckdb",
            projector.store,
            heads=_heads(location, topic, partitions),
        )
    assert corrupt.value.code == "archive_corrupt"
