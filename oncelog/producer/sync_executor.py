"""The blocking tool executor: :func:`run_tool_sync` and :func:`sync_ledger_tool`.

The same protocol as :mod:`oncelog.producer.executor` (read its module doc),
with the heartbeat in a thread. A thread cannot be interrupted, so a sync tool
stops cooperatively: it checks ``ctx.stopped``, sleeps with ``ctx.wait(...)``
or calls ``ctx.raise_if_stopped()``.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from oncelog.errors import LedgerError, StaleClaimError
from oncelog.producer.executor import (
    DEFAULT_RETRY_ON,
    DEFAULT_WAIT_TIMEOUT_S,
    Done,
    InProgressPolicy,
    StopSignal,
    ToolContext,
    ToolRun,
    ToolSpec,
    ToolTarget,
    add_ledger_note,
    failure_of,
    fenced_error,
    in_progress_delay,
    judge_heartbeat_error,
)
from oncelog.producer.protocol import DEFAULT_RETENTION_S
from oncelog.producer.results import Claim, ClaimStatus
from oncelog.schemas.models import PreviousAttempt

if TYPE_CHECKING:
    from oncelog.producer.sync_client import SyncLedgerClient

SyncToolFn = Callable[[ToolContext], Any]
SyncReconcile = Callable[[PreviousAttempt, ToolContext], Any]


def run_tool_sync(
    client: SyncLedgerClient,
    channel_id: str,
    key_name: str | None = None,
    *,
    step: int | None = None,
    tool_name: str,
    params: Mapping[str, Any],
    fn: SyncToolFn,
    dedup_fields: Sequence[str] | None = None,
    lease_seconds: float = 60,
    retention_seconds: float = DEFAULT_RETENTION_S,
    effect: str = "external",
    reconcile: SyncReconcile | None = None,
    on_in_progress: InProgressPolicy = "raise",
    wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
) -> ToolRun:
    """Blocking :func:`~oncelog.producer.executor.run_tool` for a sync ``fn`` (see module doc)."""
    spec = ToolSpec(
        tool_name, dedup_fields, lease_seconds, retention_seconds, effect, on_in_progress,
        wait_timeout_s, retry_on,
    )  # fmt: skip
    target = ToolTarget(channel_id, key_name, step)
    return _run_spec_sync(client, spec, target, params, fn, reconcile=reconcile)


def _run_spec_sync(
    client: SyncLedgerClient,
    spec: ToolSpec,
    target: ToolTarget,
    params: Mapping[str, Any],
    fn: SyncToolFn,
    *,
    reconcile: SyncReconcile | None = None,
) -> ToolRun:
    claim = _claim_sync(client, spec, target, params)
    if claim.status is ClaimStatus.REPLAYED:
        return ToolRun(claim.result, claim.status, claim.execution)
    ctx = ToolContext(claim.execution, claim.claim_token, claim.previous, StopSignal())
    done = _guarded_sync(client, spec, claim, ctx, functools.partial(_work_sync, fn, reconcile))
    return _settle_sync(client, spec, claim, ctx, done)


def _claim_sync(
    client: SyncLedgerClient, spec: ToolSpec, target: ToolTarget, params: Mapping[str, Any]
) -> Claim:
    give_up_at = time.monotonic() + spec.wait_timeout_s
    while True:
        claim = client.claim_execution(
            target.channel_id, target.key_name, step=target.step, **spec.claim_kwargs(params)
        )
        if claim.status is not ClaimStatus.IN_PROGRESS:
            return claim
        # Waiting for the holder's lease to lapse is waiting for time itself.
        time.sleep(in_progress_delay(claim, spec, give_up_at))


def _work_sync(
    fn: SyncToolFn, reconcile: SyncReconcile | None, ctx: ToolContext
) -> tuple[Any, bool]:
    if reconcile is not None and ctx.previous is not None:
        known = reconcile(ctx.previous, ctx)
        if known is not None:
            return known, True
    return fn(ctx), False


def _guarded_sync(
    client: SyncLedgerClient,
    spec: ToolSpec,
    claim: Claim,
    ctx: ToolContext,
    work: Callable[[ToolContext], tuple[Any, bool]],
) -> Done:
    finished = threading.Event()
    beat = threading.Thread(
        target=_heartbeat_sync,
        args=(client, spec, claim, ctx.stop, finished),
        name=f"oncelog-heartbeat-{claim.execution.id[:8]}",
        daemon=True,
    )
    beat.start()
    try:
        result, reconciled = work(ctx)
    except Exception as exc:  # recorded as a failure by the caller
        return Done(error=exc)
    finally:
        finished.set()
        # Joined so that no heartbeat outlives the run (it would reopen a closed client).
        beat.join()
    return Done(result, reconciled=reconciled)


def _heartbeat_sync(
    client: SyncLedgerClient,
    spec: ToolSpec,
    claim: Claim,
    stop: StopSignal,
    finished: threading.Event,
) -> None:
    deadline_ms = claim.execution.lease_deadline_ms
    while not finished.wait(spec.lease_seconds / 3):
        try:
            beat = client.heartbeat_execution(claim.execution, claim.claim_token)
        except Exception as exc:  # judged: fenced, or unconfirmed past the deadline
            if judge_heartbeat_error(exc, deadline_ms, stop):
                return
            continue
        deadline_ms = beat.lease_deadline_ms
        if beat.cancel_requested:
            stop.set(cancelled=True, reason=beat.cancel_reason)
            return


def _settle_sync(
    client: SyncLedgerClient, spec: ToolSpec, claim: Claim, ctx: ToolContext, done: Done
) -> ToolRun:
    ex, token = claim.execution, claim.claim_token
    if done.error is None:
        try:
            recorded = client.complete_execution(ex, token, done.result)
        except StaleClaimError as exc:
            raise fenced_error(ex) from exc
        return ToolRun(recorded.result, claim.status, recorded, done.reconciled, claim.previous)
    if ctx.stop.is_set:
        stopped = ctx.stop.error(ex.id)
        if ctx.stop.cancelled:
            try:
                client.fail_execution(ex, token, f"cancelled: {ctx.stop.reason}", False)
            except LedgerError as exc:
                add_ledger_note(stopped, "recording the cancel", exc)
        raise stopped from done.error
    error, retryable = failure_of(spec, done.error)
    try:
        client.fail_execution(ex, token, error, retryable)
    except LedgerError as exc:
        add_ledger_note(done.error, "recording the failure", exc)
    raise done.error


class SyncLedgerTool:
    """The blocking twin of :class:`LedgerTool`, made by :func:`sync_ledger_tool`."""

    __name__: str  # set by functools.update_wrapper, like the rest of the metadata

    def __init__(
        self,
        fn: Callable[..., Any],
        client: SyncLedgerClient | Callable[[], SyncLedgerClient],
        spec: ToolSpec,
        reconcile: SyncReconcile | None,
    ) -> None:
        functools.update_wrapper(self, fn)
        self._fn, self._client, self.spec, self._reconcile = fn, client, spec, reconcile

    def __call__(
        self, channel_id: str, key_name: str | None = None, *, step: int | None = None,
        **params: Any,
    ) -> Any:  # fmt: skip
        """Run through the ledger and return the (possibly replayed) result."""
        return self.run(channel_id, key_name, step=step, **params).result

    def run(
        self, channel_id: str, key_name: str | None = None, *, step: int | None = None,
        **params: Any,
    ) -> ToolRun:  # fmt: skip
        """Run through the ledger and return the whole :class:`ToolRun`."""
        client = self._client() if callable(self._client) else self._client
        target = ToolTarget(channel_id, key_name, step)

        def call(ctx: ToolContext) -> Any:
            return self._fn(ctx, **params)

        return _run_spec_sync(client, self.spec, target, params, call, reconcile=self._reconcile)


def sync_ledger_tool(
    client: SyncLedgerClient | Callable[[], SyncLedgerClient],
    *,
    tool_name: str | None = None,
    reconcile: SyncReconcile | None = None,
    **options: Any,
) -> Callable[[Callable[..., Any]], SyncLedgerTool]:
    """Decorate a blocking ``def tool(ctx, **params)``; see :func:`ledger_tool`."""

    def wrap(fn: Callable[..., Any]) -> SyncLedgerTool:
        return SyncLedgerTool(fn, client, ToolSpec(tool_name or fn.__name__, **options), reconcile)

    return wrap
