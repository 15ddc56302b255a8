"""The branches of a LangGraph thread on the ledger: resuming from an earlier checkpoint forks.

LangGraph's time travel (``graph.invoke(None, {"configurable": {"thread_id": t,
"checkpoint_id": c}})``, or ``update_state`` at an earlier checkpoint and a resume) starts a
new branch of the thread's checkpoint tree, and re-runs every tool after the fork point. The
tools wrapped by :mod:`oncelog.integrations.langchain` see it and run in a branch of their
own on the ledger, found from the graph's checkpointer alone (any ``BaseCheckpointSaver``):

- **Naming.** A checkpoint belongs to its parent's branch when it is the parent's first
  child (checkpoint ids are time-ordered); the k-th child (k >= 1) of checkpoint ``p``
  starts the branch ``<run channel>~<p>~<k>``, forked from ``p``'s branch at ``p``. The
  thread's first branch is the run's channel: an unforked thread, and a crash and rerun
  inside any branch, run exactly as before.
- **Positions.** The first tool call of a superstep (a task computed from checkpoint ``S``)
  records the mark ``cp-<S>`` (a pure operation, tool ``langgraph.checkpoint``) on its
  branch's channel before its claim. A branch forked at ``p`` inherits what its parent's
  channel completed before the first mark of ``p`` or a later checkpoint of that branch
  (:meth:`~oncelog.producer.client.LedgerClient.fork_channel`).
- **Family.** Every other branch of the thread, parent first: an ``external`` call looks
  there for the same request completed, and replays it, marked as taken from that branch
  (:class:`~oncelog.integrations.run.Branch`; ``ToolPolicy(per_branch=True)`` opts out).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from oncelog.errors import LedgerError
from oncelog.integrations.run import Branch, LedgerRun

MARK_TOOL: Final = "langgraph.checkpoint"
"""The tool name of the marks that place a checkpoint on its branch's channel."""
MARK_PREFIX: Final = "cp-"
SAVED_WITHIN_S: Final = 30.0
"""How long a tool waits for the checkpoint its task runs from to be saved. LangGraph's
default durability ("async") saves a checkpoint in the background while the next step's
tasks already run, and a branch is named from the checkpoint's place in the tree."""

__all__ = [
    "MARK_PREFIX",
    "MARK_TOOL",
    "BranchTracker",
    "CheckpointNotSavedError",
    "CheckpointTree",
]


@dataclass(frozen=True, slots=True)
class CheckpointTree:
    """A thread's checkpoints: each one's parent, and each one's children in id order."""

    parent: Mapping[str, str | None]
    children: Mapping[str, tuple[str, ...]]

    @classmethod
    def of(cls, tuples: Iterable[Any]) -> CheckpointTree:
        """From ``CheckpointTuple`` s (``config`` and ``parent_config``) of one namespace."""
        parent: dict[str, str | None] = {}
        for t in tuples:
            up = t.parent_config
            parent[t.config["configurable"]["checkpoint_id"]] = (
                None if not up else up["configurable"]["checkpoint_id"]
            )
        kids: dict[str, list[str]] = {}
        for child, up in parent.items():
            if up is not None:
                kids.setdefault(up, []).append(child)
        return cls(parent, {k: tuple(sorted(v)) for k, v in kids.items()})

    def fork_point(self, checkpoint_id: str) -> tuple[str, int] | None:
        """The checkpoint whose later child starts ``checkpoint_id``'s branch, and which child
        it is (k >= 1); None on the thread's first branch."""
        node = checkpoint_id
        while (up := self.parent.get(node)) is not None:
            k = self.children[up].index(node)
            if k > 0:
                return up, k
            node = up
        return None

    def channel(self, root: str, checkpoint_id: str) -> str:
        """The ledger channel of ``checkpoint_id``'s branch."""
        fork = self.fork_point(checkpoint_id)
        return root if fork is None else f"{root}~{fork[0]}~{fork[1]}"

    def at_or_after(self, checkpoint_id: str, ancestor: str) -> bool:
        """Whether ``checkpoint_id`` is ``ancestor`` or one of its descendants."""
        node: str | None = checkpoint_id
        while node is not None:
            if node == ancestor:
                return True
            node = self.parent.get(node)
        return False

    def family(self, root: str, source: str) -> tuple[str, ...]:
        """Every other branch's channel than ``source``'s: its ancestors' first (nearest
        first), then the others in name order."""
        own = self.channel(root, source)
        chain: list[str] = []
        fork = self.fork_point(source)
        while fork is not None:
            chain.append(self.channel(root, fork[0]))
            fork = self.fork_point(fork[0])
        everyone = {self.channel(root, c) for c in self.parent} | {root}
        return (*chain, *sorted(everyone - {own, *chain}))


