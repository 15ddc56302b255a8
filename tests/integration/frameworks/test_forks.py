"""Forks that never re-fire an effect (issue 29): a LangGraph agent resumed from earlier
checkpoints, against a downstream that counts every charge and email and never dedupes.

Each scenario runs on the in-memory ledger and on Kafka with a projector (``ledger_backend``).
A "process" is a new LedgerRun, new tools and a new graph on the same checkpointer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from oncelog.identity.ids import operation_id
from oncelog.integrations import LedgerRun
from oncelog.kafka.reader import topic_ends
from oncelog.query.catch_up import wait_until_folded
from oncelog.query.source import HttpSource
from oncelog.testing import InMemoryLedger
from tests.integration.conftest import FAST
from tests.integration.contract import Backend
from tests.integration.frameworks.forked_agent import (
    ORDER,
    THREAD,
    Died,
    Downstream,
    agent_graph,
    checkpoint_where,
    policies,
    thread,
)
from tests.served import Served, serving


def _process(backend: Backend, downstream: Downstream, saver: Any, **options: Any) -> Any:
    run = LedgerRun(backend.sync_client(), policies=policies(downstream, **options))
    return agent_graph(run, downstream, saver)


def _first_run(backend: Backend, downstream: Downstream, saver: Any) -> Any:
    graph = _process(backend, downstream, saver)
    out = graph.invoke({"messages": [HumanMessage(ORDER)]}, thread())
    assert out["messages"][-1].content == "done"
    assert (downstream.charges, len(downstream.emails)) == ([4200], 1)
    return graph


def _executions(backend: Backend, channel: str) -> dict[str, Any]:
    return {e.key_name: e for e in backend.sync_client().channel_executions(channel)}


def _branch_channel(graph: Any) -> str:
    """The channel of the thread's newest checkpoint's branch (the one just run)."""
    from oncelog.integrations.branches import CheckpointTree  # noqa: PLC0415

    saver = graph.checkpointer
    tree = CheckpointTree.of(saver.list(thread()))
    newest = graph.get_state(thread()).config["configurable"]["checkpoint_id"]
    return tree.channel(THREAD, newest)


def test_fork_after_charge_with_another_email_sends_it_and_never_charges_again(
    ledger_backend: Backend,
) -> None:
    downstream, saver = Downstream(), InMemorySaver()
    graph = _first_run(ledger_backend, downstream, saver)
    after_charge = checkpoint_where(graph, last_tool="charge", next_node="agent")
    graph = _process(ledger_backend, downstream, saver)
    edited = graph.update_state(after_charge.config, {"messages": [HumanMessage("sign Ada")]})
    out = graph.invoke(None, edited)
    assert out["messages"][-1].content == "done"
    assert downstream.charges == [4200]
    assert len(downstream.emails) == 2
    assert downstream.emails[1].endswith("Ada")
    branch = _branch_channel(graph)
    assert branch != THREAD
    executions = _executions(ledger_backend, branch)
    # The branch inherited the charge the parent made before the fork, and sent its own email.
    charge = executions["charge#1"]
    assert charge.inherited is not None
    assert (charge.inherited.from_channel, charge.inherited.adopted) == (THREAD, False)
    assert executions["send_email#1"].inherited is None
    assert executions["send_email#1"].status == "completed"


def test_fork_before_charge_unchanged_replays_the_charge_taken_from_the_other_branch(
    ledger_backend: Backend,
) -> None:
    downstream, saver = Downstream(), InMemorySaver()
    graph = _first_run(ledger_backend, downstream, saver)
    before_charge = checkpoint_where(graph, last_tool=None, next_node="agent")
    graph = _process(ledger_backend, downstream, saver)
    out = graph.invoke(None, before_charge.config)
    assert out["messages"][-1].content == "done"
    assert downstream.charges == [4200]  # not run again
    assert len(downstream.emails) == 1  # the same email, also taken from the first branch
    branch = _branch_channel(graph)
    charge = _executions(ledger_backend, branch)["charge#1"]
    assert charge.inherited is not None
    assert (charge.inherited.from_channel, charge.inherited.adopted) == (THREAD, True)
    parent = _executions(ledger_backend, THREAD)["charge#1"]
    assert charge.result == parent.result
    assert charge.id == operation_id(branch, "charge#1") != parent.id


def test_a_tool_that_runs_per_branch_runs_again_in_the_fork(ledger_backend: Backend) -> None:
    downstream, saver = Downstream(), InMemorySaver()
    graph = _first_run(ledger_backend, downstream, saver)
    before_charge = checkpoint_where(graph, last_tool=None, next_node="agent")
    graph = _process(ledger_backend, downstream, saver, per_branch=True)
    graph.invoke(None, before_charge.config)
    assert downstream.charges == [4200, 4200]
    assert len(downstream.emails) == 1  # send_email is not per branch


def _fork_with_another_amount(backend: Backend, downstream: Downstream, saver: Any) -> Any:
    """After a first run, a process edits the order's amount before the charge; returns
    that process's graph and the edited checkpoint to resume."""
    graph = _first_run(backend, downstream, saver)
    before_charge = checkpoint_where(graph, last_tool=None, next_node="agent")
    human = before_charge.values["messages"][-1]
    graph = _process(backend, downstream, saver)
    changed = HumanMessage("order 4471 amount 5000", id=human.id)
    return graph, graph.update_state(before_charge.config, {"messages": [changed]})


