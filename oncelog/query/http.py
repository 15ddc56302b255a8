"""The HTTP app of ``oncelog serve``, composed here once: the read API over the projection,
the write API when there is one, the UI pages, ``/metrics`` (FastAPI; its OpenAPI schema at
``/openapi.json``).

No ``/docs`` or ``/redoc`` page: FastAPI's load Swagger UI and ReDoc from a CDN, blank
offline (or behind a strict proxy); the docs site renders the same schema instead.

Its middleware is one ordered list (:func:`create_app`), outermost first:

1. :class:`~oncelog.query.guard.Guard`: the one bearer check, by the path's realm (read,
   write, UI, open), then the 405 for any method but GET outside the write API.
2. With a ``router`` (``oncelog serve`` in a group), the routing: it forwards to the
   partition's owner or gathers from every member (:mod:`oncelog.query.routing`). It runs
   after the guard, so only a caller holding the token is ever forwarded.

Each request gets its own DuckDB cursor from ``cursor_factory`` (DuckDB connections are
not shared across threads), closed when the request ends. Errors are RFC 9457 problem
details with the ``LedgerError``'s ``code`` and HTTP status (:mod:`oncelog.query.problem`).
The read routes are the table of :mod:`oncelog.query.api`, declared once for the API and
the routing. With ``redact_results`` every answer's ``result`` is null and
``result_redacted`` is true (:func:`oncelog.query.api.redacted`); ``result_hash`` stays,
so auditors can compare. Parameters are never part of an answer, so there is nothing
more to redact.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol, TypedDict

import duckdb
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware import Middleware
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.types import ASGIApp

from oncelog.errors import InvalidArgumentError, LedgerError
from oncelog.query.api import install_routes
from oncelog.query.export import install_export
from oncelog.query.guard import Access, CallNext, Guard
from oncelog.query.metrics_endpoint import install_metrics
from oncelog.query.problem import ProblemResponse, problem
from oncelog.query.routing import QueryRouter
from oncelog.query.ui import install_ui


class WriteRoutes(Protocol):
    """The write API mounted beside the read API (:class:`oncelog.gateway.WriteApi`)."""

    @property
    def token(self) -> SecretStr:
        """The bearer token of its paths (``ONCELOG_HTTP_WRITE_TOKEN``)."""
        ...

    def owns(self, path: str) -> bool:
        """Whether ``path`` is one of the write API's."""
        ...

    def install(self, app: FastAPI) -> None:
        """Add the write routes to ``app``."""
        ...

    def front(self, app: ASGIApp, *, access: Access) -> ASGIApp:
        """``app`` behind the write API's own answering of its POSTs (outermost)."""
        ...


class DecisionRoutes(Protocol):
    """The approval routes (:class:`oncelog.gateway.approval_desk.ApprovalDesk`)."""

    @property
    def tokens(self) -> dict[str, SecretStr]:
        """The approvers' bearer tokens, by name (``ONCELOG_HTTP_APPROVER_TOKENS``)."""
        ...

    def owns(self, path: str) -> bool:
        """Whether ``path`` is an approval route."""
        ...

    def install(self, app: FastAPI) -> None:
        """Add the approval routes to ``app``."""
        ...


class FoldWaiter(Protocol):
    """How far the checkpoints are folded here (``oncelog.projector.checkpoints.FoldProgress``)."""

    def wait(
        self, targets: Mapping[int, int], timeout_s: float, *, mine_only: bool = True
    ) -> dict[int, int]:
        """Wait until each target is folded; return what is still missing at the timeout."""
        ...


class Routing(BaseHTTPMiddleware):
    """Answers for every channel of the group: forwards or gathers (:class:`QueryRouter`)."""

    def __init__(self, app: ASGIApp, router: QueryRouter) -> None:
        super().__init__(app)
        self._router = router

    async def dispatch(self, request: Request, call_next: CallNext) -> Response:
        """Route the request (a LedgerError raised here is outside the routes' handlers)."""
        try:
            return await self._router.dispatch(request, call_next)
        except LedgerError as exc:
            return problem(exc.http_status, exc.code, exc.message)


async def _ledger_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, LedgerError)
    return problem(exc.http_status, exc.code, exc.message)


async def _bad_request(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, RequestValidationError)
    details = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors())
    return problem(InvalidArgumentError.http_status, InvalidArgumentError.code, details)


