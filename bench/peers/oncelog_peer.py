"""oncelog as a peer: the async SDK against ``oncelog serve`` in a process of its own."""

from __future__ import annotations

from oncelog.producer.client import LedgerClient
from oncelog.producer.results import Claim


class OncelogPeer:
    """Claims and completions through Kafka; the projector decides."""

    def __init__(self, client: LedgerClient) -> None:
        self._client = client

    async def claim(self, channel: str, key: str) -> object | None:
        """A granted claim, or None when the step replayed (or another worker holds it)."""
        claim = await self._client.claim_execution(
            channel, key, tool_name="bench", params={"key": key}
        )
        return claim if claim.status in ("claimed", "reclaimed") else None

    async def complete(self, handle: object, result: int) -> None:
        """Complete the execution the claim granted."""
        assert isinstance(handle, Claim)
        await self._client.complete_execution(handle.execution, handle.claim_token, result)
