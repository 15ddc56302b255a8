"""The pieces of a local KRaft node: its ``server.properties``, storage, JVM and waits.

Shared by the single broker (:mod:`oncelog.broker.local`) and the three-node cluster
(:mod:`oncelog.broker.cluster`): both run ``kafka.Kafka`` from the cached Maven jars as
detached JVMs on loopback.
"""

from __future__ import annotations

import base64
import contextlib
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oncelog.broker.jars import ensure_jars, log4j_config
from oncelog.broker.java import find_java
from oncelog.broker.secure import PROTOCOL
from oncelog.errors import BrokerError
from oncelog.settings import Settings
from oncelog.waiting import poll_until

STOP_WAIT_S = 20.0


@dataclass(frozen=True)
class Jvm:
    """How to run Kafka's classes: the java binary, the classpath and the log4j option."""

    java: Path
    classpath: str
    log4j: str

    @classmethod
    def for_settings(cls, settings: Settings) -> Jvm:
        """Find Java and the cached jars (fetched once with Maven when missing)."""
        java = find_java(settings.java_home)
        libs = ensure_jars(settings.cache_dir)
        log4j = f"-Dlog4j2.configurationFile={log4j_config(settings.cache_dir)}"
        return cls(java, f"{libs}/*", log4j)

    def launch(
        self, heap: str, props: Path, log_path: Path, env: Mapping[str, str] | None = None
    ) -> int:
        """Start ``kafka.Kafka props`` detached (own session), appending to ``log_path``;
        ``env`` adds variables to the JVM's environment (a drill's clock fault)."""
        # The whole heap is touched at start: the process's RSS is then its footprint from
        # the first minute, and a growth past it is a growth, not G1 reaching new regions.
        cmd = [str(self.java), f"-Xmx{heap}", f"-Xms{heap}", "-XX:+AlwaysPreTouch"]
        cmd += ["-XX:+UseG1GC", self.log4j]
        cmd += ["-cp", self.classpath, "kafka.Kafka", str(props)]
        with log_path.open("ab") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
                env=None if env is None else {**os.environ, **env},
            )
        return proc.pid

    def format_storage(
        self, props: Path, cluster_id: str, extra: Sequence[str] = ()
    ) -> subprocess.Popen[str]:
        """Start formatting the KRaft storage of ``props`` (``extra``: further options, the
        SCRAM users); :func:`formatted` waits for it."""
        tool = [str(self.java), self.log4j, "-cp", self.classpath, "kafka.tools.StorageTool"]
        return subprocess.Popen(
            [*tool, "format", "-t", cluster_id, "-c", str(props), *extra],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )


def formatted(proc: subprocess.Popen[str], where: Path) -> None:
    """Wait for a :meth:`Jvm.format_storage` run; BrokerError with its output on failure."""
    out, _ = proc.communicate()
    if proc.returncode != 0:
        raise BrokerError(f"formatting KRaft storage in {where} failed:\n{out[-2000:]}")


def new_cluster_id() -> str:
    """A KRaft cluster id: 16 random bytes, URL-safe base64 without padding (Kafka's Uuid).

    Never one that starts with ``-``: the storage tool would read it as an option
    (``--cluster-id: expected one argument``), one format in 64; Kafka's own
    ``Uuid.randomUuid`` draws again in that case too.
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


def port_free(port: int) -> bool:
    """Whether ``port`` can be bound on loopback now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        # Like the JVM's server sockets: a port in TIME_WAIT after our own stop is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
        return True


def pid_alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie child of ours is reaped and counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    with contextlib.suppress(ChildProcessError):
        done, _ = os.waitpid(pid, os.WNOHANG)
        if done == pid:
            return False
    return True


def signal_pid(pid: int, signum: int) -> None:
    """Send ``signum`` to ``pid``; a process already gone is not an error."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signum)


def stop_pid(pid: int, wait_s: float = STOP_WAIT_S) -> None:
    """SIGTERM, a bounded wait, then SIGKILL."""
    signal_pid(pid, signal.SIGTERM)
    # Polling a foreign pid: there is no position to wait on.
    if not poll_until(time.monotonic() + wait_s, lambda: not pid_alive(pid), pause_s=0.1):
        kill_pid(pid)


def kill_pid(pid: int, wait_s: float = 10.0) -> None:
    """SIGKILL and wait (bounded) until the process is gone."""
    signal_pid(pid, signal.SIGKILL)
    poll_until(time.monotonic() + wait_s, lambda: not pid_alive(pid))  # reaped in ms


def log_tail(path: Path, lines: int = 40) -> str:
    """The last lines of a node's log, for error messages."""
    if not path.exists():
        return f"(no log at {path})"
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@dataclass(frozen=True)
class Quorum:
    """Who this node is, the controller voters, and the replication of internal topics."""

    node_id: int = 1
    voters: str | None = None  # "id@host:port,...": unset, this node alone
    replicas: int = 1


