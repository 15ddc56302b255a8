"""``make demo``: the ledger's main job on the embedded default."""
