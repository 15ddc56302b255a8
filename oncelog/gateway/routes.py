"""The write API's routes: each builds the SDK's request, sends it and awaits its decision.

Nothing is checked or built twice: a route hands its body to the SDK's
:class:`~oncelog.producer.calls.RequestBuilder` (the same checks as a Python caller's,
raising the same typed errors before anything is produced), sends the request on
the Kafka transport of this ``serve`` process, and answers the decision read through
the same interpretation as the SDK's (:class:`~oncelog.producer.calls.PendingCall`).

The routes need ``Authorization: Bearer <ONCELOG_HTTP_WRITE_TOKEN>``; a claim token
travels only in bodies and in the answer to its own claim (spec section 8).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Final, TypeVar

from fastapi import FastAPI, Header, Query, Request, Response
from pydantic import BaseModel, SecretStr

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
    ReleaseBody,
)
from oncelog.producer.calls import PendingCall, RequestBuilder
from oncelog.producer.results import Execution, Heartbeat
from oncelog.producer.transport import Transport
from oncelog.query.bearer import bearer_matches
from oncelog.query.problem import problem, problem_responses

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
# The statuses a write may answer besides 200 (docs/http-api.md has the table).
_WRITE_ERRORS: Final = problem_responses(400, 401, 409, 422, 503, 504)
_READ_ERRORS: Final = problem_responses(400, 401, 404, 409, 422, 503, 504)
# Its own name in the audit for the calls that claim nothing (cancel, get).
_GATEWAY_WORKER: Final = "oncelog-http"


class WriteApi:
    """Claim, heartbeat, complete, fail, release, cancel and get, over HTTP.

    ``transport`` is open and belongs to the caller (``serve`` closes it after the API).
    ``claim_key`` keys the claim tokens derived from idempotency keys (None: a random
    key of this process); ``keys`` remembers the idempotency keys seen.
    """

    def __init__(
        self,
        transport: Transport,
        token: SecretStr,
        *,
        claim_key: SecretStr | None = None,
        keys: KeyMemory | None = None,
    ) -> None:
        self._transport = transport
        self._expected = token.get_secret_value().encode()
        secret = None if claim_key is None else claim_key.get_secret_value().encode()
        self._tokens = ClaimTokens(secret)
        self._keys = KeyMemory() if keys is None else keys
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

        def post(path: str, endpoint: Callable[..., Any], model: type[Any]) -> None:
            app.add_api_route(
                path, endpoint, methods=["POST"], response_model=model, responses=_WRITE_ERRORS
            )

        post(CLAIMS, self.claim, ClaimAnswer)
        post(EXECUTION + "/heartbeat", self.heartbeat, Heartbeat)
        post(EXECUTION + "/complete", self.complete, Execution)
        post(EXECUTION + "/fail", self.fail, Execution)
        post(EXECUTION + "/release", self.release, Execution)
        post(EXECUTION + "/cancel", self.cancel, CancelAnswer)
        app.add_api_route(
            EXECUTION,
            self.get,
            methods=["GET"],
            response_model=Execution,
            responses=_READ_ERRORS,
        )

    # --- the routes ----------------------------------------------------------------------

    async def claim(self, body: ClaimBody, idempotency_key: KeyHeader = None) -> ClaimAnswer:
        """Claim an operation: claimed/reclaimed (you hold it), in_progress or replayed."""
        key = parse_key(idempotency_key)
        with self._keys.hold(key, fingerprint(CLAIMS, body.model_dump(mode="json"))):
            token = None
            if key is not None:
                token = self._tokens.token(key, body.channel_id, body.key_name, body.step)
            pending = RequestBuilder(body.worker_id).claim_execution(
                body.channel_id,
                body.key_name,
                step=body.step,
                tool_name=body.tool_name,
                params=body.params,
                dedup_fields=body.dedup_fields,
                lease_seconds=body.lease_seconds,
                retention_seconds=body.retention_seconds,
                effect=body.effect,
                request_id=key,
                claim_token=token,
            )
            return ClaimAnswer.of(await self._decide(pending))

    async def heartbeat(
        self, operation_id: str, body: HeartbeatBody, idempotency_key: KeyHeader = None
    ) -> Heartbeat:
        """Extend the lease; the answer says whether a cancel was requested."""
        beat = await self._keyed(
            "heartbeat",
            operation_id,
            body,
            idempotency_key,
            lambda rid: self._builder.heartbeat_execution(
                operation_id,
                body.claim_token,
                body.lease_seconds,
                request_id=rid,
                channel_id=body.channel_id,
                key_name=body.key_name,
            ),
        )
        return beat

    async def complete(
        self, operation_id: str, body: CompleteBody, idempotency_key: KeyHeader = None
    ) -> Execution:
        """Record the result (fenced unless you hold the claim)."""
        done = await self._keyed(
            "complete",
            operation_id,
            body,
            idempotency_key,
            lambda rid: self._builder.complete_execution(
                operation_id,
                body.claim_token,
                body.result,
                request_id=rid,
                reconciled=body.reconciled,
                channel_id=body.channel_id,
                key_name=body.key_name,
            ),
        )
        return done

    async def fail(
        self, operation_id: str, body: FailBody, idempotency_key: KeyHeader = None
    ) -> Execution:
        """Record a failure; a retryable one can be reclaimed at once."""
        failed = await self._keyed(
            "fail",
            operation_id,
            body,
            idempotency_key,
            lambda rid: self._builder.fail_execution(
                operation_id,
                body.claim_token,
                body.error,
                body.retryable,
                request_id=rid,
                reconciled=body.reconciled,
                channel_id=body.channel_id,
                key_name=body.key_name,
            ),
        )
        return failed

    async def release(
        self, operation_id: str, body: ReleaseBody, idempotency_key: KeyHeader = None
    ) -> Execution:
        """Give the lease back without a result."""
        released = await self._keyed(
            "release",
            operation_id,
            body,
            idempotency_key,
            lambda rid: self._builder.release_execution(
                operation_id,
                body.claim_token,
                request_id=rid,
                channel_id=body.channel_id,
                key_name=body.key_name,
            ),
        )
        return released

    async def cancel(
        self, operation_id: str, body: CancelBody, idempotency_key: KeyHeader = None
    ) -> CancelAnswer:
        """Ask the holder to stop (it learns at its next heartbeat)."""
        outcome = await self._keyed(
            "cancel",
            operation_id,
            body,
            idempotency_key,
            lambda rid: self._builder.cancel_execution(
                operation_id,
                body.reason,
                request_id=rid,
                channel_id=body.channel_id,
                key_name=body.key_name,
            ),
        )
        return CancelAnswer(outcome=outcome)

    async def get(
        self,
        operation_id: str,
        channel_id: Annotated[str, Query()],
        key_name: Annotated[str, Query()],
    ) -> Execution:
        """The execution after every request sent before this one (a read through the log)."""
        pending = self._builder.get_execution(
            operation_id, channel_id=channel_id, key_name=key_name
        )
        execution = await self._decide(pending)
        if execution is None:
            raise NotFoundError(f"execution {operation_id} ({channel_id}/{key_name}) is absent")
        return execution

    # --- how ----------------------------------------------------------------------------

    async def _keyed(
        self,
        action: str,
        operation_id: str,
        body: BaseModel,
        header: str | None,
        build: Callable[[str | None], PendingCall[T]],
    ) -> T:
        key = parse_key(header)
        route = f"{EXECUTIONS}{operation_id}/{action}"
        with self._keys.hold(key, fingerprint(route, body.model_dump(mode="json"))):
            return await self._decide(build(key))

    async def _decide(self, pending: PendingCall[T]) -> T:
        return pending.interpret(await self._transport.acall(pending.request))
