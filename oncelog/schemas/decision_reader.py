"""A hand-written reader of ``Decision`` bodies written with the current schema.

Every client decodes the decisions answering its requests on its listener
thread; fastavro's ``schemaless_reader`` took ~40 us of a decision's ~48 us
(plus ``convert``), about a sixth of the client's CPU per cycle. This module
reads the layout of ``record_writer.DECISION_CANONICAL_FORM`` directly.

Like :mod:`oncelog.schemas.request_reader` it is an accelerator, not a second
source of truth: :func:`read_decision` returns ``None`` for anything it is not
sure about, and the codec then takes the fastavro path with its exact verdict.
``tests/schemas/test_decision_reader.py`` checks it against fastavro on valid
and corrupted records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, TypeVar

from oncelog.schemas import models
from oncelog.schemas.request_reader import (
    HEADER_LEN,
    UnsureError,
    read_long,
    read_optional,
    read_optional_text,
    read_raw,
    read_text,
)

T = TypeVar("T")
Reader = Callable[[bytes, int], tuple[T, int]]

_KINDS: Final = tuple(models.Kind)
_OUTCOMES: Final = tuple(models.Outcome)
_STATUSES: Final = tuple(models.Status)
_EFFECTS: Final = tuple(models.Effect)
_INT_MIN: Final = -(1 << 31)
_INT_MAX: Final = (1 << 31) - 1


def _enum(symbols: tuple[T, ...], data: bytes, pos: int) -> tuple[T, int]:
    index, pos = read_long(data, pos)
    if not 0 <= index < len(symbols):
        raise UnsureError
    return symbols[index], pos


def _bool(data: bytes, pos: int) -> tuple[bool, int]:
    b = data[pos]
    if b > 1:
        raise UnsureError
    return b == 1, pos + 1


def _optional_long(data: bytes, pos: int) -> tuple[int | None, int]:
    return read_optional(read_long, data, pos)


def _optional_raw(data: bytes, pos: int) -> tuple[bytes | None, int]:
    return read_optional(read_raw, data, pos)


def _previous(data: bytes, pos: int) -> tuple[models.PreviousAttempt | None, int]:
    return read_optional(_attempt, data, pos)


def _attempt(data: bytes, pos: int) -> tuple[models.PreviousAttempt, int]:
    epoch, pos = read_long(data, pos)
    token_fp, pos = read_text(data, pos)
    worker_id, pos = read_text(data, pos)
    claimed_at_ms, pos = read_long(data, pos)
    last_heartbeat_ms, pos = _optional_long(data, pos)
    status, pos = _enum(_STATUSES, data, pos)
    error, pos = read_optional_text(data, pos)
    fields = (epoch, token_fp, worker_id, claimed_at_ms, last_heartbeat_ms, status, error)
    return models.PreviousAttempt._make(fields), pos


def _recent_item(data: bytes, pos: int) -> tuple[models.RecentRequest, int]:
    request_id, pos = read_text(data, pos)
    outcome, pos = _enum(_OUTCOMES, data, pos)
    epoch, pos = read_long(data, pos)
    token_fp, pos = read_text(data, pos)
    payload_fp, pos = read_text(data, pos)
    log_time_ms, pos = read_long(data, pos)
    fields = (request_id, outcome, epoch, token_fp, payload_fp, log_time_ms)
    return models.RecentRequest._make(fields), pos


def _recent(data: bytes, pos: int) -> tuple[tuple[models.RecentRequest, ...], int]:
    items: list[models.RecentRequest] = []
    while True:
        count, pos = read_long(data, pos)
        if count == 0:
            return tuple(items), pos
        if count < 0:  # a block with a byte size: legal, rare, left to fastavro
            raise UnsureError
        for _ in range(count):
            item, pos = _recent_item(data, pos)
            items.append(item)


def _state(data: bytes, pos: int) -> tuple[models.ExecutionState, int]:
    values: list[object] = []
    add = values.append
    for read in _STATE_FIELDS:
        value, pos = read(data, pos)
        add(value)
    return models.ExecutionState._make(values), pos


def _status(data: bytes, pos: int) -> tuple[models.Status, int]:
    return _enum(_STATUSES, data, pos)


def _effect(data: bytes, pos: int) -> tuple[models.Effect, int]:
    return _enum(_EFFECTS, data, pos)


# The ExecutionState fields in schema order, which is also the NamedTuple's order.
_STATE_FIELDS: Final = (
    read_text, read_text, read_text, _status,  # operation_id, channel_id, key_name, status
    read_long, read_long, read_text, read_text,  # version, epoch, request_hash, tool_name
    read_raw, _effect, read_long, read_long,  # params, effect, lease_ms, retention_ms
    read_text, read_text, read_long, read_long,  # token_fp, worker_id, claimed_at, deadline
    _optional_long, _bool, read_optional_text,  # last_heartbeat_ms, cancel_requested, reason
    _optional_raw, read_optional_text, _optional_long,  # result, result_hash, completed_at
    _optional_long, read_optional_text, _bool,  # expires_at_ms, error, retryable
    _previous, _recent, read_long,  # previous, recent, updated_at_ms
)  # fmt: skip


def _read(data: bytes) -> models.Decision:
    request_id, pos = read_text(data, HEADER_LEN)
    operation_id, pos = read_text(data, pos)
    kind, pos = _enum(_KINDS, data, pos)
    state, pos = read_optional(_state, data, pos)
    outcome, pos = _enum(_OUTCOMES, data, pos)
    changed, pos = _bool(data, pos)
    retried, pos = _bool(data, pos)
    _, pos = read_long(data, pos)  # version: derived from the state
    epoch, pos = _optional_long(data, pos)
    stored_hash, pos = read_optional_text(data, pos)
    request_hash, pos = read_optional_text(data, pos)
    result, pos = _optional_raw(data, pos)
    error, pos = read_optional_text(data, pos)
    _, pos = read_optional_text(data, pos)  # holder_worker_id: derived
    _, pos = _optional_long(data, pos)  # lease_deadline_ms: derived
    _, pos = _bool(data, pos)  # cancel_requested: derived
    suspected, pos = _bool(data, pos)
    previous, pos = _previous(data, pos)
    source_partition, pos = read_long(data, pos)
    if not _INT_MIN <= source_partition <= _INT_MAX:
        raise UnsureError
    source_offset, pos = read_long(data, pos)
    log_time_ms, pos = read_long(data, pos)
    if pos != len(data):
        raise UnsureError
    fields = (
        request_id, operation_id, kind, outcome, changed, log_time_ms, state, epoch, retried,
        stored_hash, request_hash, result, error, suspected, previous, source_partition,
        source_offset,
    )  # fmt: skip
    return models.Decision._make(fields)


def read_decision(data: bytes) -> models.Decision | None:
    """The decision in ``data`` (header included, not checked), or ``None`` if unsure.

    The caller has matched the magic and the fingerprint of the current schema.
    """
    try:
        return _read(data)
    except Exception:  # IndexError at a truncation, UnicodeDecodeError, UnsureError, ...
        return None
