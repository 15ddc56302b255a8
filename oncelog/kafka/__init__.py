"""Thin wrappers over confluent-kafka: lazy clients, typed arguments, translated errors."""
