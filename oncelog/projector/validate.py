"""Refuse requests that decode but could never have come from the SDK.

A record that fails here goes to the dead-letter topic; the fold never sees it.
The checks mirror the SDK's argument validation, so only a foreign or buggy
writer can trip them.
"""

from __future__ import annotations

import functools
import re
from typing import Final

from oncelog.errors import InvalidArgumentError, InvalidRequestError
from oncelog.producer import keys
from oncelog.producer.partitioner import partition_for
from oncelog.schemas.models import Cancel, Claim, Complete, Get, Heartbeat, Request, Sweep

_HEX64: Final = re.compile(r"[0-9a-f]{64}")
_MAX_TOKEN: Final = 256


def check_request(request: Request, key: bytes | None, partition: int, partitions: int) -> None:
    """Raise :class:`InvalidRequestError` naming what is wrong with ``request``."""
    try:
        _check(request, key, partition, partitions)
    except InvalidArgumentError as exc:
        raise InvalidRequestError(
            f"request {request.request_id} for operation {request.operation_id}: {exc.message}"
        ) from exc


def _check(request: Request, key: bytes | None, partition: int, partitions: int) -> None:
    keys.validate_id("request_id", request.request_id)
    expected, home = _identity(request.channel_id, request.key_name, partitions)
    if request.operation_id != expected:
        raise InvalidArgumentError(f"operation_id does not match its channel/key (want {expected})")
    if key != request.operation_id.encode():
        raise InvalidArgumentError("the record key is not the operation_id")
    if partition != home:
        raise InvalidArgumentError(f"written to partition {partition}, its channel lives on {home}")
    body = request.body
    token = request.claim_token
    needs_token = not isinstance(body, Sweep | Cancel | Get)
    if needs_token and (not token or len(token) > _MAX_TOKEN):
        raise InvalidArgumentError("claim_token is missing or longer than 256 characters")
    if isinstance(body, Claim):
        _check_claim(body)
    elif isinstance(body, Heartbeat) and body.lease_ms is not None:
        keys.validate_lease_ms(body.lease_ms)
    elif isinstance(body, Complete) and len(body.result) > keys.MAX_JSON_BYTES:
        raise InvalidArgumentError(f"result is {len(body.result)} bytes, at most 1 MiB")


@functools.lru_cache(maxsize=1 << 14)
def _identity(channel_id: str, key_name: str, partitions: int) -> tuple[str, int]:
    """The operation id of (channel, key) and the channel's partition, memoized.

    Every record of an operation repeats its pair, and the UUIDv5 plus murmur2
    behind it cost more than decoding the record. Invalid pairs raise, and
    ``lru_cache`` does not keep exceptions, so they are judged again each time.
    """
    return keys.operation_id(channel_id, key_name), partition_for(channel_id, partitions)


def _check_claim(body: Claim) -> None:
    keys.validate_id("tool_name", body.tool_name)
    keys.validate_id("worker_id", body.worker_id)
    keys.validate_lease_ms(body.lease_ms)
    keys.validate_retention_ms(body.retention_ms)
    if len(body.params) > keys.MAX_JSON_BYTES:
        raise InvalidArgumentError(f"params are {len(body.params)} bytes, at most 1 MiB")
    if not _HEX64.fullmatch(body.request_hash):
        raise InvalidArgumentError("request_hash is not a lower-case SHA-256 hex digest")
