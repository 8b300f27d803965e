"""A bounded-frequency runner: run a function when asked, but at most every `min_interval` and at least
every `max_interval` (upstream pkg/util/async/bounded_frequency_runner.go, which the iptables proxier
drives with minSyncPeriod and syncPeriod).

`request()` only marks work as wanted, so a burst of informer events between two runs coalesces into
one run. The first request runs at once; a request sooner than `min_interval` after the last run waits
for the interval to pass. With no request, the function runs `max_interval` after the last run (the
periodic resync). `retry_after(delay)` schedules a run after a failure without a request, as upstream's
RetryAfter. Upstream also allows a burst of runs (its token bucket); we do not: one run per interval.

Time comes from a `Clock` (control/util/clock.py: `monotonic()` and a `wait` on a condition that the
clock's own time can end), so tests drive the loop with tests/support/fake_clock.py.
"""

from __future__ import annotations

import logging
import math
import threading
from collections.abc import Callable

from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)


class BoundedFrequencyRunner:
    def __init__(self, fn: Callable[[], object], *, min_interval: float, max_interval: float,
                 clock: Clock | None = None, name: str = "runner") -> None:
        if not 0 <= min_interval <= max_interval:
            raise ValueError(f"need 0 <= min_interval ({min_interval}) <= max_interval ({max_interval})")
        self._fn = fn
        self._min, self._max = min_interval, max_interval
        self.clock: Clock = clock or RealClock()
        self.name = name
        self._cond = threading.Condition()
        # All under _cond: a run was asked for; when a failed run wants its retry; when the last run began
        # (None: never, then the periodic run counts from the loop's start); the loop must end.
        self._requested = False
        self._retry_at = math.inf
        self._last_run: float | None = None
        self._started = 0.0
        self._stopped = False

    def request(self) -> None:
        """Ask for a run as soon as the minimum interval allows (upstream Run())."""
        with self._cond:
            self._requested = True
            self._cond.notify_all()

    def retry_after(self, delay: float) -> None:
        """Run again `delay` seconds from now, or sooner if requested or periodic (upstream RetryAfter)."""
        with self._cond:
            self._retry_at = min(self._retry_at, self.clock.monotonic() + delay)
            self._cond.notify_all()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()

    def _next_run(self, now: float) -> float:
        """When the next run is due, from the state under the lock (pure in `now`)."""
        last = self._last_run
        periodic = (self._started if last is None else last) + self._max
        wanted = math.inf
        if self._requested:
            wanted = now if last is None else last + self._min
        return min(periodic, wanted, self._retry_at)

    def loop(self) -> None:
        """Run until `stop()`; the function's exceptions are logged and do not end the loop."""
        with self._cond:
            self._started = self.clock.monotonic()
            while not self._stopped:
                now = self.clock.monotonic()
                due = self._next_run(now)
                if now < due:
                    self.clock.wait(self._cond, due - now)
                    continue
                self._requested, self._retry_at, self._last_run = False, math.inf, now
                self._cond.release()
                try:
                    self._fn()
                except Exception:  # a sync must never end the loop; the next one retries
                    log.exception("%s: run failed", self.name)
                finally:
                    self._cond.acquire()
