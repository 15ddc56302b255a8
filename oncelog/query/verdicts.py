"""One verdict per operation of the audit of doubles (docs/spec.md §4). Pure: no I/O.

The audit's items (a fenced completion, an unknown outcome, ...) are the evidence; a
verdict says what they add up to for their operation:

- ``double``: two effects proven (a fenced attempt completed, and the attempt that took
  over ran the tool again and completed without finding the first one's effect; or a
  branch of a fork ran what another branch had run);
- ``possible``: an effect may have run twice (an unknown outcome settled without
  reconciling; a result that could not be recorded, after a reclaim);
- ``unsettled``: the attempt that took over has not ended yet;
- ``single``: one effect proven (the next holder reconciled it, found or not found).

An item is judged by how the attempt that took over ended (its *settlement*: the first
completion or failure that took effect after the evidence), read from the log alone,
so the CLI, ``/v1/duplicates``, the run page, the channel list and the metric agree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from oncelog.schemas.failures import RESULT_UNRECORDABLE, failure_code

DOUBLE: Final = "double"
POSSIBLE: Final = "possible"
UNSETTLED: Final = "unsettled"
SINGLE: Final = "single"
VERDICTS: Final = (DOUBLE, POSSIBLE, UNSETTLED, SINGLE)
"""Worst first: an operation's verdict is the worst of its items'."""
FLAGGED: Final = frozenset({DOUBLE, POSSIBLE})
"""The verdicts an operator must look at (the channel list flags them)."""

UNRECORDABLE: Final = RESULT_UNRECORDABLE
"""The failure code recorded when a tool ran but its result could not be recorded."""

STALE_COMPLETION: Final = "stale_completion"
UNKNOWN_OUTCOME: Final = "unknown_outcome"
UNRECORDABLE_RESULT: Final = "unrecordable_result"
FORGED: Final = "forged_or_unknown_token"
CROSS_BRANCH: Final = "cross_branch"


def item_verdict(
    kind: str, settled: str | None, reconciled: str | None, settled_code: str | None = None
) -> str:
    """The verdict of one audit item, from its kind and its settlement.

    ``settled``: ``"completed"`` or ``"failed"`` as the attempt that took over ended,
    None while it runs; ``reconciled``: what that completion or failure said
    (``"found"``, ``"not_found"`` or None); ``settled_code``: a settling failure's code.
    """
    if kind == CROSS_BRANCH:
        return DOUBLE
    if kind == FORGED:
        return SINGLE  # no attempt of the operation ran it
    if settled is None:
        return UNSETTLED
    if kind == UNKNOWN_OUTCOME:
        # Reconciled either way: the effect is accounted for, once.
        return SINGLE if reconciled is not None else POSSIBLE
    if reconciled == "found":
        return SINGLE  # the fenced attempt's effect is the one the next holder found
    proven_twice = settled == "completed" or settled_code == UNRECORDABLE
    if kind == STALE_COMPLETION and proven_twice:
        return DOUBLE  # the fenced attempt completed, and the next one ran the tool too
    return POSSIBLE


def worst(verdicts: Iterable[str]) -> str:
    """An operation's verdict: the worst of its items' (``single`` when none)."""
    seen = set(verdicts)
    return next((v for v in VERDICTS if v in seen), SINGLE)


__all__ = ["failure_code"]  # re-exported: the code of a failure's text
