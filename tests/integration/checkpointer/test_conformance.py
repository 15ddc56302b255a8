"""LangGraph's own conformance suite (langgraph-checkpoint-conformance) on OncelogSaver.

Against a real broker and a real ``oncelog serve``. The suite's report is attached to
the test (``record_property``) and printed in pytest's terminal summary
(tests/conftest.py), so every run shows which capabilities passed.
"""

from __future__ import annotations

import contextlib
import io
from collections.abc import AsyncIterator, Callable

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate

from oncelog.integrations.langgraph import OncelogSaver
from tests.served import Served

pytestmark = pytest.mark.kafka

#: The extended capabilities OncelogSaver overrides: each must pass, like every base one.
EXTENDED = ("copy_thread", "delete_for_runs", "prune")


async def test_the_saver_passes_every_capability_it_has(
    served: Served, record_property: Callable[[str, object], None]
) -> None:
    @checkpointer_test(name="OncelogSaver")
    async def saver() -> AsyncIterator[OncelogSaver]:
        with OncelogSaver(served.settings, query_url=served.url) as made:
            yield made

    report = await validate(saver)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        report.print_report()
    record_property("checkpoint_conformance", printed.getvalue())
    print(printed.getvalue())  # shown with the failure, should one come
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert report.passed_all_base(), failures
    for name in EXTENDED:
        result = report.results[name]
        assert result.detected, f"{name} is not detected as overridden"
        assert result.passed is True, (name, result.failures)
    assert report.passed_all(), failures
