"""A framework's current span made OpenTelemetry's current span, where the framework's
instrumentation does not do it itself.

Pydantic AI and the OpenAI Agents SDK's OpenTelemetry bridges make their tool span
current, so the ledger's spans nest under it with nothing done here. OpenInference's
LangChain instrumentor builds its spans from LangChain's callbacks and keeps them out
of the current context: inside a tool, :func:`langchain_span` finds the tool run's span
(``get_current_span``, OpenInference's own lookup) and makes it current for the block.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Final

from oncelog.tracing import active

_OPENINFERENCE_LANGCHAIN: Final = "openinference.instrumentation.langchain"


@contextmanager
def langchain_span() -> Iterator[None]:
    """The block runs under the current LangChain run's span (when OpenInference traces
    LangChain and tracing is on; otherwise it runs as it is)."""
    if not active() or _OPENINFERENCE_LANGCHAIN not in sys.modules:
        yield
        return
    from openinference.instrumentation.langchain import get_current_span  # noqa: PLC0415
    from opentelemetry import context, trace  # noqa: PLC0415  # tracing on

    span = get_current_span()
    if span is None:
        yield
        return
    token = context.attach(trace.set_span_in_context(span))
    try:
        yield
    finally:
        context.detach(token)
