"""The ``Idempotency-Key`` header of the write API (IETF httpapi-idempotency-key-header).

A key becomes the request id of the request a POST makes, so a retried POST is the
same request to the fold, which never lets one request id take effect twice. A claim
is a retry only with the same token too: :class:`ClaimTokens` derives a claim's token
from its key (an HMAC), so the retry carries the token of the first POST and gets its
grant back, without the server keeping any token.

What the fold cannot tell, the draft's two answers, the write API remembers
(:class:`KeyMemory`): a key reused with another route or payload is refused (422,
``idempotency_key_reused``), and so is a key whose first request still waits for its
decision (409, ``request_in_flight``). The memory is bounded, in count and in age. The
worker processes of one ``oncelog gateway`` share it (one SQLite file), so a key means
the same on each; the write API of ``serve`` keeps its own.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Final

from oncelog.errors import IdempotencyKeyReusedError, RequestInFlightError
from oncelog.identity import validation
from oncelog.identity.canonical_json import canonical_json
from oncelog.producer.dispatch import MAX_CALL_TIMEOUT_S

KEPT: Final = 100_000
"""Keys remembered at most (about 200 bytes each)."""
KEPT_FOR_S: Final = 24 * 3600.0
"""How long a key is remembered: longer than any client retries a POST."""


def parse_key(header: str | None) -> str | None:
    """The key of an ``Idempotency-Key`` header: an sf-string (quoted) as the draft has it,
    or a bare token; checked as a request id is (non-empty, at most 256 bytes, no
    control characters). None without the header."""
    if header is None:
        return None
    value = header.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1]
    return validation.validate_unique_id("Idempotency-Key", value)


def fingerprint(route: str, payload: Any) -> str:
    """What a key was first used for: the route and the JSON payload, hashed."""
    return hashlib.sha256(canonical_json({"route": route, "payload": payload})).hexdigest()


_SCHEMA: Final = (
    "CREATE TABLE IF NOT EXISTS uses (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,"
    " in_flight_until REAL NOT NULL, at REAL NOT NULL)",
    "CREATE INDEX IF NOT EXISTS uses_at ON uses (at)",
    "CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL)",
)


def _connect(path: Path | None) -> sqlite3.Connection:
    """The memory's database: in this process only (None), or a file its workers share."""
    if path is not None:
        path.touch(mode=0o600, exist_ok=True)  # it holds the claim key: its owner's only
    where = ":memory:" if path is None else str(path)
    db = sqlite3.connect(where, timeout=10.0, isolation_level=None, check_same_thread=False)
    # Lost on a crash of the host, as the memory of one process is: the fold still
    # dedups a retried request id; only the 422 and 409 answers depend on this file.
    db.execute("PRAGMA synchronous=OFF")
    if path is not None:  # readers and the writer of each worker do not block each other
        db.execute("PRAGMA journal_mode=WAL")
    with _transaction(db):
        for statement in _SCHEMA:
            db.execute(statement)
    return db


# Oldest first (by first use): a key is forgotten when too old, or to make room.
_FORGET: Final = "DELETE FROM uses WHERE at <= ? OR rowid <= (SELECT max(rowid) FROM uses) - ?"
# A new key is taken; a known one again only with its payload and once not in flight.
# No row back: refused (the caller tells why).
_TAKE: Final = (
    "INSERT INTO uses VALUES (?, ?, ?, ?) ON CONFLICT (key) DO UPDATE"
    " SET in_flight_until = excluded.in_flight_until"
    " WHERE fingerprint = excluded.fingerprint AND in_flight_until <= excluded.at"
    " RETURNING at"
)


@contextmanager
def _transaction(db: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    """One write transaction, taken at once: the workers sharing the file queue here."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield db
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


class KeyMemory:
    """The keys seen by this process, or by every process given the same ``path``: the
    payload each first came with, and until when its request waits for its decision (at
    most ``kept`` keys, each ``kept_for_s``; a request is in flight at most
    ``in_flight_for_s``, so that a worker killed mid-request does not hold its key).

    The processes of one ``oncelog gateway`` share one file (SQLite), so that a key
    reused on another worker is refused as on the first; it also keeps the key of
    their claim tokens (:meth:`claim_key`).
    """

    def __init__(
        self,
        kept: int = KEPT,
        kept_for_s: float = KEPT_FOR_S,
        *,
        path: Path | None = None,
        clock: Callable[[], float] = time.time,
        in_flight_for_s: float = MAX_CALL_TIMEOUT_S,
    ) -> None:
        self.kept, self.kept_for_s, self.in_flight_for_s = kept, kept_for_s, in_flight_for_s
        self.clock = clock
        self._db = _connect(path)
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT count(*) FROM uses").fetchone()[0])

    def claim_key(self) -> bytes:
        """The key of the claim tokens derived from idempotency keys: drawn by the first
        process of the file, the same for all of them (a retry on another worker gets
        the token of the first POST)."""
        with self._lock, _transaction(self._db) as db:
            fresh = os.urandom(32)
            db.execute("INSERT OR IGNORE INTO secrets VALUES ('claim_key', ?)", (fresh,))
            row = db.execute("SELECT value FROM secrets WHERE name = 'claim_key'").fetchone()
        return bytes(row[0])

    @contextmanager
    def hold(self, key: str | None, print_: str) -> Iterator[None]:
        """Run the request of ``key`` (with payload fingerprint ``print_``), refusing a
        reuse with another payload and a retry while the first is still in flight."""
        if key is None:
            yield
            return
        first_at = self._begin(key, print_)
        try:
            yield
        finally:
            with self._lock:
                self._db.execute(
                    "UPDATE uses SET in_flight_until = 0 WHERE key = ? AND at = ?",
                    (key, first_at),
                )

    def _begin(self, key: str, print_: str) -> float:
        """Take ``key`` for its request; the time it was first used."""
        now = self.clock()
        with self._lock:
            db = self._db
            # One statement each, atomic in SQLite: no transaction to hold across processes.
            db.execute(_FORGET, (now - self.kept_for_s, self.kept - 1))
            taken = db.execute(_TAKE, (key, print_, now + self.in_flight_for_s, now)).fetchone()
            if taken is not None:
                return float(taken[0])
            row = db.execute("SELECT fingerprint FROM uses WHERE key = ?", (key,)).fetchone()
        if row is not None and row[0] != print_:
            raise IdempotencyKeyReusedError(
                f"Idempotency-Key {key!r} was first used with another route or payload: "
                "use a fresh key for a new request"
            )
        raise RequestInFlightError(
            f"the request with Idempotency-Key {key!r} still waits for its decision: "
            "retry after it is answered"
        )


class ClaimTokens:
    """The claim token of a claim sent with an ``Idempotency-Key``: HMAC-SHA256 of the
    key and the operation's names, 128 bits in hex like a fresh token, unguessable
    without the key. ``key`` None: a random one of this process's own."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = os.urandom(32) if key is None else key

    def token(
        self, request_id: str, channel_id: str, key_name: str | None, step: int | None
    ) -> str:
        """The token of the claim ``request_id`` makes for that operation."""
        message = json.dumps([request_id, channel_id, key_name, step]).encode()
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()[:32]
