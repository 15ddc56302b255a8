"""The index's query: the most recently active channels and their steps by status.

Reads this instance's DuckDB file (``executions``: one row an operation, its
current state). Capped by a LIMIT; the audit's operations are counted by verdict
(:func:`oncelog.query.queries.channel_verdicts`) only for the channels listed.
"""

from __future__ import annotations

from typing import Final

import duckdb

from oncelog.errors import InvalidArgumentError, StoreError
from oncelog.query.queries import channel_verdicts
from oncelog.query.ui.pages import ChannelSummary

MAX_CHANNELS: Final = 500

_RECENT: Final = """
SELECT channel_id, max(log_time_ms) AS last_ms,
       count(*) FILTER (WHERE status = 'CLAIMED'),
       count(*) FILTER (WHERE status = 'COMPLETED'),
       count(*) FILTER (WHERE status = 'FAILED'),
       count(*) FILTER (WHERE status = 'EXPIRED')
FROM executions GROUP BY channel_id ORDER BY last_ms DESC, channel_id LIMIT ?
"""
_STATUSES: Final = ("claimed", "completed", "failed", "expired")


def recent_channels(con: duckdb.DuckDBPyConnection, limit: int) -> list[ChannelSummary]:
    """Up to ``limit`` channels, the most recently changed first, with their state counts."""
    if isinstance(limit, bool) or not 0 < limit <= MAX_CHANNELS:
        raise InvalidArgumentError(f"limit must be between 1 and {MAX_CHANNELS}, got {limit}")
    try:
        rows = con.execute(_RECENT, [limit]).fetchall()
        names = [r[0] for r in rows]
    except duckdb.Error as exc:
        raise StoreError(f"query failed: {exc}") from exc
    verdicts = channel_verdicts(con, names)
    return [
        ChannelSummary(
            channel=channel,
            last_ms=last_ms,
            counts={s: n for s, n in zip(_STATUSES, counts, strict=True) if n},
            verdicts=verdicts.get(channel, {}),
        )
        for channel, last_ms, *counts in rows
    ]
