"""The row tuples of the projection's tables, column for column (:mod:`.tables`).

One definition for both writers: the live store builds rows out of its batch's audit
entries and snapshots, the bulk rebuild out of the values it folds, and the two must be
equal (``tests/integration/test_bulk_rebuild.py`` compares every table); a state version
reaches both as the :class:`ExecutionSnapshot` the executions topic carries. Enum members
go to Arrow as they are: a StrEnum is a str holding its value.

The builders are generated at import from the columns' ``source`` expressions, so a
column added to a layout (a new optional field, say) is filled without a line here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from oncelog.identity.tokens import token_fingerprint
from oncelog.projector.tables import EXECUTIONS, HISTORY, REQUESTS, Column
from oncelog.schemas.models import Claim, Decision, ExecutionSnapshot, Request

Row = tuple[Any, ...]


def row_builder(
    name: str, params: str, columns: tuple[Column, ...], prelude: str = ""
) -> Callable[..., Row]:
    """``def name(params)`` returning the tuple of the columns' ``source`` expressions."""
    lines = [f"def {name}({params}):"]
    if prelude:
        lines.append(f"    {prelude}")
    lines.append(f"    return ({''.join(f'{c.source}, ' for c in columns)})")
    scope: dict[str, Any] = {}
    exec(compile("\n".join(lines), f"<oncelog.projector.rows:{name}>", "exec"), scope)
    builder: Callable[..., Row] = scope[name]
    return builder


_AUDIT_PARAMS: Final = "partition, offset, log_time_ms, request, decision, worker, effect, token_fp"
_AUDIT: Final = row_builder("audit_row", _AUDIT_PARAMS, REQUESTS)
_HISTORY: Final = row_builder("history_row", "snap, blob", HISTORY, "state = snap.state")
_EXECUTION: Final = row_builder("execution_row", "snap", EXECUTIONS, "state = snap.state")


def audit_row(
    partition: int, offset: int, log_time_ms: int, request: Request, decision: Decision
) -> Row:
    """A ``requests`` row: one folded request and its answer."""
    body, state = request.body, decision.state
    # The claim names its worker and effect; other kinds report the state's holder.
    if type(body) is Claim:
        worker, effect = body.worker_id, body.effect
    elif state is not None:
        worker, effect = state.worker_id, state.effect
    else:
        worker, effect = None, None
    token_fp = token_fingerprint(request.claim_token) or None  # the token stays on the log
    return _AUDIT(partition, offset, log_time_ms, request, decision, worker, effect, token_fp)


def history_row(snap: ExecutionSnapshot, blob: bytes) -> Row:
    """A ``history`` row: one state version, what made it, and its state blob."""
    return _HISTORY(snap, blob)


def execution_row(snap: ExecutionSnapshot) -> Row:
    """An ``executions`` row: the current version, narrow."""
    return _EXECUTION(snap)
