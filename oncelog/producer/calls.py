"""The client calls, transport-free: each builds a request and its interpreter.

The async and the sync client differ only in how they wait for the decision:
each public method is written once here, returning a :class:`PendingCall`, and
each client turns it into a blocking or an awaitable method (see
:func:`oncelog.producer.sync_client.blocking`, :func:`oncelog.producer.client.awaiting`).

This is the SDK's boundary: each argument is checked once, here, and a bad one raises
its typed error (:class:`~oncelog.errors.InvalidArgumentError`) before any request is
made. The layers below (:mod:`~oncelog.producer.protocol`, :mod:`oncelog.identity.ids`'s
``*_unchecked`` and ``request_hash_of_params``) take the checked values.
"""

from __future__ import annotations

import os
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from oncelog.errors import InvalidArgumentError
from oncelog.identity import ids, validation
from oncelog.producer import protocol
from oncelog.producer.protocol import DEFAULT_RETENTION_S, ClaimOptions, Route
from oncelog.producer.results import Claim, Execution, Heartbeat
from oncelog.receipts import NotCompletedError, ReceiptClaims, sign_receipt
from oncelog.referee.validate import RECONCILED
from oncelog.schemas import models as m
from oncelog.schemas.models import Decision, Outcome, Request

T = TypeVar("T")
ExecutionRef = str | Execution
_ROUTES_KEPT: Final = 100_000
RECEIPT_TTL_S: Final = 30 * 24 * 3600
_EFFECTS: Final = {"pure": m.Effect.PURE, "external": m.Effect.EXTERNAL}


@dataclass(frozen=True, slots=True)
class PendingCall(Generic[T]):
    """A request to send and how to read its decision (into a result or a typed error)."""

    request: Request = field(repr=False)  # a claim token rides on it: kept out of reprs
    interpret: Callable[[Decision], T] = field(repr=False)


def default_worker_id() -> str:
    """host:pid:random — unique per client instance."""
    return f"{socket.gethostname()}:{os.getpid()}:{protocol.new_claim_token()[:6]}"


