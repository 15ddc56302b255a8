"""Every ``requests`` row names its sender's attempt, and apart, the state it met (issue 26).

Worker A claims, B reclaims and completes, A completes late: the late row is A's (epoch
1, worker A, A's token fingerprint), met B's state (epoch 2). Read through the real fold,
the real store and the read-only queries, from one DuckDB file.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest

from oncelog.identity.tokens import token_fingerprint as fp
from oncelog.projector.migrate import migrate
from oncelog.projector.store import Store
from oncelog.query.queries import channel_timeline, suspected_duplicates
from tests.projector.fold_factories import LEASE_MS, Op
from tests.projector.store_factories import feed

S = 1_000
COLUMNS = (
    '"offset", kind, outcome, epoch, worker_id, token_fp, state_epoch, state_worker_id, '
    "outcome_unknown, previous_token_fp, previous_heartbeat_ms, duplicate_effect_suspected"
)


def _straggler(op: Op) -> list[Any]:
    """A claims and beats; B reclaims after the lease and completes; A completes late; a
    forged completion; a read; C claims the finished step (replayed, no grant)."""
    return [
        (op.claim("tA", worker="worker-A"), 1 * S),  # 0
        (op.heartbeat("tA"), 2 * S),  # 1
        (op.claim("tB", worker="worker-B"), 2 * S + LEASE_MS),  # 2: reclaimed, A unknown
        (op.complete("tB", "charged")._replace(reconciled="not_found"), 3 * S + LEASE_MS),  # 3
        (op.complete("tA", "charged"), 4 * S + LEASE_MS),  # 4: A's straggler
        (op.complete("forged", "charged"), 5 * S + LEASE_MS),  # 5: never granted
        (op.get(), 6 * S + LEASE_MS),  # 6: a read
        (op.claim("tC", worker="worker-C"), 7 * S + LEASE_MS),  # 7: replayed, no grant
    ]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "ledger.duckdb") as store:
        yield store


def _rows(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(f'SELECT {COLUMNS} FROM requests ORDER BY "offset"').fetchall()


def test_each_row_names_its_senders_attempt_and_the_state_it_met(store: Store) -> None:
    op = Op()
    feed(store, 0, _straggler(op))
    a, b = fp("tA"), fp("tB")
    assert _rows(store.cursor()) == [
        (0, "claim", "claimed", 1, "worker-A", a, None, None, False, None, None, False),
        (1, "heartbeat", "heartbeat_ok", 1, "worker-A", a, 1, "worker-A", False, None, None, False),
        (2, "claim", "reclaimed", 2, "worker-B", b, 1, "worker-A", True, a, 2 * S, False),
        (3, "complete", "completed", 2, "worker-B", b, 2, "worker-B", False, None, None, False),
        (4, "complete", "stale_claim", 1, "worker-A", a, 2, "worker-B", False, None, None, True),
        (5, "complete", "stale_claim", None, None, fp("forged"), 2, "worker-B", False, None,
         None, False),
        (6, "get", "state_completed", None, None, None, 2, "worker-B", False, None, None, False),
        (7, "claim", "replayed", None, "worker-C", fp("tC"), 2, "worker-B", False, None, None,
         False),
    ]  # fmt: skip


def test_a_deeply_stale_sender_is_named_from_the_grants_in_memory(store: Store) -> None:
    op = Op()
    steps = [
        (op.claim("tA", worker="worker-A"), 1 * S),
        (op.claim("tB", worker="worker-B"), 1 * S + LEASE_MS),
        (op.claim("tC", worker="worker-C"), 1 * S + 2 * LEASE_MS),
        (op.complete("tA", "late"), 1 * S + 3 * LEASE_MS),
    ]
    feed(store, 0, steps)
    last = _rows(store.cursor())[-1]
    assert last[3:8] == (1, "worker-A", fp("tA"), 3, "worker-C")
    assert last[-1] is True


def test_the_timeline_carries_the_attribution_and_leaves_reads_out(store: Store) -> None:
    op = Op()
    feed(store, 0, _straggler(op))
    timeline = channel_timeline(store.cursor(), op.channel_id)
    assert "get" not in {e.kind for e in timeline}
    late = next(e for e in timeline if e.offset == 4)
    assert (late.epoch, late.worker_id, late.token_fp) == (1, "worker-A", fp("tA"))
    assert (late.state_epoch, late.state_worker_id) == (2, "worker-B")
    reclaim = next(e for e in timeline if e.offset == 2)
    assert reclaim.outcome_unknown is True
    assert next(e for e in timeline if e.offset == 3).reconciled == "not_found"


def test_the_audit_lists_both_kinds_oldest_first_and_the_forgery_apart(store: Store) -> None:
    op = Op()
    feed(store, 0, _straggler(op))
    audit = suspected_duplicates(store.cursor())
    assert [(d.kind, d.offset) for d in audit] == [
        ("unknown_outcome", 2),
        ("stale_completion", 4),
        ("forged_or_unknown_token", 5),
    ]
    unknown, stale, forged = audit
    # The attempt that may have doubled, next to the epoch holding the operation.
    assert (unknown.stale_epoch, unknown.stale_worker_id, unknown.token_fp) == (
        1,
        "worker-A",
        fp("tA"),
    )
    assert (unknown.current_epoch, unknown.last_heartbeat_ms) == (2, 2 * S)
    assert (unknown.settled, unknown.reconciled, unknown.possible_duplicate) == (
        "completed",
        "not_found",
        False,
    )
    assert (stale.stale_epoch, stale.stale_worker_id, stale.token_fp) == (1, "worker-A", fp("tA"))
    assert stale.current_epoch == 2
    assert (forged.stale_epoch, forged.stale_worker_id, forged.current_epoch) == (None, None, 2)


@pytest.mark.parametrize(
    ("reconciled", "settled", "possible"),
    [(None, "completed", True), ("found", "completed", False), (None, None, False)],
)
def test_an_unknown_outcome_settled_without_reconciling_is_a_possible_duplicate(
    store: Store, reconciled: str | None, settled: str | None, possible: bool
) -> None:
    op = Op()
    steps = [
        (op.claim("tA", worker="worker-A"), 1 * S),
        (op.claim("tB", worker="worker-B"), 1 * S + LEASE_MS),
    ]
    if settled is not None:
        steps.append((op.complete("tB", "ok")._replace(reconciled=reconciled), 2 * S + LEASE_MS))
    feed(store, 0, steps)
    [item] = suspected_duplicates(store.cursor())
    assert (item.kind, item.settled, item.reconciled) == ("unknown_outcome", settled, reconciled)
    assert item.possible_duplicate is possible


def test_an_older_file_is_migrated_to_the_senders_attempt(tmp_path: Path) -> None:
    """A file whose rows named the state's holder: the migration names the sender."""
    path = tmp_path / "old.duckdb"
    op = Op()
    with Store(path) as store:
        feed(store, 0, _straggler(op)[:5])
    con = duckdb.connect(str(path))
    # The layout before: no attribution columns, epoch and worker_id of the state.
    con.execute("DROP INDEX requests_channel")
    for column in (
        "state_epoch",
        "state_worker_id",
        "outcome_unknown",
        "previous_token_fp",
        "previous_heartbeat_ms",
    ):
        con.execute(f"ALTER TABLE requests DROP COLUMN {column}")
    con.execute("UPDATE requests SET epoch = 2, worker_id = 'worker-B' WHERE \"offset\" = 4")
    assert "requests" in migrate(con)
    rows = con.execute(
        'SELECT "offset", epoch, worker_id, state_epoch, state_worker_id, outcome_unknown '
        'FROM requests ORDER BY "offset"'
    ).fetchall()
    con.close()
    assert rows == [
        (0, 1, "worker-A", None, None, None),
        (1, 1, "worker-A", 1, "worker-A", None),
        (2, 2, "worker-B", 1, "worker-A", None),  # rebuild to learn the unknown outcome
        (3, 2, "worker-B", 2, "worker-B", None),
        (4, 1, "worker-A", 2, "worker-B", None),
    ]
