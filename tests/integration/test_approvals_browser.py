"""A real Chromium shows each step's approval on the run page's lane (issue 45): the
intent awaiting a decision, who approved it at which position, a denial's reason. Real
broker, real projector and DuckDB file, real ``serve``; skips without Debian's chromium
unless ``ONCELOG_REQUIRE_BROWSER`` is set (see test_timeline_browser.py).
"""

from __future__ import annotations

from collections.abc import Callable

from selenium.webdriver.common.by import By

from drills.demo.browser import headless_chromium
from oncelog.kafka.reader import topic_ends
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.server import HttpServer
from oncelog.query.source import HttpSource
from oncelog.query.ui.pages import run_href
from oncelog.schemas.models import ApprovalPolicy
from oncelog.settings import Settings
from tests.integration.test_timeline_browser import api, chromium

__all__ = ["api", "chromium"]  # the fixtures, shared with the timeline's browser test

CHANNEL = "refunds-run"
POLICY = ApprovalPolicy(timeout_ms=600_000)


def _ask_decide_and_run(make_client: Callable[..., SyncLedgerClient]) -> None:
    """r-1 approved by ann, then claimed by a new process and completed; r-2 denied with a
    reason that carries markup; r-3 still awaiting a decision."""
    agent, desk = make_client("agent"), make_client("desk")
    asks = {
        key: agent.claim_execution(CHANNEL, key, tool_name="refund",
                                   params={"amount_cents": cents}, approval=POLICY)
        for key, cents in (("r-1", 25_000), ("r-2", 40_000), ("r-3", 55_000))
    }  # fmt: skip
    assert {c.status for c in asks.values()} == {"awaiting_approval"}
    desk.decide_approval(CHANNEL, "r-1", approver="ann", approve=True,
                         request_hash=asks["r-1"].execution.request_hash)  # fmt: skip
    desk.decide_approval(CHANNEL, "r-2", approver="ann", approve=False,
                         reason="over the <b>balance</b>",
                         request_hash=asks["r-2"].execution.request_hash)  # fmt: skip
    again = make_client("agent-restarted")
    claim = again.claim_execution(CHANNEL, "r-1", tool_name="refund",
                                  params={"amount_cents": 25_000}, approval=POLICY)  # fmt: skip
    assert claim.status == "claimed"
    again.complete_execution(claim.execution, claim.claim_token, {"refunded": 25_000})


def test_chromium_shows_the_intent_the_decision_and_the_approver_on_the_lane(
    chromium: tuple[str, str],
    topics: Settings,
    api: HttpServer,
    make_client: Callable[..., SyncLedgerClient],
) -> None:
    base = f"http://127.0.0.1:{api.port}"
    _ask_decide_and_run(make_client)
    assert topics.bootstrap_servers is not None
    ends = topic_ends(topics.kafka_config(topics.bootstrap_servers), topics.requests_topic)
    wait_until_folded(HttpSource(base), ends, 30.0)
    with headless_chromium(chromium) as browser:
        browser.get(base + run_href(CHANNEL))
        lanes = {
            g.get_attribute("data-key"): g.find_element(By.CSS_SELECTOR, "text.approval")
            for g in browser.find_elements(By.CSS_SELECTOR, "g.step")
        }
        said = {key: text.get_attribute("data-approval") or "" for key, text in lanes.items()}
        approved = browser.find_element(By.CSS_SELECTOR, 'tr[data-kind="approved"] td')
        assert said["r-1"].startswith("approved by ann at position ")  # partition:offset
        assert said["r-1"].endswith(f":{approved.text}")
        assert said["r-2"] == "denied by ann: over the <b>balance</b>"  # text, not markup
        assert said["r-3"] == "awaiting approval"
        assert not browser.find_elements(By.XPATH, "//*[local-name()='b'][.='balance']")
        denied = browser.find_element(By.CSS_SELECTOR, 'details[data-key="r-2"] summary')
        assert "denied by ann: over the <b>balance</b>" in denied.text
