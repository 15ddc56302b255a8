"""The abandoned claims a client settles before its next claim (pure: no broker)."""

from __future__ import annotations

from oncelog.producer.abandoned import AbandonedClaims, release_for, what_happens_next
from oncelog.referee.fold import fold
from oncelog.schemas.models import Kind, Release
from tests.projector.fold_factories import LEASE_MS, Op


def test_a_claim_is_kept_once_and_taken_by_the_next_claim_of_its_operation() -> None:
    op, other = Op(), Op(key_name="other")
    kept = AbandonedClaims()
    first = op.claim("A", rid="a1")
    kept.add(first)
    kept.add(first)  # the same call gave up twice: kept once
    kept.add(op.heartbeat("A"))  # only claims are kept
    kept.add(other.claim("X"))
    assert len(kept) == 2
    assert kept.take(op.get()) == []  # only a claim settles them
    assert kept.take(op.claim("B")) == [first]
    assert kept.take(op.claim("B")) == []  # taken: forgotten
    assert len(kept) == 1


def test_a_copy_of_the_abandoned_claim_itself_is_not_settled() -> None:
    op, kept = Op(), AbandonedClaims()
    first = op.claim("A", rid="a1")
    kept.add(first)
    assert kept.take(first) == []  # it re-sends itself, and gets its grant back if it won one


def test_a_grant_that_still_holds_is_released_with_its_own_token() -> None:
    op = Op()
    abandoned = op.claim("A", rid="a1")
    state, granted = fold(None, abandoned, 1_000)
    _, again = fold(state, abandoned, 2_000)  # the re-send: the grant back, retried
    release = release_for(abandoned, again)
    assert release is not None
    assert (release.kind, release.claim_token, release.operation_id) == (
        Kind.RELEASE,
        "A",
        op.operation_id,
    )
    assert isinstance(release.body, Release)
    assert release.request_id not in (abandoned.request_id, granted.request_id)


def test_nothing_is_released_when_the_claim_won_nothing_or_lost_its_grant() -> None:
    op = Op()
    held, _ = fold(None, op.claim("H", rid="h"), 1_000)
    abandoned = op.claim("A", rid="a1")
    _waited, in_progress = fold(held, abandoned, 2_000)
    assert release_for(abandoned, in_progress) is None  # never granted
    mine, _ = fold(None, abandoned, 1_000)
    taken, _ = fold(mine, op.claim("B"), 1_000 + LEASE_MS)  # reclaimed by B
    _, superseded = fold(taken, abandoned, 2_000 + LEASE_MS)
    assert release_for(abandoned, superseded) is None
    # A grant answer read against a state someone else holds now (checked as claims are).
    _, granted = fold(None, abandoned, 1_000)
    assert release_for(abandoned, granted._replace(state=taken)) is None


def test_the_error_says_what_the_client_will_do() -> None:
    text = what_happens_next(Op().claim("A", rid="a1"))
    assert "a1" in text
    assert "re-sends it first and releases any grant it won" in text
