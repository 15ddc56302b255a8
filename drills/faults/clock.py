"""Clocks that jump: a three-node cluster whose brokers' wall clocks step, holders heartbeating.

Log time is the leader broker's ``LogAppendTime``. Each node's JVM runs under
libfaketime (:mod:`drills.faults.clock_fault`); the drill steps the nodes' clocks
forward and back by minutes and by an hour, and kills the leader while the nodes'
clocks disagree, so that leadership moves to a broker whose clock is ahead or behind.

Two ledgers run on the same cluster through the same faults, each with its own
``serve`` and its own holders and rivals (:mod:`drills.faults.clock_workers`): one
without a bound on clock steps (``max_clock_step_ms=0``, the fold before the defence)
and one with :data:`BOUND_S`. For each: the reclaims of a holder that was
heartbeating (spurious), the doubles they made, within the bound and beyond it, and
whether each double is in the audit; every request decided once, ``verify`` clean,
and the clients' histories checked linearizable (Porcupine).
"""

from __future__ import annotations

import itertools
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from drills.faults.clock_fault import PHASES, FakeClocks
from drills.faults.clock_workers import Crew, Reclaim
from drills.faults.drill import LogCheck, check_log, settle, start_serve
from drills.history import record
from drills.history.check import Verdict, check
from oncelog.broker.cluster import LocalCluster, busiest_leader, wait_topics_known
from oncelog.errors import BrokerError
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.process import stop as stop_serve
from oncelog.projector.store import Store
from oncelog.query.queries import suspected_duplicates
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

BOUND_S: Final = 3 * 60
"""The defended ledger's ``max_clock_step_ms``, in seconds: the minutes steps are
within it, the hour beyond. Both ledgers' reclaims are counted within or beyond it."""

HOLD_S: Final = 20.0

_RESTARTS: Final = 3  # start-ups of a killed node before the drill gives up
"""How long each phase lasts (its fault's length, not a synchronisation)."""

_DUPLICATE_VERDICTS: Final = frozenset({"double", "possible", "unsettled"})


@dataclass
class LedgerFigures:
    """What one ledger saw."""

    bound_s: int
    spurious_within: int = 0
    spurious_beyond: int = 0
    doubles_within: int = 0
    doubles_beyond: int = 0
    doubles_not_in_audit: int = 0
    holders_fenced: int = 0
    by_phase: dict[str, int] = field(default_factory=dict)  # spurious reclaims per phase
    steps_s: dict[str, float] = field(default_factory=dict)  # each one's step of log time
    errors: dict[str, int] = field(default_factory=dict)
    untyped_errors: int = 0
    projector_survived: bool = False
    log: LogCheck = field(default_factory=LogCheck)
    history: Verdict | None = None

    def figures(self) -> dict[str, Any]:
        """This ledger's part of the JSON line."""
        log = self.log
        return {
            "max_clock_step_s": self.bound_s,
            "spurious_reclaims_within_bound": self.spurious_within,
            "spurious_reclaims_beyond_bound": self.spurious_beyond,
            "doubles_within_bound": self.doubles_within,
            "doubles_beyond_bound": self.doubles_beyond,
            "doubles_not_in_audit": self.doubles_not_in_audit,
            "spurious_reclaims_by_phase": self.by_phase,
            "log_steps_before_spurious_reclaims_s": self.steps_s,
            "holders_fenced": self.holders_fenced, "errors": self.errors,
            "untyped_errors": self.untyped_errors,
            "projector_survived": self.projector_survived, "requests_on_log": log.requests,
            "undecided": log.undecided,
            "divergent": log.divergent_decisions + log.divergent_snapshots,
            "verify_differences": len(log.verify_differences),
            "linearizability": None if self.history is None else self.history.figures(),
        }  # fmt: skip


@dataclass
class ClockReport:
    """The steps applied and both ledgers' figures."""

    steps: list[dict[str, Any]] = field(default_factory=list)
    before: LedgerFigures = field(default_factory=lambda: LedgerFigures(0))
    after: LedgerFigures = field(default_factory=lambda: LedgerFigures(BOUND_S))
    seconds: float = 0.0

    def figures(self) -> dict[str, Any]:
        """The JSON line."""
        return {"steps_applied": len(self.steps), "steps": self.steps,
                "before_defence": self.before.figures(), "after_defence": self.after.figures(),
                "seconds": round(self.seconds)}  # fmt: skip

    @property
    def ok(self) -> bool:
        """The defended ledger never fenced a heartbeating holder within the bound, every
        double beyond it is in the audit, and both ledgers' logs and histories hold."""
        checks = [_sound(self.before), _sound(self.after)]
        after = self.after
        return all(checks) and after.doubles_within == 0 and after.doubles_not_in_audit == 0


def _sound(ledger: LedgerFigures) -> bool:
    log = ledger.log
    return (log.undecided == log.divergent_decisions == log.divergent_snapshots == 0
            and not log.verify_differences and ledger.untyped_errors == 0
            and ledger.projector_survived
            and ledger.history is not None and ledger.history.linearizable)  # fmt: skip


