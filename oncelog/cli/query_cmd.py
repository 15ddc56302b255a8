"""``oncelog status | history | timeline | effects | duplicates``: read-only answers.

Live, through the projector's HTTP API (``--url``, default from the settings,
with ``ONCELOG_HTTP_TOKEN`` sent as the bearer token);
offline, from a DuckDB file (``--db``). Without either, the API is tried first
and the configured DuckDB file second.
"""

from __future__ import annotations

import functools
import inspect
import json
import os
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Final, TypeVar

import duckdb
import typer
from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from oncelog.errors import ConfigError, InvalidArgumentError
from oncelog.identity.ids import key_of
from oncelog.query.effects import bound
from oncelog.query.export import TABLES as EXPORTED_TABLES
from oncelog.query.models import (
    PendingApproval,
    SideEffects,
    StepStatus,
    SuspectedDuplicate,
    TimelineEntry,
    Version,
)
from oncelog.query.queries import parse_as_of, verdict_counts
from oncelog.query.source import HttpSource, LocalSource, QuerySource
from oncelog.query.times import with_times
from oncelog.query.verdicts import FORGED, UNRECORDABLE, VERDICTS
from oncelog.settings import Settings

DbOption = Annotated[Path | None, typer.Option("--db", help="Query this DuckDB file (offline).")]
UrlOption = Annotated[str | None, typer.Option("--url", help="Query a projector's HTTP API.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Machine output: one JSON document.")]
WideOption = Annotated[
    bool, typer.Option("--wide", help="Every column, not only the few that answer the question.")
]
LimitOption = Annotated[int, typer.Option(min=1, help="At most this many rows.")]
A = TypeVar("A")

# Every table the CLI prints: no borders, so a narrow terminal keeps its columns.
_TABLE_STYLE: Final[dict[str, Any]] = {
    "box": None,
    "pad_edge": False,
    "collapse_padding": True,
    "header_style": "bold underline",
}


@contextmanager
def open_source(db: Path | None, url: str | None) -> Iterator[QuerySource]:
    """The projector's API, else the configured DuckDB file (or ``--db`` / ``--url``)."""
    settings = Settings()
    if db is None and url is None:
        url = f"http://{settings.http_host}:{settings.http_port}"
        if not _answers(url):
            url, db = None, settings.db_path
    if url is not None:
        yield HttpSource(url, token=settings.http_token)
        return
    assert db is not None
    if not db.exists():
        raise ConfigError(
            f"no DuckDB file at {db} and no query API answering: start `oncelog serve` (its "
            "API listens on ONCELOG_HTTP_HOST:ONCELOG_HTTP_PORT), or give --url or --db"
        )
    try:
        con = duckdb.connect(str(db), read_only=True)
    except duckdb.Error as exc:
        raise ConfigError(
            f"cannot open {db} read-only ({exc}); a running `oncelog serve` holds it: query "
            "its API (--url), or copy its tables for SQL with `oncelog export`"
        ) from exc
    try:
        yield LocalSource(con)
    finally:
        con.close()


def _answers(url: str) -> bool:
    return HttpSource(url, timeout_s=2).healthy()


def _print_json(data: Any) -> None:
    """One JSON document; each moment ``*_ms`` has its ISO-8601 UTC text beside it."""
    if isinstance(data, BaseModel):
        data = with_times(data.model_dump(mode="json"))
    elif isinstance(data, list):
        data = [with_times(d.model_dump(mode="json")) for d in data]
    typer.echo(json.dumps(data, sort_keys=True))


