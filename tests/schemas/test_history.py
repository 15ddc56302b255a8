"""Records written by previous schemas still decode, converted to the current layout.

Two generations are kept under ``schemas/history``: the pre-Get schemas
(resolved by Avro) and the pre-fingerprint ones, whose ``claim_token`` fields
are converted on read into the ``token_fp`` the current version writes. The
DuckDB file of the pre-fingerprint version is migrated when opened.
"""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path
from typing import Any

import duckdb
import fastavro
from fastavro.schema import load_schema

from oncelog.identity.tokens import token_fingerprint
from oncelog.projector.state_blob import decode_state, encode_state
from oncelog.projector.store import Store
from oncelog.projector.tables import EXECUTIONS
from oncelog.referee.fold import snapshot_of
from oncelog.schemas.codec import (
    HISTORY_DIR,
    MAGIC,
    decode_checkpoint,
    decode_decision,
    decode_request,
    decode_snapshot,
)
from oncelog.schemas.codec import schema_fingerprint as fingerprint
from oncelog.schemas.convert import decision_to_avro, request_to_avro, snapshot_to_avro
from oncelog.schemas.models import (
    CheckpointKind,
    CheckpointRecord,
    Claim,
    Decision,
    Effect,
    ExecutionState,
    Kind,
    Outcome,
    Request,
    evolve,
)
from tests.projector.fold_factories import LEASE_MS, Op, given
from tests.projector.store_factories import feed, key_history


def _old_bytes(schema_file: str, datum: dict[str, Any]) -> bytes:
    schema = load_schema(str(HISTORY_DIR / schema_file))
    buf = io.BytesIO()
    buf.write(MAGIC + fingerprint(schema))
    fastavro.schemaless_writer(buf, schema, datum)
    return buf.getvalue()


def _with_tokens(state: dict[str, Any], tokens: dict[str, str]) -> dict[str, Any]:
    """The pre-fingerprint datum of a state: the token itself, a three-field memory."""
    old = {k: v for k, v in state.items() if k != "token_fp"}
    old["claim_token"] = tokens[state["token_fp"]]
    if state["previous"] is not None:
        previous = {k: v for k, v in state["previous"].items() if k != "token_fp"}
        old["previous"] = {**previous, "claim_token": tokens[state["previous"]["token_fp"]]}
    old["recent"] = [
        {"request_id": r["request_id"], "outcome": r["outcome"], "epoch": r["epoch"]}
        for r in state["recent"]
    ]
    return old


def _as_upgraded(state: ExecutionState) -> ExecutionState:
    """What an old record of ``state`` reads as: memory items without fingerprints, and
    the audit's later fields at their defaults."""
    recent = tuple(
        r._replace(token_fp="", payload_fp="", log_time_ms=state.updated_at_ms, worker_id="")
        for r in state.recent
    )
    previous = state.previous
    if previous is not None:
        previous = previous._replace(outcome_unknown=False)
    return evolve(state, recent=recent, previous=previous, released=False)


TOKENS = {token_fingerprint(t): t for t in ("A", "B")}


def _reclaimed() -> tuple[Op, ExecutionState, Decision]:
    op = Op()
    state = given([(op.claim("A"), 1_000), (op.claim("B", worker="w2"), 1_000 + LEASE_MS)])
    decision = Decision(
        request_id=state.recent[-1].request_id, operation_id=state.operation_id,
        kind=Kind.CLAIM, outcome=Outcome.RECLAIMED, changed=True,
        log_time_ms=state.updated_at_ms, state=state, epoch=2, previous=state.previous,
    )  # fmt: skip
    return op, state, decision


def test_a_request_of_the_v1_schema_decodes() -> None:
    claim = Claim("tool", b"{}", "0" * 64, 60_000, 1_000, Effect.PURE, "w")
    request = Request("r1", "op", "run", "k", "tok", claim)
    assert decode_request(_old_bytes("request.v1.avsc", request_to_avro(request))) == request


def test_a_request_of_the_v2_schema_decodes_without_a_reply_partition() -> None:
    claim = Claim("tool", b"{}", "0" * 64, 60_000, 1_000, Effect.EXTERNAL, "w")
    request = Request("r1", "op", "run", "k", "tok", claim)
    datum = request_to_avro(request)
    del datum["reply_partition"]  # the v2 writer had no such field
    decoded = decode_request(_old_bytes("request.v2.avsc", datum))
    assert decoded == request
    assert decoded.reply_partition is None


