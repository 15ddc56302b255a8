"""Kafka ACLs on a broker with SASL and the KRaft authorizer (docs/spec.md §8).

The session's SCRAM+TLS broker (tests/security/conftest.py), the ledger's ACLs applied as admin, and
each role logged in as its own SASL user: workers claim and complete but cannot
read requests or executions, auditors read executions but cannot write requests,
and the projector folds end to end with only its own grants.
"""

from __future__ import annotations

import stat
import uuid
from collections.abc import Iterator
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Message
from typer.testing import CliRunner

from oncelog.acls import acl_commands, apply_acls, ledger_acls
from oncelog.broker.certs import TlsFiles
from oncelog.broker.local import LocalBroker, server_properties
from oncelog.broker.secure import (
    CREDENTIALS_FILE,
    load_credentials,
    new_credentials,
    scram_arguments,
    secure_properties,
)
from oncelog.cli import app
from oncelog.errors import BrokerError, KafkaOperationError, NotAuthorizedError
from oncelog.identity.partitioner import partition_for
from oncelog.kafka.failures import kafka_failure
from oncelog.kafka.producer import FutureProducer
from oncelog.kafka.reader import read_to_end
from oncelog.producer.dispatch import Dispatcher, Timeouts
from oncelog.producer.protocol import Route, build_get
from oncelog.producer.results import Execution
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector.store import Store
from oncelog.query.owners import GroupOwners
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Decision, Status
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics
from tests.integration.conftest import FAST, RunningProjector, start_projector
from tests.integration.helpers import kafka, snapshots_of, wait_for_projection


@dataclass(frozen=True)
class Roles:
    """The settings of each SASL user on the module's ledger."""

    admin: Settings
    worker: Settings
    projector: Settings
    auditor: Settings


@pytest.fixture(scope="module")
def roles(secure_broker: LocalBroker, tmp_path_factory: pytest.TempPathFactory) -> Roles:
    """Topics created and ACLs applied as admin; one Settings per user."""
    update = {
        "topic_prefix": f"acl{uuid.uuid4().hex[:8]}",
        "partitions": 3,
        "db_path": tmp_path_factory.mktemp("acl-db") / "ledger.duckdb",
    }
    by_user = {
        user: secure_broker.client_settings(user).model_copy(update=update)
        for user in ("admin", "worker", "projector", "auditor")
    }
    admin = by_user["admin"]
    assert admin.bootstrap_servers is not None
    client = admin_client(admin, admin.bootstrap_servers)
    create_topics(client, ledger_topics(admin))
    apply_acls(client, ledger_acls(admin))
    return Roles(**by_user)


@pytest.fixture(scope="module")
def projector(roles: Roles) -> Iterator[RunningProjector]:
    """The projector, logged in as ``projector``: restores, folds and publishes."""
    store = Store(roles.projector.db_path)
    running = start_projector(roles.projector, store, sweep_interval_s=0.2)
    try:
        yield running
    finally:
        running.halt()
        store.close()


def _run_once(worker: Settings, channel: str) -> Execution:
    """Claim and complete one step as the worker; return the completed execution."""
    with SyncLedgerClient(worker, timeouts=FAST) as client:
        claim = client.claim_execution(channel, "charge", tool_name="charge", params={"n": 1})
        assert claim.status == "claimed"
        done = client.complete_execution(claim.execution, claim.claim_token, {"ok": True})
        assert done.status == "completed"
        return done


@pytest.mark.kafka
def test_the_projectors_grants_are_enough_to_see_who_owns_what(
    roles: Roles, projector: RunningProjector
) -> None:
    # Queries through any instance describe the group: READ on it implies DESCRIBE.
    assert roles.projector.bootstrap_servers is not None
    owners = GroupOwners(roles.projector, roles.projector.bootstrap_servers, ttl_s=0)
    _run_once(roles.worker, "run-acl-owners")  # folded: the projector has its partitions
    view = owners.refreshed()
    assert [m.projector_id for m in view.members] == [roles.projector.projector_id]
    assert sorted(view.owners) == [0, 1, 2]


