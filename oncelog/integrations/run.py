"""One agent run on the ledger: its channel, the key of every tool call, each tool's policy.

    run = LedgerRun(client, "run-42", policies={"search": ToolPolicy(effect="pure")})
    result = await run.acall("charge", {"order_id": "4471"}, lambda: charge(order_id="4471"))

**The key rule.** Unless a tool's policy gives ``key``, the k-th call of tool ``t`` in the run
is the operation ``t#k`` (k from 1) on the run's channel, and the call's arguments go into the
request hash. A rerun of the run (a new :class:`LedgerRun`, same channel) names its calls the
same way without help from the model: ``t#1`` replays the recorded result, and a rerun whose
k-th call of ``t`` has other arguments raises :class:`~oncelog.errors.ConflictError` instead
of a second effect. Override the rule per tool with ``ToolPolicy(key=lambda args: ...)``: a
name from the arguments (``"charge:" + args["order_id"]``) makes the key independent of the
calls' order, which parallel calls of one tool need.

**Downstream.** While a tool runs, :func:`current_call` is its
:class:`~oncelog.producer.executor.ToolContext`: the ``idempotency_key`` and ``epoch`` to pass
to the services it calls, and ``previous`` on a ``reclaimed`` claim (or use the policy's
``reconcile`` hook, which runs first and may supply the result).

Params and results are recorded as JSON (pydantic models and dataclasses are converted);
a replay, and the first run too, return the recorded JSON value.
"""

from __future__ import annotations

import contextlib
import contextvars
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from pydantic_core import PydanticSerializationError, to_jsonable_python

from oncelog.errors import ConflictError, InvalidArgumentError, LedgerError
from oncelog.identity.validation import validate_id
from oncelog.producer.executor import (
    DEFAULT_RETRY_ON,
    AsyncLedgerCalls,
    InProgressPolicy,
    SyncLedgerCalls,
    ToolContext,
    run_spec,
    run_spec_sync,
)
from oncelog.producer.protocol import DEFAULT_RETENTION_S
from oncelog.producer.tool_model import ToolJob, ToolSpec, ToolTarget
from oncelog.schemas.models import PreviousAttempt

Effect = Literal["pure", "external"]
KeyRule = Callable[[Mapping[str, Any]], str]
Reconcile = Callable[[PreviousAttempt, ToolContext], Any]

_CURRENT: Final[contextvars.ContextVar[ToolContext | None]] = contextvars.ContextVar(
    "oncelog_current_call", default=None
)


class NoLedgerCallError(LedgerError):
    """:func:`current_call` was asked outside a tool call that runs through the ledger."""

    code = "no_ledger_call"


def current_call() -> ToolContext:
    """The ledger context of the tool call running now (idempotency key, epoch, previous)."""
    ctx = _CURRENT.get()
    if ctx is None:
        raise NoLedgerCallError("no tool call is running through the ledger here")
    return ctx


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """How the calls of one tool are keyed, claimed and run.

    ``effect``: ``"external"`` (the default: the call changes the world) or ``"pure"``
    (free to replay; the side-effects query leaves it out). ``key``: a key name from the
    call's arguments instead of ``<tool>#<k>``. ``reconcile(previous, ctx)`` (sync or
    async, as the framework is) runs on a ``reclaimed`` claim; a non-None answer is
    recorded as the result instead of calling the tool. The rest are the claim's options.
    """

    effect: Effect = "external"
    key: KeyRule | None = None
    reconcile: Reconcile | None = None
    dedup_fields: Sequence[str] | None = None
    lease_seconds: float = 60
    retention_seconds: float = DEFAULT_RETENTION_S
    on_in_progress: InProgressPolicy = "raise"
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON

    def __post_init__(self) -> None:
        if self.effect not in ("pure", "external"):
            raise InvalidArgumentError(f"effect must be 'pure' or 'external', got {self.effect!r}")

    def spec(self, tool_name: str) -> ToolSpec:
        """The executor's spec for a call of ``tool_name``."""
        return ToolSpec(
            tool_name,
            dedup_fields=self.dedup_fields,
            lease_seconds=self.lease_seconds,
            retention_seconds=self.retention_seconds,
            effect=self.effect,
            on_in_progress=self.on_in_progress,
            retry_on=self.retry_on,
        )


