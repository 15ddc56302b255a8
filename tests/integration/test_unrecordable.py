"""A result the ledger cannot record never re-fires its effect (docs/spec.md §5).

The trial's scenarios: a refund tool whose result holds a ``datetime``, and one returning
2 MB, each retried by a new worker (a new client and worker id). The effect runs once; the
step is recorded as a failure for good with code ``result_unrecordable`` (the reason and a
digest), and the retry answers that failure instead of running the tool. Through both
executor drivers (async and blocking), on both ledgers (in memory and Kafka).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from oncelog.errors import ResultUnrecordableError
from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.ids import operation_id
from oncelog.integrations import LedgerRun, ToolPolicy, current_call
from oncelog.producer.executor import ToolContext, ToolRun
from oncelog.producer.recordable import jsonable
from oncelog.schemas.models import PreviousAttempt
from oncelog.testing import InMemoryLedger
from tests.integration.contract import Backend

CHANNEL = "refunds-1"
PARAMS = {"order_id": "4471", "amount_cents": 1200}
TWO_MB = "x" * (2 * 1024 * 1024)
Run = Callable[..., ToolRun]


@pytest.fixture(params=["async", "sync"])
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def worker(backend: Backend, kind: str, worker_id: str) -> Run:
    """``run_tool`` of a new client named ``worker_id``: ``fn`` and ``reconcile`` are plain
    functions, wrapped in coroutines for the async client."""
    if kind == "sync":
        client = backend.sync_client(worker_id)
        return lambda key, fn, reconcile=None, **kw: client.run_tool(
            CHANNEL, key, tool_name="refund", params=PARAMS, fn=fn, reconcile=reconcile, **kw
        )
    aclient = backend.async_client(worker_id)
    loop = asyncio.new_event_loop()
    backend.loops.append(loop)

    def run(key: str, fn: Any, reconcile: Any = None, **kw: Any) -> ToolRun:
        async def afn(ctx: ToolContext) -> Any:
            return fn(ctx)

        async def arec(previous: PreviousAttempt, ctx: ToolContext) -> Any:
            return reconcile(previous, ctx)

        hook = None if reconcile is None else arec
        call = aclient.run_tool(
            CHANNEL, key, tool_name="refund", params=PARAMS, fn=afn, reconcile=hook, **kw
        )
        return loop.run_until_complete(call)

    return run


class Provider:
    """The refund provider: counts the refunds it made."""

    def __init__(self, answer: Callable[[], Any]) -> None:
        self.refunds = 0
        self._answer = answer

    def refund(self, ctx: ToolContext) -> Any:
        self.refunds += 1
        return self._answer()


def recorded_error(backend: Backend, key: str) -> tuple[str, str | None]:
    """The operation's state as the log decided it: status and error text."""
    probe = backend.sync_client("probe")
    execution = probe.get_execution(operation_id(CHANNEL, key), channel_id=CHANNEL, key_name=key)
    assert execution is not None
    return execution.status, execution.error


@pytest.mark.parametrize(
    ("answer", "reason", "digest_of"),
    [
        (lambda: {"refund": "re_1", "at": datetime.now(UTC)}, "type datetime", "repr"),
        (lambda: TWO_MB, "result is 2097154 bytes of canonical JSON", "canonical JSON"),
    ],
    ids=["datetime", "2MB"],
)
def test_an_unrecordable_result_runs_the_effect_once_and_a_retry_replays_the_failure(
    ledger_backend: Backend, kind: str, answer: Callable[[], Any], reason: str, digest_of: str
) -> None:
    provider = Provider(answer)
    key = "refund:4471"
    first = worker(ledger_backend, kind, "worker-a")
    with pytest.raises(ResultUnrecordableError) as raised:
        first(key, provider.refund, downstream_dedupes=True)
    said = str(raised.value)
    assert "the tool ran (its effect happened)" in said
    assert "recorded the operation as failed for good with code result_unrecordable" in said
    assert reason in said
    assert "result_encoder=oncelog.jsonable" in said  # the hint
    status, error = recorded_error(ledger_backend, key)
    assert status == "failed"
    assert error is not None
    assert error.startswith("result_unrecordable: ")
    assert f"sha256 of its {digest_of}: " in error
    if digest_of == "canonical JSON":  # the digest of the bytes that could be read
        assert hashlib.sha256(canonical_json(TWO_MB)).hexdigest() in error
    # A new worker retries: the recorded failure (not retryable) comes back, and the tool
    # does not run again.
    retry = worker(ledger_backend, kind, "worker-b")
    with pytest.raises(ResultUnrecordableError, match="never run again") as replayed:
        retry(key, provider.refund, downstream_dedupes=True)
    assert replayed.value.code == "result_unrecordable"
    assert error in str(replayed.value)
    assert provider.refunds == 1


