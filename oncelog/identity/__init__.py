"""Spec-level identity: what names an operation, an attempt and a request (spec §2, §8)."""
