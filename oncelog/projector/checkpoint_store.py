"""The checkpoints' tables in the projection's DuckDB file: one commit per folded batch.

The fold of :mod:`.checkpoint_fold` says what each touched part holds now; a commit
deletes the touched parts and inserts the ones still held, writes the dead letters and
moves the partitions' positions, in ONE transaction on a cursor of its own (the
projector's committer writes the other tables on another one; DuckDB isolates them).
A crash before the commit refolds the same records from the same position.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import Any, Final

import duckdb

from oncelog.projector.checkpoint_fold import CheckpointChanges
from oncelog.projector.store import DeadLetter, Store, registered
from oncelog.projector.store_file import store_failure
from oncelog.projector.tables import (
    CHECKPOINT_POSITIONS,
    CHECKPOINTS,
    DEAD_LETTERS,
    arrow_table,
    column_list,
)

# Keys inline, up to this many a statement: a short IN list is answered from the
# record_key index, where a join with a registered table scans the whole table.
_INLINE_KEYS: Final = 64
_DELETE: Final = (
    "DELETE FROM checkpoints WHERE record_key IN ({keys}) "
    "AND (record_key || chr(0) || part::VARCHAR) IN ({pairs})"
)
_INSERT: Final = f"INSERT INTO checkpoints ({column_list(CHECKPOINTS)}) SELECT * FROM _ck_rows"
_DEAD: Final = (
    f"INSERT OR IGNORE INTO dead_letters ({column_list(DEAD_LETTERS)}) SELECT * FROM _ck_dead"
)
_ADVANCE: Final = (
    f"INSERT INTO checkpoint_positions ({column_list(CHECKPOINT_POSITIONS)}) "
    "SELECT * FROM _ck_positions ON CONFLICT (partition) DO UPDATE SET "
    "next_offset = excluded.next_offset WHERE excluded.next_offset >= "
    "checkpoint_positions.next_offset"
)


class CheckpointStore:
    """Commits of folded checkpoint records, and the positions they reached."""

    def __init__(self, store: Store) -> None:
        self.path = store.path
        self._con = store.cursor()

    def positions(self) -> dict[int, int]:
        """The next offset to fold of each partition folded so far."""
        try:
            rows = self._con.execute(
                "SELECT partition, next_offset FROM checkpoint_positions"
            ).fetchall()
        except duckdb.Error as exc:
            raise store_failure("reading the checkpoint positions", self.path, exc) from exc
        return dict(rows)

    def commit(self, changes: CheckpointChanges) -> None:
        """Write one batch's changes in one transaction (nothing, on any error)."""
        if not changes.positions:
            return
        keys = sorted(changes.rows)
        rows = [row for k in keys if (row := changes.rows[k]) is not None]
        tables = {
            "_ck_rows": arrow_table(CHECKPOINTS, rows),
            "_ck_dead": arrow_table(DEAD_LETTERS, [_dead_row(d) for d in changes.dead]),
            "_ck_positions": arrow_table(CHECKPOINT_POSITIONS, sorted(changes.positions.items())),
        }
        with registered(self._con, tables), self._transaction():
            for start in range(0, len(keys), _INLINE_KEYS):
                self._delete(keys[start : start + _INLINE_KEYS])
            if rows:
                self._con.execute(_INSERT)
            if changes.dead:
                self._con.execute(_DEAD)
            self._con.execute(_ADVANCE)

    def _delete(self, keys: list[tuple[str, int]]) -> None:
        """Delete these (record_key, part) rows: the batch writes them anew, or deletes them."""
        names = sorted({k for k, _ in keys})
        pairs = [f"{k}\x00{part}" for k, part in keys]
        sql = _DELETE.format(keys=", ".join("?" * len(names)), pairs=", ".join("?" * len(pairs)))
        self._con.execute(sql, [*names, *pairs])

    def close(self) -> None:
        """Close this store's cursor."""
        self._con.close()

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        what = "committing checkpoints"
        try:
            self._con.execute("BEGIN TRANSACTION")
            yield
            self._con.execute("COMMIT")
        except duckdb.Error as exc:
            with suppress(duckdb.Error):
                self._con.execute("ROLLBACK")
            raise store_failure(what, self.path, exc) from exc


def _dead_row(d: DeadLetter) -> tuple[Any, ...]:
    return (d.topic, d.partition, d.offset, d.log_time_ms, d.code, d.message, d.raw_length)
