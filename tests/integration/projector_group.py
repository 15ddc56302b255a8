"""Several ``oncelog serve`` processes in one consumer group, for the scale-out tests.

Each member has its own projector id, DuckDB file and query port. The group's
assignment is read from the broker (``describe_consumer_groups``, the admin API: an
oracle independent of the owner lookup's ``DescribeGroups`` v0), never guessed: it
tells which member owns which partition of the requests topic.
"""

from __future__ import annotations

import subprocess
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient

from drills.faults.projector_entry import MODULE as KILLING_SERVE
from oncelog.identity.partitioner import partition_for
from oncelog.kafka.reader import read_to_end, topic_ends
from oncelog.net import free_port
from oncelog.producer.dispatch import Timeouts
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.projector.rebuild import count_partitions
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.source import HttpSource
from oncelog.schemas.codec import decode_decision, decode_snapshot
from oncelog.settings import Settings
from oncelog.waiting import poll_until

#: Short enough that a paused or killed member loses its partitions within seconds.
SESSION_TIMEOUT_MS = 1500
PATIENT = Timeouts(total_s=120.0, resend_after_s=2.0)
WAIT_S = 60.0


@dataclass
class Member:
    """One ``oncelog serve`` process of the group."""

    settings: Settings
    proc: subprocess.Popen[bytes]
    log: Path

    @property
    def name(self) -> str:
        """Its projector id, its ``group.instance.id`` in the group."""
        return self.settings.projector_id

    @property
    def db(self) -> Path:
        """Its own DuckDB file."""
        return self.settings.db_path

    @property
    def api(self) -> HttpSource:
        """Its query API."""
        return HttpSource(f"http://127.0.0.1:{self.settings.http_port}")


def member_settings(settings: Settings, name: str, workdir: Path) -> Settings:
    """``settings`` for member ``name``: its id, file and port; a short session."""
    return settings.model_copy(
        update={
            "projector_id": name,
            "db_path": workdir / f"{name}.duckdb",
            "http_port": free_port(),
            "group_session_timeout_ms": SESSION_TIMEOUT_MS,
        }
    )


def start_member(settings: Settings, name: str, workdir: Path) -> Member:
    """Start member ``name`` and wait (bounded) until its query API answers."""
    return start_members(settings, [name], workdir)[name]


def start_members(
    settings: Settings,
    names: list[str],
    workdir: Path,
    *,
    faults: Mapping[str, list[str]] | None = None,
) -> dict[str, Member]:
    """Start every member at once, then wait (bounded) until each query API answers.

    A member named in ``faults`` runs the same service with that fault hook of
    :mod:`drills.faults.projector_entry`, given as its options (``["--kill-on-sigusr1"]``:
    after that signal it SIGKILLs itself once its next batch is published and not yet
    committed; ``["--stop-on-sigusr2", path]``: it writes its next batch's request
    positions to ``path`` and SIGSTOPs itself before publishing them).
    """
    faults = faults or {}
    members: dict[str, Member] = {}
    for name in names:
        own = member_settings(settings, name, workdir)
        log = workdir / f"{name}.log"
        if name in faults:
            args = ["-m", KILLING_SERVE, *faults[name]]
            proc = process.spawn(args, log, process.serve_env(own))
        else:
            proc = process.start_serve(own, log)
        members[name] = Member(own, proc, log)
    try:
        for member in members.values():
            url = f"http://127.0.0.1:{member.settings.http_port}/healthz"
            process.wait_http(member.proc, url, member.log)
    except BaseException:
        for member in members.values():
            process.stop(member.proc)
        raise
    return members


def group_owners(settings: Settings) -> dict[int, str]:
    """Partition of the requests topic -> the ``group.instance.id`` that owns it now."""
    assert settings.bootstrap_servers is not None
    admin = AdminClient(settings.kafka_config(settings.bootstrap_servers))
    group = f"{settings.topic_prefix}.projector"
    description = admin.describe_consumer_groups([group])[group].result(timeout=30)
    topic = settings.requests_topic
    return {
        tp.partition: str(m.group_instance_id)
        for m in description.members
        for tp in m.assignment.topic_partitions
        if tp.topic == topic
    }


