"""Histories of ledger client calls, recorded by the drills and checked linearizable per
operation against the model of docs/spec.md §4 (``drills/linearizability``, Porcupine)."""
