"""LedgerRun, the adapters' one way to the executor: keys, policies, identity, extras."""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from drills.sample.downstream import start
from oncelog.errors import ConflictError, InvalidArgumentError, LedgerError, ResultUnrecordableError
from oncelog.identity.ids import operation_id
from oncelog.integrations import (
    LedgerRun,
    NoLedgerCallError,
    RecordedResultError,
    ToolPolicy,
    UnguardedToolWarning,
    current_call,
)
from oncelog.integrations.extras import MissingExtraError
from oncelog.integrations.policy import effect_of_annotations
from oncelog.integrations.recorded import ResultShape
from oncelog.producer.executor import ToolContext
from oncelog.schemas.models import PreviousAttempt
from oncelog.testing import InMemoryLedger
from tests.budget import examples
from tests.integration.contract import Backend


class ProcessDied(BaseException):
    """Not an Exception, like KeyboardInterrupt: the executor records nothing for it."""


def test_the_kth_call_of_a_tool_is_its_key_counted_per_tool() -> None:
    ledger = InMemoryLedger()
    run = LedgerRun(ledger.sync_client(), "run-1")
    for tool, order in [("charge", "1"), ("lookup", "1"), ("charge", "2")]:
        run.call(tool, {"order": order}, lambda: "ok")
    keys = {(s.key_name, s.params) for s in map(ledger.state, _operations(ledger)) if s}
    assert keys == {("charge#1", b'{"order":"1"}'), ("lookup#1", b'{"order":"1"}'),
                    ("charge#2", b'{"order":"2"}')}  # fmt: skip


def _operations(ledger: InMemoryLedger) -> set[str]:
    return {d.operation_id for d in ledger.decisions()}


def _applying(effects: list[Any], value: Any) -> Callable[[], Any]:
    def apply() -> Any:
        effects.append(value)
        return value

    return apply


def test_a_rerun_names_its_calls_the_same_and_replays_them() -> None:
    ledger, effects = InMemoryLedger(), list[Any]()
    for _ in range(2):
        run = LedgerRun(ledger.sync_client(), "run-1")
        results = [run.call("charge", {"n": n}, _applying(effects, n)) for n in (1, 2)]
        assert results == [1, 2]
    assert effects == [1, 2]


def test_a_key_rule_makes_the_key_independent_of_the_calls_order() -> None:
    ledger, effects = InMemoryLedger(), list[Any]()
    policy = ToolPolicy(key=lambda args: f"charge:{args['order']}")
    for orders in (["a", "b"], ["b", "a"]):
        run = LedgerRun(ledger.sync_client(), "run-1", policies={"charge": policy})
        for order in orders:
            run.call("charge", {"order": order}, _applying(effects, order))
    assert effects == ["a", "b"]
    assert ledger.execution(operation_id("run-1", "charge:b")) is not None


def test_a_rerun_with_other_arguments_is_a_conflict_naming_the_call() -> None:
    ledger = InMemoryLedger()
    LedgerRun(ledger.sync_client(), "run-1").call("charge", {"n": 1}, lambda: 1)
    with pytest.raises(ConflictError) as info:
        LedgerRun(ledger.sync_client(), "run-1").call("charge", {"n": 2}, lambda: 2)
    assert "call 'charge#1' of run 'run-1'" in info.value.__notes__[0]


def test_a_tools_exception_is_recorded_as_a_failure_and_raised() -> None:
    ledger = InMemoryLedger()

    def broken() -> None:
        raise ValueError("card declined")

    with pytest.raises(ValueError, match="card declined"):
        LedgerRun(ledger.sync_client(), "run-1").call("charge", {}, broken)
    execution = ledger.execution(operation_id("run-1", "charge#1"))
    assert execution is not None
    assert (execution.status, execution.error) == ("failed", "ValueError: card declined")


async def test_reconcile_runs_on_a_reclaim_and_its_answer_is_the_result() -> None:
    ledger, effects = InMemoryLedger(), []
    seen: list[PreviousAttempt] = []

    async def reconcile(previous: PreviousAttempt, ctx: ToolContext) -> Any:
        seen.append(previous)
        return {"found": ctx.idempotency_key}  # the downstream had applied it

    async def dies() -> None:
        effects.append(1)
        raise ProcessDied  # nothing recorded: the lease lapses

    policy = ToolPolicy(reconcile=reconcile, lease_seconds=30)
    with pytest.raises(ProcessDied):
        await LedgerRun(ledger.client(worker_id="a"), "run-1", {"charge": policy}).acall(
            "charge", {}, dies
        )
    ledger.advance(31)
    rerun = LedgerRun(ledger.client(worker_id="b"), "run-1", {"charge": policy})
    result = await rerun.acall("charge", {}, dies)
    execution = ledger.execution(operation_id("run-1", "charge#1"))
    assert execution is not None
    assert result == {"found": execution.idempotency_key}
    assert effects == [1]
    assert [p.worker_id for p in seen] == ["a"]


