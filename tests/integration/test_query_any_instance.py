"""Queries through any instance: real ``oncelog serve`` processes in one group, a real broker."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.errors import LedgerError
from oncelog.identity.partitioner import partition_for
from oncelog.net import free_port
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.effects import bound
from oncelog.query.owners import OwnerView
from oncelog.query.routing import FORWARDED_BY
from oncelog.query.source import HttpSource
from oncelog.query.ui.pages import run_href
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics
from tests.integration.fleet import Fleet
from tests.integration.helpers import wait_until_log_time_passes
from tests.integration.projector_group import group_owners

pytestmark = pytest.mark.kafka

TOKEN = "fleet-token-" + "x" * 20
FORWARD_TIMEOUT_S = 1.0
SCHEDULING_S = 3.0


@pytest.fixture
def fleet_settings(settings: Settings) -> Settings:
    """Six partitions, a shared bearer token, the topics created."""
    fleet = settings.model_copy(update={"partitions": 6, "http_token": SecretStr(TOKEN)})
    assert fleet.bootstrap_servers is not None
    create_topics(admin_client(fleet, fleet.bootstrap_servers), ledger_topics(fleet))
    return fleet


@pytest.fixture
def fleet(fleet_settings: Settings) -> Iterator[Fleet]:
    running = Fleet(fleet_settings)
    try:
        yield running
    finally:
        running.stop()


def _owner(view: OwnerView, channel: str) -> str:
    owner = view.owner_of(partition_for(channel, view.partitions))
    assert owner is not None
    return owner.projector_id


def _two_per_partition(prefix: str, partitions: int) -> list[str]:
    """Channel names, two on each partition of the requests topic."""
    names = (f"{prefix}-{n}" for n in range(10_000))
    chosen: dict[int, list[str]] = {p: [] for p in range(partitions)}
    while any(len(c) < 2 for c in chosen.values()):
        name = next(names)
        on = chosen[partition_for(name, partitions)]
        if len(on) < 2:
            on.append(name)
    return sorted(name for pair in chosen.values() for name in pair)


def _complete_steps(settings: Settings, channels: list[str]) -> None:
    """Step 1 of every channel completed (result: the channel), step 2 claimed on even ones."""
    with SyncLedgerClient(settings, timeouts=Timeouts(60, 5)) as client:
        for n, channel in enumerate(channels):
            claim = client.claim_execution(
                channel, step=1, tool_name="t", params={"n": n}, effect="pure"
            )
            client.complete_execution(claim.execution, claim.claim_token, {"of": channel})
            if n % 2 == 0:
                client.claim_execution(channel, step=2, tool_name="t", params={}, effect="external")


def _suspected_duplicate(settings: Settings, channel: str) -> None:
    """A completion by a fenced token: the lease ran out and another worker took over."""
    first = SyncLedgerClient(settings, worker_id="w-slow", timeouts=Timeouts(60, 5))
    other = SyncLedgerClient(settings, worker_id="w-next", timeouts=Timeouts(60, 5))
    with first, other:
        claim = first.claim_execution(channel, "charge", tool_name="t", params={}, lease_seconds=1)
        wait_until_log_time_passes(claim.execution.lease_deadline_ms)
        assert other.claim_execution(channel, "charge", tool_name="t", params={}).status == (
            "reclaimed"
        )
        with pytest.raises(LedgerError):
            first.complete_execution(claim.execution, claim.claim_token, "twice?")


def test_every_channel_answers_through_every_instance(fleet: Fleet, tmp_path: Path) -> None:
    settings = fleet.settings
    fleet.start("p0", tmp_path, free_port())
    fleet.start("p1", tmp_path, free_port())
    fleet.start("p2", tmp_path, 0)  # its real port reaches the group before it joins
    view = fleet.wait_stable({"p0", "p1", "p2"})
    # The owner lookup (DescribeGroups v0, ids from client.id) agrees with the admin API's
    # describe_consumer_groups (group.instance.id and assignment), which it no longer calls.
    assert {p: m.projector_id for p, m in view.owners.items()} == group_owners(settings)
    urls = [i.url for i in fleet.instances]
    assert all(u.startswith("http://127.0.0.1:") and not u.endswith(":0") for u in urls), urls
    channels = _two_per_partition("ch", 6)  # so that every member owns some of them
    assert len({view.owner_of(partition_for(c, 6)) for c in channels}) == 3
    _complete_steps(settings, channels)
    by_owner = {_owner(view, f"dup-{n}"): f"dup-{n}" for n in range(30)}
    dup_channels = sorted(by_owner.values())[:2]  # on partitions of two different members
    for channel in dup_channels:
        _suspected_duplicate(settings, channel)
    fleet.wait_folded(urls[2])

    for url in urls:
        _answers_everything(fleet.source(url), channels, dup_channels)
        _timeline_pages_show_the_straggler(url, dup_channels)


def _timeline_pages_show_the_straggler(url: str, dup_channels: list[str]) -> None:
    """Each member's /ui/runs page, for channels it does and does not own (built from /v1)."""
    for channel in dup_channels:
        page = httpx.get(url + run_href(channel), headers={"Authorization": f"Bearer {TOKEN}"})
        assert page.status_code == 200, page.text[-500:]
        # The reclaim of the slow worker's silent attempt is marked as an unknown outcome.
        for kind in ("claim", "unknown", "fenced"):
            assert page.text.count(f'class="mark" data-kind="{kind}"') == 1, (url, channel, kind)
        # The next holder has not settled yet: the fenced completion is a possible double.
        assert "possible duplicate effect" in page.text


