"""CrashLoopBackOff: how long a container that exited waits before the kubelet starts it again.

Upstream: client-go util/flowcontrol/backoff.go (Backoff: per-key entries of (current back-off, last
update); Next doubles up to the maximum, an entry idle for more than 2 × max starts over at the initial
value, GC drops such entries) as used by kuberuntime_manager.go doBackOff: the key is the pod and
container identity plus the container's spec hash (GetStableKey), the event time is the exited
container's finishedAt, and while `now - finishedAt < backoff` the start is refused with
"back-off <d> restarting failed container=<name> pod=<pod>" and the waiting reason CrashLoopBackOff.
Defaults 10 s doubling to 300 s (upstream's initial and MaxContainerBackOff), configurable so tests
and the integration suite can use short ones. Upstream's optional jitter is left out.

No clock inside: every call takes `now` (seconds, any monotonic-or-wall origin as long as it is one).
Not thread-safe by itself: the pod worker owning a pod is the only one asking about its keys, and the
GC runs from the same housekeeping loop; callers sharing one instance across threads hold a lock.
"""

from __future__ import annotations

from dataclasses import dataclass


def backoff_key(pod_uid: str, container_name: str, spec_hash: str) -> str:
    """One key per container definition: a spec change (new hash) starts back-off over, as upstream's
    GetStableKey does with the container hash."""
    return f"{pod_uid}_{container_name}_{spec_hash}"


@dataclass
class _Entry:
    backoff: float
    last_update: float


class Backoff:
    """flowcontrol.Backoff with the clock passed in. Durations in seconds."""

    def __init__(self, *, initial: float = 10.0, maximum: float = 300.0) -> None:
        if initial <= 0 or maximum < initial:
            raise ValueError(f"back-off needs 0 < initial <= maximum, got {initial}, {maximum}")
        self.initial = initial
        self.maximum = maximum
        self._entries: dict[str, _Entry] = {}

    def _expired(self, entry: _Entry, now: float) -> bool:
        return now - entry.last_update > 2 * self.maximum

    def next(self, key: str, now: float) -> float:
        """Record a failure of `key` at `now` (the container's finish time): the first one, or the first
        after 2 × max of quiet, waits `initial`; each further one doubles, up to `maximum`. Returns the
        back-off now in force."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            entry = self._entries[key] = _Entry(self.initial, now)
        else:
            entry.backoff = min(entry.backoff * 2, self.maximum)
            entry.last_update = now
        return entry.backoff

    def get(self, key: str) -> float:
        """The back-off currently recorded for `key` (0 if none), for messages."""
        entry = self._entries.get(key)
        return entry.backoff if entry else 0.0

    def remaining(self, key: str, now: float) -> float:
        """Seconds until `key` may start again; 0 when it may start now."""
        entry = self._entries.get(key)
        if entry is None or self._expired(entry, now):
            return 0.0
        return max(0.0, entry.last_update + entry.backoff - now)

    def in_backoff(self, key: str, now: float) -> bool:
        """upstream IsInBackOffSince(key, lastUpdate): refused while now - failure < back-off."""
        return self.remaining(key, now) > 0

    def admit(self, key: str, *, finished_at: float, now: float) -> float:
        """doBackOff in one step for a container whose last run ended at `finished_at`: 0 means start it
        now (the failure is recorded, so the next exit waits twice as long); otherwise the seconds still to
        wait (upstream IsInBackOffSince(key, finishedAt), then Next(key, finishedAt)). The first restart of
        a key is immediate, then 10 s, 20 s, ... as upstream. Asking again about the same exit while
        waiting records nothing."""
        entry = self._entries.get(key)
        if entry is not None and not self._expired(entry, now) and now - finished_at < entry.backoff:
            return finished_at + entry.backoff - now
        self.next(key, finished_at)
        return 0.0

    def reset(self, key: str) -> None:
        self._entries.pop(key, None)

    def gc(self, now: float) -> list[str]:
        """Drop entries without a failure for more than 2 × max; returns the dropped keys."""
        dropped = [key for key, entry in self._entries.items() if self._expired(entry, now)]
        for key in dropped:
            del self._entries[key]
        return dropped

    def __len__(self) -> int:
        return len(self._entries)
