"""What a :class:`~oncelog.schemas.models.Decision` reads from its state, compiled.

``Decision``'s ``version``, ``holder_worker_id``, ``lease_deadline_ms`` and
``cancel_requested`` properties return these functions' answers, and the generated
decision writers (``record_writers.py``) call them directly: from compiled code, a
property's getter would be an interpreted frame for each field of every decision.
Typed ``Any``: this module sits below ``models``, which imports it; a status is
compared by value, as the ``StrEnum`` equals its string.
"""

from __future__ import annotations

from typing import Any, Final

_CLAIMED: Final = "CLAIMED"


def version(decision: Any) -> int:
    """The state version after the decision; 0 while absent."""
    state = decision.state
    if state is None:
        return 0
    number: int = state.version
    return number


def holder_worker_id(decision: Any) -> str | None:
    """The worker holding the lease, when the state is CLAIMED."""
    state = _claimed(decision)
    return None if state is None else str(state.worker_id)


def lease_deadline_ms(decision: Any) -> int | None:
    """The holder's lease deadline (log time), when the state is CLAIMED."""
    state = _claimed(decision)
    return None if state is None else int(state.lease_deadline_ms)


def cancel_requested(decision: Any) -> bool:
    """Whether a cancel is pending for the current holder."""
    state = decision.state
    return state is not None and bool(state.cancel_requested)


def _claimed(decision: Any) -> Any:
    """The decision's state when it is CLAIMED, else None."""
    state = decision.state
    return state if state is not None and state.status == _CLAIMED else None
