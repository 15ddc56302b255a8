"""A Python worker of the mixed fleet: claims an external step, charges, and dies at once.

    python tests/crosslang/python_worker.py DOWNSTREAM CHANNEL

The effect (a line keyed by the idempotency key) reaches the downstream file; then the
process SIGKILLs itself before it can complete, as a crash after the effect would.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path

from oncelog.connection import connect_sync
from oncelog.producer.tool_model import ToolContext

KEY_NAME = "charge:order-1"


def main() -> None:
    downstream, channel = Path(sys.argv[1]), sys.argv[2]

    def charge(ctx: ToolContext) -> object:
        line = {"key": ctx.idempotency_key, "by": "py-worker", "epoch": ctx.execution.epoch}
        with downstream.open("a") as out:
            out.write(json.dumps(line) + "\n")
        os.kill(os.getpid(), signal.SIGKILL)
        return None  # never reached

    with connect_sync(worker_id="py-worker") as client:
        client.run_tool(
            channel, KEY_NAME, tool_name="charge", params={"order": "1"}, fn=charge, lease_seconds=1
        )


if __name__ == "__main__":
    main()
