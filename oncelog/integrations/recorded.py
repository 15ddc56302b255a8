"""What the ledger records of a tool call, and how a replay reads it back.

The ledger records JSON. An adapter whose framework has a result type of its own (MCP's
``CallToolResult``) gives :class:`ResultShape`: ``record`` turns whatever the tool or the
reconcile hook answered (a framework object, or any JSON value) into the JSON to record, and
``read`` turns the recorded JSON back into what the framework expects. A record that ``read``
cannot take is a :class:`RecordedResultError` naming the operation, not a foreign exception.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_core import PydanticSerializationError, to_jsonable_python

from oncelog.errors import InvalidArgumentError, LedgerError
from oncelog.producer.recordable import recording

__all__ = ["JSON_SHAPE", "RecordedResultError", "ResultShape", "as_json"]


class RecordedResultError(LedgerError, code="recorded_result_invalid", http_status=409):
    """A call's recorded result does not read back as the framework's result type.

    The record stays as it is (the ledger never rewrites a completion); the message names the
    operation to inspect (``oncelog status``), and the call needs another key to run again.
    """


def as_json(value: Any) -> Any:
    """``value`` as JSON data (pydantic models, dataclasses, tuples converted)."""
    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise InvalidArgumentError(
            f"{type(value).__name__} is not JSON data, so the ledger cannot record it"
        ) from exc


def _as_recorded(value: Any) -> Any:
    return value


_RECORD_JSON = recording(as_json)


@dataclass(frozen=True, slots=True)
class ResultShape:
    """How one framework's results are recorded (``record``) and replayed (``read``).

    ``record`` runs after the tool's effect (or on the reconcile hook's answer): wrap it in
    :func:`~oncelog.producer.recordable.recording`, so that an answer it cannot convert is
    recorded as ``result_unrecordable`` and never runs the tool again.
    """

    record: Callable[[Any], Any] = _RECORD_JSON
    read: Callable[[Any], Any] = _as_recorded


JSON_SHAPE = ResultShape()
"""Results recorded as JSON and returned as the recorded JSON value."""


def read_recorded(shape: ResultShape, value: Any, where: str) -> Any:
    """``shape.read(value)``, or a :class:`RecordedResultError` naming ``where``."""
    try:
        return shape.read(value)
    except LedgerError:
        raise
    except Exception as exc:  # a framework's validation error, whatever its class
        raise RecordedResultError(
            f"{where}: the recorded result does not read back as this framework's result "
            f"({type(exc).__name__}: {str(exc)[:300]}). The record is kept: inspect it with "
            "`oncelog status`, and give the call another key (ToolPolicy(key=...)) or the "
            "run another channel to run it again"
        ) from exc
