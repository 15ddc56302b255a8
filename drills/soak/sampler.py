"""Every few seconds: RSS of ``serve`` and of the broker JVM, the claims' latency since the
last look, and the projector group's lag on the requests topic."""

from __future__ import annotations

import json
import re
import statistics
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from confluent_kafka import Consumer, KafkaException, TopicPartition

from drills.soak.criteria import Sample
from oncelog.settings import Settings

_KAFKA_TIMEOUT_S = 3.0


def rss_mb(pid: int | None) -> float | None:
    """The resident set of process ``pid`` in MB (None: no such process)."""
    if pid is None:
        return None
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return round(int(line.split()[1]) / 1024, 1)
    return None


def percentile(values: list[float], q: float) -> float:
    """The ``q`` quantile (0..1) of ``values``, nearest rank."""
    ranked = sorted(values)
    return ranked[min(len(ranked) - 1, max(0, round(q * len(ranked)) - 1))]


class CallTail:
    """The claims answered since the last look, read from the load's call files."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self._offsets: dict[Path, int] = {}

    def claim_latencies_ms(self) -> list[float]:
        """Milliseconds of every claim answered (granted or not) since the last call."""
        out = []
        for path in sorted(self.workdir.glob("calls-*.jsonl")):
            with path.open("rb") as f:
                f.seek(self._offsets.get(path, 0))
                data = f.read()
            whole = data[: data.rfind(b"\n") + 1]  # a line still being written waits
            self._offsets[path] = self._offsets.get(path, 0) + len(whole)
            for line in whole.decode().splitlines():
                call = json.loads(line) if line.endswith("}") else {}
                if call.get("kind") == "claim" and "status" in call:
                    out.append((call["t1"] - call["t0"]) * 1000)
        return out


class Lag:
    """The high watermarks of the requests topic (read from the broker) and how far
    ``serve`` has folded each partition (its ``oncelog_last_folded_offset`` metric): the
    projector keeps its positions in DuckDB, not in the group's offsets."""

    def __init__(self, settings: Settings, metrics_url: str) -> None:
        assert settings.bootstrap_servers is not None
        conf = settings.kafka_config(settings.bootstrap_servers)
        # The broker restarts: its refused connections are expected, not worth a line each.
        conf.update({"group.id": "soak-sampler", "enable.auto.commit": False, "log_level": 0})
        self._consumer = Consumer(conf)
        self._url = metrics_url
        self.metrics = ""  # the last /metrics page read
        self._parts = [
            TopicPartition(settings.requests_topic, p) for p in range(settings.partitions)
        ]

    def read(self) -> tuple[dict[int, int], dict[int, int]]:
        """(high watermarks, next offsets to fold) per partition; empty when the broker
        or ``serve`` does not answer."""
        try:
            ends = {tp.partition: self._consumer.get_watermark_offsets(
                tp, timeout=_KAFKA_TIMEOUT_S)[1] for tp in self._parts}  # fmt: skip
        except KafkaException:
            ends = {}
        self.metrics = ""
        try:
            with urllib.request.urlopen(self._url, timeout=_KAFKA_TIMEOUT_S) as answer:
                text = answer.read().decode()
        except OSError:
            return ends, {}
        self.metrics = text
        return ends, folded(text)

    def close(self) -> None:
        """Close the consumer."""
        self._consumer.close()


_FOLDED = re.compile(r'^oncelog_last_folded_offset\{[^}]*partition="(\d+)"[^}]*\} (\S+)$', re.M)


_DUCKDB = re.compile(r"^oncelog_duckdb_memory_bytes\{[^}]*\} (\S+)$", re.M)


def duckdb_mb(metrics: str) -> float | None:
    """The memory DuckDB holds in ``serve``, in MB, from a ``/metrics`` page (None: absent)."""
    found = _DUCKDB.findall(metrics)
    return round(sum(float(v) for v in found) / 1e6, 1) if found else None


def folded(metrics: str) -> dict[int, int]:
    """The next offset to fold per partition, from a ``/metrics`` page."""
    return {int(p): int(float(v)) + 1 for p, v in _FOLDED.findall(metrics)}


class Sampler:
    """A thread taking one :class:`Sample` every ``interval_s``, until stopped."""

    def __init__(
        self, settings: Settings, workdir: Path, pids: Callable[[], tuple[int | None, int | None]],
        metrics_url: str, interval_s: float = 10.0,
    ) -> None:  # fmt: skip
        self.samples: list[Sample] = []
        self.interval_s = interval_s
        self._began = time.monotonic()
        self._pids = pids  # (serve, broker), asked each time: both are restarted
        self._tail = CallTail(workdir)
        self._lag = Lag(settings, metrics_url)
        self._out = (workdir / "samples.jsonl").open("a", buffering=1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self, began: float) -> None:
        """Start sampling; a sample's ``t`` counts from ``began`` (monotonic)."""
        self._began = began
        self._thread.start()

    def finish(self) -> None:
        """Stop after the sample being taken."""
        self._stop.set()
        self._thread.join(timeout=60)
        self._lag.close()
        self._out.close()

    def _run(self) -> None:
        next_at = time.monotonic() + self.interval_s
        while not self._stop.wait(max(0.0, next_at - time.monotonic())):
            next_at += self.interval_s
            sample = self.take()
            self.samples.append(sample)
            self._out.write(json.dumps(sample.__dict__) + "\n")

    def take(self) -> Sample:
        """One sample now."""
        serve, broker = self._pids()
        latencies = self._tail.claim_latencies_ms()
        ends, committed = self._lag.read()
        lag = sum(max(0, e - committed[p]) for p, e in ends.items()) if ends and committed else None
        return Sample(
            t=round(time.monotonic() - self._began, 1), rss_serve_mb=rss_mb(serve),
            rss_broker_mb=rss_mb(broker), claims=len(latencies),
            p50_ms=round(statistics.median(latencies), 2) if latencies else None,
            p99_ms=round(percentile(latencies, 0.99), 2) if latencies else None,
            lag=lag, ends=ends, committed=committed, duckdb_mb=duckdb_mb(self._lag.metrics),
        )  # fmt: skip
