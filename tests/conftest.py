"""Session-wide fixtures: one real Kafka broker, unique topics per test, DuckDB paths."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

from oncelog.net import free_port
from oncelog.settings import Settings

# Timing is not behaviour. On a shared two-core machine an example can wait longer for a
# CPU than Hypothesis's default deadline (200 ms) or its data-generation health check
# allow; it then reports a passing property as failed or flaky. Properties here assert
# what happens, never how fast: tests that care about time use an injectable clock.
hypothesis_settings.register_profile(
    "oncelog", deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
hypothesis_settings.load_profile("oncelog")

BrokerSource = tuple[str, str]  # (bootstrap, where it came from)


def _docker_answers() -> bool:
    try:
        import docker  # noqa: PLC0415 - optional, only with testcontainers

        docker.from_env(timeout=3).ping()
    except Exception:  # no daemon, no socket, no package: all mean "no"
        return False
    return True


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that needs the broker, directly or through any fixture, as ``kafka``.

    Marked by what the test uses (``item.fixturenames`` is the transitive closure), so a
    new broker test cannot forget its marker and ``-m "not kafka"`` runs without a broker.
    """
    for item in items:
        callspec = getattr(item, "callspec", None)
        # The contract fixture asks for the broker only in its "kafka" param.
        on_kafka = callspec is not None and callspec.params.get("ledger_backend") == "kafka"
        if on_kafka or "kafka" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.kafka)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Print the LangGraph conformance suite's report that its test attached
    (tests/integration/checkpointer/test_conformance.py): it travels in the test's report,
    so it reaches this summary from an xdist worker too."""
    reports = [r for key in ("passed", "failed") for r in terminalreporter.stats.get(key, [])]
    texts = [
        text
        for report in reports
        for name, text in getattr(report, "user_properties", ())
        if name == "checkpoint_conformance"
    ]
    if texts:
        terminalreporter.write_sep("=", "LangGraph checkpointer conformance (OncelogSaver)")
        for text in texts:
            terminalreporter.write_line(str(text).rstrip())


@pytest.fixture(scope="session")
def kafka(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerSource]:
    """The one broker of the session: env var, else testcontainers, else the local broker."""
    external = os.environ.get("ONCELOG_BOOTSTRAP_SERVERS")
    if external:
        yield external, "ONCELOG_BOOTSTRAP_SERVERS"
        return
    if _docker_answers():
        yield from _container_broker()
        return
    from oncelog.broker.local import LocalBroker  # noqa: PLC0415

    settings = Settings(bootstrap_servers=None)
    broker = LocalBroker(settings, data_dir=tmp_path_factory.mktemp("broker"))
    info = broker.start()
    print(f"\nlocal broker {info.bootstrap} started in {info.started_in_s:.1f}s")
    try:
        yield info.bootstrap, f"local broker (started in {info.started_in_s:.1f}s)"
    finally:
        broker.stop(graceful=False)  # its data goes with the session


COMPOSE_FILE = Path(__file__).resolve().parent.parent / "docker-compose.yml"


def compose_service(name: str) -> dict[str, Any]:
    """One service of docker-compose.yml, the single source of the container's setup."""
    import yaml  # noqa: PLC0415

    services: dict[str, dict[str, Any]] = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    return services[name]


def _container_broker() -> Iterator[BrokerSource]:
    from testcontainers.core.container import DockerContainer  # noqa: PLC0415
    from testcontainers.core.waiting_utils import wait_for_logs  # noqa: PLC0415

    service = compose_service("kafka")
    port = free_port()
    container = DockerContainer(service["image"]).with_bind_ports(9092, port)
    env = {**service["environment"], "KAFKA_ADVERTISED_LISTENERS": f"PLAINTEXT://localhost:{port}"}
    for key, value in env.items():
        container = container.with_env(key, value)
    with container:
        wait_for_logs(container, "Kafka Server started", timeout=60)
        yield f"localhost:{port}", "testcontainers apache/kafka"


@pytest.fixture(scope="session")
def bootstrap(kafka: BrokerSource) -> str:
    """The bootstrap address of the session's broker."""
    return kafka[0]


@pytest.fixture
def prefix() -> str:
    """A topic prefix unique to this test."""
    return f"t{uuid.uuid4().hex[:12]}"


@pytest.fixture
def settings(bootstrap: str, prefix: str, tmp_path: Path) -> Settings:
    """Settings pointing at the session broker, with a unique prefix and DuckDB path."""
    return Settings(
        bootstrap_servers=bootstrap,
        topic_prefix=prefix,
        partitions=3,
        db_path=tmp_path / "ledger.duckdb",
        data_dir=tmp_path / "data",
    )


TopicFactory = Callable[..., str]


@pytest.fixture
def make_topic(bootstrap: str) -> TopicFactory:
    """Create a uniquely named topic: ``make_topic(partitions=1, config={...})``."""
    from confluent_kafka.admin import AdminClient, NewTopic  # noqa: PLC0415

    admin = AdminClient({"bootstrap.servers": bootstrap})

    def create(partitions: int = 1, config: Mapping[str, str] | None = None) -> str:
        name = f"t{uuid.uuid4().hex}"
        topic = NewTopic(name, num_partitions=partitions, config=dict(config or {}))
        admin.create_topics([topic])[name].result(timeout=30)
        return name

    return create


@pytest.fixture
def duckdb_path(tmp_path: Path) -> Path:
    """A fresh DuckDB file path in the test's temporary folder."""
    return tmp_path / "test.duckdb"
