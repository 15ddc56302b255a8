"""The SDK side: identity (keys) and, later, the ledger clients."""
