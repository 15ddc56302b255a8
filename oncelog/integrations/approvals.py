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

from typing import Any

from oncelog.errors import ApprovalDeniedError, ApprovalPendingError

__all__ = ["denial_message", "pending_payload"]


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
