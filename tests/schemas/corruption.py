"""Byte-level corruptions of encoded records, for the generated readers' tests."""

from __future__ import annotations

from hypothesis import strategies as st

from oncelog.schemas import codec


def corrupt(draw: st.DrawFn, record: bytes) -> bytes:
    """``record`` with one to three flips, truncations, insertions or deletions in its body."""
    base = bytearray(record)
    for _ in range(draw(st.integers(1, 3))):
        how = draw(st.sampled_from(["flip", "truncate", "insert", "delete"]))
        pos = draw(st.integers(codec.HEADER_LEN, max(codec.HEADER_LEN, len(base) - 1)))
        if how == "flip" and pos < len(base):
            base[pos] = draw(st.integers(0, 255))
        elif how == "truncate":
            del base[pos:]
        elif how == "insert":
            base[pos:pos] = draw(st.binary(min_size=1, max_size=4))
        else:
            del base[pos : pos + draw(st.integers(1, 4))]
    return bytes(base)
