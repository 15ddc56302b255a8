"""The audit of doubles settles an unknown outcome by the next attempt's failure too."""

from __future__ import annotations

from pathlib import Path

from fastapi.testclient import TestClient

from oncelog.projector.store import Store
from oncelog.query.http import create_app
from oncelog.schemas.models import Effect, Fail
from tests.query.query_factories import LEASE_MS, claim, commit, request

CHANNEL, KEY = "run-9", "refund:order-17"


def test_an_unknown_outcome_followed_by_a_failure_is_settled_failed(tmp_path: Path) -> None:
    with Store(tmp_path / "ledger.duckdb") as store:
        # w1's attempt of an external step goes silent; w2 reclaims it, then fails it.
        commit(store, 1, [(claim(CHANNEL, KEY, "r0", "t1", "w1", Effect.EXTERNAL), 1_000)])
        commit(
            store,
            1,
            [
                (claim(CHANNEL, KEY, "r1", "t2", "w2", Effect.EXTERNAL), 1_001 + LEASE_MS),
                (request(CHANNEL, KEY, "r2", "t2", Fail("declined", False)), 1_002 + LEASE_MS),
            ],
        )
        with TestClient(create_app(store.cursor)) as http:
            answer = http.get("/v1/duplicates")
    assert answer.status_code == 200, answer.text
    (unknown,) = [i for i in answer.json()["items"] if i["kind"] == "unknown_outcome"]
    assert (unknown["key_name"], unknown["stale_worker_id"]) == (KEY, "w1")
    # Settled by the failure: not a possible double, and not "still running" either.
    assert unknown["settled"] == "failed"
    assert unknown["reconciled"] is None
