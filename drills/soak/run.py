"""The soak itself: a broker behind Toxiproxy, ``serve``, paced load processes, the fault
schedule of :mod:`drills.soak.schedule`, a sampler, and the checks afterwards.

The parts are the network drill's (:mod:`drills.faults.network`): the load processes
(:mod:`drills.faults.net_worker`) reach the broker through the ``clients`` proxy and
``serve`` through the ``projector`` proxy; the checks read the broker directly.
"""

from __future__ import annotations

import random
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from drills.faults.drill import LogCheck, acknowledged_lost, check_log, settle
from drills.faults.net_calls import CallCheck, check_calls, decisions_by_source, read_calls
from drills.faults.net_faults import hold
from drills.faults.network import CALL_TIMEOUTS, KAFKA_LINKS, Proxied, proxied_broker
from drills.history import record
from drills.history.check import Verdict, check
from drills.soak.criteria import Sample
from drills.soak.sampler import Sampler
from drills.soak.schedule import Event, events
from oncelog.producer.dispatch import Timeouts
from oncelog.projector import process
from oncelog.waiting import poll_until

_FIRST_CLAIMS_BOUND_S = 180.0
_BROKER_OUTAGE_S = 6.0


@dataclass(frozen=True)
class SoakConfig:
    """How long, how fast (claim+complete cycles per second, all workers), how many."""

    seconds: float
    rate: float = 20.0
    workers: int = 3
    interval_s: float = 10.0
    seed: int = 42
    duckdb_memory_mb: int | None = 96  # serve's ONCELOG_DUCKDB_MEMORY_LIMIT_MB (None: unset)


@dataclass
class Applied:
    """A fault as run: from when, healed when (seconds since the soak began)."""

    event: Event
    start_s: float
    heal_s: float


@dataclass
class SoakRun:
    """What the run produced, before the verdict."""

    samples: list[Sample] = field(default_factory=list)
    applied: list[Applied] = field(default_factory=list)
    serve_crashes: list[str] = field(default_factory=list)
    workers_failed: int = 0
    workers_hung: int = 0
    calls: CallCheck = field(default_factory=CallCheck)
    lost: int = 0
    log: LogCheck = field(default_factory=LogCheck)
    history: Verdict | None = None
    seconds: float = 0.0


def soak(config: SoakConfig, workdir: Path) -> SoakRun:
    """Run the soak on a broker, proxies and processes of its own in ``workdir`` (all
    stopped at the end whatever happens). ``serve``'s HTTP port is its own (the ``http``
    proxy in front of it is never faulted here): the sampler reads its metrics."""
    with proxied_broker(workdir, "soak") as parts:
        return Soak(config, parts, workdir).go()


