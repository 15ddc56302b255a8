"""What a call that timed out does about a client that is stuck while the cluster is not.

librdkafka can leave a client's producer holding requests it no longer sends, or its
reader holding the reply partition without fetching it, after faults between the
brokers healed (docs/reliability.md, "A client that stops delivering, or reading").
Every later call would time out as well, so a timed-out call looks: the producer is
renewed and the reader gets a new consumer once their work has waited for the stall
time (:mod:`oncelog.kafka.progress_watch`). Off the hot path: only a timeout looks.
"""

from __future__ import annotations

import logging

from oncelog.kafka.lanes import Lanes
from oncelog.producer.listener import DecisionListener

_LOG = logging.getLogger("oncelog.producer")


def unstuck(sender: Lanes, listener: DecisionListener) -> list[str]:
    """Replace the producer or the reader that is stuck, if any; say what was done (also
    as a warning of the ``oncelog.producer`` logger)."""
    said = []
    renewed = sender.renew_if_stalled()
    if renewed is not None:
        said.append(
            "the client's producer had held requests undelivered for "
            f"{sender.stall_s:.0f}s; a new one took the {renewed} records it held"
        )
    refetched = listener.refetch_if_stalled()
    if refetched is not None:
        at, waiting = refetched
        said.append(
            f"the client's reader of {listener.topic}[{listener.reply_partition}] had left "
            f"decisions unread for {listener.stall_s:.0f}s ({waiting} waiting); a new one "
            f"reads on from offset {at}"
        )
    for line in said:
        _LOG.warning("oncelog: %s", line)
    return said
