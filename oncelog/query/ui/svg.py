"""The run timeline as inline SVG, drawn on the server. Pure: a view in, markup out.

One row a step, one mark a request. The time axis is compressed: each request
gets a slot of its own (requests a millisecond apart stay apart) and the gap
before it grows with the logarithm of the time that passed, so a lease that
lapsed after a second reads as a visible gap. Ticks carry the real times.

Every mark is a link to its row in the detail table (``#d<ident>``, highlighted by
CSS ``:target``) and has a ``<title>`` tooltip: no script needed. Every value
from the log is escaped.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass
from html import escape
from typing import Final

from oncelog.query.ui import facts
from oncelog.query.ui.timeline_model import MARK_KINDS, Lease, Mark, RunView, StepRow

LABEL_W: Final = 230
ROW_H: Final = 46
AXIS_H: Final = 46
SLOT_PX: Final = 24
GAP_PX_PER_DECADE: Final = 14  # extra px per 10x of the time between two requests
TAIL_MAX_PX: Final = 90  # how far past the last request a lease may still be drawn
RIGHT_PAD: Final = 40
MIN_TICK_PX: Final = 60

COLOURS: Final = {
    "claim": "#2e7d32",
    "heartbeat": "#546e7a",
    "complete": "#1b5e20",
    "fail": "#c62828",
    "reclaim": "#ef6c00",
    "unknown": "#ff6f00",
    "replay": "#1565c0",
    "fenced": "#d50000",
    "stale": "#ad1457",
    "cancel": "#6d4c41",
    "release": "#00838f",
    "expired": "#757575",
    "result-expired": "#9e9e9e",
    "in-progress": "#9e9e9e",
    "inherit": "#6a1b9a",
    "adopt": "#4527a0",
    "awaiting-approval": "#f9a825",
    "approved": "#2e7d32",
    "denied": "#b71c1c",
    "approval-expired": "#757575",
    "approval-refused": "#ad1457",
    "other": "#bdbdbd",
}
EFFECT_FILL: Final = {"pure": "#eef5ff", "external": "#fff3e0", None: "#f5f5f5"}
EFFECT_STRIP: Final = {"pure": "#1e88e5", "external": "#fb8c00", None: "#9e9e9e"}
STATUS_COLOUR: Final = {
    "completed": "#1b5e20",
    "claimed": "#ef6c00",
    "failed": "#c62828",
    "expired": "#757575",
    "absent": "#757575",
}


def _a(value: object) -> str:
    """An escaped attribute or text value."""
    return escape(str(value), quote=True)


@dataclass(frozen=True)
class Scale:
    """Where each request's slot and any log time fall on the x axis."""

    times: tuple[int, ...]  # log time of each slot, in log order
    xs: tuple[float, ...]
    slots: dict[str, int]  # mark ident -> its slot

    def slot_x(self, ident: str) -> float:
        """The x of one mark's own slot (requests of one millisecond stay apart)."""
        return self.xs[self.slots[ident]]

    @classmethod
    def of(cls, marks: tuple[Mark, ...]) -> Scale:
        """Slots for ``marks`` (log order), each at least ``SLOT_PX`` after the last."""
        times = tuple(m.entry.log_time_ms for m in marks)
        xs: list[float] = []
        x = LABEL_W + SLOT_PX / 2
        for i, t in enumerate(times):
            if i:
                x += SLOT_PX + _gap_px(t - times[i - 1])
            xs.append(x)
        return cls(times, tuple(xs), {m.ident: i for i, m in enumerate(marks)})

    def at(self, t_ms: int) -> float:
        """The x of a log time: between the slots around it, or past the last one."""
        if not self.times:
            return float(LABEL_W)
        if t_ms <= self.times[0]:
            return self.xs[0]
        if t_ms >= self.times[-1]:
            return self.xs[-1] + min(_gap_px(t_ms - self.times[-1]), TAIL_MAX_PX)
        i = bisect.bisect_right(self.times, t_ms) - 1
        t0, t1, x0, x1 = self.times[i], self.times[i + 1], self.xs[i], self.xs[i + 1]
        return x0 + (x1 - x0) * (t_ms - t0) / (t1 - t0)

    @property
    def width(self) -> float:
        """The chart's width, room for a lease past the last request included."""
        return (self.xs[-1] if self.xs else LABEL_W) + TAIL_MAX_PX + RIGHT_PAD


def _gap_px(dt_ms: int) -> float:
    return GAP_PX_PER_DECADE * math.log10(1 + max(dt_ms, 0))


