"""Wait until a projection has folded the log up to known positions.

"Caught up" means: for every partition of the requests topic, the projection's
committed next offset is at least the high watermark read before. The projector
publishes a decision before it commits the batch to DuckDB (commits come every
second or every 20k records), so a client that heard its decision may query a
projection that does not show it yet; this is the bounded wait for that.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Protocol

from oncelog.errors import LedgerTimeoutError, NoOwnerError
from oncelog.query.models import Positions

# The projector commits at least once a second while records arrive: polling a few
# times per commit keeps the wait short without hammering the API.
_POLL_S = 0.05


class PositionSource(Protocol):
    """Anything that reports the projection's positions (a query source)."""

    def positions(self) -> Positions: ...


def behind(positions: Positions, targets: Mapping[int, int]) -> dict[int, int]:
    """The partitions still short of their target: partition -> records missing."""
    have = positions.next_offsets
    return {p: t - have.get(p, 0) for p, t in targets.items() if have.get(p, 0) < t}


def wait_until_folded(
    source: PositionSource,
    targets: Mapping[int, int],
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
    pause: Callable[[float], None] = time.sleep,
) -> Positions:
    """Return the positions once every partition reached its target offset.

    Raises :class:`LedgerTimeoutError` naming the partitions still behind when
    ``timeout_s`` passes first. A group that is rebalancing (``no_owner``) is asked
    again, as one that is behind is.
    """
    deadline = clock() + timeout_s
    while True:
        rebalancing: NoOwnerError | None = None
        try:
            positions = source.positions()
        except NoOwnerError as exc:
            rebalancing, why = exc, f"the projector group had no owner for every partition: {exc}"
        else:
            missing = behind(positions, targets)
            if not missing:
                return positions
            why = f"records missing per partition: {missing}"
        if clock() >= deadline:
            raise LedgerTimeoutError(
                f"the projection did not fold the requests topic up to {dict(targets)} within "
                f"{timeout_s} s; {why}"
            ) from rebalancing
        pause(_POLL_S)
