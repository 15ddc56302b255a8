"""``python -m drills.upgrade``: the previous release against the current one, during traffic
(:mod:`drills.upgrade.drill`). The last line is one JSON object naming the previous release."""

from __future__ import annotations

import json

from drills.upgrade.drill import upgrade_drill


def main() -> None:
    """Run the drill; the last line is one JSON object."""
    out = upgrade_drill()
    print(json.dumps(out))
    raise SystemExit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
