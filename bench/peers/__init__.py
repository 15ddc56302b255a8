"""``make bench-peers``: oncelog side by side with a plain Postgres table and DBOS."""