def clock_drill(workdir: Path, hold_s: float = HOLD_S) -> ClockReport:
    """Run the drill on a cluster of its own in ``workdir``, stopped at the end."""
    began = time.monotonic()
    clocks = FakeClocks(workdir / "faketime", nodes=3)
    own = Settings(bootstrap_servers=None, data_dir=workdir / "data", broker_start_timeout_s=240)
    cluster = LocalCluster(own, node_env=clocks.env)
    try:
        report = _drill(cluster, clocks, workdir, hold_s)
    finally:
        cluster.stop()
    report.seconds = time.monotonic() - began
    return report


@dataclass
class _Ledger:
    """One ledger on the drill's cluster: its settings, serve and crew."""

    figures: LedgerFigures
    settings: Settings
    db: Path
    crew: Crew
    serve: Any = None


def _drill(cluster: LocalCluster, clocks: FakeClocks, workdir: Path, hold_s: float) -> ClockReport:
    info = cluster.start()
    admin = admin_client(Settings(bootstrap_servers=info.bootstrap), info.bootstrap)
    report = ClockReport()
    ledgers = [_ledger(report.before, info.bootstrap, workdir, "unbounded"),
               _ledger(report.after, info.bootstrap, workdir, "bounded")]  # fmt: skip
    for ledger in ledgers:
        specs = ledger_topics(ledger.settings)
        create_topics(admin, specs)  # three brokers: RF 3, min ISR 2
        wait_topics_known(info, [s.name for s in specs])
        ledger.serve = start_serve(ledger.settings, ledger.db, ledger.db.with_suffix(".log"))
    try:
        for ledger in ledgers:
            ledger.crew.start()
        time.sleep(hold_s)  # healthy first: the phase's length, not a synchronisation
        report.steps = _steps(cluster, clocks, admin, ledgers, hold_s)
        _clear_fetch_back_offs(cluster)
        for ledger in ledgers:
            ledger.figures.projector_survived = ledger.serve.poll() is None
            settle(ledger.settings, Timeouts(total_s=120, resend_after_s=5))
    finally:
        for ledger in ledgers:
            ledger.crew.finish()
            if ledger.serve is not None:
                stop_serve(ledger.serve)
    for ledger in ledgers:
        _judge(ledger, workdir)
    return report


def _ledger(figures: LedgerFigures, bootstrap: str, workdir: Path, name: str) -> _Ledger:
    settings = Settings(bootstrap_servers=bootstrap, topic_prefix=f"clock-{name}", partitions=3,
                        data_dir=workdir / "data", max_clock_step_ms=figures.bound_s * 1000,
                        group_session_timeout_ms=6000)  # fmt: skip
    db = workdir / f"{name}.duckdb"
    return _Ledger(figures, settings, db, Crew(settings, workdir / f"history-{name}"))


def _steps(
    cluster: LocalCluster, clocks: FakeClocks, admin: Any, ledgers: list[_Ledger], hold_s: float
) -> list[dict[str, Any]]:
    """Apply each phase's offsets (and leader kill), hold it; what was applied."""
    steps = []
    previous = (0, 0, 0)
    for phase in PHASES:
        for ledger in ledgers:
            ledger.crew.phase = phase.name
        clocks.set(dict(enumerate(phase.offsets, start=1)))
        step: dict[str, Any] = {"phase": phase.name, "offsets_s": list(phase.offsets),
                                "forward_s": phase.largest_forward_s(previous)}  # fmt: skip
        if phase.move_leader:
            step["killed"] = _move_leader(cluster, admin, ledgers[0].settings.requests_topic)
        time.sleep(hold_s)  # the fault's length, not a synchronisation
        steps.append(step)
        previous = phase.offsets
    return steps


def _move_leader(cluster: LocalCluster, admin: Any, topic: str) -> int:
    """SIGKILL the node leading most of ``topic`` (its partitions move to nodes whose
    clocks differ from its own); restart it, until it answers. Its replicas catching
    up is not waited for: with two in sync the ledger takes writes."""
    victim = busiest_leader(admin, topic)
    _restart(cluster, victim)
    return victim


def _restart(cluster: LocalCluster, node: int) -> None:
    """SIGKILL ``node`` and start it again, until it answers."""
    cluster.kill(node)
    for attempt in range(_RESTARTS):
        try:
            cluster.start_nodes(node)
            return
        except BrokerError:
            # A node restarted under a clock that disagrees with the controller's can give
            # up before the controller says it caught up ("Received a fatal error while
            # waiting for the controller"): Kafka's start-up, not the ledger. Again.
            if attempt == _RESTARTS - 1:
                raise
            cluster.kill(node)


