"""``python -m drills.upgrade``: the previous release against the current one, during traffic
(:mod:`drills.upgrade.drill`). The last line is one JSON object naming the previous release."""

from __future__ import annotations

import argparse
import json

from drills.upgrade.drill import PHASES, upgrade_drill


def main() -> None:
    """Run the drill (every phase, or those named); the last line is one JSON object."""
    parser = argparse.ArgumentParser(prog="python -m drills.upgrade")
    parser.add_argument("phases", nargs="*", help=f"of {', '.join(PHASES)} (default: all)")
    parser.add_argument(
        "--contested", action="store_true", help="contest claims the previous release folds"
    )
    args = parser.parse_args()
    unknown = set(args.phases) - set(PHASES)
    if unknown:
        parser.error(f"no phase {', '.join(sorted(unknown))}")
    out = upgrade_drill(phases=args.phases or None, contested=args.contested)
    print(json.dumps(out))
    raise SystemExit(0 if out["ok"] else 1)


if __name__ == "__main__":
    main()
