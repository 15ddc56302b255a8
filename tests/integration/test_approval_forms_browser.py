"""A person decides in Chromium: the approvals page's forms, with the approver's token typed
into the password field, against a real ``oncelog serve`` (real broker, projector and
DuckDB file). A wrong token decides nothing; the right one approves and the worker's next
claim is granted; a deny with a reason ends the step; the token is never in a page. Skips
without Debian's chromium unless ``ONCELOG_REQUIRE_BROWSER`` is set."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from drills.demo.browser import headless_chromium
from oncelog.errors import ApprovalDeniedError
from oncelog.identity.approver_signature import new_private_key, public_key_of
from oncelog.identity.ids import operation_id
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import ApprovalPolicy
from oncelog.waiting import poll_until
from tests.integration.test_timeline_browser import chromium
from tests.served import serving

__all__ = ["chromium"]

pytestmark = pytest.mark.kafka

TOKEN = "desk-ann-browser-token"
KEY = new_private_key()
CHANNEL = "refunds-desk"
POLICY = ApprovalPolicy(timeout_ms=3_600_000)


def _decide(browser: WebDriver, url: str, key: str, verb: str, token: str, reason: str = "") -> str:
    """Fill ``key``'s ``verb`` form on a freshly loaded page and submit it; the banner."""
    op = operation_id(CHANNEL, key)

    def row_listed() -> bool:
        browser.get(url)
        return bool(browser.find_elements(By.CSS_SELECTOR, f'tr[data-operation="{op}"]'))

    assert poll_until(time.monotonic() + 30, row_listed), f"{key} never listed"
    form = browser.find_element(By.CSS_SELECTOR, f'tr[data-operation="{op}"] form.{verb}')
    if reason:
        form.find_element(By.NAME, "reason").send_keys(reason)
    form.find_element(By.NAME, "token").send_keys(token)
    form.find_element(By.CSS_SELECTOR, "button").click()
    # The answer is a new page: wait for its banner (a click does not wait for the load).
    banner = poll_until(
        time.monotonic() + 30, lambda: browser.find_elements(By.ID, "answer"), pause_s=0.02
    )
    assert banner, f"no answer to {verb} {key}"
    assert token not in browser.page_source
    return str(banner[0].text)


def test_a_person_approves_and_denies_in_chromium_with_an_approver_token(
    chromium: tuple[str, str], bootstrap: str, tmp_path: Path
) -> None:
    public = base64.b64encode(public_key_of(base64.b64decode(KEY))).decode()
    with serving(
        bootstrap, tmp_path, approvers={"ann": public}, approver_keys={"ann": KEY},
        http_approver_tokens={"ann": TOKEN},
    ) as served:  # fmt: skip
        worker = served.settings.model_copy(
            update={"approver_keys": {}, "http_approver_tokens": {}}
        )
        url = f"{served.url}/ui/approvals"

        def ask(key: str) -> str:
            params = {"amount_cents": 25_000}
            claim = agent.claim_execution(
                CHANNEL, key, tool_name="refund", params=params, approval=POLICY
            )
            return claim.status

        with (
            SyncLedgerClient(worker, worker_id="agent") as agent,
            headless_chromium(chromium) as browser,
        ):
            assert ask("r-1") == ask("r-2") == "awaiting_approval"
            refused = _decide(browser, url, "r-1", "approve", "not-a-token")
            assert "not an approver's token" in refused
            assert ask("r-1") == "awaiting_approval"
            approved = _decide(browser, url, "r-1", "approve", TOKEN)
            assert approved == f"approved: {CHANNEL} / r-1 by ann"
            assert ask("r-1") == "claimed"
            denied = _decide(browser, url, "r-2", "deny", TOKEN, reason="over the limit")
            assert denied.startswith("denied:")
            with pytest.raises(ApprovalDeniedError, match="over the limit"):
                ask("r-2")
