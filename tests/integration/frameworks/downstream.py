"""A counting downstream service for the framework tests, and the crash that cuts a run short."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oncelog.integrations import current_call


class Crash(Exception):  # noqa: N818  (what it stands for: the process dies here)
    """The agent's process dying after a tool's effect and before the run ends."""


@dataclass
class Payments:
    """A downstream that applies every charge it is sent: the effect counted."""

    charges: list[dict[str, Any]] = field(default_factory=list)

    def charge(
        self, order_id: str, amount_cents: int, identity: tuple[str, int] | None = None
    ) -> dict[str, Any]:
        """Apply one charge, with the ledger's idempotency key and epoch as sent downstream
        (``identity``, else the current ledger call's)."""
        if identity is None:
            ctx = current_call()
            identity = ctx.idempotency_key, ctx.epoch
        key, epoch = identity
        self.charges.append(
            {
                "order_id": order_id,
                "amount_cents": amount_cents,
                "idempotency_key": key,
                "epoch": epoch,
            }
        )
        return {"charge_id": f"ch_{len(self.charges)}", "order_id": order_id}
