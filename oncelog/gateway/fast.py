"""The write API's POSTs answered in front of the app's middleware: one parse, one answer.

A POST under ``/v1/claims`` or ``/v1/executions/{operation_id}/{action}`` with a JSON body
is read here, as an ASGI middleware outermost in the app: the same bearer check as the
app's guard (:meth:`~oncelog.query.guard.Access.refusal`), the body parsed and validated by
its model (strict, no unknown field), the ``Idempotency-Key`` and
``traceparent`` headers parsed as the routes' dependencies parse them, then the same
route method of :class:`~oncelog.gateway.routes.WriteApi`. The errors are the app's:
a bad body is a 400 ``invalid_argument`` naming each field as the app does
(``body.<field>: <message>``), a ``LedgerError`` its problem details.

Anything else (another method or path, a body that does not say it is JSON) goes on to
the app, whose routes also describe these POSTs in the OpenAPI schema. The front skips
what a request costs in the framework (dependency resolution, a middleware task per
request, the response model validated again), which is most of what a write costs the
server besides the log.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Final

from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from oncelog.errors import InvalidArgumentError, LedgerError
from oncelog.gateway.idempotency import parse_key
from oncelog.query.guard import Access
from oncelog.query.problem import problem
from oncelog.tracing.propagation import caller_headers

# (operation id, body, trace headers, idempotency key) -> the answer; typed loosely: each
# handler takes its own body model.
Handler = Callable[..., Awaitable[Response]]

JSON_TYPES: Final = (b"application/json", b"application/problem+json")


class WriteFront:
    """ASGI middleware: answers ``routes``' POSTs itself (see the module), after ``access``'s
    bearer check; ``routes`` maps ``""`` (the claims path) or an action name to its body
    model and handler, ``claims`` and ``executions`` are the paths' prefixes."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        access: Access,
        routes: dict[str, tuple[type[BaseModel], Handler]],
        claims: str,
        executions: str,
    ) -> None:
        self._app, self._access, self._routes = app, access, routes
        self._claims, self._executions = claims, executions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer a write POST, or pass the request on."""
        found = self._found(scope) if scope["type"] == "http" else None
        if found is None:
            await self._app(scope, receive, send)
            return
        operation_id, (model, handler) = found
        request = Request(scope, receive)
        response = self._access.refusal(request)
        if response is None:
            response = await _answer(model, handler, operation_id, request)
        await response(scope, receive, send)

    def _found(self, scope: Scope) -> tuple[str, tuple[type[BaseModel], Handler]] | None:
        """The operation id and the route of a write POST with a JSON body, else None."""
        if scope["method"] != "POST" or not _is_json(scope):
            return None
        path: str = scope["path"]
        if path == self._claims:
            return "", self._routes[""]
        if not path.startswith(self._executions):
            return None
        operation_id, _, action = path[len(self._executions) :].partition("/")
        route = self._routes.get(action) if action else None
        # As the app's path parameter: one non-empty segment.
        if route is None or not operation_id:
            return None
        return operation_id, route


def _is_json(scope: Scope) -> bool:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value.split(b";", 1)[0].strip().lower() in JSON_TYPES
    return False


async def _answer(
    model: type[BaseModel], handler: Handler, operation_id: str, request: Request
) -> Response:
    """The route's answer, or the problem details of its error."""
    headers = request.headers
    try:
        body = _body(model, await request.body())
        key = parse_key(headers.get("idempotency-key"))
        trace = caller_headers(headers.get("traceparent"), headers.get("tracestate"))
        return await handler(operation_id, body, trace, key)
    except LedgerError as exc:
        return problem(exc.http_status, exc.code, exc.message)


def _body(model: type[BaseModel], raw: bytes) -> BaseModel:
    """``raw`` as ``model``, or an ``InvalidArgumentError`` naming each bad field."""
    try:
        # The standard parser, as the app's: it takes the depth the SDK's checks then refuse.
        value = json.loads(raw)
    except json.JSONDecodeError as exc:  # the app's words for each
        raise InvalidArgumentError(f"body.{exc.pos}: JSON decode error") from None
    except (ValueError, RecursionError):
        raise InvalidArgumentError("There was an error parsing the body") from None
    try:
        return model.model_validate(value)
    except ValidationError as exc:
        details = "; ".join(
            f"{'.'.join(str(p) for p in ('body', *e['loc']))}: {e['msg']}" for e in exc.errors()
        )
        raise InvalidArgumentError(details) from None
