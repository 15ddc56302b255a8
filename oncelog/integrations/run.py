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
``reconcile`` hook, which runs first and may supply the result: see
:mod:`oncelog.integrations.policy`, which also says when an unguarded tool is warned of).

Params and results are recorded as JSON (pydantic models and dataclasses are converted);
a replay, and the first run too, return the recorded JSON value, or what the adapter's
:class:`~oncelog.integrations.recorded.ResultShape` reads from it.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import inspect
import threading
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict, TypeVar, Unpack

from oncelog.errors import ApprovalPendingError, ConflictError, InvalidArgumentError, LedgerError
from oncelog.identity.validation import validate_id
from oncelog.integrations.policy import (
    Effect,
    KeyRule,
    Reconcile,
    ToolPolicy,
    UnguardedToolWarning,
    WarnOnce,
)
from oncelog.integrations.recorded import JSON_SHAPE, ResultShape, as_json, read_recorded
from oncelog.producer import ledger_plan
from oncelog.producer.client import LedgerClient, SyncLedgerClient
from oncelog.producer.executor import ToolContext, ToolRun
from oncelog.producer.forks import adopt_execution
from oncelog.producer.ledger_plan import LedgerPlan, RunTool
from oncelog.producer.tool_model import ToolJob, ToolTarget, blocking_hook
from oncelog.schemas.models import PreviousAttempt

__all__ = [
    "Branch",
    "CallOptions",
    "Effect",
    "KeyRule",
    "LedgerRun",
    "NoLedgerCallError",
    "Reconcile",
    "ToolPolicy",
    "UnguardedToolWarning",
    "as_json",
    "current_call",
]

T = TypeVar("T")
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
class Branch:
    """Where a call of a forked run goes: its branch's channel, and the other channels of
    its family (parent first), where an external call may find the same completion."""

    channel_id: str
    family: Sequence[str] = ()


