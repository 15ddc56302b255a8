"""Create and check the ledger's topics (docs/spec.md §3)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)

from oncelog.errors import KafkaOperationError, TopicConfigError
from oncelog.kafka.failures import LoginWatch, is_unreachable, kafka_failure, no_answer
from oncelog.kafka.logs import logged
from oncelog.settings import Settings
from oncelog.waiting import poll_until

_ADMIN_TIMEOUT_S = 30.0

#: The requests topic is the audit log: never compacted, never aged out by default.
#: A claim may carry 1 MiB of params and a completion 1 MiB of result; a snapshot or a
#: decision carries both. Kafka's default limit (1 MiB) would refuse them.
MAX_MESSAGE_BYTES = "4194304"

REQUESTS_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "max.message.bytes": MAX_MESSAGE_BYTES,
    "retention.ms": "-1",
    "retention.bytes": "-1",
    "message.timestamp.type": "LogAppendTime",
}

#: Full snapshots keyed by operation id. A recent history (1 h) survives compaction
#: so that audits and clients reading right behind the projector still see it.
EXECUTIONS_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "compact",
    "max.message.bytes": MAX_MESSAGE_BYTES,
    "min.compaction.lag.ms": "3600000",
    "message.timestamp.type": "LogAppendTime",
}


#: LangGraph checkpoints, keyed by part (docs/langgraph.md): a thread's deletion is tombstones,
#: which compaction then removes. Tombstones are kept a week (not Kafka's day), so a member
#: that folds a partition again after an absence still sees them; a recent history (1 h)
#: survives compaction, as on the executions topic.
CHECKPOINTS_CONFIG: Mapping[str, str] = {**EXECUTIONS_CONFIG, "delete.retention.ms": "604800000"}


#: Answers to clients: one per request, read right after it is written, so a week is ample.
DECISIONS_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "max.message.bytes": MAX_MESSAGE_BYTES,
    "retention.ms": "604800000",
    "message.timestamp.type": "LogAppendTime",
}

#: Undecodable or impossible requests, with their source position in headers. Kept forever.
DEADLETTER_CONFIG: Mapping[str, str] = {
    "cleanup.policy": "delete",
    "max.message.bytes": MAX_MESSAGE_BYTES,
    "retention.ms": "-1",
    "message.timestamp.type": "LogAppendTime",
}


@dataclass(frozen=True)
class TopicSpec:
    """One topic oncelog needs, with the configs it must carry.

    ``sharded`` topics are partitioned like the requests topic and must have its
    partition count; the decisions topic is partitioned by where clients listen.
    """

    name: str
    partitions: int
    config: Mapping[str, str]
    sharded: bool = True


def ledger_topics(
    settings: Settings,
    partitions: int | None = None,
    reply_partitions: int | None = None,
    requests_retention_ms: int | None = None,
) -> list[TopicSpec]:
    """The requests/executions pair, the decisions, dead-letter and checkpoints topics.

    The requests, executions and dead-letter topics have the same partition count:
    a request, its snapshot and its dead letter share one partition number. The
    decisions topic has its own (``ONCELOG_REPLY_PARTITIONS``): a decision goes to the
    reply partition its request names. The checkpoints topic is partitioned like the
    requests topic, by thread id: a thread's checkpoints are folded by the member that
    owns the same partition of the requests topic.

    ``requests_retention_ms`` ages the requests log out (only behind an archive:
    docs/guides/retention.md); unset, it keeps every record.
    """
    count = partitions or settings.partitions
    replies = reply_partitions or settings.reply_partitions
    requests = dict(REQUESTS_CONFIG)
    if requests_retention_ms is not None:
        requests["retention.ms"] = str(requests_retention_ms)
    return [
        TopicSpec(settings.requests_topic, count, requests),
        TopicSpec(settings.executions_topic, count, EXECUTIONS_CONFIG),
        TopicSpec(settings.decisions_topic, replies, DECISIONS_CONFIG, sharded=False),
        TopicSpec(settings.deadletter_topic, count, DEADLETTER_CONFIG),
        TopicSpec(settings.checkpoints_topic, count, CHECKPOINTS_CONFIG),
    ]


class LedgerAdmin(AdminClient):
    """An AdminClient that knows the address it was given, to name it when none answers, and
    how long to wait for it (``connect_timeout_s``) when asked for the cluster's metadata."""

    def __init__(self, config: dict[str, Any], connect_timeout_s: float = _ADMIN_TIMEOUT_S) -> None:
        self.login = LoginWatch()
        watched: dict[str, Any] = {"error_cb": self.login, **config}
        super().__init__(watched)
        self.bootstrap = str(config.get("bootstrap.servers"))
        self.connect_timeout_s = connect_timeout_s


