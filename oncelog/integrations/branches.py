"""The branches of a LangGraph thread on the ledger: resuming from an earlier checkpoint forks.

LangGraph's time travel (``graph.invoke(None, {"configurable": {"thread_id": t,
"checkpoint_id": c}})``, or ``update_state`` at an earlier checkpoint and a resume) starts a
new branch of the thread's checkpoint tree, and re-runs every tool after the fork point. The
tools wrapped by :mod:`oncelog.integrations.langchain` see it and run in a branch of their
own on the ledger, found from the graph's checkpointer, given to the tools
(``ledger_tools(..., checkpointer=saver)``; any ``BaseCheckpointSaver``, read through
:class:`CheckpointHeads`):

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

import threading
import time
import warnings
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, runtime_checkable

from oncelog.errors import LedgerError
from oncelog.integrations.run import Branch, LedgerRun
from oncelog.producer.forks import channel_executions, fork_channel
from oncelog.producer.ledger_plan import Blocking, Exclusive, LedgerPlan, Pause, PlanLock, Record
from oncelog.producer.tool_model import ToolSpec, ToolTarget

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
    "CheckpointHeads",
    "CheckpointNotSavedError",
    "CheckpointTree",
    "ListedHeads",
    "UntrackedBranchesWarning",
    "heads_of",
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
        return cls.from_parents(parent)

    @classmethod
    def from_parents(cls, parent: Mapping[str, str | None]) -> CheckpointTree:
        """From each checkpoint's parent (None: the first)."""
        parent = dict(parent)
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


@runtime_checkable
class CheckpointHeads(Protocol):
    """What a branch tree needs of a checkpointer: ids and parents, nothing else.

    ``OncelogSaver`` answers it with one small read; any other checkpointer is read
    through its public ``list`` (:class:`ListedHeads`).
    """

    def checkpoint_heads(self, thread_id: str, after_id: str | None) -> Mapping[str, str | None]:
        """The thread's root-namespace checkpoints with an id above ``after_id`` (every one:
        None), each with its parent's id."""
        ...


class ListsCheckpoints(Protocol):
    """A checkpointer's public listing (LangGraph's ``BaseCheckpointSaver.list``)."""

    def list(self, config: Any) -> Iterator[Any]:
        """``CheckpointTuple`` s of the thread ``config`` names, newest first."""
        ...


@dataclass(frozen=True, slots=True)
class ListedHeads:
    """:class:`CheckpointHeads` of any checkpointer, from its public ``list`` (newest
    first: the listing stops at the first checkpoint already known)."""

    saver: ListsCheckpoints

    def checkpoint_heads(self, thread_id: str, after_id: str | None) -> Mapping[str, str | None]:
        """See :meth:`CheckpointHeads.checkpoint_heads`."""
        config = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        found: dict[str, str | None] = {}
        for t in self.saver.list(config):
            cid = t.config["configurable"]["checkpoint_id"]
            if after_id is not None and cid <= after_id:
                break
            up = t.parent_config
            found[cid] = None if not up else up["configurable"]["checkpoint_id"]
        return found


def heads_of(checkpointer: CheckpointHeads | ListsCheckpoints) -> CheckpointHeads:
    """The :class:`CheckpointHeads` of a checkpointer: its own, else read from its listing."""
    if isinstance(checkpointer, CheckpointHeads):
        return checkpointer
    return ListedHeads(checkpointer)


class UntrackedBranchesWarning(UserWarning):
    """A tool call runs in a checkpointed LangGraph thread, but its tools were made without
    the graph's checkpointer: a resume from an earlier checkpoint is not told apart from the
    thread's first run (no fork on the ledger). Pass ``checkpointer=`` to ``ledger_tools``."""


