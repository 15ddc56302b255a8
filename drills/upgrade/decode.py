"""Decode every record of the executions, decisions and checkpoints topics, with whichever
release's codec runs this module.

Usage: ``python -m drills.upgrade.decode`` with the broker and topics in the ``ONCELOG_*``
environment. Run with the previous release's Python after the current one has written, it
shows that old readers still decode what new writers publish. Prints one JSON object:
per topic, the records read and the ones that did not decode (a tombstone is neither).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from oncelog.errors import LedgerError
from oncelog.kafka.reader import read_to_end, topic_ends
from oncelog.schemas.codec import decode_checkpoint, decode_decision, decode_snapshot
from oncelog.settings import Settings

MODULE = "drills.upgrade.decode"


def decoded(settings: Settings, topic: str, decode: Callable[[bytes], Any]) -> dict[str, Any]:
    """The records of ``topic`` and how many of them ``decode`` refused (with one reason)."""
    assert settings.bootstrap_servers is not None
    kafka = settings.kafka_config(settings.bootstrap_servers)
    records, refused, first = 0, 0, None
    for p in topic_ends(kafka, topic):
        for msg in read_to_end(kafka, topic, p, timeout_s=300):
            value = msg.value()
            if value is None:
                continue
            records += 1
            try:
                decode(value)
            except LedgerError as exc:
                refused += 1
                first = first or str(exc)
    return {"records": records, "undecodable": refused, "first_error": first}


def main() -> None:
    """Print the figures of the three topics as one JSON line."""
    settings = Settings()
    out = {
        "executions": decoded(settings, settings.executions_topic, decode_snapshot),
        "decisions": decoded(settings, settings.decisions_topic, decode_decision),
        "checkpoints": decoded(settings, settings.checkpoints_topic, decode_checkpoint),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
