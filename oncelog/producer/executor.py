"""The tool executor: claim -> (reconcile) -> call -> complete or fail, under a heartbeat.

    run = await run_tool(client, "run-42", "charge:4471", tool_name="charge",
                         params={"order_id": "4471"}, fn=charge)
    run.result, run.execution.epoch

What happens, in order:

- ``replayed``: the recorded result comes back; ``fn`` is not called.
- ``in_progress``: :class:`~oncelog.errors.ToolInProgressError` (code ``in_progress``), or with
  ``on_in_progress="wait"`` the executor waits for the holder's lease deadline (log time, read
  as local wall time) and claims again, bounded by ``wait_timeout_s`` (then
  :class:`~oncelog.errors.LedgerTimeoutError`).
- ``claimed``/``reclaimed``: on ``reclaimed`` ``reconcile(previous, ctx)`` runs first; a non-None
  answer is completed as the result ("downstream already applied this idempotency key").
  Otherwise ``fn(ctx)`` runs. Both run under a heartbeat every ``lease_seconds / 3``.
- A lost lease (a fenced heartbeat, or a heartbeat that failed outright after the deadline) or a
  requested cancel stops the call (the async task is cancelled; a sync tool sees ``ctx.stopped``)
  and raises :class:`~oncelog.errors.LeaseLostError`, or its subclass
  :class:`~oncelog.errors.ExecutionCancelledError` for a cancel. A cancelled execution is recorded
  as a non-retryable failure ``cancelled: <reason>``: a reclaim clears the cancel flag, so a
  release (or a retryable failure) would let the next automatic retry silently undo the cancel.
- A result that the tool did return is always offered to the ledger, even after a stop: the
  effect happened, and a fenced completion is what records ``duplicate_effect_suspected``.
- An exception from the tool is recorded with ``fail_execution`` and re-raised. It is retryable
  when it has a bool ``retryable`` attribute set to True, or else when it is an instance of
  ``retry_on`` (by default timeouts and connection errors).
- If the caller cancels ``run_tool`` itself, the tool is cancelled and nothing is recorded: the
  lease lapses and the next claimer reconciles with the attempt.
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, Literal

from oncelog.errors import (
    ExecutionCancelledError,
    InvalidArgumentError,
    InvalidStateError,
    LeaseLostError,
    LedgerError,
    LedgerTimeoutError,
    StaleClaimError,
    ToolInProgressError,
)
from oncelog.producer.protocol import DEFAULT_RETENTION_S
from oncelog.producer.results import Claim, ClaimStatus, Execution
from oncelog.schemas.models import PreviousAttempt

if TYPE_CHECKING:
    from oncelog.producer.client import LedgerClient

InProgressPolicy = Literal["raise", "wait"]
DEFAULT_RETRY_ON: Final[tuple[type[BaseException], ...]] = (TimeoutError, ConnectionError)
DEFAULT_WAIT_TIMEOUT_S: Final = 300.0
_LAPSE_MARGIN_S: Final = 0.05  # claim just after the deadline, not on it
_MIN_POLL_S: Final = 0.1  # bounds re-claims when the local clock runs ahead of the broker's
_MAX_ERROR_CHARS: Final = 4000


class StopSignal:
    """Set once, by the heartbeat, when the lease is lost or a cancel is requested.

    Thread-safe: the sync executor sets it from its heartbeat thread.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.cancelled = False
        self.reason: str | None = None

    @property
    def is_set(self) -> bool:
        """True once the tool should stop."""
        return self._event.is_set()

    def set(self, *, cancelled: bool, reason: str | None) -> None:
        """Record why the tool must stop; the first cause wins."""
        with self._lock:
            if not self._event.is_set():
                self.cancelled, self.reason = cancelled, reason
                self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block up to ``timeout`` seconds; True as soon as the signal is set."""
        return self._event.wait(timeout)

    def error(self, execution_id: str) -> LeaseLostError:
        """The typed error the executor raises for this stop."""
        if self.cancelled:
            return ExecutionCancelledError(
                f"execution {execution_id} was cancelled while the tool ran", reason=self.reason
            )
        return LeaseLostError(
            f"execution {execution_id}: lease lost while the tool ran: {self.reason}"
        )


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool and a reconcile hook get: the identity to pass downstream, a stop signal."""

    execution: Execution
    claim_token: str = field(repr=False)  # a capability: kept out of logs and reprs
    previous: PreviousAttempt | None
    stop: StopSignal

    @property
    def idempotency_key(self) -> str:
        """Pass this downstream (e.g. as an ``Idempotency-Key`` header)."""
        return self.execution.idempotency_key

    @property
    def epoch(self) -> int:
        """The fencing token of this attempt: grows by one at every grant."""
        return self.execution.epoch

    @property
    def params(self) -> dict[str, Any]:
        """The recorded params of the claim."""
        return self.execution.params

    @property
    def stopped(self) -> bool:
        """True once the lease is lost or a cancel was requested: stop as soon as you can."""
        return self.stop.is_set

    def wait(self, timeout: float) -> bool:
        """Sleep up to ``timeout`` seconds, waking early on a stop; True when stopped."""
        return self.stop.wait(timeout)

    def raise_if_stopped(self) -> None:
        """Raise the executor's typed error when the tool should stop (for sync tools)."""
        if self.stop.is_set:
            raise self.stop.error(self.execution.id)


