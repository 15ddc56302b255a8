"""The Rust fold (``oncelog._native.fold``) against the Python one, request by request.

    python -m bench.native_fold_check [N] [--no-records] [--no-sweep]

Compares ``oncelog.referee.fold.fold`` (compiled by mypyc, or its source with
``ONCELOG_INTERPRETED=1``) and the Rust fold on:

- records: every request of ``bench.bench_core.generate(N)`` (default 100,000), decoded
  and folded in order into two chains of states, one per fold, and again the second half
  of the same records folded from no state (heartbeats and completions meet absent
  operations);
- sweep: every request kind (claims with the same, another or no token, a conflicting
  hash, an approval policy; heartbeats, completions, failures, releases, cancels, sweeps,
  gets, inherits, approves, denies; re-sends of earlier requests and reused ids) against
  states of every status made by the fold itself (none, claimed, released, cancelled,
  reclaimed, completed, failed, expired, awaiting approval, approved, denied, inherited,
  retry memories with entries without fingerprints or aged out), at log times around each
  deadline, with and without a clock-step grace and a signature; then the same requests
  against the states the first round made;
- odd values: fields of another type than the model declares, ints past 64 bits, bad
  arguments; here the exceptions are compared (type, then message).

Each comparison checks the state after and the decision by type and value all the way
down (a NamedTuple by its class and items, a body by its class and fields, an enum
member by identity), whether the state object was kept (the same object back when
nothing changed) and whether the decision reports the state after, or the exception
raised. Prints the counts and the first differences; exits 1 if any.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections import Counter
from collections.abc import Callable
from enum import Enum
from typing import Any

from bench.bench_core import generate
from oncelog.referee.fold import RETRY_MEMORY_MS
from oncelog.referee.fold import fold as python_fold
from oncelog.schemas.codec import decode_request
from oncelog.schemas.models import (
    ApprovalPolicy,
    Approve,
    ApproverKey,
    Body,
    Cancel,
    Claim,
    Complete,
    Deny,
    Effect,
    ExecutionState,
    Fail,
    Get,
    Heartbeat,
    Inherit,
    Release,
    Request,
    Sweep,
)

native: Any = importlib.import_module("oncelog._native")
rust_fold: Callable[..., Any] = native.fold

Fold = Callable[..., Any]


def difference(a: Any, b: Any, path: str = "") -> str | None:
    """Where ``a`` and ``b`` differ by type or value, all the way down; None if nowhere."""
    if type(a) is not type(b):
        return f"{path}: {type(a).__name__} vs {type(b).__name__} ({a!r} vs {b!r})"
    if isinstance(a, Enum):
        return None if a is b else f"{path}: {a!r} vs {b!r}"
    if isinstance(a, tuple):
        if len(a) != len(b):
            return f"{path}: {len(a)} items vs {len(b)}"
        names = getattr(a, "_fields", None) or [str(i) for i in range(len(a))]
        for name, x, y in zip(names, a, b, strict=True):
            found = difference(x, y, f"{path}.{name}")
            if found is not None:
                return found
        return None
    if dataclasses.is_dataclass(a):
        for field in dataclasses.fields(a):
            found = difference(
                getattr(a, field.name), getattr(b, field.name), f"{path}.{field.name}"
            )
            if found is not None:
                return found
        return None
    return None if a == b else f"{path}: {a!r} vs {b!r}"


def outcome_of(fold: Fold, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[str, Any]:
    try:
        return "ok", fold(*args, **kwargs)
    except Exception as exc:  # the exception is what is compared
        return "raised", exc


class Tally:
    """Counts and the first differences."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.differences: list[str] = []
        self.messages: list[str] = []
        self.notes: list[str] = []

    def differ(self, what: str, why: str) -> None:
        self.counts["differences"] += 1
        if len(self.differences) < 20:
            self.differences.append(f"{what}: {why}")


def compare(
    tally: Tally,
    what: str,
    states: tuple[Any, Any],
    args: tuple[Any, ...],
) -> tuple[Any, Any] | None:
    """Fold with ``args`` (after the state) into the Python and the Rust state of ``states``
    (equal by value); the states after, or None when they raised or differ."""
    python = outcome_of(python_fold, (states[0], *args), {})
    rust = outcome_of(rust_fold, (states[1], *args), {})
    why, after = judged(tally, what, states, python, rust)
    if why is not None:
        tally.differ(what, why)
    return after


