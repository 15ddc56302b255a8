"""A person at the approvals page in Chromium: find the intent, type the approver's token,
press approve or deny; the banner the answer page shows. Shared by the browser tests."""

from __future__ import annotations

import time
from dataclasses import dataclass

from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver

from oncelog.identity.ids import operation_id
from oncelog.waiting import poll_until

LISTED_S = 60.0  # until the projector has folded the intent, on a loaded machine


@dataclass
class Person:
    """A browser at ``url`` (``/ui/approvals``) and the approver token the person types."""

    browser: WebDriver
    url: str
    token: str

    def decide(self, channel: str, key: str, verb: str, reason: str = "", token: str = "") -> str:
        """Submit ``key``'s ``verb`` form (``token``: another than the person's); the banner."""
        browser, op = self.browser, operation_id(channel, key)
        row = f'tr[data-operation="{op}"]'

        def listed() -> bool:
            browser.get(self.url)
            return bool(browser.find_elements(By.CSS_SELECTOR, row))

        assert poll_until(time.monotonic() + LISTED_S, listed, pause_s=0.2), f"{key} not listed"
        form = browser.find_element(By.CSS_SELECTOR, f"{row} form.{verb}")
        if reason:
            form.find_element(By.NAME, "reason").send_keys(reason)
        form.find_element(By.NAME, "token").send_keys(token or self.token)
        form.find_element(By.CSS_SELECTOR, "button").click()
        # The answer is a new page: wait for its banner (a click does not wait for the load).
        banner = poll_until(
            time.monotonic() + LISTED_S, lambda: browser.find_elements(By.ID, "answer")
        )
        assert banner, f"no answer to {verb} {key}"
        assert (token or self.token) not in browser.page_source
        return str(banner[0].text)