class Soak:
    """The run on a started broker: processes, schedule, sampler, checks."""

    def __init__(self, config: SoakConfig, parts: Proxied, workdir: Path) -> None:
        self.config = config
        self.toxiproxy = parts.toxiproxy
        self.broker = parts.broker
        self.direct = direct = parts.direct
        addresses = parts.addresses
        self.clients = direct.model_copy(update={"bootstrap_servers": addresses["clients"]})
        self.projector = direct.model_copy(update={"bootstrap_servers": addresses["projector"]})
        self.workdir = workdir
        self.db = workdir / "live.duckdb"
        self.stop_file = workdir / "stop"
        self.rng = random.Random(config.seed)
        self.workers: dict[int, subprocess.Popen[bytes]] = {}
        self.next_worker = 0
        self.run = SoakRun()
        self.metrics_url = f"http://127.0.0.1:{direct.http_port}/metrics"
        self.stopping = threading.Event()
        self.serve = self._serve()
        self.broker_pid: int | None = None

    def _serve(self) -> subprocess.Popen[bytes]:
        limit = self.config.duckdb_memory_mb
        settings = self.projector.model_copy(
            update={"db_path": self.db, "duckdb_memory_limit_mb": limit}
        )
        proc = process.start_serve(settings, self.workdir / "serve.log")
        process.wait_http(proc, self.metrics_url, self.workdir / "serve.log")
        return proc

    def _pids(self) -> tuple[int | None, int | None]:
        status = self.broker.status()
        return self.serve.pid, None if status is None else status.pid

    def go(self) -> SoakRun:
        """Load, faults and samples for the configured time, then the checks."""
        sampler = Sampler(
            self.direct, self.workdir, self._pids, self.metrics_url, self.config.interval_s
        )
        try:
            for _ in range(self.config.workers):
                self._start_worker()
            self._wait_first_claims()
            began = time.monotonic()
            sampler.start(began)
            for event in events(self.config.seconds):
                self._at(began + event.at_s)
                self._apply(event, began)
            self._at(began + self.config.seconds)
            self.run.seconds = time.monotonic() - began
        finally:
            sampler.finish()
            self._stop_workers()
        settle(self.direct, Timeouts(total_s=120, resend_after_s=5))
        process.stop(self.serve)
        self.run.samples = sampler.samples
        self._judge()
        return self.run

    def _at(self, when: float) -> None:
        """Until ``when``, restarting a ``serve`` that died meanwhile (a finding)."""
        while not self.stopping.wait(min(1.0, max(0.0, when - time.monotonic()))):
            self._restart_if_dead()
            if time.monotonic() >= when:
                return

    def _restart_if_dead(self) -> None:
        code = self.serve.poll()
        if code is not None:
            self.run.serve_crashes.append(f"serve exited {code}; see {self.workdir}/serve.log")
            self.serve = self._serve()

    def _apply(self, event: Event, began: float) -> None:
        start = time.monotonic() - began
        if event.kind == "worker_crash":
            self._crash_worker()
            return
        if event.kind == "projector_kill":
            self.serve.send_signal(signal.SIGKILL)
            self.serve.wait(timeout=60)
            self.serve = self._serve()
        elif event.kind == "broker_restart":
            self.broker.stop()
            self.stopping.wait(_BROKER_OUTAGE_S)  # the outage's length, not a synchronisation
            self.broker.start()
        else:
            assert event.fault is not None
            hold(self.toxiproxy, event.fault, {k: [k] for k in KAFKA_LINKS}, self.stopping)
        self.run.applied.append(Applied(event, start, time.monotonic() - began))

    def _start_worker(self) -> None:
        n, self.next_worker = self.next_worker, self.next_worker + 1
        pace = self.config.workers / self.config.rate
        bootstrap = str(self.clients.bootstrap_servers)
        args = ["-m", "drills.faults.net_worker", "--bootstrap", bootstrap,
                "--prefix", self.direct.topic_prefix, "--partitions", str(self.direct.partitions),
                "--worker", str(n), "--out", str(self.workdir / f"calls-{n}.jsonl"),
                "--stop", str(self.stop_file), "--total-s", str(CALL_TIMEOUTS.total_s),
                "--resend-s", str(CALL_TIMEOUTS.resend_after_s), "--pace-s", str(pace),
                "--history", str(self.workdir / f"load-{n}.history.jsonl")]  # fmt: skip
        with (self.workdir / f"worker-{n}.log").open("ab") as log:
            self.workers[n] = subprocess.Popen(
                [sys.executable, *args], stdout=log, stderr=subprocess.STDOUT
            )

    def _crash_worker(self) -> None:
        """SIGKILL one load process mid-call (as drills/chaos does) and start another."""
        n = self.rng.choice(sorted(self.workers))
        proc = self.workers.pop(n)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=60)
        self._start_worker()

    def _wait_first_claims(self) -> None:
        def claimed() -> bool:
            return any(p.stat().st_size > 0 for p in self.workdir.glob("calls-*.jsonl"))

        if not poll_until(time.monotonic() + _FIRST_CLAIMS_BOUND_S, claimed, pause_s=0.5):
            raise RuntimeError(f"no call came back within the bound; see {self.workdir}")

    def _stop_workers(self) -> None:
        self.stop_file.touch()
        for proc in self.workers.values():
            try:
                proc.wait(timeout=CALL_TIMEOUTS.total_s * 2 + 10)
            except subprocess.TimeoutExpired:
                self.run.workers_hung += 1
                proc.kill()
        self.run.workers_failed = sum(p.returncode not in (0, -9) for p in self.workers.values())

    def _judge(self) -> None:
        run = self.run
        calls = read_calls(sorted(self.workdir.glob("calls-*.jsonl")))
        run.calls = check_calls(calls, decisions_by_source(self.direct), CALL_TIMEOUTS.total_s)
        run.lost = acknowledged_lost(self.db, run.calls.acknowledged)
        run.log = check_log(self.direct, self.db, self.workdir / "scratch.duckdb")
        operations = record.load(self.workdir.glob("load-*.history.jsonl"))
        run.history = check(operations, self.workdir / "history.json") if operations else None
