"""A served ledger (``oncelog serve`` with its HTTP API) and savers on it."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from oncelog.integrations.langgraph import OncelogSaver
from tests.served import Served, serving


@pytest.fixture(scope="module")
def served(bootstrap: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """One ``serve`` (3 partitions) with the checkpoints topic, for the module."""
    with serving(bootstrap, tmp_path_factory.mktemp("langgraph")) as running:
        yield running


@pytest.fixture
def make_saver(served: Served) -> Iterator[Callable[..., OncelogSaver]]:
    """Savers on ``served``, closed after the test."""
    made: list[OncelogSaver] = []

    def make(**options: object) -> OncelogSaver:
        saver = OncelogSaver(served.settings, query_url=served.url, **options)  # type: ignore[arg-type]
        made.append(saver)
        return saver

    yield make
    for saver in made:
        saver.close()