@dataclass(frozen=True)
class Route:
    """A further listener that clients reach through a proxy (the network drill's).

    The broker listens on ``port`` and advertises ``advertised``, the proxy's address:
    a client that bootstraps through the proxy learns the proxy's address for every
    broker from the metadata, so each of its connections goes through it.
    """

    name: str  # the listener's name, e.g. CLIENTS
    port: int
    advertised: str  # host:port of the proxy in front of it


def server_properties(
    data: Path,
    port: int,
    controller_port: int,
    secure_lines: list[str] | None = None,
    quorum: Quorum | None = None,
    *,
    routes: Sequence[Route] = (),
    inter_broker: str | None = None,
    extra: Sequence[str] = (),
) -> str:
    """A combined-mode (broker and controller) ``server.properties``.

    Alone (no ``quorum``) the node is the single-node broker with one replica of every
    internal topic. In a cluster, ``quorum`` names the voters and the replica count
    (3: internal topics get ``min.insync.replicas=2``, so do new topics by default).
    With ``secure_lines`` (see :func:`oncelog.broker.secure.secure_properties`) the
    broker listener is ``SASL_SSL`` instead of ``PLAINTEXT``. Each of ``routes``
    adds a listener of that protocol, advertised at its proxy; ``inter_broker`` names the
    one brokers replicate over (default: the broker listener). ``extra`` lines come last:
    a drill's own broker settings (a later line wins over an earlier one).
    """
    quorum = quorum or Quorum()
    listener = PROTOCOL if secure_lines is not None else "PLAINTEXT"
    voters = quorum.voters or f"{quorum.node_id}@127.0.0.1:{controller_port}"
    listens = "".join(f",{r.name}://127.0.0.1:{r.port}" for r in routes)
    advertised = "".join(f",{r.name}://{r.advertised}" for r in routes)
    protocols = "".join(f",{r.name}:{listener}" for r in routes)
    return "\n".join(
        [
            "process.roles=broker,controller",
            f"node.id={quorum.node_id}",
            f"listeners={listener}://127.0.0.1:{port},CONTROLLER://127.0.0.1:{controller_port}"
            + listens,
            f"advertised.listeners={listener}://127.0.0.1:{port}{advertised}",
            "controller.listener.names=CONTROLLER",
            f"inter.broker.listener.name={inter_broker or listener}",
            f"listener.security.protocol.map={listener}:{listener},CONTROLLER:PLAINTEXT"
            + protocols,
            f"controller.quorum.voters={voters}",
            f"log.dirs={data / 'logs'}",
            "num.partitions=1",
            *_replication_lines(quorum.replicas),
            "group.initial.rebalance.delay.ms=0",
            # Tests pause and kill projectors; a short session (ONCELOG_GROUP_SESSION_TIMEOUT_MS)
            # lets the group move their partitions within a second or two.
            "group.min.session.timeout.ms=500",
            # Let compaction react within a second on small test segments.
            "log.cleaner.backoff.ms=200",
            "auto.create.topics.enable=false",
            *(secure_lines or []),
            *extra,
            "",
        ]
    )


def _replication_lines(replicas: int) -> list[str]:
    """Internal topics' replication: one broker keeps one copy of each; three keep three,
    two of which must have a write (as the ledger's own topics, see oncelog.topics)."""
    min_isr = 2 if replicas >= 3 else 1
    lines = [
        f"offsets.topic.replication.factor={replicas}",
        "offsets.topic.num.partitions=6",
        f"transaction.state.log.replication.factor={replicas}",
        f"transaction.state.log.min.isr={min_isr}",
        f"share.coordinator.state.topic.replication.factor={replicas}",
        f"share.coordinator.state.topic.min.isr={min_isr}",
    ]
    if replicas > 1:
        lines += [
            f"default.replication.factor={replicas}",
            f"min.insync.replicas={min_isr}",
            # A replica that missed acknowledged writes never becomes leader (Kafka's
            # default, stated: losing acknowledged requests is what this must never do).
            "unclean.leader.election.enable=false",
        ]
    return lines


def wait_for_metadata(
    conf: dict[str, Any],
    timeout_s: float,
    alive: Callable[[], bool],
    logs: Callable[[], str],
    brokers: int = 1,
) -> None:
    """Wait until ``brokers`` brokers answer in a metadata response; BrokerError on the bound
    (or as soon as ``alive`` says the process(es) died), with ``logs()`` in its message."""
    # Imported here so `oncelog broker status` does not load librdkafka.
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415

    admin = AdminClient({**conf, "log_level": 0})
    deadline = time.monotonic() + timeout_s
    last: object = None
    while time.monotonic() < deadline and alive():
        try:
            meta = admin.list_topics(timeout=min(2.0, max(0.1, deadline - time.monotonic())))
        except Exception as exc:  # any failure means "not answering yet"
            last = exc
            continue
        if len(meta.brokers) >= brokers:
            return
        last = f"{len(meta.brokers)} of {brokers} brokers registered"
        time.sleep(0.2)  # registration is the controller's; nothing of ours to wait on
    raise BrokerError(
        f"the local broker at {conf['bootstrap.servers']} did not answer a metadata request "
        f"within {timeout_s:.0f}s (last error: {last}). Log tail:\n{logs()}"
    )
