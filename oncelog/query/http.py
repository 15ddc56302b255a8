"""The read-only HTTP API over the projection (FastAPI; OpenAPI at ``/docs``).

It never writes: a middleware refuses every method but GET with 405 before any
routing, so no route added later can accept a write by accident. Each request
gets its own DuckDB cursor from ``cursor_factory`` (DuckDB connections are not
shared across threads), closed when the request ends. Errors are JSON
``{"code", "message"}`` with the ``LedgerError``'s HTTP status.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from datetime import datetime
from typing import Annotated, TypeVar

import duckdb
from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from oncelog.errors import InvalidArgumentError, LedgerError
from oncelog.query import queries
from oncelog.query.models import (
    Page,
    SideEffects,
    StepStatus,
    SuspectedDuplicate,
    TimelineEntry,
    Version,
)

T = TypeVar("T")

ALLOWED_METHODS = frozenset({"GET"})


def _error(status: int, code: str, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"code": code, "message": message}, status_code=status, headers=headers)


def parse_as_of(raw: str | None) -> int | datetime | None:
    """``?as_of=``: digits are an offset, anything else an ISO-8601 time (with a zone)."""
    if raw is None or raw == "":
        return None
    if raw.isdigit():
        return int(raw)
    try:
        return datetime.fromisoformat(raw)
    except ValueError as exc:
        raise InvalidArgumentError(f"as_of {raw!r} is neither an offset nor ISO-8601") from exc


def _page(fetch: Callable[[int], list[T]], limit: int, max_rows: int) -> Page[T]:
    """Ask for one row more than the cap, to tell a full page from a truncated one."""
    cap = min(limit, max_rows)
    rows = fetch(cap + 1)
    return Page[T](items=rows[:cap], limit=cap, truncated=len(rows) > cap)


def _install_guards(app: FastAPI) -> None:
    @app.middleware("http")
    async def refuse_writes(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        if request.method not in ALLOWED_METHODS:
            message = f"{request.method} is not allowed: this API is read-only"
            return _error(405, "method_not_allowed", message, Allow="GET")
        return await call_next(request)

    @app.exception_handler(LedgerError)
    async def ledger_error(request: Request, exc: LedgerError) -> JSONResponse:
        return _error(exc.http_status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> JSONResponse:
        details = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        return _error(InvalidArgumentError.http_status, InvalidArgumentError.code, details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = "not_found" if exc.status_code == 404 else "http_error"
        return _error(exc.status_code, code, str(exc.detail))


def _cursor(request: Request) -> Iterator[duckdb.DuckDBPyConnection]:
    """A cursor of its own for one HTTP request, closed afterwards."""
    con: duckdb.DuckDBPyConnection = request.app.state.cursor_factory()
    try:
        yield con
    finally:
        con.close()


Con = Annotated[duckdb.DuckDBPyConnection, Depends(_cursor)]
Limit = Annotated[int, Query(ge=0, description="Rows wanted; capped at the server's max_rows")]


def create_app(
    cursor_factory: Callable[[], duckdb.DuckDBPyConnection], *, max_rows: int = 1000
) -> FastAPI:
    """The read-only API; ``cursor_factory`` gives a fresh cursor (``Store.cursor``) per request."""
    app = FastAPI(
        title="oncelog ledger (read-only)",
        description="Did step N finish? At any position of the log. GET only.",
        version="1",
    )
    _install_guards(app)

    app.state.cursor_factory = cursor_factory

    @app.get("/healthz")
    def healthz(con: Con) -> dict[str, str]:
        con.execute("SELECT 1").fetchall()
        return {"status": "ok"}

    @app.get("/v1/status/{channel_id}/{step_or_key}", response_model=StepStatus)
    def status(
        con: Con,
        channel_id: str,
        step_or_key: str,
        as_of: Annotated[
            str | None, Query(description="An offset of the channel's partition, or ISO-8601")
        ] = None,
    ) -> StepStatus:
        """Did this step (a number) or key finish, now or as of a position?"""
        point = parse_as_of(as_of)
        if step_or_key.isdigit():
            return queries.step_status(con, channel_id, step=int(step_or_key), as_of=point)
        return queries.step_status(con, channel_id, key_name=step_or_key, as_of=point)

    @app.get("/v1/history/{operation_id}", response_model=Page[Version])
    def history(con: Con, operation_id: str, limit: Limit = 100) -> Page[Version]:
        """Every state version of one operation, oldest first."""
        return _page(lambda n: queries.operation_history(con, operation_id, n), limit, max_rows)

    @app.get("/v1/timeline/{channel_id}", response_model=Page[TimelineEntry])
    def timeline(con: Con, channel_id: str, limit: Limit = 100) -> Page[TimelineEntry]:
        """Every request of a channel and its outcome, in log order."""
        return _page(lambda n: queries.channel_timeline(con, channel_id, n), limit, max_rows)

    @app.get("/v1/side-effects/{channel_id}", response_model=SideEffects)
    def effects(con: Con, channel_id: str, from_step: int, to_step: int) -> SideEffects:
        """Which steps of a range were declared pure and which external."""
        return queries.side_effects(con, channel_id, from_step, to_step)

    @app.get("/v1/duplicates", response_model=Page[SuspectedDuplicate])
    def duplicates(con: Con, limit: Limit = 100) -> Page[SuspectedDuplicate]:
        """Completions by fenced tokens: side effects that may have happened twice."""
        return _page(lambda n: queries.suspected_duplicates(con, n), limit, max_rows)

    return app