def judged(
    tally: Tally,
    what: str,
    states: tuple[Any, Any],
    python: tuple[str, Any],
    rust: tuple[str, Any],
) -> tuple[str | None, tuple[Any, Any] | None]:
    """How the two folds' answers differ (see the module's docstring), if they do, and the
    states after when they returned."""
    (py_state, rs_state), (py_kind, py), (rs_kind, rs) = states, python, rust
    tally.counts["compared"] += 1
    if py_kind != rs_kind:
        return f"Python {py_kind} {py!r}, Rust {rs_kind} {rs!r}", None
    if py_kind == "raised":
        tally.counts["both raised"] += 1
        if type(py) is not type(rs):
            return f"Python raised {py!r}, Rust {rs!r}", None
        if str(py) != str(rs):
            tally.counts["both raised, other message"] += 1
            tally.messages.append(f"{what}: {py!r} / {rs!r}")
        return None, None
    found = difference(py, rs, "result")
    if found is not None:
        return found, None
    py_after, py_decision = py
    rs_after, rs_decision = rs
    if (py_after is py_state) != (rs_after is rs_state):
        return f"state kept: Python {py_after is py_state}, Rust {rs_after is rs_state}", None
    if (py_decision.state is py_after) != (rs_decision.state is rs_after):
        return "decision.state is not the state after", None
    tally.counts[f"outcome {py_decision.outcome}"] += 1
    for flag in ("retried", "duplicate_effect_suspected"):
        if getattr(py_decision, flag):
            tally.counts[f"decision {flag}"] += 1
    tally.counts["state kept" if py_after is py_state else "new state"] += 1
    return None, (py_after, rs_after)


# --- records ----------------------------------------------------------------------------


def check_records(tally: Tally, records: list[tuple[bytes, int]], label: str) -> None:
    states: dict[str, tuple[Any, Any]] = {}
    clock = 0
    for offset, (data, broker_ts) in enumerate(records):
        request = decode_request(data)
        clock = max(clock, broker_ts)
        key = request.operation_id
        after = compare(
            tally, f"{label}[{offset}]", states.get(key, (None, None)), (request, clock)
        )
        tally.counts[f"{label} records"] += 1
        if after is not None and after[0] is not None:
            states[key] = after
    tally.counts[f"{label} operations"] += len(states)
    for key, (py, rs) in states.items():
        found = difference(py, rs)
        if found is not None:
            tally.differ(f"{label} final state {key}", found)


# --- the sweep ---------------------------------------------------------------------------

T0 = 1_000_000
LEASE = 30_000
RETENTION = 100_000
TIMEOUT = 50_000
H1, H2 = "a" * 64, "b" * 64
R1, R2 = b'{"charge_id":"ch_1"}', b'{"charge_id":"ch_2"}'
ALICE = ApproverKey("alice", b"k" * 32)


def claim(hash_: str = H1, effect: Effect = Effect.EXTERNAL, worker: str = "w1") -> Claim:
    return Claim("charge", b'{"order":1}', hash_, LEASE, RETENTION, effect, worker)


def inherit(
    hash_: str = H1, result: bytes = R1, channel: str = "run-0", adopted: bool = False
) -> Inherit:
    return Inherit(
        channel, 3, 17, "charge", b'{"order":1}', hash_, Effect.EXTERNAL, result, RETENTION, adopted
    )


def request(
    rid: str, token: str | None, body: Body, approval: ApprovalPolicy | None = None
) -> Request:
    return Request(rid, "op-1", "run-1", "step-1", token, body, None, None, approval)


POLICY = ApprovalPolicy(TIMEOUT)
SIGNED_POLICY = ApprovalPolicy(TIMEOUT, False, (ALICE,))
SELF_POLICY = ApprovalPolicy(TIMEOUT, True)

Step = tuple[Request, int]

CLAIM_A = request("r-claim", "tok-A", claim())
INTENT = request("r-intent", "tok-A", claim(), POLICY)


