"""The API server's watch cache (upstream: k8s.io/apiserver/pkg/storage/cacher/cacher.go and
watch_cache.go): one storage watch per server, fanned out to every client watch.

Design notes
- One thread follows the store (`Storage.watch` is blocking) and hands each batch of events to the
  event loop with one `call_soon_threadsafe`. Everything else — the window of recent events, the
  revision, the subscribers — lives on the loop and is touched only there, so it needs no lock and a
  new subscriber can never miss or double an event between its replay and its first live batch.
- The window keeps the last `capacity` events. A watch from a revision still inside it replays from
  memory; an older one gets `TooOld` (the handler answers 410 Gone and the client relists, as with
  upstream's cacher). 100 watchers cost one storage watch plus a dict test per event each.
- A subscriber that falls `max_pending` events behind is closed rather than buffered without bound
  (upstream terminates blocked watchers the same way); its client relists and watches again.
- If the follower itself falls behind compaction it restarts from the store's current revision and
  closes every subscriber: they cannot know what they missed, so they must relist.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import threading
from dataclasses import dataclass, field

from control.storage.interface import Compacted, Event, Storage, StorageError

log = logging.getLogger(__name__)

_RETRY_SECONDS = 1.0


class TooOld(Exception):
    """The requested revision is older than the window (410 Gone, reason Expired)."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


@dataclass(eq=False)
class Subscription:
    """One client watch: events under `prefix` with revision > `after`, in order."""

    prefix: str
    after: int
    max_pending: int
    _queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)
    closed: bool = False
    overflowed: bool = False

    def _push(self, event: Event) -> None:
        if self.closed or event.revision <= self.after or not event.key.startswith(self.prefix):
            return
        if self._queue.qsize() >= self.max_pending:
            self.overflowed = True
            self._close()
            return
        self._queue.put_nowait(event)

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self._queue.put_nowait(None)

    async def next(self, timeout: float) -> Event | None:
        """The next event, or None after `timeout` seconds or once the subscription is closed
        (check `closed`: a closed subscription must end the client's stream)."""
        if self.closed and self._queue.empty():
            return None
        try:
            return await asyncio.wait_for(self._queue.get(), timeout)
        except TimeoutError:
            return None


class WatchCache:
    """Start with `await start()` on the server's loop; `subscribe` and `unsubscribe` on that loop."""

    def __init__(self, storage: Storage, *, prefix: str = "/registry/", capacity: int = 10_000,
                 max_pending: int = 10_000) -> None:
        self._storage = storage
        self._prefix = prefix
        self._window: collections.deque[Event] = collections.deque(maxlen=capacity)
        self._max_pending = max_pending
        self._subscribers: set[Subscription] = set()
        self._oldest = 0  # every event with revision > _oldest is in the window
        self._revision = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def revision(self) -> int:
        """The newest revision the cache has seen (used for bookmarks and list resourceVersions)."""
        return self._revision

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        start = await asyncio.to_thread(self._storage.revision)
        self._oldest = self._revision = start
        self._thread = threading.Thread(target=self._follow, args=(start,), name="watch-cache", daemon=True)
        self._thread.start()

    async def stop(self) -> None:
        """Stop following the store, then close every subscriber so their streams end."""
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join)
        for sub in list(self._subscribers):
            sub._close()
        self._subscribers.clear()

    def subscribe(self, prefix: str, after: int) -> Subscription:
        """Replay the window's events after `after`, then deliver live ones. Raises `TooOld`."""
        if after < self._oldest:
            raise TooOld(after, self._oldest)
        sub = Subscription(prefix, after, self._max_pending)
        for event in self._window:
            sub._push(event)
        if not sub.closed:
            self._subscribers.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)
        sub._close()

    async def wait_for(self, revision: int, timeout: float) -> bool:
        """Wait until the cache has seen `revision` (a client may list, then watch, faster than the
        follower delivers); returns whether it has."""
        deadline = asyncio.get_running_loop().time() + timeout
        while self._revision < revision:
            if asyncio.get_running_loop().time() >= deadline:
                return False
            await asyncio.sleep(0.01)
        return True

    # -- on the loop --------------------------------------------------------------------------------

    def _dispatch(self, batch: list[Event]) -> None:
        for event in batch:
            if len(self._window) == self._window.maxlen:
                self._oldest = self._window[0].revision
            self._window.append(event)
            self._revision = event.revision
            for sub in self._subscribers:
                sub._push(event)
        self._subscribers = {s for s in self._subscribers if not s.closed}

    def _reset(self, revision: int) -> None:
        """The follower lost history: nothing before `revision` can be served any more."""
        self._window.clear()
        self._oldest = self._revision = max(self._revision, revision)
        for sub in self._subscribers:
            sub._close()
        self._subscribers.clear()

    # -- on the follower thread ----------------------------------------------------------------------

    def _follow(self, after: int) -> None:
        assert self._loop is not None
        while not self._stop.is_set():
            try:
                watch = self._storage.watch(self._prefix, after=after)
            except Compacted:
                after = self._resync(after)
                continue
            except StorageError as exc:
                log.warning("watch cache: cannot watch the store (%s); retrying", exc)
                self._stop.wait(_RETRY_SECONDS)
                continue
            try:
                while not self._stop.is_set():
                    batch = watch.next(timeout=0.5)
                    if batch:
                        after = batch[-1].revision
                        self._loop.call_soon_threadsafe(self._dispatch, batch)
            except Compacted:
                log.warning("watch cache fell behind compaction at %d; watchers must relist", after)
                after = self._resync(after)
            except StorageError as exc:
                log.warning("watch cache: store watch broke (%s); resuming from %d", exc, after)
                self._stop.wait(_RETRY_SECONDS)
            finally:
                watch.close()

    def _resync(self, after: int) -> int:
        """Start over from the store's current revision; every subscriber is closed."""
        while not self._stop.is_set():
            try:
                revision = self._storage.revision()
            except StorageError as exc:
                log.warning("watch cache: cannot read the revision (%s); retrying", exc)
                self._stop.wait(_RETRY_SECONDS)
                continue
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self._reset, revision)
            return revision
        return after
