"""The referee: the pure rules that judge each request, shared by every place that folds.

:mod:`.fold` is the spec's table (one request against its operation's state, judged by
the Rust extension's fold), :mod:`.judge` the one step every folding place takes per
record, :mod:`.validate` refuses records that could never have come from the SDK. Nothing
here does I/O: the live projector, the bulk rebuild and the in-memory ledger differ
only in where they read records from and where the results go.
"""
