"""Who owns each partition of the requests topic, and where its query API listens.

The answer comes from the group coordinator (``DescribeGroups`` on
``<prefix>.projector``, read by :func:`oncelog.projector.membership.read_group`): each
member's ``client.id``, which carries its projector id and query URL, and its
assignment. A member whose session
expired is no longer listed; a member that just joined is listed once the group
is stable again. While the group rebalances the coordinator lists no
assignment, so the last stable view is kept: partitions that do not move keep
answering, and a member that died is named in a 503 when a forward to it fails.

:class:`GroupOwners` caches the view for ``ttl_s`` (one describe call, ~10 ms, per
TTL rather than per query) and refreshes it on a miss or a failed forward.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from oncelog.errors import NoOwnerError
from oncelog.kafka.group_assignment import MalformedAssignmentError
from oncelog.projector.membership import MemberInfo, advertised_url, group_id, read_group
from oncelog.query.ttl_cache import TtlCache
from oncelog.settings import Settings
from oncelog.topics import admin_client

DEFAULT_TTL_S: Final = 1.0
_MIN_REFRESH_S: Final = 0.1  # a burst of misses costs one describe call, not one each
_FIRST_BACKOFF_S: Final = 1.0  # after a failed describe, nothing asked for this long ...
_MAX_BACKOFF_S: Final = 5.0  # ... doubling up to this


@dataclass(frozen=True)
class Member:
    """One projector of the group: its static id and its query URL (None: no API)."""

    projector_id: str
    url: str | None

    def describe(self) -> str:
        """``projector-1 at http://host:port``, for error messages."""
        where = self.url or "no query API (started with --no-http?)"
        return f"{self.projector_id} at {where}"


@dataclass(frozen=True)
class OwnerView:
    """The owner of each partition of the requests topic, as of one describe call."""

    partitions: int
    owners: Mapping[int, Member] = field(default_factory=dict)
    members: tuple[Member, ...] = ()
    stable: bool = True

    def owner_of(self, partition: int) -> Member | None:
        """The member that folds ``partition``, None when nobody does (yet)."""
        return self.owners.get(partition)


def build_view(
    infos: Iterable[MemberInfo], partitions: int, stable: bool, previous: OwnerView | None
) -> OwnerView:
    """The view from one describe call; while the group is not stable, ``previous`` stays.

    Members are listed in projector-id order. Should two members claim one partition
    (the coordinator never assigns it twice), the first in that order owns it.
    """
    if not stable and previous is not None:
        return previous
    ordered = sorted(infos, key=lambda m: m.projector_id)
    members = tuple(Member(m.projector_id, advertised_url(m.client_id)) for m in ordered)
    owners: dict[int, Member] = {}
    for info, member in zip(ordered, members, strict=True):
        for p in info.partitions:
            owners.setdefault(p, member)
    return OwnerView(partitions, owners, members, stable)


class ViewCache(TtlCache[OwnerView]):
    """An :class:`OwnerView` cached for ``ttl_s``; ``fetch`` gets a fresh one from the last.

    Thread-safe. ``clock`` is injectable so that tests of the cache need no sleeps.
    When ``fetch`` raises :class:`NoOwnerError` (the coordinator moves or loads) the
    last view stays, if there is one.
    """

    def __init__(
        self,
        fetch: Callable[[OwnerView | None], OwnerView],
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(fetch, ttl_s, clock, keep_on=(NoOwnerError,))

    def view(self) -> OwnerView:
        """The cached view, fetched again once it is older than the TTL."""
        return self.get()

    def refreshed(self) -> OwnerView:
        """A fresh view (after a miss or a failed forward); at most one fetch per 0.1 s."""
        return self.get(min(_MIN_REFRESH_S, self._ttl_s))


class GroupOwners(ViewCache):
    """The projector group's current :class:`OwnerView`, from its coordinator, cached."""

    def __init__(
        self,
        settings: Settings,
        bootstrap: str,
        *,
        ttl_s: float = DEFAULT_TTL_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        # A separate object: a bound method of self here would make a reference cycle, and
        # the admin client would then live until a garbage collection, maybe past its broker.
        super().__init__(GroupDescriber(settings, bootstrap).describe, ttl_s, clock)


class GroupDescriber:
    """One look at the projector group (:func:`read_group`), as an :class:`OwnerView`.

    Each look first asks for the topic's metadata (any broker answers; no coordinator).
    After a failure nothing is asked for a while (1 s, doubling up to 5 s): callers get
    ``no_owner`` at once rather than each waiting out a timeout against a cluster that
    does not answer. When no broker answered at all, the next look uses a new admin
    client: librdkafka 2.16 can drop every broker it knew during an outage and never
    find one again (docs/reliability.md, "A projector left without partitions").
    """

    def __init__(
        self, settings: Settings, bootstrap: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self._settings = settings
        self._bootstrap = bootstrap
        self._admin: AdminClient | None = None
        self._group = group_id(settings)
        self._topic = settings.requests_topic
        self._timeout_s = settings.http_forward_timeout_s
        self._partitions = 0
        self._clock = clock
        self._quiet_until = float("-inf")
        self._backoff_s = _FIRST_BACKOFF_S

    def describe(self, previous: OwnerView | None) -> OwnerView:
        """The coordinator's view; ``previous`` stays while the group rebalances."""
        now = self._clock()
        if now < self._quiet_until:
            raise NoOwnerError(
                f"the brokers did not answer about consumer group {self._group} (owners of "
                f"{self._topic}); asking again in {self._quiet_until - now:.1f}s"
            )
        try:
            self._partitions = self._partition_count()  # metadata: is any broker there?
            state = read_group(self._admin_client(), self._group, self._topic, self._timeout_s)
        except (KafkaException, MalformedAssignmentError, NoOwnerError) as exc:
            self._quiet_until = now + self._backoff_s
            self._backoff_s = min(self._backoff_s * 2, _MAX_BACKOFF_S)
            if isinstance(exc, NoOwnerError):
                raise
            raise NoOwnerError(
                f"cannot describe consumer group {self._group} (owners of {self._topic}): {exc}"
            ) from exc
        self._backoff_s = _FIRST_BACKOFF_S
        return build_view(state.members, self._partitions, state.stable, previous)

    def _admin_client(self) -> AdminClient:
        if self._admin is None:
            self._admin = admin_client(self._settings, self._bootstrap)
        return self._admin

    def _partition_count(self) -> int:
        # Fixed for the topic's life: the partitioner would move channels otherwise.
        try:
            listed = self._admin_client().list_topics(self._topic, timeout=self._timeout_s)
        except KafkaException:
            self._admin = None  # no broker answered: the next look starts afresh
            raise
        meta = listed.topics.get(self._topic)
        if meta is None or meta.error is not None or not meta.partitions:
            raise NoOwnerError(f"topic {self._topic} has no partitions (`oncelog topics create`)")
        return len(meta.partitions)