def scenarios() -> dict[str, list[Step]]:
    """Request sequences that make a state of every status (folded by the Python fold)."""
    hb = request("r-hb", "tok-A", Heartbeat())
    complete = request("r-complete", "tok-A", Complete(R1))
    return {
        "claimed": [(CLAIM_A, T0)],
        "claimed pure": [(request("r-claim", "tok-A", claim(effect=Effect.PURE)), T0)],
        "heartbeat": [(CLAIM_A, T0), (hb, T0 + 100)],
        "released": [(CLAIM_A, T0), (request("r-release", "tok-A", Release()), T0 + 100)],
        "released, heartbeat": [
            (CLAIM_A, T0),
            (request("r-release", "tok-A", Release()), T0 + 100),
            (hb, T0 + 200),
        ],
        "cancel requested": [(CLAIM_A, T0), (request("r-cancel", None, Cancel("stop")), T0 + 100)],
        "contended": [(CLAIM_A, T0), (request("r-claim-b", "tok-B", claim(worker="w2")), T0 + 100)],
        "reclaimed": [
            (CLAIM_A, T0),
            (request("r-claim-b", "tok-B", claim(worker="w2")), T0 + LEASE + 1),
        ],
        "reclaimed twice": [
            (CLAIM_A, T0),
            (request("r-claim-b", "tok-B", claim(worker="w2")), T0 + LEASE + 1),
            (request("r-claim-c", "tok-C", claim(worker="w3")), T0 + 2 * LEASE + 2),
        ],
        "completed": [(CLAIM_A, T0), (complete, T0 + 100)],
        "failed retryable": [
            (CLAIM_A, T0),
            (request("r-fail", "tok-A", Fail("boom", True)), T0 + 100),
        ],
        "failed": [(CLAIM_A, T0), (request("r-fail", "tok-A", Fail("boom", False)), T0 + 100)],
        "expired": [
            (CLAIM_A, T0),
            (complete, T0 + 100),
            (request("r-sweep", None, Sweep()), T0 + 100 + RETENTION),
        ],
        "awaiting": [(INTENT, T0)],
        "awaiting signed": [(request("r-intent", "tok-A", claim(), SIGNED_POLICY), T0)],
        "awaiting self": [(request("r-intent", "tok-A", claim(), SELF_POLICY), T0)],
        "approved": [(INTENT, T0), (request("r-approve", None, Approve("alice", H1)), T0 + 100)],
        "denied": [(INTENT, T0), (request("r-deny", None, Deny("alice", H1, "no")), T0 + 100)],
        "approved, claimed": [
            (INTENT, T0),
            (request("r-approve", None, Approve("alice", H1)), T0 + 100),
            (request("r-claim-2", "tok-A", claim(), POLICY), T0 + 200),
        ],
        "inherited": [(request("r-inherit", None, inherit()), T0)],
        "inherited, adopted": [(request("r-inherit", None, inherit(adopted=True)), T0)],
        "old memory": [
            (CLAIM_A, T0),
            (request("r-contend", "tok-B", claim(worker="w2")), T0 + 100),
            (hb, T0 + 200),
            (request("r-hb-2", "tok-A", Heartbeat(LEASE)), T0 + RETRY_MEMORY_MS + 5_000),
        ],
    }


def built(steps: list[Step]) -> ExecutionState:
    state: ExecutionState | None = None
    for req, t in steps:
        state, _ = python_fold(state, req, t)
    assert state is not None
    return state


def upgraded(state: ExecutionState) -> ExecutionState:
    """The state as decoded from a snapshot written before fingerprints were kept."""
    return state._replace(
        recent=tuple(r._replace(token_fp="", payload_fp="") for r in state.recent)
    )


