"""A LangGraph checkpointer on the ledger's log: ``OncelogSaver`` (docs/langgraph.md).

    saver = OncelogSaver(with_bootstrap(Settings()))
    graph = builder.compile(checkpointer=saver)

Needs the ``langgraph`` extra (``pip install 'oncelog[langgraph]'``) and a running
``oncelog serve``, which folds the checkpoints and answers the saver's reads.
"""

from oncelog.integrations.extras import requires_extra

with requires_extra("langgraph"):
    from oncelog.integrations.langgraph.saver import (
        PAGE,
        LedgerFork,
        OncelogSaver,
        fork_ledger_runs,
    )

AsyncOncelogSaver = OncelogSaver
"""The same class: its async methods (``aput``, ``aget_tuple`` …) serve async graphs."""

__all__ = ["PAGE", "AsyncOncelogSaver", "LedgerFork", "OncelogSaver", "fork_ledger_runs"]
