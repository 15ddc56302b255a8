"""Fresh request ids and claim tokens from buffered OS randomness.

``uuid.uuid4()`` and ``secrets.token_hex`` each make a ``getrandom`` system call,
and CPython releases the GIL around it: under concurrency the calling thread
then often waits for another thread to hand the GIL back. Reading 4 KiB at a
time makes that one call per 256 draws. The bytes are the same kernel CSPRNG
output, so a token stays a 128-bit capability. A forked child drops the buffer
(it would otherwise hand out the parent's next tokens again).
"""

from __future__ import annotations

import os
import threading
from typing import Final

_CHUNK: Final = 4096


class RandomPool:
    """Kernel random bytes, read a chunk at a time; thread-safe and fork-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._buffer = b""
        self._pos = 0

    def take(self, n: int) -> bytes:
        """``n`` (at most one chunk) fresh random bytes, never handed out before."""
        with self._lock:
            pos = self._pos
            if pos + n > len(self._buffer):
                self._buffer, pos = os.urandom(_CHUNK), 0
            self._pos = pos + n
            return self._buffer[pos : pos + n]

    def reset(self) -> None:
        """Forget the buffered bytes (in a forked child)."""
        self._lock = threading.Lock()  # the parent's may have been held at fork
        self._buffer, self._pos = b"", 0


_POOL: Final = RandomPool()
os.register_at_fork(after_in_child=_POOL.reset)


def claim_token() -> str:
    """A fresh 128-bit random claim token (32 hex digits)."""
    return _POOL.take(16).hex()


def request_id() -> str:
    """A fresh random UUID (version 4) in its usual text form."""
    raw = bytearray(_POOL.take(16))
    raw[6] = (raw[6] & 0x0F) | 0x40  # version 4
    raw[8] = (raw[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = raw.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
