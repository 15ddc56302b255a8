"""What a call that timed out does about a client that is stuck while the cluster is not.

librdkafka can leave a client's producer holding requests it no longer sends, or its
reader holding the reply partition without fetching it, after faults between the
brokers healed (docs/reliability.md, "A client that stops delivering, or reading").
Every later call would time out as well, so a timed-out call looks: the producer is
renewed and the reader reads on with a new consumer once their work has waited for the
stall time (:mod:`oncelog.kafka.progress_watch`). Off the hot path: only a timeout looks,
and what a look finds is mended off the caller's thread, within no call's time.
"""

from __future__ import annotations

import logging
import threading

from oncelog.kafka.lanes import Lanes
from oncelog.producer.listener import DecisionListener

_LOG = logging.getLogger("oncelog.producer")


def unstuck(sender: Lanes, listener: DecisionListener) -> None:
    """Have the producer renewed if it is stuck, and the reader look whether it is; each
    says what it did as a warning of the ``oncelog.producer`` logger. Neither holds the
    call up: the renewal runs on a thread of its own, the reader looks on its own."""
    listener.look_for_stall()
    if sender.stalled():
        threading.Thread(
            target=_renew, args=(sender,), name="oncelog-producer-renew", daemon=True
        ).start()


def _renew(sender: Lanes) -> None:
    try:
        moved = sender.renew()
    except Exception as exc:  # a thread of its own: said, not raised into nowhere
        _LOG.warning("oncelog: renewing the client's stuck producer failed: %r", exc)
        return
    _LOG.warning(
        "oncelog: the client's producer had held requests undelivered for %.0fs; a new one "
        "took the %d records it held",
        sender.stall_s,
        moved,
    )
