"""``serve`` keeps the DuckDB history's window itself: a prune after a commit, now and then.

The prune runs on the projector's own connection, in the thread that commits, between two
commits: the file's only writer, so nothing else needs to stop. A prune that fails (the
archive unreadable, a disk full) leaves every row where it was and is tried again at the
next tick; folding goes on, since the window bounds storage and never decides anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import duckdb

from oncelog.errors import ConfigError, LedgerError
from oncelog.settings import Settings

from .location import ArchiveLocation
from .prune import Pruned, Window, prune_store


def window_of(settings: Settings) -> Window:
    """The DuckDB history's window that ``ONCELOG_HISTORY_*`` configure."""
    age = settings.history_max_age_s
    return Window(None if age is None else int(age * 1000), settings.history_max_versions)


class PruneDuty:
    """Call after each commit: every ``every_s`` seconds it prunes the rows out of the
    window that the archive covers, and reports them (``on_pruned``) or the failure
    (``on_error``). ``clock`` (monotonic seconds) and ``now_ms`` (log-time milliseconds,
    the wall clock) are injectable."""

    def __init__(
        self,
        location: ArchiveLocation,
        topic: str,
        window: Window,
        every_s: float,
        *,
        on_pruned: Callable[[list[Pruned]], None],
        on_error: Callable[[LedgerError], None],
        clock: Callable[[], float] = time.monotonic,
        now_ms: Callable[[], int] = lambda: int(time.time() * 1000),
    ) -> None:
        self._location, self._topic, self._window = location, topic, window
        self._every_s, self._clock, self._now_ms = every_s, clock, now_ms
        self._on_pruned, self._on_error = on_pruned, on_error
        self._next = clock()  # the first commit prunes what a stopped projector left

    @classmethod
    def configured(
        cls,
        settings: Settings,
        on_pruned: Callable[[list[Pruned]], None],
        on_error: Callable[[LedgerError], None],
    ) -> PruneDuty | None:
        """The duty the settings ask for: a window and an archive; None otherwise.

        Raises:
            ConfigError: a window with an ``s3://`` archive (the queries read the pruned
                rows with DuckDB from a directory): refused at start, not at each prune.
        """
        window = window_of(settings)
        if window.unbounded or not settings.archive_url:
            return None
        location = ArchiveLocation.from_settings(settings)
        if not location.local:
            raise ConfigError(
                f"ONCELOG_HISTORY_MAX_AGE_S / _MAX_VERSIONS need a local archive directory, "
                f"not {location.url}: the queries read the pruned rows from there. Unset the "
                "window, or archive to a directory (docs/guides/retention.md)"
            )
        every = settings.history_prune_interval_s
        return cls(location, settings.requests_topic, window, every,
                   on_pruned=on_pruned, on_error=on_error)  # fmt: skip

    def __call__(self, con: duckdb.DuckDBPyConnection) -> None:
        """Prune when due; a ledger error is reported, not raised."""
        if self._clock() < self._next:
            return
        self._next = self._clock() + self._every_s
        try:
            done = prune_store(con, self._location, self._topic, self._window, self._now_ms())
        except LedgerError as exc:
            self._on_error(exc)
            return
        if any(p.rows for p in done):
            self._on_pruned(done)