def test_fork_before_charge_with_another_amount_runs_its_own_charge(
    ledger_backend: Backend,
) -> None:
    downstream, saver = Downstream(), InMemorySaver()
    graph, edited = _fork_with_another_amount(ledger_backend, downstream, saver)
    graph.invoke(None, edited)
    assert downstream.charges == [4200, 5000]
    assert len(downstream.emails) == 2  # its email names another amount
    charge = _executions(ledger_backend, _branch_channel(graph))["charge#1"]
    assert charge.inherited is None
    assert charge.params["amount_cents"] == 5000


def test_a_crash_and_rerun_inside_a_branch_behaves_as_unforked(ledger_backend: Backend) -> None:
    downstream, saver = Downstream(), InMemorySaver()
    graph, edited = _fork_with_another_amount(ledger_backend, downstream, saver)
    downstream.crash_after_charge = True
    with pytest.raises(Died):
        graph.invoke(None, edited)
    branch = _branch_channel(graph)
    held = _executions(ledger_backend, branch)["charge#1"]
    assert held.status == "claimed"
    ledger_backend.pass_log_time(held.lease_deadline_ms)
    rerun = _process(ledger_backend, downstream, saver)  # a new process resumes the thread
    out = rerun.invoke(None, thread())
    assert out["messages"][-1].content == "done"
    # The reclaim asked the downstream (reconcile) instead of charging twice, as unforked.
    assert downstream.charges == [4200, 5000]
    assert len(downstream.emails) == 2
    charge = _executions(ledger_backend, branch)["charge#1"]
    assert (charge.status, charge.epoch) == ("completed", 2)
    assert _branch_channel(rerun) == branch


async def test_the_async_graph_forks_as_the_blocking_one() -> None:
    """``ainvoke`` with a LedgerClient: the branch is found with the saver's async listing."""
    ledger, downstream, saver = InMemoryLedger(), Downstream(), InMemorySaver()

    def process() -> Any:
        return agent_graph(
            LedgerRun(ledger.client(), policies=policies(downstream)), downstream, saver
        )

    graph = process()
    await graph.ainvoke({"messages": [HumanMessage(ORDER)]}, thread())
    before_charge = checkpoint_where(graph, last_tool=None, next_node="agent")
    graph = process()
    out = await graph.ainvoke(None, before_charge.config)
    assert out["messages"][-1].content == "done"
    assert (downstream.charges, len(downstream.emails)) == ([4200], 1)
    branch = _branch_channel(graph)
    charge = await ledger.client().channel_executions(branch)
    (taken,) = [e for e in charge if e.key_name == "charge#1"]
    assert taken.inherited is not None
    assert (taken.inherited.from_channel, taken.inherited.adopted) == (THREAD, True)


SCENARIOS = [
    test_fork_after_charge_with_another_email_sends_it_and_never_charges_again,
    test_fork_before_charge_unchanged_replays_the_charge_taken_from_the_other_branch,
    test_a_tool_that_runs_per_branch_runs_again_in_the_fork,
    test_fork_before_charge_with_another_amount_runs_its_own_charge,
    test_a_crash_and_rerun_inside_a_branch_behaves_as_unforked,
]


@pytest.mark.kafka
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.__name__[5:40] for s in SCENARIOS])
def test_the_scenarios_against_oncelog_serve(scenario: Any, bootstrap: str, tmp_path: Path) -> None:
    """The same scenarios with ``oncelog serve`` (a process of its own) folding the log."""
    with serving(bootstrap, tmp_path) as served:
        _run_on(served, scenario)


@pytest.mark.kafka
def test_a_per_branch_rerun_is_a_double_in_the_served_audit(bootstrap: str, tmp_path: Path) -> None:
    """``oncelog duplicates`` (here its HTTP route) lists the fork's second charge as a
    cross-branch double, naming the first branch; the adopted email is no double."""
    with serving(bootstrap, tmp_path) as served:
        _run_on(served, test_a_tool_that_runs_per_branch_runs_again_in_the_fork)
        source = HttpSource(served.url)
        settings = served.settings
        ends = topic_ends(settings.kafka_config(bootstrap), settings.requests_topic)
        wait_until_folded(source, ends, timeout_s=60)
        doubles = [d for d in source.duplicates(100) if d.kind == "cross_branch"]
    assert [(d.key_name, d.other_channel_id) for d in doubles] == [("charge#1", THREAD)]
    assert doubles[0].channel_id.startswith(f"{THREAD}~")


def _run_on(served: Served, scenario: Any) -> None:
    """Run ``scenario`` with clients of the served ledger's topics."""
    backend = Backend("served", served.settings, FAST)
    try:
        scenario(backend)
    finally:
        backend.close()