def mark_shape(kind: str, x: float, y: float) -> str:
    """The glyph of a mark kind centred on (x, y); the legend uses the same."""
    c = COLOURS[kind]
    if kind == "claim":
        return (
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="7" fill="#fff" stroke="{c}" stroke-width="3"/>'
        )
    if kind in ("reclaim", "unknown"):
        pts = f"{x:.1f},{y - 9:.1f} {x + 8:.1f},{y + 6:.1f} {x - 8:.1f},{y + 6:.1f}"
        shape = f'<polygon points="{pts}" fill="{c}" stroke="#fff" stroke-width="1"/>'
        if kind == "unknown":  # a reclaim that may repeat an effect: marked apart
            shape += f'<text x="{x:.1f}" y="{y + 4:.1f}" class="glyph">?</text>'
        return shape
    if kind == "complete":
        return (
            f'<rect x="{x - 7:.1f}" y="{y - 7:.1f}" width="14" height="14" rx="3" fill="{c}"/>'
            f'<path d="M{x - 4:.1f},{y:.1f} l3,3 l5,-6" fill="none" stroke="#fff" '
            'stroke-width="2"/>'
        )
    if kind == "fenced":
        pts = f"{x:.1f},{y - 10:.1f} {x + 10:.1f},{y:.1f} {x:.1f},{y + 10:.1f} {x - 10:.1f},{y:.1f}"
        return (
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="14" fill="{c}" fill-opacity="0.15"/>'
            f'<polygon points="{pts}" fill="{c}"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}" class="glyph">!</text>'
        )
    if kind in _LETTERS:  # a result not run here (R, I for a fork, A), or an approval's step
        letter = _LETTERS[kind]
        return (
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="8" fill="{c}"/>'
            f'<text x="{x:.1f}" y="{y + 4:.1f}" class="glyph">{letter}</text>'
        )
    if kind in ("fail", "stale"):
        return (
            f'<path d="M{x - 6:.1f},{y - 6:.1f} L{x + 6:.1f},{y + 6:.1f} M{x + 6:.1f},{y - 6:.1f} '
            f'L{x - 6:.1f},{y + 6:.1f}" stroke="{c}" stroke-width="3.5" stroke-linecap="round"/>'
        )
    if kind == "heartbeat":
        pts = f"{x:.1f},{y - 5:.1f} {x + 5:.1f},{y:.1f} {x:.1f},{y + 5:.1f} {x - 5:.1f},{y:.1f}"
        return f'<polygon points="{pts}" fill="{c}"/>'
    if kind in ("cancel", "release", "expired", "result-expired"):
        return (
            f'<rect x="{x - 6:.1f}" y="{y - 6:.1f}" width="12" height="12" fill="#fff" '
            f'stroke="{c}" stroke-width="2.5" stroke-dasharray="{_DASHES[kind]}"/>'
        )
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{c}"/>'


_LETTERS: Final = {
    "replay": "R",
    "inherit": "I",
    "adopt": "A",
    "awaiting-approval": "?",
    "approved": "Y",
    "denied": "N",
    "approval-expired": "E",
    "approval-refused": "X",
}
_DASHES: Final = {"cancel": "none", "release": "3 2", "expired": "2 2", "result-expired": "1 2"}


def legend_glyph(kind: str) -> str:
    """A small standalone SVG of one mark kind, for the legend."""
    return f'<svg width="26" height="26" aria-hidden="true">{mark_shape(kind, 13, 13)}</svg>'


def timeline_svg(view: RunView) -> str:
    """The whole chart: axis, one band a step, leases, marks."""
    scale = Scale.of(view.marks)
    start = view.marks[0].entry.log_time_ms if view.marks else 0
    height = AXIS_H + ROW_H * len(view.rows) + 10
    parts = [
        f'<svg class="timeline" xmlns="http://www.w3.org/2000/svg" width="{scale.width:.0f}" '
        f'height="{height}" role="img" aria-label="timeline of {_a(view.channel)}">',
        _axis(scale, start, height),
    ]
    for i, row in enumerate(view.rows):
        parts.append(_row(row, AXIS_H + i * ROW_H, scale, start))
    parts.append("</svg>")
    return "".join(parts)


def _axis(scale: Scale, start: int, height: int) -> str:
    out = [
        f'<line x1="{LABEL_W}" y1="{AXIS_H - 8}" x2="{scale.width - RIGHT_PAD:.0f}" '
        f'y2="{AXIS_H - 8}" class="axis"/>',
        f'<text x="8" y="{AXIS_H - 14}" class="axis-title">step · tool · effect · status</text>',
    ]
    last_x, last_label = -1e9, ""
    for t, x in zip(scale.times, scale.xs, strict=True):
        out.append(
            f'<line x1="{x:.1f}" y1="{AXIS_H - 12}" x2="{x:.1f}" y2="{AXIS_H - 8}" class="tick"/>'
        )
        label = "0" if t == start else facts.relative(t - start)
        if x - last_x >= MIN_TICK_PX and label != last_label:
            out.append(
                f'<line x1="{x:.1f}" y1="{AXIS_H - 8}" x2="{x:.1f}" y2="{height}" class="grid"/>'
            )
            out.append(f'<text x="{x:.1f}" y="{AXIS_H - 18}" class="tick-label">{label}</text>')
            last_x, last_label = x, label
    return "".join(out)


