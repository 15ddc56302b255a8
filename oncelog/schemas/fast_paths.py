"""The codec's fast path: a record of the package's own layouts, read by its generated reader.

:mod:`oncelog.schemas.codec` decodes requests and decisions through a :class:`FastPath`
before fastavro: one place for the conditions under which the generated readers
(:mod:`oncelog.schemas.inline_reader`) may judge a record, and for turning a reader's
doubt into ``None``. Compiled by mypyc (``oncelog._compiled``), since it runs once per
decoded record: the reader is called from here directly, with no wrapper between.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class FastPath:
    """A record type's generated readers, for its current layout and the previous release's.

    ``read_current(data, start)`` reads the body at ``start`` of a record of the current
    layout (``header``, the schema ``fingerprint``), ``read_previous`` one of the previous
    release's. ``read(data, registry)`` is the model, or ``None`` when fastavro must judge:
    anything but ``bytes`` (a bytearray would leak into the bytes fields), a record of the
    current layout while the registry reads another, one of the previous layout under a
    registry other than ``default_registry``, any other writer, or a record a reader is
    unsure of (whatever it raises).
    """

    name: str
    fingerprint: bytes
    header: bytes
    read_current: Callable[[bytes, int], Any]
    previous_header: bytes
    read_previous: Callable[[bytes, int], Any]
    default_registry: Any
    start: int

    def read(self, data: Any, registry: Any) -> Any:
        """The model in ``data``, or ``None``: fastavro must judge."""
        if type(data) is not bytes:
            return None
        if data.startswith(self.header):  # no slices: this runs per record
            if registry.current_fingerprint.get(self.name) != self.fingerprint:
                return None
            read = self.read_current
        elif registry is self.default_registry and data.startswith(self.previous_header):
            read = self.read_previous
        else:
            return None
        try:
            return read(data, self.start)
        except Exception:  # IndexError at a truncation, UnicodeDecodeError, UnsureError, ...
            return None
