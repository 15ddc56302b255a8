"""The plain table: a step ledger as one PostgreSQL table, through asyncpg.

Claim is ``INSERT … ON CONFLICT DO NOTHING RETURNING``; when the row exists a ``SELECT``
decides: replay (completed), in_progress (a live lease), or a reclaim by
``UPDATE … epoch + 1 WHERE`` the lease lapsed. Complete is ``UPDATE … WHERE op AND token``.
Identity is oncelog's own (operation id, request hash), so both do the same hashing.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

import asyncpg

from oncelog.identity.ids import operation_id, request_hash

LEASE_S = 60.0

SCHEMA = """
DROP TABLE IF EXISTS executions;
CREATE TABLE executions (
    op           text PRIMARY KEY,
    request_hash text NOT NULL,
    status       text NOT NULL,
    token        text NOT NULL,
    epoch        integer NOT NULL,
    lease_until  timestamptz NOT NULL,
    result       jsonb
);
"""
CLAIM = """
INSERT INTO executions (op, request_hash, status, token, epoch, lease_until)
VALUES ($1, $2, 'claimed', $3, 1, now() + make_interval(secs => $4))
ON CONFLICT DO NOTHING RETURNING epoch
"""
CURRENT = """
SELECT request_hash, status, lease_until <= now() AS lapsed, result
FROM executions WHERE op = $1
"""
RECLAIM = """
UPDATE executions SET token = $2, epoch = epoch + 1, lease_until = now() + make_interval(secs => $3)
WHERE op = $1 AND status = 'claimed' AND lease_until <= now() RETURNING epoch
"""
COMPLETE = """
UPDATE executions SET status = 'completed', result = $3
WHERE op = $1 AND token = $2 AND status = 'claimed'
"""


class TableError(RuntimeError):
    """A conflict (another payload) or a stale token: never expected in the benchmark."""


@dataclass(frozen=True)
class Lease:
    """A granted claim: the row and the token that fences it."""

    op: str
    token: str
    epoch: int


class PlainTable:
    """The step ledger as one table; ``pool`` is an asyncpg pool."""

    def __init__(self, pool: Any) -> None:
        self._pool = pool

    @classmethod
    async def connect(cls, dsn: str, workers: int, synchronous_commit: bool) -> PlainTable:
        """A pool of ``workers`` connections over a fresh table."""
        setting = "on" if synchronous_commit else "off"
        pool = await asyncpg.create_pool(
            dsn, min_size=workers, max_size=workers,
            server_settings={"synchronous_commit": setting},
        )  # fmt: skip
        await pool.execute(SCHEMA)
        return cls(pool)

    async def close(self) -> None:
        """Close every connection of the pool."""
        await self._pool.close()

    async def claim(self, channel: str, key: str) -> object | None:
        """A Lease when granted (claimed or reclaimed); None on replay or in_progress."""
        op, token = operation_id(channel, key), secrets.token_hex(16)
        digest = request_hash("bench", {"key": key})
        epoch = await self._pool.fetchval(CLAIM, op, digest, token, LEASE_S)
        if epoch is not None:
            return Lease(op, token, epoch)
        row = await self._pool.fetchrow(CURRENT, op)
        if row["request_hash"] != digest:
            raise TableError(f"conflict on {op}: another payload")
        if row["status"] == "completed" or not row["lapsed"]:
            return None  # replay (row["result"]) or in_progress
        epoch = await self._pool.fetchval(RECLAIM, op, token, LEASE_S)
        return None if epoch is None else Lease(op, token, epoch)

    async def complete(self, handle: object, result: int) -> None:
        """Record the result; fenced unless this token still holds the row."""
        assert isinstance(handle, Lease)
        status = await self._pool.execute(COMPLETE, handle.op, handle.token, json.dumps(result))
        if status != "UPDATE 1":
            raise TableError(f"stale claim on {handle.op}")
