"""Where read-only queries run: a DuckDB file (offline) or a projector's HTTP API (live).

DuckDB allows one writer process, which owns the file; while a projector runs,
live queries go through its HTTP API. Both sources answer with the same models.
"""

from __future__ import annotations

import urllib.parse
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import duckdb
import httpx
from pydantic import SecretStr

from oncelog.errors import InvalidArgumentError, LedgerError, NotFoundError, UnauthorizedError
from oncelog.identity.ids import key_of
from oncelog.identity.validation import path_unsafe
from oncelog.query import effects, models, queries
from oncelog.query.effects import Bound
from oncelog.query.export import EXPORT_PATH

AsOf = int | datetime | None


class QuerySource(Protocol):
    """The read-only questions the CLI asks."""

    def status(self, channel_id: str, step_or_key: str, as_of: AsOf) -> models.StepStatus: ...
    def history(self, operation_id: str, limit: int) -> list[models.Version]: ...
    def timeline(self, channel_id: str, limit: int) -> list[models.TimelineEntry]: ...
    def side_effects(
        self, channel_id: str, start: Bound, end: Bound, limit: int
    ) -> models.SideEffects: ...
    def duplicates(self, limit: int) -> list[models.SuspectedDuplicate]: ...
    def positions(self) -> models.Positions: ...


class LocalSource:
    """Queries over a DuckDB connection (a file opened read-only)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def status(self, channel_id: str, step_or_key: str, as_of: AsOf) -> models.StepStatus:
        """See :func:`oncelog.query.queries.step_status`."""
        return queries.step_status(self._con, channel_id, key_name=key_of(step_or_key), as_of=as_of)

    def history(self, operation_id: str, limit: int) -> list[models.Version]:
        """See :func:`oncelog.query.queries.operation_history`."""
        return queries.operation_history(self._con, operation_id, limit)

    def timeline(self, channel_id: str, limit: int) -> list[models.TimelineEntry]:
        """See :func:`oncelog.query.queries.channel_timeline`."""
        return queries.channel_timeline(self._con, channel_id, limit)

    def side_effects(
        self, channel_id: str, start: Bound, end: Bound, limit: int
    ) -> models.SideEffects:
        """See :func:`oncelog.query.effects.side_effects`."""
        return effects.side_effects(self._con, channel_id, start, end, limit)

    def duplicates(self, limit: int) -> list[models.SuspectedDuplicate]:
        """See :func:`oncelog.query.queries.suspected_duplicates`."""
        return queries.suspected_duplicates(self._con, limit)

    def positions(self) -> models.Positions:
        """See :func:`oncelog.query.queries.positions`."""
        return queries.positions(self._con)


class HttpSource:
    """The same queries through a projector's read-only HTTP API (GET only).

    ``token`` (``Settings.http_token``) is sent as ``Authorization: Bearer``; a 401
    raises ``UnauthorizedError``.
    """

    def __init__(
        self, base_url: str, timeout_s: float = 10.0, *, token: SecretStr | None = None
    ) -> None:
        self._base = base_url.rstrip("/")
        self._timeout_s = timeout_s
        self._headers = {"Accept": "application/json"}
        if token is not None:
            self._headers["Authorization"] = f"Bearer {token.get_secret_value()}"

    def _get(self, path: str, **params: Any) -> Any:
        present = {k: v for k, v in params.items() if v is not None}
        try:
            response = httpx.get(
                f"{self._base}{path}",
                params=present,
                headers=self._headers,
                timeout=self._timeout_s,
            )
        except httpx.TransportError as exc:
            raise LedgerError(f"the query API at {self._base} did not answer: {exc}") from exc
        if response.is_error:
            raise ledger_error_of(response)
        return response.json()

    def healthy(self) -> bool:
        """True when the API answers ``/healthz``."""
        try:
            self._get("/healthz")
        except LedgerError:
            return False
        return True

    def status(self, channel_id: str, step_or_key: str, as_of: AsOf) -> models.StepStatus:
        """GET /v1/status/{channel}/{step_or_key}."""
        point = as_of.isoformat() if isinstance(as_of, datetime) else as_of
        channel, key = _id_segment("channel_id", channel_id), _id_segment("key", step_or_key)
        path = f"/v1/status/{channel}/{key}"
        return models.StepStatus.model_validate(self._get(path, as_of=point))

    def history(self, operation_id: str, limit: int) -> list[models.Version]:
        """GET /v1/history/{operation_id}."""
        page = self._get(f"/v1/history/{path_segment(operation_id)}", limit=limit)
        return [models.Version.model_validate(v) for v in page["items"]]

    def timeline(self, channel_id: str, limit: int) -> list[models.TimelineEntry]:
        """GET /v1/timeline/{channel_id}."""
        page = self._get(f"/v1/timeline/{_id_segment('channel_id', channel_id)}", limit=limit)
        return [models.TimelineEntry.model_validate(v) for v in page["items"]]

    def side_effects(
        self, channel_id: str, start: Bound, end: Bound, limit: int
    ) -> models.SideEffects:
        """GET /v1/side-effects/{channel_id}."""
        path = f"/v1/side-effects/{_id_segment('channel_id', channel_id)}"
        data = self._get(
            path, **_bound_params("from", start), **_bound_params("to", end), limit=limit
        )
        return models.SideEffects.model_validate(data)

    def duplicates(self, limit: int) -> list[models.SuspectedDuplicate]:
        """GET /v1/duplicates."""
        page = self._get("/v1/duplicates", limit=limit)
        return [models.SuspectedDuplicate.model_validate(v) for v in page["items"]]

    def positions(self) -> models.Positions:
        """GET /v1/positions."""
        return models.Positions.model_validate(self._get("/v1/positions"))

    def export(self, archive: Path, timeout_s: float = 600.0) -> None:
        """GET /v1/export: the projection's tables as zipped Parquet, written to ``archive``."""
        headers = {**self._headers, "Accept": "application/zip"}
        url = f"{self._base}{EXPORT_PATH}"
        try:
            with httpx.stream("GET", url, headers=headers, timeout=timeout_s) as response:
                if response.is_error:
                    response.read()
                    raise ledger_error_of(response)
                with archive.open("wb") as out:
                    for chunk in response.iter_bytes():
                        out.write(chunk)
        except httpx.TransportError as exc:
            raise LedgerError(f"the query API at {self._base} did not answer: {exc}") from exc


