"""Drills: the demo, the crash-consistency matrix and the fault drills, outside the package.

They import :mod:`oncelog` and run it as a user would; the package never imports them.
Run them from the repository root: ``python -m drills.demo``, ``python -m drills.chaos``,
``python -m drills.faults`` (or ``make demo``, ``make chaos``, ``make faults``).
"""
