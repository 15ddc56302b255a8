"""A worker process that refunds through ``run_tool`` under an approval rule.

    python -m tests.integration.frameworks.approval_worker CHANNEL AMOUNT EFFECTS {wait|raise}

The ledger's settings come from the environment (``ONCELOG_BOOTSTRAP_SERVERS``,
``ONCELOG_TOPIC_PREFIX``, ``ONCELOG_PARTITIONS``). The refund's effect is a line appended to
the EFFECTS file with the params it ran with. The outcome is printed as one JSON line: the
result, or the error's code and message. With ``wait`` the worker waits for the decision
(the test SIGKILLs it there).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

from oncelog.errors import LedgerError
from oncelog.producer.approval_rule import RequireApproval
from oncelog.producer.executor import ToolContext
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings

LIMIT_CENTS: Final = 10_000
KEY: Final = "refund:4471"


def refund_rule(on_pending: str) -> RequireApproval:
    """Refunds over the limit ask a person first."""
    return RequireApproval(
        when=lambda p: p["amount_cents"] > LIMIT_CENTS,
        on_pending="wait" if on_pending == "wait" else "raise",
        wait_timeout_s=300,
        poll_s=0.2,
    )


def main(channel: str, amount: int, effects: Path, on_pending: str) -> dict[str, Any]:
    """Refund ``amount`` once through the ledger; what happened, as JSON."""

    def refund(ctx: ToolContext) -> dict[str, Any]:
        with effects.open("a") as out:
            out.write(json.dumps(ctx.params) + "\n")
        return {"refunded": ctx.params["amount_cents"]}

    with SyncLedgerClient(Settings(), worker_id="agent") as client:
        try:
            run = client.run_tool(
                channel, KEY, fn=refund, tool_name="refund",
                params={"order_id": "4471", "amount_cents": amount},
                approval=refund_rule(on_pending), downstream_dedupes=True,
            )  # fmt: skip
        except LedgerError as exc:
            return {"code": exc.code, "message": str(exc)}
    return {"status": run.status.value, "result": run.result}


if __name__ == "__main__":
    channel, amount, effects, on_pending = sys.argv[1:]
    print(json.dumps(main(channel, int(amount), Path(effects), on_pending)), flush=True)