class RequestBuilder:
    """The calls' requests, each argument checked once; a bounded map of execution routes."""

    def __init__(
        self, worker_id: str | None = None, approvers: tuple[m.ApproverKey, ...] = ()
    ) -> None:
        self.worker_id = validation.validate_id("worker_id", worker_id or default_worker_id())
        #: Listed on a claim's approval policy that names none (``ONCELOG_APPROVERS``).
        self.approvers = approvers
        self._routes: OrderedDict[str, Route] = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, op: str, route: Route) -> None:
        with self._lock:
            self._routes[op] = route
            self._routes.move_to_end(op)
            while len(self._routes) > _ROUTES_KEPT:
                self._routes.popitem(last=False)

    def route(self, execution: ExecutionRef, channel_id: str | None, key_name: str | None) -> Route:
        """Where ``execution``'s records go; the caller names it when this client never saw it.

        The route's ids are checked here, once: the layers below take them as valid.
        """
        if isinstance(execution, Execution):
            return _checked_route(execution.channel_id, execution.key_name)
        if channel_id is not None and key_name is not None:
            route = _checked_route(channel_id, key_name)
            if ids.operation_id_unchecked(channel_id, key_name) != execution:
                raise InvalidArgumentError(f"{channel_id}/{key_name} is not execution {execution}")
            return route
        with self._lock:
            known = self._routes.get(execution) if isinstance(execution, str) else None
        if known is None:
            raise InvalidArgumentError(
                f"unknown execution {execution!r}: pass the Execution, or channel_id and key_name"
            )
        return known

    def claim_execution(
        self,
        channel_id: str,
        key_name: str | None = None,
        *,
        step: int | None = None,
        tool_name: str,
        params: Mapping[str, Any],
        dedup_fields: Sequence[str] | None = None,
        lease_seconds: float = 60,
        retention_seconds: float = DEFAULT_RETENTION_S,
        effect: str = "external",
        request_id: str | None = None,
        claim_token: str | None = None,
        approval: m.ApprovalPolicy | None = None,
    ) -> PendingCall[Claim]:
        """A new attempt at ``channel_id``/``key_name`` (or ``step``) with a fresh token.

        ``params`` is a JSON object of at most 1 MiB of canonical JSON; ids are at most 256
        UTF-8 bytes (docs/spec.md §5).

        ``request_id`` and ``claim_token`` (default: fresh ones) make a claim re-sent after
        a restart the same request to the fold: the HTTP write API derives both from an
        ``Idempotency-Key``. A token must be as unguessable as the fresh one (128 bits).
        ``approval``: the tool's policy requires a person's yes for these params; the
        first such claim records the intent and answers ``awaiting_approval``
        (docs/spec.md §4, "Approvals"). Re-send the same ``request_id`` and token to wait.
        """
        if (key_name is None) == (step is None):
            raise InvalidArgumentError("give exactly one of key_name and step")
        name = ids.step_key_name(validation.validate_step(step)) if step is not None else key_name
        assert name is not None
        route = _checked_route(channel_id, name)
        validation.validate_claimed_names(channel_id, name)
        options = ClaimOptions(
            tool_name=tool_name,
            params=params,
            dedup_fields=dedup_fields,
            lease_seconds=lease_seconds,
            retention_seconds=retention_seconds,
            effect=effect,
        )
        body = _claim_body(options, self.worker_id)
        given = None if claim_token is None else _token(claim_token)
        request = protocol.build_claim(route, body, given, _request_id(request_id))
        if approval is not None:
            if not 0 < approval.timeout_ms <= validation.MAX_RETENTION_MS:
                raise InvalidArgumentError("approval timeout_ms is 1 ms to 100 years")
            if not approval.approvers and self.approvers:
                approval = approval._replace(approvers=self.approvers)
            request = request._replace(approval=approval)
        self._remember(request.operation_id, route)
        token = request.claim_token
        assert token is not None
        return PendingCall(request, lambda d: protocol.claim_result(d, token))

    def decide_approval(
        self,
        channel_id: str,
        key_name: str,
        *,
        approver: str,
        request_hash: str,
        approve: bool,
        reason: str = "",
        request_id: str | None = None,
        signing_key: bytes | None = None,
    ) -> PendingCall[Execution]:
        """Approve or deny the intent of an operation awaiting approval, as ``approver``.

        ``request_hash`` is the hash of the params the approver saw: a decision binds to
        exactly those (another hash is a :class:`~oncelog.errors.ConflictError`). The
        approver's name is recorded, never a token. A deny needs a ``reason``.
        ``signing_key``: the approver's raw Ed25519 private key, needed when the intent
        lists approvers (``ONCELOG_APPROVERS``); without it such an intent refuses the
        decision (:class:`~oncelog.errors.ApprovalRefusedError`).
        """
        route = _checked_route(channel_id, key_name)
        validation.validate_id("approver", approver)
        if not approve and not reason:
            raise InvalidArgumentError("a deny needs a reason")
        signature = None
        if signing_key is not None:
            # Only a signer loads the cryptography package, not every worker.
            from oncelog.identity.approver_signature import (  # noqa: PLC0415
                decision_message,
                sign,
            )

            op = ids.operation_id_unchecked(route.channel_id, route.key_name)
            message = decision_message(op, request_hash, approve, approver, reason)
            signature = sign(signing_key, message)
        body: m.Approve | m.Deny = (
            m.Approve(approver, request_hash, signature)
            if approve
            else m.Deny(approver, request_hash, reason, signature)
        )
        request = protocol.make_request(route, None, body, _request_id(request_id))
        expected = Outcome.APPROVED if approve else Outcome.DENIED
        return PendingCall(request, lambda d: protocol.state_result(d, expected))

    def complete_execution(
        self,
        execution_id: ExecutionRef,
        claim_token: str,
        result: Any,
        *,
        channel_id: str | None = None,
        key_name: str | None = None,
        request_id: str | None = None,
        reconciled: str | None = None,
    ) -> PendingCall[Execution]:
        """Record the result (any JSON value of at most 1 MiB of canonical JSON). Fenced
        (:class:`StaleClaimError`) unless you hold the claim.

        A retry of the same completion is a no-op that answers the recorded execution.
        ``reconciled`` (``"found"`` or ``"not_found"``) says how a previous attempt's
        unknown outcome was settled with the downstream; it is recorded, never judged.
        """
        route = self.route(execution_id, channel_id, key_name)
        token = _token(claim_token)
        body = m.Complete(validation.validate_result(result))
        how = _reconciled(reconciled)
        request = protocol.make_request(route, token, body, _request_id(request_id), how)
        return PendingCall(request, lambda d: protocol.state_result(d, Outcome.COMPLETED))

    def fail_execution(
        self,
        execution_id: ExecutionRef,
        claim_token: str,
        error: str,
        retryable: bool = False,
        *,
        channel_id: str | None = None,
        key_name: str | None = None,
        request_id: str | None = None,
        reconciled: str | None = None,
    ) -> PendingCall[Execution]:
        """Record a failure; a retryable one can be reclaimed at once (``reconciled``: as for
        :meth:`complete_execution`)."""
        route = self.route(execution_id, channel_id, key_name)
        body = _fail_body(error, retryable)
        rid, how = _request_id(request_id), _reconciled(reconciled)
        request = protocol.make_request(route, _token(claim_token), body, rid, how)
        return PendingCall(request, lambda d: protocol.state_result(d, Outcome.FAILED))

    def heartbeat_execution(
        self,
        execution_id: ExecutionRef,
        claim_token: str,
        lease_seconds: float | None = None,
        *,
        channel_id: str | None = None,
        key_name: str | None = None,
        request_id: str | None = None,
    ) -> PendingCall[Heartbeat]:
        """Extend the lease; the answer says whether a cancel was requested."""
        route = self.route(execution_id, channel_id, key_name)
        lease_ms = None if lease_seconds is None else validation.lease_seconds_to_ms(lease_seconds)
        body = m.Heartbeat(lease_ms)
        rid = _request_id(request_id)
        request = protocol.make_request(route, _token(claim_token), body, rid)
        return PendingCall(request, protocol.heartbeat_result)

    def release_execution(
        self,
        execution_id: ExecutionRef,
        claim_token: str,
        *,
        channel_id: str | None = None,
        key_name: str | None = None,
        request_id: str | None = None,
    ) -> PendingCall[Execution]:
        """Give the lease back without a result."""
        route = self.route(execution_id, channel_id, key_name)
        rid = _request_id(request_id)
        request = protocol.make_request(route, _token(claim_token), m.Release(), rid)
        return PendingCall(request, lambda d: protocol.state_result(d, Outcome.RELEASED))

    def get_execution(
        self,
        execution_id: ExecutionRef,
        *,
        channel_id: str | None = None,
        key_name: str | None = None,
    ) -> PendingCall[Execution | None]:
        """The execution as decided after every request sent before this call; None if absent.

        It is a read through the log (a ``get`` request judged by the projector
        in order), not a lookup in a possibly lagging projection.
        """
        route = self.route(execution_id, channel_id, key_name)
        return PendingCall(protocol.build_get(route), protocol.get_result)

    def cancel_execution(
        self,
        execution_id: ExecutionRef,
        reason: str | None = None,
        *,
        channel_id: str | None = None,
        key_name: str | None = None,
        request_id: str | None = None,
    ) -> PendingCall[str]:
        """Ask the holder to stop; returns the outcome (``cancel_requested`` or the state)."""
        route = self.route(execution_id, channel_id, key_name)
        if reason is not None:
            validation.validate_text("reason", reason, 4096, "4096 bytes")
        request = protocol.make_request(route, None, m.Cancel(reason), _request_id(request_id))
        return PendingCall(request, _outcome_name)


