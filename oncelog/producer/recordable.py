"""Whether the ledger can record a tool's result, and what it records when it cannot.

A result is recorded as canonical JSON of at most 1 MiB (``validate_result``). A tool that
returned something else has already had its effect, so the executor's plan never leaves
such a step ``claimed`` (a retry would run the tool again): it records a failure for good
whose text is :meth:`Unrecordable.recorded_text` (docs/spec.md §5):

    result_unrecordable: <reason> (the tool ran; <type> result not recorded,
    sha256 of its <canonical JSON|repr>: <hex>)

The digest is of what could be read: the canonical JSON bytes when the result has them (it
is only too large), else the UTF-8 of its ``repr()``. It lets an operator match the recorded
failure to the value in the tool's own logs; it is not an identity.

:func:`jsonable` is the ready ``result_encoder``: pydantic's JSON mode, which turns datetimes,
dates, decimals, UUIDs, enums, sets, dataclasses and pydantic models into JSON data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

from pydantic_core import PydanticSerializationError, to_jsonable_python

from oncelog.errors import InvalidArgumentError, ResultUnrecordableError
from oncelog.identity import validation
from oncelog.identity.canonical_json import canonical_json, sha256_hex

_MAX_REASON_CHARS: Final = 1000

__all__ = [
    "Unrecordable",
    "UnrecordableAnswerError",
    "jsonable",
    "recording",
    "refusal",
    "unrecordable",
]


def jsonable(value: Any) -> Any:
    """``value`` as JSON data (pydantic's JSON mode): pass it as ``result_encoder=``.

    Datetimes become ISO 8601 strings, decimals strings, models and dataclasses objects. A
    value pydantic cannot convert raises :class:`~oncelog.errors.InvalidArgumentError`.
    """
    try:
        return to_jsonable_python(value)
    except PydanticSerializationError as exc:
        raise InvalidArgumentError(f"{type(value).__name__} has no JSON form: {exc}") from exc


@dataclass(frozen=True, slots=True)
class Unrecordable:
    """Why a result cannot be recorded, and the digest of what could be read of it."""

    reason: str
    type_name: str
    digest: str
    digest_of: str  # "canonical JSON" or "repr"

    def recorded_text(self) -> str:
        """The failure's text on the log: the stable code first (docs/spec.md §5)."""
        return (
            f"{ResultUnrecordableError.PREFIX}{self.reason} (the tool ran; {self.type_name} "
            f"result not recorded, sha256 of its {self.digest_of}: {self.digest})"
        )

    def error(self, execution_id: str, recorded: str | None) -> ResultUnrecordableError:
        """The caller's error: the effect ran, and what was recorded (``recorded`` is why the
        failure could not be recorded either, or None once it was)."""
        if recorded is None:
            outcome = (
                "recorded the operation as failed for good with code result_unrecordable and "
                "this digest: a retry answers this error and never runs the tool again"
            )
        else:
            outcome = (
                f"and recording that failed too ({recorded}): the step stays claimed until "
                "its lease lapses, and the next claim reconciles with this attempt"
            )
        return ResultUnrecordableError(
            f"execution {execution_id}: the tool ran (its effect happened) but its result "
            f"cannot be recorded: {self.reason}. The ledger {outcome} "
            f"(sha256 of its {self.digest_of}: {self.digest}). Make the result JSON, e.g. with "
            "result_encoder=oncelog.jsonable (datetimes, decimals, models), and keep it under "
            "1 MiB (store a large one elsewhere and return its reference)"
        )


class UnrecordableAnswerError(Exception):
    """Raised inside a tool run by :func:`recording` (an adapter's result shape) when the
    answer has no JSON form: the plan records ``result_unrecordable``, for the effect ran.

    ``reconciled_as`` is ``"found"`` when the answer was the reconcile hook's.
    """

    def __init__(self, refused: Unrecordable) -> None:
        super().__init__(refused.reason)
        self.refused = refused
        self.reconciled_as: Literal["found"] | None = None


def recording(record: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """``record`` (an answer into the JSON to record), failing as
    :class:`UnrecordableAnswerError`."""

    def recorded(value: Any) -> Any:
        try:
            return record(value)
        except Exception as exc:  # the framework's own conversion: any failure is a reason
            raise UnrecordableAnswerError(refusal(value, f"{type(exc).__name__}: {exc}")) from exc

    return recorded


def unrecordable(value: Any) -> Unrecordable | None:
    """Why ``value`` cannot be recorded as a result, or None when it can."""
    try:
        validation.validate_result(value)
        return None
    except InvalidArgumentError as exc:
        return refusal(value, exc.message)


def refusal(value: Any, reason: str) -> Unrecordable:
    """``value`` refused for ``reason``, with the digest of what could be read of it."""
    digest, digest_of = _digest(value)
    return Unrecordable(reason[:_MAX_REASON_CHARS], type(value).__name__, digest, digest_of)


def _digest(value: Any) -> tuple[str, str]:
    try:
        return sha256_hex(canonical_json(value)), "canonical JSON"
    except InvalidArgumentError:
        pass
    try:
        text = repr(value)
    except Exception:  # a broken __repr__: the type is all that can be read
        text = f"<{type(value).__qualname__}>"
    return sha256_hex(text.encode("utf-8", "backslashreplace")), "repr"
