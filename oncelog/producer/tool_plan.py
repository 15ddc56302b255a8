"""The executor as a plan: claim -> run the tool under a heartbeat -> complete or fail.

The plan is a generator of steps and does no I/O. A driver performs each step
and sends the answer back in (or throws the call's exception in): the async
and the blocking driver (:mod:`oncelog.producer.executor`) run the same plan,
so every judgement below (when to wait, when a lease counts as lost, what gets
recorded) is written once and tested without a ledger (``tests/producer/test_tool_plan.py``).

A result that cannot be recorded (not canonical JSON, over 1 MiB, or a ``result_encoder``
that raised) is recorded as a failure for good with code ``result_unrecordable``, and raised as
:class:`~oncelog.errors.ResultUnrecordableError`: the tool ran, so a retry must not run it again
(:mod:`oncelog.producer.recordable`).

Which exceptions are recorded: an :class:`Exception` from the tool is recorded
with ``fail_execution`` and re-raised. A :class:`BaseException` that is not an
``Exception`` (``KeyboardInterrupt``, ``SystemExit``, a ``CancelledError`` not
caused by our own stop) is not a result of the tool: nothing is recorded, the
lease lapses, and the next claimer reconciles with the attempt.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final, Generic, NoReturn, Protocol, TypeVar, Unpack

from oncelog.errors import (
    InvalidArgumentError,
    InvalidStateError,
    LeaseLostError,
    LedgerError,
    LedgerTimeoutError,
    StaleClaimError,
    ToolInProgressError,
)
from oncelog.producer.approval_rule import pending_error
from oncelog.producer.calls import ExecutionRef
from oncelog.producer.clock import Clock
from oncelog.producer.protocol import ClaimCall
from oncelog.producer.recordable import Unrecordable, UnrecordableAnswerError, refusal, unrecordable
from oncelog.producer.results import Claim, ClaimStatus, Execution, Heartbeat
from oncelog.producer.tool_model import (
    Reconciled,
    StopSignal,
    ToolContext,
    ToolOutcome,
    ToolRun,
    ToolSpec,
    ToolTarget,
)

_LAPSE_MARGIN_S: Final = 0.05  # claim just after the deadline, not on it
_MIN_POLL_S: Final = 0.1  # bounds re-claims when the local clock runs ahead of the broker's
_MAX_ERROR_CHARS: Final = 4000

ClaimT_co = TypeVar("ClaimT_co", covariant=True)
ExecutionT_co = TypeVar("ExecutionT_co", covariant=True)
HeartbeatT_co = TypeVar("HeartbeatT_co", covariant=True)
R = TypeVar("R")
S = TypeVar("S")


class LedgerCalls(Protocol[ClaimT_co, ExecutionT_co, HeartbeatT_co]):
    """The calls the executor makes; blocking (``LedgerCalls[Claim, Execution, Heartbeat]``)
    or async (each answer an ``Awaitable``). Both clients, and any test double, fit."""

    @property
    def clock(self) -> Clock:
        """The clock leases are judged by."""
        ...

    def claim_execution(
        self,
        channel_id: str,
        key_name: str | None = None,
        *,
        step: int | None = None,
        **options: Unpack[ClaimCall],
    ) -> ClaimT_co: ...

    # The steps pass their Execution and token by position (names are the clients').
    def complete_execution(
        self, execution: Execution, token: str, result: Any, /, *, reconciled: Reconciled = None
    ) -> ExecutionT_co: ...

    def fail_execution(
        self,
        execution: Execution,
        token: str,
        error: str,
        retryable: bool,
        /,
        *,
        reconciled: Reconciled = None,
    ) -> ExecutionT_co: ...

    def heartbeat_execution(
        self, execution_id: ExecutionRef, claim_token: str
    ) -> HeartbeatT_co: ...


AnyLedger = LedgerCalls[Any, Any, Any]


# --- steps -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClaimStep:
    """Claim the operation; answered with a :class:`Claim`."""

    target: ToolTarget
    options: ClaimCall

    def invoke(self, ledger: AnyLedger) -> Any:
        """Make the call on ``ledger`` (its answer, or an awaitable of it)."""
        t = self.target
        return ledger.claim_execution(t.channel_id, t.key_name, step=t.step, **self.options)


@dataclass(frozen=True, slots=True)
class CompleteStep:
    """Record the result; answered with the recorded :class:`Execution`."""

    execution: Execution
    claim_token: str = field(repr=False)
    result: Any
    reconciled: Reconciled = None

    def invoke(self, ledger: AnyLedger) -> Any:
        """Make the call on ``ledger``."""
        return ledger.complete_execution(
            self.execution, self.claim_token, self.result, reconciled=self.reconciled
        )


@dataclass(frozen=True, slots=True)
class FailStep:
    """Record a failure; answered with the recorded :class:`Execution`."""

    execution: Execution
    claim_token: str = field(repr=False)
    error: str
    retryable: bool
    reconciled: Reconciled = None

    def invoke(self, ledger: AnyLedger) -> Any:
        """Make the call on ``ledger``."""
        return ledger.fail_execution(
            self.execution, self.claim_token, self.error, self.retryable, reconciled=self.reconciled
        )


@dataclass(frozen=True, slots=True)
class HeartbeatStep:
    """Extend the lease; answered with a :class:`Heartbeat`."""

    execution: Execution
    claim_token: str = field(repr=False)

    def invoke(self, ledger: AnyLedger) -> Any:
        """Make the call on ``ledger``."""
        return ledger.heartbeat_execution(self.execution, self.claim_token)


@dataclass(frozen=True, slots=True)
class WaitStep:
    """Let ``seconds`` pass; answered True when the tool finished meanwhile.

    The plan waits for two things, which differ only in what may end the wait:
    a heartbeat interval (``beside_tool``), cut short by the end of the tool run
    it beats beside, and a holder's lease to lapse, which only time ends.
    """

    seconds: float
    beside_tool: bool


@dataclass(frozen=True, slots=True)
class RunToolStep:
    """Run the tool (and the reconcile hook) under :meth:`heartbeats`; answered with a
    :class:`ToolOutcome` (the driver catches the tool's ``Exception``)."""

    ctx: ToolContext
    claim: Claim = field(repr=False)
    spec: ToolSpec

    def heartbeats(self) -> Plan[None]:
        """The heartbeat plan to run beside the tool."""
        return heartbeat_plan(self.spec, self.claim, self.ctx.stop)


LedgerStep = ClaimStep | CompleteStep | FailStep | HeartbeatStep
Step = LedgerStep | WaitStep | RunToolStep
Plan = Generator[Step, Any, R]


# --- the plans ---------------------------------------------------------------------------


def plan_run(
    spec: ToolSpec, target: ToolTarget, params: Mapping[str, Any], clock: Clock
) -> Plan[ToolRun]:
    """Run a tool at most once per idempotency key (see :mod:`oncelog.producer.executor`)."""
    claim = yield from _claim_until_held(spec, target, params, clock)
    if claim.status is ClaimStatus.REPLAYED:
        return ToolRun(claim.result, claim.status, claim.execution)
    ctx = ToolContext(claim.execution, claim.claim_token, claim.previous, StopSignal(clock))
    outcome: ToolOutcome = yield RunToolStep(ctx, claim, spec)
    return (yield from _settle(spec, claim, ctx, outcome))


def _claim_until_held(
    spec: ToolSpec, target: ToolTarget, params: Mapping[str, Any], clock: Clock
) -> Plan[Claim]:
    give_up_at_ms = clock.now_ms() + round(spec.wait_timeout_s * 1000)
    rule = spec.approval
    approval_give_up_ms = clock.now_ms() + round(rule.wait_timeout_s * 1000) if rule else 0
    while True:
        claim: Claim = yield ClaimStep(target, spec.claim_options(params))
        if claim.status is ClaimStatus.AWAITING_APPROVAL:
            # Each claim is answered from the log: the one after the decision is the grant
            # (or ApprovalDeniedError). The pause only spaces the claims out.
            if rule is None:  # another declaration of the key recorded the intent
                raise pending_error(claim)
            delay = rule.delay(claim, approval_give_up_ms, clock.now_ms())
            yield WaitStep(delay, beside_tool=False)
            continue
        if claim.status is not ClaimStatus.IN_PROGRESS:
            return claim
        # Waiting for the holder's lease to lapse is waiting for time itself.
        yield WaitStep(
            in_progress_delay(claim, spec, give_up_at_ms, clock.now_ms()), beside_tool=False
        )


def heartbeat_plan(spec: ToolSpec, claim: Claim, stop: StopSignal) -> Plan[None]:
    """Beat every ``lease_seconds / 3`` until the tool finishes or the stop is set."""
    deadline_ms = claim.execution.lease_deadline_ms
    clock = stop.clock
    while True:
        finished = yield WaitStep(spec.lease_seconds / 3, beside_tool=True)
        if finished:
            return
        try:
            # Not cut short at our deadline: a heartbeat appended in time keeps the lease even
            # when its decision comes late, and the client's own timeouts bound the wait.
            beat: Heartbeat = yield HeartbeatStep(claim.execution, claim.claim_token)
        except Exception as exc:  # judged: fenced, or unconfirmed past the deadline
            if judge_heartbeat_error(exc, deadline_ms, stop, clock.now_ms()):
                return
            continue
        deadline_ms = beat.lease_deadline_ms
        if beat.cancel_requested:
            stop.set(cancelled=True, reason=beat.cancel_reason)
            return


def _settle(spec: ToolSpec, claim: Claim, ctx: ToolContext, outcome: ToolOutcome) -> Plan[ToolRun]:
    ex, token, error = claim.execution, claim.claim_token, outcome.error
    settled = outcome.reconciled_as
    if error is None:
        result, refused = encoded(spec, outcome.result)
        if refused is not None:
            return (yield from _unrecordable(claim, refused, settled, None))
        try:
            recorded: Execution = yield CompleteStep(ex, token, result, settled)
        except StaleClaimError as exc:
            raise fenced_error(ex) from exc
        except InvalidArgumentError as exc:
            # Checked before anything was sent: only the result can be refused here.
            refused = unrecordable(result)
            if refused is None:
                raise
            return (yield from _unrecordable(claim, refused, settled, exc))
        return ToolRun(
            recorded.result,
            claim.status,
            recorded,
            settled == "found",
            claim.previous,
            settled,
        )
    if isinstance(error, UnrecordableAnswerError):  # an adapter's answer without a JSON form
        return (yield from _unrecordable(claim, error.refused, error.reconciled_as, error))
    stop = ctx.stop
    if stop.is_set:
        stopped = stop.error(ex.id)
        if stop.cancelled:
            # Non-retryable: a reclaim clears the cancel flag, so a release would let the
            # next automatic retry silently undo the cancel.
            cancel = FailStep(ex, token, f"cancelled: {stop.reason}", False)
            yield from _record(cancel, stopped, "recording the cancel")
        raise stopped from error
    if isinstance(error, Exception):
        text, retryable = failure_of(spec, error)
        failing = FailStep(ex, token, text, retryable, settled)
        yield from _record(failing, error, "recording the failure")
    raise error


def encoded(spec: ToolSpec, result: Any) -> tuple[Any, Unrecordable | None]:
    """The result as ``spec.result_encoder`` makes it, or why it cannot be recorded."""
    if spec.result_encoder is None:
        return result, None
    try:
        return spec.result_encoder(result), None
    except Exception as exc:  # the encoder is the caller's code: any failure is a reason
        return None, refusal(result, f"result_encoder raised {type(exc).__name__}: {exc}")


def _unrecordable(
    claim: Claim, refused: Unrecordable, settled: Reconciled, cause: BaseException | None
) -> Plan[NoReturn]:
    """The tool ran and its result cannot be recorded: record a failure for good instead of
    leaving the step claimed, whose retry would run the tool again (docs/spec.md §5)."""
    ex = claim.execution
    step = FailStep(ex, claim.claim_token, refused.recorded_text(), False, settled)
    why_not: str | None = None
    try:
        yield step
    except LedgerError as exc:
        why_not = str(exc)
    raise refused.error(ex.id, why_not) from cause


def _record(step: FailStep, caller_error: BaseException, what: str) -> Plan[None]:
    try:
        yield step
    except LedgerError as exc:
        # Keep the caller's error, noting that the ledger could not record it.
        caller_error.add_note(f"oncelog: {what} failed: {exc}")


# --- judgements --------------------------------------------------------------------------


def in_progress_delay(claim: Claim, spec: ToolSpec, give_up_at_ms: int, now_ms: int) -> float:
    """Seconds to wait before claiming again, or the typed error for an ``in_progress``."""
    if spec.on_in_progress == "raise":
        raise in_progress_error(claim, now_ms)
    left = (give_up_at_ms - now_ms) / 1000
    if left <= 0:
        raise LedgerTimeoutError(
            f"execution {claim.execution.id} still held by {claim.holder} "
            f"after waiting {spec.wait_timeout_s}s"
        )
    # Leases are judged in log time (broker time); the local clock stands in for it.
    lapse = ((claim.lease_deadline_ms or 0) - now_ms) / 1000 + _LAPSE_MARGIN_S
    return min(max(lapse, _MIN_POLL_S), left)


def in_progress_error(claim: Claim, now_ms: int) -> ToolInProgressError:
    """The ``in_progress`` error: who holds the operation, when its lease lapses, how to wait."""
    ex, deadline = claim.execution, claim.lease_deadline_ms
    if deadline is None:
        until = "until its lease lapses"
    else:
        at = datetime.fromtimestamp(deadline / 1000, UTC).isoformat(timespec="milliseconds")
        until = f"until its lease lapses at {at} (in {max(0, deadline - now_ms) / 1000:.1f}s)"
    # A holder that died (SIGKILL, a crash) keeps its lease until then: say so, and how to wait.
    return ToolInProgressError(
        f"execution {ex.id} (call {ex.key_name!r} of {ex.channel_id!r}) is held by worker "
        f"{claim.holder} {until}. If that worker died, a call after then takes it over and "
        'reconciles with it; to wait here instead, pass on_in_progress="wait" '
        '(to run_tool, or ToolPolicy(on_in_progress="wait") in an adapter)',
        execution_id=ex.id,
        holder=claim.holder,
        lease_deadline_ms=deadline,
    )


def failure_of(spec: ToolSpec, exc: Exception) -> tuple[str, bool]:
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


def judge_heartbeat_error(exc: Exception, deadline_ms: int, stop: StopSignal, now_ms: int) -> bool:
    """After a failed heartbeat: True (and the stop set) when the lease counts as lost."""
    if isinstance(exc, StaleClaimError | InvalidStateError):
        stop.set(cancelled=False, reason=str(exc))
        return True
    # A timed-out or undeliverable heartbeat proves nothing until our known deadline has passed.
    if now_ms >= deadline_ms:
        stop.set(cancelled=False, reason=f"no heartbeat confirmed before the deadline: {exc}")
        return True
    return False


# --- stepping ----------------------------------------------------------------------------


class PlanRunner(Generic[S, R]):
    """Steps a plan for a driver: each answer (or the call's exception) goes back in.
    The plans of :mod:`oncelog.producer.ledger_plan` are stepped here too."""

    def __init__(self, plan: Generator[S, Any, R]) -> None:
        self._plan = plan
        self._reply: Any = None
        self._error: BaseException | None = None
        self._result: R | None = None

    def next_step(self) -> S | None:
        """The next step to perform, or None once the plan has returned."""
        try:
            if self._error is not None:
                error, self._error = self._error, None
                return self._plan.throw(error)
            return self._plan.send(self._reply)
        except StopIteration as done:
            self._result = done.value
            return None

    def answer(self, reply: Any) -> None:
        """The last step's answer."""
        self._reply = reply

    def fail(self, error: BaseException) -> None:
        """The last step's call raised ``error``: the plan judges it."""
        self._error = error

    @property
    def result(self) -> R:
        """What the plan returned."""
        return self._result  # type: ignore[return-value]  # None only for a Plan[None]