def admin_client(settings: Settings, bootstrap: str) -> AdminClient:
    """An AdminClient with the shared librdkafka settings (SASL/TLS passthrough)."""
    config = logged({**settings.kafka_config(bootstrap), "log_level": 3})
    return LedgerAdmin(config, settings.connect_timeout_s)


def cluster_metadata(admin: AdminClient, timeout_s: float | None = None) -> Any:
    """The cluster's metadata (brokers and topics), waited for ``timeout_s`` (default: the
    admin's ``connect_timeout_s`` setting, the first answer a command waits for).

    Raises:
        BrokerUnreachableError: no broker answered within ``timeout_s``; names the address.
        KafkaAuthenticationError, KafkaTlsError: the login or the TLS handshake failed.
        KafkaOperationError: any other failure.
    """
    if timeout_s is None:
        timeout_s = float(getattr(admin, "connect_timeout_s", _ADMIN_TIMEOUT_S))
    try:
        return admin.list_topics(timeout=timeout_s)
    except KafkaException as exc:
        if is_unreachable(exc):
            where = getattr(admin, "bootstrap", "the configured bootstrap servers")
            what = "reading the cluster's metadata"
            raise no_answer(what, where, timeout_s, exc, admin) from exc
        raise KafkaOperationError(f"reading the cluster's metadata failed: {exc}") from exc


def replication_for(brokers: int, wanted: int | None = None) -> tuple[int, dict[str, str]]:
    """The replication factor and the extra topic configs for a cluster of ``brokers``.

    Three replicas with ``min.insync.replicas=2`` when the cluster has three brokers or
    more (one broker may then be lost without losing an acknowledged record: producers
    use ``acks=all``), one on a smaller cluster. ``wanted`` overrides the factor.
    """
    factor = wanted if wanted is not None else (3 if brokers >= 3 else 1)
    return factor, ({"min.insync.replicas": str(factor - 1)} if factor >= 3 else {})


