"""HttpSource (httpx) when nothing answers: unhealthy, and a typed error for a query."""

from __future__ import annotations

import socket

import pytest

from oncelog.errors import LedgerError
from oncelog.query.source import HttpSource


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again on leaving: nothing listens


def test_an_unreachable_api_is_unhealthy_and_queries_raise_a_ledger_error() -> None:
    source = HttpSource(f"http://127.0.0.1:{_closed_port()}", timeout_s=1)
    assert source.healthy() is False
    with pytest.raises(LedgerError, match="did not answer"):
        source.duplicates(10)
