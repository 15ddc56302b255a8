"""The client calls, transport-free: each builds a request and its interpreter.

The async and the sync client differ only in how they wait for the decision,
so both wrap this one object.
"""

from __future__ import annotations

import os
import socket
import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, TypeVar

from oncelog.errors import InvalidArgumentError
from oncelog.identity import ids, validation
from oncelog.producer import protocol
from oncelog.producer.protocol import Route
from oncelog.producer.results import Claim, Execution, Heartbeat
from oncelog.receipts import NotCompletedError, ReceiptClaims, sign_receipt
from oncelog.schemas.models import Decision, Outcome, Request

T = TypeVar("T")
Call = tuple[Request, Callable[[Decision], T]]
_ROUTES_KEPT: Final = 100_000
RECEIPT_TTL_S: Final = 30 * 24 * 3600


def default_worker_id() -> str:
    """host:pid:random — unique per client instance."""
    return f"{socket.gethostname()}:{os.getpid()}:{protocol.new_claim_token()[:6]}"


class Calls:
    """Validated request builders plus a bounded map from execution id to route."""

    def __init__(self, worker_id: str | None = None) -> None:
        self.worker_id = validation.validate_id("worker_id", worker_id or default_worker_id())
        self._routes: OrderedDict[str, Route] = OrderedDict()
        self._lock = threading.Lock()

    def _remember(self, op: str, route: Route) -> None:
        with self._lock:
            self._routes[op] = route
            self._routes.move_to_end(op)
            while len(self._routes) > _ROUTES_KEPT:
                self._routes.popitem(last=False)

    def route(
        self, execution: str | Execution, channel_id: str | None, key_name: str | None
    ) -> Route:
        """Where ``execution``'s records go; the caller names it when this client never saw it."""
        if isinstance(execution, Execution):
            return Route(execution.channel_id, execution.key_name)
        if channel_id is not None and key_name is not None:
            route = Route(channel_id, key_name)
            if ids.operation_id(channel_id, key_name) != execution:
                raise InvalidArgumentError(f"{channel_id}/{key_name} is not execution {execution}")
            return route
        with self._lock:
            known = self._routes.get(execution) if isinstance(execution, str) else None
        if known is None:
            raise InvalidArgumentError(
                f"unknown execution {execution!r}: pass the Execution, or channel_id and key_name"
            )
        return known

    def claim(
        self,
        channel_id: str,
        key_name: str | None,
        step: int | None,
        *,
        tool_name: str,
        params: Mapping[str, Any],
        dedup_fields: Sequence[str] | None,
        lease_seconds: float,
        retention_seconds: float,
        effect: str,
    ) -> Call[Claim]:
        """A new claim attempt with a fresh token."""
        if (key_name is None) == (step is None):
            raise InvalidArgumentError("give exactly one of key_name and step")
        name = ids.step_key_name(step) if step is not None else key_name
        assert name is not None
        route = Route(
            validation.validate_id("channel_id", channel_id),
            validation.validate_id("key_name", name),
        )
        request = protocol.build_claim(
            route, tool_name=tool_name, params=params, dedup_fields=dedup_fields,
            lease_seconds=lease_seconds, retention_seconds=retention_seconds, effect=effect,
            worker_id=self.worker_id,
        )  # fmt: skip
        self._remember(request.operation_id, route)
        token = request.claim_token
        assert token is not None
        return request, lambda d: protocol.claim_result(d, token)

    def complete(self, route: Route, claim_token: str, result: Any) -> Call[Execution]:
        """Record ``result``; a retry of the same completion is a no-op."""
        request = protocol.build_complete(route, claim_token, result)
        return request, lambda d: protocol.state_result(d, Outcome.COMPLETED)

    def fail(self, route: Route, claim_token: str, error: str, retryable: bool) -> Call[Execution]:
        """Record a failure."""
        request = protocol.build_fail(route, claim_token, error, retryable)
        return request, lambda d: protocol.state_result(d, Outcome.FAILED)

    def heartbeat(
        self, route: Route, claim_token: str, lease_seconds: float | None
    ) -> Call[Heartbeat]:
        """Extend the lease; learn about a pending cancel."""
        return protocol.build_heartbeat(
            route, claim_token, lease_seconds
        ), protocol.heartbeat_result

    def release(self, route: Route, claim_token: str) -> Call[Execution]:
        """Give the lease back."""
        request = protocol.build_release(route, claim_token)
        return request, lambda d: protocol.state_result(d, Outcome.RELEASED)

    def get(self, route: Route) -> Call[Execution | None]:
        """Read the state through the log (it reflects every request sent before)."""
        return protocol.build_get(route), protocol.get_result

    def cancel(self, route: Route, reason: str | None) -> Call[str]:
        """Ask the holder to stop; the answer names the outcome (or the state)."""
        return protocol.build_cancel(route, reason), _outcome_name


def receipt(execution: Execution, key: bytes, ttl_seconds: float, now_ms: int) -> str:
    """A signed receipt of a completed execution (spec section 7), computed at the edge."""
    if not isinstance(execution, Execution):
        raise InvalidArgumentError("receipt() takes the Execution a completion returned")
    if execution.status != "completed" or execution.result_hash is None:
        raise NotCompletedError(f"{execution.id} is {execution.status}, not completed")
    assert execution.completed_at_ms is not None
    ttl_ms = protocol.seconds_to_ms("ttl_seconds", ttl_seconds)
    if ttl_ms <= 0:
        raise InvalidArgumentError(f"ttl_seconds must be positive, got {ttl_seconds!r}")
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
