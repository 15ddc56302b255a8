"""Fuzz the request decoder (pure) and the projector's record path (real broker).

The projector must never crash and never stall, and every bad record must reach
the dead-letter topic with its source position.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Producer

from drills.faults.drill import Load
from drills.faults.hostile import KINDS, Hostile, hostile
from drills.history.check import Verdict
from oncelog.errors import LedgerError
from oncelog.kafka.reader import read_to_end, topic_ends
from oncelog.producer.dispatch import Timeouts
from oncelog.projector.service import Projector
from oncelog.projector.store import Store
from oncelog.referee.judge import Refusal, admit
from oncelog.settings import Settings

#: Oversized records are 1 MiB each: a handful prove the point without gigabytes.
MAX_OVERSIZED = 3
_LONGEST_CALL_S = 300.0  # the client's bound on a call's total time


@dataclass
class FuzzReport:
    """What a fuzz run sent and what came out."""

    cases: int = 0
    by_kind: Counter[str] = field(default_factory=Counter)
    bad_sent: int = 0
    rejected: int = 0
    crashes: list[str] = field(default_factory=list)
    dead_lettered: int = 0
    stalls: int = 0
    honest_calls: int = 0  # claim+complete cycles completed among the hostile records
    history: Verdict | None = None  # those calls, checked linearizable per operation
    seconds: float = 0.0


def _cases(rng: random.Random, count: int, partitions: int) -> list[Hostile]:
    out: list[Hostile] = []
    oversized = 0
    while len(out) < count:
        kind = rng.choice(KINDS)
        if kind == "oversized_params":
            if oversized >= MAX_OVERSIZED:
                continue
            oversized += 1
        out.append(hostile(rng, partitions, kind))
    return out


def fuzz_decoder(cases: int, seed: int = 1, partitions: int = 6) -> FuzzReport:
    """Decode and validate hostile records in process: only typed rejections may happen."""
    report = FuzzReport()
    began = time.perf_counter()
    for case in _cases(random.Random(seed), cases, partitions):
        report.cases += 1
        report.by_kind[case.kind] += 1
        report.bad_sent += case.dead_letter
        try:
            at = {"partition": case.partition, "offset": 0, "ts_ms": 0}
            verdict = admit(case.value, case.key, **at, partitions=partitions)
            report.rejected += isinstance(verdict, Refusal)
        except Exception as exc:  # a crash is what we hunt: record it, keep going
            report.crashes.append(f"{case.kind}: {type(exc).__name__}: {exc}"[:300])
    report.seconds = time.perf_counter() - began
    return report


def _produce(settings: Settings, cases: list[Hostile]) -> None:
    assert settings.bootstrap_servers is not None
    producer = Producer({**settings.kafka_config(settings.bootstrap_servers), "linger.ms": 20,
                         "message.max.bytes": 5 * 1024 * 1024})  # fmt: skip
    for case in cases:
        while True:
            try:
                producer.produce(settings.requests_topic, case.value, case.key,
                                 partition=case.partition)  # fmt: skip
                break
            except BufferError:
                producer.poll(0.1)
    if producer.flush(120):
        raise LedgerError("fuzz records were not all delivered")


def fuzz_projector(
    settings: Settings,
    cases: int,
    seed: int = 1,
    timeout_s: float = 600,
    history_dir: Path | None = None,
) -> FuzzReport:
    """Write hostile records to the requests topic and fold them with a real projector.

    With ``history_dir``, honest claim+complete cycles run meanwhile, their requests
    interleaved with the hostile records on the log; their calls are recorded there and
    checked linearizable once the projector caught up.
    """
    assert settings.bootstrap_servers is not None
    report = FuzzReport()
    batch = _cases(random.Random(seed), cases, settings.partitions)
    report.cases = len(batch)
    report.by_kind.update(c.kind for c in batch)
    report.bad_sent = sum(c.dead_letter for c in batch)
    # An honest call is answered once the projector folded the hostile records before it.
    timeouts = Timeouts(total_s=min(timeout_s, _LONGEST_CALL_S), resend_after_s=5)
    load = None if history_dir is None else Load(settings, timeouts, history_dir=history_dir)
    if load is not None:
        load.start()
    _produce(settings, batch)
    began = time.perf_counter()
    with Store(settings.db_path) as store:
        crashed = _fold_until_caught_up(
            settings, store, timeout_s, report, lambda: load.finish(timeout_s) if load else None
        )
        if crashed:
            report.crashes.append(crashed)
        (count,) = store.cursor().execute("SELECT count(*) FROM dead_letters").fetchone() or (0,)
    report.seconds = time.perf_counter() - began
    if load is not None:
        report.honest_calls = len(load.completed)
        report.crashes += load.untyped_errors
        report.history = load.check_history()
    kafka = settings.kafka_config(settings.bootstrap_servers)
    topic_count = sum(
        sum(1 for _ in read_to_end(kafka, settings.deadletter_topic, p))
        for p in range(settings.partitions)
    )
    report.dead_lettered = topic_count if topic_count == count else -1  # -1: they disagree
    return report


def _fold_until_caught_up(
    settings: Settings,
    store: Store,
    timeout_s: float,
    report: FuzzReport,
    before_stop: Callable[[], None],
) -> str | None:
    """Fold until the hostile records are folded; ``before_stop`` (the honest calls'
    end) runs while the projector still answers."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    ends = topic_ends(kafka, settings.requests_topic)
    projector = Projector(settings, settings.bootstrap_servers, store)
    projector.start()
    errors: list[BaseException] = []
    stop = threading.Event()

    def run() -> None:
        try:
            projector.run(stop)
        except BaseException as exc:  # reported: the projector must never crash
            errors.append(exc)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    reader = store.reader()
    deadline = time.monotonic() + timeout_s
    while thread.is_alive() and time.monotonic() < deadline:
        positions = reader.positions()
        if all(positions.get(p) and positions[p].next_offset >= e for p, e in ends.items() if e):
            break
        time.sleep(0.2)  # polling the committed positions, bounded by the deadline
    else:
        report.stalls += thread.is_alive()
    before_stop()
    stop.set()
    thread.join(timeout=60)
    projector.close()
    return f"{type(errors[0]).__name__}: {errors[0]}" if errors else None
