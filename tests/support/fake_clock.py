"""The one hand-moved clock of the unit tests: control/util/clock.py's `Clock` (upstream: k8s.io/utils
clock/testing/fake_clock.go). Monotonic seconds and the wall clock move together: `now()` is `wall` plus
the seconds moved since the start (by default `wall` is 2024-01-01 UTC plus `start` seconds, so both read
the same seconds).

Three ways time moves, for three kinds of code under test:
- `step(seconds)`: at once, no handshake. For code that reads the clock on the test's own thread (the
  proxier, the event correlator, the node reporter), or whose threads poll (`sleep`, below).
- `advance(seconds)`: for threads parked in `wait` (a DelayingQueue's waiting thread, the proxy's runner).
  It waits until those threads are parked (at least `waiters` of them: a DelayingQueue's waiting thread
  starts with its first `add_after`), moves time, wakes them, and returns only once each has parked again,
  i.e. has seen the new time and acted on it (moved the due items into the queue). So a test may assert
  right after `advance`, with no sleeps. Do not advance after shutting a queue down: its waiting thread
  exits instead of parking again.
- `sleep(stop, seconds)`: the sleeper moves time itself by `seconds` and yields the processor a moment, so
  loops that pause between tries (leader election) run through fake minutes in real milliseconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

SETTLE_TIMEOUT = 10.0  # real seconds a woken thread may take to park again before `advance` fails
EPOCH = datetime(2024, 1, 1, tzinfo=UTC)


class FakeClock:
    def __init__(self, start: float = 1000.0, *, wall: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._parked_changed = threading.Condition(self._lock)
        self._start = start
        self._now = start
        self._wall = wall or EPOCH + timedelta(seconds=start)
        self._known: set[threading.Condition] = set()  # every condition ever waited on
        self._parked: set[threading.Condition] = set()  # conditions whose waiter is inside wait() now

    def monotonic(self) -> float:
        with self._lock:
            return self._now

    def now(self) -> datetime:
        with self._lock:
            return self._wall + timedelta(seconds=self._now - self._start)

    def step(self, seconds: float) -> None:
        """Moves time at once (no thread is woken)."""
        with self._lock:
            self._now += seconds

    def sleep(self, stop: threading.Event, seconds: float) -> bool:
        """Moves time by `seconds` instead of sleeping; True if `stop` is set."""
        if stop.is_set():
            return True
        self.step(max(0.0, seconds))
        time.sleep(0.001)  # let other threads run
        return stop.is_set()

    def wait(self, condition: threading.Condition, timeout: float | None) -> None:
        """Parks until notified (by the code under test or by `advance`); fake time never passes alone."""
        if timeout is not None and timeout <= 0:
            return
        with self._lock:
            self._known.add(condition)
            self._parked.add(condition)
            self._parked_changed.notify_all()
        try:
            condition.wait()
        finally:
            with self._lock:
                self._parked.discard(condition)

    def advance(self, seconds: float, *, waiters: int = 1) -> None:
        """Moves time once at least `waiters` threads are parked and every thread that ever waited here is
        parked (nothing is mid-step), then returns when each woken one has parked again."""
        with self._parked_changed:
            self._await(lambda: len(self._parked) >= waiters and self._parked >= self._known,
                        f"fewer than {waiters} thread(s) parked in FakeClock.wait")
            self._now += seconds
            woken = list(self._parked)
        for condition in woken:
            # Under the condition's lock its waiter is inside wait() (parked) or busy; either way it reads
            # the new time before it parks again.
            with condition:
                with self._lock:
                    self._parked.discard(condition)
                condition.notify_all()
        with self._parked_changed:
            self._await(lambda: all(c in self._parked for c in woken),
                        "a thread woken by FakeClock.advance did not wait again")

    def _await(self, predicate: Callable[[], bool], message: str) -> None:
        if not self._parked_changed.wait_for(predicate, SETTLE_TIMEOUT):
            raise AssertionError(message)