@dataclass
class LedgerRun:
    """One run of an agent on the ledger (make a new one for each run, and for a rerun).

    ``client`` is a :class:`~oncelog.producer.client.LedgerClient` for async frameworks and
    a :class:`~oncelog.producer.sync_client.SyncLedgerClient` for blocking calls.
    ``channel_id`` names the run (a run, thread or conversation id that a rerun reuses);
    an adapter may take the framework's own id instead when it is None. ``policies`` maps
    tool names to a :class:`ToolPolicy`; other tools get ``default``.
    """

    client: AsyncLedgerCalls | SyncLedgerCalls
    channel_id: str | None = None
    policies: Mapping[str, ToolPolicy] = field(default_factory=dict)
    default: ToolPolicy = field(default_factory=ToolPolicy)
    _counts: dict[tuple[str, str], int] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.channel_id is not None:
            validate_id("channel_id", self.channel_id)
        for name in self.policies:
            validate_id("tool_name", name)

    def policy(self, tool_name: str) -> ToolPolicy:
        """The policy of ``tool_name``."""
        return self.policies.get(tool_name, self.default)

    def channel(self, framework_id: str | None = None) -> str:
        """The run's channel: the one given, else the framework's own id."""
        chosen = self.channel_id if self.channel_id is not None else framework_id
        if chosen is None:
            raise InvalidArgumentError(
                "no channel for this run: pass LedgerRun(client, channel_id=...) "
                "(the run or thread id that a rerun reuses)"
            )
        return validate_id("channel_id", chosen)

    def key_name(self, channel_id: str, tool_name: str, params: Mapping[str, Any]) -> str:
        """The key of this call: the policy's, else ``<tool>#<k>`` for the k-th call."""
        rule = self.policy(tool_name).key
        if rule is not None:
            return validate_id("key_name", rule(params))
        with self._lock:
            k = self._counts.get((channel_id, tool_name), 0) + 1
            self._counts[(channel_id, tool_name)] = k
        return f"{tool_name}#{k}"

    async def acall(
        self,
        tool_name: str,
        params: Mapping[str, Any],
        call: Callable[[], Awaitable[Any]],
        *,
        framework_id: str | None = None,
    ) -> Any:
        """Run ``call()`` at most once for this call of ``tool_name``; its (recorded) result."""
        client = cast(AsyncLedgerCalls, self._client_of_kind(is_async=True))
        policy = self.policy(tool_name)

        async def fn(ctx: ToolContext) -> Any:
            token = _CURRENT.set(ctx)
            try:
                return as_json(await call())
            finally:
                _CURRENT.reset(token)

        job = self._job(tool_name, params, framework_id, fn, policy.reconcile)
        with _naming_the_call(job):
            return (await run_spec(client, job)).result

    def call(
        self,
        tool_name: str,
        params: Mapping[str, Any],
        call: Callable[[], Any],
        *,
        framework_id: str | None = None,
    ) -> Any:
        """Blocking :meth:`acall` (needs a ``SyncLedgerClient``)."""
        client = cast(SyncLedgerCalls, self._client_of_kind(is_async=False))
        policy = self.policy(tool_name)

        def fn(ctx: ToolContext) -> Any:
            token = _CURRENT.set(ctx)
            try:
                return as_json(call())
            finally:
                _CURRENT.reset(token)

        job = self._job(tool_name, params, framework_id, fn, policy.reconcile)
        with _naming_the_call(job):
            return run_spec_sync(client, job).result

    def _job(
        self,
        tool_name: str,
        params: Mapping[str, Any],
        framework_id: str | None,
        fn: Callable[[ToolContext], Any],
        reconcile: Reconcile | None,
    ) -> ToolJob[Any, Any]:
        validate_id("tool_name", tool_name)
        recorded = as_json(dict(params))
        channel = self.channel(framework_id)
        target = ToolTarget(channel, self.key_name(channel, tool_name, recorded), None)
        return ToolJob(self.policy(tool_name).spec(tool_name), target, recorded, fn, reconcile)

    def _client_of_kind(self, *, is_async: bool) -> AsyncLedgerCalls | SyncLedgerCalls:
        if inspect.iscoroutinefunction(self.client.claim_execution) != is_async:
            wanted = "LedgerClient (async)" if is_async else "SyncLedgerClient (blocking)"
            raise InvalidArgumentError(f"this call runs with a {wanted}: pass one to LedgerRun")
        return self.client


@contextlib.contextmanager
def _naming_the_call(job: ToolJob[Any, Any]) -> Iterator[None]:
    try:
        yield
    except ConflictError as exc:
        t = job.target
        exc.add_note(
            f"oncelog: call {t.key_name!r} of run {t.channel_id!r} was recorded with other "
            f"arguments; this rerun asked {job.spec.tool_name} for {dict(job.params)!r}"
        )
        raise


def as_json(value: Any) -> Any:
    """``value`` as JSON data (pydantic models, dataclasses, tuples converted)."""
    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise InvalidArgumentError(
            f"{type(value).__name__} is not JSON data, so the ledger cannot record it"
        ) from exc
