"""The projector's metrics, without Kafka: what one batch, a watermark and a release report."""

from __future__ import annotations

import re
from pathlib import Path

import duckdb
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from oncelog.cli.serve_cmd import prune_duty
from oncelog.projector.metrics import ProjectorMetrics
from oncelog.projector.store import AuditEntry, DeadLetter
from oncelog.query.metrics_endpoint import AuditVerdicts, PendingApprovals
from oncelog.schemas.models import Decision, Kind, Outcome, PreviousAttempt, Request, Status, Sweep
from oncelog.settings import Settings
from tests.projector.fold_factories import Op, run

TOPIC = "t.requests"
README = Path(__file__).resolve().parents[2] / "README.md"


def _entry(offset: int, kind: Kind, outcome: Outcome, *, duplicate: bool = False) -> AuditEntry:
    request = Request(f"r{offset}", "op", "ch", "k", None, Sweep())
    decision = Decision(
        f"r{offset}", "op", kind, outcome, False, 0, duplicate_effect_suspected=duplicate
    )
    return AuditEntry(0, offset, 0, request, decision)


def _dead(offset: int, code: str) -> DeadLetter:
    return DeadLetter(TOPIC, 0, offset, 0, code, "bad", 3)


def _value(registry: CollectorRegistry, name: str, **labels: str) -> float | None:
    return registry.get_sample_value(name, labels)


def test_a_batch_counts_decisions_by_kind_and_outcome_dead_letters_and_duplicates() -> None:
    registry = CollectorRegistry()
    metrics = ProjectorMetrics(registry, TOPIC)
    audit = [
        _entry(0, Kind.CLAIM, Outcome.CLAIMED),
        _entry(1, Kind.CLAIM, Outcome.CLAIMED),
        _entry(2, Kind.COMPLETE, Outcome.COMPLETED),
        _entry(3, Kind.COMPLETE, Outcome.STALE_CLAIM, duplicate=True),
    ]
    metrics.batch_folded(0.002, audit, [_dead(4, "codec_error")], {0: 5})
    metrics.batch_folded(0.003, audit[:1], [_dead(5, "codec_error")], {0: 6})
    claimed = {"kind": "claim", "outcome": "claimed"}
    assert _value(registry, "oncelog_decisions_total", **claimed) == 3
    assert _value(registry, "oncelog_decisions_total", kind="complete", outcome="completed") == 1
    stale = {"kind": "stale_completion"}
    assert _value(registry, "oncelog_suspected_duplicate_effects_total", **stale) == 1
    assert _value(registry, "oncelog_dead_letters_total", code="codec_error") == 2
    assert _value(registry, "oncelog_fold_batch_seconds_count") == 2
    assert _value(registry, "oncelog_last_folded_offset", topic=TOPIC, partition="0") == 5


def _reclaim(offset: int, *, unknown: bool) -> AuditEntry:
    previous = PreviousAttempt(1, "fp", "w1", 0, None, Status.CLAIMED, None, unknown)
    request = Request(f"r{offset}", "op", "ch", "k", "t", Sweep())
    decision = Decision(
        f"r{offset}", "op", Kind.CLAIM, Outcome.RECLAIMED, True, 0, previous=previous
    )
    return AuditEntry(0, offset, 0, request, decision)


def test_unknown_outcomes_count_apart_and_a_forged_completion_moves_no_duplicate() -> None:
    registry = CollectorRegistry()
    metrics = ProjectorMetrics(registry, TOPIC)
    name = "oncelog_suspected_duplicate_effects_total"
    for kind in ("stale_completion", "unknown_outcome"):
        assert _value(registry, name, kind=kind) == 0  # there before the first one
    forged = _entry(0, Kind.COMPLETE, Outcome.STALE_CLAIM, duplicate=False)
    metrics.batch_folded(0.001, [forged], [], {0: 1})
    assert _value(registry, name, kind="stale_completion") == 0
    assert _value(registry, name, kind="unknown_outcome") == 0
    assert _value(registry, "oncelog_forged_or_unknown_token_completions_total") == 1
    fenced_beat = _entry(1, Kind.HEARTBEAT, Outcome.STALE_CLAIM)  # neither
    metrics.batch_folded(0.001, [fenced_beat, _reclaim(2, unknown=True)], [], {0: 3})
    metrics.batch_folded(0.001, [_reclaim(3, unknown=False)], [], {0: 4})
    assert _value(registry, name, kind="unknown_outcome") == 1
    assert _value(registry, "oncelog_forged_or_unknown_token_completions_total") == 1