def _table(
    rows: Sequence[BaseModel], columns: Sequence[str], title: str, *, wide: bool = False
) -> None:
    """``rows`` as a table of ``columns`` (fields, or the computed ``time`` and ``audit``).

    ``time`` is the log time in UTC: the time of day when every row is of one day (the
    day in the caption), the whole ISO-8601 text otherwise. Columns are spaced, not boxed,
    and a long value wraps rather than being cut: a table of the default columns stays
    readable at 100 columns.
    """
    values = [with_times(row.model_dump(mode="json")) for row in rows]
    days = sorted({str(v.get("log_time", ""))[:10] for v in values})
    one_day = len(days) == 1 and days[0] != ""
    caption = None
    if "time" in columns and values:
        caption = f"times UTC, {days[0]}" if one_day else "times UTC"
    table = Table(title=title, caption=caption, **_TABLE_STYLE)
    for column in columns:
        table.add_column(column if wide else _HEADERS.get(column, column), overflow="fold")
    for v in values:
        table.add_row(*(_cell(v, c, one_day) for c in columns))
    console = Console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        # Piped or captured: the table at its natural width (a table never pads to the
        # console), so no column is squeezed and no value wrapped.
        console = Console(width=1000)
    console.print(table)


# The default tables' short headers (``--wide`` and ``--json`` name the fields as they are).
_HEADERS: Final = {
    "key_name": "key",
    "worker_id": "worker",
    "channel_id": "channel",
    "stale_epoch": "epoch",
    "stale_worker_id": "worker",
}


def _cell(values: dict[str, Any], column: str, one_day: bool) -> str:
    if column == "time":
        text = str(values.get("log_time") or "")
        return text[11:-1] if one_day else text
    if column == "audit":
        return _audit_note(values)
    value = values[column]
    return "" if value is None else str(value)


def _audit_note(v: dict[str, Any]) -> str:
    """A timeline row's part in the audit, in a few words (the evidence, not a verdict)."""
    notes = []
    if v.get("duplicate_effect_suspected"):
        notes.append("late completion")
    if v.get("outcome_unknown"):
        notes.append("unknown outcome")
    if v.get("reconciled"):
        notes.append(f"reconciled {v['reconciled']}")
    if v.get("error_code") == UNRECORDABLE:
        notes.append("unrecordable")
    if v.get("from_channel"):
        notes.append(f"{'adopted' if v.get('adopted') else 'inherited'} from {v['from_channel']}")
    return "; ".join(notes)


def _answer(
    db: Path | None,
    url: str | None,
    as_json: bool,
    ask: Callable[[QuerySource], A],
    show: Callable[[A], None],
) -> None:
    """Ask the source once, then print the answer as JSON or, with ``show``, for people."""
    with open_source(db, url) as source:
        answer = ask(source)
    if as_json:
        _print_json(answer)
    else:
        show(answer)


def _output_options(
    db: DbOption = None, url: UrlOption = None, as_json: JsonOption = False
) -> None:
    """The options every query command takes after its own arguments (a template)."""


def _wide_option(wide: WideOption = False) -> None:
    """The option of the commands that print a table (a template)."""


def _parameters(template: Callable[..., None]) -> tuple[inspect.Parameter, ...]:
    return tuple(inspect.signature(template, eval_str=True).parameters.values())


_OUTPUT_OPTIONS = _parameters(_output_options)
_WIDE_OPTION = _parameters(_wide_option)


def _query_command(
    show: Callable[..., None], *, table: bool = False
) -> Callable[[Callable[..., Any]], Callable[..., None]]:
    """Make a command of ``ask(source, **arguments) -> answer``, printed by ``show``.

    The command takes ``ask``'s arguments after ``source``, then ``--wide`` (with
    ``table``: ``show`` gets ``wide=``), ``--db``, ``--url`` and ``--json``; it prints
    the answer as one JSON document or with ``show(answer, **arguments)``. typer reads
    the command's parameters from its ``__signature__``, built here from ``ask``'s and
    the templates'.
    """

    def make(ask: Callable[..., Any]) -> Callable[..., None]:
        own = _parameters(ask)[1:]
        names = {p.name for p in own}

        @functools.wraps(ask)
        def command(
            db: Path | None = None, url: str | None = None, as_json: bool = False, **arguments: Any
        ) -> None:
            asked = {k: v for k, v in arguments.items() if k in names}
            _answer(
                db,
                url,
                as_json,
                lambda source: ask(source, **asked),
                lambda a: show(a, **arguments),
            )

        options = (*(_WIDE_OPTION if table else ()), *_OUTPUT_OPTIONS)
        signature = inspect.Signature([*own, *options], return_annotation=None)
        command.__signature__ = signature  # type: ignore[attr-defined]
        command.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
        return command

    return make


