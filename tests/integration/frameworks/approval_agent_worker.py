"""A worker process that runs one framework's refund agent: pause, or resume.

    python -m tests.integration.frameworks.approval_agent_worker FRAMEWORK {pause|resume}
        CHANNEL AMOUNT STATE EFFECTS

The ledger's settings come from the environment. ``pause`` runs the agent until it pauses
on the approval, writes the pending approval to ``STATE.pending`` and then waits on its
stdin (the test SIGKILLs it there). ``resume`` resumes from STATE and prints one JSON line:
the agent's answer, or the ledger error's code and message.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from oncelog.errors import LedgerError
from oncelog.integrations import LedgerRun
from oncelog.producer.client import LedgerClient
from oncelog.settings import Settings
from tests.integration.frameworks.approval_agents import AGENTS, refund_policy


async def main(
    framework: str, mode: str, channel: str, amount: int, state: Path, effects: Path
) -> dict[str, Any]:
    """Pause or resume the agent once."""
    pause, resume = AGENTS[framework]
    client = LedgerClient(Settings(), worker_id="agent")
    client.open()
    try:
        run = LedgerRun(client, channel, policies={"refund": refund_policy()})
        if mode == "pause":
            pending = await pause(run, effects, amount, state)
            state.with_suffix(".pending").write_text(json.dumps(pending))
            await asyncio.to_thread(sys.stdin.read)  # paused until killed
            return {"code": "not_killed"}
        try:
            return {"answer": await resume(run, effects, amount, state)}
        except LedgerError as exc:
            return {"code": exc.code, "message": str(exc)}
    finally:
        client.close()


if __name__ == "__main__":
    framework, mode, channel, amount, state, effects = sys.argv[1:]
    outcome = asyncio.run(main(framework, mode, channel, int(amount), Path(state), Path(effects)))
    print(json.dumps(outcome), flush=True)
