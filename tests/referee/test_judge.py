"""The one referee step: admitting raw records and judging them, without I/O."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from oncelog.errors import CodecError, InvalidRequestError
from oncelog.identity.partitioner import partition_for
from oncelog.referee.fold import PartitionClock, fold
from oncelog.referee.judge import Refusal, admit, judge
from oncelog.schemas.codec import encode_request
from oncelog.schemas.models import Outcome, Request
from tests.projector.fold_factories import Op

PARTITIONS = 6


def _admit(request: Request, offset: int = 7, ts: int = 1_000, key: bytes | None = None) -> object:
    home = partition_for(request.channel_id, PARTITIONS)
    key = request.operation_id.encode() if key is None else key
    value = encode_request(request)
    return admit(value, key, partition=home, offset=offset, ts_ms=ts, partitions=PARTITIONS)


def test_a_valid_record_is_admitted_as_its_request() -> None:
    request = Op().claim("tok-1")
    assert _admit(request) == request


def test_an_undecodable_record_is_refused_without_an_answer() -> None:
    value = b"\x00garbage"
    verdict = admit(value, b"k", partition=0, offset=3, ts_ms=5, partitions=PARTITIONS)
    assert isinstance(verdict, Refusal)
    assert isinstance(verdict.error, CodecError)
    assert (verdict.request, verdict.answer, verdict.length) == (None, None, len(value))


def test_a_decoded_but_invalid_record_is_answered_at_its_position() -> None:
    request = Op().claim("tok-1")
    verdict = _admit(request, offset=11, ts=2_000, key=b"not-the-operation")
    assert isinstance(verdict, Refusal)
    assert isinstance(verdict.error, InvalidRequestError)
    assert verdict.request == request
    answer = verdict.answer
    assert answer is not None
    assert answer.outcome is Outcome.INVALID_REQUEST
    assert answer.error == verdict.error.message
    assert (answer.request_id, answer.log_time_ms) == (request.request_id, 2_000)
    assert (answer.source_partition, answer.source_offset) == (
        partition_for(request.channel_id, PARTITIONS),
        11,
    )


@given(st.lists(st.integers(0, 10_000), min_size=1, max_size=20))
def test_judging_clamps_log_time_and_stamps_each_decision(stamps: list[int]) -> None:
    op = Op()
    clock, state, latest = PartitionClock(), None, None
    for offset, ts in enumerate(stamps):
        request = op.get() if offset else op.claim("tok-1")
        judged = judge(state, request, clock, ts_ms=ts, partition=2, offset=offset)
        latest = ts if latest is None else max(latest, ts)
        assert judged.decision.log_time_ms == latest == judged.clock.last_ms
        assert (judged.decision.source_partition, judged.decision.source_offset) == (2, offset)
        # The stamp is the only difference from the pure fold at the same log time.
        after, folded = fold(state, request, latest)
        assert judged.state == after
        assert judged.decision._replace(source_partition=-1, source_offset=-1) == folded
        clock, state = judged.clock, judged.state
