"""First end-to-end check: claim, complete, replay through the real broker."""

from __future__ import annotations

from typing import Any


def test_claim_complete_replay(client: Any) -> None:
    claim = client.claim_execution(
        "run-1", "charge:1", tool_name="charge", params={"order": "1", "cents": 100}
    )
    assert claim.status == "claimed"
    assert claim.execution.epoch == 1
    done = client.complete_execution(claim.execution.id, claim.claim_token, {"charge_id": "ch_1"})
    assert done.status == "completed"
    again = client.claim_execution(
        "run-1", "charge:1", tool_name="charge", params={"order": "1", "cents": 100}
    )
    assert again.status == "replayed"
    assert again.result == {"charge_id": "ch_1"}
