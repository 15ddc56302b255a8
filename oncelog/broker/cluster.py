"""A local three-node KRaft cluster: ``oncelog broker start --nodes 3``.

Three combined broker+controller JVMs on loopback, each with its own data folder
under ``<data dir>/cluster/node-<id>``, from the same cached jars as the single
broker. Combined nodes, like ``docker-compose.fleet.yml``: three JVMs rather than
four, and a controller quorum of three that survives the loss of any one node, so
killing the leader of a partition may also kill the active controller, as it can
in such a production cluster. Losing two nodes loses the quorum as well as the
``min.insync.replicas`` of every partition: writes stop until one comes back
(see docs/reliability.md).

The layout (ids and ports, fixed at the first start: the voters are in every
node's configuration) is in ``cluster.json``; each node's pid in ``node.json``.
"""

from __future__ import annotations

import functools
import json
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from oncelog.broker.kraft import (
    Jvm,
    Quorum,
    Route,
    formatted,
    kill_pid,
    log_tail,
    new_cluster_id,
    pid_alive,
    port_free,
    server_properties,
    signal_pid,
    stop_pid,
    wait_for_metadata,
)
from oncelog.errors import BrokerError
from oncelog.net import free_port
from oncelog.settings import Settings
from oncelog.waiting import poll_until

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient

#: The cluster size the production settings assume: RF 3, min.insync.replicas=2.
DEFAULT_NODES = 3


@dataclass(frozen=True)
class NodeInfo:
    """One node: its id, ports, and pid when it runs."""

    node_id: int
    port: int
    controller_port: int
    pid: int | None = None

    @property
    def address(self) -> str:
        """The broker listener, ``127.0.0.1:port``."""
        return f"127.0.0.1:{self.port}"


@dataclass(frozen=True)
class ClusterInfo:
    """The nodes of the local cluster, running or not."""

    nodes: tuple[NodeInfo, ...]
    started_in_s: float = 0.0

    @property
    def bootstrap(self) -> str:
        """Every node's listener, comma-separated: clients find the live ones."""
        return ",".join(node.address for node in self.nodes)

    @property
    def running(self) -> tuple[NodeInfo, ...]:
        """The nodes whose JVM runs."""
        return tuple(node for node in self.nodes if node.pid is not None)


@dataclass(frozen=True)
class Proxied:
    """Proxies in front of the nodes (the network drill's), laid out before the first start.

    ``ports``: each node's own (listener, controller) ports, the proxies' upstreams;
    ``routes``: each node's further listeners (by node id), advertised at their proxies;
    ``inter_broker``: the route brokers replicate over; ``controllers``: where the nodes
    reach each node's controller (its proxy), as the voters name it.
    """

    ports: Sequence[tuple[int, int]]
    routes: Mapping[int, Sequence[Route]] = field(default_factory=dict)
    inter_broker: str | None = None
    controllers: Mapping[int, str] = field(default_factory=dict)