def _row(row: StepRow, top: int, scale: Scale, start: int) -> str:
    mid = top + ROW_H / 2
    effect = row.effect if row.effect in ("pure", "external") else None
    status_colour = STATUS_COLOUR.get(row.status, "#424242")
    parts = [
        f'<g class="step" data-key="{_a(row.key_name)}" data-effect="{_a(effect or "unknown")}" '
        f'data-status="{_a(row.status)}">',
        f'<rect x="0" y="{top + 2}" width="{scale.width:.0f}" height="{ROW_H - 4}" rx="4" '
        f'fill="{EFFECT_FILL[effect]}"/>',
        f'<rect x="0" y="{top + 2}" width="6" height="{ROW_H - 4}" rx="2" '
        f'fill="{EFFECT_STRIP[effect]}"/>',
        f'<a href="#s-{_a(row.operation_id)}"><text x="14" y="{mid - 4:.1f}" class="step-name">'
        f"{_a(_clip(row.key_name, 26))}</text></a>",
        f'<text x="14" y="{mid + 12:.1f}" class="step-sub">{_a(_clip(row.tool_name or "?", 14))}'
        f' · <tspan class="effect-{_a(effect or "unknown")}">{_a(effect or "?")}</tspan> · '
        f'<tspan fill="{status_colour}" font-weight="600">{_a(row.status)}</tspan></text>',
    ]
    parts.extend(_lease(lease, mid, scale, start) for lease in row.leases)
    parts.extend(_mark(m, mid, scale, start) for m in row.marks)
    parts.append(_approval(row, mid, scale))
    parts.append("</g>")
    return "".join(parts)


def _approval(row: StepRow, mid: float, scale: Scale) -> str:
    """Where the step's approval stands, written on its lane after the last approval mark."""
    words = row.approval
    if words is None:
        return ""
    x = max(scale.slot_x(m.ident) for m in row.marks if m.note == words) + 14
    return (
        f'<text x="{x:.1f}" y="{mid + 4:.1f}" class="approval" data-approval="{_a(words)}">'
        f"{_a(_clip(words, 48))}</text>"
    )


def _lease(lease: Lease, mid: float, scale: Scale, start: int) -> str:
    until = lease.deadline_ms if lease.end_ms is None else min(lease.deadline_ms, lease.end_ms)
    x0, x1 = scale.at(lease.start_ms), scale.at(until)
    title = _a(facts.as_text(facts.lease_facts(lease, start)))
    out = [
        f'<g class="lease" data-epoch="{lease.epoch}"><title>{title}</title>'
        f'<rect x="{x0:.1f}" y="{mid - 5:.1f}" width="{max(x1 - x0, 2):.1f}" height="10" rx="5" '
        'class="lease-bar"/>'
    ]
    if lease.lapsed:
        assert lease.end_ms is not None
        x2 = scale.at(lease.end_ms)
        out.append(
            f'<line x1="{x1:.1f}" y1="{mid:.1f}" x2="{x2:.1f}" y2="{mid:.1f}" class="lapsed" '
            f'data-kind="lease-lapsed"/>'
        )
    out.append("</g>")
    return "".join(out)


def _mark(mark: Mark, mid: float, scale: Scale, start: int) -> str:
    x = scale.slot_x(mark.ident)
    title = _a(facts.as_text(facts.mark_facts(mark, start)))
    epoch = mark.entry.epoch if mark.entry.epoch is not None else ""
    label = ""
    if mark.kind in ("claim", "reclaim", "unknown"):
        label = f'<text x="{x:.1f}" y="{mid - 11:.1f}" class="mark-label">e{epoch}</text>'
    words = _VERDICT_LABELS.get(mark.verdict or "")
    if words is not None:
        label += f'<text x="{x:.1f}" y="{mid + 21:.1f}" class="dup-label">{words}</text>'
    return (
        f'<a href="#d{_a(mark.ident)}" class="mark" data-kind="{mark.kind}" '
        f'data-offset="{mark.entry.offset}" data-epoch="{_a(epoch)}">'
        f"<title>{title}</title>{mark_shape(mark.kind, x, mid)}{label}</a>"
    )


# The audit verdict under an evidence mark; a single effect (reconciled) gets none.
_VERDICT_LABELS: Final = {
    "double": "duplicate!",
    "possible": "duplicate?",
    "unsettled": "unsettled",
}


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def legend_items() -> list[tuple[str, str]]:
    """Every mark kind and its legend text, in legend order."""
    return list(MARK_KINDS.items())
