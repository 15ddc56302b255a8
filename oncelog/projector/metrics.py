"""The projector's Prometheus metrics: what ``GET /metrics`` of ``oncelog serve`` reports.

Observations only: nothing here is read back by the fold or by any decision (the
``lint-imports`` contract "Metrics are observations only" keeps the fold and the
batch folder from importing this module). The metrics live in a
:class:`~prometheus_client.CollectorRegistry` that the serve process builds and
hands to both the projector and the HTTP API, never in the library's global
registry: several projectors in one process (the tests) do not clash.

Cheap on the hot path: the projector reports once per poll batch with totals
(:meth:`ProjectorMetrics.batch_folded`), the cached-state count is read at
scrape time, and the high watermarks come from the consumer's cache, filled by
the fetches it makes anyway (no broker round trip).
"""

from __future__ import annotations

import contextlib
from collections import Counter as Tally
from collections.abc import Callable, Iterable
from typing import Final

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from oncelog.projector.store import AuditEntry, DeadLetter
from oncelog.schemas.models import Kind, Outcome

#: Seconds: from half a millisecond (a small batch) to 10 s (a stalled commit).
FOLD_BUCKETS: Final = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5)
COMMIT_BUCKETS: Final = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)

_POSITION = ("topic", "partition")


APPROVAL_BUCKETS: Final = (1, 10, 60, 300, 900, 3600, 4 * 3600, 24 * 3600)
"""Seconds: a person decides in seconds to a day."""
_DECIDED: Final = frozenset({Outcome.APPROVED, Outcome.DENIED})
DOUBLE_KINDS: Final = ("stale_completion", "unknown_outcome")
"""The ``kind`` label of the duplicates counter: proven and possible doubles."""
_DUPLICATES_HELP: Final = (
    "Side effects that may have run twice, by kind: stale_completion (a completion by a fenced "
    "attempt: proven) and unknown_outcome (a reclaim of an external step whose attempt never "
    "reported: possible)."
)


def _approval_histogram(registry: CollectorRegistry) -> Histogram:
    return Histogram(
        "oncelog_approval_decision_seconds",
        "Log time from an approval intent to its decision, by decision.",
        ("decision",),
        registry=registry,
        buckets=APPROVAL_BUCKETS,
    )


