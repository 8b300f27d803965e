"""The controller work queue (the EndpointController's `queue *workqueue.Type`; upstream: client-go
util/workqueue/queue.go, delaying_queue.go, rate_limiting_queue.go).

Guarantees (upstream's doc.go "fair / stingy / re-enqueue while processing / shutdown"):
- FIFO: items are handed out in the order they were first added.
- An item added many times before a worker takes it is processed once.
- An item being processed (between `get` and `done`) is never handed to a second worker; if it is added
  again meanwhile it is queued once more when `done` is called, so the newer change is not lost.
- Shutting down wakes every blocked `get`; later `add`s are ignored.

Three structures under one lock hold this (upstream's Type fields, invariants on the attributes below):
`_queue` (order), `_dirty` (needs processing) and `_processing` (handed out, not yet done).

`get` raises `QueueShutDown` instead of returning upstream's `(item, shutdown)` pair, as Python 3.13's
`queue.Queue.shutdown` does, so a worker's item is always a real item; `get(timeout=...)` raises
`queue.Empty`. As upstream, a shut-down queue still hands out what is already queued; `run_workers` stops
taking items once its `stop` is set.

`DelayingQueue.add_after` keeps a heap of (ready time, item) served by one waiting thread, started on
first use and ended by shutdown; an item waiting twice keeps the earlier time. Upstream's 10 s heartbeat
("insurance") is not needed: the thread waits on a condition with a timeout on the monotonic clock, and
every add_after that makes a new earliest entry notifies it. The clock is injected (control/util/clock.py:
`monotonic()` and `wait(condition, timeout)` are what the queue uses) so tests move time by hand. `RateLimitingQueue`
adds `add_rate_limited`/`forget`/`num_requeues` on top of a `RateLimiter` (control/client/ratelimit.py).

Departures: `done` for an item that is not being processed raises `ValueError` (upstream ignores it and may
queue a dirty item twice); `shut_down_with_drain` waits until nothing is queued *or* processing (upstream
waits for processing only, so items still queued could outlive it) and takes an optional timeout; a delayed
add is never dropped because the item is being processed (a newer upstream revision drops it, which loses
the retry of an item whose worker calls `add_rate_limited` before `done`).
"""

from __future__ import annotations

import heapq
import itertools
import logging
import queue as stdqueue
import threading
import time
from collections import deque
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

from control.client.errors import ApiError
from control.client.ratelimit import RateLimiter, default_controller_rate_limiter
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

T = TypeVar("T", bound=Hashable)


class QueueShutDown(Exception):
    """`get` on a queue that is shutting down and has nothing left to hand out."""


