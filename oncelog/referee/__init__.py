"""The referee: the pure rules that judge each request, shared by every place that folds.

:mod:`.fold` is the spec's table (one request against its operation's state; its
shared verdict helpers, approval and inherit rules are :mod:`.verdicts`,
:mod:`.approvals` and :mod:`.inherits`, private to this package),
:mod:`.validate` refuses records that could never have come from the SDK. Nothing
here does I/O: the live projector, the bulk rebuild and the in-memory ledger differ
only in where they read records from and where the results go.
"""
