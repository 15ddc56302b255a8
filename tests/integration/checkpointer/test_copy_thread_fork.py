"""``copy_thread`` forks the thread's ledger run: the copy replays the source's effects
(issue 29: the saver and the forks together)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from oncelog.integrations.langgraph import OncelogSaver, fork_ledger_runs
from oncelog.producer.sync_client import SyncLedgerClient
from tests.served import Served

pytestmark = pytest.mark.kafka


def test_copy_thread_forks_the_ledger_run_and_the_copy_replays_its_effect(
    served: Served, make_saver: Callable[..., OncelogSaver]
) -> None:
    charges: list[int] = []

    def charge(_ctx: object) -> dict[str, str]:
        charges.append(5)  # the downstream counts, and does not deduplicate
        return {"charge_id": "ch_1"}

    with SyncLedgerClient(served.settings) as client:
        client.run_tool("thread-a", "charge#1", tool_name="charge", params={"n": 5}, fn=charge)
        saver = make_saver(fork=fork_ledger_runs(client))
        saver.copy_thread("thread-a", "thread-b")
        copied = client.channel_executions("thread-b")
        assert [(e.key_name, e.result) for e in copied] == [("charge#1", {"charge_id": "ch_1"})]
        assert copied[0].inherited is not None
        assert copied[0].inherited.from_channel == "thread-a"
        again = client.run_tool(
            "thread-b", "charge#1", tool_name="charge", params={"n": 5}, fn=charge
        )
    assert again.result == {"charge_id": "ch_1"}
    assert charges == [5]  # the copy's charge replayed the source's: it did not run again
