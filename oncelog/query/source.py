"""Where read-only queries run: a DuckDB file (offline) or a projector's HTTP API (live).

DuckDB allows one writer process, which owns the file; while a projector runs,
live queries go through its HTTP API. Both sources answer with the same models.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

import duckdb
import httpx
from pydantic import SecretStr

from oncelog.errors import InvalidArgumentError, LedgerError
from oncelog.identity.ids import key_of
from oncelog.identity.validation import path_unsafe
from oncelog.query import effects, models, queries
from oncelog.query.approvals import pending_approvals
from oncelog.query.effects import Bound
from oncelog.schemas import read_api
from oncelog.schemas.read_api import error_of

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
    def approvals(self, limit: int) -> list[models.PendingApproval]: ...
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

    def approvals(self, limit: int) -> list[models.PendingApproval]:
        """See :func:`oncelog.query.approvals.pending_approvals`."""
        return pending_approvals(self._con, limit)

    def positions(self) -> models.Positions:
        """See :func:`oncelog.query.queries.positions`."""
        return queries.positions(self._con)


class HttpSource:
    """The same queries through a projector's read-only HTTP API (GET only).

    ``token`` (``Settings.http_token``) is sent as ``Authorization: Bearer``; an error
    answer raises the ``LedgerError`` of its code (:func:`oncelog.schemas.read_api.error_of`).
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
        url = f"{self._base}{path}"
        try:
            response = httpx.get(
                url,
                params=present,
                headers=self._headers,
                timeout=self._timeout_s,
            )
        except httpx.TransportError as exc:
            raise LedgerError(f"the query API at {self._base} did not answer: {exc}") from exc
        if response.is_error:
            raise error_of(response.status_code, response.content, f"GET {url}")
        return response.json()

    def healthy(self) -> bool:
        """True when the API answers ``/healthz``."""
        try:
            self._get(read_api.HEALTHZ)
        except LedgerError:
            return False
        return True

    def status(self, channel_id: str, step_or_key: str, as_of: AsOf) -> models.StepStatus:
        """GET /v1/status/{channel}/{step_or_key}."""
        point = as_of.isoformat() if isinstance(as_of, datetime) else as_of
        path = read_api.path(
            read_api.STATUS,
            channel_id=_askable("channel_id", channel_id),
            step_or_key=_askable("key", step_or_key),
        )
        return models.StepStatus.model_validate(self._get(path, as_of=point))

    def history(self, operation_id: str, limit: int) -> list[models.Version]:
        """GET /v1/history/{operation_id}."""
        page = self._get(read_api.path(read_api.HISTORY, operation_id=operation_id), limit=limit)
        return [models.Version.model_validate(v) for v in page["items"]]

    def timeline(self, channel_id: str, limit: int) -> list[models.TimelineEntry]:
        """GET /v1/timeline/{channel_id}."""
        channel = _askable("channel_id", channel_id)
        page = self._get(read_api.path(read_api.TIMELINE, channel_id=channel), limit=limit)
        return [models.TimelineEntry.model_validate(v) for v in page["items"]]

    def side_effects(
        self, channel_id: str, start: Bound, end: Bound, limit: int
    ) -> models.SideEffects:
        """GET /v1/side-effects/{channel_id}."""
        channel = _askable("channel_id", channel_id)
        path = read_api.path(read_api.SIDE_EFFECTS, channel_id=channel)
        data = self._get(
            path, **_bound_params("from", start), **_bound_params("to", end), limit=limit
        )
        return models.SideEffects.model_validate(data)

    def duplicates(self, limit: int) -> list[models.SuspectedDuplicate]:
        """GET /v1/duplicates."""
        page = self._get(read_api.DUPLICATES, limit=limit)
        return [models.SuspectedDuplicate.model_validate(v) for v in page["items"]]

    def approvals(self, limit: int) -> list[models.PendingApproval]:
        """GET /v1/approvals."""
        page = self._get(read_api.APPROVALS, limit=limit)
        return [models.PendingApproval.model_validate(v) for v in page["items"]]

    def positions(self) -> models.Positions:
        """GET /v1/positions."""
        return models.Positions.model_validate(self._get(read_api.POSITIONS))

    def export(self, archive: Path, timeout_s: float = 600.0) -> None:
        """GET /v1/export: the projection's tables as zipped Parquet, written to ``archive``."""
        headers = {**self._headers, "Accept": "application/zip"}
        url = f"{self._base}{read_api.EXPORT}"
        try:
            with httpx.stream("GET", url, headers=headers, timeout=timeout_s) as response:
                if response.is_error:
                    raise error_of(response.status_code, response.read(), f"GET {url}")
                with archive.open("wb") as out:
                    for chunk in response.iter_bytes():
                        out.write(chunk)
        except httpx.TransportError as exc:
            raise LedgerError(f"the query API at {self._base} did not answer: {exc}") from exc


def _bound_params(end: str, bound: Bound) -> dict[str, Any]:
    """The query parameters of one end of a range (a step is its ``step-<N>`` key by now)."""
    time = None if bound.time is None else bound.time.isoformat()
    return {f"{end}_offset": bound.offset, f"{end}_time": time, f"{end}_key": bound.key}


def _askable(field: str, value: str) -> str:
    """``value``, an id the API can be asked about; an id no URL path can carry (the SDK
    refuses those at claim; an older one did not) is refused, with what to do instead."""
    why = path_unsafe(value)
    if why is not None:
        raise InvalidArgumentError(
            f"{field} {value!r} {why}: no URL path can carry it, so the HTTP API cannot be "
            "asked about it; query a DuckDB file instead (--db, a copy of the projector's file)"
        )
    return value
