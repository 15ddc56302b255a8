"""The SDK: the ledger clients, the tool runner and the transports that carry requests."""
