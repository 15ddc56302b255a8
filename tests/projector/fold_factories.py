"""Pure factories of requests for the fold tests (no I/O, no clock)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from oncelog.identity.canonical_json import canonical_json
from oncelog.identity.ids import operation_id, request_hash
from oncelog.referee.fold import fold
from oncelog.schemas.models import (
    ApprovalPolicy,
    Approve,
    Body,
    Cancel,
    Claim,
    Complete,
    Decision,
    Deny,
    Effect,
    ExecutionState,
    Fail,
    Get,
    Heartbeat,
    Inherit,
    Release,
    Request,
    Sweep,
)

LEASE_MS = 10_000
RETENTION_MS = 60_000


@dataclass
class Op:
    """Builds requests for one operation; request ids are unique unless given."""

    channel_id: str = "run-42"
    key_name: str = "charge:order-4471"
    tool_name: str = "charge_customer"
    _ids: itertools.count[int] = field(default_factory=itertools.count)

    @property
    def operation_id(self) -> str:
        return operation_id(self.channel_id, self.key_name)

    def request(self, token: str | None, body: Body, rid: str | None = None) -> Request:
        return Request(
            request_id=rid or f"req-{next(self._ids)}",
            operation_id=self.operation_id,
            channel_id=self.channel_id,
            key_name=self.key_name,
            claim_token=token,
            body=body,
        )

    def claim(
        self,
        token: str,
        worker: str = "w1",
        params: dict[str, object] | None = None,
        dedup: list[str] | None = None,
        lease_ms: int = LEASE_MS,
        retention_ms: int = RETENTION_MS,
        rid: str | None = None,
    ) -> Request:
        params = {"order_id": "4471", "amount_cents": 4200} if params is None else params
        body = Claim(
            tool_name=self.tool_name,
            params=canonical_json(params),
            request_hash=request_hash(self.tool_name, params, dedup),
            lease_ms=lease_ms,
            retention_ms=retention_ms,
            effect=Effect.EXTERNAL,
            worker_id=worker,
        )
        return self.request(token, body, rid)

    def ask(self, token: str, worker: str = "w1", timeout_ms: int = 60_000, **kw: Any) -> Request:
        """A claim whose policy requires approval (``self_approval`` via ``kw``)."""
        self_approval = bool(kw.pop("self_approval", False))
        claim = self.claim(token, worker, **kw)
        return claim._replace(approval=ApprovalPolicy(timeout_ms, self_approval))

    def approve(
        self, approver: str = "ann", params: dict[str, object] | None = None, rid: str | None = None
    ) -> Request:
        params = {"order_id": "4471", "amount_cents": 4200} if params is None else params
        return self.request(None, Approve(approver, request_hash(self.tool_name, params)), rid)

    def deny(self, reason: str = "over the limit", approver: str = "ann") -> Request:
        params = {"order_id": "4471", "amount_cents": 4200}
        return self.request(None, Deny(approver, request_hash(self.tool_name, params), reason))

    def heartbeat(self, token: str, lease_ms: int | None = None, rid: str | None = None) -> Request:
        return self.request(token, Heartbeat(lease_ms), rid)

    def complete(self, token: str, result: object = "ok", rid: str | None = None) -> Request:
        return self.request(token, Complete(canonical_json(result)), rid)

    def fail(self, token: str, retryable: bool, rid: str | None = None) -> Request:
        return self.request(token, Fail("boom", retryable), rid)

    def release(self, token: str, rid: str | None = None) -> Request:
        return self.request(token, Release(), rid)

    def cancel(self, reason: str | None = "stop", rid: str | None = None) -> Request:
        return self.request(None, Cancel(reason), rid)

    def sweep(self, rid: str | None = None) -> Request:
        return self.request(None, Sweep(), rid)

    def get(self, rid: str | None = None) -> Request:
        return self.request(None, Get(), rid)

    def inherit(
        self,
        result: object = "ok",
        params: dict[str, object] | None = None,
        from_channel: str = "run-41",
        from_offset: int = 7,
        adopted: bool = False,
        rid: str | None = None,
    ) -> Request:
        """The fork's record of the same key completed on ``from_channel``."""
        params = {"order_id": "4471", "amount_cents": 4200} if params is None else params
        body = Inherit(
            from_channel=from_channel,
            from_partition=1,
            from_offset=from_offset,
            tool_name=self.tool_name,
            params=canonical_json(params),
            request_hash=request_hash(self.tool_name, params, None),
            effect=Effect.EXTERNAL,
            result=canonical_json(result),
            retention_ms=RETENTION_MS,
            adopted=adopted,
        )
        return self.request(None, body, rid)


def run(
    steps: list[tuple[Request, int]], state: ExecutionState | None = None
) -> tuple[ExecutionState | None, list[Decision]]:
    """Fold ``(request, log_time)`` steps in order; return the last state and all decisions."""
    decisions = []
    for request, t in steps:
        state, decision = fold(state, request, t)
        decisions.append(decision)
    return state, decisions


def given(steps: list[tuple[Request, int]]) -> ExecutionState:
    """The state after ``steps``; it must exist."""
    state, _ = run(steps)
    assert state is not None
    return state
