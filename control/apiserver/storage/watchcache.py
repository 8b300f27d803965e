"""The API server's watch cache (upstream: k8s.io/apiserver/pkg/storage/cacher/cacher.go and
watch_cache.go): one storage watch per server, fanned out to every client watch.

Design notes
- One thread follows the store (`Storage.watch` is blocking) and hands each batch of events to the
  event loop with one `call_soon_threadsafe`. Everything else — the window of recent events, the
  revision, the subscribers — lives on the loop and is touched only there, so it needs no lock and a
  new subscriber can never miss or double an event between its replay and its first live batch.
- The window keeps the last `capacity` events. A watch from a revision still inside it replays from
  memory. 100 watchers cost one storage watch plus a dict test per event each.
- A watch from an older revision — typically a client resuming after this server restarted, since the
  window starts empty at the store's revision at start — is served from the store's history instead
  (`subscribe_from`): a private storage watch from that revision feeds the subscriber until it reaches
  the window, then the subscriber is handed over to the shared fan-out. Only a revision the store has
  compacted away gets `TooOld` (the handler answers 410 Gone and the client relists, as with
  upstream's cacher). Upstream's cacher answers 410 for anything older than its window; serving the
  store's history instead is what lets every informer ride through an API server restart without a
  relist.
- Each subscriber keeps a high-water mark (the newest revision pushed to it), so events that reach it
  twice during the handover — once from its private watch, once from the window — are dropped, and
  the handover can never leave a gap: it happens only once the private watch reached a revision the
  window covers (every event after `_oldest` is in the window).
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

from control.storage.interface import Compacted, Event, Storage, StorageError, Watch

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
    """One client watch: events under `prefix` with revision > `after`, in order. `after` is the
    high-water mark: it advances with every event seen, so an event offered twice is delivered once."""

    prefix: str
    after: int
    max_pending: int
    _queue: asyncio.Queue[Event | None] = field(default_factory=asyncio.Queue)
    closed: bool = False
    overflowed: bool = False
    replaying: bool = False  # fed from the store's history, not yet from the shared window

    def _push(self, event: Event) -> None:
        if self.closed or event.revision <= self.after:
            return
        self.after = event.revision
        if not event.key.startswith(self.prefix):
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
        if not self._queue.empty():  # the common case under load: no timer, no task (wait_for's cost)
            return self._queue.get_nowait()
        try:
            async with asyncio.timeout(timeout):  # not wait_for: that wraps the get in a task of its own
                return await self._queue.get()
        except TimeoutError:
            return None


@dataclass(eq=False)
class _Replay:
    """A subscriber being fed from a private storage watch (see `subscribe_from`)."""

    sub: Subscription
    watch: Watch
    done: threading.Event = field(default_factory=threading.Event)


class WatchCache:
    """Start with `await start()` on the server's loop; `subscribe` and `unsubscribe` on that loop."""

    def __init__(self, storage: Storage, *, prefix: str = "/registry/", capacity: int = 10_000,
                 max_pending: int = 10_000) -> None:
        self._storage = storage
        self._prefix = prefix
        self._window: collections.deque[Event] = collections.deque(maxlen=capacity)
        self._max_pending = max_pending
        self._subscribers: set[Subscription] = set()
        self._replays: dict[Subscription, _Replay] = {}
        self._replay_threads: set[threading.Thread] = set()  # joined by `stop`, handed over or not
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
        threads = list(self._replay_threads)
        if self._thread is not None:
            threads.append(self._thread)
        for thread in threads:
            await asyncio.to_thread(thread.join)
        for sub in [*self._subscribers, *self._replays]:
            sub._close()
        self._subscribers.clear()
        self._replays.clear()

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

    async def subscribe_from(self, prefix: str, after: int) -> Subscription:
        """As `subscribe`, but a revision older than the window is served from the store's history;
        raises `TooOld` only when the store has compacted it."""
        try:
            return self.subscribe(prefix, after)
        except TooOld:
            pass
        try:
            watch = await asyncio.to_thread(self._storage.watch, self._prefix, after=after)
        except Compacted as exc:
            raise TooOld(after, exc.compact_revision) from None
        if self._stop.is_set():
            watch.close()
            raise StorageError("the watch cache is stopped")
        replay = _Replay(Subscription(prefix, after, self._max_pending, replaying=True), watch)
        thread = threading.Thread(target=self._replay, args=(replay,), name="watch-cache-replay", daemon=True)
        self._replays[replay.sub] = replay
        self._replay_threads = {t for t in self._replay_threads if t.is_alive()} | {thread}
        thread.start()
        return replay.sub

    def unsubscribe(self, sub: Subscription) -> None:
        self._subscribers.discard(sub)
        replay = self._replays.pop(sub, None)
        if replay is not None:
            replay.done.set()
        sub._close()

    def progress(self, sub: Subscription) -> int:
        """The newest revision `sub` is known to be complete up to, for a bookmark once its queue is
        empty: the cache's revision, or while it replays history, its own high-water mark."""
        return sub.after if sub.replaying else self._revision

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
        for sub in list(self._replays):
            self.unsubscribe(sub)

    def _replayed(self, sub: Subscription, batch: list[Event]) -> None:
        """History for a replaying subscriber; hand it over to the window once the window covers it."""
        if sub not in self._replays:
            return  # unsubscribed or handed over meanwhile
        for event in batch:
            sub._push(event)
        if sub.closed:
            self.unsubscribe(sub)
        elif sub.after >= self._oldest:
            self._replays.pop(sub).done.set()
            sub.replaying = False
            for event in self._window:
                sub._push(event)
            if not sub.closed:
                self._subscribers.add(sub)

    def _replay_failed(self, sub: Subscription, exc: StorageError) -> None:
        if sub in self._replays:
            log.info("watch cache: history replay from %d ended (%s); the client resumes", sub.after, exc)
            self.unsubscribe(sub)

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

    def _replay(self, replay: _Replay) -> None:
        """Follow a private storage watch for one subscriber until it is handed over or ends."""
        assert self._loop is not None
        try:
            while not self._stop.is_set() and not replay.done.is_set():
                batch = replay.watch.next(timeout=0.5)
                if batch and not replay.done.is_set():
                    self._loop.call_soon_threadsafe(self._replayed, replay.sub, batch)
        except StorageError as exc:
            if not self._stop.is_set():
                self._loop.call_soon_threadsafe(self._replay_failed, replay.sub, exc)
        finally:
            replay.watch.close()

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
