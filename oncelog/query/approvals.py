"""Intents awaiting approval: what an approver is asked to decide (docs/spec.md §4).

An operation is pending while its current version's status is ``AWAITING_APPROVAL``;
its intent is the history version that first entered that status (the claim's log time
is when it was requested, its lease deadline the approval's deadline). The params a person
approves come from that version's state blob, one per pending intent. Intents whose
deadline has passed in log time are still listed until a later request (a claim, a
decision) folds them as expired: the deadline is in the answer for a reader to compare.
"""

from __future__ import annotations

import json
from typing import Any, Final

import duckdb

from oncelog.errors import CodecError
from oncelog.projector.state_blob import decode_state
from oncelog.query import models
from oncelog.query.queries import query_rows

_PENDING: Final = """
WITH e AS MATERIALIZED (
  SELECT operation_id FROM executions WHERE status = 'AWAITING_APPROVAL'
),
h AS (
  SELECT h.operation_id, h.channel_id, h.key_name, h.tool_name, h.request_hash,
         h.log_time_ms, h.lease_deadline_ms, h.partition, h.valid_from_offset, h.state,
         row_number() OVER (PARTITION BY h.operation_id ORDER BY h.version DESC) AS latest
  FROM {history} h JOIN e USING (operation_id)
  WHERE h.status = 'AWAITING_APPROVAL'
)
SELECT operation_id, channel_id, key_name, tool_name, request_hash, log_time_ms,
       lease_deadline_ms, partition, valid_from_offset, state
FROM h WHERE latest = 1
ORDER BY log_time_ms, partition, valid_from_offset LIMIT ?
"""
_COUNT: Final = "SELECT count(*) FROM executions WHERE status = 'AWAITING_APPROVAL'"


def pending_approvals(con: duckdb.DuckDBPyConnection, limit: int) -> list[models.PendingApproval]:
    """Up to ``limit`` intents awaiting a decision, oldest first."""
    rows = query_rows(con, _PENDING, [limit])
    return [
        models.PendingApproval(
            operation_id=op,
            channel_id=channel,
            key_name=key,
            tool_name=tool or "",
            request_hash=request_hash,
            requested_at_ms=at,
            deadline_ms=deadline,
            partition=partition,
            offset=offset,
            params=_params(state),
        )
        for op, channel, key, tool, request_hash, at, deadline, partition, offset, state in rows
    ]


def _params(blob: bytes | None) -> dict[str, Any] | None:
    """The intent's params, from its version's state (None: not readable here)."""
    if blob is None:
        return None
    try:
        params: dict[str, Any] = json.loads(decode_state(blob).params)
    except (CodecError, ValueError):
        return None
    return params


def pending_count(con: duckdb.DuckDBPyConnection) -> int:
    """How many operations await a decision (the ``oncelog_approvals_pending`` gauge)."""
    rows = query_rows(con, _COUNT, [])
    return int(rows[0][0])
