"""Fixtures of the schema tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from oncelog.schemas import previous


@pytest.fixture(scope="module")
def current_layout() -> Iterator[None]:
    """Every record written in the current layout, for the tests of its generated codecs.

    Without approvals a record is written in the previous release's layout
    (:mod:`oncelog.schemas.previous`); those tests check the current one.
    """
    with pytest.MonkeyPatch.context() as patch:
        for name in ("request_fits", "decision_fits", "snapshot_fits", "state_fits"):
            patch.setattr(previous, name, lambda _record: False)
        yield