def test_a_decision_of_the_v1_schema_decodes() -> None:
    decision = Decision(
        request_id="r1", operation_id="op", kind=Kind.CLAIM, outcome=Outcome.STATE_ABSENT,
        changed=False, log_time_ms=5, source_partition=1, source_offset=2,
    )  # fmt: skip
    old = _old_bytes("decision.v1.avsc", decision_to_avro(decision))
    assert decode_decision(old) == decision


def test_a_pre_fingerprint_snapshot_decodes_with_fingerprints_not_tokens() -> None:
    _, state, decision = _reclaimed()
    datum = snapshot_to_avro(snapshot_of(decision, 2, 7))
    old = _old_bytes(
        "execution_snapshot.v1.avsc", {**datum, "state": _with_tokens(datum["state"], TOKENS)}
    )
    assert b"B" in old
    assert token_fingerprint("B").encode() not in old
    restored = decode_snapshot(old).state
    assert restored == _as_upgraded(state)
    assert restored.token_fp == token_fingerprint("B")
    assert restored.previous is not None
    assert restored.previous.token_fp == token_fingerprint("A")


def test_a_pre_fingerprint_decision_decodes_with_fingerprints_not_tokens() -> None:
    _, state, decision = _reclaimed()
    datum = decision_to_avro(decision)
    previous = {k: v for k, v in datum["previous"].items() if k != "token_fp"}
    datum["previous"] = {**previous, "claim_token": "A"}
    datum["state"] = _with_tokens(datum["state"], TOKENS)
    decoded = decode_decision(_old_bytes("decision.v2.avsc", datum))
    upgraded = _as_upgraded(state)
    assert decoded == decision._replace(state=upgraded, previous=upgraded.previous)


def test_an_upgraded_state_folds_on_as_before() -> None:
    """A retry of a remembered id is still a retry after the upgrade (empty fingerprints)."""
    op, state, _ = _reclaimed()
    from oncelog.referee.fold import fold  # noqa: PLC0415 - keeps the import list short

    grant = state.recent[-1].request_id
    after, again = fold(_as_upgraded(state), op.claim("B", worker="w2", rid=grant), 20_000)
    assert (again.outcome, again.retried, again.changed) == (Outcome.RECLAIMED, True, False)
    assert after == _as_upgraded(state)


# The executions table of the versions before fingerprints (and before it was narrowed).
_WIDE_EXECUTIONS = """
CREATE TABLE executions (
  operation_id VARCHAR NOT NULL PRIMARY KEY, partition INTEGER NOT NULL,
  channel_id VARCHAR NOT NULL, key_name VARCHAR NOT NULL, status VARCHAR NOT NULL,
  version BIGINT NOT NULL, epoch BIGINT NOT NULL, tool_name VARCHAR NOT NULL,
  effect VARCHAR NOT NULL, worker_id VARCHAR NOT NULL, claim_token VARCHAR NOT NULL,
  lease_deadline_ms BIGINT NOT NULL, completed_at_ms BIGINT, expires_at_ms BIGINT,
  result BLOB, request_hash VARCHAR NOT NULL, result_hash VARCHAR,
  source_offset BIGINT NOT NULL, source_request_id VARCHAR NOT NULL, outcome VARCHAR NOT NULL,
  log_time_ms BIGINT NOT NULL, state BLOB NOT NULL
)
"""


def _downgrade_to_pre_fingerprint(path: Path, state: ExecutionState) -> None:
    """Turn a current DuckDB file into what the pre-fingerprint version wrote."""
    from oncelog.schemas.convert import state_to_avro  # noqa: PLC0415

    blob = _old_bytes("dev.oncelog.ExecutionState.avsc", _with_tokens(state_to_avro(state), TOKENS))
    with duckdb.connect(str(path)) as con:
        con.execute("DROP INDEX history_operation")
        con.execute("DROP INDEX requests_channel")
        for table in ("history", "requests"):
            con.execute(f"ALTER TABLE {table} RENAME COLUMN token_fp TO claim_token")
            for fp, token in TOKENS.items():
                con.execute(
                    f"UPDATE {table} SET claim_token = ? WHERE claim_token = ?", [token, fp]
                )
        con.execute("UPDATE history SET state = ? WHERE version = ?", [blob, state.version])
        con.execute("ALTER TABLE executions RENAME TO narrow")
        con.execute(_WIDE_EXECUTIONS)
        con.execute(
            "INSERT INTO executions SELECT n.operation_id, n.partition, n.channel_id, n.key_name,"
            " n.status, n.version, h.epoch, ?, h.effect, h.worker_id, h.claim_token, ?, ?,"
            " n.expires_at_ms, h.result, ?, h.result_hash, n.source_offset, h.request_id,"
            " h.outcome, n.log_time_ms, h.state FROM narrow n JOIN history h"
            " ON h.operation_id = n.operation_id AND h.version = n.version",
            [state.tool_name, state.lease_deadline_ms, state.completed_at_ms, state.request_hash],
        )
        con.execute("DROP TABLE narrow")
        key_history(con)  # its history had a primary key too (commits stay correct with it)
        con.execute("CREATE INDEX history_operation ON history (operation_id)")
        con.execute("CREATE INDEX requests_channel ON requests (channel_id)")


