"""The audit points at the real double (issue 40, finding 3), in a real Chromium.

Three channels, written by real clients on the real broker and folded into DuckDB:
the demo's zombie (a paused worker whose refund the next holder found by reconcile,
then its late completion: one refund), ``make chaos``' lease-and-retry (a worker died
after its effect; the retry reclaimed and ran it again without reconciling) and a real
double (the same, and the dead worker's completion arrives late). The ``/ui/``
channel list flags the two doubles and never the zombie; ``/v1/duplicates`` and the
run page say the same verdicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, Final

import pytest
from selenium.webdriver.common.by import By

from drills.demo.browser import headless_chromium
from drills.demo.timeline_story import SHORT_LEASE_S, wait_past
from oncelog.errors import StaleClaimError
from oncelog.kafka.reader import topic_ends
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.server import HttpServer, start_http
from oncelog.query.source import HttpSource
from oncelog.query.ui.pages import run_href
from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector
from tests.integration.test_timeline_browser import chromium

pytestmark = pytest.mark.kafka

ZOMBIE: Final = "zombie-refund"
CHAOS: Final = "lease-and-retry"
DOUBLE: Final = "no-reconcile-double"
_FOLD_TIMEOUT_S: Final = 60.0
__all__ = ["chromium"]  # the fixture, imported for this module's tests


@pytest.fixture
def api(projector: RunningProjector) -> Iterator[HttpServer]:
    server = start_http(projector.store, "127.0.0.1", 0)
    yield server
    server.stop()


class _Refunds:
    """Two workers refunding one order per channel; ``refunds`` is the provider's log."""

    def __init__(self, make_client: Callable[..., SyncLedgerClient]) -> None:
        self.a = make_client("worker-paused")
        self.b = make_client("worker-rescue")
        self.refunds: list[str] = []

    def claim(self, who: SyncLedgerClient, channel: str, lease_s: float = 30) -> Any:
        return who.claim_execution(
            channel, key_name="refund:order-4471", tool_name="refund",
            params={"order": 4471}, lease_seconds=lease_s, effect="external",
        )  # fmt: skip

    def refund(self, channel: str) -> dict[str, str]:
        self.refunds.append(channel)
        return {"refund": f"re_{len(self.refunds)}"}

    def reclaimed_after_a_silent_refund(self, channel: str) -> tuple[Any, Any, dict[str, str]]:
        """A refunds and goes silent past its lease; B reclaims."""
        first = self.claim(self.a, channel, lease_s=SHORT_LEASE_S)
        done = self.refund(channel)
        wait_past(first.execution.lease_deadline_ms)
        second = self.claim(self.b, channel)
        assert second.status == "reclaimed", second.status
        return first, second, done

    def late(self, first: Any, result: dict[str, str]) -> None:
        with pytest.raises(StaleClaimError):
            self.a.complete_execution(first.execution, first.claim_token, result)

    def zombie(self) -> None:
        first, second, done = self.reclaimed_after_a_silent_refund(ZOMBIE)
        # B asks the provider first: A's refund is there, so B records it, refunds nothing.
        self.b.complete_execution(second.execution, second.claim_token, done, reconciled="found")
        self.late(first, done)

    def chaos(self) -> None:
        _, second, _ = self.reclaimed_after_a_silent_refund(CHAOS)  # A was SIGKILLed
        self.b.complete_execution(second.execution, second.claim_token, self.refund(CHAOS))

    def double(self) -> None:
        first, second, done = self.reclaimed_after_a_silent_refund(DOUBLE)
        self.b.complete_execution(second.execution, second.claim_token, self.refund(DOUBLE))
        self.late(first, done)


def test_the_channel_list_flags_the_real_doubles_never_the_reconciled_zombie(
    chromium: tuple[str, str],
    topics: Settings,
    api: HttpServer,
    make_client: Callable[..., SyncLedgerClient],
) -> None:
    run = _Refunds(make_client)
    run.zombie()
    run.chaos()
    run.double()
    assert sorted(run.refunds) == sorted([ZOMBIE, CHAOS, CHAOS, DOUBLE, DOUBLE])
    base = f"http://127.0.0.1:{api.port}"
    source = HttpSource(base)
    assert topics.bootstrap_servers is not None
    ends = topic_ends(topics.kafka_config(topics.bootstrap_servers), topics.requests_topic)
    wait_until_folded(source, ends, _FOLD_TIMEOUT_S)
    verdicts = {(d.channel_id, d.kind): d.verdict for d in source.duplicates(100)}
    assert verdicts == {
        (ZOMBIE, "unknown_outcome"): "single",
        (ZOMBIE, "stale_completion"): "single",
        (CHAOS, "unknown_outcome"): "possible",
        (DOUBLE, "unknown_outcome"): "double",
        (DOUBLE, "stale_completion"): "double",
    }
    with headless_chromium(chromium) as browser:
        browser.get(base + "/ui/")
        rows = browser.find_elements(By.CSS_SELECTOR, "tr[data-channel]")
        flagged = {r.get_attribute("data-channel"): r.get_attribute("data-flagged") for r in rows}
        assert flagged == {ZOMBIE: "false", CHAOS: "true", DOUBLE: "true"}
        cells = {
            r.get_attribute("data-channel"): r.find_element(By.CSS_SELECTOR, "td.audit").text
            for r in rows
        }
        assert cells == {ZOMBIE: "✓ 1 single", CHAOS: "? 1 possible", DOUBLE: "⚠ 1 double"}
        # A flag is drawn as one (red), the zombie's count is not.
        chaos = browser.find_element(By.CSS_SELECTOR, f'tr[data-channel="{CHAOS}"] td.audit span')
        zombie = browser.find_element(By.CSS_SELECTOR, f'tr[data-channel="{ZOMBIE}"] td.audit span')
        assert chaos.value_of_css_property("color") != zombie.value_of_css_property("color")
        browser.get(base + run_href(ZOMBIE))
        chips = browser.find_elements(By.CSS_SELECTOR, ".summary .chip[data-verdict]")
        assert [c.get_attribute("data-verdict") for c in chips] == ["single"]
        assert not browser.find_elements(By.CSS_SELECTOR, ".dup-label")  # no "duplicate!" mark
        fenced = browser.find_element(By.CSS_SELECTOR, 'tr[data-kind="fenced"]')
        assert "one effect: the next holder found it" in fenced.text
        browser.get(base + run_href(CHAOS))
        labels = [e.text for e in browser.find_elements(By.CSS_SELECTOR, ".dup-label")]
        assert labels == ["duplicate?"]
