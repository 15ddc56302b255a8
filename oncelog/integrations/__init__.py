"""Framework adapters: every tool call of an agent claimed, replayed on rerun, completed or failed.

One optional extra per framework (``pip install 'oncelog[langchain]'`` and so on):

- :mod:`oncelog.integrations.langchain`: LangChain tools, in a LangGraph agent or alone;
- :mod:`oncelog.integrations.openai_agents`: function tools of the OpenAI Agents SDK;
- :mod:`oncelog.integrations.pydantic_ai`: Pydantic AI tools, or a whole toolset;
- :mod:`oncelog.integrations.mcp`: the tools an MCP server offers, called through a session.

All of them run through one :class:`~oncelog.integrations.run.LedgerRun` (the run's channel,
the key rule, the per-tool :class:`~oncelog.integrations.policy.ToolPolicy`) and the SDK's
one executor. An ``external`` tool with neither a reconcile hook nor a downstream that
dedupes its idempotency key is warned of (:class:`UnguardedToolWarning`): see
``docs/frameworks.md``. This package imports no framework: each adapter module does, and
names its extra when the framework is missing.
"""

from oncelog.integrations.policy import ToolPolicy, UnguardedToolWarning
from oncelog.integrations.recorded import RecordedResultError
from oncelog.integrations.run import LedgerRun, NoLedgerCallError, current_call

__all__ = [
    "LedgerRun",
    "NoLedgerCallError",
    "RecordedResultError",
    "ToolPolicy",
    "UnguardedToolWarning",
    "current_call",
]
