"""How long a work-queue item waits before it is retried (upstream: client-go util/workqueue/
default_rate_limiters.go; the token bucket follows golang.org/x/time/rate's `Limiter.Reserve`).

A `RateLimiter` answers `when(item)`: "this item failed (again); add it back after how many seconds?".
Every call counts as one more failure of that item until `forget(item)`, which a controller calls when the
item finally succeeded or was given up on; `num_requeues(item)` reports the count. The limiters:

- `ItemExponentialFailureRateLimiter`: `base_delay * 2**failures`, capped at `max_delay`, per item. The
  exponent is clamped so the float never overflows (upstream guards its int64 nanoseconds the same way).
- `ItemFastSlowRateLimiter`: `fast_delay` for the first `max_fast_attempts` failures, `slow_delay` after.
- `BucketRateLimiter`: one token bucket for all items (not per item): `burst` tokens, initially full,
  refilled at `qps` per second. A call takes a token even when none is left (the count goes negative), and
  the wait is the time until the bucket is back at zero — so reservations queue up behind each other
  exactly as `rate.Limiter.Reserve().Delay()` does. It keeps no per-item state (`num_requeues` is 0).
- `MaxOfRateLimiter`: asks *every* limiter (so each one counts the failure) and answers the longest wait.

`default_controller_rate_limiter()` is upstream's DefaultControllerRateLimiter: the worse of a per-item
exponential backoff from 5 ms to 1000 s and an overall bucket of 10 qps with a burst of 100 — the bucket
only bites when many different items fail at once.

Time is seconds on a monotonic scale; the bucket takes its `now` function as a parameter so tests drive
it with a fake clock. All limiters are thread-safe (workers call them concurrently).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Protocol

DEFAULT_BASE_DELAY = 0.005
DEFAULT_MAX_DELAY = 1000.0
DEFAULT_QPS = 10.0
DEFAULT_BURST = 100

_MAX_EXPONENT = 1000  # 2.0**1000 is finite; any sane base_delay times it is far above any max_delay


class RateLimiter(Protocol):
    def when(self, item: Hashable) -> float:
        """Seconds `item` should wait before it is added back; records one more failure of it."""
        ...

    def forget(self, item: Hashable) -> None:
        """Stop tracking `item` (it succeeded, or was given up on): its next failure starts afresh."""
        ...

    def num_requeues(self, item: Hashable) -> int:
        """How many failures of `item` are counted since it was last forgotten."""
        ...


def exponential_backoff(failures: int, *, base_delay: float, max_delay: float) -> float:
    """The wait after `failures` earlier failures: `base_delay * 2**failures`, at most `max_delay`."""
    return min(max_delay, base_delay * 2.0 ** min(failures, _MAX_EXPONENT))


class _FailureCounter:
    """Per-item failure counts under a lock: the state both per-item limiters share."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: dict[Hashable, int] = {}

    def count(self, item: Hashable) -> int:
        """Records one more failure of `item`; returns how many there were *before* this one."""
        with self._lock:
            before = self._failures.get(item, 0)
            self._failures[item] = before + 1
            return before

    def forget(self, item: Hashable) -> None:
        with self._lock:
            self._failures.pop(item, None)

    def num_requeues(self, item: Hashable) -> int:
        with self._lock:
            return self._failures.get(item, 0)


class ItemExponentialFailureRateLimiter(_FailureCounter):
    """Per-item exponential backoff: base_delay, 2*base_delay, 4*base_delay, ... capped at max_delay."""

    def __init__(self, *, base_delay: float = DEFAULT_BASE_DELAY, max_delay: float = DEFAULT_MAX_DELAY) -> None:
        if base_delay < 0 or max_delay < 0:
            raise ValueError("delays must not be negative")
        super().__init__()
        self.base_delay = base_delay
        self.max_delay = max_delay

    def when(self, item: Hashable) -> float:
        return exponential_backoff(self.count(item), base_delay=self.base_delay, max_delay=self.max_delay)


class ItemFastSlowRateLimiter(_FailureCounter):
    """Per item: `fast_delay` for the first `max_fast_attempts` failures, then `slow_delay` for every one."""

    def __init__(self, *, fast_delay: float, slow_delay: float, max_fast_attempts: int) -> None:
        super().__init__()
        self.fast_delay = fast_delay
        self.slow_delay = slow_delay
        self.max_fast_attempts = max_fast_attempts

    def when(self, item: Hashable) -> float:
        return self.fast_delay if self.count(item) < self.max_fast_attempts else self.slow_delay


class BucketRateLimiter:
    """One token bucket shared by all items: `burst` at once, then `qps` per second (see module notes)."""

    def __init__(self, *, qps: float = DEFAULT_QPS, burst: int = DEFAULT_BURST,
                 now: Callable[[], float] = time.monotonic) -> None:
        if qps <= 0 or burst < 1:
            raise ValueError("a bucket needs qps > 0 and burst >= 1")
        self.qps = qps
        self.burst = burst
        self._now = now
        self._lock = threading.Lock()
        self._tokens = float(burst)  # may go negative: tokens already promised to waiting items
        self._last = now()

    def when(self, item: Hashable) -> float:
        with self._lock:
            now = self._now()
            elapsed = max(0.0, now - self._last)  # a clock that steps back refills nothing
            self._tokens = min(float(self.burst), self._tokens + elapsed * self.qps) - 1.0
            self._last = max(now, self._last)
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def forget(self, item: Hashable) -> None:
        """Nothing to forget: the bucket is shared, not per item."""

    def num_requeues(self, item: Hashable) -> int:
        return 0


class MaxOfRateLimiter:
    """The worst case of several limiters. Every limiter is asked on each `when`, so each keeps counting;
    with a bucket inside, an item delayed longer by another limiter still used up a token (upstream notes
    the burst can then appear exceeded)."""

    def __init__(self, limiters: Iterable[RateLimiter]) -> None:
        self.limiters: tuple[RateLimiter, ...] = tuple(limiters)
        if not self.limiters:
            raise ValueError("MaxOfRateLimiter needs at least one limiter")

    def when(self, item: Hashable) -> float:
        return max([limiter.when(item) for limiter in self.limiters])  # a list: every limiter must count

    def forget(self, item: Hashable) -> None:
        for limiter in self.limiters:
            limiter.forget(item)

    def num_requeues(self, item: Hashable) -> int:
        return max(limiter.num_requeues(item) for limiter in self.limiters)


def default_controller_rate_limiter(*, now: Callable[[], float] = time.monotonic) -> MaxOfRateLimiter:
    """Upstream's DefaultControllerRateLimiter: per-item 5 ms .. 1000 s backoff, overall 10 qps / burst 100."""
    return MaxOfRateLimiter([
        ItemExponentialFailureRateLimiter(base_delay=DEFAULT_BASE_DELAY, max_delay=DEFAULT_MAX_DELAY),
        BucketRateLimiter(qps=DEFAULT_QPS, burst=DEFAULT_BURST, now=now),
    ])
