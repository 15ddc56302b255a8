"""How an adapter runs one tool: its effect, key, reconcile hook, and the warning when unguarded.

**The crash window.** A worker that dies after a tool's effect and before the ledger recorded
its completion leaves the outcome unknown: after the lease lapses the next call of that
operation is a ``reclaimed`` claim, and the tool would run again. Only two things stop a second
effect then: a downstream that honours the idempotency key the tool sent it
(``ToolPolicy(downstream_dedupes=True)`` says so), or a reconcile hook that asks the downstream
what happened (``ToolPolicy(reconcile=...)``). An ``external`` tool with neither gets an
:class:`UnguardedToolWarning`, once per tool, before its first call.

**The reconcile hook.** ``reconcile(previous, ctx)``, sync or async as the framework is:

- ``previous`` (:class:`~oncelog.schemas.models.PreviousAttempt`): the attempt whose outcome
  is unknown (its ``epoch``, ``worker_id``, ``claimed_at_ms``, ``last_heartbeat_ms``);
- ``ctx`` (:class:`~oncelog.producer.executor.ToolContext`): this attempt, with the
  ``idempotency_key`` both attempts sent downstream and the recorded ``params``;
- it returns the result the downstream already has (any JSON value, or the framework's own
  result type, such as MCP's ``CallToolResult``), recorded as the call's result instead of
  running the tool, or ``None`` when the downstream never saw the key: the tool then runs.

It runs only on a ``reclaimed`` claim, never on a first claim or a replay.

**Branches.** In a forked run (a LangGraph thread resumed from an earlier checkpoint: see
:mod:`oncelog.integrations.branches`), an ``external`` call that another branch of the
family completed with the same arguments replays that result, marked as taken from that
branch, instead of running again. ``ToolPolicy(per_branch=True)`` runs it once per branch.
"""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import Any, Final, Literal

from oncelog.errors import InvalidArgumentError
from oncelog.producer.approval_rule import RequireApproval
from oncelog.producer.executor import DEFAULT_RETRY_ON, InProgressPolicy, ToolContext, ToolSpec
from oncelog.producer.protocol import DEFAULT_RETENTION_S
from oncelog.producer.tool_model import UnguardedToolWarning
from oncelog.schemas.models import PreviousAttempt

Effect = Literal["pure", "external"]
KeyRule = Callable[[Mapping[str, Any]], str]
Reconcile = Callable[[PreviousAttempt, ToolContext], Any]

__all__ = [
    "Effect",
    "KeyRule",
    "Reconcile",
    "ToolPolicy",
    "UnguardedToolWarning",
    "effect_of_annotations",
]


# The options a policy hands to the executor's spec as they are: one name in both classes.
_SPEC_OPTIONS: Final = (
    "dedup_fields",
    "lease_seconds",
    "retention_seconds",
    "effect",
    "on_in_progress",
    "retry_on",
    "downstream_dedupes",
    "approval",
)


@dataclass(frozen=True, slots=True)
class ToolPolicy:
    """How the calls of one tool are keyed, claimed and run.

    ``effect``: ``"external"`` (the default: the call changes the world) or ``"pure"``
    (free to replay; the side-effects query leaves it out). ``key``: a key name from the
    call's arguments instead of ``<tool>#<k>``. ``reconcile(previous, ctx)`` (sync or
    async, as the framework is) runs on a ``reclaimed`` claim; a non-None answer is
    recorded as the result instead of calling the tool (see the module doc).
    ``downstream_dedupes=True`` states that the service the tool calls applies an
    idempotency key once (the tool passes ``current_call().idempotency_key``), so a rerun in
    the crash window cannot charge twice. ``per_branch=True``: each branch of a forked run
    runs the tool itself, instead of replaying the same call another branch completed
    (see the module doc). ``approval``: which calls need a person's yes first
    (:class:`~oncelog.producer.approval_rule.RequireApproval`); each adapter maps the pending
    call to its framework's own pause (:mod:`oncelog.integrations.approvals`). The rest are
    the claim's options.
    """

    effect: Effect = "external"
    key: KeyRule | None = None
    reconcile: Reconcile | None = None
    downstream_dedupes: bool = False
    per_branch: bool = False
    dedup_fields: Sequence[str] | None = None
    lease_seconds: float = 60
    retention_seconds: float = DEFAULT_RETENTION_S
    on_in_progress: InProgressPolicy = "raise"
    retry_on: tuple[type[BaseException], ...] = DEFAULT_RETRY_ON
    approval: RequireApproval | None = None

    def __post_init__(self) -> None:
        if self.effect not in ("pure", "external"):
            raise InvalidArgumentError(f"effect must be 'pure' or 'external', got {self.effect!r}")

    @property
    def guarded(self) -> bool:
        """True when a crash after the effect cannot lead to a second one unnoticed."""
        return self.effect == "pure" or self.reconcile is not None or self.downstream_dedupes

    def spec(self, tool_name: str) -> ToolSpec:
        """The executor's spec for a call of ``tool_name``."""
        return ToolSpec(tool_name, **{name: getattr(self, name) for name in _SPEC_OPTIONS})


def effect_of_annotations(annotations: Any) -> Effect | None:
    """The effect that MCP tool annotations declare: ``readOnlyHint`` -> pure, else external.

    ``annotations`` is MCP's ``ToolAnnotations`` (either SDK generation's attribute names) or
    its wire form, a camelCase dict; None (no annotations) declares nothing.
    """
    if annotations is None:
        return None
    if isinstance(annotations, Mapping):
        read_only = annotations.get("readOnlyHint")
    elif hasattr(annotations, "read_only_hint"):  # MCP SDK 2
        read_only = annotations.read_only_hint
    else:  # MCP SDK 1 (only asked when needed: SDK 2 warns that the old name is deprecated)
        read_only = getattr(annotations, "readOnlyHint", None)
    return "pure" if read_only is True else "external"


@dataclass
class WarnOnce:
    """Warns about each unguarded tool once (per run; Python's filter then once per process)."""

    _warned: set[str] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def check(self, tool_name: str, policy: ToolPolicy) -> None:
        """Warn when ``policy`` leaves ``tool_name`` unguarded and it was not warned of yet."""
        if policy.guarded:
            return
        with self._lock:
            if tool_name in self._warned:
                return
            self._warned.add(tool_name)
        warnings.warn(
            UnguardedToolWarning(
                f"oncelog: tool {tool_name!r} is external and unguarded: if the process dies "
                "after its effect and before the ledger records its completion, the rerun "
                "calls it again. Pass ToolPolicy(reconcile=...) to ask the downstream what "
                "happened, or ToolPolicy(downstream_dedupes=True) if the service it calls "
                "applies current_call().idempotency_key once"
            ),
            stacklevel=4,
        )


def _check_options() -> None:
    """Refuse, at import, an option name that either class lost or renamed."""
    for cls in (ToolPolicy, ToolSpec):
        missing = set(_SPEC_OPTIONS) - {f.name for f in fields(cls)}
        if missing:
            raise TypeError(f"{cls.__name__} has no field {sorted(missing)}")


_check_options()
