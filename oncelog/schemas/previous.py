"""The previous release's layouts, for records that use nothing added since.

Readers know a writer's schema only by its fingerprint, so a record in a layout
the previous release never saw is refused there (docs/spec.md §10, "Upgrades").
Approvals (issue 45) added request bodies, enum symbols and an optional field at
the end of ``Request`` and of ``ExecutionState``. A record that uses none of them
(no approval policy, no approval in its state, no approval kind or outcome) is
written in the previous layout (0.1.0's, kept under ``history/``), so a release
beside this one during a rolling upgrade still decodes it. The predicates here
say when a record fits; the codecs pick the writer.
"""

from __future__ import annotations

from typing import Any, Final

from fastavro.schema import load_schema

from oncelog.schemas.layout import SCHEMA_DIR
from oncelog.schemas.models import (
    Approve,
    Decision,
    Deny,
    ExecutionSnapshot,
    ExecutionState,
    Kind,
    Outcome,
    Request,
)

HISTORY_DIR: Final = SCHEMA_DIR / "history"

REQUEST_SCHEMA: Final[Any] = load_schema(str(HISTORY_DIR / "request.v5.avsc"))
DECISION_SCHEMA: Final[Any] = load_schema(str(HISTORY_DIR / "decision.v5.avsc"))
SNAPSHOT_SCHEMA: Final[Any] = load_schema(str(HISTORY_DIR / "execution_snapshot.v4.avsc"))
STATE_SCHEMA: Final[Any] = load_schema(str(HISTORY_DIR / "state.v4.avsc"))

_NEW_OUTCOMES: Final = frozenset(
    {
        Outcome.AWAITING_APPROVAL,
        Outcome.APPROVED,
        Outcome.DENIED,
        Outcome.APPROVAL_EXPIRED,
        Outcome.APPROVAL_REFUSED,
    }
)


def request_fits(request: Request) -> bool:
    """Whether the previous layout says all of ``request``: no approval in it."""
    body_type = type(request.body)
    return request.approval is None and body_type is not Approve and body_type is not Deny


def state_fits(state: ExecutionState | None) -> bool:
    """Whether the previous layout says all of ``state``.

    A state that never met an approval has none of the new statuses and no
    approval outcome in its retry memory: those come only with an approval.
    """
    return state is None or state.approval is None


def decision_fits(decision: Decision) -> bool:
    """Whether the previous layout says all of ``decision``."""
    kind = decision.kind
    return (
        kind is not Kind.APPROVE
        and kind is not Kind.DENY
        and decision.outcome not in _NEW_OUTCOMES
        and state_fits(decision.state)
    )


def snapshot_fits(snapshot: ExecutionSnapshot) -> bool:
    """Whether the previous layout says all of ``snapshot``."""
    return snapshot.outcome not in _NEW_OUTCOMES and state_fits(snapshot.state)


def state_body(current_body: bytes) -> bytes:
    """The previous layout's body of a state that fits, from its current body.

    ``approval`` is the last field of the current layout, so a null one is its
    last byte (union branch 0) and the rest is the previous layout's body.
    """
    return current_body[:-1]
