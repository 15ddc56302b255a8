"""Where read-only queries run: a DuckDB file (offline) or a projector's HTTP API (live).

DuckDB allows one writer process, which owns the file; while a projector runs,
live queries go through its HTTP API. Both sources answer with the same models.
"""

from __future__ import annotations

import urllib.parse
from datetime import datetime
from typing import Any, Protocol

import duckdb
import httpx
from pydantic import SecretStr

from oncelog.errors import InvalidArgumentError, LedgerError, NotFoundError, UnauthorizedError
from oncelog.query import models, queries

AsOf = int | datetime | None


class QuerySource(Protocol):
    """The read-only questions the CLI asks."""

    def status(self, channel_id: str, step_or_key: str, as_of: AsOf) -> models.StepStatus: ...
    def history(self, operation_id: str, limit: int) -> list[models.Version]: ...
    def timeline(self, channel_id: str, limit: int) -> list[models.TimelineEntry]: ...
    def side_effects(self, channel_id: str, from_step: int, to_step: int) -> models.SideEffects: ...
    def duplicates(self, limit: int) -> list[models.SuspectedDuplicate]: ...
    def positions(self) -> models.Positions: ...


def _step_or_key(step_or_key: str) -> dict[str, Any]:
    step = step_or_key.isascii() and step_or_key.isdigit()  # not "¹": int() refuses it
    return {"step": int(step_or_key)} if step else {"key_name": step_or_key}


class LocalSource:
    """Queries over a DuckDB connection (a file opened read-only)."""

    def __init__(self, con: duckdb.DuckDBPyConnection) -> None:
        self._con = con

    def status(self, channel_id: str, step_or_key: str, as_of: AsOf) -> models.StepStatus:
        """See :func:`oncelog.query.queries.step_status`."""
        return queries.step_status(self._con, channel_id, as_of=as_of, **_step_or_key(step_or_key))

    def history(self, operation_id: str, limit: int) -> list[models.Version]:
        """See :func:`oncelog.query.queries.operation_history`."""
        return queries.operation_history(self._con, operation_id, limit)

    def timeline(self, channel_id: str, limit: int) -> list[models.TimelineEntry]:
        """See :func:`oncelog.query.queries.channel_timeline`."""
        return queries.channel_timeline(self._con, channel_id, limit)

    def side_effects(self, channel_id: str, from_step: int, to_step: int) -> models.SideEffects:
        """See :func:`oncelog.query.queries.side_effects`."""
        return queries.side_effects(self._con, channel_id, from_step, to_step)

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
        path = f"/v1/status/{path_segment(channel_id)}/{path_segment(step_or_key)}"
        return models.StepStatus.model_validate(self._get(path, as_of=point))

    def history(self, operation_id: str, limit: int) -> list[models.Version]:
        """GET /v1/history/{operation_id}."""
        page = self._get(f"/v1/history/{path_segment(operation_id)}", limit=limit)
        return [models.Version.model_validate(v) for v in page["items"]]

    def timeline(self, channel_id: str, limit: int) -> list[models.TimelineEntry]:
        """GET /v1/timeline/{channel_id}."""
        page = self._get(f"/v1/timeline/{path_segment(channel_id)}", limit=limit)
        return [models.TimelineEntry.model_validate(v) for v in page["items"]]

    def side_effects(self, channel_id: str, from_step: int, to_step: int) -> models.SideEffects:
        """GET /v1/side-effects/{channel_id}."""
        data = self._get(
            f"/v1/side-effects/{path_segment(channel_id)}", from_step=from_step, to_step=to_step
        )
        return models.SideEffects.model_validate(data)

    def duplicates(self, limit: int) -> list[models.SuspectedDuplicate]:
        """GET /v1/duplicates."""
        page = self._get("/v1/duplicates", limit=limit)
        return [models.SuspectedDuplicate.model_validate(v) for v in page["items"]]

    def positions(self) -> models.Positions:
        """GET /v1/positions."""
        return models.Positions.model_validate(self._get("/v1/positions"))


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
