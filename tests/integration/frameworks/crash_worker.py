"""A worker process that runs one framework's agent and dies in the crash window.

    python -m tests.integration.frameworks.crash_worker FRAMEWORK TARGET CHANNEL [--reconcile]

TARGET is the payments service's URL, or for ``mcp`` the git repository's path.

The ledger's settings come from the environment (``ONCELOG_BOOTSTRAP_SERVERS``,
``ONCELOG_TOPIC_PREFIX``, ``ONCELOG_PARTITIONS``). The agent's tool SIGKILLs this process right
after its effect, so reaching the end of :func:`main` is a failure (exit code 3).
"""

from __future__ import annotations

import asyncio
import os
import sys

from oncelog.producer.client import LedgerClient
from oncelog.settings import Settings
from tests.integration.frameworks.crash_window import AGENTS, DIE_AFTER_EFFECT, ledger_run

WORKER_ID = "worker-dies"


async def main(framework: str, url: str, channel: str, *, reconcile: bool) -> None:
    """Run the agent once, dying after the charge (never returning)."""
    os.environ[DIE_AFTER_EFFECT] = "1"
    client = LedgerClient(Settings(), worker_id=WORKER_ID)
    client.open()
    try:
        if framework == "mcp":
            from tests.integration.frameworks.git_mcp import commit_agent  # noqa: PLC0415

            await commit_agent(
                client, channel, url, reconcile="plain" if reconcile else None, dies=True
            )
        else:
            await AGENTS[framework](ledger_run(client, channel, url, reconcile=reconcile), url)
    finally:
        client.close()


if __name__ == "__main__":
    framework, url, channel, *flags = sys.argv[1:]
    asyncio.run(main(framework, url, channel, reconcile="--reconcile" in flags))
    sys.exit(3)  # not reached when the worker died where it should
