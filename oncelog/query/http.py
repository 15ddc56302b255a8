"""The read-only HTTP API over the projection (FastAPI; its OpenAPI schema at ``/openapi.json``).

No ``/docs`` or ``/redoc`` page: FastAPI's load Swagger UI and ReDoc from a CDN, blank
offline (or behind a strict proxy); the docs site renders the same schema instead.

It never writes: a middleware refuses every method but GET with 405 before any
routing, so no route added later can accept a write by accident. Each request
gets its own DuckDB cursor from ``cursor_factory`` (DuckDB connections are not
shared across threads), closed when the request ends. Errors are RFC 9457 problem
details with the ``LedgerError``'s ``code`` and HTTP status (:mod:`oncelog.query.problem`).
The routes are the table of :mod:`oncelog.query.api`, declared once for the API and
the routing.

With ``writes`` (``oncelog serve`` with ``ONCELOG_HTTP_WRITE_TOKEN``), the paths that
:class:`WriteRoutes` owns are the write API's (:mod:`oncelog.gateway`): they pass the
read-only guard and the read token's check, and the write API checks its own token.

With a bearer token configured, a second middleware answers 401 to every path
but ``OPEN_PATHS`` unless ``Authorization: Bearer <token>`` matches (compared in
constant time). With ``redact_results`` every answer's ``result`` is null and
``result_redacted`` is true (:func:`oncelog.query.api.redacted`); ``result_hash``
stays, so auditors can compare.
Parameters are never part of an answer, so there is nothing more to redact.

With a ``router`` (``oncelog serve`` in a group), a middleware answers for any
channel: it forwards to the partition's owner or gathers from every member
(:mod:`oncelog.query.routing`). It runs after the token check, so only a
caller holding the token is ever forwarded.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Protocol, TypedDict

import duckdb
from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from prometheus_client import CollectorRegistry
from pydantic import SecretStr
from starlette.exceptions import HTTPException as StarletteHTTPException

from oncelog.errors import InvalidArgumentError, LedgerError, UnauthorizedError
from oncelog.query.api import install_routes
from oncelog.query.bearer import bearer_matches
from oncelog.query.export import install_export
from oncelog.query.metrics_endpoint import install_metrics
from oncelog.query.problem import ProblemResponse, problem
from oncelog.query.routing import QueryRouter
from oncelog.query.ui import install_ui, is_login_post, is_ui_path

ALLOWED_METHODS = frozenset({"GET"})
# Open without the token: /healthz answers only "ok" (process supervisors probe it), and
# the OpenAPI schema describes routes and models, with no data and no secrets. Every other
# path, including ones added later, needs the token.
OPEN_PATHS = frozenset({"/healthz", "/openapi.json"})


class WriteRoutes(Protocol):
    """The write API mounted beside the read API (:class:`oncelog.gateway.WriteApi`)."""

    def owns(self, path: str) -> bool:
        """Whether ``path`` is one of the write API's (it checks its own token)."""
        ...

    def install(self, app: FastAPI) -> None:
        """Add the write routes (and their token check) to ``app``."""
        ...


class FoldWaiter(Protocol):
    """How far the checkpoints are folded here (``oncelog.projector.checkpoints.FoldProgress``)."""

    def wait(
        self, targets: Mapping[int, int], timeout_s: float, *, mine_only: bool = True
    ) -> dict[int, int]:
        """Wait until each target is folded; return what is still missing at the timeout."""
        ...


def _owned(writes: WriteRoutes | None, path: str) -> bool:
    return writes is not None and writes.owns(path)


def _install_auth(app: FastAPI, token: SecretStr, writes: WriteRoutes | None) -> None:
    """401 (JSON, ``WWW-Authenticate: Bearer``) for any closed path without the token."""
    expected = token.get_secret_value().encode()

    @app.middleware("http")
    async def require_token(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        header = request.headers.get("authorization")
        path = request.url.path
        # The UI checks the same token itself, and also takes its session cookie; the
        # write API checks its own.
        if path in OPEN_PATHS or is_ui_path(path) or _owned(writes, path):
            return await call_next(request)
        if bearer_matches(header, expected):
            return await call_next(request)
        why = "no bearer token" if header is None else "a wrong bearer token"
        message = f"this API needs its bearer token (Authorization: Bearer ...); got {why}"
        return problem(401, UnauthorizedError.code, message, **{"WWW-Authenticate": "Bearer"})


def _install_guards(app: FastAPI, writes: WriteRoutes | None) -> None:
    @app.middleware("http")
    async def refuse_writes(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        path = request.url.path
        allowed = request.method in ALLOWED_METHODS or _owned(writes, path)
        if not allowed and not is_login_post(request.method, path):
            message = f"{request.method} is not allowed: this API is read-only"
            return problem(405, "method_not_allowed", message, Allow="GET")
        return await call_next(request)

    @app.exception_handler(LedgerError)
    async def ledger_error(request: Request, exc: LedgerError) -> ProblemResponse:
        return problem(exc.http_status, exc.code, exc.message)

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> ProblemResponse:
        details = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        return problem(InvalidArgumentError.http_status, InvalidArgumentError.code, details)

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> ProblemResponse:
        code = "not_found" if exc.status_code == 404 else "http_error"
        # Kept: a 405's Allow header names the methods the path takes.
        return problem(exc.status_code, code, str(exc.detail), **(exc.headers or {}))


def _install_routing(app: FastAPI, router: QueryRouter) -> None:
    @app.middleware("http")
    async def route(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        try:
            return await router.dispatch(request, call_next)
        except LedgerError as exc:  # raised outside the routes: their handlers do not see it
            return problem(exc.http_status, exc.code, exc.message)


class AppOptions(TypedDict, total=False):
    """:func:`create_app`'s keyword options (their defaults are its own), typed once for the
    callers that forward them (:func:`oncelog.query.server.start_http`)."""

    max_rows: int
    token: SecretStr | None
    redact_results: bool
    router: QueryRouter | None
    metrics: CollectorRegistry | None
    writes: WriteRoutes | None
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
    checkpoints: FoldWaiter | None = None,
) -> FastAPI:
    """The read-only API; ``cursor_factory`` gives a fresh cursor (``Store.cursor``) per request.

    ``token``: the bearer token every closed path requires (None: no check; then bind
    loopback only, see :func:`oncelog.query.server.require_safe_bind`).
    ``redact_results``: answer with ``result`` null and ``result_redacted`` true.
    ``router``: answer for every channel of the group, not only this store's partitions.
    ``metrics``: the registry served at ``GET /metrics`` (None: no such route).
    ``writes``: the write API to add (None: the API is read-only, every write is a 405).
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
    )
    if router is not None:
        _install_routing(app, router)  # added first, so it runs after the guards
    _install_guards(app, writes)
    if token is not None:
        _install_auth(app, token, writes)
    if writes is not None:
        writes.install(app)  # its token check added last, so it runs first
    app.state.cursor_factory = cursor_factory
    app.state.max_rows = max_rows
    app.state.redact_results = redact_results
    app.state.checkpoint_progress = checkpoints
    if metrics is not None:
        install_metrics(app, metrics)
    install_routes(app)
    install_export(app, cursor_factory, redact=redact_results)
    install_ui(  # added last
        app, token=token, max_rows=max_rows, redact_results=redact_results, router=router
    )
    return app
