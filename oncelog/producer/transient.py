"""Transport errors worth a retry, of HTTP clients oncelog does not import.

A tool that calls its downstream through ``httpx``, ``requests`` or ``aiohttp`` sees that
client's own errors when the downstream is down, resets the connection or times out. None of
them is a :class:`ConnectionError` or a :class:`TimeoutError` (``httpx.ConnectError`` is not),
so ``isinstance(exc, (TimeoutError, ConnectionError))`` records an outage as a failure for
good, and the rerun after recovery answers ``execution_failed``. :class:`TransientTransportError`
is a class that matches them in an ``isinstance`` check (and so in a ``retry_on`` tuple),
looked up in ``sys.modules`` when asked: a package that was never imported raised nothing.
"""

from __future__ import annotations

import sys
from typing import Final

# (module, class) pairs: connection refused or reset, a peer that hung up, a timeout.
_TRANSIENT: Final[tuple[tuple[str, str], ...]] = (
    ("httpx", "TimeoutException"),  # connect, read, write and pool timeouts
    ("httpx", "NetworkError"),  # connect, read, write and close errors
    ("httpx", "RemoteProtocolError"),  # the server closed the connection mid-answer
    ("requests.exceptions", "ConnectionError"),  # refused, reset, connect timeout
    ("requests.exceptions", "Timeout"),  # read timeout
    ("requests.exceptions", "ChunkedEncodingError"),  # the connection broke mid-body
    ("aiohttp", "ClientConnectionError"),  # refused, reset, disconnected, socket timeout
    ("aiohttp", "ClientPayloadError"),  # the connection broke mid-body
)
# Subclasses of the above that no retry can mend: a certificate stays wrong.
_PERMANENT: Final[tuple[tuple[str, str], ...]] = (
    ("requests.exceptions", "SSLError"),
    ("aiohttp", "ClientSSLError"),
)


def _loaded(pairs: tuple[tuple[str, str], ...]) -> tuple[type, ...]:
    found: list[type] = []
    for module_name, class_name in pairs:
        module = sys.modules.get(module_name)
        cls = getattr(module, class_name, None) if module is not None else None
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)


def is_transient(exc: BaseException) -> bool:
    """True for a transport error of httpx, requests or aiohttp that a retry may mend."""
    return isinstance(exc, _loaded(_TRANSIENT)) and not isinstance(exc, _loaded(_PERMANENT))


class _TransientMeta(type):
    def __instancecheck__(cls, instance: object) -> bool:
        return isinstance(instance, BaseException) and is_transient(instance)

    def __subclasscheck__(cls, subclass: type) -> bool:
        transient, permanent = _loaded(_TRANSIENT), _loaded(_PERMANENT)
        return issubclass(subclass, transient) and not issubclass(subclass, permanent)


class TransientTransportError(Exception, metaclass=_TransientMeta):
    """Matches (``isinstance``) the transient transport errors of httpx, requests and aiohttp.

    Never raised: it stands in a ``retry_on`` tuple, as in
    ``retry_on=(*DEFAULT_RETRY_ON, MyDownstreamBusy)``.
    """
