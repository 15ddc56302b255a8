"""A projector must never stay silently without partitions: when to rejoin the group itself.

After a loss (session expired) or a revoke, librdkafka is meant to rejoin the group and
bring the assignment back. Should it not (a flake in CI once left a projector with
nothing after a broker restart, folding nothing more), this watch notices: once the
projector has held no partition for longer than the session timeout plus a margin, the
projector asks the coordinator about the group (one ``describe_consumer_groups``) and
:func:`rejoin_reason` says whether to rejoin with a new consumer, as a fenced one does.

A projector that holds nothing because the others own every partition (more projectors
than partitions) is left alone: the group is stable, it is a member, nothing is unowned.
The logic here is pure (an injectable clock, no I/O) so that it is tested without a broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Final

from oncelog.projector.membership import GroupState

#: Past the session timeout: a rejoin after a loss takes a JoinGroup and a SyncGroup round
#: trip, a restarted coordinator first loads the group (seconds on a loaded machine).
DEFAULT_MARGIN_S: Final = 5.0


@dataclass(frozen=True)
class GroupView:
    """What the coordinator says of the projectors' group, as the watch needs it.

    ``owned_by_me``: the partitions the coordinator assigns to this projector's
    ``group.instance.id``; ``listed``: whether it lists that id at all.
    """

    settled: bool  # stable (members and their assignments) or empty (no member)
    listed: bool
    owned_by_me: frozenset[int]
    unowned: frozenset[int]


def group_view(state: GroupState, partitions: int, projector_id: str) -> GroupView:
    """The coordinator's answer (:func:`~oncelog.projector.membership.describe_group`) as
    this projector (``projector_id``, its ``group.instance.id``) sees it."""
    mine = [m for m in state.members if m.projector_id == projector_id]
    owned = {p for m in state.members for p in m.partitions}
    return GroupView(
        settled=state.settled,
        listed=bool(mine),
        owned_by_me=frozenset(p for m in mine for p in m.partitions),
        unowned=frozenset(range(partitions)) - owned,
    )


def rejoin_reason(view: GroupView | None) -> str | None:
    """Why a projector holding no partition should rejoin the group; None: it should not.

    ``view`` None: the coordinator did not answer (no use rejoining while it cannot).
    A group in a rebalance is left to finish it. A settled group that lists this
    projector without partitions while every partition has another owner is a spare
    member's normal state.
    """
    if view is None or not view.settled:
        return None
    if view.owned_by_me:
        return (
            f"the group assigns partitions {sorted(view.owned_by_me)} to this projector, "
            "which holds none"
        )
    if not view.listed:
        return "the group does not list this projector"
    if view.unowned:
        return f"partitions {sorted(view.unowned)} have no owner in the group"
    return None


class UnassignedWatch:
    """How long the projector has held no partition, and whether it is time to look.

    :meth:`holding` is told the partitions held after every change of assignment;
    :meth:`due` is true once nothing has been held for ``grace_s`` (the session
    timeout plus a margin) since the last release, or since the last look.
    Before the first assignment nothing is due: joining is librdkafka's first job,
    and a projector that never got one is a start-up problem, not a lost one.
    """

    def __init__(self, grace_s: float, clock: Callable[[], float] = time.monotonic) -> None:
        self._grace_s = grace_s
        self._clock = clock
        self._empty_since: float | None = None  # None: holding partitions, or never had any
        self._looked_at: float | None = None  # the last look at the group while empty

    @property
    def grace_s(self) -> float:
        """How long a projector may hold nothing before the group is looked at."""
        return self._grace_s

    def holding(self, partitions: Collection[int]) -> None:
        """The partitions held now (after an assign, a revoke, a loss or a rejoin)."""
        if partitions:
            self._empty_since = self._looked_at = None
        elif self._empty_since is None:
            self._empty_since = self._clock()

    def due(self) -> bool:
        """True once nothing has been held for the grace period: time to ask the group."""
        if self._empty_since is None:
            return False
        since = self._empty_since if self._looked_at is None else self._looked_at
        return self._clock() - since >= self._grace_s

    def looked(self) -> None:
        """The group was looked at (whatever it said): the next look is a grace period away."""
        if self._empty_since is not None:
            self._looked_at = self._clock()

    def unassigned_s(self) -> float:
        """Seconds since the projector last held a partition (0 while it holds some)."""
        return 0.0 if self._empty_since is None else self._clock() - self._empty_since
