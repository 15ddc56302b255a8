"""Side effects between two positions on a real broker and DuckDB: a LangGraph run's keys.

A run mixes the SDK's own step keys with the LangGraph adapter's ``tool#n`` keys. The
effects query lists them by name, through the query functions, the HTTP API and the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, tool
from typer.testing import CliRunner

from oncelog.cli import app
from oncelog.errors import InvalidArgumentError
from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.integrations.langchain import ledger_tools
from oncelog.producer.sync_client import SyncLedgerClient
from oncelog.query.effects import bound, side_effects
from oncelog.query.queries import channel_timeline
from oncelog.query.server import HttpServer, start_http
from tests.integration.conftest import RunningProjector
from tests.integration.frameworks.downstream import Payments
from tests.integration.frameworks.test_langchain import _agent as langgraph_agent
from tests.integration.helpers import wait_for_projection

pytestmark = pytest.mark.kafka

CHANNEL = "checkout-4471"


@pytest.fixture
def api(projector: RunningProjector) -> Iterator[HttpServer]:
    server = start_http(projector.store, "127.0.0.1", 0)
    yield server
    server.stop()


def _tools(payments: Payments) -> list[BaseTool]:
    @tool
    def lookup_order(order_id: str) -> str:
        """Look an order up (no side effect)."""
        return f"order {order_id}: 42.00 EUR"

    @tool
    def charge_card(order_id: str, amount_cents: int) -> dict[str, Any]:
        """Charge the customer's card for an order."""
        return payments.charge(order_id, amount_cents)

    return [lookup_order, charge_card]


def _call(name: str, args: dict[str, Any]) -> AIMessage:
    return AIMessage("", tool_calls=[{"name": name, "args": args, "id": f"call-{name}"}])


def _script() -> list[BaseMessage]:
    """The model asks for a lookup, then a charge, then answers."""
    return [
        _call("lookup_order", {"order_id": "4471"}),
        _call("charge_card", {"order_id": "4471", "amount_cents": 4200}),
        AIMessage("charged"),
    ]


def _pure_step(client: SyncLedgerClient, step: int) -> Any:
    claim = client.claim_execution(CHANNEL, step=step, tool_name="plan", params={}, effect="pure")
    return client.complete_execution(claim.execution, claim.claim_token, {"step": step})


@pytest.fixture
def checkout(make_client: Callable[..., SyncLedgerClient], projector: RunningProjector) -> Payments:
    """step-1 (pure), then the agent's lookup_order#1 (pure) and charge_card#1 (external),
    then step-2 (pure); folded into DuckDB."""
    client, payments = make_client("worker-lg"), Payments()
    _pure_step(client, 1)
    run = LedgerRun(client, CHANNEL, policies={"lookup_order": ToolPolicy(effect="pure")})
    graph = langgraph_agent(ledger_tools(_tools(payments), run), _script(), crash=False)
    out = graph.invoke({"messages": [HumanMessage("pay")]})
    assert out["messages"][-1].content == "charged"
    done = _pure_step(client, 2)
    wait_for_projection(projector.projector, done.position)
    assert len(payments.charges) == 1
    return payments


def _offset(projector: RunningProjector, key: str, kind: str) -> tuple[int, int]:
    rows = channel_timeline(projector.store.cursor(), CHANNEL)
    row = next(r for r in rows if r.key_name == key and r.kind == kind)
    return row.offset, row.log_time_ms


def test_the_adapters_charge_card_is_listed_as_external(
    checkout: Payments, projector: RunningProjector
) -> None:
    con = projector.store.cursor()
    answer = side_effects(con, CHANNEL, bound("from", step=1), bound("to", step=2))
    assert answer.external == ["charge_card#1"]
    assert answer.pure == ["step-1", "lookup_order#1", "step-2"]
    charge_claim, charged_at = _offset(projector, "charge_card#1", "claim")
    before = side_effects(con, CHANNEL, bound("from", step=1), bound("to", offset=charge_claim - 1))
    assert (before.pure, before.external) == (["step-1", "lookup_order#1"], [])
    since = datetime.fromtimestamp(charged_at / 1000, tz=UTC)
    after = side_effects(con, CHANNEL, bound("from", time=since), bound("to", key="step-2"))
    assert after.external == ["charge_card#1"]
    assert after.pure == ["step-2"]


def test_the_http_api_and_the_cli_give_the_same_answer(
    checkout: Payments, projector: RunningProjector, api: HttpServer
) -> None:
    url = f"http://127.0.0.1:{api.port}"
    local = side_effects(
        projector.store.cursor(), CHANNEL, bound("from", step=1), bound("to", step=2)
    )
    by_step = httpx.get(f"{url}/v1/side-effects/{CHANNEL}", params={"from_step": 1, "to_step": 2})
    assert by_step.status_code == 200, by_step.text
    assert by_step.json() == local.model_dump(mode="json")
    by_key = httpx.get(
        f"{url}/v1/side-effects/{CHANNEL}", params={"from_key": "charge_card#1", "to_step": 2}
    )
    assert (by_key.json()["external"], by_key.json()["pure"]) == (["charge_card#1"], ["step-2"])
    runner = CliRunner()
    printed = runner.invoke(app, ["effects", CHANNEL, "1", "2", "--url", url])
    assert printed.exit_code == 0, printed.output
    lines = printed.output.splitlines()
    assert lines[1:] == [
        'external: ["charge_card#1"]',
        'pure: ["step-1", "lookup_order#1", "step-2"]',
    ]
    as_json = runner.invoke(app, ["effects", CHANNEL, "1", "2", "--url", url, "--json"])
    assert json.loads(as_json.output) == local.model_dump(mode="json")
    charge_claim, _ = _offset(projector, "charge_card#1", "claim")
    window = ["--from-offset", str(charge_claim), "--to-offset", str(charge_claim)]
    narrow = runner.invoke(app, ["effects", CHANNEL, *window, "--url", url, "--json"])
    assert json.loads(narrow.output)["external"] == ["charge_card#1"]


BAD_BOUNDS: list[tuple[dict[str, Any], list[str], str]] = [
    ({"from_step": 1}, ["1"], "give exactly one of to_offset"),
    (
        {"from_step": 1, "to_time": "2026-12-03T09:00:00"},
        ["1", "--to-time", "2026-12-03T09:00:00"],
        "time zone",
    ),
    ({"from_step": 7, "to_step": 8}, ["7", "8"], "never ran"),
    (
        {"from_offset": 9, "to_offset": 2},
        ["--from-offset", "9", "--to-offset", "2"],
        "earlier position first",
    ),
    (
        {"from_offset": -1, "to_offset": 2},
        ["--from-offset", "-1", "--to-offset", "2"],
        "must not be negative",
    ),
]


def test_bad_bounds_are_a_400_and_a_cli_error_with_a_hint(
    checkout: Payments, api: HttpServer
) -> None:
    url = f"http://127.0.0.1:{api.port}"
    for params, argv, says in BAD_BOUNDS:
        answer = httpx.get(f"{url}/v1/side-effects/{CHANNEL}", params=params)
        assert (answer.status_code, answer.json()["code"]) == (400, "invalid_argument"), params
        message = answer.json()["message"]
        assert says in message
        assert "oncelog timeline" in message or "earlier position first" in message
        refused = CliRunner().invoke(app, ["effects", CHANNEL, *argv, "--url", url])
        assert isinstance(refused.exception, InvalidArgumentError), (argv, refused.output)
        assert says in refused.exception.message
