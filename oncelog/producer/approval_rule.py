"""A tool's approval rule: which calls need a person's yes, and how the caller waits for it.

    refund = sync_ledger_tool(client, approval=RequireApproval(
        when=lambda p: p["amount_cents"] > 10_000, on_pending="wait", wait_timeout_s=600))

The rule is evaluated where the tool is declared, over the call's params: a call it selects
carries an :class:`~oncelog.schemas.models.ApprovalPolicy` on its claim, and the ledger records
the intent instead of a grant (docs/spec.md §4, "Approvals"). Then, as ``on_pending`` says:

- ``"raise"`` (the default): :class:`~oncelog.errors.ApprovalPendingError` at once, naming the
  pending approval; the caller (a framework adapter) pauses its run and calls again later.
- ``"wait"``: the executor claims again every ``poll_s`` (each claim is answered by the
  ledger from the log), up to ``wait_timeout_s``, then raises ``ApprovalPendingError``.

Either way a process killed while waiting asks nothing new when it calls again: the intent is
on the log, and the claim after the decision runs the tool (approved) or raises
:class:`~oncelog.errors.ApprovalDeniedError` with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from oncelog.errors import ApprovalPendingError, InvalidArgumentError
from oncelog.identity import validation
from oncelog.producer.results import Claim
from oncelog.schemas.models import ApprovalPolicy

PendingPolicy = Literal["raise", "wait"]
ParamsRule = Callable[[Mapping[str, Any]], bool]

_MAX_WAIT_S = 24 * 3600.0
_MAX_TIMEOUT_S = validation.MAX_RETENTION_MS / 1000


@dataclass(frozen=True, slots=True)
class RequireApproval:
    """Which calls of a tool need a person's yes (``when``: a predicate over the params, or
    None for every call), how long the intent stays open (``timeout_s``, log time), whether
    the requesting worker may approve it itself, and how the caller waits (module doc)."""

    when: ParamsRule | None = None
    timeout_s: float = 24 * 3600.0
    self_approval: bool = False
    on_pending: PendingPolicy = "raise"
    wait_timeout_s: float = 300.0
    poll_s: float = 1.0

    def __post_init__(self) -> None:
        if self.when is not None and not callable(self.when):
            raise InvalidArgumentError(
                "RequireApproval(when=...) must be a predicate of the params"
            )
        if self.on_pending not in ("raise", "wait"):
            raise InvalidArgumentError("on_pending must be 'raise' or 'wait'")
        validation.validate_number("timeout_s", self.timeout_s, 0.001, _MAX_TIMEOUT_S)
        validation.validate_number("wait_timeout_s", self.wait_timeout_s, 0, _MAX_WAIT_S)
        validation.validate_number("poll_s", self.poll_s, 0.001, _MAX_WAIT_S)

    def policy_for(self, params: Mapping[str, Any]) -> ApprovalPolicy | None:
        """The claim's policy for a call with ``params``, or None when it needs no approval."""
        if self.when is not None and not self.when(params):
            return None
        return ApprovalPolicy(round(self.timeout_s * 1000), self.self_approval)

    def delay(self, claim: Claim, give_up_at_ms: int, now_ms: int) -> float:
        """Seconds until claiming again while ``claim`` awaits approval, or the pending error."""
        left = (give_up_at_ms - now_ms) / 1000
        if self.on_pending == "raise" or left <= 0:
            waited = "" if self.on_pending == "raise" else f" after waiting {self.wait_timeout_s}s"
            raise pending_error(claim, waited)
        return min(self.poll_s, left)


def pending_error(claim: Claim, waited: str = "") -> ApprovalPendingError:
    """The typed pending state of a claim answered ``awaiting_approval``."""
    ex = claim.execution
    state = None if claim.decision is None else claim.decision.state
    approval = None if state is None else state.approval
    deadline = None if approval is None else approval.deadline_ms
    return ApprovalPendingError(
        f"call {ex.key_name!r} of {ex.channel_id!r} (tool {ex.tool_name!r}, execution {ex.id}) "
        f"awaits a person's approval{waited}: approve or deny it (oncelog approvals, or "
        "decide_approval with its request hash), then call again",
        execution_id=ex.id,
        channel_id=ex.channel_id,
        key_name=ex.key_name,
        tool_name=ex.tool_name,
        params=ex.params,
        request_hash=ex.request_hash,
        deadline_ms=deadline,
    )
