"""What a projector tells its consumer group about itself: its query URL, in ``client.id``.

The group coordinator already knows every member's static id (``group.instance.id``
= ``ONCELOG_PROJECTOR_ID``) and its assignment; carrying the query URL in the
consumer's ``client.id`` puts all three in one authoritative answer
(``describe_consumer_groups``), with no topic of its own to create, check or
compact, and no record that outlives its member.

The same answer tells a projector that holds no partition whether the group agrees
(:func:`describe_group`, read by :mod:`oncelog.projector.unassigned_watch`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from confluent_kafka import ConsumerGroupState, KafkaException
from confluent_kafka.admin import AdminClient, ConsumerGroupDescription

from oncelog.settings import Settings

CLIENT_ID: Final = "oncelog-projector"
"""The ``client.id`` of a projector without a query API (``serve --no-http``)."""

_URL_MARK: Final = "@"


def member_client_id(settings: Settings) -> str:
    """``oncelog-projector@<advertised URL>``, or ``oncelog-projector`` without one."""
    url = settings.http_advertised_url
    return CLIENT_ID if url is None else f"{CLIENT_ID}{_URL_MARK}{url}"


def advertised_url(client_id: str) -> str | None:
    """The query URL in a member's ``client.id`` (None: no API, or not a projector)."""
    head, mark, url = client_id.partition(_URL_MARK)
    if head != CLIENT_ID or not mark or not url.startswith(("http://", "https://")):
        return None
    return url


def group_id(settings: Settings) -> str:
    """The projectors' consumer group: ``<prefix>.projector``."""
    return f"{settings.topic_prefix}.projector"


@dataclass(frozen=True)
class MemberInfo:
    """What the coordinator says of one member: static id, ``client.id``, partitions."""

    projector_id: str
    client_id: str
    partitions: tuple[int, ...]


def member_infos(description: ConsumerGroupDescription, topic: str) -> list[MemberInfo]:
    """The coordinator's members, with their partitions of ``topic``."""
    return [
        MemberInfo(
            m.group_instance_id or m.member_id,
            m.client_id,
            tuple(tp.partition for tp in m.assignment.topic_partitions if tp.topic == topic),
        )
        for m in description.members
    ]


@dataclass(frozen=True)
class GroupState:
    """One describe call's answer: whether the group is settled, and its members."""

    settled: bool  # STABLE, or EMPTY (no member): not in the middle of a rebalance
    members: list[MemberInfo]


def describe_group(admin: AdminClient, settings: Settings, timeout_s: float) -> GroupState | None:
    """The projectors' group as its coordinator sees it now; None if it does not answer."""
    group = group_id(settings)
    try:
        # A broker first (metadata, no coordinator): an admin request to a coordinator
        # that times out across a cut can abort the process (oncelog.query.owners).
        admin.list_topics(settings.requests_topic, timeout=timeout_s)
        future = admin.describe_consumer_groups([group], request_timeout=timeout_s)
        description = future[group].result(timeout=timeout_s)
    except (KafkaException, TimeoutError):
        return None  # the coordinator moves or loads: asked again a grace period later
    settled = description.state in (ConsumerGroupState.STABLE, ConsumerGroupState.EMPTY)
    return GroupState(settled, member_infos(description, settings.requests_topic))
