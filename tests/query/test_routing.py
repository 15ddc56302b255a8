"""Routing without a network: who answers a path, the guard order, local answers."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from starlette.requests import Request

from oncelog.query import api
from oncelog.query.http import create_app
from oncelog.query.owners import Member, OwnerView
from oncelog.query.routing import FORWARDED_BY, QueryRouter
from tests.query.query_factories import CHANNEL, Ledger, Owners

SELF = Member("p-self", "http://127.0.0.1:1")
DARK = Member("p-dark", None)  # a member without a query API: never reachable
TOKEN = "routing-token-0123456789"


def _request(raw_path: bytes, query: bytes = b"", method: str = "GET") -> Request:
    path = urllib.parse.unquote(raw_path.decode("latin-1"))
    scope = {
        "type": "http",
        "method": method,
        "path": path,
        "raw_path": raw_path,
        "query_string": query,
        "headers": [],
        "root_path": "",
    }
    return Request(scope)


@pytest.mark.parametrize(
    ("path", "answerer", "route", "channel"),
    [
        (b"/v1/status/run%201/2", "owner", api.STATUS, "run 1"),
        (b"/v1/side-effects/run-1", "owner", api.SIDE_EFFECTS, "run-1"),
        (b"/v1/timeline/run-1", "every", api.TIMELINE, "run-1"),
        (b"/v1/history/op-1", "every", api.HISTORY, None),
        (b"/v1/duplicates", "every", api.DUPLICATES, None),
        (b"/v1/positions", "every", api.POSITIONS, None),
    ],
)
def test_the_route_table_says_who_answers(
    path: bytes, answerer: str, route: api.ApiRoute, channel: str | None
) -> None:
    router = QueryRouter(Owners(_owned_by(SELF)), SELF.projector_id, token=None, timeout_s=0.5)
    question = router.question(_request(path, b"limit=3"))
    assert question is not None
    assert (question.route, question.route.answerer, question.channel) == (route, answerer, channel)
    assert question.target == path.decode() + "?limit=3"  # as it came: still encoded


@pytest.mark.parametrize(
    "path",
    # A "/" in a channel (run%2F1) makes one segment more: no /v1 path carries it.
    [b"/v1/status/", b"/v1/status/run%2F1/2", b"/v1/other/x", b"/healthz", b"/docs", b"/ui/"],
)
def test_paths_of_no_routed_question_are_answered_here(path: bytes) -> None:
    router = QueryRouter(Owners(_owned_by(SELF)), SELF.projector_id, token=None, timeout_s=0.5)
    assert router.question(_request(path)) is None
    assert router.question(_request(b"/v1/positions", method="POST")) is None


def test_every_api_route_is_in_the_openapi_schema_from_the_one_table(ledger: Ledger) -> None:
    spec = create_app(ledger.store.cursor).openapi()
    assert sorted(spec["paths"]) == sorted(r.path for r in api.ROUTES)


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
