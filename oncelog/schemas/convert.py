"""Plain-dict (fastavro) forms of the models, both ways.

Hand-written rather than reflective (``dataclasses.asdict``) because decoding
is on the projector's hot path and the union bodies need tagging anyway.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from oncelog.schemas import models

NS: Final = "dev.oncelog."

# Dict lookups are cheaper than calling the enum class on the hot path.
_EFFECT: Final = {e.value: e for e in models.Effect}
_STATUS: Final = {s.value: s for s in models.Status}
_OUTCOME: Final = {o.value: o for o in models.Outcome}
_KIND: Final = {k.value: k for k in models.Kind}


# --- request -----------------------------------------------------------------------


def _body_to_avro(body: models.Body) -> tuple[str, dict[str, Any]]:
    if isinstance(body, models.Claim):
        return NS + "Claim", {
            "tool_name": body.tool_name,
            "params": body.params,
            "request_hash": body.request_hash,
            "lease_ms": body.lease_ms,
            "retention_ms": body.retention_ms,
            "effect": body.effect.value,
            "worker_id": body.worker_id,
        }
    if isinstance(body, models.Heartbeat):
        return NS + "Heartbeat", {"lease_ms": body.lease_ms}
    if isinstance(body, models.Complete):
        return NS + "Complete", {"result": body.result}
    if isinstance(body, models.Fail):
        return NS + "Fail", {"error": body.error, "retryable": body.retryable}
    if isinstance(body, models.Cancel):
        return NS + "Cancel", {"reason": body.reason}
    if isinstance(body, models.Release):
        return NS + "Release", {}
    if isinstance(body, models.Get):
        return NS + "Get", {}
    return NS + "Sweep", {}


def _claim(d: dict[str, Any]) -> models.Body:
    return models.Claim(
        d["tool_name"],
        d["params"],
        d["request_hash"],
        d["lease_ms"],
        d["retention_ms"],
        _EFFECT[d["effect"]],
        d["worker_id"],
    )


_BODY_FROM: Final[dict[str, Callable[[dict[str, Any]], models.Body]]] = {
    NS + "Claim": _claim,
    NS + "Heartbeat": lambda d: models.Heartbeat(d["lease_ms"]),
    NS + "Complete": lambda d: models.Complete(d["result"]),
    NS + "Fail": lambda d: models.Fail(d["error"], d["retryable"]),
    NS + "Release": lambda d: models.Release(),
    NS + "Cancel": lambda d: models.Cancel(d["reason"]),
    NS + "Sweep": lambda d: models.Sweep(),
    NS + "Get": lambda d: models.Get(),
}


def request_to_avro(request: models.Request) -> dict[str, Any]:
    """The fastavro datum of a request."""
    return {
        "request_id": request.request_id,
        "operation_id": request.operation_id,
        "channel_id": request.channel_id,
        "key_name": request.key_name,
        "claim_token": request.claim_token,
        "body": _body_to_avro(request.body),
        "reply_partition": request.reply_partition,
    }


def request_from_avro(d: dict[str, Any]) -> models.Request:
    """A request from its fastavro datum."""
    name, body = d["body"]
    return models.Request(
        d["request_id"],
        d["operation_id"],
        d["channel_id"],
        d["key_name"],
        d["claim_token"],
        _BODY_FROM[name](body),
        d["reply_partition"],
    )


# --- state -------------------------------------------------------------------------


def _previous_to_avro(p: models.PreviousAttempt | None) -> dict[str, Any] | None:
    if p is None:
        return None
    return {
        "epoch": p.epoch,
        "token_fp": p.token_fp,
        "worker_id": p.worker_id,
        "claimed_at_ms": p.claimed_at_ms,
        "last_heartbeat_ms": p.last_heartbeat_ms,
        "status": p.status.value,
        "error": p.error,
    }


def _previous_from_avro(d: dict[str, Any] | None) -> models.PreviousAttempt | None:
    if d is None:
        return None
    return models.PreviousAttempt(
        d["epoch"],
        d["token_fp"],
        d["worker_id"],
        d["claimed_at_ms"],
        d["last_heartbeat_ms"],
        _STATUS[d["status"]],
        d["error"],
    )


def state_to_avro(s: models.ExecutionState) -> dict[str, Any]:
    """The fastavro datum of an execution state."""
    d: dict[str, Any] = {name: getattr(s, name) for name in _PLAIN_STATE_FIELDS}
    d["status"] = s.status.value
    d["effect"] = s.effect.value
    d["previous"] = _previous_to_avro(s.previous)
    d["recent"] = [
        {
            "request_id": r.request_id,
            "outcome": r.outcome.value,
            "epoch": r.epoch,
            "token_fp": r.token_fp,
            "payload_fp": r.payload_fp,
            "log_time_ms": r.log_time_ms,
        }
        for r in s.recent
    ]
    return d


def state_from_avro(d: dict[str, Any]) -> models.ExecutionState:
    """An execution state from its fastavro datum."""
    plain = {name: d[name] for name in _PLAIN_STATE_FIELDS}
    return models.ExecutionState(
        **plain,
        status=_STATUS[d["status"]],
        effect=_EFFECT[d["effect"]],
        previous=_previous_from_avro(d["previous"]),
        recent=tuple(
            models.RecentRequest(
                r["request_id"],
                _OUTCOME[r["outcome"]],
                r["epoch"],
                r["token_fp"],
                r["payload_fp"],
                r["log_time_ms"],
            )
            for r in d["recent"]
        ),
    )


_PLAIN_STATE_FIELDS: Final = tuple(
    name
    for name in models.ExecutionState._fields
    if name not in {"status", "effect", "previous", "recent"}
)


def snapshot_to_avro(s: models.ExecutionSnapshot) -> dict[str, Any]:
    """The fastavro datum of a snapshot."""
    return {
        "state": state_to_avro(s.state),
        "source_partition": s.source_partition,
        "source_offset": s.source_offset,
        "source_request_id": s.source_request_id,
        "outcome": s.outcome.value,
        "log_time_ms": s.log_time_ms,
    }


def snapshot_from_avro(d: dict[str, Any]) -> models.ExecutionSnapshot:
    """A snapshot from its fastavro datum."""
    return models.ExecutionSnapshot(
        state=state_from_avro(d["state"]),
        source_partition=d["source_partition"],
        source_offset=d["source_offset"],
        source_request_id=d["source_request_id"],
        outcome=_OUTCOME[d["outcome"]],
        log_time_ms=d["log_time_ms"],
    )


# --- decision ----------------------------------------------------------------------

_PLAIN_DECISION_FIELDS: Final = tuple(
    name for name in models.Decision._fields if name not in {"kind", "outcome", "state", "previous"}
)
_DERIVED_DECISION_FIELDS: Final = (
    "version",
    "holder_worker_id",
    "lease_deadline_ms",
    "cancel_requested",
)


def decision_to_avro(x: models.Decision) -> dict[str, Any]:
    """The fastavro datum of a decision."""
    d: dict[str, Any] = {name: getattr(x, name) for name in _PLAIN_DECISION_FIELDS}
    d["kind"] = x.kind.value
    d["outcome"] = x.outcome.value
    d["state"] = None if x.state is None else state_to_avro(x.state)
    d["previous"] = _previous_to_avro(x.previous)
    for name in _DERIVED_DECISION_FIELDS:  # flat on the wire for plain consumers
        d[name] = getattr(x, name)
    return d


def decision_from_avro(d: dict[str, Any]) -> models.Decision:
    """A decision from its fastavro datum."""
    plain = {name: d[name] for name in _PLAIN_DECISION_FIELDS}
    return models.Decision(
        **plain,
        kind=_KIND[d["kind"]],
        outcome=_OUTCOME[d["outcome"]],
        state=None if d["state"] is None else state_from_avro(d["state"]),
        previous=_previous_from_avro(d["previous"]),
    )
