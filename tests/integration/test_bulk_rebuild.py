"""The bulk rebuild writes the live projection's rows: every table, row for row."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer

from oncelog.errors import LedgerError, StoreError
from oncelog.identity import ids
from oncelog.identity.partitioner import partition_for
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import bulk_rebuild, refold_pool
from oncelog.projector.rebuild import rebuild_from_requests
from oncelog.projector.store import Store
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Claim, Effect, Request, Sweep
from oncelog.settings import Settings
from tests.integration.conftest import FAST, start_projector
from tests.integration.helpers import kafka

pytestmark = pytest.mark.kafka

# Each table in its key order (the primary keys of tables.py).
_TABLES = {
    "executions": "operation_id",
    "history": "operation_id, version",
    "requests": '"partition", "offset"',
    "dead_letters": 'topic, "partition", "offset"',
    "positions": '"partition"',
}


def _dump(path: Path) -> dict[str, list[tuple[Any, ...]]]:
    with Store(path, read_only=True) as store:
        cursor = store.cursor()
        return {
            table: cursor.execute(f"SELECT * FROM {table} ORDER BY {order}").fetchall()
            for table, order in _TABLES.items()
        }


def _poison(topics: Settings, channel: str) -> None:
    """An undecodable record, an impossible claim and an early sweep, on ``channel``'s partition."""
    p = partition_for(channel, topics.partitions)
    op = ids.operation_id(channel, "k0")
    impossible = Request(
        "req-bad-lease", op, channel, "k0", "tok",
        Claim("tool", b"{}", "0" * 64, -5, 1000, Effect.EXTERNAL, "w"),
    )  # fmt: skip
    sweep = Request("req-sweep", op, channel, "k0", None, Sweep())
    producer = Producer(kafka(topics))
    for value in (b"\x00garbage", encode_request(impossible), encode_request(sweep)):
        producer.produce(topics.requests_topic, value, op.encode(), partition=p)
    assert producer.flush(10) == 0


def _traffic(client: SyncLedgerClient) -> None:
    """Every kind of request and most outcomes, over a few channels."""
    for i in range(12):
        channel = f"run-{i % 3}"
        claim = client.claim_execution(channel, step=i, tool_name="t", params={"i": i})
        token = claim.claim_token
        client.heartbeat_execution(claim.execution, token)
        if i % 4 == 0:
            client.complete_execution(claim.execution, token, {"ok": i})
            client.claim_execution(channel, step=i, tool_name="t", params={"i": i})  # replayed
        elif i % 4 == 1:
            client.fail_execution(claim.execution, token, "boom", retryable=True)
            again = client.claim_execution(channel, step=i, tool_name="t", params={"i": i})
            with contextlib.suppress(LedgerError):  # fenced: the stale holder completes
                client.complete_execution(claim.execution, token, {"late": i})
            client.complete_execution(again.execution, again.claim_token, {"ok": i})
        elif i % 4 == 2:
            client.cancel_execution(claim.execution, "enough")
            client.release_execution(claim.execution, token)
        else:
            with contextlib.suppress(LedgerError):  # same step, other params: a conflict
                client.claim_execution(channel, step=i, tool_name="t", params={"i": -i})


@pytest.mark.parametrize(
    ("chunk", "workers"), [(bulk_rebuild.CHUNK, None), (5, 1), (5, 2)], ids=["one", "5", "5x2"]
)
def test_bulk_rebuild_equals_the_live_projection(
    topics: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int,
    workers: int | None,
) -> None:  # fmt: skip
    # A chunk of 5 splits operations across transactions: versions closed by a later one.
    # Two workers refold the partitions in processes of their own, chunks of 5 handed over.
    monkeypatch.setattr(bulk_rebuild, "CHUNK", chunk)
    live = tmp_path / "live.duckdb"
    store = Store(live)
    running = start_projector(topics, store, sweep_interval_s=3600)
    _poison(topics, "run-0")
    with SyncLedgerClient(topics, timeouts=FAST) as client:
        _traffic(client)  # run-0's answers come after the poison: it is folded too
    running.halt()
    store.close()
    rebuilt = tmp_path / "rebuilt.duckdb"
    heard: dict[int, int] = {}
    with Store(rebuilt) as target:
        done = rebuild_from_requests(
            topics, kafka(topics), target, lambda p, n: heard.update({p: heard.get(p, 0) + n}),
            workers=workers,
        )  # fmt: skip
    expected, actual = _dump(live), _dump(rebuilt)
    assert sum(heard.values()) == done  # progress hears every record, from the workers too
    assert len(expected["dead_letters"]) == 2
    assert sum(len(rows) for rows in expected.values()) > 100
    assert done == len(expected["requests"]) + 1  # the undecodable record has no audit row
    for table in _TABLES:
        assert actual[table] == expected[table], table


def test_bulk_rebuild_refuses_a_projection_that_is_not_empty(
    topics: Settings, tmp_path: Path
) -> None:
    path = tmp_path / "busy.duckdb"
    with Store(path) as store:
        store.cursor().execute("INSERT INTO positions VALUES (0, 1, NULL)")
        with pytest.raises(StoreError, match="already holds a projection"):
            rebuild_from_requests(topics, kafka(topics), store)


def test_a_worker_that_fails_fails_the_refold_with_its_reason(
    topics: Settings, tmp_path: Path
) -> None:
    broken = {**kafka(topics), "no.such.property": "1"}  # the worker's consumer refuses it
    with Store(tmp_path / "target.duckdb") as store:
        con = store.cursor()
        with pytest.raises(StoreError, match=r"failed in a worker process.*no.such.property"):
            refold_pool.refold_in_processes(
                broken, topics.requests_topic, [0, 1], topics.partitions, con, workers=2
            )
        assert store.positions() == {}  # nothing written
