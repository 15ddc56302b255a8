"""What a tool run is made of: its options, its context, its stop signal and its outcome.

Shared by the executor's plan (:mod:`oncelog.producer.tool_plan`) and its two
drivers, async and blocking (:mod:`oncelog.producer.executor`).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, Literal, TypedDict, TypeVar, cast

from oncelog.errors import ExecutionCancelledError, InvalidArgumentError, LeaseLostError
from oncelog.identity import validation
from oncelog.producer.clock import Clock
from oncelog.producer.protocol import DEFAULT_RETENTION_S, ClaimOptions
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
    """The keyword options of ``run_tool`` and the decorators: :class:`ToolSpec` but the name."""

    dedup_fields: Sequence[str] | None
    lease_seconds: float
    retention_seconds: float
    effect: str
    on_in_progress: InProgressPolicy
    wait_timeout_s: float
    retry_on: tuple[type[BaseException], ...]


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
        # The claim's numbers are checked when the tool is declared, not at its first call.
        validation.lease_seconds_to_ms(self.lease_seconds)
        validation.retention_seconds_to_ms(self.retention_seconds)
        validation.validate_number("wait_timeout_s", self.wait_timeout_s, 0, MAX_WAIT_TIMEOUT_S)

    def claim_options(self, params: Mapping[str, Any]) -> ClaimOptions:
        """What the claim of ``params`` asks for."""
        return ClaimOptions(
            tool_name=self.tool_name,
            params=params,
            dedup_fields=self.dedup_fields,
            lease_seconds=self.lease_seconds,
            retention_seconds=self.retention_seconds,
            effect=self.effect,
        )


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


class BoundTool(Generic[ClientT, FnT, ReconcileT]):
    """A tool function bound to a client and a spec: what the decorators make.

    The wrapped function is called as ``fn(ctx, **params)``; ``channel_id``,
    ``key_name`` and ``step`` are therefore reserved parameter names.
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