# --- the checks of the caller's arguments, each made once ------------------------------


def _checked_route(channel_id: str, key_name: str) -> Route:
    return Route(
        validation.validate_id("channel_id", channel_id),
        validation.validate_id("key_name", key_name),
    )


def _claim_body(options: ClaimOptions, worker_id: str) -> m.Claim:
    """Check what a claim asks for, once, and make its body (``worker_id`` is checked)."""
    effect = options["effect"]
    if effect not in _EFFECTS:
        raise InvalidArgumentError(f"effect must be 'pure' or 'external', got {effect!r}")
    params = options["params"]
    canonical = validation.validate_params(params)
    tool_name = validation.validate_id("tool_name", options["tool_name"])
    fields = validation.validate_dedup_fields(params, options["dedup_fields"])
    # Every field counts without dedup fields: hash the bytes just made.
    counted = canonical if fields is None else ids.counted_params(params, fields)
    return m.Claim(
        tool_name=tool_name,
        params=canonical,
        request_hash=ids.request_hash_of_params(tool_name, counted),
        lease_ms=validation.lease_seconds_to_ms(options["lease_seconds"]),
        retention_ms=validation.retention_seconds_to_ms(options["retention_seconds"]),
        effect=_EFFECTS[effect],
        worker_id=worker_id,
    )


def _fail_body(error: str, retryable: bool) -> m.Fail:
    validation.validate_text("error", error, validation.MAX_JSON_BYTES, "1 MiB")
    if not isinstance(retryable, bool):
        raise InvalidArgumentError("retryable must be a bool")
    return m.Fail(error, retryable)


def _token(claim_token: object) -> str:
    if not isinstance(claim_token, str) or not 0 < len(claim_token) <= 256:
        raise InvalidArgumentError("claim_token must be the non-empty string a claim returned")
    return validation.validate_text("claim_token", claim_token, 1024, "1024 bytes")


def _request_id(request_id: object) -> str | None:
    """None (a fresh id will be drawn), or a caller's id checked as the projector checks it."""
    return None if request_id is None else validation.validate_unique_id("request_id", request_id)


def _reconciled(reconciled: object) -> str | None:
    if reconciled is None or (isinstance(reconciled, str) and reconciled in RECONCILED):
        return reconciled
    raise InvalidArgumentError(
        f"reconciled must be 'found', 'not_found' or None, got {reconciled!r}"
    )


def receipt(execution: Execution, key: bytes, ttl_seconds: float, now_ms: int) -> str:
    """A signed receipt of a completed execution (docs/spec.md §7), computed at the edge."""
    if not isinstance(execution, Execution):
        raise InvalidArgumentError("receipt() takes the Execution a completion returned")
    if execution.status != "completed" or execution.result_hash is None:
        raise NotCompletedError(f"{execution.id} is {execution.status}, not completed")
    assert execution.completed_at_ms is not None
    ttl_ms = validation.seconds_to_ms("ttl_seconds", ttl_seconds, 1, validation.MAX_RETENTION_MS)
    claims = ReceiptClaims(
        operation_id=execution.id,
        idempotency_key=execution.idempotency_key,
        result_hash=execution.result_hash,
        epoch=execution.epoch,
        expires_at_ms=execution.completed_at_ms + ttl_ms,
    )
    return sign_receipt(claims, key, now_ms=now_ms)


def _outcome_name(decision: Decision) -> str:
    protocol.raise_for(decision)
    return decision.outcome.value
