"""A worker process that runs one framework's refund agent: pause, or resume.

    python -m tests.integration.frameworks.approval_agent_worker FRAMEWORK {pause|resume|rerun}
        CHANNEL AMOUNT STATE EFFECTS

The ledger's settings come from the environment. ``pause`` runs the agent until it pauses
on the approval, writes the pending approval to ``STATE.pending`` and then waits on its
stdin (the test SIGKILLs it there). ``resume`` resumes from STATE and prints one JSON line:
the agent's answer, or the ledger error's code and message. ``rerun`` runs the agent anew
(with another amount, say) and prints how it ended.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable
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
        if mode == "rerun":  # a new run of the agent, from the start
            return await _caught(pause(run, effects, amount, state))
        try:
            return {"answer": await resume(run, effects, amount, state)}
        except LedgerError as exc:
            return {"code": exc.code, "message": str(exc)}
    finally:
        client.close()


async def _caught(paused: Awaitable[dict[str, Any]]) -> dict[str, Any]:
    """What a rerun ended with: the ledger's error (a framework may wrap it) or its pause."""
    try:
        return {"paused": await paused}
    except Exception as exc:  # the framework's wrapper of the ledger's error, or the error
        error: BaseException | None = exc
        while error is not None and not isinstance(error, LedgerError):
            error = error.__cause__ or error.__context__
        code = error.code if isinstance(error, LedgerError) else type(exc).__name__
        return {"code": code, "message": str(exc)}


if __name__ == "__main__":
    framework, mode, channel, amount, state, effects = sys.argv[1:]
    outcome = asyncio.run(main(framework, mode, channel, int(amount), Path(state), Path(effects)))
    print(json.dumps(outcome), flush=True)
