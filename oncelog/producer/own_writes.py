"""Read your own writes on the executions topic.

A decision and the snapshot of the state it made leave the projector together but on two
topics, so a client can read its decision before the snapshot is on the executions topic.
A client remembers, per partition of the requests topic, the last request of its own that
changed a state; a read of that partition's snapshots goes on until a snapshot from that
request or a later one of the partition is there. The projector appends a partition's
snapshots in request order (:mod:`oncelog.projector.publisher`), so the ones before it
are there too.
"""

from __future__ import annotations

import threading

from oncelog.schemas.models import Decision


class OwnWrites:
    """The newest changing request of this client on each partition of the requests topic."""

    __slots__ = ("_lock", "_newest")

    def __init__(self) -> None:
        self._lock = threading.Lock()  # calls answer on many threads
        self._newest: dict[int, int] = {}

    def saw(self, decision: Decision) -> None:
        """Note ``decision``, one of this client's calls' answers."""
        partition, offset = decision.source_partition, decision.source_offset
        if not decision.changed or offset < 0:
            return
        with self._lock:
            if offset > self._newest.get(partition, -1):
                self._newest[partition] = offset

    def newest(self, partition: int) -> int:
        """The offset of this client's newest changing request on ``partition``; -1: none."""
        return self._newest.get(partition, -1)
