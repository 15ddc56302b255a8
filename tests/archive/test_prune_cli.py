"""``oncelog archive prune``: the window from the settings, a local archive only (no broker)."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from oncelog.archive.prune import Window
from oncelog.archive.prune_duty import window_of
from oncelog.cli import app
from oncelog.errors import ArchiveError
from oncelog.projector.store import Store
from oncelog.settings import Settings


def test_the_window_comes_from_the_history_settings() -> None:
    assert window_of(Settings(history_max_age_s=1.5, history_max_versions=3)) == Window(1500, 3)
    assert window_of(Settings(history_max_age_s=None, history_max_versions=None)).unbounded


def test_prune_moves_nothing_without_a_window_and_refuses_an_s3_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ONCELOG_DB_PATH", str(tmp_path / "ledger.duckdb"))
    monkeypatch.setenv("ONCELOG_ARCHIVE_URL", str(tmp_path / "archive"))
    monkeypatch.delenv("ONCELOG_HISTORY_MAX_AGE_S", raising=False)
    runner = CliRunner()
    kept = runner.invoke(app, ["archive", "prune"])
    assert kept.exit_code == 0, kept.output
    assert kept.output.strip() == "nothing to prune"
    monkeypatch.setenv("ONCELOG_HISTORY_MAX_AGE_S", "60")
    # A window, nothing archived: nothing moves, and the file lists no pruned rows.
    assert runner.invoke(app, ["archive", "prune", "--json"]).output.strip() == "[]"
    with Store(tmp_path / "ledger.duckdb") as store:
        assert store.cursor().execute("SELECT count(*) FROM archived_rows").fetchall() == [(0,)]
    monkeypatch.setenv("ONCELOG_ARCHIVE_URL", "s3://bucket/prefix")
    refused = runner.invoke(app, ["archive", "prune"])
    assert isinstance(refused.exception, ArchiveError)
    assert "local archive directory" in str(refused.exception)
