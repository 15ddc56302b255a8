"""Claim tokens are 128-bit random, and a token only ever fences its own operation."""

from __future__ import annotations

import os
import re
import uuid
from typing import Any

import pytest

from oncelog.errors import StaleClaimError
from oncelog.producer import entropy
from oncelog.producer.protocol import new_claim_token


def test_claim_tokens_are_128_bit_random_hex() -> None:
    tokens = {new_claim_token() for _ in range(10_000)}
    assert len(tokens) == 10_000
    assert all(re.fullmatch(r"[0-9a-f]{32}", t) for t in tokens)
    # Every bit position takes both values across the sample: no fixed bits.
    bits = [int(t, 16) for t in tokens]
    assert all(
        any(b >> i & 1 for b in bits) and any(not b >> i & 1 for b in bits) for i in range(128)
    )


@pytest.mark.kafka
def test_a_token_of_another_operation_is_fenced(client: Any) -> None:
    a = client.claim_execution("run-f", "a", tool_name="t", params={})
    b = client.claim_execution("run-f", "b", tool_name="t", params={})
    with pytest.raises(StaleClaimError):
        client.complete_execution(a.execution, b.claim_token, "stolen")
    with pytest.raises(StaleClaimError):
        client.heartbeat_execution(b.execution, a.claim_token)
    assert client.complete_execution(a.execution, a.claim_token, "mine").result == "mine"


def test_request_ids_are_fresh_version_4_uuids() -> None:
    ids = [entropy.request_id() for _ in range(10_000)]
    assert len(set(ids)) == len(ids)
    assert all(uuid.UUID(i).version == 4 and str(uuid.UUID(i)) == i for i in ids)


def test_a_forked_child_does_not_repeat_the_parents_tokens() -> None:
    entropy.claim_token()  # the pool now holds buffered bytes the child must not reuse
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report its next token and leave at once
        os.write(write, entropy.claim_token().encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    child = os.read(read, 64).decode()
    os.close(read)
    assert child != entropy.claim_token()
