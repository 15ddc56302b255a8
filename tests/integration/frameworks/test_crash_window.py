"""Per framework: a worker SIGKILLed after the charge and before the completion, then a rerun.

The payments service ignores idempotency keys (``drills.sample.downstream``, ``naive``). With a
reconcile hook the rerun finds the charge and records it: one charge, the right result. Without
one the adapter warned before the first call, and the rerun charges again: the reclaim names
the attempt whose outcome is unknown.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp.types import CallToolResult, TextContent

from drills.sample.downstream import Downstream, start
from oncelog.identity.ids import operation_id
from oncelog.identity.partitioner import partition_for
from oncelog.integrations import UnguardedToolWarning
from oncelog.producer.client import LedgerClient
from oncelog.query.queries import suspected_duplicates
from oncelog.schemas.models import Decision, Kind, Outcome
from oncelog.settings import Settings
from tests.integration.conftest import FAST, RunningProjector
from tests.integration.frameworks.crash_window import AGENTS, FRAMEWORKS, ledger_run
from tests.integration.frameworks.crash_worker import WORKER_ID
from tests.integration.frameworks.git_mcp import (
    MESSAGE,
    HookShape,
    commit_agent,
    commits,
    git,
    new_repo,
)
from tests.integration.helpers import decisions_on, wait_for_projection

ROOT = Path(__file__).resolve().parents[3]
WORKER_TIMEOUT_S = 120.0  # imports of a framework and a broker round trip, on a loaded machine


@pytest.fixture
def payments() -> Iterator[Downstream]:
    """A payments service that applies every charge, whatever its idempotency key."""
    service = start("naive")
    yield service
    service.stop()


def die_in_the_crash_window(
    settings: Settings, framework: str, target: str, channel: str, *, reconcile: bool
) -> str:
    """Run the framework's agent in a worker process that SIGKILLs itself after the effect;
    its stderr (where Python prints warnings)."""
    assert settings.bootstrap_servers is not None
    env = {
        "ONCELOG_BOOTSTRAP_SERVERS": settings.bootstrap_servers,
        "ONCELOG_TOPIC_PREFIX": settings.topic_prefix,
        "ONCELOG_PARTITIONS": str(settings.partitions),
        "PATH": "/usr/bin:/bin",
    }
    args = [framework, target, channel, *(["--reconcile"] if reconcile else [])]
    done = subprocess.run(
        [sys.executable, "-m", "tests.integration.frameworks.crash_worker", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S,
        check=False,
    )  # fmt: skip
    assert done.returncode == -9, done.stderr  # SIGKILL, where the tool asked for it
    return done.stderr


def charges(service: Downstream) -> int:
    """How many charges the service applied."""
    return sum(service.ledger.applied.values())


def reclaim_of(settings: Settings, channel: str, op: str) -> Decision:
    """The decision that reclaimed ``op`` from the dead worker."""
    decisions = decisions_on(settings, partition_for(channel, settings.partitions))
    reclaims = [d for d in decisions if d.operation_id == op and d.outcome is Outcome.RECLAIMED]
    assert len(reclaims) == 1, reclaims
    return reclaims[0]


def reclaimed_from_the_dead_worker(settings: Settings, channel: str, op: str) -> None:
    """The rerun's reclaim names the attempt whose outcome it did not know: the dead one."""
    previous = reclaim_of(settings, channel, op).previous
    assert previous is not None
    assert (previous.epoch, previous.worker_id) == (1, WORKER_ID)


def audit_lists_the_unknown_outcome(
    settings: Settings, projector: RunningProjector, channel: str, op: str, reconciled: str | None
) -> None:
    """The audit of doubles lists the dead attempt's unknown outcome, as the rerun settled it:
    ``found`` when its reconcile hook found the effect, null (a possible double) without one."""
    partition = partition_for(channel, settings.partitions)
    last = max(d.source_offset for d in decisions_on(settings, partition) if d.operation_id == op)
    wait_for_projection(projector.projector, (partition, last))
    items = [i for i in suspected_duplicates(projector.store.cursor()) if i.operation_id == op]
    assert [(i.kind, i.stale_epoch, i.stale_worker_id) for i in items] == [
        ("unknown_outcome", 1, WORKER_ID)
    ]
    assert (items[0].settled, items[0].reconciled) == ("completed", reconciled)


def completion_of(settings: Settings, channel: str, op: str) -> Decision:
    """The decision that recorded ``op``'s completion."""
    decisions = decisions_on(settings, partition_for(channel, settings.partitions))
    done = [d for d in decisions if d.operation_id == op and d.kind is Kind.COMPLETE and d.changed]
    assert len(done) == 1, done
    return done[0]


