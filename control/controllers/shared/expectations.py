"""Expectations: how many creates and deletes a controller is still waiting to see in its caches, so it
does not act twice on a stale cache.

Upstream: pkg/controller/controller_utils.go (`ControllerExpectations`, `ControlleeExpectations`,
`UIDTrackingControllerExpectations`, `ExpectationsTimeout`): the manager
creates or deletes pods in bursts and must not count the same missing pod twice while its watch lags).

The cycle, for a replica controller syncing `key`:
1. `satisfied_expectations(key)`: sync may act (create/delete pods) only if the earlier round's writes
   have all been seen by the informer, or the record is older than the timeout (a watch event was lost:
   act again rather than stall forever), or there is no record (a new controller).
2. Before writing: `expect_pods(key, creates=n, deletes=pod_keys)` (the shared pod control,
   pod_control.py, does it), or `expect_creations` / `expect_deletions` (the UID-tracking flavour keeps the
   keys of the pods it deletes, so a deletion it did not ask for is not counted).
3. The pod informer's handlers call `creation_observed(key)` / `deletion_observed(key[, pod_key])`.
   A write that failed is "observed" by the controller itself (the pod control does it; upstream does the
   same: the event will never come), so the count still reaches zero.

Thread-safe: handlers and workers call it concurrently; one lock guards every record. The clock is
injected (control/util/clock.py, its monotonic seconds) so tests can age a record past the timeout.

Departure: a record is a small mutable object under the manager's lock rather than upstream's atomic
int64s inside a cache.Store; `get_expectations` returns a frozen copy.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

EXPECTATIONS_TIMEOUT = 5 * 60.0  # upstream ExpectationsTimeout: a lost watch event stalls a key this long


@dataclass(frozen=True)
class Expectations:
    """One controller's outstanding creates and deletes (upstream ControlleeExpectations), as of `since`
    (monotonic seconds of the clock when they were set)."""

    add: int
    delete: int
    since: float

    @property
    def fulfilled(self) -> bool:
        """Every expected create and delete has been seen (counts may go below zero: more were seen)."""
        return self.add <= 0 and self.delete <= 0


class ControllerExpectations:
    """Outstanding creates/deletes per controller key (upstream ControllerExpectations)."""

    def __init__(self, *, clock: Clock | None = None, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self._clock: Clock = clock or RealClock()
        self._timeout = timeout
        self._lock = threading.Lock()
        self._records: dict[str, Expectations] = {}  # controller key → its outstanding creates and deletes

    def get_expectations(self, key: str) -> Expectations | None:
        with self._lock:
            return self._records.get(key)

    def satisfied_expectations(self, key: str) -> bool:
        """Whether the controller `key` may act: no record, all fulfilled, or the record expired."""
        with self._lock:
            record = self._records.get(key)
        if record is None:
            return True  # a new controller, or one whose expectations were deleted
        if record.fulfilled:
            return True
        if self._clock.monotonic() - record.since > self._timeout:
            log.info("expectations of %s expired (add %d, delete %d): syncing anyway", key, record.add,
                     record.delete)
            return True
        return False

    def set_expectations(self, key: str, *, add: int, delete: int) -> None:
        """Replace `key`'s record with these counts, timed from now."""
        with self._lock:
            self._records[key] = Expectations(add, delete, self._clock.monotonic())

    def expect_creations(self, key: str, adds: int) -> None:
        self.set_expectations(key, add=adds, delete=0)

    def expect_deletions(self, key: str, deletes: int) -> None:
        self.set_expectations(key, add=0, delete=deletes)

    def expect_pods(self, key: str, *, creates: int, deletes: Collection[str]) -> None:
        """Replace `key`'s record before a round of writes (the pod control's entry; SetExpectations)."""
        self.set_expectations(key, add=creates, delete=len(deletes))

    def raise_expectations(self, key: str, *, add: int, delete: int) -> None:
        """Add to an existing record (no record: nothing happens, as upstream)."""
        self._change(key, add, delete)

    def lower_expectations(self, key: str, *, add: int, delete: int) -> None:
        self._change(key, -add, -delete)

    def creation_observed(self, key: str) -> None:
        self.lower_expectations(key, add=1, delete=0)

    def deletion_observed(self, key: str, pod_key: str | None = None) -> None:
        """A deletion seen; every one counts here (`pod_key` is what the UID-tracking flavour checks)."""
        self.lower_expectations(key, add=0, delete=1)

    def delete_expectations(self, key: str) -> None:
        """Forget `key` (its controller was deleted)."""
        with self._lock:
            self._records.pop(key, None)

    def _change(self, key: str, add: int, delete: int) -> None:
        with self._lock:
            record = self._records.get(key)
            if record is not None:  # the time is kept: it says when the controller last set expectations
                self._records[key] = Expectations(record.add + add, record.delete + delete, record.since)


class UIDTrackingControllerExpectations:
    """Expectations whose deletions are counted only for the pods the controller itself deleted
    (upstream UIDTrackingControllerExpectations: a pod deleted by someone else while the controller waits
    must not satisfy its expectation). `pod_keys` are the deleted pods' `meta.key_of` keys, as upstream's
    PodKey."""

    def __init__(self, expectations: ControllerExpectations | None = None) -> None:
        self.expectations = expectations or ControllerExpectations()
        self._lock = threading.Lock()  # makes "remember the keys" and "set the count" one step
        self._deleting: dict[str, set[str]] = {}  # controller key → keys of pods it deleted, not yet seen gone

    def get_deleting(self, key: str) -> frozenset[str]:
        """The pods `key` deleted and has not yet seen deleted (upstream GetUIDs)."""
        with self._lock:
            return frozenset(self._deleting.get(key, ()))

    def satisfied_expectations(self, key: str) -> bool:
        return self.expectations.satisfied_expectations(key)

    def get_expectations(self, key: str) -> Expectations | None:
        return self.expectations.get_expectations(key)

    def expect_creations(self, key: str, adds: int) -> None:
        self.expectations.expect_creations(key, adds)

    def creation_observed(self, key: str) -> None:
        self.expectations.creation_observed(key)

    def lower_expectations(self, key: str, *, add: int, delete: int) -> None:
        self.expectations.lower_expectations(key, add=add, delete=delete)

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        self._expect(key, creates=0, deletes=set(pod_keys))

    def expect_pods(self, key: str, *, creates: int, deletes: Collection[str]) -> None:
        """Replace `key`'s record before a round of writes, remembering the pods it deletes (none: the
        pods remembered from an earlier round are kept, as `expect_creations` keeps them)."""
        if deletes:
            self._expect(key, creates=creates, deletes=set(deletes))
        else:
            self.expectations.expect_pods(key, creates=creates, deletes=())

    def _expect(self, key: str, *, creates: int, deletes: set[str]) -> None:
        with self._lock:
            if self._deleting.get(key):
                log.error("clobbering the outstanding deletions of %s: %s", key, sorted(self._deleting[key]))
            self._deleting[key] = deletes
            self.expectations.set_expectations(key, add=creates, delete=len(deletes))

    def deletion_observed(self, key: str, pod_key: str) -> None:
        """A pod is gone (or marked deleted); counts only if `key` deleted it, and only once."""
        with self._lock:
            deleting = self._deleting.get(key)
            if deleting is not None and pod_key in deleting:
                deleting.discard(pod_key)
                self.expectations.lower_expectations(key, add=0, delete=1)

    def delete_expectations(self, key: str) -> None:
        with self._lock:
            self.expectations.delete_expectations(key)
            self._deleting.pop(key, None)