class WorkQueue(Generic[T]):
    """A FIFO of distinct items with the guarantees of the module notes. Thread-safe."""

    def __init__(self, *, name: str = "") -> None:
        self.name = name
        self._lock = threading.Lock()
        self._has_work = threading.Condition(self._lock)  # getters wait here
        self._idle = threading.Condition(self._lock)  # shut_down_with_drain waits here
        # The order items are handed out in. Every element is in `_dirty` and not in `_processing`; no
        # element appears twice.
        self._queue: deque[T] = deque()
        # Every item that needs processing: all of `_queue`, plus items added again while processing.
        self._dirty: set[T] = set()
        # Items handed out by `get` and not yet `done`. An item here may also be in `_dirty` (but then not
        # in `_queue`); `done` moves it to `_queue` then.
        self._processing: set[T] = set()
        self._shutting_down = False
        self._draining = False  # a shut_down_with_drain is waiting; a plain shut_down cancels it

    def add(self, item: T) -> None:
        """Marks `item` as needing processing (ignored once shutting down)."""
        with self._lock:
            if not self._shutting_down:
                self._add_locked(item)

    def _add_locked(self, item: T) -> None:
        if item in self._dirty:
            return
        self._dirty.add(item)
        if item not in self._processing:
            self._queue.append(item)
            self._has_work.notify()

    def get(self, timeout: float | None = None) -> T:
        """The next item, waiting for one up to `timeout` seconds (forever if None). The caller must call
        `done(item)` when finished with it. Raises `QueueShutDown` when shutting down and nothing is queued,
        `queue.Empty` when the timeout passed first (`timeout` is real time, not the injected clock)."""
        with self._lock:
            deadline = None if timeout is None else time.monotonic() + timeout
            while not self._queue and not self._shutting_down:
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    raise stdqueue.Empty
                self._has_work.wait(remaining)
            if not self._queue:
                raise QueueShutDown(self.name)
            item = self._queue.popleft()
            self._dirty.discard(item)
            self._processing.add(item)
            return item

    def done(self, item: T) -> None:
        """Marks `item` as processed; if it was added again meanwhile it goes to the back of the queue."""
        with self._lock:
            if item not in self._processing:
                raise ValueError(f"done({item!r}): the item is not being processed")
            self._processing.remove(item)
            if item in self._dirty:
                self._queue.append(item)
                self._has_work.notify()
            if not self._queue and not self._processing:
                self._idle.notify_all()

    def __len__(self) -> int:
        """Items waiting to be handed out (not those being processed or delayed). For information only:
        do not gate `add`/`get` on it, it may change at once."""
        with self._lock:
            return len(self._queue)

    def shutting_down(self) -> bool:
        with self._lock:
            return self._shutting_down

    def shut_down(self) -> None:
        """Ignore new items and wake every blocked `get` (and cancel a `shut_down_with_drain` wait)."""
        with self._lock:
            self._draining = False
            self._shut_down_locked()

    def shut_down_with_drain(self, timeout: float | None = None) -> bool:
        """Shut down, then wait until every accepted item has been processed and `done` (workers must keep
        running meanwhile). Returns False if `timeout` seconds passed first or `shut_down` cancelled it."""
        with self._lock:
            self._draining = True
            self._shut_down_locked()
            drained = self._idle.wait_for(
                lambda: not self._draining or (not self._queue and not self._processing), timeout)
            return bool(drained) and not self._queue and not self._processing

    def _shut_down_locked(self) -> None:
        self._shutting_down = True
        self._has_work.notify_all()
        self._idle.notify_all()


class DelayingQueue(WorkQueue[T]):
    """A WorkQueue that can also add an item after a delay (`add_after`)."""

    def __init__(self, *, name: str = "", clock: Clock | None = None) -> None:
        super().__init__(name=name)
        self.clock: Clock = clock or RealClock()
        self._timer = threading.Condition(self._lock)  # the waiting thread waits here
        # A min-heap of (ready_at, sequence, item); the sequence keeps equal times in add_after order.
        # An entry is live only if `_ready_at[item]` equals its ready_at: a sooner add_after of the same
        # item pushes a new entry and leaves the old one to be skipped (lazy deletion instead of re-heaping).
        self._waiting: list[tuple[float, int, T]] = []
        self._ready_at: dict[T, float] = {}
        self._sequence = itertools.count()
        self._waiter: threading.Thread | None = None

    def add_after(self, item: T, delay: float) -> None:
        """Adds `item` once `delay` seconds (of the clock) have passed; at once if `delay` <= 0. An item
        already waiting keeps whichever ready time is sooner."""
        with self._lock:
            if self._shutting_down:
                return
            if delay <= 0:
                self._add_locked(item)
                return
            ready_at = self.clock.monotonic() + delay
            known = self._ready_at.get(item)
            if known is not None and known <= ready_at:
                return
            self._ready_at[item] = ready_at
            sequence = next(self._sequence)
            heapq.heappush(self._waiting, (ready_at, sequence, item))
            if self._waiter is None:
                self._waiter = threading.Thread(target=self._wait_loop, name=f"workqueue-{self.name}-delay",
                                                daemon=True)
                self._waiter.start()
            elif self._waiting[0][1] == sequence:
                self._timer.notify()  # a new earliest entry: the waiter must shorten its wait

    def _wait_loop(self) -> None:
        """The waiting thread: moves due items into the queue, then sleeps until the next one is due."""
        with self._lock:
            while not self._shutting_down:
                now = self.clock.monotonic()
                while self._waiting and self._waiting[0][0] <= now:
                    ready_at, _, item = heapq.heappop(self._waiting)
                    if self._ready_at.get(item) == ready_at:
                        del self._ready_at[item]
                        self._add_locked(item)
                self.clock.wait(self._timer, self._waiting[0][0] - now if self._waiting else None)

    def _shut_down_locked(self) -> None:
        super()._shut_down_locked()
        self._timer.notify_all()  # the waiting thread exits; items still waiting are dropped


