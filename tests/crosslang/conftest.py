"""A served ledger for the Node tests of this folder: one ``serve`` per module."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.served import Served, require_node, serving


@pytest.fixture(scope="module")
def served(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """A broker's topics of their own and ``serve`` with its write API (no tracer provider)."""
    require_node()
    with serving(bootstrap, tmp_path_factory.mktemp("ts")) as served:
        yield served
