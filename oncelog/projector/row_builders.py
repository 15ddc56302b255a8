"""The row builders, generated from the layouts in oncelog.projector.tables by
oncelog.projector.rows.

Do not edit: `python -m oncelog.projector.rows` rewrites it, and
tests/projector/test_row_builders.py fails while it differs from the generator's
output. It is a file, not an exec'd string, so that mypyc compiles it (setup.py).
"""

from dataclasses import fields
from typing import Any

from oncelog.schemas.models import BODY_KIND

_FIELDS: dict[type, frozenset[str]] = {
    kind: frozenset(f.name for f in fields(kind)) for kind in BODY_KIND
}


def body_field(body: Any, name: str) -> Any:
    """``body.<name>``, or None for a kind of request body without that field."""
    return getattr(body, name) if name in _FIELDS[type(body)] else None


def audit_columns(partition: Any, offset: Any, log_time_ms: Any, request: Any, decision: Any, epoch: Any, worker: Any, token_fp: Any, effect: Any, state_epoch: Any, state_worker: Any, previous: Any, error_code: Any) -> tuple[Any, ...]:
    return (
        partition,
        offset,
        request.request_id,
        request.operation_id,
        request.channel_id,
        request.key_name,
        decision.kind,
        decision.outcome,
        decision.changed,
        decision.version,
        epoch,
        worker,
        token_fp,
        effect,
        log_time_ms,
        decision.duplicate_effect_suspected,
        decision.retried,
        request.reconciled,
        state_epoch,
        state_worker,
        bool(previous and previous.outcome_unknown),
        previous and previous.token_fp,
        previous and previous.last_heartbeat_ms,
        body_field(request.body, 'from_channel'),
        body_field(request.body, 'adopted'),
        error_code,
        body_field(request.body, 'approver'),
        body_field(request.body, 'reason'),
    )


def history_columns(snap: Any, blob: Any) -> tuple[Any, ...]:
    state = snap.state
    return (
        state.operation_id,
        state.version,
        snap.source_partition,
        state.channel_id,
        state.key_name,
        snap.source_offset,
        snap.log_time_ms,
        snap.outcome,
        snap.source_request_id,
        state.status,
        state.epoch,
        state.worker_id,
        state.token_fp,
        state.effect,
        state.result,
        state.result_hash,
        state.expires_at_ms,
        blob,
        state.lease_deadline_ms,
        state.tool_name,
        state.request_hash,
    )


def execution_columns(snap: Any) -> tuple[Any, ...]:
    state = snap.state
    return (
        state.operation_id,
        snap.source_partition,
        state.channel_id,
        state.key_name,
        state.status,
        state.version,
        state.epoch,
        state.worker_id,
        state.effect,
        state.result,
        state.result_hash,
        state.expires_at_ms,
        snap.source_offset,
        snap.log_time_ms,
        state.lease_deadline_ms,
    )


def checkpoint_row(partition: Any, offset: Any, key: Any, ckpt: Any) -> tuple[Any, ...]:
    return (
        key,
        ckpt.part,
        partition,
        offset,
        ckpt.kind,
        ckpt.thread_id,
        ckpt.checkpoint_ns,
        ckpt.checkpoint_id,
        ckpt.parent_checkpoint_id,
        ckpt.run_id,
        ckpt.channel,
        ckpt.version,
        ckpt.task_id,
        ckpt.task_path,
        ckpt.idx,
        ckpt.metadata_type,
        ckpt.metadata,
        ckpt.metadata_json,
        ckpt.channel_versions_json,
        ckpt.value_type,
        ckpt.parts,
        ckpt.data,
        ckpt.copied_from,
    )