class ProjectorMetrics:
    """Every ``oncelog_*`` metric of one projector, registered in ``registry``."""

    def __init__(self, registry: CollectorRegistry, topic: str) -> None:
        self.registry = registry
        self._topic = topic
        self._next: dict[int, int] = {}  # partition -> next offset to fold
        self.lag = Gauge(
            "oncelog_consumer_lag",
            "Requests on the log not folded yet: high watermark - next offset to fold.",
            _POSITION,
            registry=registry,
        )
        self.last_folded = Gauge(
            "oncelog_last_folded_offset",
            "Offset of the last request folded (-1: none yet on this partition).",
            _POSITION,
            registry=registry,
        )
        self.decisions = Counter(
            "oncelog_decisions",
            "Decisions published, by request kind and outcome.",
            ("kind", "outcome"),
            registry=registry,
        )
        self.dead_letters = Counter(
            "oncelog_dead_letters",
            "Records sent to the dead-letter topic, by error code.",
            ("code",),
            registry=registry,
        )
        self.duplicates = Counter(
            "oncelog_suspected_duplicate_effects",
            _DUPLICATES_HELP,
            ("kind",),
            registry=registry,
        )
        self.forged = Counter(
            "oncelog_forged_or_unknown_token_completions",
            "Completions with a claim token no grant of the operation went to (not duplicates).",
            registry=registry,
        )
        self.fold_seconds = Histogram(
            "oncelog_fold_batch_seconds",
            "Decode, validate and fold one poll batch.",
            registry=registry,
            buckets=FOLD_BUCKETS,
        )
        self.commit_seconds = Histogram(
            "oncelog_commit_seconds",
            "One DuckDB commit: the merged batches of about a second.",
            registry=registry,
            buckets=COMMIT_BUCKETS,
        )
        self.approval_seconds = _approval_histogram(registry)
        self.cached_states = Gauge(
            "oncelog_cached_states",
            "Execution states held in memory (the LRU state cache).",
            registry=registry,
        )
        self._show_zeros()

    def _show_zeros(self) -> None:
        # Made at once, so that a scrape before the first duplicate shows 0, not nothing.
        for kind in DOUBLE_KINDS:
            self.duplicates.labels(kind).inc(0)
        self.forged.inc(0)

    def count_cached_states(self, size: Callable[[], int]) -> None:
        """Read the cache's size at each scrape (``len`` of a dict: safe from another thread)."""
        self.cached_states.set_function(lambda: float(size()))

    def assigned(self, partition: int, next_offset: int) -> None:
        """A partition now folded here from ``next_offset``."""
        self._next[partition] = next_offset
        self.last_folded.labels(self._topic, str(partition)).set(next_offset - 1)

    def released(self, partitions: Iterable[int]) -> None:
        """Partitions revoked or lost: another member reports them from now on."""
        for p in partitions:
            self._next.pop(p, None)
            for gauge in (self.lag, self.last_folded):
                # Older prometheus-client raises for a series never set (no watermark yet).
                with contextlib.suppress(KeyError):
                    gauge.remove(self._topic, str(p))

    def next_offsets(self) -> dict[int, int]:
        """Each assigned partition's next offset to fold."""
        return dict(self._next)

    def assigned_partitions(self) -> list[int]:
        """The partitions whose lag this projector reports."""
        return list(self._next)

    def watermark(self, partition: int, high: int) -> None:
        """The partition's high watermark as last fetched: sets its lag."""
        next_offset = self._next.get(partition)
        if next_offset is not None and high >= 0:
            self.lag.labels(self._topic, str(partition)).set(max(0, high - next_offset))

    def batch_folded(
        self,
        seconds: float,
        audit: list[AuditEntry],
        dead: list[DeadLetter],
        next_offsets: dict[int, int],
    ) -> None:
        """One poll batch: its fold time, decisions, dead letters and new positions."""
        self.fold_seconds.observe(seconds)
        # Tallied first: one labelled increment per kind and outcome, not one per record.
        outcomes = Tally((e.decision.kind, e.decision.outcome) for e in audit)
        for (kind, outcome), n in outcomes.items():
            self.decisions.labels(kind.value, outcome.value).inc(n)
        self._count_doubles(audit)
        self._time_decisions(audit)
        for code, n in Tally(d.code for d in dead).items():
            self.dead_letters.labels(code).inc(n)
        for p, next_offset in next_offsets.items():
            self._next[p] = next_offset
            self.last_folded.labels(self._topic, str(p)).set(next_offset - 1)

    def _count_doubles(self, audit: list[AuditEntry]) -> None:
        """The batch's proven and possible doubles, and its forged completions, apart."""
        stale = unknown = forged = 0
        for e in audit:
            d = e.decision
            if d.outcome is Outcome.STALE_CLAIM and d.kind is Kind.COMPLETE:
                if d.duplicate_effect_suspected:
                    stale += 1
                else:
                    forged += 1
            elif d.changed and d.previous is not None and d.previous.outcome_unknown:
                unknown += 1
        for kind, n in zip(DOUBLE_KINDS, (stale, unknown), strict=True):
            if n:
                self.duplicates.labels(kind).inc(n)
        if forged:
            self.forged.inc(forged)

    def _time_decisions(self, audit: list[AuditEntry]) -> None:
        """Each approve or deny that decided an intent: how long the intent waited."""
        for e in audit:
            d = e.decision
            if not d.changed or d.outcome not in _DECIDED or d.state is None:
                continue
            approval = d.state.approval
            if approval is not None and approval.decided_at_ms is not None:
                waited = approval.decided_at_ms - approval.requested_at_ms
                self.approval_seconds.labels(d.outcome.value).observe(waited / 1000)

    def committed(self, seconds: float) -> None:
        """One DuckDB commit took ``seconds``."""
        self.commit_seconds.observe(seconds)
