"""The answers a kubelet got from the API server about its callers, each kept for a while (upstream:
k8s.io/apiserver/pkg/authentication/token/cache and the webhook authorizer's decision cache, both LRU
caches with separate lifetimes for positive and negative answers).

`ExpiringAnswers` maps a key to (expiry, answer) under one lock; when it holds MAX_ENTRIES it first drops
the expired entries and, if that is not enough, all of them (simpler than an LRU, and a full cache only
means asking the API server again). The clock is the caller's.
"""

from __future__ import annotations

import threading
from typing import Generic, TypeVar

MAX_ENTRIES = 4096
T = TypeVar("T")


class ExpiringAnswers(Generic[T]):
    def __init__(self) -> None:
        self._entries: dict[str, tuple[float, T]] = {}
        self._lock = threading.Lock()

    def get(self, key: str, now: float) -> tuple[bool, T | None]:
        """(found, answer): found only while the entry has not expired."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is None or entry[0] <= now:
            return False, None
        return True, entry[1]

    def put(self, key: str, answer: T, *, now: float, ttl: float) -> None:
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                self._entries = {k: v for k, v in self._entries.items() if v[0] > now}
                if len(self._entries) >= MAX_ENTRIES:
                    self._entries.clear()
            self._entries[key] = (now + ttl, answer)
