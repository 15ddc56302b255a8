"""What a newcomer meets first: no broker, no topics, no projector. Each is a typed error
with its code and what to do, within the client's configured timeout, never the default's.
"""

from __future__ import annotations

import asyncio
import time

import pytest

from oncelog.errors import (
    BrokerUnreachableError,
    LedgerTimeoutError,
    NoProjectorError,
    TopicMissingError,
)
from oncelog.net import free_port
from oncelog.producer.calls import RequestBuilder
from oncelog.producer.client import LedgerClient
from oncelog.producer.dispatch import Timeouts, timeout_error
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.settings import Settings
from oncelog.topics import admin_client, create_topics, ledger_topics

# Short bounds: the errors must come within these, not after the 30 s default.
QUICK = Timeouts(total_s=3.0, resend_after_s=1.0, connect_s=3.0)
# What a bounded wait may overrun by on a loaded two-core machine (client start, a thread
# handing over); far below the 30 s that the default would take.
SLACK_S = 5.0


def _claim(client: SyncLedgerClient) -> object:
    return client.claim_execution("run-1", "step-1", tool_name="t", params={})


def test_a_broker_that_does_not_answer_is_named_within_the_timeout() -> None:
    address = f"127.0.0.1:{free_port()}"  # nothing listens there
    client = SyncLedgerClient(Settings(bootstrap_servers=address), timeouts=QUICK)
    began = time.monotonic()
    with pytest.raises(BrokerUnreachableError) as info:
        client.open()
    waited = time.monotonic() - began
    assert info.value.code == "broker_unreachable"
    assert address in info.value.message
    assert "oncelog broker start" in info.value.message
    assert "ONCELOG_BOOTSTRAP_SERVERS" in info.value.message
    assert waited <= QUICK.connect_s + SLACK_S


def test_missing_topics_name_the_command_that_creates_them(settings: Settings) -> None:
    client = SyncLedgerClient(settings, timeouts=QUICK)  # a fresh prefix: no topics
    with pytest.raises(TopicMissingError) as info:
        client.open()
    assert info.value.code == "topic_missing"
    assert settings.decisions_topic in info.value.message
    assert "oncelog topics create" in info.value.message


@pytest.fixture
def topics_only(settings: Settings) -> Settings:
    """The ledger's topics, and no projector folding them."""
    assert settings.bootstrap_servers is not None
    create_topics(admin_client(settings, settings.bootstrap_servers), ledger_topics(settings))
    return settings


def test_without_a_projector_a_call_says_to_start_serve(topics_only: Settings) -> None:
    with SyncLedgerClient(topics_only, timeouts=QUICK) as client:
        began = time.monotonic()
        with pytest.raises(NoProjectorError) as info:
            _claim(client)
        waited = time.monotonic() - began
    assert info.value.code == "no_projector"
    assert isinstance(info.value, LedgerTimeoutError)  # still a timeout for old handlers
    assert "oncelog serve" in info.value.message
    assert topics_only.requests_topic in info.value.message
    assert QUICK.total_s <= waited <= QUICK.total_s + SLACK_S


async def test_without_a_projector_an_async_call_says_so_too(topics_only: Settings) -> None:
    async with LedgerClient(topics_only, timeouts=QUICK) as client:
        began = asyncio.get_running_loop().time()
        with pytest.raises(NoProjectorError) as info:
            await client.claim_execution("run-1", "step-1", tool_name="t", params={})
        waited = asyncio.get_running_loop().time() - began
    assert "oncelog serve" in info.value.message
    assert waited <= QUICK.total_s + SLACK_S


@pytest.mark.parametrize(
    ("acknowledged", "moved", "expected"),
    [
        (True, False, "no_projector"),  # the broker took it and nothing folds
        (True, True, "timeout"),  # decisions flow: a projector folds, slowly or elsewhere
        (False, False, "timeout"),  # the broker did not take it: not the projector's fault
    ],
)
def test_only_an_acknowledged_request_and_still_decisions_blame_the_projector(
    acknowledged: bool, moved: bool, expected: str
) -> None:
    request = RequestBuilder("w").claim_execution("run-1", "s", tool_name="t", params={}).request
    error = timeout_error(
        request,
        3.0,
        acknowledged=acknowledged,
        decisions_moved=moved,
        requests_topic="p.requests",
        reply_at="p.decisions[4]",
    )
    assert error.code == expected
    assert request.request_id in error.message
    assert ("oncelog serve" in error.message) == (expected == "no_projector")
