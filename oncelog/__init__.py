"""oncelog: an execution ledger for agent fleets, on Apache Kafka and DuckDB."""

from oncelog.errors import LedgerError
from oncelog.settings import Settings

__all__ = ["LedgerError", "Settings"]
__version__ = "0.1.0"
