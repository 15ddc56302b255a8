"""Refold partitions in worker processes while this process writes DuckDB.

A bulk refold (:mod:`oncelog.projector.bulk_rebuild`) is Python on one core:
reading, decoding, validating and folding each record and building its rows
hold the GIL, and only DuckDB's inserts run beside them. Here each worker
process (:mod:`oncelog.projector.refold_worker`) refolds whole partitions with
the same :class:`PartitionRefold` and hands every chunk over as Arrow IPC files
in a scratch folder; this process maps them and writes each with
:func:`write_chunk` (rows and the partition's position in one transaction, as
the in-process path does), each worker's on a thread and DuckDB cursor of its
own. A partition's chunks are written in order: one worker folds it, its pipe
keeps their order, and each worker may have one chunk waiting; it gets a slot
back once that chunk is committed.

Workers are fresh interpreters (``python -c``, running :func:`refold_worker.main`), not forked (this
process already runs librdkafka's and DuckDB's threads) and not through
``multiprocessing`` (whose spawn re-runs the caller's main script, which fails in
a script without a ``__main__`` guard).
"""

from __future__ import annotations

import contextlib
import json
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any, Final

import duckdb
import pyarrow as pa

import oncelog
from oncelog.errors import ConfigError, StoreError
from oncelog.projector import bulk_rebuild
from oncelog.projector.bulk_rebuild import write_chunk

Progress = Callable[[int, int], None]  # (partition, records done in it)

_STOP_S: Final = 10.0
# The worker's entry. The package's own folder goes last on the path, for a checkout that
# is not installed; an installed oncelog (and the standard library) keep precedence.
_ENTRY: Final = (
    "import sys; sys.path.append(sys.argv.pop(1)); "
    "from oncelog.projector.refold_worker import main; main()"
)


