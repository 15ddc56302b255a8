"""``run_tool`` and the decorators warn of an external tool left unguarded, as the adapters do.

An ``external`` tool with neither a reconcile hook nor ``downstream_dedupes=True`` runs again
when its worker dies between the effect and the completion: the warning names the fix and
points at the caller's line. The suite ignores the warning (pyproject's filterwarnings);
``pytest.warns`` records it regardless.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest

from oncelog.integrations import UnguardedToolWarning
from oncelog.producer.executor import ToolContext, ledger_tool, sync_ledger_tool
from oncelog.producer.tool_model import UnguardedToolWarning as ProducersWarning
from oncelog.testing import InMemoryLedger

PARAMS = {"order_id": "1"}


def refund(ctx: ToolContext) -> str:
    return "refunded"


def reconcile(previous: Any, ctx: ToolContext) -> None:
    return None


def test_run_tool_warns_of_an_unguarded_external_tool_at_the_callers_line() -> None:
    client = InMemoryLedger().sync_client()
    with pytest.warns(UnguardedToolWarning, match="'refund' is external and unguarded") as seen:
        client.run_tool("run-1", "refund:1", tool_name="refund", params=PARAMS, fn=refund)
    assert [w.filename for w in seen] == [__file__]
    assert "downstream_dedupes=True" in str(seen[0].message)
    assert UnguardedToolWarning is ProducersWarning  # one class, where the adapters had it


async def test_the_async_run_tool_warns_too() -> None:
    client = InMemoryLedger().client()

    async def afn(ctx: ToolContext) -> str:
        return "refunded"

    with pytest.warns(UnguardedToolWarning) as seen:
        await client.run_tool("run-1", "refund:1", tool_name="refund", params=PARAMS, fn=afn)
    assert [w.filename for w in seen] == [__file__]


@pytest.mark.parametrize(
    "guard",
    [{"reconcile": reconcile}, {"downstream_dedupes": True}, {"effect": "pure"}],
    ids=["reconcile", "downstream_dedupes", "pure"],
)
def test_a_guarded_tool_is_not_warned_of(guard: dict[str, Any]) -> None:
    client = InMemoryLedger().sync_client()
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)
        run = client.run_tool("run-1", "r:1", tool_name="refund", params=PARAMS, fn=refund, **guard)
    assert run.result == "refunded"


def test_the_decorators_warn_when_they_wrap_the_tool() -> None:
    ledger = InMemoryLedger()
    with pytest.warns(UnguardedToolWarning, match="'send'") as seen:

        @sync_ledger_tool(ledger.sync_client())
        def send(ctx: ToolContext, *, to: str) -> str:
            return to

    with pytest.warns(UnguardedToolWarning, match="'asend'"):

        @ledger_tool(ledger.client())
        async def asend(ctx: ToolContext, *, to: str) -> str:
            return to

    assert [w.filename for w in seen] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)
        assert send("run-1", "send:1", to="a") == "a"  # warned once, at the wrap

        async def call() -> str:
            return str(await asend("run-1", "send:2", to="b"))

        assert asyncio.run(call()) == "b"
