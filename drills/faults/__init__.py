"""Fault drills: hostile input, projector kills, broker restarts (``make faults``)."""
