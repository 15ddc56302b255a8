"""The intents awaiting a person's decision (docs/guides/approvals.md): read from each
operation's current version, oldest request first."""

from __future__ import annotations

import json
from typing import Any, Final

import duckdb

from oncelog.errors import StoreError
from oncelog.projector.state_blob import decode_state
from oncelog.query.models import PendingApproval

_PENDING: Final = """
SELECT e."partition", h.state FROM executions e
JOIN history h ON h.operation_id = e.operation_id AND h.version = e.version
WHERE e.status = 'AWAITING_APPROVAL'
ORDER BY e.log_time_ms, e."partition", e.source_offset
LIMIT ?
"""


def pending_approvals(con: duckdb.DuckDBPyConnection, limit: int = 100) -> list[PendingApproval]:
    """The operations whose claim recorded an intent that nobody decided yet."""
    try:
        rows = con.execute(_PENDING, [limit]).fetchall()
    except duckdb.Error as exc:
        raise StoreError(f"reading the pending approvals failed: {exc}") from exc
    pending = []
    for partition, blob in rows:
        state = decode_state(blob)
        approval = state.approval
        if approval is None:  # a state written before approvals existed: nothing to decide
            continue
        pending.append(
            PendingApproval(
                operation_id=state.operation_id,
                channel_id=state.channel_id,
                key_name=state.key_name,
                partition=partition,
                tool_name=state.tool_name,
                params=_params(state.params),
                request_hash=state.request_hash,
                requested_by=approval.requested_by,
                requested_at_ms=approval.requested_at_ms,
                deadline_ms=approval.deadline_ms,
                self_approval=approval.self_approval,
            )
        )
    return pending


def _params(raw: bytes) -> Any:
    """The canonical JSON the SDK recorded, as data (its bytes as text if it is not JSON)."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode("utf-8", "replace")
