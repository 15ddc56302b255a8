"""Claims whose call gave up, and how the client's next claim of the operation settles them.

A claim call can end without reading its decision: out of time (``timeout``,
``no_projector``, a broker that is down) or interrupted (Ctrl-C, a cancelled task).
The claim may still be on the log, or reach it later, and be granted: the operation
would then be held by this client's own abandoned token until the lease lapses, and
the client's retry would be answered ``in_progress``, held by itself.

So the client keeps each such claim (:class:`AbandonedClaims`), and before its next
claim of the same operation it settles them: it re-sends the abandoned claim (the
same request id and token: a retry per docs/spec.md §4, answered as its first copy
was) and, when that answer is a grant the token still holds, releases it
(:func:`release_for`). The new claim then takes the operation at once, and the
released attempt leaves no unknown outcome in the audit: it never ran its tool.
Pure: the transport does the sending (:class:`~oncelog.producer.dispatch.Dispatcher`).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Final

from oncelog.identity.tokens import token_fingerprint
from oncelog.producer import entropy
from oncelog.schemas.models import Decision, Kind, Outcome, Release, Request, Status

_KEPT: Final = 10_000  # operations with an abandoned claim, the oldest forgotten first
_GRANTS: Final = (Outcome.CLAIMED, Outcome.RECLAIMED)


class AbandonedClaims:
    """The claim requests whose call ended without a decision, by operation id."""

    def __init__(self) -> None:
        self._by_op: OrderedDict[str, list[Request]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, request: Request) -> None:
        """Keep ``request`` (a claim) until a later claim of its operation settles it."""
        if request.kind is not Kind.CLAIM:
            return
        with self._lock:
            kept = self._by_op.setdefault(request.operation_id, [])
            if all(r.request_id != request.request_id for r in kept):
                kept.append(request)
            self._by_op.move_to_end(request.operation_id)
            while len(self._by_op) > _KEPT:
                self._by_op.popitem(last=False)

    def take(self, claim: Request) -> list[Request]:
        """The abandoned claims to settle before ``claim``, forgotten here.

        A copy of ``claim`` itself (the same request id) is not settled: ``claim``
        re-sends it, and gets its grant back if it won one.
        """
        if claim.kind is not Kind.CLAIM:
            return []
        with self._lock:
            kept = self._by_op.pop(claim.operation_id, [])
        return [r for r in kept if r.request_id != claim.request_id]

    def __len__(self) -> int:
        with self._lock:
            return sum(len(v) for v in self._by_op.values())


def release_for(abandoned: Request, decision: Decision) -> Request | None:
    """The release of ``abandoned``'s grant when ``decision`` (its re-send's) says it holds.

    None when the claim won nothing, or its grant was superseded since.
    """
    token, state = abandoned.claim_token, decision.state
    if decision.outcome not in _GRANTS or token is None or state is None:
        return None
    holds = state.status is Status.CLAIMED and state.epoch == decision.epoch
    if not holds or state.token_fp != token_fingerprint(token):
        return None
    return Request(
        entropy.request_id(),
        abandoned.operation_id,
        abandoned.channel_id,
        abandoned.key_name,
        token,
        Release(),
    )


def what_happens_next(request: Request) -> str:
    """What the client does about a claim it gave up on, for the error the caller sees."""
    return (
        f"claim request {request.request_id} may still reach the log and be granted; this "
        "client's next claim of the operation re-sends it first and releases any grant it "
        "won, so the retry is not blocked by it"
    )
