"""The drill's requests: whole lifecycles written straight to the requests topic, fast.

Every operation is one of a few stories, so the archive holds what an auditor looks for:
plain completions and replays, leases that lapse and are reclaimed, a stale holder's
completion after the reclaim (a suspected double), retryable failures, results that
expire, conflicting params, and intents a person approves or denies (each decision
signed by the approver the intent lists, after a forged one that is refused). The
stories that need log time to pass are written in two phases: the first half of each, a
pause, then the rest, so the second half's log time is past the first's short lease or
retention.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Message, Producer

from oncelog.identity import canonical_json, ids
from oncelog.identity.approver_signature import decision_message, public_key_of, sign
from oncelog.identity.partitioner import partition_for
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import (
    ApprovalPolicy,
    Approve,
    ApproverKey,
    Body,
    Claim,
    Complete,
    Deny,
    Effect,
    Fail,
    Heartbeat,
    Release,
    Request,
)
from oncelog.settings import Settings
from oncelog.waiting import poll_until

LONG_MS = 600_000
SHORT_MS = 1_000
"""A lease or a retention (the shortest valid lease) that has lapsed by the second phase's
log time."""

STEPS = 8
"""Operations per channel."""

STORIES = (
    "completed", "completed", "completed", "completed", "completed", "completed",
    "lapsed_double", "failed_retry", "result_expired", "conflict", "released",
    "approved", "denied",
)  # fmt: skip

APPROVER_KEY = bytes(range(32))
"""The drill's approver's private key: a fixed one, a drill's log is no secret."""
POLICY = ApprovalPolicy(LONG_MS, False, (ApproverKey("desk", public_key_of(APPROVER_KEY)),))


@dataclass
class Operation:
    """One operation's identity and the requests of each phase."""

    channel: str
    key: str
    first: list[Request] = field(default_factory=list)
    second: list[Request] = field(default_factory=list)


def _claim(params: Mapping[str, object], lease_ms: int, retention_ms: int, worker: str) -> Claim:
    return Claim(
        "charge",
        canonical_json.canonical_json(params),
        ids.request_hash("charge", params),
        lease_ms,
        retention_ms,
        Effect.EXTERNAL,
        worker,
    )


def operation(index: int, story: str) -> Operation:
    """The requests of the ``index``-th operation, telling ``story``."""
    channel, key = f"ret-{index // STEPS}", f"step-{index % STEPS + 1}"
    op = ids.operation_id(channel, key)
    out = Operation(channel, key)
    n = 0

    def req(body: Body, token: str | None) -> Request:
        nonlocal n
        n += 1
        return Request(f"{op}-{n}", op, channel, key, token, body)

    params = {"order": index, "cents": index % 997}
    a, b = f"a-{index}", f"b-{index}"
    lease = SHORT_MS if story in ("lapsed_double", "released") else LONG_MS
    retention = SHORT_MS if story == "result_expired" else LONG_MS
    out.first.append(req(_claim(params, lease, retention, "w-a"), a))
    done = Complete(canonical_json.canonical_json({"paid": index}))
    if story == "lapsed_double":  # b reclaims the lapsed lease, then a's completion lands
        out.second += [req(_claim(params, LONG_MS, LONG_MS, "w-b"), b), req(done, a), req(done, b)]
    elif story == "released":  # b reclaims the lapsed lease and gives it back
        out.second += [req(_claim(params, LONG_MS, LONG_MS, "w-b"), b), req(Release(), b)]
    elif story == "failed_retry":
        out.first += [req(Heartbeat(None), a), req(Fail("timeout", True), a)]
        out.second += [req(_claim(params, LONG_MS, LONG_MS, "w-b"), b), req(done, b)]
    elif story == "result_expired":
        out.first.append(req(done, a))
        out.second.append(req(_claim(params, LONG_MS, LONG_MS, "w-b"), b))
    elif story in ("approved", "denied"):
        out.first[0] = out.first[0]._replace(approval=POLICY)
        out.first += _decisions(op, params, story == "approved", req)
        out.second.append(req(_claim(params, LONG_MS, LONG_MS, "w-b"), b))
        if story == "approved":
            out.second.append(req(done, b))
    elif story == "conflict":
        out.first.append(req(done, a))
        other = {**params, "cents": -1}
        out.second.append(req(_claim(other, LONG_MS, LONG_MS, "w-b"), b))
    else:
        out.first += [req(Heartbeat(None), a), req(done, a)]
        out.second.append(req(_claim(params, LONG_MS, LONG_MS, "w-b"), b))  # replayed
    return out


def _decisions(op: str, params: Mapping[str, object], approve: bool, req: Any) -> list[Request]:
    """A forged decision (unsigned: refused), then the approver's signed one."""
    request_hash = ids.request_hash("charge", params)
    reason = "" if approve else "over the limit"
    signature = sign(APPROVER_KEY, decision_message(op, request_hash, approve, "desk", reason))
    if approve:
        return [req(Approve("desk", request_hash), None),
                req(Approve("desk", request_hash, signature), None)]  # fmt: skip
    return [req(Deny("desk", request_hash, reason), None),
            req(Deny("desk", request_hash, reason, signature), None)]  # fmt: skip


def operations(total_requests: int, start: int = 0) -> Iterator[tuple[Operation, str]]:
    """Operations from index ``start`` until they hold ``total_requests`` requests."""
    written, index = 0, start
    while written < total_requests:
        story = STORIES[index % len(STORIES)]
        op = operation(index, story)
        written += len(op.first) + len(op.second)
        index += 1
        yield op, story


@dataclass
class Written:
    """What :func:`write` appended: requests, operations and channels per story."""

    requests: int = 0
    operations: int = 0
    stories: Counter[str] = field(default_factory=Counter)
    channels: dict[str, str] = field(default_factory=dict)  # channel -> a story it holds
    next_index: int = 0


def write(settings: Settings, total_requests: int, start: int = 0) -> Written:
    """Append about ``total_requests`` requests in two phases, flushed, in order per
    operation (one partition per channel, an idempotent producer)."""
    assert settings.bootstrap_servers is not None
    producer = Producer(
        {**settings.kafka_config(settings.bootstrap_servers), "linger.ms": 20,
         "queue.buffering.max.messages": 500_000, "compression.type": "lz4",
         "enable.idempotence": True}
    )  # fmt: skip
    ops = list(operations(total_requests, start))
    out = Written(operations=len(ops), next_index=start + len(ops))
    latest = [0]  # the log time of the latest record appended

    def appended(err: object, msg: Message) -> None:
        if err is None:
            latest[0] = max(latest[0], msg.timestamp()[1])

    for phase in ("first", "second"):
        for op, story in ops:
            partition = partition_for(op.channel, settings.partitions)
            for request in getattr(op, phase):
                _produce(producer, settings.requests_topic, request, partition, appended)
                out.requests += 1
            if phase == "first":
                out.stories[story] += 1
                out.channels.setdefault(op.channel, story)
        if producer.flush(120) > 0:
            raise RuntimeError("the drill's requests were not all acknowledged within 120 s")
        # The second phase's log time must be past the first's short leases: the broker
        # stamps each batch with its clock, the one this host reads.
        poll_until(time.monotonic() + 10, lambda: time.time() * 1000 > latest[0] + SHORT_MS)
    return out


def _produce(
    producer: Producer, topic: str, request: Request, partition: int, on_delivery: Any
) -> None:
    value = encode_request(request)
    key = request.operation_id.encode()
    while True:
        try:
            producer.produce(topic, value, key, partition=partition, on_delivery=on_delivery)
            return
        except BufferError:
            producer.poll(0.1)
