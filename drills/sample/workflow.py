"""The sample agent workflow of the demo and the chaos harness: six steps, pure and external."""

from __future__ import annotations

from typing import Final

#: (tool name, effect) of steps 1..6: pure model steps alternate with external effects.
STEPS: Final[tuple[tuple[str, str], ...]] = (
    ("plan", "pure"),
    ("charge", "external"),
    ("summarize", "pure"),
    ("email", "external"),
    ("classify", "pure"),
    ("notify", "external"),
)
