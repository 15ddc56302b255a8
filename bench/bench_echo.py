"""The floor under a claim and under the projector: a Python echo in the projector's place.

    python -m bench.bench_echo [--sequential N] [--seconds S] [--in-flight W] [--rate R]
                               [--work-us ECHO[,CLIENT]]

Not a test. A child process does what ``oncelog serve`` does with Kafka and nothing else:
it consumes the requests topic as a member of the projectors' consumer group (the same
settings), and for every record it publishes a decision to the sender's reply partition
and a snapshot to the executions topic, through the projector's lanes. The bytes are real
(a claim's and a completion's encoded decision and snapshot, computed here once), but the
echo does not decode, validate, fold, encode or write DuckDB. This process plays the
client: requests through the client's lanes, answers read with the client's long-poll
consumer of one reply partition.

It measures, on one broker in one run, once the broker's JIT is quiet under the echo's load
(``bench/peers/jit.py``, as ``make bench-peers`` waits before oncelog is measured):

- ``raw_rtt_p50_ms``: the raw produce->consume round trip (``bench_ledger``), the claim
  target's yardstick;
- ``two_hop_p50_ms``: one request at a time through the echo and back. Any design that
  answers through the log (request topic -> referee -> decisions topic) pays this before
  doing any work: it is the floor of a claim's latency. ``first_hop_p50_ms``: the way
  there alone (the echo stamps when it read the request);
- ``echo_cpu_us_per_request``: the echo's CPU (all its threads, from /proc) per request
  with W requests in flight, each answer followed by the next request (the shape of
  ``make bench-peers``' 64 workers; ``--rate`` paces it, e.g. to oncelog's requests/s there).
  The Kafka part of the projector's CPU per request,
  without the referee's work: its floor in this language and client library.

``--work-us`` makes the echo (and the client) spend that much of its thread's CPU on each
request before it answers (sends) it: the ledger's work at a cost given by hand, for what
throughput a design with that much work a request could reach here (what a native core's
decoding, fold, encoding and DuckDB would cost is the caller's estimate).

The last line is one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import select
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Protocol

from confluent_kafka import Consumer, TopicPartition

from bench.bench_ledger import raw_round_trip
from bench.common import bench_settings, on_broker, pct
from bench.peers import cpu, jit
from bench.synthetic import claim_complete
from oncelog.kafka.lanes import Lanes
from oncelog.kafka.reader import consume_available, high_watermarks, plain_consumer
from oncelog.producer.dispatch import BATCH_LINGER_MS
from oncelog.projector.service import EXPRESS_BATCH, PUBLISH_LINGER_MS, group_config
from oncelog.referee.fold import fold
from oncelog.schemas.codec import encode_decision, encode_request, encode_snapshot
from oncelog.schemas.models import ExecutionSnapshot
from oncelog.settings import Settings

_REPLY_PARTITION = 0
_READY_TIMEOUT_S = 60.0
_ANSWER_TIMEOUT_S = 30.0
# The header of a stamped request, and of its answer: when the echo read it (time_ns,
# the wall clock that processes of one machine share).
_STAMP = "echo_ns"


def _records() -> dict[str, list[str]]:
    """Hex of a claim's and a completion's request, decision and snapshot, as encoded live."""
    claim, complete = claim_complete("echo-chan", "echo-key")
    out: dict[str, list[str]] = {"request": [], "decision": [], "snapshot": []}
    state = None
    for t, request in enumerate((claim, complete)):
        state, decision = fold(state, request, 1_700_000_000_000 + t)
        assert state is not None
        snap = ExecutionSnapshot(state, 0, t, request.request_id, decision.outcome, t)
        out["request"].append(encode_request(request).hex())
        out["decision"].append(encode_decision(decision).hex())
        out["snapshot"].append(encode_snapshot(snap).hex())
    return out


# --- the echo (child process) ---------------------------------------------------------


def spend(us: float) -> None:
    """Spend ``us`` microseconds of this thread's CPU (the work a request would cost)."""
    if us <= 0:
        return
    until = time.thread_time_ns() + int(us * 1000)
    while time.thread_time_ns() < until:
        pass


