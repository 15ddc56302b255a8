"""Random interleavings of several workers over a few operations, against invariants."""

from __future__ import annotations

import dataclasses

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from oncelog.identity.approver_signature import decision_message, public_key_of, sign
from oncelog.identity.tokens import token_fingerprint
from oncelog.referee.fold import RETRY_MEMORY_MS, PartitionClock, Result, fold, snapshot_of
from oncelog.referee.judge import signed_decision
from oncelog.schemas.codec import decode_snapshot, encode_decision, encode_snapshot
from oncelog.schemas.models import (
    Approve,
    ApproverKey,
    Claim,
    Complete,
    Decision,
    Deny,
    ExecutionState,
    Outcome,
    Request,
    Status,
)
from tests.budget import examples
from tests.projector.fold_factories import Op

WORKERS = ("w0", "w1", "w2")
ANN_KEY = bytes(range(32))
MALLORY_KEY = bytes(range(1, 33))
APPROVERS = (ApproverKey("ann", public_key_of(ANN_KEY)),)
OPS = (Op(key_name="step-1"), Op(key_name="step-2"))
GRANTS = (Outcome.CLAIMED, Outcome.RECLAIMED)

workers = st.sampled_from(WORKERS)
ops = st.integers(0, len(OPS) - 1)
# A re-sent claim may carry another lease or retention (docs/spec.md §4: still a retry).
leases = st.sampled_from([1_000, 5_000, 30_000])
retentions = st.sampled_from([1_000, 60_000, 600_000])


def resent(request: Request, lease_ms: int, retention_ms: int) -> Request:
    """``request`` as a client re-sends it: a claim's lease and retention may differ."""
    if not isinstance(request.body, Claim):
        return request
    body = dataclasses.replace(request.body, lease_ms=lease_ms, retention_ms=retention_ms)
    return request._replace(body=body)


