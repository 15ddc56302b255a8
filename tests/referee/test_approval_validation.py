"""What the referee refuses about approvals before it folds (``invalid_request``)."""

from __future__ import annotations

import pytest

from oncelog.errors import InvalidRequestError
from oncelog.identity.partitioner import partition_for
from oncelog.referee.validate import check_request
from oncelog.schemas.models import ApprovalPolicy, Request
from tests.projector.fold_factories import Op

PARTITIONS = 6


def _check(request: Request) -> None:
    home = partition_for(request.channel_id, PARTITIONS)
    check_request(request, request.operation_id.encode(), home, PARTITIONS)


def test_asks_and_decisions_as_the_sdk_writes_them_are_valid() -> None:
    op = Op()
    for request in (op.ask("tok-1"), op.approve(), op.deny()):
        _check(request)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda op: op.approve()._replace(claim_token="tok-1"), "carries no claim_token"),
        (lambda op: op.deny()._replace(claim_token="tok-1"), "carries no claim_token"),
        (lambda op: op.approve(approver=""), "approver"),
        (lambda op: op.complete("tok-1")._replace(approval=ApprovalPolicy(1)), "only on a claim"),
        (lambda op: op.ask("tok-1", timeout_ms=0), "timeout_ms"),
    ],
)
def test_an_approval_out_of_place_is_refused(make: object, message: str) -> None:
    request = make(Op())  # type: ignore[operator]
    with pytest.raises(InvalidRequestError, match=message):
        _check(request)