def serve_echo(
    settings: Settings, bootstrap: str, records: dict[str, list[str]], work_us: float = 0.0
) -> None:
    """Echo every request as the projector publishes: decision + snapshot, one lane a batch
    (after ``work_us`` of CPU for each)."""
    kafka = settings.kafka_config(bootstrap)
    decisions = [bytes.fromhex(h) for h in records["decision"]]
    snapshots = [bytes.fromhex(h) for h in records["snapshot"]]
    consumer = Consumer({**kafka, **group_config(settings)})
    assigned: list[int] = []
    consumer.subscribe(
        [settings.requests_topic],
        on_assign=lambda c, parts: assigned.extend(p.partition for p in parts),
    )
    lanes = Lanes(kafka, PUBLISH_LINGER_MS)
    while len(assigned) < settings.partitions:
        consumer.poll(0.1)
    print("ready", flush=True)
    while True:
        batch = consume_available(consumer, 5000, 0.1)
        send = lanes.lane(alone=len(batch) <= EXPRESS_BATCH).send_nowait
        for msg in batch:
            if msg.error() is not None:
                continue
            spend(work_us)
            kind = (msg.offset() or 0) & 1  # alternate claim-sized and completion-sized
            key = msg.key() or b""
            # A stamped request (the sequential phase) learns when it got here.
            stamp = [(_STAMP, str(time.time_ns()).encode())] if msg.headers() else None
            send(settings.decisions_topic, _REPLY_PARTITION, key, decisions[kind], stamp)
            send(settings.executions_topic, msg.partition() or 0, key, snapshots[kind])


def _start_echo(
    settings: Settings, bootstrap: str, records: dict[str, list[str]], work_us: float = 0.0
) -> subprocess.Popen[str]:
    # Topic names and partitions travel; everything else comes from the same environment.
    job = json.dumps({"topic_prefix": settings.topic_prefix, "partitions": settings.partitions,
                      "bootstrap": bootstrap, "records": records,
                      "work_us": work_us})  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "bench.bench_echo", "--serve"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )  # fmt: skip
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(job + "\n")
    proc.stdin.close()
    ready, _, _ = select.select([proc.stdout], [], [], _READY_TIMEOUT_S)
    line = proc.stdout.readline() if ready else ""  # "ready" once every partition is assigned
    if line.strip() != "ready":
        proc.kill()
        raise RuntimeError(f"the echo did not get ready: {line!r}")
    return proc


# --- the client side (this process) ---------------------------------------------------


class Client(Protocol):
    """What the two measurements drive: :class:`EchoClient`, or a stand-in in the tests."""

    def send(self, *, alone: bool, stamped: bool = False) -> bytes:
        """Send one request; its key."""

    def answers(self, wait_s: float = 0.05) -> list[bytes]:
        """Keys of the answers fetched now."""

    def echo_ns(self, key: bytes) -> int | None:
        """When the echo read the stamped request ``key`` (None: not stamped, or not yet)."""


