"""The network drill on a three-node cluster: the links between the brokers.

Each node has, besides its own listener (the drill's checks and admin), three listeners
reached through proxies: ``CLIENTS`` and ``PROJECTOR`` as on the single broker, and
``BROKERS``, the one the others replicate from (``inter.broker.listener.name``); its
controller is reached through a proxy too (the voters name the proxies). The ``brokers``
link is every one of these: a fault on it comes between every pair of nodes (replication
and the controller quorum) while clients and the projector still reach every node.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from drills.faults.net_schedule import Fault
from drills.faults.network import NetworkReport, Run
from drills.faults.toxiproxy import Toxiproxy
from oncelog.broker.cluster import LocalCluster, Proxied, wait_topics_known
from oncelog.broker.kraft import Route
from oncelog.net import free_port
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

NODES = 3
_ROUTED = ("clients", "projector", "brokers")


def cluster_network_drill(
    workdir: Path, faults: list[Fault], *, workers: int = 3, report_line: Any = print
) -> NetworkReport:
    """Run ``faults`` (on ``brokers``, or any link) on a cluster of the drill's own."""
    began = time.monotonic()
    with Toxiproxy.running(workdir / "toxiproxy.log") as toxiproxy:
        proxied, proxies, addresses, http = _proxies(toxiproxy)
        # Three JVMs starting at once behind proxies on a loaded machine: a longer bound.
        own = Settings(
            bootstrap_servers=None, data_dir=workdir / "data", broker_start_timeout_s=240
        )
        cluster = LocalCluster(own, proxied=proxied)
        try:
            info = cluster.start()
            started = time.monotonic() - began
            direct = Settings(bootstrap_servers=info.bootstrap, topic_prefix="net",
                              partitions=3, data_dir=workdir / "data", http_port=http,
                              group_session_timeout_ms=6000)  # fmt: skip
            specs = ledger_topics(direct)
            create_topics(admin_client(direct, info.bootstrap), specs)  # RF 3, min ISR 2
            wait_topics_known(info, [s.name for s in specs])
            report = Run(toxiproxy, direct, addresses, proxies, workdir).go(
                faults, workers, report_line
            )
            report.phases_s = {"cluster": started, **report.phases_s}
        finally:
            cluster.stop()
    report.seconds = time.monotonic() - began
    return report


def _proxies(
    toxiproxy: Toxiproxy,
) -> tuple[Proxied, dict[str, list[str]], dict[str, str], int]:
    """Ports and proxies of every node, laid out before the cluster's first start, and
    the port ``serve`` answers HTTP on behind the ``http`` proxy."""
    ports = [(free_port(), free_port()) for _ in range(NODES)]
    routes: dict[int, list[Route]] = {}
    controllers: dict[int, str] = {}
    proxies: dict[str, list[str]] = {link: [] for link in (*_ROUTED, "http")}
    fronts: dict[str, list[str]] = {link: [] for link in _ROUTED}
    for node, (_, controller) in enumerate(ports, start=1):
        routes[node] = []
        for link in _ROUTED:
            port = free_port()
            front = toxiproxy.link(f"{link}-{node}", f"127.0.0.1:{port}")
            routes[node].append(Route(link.upper(), port, front.address))
            proxies[link].append(front.name)
            fronts[link].append(front.address)
        front = toxiproxy.link(f"controller-{node}", f"127.0.0.1:{controller}")
        controllers[node] = front.address
        proxies["brokers"].append(front.name)
    http = free_port()
    proxies["http"].append(toxiproxy.link("http", f"127.0.0.1:{http}").name)
    addresses = {link: ",".join(fronts[link]) for link in ("clients", "projector")}
    addresses["http"] = toxiproxy.links["http"].address
    proxied = Proxied(ports, routes, inter_broker="BROKERS", controllers=controllers)
    return proxied, proxies, addresses, http
