"""Network faults between the parts (``python -m drills.faults network``).

The drill's broker has two further listeners, each advertised at a Toxiproxy proxy in
front of it (:class:`oncelog.broker.kraft.Route`): the load processes and the probe
bootstrap through the ``clients`` proxy, ``oncelog serve`` through the ``projector``
proxy, so every connection of theirs to the broker goes through a proxy; a reader of
``serve``'s HTTP API (:mod:`drills.faults.net_http`) goes through the ``http`` proxy.
Under a steady load of claims and completions from several processes
(:mod:`drills.faults.net_worker`) and a probe on every partition, it runs the schedule of
:mod:`drills.faults.net_schedule` on each link and on clients and projector at once, and
measures after each heal how long until a claim sent after it is granted on every
partition. Afterwards every call is judged against the
log (:mod:`drills.faults.net_calls`) and the log against the projection (``verify``).
"""

from __future__ import annotations

import contextlib
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drills.faults.drill import LogCheck, acknowledged_lost, check_log, settle
from drills.faults.net_calls import CallCheck, check_calls, decisions_by_source, read_calls
from drills.faults.net_faults import hold
from drills.faults.net_http import HttpReader
from drills.faults.net_schedule import Fault
from drills.faults.probe import Probe
from drills.faults.toxiproxy import Toxiproxy
from drills.history import record
from drills.history.check import Verdict, check
from oncelog.broker.kraft import Route
from oncelog.broker.local import LocalBroker
from oncelog.net import free_port
from oncelog.producer.dispatch import Timeouts
from oncelog.projector import process
from oncelog.projector.process import stop as stop_serve
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

KAFKA_LINKS = ("clients", "projector")  # a broker listener behind each
LINKS = (*KAFKA_LINKS, "http")
PAIRS = (("clients", "projector"),)
#: The load's calls: short, so that a fault shows as failures, and the bound of a hung call.
CALL_TIMEOUTS = Timeouts(total_s=5.0, resend_after_s=1.0)
RECOVERY_BOUND_S = 120.0
_RECOVERY_SLICE_S = 5.0  # how often the wait for claims looks whether serve died
#: The projector's group session: a cut or blackhole of the projector's link longer than
#: this expires its membership, which the drill must survive (it rejoins by itself).
SESSION_TIMEOUT_MS = 6000


@dataclass
class Applied:
    """One fault as run: what, how often reset, how long until claims succeeded again."""

    fault: Fault
    resets: int
    recovery_s: float | None  # None: not within RECOVERY_BOUND_S
    errors: dict[str, int] = field(default_factory=dict)  # the probe's typed errors meanwhile
    serve_died: str | None = None  # serve's exit status and last words, when it died


