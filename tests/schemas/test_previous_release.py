"""The previous release's readers decode what the current writers publish (rolling upgrades).

The previous release (``v0.1.0``, drills/upgrade/release.py) read and wrote the schema files
of :data:`PREVIOUS`: its readers know a writer only by the fingerprint of one of them. A
record the current release publishes on the compacted topics (executions, checkpoints) or
the decisions topic must carry one of those fingerprints unless it uses a field the previous
release lacks (docs/spec.md, "Upgrades").
"""

from __future__ import annotations

import dataclasses
import subprocess
from pathlib import Path

import pytest
from fastavro.schema import load_schema

from drills.upgrade.release import PREVIOUS_COMMIT, PREVIOUS_TAG, REPO
from oncelog.errors import CodecError
from oncelog.schemas import codec, layout
from oncelog.schemas.codec import (
    CHECKPOINT,
    DECISION,
    REQUEST,
    SNAPSHOT,
    SchemaRegistry,
    decode_checkpoint,
    decode_decision,
    decode_request,
    decode_snapshot,
    encode_checkpoint,
    encode_decision,
    encode_request,
    encode_snapshot,
)
from oncelog.schemas.models import (
    Approval,
    ApprovalPolicy,
    Approve,
    CheckpointKind,
    CheckpointRecord,
    Decision,
    ExecutionSnapshot,
    Kind,
    Outcome,
    Sweep,
)
from tests.schemas.test_codec import BODIES, _request, _state

PREVIOUS = {
    REQUEST: "history/request.v5.avsc",
    DECISION: "history/decision.v5.avsc",
    SNAPSHOT: "history/execution_snapshot.v4.avsc",
    CHECKPOINT: "history/checkpoint.v1.avsc",
}
"""Each record's schema in the previous release, as a file of this tree's schemas."""


def previous_registry(schema_dir: Path = codec.SCHEMA_DIR) -> SchemaRegistry:
    """A registry that knows only the previous release's current schemas."""
    registry = SchemaRegistry()
    for path in PREVIOUS.values():
        registry.add_current(load_schema(str(schema_dir / path)))
    return registry


OLD = previous_registry()

CHECKPOINT_PUT = CheckpointRecord(
    kind=CheckpointKind.WRITE, thread_id="t-1", checkpoint_ns="", checkpoint_id="c-1",
    value_type="json", part=0, parts=1, data=b'{"v":1}', task_id="task", idx=0,
    channel="messages",
)  # fmt: skip


def test_the_previous_schemas_are_those_of_the_previous_release(tmp_path: Path) -> None:
    rev = _revision()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "oncelog/schemas"],
                             capture_output=True, check=True)  # fmt: skip
    subprocess.run(["tar", "-x", "-C", str(tmp_path)], input=archive.stdout, check=True)
    then = tmp_path / "oncelog" / "schemas"
    released = {name: then / f"{stem}.avsc" for name, stem in layout.FILES.items()}
    for name in PREVIOUS:
        assert (
            codec.schema_fingerprint(load_schema(str(released[name])))
            == (OLD.current_fingerprint[name])
        ), name


def _revision() -> str:
    for rev in (PREVIOUS_TAG, PREVIOUS_COMMIT):
        done = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--verify", "--quiet",
                               f"{rev}^{{commit}}"], capture_output=True, check=False)  # fmt: skip
        if done.returncode == 0:
            return rev
    pytest.skip("the clone has neither the previous release's tag nor its commit")


@pytest.mark.parametrize("body", BODIES, ids=lambda b: type(b).__name__)
def test_old_readers_decode_new_requests(body: object) -> None:
    request = _request(body)  # type: ignore[arg-type]
    assert decode_request(encode_request(request), OLD) == request


def test_old_readers_decode_new_snapshots_and_decisions() -> None:
    snapshot = ExecutionSnapshot(_state(), 3, 2**40, "rid", Outcome.EXPIRED, 9)
    assert decode_snapshot(encode_snapshot(snapshot), OLD) == snapshot
    decision = Decision("rid", "op-1", Kind.CLAIM, Outcome.IN_PROGRESS, False, 9, _state(),
                        source_partition=1, source_offset=2)  # fmt: skip
    assert decode_decision(encode_decision(decision), OLD) == decision


def test_old_readers_decode_new_checkpoints() -> None:
    assert decode_checkpoint(encode_checkpoint(CHECKPOINT_PUT), OLD) == CHECKPOINT_PUT


def test_a_copied_checkpoint_is_read_by_the_current_release_only() -> None:
    copied = dataclasses.replace(CHECKPOINT_PUT, copied_from="t-0")
    data = encode_checkpoint(copied)
    assert decode_checkpoint(data) == copied
    with pytest.raises(CodecError, match="unknown writer schema"):
        decode_checkpoint(data, OLD)


def test_a_record_with_an_approval_is_read_by_the_current_release_only() -> None:
    asking = _request(Sweep())._replace(approval=ApprovalPolicy(60_000))
    approving = _request(Approve("ann", "h" * 64))
    for request in (asking, approving):
        data = encode_request(request)
        assert decode_request(data) == request
        with pytest.raises(CodecError, match="unknown writer schema"):
            decode_request(data, OLD)
    pending = _state()._replace(approval=Approval(1, 2, "w-1"))
    snapshot = ExecutionSnapshot(pending, 3, 4, "rid", Outcome.AWAITING_APPROVAL, 9)
    assert decode_snapshot(encode_snapshot(snapshot)) == snapshot
    with pytest.raises(CodecError, match="unknown writer schema"):
        decode_snapshot(encode_snapshot(snapshot), OLD)


def test_a_record_without_approvals_takes_the_previous_layout_and_its_fast_reader() -> None:
    request = _request(Sweep())
    data = encode_request(request)
    assert data[2:10] == OLD.current_fingerprint[REQUEST] != codec._FAST_REQUEST
    assert data.startswith(codec._FAST_REQUESTS.previous_header)
    assert codec._FAST_REQUESTS.read(data, codec.REGISTRY) == request
    decision = Decision("rid", "op-1", Kind.CLAIM, Outcome.CLAIMED, True, 9, _state())
    data = encode_decision(decision)
    assert data[2:10] == OLD.current_fingerprint[DECISION]
    assert data.startswith(codec._FAST_DECISIONS.previous_header)
    assert codec._FAST_DECISIONS.read(data, codec.REGISTRY) == decision
