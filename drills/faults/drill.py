"""Shared parts of the fault drills: a load of claim+complete cycles, serve processes, checks."""

from __future__ import annotations

import os
import subprocess
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drills.history import record
from drills.history.check import Verdict, check
from drills.history.client import RecordingClient
from oncelog.errors import LedgerError
from oncelog.identity import ids
from oncelog.identity.partitioner import partition_for
from oncelog.kafka.reader import read_to_end, topic_ends
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.results import ClaimStatus
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.projector.rebuild import verify
from oncelog.projector.store import Store
from oncelog.schemas.codec import decode_decision, decode_snapshot
from oncelog.settings import Settings
from oncelog.waiting import poll_until


def start_serve(settings: Settings, db: Path, log: Path) -> subprocess.Popen[bytes]:
    """``oncelog serve --no-http`` on the drill's broker, topics and DuckDB file."""
    return process.start_serve(settings.model_copy(update={"db_path": db}), log, "--no-http")


@dataclass
class Load:
    """Sequential claim+complete cycles on a few threads, until stopped."""

    settings: Settings
    timeouts: Timeouts
    threads: int = 2
    params: Callable[[int], dict[str, Any]] = lambda i: {"i": i}  # of the i-th claim
    completed: list[tuple[str, str]] = field(default_factory=list)  # (channel, key)
    typed_errors: Counter[str] = field(default_factory=Counter)
    untyped_errors: list[str] = field(default_factory=list)
    wrong_answers: list[str] = field(default_factory=list)  # a fresh key not granted at once
    history_dir: Path | None = None  # where each thread records its calls (drills/history)
    stop: threading.Event = field(default_factory=threading.Event)
    _workers: list[threading.Thread] = field(default_factory=list)

    def start(self) -> None:
        """Start the worker threads."""
        for n in range(self.threads):
            worker = threading.Thread(target=self._run, args=(n,), daemon=True)
            worker.start()
            self._workers.append(worker)

    def wait_for_calls(self, count: int, timeout_s: float = 120) -> bool:
        """Wait (bounded) until at least ``count`` calls completed; False on the bound."""
        done = poll_until(
            time.monotonic() + timeout_s,
            lambda: len(self.completed) >= count,
            sleep=self.stop.wait,
        )
        return bool(done)

    def finish(self, timeout_s: float = 300) -> None:
        """Stop after the calls in flight; wait for the threads."""
        self.stop.set()
        for worker in self._workers:
            worker.join(timeout=timeout_s)

    def check_history(self) -> Verdict | None:
        """Check the threads' recorded calls as one history; None when none was recorded."""
        if self.history_dir is None:
            return None
        operations = record.load(self.history_dir.glob("*.history.jsonl"))
        return check(operations, self.history_dir / "history.json") if operations else None

    def _recorder(self, n: int) -> record.Recorder:
        if self.history_dir is None:
            return record.Recorder(Path(os.devnull))
        self.history_dir.mkdir(parents=True, exist_ok=True)
        return record.Recorder(self.history_dir / f"load-{n}.history.jsonl")

    def _run(self, n: int) -> None:
        with SyncLedgerClient(self.settings, worker_id=f"load-{n}", timeouts=self.timeouts) as c:
            calls = RecordingClient(c, self._recorder(n))
            try:
                self._cycles(n, calls)
            finally:
                calls.recorder.close()

    def _cycles(self, n: int, calls: RecordingClient) -> None:
        i = 0
        while not self.stop.is_set():
            channel, key = f"load-{n}-{i % 13}", f"op-{n}-{i}"
            try:
                params = self.params(i)
                claim = calls.claim(channel, key, tool_name="t", params=params)
                if claim.status != ClaimStatus.CLAIMED:
                    self.wrong_answers.append(f"{channel}/{key}: {claim.status}")
                else:
                    calls.complete(claim.execution, claim.claim_token, {"i": i})
                    self.completed.append((channel, key))
            except LedgerError as exc:
                self.typed_errors[exc.code] += 1
            except Exception as exc:  # an untyped error is a finding
                self.untyped_errors.append(f"{type(exc).__name__}: {exc}")
            i += 1


def settle(settings: Settings, timeouts: Timeouts) -> None:
    """Wait until the projector has decided everything already on the log.

    A ``get`` request is judged in log order, so its answer on a partition means
    every request before it there was decided and published. A partition with nothing on
    it has nothing to settle: no ``get`` is sent there (after a broker's wall clock steps
    back, its followers can leave an idle partition unreplicated for the step's length, and
    an append there waits that long: docs/reliability.md, "A partition that stops being
    fetched").
    """
    kafka = settings.kafka_config(settings.bootstrap_servers or "")
    holding = {p for p, end in topic_ends(kafka, settings.requests_topic).items() if end > 0}
    channels: dict[int, str] = {}
    n = 0
    while len(channels) < len(holding):
        partition = partition_for(f"settle-{n}", settings.partitions)
        if partition in holding:
            channels.setdefault(partition, f"settle-{n}")
        n += 1
    with SyncLedgerClient(settings, worker_id="settle", timeouts=timeouts) as client:
        for channel in channels.values():
            op = ids.operation_id(channel, "barrier")
            client.get_execution(op, channel_id=channel, key_name="barrier")


def acknowledged_lost(db: Path, completed: list[tuple[str, str]]) -> int:
    """Calls acknowledged to a caller whose execution is not ``COMPLETED`` in ``db``."""
    with Store(db, read_only=True) as live:
        done = {
            (s.channel_id, s.key_name) for s in live.current_states() if s.status == "COMPLETED"
        }
    return sum(1 for call in completed if call not in done)


@dataclass
class LogCheck:
    """Every request decided once, republished records identical, verify clean."""

    requests: int = 0
    undecided: int = 0
    divergent_decisions: int = 0
    divergent_snapshots: int = 0
    verify_differences: list[str] = field(default_factory=list)


def records_by_source(
    settings: Settings, topic: str, decode: Any
) -> dict[tuple[int, int], set[tuple[int, bytes]]]:
    """Every distinct (partition, encoding) published for each source (partition, offset)
    on ``topic``: a republished record must be byte-identical AND on the same partition."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    seen: dict[tuple[int, int], set[tuple[int, bytes]]] = defaultdict(set)
    for p in topic_ends(kafka, topic):  # the decisions topic has its own partition count
        for msg in read_to_end(kafka, topic, p, timeout_s=600):
            value = msg.value() or b""
            record = decode(value)
            seen[(record.source_partition, record.source_offset)].add((p, value))
    return seen


def check_log(settings: Settings, db: Path, scratch: Path) -> LogCheck:
    """Compare the log, the published records and the projection after a drill."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    check = LogCheck()
    decisions = records_by_source(settings, settings.decisions_topic, decode_decision)
    snapshots = records_by_source(settings, settings.executions_topic, decode_snapshot)
    for p in range(settings.partitions):
        for msg in read_to_end(kafka, settings.requests_topic, p, timeout_s=600):
            check.requests += 1
            check.undecided += (p, msg.offset()) not in decisions
    check.divergent_decisions = sum(len(v) > 1 for v in decisions.values())
    check.divergent_snapshots = sum(len(v) > 1 for v in snapshots.values())
    with Store(db, read_only=True) as live:
        check.verify_differences = verify(settings, kafka, scratch, live).differences
    return check
