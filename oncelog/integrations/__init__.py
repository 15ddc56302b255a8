"""Framework adapters: every tool call of an agent claimed, replayed on rerun, completed or failed.

One optional extra per framework (``pip install 'oncelog[langchain]'`` and so on):

- :mod:`oncelog.integrations.langchain`: LangChain tools, in a LangGraph agent or alone;
- :mod:`oncelog.integrations.openai_agents`: function tools of the OpenAI Agents SDK;
- :mod:`oncelog.integrations.pydantic_ai`: Pydantic AI tools, or a whole toolset;
- :mod:`oncelog.integrations.mcp`: the tools an MCP server offers, called through a session.

All of them run through one :class:`~oncelog.integrations.run.LedgerRun` (the run's channel,
the key rule, the per-tool policy) and the SDK's one executor. This package imports no
framework: each adapter module does, and names its extra when the framework is missing.
"""

from oncelog.integrations.run import (
    LedgerRun,
    NoLedgerCallError,
    ToolPolicy,
    current_call,
)

__all__ = ["LedgerRun", "NoLedgerCallError", "ToolPolicy", "current_call"]
