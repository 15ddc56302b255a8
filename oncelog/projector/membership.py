"""What a projector tells its consumer group about itself, and what the group says back.

A projector's consumer carries its static id (``group.instance.id`` =
``ONCELOG_PROJECTOR_ID``) and its query URL in its ``client.id``
(``oncelog-projector/<id>@<URL>``), so that the group coordinator's answer to
``DescribeGroups`` names every member, where its query API listens, and its assignment:
no topic of its own to create, check or compact, and no record that outlives its member.

The group is read with librdkafka's ``list_groups`` (``ListGroups`` to each broker, then
``DescribeGroups`` version 0 to the one that coordinates the group), never with the admin
API's ``describe_consumer_groups``: librdkafka 2.16.0 aborts the whole process
(``rd_kafka_enq_once_del_source_return: Assertion eonce->refcnt > 0``) when such an
admin request to a coordinator times out while the connection to it is cut and restored,
and ``oncelog serve`` died so under the network drill (docs/reliability.md). Version 0
answers no ``group.instance.id``, hence the id in ``client.id``.

Read by the query API's owner lookup (:mod:`oncelog.query.owners`) and by the
unassigned watch (:mod:`oncelog.projector.unassigned_watch`).
"""

from __future__ import annotations

import urllib.parse
import warnings
from dataclasses import dataclass
from typing import Any, Final

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient

from oncelog.kafka.group_assignment import MalformedAssignmentError, assigned_partitions
from oncelog.settings import Settings

CLIENT_ID: Final = "oncelog-projector"
"""The head of every projector's ``client.id``."""

_ID_MARK: Final = "/"
_URL_MARK: Final = "@"
_STABLE: Final = "Stable"
_SETTLED: Final = frozenset({_STABLE, "Empty"})

# The legacy call is the point (module docstring); its deprecation notice is not news.
warnings.filterwarnings(
    "ignore", message=r"list_groups\(\) is deprecated", category=DeprecationWarning
)


def member_client_id(settings: Settings) -> str:
    """``oncelog-projector/<projector id>@<advertised URL>``; no ``@…`` without a query API.

    The id is percent-encoded, so that it holds neither mark.
    """
    head = f"{CLIENT_ID}{_ID_MARK}{urllib.parse.quote(settings.projector_id, safe='')}"
    url = settings.http_advertised_url
    return head if url is None else f"{head}{_URL_MARK}{url}"


def _head_and_url(client_id: str) -> tuple[str | None, str]:
    """The projector id in a projector's ``client.id`` ('' for an id-less older one) and
    the rest after the URL mark; None: not a projector's."""
    head, _, url = client_id.partition(_URL_MARK)
    name, mark, quoted = head.partition(_ID_MARK)
    if name != CLIENT_ID:
        return None, url
    return (urllib.parse.unquote(quoted) if mark else ""), url


def advertised_url(client_id: str) -> str | None:
    """The query URL in a member's ``client.id`` (None: no API, or not a projector)."""
    projector, url = _head_and_url(client_id)
    if projector is None or not url.startswith(("http://", "https://")):
        return None
    return url


def projector_of(client_id: str) -> str | None:
    """The projector id in a member's ``client.id`` (None: none there)."""
    return _head_and_url(client_id)[0] or None


def group_id(settings: Settings) -> str:
    """The projectors' consumer group: ``<prefix>.projector``."""
    return f"{settings.topic_prefix}.projector"


@dataclass(frozen=True)
class MemberInfo:
    """What the coordinator says of one member: projector id, ``client.id``, partitions."""

    projector_id: str
    client_id: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class GroupState:
    """One look at the group: its state as the coordinator names it, and its members."""

    state: str  # Stable, PreparingRebalance, CompletingRebalance, Empty or Dead
    members: list[MemberInfo]

    @property
    def stable(self) -> bool:
        """Members and their assignments, no rebalance under way."""
        return self.state == _STABLE

    @property
    def settled(self) -> bool:
        """Stable, or empty (no member): not in the middle of a rebalance."""
        return self.state in _SETTLED


def member_info(member: Any, topic: str) -> MemberInfo:
    """One member of a ``list_groups`` answer (``GroupMember``), with its partitions of
    ``topic``. A member without an id in its ``client.id`` (an older version) is named by
    its member id."""
    client_id = str(member.client_id or "")
    projector = projector_of(client_id) or str(member.id)
    return MemberInfo(projector, client_id, assigned_partitions(member.assignment, topic))


def read_group(admin: AdminClient, group: str, topic: str, timeout_s: float) -> GroupState:
    """The group as its coordinator sees it now; a group nobody coordinates is ``Dead``.

    Raises:
        KafkaException: a broker or the coordinator did not answer, or answered an error
            (e.g. ``COORDINATOR_LOAD_IN_PROGRESS``, ``NOT_COORDINATOR``).
        MalformedAssignmentError: a member's assignment could not be read.
    """
    for listed in admin.list_groups(group, timeout=timeout_s):
        if listed.id != group:
            continue
        error = listed.error
        if error is not None and error.code() != KafkaError.NO_ERROR:
            raise KafkaException(error)
        return GroupState(str(listed.state), [member_info(m, topic) for m in listed.members])
    return GroupState("Dead", [])


def describe_group(admin: AdminClient, settings: Settings, timeout_s: float) -> GroupState | None:
    """The projectors' group as its coordinator sees it now; None if it does not answer."""
    try:
        # A broker first (metadata, no coordinator): nothing more is asked of a cluster
        # that does not answer at all.
        admin.list_topics(settings.requests_topic, timeout=timeout_s)
        return read_group(admin, group_id(settings), settings.requests_topic, timeout_s)
    except (KafkaException, MalformedAssignmentError):
        return None  # the coordinator moves or loads: asked again a grace period later