@dataclass(frozen=True, slots=True)
class ToolRun:
    """The outcome of a run: the result, and how the ledger recorded it.

    ``status`` is how the claim was answered (claimed, reclaimed or replayed);
    ``reconciled`` is True when the reconcile hook supplied the result.
    """

    result: Any
    status: ClaimStatus
    execution: Execution
    reconciled: bool = False
    previous: PreviousAttempt | None = None


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """How to claim and run one tool; shared by ``run_tool`` and the decorators."""

    tool_name: str
    dedup_fields: Sequence[str] | None = None
    lease_seconds: float = 60
    retention_seconds: float = DEFAULT_RETENTION_S
    effect: str = "external"
    on_in_progress: InProgressPolicy = "raise"
    wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON

    def __post_init__(self) -> None:
        if self.on_in_progress not in ("raise", "wait"):
            raise InvalidArgumentError("on_in_progress must be 'raise' or 'wait'")

    def claim_kwargs(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Keyword arguments of ``claim_execution`` for ``params``."""
        return {
            "tool_name": self.tool_name,
            "params": params,
            "dedup_fields": self.dedup_fields,
            "lease_seconds": self.lease_seconds,
            "retention_seconds": self.retention_seconds,
            "effect": self.effect,
        }


@dataclass(frozen=True, slots=True)
class ToolTarget:
    """Which operation to run: a channel and a key name or a step number."""

    channel_id: str
    key_name: str | None
    step: int | None


@dataclass(frozen=True, slots=True)
class Done:
    """How the guarded work ended: a result, or the exception it raised."""

    result: Any = None
    error: BaseException | None = None
    reconciled: bool = False


AsyncToolFn = Callable[[ToolContext], Awaitable[Any]]
AsyncReconcile = Callable[[PreviousAttempt, ToolContext], Awaitable[Any]]


# --- shared judgement ------------------------------------------------------------------


def in_progress_delay(claim: Claim, spec: ToolSpec, give_up_at: float) -> float:
    """Seconds to wait before claiming again, or the typed error for an ``in_progress``."""
    if spec.on_in_progress == "raise":
        raise ToolInProgressError(
            f"execution {claim.execution.id} is held by another worker",
            execution_id=claim.execution.id,
            holder=claim.holder,
            lease_deadline_ms=claim.lease_deadline_ms,
        )
    left = give_up_at - time.monotonic()
    if left <= 0:
        raise LedgerTimeoutError(
            f"execution {claim.execution.id} still held by {claim.holder} "
            f"after waiting {spec.wait_timeout_s}s"
        )
    # Leases are judged in log time (broker time); the local wall clock stands in for it.
    lapse = (claim.lease_deadline_ms or 0) / 1000 - time.time() + _LAPSE_MARGIN_S
    return min(max(lapse, _MIN_POLL_S), left)


def failure_of(spec: ToolSpec, exc: BaseException) -> tuple[str, bool]:
    """The recorded error text and whether a retry may take over at once."""
    flag = getattr(exc, "retryable", None)
    retryable = flag if isinstance(flag, bool) else isinstance(exc, spec.retry_on)
    return f"{type(exc).__name__}: {exc}"[:_MAX_ERROR_CHARS], retryable


def fenced_error(execution: Execution) -> LeaseLostError:
    """The error for a completion fenced because another worker reclaimed the lease."""
    return LeaseLostError(
        f"execution {execution.id}: the lease was lost and another worker reclaimed it; "
        "this result was recorded as duplicate_effect_suspected"
    )


def add_ledger_note(exc: BaseException, what: str, ledger_exc: BaseException) -> None:
    """Keep the caller's error, noting that the ledger could not record it."""
    exc.add_note(f"oncelog: {what} failed: {ledger_exc}")


def judge_heartbeat_error(exc: Exception, deadline_ms: int, stop: StopSignal) -> bool:
    """After a failed heartbeat: True (and the stop set) when the lease counts as lost."""
    if isinstance(exc, StaleClaimError | InvalidStateError):
        stop.set(cancelled=False, reason=str(exc))
        return True
    # A timed-out or undeliverable heartbeat proves nothing until our known deadline has passed.
    if time.time() * 1000 >= deadline_ms:
        stop.set(cancelled=False, reason=f"no heartbeat confirmed before the deadline: {exc}")
        return True
    return False


# --- async -----------------------------------------------------------------------------


async def run_tool(
    client: LedgerClient,
    channel_id: str,
    key_name: str | None = None,
    *,
    step: int | None = None,
    tool_name: str,
    params: Mapping[str, Any],
    fn: AsyncToolFn,
    dedup_fields: Sequence[str] | None = None,
    lease_seconds: float = 60,
    retention_seconds: float = DEFAULT_RETENTION_S,
    effect: str = "external",
    reconcile: AsyncReconcile | None = None,
    on_in_progress: InProgressPolicy = "raise",
    wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S,
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON,
) -> ToolRun:
    """Run ``fn`` at most once per idempotency key through the ledger (see the module doc)."""
    spec = ToolSpec(
        tool_name, dedup_fields, lease_seconds, retention_seconds, effect, on_in_progress,
        wait_timeout_s, retry_on,
    )  # fmt: skip
    target = ToolTarget(channel_id, key_name, step)
    return await _run_spec(client, spec, target, params, fn, reconcile=reconcile)


async def _run_spec(
    client: LedgerClient,
    spec: ToolSpec,
    target: ToolTarget,
    params: Mapping[str, Any],
    fn: AsyncToolFn,
    *,
    reconcile: AsyncReconcile | None = None,
) -> ToolRun:
    claim = await _claim_async(client, spec, target, params)
    if claim.status is ClaimStatus.REPLAYED:
        return ToolRun(claim.result, claim.status, claim.execution)
    ctx = ToolContext(claim.execution, claim.claim_token, claim.previous, StopSignal())
    done = await _guarded_async(client, spec, claim, _work_async(fn, reconcile, ctx), ctx.stop)
    return await _settle_async(client, spec, claim, ctx, done)


async def _claim_async(
    client: LedgerClient, spec: ToolSpec, target: ToolTarget, params: Mapping[str, Any]
) -> Claim:
    give_up_at = time.monotonic() + spec.wait_timeout_s
    while True:
        claim = await client.claim_execution(
            target.channel_id, target.key_name, step=target.step, **spec.claim_kwargs(params)
        )
        if claim.status is not ClaimStatus.IN_PROGRESS:
            return claim
        # Waiting for the holder's lease to lapse is waiting for time itself.
        await asyncio.sleep(in_progress_delay(claim, spec, give_up_at))


async def _work_async(
    fn: AsyncToolFn, reconcile: AsyncReconcile | None, ctx: ToolContext
) -> tuple[Any, bool]:
    if reconcile is not None and ctx.previous is not None:
        known = await reconcile(ctx.previous, ctx)
        if known is not None:
            return known, True
    return await fn(ctx), False


async def _guarded_async(
    client: LedgerClient,
    spec: ToolSpec,
    claim: Claim,
    work: Awaitable[tuple[Any, bool]],
    stop: StopSignal,
) -> Done:
    task = asyncio.ensure_future(work)
    beat = asyncio.create_task(_heartbeat_async(client, spec, claim, stop))
    try:
        await asyncio.wait({task, beat}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        # Reached with the work unfinished only on a stop or when our caller cancels us.
        beat.cancel()
        task.cancel()
        await asyncio.gather(task, beat, return_exceptions=True)
    if task.cancelled():
        return Done(error=asyncio.CancelledError())
    error = task.exception()
    if error is not None:
        return Done(error=error)
    result, reconciled = task.result()
    return Done(result, reconciled=reconciled)


async def _heartbeat_async(
    client: LedgerClient, spec: ToolSpec, claim: Claim, stop: StopSignal
) -> None:
    deadline_ms = claim.execution.lease_deadline_ms
    while True:
        await asyncio.sleep(spec.lease_seconds / 3)
        try:
            # Not cut short at our deadline: a heartbeat appended in time keeps the lease even
            # when its decision comes late, and the client's own timeouts bound the wait.
            beat = await client.heartbeat_execution(claim.execution, claim.claim_token)
        except Exception as exc:  # judged: fenced, or unconfirmed past the deadline
            if judge_heartbeat_error(exc, deadline_ms, stop):
                return
            continue
        deadline_ms = beat.lease_deadline_ms
        if beat.cancel_requested:
            stop.set(cancelled=True, reason=beat.cancel_reason)
            return


async def _settle_async(
    client: LedgerClient, spec: ToolSpec, claim: Claim, ctx: ToolContext, done: Done
) -> ToolRun:
    ex, token = claim.execution, claim.claim_token
    if done.error is None:
        try:
            recorded = await client.complete_execution(ex, token, done.result)
        except StaleClaimError as exc:
            raise fenced_error(ex) from exc
        return ToolRun(recorded.result, claim.status, recorded, done.reconciled, claim.previous)
    if ctx.stop.is_set:
        stopped = ctx.stop.error(ex.id)
        if ctx.stop.cancelled:
            try:
                await client.fail_execution(ex, token, f"cancelled: {ctx.stop.reason}", False)
            except LedgerError as exc:
                add_ledger_note(stopped, "recording the cancel", exc)
        raise stopped from done.error
    error, retryable = failure_of(spec, done.error)
    try:
        await client.fail_execution(ex, token, error, retryable)
    except LedgerError as exc:
        add_ledger_note(done.error, "recording the failure", exc)
    raise done.error


# --- decorators ------------------------------------------------------------------------


class LedgerTool:
    """An async tool bound to a ledger: ``await tool("run-1", "charge:1", **params)``.

    Made by :func:`ledger_tool`. The wrapped function is called as ``fn(ctx, **params)``;
    ``channel_id``, ``key_name`` and ``step`` are therefore reserved parameter names.
    """

    __name__: str  # set by functools.update_wrapper, like the rest of the metadata

    def __init__(
        self,
        fn: Callable[..., Awaitable[Any]],
        client: LedgerClient | Callable[[], LedgerClient],
        spec: ToolSpec,
        reconcile: AsyncReconcile | None,
    ) -> None:
        functools.update_wrapper(self, fn)
        self._fn, self._client, self.spec, self._reconcile = fn, client, spec, reconcile

    async def __call__(
        self, channel_id: str, key_name: str | None = None, *, step: int | None = None,
        **params: Any,
    ) -> Any:  # fmt: skip
        """Run through the ledger and return the (possibly replayed) result."""
        return (await self.run(channel_id, key_name, step=step, **params)).result

    async def run(
        self, channel_id: str, key_name: str | None = None, *, step: int | None = None,
        **params: Any,
    ) -> ToolRun:  # fmt: skip
        """Run through the ledger and return the whole :class:`ToolRun`."""
        client = self._client() if callable(self._client) else self._client

        async def call(ctx: ToolContext) -> Any:
            return await self._fn(ctx, **params)

        target = ToolTarget(channel_id, key_name, step)
        return await _run_spec(client, self.spec, target, params, call, reconcile=self._reconcile)


def ledger_tool(
    client: LedgerClient | Callable[[], LedgerClient],
    *,
    tool_name: str | None = None,
    reconcile: AsyncReconcile | None = None,
    **options: Any,
) -> Callable[[Callable[..., Awaitable[Any]]], LedgerTool]:
    """Decorate ``async def tool(ctx, **params)`` to run through the ledger.

    ``tool_name`` defaults to the function's name; ``options`` are the other
    :class:`ToolSpec` fields (``lease_seconds``, ``dedup_fields``, ``effect``, ...).
    """

    def wrap(fn: Callable[..., Awaitable[Any]]) -> LedgerTool:
        return LedgerTool(fn, client, ToolSpec(tool_name or fn.__name__, **options), reconcile)

    return wrap
