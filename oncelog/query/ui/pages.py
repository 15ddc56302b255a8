"""The UI's HTML documents: the channel index, a run's timeline, login, errors. Pure.

Self-contained: inline CSS, inline SVG, no script and nothing fetched from
elsewhere, so the pages work offline (the routes also send a Content-Security-
Policy that forbids scripts). Every value that comes from the log or the request
is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass, field
from html import escape
from typing import Final

from oncelog.query.times import utc
from oncelog.query.ui import facts, svg
from oncelog.query.ui.timeline_model import AsOf, Mark, RunView, StepRow
from oncelog.query.verdicts import FLAGGED

UI_ROOT: Final = "/ui/"

_CSS: Final = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;
 margin:0;color:#212121;background:#fafafa}
header{background:#263238;color:#eceff1;padding:10px 20px;font-size:15px}
header a{color:#b3e5fc;text-decoration:none}
main{padding:14px 20px 40px}
h1{font-size:20px;margin:4px 0 10px;word-break:break-all}
h2{font-size:16px;margin:22px 0 8px}
.chip{display:inline-block;border-radius:10px;padding:1px 9px;margin:0 6px 4px 0;
 background:#eceff1;font-size:13px}
.chip.dup,td.audit .dup{background:#ffebee;color:#b71c1c;font-weight:600}
.chip.quiet,td.audit .quiet{color:#607d8b}
form.as-of{margin:10px 0;padding:8px 10px;background:#fff;border:1px solid #e0e0e0;
 border-radius:6px;display:inline-block}
form.as-of input{font:inherit;padding:2px 6px;margin:0 6px}
.banner{padding:6px 10px;border-radius:6px;margin:8px 0;background:#fff8e1;
 border:1px solid #ffe082}
.banner.error{background:#ffebee;border-color:#ef9a9a}
.chart{overflow-x:auto;background:#fff;border:1px solid #e0e0e0;border-radius:6px;padding:6px}
svg.timeline text{font-family:inherit}
.axis{stroke:#90a4ae;stroke-width:1}.tick{stroke:#90a4ae}
.grid{stroke:#cfd8dc;stroke-dasharray:2 4}
.tick-label{font-size:11px;fill:#546e7a;text-anchor:middle}
.axis-title{font-size:11px;fill:#78909c}
.step-name{font-size:13px;font-weight:700;fill:#212121}
.step-sub{font-size:11.5px;fill:#546e7a}
.effect-pure{fill:#1565c0;font-weight:600}.effect-external{fill:#e65100;font-weight:600}
.lease-bar{fill:#a5d6a7;stroke:#66bb6a;stroke-width:1}
.lapsed{stroke:#ef6c00;stroke-width:2.5;stroke-dasharray:5 4}
.mark-label{font-size:10.5px;fill:#37474f;text-anchor:middle;font-weight:600}
.dup-label{font-size:10.5px;fill:#d50000;text-anchor:middle;font-weight:700}
.glyph{font-size:11px;fill:#fff;text-anchor:middle;font-weight:800}
.approval{font-size:11px;fill:#4e342e;font-weight:600}
a.mark:hover{opacity:.75}
.legend{display:flex;flex-wrap:wrap;gap:2px 14px;margin:10px 0;font-size:13px}
.legend span{display:inline-flex;align-items:center;gap:4px}
table{border-collapse:collapse;background:#fff;font-size:13px}
th,td{border-bottom:1px solid #eceff1;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f5f5f5}
td.mono,.mono{font-family:ui-monospace,"DejaVu Sans Mono",monospace;font-size:12px}
tr:target{background:#fff59d}
tr[data-kind=fenced]{background:#ffebee}
.sub{font-size:11.5px;color:#607d8b}.note{font-size:12px;color:#b71c1c;font-weight:600}
details{margin:6px 0}summary{cursor:pointer;font-weight:600}
"""

_HASH_CHARS: Final = 16
_FACT_COLUMNS: Final = ("event", "epoch", "worker", "token fp", "state", "result hash", "result")


def _e(value: object) -> str:
    return escape(str(value), quote=True)


def run_href(channel: str) -> str:
    """The path of a channel's timeline page (the channel percent-encoded)."""
    return f"{UI_ROOT}runs/{urllib.parse.quote(channel, safe='')}"


def document(title: str, body: str, crumbs: str = "") -> str:
    """A whole HTML page around ``body`` (already escaped markup)."""
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)} · oncelog</title><style>{_CSS}</style></head><body>"
        f'<header><a href="{UI_ROOT}">oncelog ledger</a>{crumbs}</header>'
        f"<main>{body}</main></body></html>"
    )


def error_page(title: str, message: str) -> str:
    """A page that says what went wrong (the message is escaped)."""
    body = f"<h1>{_e(title)}</h1><div class='banner error'>{_e(message)}</div>"
    return document(title, body + f'<p><a href="{UI_ROOT}">all channels</a></p>')