def requests(sent: list[Request]) -> list[Request]:
    """Every kind of request, and re-sends and reused ids of the ones already ``sent``."""
    out = [
        request("n-claim-a", "tok-A", claim()),
        request("n-claim-b", "tok-B", claim(worker="w2")),
        request("n-claim-none", None, claim()),
        request("n-claim-h2", "tok-B", claim(H2)),
        request("n-claim-policy", "tok-B", claim(worker="w2"), POLICY),
        request("n-claim-pure", "tok-B", claim(effect=Effect.PURE, worker="w2")),
        request("n-hb", "tok-A", Heartbeat()),
        request("n-hb-lease", "tok-A", Heartbeat(5_000)),
        request("n-hb-b", "tok-B", Heartbeat()),
        request("n-hb-none", None, Heartbeat()),
        request("n-complete", "tok-A", Complete(R1)),
        request("n-complete-r2", "tok-A", Complete(R2)),
        request("n-complete-b", "tok-B", Complete(R1)),
        request("n-complete-c", "tok-C", Complete(R1)),
        request("n-fail", "tok-A", Fail("boom", True)),
        request("n-fail-final", "tok-A", Fail("boom", False)),
        request("n-fail-b", "tok-B", Fail("boom", True)),
        request("n-release", "tok-A", Release()),
        request("n-release-b", "tok-B", Release()),
        request("n-cancel", None, Cancel("stop")),
        request("n-cancel-none", None, Cancel()),
        request("n-sweep", None, Sweep()),
        request("n-get", None, Get()),
        request("n-inherit", None, inherit()),
        request("n-inherit-r2", None, inherit(result=R2)),
        request("n-inherit-h2", None, inherit(H2)),
        request("n-inherit-other", None, inherit(channel="run-9")),
        request("n-inherit-adopted", None, inherit(adopted=True)),
        request("n-approve", None, Approve("alice", H1)),
        request("n-approve-sig", None, Approve("alice", H1, b"s" * 64)),
        request("n-approve-h2", None, Approve("alice", H2)),
        request("n-approve-self", None, Approve("w1", H1)),
        request("n-deny", None, Deny("alice", H1, "no")),
        request("n-deny-h2", None, Deny("alice", H2, "no")),
        request("n-deny-self", None, Deny("w1", H1, "mine")),
    ]
    for earlier in sent:
        out.append(earlier)  # a re-send: the same id, token and payload
        out.append(earlier._replace(claim_token="tok-Z"))  # the id reused by another token
        if isinstance(earlier.body, Heartbeat):
            out.append(earlier._replace(body=Heartbeat(7_000)))  # the id reused, another payload
        if isinstance(earlier.body, Complete):
            out.append(earlier._replace(body=Complete(R2)))
    return out


def times(state: ExecutionState | None) -> list[int]:
    """Log times around every deadline of ``state``."""
    base = T0 if state is None else state.updated_at_ms
    out = {base, base + 1, base + RETRY_MEMORY_MS + 1, base + 2 * RETRY_MEMORY_MS}
    if state is not None:
        for deadline in (state.lease_deadline_ms, state.expires_at_ms):
            if deadline is not None:
                out |= {deadline - 1, deadline, deadline + 1, deadline + 3_000, deadline + 6_000}
        if state.approval is not None:
            out |= {state.approval.deadline_ms - 1, state.approval.deadline_ms}
    return sorted(out)


def check_sweep(tally: Tally) -> None:
    bases: list[tuple[str, ExecutionState | None, list[Request]]] = [("absent", None, [])]
    for name, steps in scenarios().items():
        first = built(steps)
        bases.append((name, first, [r for r, _ in steps]))
        bases.append((f"{name}, upgraded", upgraded(first), [r for r, _ in steps]))
    made: list[tuple[str, ExecutionState, list[Request]]] = []
    for name, state, sent in bases:
        for req in requests(sent):
            for t in times(state):
                for step in (0, 5_000):
                    for signed in (False, True):
                        kind = type(req.body).__name__
                        what = f"sweep {name} <- {req.request_id} {kind} @{t} {step} {signed}"
                        after = compare(tally, what, (state, state), (req, t, step, signed))
                        tally.counts["sweep, first round"] += 1
                        if after is not None and after[0] is not None and after[0] is not state:
                            made.append((f"{name} + {req.request_id}@{t}", after[0], [*sent, req]))
    # The second round: every 7th state the first made, against every request at 3 times.
    for name, state, sent in made[::7]:
        for req in requests(sent):
            for t in times(state)[::3]:
                what = f"round 2 {name} <- {req.request_id} @{t}"
                compare(tally, what, (state, state), (req, t, 5_000, True))
                tally.counts["sweep, second round"] += 1


# --- odd values --------------------------------------------------------------------------