@dataclass
class NetworkReport:
    """The faults, the calls and the log, judged."""

    applied: list[Applied] = field(default_factory=list)
    calls: CallCheck = field(default_factory=CallCheck)
    probe_untyped: list[str] = field(default_factory=list)
    http: HttpReader | None = None
    lost: int = 0
    workers_hung: int = 0  # load processes that did not stop within a call's timeout
    workers_failed: int = 0  # load processes that exited with an error (see worker-N.log)
    projector_survived: bool = False
    projector_crashes: list[str] = field(default_factory=list)  # restarted, as a supervisor
    projector_rejoins: int = 0
    log: LogCheck = field(default_factory=LogCheck)
    history: Verdict | None = None  # the load's calls, checked linearizable per operation
    seconds: float = 0.0
    phases_s: dict[str, float] = field(default_factory=dict)  # where the time went

    def recoveries(self) -> list[float]:
        """Seconds from each heal until claims succeeded on every partition again."""
        return [a.recovery_s for a in self.applied if a.recovery_s is not None]

    def figures(self) -> dict[str, Any]:
        """The JSON line: the issue's figures first."""
        recoveries = self.recoveries()
        by_link = Counter("+".join(a.fault.links) for a in self.applied)
        log, calls = self.log, self.calls
        return {
            "faults": len(self.applied), "faults_by_link": dict(by_link),
            "faults_by_kind": dict(Counter(a.fault.kind for a in self.applied)),
            "resets": sum(a.resets for a in self.applied if a.fault.kind == "resets"),
            "calls": calls.calls, "acknowledged": len(calls.acknowledged), "lost": self.lost,
            "undecided": log.undecided,
            "divergent": log.divergent_decisions + log.divergent_snapshots
            + len(calls.wrong_answers),
            "hung_calls": len(calls.hung) + self.workers_hung + len(self._http().hung),
            "http_answered": self._http().answered,
            "http_failures": dict(self._http().failures),
            "untyped_errors": len(calls.untyped_errors) + len(self.probe_untyped),
            "double_grants": len(calls.double_grants), "workers_failed": self.workers_failed,
            "verify_differences": len(log.verify_differences),
            "recovery_p50_s": round(statistics.median(recoveries), 2) if recoveries else None,
            "recovery_max_s": round(max(recoveries), 2) if recoveries else None,
            "unrecovered": sum(a.recovery_s is None for a in self.applied),
            "typed_errors": dict(calls.typed_errors), "requests_on_log": log.requests,
            "projector_survived": self.projector_survived,
            "projector_crashes": len(self.projector_crashes),
            "projector_rejoins": self.projector_rejoins, "seconds": round(self.seconds),
            "phases_s": {k: round(v, 1) for k, v in self.phases_s.items()},
            "linearizability": None if self.history is None else self.history.figures(),
        }  # fmt: skip

    def _http(self) -> HttpReader:
        return self.http or HttpReader("")

    @property
    def ok(self) -> bool:
        """Every check held."""
        f = self.figures()
        zero = ("lost", "undecided", "divergent", "hung_calls", "untyped_errors",
                "double_grants", "verify_differences", "unrecovered", "workers_failed")  # fmt: skip
        checked = self.history is not None and self.history.linearizable
        return (
            all(f[k] == 0 for k in zero) and self.projector_survived and f["faults"] > 0 and checked
        )

    def findings(self) -> list[str]:
        """The first few of each kind of failed check, for the console."""
        c = self.calls
        return (self.projector_crashes[:5]
                + c.wrong_answers[:5] + c.hung[:5] + c.untyped_errors[:5] + c.double_grants[:5]
                + self.probe_untyped[:5] + self.log.verify_differences[:5]
                + self._http().hung[:5])  # fmt: skip


def network_drill(
    workdir: Path, faults: list[Fault], *, workers: int = 3, report_line: Any = print
) -> NetworkReport:
    """Run ``faults`` one after another on a broker, proxies and load of the drill's own
    in ``workdir`` (all stopped at the end whatever happens); ``report_line`` hears a line
    per fault."""
    began = time.monotonic()
    with proxied_broker(workdir, "net") as parts:
        started = time.monotonic() - began
        proxies = {link: [link] for link in LINKS}
        run = Run(parts.toxiproxy, parts.direct, parts.addresses, proxies, workdir)
        report = run.go(faults, workers, report_line)
        report.phases_s = {"broker": started, **report.phases_s}
    report.seconds = time.monotonic() - began
    return report


@dataclass
class Proxied:
    """A broker whose clients and projector listeners are advertised at proxies."""

    toxiproxy: Toxiproxy
    broker: LocalBroker
    direct: Settings  # the broker's own listener, topics created; http_port behind "http"
    addresses: dict[str, str]  # link -> the proxy's address


@contextlib.contextmanager
def proxied_broker(workdir: Path, prefix: str) -> Iterator[Proxied]:
    """Toxiproxy, a proxy per link of :data:`LINKS` and a broker of its own in ``workdir``
    with the ledger's topics under ``prefix``; all stopped afterwards whatever happens."""
    with Toxiproxy.running(workdir / "toxiproxy.log") as toxiproxy:
        ports = {link: free_port() for link in LINKS}
        links = {link: toxiproxy.link(link, f"127.0.0.1:{port}") for link, port in ports.items()}
        routes = [Route(link.upper(), ports[link], links[link].address) for link in KAFKA_LINKS]
        broker = LocalBroker(
            Settings(bootstrap_servers=None, data_dir=workdir / "data"), routes=routes
        )
        try:
            info = broker.start()
            direct = Settings(bootstrap_servers=info.bootstrap, topic_prefix=prefix,
                              partitions=3, data_dir=workdir / "data",
                              group_session_timeout_ms=SESSION_TIMEOUT_MS)  # fmt: skip
            create_topics(admin_client(direct, info.bootstrap), ledger_topics(direct))
            direct = direct.model_copy(update={"http_port": ports["http"]})
            yield Proxied(toxiproxy, broker, direct, {k: v.address for k, v in links.items()})
        finally:
            broker.stop()


