"""Benchmarks: scripts that print figures, never timed tests."""
