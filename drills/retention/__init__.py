"""The retention drill: archive the requests log, trim it, prune the DuckDB history, and
check that nothing an auditor asks changes (``python -m drills.retention``)."""
