"""A single-node KRaft Kafka broker run from the cached Maven jars.

The broker is a detached JVM. Its pid, ports and bootstrap address are recorded
in ``<data dir>/broker/broker.json`` so that ``start`` twice reuses it and
``stop`` finds it from another process.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from oncelog.broker.jars import ensure_jars, log4j_config
from oncelog.broker.java import find_java
from oncelog.broker.secure import (
    ADMIN,
    PROTOCOL,
    client_settings,
    load_credentials,
    new_credentials,
    save_credentials,
    secure_properties,
    write_private,
)
from oncelog.errors import BrokerError
from oncelog.net import free_port
from oncelog.settings import Settings

_STOP_WAIT_S = 20.0


@dataclass(frozen=True)
class BrokerInfo:
    """What a running local broker recorded about itself."""

    pid: int
    bootstrap: str
    controller_port: int
    started_in_s: float
    secure: bool = False


def _port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Like the JVM's server sockets: a port in TIME_WAIT after our own stop is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child of ours still answers kill(0); reap it if it is one.
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def server_properties(
    data: Path, port: int, controller_port: int, secure_lines: list[str] | None = None
) -> str:
    """The combined-mode, single-node ``server.properties``.

    With ``secure_lines`` (see :func:`oncelog.broker.secure.secure_properties`) the
    broker listener is ``SASL_PLAINTEXT`` instead of ``PLAINTEXT``.
    """
    listener = PROTOCOL if secure_lines is not None else "PLAINTEXT"
    return "\n".join(
        [
            "process.roles=broker,controller",
            "node.id=1",
            f"listeners={listener}://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}",
            f"advertised.listeners={listener}://127.0.0.1:{port}",
            "controller.listener.names=CONTROLLER",
            f"inter.broker.listener.name={listener}",
            f"listener.security.protocol.map={listener}:{listener},CONTROLLER:PLAINTEXT",
            f"controller.quorum.voters=1@127.0.0.1:{controller_port}",
            f"log.dirs={data / 'logs'}",
            "num.partitions=1",
            # One broker: every internal topic must live with a single replica.
            "offsets.topic.replication.factor=1",
            "offsets.topic.num.partitions=6",
            "transaction.state.log.replication.factor=1",
            "transaction.state.log.min.isr=1",
            "share.coordinator.state.topic.replication.factor=1",
            "share.coordinator.state.topic.min.isr=1",
            "group.initial.rebalance.delay.ms=0",
            # Tests pause and kill projectors; a short session (ONCELOG_GROUP_SESSION_TIMEOUT_MS)
            # lets the group move their partitions within a second or two.
            "group.min.session.timeout.ms=500",
            # Let compaction react within a second on small test segments.
            "log.cleaner.backoff.ms=200",
            "auto.create.topics.enable=false",
            *(secure_lines or []),
            "",
        ]
    )


class LocalBroker:
    """Start, find and stop the embedded broker described by ``settings``.

    ``secure`` starts it with SASL users and an authorizer (see
    :mod:`oncelog.broker.secure`); the default is the fast, open, loopback broker.
    """

    def __init__(
        self, settings: Settings, data_dir: Path | None = None, *, secure: bool = False
    ) -> None:
        self._settings = settings
        self.secure = secure
        self.dir = (data_dir or settings.data_dir) / "broker"
        self._info_path = self.dir / "broker.json"
        self.log_path = self.dir / "broker.log"

    def status(self) -> BrokerInfo | None:
        """The running broker, or None when none is running here."""
        if not self._info_path.exists():
            return None
        info = BrokerInfo(**json.loads(self._info_path.read_text()))
        return info if _pid_alive(info.pid) else None

    def start(self) -> BrokerInfo:
        """Start the broker, or return the one already running; wait until it answers."""
        running = self.status()
        if running is not None:
            return self._reuse(running)
        java = find_java(self._settings.java_home)
        libs = ensure_jars(self._settings.cache_dir)
        begin = time.monotonic()
        port, controller = self._ports()
        props = self._write_config(port, controller)
        classpath = f"{libs}/*"
        log4j = f"-Dlog4j2.configurationFile={log4j_config(self._settings.cache_dir)}"
        if not (self.dir / "logs" / "meta.properties").exists():
            self._format(java, classpath, log4j, props)
        heap = self._settings.broker_heap
        cmd = [str(java), f"-Xmx{heap}", f"-Xms{heap}", "-XX:+UseG1GC", log4j]
        cmd += ["-cp", classpath, "kafka.Kafka", str(props)]
        with self.log_path.open("ab") as log:
            proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True,
            )  # fmt: skip
        info = BrokerInfo(proc.pid, f"127.0.0.1:{port}", controller, 0.0, self.secure)
        self._info_path.write_text(json.dumps(asdict(info)))
        try:
            self._wait(info)
        except BrokerError:
            self.stop()
            raise
        took = time.monotonic() - begin
        info = BrokerInfo(proc.pid, info.bootstrap, controller, took, self.secure)
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

    def stop(self) -> bool:
        """SIGTERM, a bounded wait, then SIGKILL. False when nothing was running."""
        info = self.status()
        self._info_path.unlink(missing_ok=True)
        if info is None:
            return False
        with contextlib.suppress(ProcessLookupError):
            os.kill(info.pid, signal.SIGTERM)
        deadline = time.monotonic() + _STOP_WAIT_S
        while _pid_alive(info.pid):
            if time.monotonic() > deadline:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(info.pid, signal.SIGKILL)
                break
            time.sleep(0.1)  # polling a foreign pid: there is no position to wait on
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
        return client_settings(self._settings.model_copy(update=update), user, credentials[user])

    def _wait(self, info: BrokerInfo) -> None:
        """Wait until the broker answers a metadata request, as admin when secure."""
        conf: dict[str, Any] = {"bootstrap.servers": info.bootstrap}
        if info.secure:
            admin = client_settings(self._settings, ADMIN, load_credentials(self.dir)[ADMIN])
            conf = admin.kafka_config(info.bootstrap)
        _wait_for_metadata(conf, self._settings.broker_start_timeout_s, self)

    def log_tail(self, lines: int = 40) -> str:
        """The last lines of the broker's log, for error messages."""
        if not self.log_path.exists():
            return "(no broker log)"
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def _ports(self) -> tuple[int, int]:
        """The ports of the last run when still free, so a restart keeps its address."""
        path = self.dir / "ports.json"
        if path.exists():
            port, controller = json.loads(path.read_text())
            if _port_free(port) and _port_free(controller):
                return int(port), int(controller)
        port, controller = free_port(), free_port()
        self.dir.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps([port, controller]))
        return port, controller

    def _write_config(self, port: int, controller: int) -> Path:
        self.dir.mkdir(parents=True, exist_ok=True)
        props = self.dir / "server.properties"
        if not self.secure:
            props.write_text(server_properties(self.dir, port, controller))
            return props
        credentials = new_credentials(self._settings)
        save_credentials(self.dir, credentials)
        # The JAAS config inside holds every password: owner-only, like the credentials.
        text = server_properties(self.dir, port, controller, secure_properties(credentials))
        write_private(props, text)
        return props

    def _format(self, java: Path, classpath: str, log4j: str, props: Path) -> None:
        tool = [str(java), log4j, "-cp", classpath, "kafka.tools.StorageTool"]
        uuid = subprocess.run(
            [*tool, "random-uuid"], capture_output=True, text=True, check=False
        )  # fmt: skip
        cluster_id = uuid.stdout.strip().splitlines()[-1] if uuid.stdout.strip() else ""
        fmt = subprocess.run(
            [*tool, "format", "-t", cluster_id, "-c", str(props)],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        if uuid.returncode != 0 or fmt.returncode != 0:
            out = (uuid.stderr + fmt.stdout + fmt.stderr)[-2000:]
            raise BrokerError(f"formatting KRaft storage in {self.dir} failed:\n{out}")


def _wait_for_metadata(conf: dict[str, Any], timeout_s: float, broker: LocalBroker) -> None:
    # Imported here so `oncelog broker status` does not load librdkafka.
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415

    bootstrap = conf["bootstrap.servers"]
    admin = AdminClient({**conf, "log_level": 0})
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        info = broker.status()
        if info is None:
            break
        try:
            admin.list_topics(timeout=min(2.0, max(0.1, deadline - time.monotonic())))
            return
        except Exception as exc:  # any failure means "not answering yet"
            last = exc
    raise BrokerError(
        f"the local broker at {bootstrap} did not answer a metadata request within "
        f"{timeout_s:.0f}s (last error: {last}). Broker log tail:\n{broker.log_tail()}"
    )


def resolve_bootstrap(settings: Settings, *, start: bool = False) -> str:
    """The broker to talk to: ``ONCELOG_BOOTSTRAP_SERVERS``, else the local broker.

    With an external broker configured nothing is started. Otherwise the local
    broker must be running, or is started when ``start`` is true.
    """
    if settings.bootstrap_servers:
        return settings.bootstrap_servers
    broker = LocalBroker(settings)
    info = broker.start() if start else broker.status()
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
    """The configured broker, else the running local one, else a local one started now.

    On exit it stops the local broker only when this call started it: a configured
    broker, or a local one that was already running (a shell's ``make broker``, another
    run's), stays up, and a JVM this run started does not outlive it.
    """
    if settings.bootstrap_servers:
        yield RunBroker(settings.bootstrap_servers, started_here=False)
        return
    broker = LocalBroker(settings)
    started_here = broker.status() is None
    info = broker.start()
    try:
        yield RunBroker(info.bootstrap, started_here)
    finally:
        if started_here:
            broker.stop()