def _table_of(columns: str, wide_columns: str, title: str) -> Callable[..., None]:
    """A ``show`` printing rows as a table of ``columns`` (space-separated), or with
    ``wide=True`` of ``wide_columns``. ``title`` is formatted with the command's arguments and
    the row count ``n``."""

    def show(rows: Sequence[BaseModel], *, wide: bool = False, **arguments: Any) -> None:
        shown = wide_columns if wide else columns
        _table(rows, shown.split(), title.format(n=len(rows), **arguments), wide=wide)

    return show


def print_status(answer: StepStatus, **_: Any) -> None:
    """``status`` for people: the status word first, then the details."""
    typer.echo(answer.status)
    details = with_times(answer.model_dump(mode="json", exclude={"status"}))
    for key, value in details.items():
        typer.echo(f"  {key}: {json.dumps(value) if not isinstance(value, str) else value}")


@_query_command(print_status)
def status(
    source: QuerySource,
    channel_id: str,
    step_or_key: Annotated[str, typer.Argument(help="A step number or a key name.")],
    as_of: Annotated[str | None, typer.Option("--as-of", help="An offset or ISO time.")] = None,
) -> StepStatus:
    """Did the step finish? Prints the status word first, then the details."""
    return source.status(channel_id, step_or_key, parse_as_of(as_of))


print_history = _table_of(
    "version time status outcome epoch worker_id",
    "version log_time status outcome epoch worker_id token_fp valid_from_offset valid_to_offset "
    "result",
    "history of {operation_id}",
)
"""``history`` for people: one table row per state version (``wide``: offsets, result)."""


@_query_command(print_history, table=True)
def history(source: QuerySource, operation_id: str, limit: LimitOption = 100) -> list[Version]:
    """Every state version of one operation."""
    return source.history(operation_id, limit)


print_timeline = _table_of(
    "offset time key_name kind outcome epoch worker_id audit",
    "offset log_time key_name kind outcome epoch worker_id token_fp state_epoch state_worker_id "
    "effect duplicate_effect_suspected outcome_unknown reconciled from_channel adopted error_code",
    "timeline of {channel_id}",
)
"""``timeline`` for people: one table row per request (reads left out); ``epoch`` and
``worker_id`` are the sender's attempt, ``audit`` its part in the audit of doubles;
``wide``: the token fingerprint, the state it met and every flag apart."""


@_query_command(print_timeline, table=True)
def timeline(
    source: QuerySource, channel_id: str, limit: LimitOption = 1000
) -> list[TimelineEntry]:
    """Every request of a channel and its outcome, in log order."""
    return source.timeline(channel_id, limit)


def _end_text(offset: int | None, time: datetime | None, key: str | None) -> str:
    parts = [f"key {key}"] if key is not None else []
    if offset is not None:
        parts.append(f"offset {offset}")
    if time is not None:
        parts.append(time.isoformat())
    return " at ".join(parts) if parts else "the log's end"


def print_effects(answer: SideEffects, **_: Any) -> None:
    """``effects`` for people: the range, then the external and the pure keys (JSON lists)."""
    start = _end_text(answer.from_offset, answer.from_time, answer.from_key)
    end = _end_text(answer.to_offset, answer.to_time, answer.to_key)
    typer.echo(f"{answer.channel_id} from {start} to {end}")
    typer.echo(f"external: {json.dumps(answer.external)}\npure: {json.dumps(answer.pure)}")
    if answer.truncated:
        typer.echo("(more keys ran in this range: raise --limit)")


_BoundArgument = Annotated[
    str | None,
    typer.Argument(help="A step number or key name: the range starts at (ends after) its work."),
]
_Offset = Annotated[int | None, typer.Option(help="An offset of the channel's partition.")]
_Time = Annotated[str | None, typer.Option(help="A log time, ISO-8601 with a zone.")]


