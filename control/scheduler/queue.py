"""The scheduling queue: which pending pod the scheduler tries next, and when a pod that did not fit is
tried again.

Upstream: pkg/scheduler/backend/queue/scheduling_queue.go (`PriorityQueue`), with its defaults
(pkg/scheduler/apis/config/v1/defaults.go): podInitialBackoffSeconds 1, podMaxBackoffSeconds 10,
podMaxInUnschedulablePodsDuration 5 min. Three structures, a pod in at most one of them:

- activeQ: pods to try now, a heap ordered by priority (higher first), then by the time they were queued
  (upstream's PrioritySort QueueSort plugin).
- backoffQ: pods that failed and wait out their backoff, 1 s doubled per attempt up to 10 s, counted from
  when they failed; `flush_backoff_completed` (upstream: every second) moves the ripe ones to activeQ.
- unschedulable: pods that fit nowhere. Nothing retries them until a cluster event that could make them
  fit (`move_all_to_active_or_backoff`: a node added, changed or deleted, an assigned pod added, changed,
  deleted or finished), or until they have waited 5 minutes (`flush_unschedulable_left_over`; upstream
  checks every 30 s). A move sends a pod to backoffQ if its backoff has not run out yet, else to activeQ.

A pod that failed while a move request came in during its cycle goes to backoffQ instead of
unschedulable (upstream's moveRequestCycle), so the event that could have made it fit is not lost. A pod
that failed for an error (not "fits nowhere") also goes to backoffQ.

Which pods an event moves: the node events and an assigned pod's deletion move every unschedulable pod;
events only some plugins registered for (upstream EventsToRegister: an assigned pod added or changed, a
node deleted — PodTopologySpread, InterPodAffinity) pass `plugins` and move only the pods one of those
plugins rejected (`unschedulable_plugins`, upstream's UnschedulablePlugins), or that no plugin rejected;
a plugin with a QueueingHint in `hints` (InterPodAffinity's, on an assigned pod added or relabelled) is
asked whether the event helps the pod. Departures: the other plugins have no hints, so a listed event
moves the pods they rejected — the events are few, and a pod that still does not fit returns to
unschedulable after one cheap cycle. No gated pods (schedulingGates).

Time is the injected clock's monotonic seconds; `pop` waits on the clock, so tests drive it with
tests/support/fake_clock.py. Thread-safe.
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from control.api.typed.core import Pod
from control.apimachinery.meta import key_of
from control.util.clock import Clock, RealClock

INITIAL_BACKOFF_SECONDS = 1.0
MAX_BACKOFF_SECONDS = 10.0
MAX_IN_UNSCHEDULABLE_SECONDS = 300.0
FLUSH_PERIOD_SECONDS = 1.0  # how often a waiting `pop` looks at backoffQ and the unschedulable pods

QueueingHint = Callable[[Mapping[str, Any]], bool]  # pending pod → whether the event may make it fit

ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"


@dataclass
class QueuedPodInfo:
    """A pod in the queue (upstream framework.QueuedPodInfo): `timestamp` is when it was last queued,
    `attempts` how many cycles it has had."""

    pod: Mapping[str, Any]
    timestamp: float
    initial_attempt_timestamp: float | None = None
    attempts: int = 0
    unschedulable_reasons: frozenset[str] = field(default_factory=frozenset)
    unschedulable_plugins: frozenset[str] = field(default_factory=frozenset)

    @property
    def key(self) -> str:
        return key_of(self.pod)

    @property
    def priority(self) -> int:
        return int(Pod(self.pod).spec.priority or 0)


def backoff_seconds(attempts: int, *, initial: float = INITIAL_BACKOFF_SECONDS,
                    maximum: float = MAX_BACKOFF_SECONDS) -> float:
    """initial · 2^(attempts-1), at most `maximum` (upstream calculateBackoffDuration)."""
    if attempts <= 0:
        return 0.0
    return min(maximum, initial * 2.0 ** (attempts - 1))


def _scheduling_relevant(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    """What of a pod an update must change to be worth another try: not status, not resourceVersion."""
    metadata = {k: v for k, v in Pod(pod).metadata.raw.items()
                if k not in ("resourceVersion", "generation", "managedFields")}
    return {"metadata": metadata, "spec": pod.get("spec")}


class SchedulingQueue:
    def __init__(self, *, clock: Clock | None = None, initial_backoff: float = INITIAL_BACKOFF_SECONDS,
                 max_backoff: float = MAX_BACKOFF_SECONDS,
                 max_in_unschedulable: float = MAX_IN_UNSCHEDULABLE_SECONDS) -> None:
        self._clock: Clock = clock or RealClock()
        self._initial_backoff = initial_backoff
        self._max_backoff = max_backoff
        self._max_in_unschedulable = max_in_unschedulable
        self._cond = threading.Condition()
        self._seq = itertools.count()
        # Invariants: a key is in at most one of _active/_backoff/_unschedulable; the heaps hold stale
        # entries for keys that left (skipped on pop: an entry counts only if its QueuedPodInfo is current).
        self._active: dict[str, QueuedPodInfo] = {}
        self._active_heap: list[tuple[int, float, int, QueuedPodInfo]] = []
        self._backoff: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: set[str] = set()  # popped and not yet `done`
        self.scheduling_cycle = 0  # incremented by every pop
        self._move_request_cycle = -1
        self._closed = False

    # -- informer side -------------------------------------------------------------------------------------

    def add(self, pod: Mapping[str, Any]) -> None:
        """A new pending pod: to activeQ (upstream Add)."""
        with self._cond:
            key = key_of(pod)
            self._backoff.pop(key, None)
            self._unschedulable.pop(key, None)
            existing = self._active.get(key)
            if existing is not None:
                existing.pod = pod
                return
            self._push_active(QueuedPodInfo(pod, self._clock.monotonic()))

    def update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """A pending pod changed: update it where it is; an unschedulable one whose spec or labels changed
        may fit now, so it moves (to backoffQ if still backing off)."""
        with self._cond:
            key = key_of(new)
            for where in (self._active, self._backoff):
                if key in where:
                    where[key].pod = new
                    return
            info = self._unschedulable.get(key)
            if info is None:
                if key not in self._in_flight:
                    self._push_active(QueuedPodInfo(new, self._clock.monotonic()))
                return
            info.pod = new
            if _scheduling_relevant(old) != _scheduling_relevant(new):
                del self._unschedulable[key]
                self._requeue(info)

    def delete(self, pod: Mapping[str, Any]) -> None:
        with self._cond:
            key = key_of(pod)
            self._active.pop(key, None)
            self._backoff.pop(key, None)
            self._unschedulable.pop(key, None)

    def move_all_to_active_or_backoff(self, event: str, *, plugins: frozenset[str] | None = None,
                                      hints: Mapping[str, QueueingHint] | None = None) -> None:
        """A cluster event that could make unschedulable pods fit (`event` names it, for logs and tests):
        every unschedulable pod moves, or with `plugins` only those one of these plugins rejected (and
        those no plugin rejected) — and of those a plugin with a hint in `hints` rejected, only the pods
        its hint says the event may help (upstream isPodWorthRequeuing)."""
        hints = hints or {}
        with self._cond:
            for key, info in list(self._unschedulable.items()):
                if plugins is None or not info.unschedulable_plugins or any(
                        plugin in plugins and (plugin not in hints or hints[plugin](info.pod))
                        for plugin in info.unschedulable_plugins):
                    del self._unschedulable[key]
                    self._requeue(info)
            self._move_request_cycle = self.scheduling_cycle

    # -- scheduler side ------------------------------------------------------------------------------------

    def pop(self, *, timeout: float | None = None) -> QueuedPodInfo | None:
        """The next pod to schedule, waiting up to `timeout` seconds of the clock (None: until one comes or
        `close`); None on timeout or close. Ripe backoff and left-over unschedulable pods are flushed
        while waiting."""
        with self._cond:
            deadline = None if timeout is None else self._clock.monotonic() + timeout
            while True:
                self._flush_locked()
                while self._active_heap:
                    *_, info = heapq.heappop(self._active_heap)
                    if self._active.get(info.key) is info:
                        del self._active[info.key]
                        info.attempts += 1
                        if info.initial_attempt_timestamp is None:
                            info.initial_attempt_timestamp = self._clock.monotonic()
                        self.scheduling_cycle += 1
                        self._in_flight.add(info.key)
                        return info
                if self._closed:
                    return None
                wait = FLUSH_PERIOD_SECONDS
                if deadline is not None:
                    wait = min(wait, deadline - self._clock.monotonic())
                    if wait <= 0:
                        return None
                self._clock.wait(self._cond, wait)

    def done(self, key: str) -> None:
        """The cycle of `key` is over (scheduled, or given back with `add_unschedulable_if_not_present`)."""
        with self._cond:
            self._in_flight.discard(key)

    def add_unschedulable_if_not_present(self, info: QueuedPodInfo, cycle: int, *, unschedulable: bool,
                                         reasons: frozenset[str] = frozenset(),
                                         plugins: frozenset[str] = frozenset()) -> None:
        """Give back a pod whose cycle `cycle` failed: unschedulable (it fit nowhere; `plugins` rejected it)
        or an error."""
        with self._cond:
            key = info.key
            self._in_flight.discard(key)
            if key in self._active or key in self._backoff or key in self._unschedulable:
                return
            info.timestamp = self._clock.monotonic()
            info.unschedulable_reasons = reasons
            info.unschedulable_plugins = plugins
            if unschedulable and self._move_request_cycle < cycle:
                self._unschedulable[key] = info
            else:
                self._backoff[key] = info
            self._cond.notify_all()

    def flush_backoff_completed(self) -> None:
        with self._cond:
            self._flush_backoff_locked()

    def flush_unschedulable_left_over(self) -> None:
        with self._cond:
            self._flush_unschedulable_locked()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()

    def pending(self) -> dict[str, int]:
        """Pods per queue, for the scheduler_pending_pods gauge."""
        with self._cond:
            return {ACTIVE: len(self._active), BACKOFF: len(self._backoff), UNSCHEDULABLE: len(self._unschedulable)}

    def where(self, pod: Mapping[str, Any]) -> str | None:
        """Which queue holds `pod` (tests, debugging)."""
        key = key_of(pod)
        with self._cond:
            for name, where in ((ACTIVE, self._active), (BACKOFF, self._backoff),
                                (UNSCHEDULABLE, self._unschedulable)):
                if key in where:
                    return name
            return None

    # -- inside the lock -----------------------------------------------------------------------------------

    def _push_active(self, info: QueuedPodInfo) -> None:
        self._active[info.key] = info
        heapq.heappush(self._active_heap, (-info.priority, info.timestamp, next(self._seq), info))
        self._cond.notify_all()

    def backoff_expiry(self, info: QueuedPodInfo) -> float:
        return info.timestamp + backoff_seconds(info.attempts, initial=self._initial_backoff,
                                                maximum=self._max_backoff)

    def _requeue(self, info: QueuedPodInfo) -> None:
        if self.backoff_expiry(info) > self._clock.monotonic():
            self._backoff[info.key] = info
        else:
            self._push_active(info)

    def _flush_backoff_locked(self) -> None:
        now = self._clock.monotonic()
        for key, info in list(self._backoff.items()):
            if self.backoff_expiry(info) <= now:
                del self._backoff[key]
                self._push_active(info)

    def _flush_unschedulable_locked(self) -> None:
        """Requeue the pods unschedulable for too long. A pod enters `_unschedulable` only when absent
        and with `timestamp` = now, so the dict's order is oldest first: stop at the first pod still
        young. (`pop` calls this each time; a walk over every pod made each pop O(unschedulable pods),
        quadratic with thousands pending — bench/RESULTS.md, API server profile.)"""
        now = self._clock.monotonic()
        expired = []
        for key, info in self._unschedulable.items():
            if now - info.timestamp <= self._max_in_unschedulable:
                break
            expired.append(key)
        for key in expired:
            self._requeue(self._unschedulable.pop(key))

    def _flush_locked(self) -> None:
        self._flush_backoff_locked()
        self._flush_unschedulable_locked()
