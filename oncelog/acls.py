"""The Kafka ACLs of the ledger's three principals (docs/spec.md §8).

- worker: writes requests, reads decisions, writes checkpoints (a LangGraph saver);
- projector: reads requests in its consumer group; writes decisions, executions and
  dead letters; reads executions (restore) and checkpoints (their fold); writes
  requests (retention sweeps); describes the configs of the five topics (its start-up
  check);
- auditor: reads executions.

Every principal also needs DESCRIBE on the throwaway reader groups
(``oncelog-reader-*``, see :func:`oncelog.kafka.reader.plain_consumer`): those
consumers only assign partitions and never commit, but librdkafka still looks up
their group coordinator. Nobody gets CREATE, ALTER or any cluster operation:
``oncelog topics create`` and ``oncelog topics acl --apply`` run as an admin.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from oncelog.errors import KafkaOperationError
from oncelog.kafka.reader import READER_GROUP_PREFIX
from oncelog.settings import Settings
from oncelog.waiting import poll_until

_ADMIN_TIMEOUT_S = 30.0

#: kafka-acls.sh spells operations in CamelCase.
_CLI_OPERATION = {
    AclOperation.READ: "Read",
    AclOperation.WRITE: "Write",
    AclOperation.DESCRIBE: "Describe",
    AclOperation.DESCRIBE_CONFIGS: "DescribeConfigs",
}


@dataclass(frozen=True)
class Principals:
    """The Kafka principal of each ledger role (``User:<name>`` for SASL users)."""

    worker: str = "User:worker"
    projector: str = "User:projector"
    auditor: str = "User:auditor"


@dataclass(frozen=True)
class Grant:
    """One ALLOW ACL: ``principal`` may do ``operation`` on a topic or group."""

    principal: str
    operation: AclOperation
    resource: ResourceType
    name: str
    prefixed: bool = False

    def binding(self) -> AclBinding:
        """The confluent-kafka binding (any host)."""
        pattern = ResourcePatternType.PREFIXED if self.prefixed else ResourcePatternType.LITERAL
        return AclBinding(
            self.resource,
            self.name,
            pattern,
            self.principal,
            "*",
            self.operation,
            AclPermissionType.ALLOW,
        )

    def target(self) -> str:
        """The kafka-acls.sh options naming the resource."""
        kind = "--topic" if self.resource == ResourceType.TOPIC else "--group"
        pattern = " --resource-pattern-type prefixed" if self.prefixed else ""
        return f"{kind} {self.name}{pattern}"


def acl_commands(grants: list[Grant], bootstrap: str) -> list[str]:
    """The grants as ``kafka-acls.sh`` commands, one per principal and resource."""
    operations: dict[tuple[str, str], list[str]] = {}
    for grant in grants:
        ops = operations.setdefault((grant.principal, grant.target()), [])
        ops.append(f"--operation {_CLI_OPERATION[grant.operation]}")
    head = f"kafka-acls.sh --bootstrap-server {bootstrap} --command-config admin.properties --add"
    return [
        f"{head} \\\n    --allow-principal {who} {' '.join(ops)} {target}"
        for (who, target), ops in operations.items()
    ]


def _topic(principal: str, operation: AclOperation, name: str) -> Grant:
    return Grant(principal, operation, ResourceType.TOPIC, name)


def _reader_groups(principal: str) -> Grant:
    return Grant(
        principal, AclOperation.DESCRIBE, ResourceType.GROUP, READER_GROUP_PREFIX, prefixed=True
    )


def ledger_acls(settings: Settings, principals: Principals | None = None) -> list[Grant]:
    """Every ACL the three roles need on ``settings``' topics, and nothing more."""
    p = principals or Principals()
    s = settings
    read, write = AclOperation.READ, AclOperation.WRITE
    worker = [
        _topic(p.worker, write, s.requests_topic),
        _topic(p.worker, read, s.decisions_topic),
        # A LangGraph saver's checkpoints (oncelog.integrations.langgraph).
        _topic(p.worker, write, s.checkpoints_topic),
        _reader_groups(p.worker),
    ]
    projector = [
        _topic(p.projector, read, s.requests_topic),
        Grant(p.projector, read, ResourceType.GROUP, f"{s.topic_prefix}.projector"),
        *(
            _topic(p.projector, write, t)
            for t in (s.decisions_topic, s.executions_topic, s.deadletter_topic, s.requests_topic)
        ),
        _topic(p.projector, read, s.executions_topic),
        _topic(p.projector, read, s.checkpoints_topic),
        *(
            _topic(p.projector, AclOperation.DESCRIBE_CONFIGS, t)
            for t in (
                s.requests_topic,
                s.executions_topic,
                s.decisions_topic,
                s.deadletter_topic,
                s.checkpoints_topic,
            )
        ),
        _reader_groups(p.projector),
    ]
    auditor = [_topic(p.auditor, read, s.executions_topic), _reader_groups(p.auditor)]
    return [*worker, *projector, *auditor]


def apply_acls(admin: AdminClient, grants: list[Grant]) -> None:
    """Create the ACLs (existing ones are kept) and wait until the broker lists them all."""
    bindings = [g.binding() for g in grants]
    for binding, future in admin.create_acls(bindings, request_timeout=_ADMIN_TIMEOUT_S).items():
        try:
            future.result(timeout=_ADMIN_TIMEOUT_S)
        except KafkaException as exc:
            raise KafkaOperationError(f"creating ACL {binding} failed: {exc}") from exc
    listed = poll_until(
        time.monotonic() + _ADMIN_TIMEOUT_S, lambda: set(bindings) <= set(describe_acls(admin))
    )
    if not listed:
        raise KafkaOperationError(f"ACLs were created but not listed after {_ADMIN_TIMEOUT_S}s")


def describe_acls(admin: AdminClient) -> list[AclBinding]:
    """Every ACL the broker holds."""
    # None matches any name, principal and host (documented; the annotations say str).
    anything: Any = None
    match_all = AclBindingFilter(
        ResourceType.ANY,
        anything,
        ResourcePatternType.ANY,
        anything,
        anything,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    try:
        found: list[AclBinding] = admin.describe_acls(
            match_all, request_timeout=_ADMIN_TIMEOUT_S
        ).result(timeout=_ADMIN_TIMEOUT_S)
    except KafkaException as exc:
        raise KafkaOperationError(f"listing ACLs failed: {exc}") from exc
    return found
