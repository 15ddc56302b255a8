"""Convert records written before token fingerprints into the current layout, on read.

Until this version, states, snapshots and decisions carried the claim token
itself (docs/spec.md §8 forbids that now). Avro schema resolution cannot compute a
hash, so records of those writer schemas (kept under ``history/``) are read
with their own schema and converted here: every ``claim_token`` becomes the
``token_fp`` the current version would have written, and the retry memory's
items gain empty fingerprints (meaning "not recorded": they match any retry
of their id, as they did when written) and the state's last log time as their
age. A restored old snapshot therefore folds on as it would have before.
The fields the audit of doubles added later (``released``, a previous attempt's
``outcome_unknown``, a grant's ``worker_id``) take their schema defaults.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from oncelog.identity.tokens import token_fingerprint

Datum = dict[str, Any]


def _attempt(d: Datum | None) -> Datum | None:
    if d is None:
        return None
    d = dict(d)
    d["token_fp"] = token_fingerprint(d.pop("claim_token"))
    d["outcome_unknown"] = False  # not judged then: a rebuild refolds it
    return d


def state(d: Datum) -> Datum:
    """An ``ExecutionState`` datum of the pre-fingerprint layout, in the current one."""
    d = dict(d)
    d["token_fp"] = token_fingerprint(d.pop("claim_token"))
    d["previous"] = _attempt(d["previous"])
    d["released"] = False
    d["inherited"] = None  # forks came later (issue 29)
    d["approval"] = None  # approvals came later (issue 45)
    age = d["updated_at_ms"]
    d["recent"] = [
        {**item, "token_fp": "", "payload_fp": "", "log_time_ms": age, "worker_id": ""}
        for item in d["recent"]
    ]
    return d


def snapshot(d: Datum) -> Datum:
    """An ``ExecutionSnapshot`` datum of the pre-fingerprint layout, in the current one."""
    return {**d, "state": state(d["state"])}


def decision(d: Datum) -> Datum:
    """A ``Decision`` datum of a pre-fingerprint layout, in the current one."""
    old_state = d["state"]
    return {
        **d,
        "state": None if old_state is None else state(old_state),
        "previous": _attempt(d["previous"]),
    }


BY_HISTORY_FILE: Final[dict[str, Callable[[Datum], Datum]]] = {
    "decision.v1.avsc": decision,
    "decision.v2.avsc": decision,
    "execution_snapshot.v1.avsc": snapshot,
}
"""The conversion for each writer schema under ``history/`` that needs one."""
