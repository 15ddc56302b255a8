"""SIGKILL the projector between publishing a batch and committing it; restart; compare."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from oncelog.kafka.reader import read_to_end
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.rebuild import rebuild_from_executions, verify
from oncelog.projector.store import Store
from oncelog.schemas.codec import decode_decision, decode_snapshot
from oncelog.settings import Settings
from tests.integration.conftest import PATIENT
from tests.integration.helpers import copies_by_source, kafka
from tests.integration.projector_process import (
    start_serve,
    start_serve_killed_before_commit,
    stop_serve,
)

pytestmark = pytest.mark.kafka

CYCLES = 60


def _run_fleet(settings: Settings, errors: list[BaseException]) -> None:
    try:
        with SyncLedgerClient(settings, worker_id="fleet", timeouts=PATIENT) as client:
            for i in range(CYCLES):
                claim = client.claim_execution(
                    f"run-{i % 7}", f"step-{i}", tool_name="tool", params={"i": i}
                )
                assert claim.status == "claimed"
                client.complete_execution(claim.execution.id, claim.claim_token, {"done": i})
    except BaseException as exc:  # reported to the test thread
        errors.append(exc)


def test_sigkill_before_commit_then_restart_republishes_only_identical_records(
    topics: Settings, tmp_path: Path
) -> None:
    db, log = tmp_path / "live.duckdb", tmp_path / "serve.log"
    first = start_serve_killed_before_commit(topics, db, 5, log=log)
    errors: list[BaseException] = []
    fleet = threading.Thread(target=_run_fleet, args=(topics, errors))
    fleet.start()
    assert first.wait(timeout=120) == -9, log.read_text()[-3000:]
    second = start_serve(topics, db, "--no-http", log=log)
    fleet.join(timeout=180)
    assert not fleet.is_alive()
    assert errors == []
    assert stop_serve(second) == 0

    decisions = copies_by_source(topics, topics.decisions_topic, decode_decision)
    snapshots = copies_by_source(topics, topics.executions_topic, decode_snapshot)
    # Every request on the log has a decision. A client whose answer was slow re-sends the
    # same request id, so there may be more than 2 * CYCLES requests; never fewer.
    on_log = {
        (p, msg.offset())
        for p in range(topics.partitions)
        for msg in read_to_end(kafka(topics), topics.requests_topic, p)
    }
    assert len(on_log) >= 2 * CYCLES
    assert set(decisions) == on_log
    assert [k for k, v in decisions.items() if len(set(v)) > 1] == [], (
        "a republished decision differs"
    )
    assert [k for k, v in snapshots.items() if len(set(v)) > 1] == [], (
        "a republished snapshot differs"
    )
    assert len(snapshots) == 2 * CYCLES  # claim + completion, one version each
    # The kill came after batch 5 was published and before it was committed: the restart
    # refolds it and publishes it again, the same bytes on the same partition.
    republished = [k for k, copies in decisions.items() if len(copies) > 1]
    assert republished, "nothing was republished: was batch 5 committed before the kill?"
    changed = [k for k in republished if decode_decision(decisions[k][0][1]).changed]
    assert changed, "no republished decision changed a state"
    assert all(len(snapshots[k]) == len(decisions[k]) for k in changed)

    with Store(db, read_only=True) as live:
        report = verify(topics, kafka(topics), tmp_path / "scratch.duckdb", live)
        live_states = {s.operation_id: s for s in live.current_states()}
    assert report.ok, report.differences
    assert report.compared_snapshots == CYCLES
    assert report.compared_live == CYCLES
    with Store(tmp_path / "restored.duckdb") as restored:
        rebuild_from_executions(topics, kafka(topics), restored)
        assert {s.operation_id: s for s in restored.current_states()} == live_states