class RateLimitingQueue(DelayingQueue[T]):
    """A DelayingQueue whose `add_rate_limited` waits as long as its RateLimiter says (upstream default:
    `default_controller_rate_limiter`, timed by this queue's clock). Remember to `forget` an item once it
    succeeded, or its failures are counted forever."""

    def __init__(self, rate_limiter: RateLimiter | None = None, *, name: str = "",
                 clock: Clock | None = None) -> None:
        super().__init__(name=name, clock=clock)
        self.rate_limiter: RateLimiter = rate_limiter or default_controller_rate_limiter(now=self.clock.monotonic)

    def add_rate_limited(self, item: T) -> None:
        self.add_after(item, self.rate_limiter.when(item))

    def forget(self, item: T) -> None:
        """Stop counting `item`'s failures (it succeeded or was given up). It still needs `done`."""
        self.rate_limiter.forget(item)

    def num_requeues(self, item: T) -> int:
        return self.rate_limiter.num_requeues(item)


def run_workers(queue: RateLimitingQueue[T], process: Callable[[T], None], *, workers: int,
                stop: threading.Event, max_retries: int | None = None, name: str | None = None) -> None:
    """Runs the standard controller loop on `workers` threads until `stop` is set, then shuts `queue` down
    and returns once every worker has finished the item it holds (upstream: a controller's Run with
    `processNextWorkItem` workers, as in sample-controller and the replicaset/endpoints controllers).

    Each worker: take an item; `process(item)`; on success `forget` it; on an exception log it and
    `add_rate_limited` it — or, once `max_retries` retries have failed, log and drop it (`forget`), as the
    endpoints controller does; always `done`. Workers take no new item once `stop` is set."""
    if workers < 1:
        raise ValueError("run_workers needs at least one worker")
    label = name or queue.name or "workqueue"

    def work() -> None:
        while not stop.is_set():
            try:
                item = queue.get()
            except QueueShutDown:
                return
            try:
                if not stop.is_set():
                    _process_one(queue, process, item, max_retries=max_retries, label=label)
            finally:
                queue.done(item)

    threads = [threading.Thread(target=work, name=f"{label}-worker-{i}", daemon=True) for i in range(workers)]
    for thread in threads:
        thread.start()
    try:
        stop.wait()
    finally:
        queue.shut_down()
        for thread in threads:
            thread.join()


class RetryLater(Exception):
    """Raised by a sync that cannot decide yet (upstream's "informer cache is out of date" errors): retried
    with backoff and logged in one line, like an API error."""


def _process_one(queue: RateLimitingQueue[T], process: Callable[[T], None], item: T, *,
                 max_retries: int | None, label: str) -> None:
    try:
        process(item)
    except Exception as exc:
        # An API error (a 409 from a stale cache, a 404 racing a delete) is routine for a controller and is
        # logged in one line, as upstream's handleErr does at info level; anything else is a bug: traceback.
        routine = isinstance(exc, ApiError | RetryLater)
        retries = queue.num_requeues(item)
        if max_retries is not None and retries >= max_retries:
            log.error("%s: dropping %r after %d retries: %s", label, item, retries, exc, exc_info=not routine)
            queue.forget(item)
        else:
            (log.info if routine else log.error)("%s: processing %r failed (retry %d): %s", label, item,
                                                 retries + 1, exc, exc_info=not routine)
            queue.add_rate_limited(item)
    else:
        queue.forget(item)
