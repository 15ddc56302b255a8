"""Leader kills on a local three-node KRaft cluster under load: nothing acknowledged is lost.

Several clients (the :class:`~drills.faults.drill.Load` threads, each its own client) and
one ``oncelog serve`` run on topics with three replicas and ``min.insync.replicas=2``;
a :class:`~drills.faults.probe.Probe` claims on every partition all the time. Then:

- ``leader_kills`` times: SIGKILL the node that leads the most requests partitions, wait
  until claims succeed again on every partition (the recovery), restart it, wait until
  every partition has three in-sync replicas again;
- once: SIGKILL two nodes at the same time (writes must be refused, with typed errors
  only), hold them down, restart both, wait for claims and for the replicas.

Afterwards the checks of every fault drill: acknowledged calls all ``COMPLETED``, every
request on the log decided exactly once, republished records byte-identical, ``verify``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drills.faults.drill import Load, LogCheck, acknowledged_lost, check_log, settle, start_serve
from drills.faults.probe import Probe
from drills.history.check import Verdict
from oncelog.broker.cluster import (
    LocalCluster,
    busiest_leader,
    leaders,
    wait_in_sync,
    wait_topics_known,
)
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.process import stop as stop_serve
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

#: What a caller may see while the cluster cannot take a write: a bounded, typed failure
#: (no_projector is a timeout whose request was taken while no decision could be written).
REFUSALS = frozenset({"timeout", "no_projector", "kafka_error"})


@dataclass
class Round:
    """One fault: who was killed, what they led, how long until claims succeeded again."""

    victims: tuple[int, ...]
    led: int  # requests partitions the victims led
    recovery_s: float | None  # None: claims did not succeed again within the bound
    resync_s: float = 0.0  # from the restart until every partition had 3 in-sync replicas
    errors: dict[str, int] = field(default_factory=dict)  # typed errors of load and probe


@dataclass
class FailoverReport:
    """The rounds and the checks after them."""

    rounds: list[Round] = field(default_factory=list)
    double: Round | None = None
    granted_while_refused: int = 0  # probe claims granted while two nodes were down
    acknowledged: int = 0
    lost: int = 0
    untyped_errors: list[str] = field(default_factory=list)
    wrong_answers: list[str] = field(default_factory=list)
    projector_survived: bool = False
    projector_rejoins: int = 0  # fenced consumers it replaced by itself (see GroupConsumer.rejoin)
    log: LogCheck = field(default_factory=LogCheck)
    history: Verdict | None = None  # the load's calls, checked linearizable per operation
    seconds: float = 0.0
    tls: bool = False  # the cluster ran SASL_SSL with SCRAM users

    def figures(self) -> dict[str, Any]:
        """The JSON line: the issue's figures first, then the other checks."""
        recoveries = [r.recovery_s for r in self.rounds if r.recovery_s is not None]
        double = self.double
        log = self.log
        return {
            "kills": len(self.rounds), "double_kills": int(double is not None),
            "acknowledged": self.acknowledged, "lost": self.lost,
            "undecided": log.undecided, "divergent": log.divergent_decisions
            + log.divergent_snapshots,
            "recovery_p50_s": round(statistics.median(recoveries), 2) if recoveries else None,
            "recovery_max_s": round(max(recoveries), 2) if recoveries else None,
            "unrecovered": sum(r.recovery_s is None for r in self.rounds),
            "double_kill_errors": double.errors if double else {},
            "double_kill_recovery_s": _rounded(double.recovery_s) if double else None,
            "granted_while_refused": self.granted_while_refused,
            "untyped_errors": len(self.untyped_errors), "wrong_answers": len(self.wrong_answers),
            "requests_on_log": log.requests, "verify_differences": len(log.verify_differences),
            "projector_survived": self.projector_survived,
            "projector_rejoins": self.projector_rejoins, "seconds": round(self.seconds),
            "tls": self.tls,
            "linearizability": None if self.history is None else self.history.figures(),
        }  # fmt: skip

    @property
    def ok(self) -> bool:
        """Everything the issue asks held."""
        f = self.figures()
        refused = set(f["double_kill_errors"]) <= REFUSALS and bool(f["double_kill_errors"])
        return (f["lost"] == f["undecided"] == f["divergent"] == f["unrecovered"] == 0
                and f["untyped_errors"] == f["wrong_answers"] == f["verify_differences"] == 0
                and f["granted_while_refused"] == 0 and refused and self.projector_survived
                and f["double_kill_recovery_s"] is not None
                and self.history is not None and self.history.linearizable)  # fmt: skip

    def table(self) -> str:
        """The rounds as a Markdown table."""
        rows = ["| fault | killed | requests partitions led | claims again after | "
                "all in sync again after restart | typed errors (load + probe) |",
                "|---|---|---|---|---|---|"]  # fmt: skip
        labelled = [(f"leader kill {i + 1}", r, "") for i, r in enumerate(self.rounds)]
        if self.double:  # held down on purpose: its recovery counts from the restart
            labelled.append(("double kill", self.double, " after the restart"))
        for label, r, since in labelled:
            nodes = " + ".join(f"node {v}" for v in r.victims)
            errors = ", ".join(f"{k} {v}" for k, v in sorted(r.errors.items())) or "none"
            rows.append(f"| {label} | {nodes} | {r.led} | {_seconds(r.recovery_s)}{since} | "
                        f"{r.resync_s:.1f} s | {errors} |")  # fmt: skip
        return "\n".join(rows)


def _rounded(value: float | None) -> float | None:
    return round(value, 2) if value is not None else None