@dataclass
class LedgerRun:
    """One run of an agent on the ledger (make a new one for each run, and for a rerun).

    ``client`` is a :class:`~oncelog.producer.client.LedgerClient` for async frameworks and
    a :class:`~oncelog.producer.sync_client.SyncLedgerClient` for blocking calls.
    ``channel_id`` names the run (a run, thread or conversation id that a rerun reuses);
    an adapter may take the framework's own id instead when it is None. ``policies`` maps
    tool names to a :class:`ToolPolicy`; other tools get ``default``.
    """

    client: LedgerClient | SyncLedgerClient
    channel_id: str | None = None
    policies: Mapping[str, ToolPolicy] = field(default_factory=dict)
    default: ToolPolicy = field(default_factory=ToolPolicy)
    _counts: dict[tuple[str, str], int] = field(default_factory=dict, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)
    _warn: WarnOnce = field(default_factory=WarnOnce, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.channel_id is not None:
            validate_id("channel_id", self.channel_id)
        for name in self.policies:
            validate_id("tool_name", name)

    def policy(self, tool_name: str, effect: Effect | None = None) -> ToolPolicy:
        """The policy of ``tool_name``: its own, else ``default``.

        ``effect`` is what the framework declares of the tool (MCP's ``readOnlyHint``); it
        sets the effect of a tool that has no policy of its own.
        """
        own = self.policies.get(tool_name)
        if own is not None or effect is None:
            return own or self.default
        return dataclasses.replace(self.default, effect=effect)

    def check(self, tool_name: str, effect: Effect | None = None) -> None:
        """Warn (:class:`UnguardedToolWarning`, once) if ``tool_name`` is external and unguarded.

        Adapters call it when they wrap a tool, and every call checks again, so the
        warning comes before the tool's first effect.
        """
        self._warn.check(tool_name, self.policy(tool_name, effect))

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

    def next_key_name(self, channel_id: str, tool_name: str, params: Mapping[str, Any]) -> str:
        """The key the next call of ``tool_name`` with ``params`` gets, without taking it."""
        rule = self.policy(tool_name).key
        if rule is not None:
            return validate_id("key_name", rule(params))
        with self._lock:
            return f"{tool_name}#{self._counts.get((channel_id, tool_name), 0) + 1}"

    def drive(self, plan: LedgerPlan[T]) -> T:
        """Run ``plan`` with the run's client, blocking (a ``SyncLedgerClient``)."""
        client = self.client
        if not isinstance(client, SyncLedgerClient):
            raise _wrong_client("SyncLedgerClient (blocking)")
        return ledger_plan.drive(plan, client)

    async def adrive(self, plan: LedgerPlan[T]) -> T:
        """Run ``plan`` with the run's client, awaited (a ``LedgerClient``)."""
        client = self.client
        if not isinstance(client, LedgerClient):
            raise _wrong_client("LedgerClient (async)")
        return await ledger_plan.adrive(plan, client)

    @property
    def awaits(self) -> bool:
        """Whether the run's calls are awaited (a ``LedgerClient``) or blocking."""
        return isinstance(self.client, LedgerClient)

    async def acall(
        self,
        tool_name: str,
        params: Mapping[str, Any],
        call: Callable[[], Awaitable[Any]],
        **how: Unpack[CallOptions],
    ) -> Any:
        """Run ``call()`` at most once for this call of ``tool_name``; its (recorded) result.

        ``how`` (:class:`CallOptions`): the framework's id, its declared effect, how its
        results are recorded and read back, and the branch of a forked run.
        """
        shape, policy = how.get("shape", JSON_SHAPE), self.policy(tool_name, how.get("effect"))

        async def fn(ctx: ToolContext) -> Any:
            with _current(ctx):
                return shape.record(await call())

        async def reconcile(previous: PreviousAttempt, ctx: ToolContext) -> Any:
            known = _hook_of(policy)(previous, ctx)
            return _recorded(shape, await known if inspect.isawaitable(known) else known)

        return await self.adrive(self._plan(tool_name, params, how, fn, reconcile))

    def call(
        self,
        tool_name: str,
        params: Mapping[str, Any],
        call: Callable[[], Any],
        **how: Unpack[CallOptions],
    ) -> Any:
        """Blocking :meth:`acall` (needs a ``SyncLedgerClient``)."""
        shape = how.get("shape", JSON_SHAPE)
        hook = blocking_hook(tool_name, self.policy(tool_name, how.get("effect")).reconcile)

        def fn(ctx: ToolContext) -> Any:
            with _current(ctx):
                return shape.record(call())

        def reconcile(previous: PreviousAttempt, ctx: ToolContext) -> Any:
            assert hook is not None  # the job keeps the wrapper only when there is a hook
            return _recorded(shape, hook(previous, ctx))

        return self.drive(self._plan(tool_name, params, how, fn, reconcile))

    def _plan(
        self,
        tool_name: str,
        params: Mapping[str, Any],
        how: CallOptions,
        fn: Callable[[ToolContext], Any],
        reconcile: Reconcile,
    ) -> LedgerPlan[Any]:
        """One call, for both kinds of client: adopt from the family, then run the tool."""
        policy, branch = self.policy(tool_name, how.get("effect")), how.get("branch")
        job = self._job(
            tool_name, params, how.get("framework_id"), policy, branch, fn=fn, reconcile=reconcile
        )
        with _naming_the_call(job):
            family = _adopting(policy, branch)
            if family:
                t = job.target
                yield from adopt_execution(
                    t.channel_id,
                    t.key_name or "",
                    tool_name=job.spec.tool_name,
                    params=job.params,
                    from_channels=family,
                    dedup_fields=policy.dedup_fields,
                )
            try:
                run: ToolRun = yield RunTool(job)
            except ApprovalPendingError:
                self._give_back(job, policy)
                raise
            return self._read(job, how.get("shape", JSON_SHAPE), run)

    def _give_back(self, job: ToolJob[Any, Any], policy: ToolPolicy) -> None:
        """A call paused for approval did not happen: the tool's next call is its retry, under
        the same ``<tool>#<k>`` (a framework resumes a paused call by calling it again)."""
        t, name = job.target, job.spec.tool_name
        if (
            policy.key is not None
            or t.key_name != f"{name}#{self._counts.get((t.channel_id, name))}"
        ):
            return
        with self._lock:
            self._counts[(t.channel_id, name)] -= 1

    def _job(
        self,
        tool_name: str,
        params: Mapping[str, Any],
        framework_id: str | None,
        policy: ToolPolicy,
        branch: Branch | None,
        *,
        fn: Callable[[ToolContext], Any],
        reconcile: Reconcile,
    ) -> ToolJob[Any, Any]:
        """The job of one call; ``reconcile`` wraps the policy's hook, used if it has one."""
        validate_id("tool_name", tool_name)
        recorded = as_json(dict(params))
        channel = self.channel(framework_id) if branch is None else branch.channel_id
        self._warn.check(tool_name, policy)
        target = ToolTarget(channel, self.key_name(channel, tool_name, recorded), None)
        hook = reconcile if policy.reconcile is not None else None
        return ToolJob(policy.spec(tool_name), target, recorded, fn, hook)

    @staticmethod
    def _read(job: ToolJob[Any, Any], shape: ResultShape, run: ToolRun) -> Any:
        t = job.target
        where = f"operation {run.execution.id} (call {t.key_name!r} of run {t.channel_id!r})"
        return read_recorded(shape, run.result, where)


class CallOptions(TypedDict, total=False):
    """How an adapter's call runs (:meth:`LedgerRun.acall`, :meth:`LedgerRun.call`)."""

    framework_id: str | None
    """The framework's own id of the run (its channel when the run names none)."""
    effect: Effect | None
    """What the framework declares of the tool (see :meth:`LedgerRun.policy`)."""
    shape: ResultShape
    """How the framework's results are recorded and read back (default: JSON)."""
    branch: Branch | None
    """The branch of a forked run the call belongs to (its channel, and its family)."""


def _wrong_client(wanted: str) -> InvalidArgumentError:
    return InvalidArgumentError(f"this call runs with a {wanted}: pass one to LedgerRun")


@contextlib.contextmanager
def _current(ctx: ToolContext) -> Iterator[None]:
    """``ctx`` is :func:`current_call` while the tool runs."""
    token = _CURRENT.set(ctx)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def _hook_of(policy: ToolPolicy) -> Reconcile:
    assert policy.reconcile is not None  # the job keeps the wrapper only when there is one
    return policy.reconcile


def _recorded(shape: ResultShape, known: Any) -> Any:
    return None if known is None else shape.record(known)


def _adopting(policy: ToolPolicy, branch: Branch | None) -> Sequence[str]:
    """The channels an external call of a branch looks in first (none: it just claims)."""
    if branch is None or policy.effect != "external" or policy.per_branch:
        return ()
    return branch.family


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