class EchoClient:
    """Requests through the client's lanes; answers from one reply partition."""

    def __init__(
        self, settings: Settings, bootstrap: str, requests: list[bytes], work_us: float = 0.0
    ) -> None:
        kafka = settings.kafka_config(bootstrap)
        self._settings = settings
        self._work_us = work_us
        self._requests = requests
        self._lanes = Lanes(kafka, BATCH_LINGER_MS)
        self._listener = plain_consumer({**kafka, "fetch.wait.max.ms": 500})
        topic = settings.decisions_topic
        end = high_watermarks(self._listener, topic, [_REPLY_PARTITION])[_REPLY_PARTITION]
        self._listener.assign([TopicPartition(topic, _REPLY_PARTITION, end)])
        self.sent = 0
        self._stamps: dict[bytes, int] = {}

    def send(self, *, alone: bool, stamped: bool = False) -> bytes:
        """One request to a partition in turn; its key (the answer comes back under it).
        ``stamped``: the echo tells when it read it (:meth:`echo_ns`)."""
        spend(self._work_us)
        key = uuid.uuid4().hex.encode()
        partition = self.sent % self._settings.partitions
        value = self._requests[self.sent & 1]
        headers = [(_STAMP, b"")] if stamped else None
        lane = self._lanes.lane(alone=alone)
        lane.send_nowait(self._settings.requests_topic, partition, key, value, headers)
        self.sent += 1
        return key

    def answers(self, wait_s: float = 0.05) -> list[bytes]:
        """Keys of the answers fetched now (waits up to ``wait_s`` for the first)."""
        keys = []
        for msg in consume_available(self._listener, 2000, wait_s):
            key = msg.key() or b""
            keys.append(key)
            stamp = dict(msg.headers() or []).get(_STAMP)
            if stamp:
                self._stamps[key] = int(stamp)
        return keys

    def echo_ns(self, key: bytes) -> int | None:
        """When the echo read the stamped request ``key``."""
        return self._stamps.pop(key, None)

    def close(self) -> None:
        self._listener.close()
        self._lanes.close()


def sequential(client: Client, n: int) -> tuple[list[float], list[float]]:
    """Round trips (ms) of one request at a time through the echo, and the first hop of
    each (send to the echo's read, ms) where the echo stamped it."""
    trips, first_hops = [], []
    for _ in range(n):
        began, sent_ns = time.perf_counter(), time.time_ns()
        key = client.send(alone=True, stamped=True)
        deadline = time.monotonic() + _ANSWER_TIMEOUT_S
        while key not in client.answers():
            if time.monotonic() > deadline:
                raise TimeoutError("no echo within 30 s")
        trips.append((time.perf_counter() - began) * 1000)
        echoed = client.echo_ns(key)
        if echoed is not None:
            first_hops.append((echoed - sent_ns) / 1e6)
    return trips, first_hops


def in_flight(client: Client, width: int, seconds: float, rate: float | None = None) -> int:
    """Keep up to ``width`` requests in flight for ``seconds``, each answer followed by the
    next request, at most ``rate`` requests/s when given; return the answers counted."""
    began = time.monotonic()
    owed, sent, answered = width, 0, 0
    while (now := time.monotonic()) < began + seconds:
        allowed = (
            owed if rate is None else max(0, min(owed, int((now - began) * rate) + width - sent))
        )
        for _ in range(allowed):
            client.send(alone=False)
        owed, sent = owed - allowed, sent + allowed
        # Paced sends leave in bursts a linger apart, as the client's batched lane groups them.
        wait_s = 0.05 if rate is None or not owed else BATCH_LINGER_MS / 1000
        keys = client.answers(wait_s)
        answered += len(keys)
        owed += len(keys)
    return answered


async def _load(client: Client, width: int, seconds: float) -> None:
    """:func:`in_flight` as the load :func:`jit.warm` drives (nothing else runs meanwhile)."""
    in_flight(client, width, seconds)


