"""The saver's write-through memory: the latest checkpoint it put on each thread.

A ``get_tuple`` right after a ``put`` (LangGraph's read after every superstep) is
answered here, without a hop to ``oncelog serve``, while the log says nobody else wrote
since: the memory knows where its own records landed, and an entry holds only while
every record of the partition after that entry's is one of this saver's (the caller
compares the partition's high watermark with :meth:`RecentPuts.end`). Any other writer
(another process, another saver) moves the watermark past that end, and the read goes
to ``serve`` as before. Channel values are kept as the serde's bytes and decoded on each
read, so a caller never shares an object with the memory.
"""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from oncelog.schemas.checkpoint_answers import (
    CheckpointBlob,
    CheckpointItem,
    CheckpointWrite,
)
from oncelog.schemas.models import CheckpointRecord

#: Threads (with namespace) remembered; the least recently written is forgotten first.
THREADS: int = 1024
#: Checkpoint ids (and parents) remembered per thread, for the branch tree's reads.
HEADS: int = 256

_Where = tuple[str, str]  # (thread_id, checkpoint_ns)
_BlobKey = tuple[str, str]  # (channel, version)


@dataclass
class _Entry:
    partition: int
    checkpoint: CheckpointRecord | None = None
    blobs: dict[_BlobKey, CheckpointBlob] = field(default_factory=dict)
    writes: dict[tuple[str, int], CheckpointWrite] = field(default_factory=dict)
    heads: list[tuple[str, str | None]] = field(default_factory=list)  # (id, parent) put


def _joined(records: Sequence[CheckpointRecord]) -> list[tuple[CheckpointRecord, bytes]]:
    """Each value's first record with its parts' bytes joined."""
    out: list[tuple[CheckpointRecord, bytes]] = []
    for r in records:
        if r.part == 0:
            out.append((r, r.data))
        else:
            out[-1] = (out[-1][0], out[-1][1] + r.data)
    return out


class Watermarks(Protocol):
    """Where a partition ends on the broker, and the reads' wait for another writer."""

    def partition_of(self, thread_id: str) -> int: ...

    def high(self, partition: int) -> int: ...

    def seen(self, partition: int, offset: int) -> None: ...


