"""DBOS as a peer: each step is a workflow whose id is the operation id.

Starting a workflow records it in DBOS's system database (the claim); its result is the
one step's recorded output (the completion). Starting it again with the same id returns
the recorded result without running the step (the replay).
"""

from __future__ import annotations

import contextlib
import importlib.util
from collections.abc import Iterator
from typing import Any

from oncelog.identity.ids import operation_id

INSTALL_HINT = "pip install -c constraints.txt -e '.[bench]'   (or: make bench-peers)"


def missing() -> str | None:
    """Why DBOS cannot run here, or None when it can."""
    if importlib.util.find_spec("dbos") is None:
        return f"the dbos package is not installed; install it with:\n  {INSTALL_HINT}"
    return None


async def _tool(key: str) -> dict[str, str]:
    return {"key": key}


async def _step_workflow(key: str) -> Any:
    return await _STEP[0](key)


_STEP: list[Any] = []
_WORKFLOW: list[Any] = []


def _register(dbos: Any) -> None:
    """Register the step and the workflow once per process (before launch)."""
    if not _WORKFLOW:
        _STEP.append(dbos.step()(_tool))
        _WORKFLOW.append(dbos.workflow()(_step_workflow))


class DbosPeer:
    """Claim = start the workflow under the operation id; complete = await its result."""

    def __init__(self, dbos: Any, set_id: Any) -> None:
        self._dbos, self._set_id = dbos, set_id

    async def claim(self, channel: str, key: str) -> object | None:
        """The handle of the (new or recorded) workflow for this step."""
        with self._set_id(operation_id(channel, key)):
            handle: object = await self._dbos.start_workflow_async(_WORKFLOW[0], key)
        return handle

    async def complete(self, handle: object, result: int) -> None:
        """Wait for the step to run and its output to be recorded (or the recorded one)."""
        workflow: Any = handle
        await workflow.get_result()


@contextlib.contextmanager
def launched(system_database_url: str, pool_size: int) -> Iterator[DbosPeer]:
    """DBOS launched on ``system_database_url``; destroyed afterwards."""
    from dbos import DBOS, SetWorkflowID  # noqa: PLC0415  (optional: the bench extra)

    _register(DBOS)
    DBOS(config={"name": "oncelog-bench", "system_database_url": system_database_url,
                 "sys_db_pool_size": pool_size, "log_level": "WARNING"})  # fmt: skip
    DBOS.launch()
    try:
        yield DbosPeer(DBOS, SetWorkflowID)
    finally:
        DBOS.destroy(destroy_registry=False)
