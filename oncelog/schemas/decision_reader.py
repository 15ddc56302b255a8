"""A hand-written reader of ``Decision`` bodies written with the current schema.

Every client decodes the decisions answering its requests on its listener
thread; fastavro's ``schemaless_reader`` took ~40 us of a decision's ~48 us
(plus ``convert``), about a sixth of the client's CPU per cycle. This module
reads the layout of ``record_writer.DECISION_CANONICAL_FORM`` directly, as one
straight-line function generated from the layout below by
:mod:`oncelog.schemas.inline_reader` (a function per field cost a third more).

Like :mod:`oncelog.schemas.request_reader` it is an accelerator, not a second
source of truth: :func:`read_decision` returns ``None`` for anything it is not
sure about, and the codec then takes the fastavro path with its exact verdict.
``tests/schemas/test_decision_reader.py`` checks it against fastavro on valid
and corrupted records.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from oncelog.schemas import models
from oncelog.schemas.inline_reader import (
    BOOL,
    LONG,
    RAW,
    TEXT,
    array,
    compile_reader,
    enum,
    optional,
    record,
)
from oncelog.schemas.request_reader import HEADER_LEN

_INT_MIN: Final = -(1 << 31)
_INT_MAX: Final = (1 << 31) - 1

_STATUS: Final = enum("STATUSES", len(models.Status))
_OUTCOME: Final = enum("OUTCOMES", len(models.Outcome))

_PREVIOUS: Final = optional(
    record(
        "PreviousAttempt",
        # epoch, token_fp, worker_id, claimed_at_ms, last_heartbeat_ms, status, error
        [LONG, TEXT, TEXT, LONG, optional(LONG), _STATUS, optional(TEXT)],
    )
)

# request_id, outcome, epoch, token_fp, payload_fp, log_time_ms
_RECENT_ITEM: Final = record("RecentRequest", [TEXT, _OUTCOME, LONG, TEXT, TEXT, LONG])

# The ExecutionState fields in schema order, which is also the NamedTuple's order.
_STATE: Final = record(
    "ExecutionState",
    [
        TEXT, TEXT, TEXT, _STATUS,  # operation_id, channel_id, key_name, status
        LONG, LONG, TEXT, TEXT,  # version, epoch, request_hash, tool_name
        RAW, enum("EFFECTS", len(models.Effect)), LONG, LONG,  # params, effect, lease, retention
        TEXT, TEXT, LONG, LONG,  # token_fp, worker_id, claimed_at_ms, lease_deadline_ms
        optional(LONG), BOOL, optional(TEXT),  # last_heartbeat_ms, cancel_requested, reason
        optional(RAW), optional(TEXT), optional(LONG),  # result, result_hash, completed_at_ms
        optional(LONG), optional(TEXT), BOOL,  # expires_at_ms, error, retryable
        _PREVIOUS, array(_RECENT_ITEM), LONG,  # previous, recent, updated_at_ms
    ],
)  # fmt: skip

# The Decision record in schema order; "_" for the flat fields the model derives
# from the state (read, so that the bytes are checked, and dropped).
_DECISION: Final = (
    ("request_id", TEXT), ("operation_id", TEXT), ("kind", enum("KINDS", len(models.Kind))),
    ("state", optional(_STATE)), ("outcome", _OUTCOME), ("changed", BOOL), ("retried", BOOL),
    ("_", LONG),  # version
    ("epoch", optional(LONG)), ("stored_hash", optional(TEXT)),
    ("request_hash", optional(TEXT)), ("result", optional(RAW)), ("error", optional(TEXT)),
    ("_", optional(TEXT)), ("_", optional(LONG)), ("_", BOOL),  # holder, deadline, cancel
    ("suspected", BOOL), ("previous", _PREVIOUS), ("source_partition", LONG),
    ("source_offset", LONG), ("log_time_ms", LONG),
)  # fmt: skip

_FINISH: Final = (
    "if pos != size or not INT_MIN <= source_partition <= INT_MAX:",
    "    raise UnsureError",
    "return new(Decision, (request_id, operation_id, kind, outcome, changed, log_time_ms,"
    " state, epoch, retried, stored_hash, request_hash, result, error, suspected, previous,"
    " source_partition, source_offset))",
)

_read: Final[Callable[[bytes, int], models.Decision]] = compile_reader(
    "read_decision_body", _DECISION, _FINISH,
    {
        "STATUSES": tuple(models.Status), "OUTCOMES": tuple(models.Outcome),
        "KINDS": tuple(models.Kind), "EFFECTS": tuple(models.Effect),
        "PreviousAttempt": models.PreviousAttempt, "RecentRequest": models.RecentRequest,
        "ExecutionState": models.ExecutionState, "Decision": models.Decision,
        "INT_MIN": _INT_MIN, "INT_MAX": _INT_MAX,
    },
)  # fmt: skip


def read_decision(data: bytes) -> models.Decision | None:
    """The decision in ``data`` (header included, not checked), or ``None`` if unsure.

    The caller has matched the magic and the fingerprint of the current schema.
    """
    try:
        return _read(data, HEADER_LEN)
    except Exception:  # IndexError at a truncation, UnicodeDecodeError, UnsureError, ...
        return None