def anything(value: object) -> Any:
    """``value``, typed ``Any``: an odd case's value against an annotation."""
    return value


TYPED, ANNOTATION, FOREIGN = "typed", "annotation", "foreign"
"""An odd case's arguments: of the models' types and annotations (edge values, bad calls);
a value against a field's or an argument's annotation (the Rust fold does what the
mypyc-compiled fold does, which raises a TypeError or converts where the source would go
on); not of the models' types at all (the Rust fold may raise a TypeError)."""

OddCase = tuple[str, str, tuple[Any, ...], dict[str, Any]]


def odd_cases() -> list[OddCase]:
    """Edge values, bad calls, values against annotations, foreign types."""
    claimed = built(scenarios()["claimed"])
    reclaimed = built(scenarios()["reclaimed"])
    completed = built(scenarios()["completed"])
    awaiting = built(scenarios()["awaiting"])
    signed = built(scenarios()["awaiting signed"])
    assert awaiting.approval is not None
    hb_a = request("x", "tok-A", Heartbeat())
    claim_b = request("x", "tok-B", claim())
    approve = request("x", None, Approve("alice", H1))
    lapsed = T0 + LEASE + 1
    no_deadline = awaiting._replace(approval=awaiting.approval._replace(deadline_ms=anything(None)))
    surrogate = request("x", "t\ud800", Heartbeat())
    first_surrogate = request("x", "\udfff", claim())
    big_lease = request("x", "tok-A", Heartbeat(2**80))
    bool_lease = request("x", "tok-A", Heartbeat(anything(True)))
    str_result = request("x", "tok-A", Complete(anything("x")))
    bytearray_result = request("x", "tok-A", Complete(anything(bytearray(R1))))
    none_result = request("x", "tok-A", Complete(anything(None)))
    bytes_token = request("x", anything(b"tok-A"), Heartbeat())
    get = request("x", None, Get())
    no_lease_deadline = claimed._replace(lease_deadline_ms=anything(None))
    status = claimed._replace
    reclaimed_odd = reclaimed._replace(previous=anything(("x",) * 8))
    approval_tuple = awaiting._replace(approval=anything(tuple(awaiting.approval)))
    conflict = request("x", "t", claim(H2))
    step = "max_clock_step_ms"
    cases: list[OddCase] = [
        ("a token with a lone surrogate", TYPED, (claimed, surrogate, 1), {}),
        ("a first claim, lone surrogate", TYPED, (None, first_surrogate, T0), {}),
        ("a token not ASCII", TYPED, (None, request("x", "tök-é", claim()), T0), {}),
        ("a long token", TYPED, (None, request("x", "t" * 1000, claim()), T0), {}),
        ("an empty token", TYPED, (claimed, request("x", "", Heartbeat()), T0 + 1), {}),
        ("log time past 64 bits", TYPED, (claimed, hb_a, 2**64 + 5), {}),
        ("log time near 2**63", TYPED, (claimed, hb_a, 2**63 - 10), {}),
        ("a first claim near 2**63", TYPED, (None, CLAIM_A, 2**63 - 10), {}),
        ("log time below -2**63", TYPED, (claimed, claim_b, -(2**70)), {}),
        ("a lease past 64 bits", TYPED, (claimed, big_lease, 1), {}),
        ("a grace past 64 bits", TYPED, (claimed, claim_b, lapsed), {step: 2**70}),
        ("too few arguments", TYPED, (None, CLAIM_A), {}),
        ("too many arguments", TYPED, (None, CLAIM_A, T0, 0, False, 1), {}),
        ("an unknown keyword", TYPED, (None, CLAIM_A, T0), {"clock": 1}),
        ("keywords", TYPED, (), {"state": None, "request": CLAIM_A, "log_time_ms": T0}),
        ("a keyword twice", TYPED, (None, CLAIM_A, T0), {"state": None}),
        ("None lease deadline", ANNOTATION, (no_lease_deadline, claim_b, 1), {}),
        ("None log time", ANNOTATION, (claimed, hb_a, None), {}),
        ("None version", ANNOTATION, (claimed._replace(version=anything(None)), hb_a, T0 + 1), {}),
        ("a str result", ANNOTATION, (claimed, str_result, 1), {}),
        ("a bytearray result", ANNOTATION, (claimed, bytearray_result, 1), {}),
        ("a None result", ANNOTATION, (claimed, none_result, 1), {}),
        ("a bytes token", ANNOTATION, (claimed, bytes_token, T0 + 1), {}),
        ("a float log time", ANNOTATION, (claimed, hb_a, float(T0 + 1)), {}),
        ("a bool log time", ANNOTATION, (None, CLAIM_A, True), {}),
        ("a bool lease", ANNOTATION, (claimed, bool_lease, T0 + 1), {}),
        ("a str status", ANNOTATION, (status(status=anything("CLAIMED")), hb_a, T0 + 1), {}),
        ("a str status, claim", ANNOTATION, (status(status=anything("APPROVED")), claim_b, 1), {}),
        ("a None status", ANNOTATION, (status(status=anything(None)), get, 1), {}),
        ("a list status", ANNOTATION, (status(status=anything([])), claim_b, T0 + 1), {}),
        ("a str grace", ANNOTATION, (claimed, claim_b, lapsed), {step: "5"}),
        ("a None grace, unused", ANNOTATION, (completed, claim_b, 1), {step: None}),
        ("a None grace", ANNOTATION, (claimed, claim_b, lapsed), {step: None}),
        ("a str signed", ANNOTATION, (signed, approve, T0 + 1), {"signed": "yes"}),
        ("a None approval deadline", ANNOTATION, (no_deadline, approve, 1), {}),
        ("recent a list", FOREIGN, (status(recent=anything(list(claimed.recent))), hb_a, 1), {}),
        ("recent a list, conflict", FOREIGN, (status(recent=anything([])), conflict, 1), {}),
        ("approval a tuple", FOREIGN, (approval_tuple, approve, 1), {}),
        ("previous a tuple", FOREIGN, (reclaimed_odd, request("x", "tok-A", Complete(R1)), 1), {}),
        ("request a tuple", FOREIGN, (None, tuple(CLAIM_A), T0), {}),
        ("body a str", FOREIGN, (None, CLAIM_A._replace(body=anything("claim")), T0), {}),
        ("state a tuple", FOREIGN, (tuple(claimed), CLAIM_A, T0), {}),
    ]
    return cases


