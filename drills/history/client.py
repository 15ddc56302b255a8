"""A blocking ledger client that records each call it makes (see :mod:`drills.history.record`).

It passes calls to a :class:`SyncLedgerClient` unchanged, except that a claim's token is
chosen here, before the call, so that a claim whose answer never came is still known by
its token.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from drills.history.record import Recorder, canonical, claim_hash
from oncelog.identity import ids
from oncelog.producer import protocol
from oncelog.producer.results import Claim, Execution, Heartbeat
from oncelog.producer.sync_client import SyncLedgerClient


def operation_key(execution: Execution) -> str:
    """The history's name of an operation: its channel and key name."""
    return f"{execution.channel_id}/{execution.key_name}"


def _settled(execution: Execution, status: str) -> tuple[str, int, str]:
    result = canonical(execution.result) if status == "completed" else ""
    return status, execution.epoch, result


class RecordingClient:
    """claim / complete / heartbeat / fail / release through ``client``, recorded."""

    def __init__(self, client: SyncLedgerClient, recorder: Recorder) -> None:
        self.client = client
        self.recorder = recorder

    def claim(
        self,
        channel_id: str,
        key_name: str | None = None,
        *,
        step: int | None = None,
        tool_name: str,
        params: Mapping[str, Any],
        dedup_fields: Sequence[str] | None = None,
        **options: Any,
    ) -> Claim:
        """``claim_execution`` (by key name or step), with a token minted before the call."""
        token = protocol.new_claim_token()
        name = key_name if step is None else ids.step_key_name(step)
        op = f"{channel_id}/{name}"
        call = self.recorder.call(
            op, "claim", token, hash=claim_hash(tool_name, params, dedup_fields)
        )

        def run() -> Claim:
            return self.client.claim_execution(
                channel_id, key_name, step=step, tool_name=tool_name, params=params,
                dedup_fields=dedup_fields, claim_token=token, **options,
            )  # fmt: skip

        def read(claim: Claim) -> tuple[str, int, str]:
            result = canonical(claim.result) if claim.status == "replayed" else ""
            return str(claim.status), claim.execution.epoch, result

        return self.recorder.around(call, run, read)

    def complete(
        self, execution: Execution, token: str, result: Any, reconciled: str | None = None
    ) -> Execution:
        """``complete_execution``."""
        op = operation_key(execution)
        call = self.recorder.call(op, "complete", token, result=canonical(result))
        return self.recorder.around(
            call,
            lambda: self.client.complete_execution(execution, token, result, reconciled=reconciled),
            lambda ex: _settled(ex, "completed"),
        )

    def heartbeat(self, execution: Execution, token: str) -> Heartbeat:
        """``heartbeat_execution``."""
        call = self.recorder.call(operation_key(execution), "heartbeat", token)
        return self.recorder.around(
            call,
            lambda: self.client.heartbeat_execution(execution, token),
            lambda _: ("ok", 0, ""),
        )

    def fail(self, execution: Execution, token: str, error: str, retryable: bool) -> Execution:
        """``fail_execution``."""
        call = self.recorder.call(operation_key(execution), "fail", token, retryable=retryable)
        return self.recorder.around(
            call,
            lambda: self.client.fail_execution(execution, token, error, retryable),
            lambda ex: _settled(ex, "failed"),
        )

    def release(self, execution: Execution, token: str) -> Execution:
        """``release_execution``."""
        call = self.recorder.call(operation_key(execution), "release", token)
        return self.recorder.around(
            call,
            lambda: self.client.release_execution(execution, token),
            lambda ex: _settled(ex, "released"),
        )
