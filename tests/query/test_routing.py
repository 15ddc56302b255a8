"""Routing without a network: which route a path takes, the guard order, local answers."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr

from oncelog.query.http import create_app
from oncelog.query.owners import Member, OwnerView
from oncelog.query.routing import FORWARDED_BY, QueryRouter, Route, route_of
from tests.query.query_factories import CHANNEL, Ledger

SELF = Member("p-self", "http://127.0.0.1:1")
DARK = Member("p-dark", None)  # a member without a query API: never reachable
TOKEN = "routing-token-0123456789"


@pytest.mark.parametrize(
    ("path", "route"),
    [
        ("/v1/status/run%2F1/2", Route("status", "run/1")),
        ("/v1/side-effects/run-1", Route("side-effects", "run-1")),
        ("/v1/timeline/run-1", Route("timeline")),
        ("/v1/history/op-1", Route("history")),
        ("/v1/duplicates", Route("duplicates")),
        ("/v1/positions", Route("positions")),
        ("/v1/status/", None),
        ("/v1/other/x", None),
        ("/healthz", None),
        ("/docs", None),
    ],
)
def test_which_paths_go_to_the_owner_and_which_are_gathered(path: str, route: Route) -> None:
    assert route_of(path) == route


class Owners:
    """A fixed owner view; ``fresh`` is what a refresh finds."""

    def __init__(self, view: OwnerView, fresh: OwnerView | None = None) -> None:
        self._view = view
        self._fresh = fresh or view
        self.refreshes = 0

    def view(self) -> OwnerView:
        return self._view

    def refreshed(self) -> OwnerView:
        self.refreshes += 1
        return self._fresh


def _client(ledger: Ledger, owners: Owners) -> TestClient:
    router = QueryRouter(owners, SELF.projector_id, token=SecretStr(TOKEN), timeout_s=0.5)
    app = create_app(ledger.store.cursor, token=SecretStr(TOKEN), router=router)
    return TestClient(app, headers={"Authorization": f"Bearer {TOKEN}"})


def _owned_by(member: Member, members: tuple[Member, ...] = (SELF, DARK)) -> OwnerView:
    return OwnerView(partitions=1, owners={0: member}, members=members)


@pytest.fixture
def dark_owner(ledger: Ledger) -> Iterator[TestClient]:
    with _client(ledger, Owners(_owned_by(DARK))) as client:
        yield client


def test_the_owner_answers_itself(ledger: Ledger) -> None:
    with _client(ledger, Owners(_owned_by(SELF))) as client:
        assert client.get(f"/v1/status/{CHANNEL}/2").json()["status"] == "completed"


def test_an_unreachable_owner_is_a_503_naming_it(dark_owner: TestClient) -> None:
    response = dark_owner.get(f"/v1/status/{CHANNEL}/2")
    assert response.status_code == 503
    body = response.json()
    assert body["code"] == "owner_unavailable"
    assert "p-dark" in body["message"]


def test_a_forwarded_request_is_answered_here_never_forwarded_again(
    dark_owner: TestClient,
) -> None:
    response = dark_owner.get(f"/v1/status/{CHANNEL}/2", headers={FORWARDED_BY: "p-x"})
    assert response.json()["status"] == "completed"  # this file's answer


def test_no_token_no_forward(dark_owner: TestClient) -> None:
    response = dark_owner.get(f"/v1/status/{CHANNEL}/2", headers={"Authorization": ""})
    assert response.status_code == 401


def test_a_bad_question_is_refused_here(dark_owner: TestClient) -> None:
    assert dark_owner.get("/v1/timeline/x?limit=-1").status_code == 400


def test_a_gather_missing_a_member_is_a_503_naming_it(dark_owner: TestClient) -> None:
    response = dark_owner.get(f"/v1/timeline/{CHANNEL}")
    assert (response.status_code, response.json()["code"]) == (503, "owner_unavailable")
    assert "p-dark" in response.json()["message"]


def test_a_member_that_left_the_group_is_not_waited_for(ledger: Ledger) -> None:
    owners = Owners(_owned_by(DARK), fresh=_owned_by(SELF, members=(SELF,)))
    with _client(ledger, owners) as client:
        local = client.get(f"/v1/timeline/{CHANNEL}", headers={FORWARDED_BY: "p-x"}).json()
        gathered = client.get(f"/v1/timeline/{CHANNEL}").json()
    assert gathered == local
    assert owners.refreshes == 1


def test_no_owner_is_a_503_no_owner(ledger: Ledger) -> None:
    with _client(ledger, Owners(OwnerView(partitions=1))) as client:
        response = client.get(f"/v1/status/{CHANNEL}/2")
    assert (response.status_code, response.json()["code"]) == (503, "no_owner")


def test_positions_keep_only_the_owned_partitions(ledger: Ledger) -> None:
    view = OwnerView(partitions=3, owners={2: SELF, 0: DARK}, members=(SELF,))
    with _client(ledger, Owners(view)) as client:
        local = client.get("/v1/positions", headers={FORWARDED_BY: "p-x"}).json()["next_offsets"]
        gathered = client.get("/v1/positions").json()["next_offsets"]
    assert sorted(local) == ["0", "2"]  # this file folded 0 once; p-dark owns it now
    assert gathered == {"2": local["2"]}