class _Worker:
    """One worker process and the thread that turns its stdout lines into messages."""

    def __init__(self, index: int, job: bytes, messages: queue.Queue[Any]) -> None:
        self.index = index
        source_root = str(Path(oncelog.__file__).resolve().parents[1])
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _ENTRY, source_root],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        assert self.proc.stdin is not None
        with contextlib.suppress(BrokenPipeError):  # died at once: its stdout's end says so
            self.proc.stdin.write(job + b"\n")
            self.proc.stdin.flush()
        self._reader = threading.Thread(
            target=self._read, args=(messages,), name=f"oncelog-refold-{index}", daemon=True
        )
        self._reader.start()

    def _read(self, messages: queue.Queue[Any]) -> None:
        assert self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                try:
                    message = json.loads(line)
                except ValueError:
                    message = {"failed": f"an unreadable line from the worker: {line[:200]!r}"}
                messages.put((self.index, message))
        finally:  # the writer waits for this, whatever happened
            messages.put((self.index, {"eof": True}))

    def grant(self) -> None:
        """One committed chunk: the worker may write another."""
        assert self.proc.stdin is not None
        # A worker that has ended (its last chunk was this one) needs no slot; one that
        # died says so by the end of its stdout, which _write_all reads next.
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.write(b"\n")
            self.proc.stdin.flush()

    def stop(self) -> None:
        """Close its stdin (a waiting worker exits), then make sure it has."""
        if self.proc.stdin is not None:
            with contextlib.suppress(BrokenPipeError):  # already ended
                self.proc.stdin.close()
        if self.proc.poll() is None:
            self.proc.terminate()
        try:
            self.proc.wait(_STOP_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def refold_in_processes(
    kafka: Mapping[str, Any],
    topic: str,
    partitions: Sequence[int],
    partition_count: int,
    con: duckdb.DuckDBPyConnection,
    *,
    workers: int,
    progress: Progress | None = None,
    scratch_in: Path | None = None,
    max_clock_step_ms: int = 0,
) -> int:
    """Refold ``partitions`` of ``topic`` in ``workers`` processes into ``con``; the records.

    The chunks wait in a scratch folder made in ``scratch_in`` (the system's temp
    folder when None), removed at the end."""
    scratch = Path(tempfile.mkdtemp(prefix="oncelog-refold-", dir=scratch_in))
    messages: queue.Queue[Any] = queue.Queue()
    started: list[_Worker] = []
    try:
        for i in range(workers):
            group = list(partitions[i::workers])
            if group:
                job = {
                    "kafka": dict(kafka),
                    "topic": topic,
                    "partitions": group,
                    "partition_count": partition_count,
                    "scratch": str(scratch),
                    "chunk": bulk_rebuild.CHUNK,
                    "max_clock_step_ms": max_clock_step_ms,
                }
                started.append(_Worker(len(started), _encoded(job), messages))
        return _write_all(con, topic, started, messages, progress=progress)
    finally:
        for worker in started:
            worker.stop()
        shutil.rmtree(scratch, ignore_errors=True)


def _encoded(job: dict[str, Any]) -> bytes:
    try:
        return json.dumps(job).encode()
    except (TypeError, ValueError) as exc:  # e.g. a callback among the Kafka settings
        raise ConfigError(
            f"a refold in worker processes sends its Kafka settings as JSON: {exc}; "
            "refold in this process instead (workers=1)"
        ) from exc


class _Committer:
    """One worker's chunks, committed in order on a thread and DuckDB cursor of their own.

    At the end of a refold both workers finish together and their last chunks wait for
    the writer: one at a time, a core stood idle for the last seconds (a tenth of a 1M
    refold). A worker has at most one chunk here (it waits for a grant before the next),
    and a partition's chunks all come from one worker, so each partition still commits
    in order. Different workers' chunks touch different partitions' rows: concurrent
    DuckDB transactions that only append, and replace keys no other one writes.
    """

    def __init__(
        self, con: duckdb.DuckDBPyConnection, worker: _Worker, messages: queue.Queue[Any]
    ) -> None:
        self._cursor = con.cursor()
        self._worker = worker
        self._messages = messages
        self._pool = ThreadPoolExecutor(
            max_workers=1, thread_name_prefix=f"oncelog-refold-commit-{worker.index}"
        )
        self._pending: Future[None] | None = None

    def submit(self, partition: int, paths: Mapping[str, str]) -> None:
        """Commit a chunk after the previous one; its failure comes back as a message."""
        self._pending = self._pool.submit(self._commit, partition, paths)

    def _commit(self, partition: int, paths: Mapping[str, str]) -> None:
        try:
            write_chunk(self._cursor, partition, {n: _mapped(p) for n, p in paths.items()})
            for path in paths.values():
                Path(path).unlink()
        except Exception as exc:  # the writer waits on the messages, not on this thread
            self._messages.put((self._worker.index, {"not_committed": exc}))
            raise
        self._worker.grant()

    def wait(self) -> None:
        """Until the chunk handed over last is committed (raises its error)."""
        if self._pending is not None:
            self._pending.result()

    def close(self) -> None:
        """Let a commit under way finish, then release the thread and the cursor."""
        self._pool.shutdown(wait=True)
        self._cursor.close()


def _write_all(
    con: duckdb.DuckDBPyConnection,
    topic: str,
    workers: list[_Worker],
    messages: queue.Queue[Any],
    *,
    progress: Progress | None,
) -> int:
    """Commit chunks as workers announce them, until every worker has finished and its
    last chunk is committed."""
    committers = {w.index: _Committer(con, w, messages) for w in workers}
    try:
        total = _take_messages(topic, workers, committers, messages, progress=progress)
        for committer in committers.values():
            committer.wait()
        return total
    finally:
        for committer in committers.values():
            committer.close()


def _take_messages(
    topic: str,
    workers: list[_Worker],
    committers: Mapping[int, _Committer],
    messages: queue.Queue[Any],
    *,
    progress: Progress | None,
) -> int:
    running, total = {w.index for w in workers}, 0
    while running:
        index, message = messages.get()  # a worker's end always sends "eof"
        if "chunk" in message:
            committers[index].submit(message["chunk"], message["paths"])
        elif "progress" in message:
            if progress is not None:
                progress(message["progress"], message["records"])
        elif "done" in message:
            running.discard(index)
            total += message["done"]
        elif "not_committed" in message:
            raise message["not_committed"]
        elif "failed" in message:
            raise StoreError(f"refold of {topic} failed in a worker process: {message['failed']}")
        elif index in running:  # eof before done: the worker died
            code = workers[index].proc.wait()
            raise StoreError(f"refold of {topic}: worker process {index} exited with {code}")
    return total


def _mapped(path: str) -> pa.Table:
    with pa.memory_map(path) as source:
        return pa.ipc.open_file(source).read_all()
