"""The write API's routes: each builds the SDK's request, sends it and awaits its decision.

Nothing is checked or built twice: a route maps its body, field by field, to a call of
the SDK's :class:`~oncelog.producer.calls.RequestBuilder` (the same checks as a Python
caller's, raising the same typed errors before anything is produced, an idempotency key
taken or a payload hashed), sends the request on the Kafka transport of this ``serve``
process, and answers the decision read through the same interpretation as the SDK's
(:class:`~oncelog.producer.calls.PendingCall`), as this API's own answer models, each
serialised once (a route returns its JSON bytes: FastAPI's response model only documents
it).

The routes need ``Authorization: Bearer <ONCELOG_HTTP_WRITE_TOKEN>``; a claim token
travels only in bodies and in the answer to its own claim (spec section 8). A caller's
valid W3C ``traceparent`` rides on its request record (docs/tracing.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Final, TypedDict, TypeVar

from fastapi import Depends, FastAPI, Header, Query, Response
from pydantic import BaseModel, SecretStr
from starlette.types import ASGIApp

from oncelog.errors import NotFoundError
from oncelog.gateway.fast import Handler, WriteFront
from oncelog.gateway.idempotency import ClaimTokens, KeyMemory, fingerprint, parse_key
from oncelog.gateway.models import (
    CancelAnswer,
    CancelBody,
    ClaimAnswer,
    ClaimBody,
    CompleteBody,
    ExecutionAnswer,
    FailBody,
    HeartbeatAnswer,
    HeartbeatBody,
    OperationBody,
    ReleaseBody,
)
from oncelog.producer.calls import PendingCall, RequestBuilder
from oncelog.producer.results import Claim, Execution
from oncelog.producer.transport import Transport
from oncelog.query.guard import Access
from oncelog.query.problem import problem_responses
from oncelog.schemas.models import ApprovalPolicy, ApproverKey
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


async def _caller_trace(
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


def _on(operation_id: str, action: str) -> str:
    """The route of a call on an operation, as an idempotency key's fingerprint names it."""
    return f"{EXECUTIONS}{operation_id}/{action}"


async def _key(idempotency_key: KeyHeader = None) -> str | None:
    return parse_key(idempotency_key)


# The Idempotency-Key's value, checked (None: no header).
Key = Annotated[str | None, Depends(_key)]


class _Where(TypedDict):
    """The arguments naming the operation and the request, the same in each call."""

    channel_id: str
    key_name: str
    request_id: str | None


def _where(body: OperationBody, key: str | None) -> _Where:
    return _Where(channel_id=body.channel_id, key_name=body.key_name, request_id=key)


def claim_call(
    body: ClaimBody,
    key: str | None,
    token: str | None,
    approvers: tuple[ApproverKey, ...] = (),
) -> PendingCall[Claim]:
    """The SDK's claim for a claim body (``key``, ``token``: from an Idempotency-Key;
    ``approvers``: listed on its approval policy, if it has one)."""
    asked = body.approval
    approval = None
    if asked is not None:
        approval = ApprovalPolicy(round(asked.timeout_seconds * 1000), asked.self_approval)
    # A builder per claim (its worker id is the body's): it costs less than a microsecond.
    return RequestBuilder(body.worker_id, approvers).claim_execution(
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
        approval=approval,
    )


def _json(answer: BaseModel) -> Response:
    """The answer, serialised once (its route's response model documents it)."""
    return Response(answer.model_dump_json(), media_type="application/json")