class Run:
    """The drill on a started broker or cluster: serve, load, probe, faults, checks.

    ``addresses``: what the clients, the projector and the HTTP reader connect to (their
    proxies); ``proxies``: the proxies of each link a fault names.
    """

    def __init__(
        self,
        toxiproxy: Toxiproxy,
        direct: Settings,
        addresses: Mapping[str, str],
        proxies: Mapping[str, Sequence[str]],
        workdir: Path,
    ) -> None:
        self.toxiproxy = toxiproxy
        self.proxies = proxies
        self.direct = direct  # the broker's own listener: topics and the checks, never faulted
        self.clients = direct.model_copy(update={"bootstrap_servers": addresses["clients"]})
        self.projector = direct.model_copy(update={"bootstrap_servers": addresses["projector"]})
        self.http_url = f"http://{addresses['http']}/v1/positions"
        self.workdir = workdir
        self.db = workdir / "live.duckdb"
        self.stop_file = workdir / "stop"
        self.applied_any = False  # before the first fault, no claims at all is the drill's failure

    def _serve(self) -> subprocess.Popen[bytes]:
        """``oncelog serve`` with its HTTP API, reaching the broker through its proxy."""
        log = self.workdir / "serve.log"
        proc = process.start_serve(self.projector.model_copy(update={"db_path": self.db}), log)
        direct_url = f"http://127.0.0.1:{self.direct.http_port}/healthz"
        process.wait_http(proc, direct_url, log)
        return proc

    def go(self, faults: list[Fault], workers: int, report_line: Any) -> NetworkReport:
        began = time.monotonic()
        report = NetworkReport(http=HttpReader(self.http_url))
        self.serve = self._serve()
        procs = [self._worker(n) for n in range(workers)]
        probe = Probe(self.clients)
        probe.start()
        assert report.http is not None
        report.http.start()
        try:
            died_at_start = self._until_claims(probe, time.monotonic())[1]
            if died_at_start is not None:  # a finding as any crash: counted, not hidden
                report.projector_crashes.append(f"at start: {died_at_start}")
            report.phases_s["up"] = time.monotonic() - began
            self.applied_any = True
            for fault in faults:
                report.applied.append(self._fault(fault, probe))
                report_line(_line(report.applied[-1]))
            died = bool(report.projector_crashes) or any(a.serve_died for a in report.applied)
            report.projector_survived = not died and self.serve.poll() is None
            report.workers_hung = self._stop_workers(procs)
            report.workers_failed = sum(proc.returncode not in (0, -9) for proc in procs)
            settle(self.direct, Timeouts(total_s=120, resend_after_s=5))
        finally:
            probe.finish()
            report.http.finish()
            self.stop_file.touch()
            for proc in procs:
                if proc.poll() is None:
                    proc.kill()
            stop_serve(self.serve)
        report.projector_crashes += [a.serve_died for a in report.applied if a.serve_died]
        report.phases_s["faults"] = sum(
            a.fault.seconds + (a.recovery_s or 0) for a in report.applied
        )
        report.probe_untyped = probe.untyped_errors
        checks = time.monotonic()
        self._judge(report)
        report.phases_s["checks"] = time.monotonic() - checks
        return report

    def _worker(self, n: int) -> subprocess.Popen[bytes]:
        bootstrap = str(self.clients.bootstrap_servers)
        args = ["-m", "drills.faults.net_worker", "--bootstrap", bootstrap,
                "--prefix", self.direct.topic_prefix, "--partitions", str(self.direct.partitions),
                "--worker", str(n), "--out", str(self.workdir / f"calls-{n}.jsonl"),
                "--stop", str(self.stop_file), "--total-s", str(CALL_TIMEOUTS.total_s),
                "--resend-s", str(CALL_TIMEOUTS.resend_after_s),
                "--history", str(self.workdir / f"load-{n}.history.jsonl")]  # fmt: skip
        with (self.workdir / f"worker-{n}.log").open("ab") as log:
            return subprocess.Popen([sys.executable, *args], stdout=log, stderr=subprocess.STDOUT)

    def _fault(self, fault: Fault, probe: Probe) -> Applied:
        before = Counter(probe.typed_errors)
        resets = hold(self.toxiproxy, fault, self.proxies, threading.Event())
        recovery, died = self._until_claims(probe, time.monotonic())
        return Applied(fault, resets, recovery, dict(probe.typed_errors - before), died)

    def _until_claims(self, probe: Probe, since: float) -> tuple[float | None, str | None]:
        """Seconds from ``since`` until claims succeed on every partition (None: not within
        the bound), restarting a serve that died meanwhile (and how it died)."""
        died: str | None = None
        recovery = None
        while recovery is None and time.monotonic() < since + RECOVERY_BOUND_S:
            died = died or self._restart_if_dead()  # it may die after the heal, too
            recovery = probe.recovered_after(since, _RECOVERY_SLICE_S)
        if recovery is None and not self.applied_any:
            raise RuntimeError(f"claims never succeeded through the proxy; see {self.workdir}")
        return recovery, died

    def _restart_if_dead(self) -> str | None:
        """Start serve again if it died (as its supervisor would); say how it died.

        A crash is a finding (``projector_crashes``, and the run is not ok); restarting
        lets the rest of the schedule, and every check on the log, still run.
        """
        code = self.serve.poll()
        if code is None:
            return None
        text = (self.workdir / "serve.log").read_text(errors="replace")
        words = [line for line in text.splitlines() if line and not line.startswith("%")]
        self.serve = self._serve()
        return f"serve exited {code}: {' | '.join(words[-3:])}"

    def _stop_workers(self, procs: list[subprocess.Popen[bytes]]) -> int:
        """Ask the load processes to stop after their call in flight; those that do not
        within a call's timeout (and a start-up's margin) are hung."""
        self.stop_file.touch()
        hung = 0
        for proc in procs:
            try:
                proc.wait(timeout=CALL_TIMEOUTS.total_s * 2 + 10)
            except subprocess.TimeoutExpired:
                hung += 1
                proc.kill()
        return hung

    def _judge(self, report: NetworkReport) -> None:
        calls = read_calls(sorted(self.workdir.glob("calls-*.jsonl")))
        report.calls = check_calls(calls, decisions_by_source(self.direct), CALL_TIMEOUTS.total_s)
        report.lost = acknowledged_lost(self.db, report.calls.acknowledged)
        report.log = check_log(self.direct, self.db, self.workdir / "scratch.duckdb")
        serve_log = (self.workdir / "serve.log").read_text(errors="replace")
        report.projector_rejoins = serve_log.count("rejoining the group")
        operations = record.load(self.workdir.glob("load-*.history.jsonl"))
        report.history = check(operations, self.workdir / "history.json") if operations else None


