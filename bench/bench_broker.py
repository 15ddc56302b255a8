"""The broker's CPU per record by records per produce request: the cost model's broker term.

    python -m bench.bench_broker [--records N] [--batches 1 4 16 64 256]

For each batch size b: one idempotent ``acks=all`` producer sends N records of 300 bytes
(about a decision's size) to a 6-partition topic, b records at a time, each group followed by
a ``flush`` so that it travels as one produce request; one consumer reads them back. The
broker JVM's ``utime + stime`` (``/proc/<pid>/stat``, all its threads) over produce + consume,
divided by N, is its CPU per record at that batching. The local broker must be ours (it is
started when none runs). Fit ``us = a / b + c``: ``a`` is the cost of a request, ``c`` of a
record. Not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import uuid
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition

from bench.common import bench_broker, created_here
from bench.peers import cpu
from oncelog.broker.local import LocalBroker
from oncelog.settings import Settings
from oncelog.topics import REQUESTS_CONFIG, TopicSpec, admin_client, create_topics

PARTITIONS = 6
VALUE = b"v" * 300


def _produce(kafka: dict[str, Any], topic: str, records: int, batch: int) -> None:
    producer = Producer({**kafka, "acks": "all", "enable.idempotence": True, "linger.ms": 0})
    for start in range(0, records, batch):
        for i in range(start, min(start + batch, records)):
            producer.produce(topic, VALUE, str(i).encode(), partition=(start // batch) % PARTITIONS)
        producer.flush(30)


def _consume(kafka: dict[str, Any], topic: str, records: int) -> None:
    consumer = Consumer({**kafka, "group.id": uuid.uuid4().hex, "enable.auto.commit": False,
                         "fetch.wait.max.ms": 5})  # fmt: skip
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    seen = 0
    while seen < records:
        seen += sum(1 for m in consumer.consume(1000, timeout=5) if m.error() is None)
    consumer.close()


def broker_us_per_record(
    settings: Settings, broker_pid: int, records: int, batch: int
) -> tuple[float, float]:
    """The broker's CPU microseconds per record, produced b at a time and consumed back,
    and the wall seconds it took (the broker also spends CPU per second, idle or not)."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    topic = f"bench-broker-{uuid.uuid4().hex[:8]}"
    spec = TopicSpec(topic, PARTITIONS, REQUESTS_CONFIG)
    created_here(create_topics(admin_client(settings, settings.bootstrap_servers), [spec]))
    before, began = cpu.process_ticks(broker_pid), time.monotonic()
    _produce(kafka, topic, records, batch)
    _consume(kafka, topic, records)
    spent = (cpu.process_ticks(broker_pid) - before) * 1e6 / cpu.CLOCK_TICKS
    return spent / records, time.monotonic() - began


def idle_us_per_s(broker_pid: int, seconds: float) -> float:
    """The broker's CPU microseconds per wall second with no client traffic of ours."""
    before = cpu.process_ticks(broker_pid)
    time.sleep(seconds)  # a measurement window, not a wait for anything
    return (cpu.process_ticks(broker_pid) - before) * 1e6 / cpu.CLOCK_TICKS / seconds


def main() -> None:
    """One figure per batch size; the last line is JSON."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--records", type=int, default=20000)
    parser.add_argument("--batches", type=int, nargs="+", default=[1, 4, 16, 64, 256])
    args = parser.parse_args()
    load = os.getloadavg()[0]
    with bench_broker() as broker:
        status = LocalBroker(Settings()).status()
        assert status is not None, "no local broker"
        assert status.bootstrap == broker.bootstrap, "not our broker: its JVM is not ours to read"
        settings = Settings(bootstrap_servers=broker.bootstrap)
        broker_us_per_record(settings, status.pid, 2000, 16)  # warm-up: the JIT
        idle = idle_us_per_s(status.pid, 5.0)
        print(f"idle: broker {idle:.0f} us CPU per second")
        figures = {}
        for batch in args.batches:
            us, wall = broker_us_per_record(settings, status.pid, args.records, batch)
            figures[batch] = (us, us - idle * wall / args.records)
            print(f"{batch:4d} records per request: broker {us:.1f} us/record "
                  f"({figures[batch][1]:.1f} above idle, {wall:.1f} s)")  # fmt: skip
    out = {f"batch_{b}": round(us, 1) for b, (us, _) in figures.items()}
    above = {f"batch_{b}": round(extra, 1) for b, (_, extra) in figures.items()}
    loads = [load, os.getloadavg()[0]]
    print(json.dumps({"broker_cpu_us_per_record": out, "above_idle": above,
                      "idle_us_per_s": round(idle), "load_avg_1m": loads}))  # fmt: skip


if __name__ == "__main__":
    main()