async def rerun(
    settings: Settings, framework: str, url: str, channel: str, *, reconcile: bool
) -> Any:
    """The agent's rerun in this process, on a fresh client (it waits out the dead lease)."""
    client = LedgerClient(settings, worker_id="worker-rerun", timeouts=FAST)
    client.open()
    try:
        return await AGENTS[framework](ledger_run(client, channel, url, reconcile=reconcile), url)
    finally:
        client.close()


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_with_a_reconcile_hook_the_rerun_records_the_one_charge(
    framework: str, topics: Settings, projector: RunningProjector, payments: Downstream
) -> None:
    channel = f"checkout-{framework}"
    stderr = die_in_the_crash_window(topics, framework, payments.url, channel, reconcile=True)
    assert charges(payments) == 1
    assert "UnguardedToolWarning" not in stderr

    answer = await rerun(topics, framework, payments.url, channel, reconcile=True)

    assert charges(payments) == 1  # the hook found the charge: the tool did not run again
    assert "fx-1" in answer  # and the model was told the charge that happened
    op = operation_id(channel, "charge#1")
    reclaimed_from_the_dead_worker(topics, channel, op)
    audit_lists_the_unknown_outcome(topics, projector, channel, op, "found")
    done = completion_of(topics, channel, op)
    assert done.state is not None
    assert done.state.epoch == 2
    assert done.result is not None
    assert b'"charge_id":"fx-1"' in done.result  # the charge the service made, recorded


@pytest.mark.parametrize("framework", FRAMEWORKS)
async def test_without_one_the_adapter_warned_and_the_reclaim_names_the_dead_attempt(
    framework: str, topics: Settings, projector: RunningProjector, payments: Downstream
) -> None:
    channel = f"checkout-{framework}"
    stderr = die_in_the_crash_window(topics, framework, payments.url, channel, reconcile=False)
    assert "UnguardedToolWarning: oncelog: tool 'charge' is external and unguarded" in stderr
    assert "ToolPolicy(reconcile=...)" in stderr

    with pytest.warns(UnguardedToolWarning, match="'charge'"):
        await rerun(topics, framework, payments.url, channel, reconcile=False)

    # The double this issue is about: nothing stopped the second charge.
    assert charges(payments) == 2
    op = operation_id(channel, "charge#1")
    reclaimed_from_the_dead_worker(topics, channel, op)
    audit_lists_the_unknown_outcome(topics, projector, channel, op, None)


# --- MCP: mcp-server-git, a third-party server -------------------------------------------------


@pytest.mark.parametrize("shape", ["plain", "native"])
async def test_mcp_git_with_a_reconcile_hook_the_commit_is_made_once_and_recorded(
    shape: HookShape, topics: Settings, projector: RunningProjector, tmp_path: Path
) -> None:
    repo, channel = tmp_path / "repo", f"release-{shape}"
    new_repo(repo)
    die_in_the_crash_window(topics, "mcp", str(repo), channel, reconcile=True)
    assert commits(repo) == [MESSAGE, "start"]  # the commit happened before the crash
    sha = git(repo, "rev-parse", "HEAD").strip()

    client = LedgerClient(topics, worker_id="worker-rerun", timeouts=FAST)
    client.open()
    try:
        added, committed = await commit_agent(
            client, channel, str(repo), reconcile=shape, dies=False
        )
    finally:
        client.close()

    assert commits(repo) == [MESSAGE, "start"]  # no second commit
    assert isinstance(committed, CallToolResult)
    assert committed.content == [
        TextContent(type="text", text=f"Changes committed successfully with hash {sha}")
    ]
    assert not committed.is_error
    op = operation_id(channel, "git_commit#1")
    reclaimed_from_the_dead_worker(topics, channel, op)
    audit_lists_the_unknown_outcome(topics, projector, channel, op, "found")
    done = completion_of(topics, channel, op)
    assert done.result is not None
    assert sha.encode() in done.result  # the commit that happened is what the ledger recorded
    assert added.content  # git_add#1 was replayed, not run again


async def test_mcp_git_without_a_hook_the_adapter_warned_and_the_rerun_commits_again(
    topics: Settings, projector: RunningProjector, tmp_path: Path
) -> None:
    repo, channel = tmp_path / "repo", "release-unguarded"
    new_repo(repo)
    stderr = die_in_the_crash_window(topics, "mcp", str(repo), channel, reconcile=False)
    assert "tool 'git_commit' is external and unguarded" in stderr

    client = LedgerClient(topics, worker_id="worker-rerun", timeouts=FAST)
    client.open()
    try:
        with pytest.warns(UnguardedToolWarning, match="'git_commit'"):
            await commit_agent(client, channel, str(repo), reconcile=None, dies=False)
    finally:
        client.close()

    op = operation_id(channel, "git_commit#1")
    reclaimed_from_the_dead_worker(topics, channel, op)
    # The server's answer to the second git_commit is what got recorded (a second, empty
    # commit, or "nothing staged"), not the hash of the commit that happened.
    done = completion_of(topics, channel, op)
    assert done.result is not None
    first = git(repo, "log", "--format=%H", "--fixed-strings", f"--grep={MESSAGE}").split()[-1]
    assert first.encode() not in done.result
    audit_lists_the_unknown_outcome(topics, projector, channel, op, None)
