"""Which partition of ``<prefix>.decisions`` a client listens on (docs/spec.md §3).

A client reads one reply partition, chosen at start, and names it in every
request; the projector writes each decision there. So that a quiet client does
not end up beside a busy one, the pick is traffic-aware: at start the client
asks the broker, for every reply partition, how many decisions it got in the
last :data:`PICK_WINDOW_S` seconds (two ListOffsets requests: by time, and the
ends) and picks uniformly at random among the quietest. ``reply_partition=``
(or ``ONCELOG_REPLY_PARTITION``) pins one instead.

Its limit: clients see traffic, not listeners. Idle clients started together
may pick the same partition (harmless: none of them gets much), and a client
that becomes busy after its start, or starts busy beside idle ones that have
sent nothing yet, stays where it is.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from typing import Final

from confluent_kafka import Consumer

from oncelog.errors import ConfigError
from oncelog.kafka.reader import offsets_at

PICK_WINDOW_S: Final = 30.0
"""How far back a starting client looks at each reply partition's traffic."""

_LATEST: Final = -1  # ListOffsets' "latest" timestamp: the high watermark


def quietest(recent: Mapping[int, int], rng: random.Random) -> int:
    """One of the partitions with the fewest recent decisions, uniformly at random."""
    fewest = min(recent.values())
    return rng.choice(sorted(p for p, n in recent.items() if n == fewest))


def recent_decisions(
    consumer: Consumer, topic: str, partitions: int, since_ms: int
) -> dict[int, int]:
    """How many decisions each partition of ``topic`` got since ``since_ms`` (broker time)."""
    since = offsets_at(consumer, topic, partitions, since_ms)
    ends = offsets_at(consumer, topic, partitions, _LATEST)
    # No record at or after since_ms: the offset is -1 and nothing was recent.
    return {p: max(0, ends[p] - since[p]) if since[p] >= 0 else 0 for p in range(partitions)}


def choose(
    consumer: Consumer,
    topic: str,
    partitions: int,
    pinned: int | None,
    *,
    rng: random.Random,
    now_ms: int,
) -> int:
    """The reply partition of a starting client: ``pinned``, or a quiet one."""
    if pinned is not None:
        if not 0 <= pinned < partitions:
            raise ConfigError(
                f"reply partition {pinned} does not exist: {topic} has {partitions} partitions"
            )
        return pinned
    since_ms = now_ms - round(PICK_WINDOW_S * 1000)
    return quietest(recent_decisions(consumer, topic, partitions, since_ms), rng)
