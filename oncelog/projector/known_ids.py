"""The operation ids DuckDB may hold, in a fixed amount of memory (a Bloom filter).

The projector asks DuckDB for a state only when the store may hold its operation: most
claims name new operations and need no lookup at all. A set of every stored id grew with
the ledger; this filter keeps a fixed number of bits whatever the ledger's size. It never
answers "no" for an id it was given, so no stored state is ever missed (a decision is the
same as with the set); a rare false "maybe" costs one lookup that finds nothing, and grows
more frequent only as the ledger reaches millions of operations per projector.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

#: 2**26 bits (8 MiB): with 7 probes, about 1 false "maybe" in 10 million lookups at a
#: million ids, 1 in 20 at ten million.
DEFAULT_BITS: Final = 1 << 26
PROBES: Final = 7
_HALF: Final = 32
_LOW: Final = (1 << _HALF) - 1


class KnownIds:
    """Ids added here answer True to ``in``; others answer False, all but rarely."""

    def __init__(self, bits: int = DEFAULT_BITS) -> None:
        if bits < 8 or bits & (bits - 1):
            raise ValueError(f"bits must be a power of two of at least 8, not {bits}")
        self._mask = bits - 1
        self._bits = bytearray(bits // 8)

    @property
    def size_bytes(self) -> int:
        """The memory the filter holds, however many ids were added."""
        return len(self._bits)

    def _double_hash(self, operation_id: str) -> tuple[int, int]:
        # Two halves of the string's hash (fixed within this process, which is all the
        # filter lives for) make the probes: h1 + i * h2, the usual double hashing. Each
        # half fits a machine word, so the compiled loops below stay in small ints.
        h = hash(operation_id)
        return h & _LOW, (h >> _HALF) & _LOW | 1

    def add(self, operation_id: str) -> None:
        """Remember ``operation_id``: ``in`` answers True for it from now on."""
        h1, h2 = self._double_hash(operation_id)
        bits, mask = self._bits, self._mask
        for i in range(PROBES):
            p = (h1 + i * h2) & mask
            bits[p >> 3] |= 1 << (p & 7)

    def update(self, operation_ids: Iterable[str]) -> None:
        """:meth:`add` each of ``operation_ids``."""
        for op in operation_ids:
            self.add(op)

    def __contains__(self, operation_id: object) -> bool:
        if not isinstance(operation_id, str):
            return False
        h1, h2 = self._double_hash(operation_id)
        bits, mask = self._bits, self._mask
        for i in range(PROBES):
            p = (h1 + i * h2) & mask
            if not bits[p >> 3] & (1 << (p & 7)):
                return False
        return True
