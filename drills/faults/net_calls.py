"""The network drill's calls, judged against the log after the faults healed.

Each load process writes one JSON line per call (:mod:`drills.faults.net_worker`): who,
what, when (monotonic seconds, one clock for every process of the machine), and what the
caller was told or which error it got. Here they are read back and compared with the
decisions the projector published: an answer must be the decision at its request's
position; an acknowledged completion must be ``COMPLETED`` in the projection; no call may
outlast its timeout; every failure must be typed; no operation granted twice at one epoch.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drills.faults.drill import records_by_source
from oncelog.schemas.codec import decode_decision
from oncelog.schemas.models import Decision, Outcome
from oncelog.settings import Settings

#: Past its configured timeout, a call may take this long to come back (the client's last
#: poll of its answers, the thread's wake-up on a loaded machine); longer is a hung call.
HUNG_GRACE_S = 2.0
_GRANTS = frozenset({Outcome.CLAIMED, Outcome.RECLAIMED})


def read_calls(paths: Iterable[Path]) -> list[dict[str, Any]]:
    """Every call line of every load process."""
    calls = []
    for path in paths:
        if path.exists():
            # A line cut short by a kill (the soak's worker crashes) is no call.
            lines = path.read_text().splitlines()
            calls += [json.loads(line) for line in lines if line.endswith("}")]
    return calls


def decisions_by_source(settings: Settings) -> dict[tuple[int, int], Decision]:
    """The decision published for each request (partition, offset) of the requests topic."""
    seen = records_by_source(settings, settings.decisions_topic, decode_decision)
    return {where: decode_decision(min(copies)[1]) for where, copies in seen.items()}


@dataclass
class CallCheck:
    """What the calls show, judged against the published decisions."""

    calls: int = 0
    acknowledged: list[tuple[str, str]] = field(default_factory=list)  # completed (ch, key)
    typed_errors: Counter[str] = field(default_factory=Counter)
    untyped_errors: list[str] = field(default_factory=list)
    hung: list[str] = field(default_factory=list)
    wrong_answers: list[str] = field(default_factory=list)  # told other than the decision
    double_grants: list[str] = field(default_factory=list)


def check_calls(
    calls: list[dict[str, Any]], decisions: Mapping[tuple[int, int], Decision], timeout_s: float
) -> CallCheck:
    """Judge every call line against ``decisions``; ``timeout_s`` is the calls' timeout."""
    check = CallCheck(calls=len(calls))
    owners: dict[tuple[str, int], set[str]] = defaultdict(set)
    for call in calls:
        took = call["t1"] - call["t0"]
        if took > timeout_s + HUNG_GRACE_S:
            check.hung.append(f"{call['kind']} {call['ch']}/{call['key']} took {took:.1f} s")
        if "untyped" in call:
            check.untyped_errors.append(call["untyped"])
        elif "code" in call:
            check.typed_errors[call["code"]] += 1
        elif "status" in call:
            _judge(call, decisions, check)
            if call["kind"] == "claim" and call["status"] in _GRANTS:
                owners[(call["op"], call["epoch"])].add(call["w"])
    check.double_grants += [f"{op} epoch {epoch} to {sorted(w)}" for (op, epoch), w in
                            owners.items() if len(w) > 1]  # fmt: skip
    check.double_grants += double_grants(decisions.values())
    return check


def _judge(
    call: dict[str, Any], decisions: Mapping[tuple[int, int], Decision], check: CallCheck
) -> None:
    where = f"{call['kind']} {call['ch']}/{call['key']} at {call['pos']}"
    decision = decisions.get(tuple(call["pos"])) if call["pos"] is not None else None
    if decision is None:
        check.wrong_answers.append(f"{where}: answered, but no decision there on the log")
        return
    state = decision.state
    epoch = None if state is None else state.epoch
    told: tuple[Any, ...]
    logged: tuple[Any, ...]
    if call["kind"] == "claim":
        told = (call["req"], call["status"], call["epoch"])
        logged = (decision.request_id, str(decision.outcome), epoch)
    else:
        told = (str(call["status"]).upper(), call["epoch"])
        logged = (None if state is None else str(state.status), epoch)
        check.acknowledged.append((call["ch"], call["key"]))
    if told != logged:
        check.wrong_answers.append(f"{where}: told {told}, the log decided {logged}")


def double_grants(decisions: Iterable[Decision]) -> list[str]:
    """Operations granted to two different requests at one epoch, in the decisions."""
    grants: dict[tuple[str, int], set[str]] = defaultdict(set)
    for d in decisions:
        if d.outcome in _GRANTS and d.state is not None:
            grants[(d.operation_id, d.state.epoch)].add(d.request_id)
    return [f"{op} epoch {epoch}: requests {sorted(r)}" for (op, epoch), r in grants.items()
            if len(r) > 1]  # fmt: skip
