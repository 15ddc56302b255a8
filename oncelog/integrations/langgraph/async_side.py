"""The async side of a saver whose blocking methods do the work: each runs on a worker
thread (``asyncio.to_thread``), so an async graph (``ainvoke``) never blocks its loop."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, Self

from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import (
    BaseCheckpointSaver,
    CheckpointTuple,
)


class AsyncSide(BaseCheckpointSaver[str]):
    """``aput``, ``aget_tuple``, ``alist`` … as the blocking ``put``, ``get_tuple``, ``list`` …"""

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        """:meth:`get_tuple` on a worker thread."""
        return await asyncio.to_thread(self.get_tuple, config)

    # Each takes what its blocking twin takes (LangGraph's BaseCheckpointSaver signatures).
    async def alist(self, *args: Any, **kwargs: Any) -> AsyncIterator[CheckpointTuple]:
        """:meth:`list` on a worker thread."""
        found = await asyncio.to_thread(lambda: list(self.list(*args, **kwargs)))
        for item in found:
            yield item

    async def aput(self, *args: Any, **kwargs: Any) -> RunnableConfig:
        """:meth:`put` on a worker thread."""
        return await asyncio.to_thread(self.put, *args, **kwargs)

    async def aput_writes(self, *args: Any, **kwargs: Any) -> None:
        """:meth:`put_writes` on a worker thread."""
        await asyncio.to_thread(self.put_writes, *args, **kwargs)

    async def adelete_thread(self, thread_id: str) -> None:
        """:meth:`delete_thread` on a worker thread."""
        await asyncio.to_thread(self.delete_thread, thread_id)

    async def adelete_for_runs(self, run_ids: Sequence[str]) -> None:
        """:meth:`delete_for_runs` on a worker thread."""
        await asyncio.to_thread(self.delete_for_runs, run_ids)

    async def acopy_thread(self, source_thread_id: str, target_thread_id: str) -> None:
        """:meth:`copy_thread` on a worker thread."""
        await asyncio.to_thread(self.copy_thread, source_thread_id, target_thread_id)

    async def aprune(self, thread_ids: Sequence[str], *, strategy: str = "keep_latest") -> None:
        """:meth:`prune` on a worker thread."""
        await asyncio.to_thread(lambda: self.prune(thread_ids, strategy=strategy))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.to_thread(self.close)

    def close(self) -> None:
        """Release what the saver holds (nothing here: a subclass's connections)."""