async def test_current_call_is_the_running_calls_context_and_only_there() -> None:
    ledger = InMemoryLedger()

    async def tool() -> list[Any]:
        ctx = current_call()
        return [ctx.idempotency_key, ctx.epoch]

    key, epoch = await LedgerRun(ledger.client(), "run-1").acall("t", {}, tool)
    execution = ledger.execution(operation_id("run-1", "t#1"))
    assert execution is not None
    assert (key, epoch) == (execution.idempotency_key, 1)
    with pytest.raises(NoLedgerCallError):
        current_call()


def test_params_and_results_are_recorded_as_json() -> None:
    ledger = InMemoryLedger()
    run = LedgerRun(ledger.sync_client(), "run-1")
    assert run.call("t", {"pair": (1, 2)}, lambda: ("a", 1.0)) == ["a", 1]
    calls: list[object] = []

    def effect() -> object:
        calls.append(object())
        return calls[-1]

    # The effect ran, so an answer without a JSON form is recorded as unrecordable.
    with pytest.raises(ResultUnrecordableError, match=r"the tool ran.*not JSON data"):
        run.call("t", {}, effect)
    rerun = LedgerRun(ledger.sync_client(), "run-1")
    rerun.call("t", {"pair": (1, 2)}, lambda: ("a", 1.0))
    with pytest.raises(ResultUnrecordableError, match="never run again"):
        rerun.call("t", {}, effect)
    assert len(calls) == 1


async def test_misuse_is_a_typed_error_before_anything_is_produced() -> None:
    ledger = InMemoryLedger()
    with pytest.raises(InvalidArgumentError, match="effect"):
        ToolPolicy(effect="sometimes")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="no channel"):
        LedgerRun(ledger.sync_client()).call("t", {}, lambda: 1)
    with pytest.raises(InvalidArgumentError, match="SyncLedgerClient"):
        LedgerRun(ledger.client(), "run-1").call("t", {}, lambda: 1)
    with pytest.raises(InvalidArgumentError, match="LedgerClient"):
        await LedgerRun(ledger.sync_client(), "run-1").acall("t", {}, _never)

    async def async_hook(previous: PreviousAttempt, ctx: ToolContext) -> None:
        return None

    policy = ToolPolicy(reconcile=async_hook)
    with pytest.raises(InvalidArgumentError, match="reconcile hook is async"):
        LedgerRun(ledger.sync_client(), "run-1", {"t": policy}).call("t", {}, lambda: 1)
    assert ledger.log == []


async def _never() -> None:
    raise AssertionError("not called")


