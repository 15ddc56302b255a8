"""oncelog: an execution ledger for agent fleets, on Apache Kafka and DuckDB.

The clients are imported lazily, so that importing a pure part (the fold, the
codec) never loads librdkafka or DuckDB.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oncelog import _compiled
from oncelog.errors import LedgerError
from oncelog.settings import Settings

if TYPE_CHECKING:
    from oncelog.connection import connect, connect_sync
    from oncelog.producer.client import LedgerClient
    from oncelog.producer.recordable import jsonable
    from oncelog.producer.sync_client import SyncLedgerClient
    from oncelog.producer.tool_model import ToolContext
    from oncelog.receipts import verify_receipt
    from oncelog.schemas.models import PreviousAttempt

__all__ = [
    "LedgerClient",
    "LedgerError",
    "PreviousAttempt",
    "Settings",
    "SyncLedgerClient",
    "ToolContext",
    "connect",
    "connect_sync",
    "jsonable",
    "verify_receipt",
]
__version__ = "0.2.0.dev0"

# Before anything imports a compiled module: the switch to its source (oncelog._compiled).
_compiled.install()

_LAZY = {
    "connect": "oncelog.connection",
    "connect_sync": "oncelog.connection",
    "LedgerClient": "oncelog.producer.client",
    "jsonable": "oncelog.producer.recordable",
    "SyncLedgerClient": "oncelog.producer.sync_client",
    "verify_receipt": "oncelog.receipts",
    # A tool's and a reconcile hook's arguments, for their annotations.
    "ToolContext": "oncelog.producer.tool_model",
    "PreviousAttempt": "oncelog.schemas.models",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib  # noqa: PLC0415

        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'oncelog' has no attribute {name!r}")
