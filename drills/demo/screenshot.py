"""``make screenshot``: regenerate ``docs/img/timeline.png``, a run's timeline page.

Starts the local broker (unless one runs or ``ONCELOG_BOOTSTRAP_SERVERS`` is set),
fresh topics and ``oncelog serve``, writes the timeline story
(:mod:`drills.demo.timeline_story`), waits until it is folded, and has headless
Chromium take a picture of ``/ui/runs/<channel>``.
"""

from __future__ import annotations

import sys
import tempfile
import uuid
from pathlib import Path
from typing import Final

from drills.demo.browser import headless_chromium, system_chromium
from drills.demo.timeline_story import play, wait_shown
from oncelog.broker.local import broker_for_run
from oncelog.net import free_port
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.query.source import HttpSource
from oncelog.query.ui.pages import run_href
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

OUT: Final = Path(__file__).resolve().parents[2] / "docs" / "img" / "timeline.png"
WINDOW: Final = (1560, 1000)


def capture(url: str, out: Path) -> None:
    """Open ``url`` in headless Chromium and save the window as a PNG at ``out``."""
    paths = system_chromium()
    if paths is None:
        raise SystemExit("needs Debian's chromium and chromium-driver (apt-get install ...)")
    with headless_chromium(paths, WINDOW) as browser:
        browser.get(url)
        out.parent.mkdir(parents=True, exist_ok=True)
        browser.save_screenshot(str(out))


def main(out: Path = OUT) -> None:
    """Write the story on a fresh topic set and photograph its timeline page."""
    base = Settings(http_token=None)  # loopback only: the browser needs no sign-in
    with broker_for_run(base) as broker:
        tmp = Path(tempfile.mkdtemp(prefix="oncelog-screenshot-"))
        settings = base.model_copy(update={
            "bootstrap_servers": broker.bootstrap, "topic_prefix": f"shot-{uuid.uuid4().hex[:8]}",
            "partitions": 3, "db_path": tmp / "ledger.duckdb", "http_port": free_port(),
        })  # fmt: skip
        create_topics(admin_client(settings, broker.bootstrap), ledger_topics(settings))
        serve = process.start_serve(settings, tmp / "serve.log")
        base_url = f"http://127.0.0.1:{settings.http_port}"
        try:
            process.wait_http(serve, f"{base_url}/healthz", tmp / "serve.log")
            clients = []

            def make(worker: str) -> SyncLedgerClient:
                client = SyncLedgerClient(settings, worker_id=worker, timeouts=Timeouts(30, 5))
                client.open()
                clients.append(client)
                return client

            try:
                story = play(make)
            finally:
                for client in clients:
                    client.close()
            wait_shown(settings, HttpSource(base_url, token=settings.http_token), story)
            capture(base_url + run_href(story.channel), out)
        finally:
            process.stop(serve)
    print(f"wrote {out}")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else OUT)