@pytest.mark.kafka
def test_a_worker_claims_and_completes_and_the_projector_folds_it(
    roles: Roles, projector: RunningProjector
) -> None:
    done = _run_once(roles.worker, "run-acl-1")
    with SyncLedgerClient(roles.worker, timeouts=FAST) as client:
        again = client.claim_execution("run-acl-1", "charge", tool_name="charge", params={"n": 1})
        assert again.status == "replayed"
        assert again.result == {"ok": True}
        got = client.get_execution(done.id)
        assert got is not None
        assert got.status == "completed"
    # The projector committed it to DuckDB and published the snapshot the auditor reads.
    wait_for_projection(projector.projector, done.position)
    row = (
        projector.store.cursor()
        .execute("SELECT status FROM executions WHERE operation_id = ?", [done.id])
        .fetchone()
    )
    assert row == (Status.COMPLETED.value,)
    snaps = snapshots_of(roles.auditor, "run-acl-1", done.id)
    assert snaps[-1].state.status is Status.COMPLETED


@pytest.mark.kafka
@pytest.mark.usefixtures("projector")
def test_a_worker_cannot_read_requests_or_executions(roles: Roles) -> None:
    _run_once(roles.worker, "run-acl-2")  # both topics now hold records on its partition
    partition = partition_for("run-acl-2", roles.worker.partitions)
    for topic in (roles.worker.requests_topic, roles.worker.executions_topic):
        with pytest.raises(NotAuthorizedError) as denied:
            list(read_to_end(kafka(roles.worker), topic, partition, timeout_s=30))
        assert denied.value.topic == topic
        assert denied.value.code == "not_authorized"
        assert topic in str(denied.value)


@pytest.mark.kafka
def test_an_auditor_cannot_write_requests(roles: Roles) -> None:
    producer = FutureProducer(kafka(roles.auditor))
    try:
        sent = producer.send(roles.auditor.requests_topic, 0, b"op", b"forged")
        with pytest.raises(NotAuthorizedError) as denied:
            sent.result(timeout=30)
    finally:
        producer.close()
    assert denied.value.topic == roles.auditor.requests_topic
    # Nor can it act as a client: it may not even read the decisions.
    with pytest.raises(NotAuthorizedError) as as_client:
        SyncLedgerClient(roles.auditor, timeouts=FAST).open()
    assert as_client.value.topic == roles.auditor.decisions_topic


@pytest.mark.kafka
def test_passwords_stay_in_owner_only_files(secure_broker: LocalBroker) -> None:
    credentials = load_credentials(secure_broker.dir)
    assert set(credentials) == {"admin", "worker", "projector", "auditor"}
    for name in (CREDENTIALS_FILE, "server.properties"):
        mode = stat.S_IMODE((secure_broker.dir / name).stat().st_mode)
        assert mode == 0o600, f"{name} has mode {mode:o}"
    log = secure_broker.log_path.read_text(errors="replace")
    assert all(pw.get_secret_value() not in log for pw in credentials.values())


@pytest.mark.kafka
def test_cli_prints_passwords_only_when_asked(secure_broker: LocalBroker) -> None:
    env = {"ONCELOG_DATA_DIR": str(secure_broker.dir.parent), "ONCELOG_BOOTSTRAP_SERVERS": ""}
    passwords = [pw.get_secret_value() for pw in load_credentials(secure_broker.dir).values()]
    started = CliRunner().invoke(app, ["broker", "start", "--secure"], env=env)
    assert started.exit_code == 0, started.output
    assert str(secure_broker.dir / CREDENTIALS_FILE) in started.output
    assert not any(pw in started.output for pw in passwords)
    plain = CliRunner().invoke(app, ["broker", "start"], env=env)
    assert "secure broker already runs" in str(plain.exception)
    shell = CliRunner().invoke(app, ["broker", "env", "worker"], env=env)
    worker_pw = load_credentials(secure_broker.dir)["worker"].get_secret_value()
    assert f"export ONCELOG_SASL_PASSWORD={worker_pw}" in shell.output
    assert "export ONCELOG_SASL_USERNAME=worker" in shell.output


