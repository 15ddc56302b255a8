"""What a tool call reads of the checkpointer to name its branch: only the checkpoints newer
than the newest its tracker knows, nothing for a checkpoint it knows (in-memory ledger)."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from oncelog.integrations import LedgerRun
from oncelog.integrations.branches import BranchTracker, ListedHeads, UntrackedBranchesWarning
from oncelog.testing import InMemoryLedger


@dataclass
class Heads:
    """A checkpointer's heads, and the reads asked of it."""

    parents: dict[str, str | None] = field(default_factory=dict)
    reads: list[str | None] = field(default_factory=list)

    def checkpoint_heads(self, thread_id: str, after_id: str | None) -> Mapping[str, str | None]:
        self.reads.append(after_id)
        return {c: p for c, p in self.parents.items() if after_id is None or c > after_id}


def _config(source: str) -> dict[str, Any]:
    return {"configurable": {"thread_id": "t", "checkpoint_map": {"": source}}}


async def test_each_new_checkpoint_is_read_once_and_a_known_one_not_at_all() -> None:
    ledger = InMemoryLedger()
    heads = Heads({"c1": None, "c2": "c1"})
    tracker = BranchTracker(LedgerRun(ledger.sync_client()), heads)
    first = tracker.branch(_config("c2"))
    assert first is not None
    assert first.channel_id == "t"
    assert heads.reads == [None]
    heads.parents.update({"c3": "c2", "c4": "c3"})
    tracker.branch(_config("c4"))
    tracker.branch(_config("c4"))  # a parallel call of the same superstep
    assert heads.reads == [None, "c2"]  # only what is newer than c2, and once
    heads.parents["c5"] = "c2"  # time travel: c2's second child starts a branch
    fork = tracker.branch(_config("c5"))
    assert heads.reads == [None, "c2", "c4"]
    assert fork is not None
    assert fork.channel_id == "t~c2~1"
    assert fork.family == ("t",)
    marks = [e.key_name for e in ledger.sync_client().channel_executions("t~c2~1")]
    assert marks == ["cp-c5"]


async def test_the_async_tool_call_names_the_same_branch() -> None:
    ledger = InMemoryLedger()
    heads = Heads({"c1": None, "c2": "c1", "c3": "c1"})
    tracker = BranchTracker(LedgerRun(ledger.client()), heads)
    branch = await tracker.abranch(_config("c3"))
    assert branch is not None
    assert branch.channel_id == "t~c1~1"
    assert heads.reads == [None]


def test_without_a_checkpointer_there_is_no_branch() -> None:
    tracker = BranchTracker(LedgerRun(InMemoryLedger().sync_client()))
    assert tracker.branch(_config("c1")) is None


@dataclass(frozen=True)
class Listed:
    config: dict[str, Any]
    parent_config: dict[str, Any] | None


@dataclass
class Saver:
    """A checkpointer's public listing, newest first, counting what it yields."""

    ids: list[tuple[str, str | None]]
    yielded: int = 0

    def list(self, config: Any) -> Iterator[Listed]:
        for cid, parent in reversed(self.ids):
            self.yielded += 1
            up = None if parent is None else {"configurable": {"checkpoint_id": parent}}
            yield Listed({"configurable": {"checkpoint_id": cid}}, up)


def test_another_checkpointers_listing_stops_at_the_first_known_checkpoint() -> None:
    saver = Saver([("c1", None), ("c2", "c1"), ("c3", "c2"), ("c4", "c3")])
    assert ListedHeads(saver).checkpoint_heads("t", "c2") == {"c4": "c3", "c3": "c2"}
    assert saver.yielded == 3  # c4, c3, then c2: known, the listing stops
    assert ListedHeads(saver).checkpoint_heads("t", None) == dict(saver.ids)


def test_a_checkpointed_thread_without_the_checkpointer_is_warned_of_once() -> None:
    tracker = BranchTracker(LedgerRun(InMemoryLedger().sync_client()))
    with pytest.warns(UntrackedBranchesWarning, match="checkpointer=saver") as seen:
        branches = [tracker.branch(_config("c1")), tracker.branch(_config("c2"))]
    assert branches == [None, None]
    assert len(seen) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # outside a checkpointed thread: nothing to say
        assert BranchTracker(LedgerRun(InMemoryLedger().sync_client())).branch({}) is None
