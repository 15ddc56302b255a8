"""Refuse requests that decode but could never have come from the SDK.

A record that fails here goes to the dead-letter topic; the fold never sees it.
The checks mirror the SDK's argument validation, so only a foreign or buggy
writer can trip them.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Final

from oncelog.errors import InvalidArgumentError, InvalidRequestError
from oncelog.identity import ids, validation
from oncelog.identity.partitioner import cached_partition_for
from oncelog.schemas.models import (
    Approve,
    ApproverKey,
    Cancel,
    Claim,
    Complete,
    Deny,
    Fail,
    Get,
    Heartbeat,
    Inherit,
    Request,
    Sweep,
)

_HEX64: Final = re.compile(r"[0-9a-f]{64}")
# Kinds as tuples built once: ``A | B`` in an isinstance builds a union on every call.
_TOKENLESS: Final = (Sweep, Cancel, Get, Inherit, Approve, Deny)
_DECISIONS: Final = (Approve, Deny)
_OUTCOMES: Final = (Complete, Fail)
_MAX_TOKEN: Final = 256
RECONCILED: Final = frozenset({"found", "not_found"})
MAX_APPROVERS: Final = 64
"""The most approvers one policy may list."""
_KEY_BYTES: Final = 32
_SIGNATURE_BYTES: Final = 64
"""The values of a completion's or failure's ``reconciled``."""

# The identity checks are pure functions of their arguments and cost a SHA-256, a UUIDv5
# and a murmur2 in Python per request: most requests (completions, heartbeats, other
# steps of a channel) repeat a recent pair, so recent answers are kept (the partition's
# in identity.partitioner). Failures raise and are never cached. The memo is sized to
# the operations in flight, not to the history, which it would only grow with.
_operation_id = lru_cache(maxsize=4096)(ids.operation_id)


def check_request(request: Request, key: bytes | None, partition: int, partitions: int) -> None:
    """Raise :class:`InvalidRequestError` naming what is wrong with ``request``."""
    try:
        _check(request, key, partition, partitions)
    except InvalidArgumentError as exc:
        raise InvalidRequestError(
            f"request {request.request_id} for operation {request.operation_id}: {exc.message}"
        ) from exc


def _check(request: Request, key: bytes | None, partition: int, partitions: int) -> None:
    validation.validate_unique_id("request_id", request.request_id)
    expected = _operation_id(request.channel_id, request.key_name)
    if request.operation_id != expected:
        raise InvalidArgumentError(f"operation_id does not match its channel/key (want {expected})")
    if key != request.operation_id.encode():
        raise InvalidArgumentError("the record key is not the operation_id")
    home = cached_partition_for(request.channel_id, partitions)
    if partition != home:
        raise InvalidArgumentError(f"written to partition {partition}, its channel lives on {home}")
    body = request.body
    token = request.claim_token
    needs_token = not isinstance(body, _TOKENLESS)
    if needs_token and (not token or len(token) > _MAX_TOKEN):
        raise InvalidArgumentError("claim_token is missing or longer than 256 characters")
    if isinstance(body, Claim):
        _check_claim(body)
    elif isinstance(body, Heartbeat) and body.lease_ms is not None:
        validation.validate_lease_ms(body.lease_ms)
    elif isinstance(body, Complete) and len(body.result) > validation.MAX_JSON_BYTES:
        raise InvalidArgumentError(f"result is {len(body.result)} bytes, at most 1 MiB")
    elif isinstance(body, Inherit):
        _check_inherit(request, body)
    elif isinstance(body, _DECISIONS):
        _check_decision(request, body)
    if request.approval is not None:
        _check_approval_policy(request)
    if request.reconciled is not None:
        _check_reconciled(request)


def _check_reconciled(request: Request) -> None:
    if not isinstance(request.body, _OUTCOMES):
        raise InvalidArgumentError(
            f"reconciled is set on a {request.kind}: only on complete or fail"
        )
    if request.reconciled not in RECONCILED:
        raise InvalidArgumentError(f"reconciled is {request.reconciled!r}: 'found' or 'not_found'")


def _check_decision(request: Request, body: Approve | Deny) -> None:
    if request.claim_token is not None:  # an approver is a principal, not an attempt
        raise InvalidArgumentError(f"a{'n approve' if isinstance(body, Approve) else ' deny'} "
                                   "carries no claim_token")  # fmt: skip
    validation.validate_id("approver", body.approver)
    if not _HEX64.fullmatch(body.request_hash):
        raise InvalidArgumentError("request_hash is not a lower-case SHA-256 hex digest")
    if isinstance(body, Deny) and len(body.reason.encode()) > validation.MAX_JSON_BYTES:
        raise InvalidArgumentError("reason is over 1 MiB")
    if body.signature is not None and len(body.signature) != _SIGNATURE_BYTES:
        raise InvalidArgumentError(f"signature is {len(body.signature)} bytes: Ed25519's is 64")


def _check_approval_policy(request: Request) -> None:
    policy = request.approval
    if not isinstance(request.body, Claim):
        raise InvalidArgumentError(f"approval is set on a {request.kind}: only on a claim")
    if policy is not None and not 0 < policy.timeout_ms <= validation.MAX_RETENTION_MS:
        raise InvalidArgumentError(f"approval timeout_ms is {policy.timeout_ms}: 1 ms to 100 years")
    if policy is not None and policy.approvers:
        _check_approvers(policy.approvers)


def _check_approvers(approvers: tuple[ApproverKey, ...]) -> None:
    if len(approvers) > MAX_APPROVERS:
        raise InvalidArgumentError(f"{len(approvers)} approvers: at most {MAX_APPROVERS}")
    for approver in approvers:
        validation.validate_id("approver", approver.name)
        if len(approver.public_key) != _KEY_BYTES:
            raise InvalidArgumentError(
                f"approver {approver.name!r}'s public key is {len(approver.public_key)} bytes: "
                "an Ed25519 key has 32"
            )
    if len({a.name for a in approvers}) != len(approvers):
        raise InvalidArgumentError("an approver is listed twice")


def _check_inherit(request: Request, body: Inherit) -> None:
    if request.claim_token is not None:  # nobody holds it: a token would only leak
        raise InvalidArgumentError("an inherit carries no claim_token")
    validation.validate_id("from_channel", body.from_channel)
    if body.from_channel == request.channel_id:
        raise InvalidArgumentError("an inherit names another channel than its own")
    if body.from_partition < 0 or body.from_offset < 0:
        raise InvalidArgumentError("from_partition and from_offset must not be negative")
    validation.validate_id("tool_name", body.tool_name)
    validation.validate_retention_ms(body.retention_ms)
    for name, blob in (("params", body.params), ("result", body.result)):
        if len(blob) > validation.MAX_JSON_BYTES:
            raise InvalidArgumentError(f"{name} are {len(blob)} bytes, at most 1 MiB")
    if not _HEX64.fullmatch(body.request_hash):
        raise InvalidArgumentError("request_hash is not a lower-case SHA-256 hex digest")


def _check_claim(body: Claim) -> None:
    validation.validate_id("tool_name", body.tool_name)
    validation.validate_id("worker_id", body.worker_id)
    validation.validate_lease_ms(body.lease_ms)
    validation.validate_retention_ms(body.retention_ms)
    if len(body.params) > validation.MAX_JSON_BYTES:
        raise InvalidArgumentError(f"params are {len(body.params)} bytes, at most 1 MiB")
    if not _HEX64.fullmatch(body.request_hash):
        raise InvalidArgumentError("request_hash is not a lower-case SHA-256 hex digest")
