"""The seam between the client calls and the log: send a request, get its decision.

:class:`~oncelog.producer.dispatch.Dispatcher` is the Kafka transport;
:class:`oncelog.testing.InMemoryLedger` folds requests in process. The calls
(:mod:`oncelog.producer.calls`) and the executor are written once above it.
"""

from __future__ import annotations

from typing import Protocol

from oncelog.producer.clock import Clock
from oncelog.schemas.models import Decision, ExecutionSnapshot, Request
from oncelog.tracing.propagation import Headers


class Transport(Protocol):
    """Put requests on the log and read their decisions back."""

    @property
    def clock(self) -> Clock:
        """The clock that stands in for log time on this transport."""
        ...

    def start(self) -> None:
        """Connect (blocking)."""
        ...

    def close(self) -> None:
        """Disconnect (blocking)."""
        ...

    def call(self, request: Request) -> Decision:
        """Blocking: send ``request`` (again, on silence) and return its decision."""
        ...

    async def acall(self, request: Request, headers: Headers | None = None) -> Decision:
        """Async :meth:`call`; ``headers``: the trace context to carry when no span is
        current here (an HTTP caller's, in the write API)."""
        ...

    def send_acknowledged(self, request: Request, timeout_s: float) -> None:
        """Send once and return once the log has it, without reading the decision."""
        ...

    def channel_snapshots(self, channel_id: str) -> list[ExecutionSnapshot]:
        """Blocking: the published state versions of ``channel_id``'s operations (a fork
        reads its parent here); more than one version of an operation may be listed."""
        ...
