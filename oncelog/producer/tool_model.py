"""What a tool run is made of: its options, its context, its stop signal and its outcome.

Shared by the executor's plan (:mod:`oncelog.producer.tool_plan`) and its two
drivers, async and blocking (:mod:`oncelog.producer.executor`).
"""

from __future__ import annotations

import functools
import inspect
import threading
import warnings
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypedDict, TypeVar, cast

from oncelog.errors import ExecutionCancelledError, InvalidArgumentError, LeaseLostError
from oncelog.identity import validation
from oncelog.producer.approval_rule import RequireApproval
from oncelog.producer.clock import Clock
from oncelog.producer.protocol import DEFAULT_RETENTION_S, ClaimCall
from oncelog.producer.results import ClaimStatus, Execution
from oncelog.producer.transient import TransientTransportError
from oncelog.schemas.models import PreviousAttempt

InProgressPolicy = Literal["raise", "wait"]
Reconciled = Literal["found", "not_found"] | None
"""How a reclaimer settled the previous attempt's unknown outcome (a request's ``reconciled``)."""
# What a downstream outage raises: a retry after recovery may take over at once.
DEFAULT_RETRY_ON: Final[tuple[type[BaseException], ...]] = (
    TimeoutError,
    ConnectionError,
    TransientTransportError,
)
DEFAULT_WAIT_TIMEOUT_S: Final = 300.0
MAX_WAIT_TIMEOUT_S: Final = 24 * 3600.0
"""The longest ``wait_timeout_s``: a lease lasts at most as long."""


class UnguardedToolWarning(UserWarning):
    """An ``external`` tool has no reconcile hook and no downstream that dedupes its key.

    A crash after its effect and before its completion is then followed by a second effect.
    A warning rather than a log line: it is a fix in the code that wires the tools, shown
    without any logging set-up, and a test suite or CI can turn it into an error
    (``-W error::oncelog.integrations.UnguardedToolWarning``).
    """