async def _http_error(request: Request, exc: Exception) -> ProblemResponse:
    assert isinstance(exc, StarletteHTTPException)
    # A 400 here is a body FastAPI could not parse (not JSON, or nested past what its
    # parser takes): bad input, answered as every other.
    codes = {400: InvalidArgumentError.code, 404: "not_found"}
    code = codes.get(exc.status_code, "http_error")
    # Kept: a 405's Allow header names the methods the path takes.
    return problem(exc.status_code, code, str(exc.detail), **(exc.headers or {}))


ERROR_HANDLERS: dict[Any, Callable[[Request, Exception], Any]] = {
    LedgerError: _ledger_error,
    RequestValidationError: _bad_request,
    StarletteHTTPException: _http_error,
}


def _middleware(
    token: SecretStr | None,
    writes: WriteRoutes | None,
    router: QueryRouter | None,
    decisions: DecisionRoutes | None = None,
) -> list[Middleware]:
    """The app's middleware, outermost first: the guard, then a group's routing."""
    access = Access(
        read_token=token,
        write_token=None if writes is None else writes.token,
        writes=None if writes is None else writes.owns,
        approver_tokens=() if decisions is None else tuple(decisions.tokens.values()),
        decides=None if decisions is None else decisions.owns,
    )
    middleware = [Middleware(Guard, access=access)]
    if writes is not None:  # outermost: the write API's POSTs skip the rest
        middleware.insert(0, Middleware(writes.front, access=access))
    if router is not None:
        middleware.append(Middleware(Routing, router=router))
    return middleware


class AppOptions(TypedDict, total=False):
    """:func:`create_app`'s keyword options (their defaults are its own), typed once for the
    callers that forward them (:func:`oncelog.query.server.start_http`)."""

    max_rows: int
    token: SecretStr | None
    redact_results: bool
    router: QueryRouter | None
    metrics: CollectorRegistry | None
    writes: WriteRoutes | None
    decisions: DecisionRoutes | None
    checkpoints: FoldWaiter | None


def create_app(
    cursor_factory: Callable[[], duckdb.DuckDBPyConnection],
    *,
    max_rows: int = 1000,
    token: SecretStr | None = None,
    redact_results: bool = False,
    router: QueryRouter | None = None,
    metrics: CollectorRegistry | None = None,
    writes: WriteRoutes | None = None,
    decisions: DecisionRoutes | None = None,
    checkpoints: FoldWaiter | None = None,
) -> FastAPI:
    """The HTTP app; ``cursor_factory`` gives a fresh cursor (``Store.cursor``) per request.

    ``token``: the bearer token every closed path requires (None: no check; then bind
    loopback only, see :func:`oncelog.query.server.require_safe_bind`).
    ``redact_results``: answer with ``result`` null and ``result_redacted`` true.
    ``router``: answer for every channel of the group, not only this store's partitions.
    ``metrics``: the registry served at ``GET /metrics`` (None: no such route).
    ``writes``: the write API to add (None: the API is read-only, every write is a 405).
    ``decisions``: the approval routes to add (None: none).
    ``checkpoints``: how far this process folded the checkpoints topic, which a
    checkpoint read naming its own writes' positions waits on (None: it never waits).
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        yield
        if router is not None:
            await router.aclose()

    app = FastAPI(
        title="oncelog ledger" if writes is not None else "oncelog ledger (read-only)",
        # No /docs page (Swagger UI came from a CDN): the docs site's HTTP reference
        # (`make docs`) renders this schema, offline.
        description="Did step N finish? At any position of the log."
        + (" Claims and completions under /v1/claims and /v1/executions." if writes else "")
        + " This schema is rendered by the HTTP API reference of oncelog's docs site.",
        version="1",
        lifespan=lifespan,
        docs_url=None,
        redoc_url=None,
        middleware=_middleware(token, writes, router, decisions),
        exception_handlers=ERROR_HANDLERS,
    )
    if writes is not None:
        writes.install(app)
    app.state.cursor_factory = cursor_factory
    app.state.max_rows = max_rows
    app.state.redact_results = redact_results
    app.state.checkpoint_progress = checkpoints
    if metrics is not None:
        install_metrics(app, metrics)
    install_routes(app)
    if decisions is not None:  # its page forms read the app's cursor factory
        decisions.install(app)
    install_export(app, cursor_factory, redact=redact_results)
    install_ui(app, token=token, max_rows=max_rows, redact_results=redact_results, router=router)
    return app
