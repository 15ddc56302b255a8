"""Read-only queries over the DuckDB projection (built in the query issue)."""
