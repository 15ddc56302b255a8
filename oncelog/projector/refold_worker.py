"""One refold worker process (:func:`main`; also ``python -m oncelog.projector.refold_worker``).

Started by :mod:`oncelog.projector.refold_pool`, which writes the job as one JSON
line on stdin (the Kafka settings travel there, never in arguments or the
environment). The worker refolds its partitions in order with
:class:`PartitionRefold`, writes each chunk's tables as Arrow IPC files into the
job's scratch folder and says so as one JSON line on stdout:
``{"chunk": p, "paths": {...}}``, ``{"progress": p, "records": n}``, then
``{"done": records}`` or ``{"failed": why}``. It may hold one announced chunk
that the writer has not committed; for the next it waits for a newline on stdin
(the writer sends one per committed chunk), and stdin's end (the writer is
gone) ends the worker.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from pathlib import Path
from typing import IO, Any, Final

import pyarrow as pa

from oncelog.kafka.reader import read_to_end
from oncelog.projector.bulk_rebuild import PROGRESS_TICK, PartitionRefold

#: Chunks announced and not yet committed by the writer.
IN_FLIGHT: Final = 1


class _Channel:
    """The worker's side of the pipe pair: JSON lines out, committed-chunk grants in."""

    def __init__(self, out: IO[str], grants: IO[str]) -> None:
        self._out, self._grants = out, grants
        self._slots = IN_FLIGHT

    def say(self, **message: Any) -> None:
        self._out.write(json.dumps(message) + "\n")
        self._out.flush()

    def take_slot(self) -> None:
        """Wait until fewer than IN_FLIGHT announced chunks are uncommitted."""
        while self._slots == 0:
            if not self._grants.readline():
                raise SystemExit("refold worker: the writing process is gone")
            self._slots += 1
        self._slots -= 1


def _refold(job: dict[str, Any], p: int, channel: _Channel) -> int:
    refold = PartitionRefold(job["topic"], p, job["partition_count"])
    done = shipped = 0
    for msg in read_to_end(job["kafka"], job["topic"], p, timeout_s=3600, batch=10_000):
        refold.add(msg)
        done += 1
        if done % PROGRESS_TICK == 0:
            channel.say(progress=p, records=PROGRESS_TICK)
        if refold.pending >= job["chunk"]:
            shipped += _ship(refold, Path(job["scratch"]) / f"{p}-{shipped}-", channel)
    _ship(refold, Path(job["scratch"]) / f"{p}-{shipped}-", channel)
    if done % PROGRESS_TICK:
        channel.say(progress=p, records=done % PROGRESS_TICK)
    return done


def _ship(refold: PartitionRefold, stem: Path, channel: _Channel) -> int:
    """Write the pending rows as IPC files and announce them; 1 if there was a chunk."""
    tables = refold.take()
    if tables is None:
        return 0
    channel.take_slot()
    paths = {}
    for name, table in tables.items():
        path = f"{stem}{name}.arrow"
        with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        paths[name] = path
    channel.say(chunk=refold.partition, paths=paths)
    return 1


def main() -> None:
    """Read the job, refold, report; stdout carries only the protocol's lines."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything else printed goes to stderr, not into the protocol
    channel = _Channel(out, sys.stdin)
    job = json.loads(sys.stdin.readline())
    gc.disable()  # as the in-process refold: millions of acyclic tuples
    try:
        total = sum(_refold(job, p, channel) for p in job["partitions"])
    except Exception as exc:  # told to the writer, which raises a StoreError
        channel.say(failed=f"partitions {job['partitions']}: {type(exc).__name__}: {exc}")
        return
    channel.say(done=total)


if __name__ == "__main__":
    main()
