"""The approval routes: a person's approve or deny over HTTP, signed as that person.

``POST /v1/approvals/{operation_id}/approve`` and ``/deny`` need
``Authorization: Bearer <token>`` where the token is one of ``ONCELOG_HTTP_APPROVER_TOKENS``
(approver name -> token): neither the read token, nor the write token, nor a claim token
can decide. The route signs the decision with that approver's key
(``ONCELOG_APPROVER_KEYS``), so an intent that lists approvers (``ONCELOG_APPROVERS``) takes
it, and records the approver's name, never the token. The approvals page's forms post
the same decision with the token typed into a password field
(:mod:`oncelog.query.ui.approvals_page`); the token is never rendered.
"""

from __future__ import annotations

import hmac
import re
from dataclasses import dataclass
from typing import Annotated, Final

from fastapi import FastAPI, Header, Response
from pydantic import Field

from oncelog.errors import ConfigError, InvalidArgumentError, UnauthorizedError
from oncelog.gateway.approval_forms import install_forms, is_form_path
from oncelog.gateway.idempotency import parse_key
from oncelog.gateway.models import ExecutionAnswer, OperationBody
from oncelog.producer.calls import RequestBuilder
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.results import Execution
from oncelog.producer.transport import Transport
from oncelog.query.bearer import whose_token
from oncelog.query.problem import problem_responses
from oncelog.settings import Settings

APPROVALS: Final = "/v1/approvals/"
_DECIDE: Final = re.compile(r"^/v1/approvals/[^/]+/(approve|deny)$")
_BEARER: Final = "bearer "
NEEDS_APPROVER: Final = "deciding needs an approver's token (ONCELOG_HTTP_APPROVER_TOKENS)"
_ERRORS: Final = problem_responses(400, 401, 403, 409, 422, 503, 504)


class ApproveBody(OperationBody):
    """``POST /v1/approvals/{operation_id}/approve``: the intent, by the hash the person saw."""

    request_hash: str = Field(description="The pending intent's request hash (GET /v1/approvals).")


class DenyBody(ApproveBody):
    """``POST /v1/approvals/{operation_id}/deny``: as an approve, with the reason."""

    reason: str = Field(min_length=1, description="Why: every later claim is answered with it.")


def is_decision_path(path: str) -> bool:
    """Whether ``path`` is an approval route or a form of the approvals page (the guard's
    ``decide`` realm)."""
    return _DECIDE.match(path) is not None or is_form_path(path)


def bearer_of(header: str | None) -> str | None:
    """The token of an ``Authorization: Bearer`` header (None: none)."""
    if header is None or header[: len(_BEARER)].lower() != _BEARER:
        return None
    return header[len(_BEARER) :].strip()


class ApprovalDesk:
    """The approval routes of one process, sending on ``transport`` (the caller's)."""

    def __init__(self, transport: Transport, settings: Settings) -> None:
        self._transport = transport
        self.tokens = dict(settings.http_approver_tokens)
        self._keys = {name: settings.approver_key(name) for name in self.tokens}
        self._builder = RequestBuilder("oncelog-approvals")

    def owns(self, path: str) -> bool:
        """Whether ``path`` is one of the two routes."""
        return is_decision_path(path)

    def install(self, app: FastAPI) -> None:
        """Add the two routes (the app's guard checks the approver token first) and the
        approvals page's forms (:mod:`.approval_forms`), which read the app's
        ``cursor_factory``."""
        install_forms(app, self, app.state.cursor_factory)
        for action, endpoint in (("approve", self.approve), ("deny", self.deny)):
            app.add_api_route(
                f"{APPROVALS}{{operation_id}}/{action}",
                endpoint,
                methods=["POST"],
                response_model=ExecutionAnswer,
                responses=_ERRORS,
            )

    async def approve(
        self,
        operation_id: str,
        body: ApproveBody,
        authorization: Annotated[str | None, Header()] = None,
        idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
    ) -> Response:
        """Approve the intent: its next claim runs with exactly these params."""
        return await self.decide(operation_id, body, "", bearer_of(authorization),
                                 idempotency_key, approve=True)  # fmt: skip

    async def deny(
        self,
        operation_id: str,
        body: DenyBody,
        authorization: Annotated[str | None, Header()] = None,
        idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key")] = None,
    ) -> Response:
        """Deny the intent: a terminal ``denied``, every later claim answered with the reason."""
        return await self.decide(operation_id, body, body.reason, bearer_of(authorization),
                                 idempotency_key, approve=False)  # fmt: skip

    async def decide(
        self,
        operation_id: str,
        body: ApproveBody,
        reason: str,
        token: str | None,
        idempotency_key: str | None,
        *,
        approve: bool,
    ) -> Response:
        """Send the signed decision of the token's approver; answer the execution it left."""
        approver = whose_token(self.tokens, token)
        if approver is None:
            raise UnauthorizedError(NEEDS_APPROVER)
        execution = await self.send(
            approver, operation_id, channel_id=body.channel_id, key_name=body.key_name,
            request_hash=body.request_hash, reason=reason, approve=approve,
            request_id=parse_key(idempotency_key),
        )  # fmt: skip
        answer = ExecutionAnswer.of(execution).model_dump_json()
        return Response(answer, media_type="application/json")

    async def send(
        self,
        approver: str,
        operation_id: str,
        *,
        channel_id: str,
        key_name: str,
        request_hash: str,
        reason: str,
        approve: bool,
        request_id: str | None = None,
    ) -> Execution:
        """Send ``approver``'s decision on ``operation_id``, signed with their key."""
        pending = self._builder.decide_approval(
            channel_id, key_name, approver=approver, request_hash=request_hash,
            approve=approve, reason=reason, request_id=request_id,
            signing_key=self._keys[approver],
        )  # fmt: skip
        if pending.request.operation_id != operation_id:
            raise InvalidArgumentError(f"{channel_id}/{key_name} is not {operation_id}")
        return pending.interpret(await self._transport.acall(pending.request, None))


@dataclass
class OpenApprovalDesk:
    """The routes and the transport they send on; close it after the API has stopped."""

    desk: ApprovalDesk
    transport: Dispatcher

    def close(self) -> None:
        """Flush and disconnect the transport."""
        self.transport.close()


def open_approval_desk(settings: Settings, bootstrap: str) -> OpenApprovalDesk | None:
    """The approval routes when ``ONCELOG_HTTP_APPROVER_TOKENS`` is set (None: off).

    Raises ConfigError when a token has no signing key or equals another of the API's
    tokens (a reader or a writer must not decide)."""
    tokens = settings.http_approver_tokens
    if not tokens:
        return None
    others = [t for t in (settings.http_token, settings.http_write_token) if t is not None]
    for name, token in tokens.items():
        if settings.approver_key(name) is None:
            raise ConfigError(
                f"approver {name!r} has a token in ONCELOG_HTTP_APPROVER_TOKENS but no key in "
                "ONCELOG_APPROVER_KEYS: the route signs its decisions with it"
            )
        if any(
            hmac.compare_digest(token.get_secret_value().encode(), o.get_secret_value().encode())
            for o in others
        ):
            raise ConfigError(
                f"approver {name!r}'s token equals the read or the write token: give each "
                "approver a token of their own"
            )
    transport = Dispatcher(settings, bootstrap, Timeouts(connect_s=settings.connect_timeout_s))
    transport.start()
    return OpenApprovalDesk(ApprovalDesk(transport, settings), transport)
