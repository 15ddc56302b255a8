"""A thread's checkpoint tree without the checkpoints: ids and parents (docs/langgraph.md).

The LangGraph adapter names the branch of each tool call from the thread's tree
(:mod:`oncelog.integrations.branches`); it keeps the tree and asks only for the
checkpoints newer than the newest it knows, so one small read follows each new checkpoint.
"""

from __future__ import annotations

from typing import Annotated

import duckdb
from fastapi import Query, Request
from pydantic import BaseModel, ConfigDict

from oncelog.query.checkpoint_routes import After, await_fold
from oncelog.query.models import Page
from oncelog.query.paging import Con, Limit, MaxRows, page_of


class CheckpointHead(BaseModel):
    """A checkpoint of a thread's root namespace, and its parent (None: the first)."""

    model_config = ConfigDict(frozen=True)

    checkpoint_id: str
    parent_checkpoint_id: str | None


AfterId = Annotated[str | None, Query(description="Only checkpoints with a larger id")]


def heads(
    con: duckdb.DuckDBPyConnection, thread_id: str, after_id: str | None, limit: int
) -> list[CheckpointHead]:
    """The thread's root-namespace checkpoints after ``after_id``, oldest first."""
    rows = con.execute(
        "SELECT checkpoint_id, parent_checkpoint_id FROM checkpoints WHERE thread_id = ? "
        "AND checkpoint_ns = '' AND kind = 'checkpoint' AND part = 0 "
        "AND (CAST(? AS VARCHAR) IS NULL OR checkpoint_id > ?) ORDER BY checkpoint_id LIMIT ?",
        [thread_id, after_id, after_id, limit],
    ).fetchall()
    return [CheckpointHead(checkpoint_id=c, parent_checkpoint_id=p) for c, p in rows]


def thread_heads(
    request: Request,
    con: Con,
    max_rows: MaxRows,
    channel_id: str,
    *,
    after_id: AfterId = None,
    limit: Limit = 1000,
    after: After = None,
) -> Page[CheckpointHead]:
    """A thread's checkpoint ids and parents (root namespace), oldest first: its tree."""
    await_fold(request, after, owner=True)
    return page_of(lambda n: heads(con, channel_id, after_id, n), limit, max_rows)
