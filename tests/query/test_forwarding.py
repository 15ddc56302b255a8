"""Forwarding over real HTTP: an owner's answer passes through as bytes, redaction holds
whoever answers, the UI asks the group, and no claim token reaches a readable surface."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient
from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from oncelog.identity.ids import operation_id
from oncelog.projector.store import Store
from oncelog.query.api import REDACT, REDACTED
from oncelog.query.http import create_app
from oncelog.query.owners import Member, OwnerView
from oncelog.query.routing import FORWARDED_BY, QueryRouter
from oncelog.query.server import HttpServer, serve_app
from oncelog.query.ui.pages import run_href
from tests.query.query_factories import CHANNEL, STEP2, Ledger, Owners, claim, commit, complete

TOKEN = "forwarding-token-0123456789"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "claim-token-never-shown-5f0c9a"  # a claim token, distinct enough to search for
OWNED = [
    f"/v1/status/{CHANNEL}/2",
    f"/v1/status/{CHANNEL}/1?as_of=0",
    f"/v1/status/{CHANNEL}/1?as_of=yesterday",  # a 400 from the owner passes through too
    f"/v1/side-effects/{CHANNEL}?from_step=1&to_step=2",
]


class OlderMember:
    """An owner of another version: it neither hears nor says that results are left out."""

    def __init__(self, app: ASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = [(k, v) for k, v in scope["headers"] if k.decode() != REDACT]
            scope = {**scope, "headers": headers}
        await self._app(scope, receive, send)


def _serve(app: ASGIApp) -> Iterator[str]:
    server: HttpServer = serve_app(app, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()


@pytest.fixture
def owner_url(ledger: Ledger) -> Iterator[str]:
    """The ledger's own API, over a socket: it owns every partition."""
    yield from _serve(create_app(ledger.store.cursor, token=SecretStr(TOKEN)))


@pytest.fixture
def older_owner_url(ledger: Ledger) -> Iterator[str]:
    yield from _serve(OlderMember(create_app(ledger.store.cursor, token=SecretStr(TOKEN))))


def _forwarder(tmp_path: Path, owner_url: str, *, redact: bool) -> Iterator[TestClient]:
    """An instance with an empty file of its own, in a group where ``owner_url`` owns all."""
    owner = Member("p-owner", owner_url)
    view = OwnerView(partitions=1, owners={0: owner}, members=(Member("p-self", None), owner))
    router = QueryRouter(
        Owners(view), "p-self", token=SecretStr(TOKEN), timeout_s=10, redact_results=redact
    )
    with Store(tmp_path / "forwarder.duckdb") as store:
        app = create_app(store.cursor, token=SecretStr(TOKEN), router=router, redact_results=redact)
        with TestClient(app, headers=AUTH) as client:
            yield client


@pytest.fixture
def forwarder(tmp_path: Path, owner_url: str) -> Iterator[TestClient]:
    yield from _forwarder(tmp_path, owner_url, redact=False)


def test_an_owners_answer_passes_through_byte_for_byte(
    owner_url: str, forwarder: TestClient
) -> None:
    for path in OWNED:
        direct = httpx.get(owner_url + path, headers={**AUTH, FORWARDED_BY: "test"})
        relayed = forwarder.get(path)
        assert relayed.status_code == direct.status_code, path
        assert relayed.headers["content-type"] == direct.headers["content-type"], path
        assert relayed.content == direct.content, path
    assert forwarder.get(OWNED[0]).json()["result"] == "charged"  # not in its own empty file


def test_the_run_page_asks_the_group(forwarder: TestClient) -> None:
    page = forwarder.get(run_href(CHANNEL), params={"as_of_offset": "3"})
    assert page.status_code == 200, page.text[-300:]
    assert 'data-kind="unknown"' in page.text  # the owner's timeline: this file is empty
    assert 'data-key="step-2" data-effect="external" data-status="claimed"' in page.text
    assert "charged" not in page.text  # as of offset 3 it was not completed yet
    assert "charged" in forwarder.get(run_href(CHANNEL)).text


@pytest.mark.parametrize("owner", ["owner_url", "older_owner_url"])
def test_a_redacting_instance_leaves_results_out_whoever_answers(
    request: pytest.FixtureRequest, tmp_path: Path, owner: str
) -> None:
    url: str = request.getfixturevalue(owner)
    for client in _forwarder(tmp_path, url, redact=True):
        status = client.get(OWNED[0])
        assert (status.json()["result"], status.json()["result_redacted"]) == (None, True)
        assert status.json()["result_hash"] is not None
        assert status.headers[REDACTED] == "true"
        history = client.get(f"/v1/history/{operation_id(CHANNEL, STEP2)}").json()
        assert [v["result"] for v in history["items"]] == [None, None, None]
        assert all(v["result_redacted"] for v in history["items"])
        page = client.get(run_href(CHANNEL)).text
        assert "charged" not in page
        assert "(redacted by the server)" in page
        if owner == "owner_url":  # it left the results out itself: its bytes pass on
            asked = {**AUTH, FORWARDED_BY: "test", REDACT: "true"}
            assert status.content == httpx.get(url + OWNED[0], headers=asked).content


@pytest.fixture
def secret_claim(ledger: Ledger) -> Ledger:
    commit(
        ledger.store,
        2,
        [
            (claim(CHANNEL, "secret-step", "s0", SECRET, "w5"), 30_000),
            (complete(CHANNEL, "secret-step", "s1", SECRET, {"done": 1}), 30_001),
        ],
    )
    return ledger


def test_no_claim_token_on_any_readable_surface(secret_claim: Ledger, tmp_path: Path) -> None:
    op = operation_id(CHANNEL, "secret-step")
    paths = [
        f"/v1/status/{CHANNEL}/secret-step",
        f"/v1/history/{op}",
        f"/v1/timeline/{CHANNEL}",
        f"/v1/side-effects/{CHANNEL}?from_step=1&to_step=2",
        "/v1/duplicates",
        "/v1/positions",
        "/ui/",
        run_href(CHANNEL),
        run_href(CHANNEL) + "?as_of_offset=8",
        "/openapi.json",
    ]
    app = create_app(secret_claim.store.cursor, token=SecretStr(TOKEN))
    for url in _serve(app):
        for client in _forwarder(tmp_path, url, redact=False):
            answers = [client.get(p) for p in paths] + [
                httpx.get(url + p, headers=AUTH) for p in paths
            ]
    assert all(a.status_code == 200 for a in answers), [a.url for a in answers if a.is_error]
    assert secret_claim.store.cursor().execute(
        "SELECT count(*) FROM history WHERE operation_id = ?", [op]
    ).fetchone() == (2,)
    for answer in answers:
        assert SECRET not in answer.text, answer.url
        assert SECRET not in str(answer.headers), answer.url


def test_only_a_forwarded_request_asks_for_redaction(ledger: Ledger) -> None:
    with TestClient(create_app(ledger.store.cursor)) as client:
        asked = client.get(OWNED[0], headers={REDACT: "true"})
        forwarded = client.get(OWNED[0], headers={REDACT: "true", FORWARDED_BY: "p-x"})
    assert (asked.json()["result"], REDACTED in asked.headers) == ("charged", False)
    assert (forwarded.json()["result"], forwarded.headers[REDACTED]) == (None, "true")
