"""The spec's seed scenarios through the public SDK, sync and async alike.

A contract: each runs on Kafka with a projector and on the in-memory ledger
(``ledger_backend``), where the manual clock stands in for waiting.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from oncelog.errors import ConflictError, ResultExpiredError, StaleClaimError
from oncelog.identity import ids
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import Outcome, Status
from tests.integration.contract import Backend

ORDER = {"order_id": "4471", "amount_cents": 4200, "trace": "t-1"}


def _claim(client: Any, key: str = "charge:4471", **kw: Any) -> Any:
    args: dict[str, Any] = {"tool_name": "charge_customer", "params": ORDER} | kw
    return client.claim_execution("run-42", key, **args)


def test_lost_completion_response_then_retry_replays(
    ledger_client: Any, ledger_backend: Backend
) -> None:
    client = ledger_client
    claim = _claim(client)
    assert claim.status == "claimed"
    # The completion reaches the log but its answer never reaches the worker: sent with
    # the client's own request builder and transport, and nobody waits for the decision.
    lost = client.requests.complete_execution(claim.execution, claim.claim_token, {"charge": 1})
    client.transport.send_acknowledged(lost.request, timeout_s=30)
    # The worker retries the whole step and must be told it already ran.
    retry = _claim(client)
    assert retry.status == "replayed"
    assert retry.result == {"charge": 1}
    assert retry.execution.epoch == 1
    # Or it retries the completion (same token, same result): the recorded execution, no
    # new version.
    again = client.complete_execution(claim.execution.id, claim.claim_token, {"charge": 1})
    assert (again.status, again.result) == ("completed", {"charge": 1})
    assert ledger_backend.outcomes("run-42", claim.execution.id) == ["claimed", "completed"]
    # The lost decision was made and published, only never read.
    decided = [
        d for d in ledger_backend.decisions("run-42") if d.request_id == lost.request.request_id
    ]
    assert [d.outcome for d in decided] == [Outcome.COMPLETED]


def test_changed_payload_is_a_conflict_with_both_hashes(ledger_client: Any) -> None:
    first = _claim(ledger_client)
    changed = {**ORDER, "amount_cents": 9999}
    with pytest.raises(ConflictError) as info:
        _claim(ledger_client, params=changed)
    assert info.value.stored_hash == first.execution.request_hash
    assert info.value.request_hash == ids.request_hash("charge_customer", changed)
    assert info.value.stored_hash != info.value.request_hash


def test_volatile_field_outside_dedup_fields_replays(ledger_client: Any) -> None:
    fields = ["order_id", "amount_cents"]
    claim = _claim(ledger_client, dedup_fields=fields)
    ledger_client.complete_execution(claim.execution.id, claim.claim_token, {"ok": True})
    retry = _claim(ledger_client, dedup_fields=fields, params={**ORDER, "trace": "t-2"})
    assert retry.status == "replayed"
    assert retry.result == {"ok": True}


def test_contender_in_progress_then_lease_lapse_reclaims(
    ledger_client: Any, make_worker: Callable[..., SyncLedgerClient], ledger_backend: Backend
) -> None:
    other = make_worker("worker-b")
    # The check is about order (the contender inside the lease, then after it): a lease
    # as long as one client round trip may take, so a slow answer cannot reorder them.
    lease_s = ledger_backend.timeouts.resend_after_s
    first = _claim(ledger_client, lease_seconds=lease_s)
    contender = _claim(other, lease_seconds=1)
    assert contender.status == "in_progress"
    assert contender.holder == ledger_client.worker_id
    assert contender.lease_deadline_ms == first.execution.lease_deadline_ms
    ledger_backend.pass_log_time(first.execution.lease_deadline_ms)
    taken = _claim(other, lease_seconds=1)
    assert taken.status == "reclaimed"
    assert taken.execution.epoch == 2
    assert taken.previous is not None
    assert taken.previous.epoch == 1
    assert taken.previous.worker_id == ledger_client.worker_id


def test_stale_token_is_fenced(
    ledger_client: Any, make_worker: Callable[..., SyncLedgerClient], ledger_backend: Backend
) -> None:
    first = _claim(ledger_client, lease_seconds=1)
    ledger_backend.pass_log_time(first.execution.lease_deadline_ms)
    second = _claim(make_worker("worker-b"), lease_seconds=30)
    assert second.status == "reclaimed"
    with pytest.raises(StaleClaimError) as info:
        ledger_client.complete_execution(first.execution.id, first.claim_token, {"late": True})
    assert info.value.code == "stale_claim"
    with pytest.raises(StaleClaimError):
        ledger_client.heartbeat_execution(first.execution.id, first.claim_token)


def test_heartbeat_keeps_the_lease_past_its_first_deadline(
    ledger_client: Any, make_worker: Callable[..., SyncLedgerClient], ledger_backend: Backend
) -> None:
    other = make_worker("worker-b")
    claim = _claim(ledger_client, lease_seconds=1)
    first_deadline = claim.execution.lease_deadline_ms
    beat = ledger_client.heartbeat_execution(claim.execution.id, claim.claim_token, lease_seconds=5)
    assert beat.lease_deadline_ms > first_deadline
    ledger_backend.pass_log_time(first_deadline)
    contender = _claim(other)
    assert contender.status == "in_progress"
    done = ledger_client.complete_execution(claim.execution.id, claim.claim_token, "ok")
    assert done.status == "completed"


def test_cancel_is_delivered_through_a_heartbeat(ledger_client: Any) -> None:
    claim = _claim(ledger_client)
    assert (
        ledger_client.heartbeat_execution(claim.execution.id, claim.claim_token).cancel_requested
        is False
    )
    assert ledger_client.cancel_execution(claim.execution.id, "user abort") == "cancel_requested"
    beat = ledger_client.heartbeat_execution(claim.execution.id, claim.claim_token)
    assert beat.cancel_requested is True
    assert beat.cancel_reason == "user abort"


def test_after_retention_result_expired_and_never_reclaimable(
    ledger_client: Any, ledger_backend: Backend
) -> None:
    client = ledger_client
    claim = _claim(client, retention_seconds=1)
    done = client.complete_execution(claim.execution.id, claim.claim_token, {"charge": "ch_9"})
    assert done.expires_at_ms is not None
    ledger_backend.pass_log_time(done.expires_at_ms)
    with pytest.raises(ResultExpiredError) as info:
        _claim(client, retention_seconds=1)
    assert info.value.code == "result_expired"
    assert info.value.http_status == 409
    # The projector's sweep purges the body but keeps the identity, in the log.
    swept = ledger_backend.swept_state("run-42", claim.execution.id)
    assert swept.status is Status.EXPIRED
    assert swept.result is None
    assert swept.request_hash == claim.execution.request_hash
    with pytest.raises(ResultExpiredError):
        _claim(client, retention_seconds=1)


def test_a_mebibyte_of_params_and_of_result_round_trips(ledger_client: Any) -> None:
    params = {"blob": "p" * (1024 * 1024 - 100)}
    claim = ledger_client.claim_execution("run-big", "k", tool_name="t", params=params)
    result = "r" * (1024 * 1024 - 10)
    done = ledger_client.complete_execution(claim.execution, claim.claim_token, result)
    assert done.result == result
    replay = ledger_client.claim_execution("run-big", "k", tool_name="t", params=params)
    assert replay.status == "replayed"
    assert replay.result == result


def test_get_execution_reads_through_the_log(ledger_client: Any) -> None:
    absent = ids.operation_id("run-g", "nothing-yet")
    assert ledger_client.get_execution(absent, channel_id="run-g", key_name="nothing-yet") is None
    claim = _claim(ledger_client)
    seen = ledger_client.get_execution(claim.execution)
    assert (seen.status, seen.epoch, seen.worker_id) == ("claimed", 1, ledger_client.worker_id)
    ledger_client.complete_execution(claim.execution, claim.claim_token, {"charge": "ch_g"})
    done = ledger_client.get_execution(claim.execution.id)
    assert (done.status, done.result) == ("completed", {"charge": "ch_g"})
