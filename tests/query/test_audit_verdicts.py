"""One verdict per operation in the audit of doubles (issue 40, finding 3).

Each scenario is written through the real fold and store into a DuckDB file and read
back with the read-only queries: the items stay the evidence, the verdict says what
they add up to. Worker A's lease lapses, B reclaims; how B ends (and whether A answers
late) decides between ``single``, ``possible``, ``double`` and ``unsettled``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from oncelog.projector.store import Store
from oncelog.query.http import create_app
from oncelog.query.metrics_endpoint import AuditVerdicts
from oncelog.query.models import SuspectedDuplicate
from oncelog.query.queries import (
    audit_verdict_counts,
    channel_timeline,
    channel_verdicts,
    operation_history,
    suspected_duplicates,
    verdict_counts,
)
from oncelog.query.ui.channels import recent_channels
from oncelog.query.ui.pages import index_page
from oncelog.query.ui.timeline_model import RunData, build_view
from oncelog.query.verdicts import FORGED, failure_code
from oncelog.schemas.models import Fail
from tests.projector.fold_factories import LEASE_MS, Op
from tests.projector.store_factories import feed

S = 1_000
UNRECORDABLE = "result_unrecordable: datetime is not JSON (the tool ran: nothing recorded)"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with Store(tmp_path / "ledger.duckdb") as store:
        yield store


def _reclaimed(op: Op, at: int = 1 * S) -> list[Any]:
    """A claims (external) and goes silent; B reclaims once A's lease lapsed."""
    return [
        (op.claim("tA", worker="worker-A"), at),
        (op.claim("tB", worker="worker-B"), at + LEASE_MS),
    ]


def _fail(op: Op, token: str, error: str) -> Any:
    return op.request(token, Fail(error, False))


def _audit(store: Store, steps: list[Any]) -> list[SuspectedDuplicate]:
    feed(store, 0, steps)
    return suspected_duplicates(store.cursor())


def _kinds_and_verdicts(items: list[SuspectedDuplicate]) -> list[tuple[str, str]]:
    return [(i.kind, i.verdict) for i in items]


@pytest.mark.parametrize("late_first", [False, True])
def test_the_demos_zombie_is_single_when_the_next_holder_found_its_effect(
    store: Store, late_first: bool
) -> None:
    """A paused worker completes late; B had reconciled A's refund as found: one refund."""
    op = Op()
    late = (op.complete("tA", "refund-1"), 3 * S + LEASE_MS)
    found = (op.complete("tB", "refund-1")._replace(reconciled="found"), 2 * S + LEASE_MS)
    items = _audit(store, [*_reclaimed(op), *([late, found] if late_first else [found, late])])
    assert sorted(_kinds_and_verdicts(items)) == [
        ("stale_completion", "single"),
        ("unknown_outcome", "single"),
    ]
    assert not any(i.possible_duplicate for i in items)


def test_a_lease_and_retry_without_reconcile_is_possible(store: Store) -> None:
    """chaos' lease-and-retry: A died after its effect; B ran the tool again, no reconcile."""
    op = Op()
    items = _audit(store, [*_reclaimed(op), (op.complete("tB", "refund-2"), 2 * S + LEASE_MS)])
    assert _kinds_and_verdicts(items) == [("unknown_outcome", "possible")]
    assert items[0].possible_duplicate


def test_a_late_completion_and_an_unreconciled_retry_are_a_double(store: Store) -> None:
    """No reconcile hook, and both attempts completed: two effects proven."""
    op = Op()
    steps = [
        *_reclaimed(op),
        (op.complete("tB", "refund-2"), 2 * S + LEASE_MS),
        (op.complete("tA", "refund-1"), 3 * S + LEASE_MS),
    ]
    items = _audit(store, steps)
    assert _kinds_and_verdicts(items) == [
        ("unknown_outcome", "double"),
        ("stale_completion", "double"),
    ]
    assert verdict_counts(items) == {"": {"double": 1}}  # one operation, counted once


def test_an_unknown_outcome_is_settled_by_a_failure_too(store: Store) -> None:
    """A failure without reconciling settles it: possible (the tool may have run twice)."""
    op = Op()
    items = _audit(store, [*_reclaimed(op), (op.fail("tB", retryable=False), 2 * S + LEASE_MS)])
    assert [(i.settled, i.reconciled, i.verdict) for i in items] == [("failed", None, "possible")]


@pytest.mark.parametrize(("reconciled", "verdict"), [("found", "single"), ("not_found", "single")])
def test_an_unknown_outcome_reconciled_either_way_is_single(
    store: Store, reconciled: str, verdict: str
) -> None:
    op = Op()
    done = op.complete("tB", "ok")._replace(reconciled=reconciled)
    items = _audit(store, [*_reclaimed(op), (done, 2 * S + LEASE_MS)])
    assert _kinds_and_verdicts(items) == [("unknown_outcome", verdict)]


def test_an_unknown_outcome_nobody_settled_yet_is_unsettled(store: Store) -> None:
    items = _audit(store, _reclaimed(Op()))
    assert [(i.settled, i.verdict) for i in items] == [(None, "unsettled")]


