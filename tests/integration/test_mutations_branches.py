"""Adoption across branches, on the in-memory ledger (the real clients and fold, no broker).

An external call of a branch first looks for the same completion in the other channels of
its family; the rows the mutation audit found unguarded (issue 41): a pure tool never
adopts, adoption never reads the adopting channel itself, and it yields to the branch's
own claim instead of raising.
"""

from __future__ import annotations

from typing import Any

from oncelog.integrations import LedgerRun, ToolPolicy
from oncelog.integrations.run import Branch
from oncelog.schemas.models import Kind
from oncelog.testing import InMemoryLedger

PARENT, BRANCH = "order-7", "order-7~b"
PARAMS = {"order": "7"}


def _records_of(ledger: InMemoryLedger, channel: str, since: int = 0) -> list[Kind]:
    """The kinds of the requests on ``channel`` appended after the first ``since`` records."""
    return [r.outcome.kind for r in ledger.log[since:] if r.request.channel_id == channel]


def test_a_pure_tool_runs_again_in_a_branch_instead_of_adopting() -> None:
    ledger = InMemoryLedger()
    ran: list[str] = []
    policies = {"lookup": ToolPolicy(effect="pure")}

    def lookup(where: str) -> Any:
        ran.append(where)
        return {"found": where}

    with ledger.sync_client() as client:
        parent = LedgerRun(client, PARENT, policies=policies)
        assert parent.call("lookup", PARAMS, lambda: lookup("parent")) == {"found": "parent"}
        rerun = LedgerRun(client, PARENT, policies=policies)
        branch = Branch(BRANCH, (PARENT,))
        got = rerun.call("lookup", PARAMS, lambda: lookup("branch"), branch=branch)
        assert ran == ["parent", "branch"]  # free to replay: the branch runs it itself
        assert got == {"found": "branch"}
        assert Kind.INHERIT not in _records_of(ledger, BRANCH)
        (own,) = client.channel_executions(BRANCH)
        assert own.inherited is None


def test_adoption_reads_only_the_other_channels_of_the_family() -> None:
    ledger = InMemoryLedger()
    with ledger.sync_client() as client:
        claim = client.claim_execution(BRANCH, "charge#1", tool_name="charge", params=PARAMS)
        client.complete_execution(claim.execution, claim.claim_token, {"charged": 1})
        before = len(ledger.log)
        adopted = client.adopt_execution(
            BRANCH, "charge#1", tool_name="charge", params=PARAMS, from_channels=[BRANCH, PARENT]
        )
        # Its own completion is no other branch's: nothing adopted, nothing written on it.
        assert adopted is None
        assert _records_of(ledger, BRANCH, before) == []
        assert _records_of(ledger, PARENT, before) == [Kind.GET]


def test_adoption_yields_to_the_branchs_own_claim_after_a_crash() -> None:
    ledger = InMemoryLedger()
    with ledger.sync_client(worker_id="crashed") as crashed, ledger.sync_client() as client:
        # The branch claimed the charge and its worker died; the parent then completed the
        # same request.
        crashed.claim_execution(BRANCH, "charge#1", tool_name="charge", params=PARAMS)
        done = client.claim_execution(PARENT, "charge#1", tool_name="charge", params=PARAMS)
        client.complete_execution(done.execution, done.claim_token, {"charged": 1})
        adopted = client.adopt_execution(
            BRANCH, "charge#1", tool_name="charge", params=PARAMS, from_channels=[PARENT]
        )
        assert adopted is None  # the branch's own claim decides: no ForkConflictError
        # ... and the branch resumes: once the lease lapses its claim is taken over.
        ledger.advance(120)
        again = client.claim_execution(BRANCH, "charge#1", tool_name="charge", params=PARAMS)
        assert again.status == "reclaimed"
        assert again.execution.inherited is None