@dataclass
class BranchTracker:
    """Finds the branch of each tool call of a LangGraph run, forks and marks it once.

    One tracker per :class:`LedgerRun` (``ledger_tools`` makes it); it only remembers what
    it has done, to save round trips: forks and marks are idempotent on the ledger.
    """

    run: LedgerRun
    _done: set[tuple[str, str]] = field(default_factory=set)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _alock: asyncio.Lock | None = None

    def branch(self, config: Mapping[str, Any]) -> Branch | None:
        """The branch of a blocking tool call with LangGraph ``config`` (None: no checkpointer)."""
        where = _where(config)
        if where is None:
            return None
        saver, thread_id, source = where
        config_ = {"configurable": {"thread_id": thread_id}}
        tree = CheckpointTree.of(saver.list(config_))
        deadline = time.monotonic() + SAVED_WITHIN_S
        pause = 0.001
        while source not in tree.parent:  # LangGraph saves it in the background meanwhile
            if time.monotonic() > deadline:
                raise _unsaved(thread_id, source)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
            tree = CheckpointTree.of(saver.list(config_))
        root = self.run.channel(thread_id)
        channel = tree.channel(root, source)
        client: Any = self.run.client
        with self._lock:  # parallel calls of one superstep: the first forks and marks
            if (channel, "fork") not in self._done:
                _fork(client, tree, root, source)
                self._done.add((channel, "fork"))
            if (channel, source) not in self._done:
                client.run_tool(channel, MARK_PREFIX + source, **_mark_job(source, False))
                self._done.add((channel, source))
        return Branch(channel, tree.family(root, source))

    async def abranch(self, config: Mapping[str, Any]) -> Branch | None:
        """:meth:`branch` of an async tool call (the saver's async listing)."""
        where = _where(config)
        if where is None:
            return None
        saver, thread_id, source = where
        config_ = {"configurable": {"thread_id": thread_id}}
        tree = CheckpointTree.of([t async for t in saver.alist(config_)])
        deadline = time.monotonic() + SAVED_WITHIN_S
        pause = 0.001
        while source not in tree.parent:  # LangGraph saves it in the background meanwhile
            if time.monotonic() > deadline:
                raise _unsaved(thread_id, source)
            await asyncio.sleep(pause)
            pause = min(pause * 2, 0.05)
            tree = CheckpointTree.of([t async for t in saver.alist(config_)])
        root = self.run.channel(thread_id)
        channel = tree.channel(root, source)
        client: Any = self.run.client
        if self._alock is None:
            self._alock = asyncio.Lock()
        async with self._alock:
            if (channel, "fork") not in self._done:
                fork = tree.fork_point(source)
                if fork is not None:
                    parent = tree.channel(root, fork[0])
                    at = _fork_at(tree, await client.channel_executions(parent), fork[0])
                    await client.fork_channel(parent, channel, at=at)
                self._done.add((channel, "fork"))
            if (channel, source) not in self._done:
                await client.run_tool(channel, MARK_PREFIX + source, **_mark_job(source, True))
                self._done.add((channel, source))
        return Branch(channel, tree.family(root, source))


class CheckpointNotSavedError(LedgerError, code="checkpoint_not_saved", http_status=503):
    """The checkpoint a tool's task runs from never reached the checkpointer: the tool's
    branch cannot be named."""


def _unsaved(thread_id: str, source: str) -> LedgerError:
    return CheckpointNotSavedError(
        f"thread {thread_id!r}: checkpoint {source} was not saved within {SAVED_WITHIN_S}s, "
        "so its branch is unknown: check the checkpointer (or run with durability='sync')"
    )


def _where(config: Mapping[str, Any]) -> tuple[Any, str, str] | None:
    """The checkpointer, thread id and the checkpoint the running task was computed from."""
    conf = config.get("configurable") or {}
    saver = conf.get("__pregel_checkpointer")
    thread_id = conf.get("thread_id")
    # LangGraph hands each task the ids of the checkpoints it runs from, by namespace;
    # "" is the top-level graph's (the thread's own tree).
    source = (conf.get("checkpoint_map") or {}).get("")
    if saver is None or thread_id is None or source is None or not hasattr(saver, "list"):
        return None
    return saver, str(thread_id), str(source)


def _mark_job(source: str, is_async: bool) -> dict[str, Any]:
    """The options of ``run_tool`` that record the mark of checkpoint ``source``."""
    mark = {"checkpoint_id": source}

    def fn(ctx: Any) -> Any:
        return mark

    async def afn(ctx: Any) -> Any:
        return mark

    return {"tool_name": MARK_TOOL, "params": mark, "fn": afn if is_async else fn, "effect": "pure"}


def _fork_at(tree: CheckpointTree, executions: Iterable[Any], fork_at: str) -> int | None:
    """The parent's position just before its first mark of ``fork_at`` or a later checkpoint."""
    after = [
        e.position[1]
        for e in executions
        if e.tool_name == MARK_TOOL
        and e.position is not None
        and tree.at_or_after(e.key_name.removeprefix(MARK_PREFIX), fork_at)
    ]
    return min(after) - 1 if after else None


def _fork(client: Any, tree: CheckpointTree, root: str, source: str) -> None:
    """Fork ``source``'s branch from its parent's at the fork point (blocking client)."""
    fork = tree.fork_point(source)
    if fork is None:
        return
    parent = tree.channel(root, fork[0])
    at = _fork_at(tree, client.channel_executions(parent), fork[0])
    client.fork_channel(parent, tree.channel(root, source), at=at)
