"""Fixtures: a small ledger in a DuckDB file, built through the real fold and store."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from oncelog.projector.store import Store
from tests.query.query_factories import Ledger, build


@pytest.fixture
def ledger(tmp_path: Path) -> Iterator[Ledger]:
    with Store(tmp_path / "ledger.duckdb") as store:
        build(store)
        yield Ledger(tmp_path / "ledger.duckdb", store)


@pytest.fixture
def con(ledger: Ledger) -> Iterator[duckdb.DuckDBPyConnection]:
    cursor = ledger.store.cursor()
    yield cursor
    cursor.close()
