"""The projector service: it runs the referee (:mod:`oncelog.referee`) over the requests log,
publishes decisions and snapshots, and keeps the DuckDB projection."""