def create_topics(
    admin: AdminClient, specs: list[TopicSpec], replication: int | None = None
) -> list[str]:
    """Create the topics that are missing; return the names it created.

    ``replication`` is the factor (see :func:`replication_for`; unset: from the broker count).
    """
    metadata = cluster_metadata(admin)
    factor, extra = replication_for(len(metadata.brokers), replication)
    new = [
        NewTopic(
            s.name,
            num_partitions=s.partitions,
            replication_factor=factor,
            config={**s.config, **extra},
        )
        for s in specs
        if s.name not in metadata.topics
    ]
    if not new:
        return []
    for name, future in admin.create_topics(new, operation_timeout=_ADMIN_TIMEOUT_S).items():
        try:
            future.result(timeout=_ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            raise kafka_failure(f"creating topic {name} failed", name, exc) from exc
    names = [t.topic for t in new]
    _wait_until_visible(admin, names)
    return names


def _wait_until_visible(admin: AdminClient, names: list[str]) -> None:
    """Creation is acknowledged before every broker's metadata shows the topic."""

    def visible() -> bool:
        topics = admin.list_topics(timeout=_ADMIN_TIMEOUT_S).topics
        return all(_has_leaders(topics.get(name)) for name in names)

    if poll_until(time.monotonic() + _ADMIN_TIMEOUT_S, visible):
        return
    raise KafkaOperationError(f"topics {names} were created but never became visible")


def _has_leaders(meta: Any) -> bool:
    return (
        meta is not None
        and bool(meta.partitions)
        and all(p.leader >= 0 for p in meta.partitions.values())
    )


def set_topic_configs(admin: AdminClient, topic: str, configs: Mapping[str, str]) -> None:
    """Set ``configs`` on an existing topic (an incremental change: the others stay)."""
    entries = [
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
        for name, value in configs.items()
    ]
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
    for future in admin.incremental_alter_configs([resource]).values():
        try:
            future.result(timeout=_ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            raise kafka_failure(
                f"changing the configs of topic {topic} failed", topic, exc
            ) from exc


def describe_configs(admin: AdminClient, topic: str) -> dict[str, str]:
    """The effective configuration of ``topic``."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    future = admin.describe_configs([resource])[resource]
    try:
        entries = future.result(timeout=_ADMIN_TIMEOUT_S)
    except KafkaException as exc:
        raise kafka_failure(f"describing topic {topic} failed", topic, exc) from exc
    return {name: entry.value for name, entry in entries.items()}


def check_topics(
    admin: AdminClient, specs: list[TopicSpec], replication: int | None = None
) -> dict[str, int]:
    """Refuse topics that are missing, misconfigured, replicated less than the cluster
    allows (see :func:`replication_for`; ``replication`` is ``ONCELOG_REPLICATION_FACTOR``),
    or whose sharded topics differ in partition count (the decisions topic may have any).

    Returns the partition count of each topic.
    """
    cluster = cluster_metadata(admin)
    metadata = cluster.topics
    problems: list[str] = []
    counts: dict[str, int] = {}
    for spec in specs:
        if spec.name not in metadata:
            problems.append(f"topic {spec.name} does not exist (run `oncelog topics create`)")
            continue
        counts[spec.name] = len(metadata[spec.name].partitions)
        configs = describe_configs(admin, spec.name)
        problems += _config_problems(spec, configs)
        factor = min(len(p.replicas) for p in metadata[spec.name].partitions.values())
        problems += replication_problems(
            spec.name,
            factor,
            int(configs.get("min.insync.replicas", "1")),
            len(cluster.brokers),
            replication,
        )
    sharded = {s.name: counts[s.name] for s in specs if s.sharded and s.name in counts}
    if len(set(sharded.values())) > 1:
        problems.append(f"partition counts differ, they must be equal: {sharded}")
    if problems:
        raise TopicConfigError("; ".join(problems))
    return counts


def replication_factors(admin: AdminClient, names: list[str]) -> dict[str, int]:
    """The replication factor of each existing topic of ``names`` (its least replicated
    partition's), as the cluster's metadata says now."""
    topics = cluster_metadata(admin).topics
    return {
        name: min(len(p.replicas) for p in topics[name].partitions.values())
        for name in names
        if name in topics and topics[name].partitions
    }


def replication_problems(
    topic: str, factor: int, min_insync: int, brokers: int, wanted: int | None = None
) -> list[str]:
    """Why ``topic``'s replication is below what a cluster of ``brokers`` allows, if it is.

    Fewer replicas than :func:`replication_for` asks for is a problem; so are three or more
    replicas with ``min.insync.replicas`` below 2: ``acks=all`` would then acknowledge a
    write that one broker holds, and losing that broker loses it. More replicas than the
    live brokers (one is down) is not.
    """
    expected, _ = replication_for(brokers, wanted)
    problems = []
    if factor < expected:
        problems.append(
            f"topic {topic} has {factor} replica(s); a cluster of {brokers} brokers takes "
            f"{expected} (recreate it, or set ONCELOG_REPLICATION_FACTOR={factor} to accept it)"
        )
    if factor >= 3 and min_insync < 2:
        problems.append(
            f"topic {topic} has {factor} replicas but min.insync.replicas={min_insync}: an "
            "acknowledged write may live on one broker only; set min.insync.replicas=2"
        )
    return problems


def _config_problems(spec: TopicSpec, actual: Mapping[str, str]) -> list[str]:
    problems = []
    policy = set(actual.get("cleanup.policy", "").split(","))
    if spec.config["cleanup.policy"] == "delete" and "compact" in policy:
        problems.append(
            f"topic {spec.name} compacts (cleanup.policy={actual['cleanup.policy']}): "
            "the requests log is the audit trail and must use cleanup.policy=delete"
        )
    if spec.config["cleanup.policy"] == "compact" and "compact" not in policy:
        problems.append(
            f"topic {spec.name} does not compact (cleanup.policy={actual.get('cleanup.policy')}): "
            "the executions and checkpoints topics must use cleanup.policy=compact"
        )
    if spec.config["cleanup.policy"] == "compact" and "delete" in policy:
        problems.append(
            f"topic {spec.name} also deletes (cleanup.policy={actual['cleanup.policy']}): "
            "snapshots that age out lose a key's identity, use cleanup.policy=compact"
        )
    if actual.get("message.timestamp.type") != "LogAppendTime":
        problems.append(
            f"topic {spec.name} has message.timestamp.type={actual.get('message.timestamp.type')}, "
            "decisions need LogAppendTime"
        )
    return problems
