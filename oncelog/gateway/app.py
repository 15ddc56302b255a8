"""The write API alone, as ``oncelog gateway``'s workers serve it: no store, no read routes.

The same routes, guard and problem details as the write API inside ``oncelog serve``
(:func:`oncelog.query.http.create_app`), with ``/healthz`` for process supervisors and
the OpenAPI schema; any other path is a 404, and any method but GET outside the write
paths a 405.
"""

from __future__ import annotations

from fastapi import FastAPI
from starlette.middleware import Middleware
from starlette.types import ASGIApp

from oncelog.gateway.routes import WriteApi
from oncelog.query.guard import Access, Guard
from oncelog.query.http import ERROR_HANDLERS


def _healthz() -> dict[str, str]:  # no docstring: it would be the OpenAPI text
    return {"status": "ok"}


def create_write_app(writes: WriteApi) -> ASGIApp:
    """The app of one gateway worker: ``writes``'s routes behind its bearer token, its
    POSTs answered in front of the whole FastAPI app (its per-request telemetry and error
    middleware included)."""
    access = Access(read_token=None, write_token=writes.token, writes=writes.owns)
    app = FastAPI(
        title="oncelog ledger (write API)",
        description="Claims and completions under /v1/claims and /v1/executions.",
        version="1",
        docs_url=None,
        redoc_url=None,
        middleware=[Middleware(Guard, access=access)],
        exception_handlers=ERROR_HANDLERS,
    )
    writes.install(app)
    app.add_api_route("/healthz", _healthz, methods=["GET"])
    return writes.front(app, access=access)