def test_an_unrecordable_result_after_a_reclaim_is_possible(store: Store) -> None:
    """B's tool ran, its result could not be recorded: the failure settles A's unknown
    outcome without reconciling."""
    op = Op()
    items = _audit(store, [*_reclaimed(op), (_fail(op, "tB", UNRECORDABLE), 2 * S + LEASE_MS)])
    assert [(i.kind, i.settled, i.settled_code, i.verdict) for i in items] == [
        ("unknown_outcome", "failed", "result_unrecordable", "possible")
    ]


@pytest.mark.parametrize(
    ("reconciled", "verdict"), [(None, "possible"), ("found", "single"), ("not_found", "possible")]
)
def test_a_fenced_unrecordable_result_is_evidence_of_the_fenced_attempts_run(
    store: Store, reconciled: str | None, verdict: str
) -> None:
    """A's tool ran but its result could not be recorded, after B reclaimed: A's failure is
    fenced, and listed; B's completion decides."""
    op = Op()
    steps = [
        *_reclaimed(op),
        (_fail(op, "tA", UNRECORDABLE), 2 * S + LEASE_MS),
        (op.complete("tB", "ok")._replace(reconciled=reconciled), 3 * S + LEASE_MS),
    ]
    items = _audit(store, steps)
    assert [i.kind for i in items] == ["unknown_outcome", "unrecordable_result"]
    assert {i.verdict for i in items} == {verdict}
    assert (items[1].stale_epoch, items[1].stale_worker_id) == (1, "worker-A")


def test_an_unrecordable_result_without_a_reclaim_is_no_item(store: Store) -> None:
    """The tool ran once and its failure settled the step: nothing to audit."""
    op = Op()
    steps = [(op.claim("tA", worker="worker-A"), 1 * S), (_fail(op, "tA", UNRECORDABLE), 2 * S)]
    assert _audit(store, steps) == []


def test_a_fenced_ordinary_failure_is_no_item(store: Store) -> None:
    op = Op()
    steps = [*_reclaimed(op), (op.fail("tA", retryable=False), 2 * S + LEASE_MS)]
    assert _kinds_and_verdicts(_audit(store, steps)) == [("unknown_outcome", "unsettled")]


def test_channel_verdicts_count_operations_per_channel(store: Store) -> None:
    zombie, retried, quiet = Op(channel_id="zombie"), Op(channel_id="retried"), Op(channel_id="q")
    found = zombie.complete("tB", "ok")._replace(reconciled="found")
    feed(
        store,
        0,
        [
            *_reclaimed(zombie),
            (found, 2 * S + LEASE_MS),
            (zombie.complete("tA", "ok"), 3 * S + LEASE_MS),
            *_reclaimed(retried, at=4 * S + LEASE_MS),
            (retried.complete("tB", "ok"), 5 * S + 2 * LEASE_MS),
            (quiet.claim("tQ"), 6 * S + 2 * LEASE_MS),
        ],
    )
    counts = channel_verdicts(store.cursor(), ["zombie", "retried", "q"])
    assert counts == {"zombie": {"single": 1}, "retried": {"possible": 1}}
    assert channel_verdicts(store.cursor(), ["retried"]) == {"retried": {"possible": 1}}
    assert channel_verdicts(store.cursor(), []) == {}


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (UNRECORDABLE, "result_unrecordable"),
        ("[result_unrecordable] over 1 MiB", "result_unrecordable"),
        ("result_unrecordable", "result_unrecordable"),
        ("ValueError: boom", "ValueError"),
        ("result_unrecordable_x: no", "result_unrecordable_x"),
        ("  spaced", None),
        (None, None),
    ],
)
def test_a_failures_code_is_its_first_word(text: str | None, code: str | None) -> None:
    assert failure_code(text) == code


def test_the_channel_list_flags_a_possible_never_a_reconciled_zombie(store: Store) -> None:
    zombie, retried = Op(channel_id="zombie"), Op(channel_id="retried")
    feed(
        store,
        0,
        [
            *_reclaimed(zombie),
            (zombie.complete("tB", "ok")._replace(reconciled="found"), 2 * S + LEASE_MS),
            (zombie.complete("tA", "ok"), 3 * S + LEASE_MS),
            *_reclaimed(retried, at=4 * S + LEASE_MS),
            (retried.complete("tB", "ok"), 5 * S + 2 * LEASE_MS),
        ],
    )
    summaries = {c.channel: c for c in recent_channels(store.cursor(), 10)}
    assert (summaries["zombie"].flagged, summaries["retried"].flagged) == (False, True)
    rows = index_page(list(summaries.values()), 10, "").split("<tr data-channel=")[1:]
    by_name = {r.split('"')[1]: r for r in rows}
    assert 'data-flagged="false"' in by_name["zombie"]
    assert "class='dup" not in by_name["zombie"]
    assert "data-verdict='single'" in by_name["zombie"]
    assert 'data-flagged="true"' in by_name["retried"]
    assert "<span class='dup possible' data-verdict='possible'>? 1 possible" in by_name["retried"]


