"""Several real ``oncelog serve`` processes in one consumer group, for scale-out tests."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from oncelog.errors import NoOwnerError
from oncelog.kafka.reader import topic_ends
from oncelog.projector import process
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.owners import GroupOwners, OwnerView
from oncelog.query.source import HttpSource
from oncelog.settings import Settings
from tests.integration.helpers import kafka


@dataclass
class Instance:
    """One ``serve`` process: its projector id, settings, log and process."""

    projector_id: str
    settings: Settings
    log: Path
    proc: subprocess.Popen[bytes]
    url: str = ""


@dataclass
class Fleet:
    """The group's instances; stopped (SIGTERM, then SIGKILL) by :meth:`stop`."""

    settings: Settings
    instances: list[Instance] = field(default_factory=list)

    def start(self, projector_id: str, tmp: Path, port: int, **env: str) -> Instance:
        """Start one instance (``port`` 0: any; its URL is learnt from the group)."""
        settings = self.settings.model_copy(
            update={"db_path": tmp / f"{projector_id}.duckdb", "http_port": port}
        )
        log = tmp / f"{projector_id}.log"
        environment = {
            **process.serve_env(settings),
            "ONCELOG_PROJECTOR_ID": projector_id,
            **{f"ONCELOG_{k.upper()}": v for k, v in env.items()},
        }
        proc = process.spawn(["-m", "oncelog", "serve"], log, environment)
        instance = Instance(projector_id, settings, log, proc)
        self.instances.append(instance)
        return instance

    def owners(self) -> GroupOwners:
        """A fresh owner source on the fleet's group (the coordinator's view)."""
        assert self.settings.bootstrap_servers is not None
        return GroupOwners(self.settings, self.settings.bootstrap_servers, ttl_s=0)

    def wait_stable(self, member_ids: set[str], timeout_s: float = 90) -> OwnerView:
        """Wait (bounded) until exactly ``member_ids`` share every partition; note their URLs."""
        owners = self.owners()
        deadline = time.monotonic() + timeout_s
        view: OwnerView | None = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                view = owners.refreshed()
            except NoOwnerError:
                view = None  # the group's coordinator is not ready yet
            if view is not None and _settled(view, member_ids):
                urls = {m.projector_id: m.url or "" for m in view.members}
                for instance in self.instances:
                    instance.url = urls.get(instance.projector_id, instance.url)
                return view
            time.sleep(0.1)  # the coordinator's state is polled; bounded by the deadline
        raise AssertionError(f"group never settled on {sorted(member_ids)}; last view {view}")

    def wait_folded(self, url: str, timeout_s: float = 60) -> None:
        """Wait (bounded) until the group's projection, asked through ``url``, reaches the log."""
        targets = topic_ends(kafka(self.settings), self.settings.requests_topic)
        wait_until_folded(self.source(url), targets, timeout_s)

    def source(self, url: str) -> HttpSource:
        """The CLI's query source on one instance."""
        return HttpSource(url, timeout_s=30, token=self.settings.http_token)

    def stop(self) -> None:
        """Stop every instance still running (a stopped one is continued first)."""
        for instance in self.instances:
            if instance.proc.poll() is None:
                instance.proc.send_signal(18)  # SIGCONT: a SIGSTOPped process ignores SIGTERM
                process.stop(instance.proc)

    def _check_alive(self) -> None:
        for instance in self.instances:
            code = instance.proc.poll()
            if code is not None and code != -9:  # only this test's SIGKILL may end one
                raise AssertionError(f"{instance.projector_id} died: {instance.log.read_text()}")


def _settled(view: OwnerView, member_ids: set[str]) -> bool:
    members = {m.projector_id for m in view.members}
    return view.stable and members == member_ids and len(view.owners) == view.partitions