def test_lag_is_the_watermark_minus_the_next_offset_to_fold() -> None:
    registry = CollectorRegistry()
    metrics = ProjectorMetrics(registry, TOPIC)
    metrics.assigned(2, 10)
    position = {"topic": TOPIC, "partition": "2"}
    assert _value(registry, "oncelog_last_folded_offset", **position) == 9
    metrics.watermark(2, -1001)  # before the first fetch: unknown, not reported
    assert _value(registry, "oncelog_consumer_lag", **position) is None
    metrics.watermark(2, 25)
    assert _value(registry, "oncelog_consumer_lag", **position) == 15
    metrics.batch_folded(0.001, [], [], {2: 25})
    metrics.watermark(2, 25)
    assert _value(registry, "oncelog_consumer_lag", **position) == 0
    metrics.watermark(7, 100)  # not assigned here: another member reports it
    assert _value(registry, "oncelog_consumer_lag", topic=TOPIC, partition="7") is None


def test_a_released_partition_leaves_the_report() -> None:
    registry = CollectorRegistry()
    metrics = ProjectorMetrics(registry, TOPIC)
    metrics.assigned(0, 0)
    metrics.assigned(1, 0)
    metrics.watermark(0, 3)
    metrics.released([0, 1])  # partition 1 never had a watermark: no error either
    assert metrics.assigned_partitions() == []
    assert _value(registry, "oncelog_consumer_lag", topic=TOPIC, partition="0") is None
    assert _value(registry, "oncelog_last_folded_offset", topic=TOPIC, partition="1") is None


def test_cached_states_are_read_at_scrape_time_and_every_name_is_oncelog() -> None:
    registry = CollectorRegistry()
    metrics = ProjectorMetrics(registry, TOPIC)
    cache = {"a": 1}
    metrics.count_cached_states(cache.__len__)
    assert _value(registry, "oncelog_cached_states") == 1
    cache["b"] = 2
    assert _value(registry, "oncelog_cached_states") == 2
    metrics.committed(0.01)
    assert _value(registry, "oncelog_commit_seconds_count") == 1
    families = list(text_string_to_metric_families(generate_latest(registry).decode()))
    assert {f.name for f in families} >= {
        "oncelog_consumer_lag", "oncelog_last_folded_offset", "oncelog_decisions",
        "oncelog_dead_letters", "oncelog_suspected_duplicate_effects",
        "oncelog_fold_batch_seconds", "oncelog_commit_seconds", "oncelog_cached_states",
    }  # fmt: skip
    assert all(f.name.startswith("oncelog_") for f in families)


def test_two_projectors_in_one_process_keep_separate_registries() -> None:
    first, second = CollectorRegistry(), CollectorRegistry()
    get = _entry(0, Kind.GET, Outcome.CLAIMED)
    ProjectorMetrics(first, TOPIC).batch_folded(0.001, [get], [], {})
    ProjectorMetrics(second, TOPIC)  # would raise "Duplicated timeseries" in a shared one
    assert _value(first, "oncelog_decisions_total", kind="get", outcome="claimed") == 1
    assert _value(second, "oncelog_decisions_total", kind="get", outcome="claimed") is None


def test_the_readme_table_documents_every_metric_and_no_other() -> None:
    registry = CollectorRegistry()
    ProjectorMetrics(registry, TOPIC)
    prune_duty(Settings(), registry)  # serve's counter of the history's window
    exposed = {f.name + ("_total" if f.type == "counter" else "") for f in registry.collect()}
    # The serve process adds the audit's verdicts, read from DuckDB at scrape time.
    exposed |= {f.name for f in AuditVerdicts(_no_database).describe()}
    exposed |= {f.name for f in PendingApprovals(_no_database).describe()}
    documented = set(re.findall(r"^\| `(oncelog_\w+)` \|", README.read_text(), flags=re.M))
    assert documented == exposed


def _no_database() -> duckdb.DuckDBPyConnection:
    raise AssertionError("describe() reads no database")


def test_an_approval_decision_observes_how_long_its_intent_waited() -> None:
    registry = CollectorRegistry()
    metrics = ProjectorMetrics(registry, TOPIC)
    yes, no = Op(key_name="yes"), Op(key_name="no")
    steps = [(yes.ask("t1"), 1_000), (yes.approve(), 31_000), (yes.approve(), 32_000)]
    steps += [(no.ask("t2"), 2_000), (no.deny(), 4_000), (no.get(), 5_000)]
    _, decisions = run(steps[:3])
    _, more = run(steps[3:])
    folded = zip(steps, decisions + more, strict=True)
    audit = [AuditEntry(0, i, t, r, d) for i, ((r, t), d) in enumerate(folded)]
    metrics.batch_folded(0.001, audit, [], {0: len(audit)})
    name = "oncelog_approval_decision_seconds"
    assert _value(registry, f"{name}_count", decision="approved") == 1  # the replay adds none
    assert _value(registry, f"{name}_sum", decision="approved") == 30
    assert _value(registry, f"{name}_sum", decision="denied") == 2
