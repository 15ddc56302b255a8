"""What an auditor asks of old channels, asked the way the CLI asks it, to compare.

Each answer is kept as its JSON text under a name that says the question, so two sets of
answers (before the archive and the prune, after them, from a rebuilt file) compare key by
key and a difference names the question.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
from pydantic import BaseModel

from oncelog.query.effects import bound
from oncelog.query.source import LocalSource

LIMIT = 1_000_000


def _text(answer: BaseModel | list[Any]) -> str:
    if isinstance(answer, list):
        return json.dumps([a.model_dump(mode="json") for a in answer], sort_keys=True)
    return json.dumps(answer.model_dump(mode="json"), sort_keys=True)


def channel_answers(source: LocalSource, channel: str) -> dict[str, str]:
    """The channel's timeline, each key's status as of every request's offset and log
    time (and just before it), each operation's history, and its side effects over the
    whole log and up to its first request."""
    timeline = source.timeline(channel, LIMIT)
    out = {f"timeline {channel}": _text(timeline)}
    operations = {}
    for row in timeline:
        operations[row.operation_id] = row.key_name
        moment = datetime.fromtimestamp(row.log_time_ms / 1000, tz=UTC)
        for as_of in (row.offset, max(0, row.offset - 1), moment):
            status = source.status(channel, row.key_name, as_of)
            out[f"status {channel} {row.key_name} as of {as_of}"] = _text(status)
    for operation_id, key in operations.items():
        out[f"history {channel} {key}"] = _text(source.history(operation_id, LIMIT))
    if timeline:
        first, last = timeline[0].offset, timeline[-1].offset
        for end in (first, (first + last) // 2, last):
            answer = source.side_effects(
                channel, bound("from", offset=first), bound("to", offset=end), LIMIT
            )
            out[f"effects {channel} {first} to {end}"] = _text(answer)
    return out


def answers(db: Path, channels: Iterable[str]) -> dict[str, str]:
    """Every question of :func:`channel_answers` for ``channels``, and the whole audit of
    suspected doubles, read from ``db`` opened read-only (as ``oncelog --db`` does)."""
    con = duckdb.connect(str(db), read_only=True)
    try:
        source = LocalSource(con)
        out = {"duplicates": _text(source.duplicates(LIMIT))}
        for channel in channels:
            out.update(channel_answers(source, channel))
        return out
    finally:
        con.close()


def differences(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """The questions answered differently (or only once), by name."""
    return sorted(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))
