"""A value fetched again once it is older than a time to live, by an injectable clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TtlCache(Generic[T]):
    """The last value ``fetch`` made from the one before, reused while younger than ``ttl_s``.

    Thread-safe; ``clock`` (monotonic seconds) is injectable so that tests need no sleeps.
    When ``fetch`` raises one of ``keep_on`` the last value stays, if there is one (and
    counts as fetched then); any other error, or one with no value yet, is raised.
    """

    def __init__(
        self,
        fetch: Callable[[T | None], T],
        ttl_s: float,
        clock: Callable[[], float] = time.monotonic,
        keep_on: tuple[type[Exception], ...] = (),
    ) -> None:
        self._fetch_value = fetch
        self._ttl_s = ttl_s
        self._clock = clock
        self._keep_on = keep_on
        self._lock = threading.Lock()
        self._value: T | None = None
        self._fetched_at = float("-inf")

    def get(self, max_age_s: float | None = None) -> T:
        """The cached value, fetched again once older than ``max_age_s`` (the TTL if None)."""
        age = self._ttl_s if max_age_s is None else max_age_s
        with self._lock:
            if self._value is not None and self._clock() - self._fetched_at < age:
                return self._value
            try:
                self._value = self._fetch_value(self._value)
            except self._keep_on:
                if self._value is None:
                    raise
            self._fetched_at = self._clock()
            return self._value
