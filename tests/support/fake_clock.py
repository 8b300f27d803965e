"""A hand-moved clock for control.client.workqueue's `Clock` protocol (and anything that only needs `now`).

`advance(seconds)` waits until the threads using the clock are parked in `wait` (at least `waiters` of
them: a DelayingQueue's waiting thread starts with its first `add_after`), moves time, wakes them, and
returns only once each has parked again — i.e. has seen the new time and acted on it (moved the due items
into the queue). So a test may assert on the queue right after `advance`, with no sleeps. Do not advance
after shutting a queue down: its waiting thread exits instead of parking again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

SETTLE_TIMEOUT = 10.0  # real seconds a woken thread may take to park again before `advance` fails


class FakeClock:
    def __init__(self, start: float = 1000.0) -> None:
        self._lock = threading.Lock()
        self._parked_changed = threading.Condition(self._lock)
        self._now = start
        self._known: set[threading.Condition] = set()  # every condition ever waited on
        self._parked: set[threading.Condition] = set()  # conditions whose waiter is inside wait() now

    def now(self) -> float:
        with self._lock:
            return self._now

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