def login_page(next_path: str, failed: bool) -> str:
    """The token form; its POST sets the UI's session cookie."""
    warn = "<div class='banner error'>That token is not the server's.</div>" if failed else ""
    body = (
        "<h1>Sign in</h1><p>This server needs its bearer token (ONCELOG_HTTP_TOKEN).</p>"
        f'{warn}<form method="post" action="{UI_ROOT}login">'
        f'<input type="hidden" name="next" value="{_e(next_path)}">'
        '<label>token <input type="password" name="token" autocomplete="current-password" '
        'autofocus required></label> <button type="submit">sign in</button></form>'
    )
    return document("sign in", body)


@dataclass(frozen=True)
class ChannelSummary:
    """One channel of the index: its steps by status, its operations by audit verdict."""

    channel: str
    last_ms: int
    counts: dict[str, int]  # lower-case status -> steps
    verdicts: dict[str, int] = field(default_factory=dict)  # audit verdict -> operations

    @property
    def flagged(self) -> bool:
        """Has an operation whose effect ran (or may have run) twice."""
        return any(self.verdicts.get(v) for v in FLAGGED)


INDEX_STATUSES: Final = ("claimed", "completed", "failed", "expired")


def index_page(channels: Sequence[ChannelSummary], limit: int, scope_note: str) -> str:
    """The recent channels, newest activity first, with their state counts."""
    head = "".join(f"<th>{s}</th>" for s in ("channel", "steps", *INDEX_STATUSES))
    rows = []
    for c in channels:
        counts = "".join(f"<td>{c.counts.get(s, 0) or ''}</td>" for s in INDEX_STATUSES)
        rows.append(
            f'<tr data-channel="{_e(c.channel)}" data-flagged="{str(c.flagged).lower()}">'
            f'<td><a href="{_e(run_href(c.channel))}">'
            f"{_e(c.channel)}</a></td><td>{sum(c.counts.values())}</td>{counts}"
            f"{_audit_cell(c.verdicts)}<td class='mono'>{utc(c.last_ms)}</td></tr>"
        )
    table = (
        f"<table><tr>{head}<th>audit of doubles (operations)</th><th>last activity (UTC)</th>"
        "</tr>" + "".join(rows) + "</table>"
        if rows
        else "<p>No channels yet: nothing has been folded.</p>"
    )
    body = (
        f"<h1>Recent channels</h1><p>The {limit} most recently active, newest first. "
        f"{_e(scope_note)}</p>{table}"
    )
    return document("channels", body)


# A verdict's chip: its sign and class. Only double and possible are flags (class dup).
_VERDICT_CHIPS: Final = {
    "double": ("⚠", "dup"),
    "possible": ("?", "dup possible"),
    "unsettled": ("…", "quiet"),
    "single": ("✓", "quiet"),
}


def _verdict_chips(verdicts: dict[str, int], tag: str) -> str:
    return "".join(
        f"<{tag} class='{cls}' data-verdict='{v}'>{sign} {verdicts[v]} {v}</{tag}> "
        for v, (sign, cls) in _VERDICT_CHIPS.items()
        if verdicts.get(v)
    ).rstrip()


def _audit_cell(verdicts: dict[str, int]) -> str:
    return f"<td class='audit'>{_verdict_chips(verdicts, 'span')}</td>"


def run_page(view: RunView, as_of_form: tuple[str, str], error: str | None = None) -> str:
    """A run's timeline: summary, as-of form, chart, legend, then every request in detail."""
    crumbs = f" &rsaquo; runs &rsaquo; <b>{_e(view.channel)}</b>"
    parts = [f"<h1>{_e(view.channel)}</h1>", _summary(view), _as_of_form(*as_of_form)]
    if error is not None:
        parts.append(f"<div class='banner error'>{_e(error)}</div>")
    if view.as_of is not None:
        parts.append(_as_of_banner(view.as_of))
    if view.truncated:
        parts.append("<div class='banner'>Only the first requests are shown (page cap).</div>")
    if not view.rows:
        parts.append("<p>No requests of this channel at this point.</p>")
        return document(view.channel, "".join(parts), crumbs)
    parts += [f"<div class='chart'>{svg.timeline_svg(view)}</div>", _legend(view)]
    start = view.marks[0].entry.log_time_ms
    parts.append("<h2>Every request, by step</h2>")
    parts.extend(_step_details(row, start) for row in view.rows)
    return document(view.channel, "".join(parts), crumbs)