def _seconds(value: float | None) -> str:
    return f"{value:.1f} s" if value is not None else "never (bound)"


def failover_drill(
    workdir: Path,
    leader_kills: int = 5,
    refused_s: float = 8.0,
    threads: int = 4,
    *,
    tls: bool = False,
) -> FailoverReport:
    """Run the drill on a cluster of its own in ``workdir``, stopped at the end whatever
    happens; ``refused_s`` is how long two nodes stay down. ``tls``: the cluster runs
    SASL_SSL with SCRAM users, and every client of the drill logs in as its admin."""
    base = Settings(bootstrap_servers=None, data_dir=workdir / "data")
    cluster = LocalCluster(base, secure=tls)
    began = time.monotonic()
    try:
        report = _drill(cluster, workdir, leader_kills, refused_s, threads)
    finally:
        cluster.stop()
    report.seconds = time.monotonic() - began
    return report


def _drill(
    cluster: LocalCluster, workdir: Path, leader_kills: int, refused_s: float, threads: int
) -> FailoverReport:
    info = cluster.start()
    base = cluster.client_settings() if cluster.secure else Settings()
    settings = base.model_copy(update={"bootstrap_servers": info.bootstrap,
        "topic_prefix": "failover", "partitions": 6, "data_dir": workdir / "data"})  # fmt: skip
    admin = admin_client(settings, info.bootstrap)
    specs = ledger_topics(settings)
    create_topics(admin, specs)  # three brokers: RF 3, min ISR 2
    wait_topics_known(info, [s.name for s in specs], config=cluster.admin_config(info.bootstrap))
    db = workdir / "live.duckdb"
    serve = start_serve(settings, db, workdir / "serve.log")
    timeouts = Timeouts(total_s=3.0, resend_after_s=1.0)
    load = Load(settings, timeouts, threads=threads, history_dir=workdir / "history")
    probe = Probe(settings)
    report = FailoverReport(tls=cluster.secure)
    try:
        faults = _Faults(cluster, admin, settings.requests_topic, load, probe)
        _run(faults, report, leader_kills, refused_s)
        report.projector_survived = serve.poll() is None
        settle(settings, Timeouts(total_s=120, resend_after_s=5))
    finally:
        probe.finish()
        load.finish()
        stop_serve(serve)
    report.acknowledged = len(load.completed)
    report.lost = acknowledged_lost(db, load.completed)
    report.untyped_errors = load.untyped_errors + probe.untyped_errors
    report.wrong_answers = load.wrong_answers + probe.wrong_answers
    report.log = check_log(settings, db, workdir / "scratch.duckdb")
    report.history = load.check_history()
    serve_log = (workdir / "serve.log").read_text(errors="replace")
    report.projector_rejoins = serve_log.count("rejoining the group after a fatal consumer error")
    return report


def _run(faults: _Faults, report: FailoverReport, leader_kills: int, refused_s: float) -> None:
    faults.load.start()
    faults.probe.start()
    # Healthy first: every partition takes claims before the first fault (bounded).
    if faults.probe.recovered_after(time.monotonic()) is None:
        raise RuntimeError("claims never succeeded on the healthy cluster")
    faults.load.wait_for_calls(1)
    for _ in range(leader_kills):
        report.rounds.append(faults.leader_kill())
    report.double, report.granted_while_refused = faults.double_kill(refused_s)
    faults.load.wait_for_calls(len(faults.load.completed) + 1)  # the load resumed


@dataclass
class _Faults:
    """The cluster, its observers and the load: one fault at a time."""

    cluster: LocalCluster
    admin: Any
    topic: str
    load: Load
    probe: Probe

    def leader_kill(self) -> Round:
        """SIGKILL the busiest leader, measure until claims succeed, restart, resync."""
        victim = busiest_leader(self.admin, self.topic)
        led = sum(n == victim for n in leaders(self.admin, self.topic).values())
        errors = self._errors_since()
        t0 = time.monotonic()
        self.cluster.kill(victim)
        recovery = self.probe.recovered_after(t0)
        resync = self._restart(victim)
        return Round((victim,), led, recovery, resync, errors())

    def double_kill(self, refused_s: float) -> tuple[Round, int]:
        """SIGKILL two nodes at once; hold them down; restart both; measure from the restart."""
        victim = busiest_leader(self.admin, self.topic)
        other = next(n for n in range(1, self.cluster.size + 1) if n != victim)
        led = sum(n in (victim, other) for n in leaders(self.admin, self.topic).values())
        errors = self._errors_since()
        killed = time.monotonic()
        self.cluster.kill(victim, other)
        # Calls answered within a call's timeout of the kill may have been written before it.
        time.sleep(refused_s)  # the fault's length, not a synchronisation
        granted = self.probe.granted_between(killed + 1.0, time.monotonic())
        restarted = time.monotonic()
        self.cluster.start_nodes(victim, other)
        recovery = self.probe.recovered_after(restarted)
        wait_in_sync(self.admin)
        resync = time.monotonic() - restarted
        return Round((victim, other), led, recovery, resync, errors()), granted

    def _restart(self, node: int) -> float:
        """Start ``node`` again; seconds until every partition has three in-sync replicas."""
        begin = time.monotonic()
        self.cluster.start_nodes(node)
        wait_in_sync(self.admin)
        return time.monotonic() - begin

    def _errors_since(self) -> Callable[[], dict[str, int]]:
        """A function giving the typed errors of load and probe since this call."""
        before = self.load.typed_errors + self.probe.typed_errors

        def since() -> dict[str, int]:
            now = self.load.typed_errors + self.probe.typed_errors
            return dict(now - before)

        return since
