"""A re-sent copy of a request is answered as its first copy was (docs/spec.md §4).

Issue 42's phantom grant: a claim answered ``in_progress`` changed nothing, so a copy
of it appended after the holder released (or failed retryably, or lapsed) was granted
while its client read ``in_progress``. Here: the deterministic sequences, and a property
over random histories of several workers with copies re-sent at random later times.
"""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from oncelog.identity.tokens import token_fingerprint as fp
from oncelog.referee.fold import fold
from oncelog.schemas.models import Decision, ExecutionState, Outcome, Request, Status
from tests.budget import examples
from tests.projector.fold_factories import LEASE_MS, Op, run

_GRANTS = (Outcome.CLAIMED, Outcome.RECLAIMED)


@pytest.mark.parametrize("letting_go", ["release", "fail_retryable", "lapse"])
def test_the_copy_of_a_claim_answered_in_progress_is_not_granted(letting_go: str) -> None:
    """A holds (epoch 1); B's copy 1, A lets go, B's copy 2: B is never granted."""
    op = Op()
    b = op.claim("B", worker="wB", rid="b")
    tail = {
        "release": [(op.release("A"), 3_000)],
        "fail_retryable": [(op.fail("A", retryable=True), 3_000)],
        "lapse": [],
    }[letting_go]
    steps = [(op.claim("A", worker="wA"), 1_000), (b, 2_000), *tail, (b, 2_000 + LEASE_MS)]
    state, decisions = run(steps)
    assert state is not None
    first, copy = decisions[1], decisions[-1]
    assert (first.outcome, copy.outcome) == (Outcome.IN_PROGRESS, Outcome.IN_PROGRESS)
    assert (copy.retried, copy.changed) == (True, False)
    assert state.epoch == 1
    assert state.token_fp == fp("A")
    # A new claim of B's (a new request id) is judged as new: it takes the operation.
    after, fresh = fold(state, op.claim("B", worker="wB"), 3_000 + LEASE_MS)
    assert fresh.outcome is Outcome.RECLAIMED
    assert after is not None
    assert after.epoch == 2


# --- the property ------------------------------------------------------------------------

_WORKERS = 3
_KINDS = ("claim", "heartbeat", "complete", "fail", "fail_retryable", "release", "get")


@dataclass
class _History:
    """Requests sent so far: the first decision of each id, each worker's last token."""

    op: Op
    firsts: dict[str, tuple[Request, Outcome]]
    tokens: dict[int, str]
    claims: int = 0

    def new(self, worker: int, kind: str) -> Request:
        """A new request (a new id) by ``worker``: a claim with a fresh token, else its last."""
        op = self.op
        if kind == "claim" or worker not in self.tokens:
            self.claims += 1
            self.tokens[worker] = f"tok-{worker}-{self.claims}"
            return op.claim(self.tokens[worker], worker=f"w{worker}")
        token = self.tokens[worker]
        if kind == "heartbeat":
            return op.heartbeat(token)
        if kind == "complete":
            return op.complete(token)
        if kind in ("fail", "fail_retryable"):
            return op.fail(token, retryable=kind == "fail_retryable")
        return op.release(token) if kind == "release" else op.get()


_step = st.tuples(
    st.booleans(),  # re-send a copy of an earlier request (else send a new one)
    st.integers(0, _WORKERS - 1),
    st.sampled_from(_KINDS),
    st.integers(0, 10_000),  # which earlier request a copy is of (modulo)
    st.integers(0, LEASE_MS // 2),  # log time advanced before this record
)


@settings(max_examples=examples(2_000), deadline=None)
@given(st.lists(_step, min_size=1, max_size=60))
def test_no_copy_takes_effect_or_is_answered_otherwise(
    steps: list[tuple[bool, int, str, int, int]],
) -> None:
    """Every copy after the first of a request id: no new version, and a claim's copy is a
    grant only if its first copy was, ``in_progress`` whenever its first copy was."""
    history = _History(Op(), {}, {})
    state: ExecutionState | None = None
    t = 0
    for resend, worker, kind, which, dt in steps:
        t += dt
        sent = list(history.firsts.values())
        if resend and sent:
            request, first = sent[which % len(sent)]
        else:
            request, first = history.new(worker, kind), None
        after, decision = fold(state, request, t)
        if first is None:
            history.firsts[request.request_id] = (request, decision.outcome)
        else:
            _check_copy(state, after, decision.outcome, first, decision.changed)
        state = after


def _check_copy(
    before: ExecutionState | None,
    after: ExecutionState | None,
    outcome: Outcome,
    first: Outcome,
    changed: bool,
) -> None:
    assert not changed, f"a copy took effect: {first} then {outcome}"
    assert after is before
    if first not in _GRANTS:
        assert outcome not in _GRANTS, f"phantom grant: first {first}, copy {outcome}"
    if first is Outcome.IN_PROGRESS:
        assert outcome is Outcome.IN_PROGRESS
    if outcome in _GRANTS:  # a grant given back only while it still holds
        assert before is not None
        assert before.status is Status.CLAIMED


def _records(
    steps: list[tuple[bool, int, str, int, int]], ops: list[int]
) -> list[tuple[Request, int]]:
    """The log of ``steps`` over two operations of one partition (step i on ``ops[i]``):
    new requests and copies of earlier ones, with log times."""
    histories = [_History(Op(key_name=f"k{i}"), {}, {}) for i in range(2)]
    sent: list[list[Request]] = [[], []]
    log: list[tuple[Request, int]] = []
    t = 0
    for (resend, worker, kind, which, dt), i in zip(steps, ops, strict=False):
        t += dt
        mine = sent[i]
        request = mine[which % len(mine)] if resend and mine else histories[i].new(worker, kind)
        mine.append(request)
        log.append((request, t))
    return log


def _fold_all(log: list[tuple[Request, int]], states: dict[str, ExecutionState]) -> list[Decision]:
    decisions = []
    for request, t in log:
        after, decision = fold(states.get(request.operation_id), request, t)
        if after is not None:
            states[request.operation_id] = after
        decisions.append(decision)
    return decisions


@settings(max_examples=examples(1_000), deadline=None)
@given(
    st.lists(_step, min_size=1, max_size=60),
    st.lists(st.integers(0, 1), min_size=60, max_size=60),
    st.integers(0, 60),
)
def test_a_state_restored_from_its_versions_remembers_what_the_live_one_does(
    steps: list[tuple[bool, int, str, int, int]], ops: list[int], crash_at: int
) -> None:
    """A projector that crashed after ``crash_at`` records restores each operation's last
    published version (the executions topic) and refolds from the record after the newest
    one (``oncelog.projector.restore.position_after``): the same decisions and states as
    folding once, so the ``in_progress`` memory must be in the published versions."""
    log = _records(steps, ops)
    live: dict[str, ExecutionState] = {}
    decisions = _fold_all(log, live)
    cut = min(crash_at, len(log))
    restored: dict[str, ExecutionState] = {}
    resume = 0
    for i in range(cut):
        state = decisions[i].state
        if decisions[i].changed and state is not None:
            restored[state.operation_id] = state
            resume = i + 1
    assert _fold_all(log[resume:], restored) == decisions[resume:]
    assert restored == live