def _summary(view: RunView) -> str:
    chips = [f"<span class='chip'>{len(view.rows)} steps</span>"]
    chips += [
        f"<span class='chip' data-status='{_e(s)}'>{n} {_e(s)}</span>"
        for s, n in sorted(view.status_counts().items())
    ]
    chips += [
        f"<span class='chip {cls}' data-verdict='{v}'>{sign} {n} {_VERDICT_TEXT[v]}</span>"
        for v, (sign, cls) in _VERDICT_CHIPS.items()
        if (n := view.verdict_counts().get(v))
    ]
    if view.marks:
        first, last = view.marks[0].entry.log_time_ms, view.marks[-1].entry.log_time_ms
        chips.append(
            f"<span class='chip'>{len(view.marks)} requests, {utc(first)} → "
            f"{facts.relative(last - first)}</span>"
        )
    return "<div class='summary'>" + "".join(chips) + "</div>"


_VERDICT_TEXT: Final = {
    "double": "proven duplicate effect(s)",
    "possible": "possible duplicate effect(s)",
    "unsettled": "unsettled: the next attempt has not finished",
    "single": "late attempt(s), one effect (reconciled)",
}


def _as_of_form(offset: str, time: str) -> str:
    return (
        '<form class="as-of" method="get">as of: offset '
        f'<input name="as_of_offset" inputmode="numeric" size="8" value="{_e(offset)}"> or time '
        f'<input name="as_of_time" size="26" placeholder="2026-05-01T12:00:00.000Z" '
        'title="ISO-8601 with a zone: Z for UTC" '
        f'value="{_e(time)}"> <button type="submit">show</button> <a href="?">now</a></form>'
    )


def _as_of_banner(point: AsOf) -> str:
    where = (
        f"offset {point.offset} of the channel's partition"
        if point.offset is not None
        else f"{utc(point.time_ms or 0)}"
    )
    return (
        f"<div class='banner' data-as-of='{_e(point.offset if point.offset is not None else '')}'>"
        f"The run as it stood at {where}: later requests are not shown.</div>"
    )


def _legend(view: RunView) -> str:
    present = set(view.kinds_present())
    items = [
        f"<span data-legend='{kind}'>{svg.legend_glyph(kind)}{_e(text)}</span>"
        for kind, text in svg.legend_items()
        if kind in present
    ]
    items += [
        f"<span data-legend='pure'>{_swatch('#eef5ff', '#1e88e5')}pure step (no outside effect)"
        "</span>",
        f"<span data-legend='external'>{_swatch('#fff3e0', '#fb8c00')}external step (touches the "
        "world)</span>",
        f"<span data-legend='lease'>{_swatch('#a5d6a7', '#66bb6a')}lease</span>",
        "<span><svg width='26' height='12'><line x1='1' y1='6' x2='25' y2='6' class='lapsed'/>"
        "</svg>lease lapsed</span>",
    ]
    return "<div class='legend'>" + "".join(items) + "</div>"


def _swatch(fill: str, strip: str) -> str:
    return (
        f"<svg width='26' height='16' aria-hidden='true'><rect x='1' y='1' width='24' height='14' "
        f"rx='3' fill='{fill}' stroke='#b0bec5'/>"
        f"<rect x='1' y='1' width='5' height='14' rx='2' fill='{strip}'/></svg>"
    )


def _step_details(row: StepRow, start: int) -> str:
    head = "".join(f"<th>{c}</th>" for c in ("offset", "time", *_FACT_COLUMNS))
    lines = "".join(_detail_row(m, start) for m in row.marks)
    verdict = row.verdict
    dup = "" if verdict is None else f" · {_VERDICT_CHIPS[verdict][0]} {_VERDICT_TEXT[verdict]}"
    opening = f'<details open id="s-{_e(row.operation_id)}" data-key="{_e(row.key_name)}">'
    summary = f"<summary>{_e(row.key_name)} — {_e(facts.row_summary(row))}{dup}</summary>"
    return f"{opening}{summary}<table><tr>{head}</tr>{lines}</table></details>"


def _detail_row(mark: Mark, start: int) -> str:
    found = dict(facts.mark_facts(mark, start))
    note = f"<div class='note'>{_e(found['note'])}</div>" if "note" in found else ""
    event = (
        f"<td><b>{_e(found['event'])}</b><div class='sub'>{_e(found['request'])}</div>{note}</td>"
    )
    cells = "".join(_cell(c, found.get(c, "")) for c in _FACT_COLUMNS[1:])
    e = mark.entry
    return (
        f'<tr id="d{_e(mark.ident)}" data-kind="{mark.kind}"><td>{e.offset}</td>'
        f"<td>{facts.relative(e.log_time_ms - start)}</td>{event}{cells}</tr>"
    )


def _cell(column: str, value: str) -> str:
    if column in ("token fp", "result hash") and len(value) > _HASH_CHARS:
        short = value[:_HASH_CHARS] + "…"
        return f"<td class='mono' title='{_e(value)}'>{_e(short)}</td>"
    if column in ("token fp", "result hash", "result"):
        return f"<td class='mono'>{_e(value)}</td>"
    return f"<td>{_e(value)}</td>"
