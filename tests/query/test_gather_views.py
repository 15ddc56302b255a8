"""A gather asks each member for the partitions its view gives it; a stale view is asked
again. Real HTTP between two instances' apps; each one's folding is a fixed set here."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from oncelog.projector.store import Store
from oncelog.query.api import OWNED
from oncelog.query.http import create_app
from oncelog.query.owners import Member, OwnerView
from oncelog.query.routing import FORWARDED_BY, QueryRouter
from oncelog.query.server import HttpServer, serve_app
from tests.query.query_factories import Ledger, Owners

TOKEN = "gather-views-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SELF = Member("p-self", None)
POSITIONS = "/v1/positions"  # merged by the view: each partition's from its owner
P = 2  # the channel's partition in the ledger's file


class Held:
    """The partitions an instance folds; it never waits (the answer is known now)."""

    def __init__(self, *partitions: int) -> None:
        self.partitions = set(partitions)
        self.looked: list[list[int]] = []  # every question, a look or a wait
        self.asked: list[list[int]] = []  # the waits

    def await_held(self, partitions: Collection[int], timeout_s: float) -> frozenset[int]:
        self.looked.append(sorted(partitions))
        if timeout_s > 0:
            self.asked.append(sorted(partitions))
        return frozenset(partitions) - self.partitions


def _router(owners: Owners, projector_id: str, held: Held) -> QueryRouter:
    return QueryRouter(owners, projector_id, token=SecretStr(TOKEN), timeout_s=2, held=held)


@pytest.fixture
def owner_held() -> Held:
    return Held(P)


@pytest.fixture
def owner(ledger: Ledger, owner_held: Held) -> Iterator[Member]:
    """The ledger's own API over a socket, as a member folding ``owner_held``."""
    me = Member("p-owner", None)
    router = _router(Owners(OwnerView(partitions=3)), me.projector_id, owner_held)
    app = create_app(ledger.store.cursor, token=SecretStr(TOKEN), router=router)
    server: HttpServer = serve_app(app, "127.0.0.1", 0)
    try:
        yield Member(me.projector_id, f"http://127.0.0.1:{server.port}")
    finally:
        server.stop()


def _gatherer(tmp_path: Path, owners: Owners, held: Held) -> Iterator[TestClient]:
    """An instance with an empty file of its own, folding ``held``."""
    with Store(tmp_path / "gatherer.duckdb") as store:
        app = create_app(
            store.cursor, token=SecretStr(TOKEN), router=_router(owners, "p-self", held)
        )
        with TestClient(app, headers=AUTH) as client:
            yield client


def _view(owner_of_p: Member, owner: Member) -> OwnerView:
    return OwnerView(partitions=3, owners={P: owner_of_p}, members=(SELF, owner))


def test_a_view_giving_this_instance_what_it_no_longer_folds_is_asked_again(
    tmp_path: Path, owner: Member
) -> None:
    # The cached view says the partition is this instance's; it moved to p-owner since.
    owners = Owners(_view(SELF, owner), fresh=_view(owner, owner))
    for client in _gatherer(tmp_path, owners, Held()):
        gathered = client.get(POSITIONS)
        assert gathered.status_code == 200, gathered.text
        assert gathered.json()["next_offsets"] == {str(P): 7}  # p-owner's, not this file's
    assert owners.refreshes == 1


def test_a_member_answers_a_gather_once_it_folds_what_the_view_gives_it(
    tmp_path: Path, owner: Member, owner_held: Held
) -> None:
    owners = Owners(_view(owner, owner))
    for client in _gatherer(tmp_path, owners, Held()):
        assert client.get(POSITIONS).json()["next_offsets"] == {str(P): 7}
    assert owner_held.looked == [[P]]  # the gatherer named the partition to p-owner
    assert owner_held.asked == []  # which folds it: nothing waited for


@pytest.mark.parametrize("owner_held", [Held()])
def test_a_member_that_does_not_fold_its_partitions_yet_makes_a_retryable_503(
    tmp_path: Path, owner: Member, owner_held: Held
) -> None:
    owners = Owners(_view(owner, owner))
    for client in _gatherer(tmp_path, owners, Held()):
        response = client.get(POSITIONS)
        assert (response.status_code, response.json()["code"]) == (503, "no_owner")
        assert "rebalancing" in response.json()["message"]
    assert owners.refreshes == 2  # the cached view and two fresh ones were each asked
    assert owner_held.asked == [[P], [P], [P]]


@pytest.mark.parametrize("owner_held", [Held(1)])  # not the channel's partition
def test_a_forwarded_gather_names_the_partitions_the_member_must_fold(
    ledger: Ledger, owner_held: Held
) -> None:
    router = _router(Owners(OwnerView(partitions=2)), "p-owner", owner_held)
    app = create_app(ledger.store.cursor, token=SecretStr(TOKEN), router=router)
    with TestClient(app, headers={**AUTH, FORWARDED_BY: "p-self"}) as client:
        refused = client.get(POSITIONS, headers={OWNED: "0,1"})
        assert (refused.status_code, refused.json()["code"]) == (503, "no_owner")
        assert "partition(s) [0]" in refused.json()["message"]
        assert client.get(POSITIONS, headers={OWNED: "1"}).status_code == 200
        assert client.get(POSITIONS).status_code == 200  # no view named: answered as it is