def _clear_fetch_back_offs(cluster: LocalCluster) -> None:
    """Restart each node in turn once the clocks agree again.

    A follower whose fetch failed while its clock was an hour ahead backs off until a
    wall-clock deadline an hour away once the clock steps back: until then it replicates
    none of the partitions in that fetch, and an ``acks=all`` append there waits
    (docs/reliability.md, "A partition that stops being fetched"). A restarted node
    starts its fetchers afresh; the ledger meanwhile runs on the two others.
    """
    for node in range(1, cluster.size + 1):
        _restart(cluster, node)


def within_bound(phase: str, bound_s: int) -> bool:
    """Whether ``phase``'s largest forward step is within ``bound_s`` (the healthy start is)."""
    previous: tuple[int, int, int] = (0, 0, 0)
    for candidate in PHASES:
        if candidate.name == phase:
            return candidate.largest_forward_s(previous) <= bound_s
        previous = candidate.offsets
    return True


def _judge(ledger: _Ledger, workdir: Path) -> None:
    figures, crew = ledger.figures, ledger.crew
    spurious = crew.spurious()
    steps = _log_steps(ledger.db, spurious)
    figures.steps_s = {op: ms / 1000 for op, ms in steps.items() if ms is not None}

    def in_bound(reclaim: Reclaim) -> bool:
        # Both ledgers are judged against the defended bound, so that the figures compare:
        # by the step the partition's log time took, as the audit shows it; by the phase's
        # offsets where the audit does not (a leader move inside a phase is not in them).
        step = steps.get(reclaim.op)
        return within_bound(reclaim.phase, BOUND_S) if step is None else step <= BOUND_S * 1000

    within = [r for r in spurious if in_bound(r)]
    beyond = [r for r in spurious if not in_bound(r)]
    figures.spurious_within, figures.spurious_beyond = len(within), len(beyond)
    figures.by_phase = dict(Counter(r.phase for r in spurious))
    # Every spurious reclaim here is a double: the holder ran its step (it was heartbeating)
    # and the rival ran it again after its grant.
    figures.doubles_within, figures.doubles_beyond = len(within), len(beyond)
    figures.doubles_not_in_audit = _not_in_audit(ledger.db, spurious)
    figures.holders_fenced = crew.fenced_holders
    figures.errors = dict(crew.errors)
    figures.untyped_errors = len(crew.untyped)
    name = ledger.db.stem
    figures.log = check_log(ledger.settings, ledger.db, workdir / f"{name}-scratch.duckdb")
    operations = record.load(crew.histories())
    figures.history = check(operations, crew.history_dir / "history.json") if operations else None


def _not_in_audit(db: Path, doubles: list[Reclaim]) -> int:
    """Doubles whose operation the audit (the projection, not what a client read) does not
    list with an unknown outcome and a duplicate's verdict."""
    with Store(db, read_only=True) as live:
        items = suspected_duplicates(live.cursor())
    listed = {
        f"{i.channel_id}/{i.key_name}"
        for i in items
        if i.kind == "unknown_outcome" and i.verdict in _DUPLICATE_VERDICTS
    }
    return sum(1 for r in doubles if r.op not in listed)


_LEASE_SET: Final = frozenset({"claimed", "reclaimed", "heartbeat_ok"})


@dataclass(frozen=True)
class AuditRow:
    """One request on a partition, as the audit holds it."""

    op: str  # channel/key
    outcome: str
    changed: bool
    log_time_ms: int


def step_before_reclaim(rows: list[AuditRow], op: str) -> int | None:
    """The largest forward step of log time between two neighbouring records of one
    partition (``rows``, in offset order), from the request that last set ``op``'s lease
    to its first reclaim; None without both. A re-sent copy answered again does not set
    the lease (``changed`` is false), so it does not count."""
    reclaim = next((i for i, r in enumerate(rows) if r.op == op and r.outcome == "reclaimed"), None)
    if reclaim is None:
        return None
    lease_set = [
        i for i in range(reclaim) if rows[i].op == op and rows[i].changed
        and rows[i].outcome in _LEASE_SET
    ]  # fmt: skip
    if not lease_set:
        return None
    times = [r.log_time_ms for r in rows[lease_set[-1] : reclaim + 1]]
    return max([0, *(b - a for a, b in itertools.pairwise(times))])


def _log_steps(db: Path, reclaims: list[Reclaim]) -> dict[str, int | None]:
    """Each reclaimed operation's :func:`step_before_reclaim`, from ``db``'s audit."""
    found: dict[str, int | None] = {}
    with Store(db, read_only=True) as live:
        con = live.cursor()
        for op in {r.op for r in reclaims}:
            channel, key = op.split("/", 1)
            home = con.execute(
                "SELECT min(partition) FROM requests WHERE channel_id = ? AND key_name = ?",
                [channel, key],
            ).fetchone()
            if home is None or home[0] is None:
                found[op] = None
                continue
            rows = con.execute(
                "SELECT channel_id || '/' || key_name, outcome, changed, log_time_ms "
                'FROM requests WHERE partition = ? ORDER BY "offset"',
                [home[0]],
            ).fetchall()
            found[op] = step_before_reclaim([AuditRow(*row) for row in rows], op)
    return found