def _answers_everything(source: HttpSource, channels: list[str], dup_channels: list[str]) -> None:
    """Every question about every channel, answered as one instance holding it all would."""
    for n, channel in enumerate(channels):
        done = source.status(channel, "1", None)
        assert (done.status, done.result) == ("completed", {"of": channel}), channel
        step_2 = "claimed" if n % 2 == 0 else "absent"
        assert source.status(channel, "2", None).status == step_2
        effects = source.side_effects(channel, bound("from", offset=0), bound("to", offset=99), 9)
        assert effects.external == (["step-2"] if n % 2 == 0 else [])
        kinds = [e.kind for e in source.timeline(channel, 100)]
        assert kinds == ["claim", "complete"] + (["claim"] if n % 2 == 0 else [])
        history = source.history(done.operation_id, 100)
        assert [v.version for v in history] == [1, 2]
        assert history[0].valid_to_offset == history[1].valid_from_offset
    duplicates = source.duplicates(100)
    # Each straggler is listed twice (docs/spec.md §4): the reclaim left the slow worker's
    # outcome unknown, then its late completion proved the double.
    kinds = ["stale_completion", "unknown_outcome"]
    assert sorted((d.channel_id, d.kind) for d in duplicates) == [
        (c, k) for c in dup_channels for k in kinds
    ]
    assert duplicates == sorted(duplicates, key=lambda d: (d.log_time_ms, d.partition, d.offset))
    assert sorted(source.positions().next_offsets) == list(range(6))


def test_the_cli_works_unchanged_through_any_instance(
    fleet: Fleet, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet.start("p0", tmp_path, free_port())
    fleet.start("p1", tmp_path, free_port())
    view = fleet.wait_stable({"p0", "p1"})
    channels = _two_per_partition("cli", 6)
    _complete_steps(fleet.settings, channels)
    fleet.wait_folded(fleet.instances[0].url)
    monkeypatch.setenv("ONCELOG_HTTP_TOKEN", TOKEN)
    runner = CliRunner()
    for instance in fleet.instances:
        for channel in channels:
            result = runner.invoke(app, ["status", channel, "1", "--url", instance.url, "--json"])
            assert result.exit_code == 0, result.output
            assert json.loads(result.output)["result"] == {"of": channel}
    # A forwarded request is answered where it lands, never forwarded again: no loop.
    channel = next(c for c in channels if _owner(view, c) == "p1")
    stranger = fleet.instances[0].url
    headers = {"Authorization": f"Bearer {TOKEN}", FORWARDED_BY: "p1"}
    local = httpx.get(f"{stranger}/v1/status/{channel}/1", headers=headers, timeout=10).json()
    assert local["status"] == "absent"  # p0's own file: it never folded p1's partition
    # Without the token nothing is forwarded: the guard answers first.
    refused = httpx.get(f"{stranger}/v1/status/{channel}/1", timeout=10)
    assert refused.status_code == 401


def _owner_unavailable(call: Callable[[], object], owner: str, url: str) -> float:
    """Run ``call``; it must fail with ``owner_unavailable`` naming ``owner`` and ``url``."""
    started = time.monotonic()
    with pytest.raises(LedgerError, match="owner_unavailable") as info:
        call()
    assert owner in info.value.message
    assert url in info.value.message
    return time.monotonic() - started


def test_a_stopped_or_killed_owner_is_named_in_a_503(fleet: Fleet, tmp_path: Path) -> None:
    timeout = {"http_forward_timeout_s": str(FORWARD_TIMEOUT_S)}
    p0 = fleet.start("p0", tmp_path, free_port(), **timeout)
    p1 = fleet.start("p1", tmp_path, free_port(), **timeout)
    view = fleet.wait_stable({"p0", "p1"})
    channels = _two_per_partition("stop", 6)
    _complete_steps(fleet.settings, channels)
    fleet.wait_folded(p0.url)
    theirs = [c for c in channels if _owner(view, c) == "p1"]
    assert theirs
    source = fleet.source(p0.url)
    # The 503 path (query/routing.py): the forward to the owner, then one fresh
    # describe of the group (query/owners.py), each bounded by http_forward_timeout_s;
    # SCHEDULING_S is the rest, two processes and a broker on a shared 2-core machine.
    bound = 2 * FORWARD_TIMEOUT_S + SCHEDULING_S

    p1.proc.send_signal(signal.SIGSTOP)
    try:
        took = _owner_unavailable(lambda: source.status(theirs[0], "1", None), "p1", p1.url)
        assert took < bound
        took = _owner_unavailable(lambda: source.timeline(theirs[0], 10), "p1", p1.url)
        assert took < bound
    finally:
        p1.proc.send_signal(signal.SIGCONT)
    assert source.status(theirs[0], "1", None).status == "completed"

    p1.proc.send_signal(signal.SIGKILL)
    p1.proc.wait(timeout=30)
    took = _owner_unavailable(lambda: source.status(theirs[0], "1", None), "p1", p1.url)
    assert took < bound
    # Once the coordinator drops the dead member, its partitions are restored on p0.
    fleet.wait_stable({"p0"})
    fleet.wait_folded(p0.url)
    for channel in channels:
        assert source.status(channel, "1", None).result == {"of": channel}