class RecentPuts:
    """Per (thread, namespace): the latest checkpoint this saver put, its values and writes."""

    def __init__(self, threads: int = THREADS) -> None:
        self._threads = threads
        self._lock = threading.Lock()
        self._entries: OrderedDict[_Where, _Entry] = OrderedDict()
        self._end: dict[int, int] = {}  # partition -> offset after this saver's last record

    def end(self, partition: int) -> int | None:
        """Where this saver's last record on ``partition`` ends (None: nothing remembered)."""
        with self._lock:
            return self._end.get(partition)

    def acknowledged(self, partition: int, offsets: Sequence[int]) -> bool:
        """Note records acknowledged at ``offsets``; False (and the partition forgotten)
        when another writer's records lie between this saver's."""
        first, last = min(offsets), max(offsets)
        with self._lock:
            before = self._end.get(partition)
            contiguous = len(set(offsets)) == last - first + 1
            if not contiguous or (before is not None and before != first):
                self._drop_partition(partition)
            self._end[partition] = last + 1
            return contiguous and (before is None or before == first)

    def put(self, partition: int, records: Sequence[CheckpointRecord]) -> None:
        """Remember a put's records (channel values, then the checkpoint)."""
        joined = _joined(records)
        head, body = joined[-1]
        where = (head.thread_id, head.checkpoint_ns)
        with self._lock:
            entry = self._entries.pop(where, None) or _Entry(partition)
            for r, data in joined[:-1]:
                key = (r.channel or "", r.version or "")
                entry.blobs[key] = CheckpointBlob(
                    channel=key[0], version=key[1], type=r.value_type, data=data
                )
            entry.checkpoint = _with_data(head, body)
            entry.writes = {}
            entry.heads = [
                *entry.heads[-(HEADS - 1) :],
                (head.checkpoint_id, head.parent_checkpoint_id),
            ]
            self._entries[where] = entry
            while len(self._entries) > self._threads:
                self._entries.popitem(last=False)

    def put_writes(self, records: Sequence[CheckpointRecord]) -> None:
        """Add pending writes to the remembered checkpoint they belong to (if it is)."""
        with self._lock:
            for r, data in _joined(records):
                entry = self._entries.get((r.thread_id, r.checkpoint_ns))
                if entry is None or entry.checkpoint is None:
                    continue
                if entry.checkpoint.checkpoint_id != r.checkpoint_id:
                    continue
                entry.writes[(r.task_id or "", r.idx or 0)] = CheckpointWrite.of(r, data)

    def item(self, thread_id: str, ns: str, checkpoint_id: str | None) -> CheckpointItem | None:
        """The remembered checkpoint as the query API would answer it, when it is the one
        asked for (``checkpoint_id`` None: the latest) and every value it names is known."""
        with self._lock:
            entry = self._entries.get((thread_id, ns))
            if entry is None or entry.checkpoint is None:
                return None
            head = entry.checkpoint
            if checkpoint_id is not None and checkpoint_id != head.checkpoint_id:
                return None
            blobs = _named_blobs(head, entry.blobs)
            if blobs is None:
                return None
            writes = sorted(entry.writes.values(), key=lambda w: (w.task_path, w.task_id, w.idx))
        # One line a group of fields: the answer is the query API's (query/checkpoints.py).
        return CheckpointItem(
            partition=entry.partition, thread_id=thread_id, checkpoint_ns=ns,
            checkpoint_id=head.checkpoint_id, parent_checkpoint_id=head.parent_checkpoint_id,
            type=head.value_type, data=head.data,
            metadata_type=head.metadata_type or "", metadata=head.metadata or b"",
            blobs=blobs, writes=writes,
        )  # fmt: skip

    def heads_after(self, thread_id: str, after_id: str | None) -> dict[str, str | None] | None:
        """The root-namespace checkpoints above ``after_id`` with their parents, when
        ``after_id`` is one this saver put and remembers: every checkpoint put since is its
        own (the caller checks the watermark), and ids are ordered by time (LangGraph's)."""
        with self._lock:
            entry = self._entries.get((thread_id, ""))
            if entry is None or after_id is None:
                return None
            if after_id not in {c for c, _ in entry.heads}:
                return None
            return {c: parent for c, parent in entry.heads if c > after_id}

    def alone(self, broker: Watermarks, thread_id: str) -> bool:
        """Whether every record of the thread's partition since the remembered ones is this
        saver's own: the partition's high watermark is where its last record ends."""
        partition = broker.partition_of(thread_id)
        end = self.end(partition)
        if end is None:
            return False
        high = broker.high(partition)
        if high != end:
            # Another writer: serve answers once it folded what the watermark covers.
            self.forget_partition(partition)
            broker.seen(partition, high)
            return False
        return True

    def forget_thread(self, thread_id: str) -> None:
        """Forget a thread (deleted, pruned or copied onto)."""
        with self._lock:
            for where in [w for w in self._entries if w[0] == thread_id]:
                del self._entries[where]

    def forget_partition(self, partition: int) -> None:
        """Forget every thread of a partition another writer wrote to."""
        with self._lock:
            self._drop_partition(partition)

    def _drop_partition(self, partition: int) -> None:
        for where in [w for w, e in self._entries.items() if e.partition == partition]:
            del self._entries[where]


def _with_data(head: CheckpointRecord, data: bytes) -> CheckpointRecord:
    fields = {f: getattr(head, f) for f in head.__dataclass_fields__}
    return CheckpointRecord(**{**fields, "part": 0, "parts": 1, "data": data})


def _named_blobs(
    head: CheckpointRecord, known: dict[_BlobKey, CheckpointBlob]
) -> list[CheckpointBlob] | None:
    """The values the checkpoint's versions name (an empty one is no value), or None when
    one is not remembered; values no longer named are forgotten."""
    versions: dict[str, str] = json.loads(head.channel_versions_json or "{}")
    named = set(versions.items())
    if not named <= known.keys():
        return None
    for key in [k for k in known if k not in named]:
        del known[key]
    return sorted((known[k] for k in named if known[k].type != "empty"), key=lambda b: b.channel)


__all__ = ["HEADS", "THREADS", "RecentPuts"]