def test_secure_properties_use_scram_over_tls_and_deny_by_default(tmp_path: Path) -> None:
    settings = Settings(broker_passwords={"worker": "w0rker"})
    credentials = new_credentials(settings)
    tls = TlsFiles(tmp_path / "ca.pem", tmp_path / "broker.pem")
    text = server_properties(tmp_path, 1, 2, secure_properties(credentials, tls))
    props = dict(line.split("=", 1) for line in text.splitlines() if line)
    assert props["listeners"] == "SASL_SSL://127.0.0.1:1,CONTROLLER://127.0.0.1:2"
    assert props["inter.broker.listener.name"] == "SASL_SSL"
    assert props["sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert props["ssl.keystore.location"] == str(tls.keystore)
    assert props["ssl.truststore.location"] == str(tls.ca)
    assert props["authorizer.class.name"].endswith("StandardAuthorizer")
    assert props["allow.everyone.if.no.acl.found"] == "false"
    assert props["super.users"] == "User:admin;User:ANONYMOUS"
    jaas = props["listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config"]
    assert "ScramLoginModule" in jaas
    assert "w0rker" not in jaas  # only the broker's own login; users live in the metadata
    assert "SCRAM-SHA-512=[name=worker,password=w0rker]" in scram_arguments(credentials)
    # The default broker is unchanged: plaintext and no authorizer.
    plain = server_properties(tmp_path, 1, 2)
    assert "SASL" not in plain
    assert "authorizer" not in plain


def test_each_role_gets_only_its_grants() -> None:
    settings = Settings(topic_prefix="led")
    grants = ledger_acls(settings)
    topics = {
        (g.principal.removeprefix("User:"), g.operation.name, g.name)
        for g in grants
        if g.resource.name == "TOPIC"
    }
    worker = {(op, name) for who, op, name in topics if who == "worker"}
    assert worker == {
        ("WRITE", "led.requests"),
        ("READ", "led.decisions"),
        ("WRITE", "led.checkpoints"),
    }
    auditor = {(op, name) for who, op, name in topics if who == "auditor"}
    assert auditor == {("READ", "led.executions")}
    projector = {(op, name) for who, op, name in topics if who == "projector"}
    assert ("READ", "led.requests") in projector
    assert ("READ", "led.checkpoints") in projector  # their fold
    outputs = ("led.decisions", "led.executions", "led.deadletter")
    assert {("WRITE", t) for t in outputs} <= projector
    assert not any(op in {"ALL", "CREATE", "ALTER", "DELETE"} for _, op, _ in topics)
    groups = {(g.principal, g.name, g.prefixed) for g in grants if g.resource.name == "GROUP"}
    assert ("User:projector", "led.projector", False) in groups
    commands = "\n".join(acl_commands(grants, "host:9092"))
    assert "--allow-principal User:worker --operation Write --topic led.requests" in commands
    assert "--allow-principal User:worker --operation Read --topic led.requests" not in commands


def test_only_acl_denials_become_not_authorized() -> None:
    denied = kafka_failure(
        "delivery to t[0] failed", "t", KafkaError(KafkaError.TOPIC_AUTHORIZATION_FAILED)
    )
    assert isinstance(denied, NotAuthorizedError)
    assert denied.topic == "t"
    assert denied.http_status == 403
    outage = kafka_failure(
        "delivery to t[0] failed", "t", KafkaException(KafkaError(KafkaError._TRANSPORT))
    )
    assert not isinstance(outage, NotAuthorizedError)
    assert outage.code == "kafka_error"


def test_a_denied_delivery_fails_the_call_at_once() -> None:
    # Never started: no broker is needed to hear of a failed delivery.
    dispatcher = Dispatcher(Settings(topic_prefix="p"), "127.0.0.1:1", Timeouts())
    answers: list[Future[Decision]] = []
    for failure in (NotAuthorizedError("denied", topic="p.requests"), KafkaOperationError("down")):
        request = build_get(Route("run-1", "step-1"))
        answers.append(dispatcher._listener.expect(request.request_id))
        record = Message(topic="p.requests", partition=0, value=encode_request(request))
        dispatcher._on_failed(record, failure)
    denied, outage = answers
    with pytest.raises(NotAuthorizedError):
        denied.result(timeout=0)
    assert not outage.done()  # a transient failure is re-sent until the deadline


@pytest.mark.parametrize("password", ["a,b", "a]b", 'a"b', "a b"])
def test_a_password_the_storage_tool_would_misread_is_refused(password: str) -> None:
    settings = Settings(broker_passwords={"worker": password})
    with pytest.raises(BrokerError, match="worker") as refused:
        new_credentials(settings)
    assert password not in str(refused.value)