@dataclass
class BranchTracker:
    """Finds the branch of each tool call of a LangGraph run, forks and marks it once.

    One tracker per :class:`LedgerRun` (``ledger_tools`` makes it) and checkpointer (the
    graph's; None: no branches). It remembers what it has done, to save round trips
    (forks and marks are idempotent on the ledger), and each thread's checkpoint tree:
    a tool call reads only the checkpoints newer than the newest it knows.
    """

    run: LedgerRun
    checkpointer: CheckpointHeads | ListsCheckpoints | None = None
    _done: set[tuple[str, str]] = field(default_factory=set)
    _lock: PlanLock = field(default_factory=PlanLock)
    _known: dict[str, dict[str, str | None]] = field(default_factory=dict)
    _known_lock: threading.Lock = field(default_factory=threading.Lock)
    _warned: bool = False

    def branch(self, config: Mapping[str, Any]) -> Branch | None:
        """The branch of a blocking tool call with LangGraph ``config`` (None: no checkpointer)."""
        return self.run.drive(self.plan(config))

    async def abranch(self, config: Mapping[str, Any]) -> Branch | None:
        """:meth:`branch` of an async tool call (reads go to a worker thread)."""
        return await self.run.adrive(self.plan(config))

    def plan(self, config: Mapping[str, Any]) -> LedgerPlan[Branch | None]:
        """The branch of a tool call, as a plan for either kind of client."""
        where = _where(config)
        if where is not None and self.checkpointer is None:
            self._warn_untracked()
        if where is None or self.checkpointer is None:
            return None
        thread_id, source = where
        tree = yield from self._tree(heads_of(self.checkpointer), thread_id, source)
        root = self.run.channel(thread_id)
        channel = tree.channel(root, source)
        # Parallel calls of one superstep: the first forks and marks, the others wait.
        yield Exclusive(self._lock, self._fork_and_mark(tree, root, source, channel))
        return Branch(channel, tree.family(root, source))

    def _warn_untracked(self) -> None:
        if not self._warned:
            self._warned = True
            warnings.warn(
                UntrackedBranchesWarning(
                    "oncelog: a tool runs in a checkpointed LangGraph thread, but ledger_tools "
                    "was given no checkpointer: time travel and forks of this thread are not "
                    "told apart on the ledger. Pass ledger_tools(..., checkpointer=saver)"
                ),
                stacklevel=2,
            )

    def _tree(
        self, heads: CheckpointHeads, thread_id: str, source: str
    ) -> LedgerPlan[CheckpointTree]:
        deadline = time.monotonic() + SAVED_WITHIN_S
        pause, every = 0.001, False
        while not self._learn(
            thread_id, source, (yield self._read(heads, thread_id, source, every))
        ):
            # LangGraph saves the checkpoint in the background meanwhile: ask for what is
            # newer again, and once, before giving up, for every checkpoint of the thread.
            if every:
                raise _unsaved(thread_id, source)
            yield Pause(pause)
            pause = min(pause * 2, 0.05)
            every = time.monotonic() > deadline
        with self._known_lock:
            return CheckpointTree.from_parents(self._known[thread_id])

    def _read(self, heads: CheckpointHeads, thread_id: str, source: str, every: bool) -> Blocking:
        """The read of the checkpoints newer than the newest known (``every``: of all of
        them); none when ``source`` is known already."""
        with self._known_lock:
            known = self._known.setdefault(thread_id, {})
            if source in known:
                return Blocking(dict)
            newest = None if every else max(known, default=None)
        return Blocking(lambda: heads.checkpoint_heads(thread_id, newest))

    def _learn(self, thread_id: str, source: str, found: Mapping[str, str | None]) -> bool:
        with self._known_lock:
            known = self._known[thread_id]
            known.update(found)
            return source in known

    def _fork_and_mark(
        self, tree: CheckpointTree, root: str, source: str, channel: str
    ) -> LedgerPlan[None]:
        if (channel, "fork") not in self._done:
            fork = tree.fork_point(source)
            if fork is not None:
                parent = tree.channel(root, fork[0])
                executions = yield from channel_executions(parent)
                at = _fork_at(tree, executions, fork[0])
                yield from fork_channel(parent, channel, at=at)
            self._done.add((channel, "fork"))
        if (channel, source) not in self._done:
            mark = {"checkpoint_id": source}
            spec = ToolSpec(MARK_TOOL, effect="pure")
            yield Record(spec, ToolTarget(channel, MARK_PREFIX + source, None), mark, mark)
            self._done.add((channel, source))


class CheckpointNotSavedError(LedgerError, code="checkpoint_not_saved", http_status=503):
    """The checkpoint a tool's task runs from never reached the checkpointer: the tool's
    branch cannot be named."""


def _unsaved(thread_id: str, source: str) -> LedgerError:
    return CheckpointNotSavedError(
        f"thread {thread_id!r}: checkpoint {source} was not saved within {SAVED_WITHIN_S}s, "
        "so its branch is unknown: check the checkpointer (or run with durability='sync')"
    )


def _where(config: Mapping[str, Any]) -> tuple[str, str] | None:
    """The thread id and the checkpoint the running task was computed from."""
    conf = config.get("configurable") or {}
    thread_id = conf.get("thread_id")
    # LangGraph hands each task the ids of the checkpoints it runs from, by namespace;
    # "" is the top-level graph's (the thread's own tree).
    source = (conf.get("checkpoint_map") or {}).get("")
    if thread_id is None or source is None:
        return None
    return str(thread_id), str(source)


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