#: The figures that add up across drills (the issue's, then the other checks).
_SUMS = ("faults", "calls", "acknowledged", "lost", "undecided", "divergent", "hung_calls",
         "untyped_errors", "double_grants", "verify_differences", "unrecovered",
         "workers_failed", "projector_crashes", "resets", "requests_on_log")  # fmt: skip


def combined(reports: Mapping[str, NetworkReport]) -> dict[str, Any]:
    """One JSON object for several runs: the sums, recovery over every heal, then each run's."""
    each = {name: report.figures() for name, report in reports.items()}
    out: dict[str, Any] = {key: sum(f[key] for f in each.values()) for key in _SUMS}
    recoveries = [r for report in reports.values() for r in report.recoveries()]
    out["recovery_p50_s"] = round(statistics.median(recoveries), 2) if recoveries else None
    out["recovery_max_s"] = round(max(recoveries), 2) if recoveries else None
    out["ok"] = all(report.ok for report in reports.values()) and bool(reports)
    return {**out, **each}


def _line(applied: Applied) -> str:
    recovery = "never" if applied.recovery_s is None else f"{applied.recovery_s:.1f} s"
    errors = ", ".join(f"{k} {v}" for k, v in sorted(applied.errors.items())) or "none"
    died = f"; {applied.serve_died}, restarted" if applied.serve_died else ""
    return (f"{applied.fault.label()}: claims again {recovery} after the heal; "
            f"probe errors {errors}{died}")  # fmt: skip