def test_a_reconcile_answer_that_cannot_be_recorded_is_recorded_as_found(
    ledger_backend: Backend, kind: str
) -> None:
    key = "refund:4472"
    crashed = ledger_backend.sync_client("worker-crashed")
    first = crashed.claim_execution(
        CHANNEL, key, tool_name="refund", params=PARAMS, lease_seconds=1
    )
    ledger_backend.pass_log_time(first.execution.lease_deadline_ms)
    provider = Provider(lambda: "refunded again")
    found = {"refund": "re_2", "amount": Decimal("12.00")}
    rescuer = worker(ledger_backend, kind, "worker-rescuer")
    with pytest.raises(ResultUnrecordableError, match="type Decimal"):
        rescuer(key, provider.refund, reconcile=lambda previous, ctx: found)
    assert provider.refunds == 0
    if ledger_backend.memory is not None:  # what the failure said of the previous attempt
        fails = [r.request for r in ledger_backend.memory.log if r.request.kind == "fail"]
        assert [r.reconciled for r in fails] == ["found"]
    with pytest.raises(ResultUnrecordableError):
        worker(ledger_backend, kind, "worker-b")(key, provider.refund, reconcile=lambda p, c: None)
    assert provider.refunds == 0


def test_a_result_encoder_makes_datetimes_and_decimals_recordable(
    ledger_backend: Backend, kind: str
) -> None:
    at = datetime(2026, 12, 4, 13, 0, tzinfo=UTC)
    provider = Provider(lambda: {"refund": "re_3", "at": at, "amount": Decimal("12.00")})
    run = worker(ledger_backend, kind, "worker-a")
    done = run("refund:4473", provider.refund, result_encoder=jsonable, downstream_dedupes=True)
    assert done.result == {"refund": "re_3", "at": "2026-12-04T13:00:00Z", "amount": "12.00"}
    again = worker(ledger_backend, kind, "worker-b")("refund:4473", provider.refund)
    assert (again.status, again.result, provider.refunds) == ("replayed", done.result, 1)


def test_a_result_encoder_that_raises_records_the_result_as_unrecordable(
    ledger_backend: Backend, kind: str
) -> None:
    def encoder(value: Any) -> Any:
        raise TypeError("no JSON for this")

    provider = Provider(lambda: {"refund": "re_4"})
    run = worker(ledger_backend, kind, "worker-a")
    with pytest.raises(ResultUnrecordableError, match="result_encoder raised TypeError"):
        run("refund:4474", provider.refund, result_encoder=encoder, downstream_dedupes=True)
    status, error = recorded_error(ledger_backend, "refund:4474")
    assert status == "failed"
    assert error is not None
    assert error.startswith("result_unrecordable: result_encoder raised TypeError")
    assert provider.refunds == 1


def test_an_adapters_hook_answer_without_a_json_form_is_recorded_as_found() -> None:
    ledger = InMemoryLedger()
    crashed = ledger.sync_client(worker_id="worker-crashed")
    crashed.claim_execution("run-1", "refund#1", tool_name="refund", params={}, lease_seconds=1)
    ledger.advance(2)
    provider = Provider(lambda: "refunded again")
    policy = ToolPolicy(reconcile=lambda previous, ctx: object())
    run = LedgerRun(ledger.sync_client(), "run-1", policies={"refund": policy})
    with pytest.raises(ResultUnrecordableError, match="not JSON data"):
        run.call("refund", {}, lambda: provider.refund(current_call()))
    fails = [r.request for r in ledger.log if r.request.kind == "fail"]
    assert [r.reconciled for r in fails] == ["found"]
    failed = ledger.execution(fails[0].operation_id)
    assert failed is not None
    assert ResultUnrecordableError.is_recorded(failed.error)
    assert provider.refunds == 0
