"""Crash-consistency harness: ``make chaos`` / ``python -m drills.chaos``.

Real worker processes run 6-step workflows against a downstream service in its
own process and SIGKILL themselves at chosen crash points; a fresh process then
retries the workflow. The harness counts duplicate effects and lost steps per
strategy x crash point and cross-checks duplicates against the ledger.
"""