class WriteApi:
    """Claim, heartbeat, complete, fail, release, cancel and get, over HTTP.

    ``transport`` is open and belongs to the caller (``serve`` closes it after the API).
    ``token`` is the bearer its paths need (the app's guard checks it). ``claim_key``
    keys the claim tokens derived from idempotency keys (None: the key ``keys`` keeps).
    ``keys``: the memory of idempotency keys (this process's own, or its gateway's).
    ``approvers``: listed on a claim's approval policy (``ONCELOG_APPROVERS``).
    """

    def __init__(
        self,
        transport: Transport,
        token: SecretStr,
        keys: KeyMemory,
        claim_key: SecretStr | None = None,
        approvers: tuple[ApproverKey, ...] = (),
    ) -> None:
        self._transport = transport
        self.token = token
        #: The idempotency keys seen (by this process, or every worker of its gateway).
        self.keys = keys
        secret = None if claim_key is None else claim_key.get_secret_value().encode()
        self._tokens = ClaimTokens(self.keys.claim_key() if secret is None else secret)
        self._builder = RequestBuilder(_GATEWAY_WORKER)
        #: Listed on the approval policy of a claim that has one (``ONCELOG_APPROVERS``).
        self.approvers = approvers

    def owns(self, path: str) -> bool:
        """The write API's paths: ``/v1/claims`` and everything under ``/v1/executions/``."""
        return path == CLAIMS or path.startswith(EXECUTIONS)

    def front(self, app: ASGIApp, *, access: Access) -> ASGIApp:
        """``app`` behind the front that answers this API's POSTs itself
        (:mod:`oncelog.gateway.fast`), after ``access``'s bearer check."""

        async def claim(_: str, body: ClaimBody, trace: Headers | None, key: str | None) -> Any:
            return await self.claim(body, trace, key)

        routes: dict[str, tuple[type[BaseModel], Handler]] = {
            "": (ClaimBody, claim),
            "heartbeat": (HeartbeatBody, self.heartbeat),
            "complete": (CompleteBody, self.complete),
            "fail": (FailBody, self.fail),
            "release": (ReleaseBody, self.release),
            "cancel": (CancelBody, self.cancel),
        }
        return WriteFront(app, access=access, routes=routes, claims=CLAIMS, executions=EXECUTIONS)

    def install(self, app: FastAPI) -> None:
        """Add the routes (the app's guard checks their token)."""
        posts: list[tuple[str, Callable[..., Any], type[BaseModel]]] = [
            (CLAIMS, self.claim, ClaimAnswer),
            (f"{EXECUTION}/heartbeat", self.heartbeat, HeartbeatAnswer),
            (f"{EXECUTION}/complete", self.complete, ExecutionAnswer),
            (f"{EXECUTION}/fail", self.fail, ExecutionAnswer),
            (f"{EXECUTION}/release", self.release, ExecutionAnswer),
            (f"{EXECUTION}/cancel", self.cancel, CancelAnswer),
        ]
        for path, endpoint, answer in posts:
            app.add_api_route(
                path, endpoint, methods=["POST"], response_model=answer, responses=_WRITE_ERRORS
            )
        app.add_api_route(
            EXECUTION,
            self.get,
            methods=["GET"],
            response_model=ExecutionAnswer,
            responses=_READ_ERRORS,
        )

    # --- the routes: each maps its body to its call, field by field ----------------------

    async def claim(self, body: ClaimBody, trace: Trace, key: Key = None) -> Response:
        """Claim an operation: claimed/reclaimed (you hold it), in_progress or replayed."""
        token = None
        if key is not None:
            token = self._tokens.token(key, body.channel_id, body.key_name, body.step)
        pending = claim_call(body, key, token, self.approvers)
        return _json(ClaimAnswer.of(await self._send(CLAIMS, body, key, pending, trace)))

    async def heartbeat(
        self, operation_id: str, body: HeartbeatBody, trace: Trace, key: Key = None
    ) -> Response:
        """Extend the lease; the answer says whether a cancel was requested."""
        pending = self._builder.heartbeat_execution(
            operation_id, body.claim_token, body.lease_seconds, **_where(body, key)
        )
        return _json(
            HeartbeatAnswer.of(
                await self._send(_on(operation_id, "heartbeat"), body, key, pending, trace)
            )
        )

    async def complete(
        self, operation_id: str, body: CompleteBody, trace: Trace, key: Key = None
    ) -> Response:
        """Record the result (fenced unless you hold the claim)."""
        how = body.reconciled
        pending = self._builder.complete_execution(
            operation_id, body.claim_token, body.result, reconciled=how, **_where(body, key)
        )
        return await self._executed(_on(operation_id, "complete"), body, key, pending, trace)

    async def fail(
        self, operation_id: str, body: FailBody, trace: Trace, key: Key = None
    ) -> Response:
        """Record a failure; a retryable one can be reclaimed at once."""
        error, retryable, how = body.error, body.retryable, body.reconciled
        pending = self._builder.fail_execution(
            operation_id, body.claim_token, error, retryable, reconciled=how, **_where(body, key)
        )
        return await self._executed(_on(operation_id, "fail"), body, key, pending, trace)

    async def release(
        self, operation_id: str, body: ReleaseBody, trace: Trace, key: Key = None
    ) -> Response:
        """Give the lease back without a result."""
        pending = self._builder.release_execution(
            operation_id, body.claim_token, **_where(body, key)
        )
        return await self._executed(_on(operation_id, "release"), body, key, pending, trace)

    async def cancel(
        self, operation_id: str, body: CancelBody, trace: Trace, key: Key = None
    ) -> Response:
        """Ask the holder to stop (it learns at its next heartbeat)."""
        where = _where(body, key)
        pending = self._builder.cancel_execution(operation_id, body.reason, **where)
        outcome = await self._send(_on(operation_id, "cancel"), body, key, pending, trace)
        return _json(CancelAnswer(outcome=outcome))

    async def get(
        self,
        operation_id: str,
        channel_id: Annotated[str, Query()],
        key_name: Annotated[str, Query()],
        trace: Trace,
    ) -> Response:
        """The execution after every request sent before this one (a read through the log)."""
        pending = self._builder.get_execution(
            operation_id, channel_id=channel_id, key_name=key_name
        )
        execution = await self._decide(pending, trace)
        if execution is None:
            raise NotFoundError(f"execution {operation_id} ({channel_id}/{key_name}) is absent")
        return _json(ExecutionAnswer.of(execution))

    # --- how ----------------------------------------------------------------------------

    async def _executed(
        self,
        route: str,
        body: BaseModel,
        key: str | None,
        pending: PendingCall[Execution],
        trace: Headers | None,
    ) -> Response:
        """A complete, fail or release sent, answered with the execution it left."""
        execution = await self._send(route, body, key, pending, trace)
        return _json(ExecutionAnswer.of(execution))

    async def _send(
        self,
        route: str,
        body: BaseModel,
        key: str | None,
        pending: PendingCall[T],
        trace: Headers | None,
    ) -> T:
        """Send a request its call built (so checked), held under its idempotency key."""
        # Hashed only once the call's checks passed: they bound what is hashed (its depth).
        with self.keys.hold(key, fingerprint(route, body.model_dump(mode="json"))):
            return await self._decide(pending, trace)

    async def _decide(self, pending: PendingCall[T], trace: Headers | None) -> T:
        # The caller's trace context rides on the request record (docs/tracing.md).
        return pending.interpret(await self._transport.acall(pending.request, trace))