def check_odd(tally: Tally, compiled: bool) -> None:
    """Odd values: a difference counts unless it is allowed (see ``odd_cases``)."""
    for name, kind, args, kwargs in odd_cases():
        state = args[0] if args else kwargs.get("state")
        python = outcome_of(python_fold, args, kwargs)
        rust = outcome_of(rust_fold, args, kwargs)
        why, _ = judged(tally, f"odd: {name}", (state, state), python, rust)
        tally.counts["odd values"] += 1
        if why is None:
            tally.counts["odd values, the same"] += 1
        elif kind == FOREIGN and rust[0] == "raised" and type(rust[1]) is TypeError:
            tally.counts["odd values, not the models' types: Rust TypeError (allowed)"] += 1
            tally.notes.append(f"odd: {name}: {why}")
        elif kind == ANNOTATION and not compiled:
            tally.counts["odd values, against annotations: as compiled, not as the source"] += 1
            tally.notes.append(f"odd: {name}: {why}")
        else:
            tally.differ(f"odd: {name}", why)


def main() -> None:
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    count = int(args[0]) if args else 100_000
    compiled = not str(getattr(sys.modules[python_fold.__module__], "__file__", "")).endswith(".py")
    print(f"Python fold: {python_fold.__module__} ({'compiled' if compiled else 'source'})")
    tally = Tally()
    if "--no-records" not in sys.argv:
        records = generate(count)
        check_records(tally, records, "records")
        check_records(tally, records[len(records) // 2 :], "second half")
    if "--no-sweep" not in sys.argv:
        check_sweep(tally)
    check_odd(tally, compiled)
    for key, value in sorted(tally.counts.items()):
        print(f"{value:>10,}  {key}")
    for line in tally.messages:
        print(f"message differs: {line}")
    for line in tally.notes:
        print(f"allowed: {line[:300]}")
    for line in tally.differences:
        print(f"DIFFERENCE {line}")
    sys.exit(1 if tally.counts["differences"] else 0)


if __name__ == "__main__":
    main()