class Fleet(RuleBasedStateMachine):
    """Workers claim, beat, complete, fail, release, crash; the referee folds it all."""

    # The ledger's bound on a step of the leader's clock (docs/spec.md §4, "Clock steps").
    MAX_CLOCK_STEP_MS = 0

    def fold(self, state: ExecutionState | None, request: Request, t: int) -> Result:
        # The signature check of the shared referee step (judge), then the fold.
        signed = signed_decision(state, request)
        return fold(state, request, t, self.MAX_CLOCK_STEP_MS, signed)

    @initialize()
    def start(self) -> None:
        self.clock = PartitionClock()
        self.broker_ts = 0
        self.high_ts = 0  # the largest broker timestamp sent so far
        self.tokens: dict[tuple[str, int], str] = {}
        self.minted = 0
        self.states: dict[int, ExecutionState | None] = dict.fromkeys(range(len(OPS)))
        self.log: list[tuple[int, Request, int]] = []  # (op index, request, clamped log time)
        self.decisions: list[Decision] = []
        self.snapshots: list[tuple[int, int, bytes]] = []  # (op index, offset, encoded)
        self.results: dict[int, bytes] = {}
        self.result_hashes: dict[int, str] = {}
        self.max_epoch: dict[int, int] = {}
        self.holder: dict[int, str] = {}  # op index -> the token of the last grant
        self.grants: dict[int, list[tuple[int, str]]] = {}  # op index -> (epoch, token) granted
        # (op index, request id) -> decisions that changed the state; ids are per operation
        self.effects: dict[tuple[int, str], int] = {}
        # op index -> whether the current attempt reported (completed, failed, released)
        self.reported: dict[int, bool] = {}

    # --- plumbing ------------------------------------------------------------------

    def send(self, index: int, request: Request) -> Decision:
        self.clock, t = self.clock.advance(self.broker_ts)
        # The clamp: log time is the running maximum of the broker's timestamps.
        self.high_ts = max(self.high_ts, self.broker_ts)
        assert t == self.high_ts
        before = self.states[index]
        after, decision = self.fold(before, request, t)
        self.check_transition(index, before, after, decision, t)
        self.check_audit(index, request, decision)
        offset = len(self.log)
        self.log.append((index, request, t))
        self.decisions.append(decision)
        self.states[index] = after
        # An intent is no effect: the claim that recorded it waits for the decision by
        # re-sending itself, and a copy judged after the approval is the grant.
        if decision.changed:
            key = (index, request.request_id)
            if decision.outcome is not Outcome.AWAITING_APPROVAL:
                self.effects[key] = self.effects.get(key, 0) + 1
            if decision.outcome in GRANTS:
                assert request.claim_token is not None
                self.holder[index] = request.claim_token
                assert after is not None
                self.grants.setdefault(index, []).append((after.epoch, request.claim_token))
            encoded = encode_snapshot(snapshot_of(decision, 0, offset))
            self.snapshots.append((index, offset, encoded))
        return decision

    def check_transition(
        self,
        index: int,
        before: ExecutionState | None,
        after: ExecutionState | None,
        decision: Decision,
        t: int,
    ) -> None:
        assert decision.changed == (after is not before)
        if decision.changed:
            assert after is not None
            assert after.version == (0 if before is None else before.version) + 1
        if decision.changed and decision.outcome in GRANTS:
            assert after is not None
            # one live holder: a grant never overlaps a live lease, nor its grace after a
            # lapse that no release explains
            if before is not None and before.status is Status.CLAIMED:
                grace = 0 if before.released else self.MAX_CLOCK_STEP_MS
                assert t >= before.lease_deadline_ms + grace
            assert after.epoch == self.max_epoch.get(index, 0) + 1
            self.max_epoch[index] = after.epoch
        if before is not None and before.status in (Status.EXPIRED, Status.DENIED):
            assert after is before
        intent = None if before is None or before.epoch != 0 else before.approval
        if decision.outcome in GRANTS and before is not None and intent is not None:
            # an intent is granted only once approved, and only the approved params
            assert before.status is Status.APPROVED
            assert intent.approved
            assert after is not None
            assert after.request_hash == before.request_hash
        if decision.outcome is Outcome.REPLAYED:
            assert decision.result == self.results[index]

    def check_audit(self, index: int, request: Request, decision: Decision) -> None:
        """The audit's flags against a model of the spec: an attempt's outcome is unknown
        at a reclaim unless it completed, failed or released (every step here is external,
        and a heartbeat takes a release back); a fenced completion is a duplicate exactly
        when its token was granted before."""
        if decision.outcome is Outcome.STALE_CLAIM and isinstance(request.body, Complete):
            granted = {token for _, token in self.grants.get(index, [])}
            assert decision.duplicate_effect_suspected == (request.claim_token in granted)
        if not decision.changed:
            return
        outcome = decision.outcome
        if outcome is Outcome.RECLAIMED:
            assert decision.previous is not None
            assert decision.previous.outcome_unknown == (not self.reported.get(index, False))
        if outcome in GRANTS or outcome is Outcome.HEARTBEAT_OK:
            self.reported[index] = False
        elif outcome in (Outcome.COMPLETED, Outcome.FAILED, Outcome.RELEASED):
            self.reported[index] = True

    def token_of(self, worker: str, index: int) -> str | None:
        return self.tokens.get((worker, index))

    # --- rules ---------------------------------------------------------------------

    @rule(worker=workers, index=ops, fresh=st.booleans())
    def claim(self, worker: str, index: int, fresh: bool) -> None:
        token = self.token_of(worker, index)
        if token is None or fresh:
            self.minted += 1
            token = f"{worker}-t{self.minted}"
        decision = self.send(index, OPS[index].claim(token, worker=worker, lease_ms=5_000))
        if decision.outcome in GRANTS:
            self.tokens[(worker, index)] = token

    @rule(worker=workers, index=ops, fresh=st.booleans(), self_ok=st.booleans(),
          keyed=st.booleans())  # fmt: skip
    def ask(self, worker: str, index: int, fresh: bool, self_ok: bool, keyed: bool) -> None:
        """A claim whose tool requires approval (``keyed``: its policy lists ann's key)."""
        token = self.token_of(worker, index)
        if token is None or fresh:
            self.minted += 1
            token = f"{worker}-t{self.minted}"
        request = OPS[index].ask(token, worker=worker, timeout_ms=20_000, lease_ms=5_000,
                                 self_approval=self_ok)  # fmt: skip
        if keyed:
            assert request.approval is not None
            request = request._replace(approval=request.approval._replace(approvers=APPROVERS))
        decision = self.send(index, request)
        if decision.outcome in GRANTS:
            self.tokens[(worker, index)] = token

    @rule(approver=st.sampled_from(("ann", *WORKERS)), index=ops, yes=st.booleans(),
          key=st.sampled_from((None, ANN_KEY, MALLORY_KEY)))  # fmt: skip
    def decide(self, approver: str, index: int, yes: bool, key: bytes | None) -> None:
        """A decision, unsigned or signed with ann's key or another."""
        op = OPS[index]
        before = self.states[index]
        request = op.approve(approver) if yes else op.deny(approver=approver)
        if key is not None:
            body = request.body
            assert isinstance(body, Approve | Deny)
            reason = body.reason if isinstance(body, Deny) else ""
            message = decision_message(op.operation_id, body.request_hash, yes, approver, reason)
            request = request._replace(body=dataclasses.replace(body, signature=sign(key, message)))
        decision = self.send(index, request)
        keyed = before is not None and before.approval is not None and before.approval.approvers
        if decision.changed and keyed:  # only the listed approver's own signature decides
            assert (approver, key) == ("ann", ANN_KEY)
        forged = keyed and (approver, key) != ("ann", ANN_KEY)
        if decision.outcome is Outcome.APPROVAL_REFUSED and not forged:
            assert before is not None
            assert before.approval is not None
            assert before.approval.requested_by == approver
            assert not before.approval.self_approval

    @rule(worker=workers, index=ops)
    def conflicting_claim(self, worker: str, index: int) -> None:
        request = OPS[index].claim(f"{worker}-x", worker=worker, params={"other": True})
        before = self.states[index]
        decision = self.send(index, request)
        body = request.body
        assert isinstance(body, Claim)
        if before is not None and before.request_hash != body.request_hash:
            assert decision.outcome is Outcome.CONFLICT
            assert (decision.stored_hash, decision.request_hash) == (
                before.request_hash,
                body.request_hash,
            )

    @rule(worker=workers, index=ops, lease=st.none() | st.sampled_from([1_000, 8_000]))
    def heartbeat(self, worker: str, index: int, lease: int | None) -> None:
        token = self.token_of(worker, index)
        if token is not None:
            self.send(index, OPS[index].heartbeat(token, lease_ms=lease))

    @rule(worker=workers, index=ops, result=st.sampled_from(["a", "b"]))
    def complete(self, worker: str, index: int, result: str) -> None:
        token = self.token_of(worker, index)
        if token is not None:
            self.send(index, OPS[index].complete(token, {"r": result, "by": worker}))

    @rule(worker=workers, index=ops, retryable=st.booleans())
    def fail(self, worker: str, index: int, retryable: bool) -> None:
        token = self.token_of(worker, index)
        if token is not None:
            self.send(index, OPS[index].fail(token, retryable))

    @rule(worker=workers, index=ops)
    def release(self, worker: str, index: int) -> None:
        token = self.token_of(worker, index)
        if token is not None:
            self.send(index, OPS[index].release(token))

    @rule(worker=workers)
    def crash(self, worker: str) -> None:
        for index in range(len(OPS)):
            self.tokens.pop((worker, index), None)

    @rule(index=ops, result=st.sampled_from(["a", "b"]), other_params=st.booleans())
    def inherit(self, index: int, result: str, other_params: bool) -> None:
        """A fork (or an adoption) sends the same key's completion from another channel."""
        params = {"order_id": "1", "amount_cents": 1} if other_params else None
        self.send(index, OPS[index].inherit(result, params=params, from_channel="run-parent"))

    @rule(index=ops)
    def cancel(self, index: int) -> None:
        self.send(index, OPS[index].cancel())

    @rule(index=ops)
    def sweep(self, index: int) -> None:
        self.send(index, OPS[index].sweep())

    @rule(worker=workers, index=ops, beats=st.integers(20, 80))
    def long_run_of_heartbeats_and_sweeps(self, worker: str, index: int, beats: int) -> None:
        """What used to spend a count-bounded memory: many changes between re-sends."""
        token = self.token_of(worker, index)
        for _ in range(beats):
            self.broker_ts += 200
            if token is not None:
                self.send(index, OPS[index].heartbeat(token))
            self.send(index, OPS[index].sweep())

    @rule(dt=st.sampled_from([1, 500, 3_000, 6_000, 40_000, RETRY_MEMORY_MS + 1]))
    def advance(self, dt: int) -> None:
        self.broker_ts += dt

    @rule(back=st.integers(1, 5_000))
    def broker_clock_skew(self, back: int) -> None:
        self.broker_ts = max(0, self.broker_ts - back)  # send() checks the clamp absorbs it

    @precondition(lambda self: bool(self.log))
    @rule(pick=st.integers(0, 10**6), lease=leases, retention=retentions)
    def retry_request(self, pick: int, lease: int, retention: int) -> None:
        """A client re-sends within its call timeout: inside the retry window."""
        _, now = self.clock.advance(self.broker_ts)
        recent = [entry for entry in self.log if now - entry[2] < RETRY_MEMORY_MS]
        if recent:
            index, request, _ = recent[pick % len(recent)]
            self.send(index, resent(request, lease, retention))

    @precondition(lambda self: bool(self.log))
    @rule(pick=st.integers(0, 10**6), lease=leases, retention=retentions)
    def resend_a_claim_late(self, pick: int, lease: int, retention: int) -> None:
        """A claim re-sent at any age: its grant is remembered for the life of the state.

        Only grants: a claim that changed nothing else is remembered for the retry window
        (docs/spec.md §4), past which no client re-sends it (retry_request covers it).
        """
        claims = [
            entry
            for entry, decision in zip(self.log, self.decisions, strict=True)
            # A grant made a version; a claim re-sent by its holder changed nothing.
            if isinstance(entry[1].body, Claim) and decision.changed and decision.outcome in GRANTS
        ]
        if claims:
            index, request, _ = claims[pick % len(claims)]
            self.send(index, resent(request, lease, retention))

    # --- invariants ----------------------------------------------------------------

    @invariant()
    def completed_result_never_changes(self) -> None:
        for index, state in self.states.items():
            if state is None or state.result_hash is None:
                continue
            known = self.result_hashes.setdefault(index, state.result_hash)
            assert state.result_hash == known
            if state.result is not None:
                assert self.results.setdefault(index, state.result) == state.result

    @invariant()
    def no_request_id_takes_effect_twice(self) -> None:
        assert all(count == 1 for count in self.effects.values())

    @invariant()
    def at_most_one_holder(self) -> None:
        """Of every token ever granted, at most one is still accepted, and it is the last grant.

        Asked of the fold itself: a heartbeat probe (judged, not kept) with each granted token
        must be fenced for every grant but the live one, whoever the workers are.
        """
        _, now = self.clock.advance(self.broker_ts)
        for index, granted in self.grants.items():
            state = self.states[index]
            assert state is not None
            # A worker may re-claim with the token it holds: judge each token once.
            tokens = dict.fromkeys(token for _, token in granted)
            accepted = [
                token
                for token in tokens
                if self.fold(state, OPS[index].heartbeat(token), now)[1].outcome
                is Outcome.HEARTBEAT_OK
            ]
            assert len(accepted) <= 1, f"{len(accepted)} live holders of one operation"
            if accepted:
                assert state.status is Status.CLAIMED
                assert accepted == [granted[-1][1]]
                assert granted[-1][0] == state.epoch

    @invariant()
    def the_state_names_the_last_grant(self) -> None:
        """The holder is the token of the last grant decision, and only by fingerprint; an
        inherited completion had no grant on this channel, and never gets one after."""
        for index, state in self.states.items():
            never_granted = (Status.AWAITING_APPROVAL, Status.APPROVED, Status.DENIED)
            if state is not None and (state.inherited is not None or state.status in never_granted):
                assert (state.token_fp, state.epoch) == ("", 0)
                assert index not in self.grants
            elif state is not None:
                assert state.token_fp == token_fingerprint(self.holder[index])
                assert self.holder[index] not in repr(state)

    def teardown(self) -> None:
        if not hasattr(self, "log"):
            return
        self.check_determinism()
        self.check_compaction_safety()

    def check_determinism(self) -> None:
        states: dict[int, ExecutionState | None] = dict.fromkeys(range(len(OPS)))
        for (index, request, t), original in zip(self.log, self.decisions, strict=True):
            states[index], decision = self.fold(states[index], request, t)
            assert encode_decision(decision) == encode_decision(original)
        assert states == self.states

    def check_compaction_safety(self) -> None:
        for cut in range(0, len(self.log) + 1, max(1, len(self.log) // 7)):
            restored: dict[int, ExecutionState | None] = dict.fromkeys(range(len(OPS)))
            for index, offset, encoded in self.snapshots:
                if offset < cut:  # compaction keeps the last snapshot per key
                    restored[index] = decode_snapshot(encoded).state
            for offset in range(cut, len(self.log)):
                index, request, t = self.log[offset]
                restored[index], decision = self.fold(restored[index], request, t)
                assert encode_decision(decision) == encode_decision(self.decisions[offset])
            assert restored == self.states


Fleet.TestCase.settings = settings(
    max_examples=examples(200), stateful_step_count=60, deadline=None
)
TestFleet = Fleet.TestCase


class FleetWithAClockGrace(Fleet):
    """The same fleet on a ledger that rides out clock steps of up to 6 s."""

    MAX_CLOCK_STEP_MS = 6_000


FleetWithAClockGrace.TestCase.settings = Fleet.TestCase.settings
TestFleetWithAClockGrace = FleetWithAClockGrace.TestCase
