"""The UI's routes on the API's app: ``/ui/`` (recent channels) and ``/ui/runs/{channel}``.

HTML only, GET only (but the login form's POST, see :mod:`oncelog.query.ui.login`),
never in the OpenAPI schema. Every page carries a Content-Security-Policy that
allows no script and nothing from another origin: the pages are self-contained.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Final

import duckdb
from fastapi import FastAPI, Query
from fastapi.responses import HTMLResponse, RedirectResponse
from pydantic import SecretStr
from starlette.concurrency import run_in_threadpool

from oncelog.errors import InvalidArgumentError, LedgerError
from oncelog.identity.validation import is_ascii_number
from oncelog.query.approvals import pending_approvals
from oncelog.query.queries import parse_as_of
from oncelog.query.routing import QueryRouter
from oncelog.query.ui.approvals_page import APPROVALS_PATH, approvals_page
from oncelog.query.ui.channels import recent_channels
from oncelog.query.ui.login import UI_PREFIX, Sessions, install_login
from oncelog.query.ui.pages import UI_ROOT, error_page, index_page, run_page
from oncelog.query.ui.run_source import RunSource
from oncelog.query.ui.timeline_model import build_view

INDEX_LIMIT: Final = 50
HEADERS: Final = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}
_SOLO_NOTE: Final = "They are read from this instance's DuckDB file."
_GROUP_NOTE: Final = (
    "In a projector group this lists the channels in this member's file only; a run's "
    "page gathers from every member."
)


def _html(markup: str, status: int = 200) -> HTMLResponse:
    return HTMLResponse(markup, status_code=status, headers=HEADERS)


def _error(exc: LedgerError) -> HTMLResponse:
    return _html(error_page(exc.code.replace("_", " "), exc.message), exc.http_status)


def parse_ui_as_of(offset: str | None, time: str | None) -> int | datetime | None:
    """The form's as-of fields: an offset, or a time, by the CLI's and the API's rule
    (:func:`~oncelog.query.queries.parse_as_of`: ISO-8601 with a zone, ``Z`` for UTC).

    Raises:
        InvalidArgumentError: both given, or either malformed.
    """
    offset, time = (offset or "").strip(), (time or "").strip()
    if offset and time:
        raise InvalidArgumentError("give an offset or a time, not both")
    if offset:
        if not is_ascii_number(offset):
            raise InvalidArgumentError(f"as of offset {offset!r} is not a non-negative integer")
        return int(offset)
    if not time:
        return None
    moment = parse_as_of(time)
    if not isinstance(moment, datetime):  # digits belong in the offset field
        raise InvalidArgumentError(f"as of time {time!r} is an offset: give it as the offset")
    return moment.astimezone(UTC)


async def _local_page(
    cursor_factory: Callable[[], duckdb.DuckDBPyConnection],
    render: Callable[[duckdb.DuckDBPyConnection], str],
) -> HTMLResponse:
    """A page rendered from this instance's own DuckDB file, off the event loop."""

    def read() -> str:
        con = cursor_factory()
        try:
            return render(con)
        finally:
            con.close()

    try:
        return _html(await run_in_threadpool(read))
    except LedgerError as exc:
        return _error(exc)


def install_ui(
    app: FastAPI,
    *,
    token: SecretStr | None,
    max_rows: int,
    redact_results: bool = False,
    router: QueryRouter | None = None,
) -> None:
    """Add the UI to the API's ``app`` (the app's guard checks its token or session).

    ``token``: the API's bearer token; the UI then asks for it, or its session cookie.
    ``max_rows``: the API's page cap. ``redact_results``: the API's redaction.
    ``router``: the API's, when it routes queries through a projector group.
    """
    if token is not None:
        install_login(app, Sessions(token))
    cursor_factory = app.state.cursor_factory
    source = RunSource(cursor_factory, limit=max_rows, redact=redact_results, router=router)
    note = _SOLO_NOTE if router is None else _GROUP_NOTE

    @app.get(UI_PREFIX, include_in_schema=False)
    def ui_root() -> RedirectResponse:
        return RedirectResponse(UI_ROOT, status_code=307)

    @app.get(UI_ROOT, include_in_schema=False)
    async def index() -> HTMLResponse:
        return await _local_page(
            cursor_factory,
            lambda con: index_page(recent_channels(con, INDEX_LIMIT), INDEX_LIMIT, note),
        )

    @app.get(APPROVALS_PATH, include_in_schema=False)
    async def approvals() -> HTMLResponse:
        return await _local_page(
            cursor_factory, lambda con: approvals_page(pending_approvals(con, INDEX_LIMIT))
        )

    @app.get(UI_ROOT + "runs/{channel:path}", include_in_schema=False)
    async def run(
        channel: str,
        as_of_offset: Annotated[str | None, Query()] = None,
        as_of_time: Annotated[str | None, Query()] = None,
    ) -> HTMLResponse:
        try:
            point = parse_ui_as_of(as_of_offset, as_of_time)
            view = build_view(await source.run(channel, point))
        except LedgerError as exc:
            return _error(exc)
        return _html(run_page(view, (as_of_offset or "", as_of_time or "")))
