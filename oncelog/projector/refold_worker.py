"""One refold worker process (:func:`main`; also ``python -m oncelog.projector.refold_worker``).

Started by :mod:`oncelog.projector.refold_pool`, which writes the job as one JSON
line on stdin (the Kafka settings travel there, never in arguments or the
environment). The worker refolds its partitions in order with
:class:`PartitionRefold`, writes each chunk's tables as Arrow IPC files into the
job's scratch folder (through :func:`refold_partition`, as the in-process
refold) and says so as one JSON line on stdout:
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
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, Final

import pyarrow as pa

from oncelog.projector.bulk_rebuild import refold_partition

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


class _Shipper:
    """A :class:`ChunkSink` that writes each chunk as IPC files and announces them."""

    def __init__(self, scratch: Path, channel: _Channel) -> None:
        self._scratch, self._channel = scratch, channel
        self._shipped = 0

    def submit(self, partition: int, tables: Mapping[str, Any]) -> None:
        self._channel.take_slot()
        stem = self._scratch / f"{partition}-{self._shipped}-"
        self._shipped += 1
        paths = {}
        for name, table in tables.items():
            path = f"{stem}{name}.arrow"
            with pa.OSFile(path, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
                writer.write_table(table)
            paths[name] = path
        self._channel.say(chunk=partition, paths=paths)


def main() -> None:
    """Read the job, refold, report; stdout carries only the protocol's lines."""
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything else printed goes to stderr, not into the protocol
    channel = _Channel(out, sys.stdin)
    job = json.loads(sys.stdin.readline())
    gc.disable()  # as the in-process refold: millions of acyclic tuples
    try:
        shipper = _Shipper(Path(job["scratch"]), channel)

        def progress(partition: int, records: int) -> None:
            channel.say(progress=partition, records=records)

        total = 0
        for p in job["partitions"]:
            total += refold_partition(
                job["kafka"],
                job["topic"],
                p,
                job["partition_count"],
                shipper,
                progress=progress,
                chunk=job["chunk"],
                max_clock_step_ms=job.get("max_clock_step_ms", 0),
            )
    except Exception as exc:  # told to the writer, which raises a StoreError
        channel.say(failed=f"partitions {job['partitions']}: {type(exc).__name__}: {exc}")
        return
    channel.say(done=total)


if __name__ == "__main__":
    main()
