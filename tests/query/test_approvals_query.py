"""The pending approvals query: intents awaiting a decision, from the real fold and store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.identity.ids import request_hash
from oncelog.projector.store import Store
from oncelog.query.approvals import pending_approvals
from oncelog.query.http import create_app
from oncelog.query.merge import merge_approvals
from oncelog.query.metrics_endpoint import DuckdbMemory, PendingApprovals
from oncelog.query.models import Page, PendingApproval
from tests.projector.fold_factories import Op
from tests.projector.store_factories import feed

Con = duckdb.DuckDBPyConnection

WAITING = Op(key_name="pay:1")
APPROVED = Op(key_name="pay:2")
DENIED = Op(key_name="pay:3")
LATER = Op(channel_id="run-9", key_name="pay:4")
PLAIN = Op(key_name="lookup")


def _ledger(store: Store) -> None:
    feed(
        store,
        0,
        [
            (WAITING.ask("t1", timeout_ms=5_000), 1_000),
            (APPROVED.ask("t2"), 1_100),
            (APPROVED.approve(), 1_200),
            (DENIED.ask("t3"), 1_300),
            (DENIED.deny(), 1_400),
            (PLAIN.claim("t4"), 1_500),
            (WAITING.ask("t5"), 1_600),  # a second claim waits: no new intent
        ],
    )
    feed(store, 1, [(LATER.ask("t6", timeout_ms=9_000), 900)])


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Con]:
    path: Path = tmp_path_factory.mktemp("approvals") / "ledger.duckdb"
    with Store(path) as store:
        _ledger(store)
        cursor = store.cursor()
        yield cursor
        cursor.close()


@pytest.fixture(scope="module")
def client(con: Con) -> Iterator[TestClient]:
    with TestClient(create_app(con.cursor, max_rows=1)) as test_client:
        yield test_client


def test_only_undecided_intents_are_listed_oldest_first(con: Con) -> None:
    items = pending_approvals(con, 10)
    assert [a.operation_id for a in items] == [LATER.operation_id, WAITING.operation_id]
    first, second = items
    assert (first.channel_id, first.key_name, first.partition) == ("run-9", "pay:4", 1)
    assert (first.requested_at_ms, first.deadline_ms) == (900, 9_900)
    assert (second.requested_at_ms, second.deadline_ms, second.offset) == (1_000, 6_000, 0)
    assert second.tool_name == WAITING.tool_name
    params = {"order_id": "4471", "amount_cents": 4200}
    assert second.request_hash == request_hash(WAITING.tool_name, params)


def test_the_limit_caps_the_answer(con: Con) -> None:
    assert [a.key_name for a in pending_approvals(con, 1)] == ["pay:4"]


def _page(*items: PendingApproval, truncated: bool = False) -> Page[PendingApproval]:
    return Page[PendingApproval](items=list(items), limit=10, truncated=truncated)


def test_members_pages_merge_once_per_operation_oldest_first(con: Con) -> None:
    later, waiting = pending_approvals(con, 10)
    merged = merge_approvals([_page(waiting, later), _page(waiting)])
    assert merged.items == [later, waiting]
    assert not merged.truncated


def test_get_v1_approvals_answers_a_page_capped_by_max_rows(client: TestClient) -> None:
    page = client.get("/v1/approvals").json()
    assert [item["key_name"] for item in page["items"]] == ["pay:4"]
    assert page["truncated"] is True
    assert page["items"][0]["deadline_ms"] == 9_900
    assert client.get("/v1/approvals", params={"limit": -1}).status_code == 400


def test_the_pending_gauge_counts_undecided_intents(con: Con) -> None:
    (family,) = PendingApprovals(con.cursor).collect()
    assert family.name == "oncelog_approvals_pending"
    assert [sample.value for sample in family.samples] == [2]


def test_the_cli_lists_the_intents_from_a_duckdb_file(tmp_path: Path) -> None:
    path = tmp_path / "ledger.duckdb"
    with Store(path) as store:
        _ledger(store)
    result = CliRunner().invoke(app, ["approvals", "list", "--db", str(path), "--json"])
    assert result.exit_code == 0, result.output
    assert '"key_name": "pay:4"' in result.output
    assert '"key_name": "pay:1"' in result.output
    assert "pay:2" not in result.output


def test_the_duckdb_memory_gauge_reads_duckdb_memory(con: Con) -> None:
    (family,) = DuckdbMemory(con.cursor).collect()
    assert family.name == "oncelog_duckdb_memory_bytes"
    by_tag = {sample.labels["tag"]: sample.value for sample in family.samples}
    assert by_tag  # a file with tables holds some memory
    assert all(value > 0 for value in by_tag.values())
