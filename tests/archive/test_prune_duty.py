"""``serve``'s prune of the history's window: when it runs, and what a failure does (no
broker; the failure is the archive's refusal of a location that is not a directory)."""

from __future__ import annotations

import duckdb
import pyarrow.fs as pafs
import pytest

from oncelog.archive.location import ArchiveLocation
from oncelog.archive.prune import Pruned, Window
from oncelog.archive.prune_duty import PruneDuty
from oncelog.errors import ConfigError, LedgerError
from oncelog.settings import Settings


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _duty(clock: _Clock, errors: list[LedgerError], pruned: list[list[Pruned]]) -> PruneDuty:
    remote = pafs.SubTreeFileSystem("/tmp", pafs.LocalFileSystem())  # not a local directory
    location = ArchiveLocation(remote, "bucket", "s3://bucket")
    return PruneDuty(location, "t.requests", Window(max_versions=1), 60.0,
                     on_pruned=pruned.append, on_error=errors.append, clock=clock)  # fmt: skip


def test_it_prunes_at_once_then_once_per_interval_and_a_failure_is_reported() -> None:
    clock, errors, pruned = _Clock(), [], []  # type: ignore[var-annotated]
    duty = _duty(clock, errors, pruned)
    con = duckdb.connect()
    duty(con)  # the first commit: what a stopped projector left
    assert [e.code for e in errors] == ["archive_error"]
    clock.now += 59.9
    duty(con)
    assert len(errors) == 1  # not due yet
    clock.now += 0.1
    duty(con)
    assert len(errors) == 2  # tried again: a failure is not the end of the duty
    assert pruned == []


def test_the_duty_needs_a_window_and_an_archive() -> None:
    def configured(**settings: object) -> PruneDuty | None:
        return PruneDuty.configured(
            Settings(**settings), on_pruned=lambda _: None, on_error=lambda _: None
        )

    assert configured(history_max_versions=2) is None  # no archive
    assert configured(archive_url="/tmp/a") is None  # no window
    assert configured(archive_url="/tmp/a", history_max_age_s=60) is not None
    with pytest.raises(ConfigError, match="local archive directory") as refused:
        configured(archive_url="s3://bucket/p", history_max_versions=1)
    assert refused.value.code == "config_error"
