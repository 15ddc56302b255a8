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

from drills.demo.browser import headless_chromium
from oncelog.errors import ApprovalDeniedError
from oncelog.identity.approver_signature import new_private_key, public_key_of
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.schemas.models import ApprovalPolicy
from oncelog.waiting import poll_until
from tests.integration.approval_browser import Person
from tests.integration.test_timeline_browser import chromium
from tests.served import serving

__all__ = ["chromium"]

pytestmark = pytest.mark.kafka

TOKEN = "desk-ann-browser-token"
KEY = new_private_key()
CHANNEL = "refunds-desk"
POLICY = ApprovalPolicy(timeout_ms=3_600_000)


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

            def both_listed() -> list[str]:
                browser.get(url)
                cells = browser.find_elements(By.CSS_SELECTOR, "td.params")
                return [c.text for c in cells] if len(cells) == 2 else []

            shown = poll_until(time.monotonic() + 30, both_listed, pause_s=0.2)
            assert shown == ['{"amount_cents": 25000}'] * 2  # what the person approves
            person = Person(browser, url, TOKEN)
            refused = person.decide(CHANNEL, "r-1", "approve", token="not-a-token")
            assert "not an approver's token" in refused
            assert ask("r-1") == "awaiting_approval"
            approved = person.decide(CHANNEL, "r-1", "approve")
            assert approved == f"approved: {CHANNEL} / r-1 by ann"
            assert ask("r-1") == "claimed"
            denied = person.decide(CHANNEL, "r-2", "deny", reason="over the limit")
            assert denied.startswith("denied:")
            with pytest.raises(ApprovalDeniedError, match="over the limit"):
                ask("r-2")