class LocalCluster:
    """Start, inspect, SIGKILL and restart the nodes of a local KRaft cluster."""

    def __init__(
        self,
        settings: Settings,
        data_dir: Path | None = None,
        *,
        nodes: int = DEFAULT_NODES,
        proxied: Proxied | None = None,
        node_env: Callable[[int], Mapping[str, str]] | None = None,
    ) -> None:
        if nodes < DEFAULT_NODES:
            # Two nodes could keep neither three replicas nor a quorum through one loss.
            raise BrokerError(f"a local cluster has three nodes or more, not {nodes}")
        self._settings = settings
        self.size = nodes
        self._proxied = proxied
        # Extra environment of a node's JVM, by node id (the clock drill's libfaketime).
        self._node_env = node_env
        self.dir = (data_dir or settings.data_dir) / "cluster"
        self._layout_path = self.dir / "cluster.json"

    # --- what runs ----------------------------------------------------------------

    def node_dir(self, node_id: int) -> Path:
        """The data folder of one node (its logs, properties and pid)."""
        return self.dir / f"node-{node_id}"

    def layout(self) -> ClusterInfo | None:
        """Every node with its pid when it runs; None before the first start."""
        if not self._layout_path.exists():
            return None
        nodes = [NodeInfo(**n) for n in json.loads(self._layout_path.read_text())["nodes"]]
        return ClusterInfo(tuple(replace(n, pid=self._pid(n.node_id)) for n in nodes))

    def status(self) -> ClusterInfo | None:
        """The cluster when at least one node runs, else None."""
        info = self.layout()
        return info if info is not None and info.running else None

    def _pid(self, node_id: int) -> int | None:
        path = self.node_dir(node_id) / "node.json"
        if not path.exists():
            return None
        pid = int(json.loads(path.read_text())["pid"])
        return pid if pid_alive(pid) else None

    # --- start and stop -------------------------------------------------------------

    def start(self) -> ClusterInfo:
        """Start every node that does not run (formatting new ones); wait until all are up.

        The first start picks free ports and formats each node's storage with one
        cluster id; later starts keep the ports (the voters name them).
        """
        begin = time.monotonic()
        layout = self.layout() or self._new_layout()
        if len(layout.nodes) != self.size:
            raise BrokerError(
                f"the cluster in {self.dir} has {len(layout.nodes)} nodes, not {self.size}; "
                "stop it and remove the folder to change its size"
            )
        stopped = [n for n in layout.nodes if n.pid is None]
        self._check_ports_free(stopped)
        jvm = Jvm.for_settings(self._settings)
        for node in stopped:
            self._launch(jvm, node)
        info = self._wait_all(layout.bootstrap)
        return replace(info, started_in_s=time.monotonic() - begin)

    def stop(self) -> bool:
        """SIGTERM every node at once, a bounded wait, then SIGKILL. False when none ran."""
        info = self.status()
        if info is None:
            return False
        pids = [node.pid for node in info.running if node.pid is not None]
        # All at once: a node stopped alone waits on a controlled shutdown that needs
        # the others, and the last ones would wait for a quorum that is gone.
        for pid in pids:
            signal_pid(pid, signal.SIGTERM)
        for pid in pids:
            stop_pid(pid)
        return True

    def kill(self, *node_ids: int) -> None:
        """SIGKILL these nodes at once (a drill's fault) and wait until they are gone."""
        pids = [pid for pid in map(self._pid, node_ids) if pid is not None]
        for pid in pids:
            signal_pid(pid, signal.SIGKILL)
        for pid in pids:
            kill_pid(pid)

    def start_nodes(self, *node_ids: int) -> None:
        """Start these stopped nodes again on their ports; wait until each answers itself."""
        info = self.layout()
        if info is None:
            raise BrokerError(f"no cluster in {self.dir}: run `oncelog broker start --nodes 3`")
        nodes = [n for n in info.nodes if n.node_id in node_ids]
        stopped = [n for n in nodes if n.pid is None]
        self._check_ports_free(stopped)
        if stopped:
            jvm = Jvm.for_settings(self._settings)
            for node in stopped:
                self._launch(jvm, node)
        for node in nodes:
            self._wait_node(node)

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of every node's log, for error messages."""
        return "\n".join(
            f"--- node {i}:\n{log_tail(self.node_dir(i) / 'broker.log', lines)}"
            for i in range(1, self.size + 1)
        )

    # --- internals ------------------------------------------------------------------

    def _new_layout(self) -> ClusterInfo:
        """Pick ports, write every node's properties and format them with one cluster id."""
        proxied = self._proxied or Proxied([(free_port(), free_port()) for _ in range(self.size)])
        nodes = tuple(NodeInfo(i + 1, p, c) for i, (p, c) in enumerate(proxied.ports))
        voters = ",".join(
            f"{n.node_id}@{proxied.controllers.get(n.node_id, f'127.0.0.1:{n.controller_port}')}"
            for n in nodes
        )
        cluster_id = new_cluster_id()
        jvm = Jvm.for_settings(self._settings)
        formats = []
        for node in nodes:
            data = self.node_dir(node.node_id)
            data.mkdir(parents=True, exist_ok=True)
            quorum = Quorum(node.node_id, voters, replicas=DEFAULT_NODES)
            props = data / "server.properties"
            routes = proxied.routes.get(node.node_id, ())
            text = server_properties(
                data,
                node.port,
                node.controller_port,
                quorum=quorum,
                routes=routes,
                inter_broker=proxied.inter_broker,
            )
            props.write_text(text)
            formats.append((jvm.format_storage(props, cluster_id), data))
        for proc, data in formats:  # three JVMs format at once: a start-up each, in parallel
            formatted(proc, data)
        layout = {"cluster_id": cluster_id, "nodes": [asdict(n) for n in nodes]}
        self._layout_path.write_text(json.dumps(layout))
        return ClusterInfo(nodes)

    def _check_ports_free(self, nodes: Iterable[NodeInfo]) -> None:
        taken = [p for n in nodes for p in (n.port, n.controller_port) if not port_free(p)]
        if taken:
            raise BrokerError(
                f"ports {taken} of the local cluster in {self.dir} are taken by another "
                "process; the voters name them, so the cluster cannot move"
            )

    def _launch(self, jvm: Jvm, node: NodeInfo) -> None:
        data = self.node_dir(node.node_id)
        env = None if self._node_env is None else self._node_env(node.node_id)
        pid = jvm.launch(
            self._settings.broker_heap, data / "server.properties", data / "broker.log", env
        )
        (data / "node.json").write_text(json.dumps({"pid": pid}))

    def _wait_all(self, bootstrap: str) -> ClusterInfo:
        timeout_s = self._settings.broker_start_timeout_s
        try:
            wait_for_metadata(
                {"bootstrap.servers": bootstrap},
                timeout_s,
                lambda: self.status() is not None,
                self.log_tail,
                brokers=self.size,
            )
        except BrokerError:
            self.stop()
            raise
        info = self.layout()
        assert info is not None
        return info

    def _wait_node(self, node: NodeInfo) -> None:
        """Until the node itself answers a metadata request: a broker takes requests only
        once the controller has unfenced it."""
        deadline = time.monotonic() + self._settings.broker_start_timeout_s
        while time.monotonic() < deadline and self._pid(node.node_id) is not None:
            if answers_for_itself(node):
                return
        raise BrokerError(
            f"node {node.node_id} of the local cluster did not answer within "
            f"{self._settings.broker_start_timeout_s:.0f}s. Log tail:\n"
            f"{log_tail(self.node_dir(node.node_id) / 'broker.log')}"
        )


