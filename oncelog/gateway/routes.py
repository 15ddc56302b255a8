"""The write API's routes: each builds the SDK's request, sends it and awaits its decision.

Nothing is checked or built twice: a route hands its body to the SDK's
:class:`~oncelog.producer.calls.RequestBuilder` (the same checks as a Python caller's,
raising the same typed errors before anything is produced), sends the request on
the Kafka transport of this ``serve`` process, and answers the decision read through
the same interpretation as the SDK's (:class:`~oncelog.producer.calls.PendingCall`).

The routes need ``Authorization: Bearer <ONCELOG_HTTP_WRITE_TOKEN>``; a claim token
travels only in bodies and in the answer to its own claim (spec section 8). A caller's
valid W3C ``traceparent`` rides on its request record (docs/tracing.md).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar

from fastapi import Depends, FastAPI, Header, Query, Request, Response
from pydantic import SecretStr

from oncelog.errors import NotFoundError, UnauthorizedError
from oncelog.gateway.idempotency import ClaimTokens, KeyMemory, fingerprint, parse_key
from oncelog.gateway.models import (
    CancelAnswer,
    CancelBody,
    ClaimAnswer,
    ClaimBody,
    CompleteBody,
    FailBody,
    HeartbeatBody,
    OperationBody,
    ReleaseBody,
)
from oncelog.producer.calls import PendingCall, RequestBuilder
from oncelog.producer.results import Execution, Heartbeat
from oncelog.producer.transport import Transport
from oncelog.query.bearer import bearer_matches
from oncelog.query.problem import problem, problem_responses
from oncelog.tracing.propagation import Headers, caller_headers

T = TypeVar("T")

CLAIMS: Final = "/v1/claims"
EXECUTIONS: Final = "/v1/executions/"
EXECUTION: Final = EXECUTIONS + "{operation_id}"

KeyHeader = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Makes a retried POST the same request (its request id); "
        "a quoted sf-string or a bare value.",
    ),
]


def _caller_trace(
    traceparent: Annotated[
        str | None,
        Header(description="The caller's W3C trace context, carried on the request record."),
    ] = None,
    tracestate: Annotated[str | None, Header(description="Its W3C tracestate.")] = None,
) -> Headers | None:
    return caller_headers(traceparent, tracestate)


# The caller's trace context as record headers (None: none, or a malformed one).
Trace = Annotated[Headers | None, Depends(_caller_trace)]
# The statuses a write may answer besides 200 (docs/http-api.md has the table).
_WRITE_ERRORS: Final = problem_responses(400, 401, 409, 422, 503, 504)
_READ_ERRORS: Final = problem_responses(400, 401, 404, 409, 422, 503, 504)
# Its own name in the audit for the calls that claim nothing (cancel, get).
_GATEWAY_WORKER: Final = "oncelog-http"


@dataclass(frozen=True)
class _Call:
    """A call on an operation: ``POST /v1/executions/{operation_id}/<action>``."""

    action: str
    body: type[OperationBody]
    answer: type[Any]


# The one table of the calls on an operation: the routes, their bodies and answers.
_CALLS: Final = (
    _Call("heartbeat", HeartbeatBody, Heartbeat),
    _Call("complete", CompleteBody, Execution),
    _Call("fail", FailBody, Execution),
    _Call("release", ReleaseBody, Execution),
    _Call("cancel", CancelBody, CancelAnswer),
)
# Each route's description in the OpenAPI schema.
_DOCS: Final = {
    "heartbeat": "Extend the lease; the answer says whether a cancel was requested.",
    "complete": "Record the result (fenced unless you hold the claim).",
    "fail": "Record a failure; a retryable one can be reclaimed at once.",
    "release": "Give the lease back without a result.",
    "cancel": "Ask the holder to stop (it learns at its next heartbeat).",
}


class WriteApi:
    """Claim, heartbeat, complete, fail, release, cancel and get, over HTTP.

    ``transport`` is open and belongs to the caller (``serve`` closes it after the API).
    ``claim_key`` keys the claim tokens derived from idempotency keys (None: a random
    key of this process).
    """

    def __init__(
        self, transport: Transport, token: SecretStr, *, claim_key: SecretStr | None = None
    ) -> None:
        self._transport = transport
        self._expected = token.get_secret_value().encode()
        secret = None if claim_key is None else claim_key.get_secret_value().encode()
        self._tokens = ClaimTokens(secret)
        #: The idempotency keys this process has seen.
        self.keys = KeyMemory()
        self._builder = RequestBuilder(_GATEWAY_WORKER)

    def owns(self, path: str) -> bool:
        """The write API's paths: ``/v1/claims`` and everything under ``/v1/executions/``."""
        return path == CLAIMS or path.startswith(EXECUTIONS)

    def install(self, app: FastAPI) -> None:
        """Add the routes, and the write token's check in front of them."""

        @app.middleware("http")
        async def require_write_token(
            request: Request, call_next: Callable[[Request], Awaitable[Response]]
        ) -> Response:
            header = request.headers.get("authorization")
            if not self.owns(request.url.path) or bearer_matches(header, self._expected):
                return await call_next(request)
            why = "no bearer token" if header is None else "a wrong bearer token"
            message = f"the write API needs ONCELOG_HTTP_WRITE_TOKEN as its bearer; got {why}"
            return problem(401, UnauthorizedError.code, message, **{"WWW-Authenticate": "Bearer"})

        for path, endpoint, answer in self._routes():
            app.add_api_route(
                path, endpoint, methods=["POST"], response_model=answer, responses=_WRITE_ERRORS
            )
        app.add_api_route(
            EXECUTION,
            self.get,
            methods=["GET"],
            response_model=Execution,
            responses=_READ_ERRORS,
        )

    def _routes(self) -> list[tuple[str, Callable[..., Awaitable[Any]], type[Any]]]:
        """The POST routes, from the one table of calls (:data:`_CALLS`)."""
        routes: list[tuple[str, Callable[..., Awaitable[Any]], type[Any]]] = [
            (CLAIMS, self.claim, ClaimAnswer)
        ]
        for call in _CALLS:
            routes.append((f"{EXECUTION}/{call.action}", self._endpoint(call), call.answer))
        return routes

    # --- the routes ----------------------------------------------------------------------

    async def claim(
        self, body: ClaimBody, trace: Trace, idempotency_key: KeyHeader = None
    ) -> ClaimAnswer:
        """Claim an operation: claimed/reclaimed (you hold it), in_progress or replayed."""
        key = parse_key(idempotency_key)
        with self.keys.hold(key, fingerprint(CLAIMS, body.model_dump(mode="json"))):
            token = None
            if key is not None:
                token = self._tokens.token(key, body.channel_id, body.key_name, body.step)
            # The body's fields are claim_execution's arguments (gateway/models.py).
            arguments = body.model_dump(exclude={"worker_id"})
            builder = RequestBuilder(body.worker_id)
            pending = builder.claim_execution(**arguments, request_id=key, claim_token=token)
            return ClaimAnswer.of(await self._decide(pending, trace))

    def _endpoint(self, call: _Call) -> Callable[..., Awaitable[Any]]:
        """The route of one call on an operation: its body's fields are the arguments of
        the builder's ``<action>_execution`` after the operation id."""
        build = getattr(self._builder, f"{call.action}_execution")

        async def endpoint(
            operation_id: str, body: OperationBody, trace: Trace, idempotency_key: KeyHeader = None
        ) -> Any:
            key = parse_key(idempotency_key)
            route = f"{EXECUTIONS}{operation_id}/{call.action}"
            with self.keys.hold(key, fingerprint(route, body.model_dump(mode="json"))):
                arguments = body.model_dump()
                pending = build(operation_id, **arguments, request_id=key)
                answer = await self._decide(pending, trace)
            return call.answer(outcome=answer) if call.answer is CancelAnswer else answer

        # FastAPI reads the body's model, the operation's name and its description here.
        endpoint.__annotations__ = {**endpoint.__annotations__, "body": call.body}
        endpoint.__name__ = endpoint.__qualname__ = call.action
        endpoint.__doc__ = _DOCS[call.action]
        return endpoint

    async def get(
        self,
        operation_id: str,
        channel_id: Annotated[str, Query()],
        key_name: Annotated[str, Query()],
        trace: Trace,
    ) -> Execution:
        """The execution after every request sent before this one (a read through the log)."""
        pending = self._builder.get_execution(
            operation_id, channel_id=channel_id, key_name=key_name
        )
        execution = await self._decide(pending, trace)
        if execution is None:
            raise NotFoundError(f"execution {operation_id} ({channel_id}/{key_name}) is absent")
        return execution

    # --- how ----------------------------------------------------------------------------

    async def _decide(self, pending: PendingCall[T], trace: Headers | None) -> T:
        # The caller's trace context rides on the request record (docs/tracing.md).
        return pending.interpret(await self._transport.acall(pending.request, trace))
