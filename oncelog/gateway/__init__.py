"""The HTTP write API of ``oncelog serve``: any language claims and completes over HTTP.

``POST /v1/claims`` and ``POST /v1/executions/{operation_id}/{heartbeat,complete,fail,
release,cancel}`` (and ``GET /v1/executions/{operation_id}``) make the SDK's requests
in the ``serve`` process and answer their decisions, with the SDK's semantics. On only
with ``ONCELOG_HTTP_WRITE_TOKEN``; see docs/http-api.md for the routes and statuses.
"""

from __future__ import annotations

from oncelog.gateway.routes import WriteApi
from oncelog.gateway.service import open_write_api

__all__ = ["WriteApi", "open_write_api"]
