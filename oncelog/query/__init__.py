"""Read-only queries over the DuckDB projection: the functions, the HTTP API, its client."""
