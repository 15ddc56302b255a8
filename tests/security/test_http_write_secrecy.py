"""No claim token reaches a surface others read through the HTTP write API (spec section 8).

A real broker and a real ``oncelog serve`` with both tokens. Every call of the write API
runs, with the claimers' own tokens and with stale ones; then every surface that is not
the claimer's own answer is searched for every token: the URLs asked (what an access log
would show), the answers to other callers (an in_progress claim, a cancel, a get, error
answers), the read API's answers, /metrics, the serve log and every DuckDB table.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import duckdb
import httpx
import pytest

from oncelog.identity.ids import operation_id
from tests.served import WRITE_TOKEN, Served, serving

pytestmark = pytest.mark.kafka

READ_TOKEN = "secrecy-read-token"
CHANNEL = "run-secret-http"


class Calls:
    """The write API's calls, each URL remembered."""

    def __init__(self, served: Served, urls: list[str]) -> None:
        def remember(request: httpx.Request) -> None:
            urls.append(str(request.url))

        self.http = httpx.Client(
            base_url=served.url,
            headers={"Authorization": f"Bearer {WRITE_TOKEN}"},
            event_hooks={"request": [remember]},
            timeout=60,
        )

    def claim(self, key_name: str, worker: str = "w1") -> dict[str, Any]:
        body = {
            "channel_id": CHANNEL,
            "key_name": key_name,
            "tool_name": "t",
            "params": {"k": key_name},
            "worker_id": worker,
        }
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        answer: dict[str, Any] = self.http.post("/v1/claims", json=body, headers=headers).json()
        return answer

    def act(self, key_name: str, action: str, **body: Any) -> httpx.Response:
        op = operation_id(CHANNEL, key_name)
        payload = {"channel_id": CHANNEL, "key_name": key_name, **body}
        return self.http.post(f"/v1/executions/{op}/{action}", json=payload)


def _cycle(calls: Calls) -> tuple[list[str], list[str]]:
    """Every call, own tokens and stale ones: (the tokens, the answers others got)."""
    others: list[str] = []
    a = calls.claim("a")["claim_token"]
    calls.act("a", "heartbeat", claim_token=a)
    calls.act("a", "complete", claim_token=a, result="done")
    others.append(calls.http.post("/v1/claims", json={}).text)  # a 400
    b = calls.claim("b")["claim_token"]
    calls.act("b", "fail", claim_token=b, error="boom", retryable=True)
    c = calls.claim("b")["claim_token"]
    others.append(str(calls.claim("b", worker="w2")))  # in_progress, to someone else
    others.append(calls.act("b", "cancel", reason="stop").text)
    stale_calls: dict[str, dict[str, Any]] = {
        "heartbeat": {},
        "complete": {"result": 1},
        "fail": {"error": "x"},
        "release": {},
    }
    for action, extra in stale_calls.items():
        others.append(calls.act("b", action, claim_token=b, **extra).text)
    others.append(calls.act("a", "complete", claim_token=a, result="other").text)  # conflict
    op_b = operation_id(CHANNEL, "b")
    got = calls.http.get(f"/v1/executions/{op_b}", params={"channel_id": CHANNEL, "key_name": "b"})
    others.append(got.text)
    calls.act("b", "release", claim_token=c)
    return [a, b, c], others


def _reads(served: Served) -> dict[str, str]:
    reader = httpx.Client(
        base_url=served.url, headers={"Authorization": f"Bearer {READ_TOKEN}"}, timeout=60
    )
    op_b = operation_id(CHANNEL, "b")
    paths = [
        f"/v1/timeline/{CHANNEL}",
        f"/v1/history/{op_b}",
        f"/v1/status/{CHANNEL}/b",
        "/v1/duplicates",
        "/v1/positions",
        "/metrics",
        "/openapi.json",
    ]
    return {path: reader.get(path).text for path in paths}


def _duckdb_text(path: Path) -> str:
    with duckdb.connect(str(path), read_only=True) as con:
        tables = [r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()]
        return "\n".join(str(con.execute(f'SELECT * FROM "{t}"').fetchall()) for t in tables)


def test_no_claim_token_on_any_surface_but_the_claimers_answer(
    bootstrap: str, tmp_path: Path
) -> None:
    urls: list[str] = []
    with serving(bootstrap, tmp_path, read_token=READ_TOKEN) as served:
        calls = Calls(served, urls)
        first = calls.claim("first")
        tokens, others = _cycle(calls)
        reads = _reads(served)
    assert first["claim_token"]
    assert first["claim_token"] in str(first)
    assert "stale_claim" in "".join(others)  # the fenced calls were answered, and searched
    surfaces = {
        "URLs asked (an access log)": "\n".join(urls),
        "answers to others and errors": "\n".join(others),
        **{f"GET {path}": text for path, text in reads.items()},
        "serve log": served.log.read_text(),
        "DuckDB": _duckdb_text(served.settings.db_path),
    }
    assert "assigned" in surfaces["serve log"]  # not empty: it was searched
    assert CHANNEL in surfaces["DuckDB"]  # the audit has the requests: it was searched
    every = [*tokens, first["claim_token"]]
    leaks = [(where, t) for t in every for where, text in surfaces.items() if t in text]
    assert leaks == []