def _bound_params(end: str, bound: Bound) -> dict[str, Any]:
    """The query parameters of one end of a range (a step is its ``step-<N>`` key by now)."""
    time = None if bound.time is None else bound.time.isoformat()
    return {f"{end}_offset": bound.offset, f"{end}_time": time, f"{end}_key": bound.key}


def _id_segment(field: str, value: str) -> str:
    """An id as a path segment of a question to the API; an id no URL path can carry (the
    SDK refuses those at claim; an older one did not) is refused, with what to do instead."""
    why = path_unsafe(value)
    if why is not None:
        raise InvalidArgumentError(
            f"{field} {value!r} {why}: no URL path can carry it, so the HTTP API cannot be "
            "asked about it; query a DuckDB file instead (--db, a copy of the projector's file)"
        )
    return path_segment(value)


def path_segment(part: str) -> str:
    """``part`` quoted as one segment of a ``/v1`` path (a ``/`` in it included)."""
    return urllib.parse.quote(part, safe="")


def ledger_error_of(response: httpx.Response) -> LedgerError:
    """The ``LedgerError`` an error answer of the query API stands for (by HTTP status)."""
    try:
        body = response.json()
        message = f"{body.get('code')}: {body.get('message')}"
    except (ValueError, AttributeError):
        message = f"{response.status_code} {response.reason_phrase}"
    status = response.status_code
    if status == 401:
        return UnauthorizedError(f"{message} (set ONCELOG_HTTP_TOKEN to the API's token)")
    if status == 404:
        return NotFoundError(message)
    if status in (400, 422):
        return InvalidArgumentError(message)
    return LedgerError(f"HTTP {status} from the query API: {message}")
