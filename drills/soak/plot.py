"""A PNG of the soak's samples, drawn without a plotting library (zlib and struct only).

Four panels share the time axis: ``serve``'s RSS, the broker's RSS, claim p50 and p99,
the projector's lag. A vertical line marks each fault (red: a projector kill, purple: the
broker restart, orange: a network fault). Each panel is labelled with its name and its
range, in a 3x5 pixel font.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from collections.abc import Sequence
from pathlib import Path

from drills.soak.criteria import Sample

Color = tuple[int, int, int]
WIDTH, PANEL, MARGIN, SCALE = 960, 170, 24, 2
_INK: Color = (40, 40, 40)
_GRID: Color = (225, 225, 225)
_FAULTS: dict[str, Color] = {"projector_kill": (220, 40, 40), "broker_restart": (140, 60, 200),
                             "network": (245, 150, 30)}  # fmt: skip
#: 3x5 glyphs, rows top to bottom, each row three bits.
_FONT = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111",
    "3": "111001111001111", "4": "101101111001001", "5": "111100111001111",
    "6": "111100111101111", "7": "111001001001001", "8": "111101111101111",
    "9": "111101111001111", ".": "000000000000010", " ": "000000000000000",
    "-": "000000111000000", "/": "001001010100100", ":": "000010000010000",
    "A": "010101111101101", "B": "110101110101110", "C": "111100100100111",
    "D": "110101101101110", "E": "111100110100111", "G": "111100101101111",
    "H": "101101111101101", "I": "111010010010111", "K": "101101110101101",
    "L": "100100100100111", "M": "101111111101101", "N": "110101101101101",
    "O": "111101101101111", "P": "111101111100100", "R": "110101110101101",
    "S": "111100111001111", "T": "111010010010010", "U": "101101101101111",
    "V": "101101101101010", "W": "101101111111101", "X": "101101010101101",
    "Y": "101101010010010", "F": "111100110100100", "J": "001001001101111",
    "Q": "111101101111001", "Z": "111001010100111", "=": "000111000111000",
}  # fmt: skip


class Canvas:
    """An RGB raster with lines, text and a PNG encoder."""

    def __init__(self, width: int, height: int) -> None:
        self.width, self.height = width, height
        self.pixels = bytearray(b"\xff" * (width * height * 3))

    def dot(self, x: int, y: int, color: Color) -> None:
        """One pixel (outside the canvas: ignored)."""
        if 0 <= x < self.width and 0 <= y < self.height:
            i = (y * self.width + x) * 3
            self.pixels[i : i + 3] = bytes(color)

    def line(self, a: tuple[int, int], b: tuple[int, int], color: Color) -> None:
        """A straight line from ``a`` to ``b`` (Bresenham)."""
        (x0, y0), (x1, y1) = a, b
        dx, dy = abs(x1 - x0), -abs(y1 - y0)
        sx, sy = (1 if x0 < x1 else -1), (1 if y0 < y1 else -1)
        err = dx + dy
        while True:
            self.dot(x0, y0, color)
            if (x0, y0) == (x1, y1):
                return
            e2 = 2 * err
            if e2 >= dy:
                err, x0 = err + dy, x0 + sx
            if e2 <= dx:
                err, y0 = err + dx, y0 + sy

    def text(self, x: int, y: int, words: str, color: Color = _INK) -> None:
        """``words`` (upper-cased) in the 3x5 font, ``SCALE`` times larger."""
        for n, char in enumerate(words.upper()):
            glyph = _FONT.get(char, _FONT[" "])
            for bit, on in enumerate(glyph):
                if on == "1":
                    gx, gy = x + (n * 4 + bit % 3) * SCALE, y + (bit // 3) * SCALE
                    for px in range(SCALE):
                        for py in range(SCALE):
                            self.dot(gx + px, gy + py, color)

    def png(self) -> bytes:
        """The canvas as a PNG file."""
        stride = self.width * 3
        raw = b"".join(b"\x00" + bytes(self.pixels[y * stride : (y + 1) * stride])
                       for y in range(self.height))  # fmt: skip

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))  # fmt: skip


_SERIES: list[tuple[str, list[tuple[str, Color]]]] = [
    ("SERVE RSS AND DUCKDB MB", [("rss_serve_mb", (30, 100, 200)), ("duckdb_mb", (230, 140, 20))]),
    ("BROKER RSS MB", [("rss_broker_mb", (30, 150, 70))]),
    ("CLAIM P50 P99 MS", [("p50_ms", (30, 100, 200)), ("p99_ms", (220, 40, 40))]),
    ("LAG RECORDS", [("lag", (90, 90, 90))]),
]


def plot(samples: Sequence[Sample], faults: Sequence[tuple[float, str]], path: Path) -> None:
    """Write the four panels of ``samples`` to ``path``; ``faults``: (seconds, kind)."""
    canvas = Canvas(WIDTH, MARGIN + len(_SERIES) * (PANEL + MARGIN))
    end = max([s.t for s in samples] + [1.0])
    for n, (title, series) in enumerate(_SERIES):
        top = MARGIN + n * (PANEL + MARGIN)
        _panel(canvas, samples, faults, end, top=top, title=title, series=series)
    canvas.text(MARGIN, canvas.height - 14, f"0 - {end / 60:.0f} MIN")
    path.write_bytes(canvas.png())


def _panel(
    canvas: Canvas, samples: Sequence[Sample], faults: Sequence[tuple[float, str]],
    end: float, *, top: int, title: str, series: list[tuple[str, Color]],
) -> None:  # fmt: skip
    left, right, bottom = MARGIN, WIDTH - MARGIN, top + PANEL
    values: list[float] = [
        getattr(s, a) for s in samples for a, _ in series if getattr(s, a) is not None
    ]
    high = max([*values, 1e-09]) * 1.1

    def x_of(t: float) -> int:
        return left + round((right - left) * t / end)

    def y_of(v: float) -> int:
        return bottom - round((PANEL - 14) * v / high)

    for y in (top + 14, bottom):
        canvas.line((left, y), (right, y), _GRID)
    for t, kind in faults:
        canvas.line((x_of(t), top + 14), (x_of(t), bottom), _FAULTS.get(kind, _GRID))
    for attr, color in series:
        points = [(x_of(s.t), y_of(getattr(s, attr))) for s in samples
                  if getattr(s, attr) is not None]  # fmt: skip
        for a, b in itertools.pairwise(points):
            canvas.line(a, b, color)
    canvas.text(left, top, f"{title}  0 - {high / 1.1:.1f}")
