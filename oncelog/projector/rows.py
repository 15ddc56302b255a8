"""The row tuples of the projection's tables, column for column (:mod:`.tables`).

One definition for both writers: the live store builds rows out of its batch's audit
entries and snapshots, the bulk rebuild out of the values it folds, and the two must be
equal (``tests/integration/test_bulk_rebuild.py`` compares every table); a state version
reaches both as the :class:`ExecutionSnapshot` the executions topic carries. Enum members
go to Arrow as they are: a StrEnum is a str holding its value.

The builders are generated from the columns' ``source`` expressions into
:mod:`oncelog.projector.row_builders` (``python -m oncelog.projector.rows``), so a column
added to a layout (a new optional field, say) is filled without a line here; the file is
compiled by mypyc, as a row is built for every folded request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from oncelog.identity.tokens import token_fingerprint
from oncelog.projector.row_builders import audit_columns, execution_columns, history_columns
from oncelog.projector.tables import CHECKPOINTS, EXECUTIONS, HISTORY, REQUESTS, Column
from oncelog.schemas.failures import failure_code
from oncelog.schemas.models import (
    Claim,
    Decision,
    ExecutionSnapshot,
    ExecutionState,
    Fail,
    Outcome,
    Request,
)

Row = tuple[Any, ...]


_AUDIT_PARAMS: Final = (
    "partition, offset, log_time_ms, request, decision, "
    "epoch, worker, token_fp, effect, state_epoch, state_worker, previous, error_code"
)
BUILDERS: Final = (
    ("audit_columns", _AUDIT_PARAMS, REQUESTS, ""),
    ("history_columns", "snap, blob", HISTORY, "state = snap.state"),
    ("execution_columns", "snap", EXECUTIONS, "state = snap.state"),
    ("checkpoint_row", "partition, offset, key, ckpt", CHECKPOINTS, ""),
)
"""Each builder of :mod:`oncelog.projector.row_builders`: name, parameters, columns, prelude."""

GENERATED: Final = Path(__file__).with_name("row_builders.py")


def builder_source(name: str, params: str, columns: tuple[Column, ...], prelude: str) -> str:
    """``def name(params)`` returning the tuple of the columns' ``source`` expressions."""
    typed = ", ".join(f"{p.strip()}: Any" for p in params.split(","))
    lines = [f"def {name}({typed}) -> tuple[Any, ...]:"]
    if prelude:
        lines.append(f"    {prelude}")
    lines.append("    return (")
    lines.extend(f"        {c.source}," for c in columns)
    lines.append("    )")
    return "\n".join(lines)


def module_source() -> str:
    """The source of :mod:`oncelog.projector.row_builders`: every builder of :data:`BUILDERS`."""
    head = (
        '"""The row builders, generated from the layouts in oncelog.projector.tables by\n'
        "oncelog.projector.rows.\n\n"
        "Do not edit: `python -m oncelog.projector.rows` rewrites it, and\n"
        "tests/projector/test_row_builders.py fails while it differs from the generator's\n"
        "output. It is a file, not an exec'd string, so that mypyc compiles it "
        '(setup.py).\n"""\n\n'
        "from dataclasses import fields\n"
        "from typing import Any\n\n"
        "from oncelog.schemas.models import BODY_KIND\n\n"
        "_FIELDS: dict[type, frozenset[str]] = {\n"
        "    kind: frozenset(f.name for f in fields(kind)) for kind in BODY_KIND\n"
        "}\n\n\n"
        "def body_field(body: Any, name: str) -> Any:\n"
        '    """``body.<name>``, or None for a kind of request body without that field."""\n'
        "    return getattr(body, name) if name in _FIELDS[type(body)] else None\n"
    )
    return head + "".join(f"\n\n{builder_source(*b)}\n" for b in BUILDERS)


_GRANTS: Final = (Outcome.CLAIMED, Outcome.RECLAIMED)


def audit_row(
    partition: int, offset: int, log_time_ms: int, request: Request, decision: Decision
) -> Row:
    """A ``requests`` row: one folded request, its sender's attempt, and its answer."""
    body, state = request.body, decision.state
    token_fp = token_fingerprint(request.claim_token) or None  # the token stays on the log
    previous = decision.previous if decision.changed else None  # set by a reclaim only
    if state is None:
        epoch, worker, effect = None, None, None
        state_epoch, state_worker = None, None
    else:
        epoch, worker = sender_attempt(state, token_fp)
        effect = state.effect
        if previous is not None:  # the reclaim met the attempt it superseded
            state_epoch, state_worker = previous.epoch, previous.worker_id
        elif decision.changed and decision.outcome is Outcome.CLAIMED:  # met no state
            state_epoch, state_worker = None, None
        else:  # no other request changes the epoch or the holder
            state_epoch, state_worker = state.epoch, state.worker_id
    if type(body) is Claim:  # the claim names its effect, and its worker even ungranted
        worker, effect = body.worker_id, body.effect
    return audit_columns(
        partition,
        offset,
        log_time_ms,
        request,
        decision,
        epoch,
        worker,
        token_fp,
        effect,
        state_epoch,
        state_worker,
        previous,
        failure_code(body.error) if type(body) is Fail else None,
    )


def sender_attempt(state: ExecutionState, token_fp: str | None) -> tuple[int | None, str | None]:
    """The epoch and worker of the grant whose token has fingerprint ``token_fp``.

    The current holder, the attempt the last reclaim superseded, or an older grant
    (kept in the retry memory for the life of the state); ``(None, None)`` for a
    token no grant went to (a claim that got none, a forgery) or no token at all.
    """
    if token_fp is None:
        return None, None
    if token_fp == state.token_fp:
        return state.epoch, state.worker_id
    previous = state.previous
    if previous is not None and previous.token_fp == token_fp:
        return previous.epoch, previous.worker_id
    for seen in state.recent:  # a fenced request (rare): scan the grants
        if seen.outcome in _GRANTS and seen.token_fp == token_fp:
            return seen.epoch, seen.worker_id or None
    return None, None


def history_row(snap: ExecutionSnapshot, blob: bytes) -> Row:
    """A ``history`` row: one state version, what made it, and its state blob."""
    return history_columns(snap, blob)


def execution_row(snap: ExecutionSnapshot) -> Row:
    """An ``executions`` row: the current version, narrow."""
    return execution_columns(snap)


if __name__ == "__main__":
    GENERATED.write_text(module_source(), encoding="utf-8")
