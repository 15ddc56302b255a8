"""The model contract the store and the projector rely on: immutable values, evolve."""

from __future__ import annotations

from typing import Any

import pytest

from oncelog.schemas.models import (
    Cancel,
    Claim,
    Complete,
    Decision,
    Effect,
    ExecutionSnapshot,
    ExecutionState,
    Fail,
    Heartbeat,
    Kind,
    Outcome,
    PreviousAttempt,
    RecentRequest,
    Release,
    Request,
    Status,
    Sweep,
    evolve,
)

STATE = ExecutionState(
    operation_id="op",
    channel_id="ch",
    key_name="k",
    status=Status.CLAIMED,
    version=1,
    epoch=1,
    request_hash="h",
    tool_name="t",
    params=b"{}",
    effect=Effect.PURE,
    lease_ms=10,
    retention_ms=20,
    token_fp="fp",
    worker_id="w",
    claimed_at_ms=1,
    lease_deadline_ms=11,
)
DECISION = Decision(
    request_id="r",
    operation_id="op",
    kind=Kind.CLAIM,
    outcome=Outcome.CLAIMED,
    changed=True,
    log_time_ms=1,
    state=STATE,
    epoch=1,
)
SNAPSHOT = ExecutionSnapshot(
    state=STATE,
    source_partition=0,
    source_offset=5,
    source_request_id="r",
    outcome=Outcome.CLAIMED,
    log_time_ms=1,
)
# (model, a field, another value for it)
MODELS: list[tuple[Any, str, Any]] = [
    (STATE, "version", 2),
    (DECISION, "outcome", Outcome.CONFLICT),
    (SNAPSHOT, "source_offset", 6),
    (Request("r", "op", "ch", "k", None, Sweep()), "claim_token", "t"),
    (PreviousAttempt(1, "t", "w", 1, None, Status.FAILED), "error", "e"),
    (RecentRequest("r", Outcome.CLAIMED, 1), "epoch", 2),
    (Claim("t", b"{}", "h", 1, 2, Effect.PURE, "w"), "lease_ms", 3),
    (Heartbeat(), "lease_ms", 5),
    (Complete(b"1"), "result", b"2"),
    (Fail("e", True), "retryable", False),
    (Cancel(), "reason", "why"),
]


@pytest.mark.parametrize(("model", "name", "value"), MODELS, ids=lambda m: type(m).__name__)
def test_evolve_changes_one_field_and_keeps_the_rest(model: Any, name: str, value: Any) -> None:
    new = evolve(model, **{name: value})
    assert type(new) is type(model)
    assert getattr(new, name) == value
    assert new != model
    assert evolve(new, **{name: getattr(model, name)}) == model
    assert hash(evolve(new, **{name: getattr(model, name)})) == hash(model)


@pytest.mark.parametrize(("model", "name", "value"), MODELS, ids=lambda m: type(m).__name__)
def test_models_are_immutable(model: Any, name: str, value: Any) -> None:
    with pytest.raises(AttributeError):
        setattr(model, name, value)


@pytest.mark.parametrize(("model", "name", "value"), MODELS, ids=lambda m: type(m).__name__)
def test_evolve_refuses_an_unknown_field(model: Any, name: str, value: Any) -> None:
    with pytest.raises(TypeError, match="no field"):
        evolve(model, no_such_field=1)


def test_evolve_of_an_empty_body_is_an_equal_copy() -> None:
    assert evolve(Release()) == Release()
    assert evolve(Sweep()) == Sweep()


def test_bodies_of_different_kinds_never_compare_equal() -> None:
    bodies: list[object] = [Release(), Sweep(), Heartbeat(), Cancel()]
    assert len({*bodies}) == 4
    assert Request("r", "o", "c", "k", None, Release()) != Request(
        "r", "o", "c", "k", None, Sweep()
    )


def test_keyword_construction_and_defaults() -> None:
    assert STATE.recent == ()
    assert STATE.previous is None
    assert STATE.updated_at_ms == 0
    assert DECISION.source_offset == -1
    assert DECISION.version == 1
    assert DECISION.holder_worker_id == "w"
    assert DECISION.lease_deadline_ms == 11
    assert not DECISION.cancel_requested
    assert Request("r", "o", "c", "k", None, Fail("e", False)).kind is Kind.FAIL
