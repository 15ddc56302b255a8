"""What every read route of the API depends on: its cursor, its page cap, its page.

Declared once here for the routes of :mod:`oncelog.query.api` and the checkpoint routes
(:mod:`oncelog.query.checkpoint_routes`): a DuckDB cursor of its own per HTTP request
(DuckDB connections are not shared across threads), the server's ``max_rows``, the
``limit`` parameter, and :func:`page_of`, which tells a full page from a truncated one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Annotated, TypeVar

import duckdb
from fastapi import Depends, Query, Request

from oncelog.query.models import Page

T = TypeVar("T")


def page_of(fetch: Callable[[int], list[T]], limit: int, max_rows: int) -> Page[T]:
    """Ask for one row more than the cap, to tell a full page from a truncated one."""
    cap = min(limit, max_rows)
    rows = fetch(cap + 1)
    return Page[T](items=rows[:cap], limit=cap, truncated=len(rows) > cap)


def _cursor(request: Request) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of its own for one HTTP request, closed afterwards."""
    con: duckdb.DuckDBPyConnection = request.app.state.cursor_factory()
    try:
        yield con
    finally:
        con.close()


def _max_rows(request: Request) -> int:
    return int(request.app.state.max_rows)


Con = Annotated[duckdb.DuckDBPyConnection, Depends(_cursor)]
MaxRows = Annotated[int, Depends(_max_rows)]
Limit = Annotated[int, Query(ge=0, description="Rows wanted; capped at the server's max_rows")]
