"""Spec-level identity: what names an operation, an attempt, a request (docs/spec.md §2, §8)."""