class StopSignal:
    """Set once, by the heartbeat, when the lease is lost or a cancel is requested.

    Thread-safe: the sync executor sets it from its heartbeat thread. Waits on it
    run on the transport's clock, so a test clock can end them.
    """

    def __init__(self, clock: Clock) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self.clock = clock
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

    def wait(self, timeout: float) -> bool:
        """Block up to ``timeout`` seconds; True as soon as the signal is set."""
        return self.clock.wait(self._event, timeout)

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
    ``reconciled_as`` is what the completion told the ledger about the previous
    attempt: ``"found"`` (the hook supplied the result), ``"not_found"`` (the hook
    answered None, so the tool ran), or None (no hook, or nothing to reconcile).
    """

    result: Any
    status: ClaimStatus
    execution: Execution
    reconciled: bool = False
    previous: PreviousAttempt | None = None
    reconciled_as: Reconciled = None


class ToolOptions(TypedDict, total=False):
    """The keyword options of ``run_tool``, ``@ledger_tool`` and ``@sync_ledger_tool`` (all
    optional): :class:`ToolSpec`'s fields but the tool's name, with its defaults."""

    dedup_fields: Sequence[str] | None
    """The params that make the request hash (docs/spec.md §1); the others are volatile
    (timestamps, trace ids) and never make a retry a conflict. Default None: all params."""
    lease_seconds: float
    """How long a claim holds the step before another worker may reclaim it; the executor
    heartbeats every third of it. Default 60."""
    retention_seconds: float
    """How long a completed result is kept for replay after it completes. Default 7 days."""
    effect: str
    """``"external"`` (the tool touches the outside world: the audit watches it for doubles)
    or ``"pure"``. Default ``"external"``."""
    on_in_progress: InProgressPolicy
    """When another worker holds the step: ``"raise"``
    (:class:`~oncelog.errors.ToolInProgressError`) or ``"wait"`` for its lease to end and
    claim again. Default ``"raise"``."""
    wait_timeout_s: float
    """The longest ``on_in_progress="wait"`` waits, then
    :class:`~oncelog.errors.LedgerTimeoutError`. Default 300."""
    retry_on: tuple[type[BaseException], ...]
    """A tool's exceptions recorded as retryable failures (default: timeouts, connection
    errors and HTTP clients' transport errors, ``DEFAULT_RETRY_ON``); any other is final."""
    result_encoder: Callable[[Any], Any] | None
    """Turns the tool's result into JSON before it is recorded (``oncelog.jsonable``: pydantic's
    JSON mode for datetimes, decimals, UUIDs, models). Default None: the result as it is."""
    downstream_dedupes: bool
    """The downstream deduplicates by the idempotency key itself: no reconcile hook is needed,
    and no :class:`UnguardedToolWarning` is given. Default False."""
    approval: RequireApproval | None
    """Which calls need a person's yes first, and whether the call waits for it or raises
    :class:`~oncelog.errors.ApprovalPendingError` at once
    (:mod:`oncelog.producer.approval_rule`). Default None: no call does."""


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """How to claim and run one tool; shared by ``run_tool`` and the decorators.

    ``result_encoder`` turns what the tool (or the reconcile hook) returned into the JSON to
    record, e.g. :func:`oncelog.jsonable` for datetimes, decimals and pydantic models; a
    result that still cannot be recorded is a ``result_unrecordable`` failure (docs/spec.md
    §5). ``downstream_dedupes=True`` states that the service the tool calls applies
    ``ctx.idempotency_key`` once: an ``external`` tool with neither that nor a reconcile hook
    is warned of (:class:`UnguardedToolWarning`).
    """

    tool_name: str
    dedup_fields: Sequence[str] | None = None
    lease_seconds: float = 60
    retention_seconds: float = DEFAULT_RETENTION_S
    effect: str = "external"
    on_in_progress: InProgressPolicy = "raise"
    wait_timeout_s: float = DEFAULT_WAIT_TIMEOUT_S
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON
    result_encoder: Callable[[Any], Any] | None = None
    downstream_dedupes: bool = False
    approval: RequireApproval | None = None

    def __post_init__(self) -> None:
        if self.approval is not None and not isinstance(self.approval, RequireApproval):
            raise InvalidArgumentError("approval must be a RequireApproval")
        if self.on_in_progress not in ("raise", "wait"):
            raise InvalidArgumentError("on_in_progress must be 'raise' or 'wait'")
        if self.result_encoder is not None and not callable(self.result_encoder):
            raise InvalidArgumentError("result_encoder must be a function of the result")
        # The claim's numbers are checked when the tool is declared, not at its first call.
        validation.lease_seconds_to_ms(self.lease_seconds)
        validation.retention_seconds_to_ms(self.retention_seconds)
        validation.validate_number("wait_timeout_s", self.wait_timeout_s, 0, MAX_WAIT_TIMEOUT_S)

    def guarded(self, reconcile: object | None) -> bool:
        """True when a crash after the effect cannot lead to a second one unnoticed."""
        return self.effect == "pure" or reconcile is not None or self.downstream_dedupes

    def warn_if_unguarded(self, reconcile: object | None, *, stacklevel: int) -> None:
        """Warn (:class:`UnguardedToolWarning`) when an ``external`` tool is unguarded.

        ``stacklevel`` points at the caller's line (``run_tool``, the decorator): Python's
        default filter shows the warning once per line.
        """
        if self.guarded(reconcile):
            return
        warnings.warn(
            UnguardedToolWarning(
                f"oncelog: tool {self.tool_name!r} is external and unguarded: if the process "
                "dies after its effect and before the ledger records its completion, the retry "
                "calls it again. Pass reconcile=... to ask the downstream what happened, or "
                "downstream_dedupes=True if the service it calls applies ctx.idempotency_key "
                'once (effect="pure" for a tool without side effects)'
            ),
            stacklevel=stacklevel + 1,
        )

    def claim_options(self, params: Mapping[str, Any]) -> ClaimCall:
        """What the claim of ``params`` asks for (with an approval policy when the tool's
        rule selects these params)."""
        options = ClaimCall(
            tool_name=self.tool_name,
            params=params,
            dedup_fields=self.dedup_fields,
            lease_seconds=self.lease_seconds,
            retention_seconds=self.retention_seconds,
            effect=self.effect,
        )
        if self.approval is not None:
            options["approval"] = self.approval.policy_for(params)
        return options


