"""The facts a mark or a step shows on hover and in the detail table, as plain text pairs.

Pure and unescaped: the renderers escape every value (it comes from the log).
Claim tokens never appear: only their fingerprints (``token_fp``).
"""

from __future__ import annotations

import json
from typing import Final

from oncelog.query.models import Version
from oncelog.query.times import utc
from oncelog.query.ui.timeline_model import MARK_KINDS, Lease, Mark, StepRow

RESULT_CHARS: Final = 240
"""A result longer than this (as JSON) is cut, with an ellipsis: the API has it whole."""

Facts = list[tuple[str, str]]


def relative(ms: int) -> str:
    """A duration since the run's first request, short: ``+850 ms``, ``+1.25 s``, ``+2 min 5 s``."""
    if ms < 1000:
        return f"+{ms} ms"
    if ms < 60_000:
        return f"+{ms / 1000:.2f} s"
    minutes, seconds = divmod(ms // 1000, 60)
    return f"+{minutes} min {seconds} s"


def result_text(version: Version) -> str:
    """The version's result as short JSON, or why there is none to show."""
    if version.result_redacted:
        return "(redacted by the server)"
    if version.result is None:
        return "(none)" if version.result_hash is None else "(purged)"
    text = json.dumps(version.result, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= RESULT_CHARS else text[: RESULT_CHARS - 1] + "…"


def version_facts(version: Version) -> Facts:
    """Epoch, worker, token fingerprint, result hash and result of one state version."""
    status = version.status.lower()
    outcome = "" if version.outcome == status else f" ({version.outcome})"
    facts = [
        ("state", f"v{version.version} {status}{outcome}"),
        ("epoch", str(version.epoch)),
        ("worker", version.worker_id),
        ("token fp", version.token_fp),
    ]
    if version.result_hash is not None or version.status in ("COMPLETED", "EXPIRED"):
        facts.append(("result hash", version.result_hash or "(none)"))
        facts.append(("result", result_text(version)))
    return facts


def mark_facts(mark: Mark, start_ms: int) -> Facts:
    """What one request was, how it was judged, and the state it made."""
    e = mark.entry
    facts = [
        ("event", MARK_KINDS[mark.kind]),
        ("request", f"{e.kind} → {e.outcome}"),
        ("log", f"offset {e.offset} (partition {e.partition})"),
        ("time", f"{utc(e.log_time_ms)} ({relative(e.log_time_ms - start_ms)})"),
    ]
    if mark.note is not None:
        facts.append(("note", mark.note))
    if mark.made is not None:
        return facts + version_facts(mark.made)
    # The sender's own attempt (the grant its token came from), then the state it met.
    if e.epoch is not None:
        facts.append(("epoch", f"{e.epoch} (the sender's attempt)"))
    if e.worker_id is not None:
        facts.append(("worker", e.worker_id))
    if e.token_fp is not None:
        facts.append(("token fp", e.token_fp))
    if e.state_epoch is not None and e.state_epoch != e.epoch:
        facts.append(("state", f"held at epoch {e.state_epoch} by {e.state_worker_id}"))
    return facts


def lease_facts(lease: Lease, start_ms: int) -> Facts:
    """A lease's holder, span and whether it lapsed."""
    facts = [
        ("lease", f"epoch {lease.epoch}, worker {lease.worker_id}"),
        ("from", f"{utc(lease.start_ms)} ({relative(lease.start_ms - start_ms)})"),
        ("deadline", f"{utc(lease.deadline_ms)} ({relative(lease.deadline_ms - start_ms)})"),
    ]
    if lease.lapsed:
        assert lease.end_ms is not None
        late = lease.end_ms - lease.deadline_ms
        facts.append(("lapsed", f"{late} ms before the next grant or answer"))
    return facts


def row_summary(row: StepRow) -> str:
    """One line under a step's name: tool, effect, status and where its approval stands."""
    parts = [row.tool_name or "?", row.effect or "effect unknown", row.status]
    if row.last is not None:
        parts.append(f"epoch {row.last.epoch}")
    if row.approval is not None:
        parts.append(row.approval)
    return " · ".join(parts)


def as_text(facts: Facts) -> str:
    """Facts as lines of ``name: value`` (for an SVG ``<title>`` tooltip)."""
    return "\n".join(f"{name}: {value}" for name, value in facts)