def test_a_pre_fingerprint_duckdb_file_is_migrated_and_resumes(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    op = Op()
    records = [(op.claim("A"), 1_000), (op.claim("B", worker="w2"), 1_000 + LEASE_MS)]
    with Store(path) as store:
        feed(store, 0, records)
        state = store.load_states([op.operation_id])[op.operation_id]
    _downgrade_to_pre_fingerprint(path, state)
    with Store(path) as store:
        con = store.cursor()
        narrowed = {row[0] for row in con.execute("DESCRIBE executions").fetchall()}
        assert narrowed == {c.name for c in EXECUTIONS}  # no token column left there
        for table in ("history", "requests"):
            columns = {row[0] for row in con.execute(f"DESCRIBE {table}").fetchall()}
            assert "token_fp" in columns
            assert "claim_token" not in columns
            values = {row[0] for row in con.execute(f"SELECT token_fp FROM {table}").fetchall()}
            assert values <= set(TOKENS) | {None}
            assert values & set(TOKENS)
        assert store.load_states([op.operation_id]) == {op.operation_id: _as_upgraded(state)}
        feed(store, 0, [(op.complete("B"), 20_000)])  # and the fold goes on from it
        after = store.load_states([op.operation_id])[op.operation_id]
    assert (after.status.value, after.version) == ("COMPLETED", 3)


def test_a_pre_fingerprint_state_blob_decodes() -> None:
    _, state, _ = _reclaimed()
    from oncelog.schemas.convert import state_to_avro  # noqa: PLC0415

    blob = _old_bytes("dev.oncelog.ExecutionState.avsc", _with_tokens(state_to_avro(state), TOKENS))
    assert decode_state(blob) == _as_upgraded(state)


def _pre_audit(state: dict[str, Any]) -> dict[str, Any]:
    """The datum of a state as the layout before the audit of doubles wrote it."""
    old = {k: v for k, v in state.items() if k != "released"}
    if old["previous"] is not None:
        old["previous"] = {k: v for k, v in old["previous"].items() if k != "outcome_unknown"}
    old["recent"] = [{k: v for k, v in r.items() if k != "worker_id"} for r in old["recent"]]
    return old


def _at_defaults(state: ExecutionState) -> ExecutionState:
    """What a pre-audit record of ``state`` reads as: the audit's fields at their defaults."""
    recent = tuple(r._replace(worker_id="") for r in state.recent)
    previous = state.previous and state.previous._replace(outcome_unknown=False)
    return evolve(state, recent=recent, previous=previous, released=False)


def test_records_and_blobs_of_the_pre_audit_layout_decode_with_defaults() -> None:
    """Avro resolution fills in what the pre-audit writers lacked (issue 26)."""
    from oncelog.schemas.convert import state_to_avro  # noqa: PLC0415

    _, state, decision = _reclaimed()
    assert state.previous is not None
    assert state.previous.outcome_unknown
    expected = _at_defaults(state)
    old_state = _pre_audit(state_to_avro(state))
    assert decode_state(_old_bytes("state.v2.avsc", old_state)) == expected
    snapshot = snapshot_to_avro(snapshot_of(decision, 2, 7))
    old = _old_bytes("execution_snapshot.v2.avsc", {**snapshot, "state": old_state})
    assert decode_snapshot(old).state == expected
    datum = decision_to_avro(decision)
    datum = {**datum, "state": old_state, "previous": old_state["previous"]}
    decoded = decode_decision(_old_bytes("decision.v3.avsc", datum))
    assert decoded == decision._replace(state=expected, previous=expected.previous)


def test_a_column_a_layout_gained_is_added_to_an_older_file(tmp_path: Path) -> None:
    # As if requests.token_fp were the new column of a new optional field.
    path = tmp_path / "older.duckdb"
    op = Op()
    with Store(path) as store:
        feed(store, 0, [(op.claim("A"), 1_000)])
    con = duckdb.connect(str(path))
    con.execute("DROP INDEX requests_channel")
    con.execute("ALTER TABLE requests DROP COLUMN token_fp")
    con.close()
    with Store(path) as store:
        rows = store.cursor().execute("SELECT request_id, token_fp FROM requests").fetchall()
        assert rows == [(rows[0][0], None)]  # the row written before it reads NULL
        feed(store, 0, [(op.complete("A"), 2_000)])
        fps = store.cursor().execute('SELECT token_fp FROM requests ORDER BY "offset"').fetchall()
    assert fps[0] == (None,)
    assert fps[1][0] is not None


def test_an_older_file_gains_the_current_lease_deadline_filled_from_history(
    tmp_path: Path,
) -> None:
    path = tmp_path / "older.duckdb"
    lapsed, live = Op(key_name="step-1"), Op(key_name="step-2")
    with Store(path) as store:
        feed(store, 0, [(lapsed.claim("A"), 1_000), (live.claim("B"), 1_000 + LEASE_MS)])
        states = store.load_states([live.operation_id, lapsed.operation_id])
    con = duckdb.connect(str(path))  # as the version before issue 27 wrote it
    con.execute("ALTER TABLE executions DROP COLUMN lease_deadline_ms")
    con.close()
    with Store(path) as store:
        con = store.cursor()
        rows = con.execute("SELECT operation_id, lease_deadline_ms FROM executions").fetchall()
        # The query the docs give: CLAIMED steps whose lease ended before a moment.
        stale = con.execute(
            "SELECT operation_id FROM executions WHERE status = 'CLAIMED' "
            "AND lease_deadline_ms < ?",
            [1_000 + LEASE_MS + 1],
        ).fetchall()
    assert dict(rows) == {op: s.lease_deadline_ms for op, s in states.items()}
    assert stale == [(lapsed.operation_id,)]


def test_records_and_blobs_of_the_pre_fork_layout_decode_without_an_inheritance() -> None:
    """The layout before forks (issue 29) lacks ``inherited``: Avro fills in null."""
    from oncelog.schemas.convert import state_to_avro  # noqa: PLC0415

    op, state, decision = _reclaimed()
    old_state = {k: v for k, v in state_to_avro(state).items() if k != "inherited"}
    assert decode_state(_old_bytes("state.v3.avsc", old_state)) == state
    snapshot = snapshot_to_avro(snapshot_of(decision, 2, 7))
    old = _old_bytes("execution_snapshot.v3.avsc", {**snapshot, "state": old_state})
    assert decode_snapshot(old).state == state
    datum = {**decision_to_avro(decision), "state": old_state}
    assert decode_decision(_old_bytes("decision.v4.avsc", datum)) == decision
    claim = op.claim("A")
    assert decode_request(_old_bytes("request.v4.avsc", request_to_avro(claim))) == claim


def test_a_fork_record_round_trips_with_its_provenance() -> None:
    from oncelog.referee.fold import fold  # noqa: PLC0415
    from oncelog.schemas.codec import encode_decision, encode_request  # noqa: PLC0415

    inherit = Op().inherit({"charge_id": "ch_1"}, adopted=True)
    assert decode_request(encode_request(inherit)) == inherit
    state, decision = fold(None, inherit, 5_000)
    assert state is not None
    assert state.inherited is not None
    assert decode_decision(encode_decision(decision)) == decision
    assert decode_state(encode_state(state)) == state


def test_a_checkpoint_record_from_before_copied_from_decodes_with_none() -> None:
    now = CheckpointRecord(CheckpointKind.BLOB, "t", "", "", "b", 0, 1, b"v", channel="c")
    datum = {f.name: getattr(now, f.name) for f in dataclasses.fields(now)}
    del datum["copied_from"]  # not in the v1 schema
    record = decode_checkpoint(_old_bytes("checkpoint.v1.avsc", {**datum, "kind": "blob"}))
    assert (record, record.copied_from) == (now, None)
