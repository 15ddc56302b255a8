"""What an adapter tells its framework about a call that needs a person's yes.

A tool whose :class:`~oncelog.integrations.policy.ToolPolicy` has an ``approval`` rule
records its intent on the ledger and raises :class:`~oncelog.errors.ApprovalPendingError`
(``RequireApproval(on_pending="raise")``, the default). Each adapter turns that into its
framework's own pause, and a denial into its own answer to the model:

- LangGraph: ``interrupt(pending)``; resume with ``Command(resume=...)`` after the decision.
- OpenAI Agents: ``needs_approval`` answers True, the run's ``interruptions`` list the call;
  ``state.approve(item)`` and ``Runner.run(agent, state)`` after the decision.
- Pydantic AI: ``ApprovalRequired(metadata=pending)``, so the run ends with
  ``DeferredToolRequests``; resume with :func:`oncelog.integrations.pydantic_ai.resume_approvals`.
- MCP: an error result naming the pending approval.

The person decides on the ledger (``oncelog approvals``, ``decide_approval``), never in the
framework: resuming only lets the call reach the ledger again, whose answer decides. Approved,
the tool runs once with exactly the approved params; denied, the model is told the reason and
nothing runs; other params after the approval are a :class:`~oncelog.errors.ConflictError`.
A process killed while paused asks nothing new: the intent is on the log.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from oncelog.errors import ApprovalDeniedError, ApprovalPendingError
from oncelog.identity.ids import operation_id
from oncelog.integrations.recorded import as_json
from oncelog.integrations.run import LedgerRun
from oncelog.producer.client import LedgerClient
from oncelog.producer.results import ClaimStatus

__all__ = ["denial_message", "intent_recorded", "pending_payload"]


def pending_payload(exc: ApprovalPendingError) -> dict[str, Any]:
    """The pending approval as JSON: what the framework shows and keeps with its pause."""
    return {
        "approval_pending": True,
        "execution_id": exc.execution_id,
        "channel_id": exc.channel_id,
        "key_name": exc.key_name,
        "tool_name": exc.tool_name,
        "params": exc.params,
        "request_hash": exc.request_hash,
        "deadline_ms": exc.deadline_ms,
        "message": str(exc),
    }


def denial_message(exc: ApprovalDeniedError) -> str:
    """What the model is told of a denied call (nothing ran)."""
    return f"not done: {exc}"


async def intent_recorded(run: LedgerRun, tool_name: str, params: Mapping[str, Any]) -> bool:
    """For a framework that asks before it calls (OpenAI Agents' ``needs_approval``): True
    when the next call of ``tool_name`` with ``params`` awaits a person's yes on the ledger,
    its intent recorded now if it was not yet. False when the tool's rule does not select
    these params, or the ledger decided already: the call then goes to the ledger, whose
    answer (run, replay, or the denial) stands."""
    policy = run.policy(tool_name)
    rule = policy.approval
    client = run.client
    recorded = as_json(dict(params))
    if rule is None or rule.policy_for(recorded) is None or not isinstance(client, LedgerClient):
        return False
    channel = run.channel()
    key = run.next_key_name(channel, tool_name, recorded)
    seen = await client.get_execution(operation_id(channel, key), channel_id=channel, key_name=key)
    if seen is None:
        # Only an absent operation is claimed here: the claim records the intent, no grant.
        claim = await client.claim_execution(
            channel, key, **policy.spec(tool_name).claim_options(recorded)
        )
        return claim.status is ClaimStatus.AWAITING_APPROVAL
    return seen.status == ClaimStatus.AWAITING_APPROVAL.value