def test_the_metric_counts_operations_by_verdict_at_scrape_time(store: Store) -> None:
    zombie, retried, double = Op(channel_id="z"), Op(channel_id="r"), Op(channel_id="d")
    steps = [
        *_reclaimed(zombie),
        (zombie.complete("tB", "ok")._replace(reconciled="found"), 2 * S + LEASE_MS),
        (zombie.complete("tA", "ok"), 3 * S + LEASE_MS),
        *_reclaimed(retried, at=4 * S + LEASE_MS),
    ]
    feed(store, 0, steps)
    first = {"double": 0, "possible": 0, "unsettled": 1, "single": 1}
    with TestClient(create_app(store.cursor, metrics=CollectorRegistry())) as client:
        assert _samples(client.get("/metrics").text) == first
    now = [0.0]
    verdicts = AuditVerdicts(store.cursor, max_age_s=30, clock=lambda: now[0])
    registry = CollectorRegistry()
    registry.register(verdicts)
    assert _samples(generate_latest(registry).decode()) == first
    # The retry ends without reconciling; another operation doubles: the gauge follows,
    # once its count is older than max_age_s (a scrape does not query DuckDB every time).
    feed(store, 0, [
        (retried.complete("tB", "ok"), 5 * S + 2 * LEASE_MS),
        *_reclaimed(double, at=6 * S + 2 * LEASE_MS),
        (double.complete("tB", "ok"), 7 * S + 3 * LEASE_MS),
        (double.complete("tA", "ok"), 8 * S + 3 * LEASE_MS),
    ])  # fmt: skip
    now[0] = 29.0
    assert _samples(generate_latest(registry).decode()) == first
    now[0] = 30.0
    after = {"double": 1, "possible": 1, "unsettled": 0, "single": 1}
    assert _samples(generate_latest(registry).decode()) == after


def _samples(text: str) -> dict[str, float]:
    return {
        s.labels["verdict"]: s.value
        for f in text_string_to_metric_families(text)
        if f.name == "oncelog_audit_operations"
        for s in f.samples
    }


def _scenarios() -> dict[str, Callable[[Op], list[Any]]]:
    def settled(done: Any) -> Callable[[Op], list[Any]]:
        return lambda op: [*_reclaimed(op), (done(op), 2 * S + LEASE_MS)]

    def late(done: Any) -> Callable[[Op], list[Any]]:
        return lambda op: [*settled(done)(op), (op.complete("tA", "a"), 3 * S + LEASE_MS)]

    found = lambda op: op.complete("tB", "b")._replace(reconciled="found")  # noqa: E731
    plain = lambda op: op.complete("tB", "b")  # noqa: E731
    failed = lambda op: op.fail("tB", retryable=False)  # noqa: E731
    unrecordable = lambda op: _fail(op, "tB", UNRECORDABLE)  # noqa: E731
    return {
        "zombie": late(found),
        "chaos": settled(plain),
        "double": late(plain),
        "failed": settled(failed),
        "late-after-failure": late(failed),
        "unrecordable": settled(unrecordable),
        "late-after-unrecordable": late(unrecordable),
        "unsettled": _reclaimed,
    }


@pytest.mark.parametrize("name", list(_scenarios()))
def test_the_run_page_judges_as_the_audit_does(store: Store, name: str) -> None:
    """The page's verdicts come from the timeline in Python; the audit's from SQL: equal."""
    op = Op(channel_id=f"run-{name}")
    items = _audit(store, _scenarios()[name](op))
    con = store.cursor()
    timeline = channel_timeline(con, op.channel_id)
    versions = {op.operation_id: operation_history(con, op.operation_id)}
    [row] = build_view(RunData(op.channel_id, timeline, versions)).rows
    assert {i.verdict for i in items} == {row.verdict}


def test_the_gauges_count_is_the_audits_count_of_its_items(store: Store) -> None:
    zombie, retried, double, open_, forged = (Op(channel_id=c) for c in "zrdou")
    feed(store, 0, [
        *_reclaimed(zombie),
        (zombie.complete("tB", "ok")._replace(reconciled="found"), 2 * S + LEASE_MS),
        (zombie.complete("tA", "ok"), 3 * S + LEASE_MS),
        *_reclaimed(retried, at=4 * S + LEASE_MS),
        (retried.complete("tB", "ok"), 5 * S + 2 * LEASE_MS),
        *_reclaimed(double, at=6 * S + 2 * LEASE_MS),
        (double.complete("tB", "ok"), 7 * S + 3 * LEASE_MS),
        (double.complete("tA", "ok"), 8 * S + 3 * LEASE_MS),
        *_reclaimed(open_, at=9 * S + 3 * LEASE_MS),
        (forged.claim("tF", worker="worker-F"), 10 * S + 4 * LEASE_MS),
        (forged.complete("never-granted", "ok"), 11 * S + 4 * LEASE_MS),
    ])  # fmt: skip
    cursor = store.cursor()
    items = suspected_duplicates(cursor)
    assert FORGED in {i.kind for i in items}
    expected = verdict_counts([i for i in items if i.kind != FORGED]).get("", {})
    assert expected == {"single": 1, "possible": 1, "double": 1, "unsettled": 1}
    assert audit_verdict_counts(cursor) == expected
