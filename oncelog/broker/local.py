"""A single-node KRaft Kafka broker run from the cached Maven jars.

The broker is a detached JVM. Its pid, ports and bootstrap address are recorded
in ``<data dir>/broker/broker.json`` so that ``start`` twice reuses it and
``stop`` finds it from another process.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from oncelog.broker.certs import ensure_certs
from oncelog.broker.cluster import LocalCluster
from oncelog.broker.kraft import (
    Jvm,
    Route,
    formatted,
    kill_pid,
    log_tail,
    new_cluster_id,
    pid_alive,
    port_free,
    server_properties,
    stop_pid,
    wait_for_metadata,
)
from oncelog.broker.secure import (
    ADMIN,
    client_settings,
    load_credentials,
    new_credentials,
    save_credentials,
    scram_arguments,
    secure_properties,
    write_private,
)
from oncelog.errors import BrokerError
from oncelog.net import free_port
from oncelog.settings import Settings

__all__ = [
    "BrokerInfo",
    "LocalBroker",
    "RunBroker",
    "broker_for_run",
    "resolve_bootstrap",
    "running_cluster_bootstrap",
    "server_properties",
]


@dataclass(frozen=True)
class BrokerInfo:
    """What a running local broker recorded about itself."""

    pid: int
    bootstrap: str
    controller_port: int
    started_in_s: float
    secure: bool = False


class LocalBroker:
    """Start, find and stop the embedded broker described by ``settings``.

    ``secure`` starts it with SASL users and an authorizer (see
    :mod:`oncelog.broker.secure`); the default is the fast, open, loopback broker.
    ``routes`` are further listeners reached through proxies (the network drill's);
    ``properties`` are further ``server.properties`` lines (a drill's broker settings).
    """

    def __init__(
        self,
        settings: Settings,
        data_dir: Path | None = None,
        *,
        secure: bool = False,
        routes: Sequence[Route] = (),
        properties: Sequence[str] = (),
    ) -> None:
        self._settings = settings
        self._properties = tuple(properties)
        self.secure = secure
        self._routes = tuple(routes)
        self.dir = (data_dir or settings.data_dir) / "broker"
        self._info_path = self.dir / "broker.json"
        self.log_path = self.dir / "broker.log"

    def status(self) -> BrokerInfo | None:
        """The running broker, or None when none is running here."""
        if not self._info_path.exists():
            return None
        info = BrokerInfo(**json.loads(self._info_path.read_text()))
        return info if pid_alive(info.pid) else None

    def start(self) -> BrokerInfo:
        """Start the broker, or return the one already running; wait until it answers."""
        running = self.status()
        if running is not None:
            return self._reuse(running)
        _refuse_if_cluster_runs(self._settings, self.dir.parent)
        jvm = Jvm.for_settings(self._settings)
        begin = time.monotonic()
        port, controller = self._ports()
        props = self._write_config(port, controller)
        if not self._formatted():
            users = scram_arguments(load_credentials(self.dir)) if self.secure else []
            formatted(jvm.format_storage(props, new_cluster_id(), users), self.dir)
        pid = jvm.launch(self._settings.broker_heap, props, self.log_path)
        info = BrokerInfo(pid, f"127.0.0.1:{port}", controller, 0.0, self.secure)
        self._info_path.write_text(json.dumps(asdict(info)))
        try:
            self._wait(info)
        except BrokerError:
            self.stop()
            raise
        took = time.monotonic() - begin
        info = BrokerInfo(pid, info.bootstrap, controller, took, self.secure)
        self._info_path.write_text(json.dumps(asdict(info)))
        return info

    def _reuse(self, running: BrokerInfo) -> BrokerInfo:
        """The running broker, when it is of the asked kind (secure or not) and answers."""
        if running.secure != self.secure:
            mode = "secure" if running.secure else "plaintext"
            raise BrokerError(
                f"a {mode} broker already runs at {running.bootstrap}; "
                "stop it first (`oncelog broker stop`)"
            )
        self._wait(running)
        return running

    def stop(self, *, graceful: bool = True) -> bool:
        """SIGTERM, a bounded wait, then SIGKILL. False when nothing was running.

        ``graceful=False`` sends SIGKILL at once: for a broker whose data nobody keeps
        (a test session's), whose orderly shutdown of every log would only cost time.
        """
        info = self.status()
        self._info_path.unlink(missing_ok=True)
        if info is None:
            return False
        if graceful:
            stop_pid(info.pid)
        else:
            kill_pid(info.pid)
        return True

    def client_settings(self, user: str = ADMIN) -> Settings:
        """Settings that log in as ``user`` on this (secure, running) broker."""
        info = self.status()
        if info is None or not info.secure:
            raise BrokerError(f"no secure local broker runs in {self.dir}")
        credentials = load_credentials(self.dir)
        if user not in credentials:
            raise BrokerError(f"the secure local broker has no user {user!r}")
        update = {"bootstrap_servers": info.bootstrap}
        settings = self._settings.model_copy(update=update)
        return client_settings(settings, user, credentials[user], self.ca)

    @property
    def ca(self) -> Path:
        """The CA certificate that signs the secure broker's TLS (``ssl.ca.location``)."""
        return self.dir / "tls" / "ca.pem"

    def _formatted(self) -> bool:
        return (self.dir / "logs" / "meta.properties").exists()

    def _wait(self, info: BrokerInfo) -> None:
        """Wait until the broker answers a metadata request, as admin when secure."""
        conf: dict[str, Any] = {"bootstrap.servers": info.bootstrap}
        if info.secure:
            password = load_credentials(self.dir)[ADMIN]
            admin = client_settings(self._settings, ADMIN, password, self.ca)
            conf = admin.kafka_config(info.bootstrap)
        timeout_s = self._settings.broker_start_timeout_s
        wait_for_metadata(conf, timeout_s, lambda: self.status() is not None, self.log_tail)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the broker's log, for error messages."""
        return log_tail(self.log_path, lines)

    def _ports(self) -> tuple[int, int]:
        """The ports of the last run when still free, so a restart keeps its address."""
        path = self.dir / "ports.json"
        if path.exists():
            port, controller = json.loads(path.read_text())
            if port_free(port) and port_free(controller):
                return int(port), int(controller)
        port, controller = free_port(), free_port()
        self.dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([port, controller]))
        return port, controller

    def _write_config(self, port: int, controller: int) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        props = self.dir / "server.properties"
        if not self.secure:
            props.write_text(
                server_properties(
                    self.dir, port, controller, routes=self._routes, extra=self._properties
                )
            )
            return props
        # SCRAM users are created when the storage is formatted: a restart keeps them.
        if self._formatted():
            credentials = load_credentials(self.dir)
        else:
            credentials = new_credentials(self._settings)
            save_credentials(self.dir, credentials)
        lines = secure_properties(credentials, ensure_certs(self.dir / "tls"))
        # The JAAS config inside holds the admin's password: owner-only, like the credentials.
        text = server_properties(
            self.dir, port, controller, lines, routes=self._routes, extra=self._properties
        )
        write_private(props, text)
        return props


def _refuse_if_cluster_runs(settings: Settings, data_dir: Path) -> None:
    cluster = LocalCluster(settings, data_dir).status()
    if cluster is not None:
        raise BrokerError(
            f"the local cluster runs at {cluster.bootstrap}; stop it first (`oncelog broker stop`)"
        )


def running_cluster_bootstrap(settings: Settings) -> str | None:
    """The bootstrap of the running local cluster (``broker start --nodes 3``), if any."""
    info = LocalCluster(settings).status()
    return info.bootstrap if info is not None else None


def resolve_bootstrap(settings: Settings, *, start: bool = False) -> str:
    """The broker to talk to: ``ONCELOG_BOOTSTRAP_SERVERS``, else the local broker or cluster.

    With an external broker configured nothing is started. Otherwise the local
    broker, or the local cluster, must be running, or a broker is started when
    ``start`` is true.
    """
    if settings.bootstrap_servers:
        return settings.bootstrap_servers
    broker = LocalBroker(settings)
    info = broker.status()
    if info is None and (cluster := running_cluster_bootstrap(settings)) is not None:
        return cluster
    if info is None and start:
        info = broker.start()
    if info is None:
        raise BrokerError(
            "no broker: set ONCELOG_BOOTSTRAP_SERVERS or run `oncelog broker start` first"
        )
    return info.bootstrap


@dataclass(frozen=True)
class RunBroker:
    """The broker one run (the demo, a drill, a bench) talks to, and who started it."""

    bootstrap: str
    started_here: bool


@contextlib.contextmanager
def broker_for_run(settings: Settings) -> Iterator[RunBroker]:
    """The configured broker, else the running local one (or cluster), else a local one
    started now.

    On exit it stops the local broker only when this call started it: a configured
    broker, or a local one that was already running (a shell's ``make broker``, another
    run's), stays up, and a JVM this run started does not outlive it.
    """
    external = settings.bootstrap_servers or running_cluster_bootstrap(settings)
    if external:
        yield RunBroker(external, started_here=False)
        return
    broker = LocalBroker(settings)
    started_here = broker.status() is None
    info = broker.start()
    try:
        yield RunBroker(info.bootstrap, started_here)
    finally:
        if started_here:
            broker.stop()
