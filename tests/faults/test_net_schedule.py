"""The network drill's schedule and its judgement of calls, without I/O."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from drills.faults.net_calls import check_calls, double_grants
from drills.faults.net_schedule import KINDS, link_groups, schedule, short_schedule
from drills.faults.network import LINKS, PAIRS
from oncelog.schemas.models import Decision, Effect, ExecutionState, Kind, Outcome, Status


def test_the_default_schedule_applies_40_faults_or_more_across_every_link_group() -> None:
    faults = schedule(LINKS, rounds=2, seed=28, pairs=PAIRS)  # drills.faults' defaults
    assert len(faults) >= 40
    groups = {("clients",), ("projector",), ("http",), ("clients", "projector")}
    assert {f.links for f in faults} == groups
    assert {f.kind for f in faults} == set(KINDS)


@given(st.integers(0, 2**32), st.integers(1, 3), st.floats(5.0, 30.0))
def test_every_fault_is_within_the_issues_ranges(seed: int, rounds: int, hold: float) -> None:
    faults = schedule(LINKS, rounds=rounds, seed=seed, max_hold_s=hold)
    assert len(faults) == rounds * len(link_groups(LINKS)) * len(KINDS)
    assert len(link_groups(LINKS)) == len(LINKS) + 3  # every pair of three links
    for f in faults:
        if f.kind in ("cut", "blackhole"):
            assert 5.0 <= f.seconds <= hold + 0.05
        if f.kind == "latency":
            assert 50 <= f.latency_ms <= 500
            assert 0 <= f.jitter_ms <= f.latency_ms // 5
        if f.kind == "bandwidth":
            assert 64 <= f.rate_kib <= 256
        if f.kind == "resets":
            assert 2.0 <= f.reset_every_s <= 4.0
            assert f.reset_every_s < f.seconds


def test_a_schedule_of_some_kinds_on_one_link() -> None:
    # python -m drills.faults network --links projector --kinds cut,blackhole --rounds 10
    faults = schedule(["projector"], rounds=10, seed=7, pairs=[], kinds=("cut", "blackhole"))
    assert len(faults) == 20
    assert {f.links for f in faults} == {("projector",)}
    assert [f.kind for f in faults[:4]] == ["cut", "blackhole", "cut", "blackhole"]


def test_the_same_seed_gives_the_same_schedule() -> None:
    assert schedule(LINKS, rounds=2, seed=7) == schedule(LINKS, rounds=2, seed=7)
    assert schedule(LINKS, rounds=2, seed=7) != schedule(LINKS, rounds=2, seed=8)


def test_the_short_schedule_is_one_fault_per_link() -> None:
    faults = short_schedule(LINKS)
    assert [f.links for f in faults] == [("clients",), ("projector",), ("http",)]
    assert [f.kind for f in faults] == ["cut", "blackhole", "latency"]


def _decision(request: str, op: str, epoch: int, at: int, outcome: Outcome) -> Decision:
    state = ExecutionState(
        operation_id=op, channel_id="c", key_name="k", status=Status.CLAIMED, version=epoch,
        epoch=epoch, request_hash="h", tool_name="t", params=b"{}", effect=Effect.EXTERNAL,
        lease_ms=1000, retention_ms=1000, token_fp="f", worker_id="w", claimed_at_ms=0,
        lease_deadline_ms=1000,
    )  # fmt: skip
    return Decision(request, op, Kind.CLAIM, outcome, True, 0, state, epoch,
                    source_partition=0, source_offset=at)  # fmt: skip


def test_two_requests_granted_one_epoch_are_a_double_grant() -> None:
    one = _decision("r1", "op", 1, 0, Outcome.CLAIMED)
    again = _decision("r1", "op", 1, 1, Outcome.CLAIMED)  # the same request, re-sent
    other = _decision("r2", "op", 1, 2, Outcome.RECLAIMED)
    assert double_grants([one, again]) == []
    assert len(double_grants([one, again, other])) == 1


def _claim(at: int, request: str, status: str, **extra: object) -> dict[str, object]:
    return {"w": "net-0", "kind": "claim", "ch": "c", "key": "k", "t0": 0.0, "t1": 1.0,
            "status": status, "epoch": 1, "op": "op", "pos": [0, at], "req": request,
            **extra}  # fmt: skip


def test_an_answer_must_be_the_decision_at_its_position() -> None:
    decisions = {(0, 0): _decision("r1", "op", 1, 0, Outcome.CLAIMED)}
    assert check_calls([_claim(0, "r1", "claimed")], decisions, 5.0).wrong_answers == []
    assert len(check_calls([_claim(0, "r1", "in_progress")], decisions, 5.0).wrong_answers) == 1
    assert len(check_calls([_claim(0, "r9", "claimed")], decisions, 5.0).wrong_answers) == 1
    assert len(check_calls([_claim(3, "r1", "claimed")], decisions, 5.0).wrong_answers) == 1


def test_calls_past_their_timeout_are_hung_and_untyped_errors_are_counted() -> None:
    slow = _claim(0, "r1", "claimed", t1=9.0)
    untyped = {"w": "net-0", "kind": "claim", "ch": "c", "key": "k", "t0": 0.0, "t1": 1.0,
               "untyped": "OSError: boom"}  # fmt: skip
    typed = {**untyped, "code": "timeout"}
    typed.pop("untyped")
    decisions = {(0, 0): _decision("r1", "op", 1, 0, Outcome.CLAIMED)}
    check = check_calls([slow, untyped, typed], decisions, timeout_s=5.0)
    assert len(check.hung) == 1
    assert check.untyped_errors == ["OSError: boom"]
    assert check.typed_errors == {"timeout": 1}
