"""The spec's seed scenarios, end to end through the public SDK, sync and async alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from oncelog.errors import ConflictError, ResultExpiredError, StaleClaimError
from oncelog.identity import ids
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from tests.integration.helpers import snapshots_of, wait_until_log_time_passes

pytestmark = pytest.mark.kafka

ORDER = {"order_id": "4471", "amount_cents": 4200, "trace": "t-1"}


def _claim(client: Any, key: str = "charge:4471", **kw: Any) -> Any:
    args: dict[str, Any] = {"tool_name": "charge_customer", "params": ORDER} | kw
    return client.claim_execution("run-42", key, **args)


def test_lost_completion_response_then_retry_replays(client: Any, topics: Settings) -> None:
    claim = _claim(client)
    assert claim.status == "claimed"
    # The completion reaches the ledger but its answer is lost: the worker
    # retries the whole step and must be told it already ran.
    client.complete_execution(claim.execution.id, claim.claim_token, {"charge": "ch_1"})
    retry = _claim(client)
    assert retry.status == "replayed"
    assert retry.result == {"charge": "ch_1"}
    assert retry.execution.epoch == 1
    # A retried completion (same token, same result) is a duplicate: no new version.
    again = client.complete_execution(claim.execution.id, claim.claim_token, {"charge": "ch_1"})
    assert again.result == {"charge": "ch_1"}
    snaps = snapshots_of(topics, "run-42", claim.execution.id)
    assert [s.outcome.value for s in snaps] == ["claimed", "completed"]


def test_changed_payload_is_a_conflict_with_both_hashes(client: Any) -> None:
    first = _claim(client)
    changed = {**ORDER, "amount_cents": 9999}
    with pytest.raises(ConflictError) as info:
        _claim(client, params=changed)
    assert info.value.stored_hash == first.execution.request_hash
    assert info.value.request_hash == ids.request_hash("charge_customer", changed)
    assert info.value.stored_hash != info.value.request_hash


def test_volatile_field_outside_dedup_fields_replays(client: Any) -> None:
    fields = ["order_id", "amount_cents"]
    claim = _claim(client, dedup_fields=fields)
    client.complete_execution(claim.execution.id, claim.claim_token, {"ok": True})
    retry = _claim(client, dedup_fields=fields, params={**ORDER, "trace": "t-2"})
    assert retry.status == "replayed"
    assert retry.result == {"ok": True}


def test_contender_in_progress_then_lease_lapse_reclaims(
    client: Any, make_client: Callable[..., SyncLedgerClient]
) -> None:
    other = make_client("worker-b")
    first = _claim(client, lease_seconds=2)
    contender = _claim(other, lease_seconds=1)
    assert contender.status == "in_progress"
    assert contender.holder == client.worker_id
    assert contender.lease_deadline_ms == first.execution.lease_deadline_ms
    wait_until_log_time_passes(first.execution.lease_deadline_ms)
    taken = _claim(other, lease_seconds=1)
    assert taken.status == "reclaimed"
    assert taken.execution.epoch == 2
    assert taken.previous is not None
    assert taken.previous.epoch == 1
    assert taken.previous.worker_id == client.worker_id


def test_stale_token_is_fenced(client: Any, make_client: Callable[..., SyncLedgerClient]) -> None:
    first = _claim(client, lease_seconds=1)
    wait_until_log_time_passes(first.execution.lease_deadline_ms)
    second = _claim(make_client("worker-b"), lease_seconds=30)
    assert second.status == "reclaimed"
    with pytest.raises(StaleClaimError) as info:
        client.complete_execution(first.execution.id, first.claim_token, {"late": True})
    assert info.value.code == "stale_claim"
    with pytest.raises(StaleClaimError):
        client.heartbeat_execution(first.execution.id, first.claim_token)


def test_heartbeat_keeps_the_lease_past_its_first_deadline(
    client: Any, make_client: Callable[..., SyncLedgerClient]
) -> None:
    other = make_client("worker-b")
    claim = _claim(client, lease_seconds=1)
    first_deadline = claim.execution.lease_deadline_ms
    beat = client.heartbeat_execution(claim.execution.id, claim.claim_token, lease_seconds=5)
    assert beat.lease_deadline_ms > first_deadline
    wait_until_log_time_passes(first_deadline)
    contender = _claim(other)
    assert contender.status == "in_progress"
    done = client.complete_execution(claim.execution.id, claim.claim_token, "ok")
    assert done.status == "completed"


def test_cancel_is_delivered_through_a_heartbeat(client: Any) -> None:
    claim = _claim(client)
    assert (
        client.heartbeat_execution(claim.execution.id, claim.claim_token).cancel_requested is False
    )
    assert client.cancel_execution(claim.execution.id, "user abort") == "cancel_requested"
    beat = client.heartbeat_execution(claim.execution.id, claim.claim_token)
    assert beat.cancel_requested is True
    assert beat.cancel_reason == "user abort"


def test_after_retention_result_expired_and_never_reclaimable(
    client: Any, topics: Settings
) -> None:
    claim = _claim(client, retention_seconds=1)
    done = client.complete_execution(claim.execution.id, claim.claim_token, {"charge": "ch_9"})
    assert done.expires_at_ms is not None
    wait_until_log_time_passes(done.expires_at_ms)
    with pytest.raises(ResultExpiredError) as info:
        _claim(client, retention_seconds=1)
    assert info.value.code == "result_expired"
    assert info.value.http_status == 409
    # The projector's sweep purges the body but keeps the identity, in the log.
    snaps: list[Any] = []
    for _ in range(100):
        snaps = snapshots_of(topics, "run-42", claim.execution.id)
        if snaps[-1].state.status.value == "EXPIRED":
            break
        wait_until_log_time_passes(int(snaps[-1].log_time_ms) + 100)
    assert snaps[-1].state.status.value == "EXPIRED"
    assert snaps[-1].state.result is None
    assert snaps[-1].state.request_hash == claim.execution.request_hash
    with pytest.raises(ResultExpiredError):
        _claim(client, retention_seconds=1)


def test_a_mebibyte_of_params_and_of_result_round_trips(client: Any) -> None:
    params = {"blob": "p" * (1024 * 1024 - 100)}
    claim = client.claim_execution("run-big", "k", tool_name="t", params=params)
    result = "r" * (1024 * 1024 - 10)
    done = client.complete_execution(claim.execution, claim.claim_token, result)
    assert done.result == result
    replay = client.claim_execution("run-big", "k", tool_name="t", params=params)
    assert replay.status == "replayed"
    assert replay.result == result


def test_get_execution_reads_through_the_log(client: Any) -> None:
    absent = ids.operation_id("run-g", "nothing-yet")
    assert client.get_execution(absent, channel_id="run-g", key_name="nothing-yet") is None
    claim = _claim(client)
    seen = client.get_execution(claim.execution)
    assert (seen.status, seen.epoch, seen.worker_id) == ("claimed", 1, client.worker_id)
    client.complete_execution(claim.execution, claim.claim_token, {"charge": "ch_g"})
    done = client.get_execution(claim.execution.id)
    assert (done.status, done.result) == ("completed", {"charge": "ch_g"})