@_query_command(print_effects)
def effects(
    source: QuerySource,
    channel_id: str,
    start: _BoundArgument = None,
    end: _BoundArgument = None,
    from_offset: _Offset = None,
    to_offset: _Offset = None,
    from_time: _Time = None,
    to_time: _Time = None,
    limit: LimitOption = 1000,
) -> SideEffects:
    """Which keys were pure and which touched the outside world between two positions.

    Each end is a step number or key name (START, END), an offset or a time.
    """
    first = bound("from", offset=from_offset, time=from_time, key=_key(start))
    last = bound("to", offset=to_offset, time=to_time, key=_key(end))
    return source.side_effects(channel_id, first, last, limit)


def _key(step_or_key: str | None) -> str | None:
    return None if step_or_key is None else key_of(step_or_key)


_DOUBLE_COLUMNS = "time channel_id key_name kind stale_epoch stale_worker_id verdict"
_DOUBLE_WIDE = (
    "kind verdict offset log_time channel_id key_name stale_epoch stale_worker_id token_fp "
    "current_epoch settled reconciled settled_code other_channel_id"
)


def print_duplicates(rows: Sequence[SuspectedDuplicate], *, wide: bool = False, **_: Any) -> None:
    """``duplicates`` for people: the operations counted by verdict in the title, then the
    evidence oldest first (each row with its operation's verdict), and apart, the
    completions by tokens never granted."""
    doubles = [r for r in rows if r.kind != FORGED]
    forged = [r for r in rows if r.kind == FORGED]
    counts = verdict_counts(doubles).get("", {})
    tally = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    typer.echo(f"audit of doubles, operations by verdict: {tally}")
    columns = (_DOUBLE_WIDE if wide else _DOUBLE_COLUMNS).split()
    _table(doubles, columns, "the evidence, oldest first", wide=wide)
    if forged:
        columns = ["time", "channel_id", "key_name", "token_fp", "current_epoch"]
        if wide:
            columns = ["offset", "log_time", *columns[1:]]
        title = f"forged or unknown tokens, not duplicates ({len(forged)})"
        _table(forged, columns, title, wide=wide)


@_query_command(print_duplicates, table=True)
def duplicates(source: QuerySource, limit: LimitOption = 100) -> list[SuspectedDuplicate]:
    """Side effects that may have fired twice, one verdict per operation: double, possible,
    unsettled or single (reconciled); the evidence oldest first."""
    return source.duplicates(limit)


print_approvals = _table_of(
    "requested_at deadline channel_id key_name tool_name",
    "requested_at deadline channel_id key_name tool_name operation_id request_hash "
    "partition offset",
    "intents awaiting approval ({n})",
)
"""``approvals list`` for people: one row per pending intent, oldest first."""


@_query_command(print_approvals, table=True)
def approvals_list(source: QuerySource, limit: LimitOption = 100) -> list[PendingApproval]:
    """Intents awaiting a person's approve or deny, oldest first."""
    return source.approvals(limit)


def export(
    folder: Annotated[Path, typer.Argument(help="A new or empty folder for the files.")],
    url: UrlOption = None,
) -> None:
    """Copy a running projector's tables into FOLDER as Parquet files, for any SQL.

    While ``oncelog serve`` runs its DuckDB file is locked; this asks it for a copy
    (``GET /v1/export``, with ``ONCELOG_HTTP_TOKEN``): every table from one snapshot.
    Then query them with the ``duckdb`` Python package that oncelog installs:
    ``duckdb.sql("SELECT * FROM 'FOLDER/executions.parquet'")``.
    """
    settings = Settings()
    base = url or f"http://{settings.http_host}:{settings.http_port}"
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise InvalidArgumentError(f"{folder} exists and is not an empty folder: name a new one")
    folder.mkdir(parents=True, exist_ok=True)
    archive = folder / "oncelog-export.zip"
    HttpSource(base, token=settings.http_token).export(archive)
    expected = {f"{table}.parquet" for table in EXPORTED_TABLES}
    with zipfile.ZipFile(archive) as zipped:
        names = zipped.namelist()
        if not set(names) <= expected:  # only the table files, never a path elsewhere
            raise InvalidArgumentError(f"{base} sent unexpected files: {sorted(names)}")
        zipped.extractall(folder)
    archive.unlink()
    for name in sorted(names):
        typer.echo(str(folder / name))
