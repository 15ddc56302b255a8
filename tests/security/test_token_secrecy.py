"""Claim tokens never reach a log line or an error message (docs/spec.md §8: only fingerprints).

A real broker and a real ``oncelog serve`` process: its whole log, this process's
log records and output, and the message of every ledger error raised in a
claim, heartbeat, complete, fail, release cycle are searched for every token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from oncelog.errors import ConflictError, LedgerError, StaleClaimError
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.projector import process
from oncelog.settings import Settings
from tests.integration.conftest import PATIENT

pytestmark = pytest.mark.kafka


def _raised(errors: list[LedgerError], kind: type[LedgerError], call: Callable[[], Any]) -> None:
    with pytest.raises(kind) as info:
        call()
    errors.append(info.value)


def _cycle(client: SyncLedgerClient, errors: list[LedgerError]) -> list[str]:
    """Every call the SDK has, with its own tokens and with others'; the tokens used."""
    a = client.claim_execution("run-secret", "a", tool_name="t", params={"n": 1})
    client.heartbeat_execution(a.execution, a.claim_token)
    client.complete_execution(a.execution, a.claim_token, "done")
    b = client.claim_execution("run-secret", "b", tool_name="t", params={"n": 2})
    client.fail_execution(b.execution, b.claim_token, "boom", retryable=True)
    c = client.claim_execution("run-secret", "b", tool_name="t", params={"n": 2})
    assert c.status == "reclaimed"
    _raised(errors, StaleClaimError, lambda: client.heartbeat_execution(c.execution, b.claim_token))
    _raised(
        errors, StaleClaimError, lambda: client.complete_execution(c.execution, a.claim_token, 1)
    )
    _raised(errors, StaleClaimError, lambda: client.fail_execution(c.execution, b.claim_token, "x"))
    _raised(errors, ConflictError, lambda: client.complete_execution(a.execution, a.claim_token, 2))
    client.release_execution(c.execution, c.claim_token)
    return [a.claim_token, b.claim_token, c.claim_token]


def test_no_claim_token_in_log_lines_or_error_messages(
    topics: Settings,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "serve.log"
    serve = process.start_serve(topics, log, "--no-http")
    errors: list[LedgerError] = []
    try:
        with SyncLedgerClient(topics, worker_id="w", timeouts=PATIENT) as client:
            tokens = _cycle(client, errors)
    finally:
        assert process.stop(serve) == 0
    served = log.read_text()
    assert "assigned" in served, served[-2000:]  # the log is not empty: it was searched
    out, err = capfd.readouterr()
    texts = {
        "serve log": served,
        "this process's output": out + err,
        "log records": "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records),
        "error messages": "\n".join(f"{e} {e!r} {vars(e)}" for e in errors),
    }
    assert len(errors) == 4
    leaks = [(where, t) for t in tokens for where, text in texts.items() if t in text]
    assert leaks == []