def measure(args: argparse.Namespace, bootstrap: str, tmp: Path) -> dict[str, Any]:
    """The echo: warm-up (until the broker's JIT is quiet), the raw round trip, sequential
    round trips, the CPU window."""
    settings = bench_settings(bootstrap, tmp, "echo")
    kafka = settings.kafka_config(bootstrap)
    records = _records()
    echo_work, client_work = args.work_us
    echo = _start_echo(settings, bootstrap, records, echo_work)
    requests = [bytes.fromhex(h) for h in records["request"]]
    client = EchoClient(settings, bootstrap, requests, client_work)
    broker = cpu.our_broker_pid(bootstrap)
    try:
        in_flight(client, args.in_flight, args.warmup)
        # As make bench-peers does before oncelog is measured: a freshly started broker
        # compiles its request paths while it serves them, which slows every round trip.
        warmed_s = asyncio.run(jit.warm(broker, lambda s: _load(client, args.in_flight, s)))
        raw_round_trip(kafka, settings.deadletter_topic, 50)
        raw = raw_round_trip(kafka, settings.deadletter_topic, 300)
        hops, first_hops = sequential(client, args.sequential)
        readers = {"echo": lambda: cpu.process_ticks(echo.pid), "client": cpu.own_ticks}
        if broker is not None:
            readers["broker"] = lambda: cpu.process_ticks(broker)
        before, began = cpu.sample(readers), time.perf_counter()
        answered = in_flight(client, args.in_flight, args.seconds, args.rate)
        elapsed, after = time.perf_counter() - began, cpu.sample(readers)
    finally:
        client.close()
        echo.kill()
        echo.wait()
    per_request = {k: round(v, 1) for k, v in cpu.us_per(before, after, answered).items()}
    raw_p50, hop_p50 = statistics.median(raw), statistics.median(hops)
    return {
        "raw_rtt_p50_ms": round(raw_p50, 3),
        "two_hop_p50_ms": round(hop_p50, 3),
        "two_hop_p99_ms": round(pct(hops, 0.99), 3),
        "two_hop_over_raw": round(hop_p50 / raw_p50, 2),
        # Client -> echo alone (wall clocks of one machine): each hop's share of the two.
        "first_hop_p50_ms": round(statistics.median(first_hops), 3) if first_hops else None,
        "requests_per_s": round(answered / elapsed, 1),
        "echo_cpu_us_per_request": per_request["echo"],
        "cpu_us_per_request": per_request,
        "record_bytes": {k: [len(h) // 2 for h in v] for k, v in records.items()},
        "broker_jit_warmup_s": round(warmed_s, 1),
        "work_us": {"echo": echo_work, "client": client_work},
    }


def _work_us(text: str) -> tuple[float, float]:
    """``ECHO`` or ``ECHO,CLIENT``: microseconds of CPU a request, finite, never negative."""
    try:
        parts = [float(part) for part in text.split(",")]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not microseconds: {text!r}") from exc
    if len(parts) > 2 or not all(math.isfinite(part) and part >= 0 for part in parts):
        raise argparse.ArgumentTypeError(f"ECHO[,CLIENT], each finite and >= 0: {text!r}")
    return parts[0], parts[1] if len(parts) == 2 else 0.0


def _work_said(work_us: tuple[float, float]) -> str:
    echo, client = work_us
    return "no work" if not (echo or client) else f"work a request: echo {echo} µs, client {client}"


def main() -> None:
    """Run, print the figures; the last line is JSON (``--serve``: be the echo)."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_echo", description=__doc__)
    parser.add_argument("--sequential", type=int, default=1000, help="round trips, one at a time")
    parser.add_argument("--seconds", type=float, default=15.0, help="the CPU window")
    parser.add_argument("--warmup", type=float, default=5.0, help="load before measuring")
    parser.add_argument("--in-flight", type=int, default=64, help="requests in flight")
    parser.add_argument("--rate", type=float, help="at most this many requests/s")
    parser.add_argument(
        "--work-us",
        type=_work_us,
        default=(0.0, 0.0),
        help="CPU µs the echo (and, after a comma, the client) spends on each request",
    )
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        job = json.loads(sys.stdin.readline())
        settings = Settings(topic_prefix=job["topic_prefix"], partitions=job["partitions"])
        serve_echo(settings, job["bootstrap"], job["records"], job["work_us"])
        return
    figures = on_broker("echo", lambda bootstrap, tmp: measure(args, bootstrap, tmp))
    print(
        f"raw produce->consume RTT p50 {figures['raw_rtt_p50_ms']} ms; through the echo "
        f"(two hops, {_work_said(args.work_us)}) p50 {figures['two_hop_p50_ms']} ms "
        f"({figures['two_hop_over_raw']}x; the first hop {figures['first_hop_p50_ms']} ms); "
        f"echo CPU {figures['echo_cpu_us_per_request']} us per request "
        f"at {figures['requests_per_s']} requests/s"
    )
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
