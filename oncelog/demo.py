"""``make demo``: the main job on the embedded default.

Until the runtime lands, it starts the local broker, creates the topic pair and
says what it did. It does not pretend that the ledger runs.
"""

from __future__ import annotations

from rich.console import Console

from oncelog.broker.local import resolve_bootstrap
from oncelog.settings import Settings
from oncelog.topics import admin_client, check_topics, create_topics, ledger_topics


def main() -> None:
    """Start the broker, create and check the topics, and report."""
    console = Console()
    settings = Settings()
    bootstrap = resolve_bootstrap(settings, start=True)
    console.print(f"broker: {bootstrap}")
    admin = admin_client(settings, bootstrap)
    specs = ledger_topics(settings)
    created = create_topics(admin, specs)
    for name, partitions in check_topics(admin, specs).items():
        state = "created" if name in created else "exists"
        console.print(f"topic {name}: {state}, {partitions} partitions, configs checked")
    console.print(
        "[yellow]The ledger itself (SDK, projector, fleet) is not built yet: "
        "nothing else runs.[/yellow] Stop the broker with `make broker-stop`."
    )


if __name__ == "__main__":
    main()
