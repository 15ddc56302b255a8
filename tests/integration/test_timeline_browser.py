"""A real Chromium renders a run's timeline page, served over the real broker and DuckDB.

The run is written by real clients (:mod:`drills.demo.timeline_story`): a reclaim, a
replay and a fenced straggler among others. Without Debian's ``chromium`` and
``chromium-driver`` the test skips, unless ``ONCELOG_REQUIRE_BROWSER`` is set (CI
sets it), where it fails instead.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from selenium.webdriver.common.by import By

from drills.demo.browser import headless_chromium, system_chromium
from drills.demo.timeline_story import Story, play, wait_shown
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.server import HttpServer, start_http
from oncelog.query.source import HttpSource
from oncelog.query.ui.pages import run_href
from oncelog.settings import Settings
from tests.integration.conftest import RunningProjector

pytestmark = pytest.mark.kafka


@pytest.fixture
def chromium() -> tuple[str, str]:
    paths = system_chromium()
    if paths is None:
        why = (
            "needs Debian's chromium and chromium-driver (apt-get install chromium chromium-driver)"
        )
        if os.environ.get("ONCELOG_REQUIRE_BROWSER"):
            pytest.fail(f"ONCELOG_REQUIRE_BROWSER is set: {why}")
        pytest.skip(why)
    return paths


@pytest.fixture
def api(projector: RunningProjector) -> Iterator[HttpServer]:
    server = start_http(projector.store, "127.0.0.1", 0)
    yield server
    server.stop()


def test_chromium_shows_the_reclaim_the_replay_and_the_fenced_straggler(
    chromium: tuple[str, str],
    topics: Settings,
    api: HttpServer,
    make_client: Callable[..., SyncLedgerClient],
    tmp_path: Path,
) -> None:
    base = f"http://127.0.0.1:{api.port}"
    story: Story = play(make_client)
    wait_shown(topics, HttpSource(base), story)
    with headless_chromium(chromium) as browser:
        browser.get(base + run_href(story.channel))
        assert browser.title.startswith(story.channel)

        def marks(kind: str) -> list[str]:
            found = browser.find_elements(By.CSS_SELECTOR, f'a.mark[data-kind="{kind}"]')
            return [m.find_element(By.XPATH, "..").get_attribute("data-key") or "" for m in found]

        # Both reclaims superseded a silent external attempt: its outcome unknown, marked apart.
        assert marks("unknown") == [f"step-{story.reclaimed_step}", f"step-{story.fenced_step}"]
        assert marks("replay") == [f"step-{story.replayed_step}"]
        assert marks("fenced") == [f"step-{story.fenced_step}"]
        assert marks("expired") == [f"step-{story.expired_step}"]
        assert marks("cancel") == [f"step-{story.cancelled_step}"]
        assert len(marks("heartbeat")) >= 3
        fenced = browser.find_element(By.CSS_SELECTOR, 'tr[data-kind="fenced"]')
        assert "proven duplicate effect" in fenced.text
        assert "epoch 1 (worker-1) completed after epoch 2 took over" in fenced.text
        rows = browser.find_elements(By.CSS_SELECTOR, "g.step")
        effects = {r.get_attribute("data-key"): r.get_attribute("data-effect") for r in rows}
        assert effects["step-1"] == "pure"
        assert effects["step-2"] == "external"
        assert browser.find_elements(By.CSS_SELECTOR, '[data-kind="lease-lapsed"]')
        shot = tmp_path / "timeline.png"
        assert browser.save_screenshot(str(shot))
    assert shot.stat().st_size > 10_000