def answers_for_itself(node: NodeInfo, topics: Iterable[str] = (), timeout_s: float = 2.0) -> bool:
    """Whether ``node`` answers a metadata request on its own listener, listing itself
    and ``topics`` with a leader for every partition."""
    from confluent_kafka.admin import AdminClient  # noqa: PLC0415 - keeps `status` light

    admin = AdminClient({"bootstrap.servers": node.address, "log_level": 0})
    try:
        meta = admin.list_topics(timeout=timeout_s)
    except Exception:  # not answering yet
        return False
    known = all(
        t in meta.topics
        and meta.topics[t].partitions
        and all(p.leader >= 0 for p in meta.topics[t].partitions.values())
        for t in topics
    )
    return meta.orig_broker_id == node.node_id and node.node_id in meta.brokers and known


def wait_topics_known(info: ClusterInfo, topics: Iterable[str], timeout_s: float = 60.0) -> None:
    """Wait until every running node knows ``topics``: a new topic reaches each broker's
    metadata a moment after its creation, and a client asking a late one finds none."""
    names = list(topics)
    deadline = time.monotonic() + timeout_s
    for node in info.running:  # the controller's metadata reaches each by itself
        knows = functools.partial(answers_for_itself, node, names)
        if not poll_until(deadline, knows, pause_s=0.1):
            raise BrokerError(f"node {node.node_id} did not learn of {names} in {timeout_s}s")


def leaders(admin: AdminClient, topic: str) -> dict[int, int]:
    """The leader (a node id, -1 when none) of each partition of ``topic``."""
    meta = admin.list_topics(topic, timeout=10)
    return {p: part.leader for p, part in meta.topics[topic].partitions.items()}


def busiest_leader(admin: AdminClient, topic: str) -> int:
    """The node that leads the most partitions of ``topic`` (the lowest id on a tie)."""
    counts = Counter(n for n in leaders(admin, topic).values() if n >= 0)
    if not counts:
        raise BrokerError(f"no partition of {topic} has a leader")
    return min(counts, key=lambda node: (-counts[node], node))


def wait_in_sync(admin: AdminClient, timeout_s: float = 120.0) -> float:
    """Wait until every partition of every topic has a leader and all its replicas in
    sync; return the seconds it took. BrokerError with the laggards on the bound."""
    begin = time.monotonic()
    lagging: list[str] = []
    while time.monotonic() < begin + timeout_s:
        try:
            topics = admin.list_topics(timeout=5).topics
        except Exception as exc:  # the cluster is still electing: not in sync yet
            lagging = [str(exc)]
            continue
        lagging = [
            f"{name}[{p}] leader {part.leader} isr {part.isrs}"
            for name, meta in topics.items()
            for p, part in meta.partitions.items()
            if part.leader < 0 or len(part.isrs) < len(part.replicas)
        ]
        if not lagging:
            return time.monotonic() - begin
        time.sleep(0.2)  # the ISR grows as followers catch up: nothing of ours to wait on
    raise BrokerError(
        f"replicas not all in sync within {timeout_s:.0f}s: {lagging[:5]} "
        f"({len(lagging)} partitions)"
    )