@pytest.mark.parametrize(
    ("adapter", "framework"),
    [("langchain", "langchain_core"), ("openai-agents", "agents"),
     ("pydantic-ai", "pydantic_ai"), ("mcp", "mcp")],
)  # fmt: skip
def test_a_missing_framework_names_the_extra_to_install(
    adapter: str, framework: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = f"oncelog.integrations.{adapter.replace('-', '_')}"
    monkeypatch.delitem(sys.modules, module, raising=False)
    # None in sys.modules makes an import fail; every loaded submodule too, or a
    # `from framework.sub import x` would still find the loaded `framework.sub`.
    for name in [n for n in sys.modules if n == framework or n.startswith(f"{framework}.")]:
        monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.setitem(sys.modules, framework, None)
    with pytest.raises(MissingExtraError) as info:
        importlib.import_module(module)
    assert f"pip install 'oncelog[{adapter}]'" in str(info.value)
    assert isinstance(info.value, LedgerError)
    assert info.value.code == "missing_extra"


calls = st.lists(
    st.tuples(st.sampled_from(["charge", "email", "search"]), st.integers(0, 3)), max_size=8
)


@settings(max_examples=examples(200), deadline=None)
@given(calls, st.data())
def test_a_rerun_replays_every_call_or_stops_at_the_first_that_differs(
    run_calls: list[tuple[str, int]], data: st.DataObject
) -> None:
    ledger, effects = InMemoryLedger(), list[Any]()
    first = LedgerRun(ledger.sync_client(), "run-1")
    for tool, arg in run_calls:
        first.call(tool, {"arg": arg}, _applying(effects, (tool, arg)))
    # The rerun: the same calls, or the same with one argument changed.
    changed = data.draw(st.none() | st.integers(0, max(0, len(run_calls) - 1)))
    rerun_calls = list(run_calls)
    if changed is not None and rerun_calls:
        tool, arg = rerun_calls[changed]
        rerun_calls[changed] = (tool, arg + 10)
    rerun = LedgerRun(ledger.sync_client(), "run-1")
    for index, (tool, arg) in enumerate(rerun_calls):
        if index == changed:
            with pytest.raises(ConflictError):
                rerun.call(tool, {"arg": arg}, _applying(effects, (tool, arg)))
            break
        assert rerun.call(tool, {"arg": arg}, _applying(effects, (tool, arg))) == [tool, arg]
    assert effects == run_calls  # the rerun added no effect


# --- the crash window: warnings, what a hook may answer, transport errors -------------------


def test_an_unguarded_external_tool_is_warned_of_once_before_its_first_call() -> None:
    ledger, effects = InMemoryLedger(), list[Any]()
    run = LedgerRun(ledger.sync_client(), "run-1")
    with pytest.warns(UnguardedToolWarning) as caught:
        run.call("charge", {"n": 1}, _applying(effects, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)  # once: the next call is quiet
        run.call("charge", {"n": 2}, _applying(effects, 2))
    assert len(caught) == 1
    text = str(caught[0].message)
    assert "tool 'charge' is external and unguarded" in text
    assert "ToolPolicy(reconcile=...)" in text
    assert "ToolPolicy(downstream_dedupes=True)" in text


@pytest.mark.parametrize(
    "policy",
    [ToolPolicy(effect="pure"), ToolPolicy(downstream_dedupes=True),
     ToolPolicy(reconcile=lambda previous, ctx: None)],
    ids=["pure", "downstream_dedupes", "reconcile"],
)  # fmt: skip
def test_a_pure_or_guarded_tool_is_not_warned_of(policy: ToolPolicy) -> None:
    run = LedgerRun(InMemoryLedger().sync_client(), "run-1", {"charge": policy})
    with warnings.catch_warnings():
        warnings.simplefilter("error", UnguardedToolWarning)
        run.check("charge")
        assert run.call("charge", {}, lambda: "ok") == "ok"


def test_a_declared_effect_applies_to_a_tool_without_a_policy_of_its_own() -> None:
    run = LedgerRun(InMemoryLedger().sync_client(), "run-1", {"own": ToolPolicy()})
    assert run.policy("search", "pure").effect == "pure"
    assert run.policy("search").effect == "external"
    assert run.policy("own", "pure").effect == "external"  # the user's own policy wins


class Receipt(BaseModel):
    charge_id: str


async def test_a_hooks_answer_is_recorded_as_json_like_a_tools() -> None:
    ledger = InMemoryLedger()

    async def dies() -> None:
        raise ProcessDied

    def reconcile(previous: PreviousAttempt, ctx: ToolContext) -> Receipt:
        return Receipt(charge_id="ch_1")  # a sync hook, and a pydantic model

    policy = ToolPolicy(reconcile=reconcile, lease_seconds=30)
    with pytest.raises(ProcessDied):
        await LedgerRun(ledger.client(), "run-1", {"charge": policy}).acall("charge", {}, dies)
    ledger.advance(31)
    rerun = LedgerRun(ledger.client(), "run-1", {"charge": policy})
    assert await rerun.acall("charge", {}, dies) == {"charge_id": "ch_1"}
    execution = ledger.execution(operation_id("run-1", "charge#1"))
    assert execution is not None
    assert (execution.status, execution.result) == ("completed", {"charge_id": "ch_1"})


def test_a_record_that_does_not_read_back_is_a_typed_error_naming_the_operation() -> None:
    ledger = InMemoryLedger()

    def strict(value: Any) -> Any:
        raise TypeError(f"not a receipt: {value!r}")

    shape = ResultShape(read=strict)
    with pytest.raises(RecordedResultError) as info:
        LedgerRun(ledger.sync_client(), "run-1").call("charge", {}, lambda: "ok", shape=shape)
    op = operation_id("run-1", "charge#1")
    assert f"operation {op} (call 'charge#1' of run 'run-1')" in str(info.value)
    assert info.value.code == "recorded_result_invalid"
    assert isinstance(info.value.__cause__, TypeError)
    # The rerun reads the same record the same way: a typed error, never a foreign one.
    with pytest.raises(RecordedResultError):
        LedgerRun(ledger.sync_client(), "run-1").call("charge", {}, lambda: "ok", shape=shape)


def test_a_downstream_outage_then_recovery_ends_in_one_effect(ledger_backend: Backend) -> None:
    down = start("naive")
    url = down.url
    down.stop()  # the payments service is down: connection refused

    def charge() -> Any:
        key = current_call().idempotency_key
        answer = httpx.post(
            f"{url}/effect", json={"op": "charge"}, headers={"Idempotency-Key": key}
        )
        return answer.json()["effect_id"]

    with pytest.raises(httpx.ConnectError):
        LedgerRun(ledger_backend.sync_client(), "run-1").call("charge", {}, charge)
    port = int(url.rsplit(":", 1)[1])
    up = start("naive", port=port)  # it comes back, on the same address
    try:
        # Not execution_failed: the outage was recorded as a retryable failure.
        rerun = LedgerRun(ledger_backend.sync_client(), "run-1")
        assert rerun.call("charge", {}, charge) == "fx-1"
    finally:
        up.stop()
    assert sum(up.ledger.applied.values()) == 1
    op = operation_id("run-1", "charge#1")
    assert ledger_backend.outcomes("run-1", op) == ["claimed", "failed", "reclaimed", "completed"]


@pytest.mark.parametrize(
    ("annotations", "effect"),
    [(None, None), ({"readOnlyHint": True}, "pure"), ({"readOnlyHint": False}, "external"),
     ({"idempotentHint": True}, "external"), (SimpleNamespace(read_only_hint=True), "pure"),
     (SimpleNamespace(readOnlyHint=True), "pure"), (SimpleNamespace(), "external")],
)  # fmt: skip
def test_mcp_annotations_declare_an_effect(annotations: Any, effect: str | None) -> None:
    assert effect_of_annotations(annotations) == effect