@dataclass(frozen=True, slots=True)
class ToolTarget:
    """Which operation to run: a channel and a key name or a step number."""

    channel_id: str
    key_name: str | None
    step: int | None


FnT = TypeVar("FnT")
ReconcileT = TypeVar("ReconcileT")


@dataclass(frozen=True, slots=True)
class ToolJob(Generic[FnT, ReconcileT]):
    """One run asked of an executor driver: the spec, the operation, its params, and the
    tool with its optional reconcile (async or blocking functions, as the driver is)."""

    spec: ToolSpec
    target: ToolTarget
    params: Mapping[str, Any]
    fn: FnT
    reconcile: ReconcileT | None = None


@dataclass(frozen=True, slots=True)
class ToolOutcome:
    """How the guarded work ended: a result, or the exception it raised.

    ``reconciled_as``: how a reconcile hook settled the previous attempt's outcome
    (``"found"``: it supplied the result; ``"not_found"``: it answered None and the
    tool ran); None when no hook ran. The completion or failure carries it.
    """

    result: Any = None
    error: BaseException | None = None
    reconciled_as: Reconciled = None


AsyncToolFn = Callable[[ToolContext], Awaitable[Any]]
AsyncReconcile = Callable[[PreviousAttempt, ToolContext], Awaitable[Any]]
SyncToolFn = Callable[[ToolContext], Any]
SyncReconcile = Callable[[PreviousAttempt, ToolContext], Any]

ClientT = TypeVar("ClientT")


def blocking_hook(tool_name: str, hook: Callable[..., Any] | None) -> SyncReconcile | None:
    """``hook`` checked to be a plain function: a blocking run cannot await an async one."""
    if hook is not None and inspect.iscoroutinefunction(hook):
        raise InvalidArgumentError(
            f"{tool_name}: the reconcile hook is async and this call is blocking: "
            "give ToolPolicy(reconcile=...) a plain function"
        )
    return hook


RunT = TypeVar("RunT")
ResultT = TypeVar("ResultT")


class BoundTool(Generic[ClientT, FnT, ReconcileT, RunT, ResultT]):
    """A tool function bound to a client and a spec: what the decorators make.

    The wrapped function is called as ``fn(ctx, **params)``; ``channel_id``,
    ``key_name`` and ``step`` are therefore reserved parameter names. A subclass says how
    a job is run (:meth:`_run`: awaitable or blocking) and its result read (:meth:`_result`).
    """

    __name__: str  # set by functools.update_wrapper, like the rest of the metadata

    def __init__(
        self,
        fn: Callable[..., Any],
        client: ClientT | Callable[[], ClientT],
        spec: ToolSpec,
        reconcile: ReconcileT | None,
    ) -> None:
        # A BoundTool subclass is called like ``fn``, so it takes on its name and docstring.
        functools.update_wrapper(cast(Callable[..., Any], self), fn)
        self._fn, self._client, self.spec, self.reconcile = fn, client, spec, reconcile

    def client(self) -> ClientT:
        """The bound client (a factory is called each time, so it can be made late)."""
        made = self._client
        return made() if callable(made) else made

    def bind(self, params: Mapping[str, Any]) -> Callable[[ToolContext], Any]:
        """The tool as the executor calls it: ``fn(ctx, **params)``."""
        return lambda ctx: self._fn(ctx, **params)

    def run(
        self,
        channel_id: str,
        key_name: str | None = None,
        *,
        step: int | None = None,
        **params: Any,
    ) -> RunT:
        """Run through the ledger: the whole :class:`ToolRun` (awaitable for an async tool)."""
        target = ToolTarget(channel_id, key_name, step)
        return self._run(ToolJob(self.spec, target, params, self.bind(params), self.reconcile))

    def __call__(self, *args: Any, **params: Any) -> ResultT:
        """Run through the ledger (as :meth:`run`) and return the (possibly replayed) result
        (awaitable for an async tool)."""
        return self._result(self.run(*args, **params))

    def _run(self, job: ToolJob[Any, ReconcileT]) -> RunT:
        raise NotImplementedError

    def _result(self, run: RunT) -> ResultT:
        raise NotImplementedError
