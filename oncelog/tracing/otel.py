"""Whether this process traces, checked without importing OpenTelemetry.

A tracer provider can only have been set by code that imported ``opentelemetry.trace``.
Until something has, :func:`active` is one dictionary lookup and oncelog imports no
OpenTelemetry at all (the ``otel`` extra may be absent). After, it asks the API for the
global provider: the API's default (a proxy, or the no-op one) means nobody records.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from opentelemetry.trace import Tracer

#: The instrumentation scope of every oncelog span.
SCOPE: Final = "oncelog"
_TRACE_MODULE: Final = "opentelemetry.trace"

_tracers: dict[int, tuple[object, Tracer]] = {}


def active() -> bool:
    """True when a tracer provider is set in this process (its spans may be recorded)."""
    if _TRACE_MODULE not in sys.modules:
        return False
    import opentelemetry.trace as trace_api  # noqa: PLC0415  # imported already, by someone else

    provider = trace_api.get_tracer_provider()
    unset = (trace_api.ProxyTracerProvider, trace_api.NoOpTracerProvider)
    return not isinstance(provider, unset)


def tracer() -> Tracer:
    """oncelog's tracer from the global provider (one per provider, made once)."""
    import opentelemetry.trace as trace_api  # noqa: PLC0415  # only once tracing is on

    provider = trace_api.get_tracer_provider()
    known = _tracers.get(id(provider))
    if known is None or known[0] is not provider:
        known = _tracers[id(provider)] = (provider, provider.get_tracer(SCOPE))
    return known[1]
