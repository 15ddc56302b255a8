"""Horizontal scale: projector instances share partitions via a consumer group and restore
from the changelog (the compacted executions topic), as real ``oncelog serve`` processes."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest

from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.projector.rebuild import verify
from oncelog.projector.store import Store
from oncelog.query.models import StepStatus
from oncelog.query.routing import FORWARDED_BY
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics
from tests.integration import projector_group as group
from tests.integration.projector_group import Member

pytestmark = pytest.mark.kafka

CHANNELS = [f"chan-{n}" for n in range(8)]
STEPS = range(3)


def _topics(settings: Settings, partitions: int) -> Settings:
    settings = settings.model_copy(update={"partitions": partitions})
    assert settings.bootstrap_servers is not None
    create_topics(admin_client(settings, settings.bootstrap_servers), ledger_topics(settings))
    return settings


def _answers(
    member: Member, channels: list[str], steps: range
) -> dict[tuple[str, int], StepStatus]:
    return {(ch, step): member.api.status(ch, str(step), None) for ch in channels for step in steps}


def _own_positions(member: Member) -> set[int]:
    """The partitions the member's own file has folded: a request marked as forwarded is
    answered from that file (the API otherwise gathers positions from the whole group)."""
    url = f"http://127.0.0.1:{member.settings.http_port}/v1/positions"
    body = httpx.get(url, headers={FORWARDED_BY: "test"}, timeout=30).json()
    return {int(p) for p in body["next_offsets"]}


def _verify_shard(settings: Settings, member: Member, scratch: Path) -> None:
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    with Store(member.db, read_only=True) as live:
        report = verify(settings, kafka, scratch, live)
    assert report.compared_live
    assert report.differences == []


def test_a_member_leaves_and_the_other_restores_its_partitions(
    settings: Settings, tmp_path: Path
) -> None:
    settings = _topics(settings, partitions=4)
    a = group.start_member(settings, "a", tmp_path)
    group.wait_owned_by(settings, "a")
    b = group.start_member(settings, "b", tmp_path)  # after a: b never had a's partitions
    members = {"a": a, "b": b}
    try:
        owners = group.wait_owned_by(settings, "a", "b")
        group.run_steps(settings, "w", CHANNELS, STEPS)
        group.wait_folded(settings, members, owners)
        of_a = [ch for ch in CHANNELS if group.owner_of(settings, owners, ch) == "a"]
        assert 0 < len(of_a) < len(CHANNELS)  # both members own some of the channels
        first = _answers(a, of_a, STEPS)
        assert {s.status for s in first.values()} == {"completed"}
        a_partitions = {p for p, name in owners.items() if name == "a"}
        assert a_partitions.isdisjoint(_own_positions(b))  # b never folded them

        process.stop(a.proc)  # a static member: its partitions wait out its session, then move
        owners = group.wait_owned_by(settings, "b")
        group.wait_folded(settings, {"b": b}, owners)
        assert _answers(b, of_a, STEPS) == first  # restored: the same answers as a gave

        group.run_steps(settings, "w", of_a, range(STEPS.stop, STEPS.stop + 1))  # and b goes on
        group.wait_folded(settings, {"b": b}, owners)
        assert {s.status for s in _answers(b, of_a, range(STEPS.stop + 1)).values()} == {
            "completed"
        }
    finally:
        for member in members.values():
            process.stop(member.proc)
    decisions = group.published(settings, settings.decisions_topic, group.by_request)
    assert {len(v) for v in decisions.values()} == {1}  # restored: nothing refolded, republished
    _verify_shard(settings, a, tmp_path / "scratch-a.duckdb")
    _verify_shard(settings, b, tmp_path / "scratch-b.duckdb")


def test_a_partition_back_far_behind_is_restored_not_refolded(
    settings: Settings, tmp_path: Path
) -> None:
    """``a`` folds, leaves; ``b`` folds many requests that change nothing; ``a`` comes back.

    ``a``'s own position is then 20 requests behind the position ``b`` handed off to
    the group, while the executions topic holds only 8 records: ``a`` restores them
    and resumes at the handoff rather than refold and republish the gap.
    """
    settings = _topics(settings, partitions=1)
    a = group.start_member(settings, "a", tmp_path)
    group.wait_owned_by(settings, "a")
    group.run_steps(settings, "w", ["c0", "c1"], range(2))  # 8 requests, 8 state versions
    process.stop(a.proc)
    b = group.start_member(settings, "b", tmp_path)
    try:
        owners = group.wait_owned_by(settings, "b")
        with SyncLedgerClient(settings, worker_id="w", timeouts=group.PATIENT) as client:
            for _ in range(20):  # replayed: a decision each, no new state version
                replay = client.claim_execution("c0", step=0, tool_name="t", params={})
                assert replay.status == "replayed"
        group.wait_folded(settings, {"b": b}, owners)
        answers = _answers(b, ["c0", "c1"], range(2))
    finally:
        process.stop(b.proc)
    back = group.start_member(settings, "a", tmp_path)  # the same projector id and DuckDB file
    try:
        owners = group.wait_owned_by(settings, "a")
        group.wait_folded(settings, {"a": back}, owners)
        assert _answers(back, ["c0", "c1"], range(2)) == answers
    finally:
        process.stop(back.proc)
    decisions = group.published(settings, settings.decisions_topic, group.by_request)
    assert len(decisions) == 28
    assert {len(v) for v in decisions.values()} == {1}  # nothing of the gap republished
    _verify_shard(settings, back, tmp_path / "scratch-a.duckdb")