def wait_for_owners(
    settings: Settings, accept: Callable[[dict[int, str]], bool], what: str
) -> dict[int, str]:
    """Poll the group (bounded) until its assignment satisfies ``accept``; return it."""
    deadline = time.monotonic() + WAIT_S
    owners: dict[int, str] = {}
    while time.monotonic() < deadline:
        try:
            owners = group_owners(settings)
        except KafkaException:  # NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS: not yet
            owners = {}
        if accept(owners):
            return owners
        time.sleep(0.1)  # polling the group's state, bounded by the deadline
    raise AssertionError(f"the group never reached: {what}; last assignment {owners}")


def wait_stopped(proc: subprocess.Popen[bytes]) -> None:
    """Wait (bounded) until ``proc`` is stopped by a signal (state ``T`` in /proc)."""
    stat = Path(f"/proc/{proc.pid}/stat")

    def stopped() -> bool:
        assert proc.poll() is None, "exited instead of stopping"
        return stat.read_text().rpartition(")")[2].split()[0] == "T"

    if poll_until(time.monotonic() + WAIT_S, stopped):
        return
    raise AssertionError(f"process {proc.pid} never stopped")


def all_owned_by(settings: Settings, names: Iterable[str]) -> Callable[[dict[int, str]], bool]:
    """Every partition assigned, each to one of ``names``, and each of them owns some."""
    wanted = set(names)

    def accept(owners: dict[int, str]) -> bool:
        complete = len(owners) == settings.partitions
        return complete and set(owners.values()) == wanted

    return accept


def wait_owned_by(settings: Settings, *names: str) -> dict[int, str]:
    """Wait (bounded) until ``names`` own every partition between them; the assignment."""
    return wait_for_owners(settings, all_owned_by(settings, names), f"{names} own all")


def run_steps(settings: Settings, worker: str, channels: list[str], steps: range) -> None:
    """Claim and complete ``steps`` of every channel, as one client; result = the step."""
    with SyncLedgerClient(settings, worker_id=worker, timeouts=PATIENT) as client:
        for step in steps:
            for channel in channels:
                claim = client.claim_execution(channel, step=step, tool_name="t", params={})
                client.complete_execution(claim.execution, claim.claim_token, step)


def wait_folded(settings: Settings, members: dict[str, Member], owners: dict[int, str]) -> None:
    """Wait (bounded) until each owner committed its partitions up to their ends now."""
    assert settings.bootstrap_servers is not None
    ends = topic_ends(settings.kafka_config(settings.bootstrap_servers), settings.requests_topic)
    for name, member in members.items():
        targets = {p: end for p, end in ends.items() if owners.get(p) == name}
        wait_until_folded(member.api, targets, WAIT_S)


def owner_of(settings: Settings, owners: dict[int, str], channel: str) -> str:
    """The member that owns ``channel``'s partition."""
    return owners[partition_for(channel, settings.partitions)]


def channel_owned_by(settings: Settings, owners: dict[int, str], name: str) -> str:
    """A channel name whose partition member ``name`` owns in ``owners``."""
    candidates = (f"probe-{n}" for n in range(100 * settings.partitions))
    return next(c for c in candidates if owner_of(settings, owners, c) == name)


def by_request(value: bytes) -> object:
    """A decision's identity: the request it answers."""
    decision = decode_decision(value)
    return (decision.source_partition, decision.source_offset)


def by_version(value: bytes) -> object:
    """A snapshot's identity: its operation and version."""
    snapshot = decode_snapshot(value)
    return (snapshot.state.operation_id, snapshot.state.version)


def published(
    settings: Settings, topic: str, identity: Callable[[bytes], object]
) -> dict[object, list[bytes]]:
    """Every publication on ``topic`` per identity, in log order, read from the start."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    seen: dict[object, list[bytes]] = defaultdict(list)
    for p in range(count_partitions(kafka, topic)):
        for msg in read_to_end(kafka, topic, p, timeout_s=120):
            value = msg.value() or b""
            seen[identity(value)].append(value)
    return seen
