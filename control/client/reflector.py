"""The reflector: keeps a local store equal to one collection on the API server, and says what changed.

Upstream: client-go tools/cache/reflector.go (`ListAndWatch`: a paged list, then a watch from the list's
resourceVersion with `allowWatchBookmarks`, a random 5-10 min watch timeout after which the watch is
re-opened from the last resourceVersion without a relist, a relist when the watch says "too old" (410),
list errors retried with exponential backoff), delta_fifo.go (`Replace`: what the store knows but the new
list lacks is deleted with its last known state, `DeletedFinalStateUnknown`) and controller.go
(`processDeltas`: the store is updated before the handler hears of the change). In client-go's "Controller
{config, reflector}" the reflector "monitors the resource and reflects every change into the store".

Differences from upstream, on purpose:
- No DeltaFIFO: the store is updated and the handler told in one step, under one lock (`lock`), on the
  reflector's thread. The informer's handler only enqueues, so that step is short; whoever passes the
  lock can make other steps (registering a late handler) atomic with delivery.
- A relist delivers only the difference against the store (`relist_changes`): an object whose
  resourceVersion did not change is not re-delivered (upstream sends every listed object as an update).
  Objects the store held but the list lacks are deleted with the state last seen, so a handler sees a
  delete for everything removed while the watch was down.
- A broken connection is resumed by `RESTClient.watch` itself (from the last resourceVersion it saw); the
  reflector relists when that gives up (an error) or the server answers 410 Gone.

`run(stop)` blocks until `stop` is set. Periodic resync (`resync_period` > 0) redelivers every stored
object as `on_update(obj, obj)` from a second thread, under the same lock, so controllers re-check state
they may have failed to act on.
"""

from __future__ import annotations

import enum
import logging
import random
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from control.api.typed.meta import List, TypedObject
from control.apimachinery.meta import key_of
from control.client.errors import Gone
from control.client.store import Store

if TYPE_CHECKING:
    from control.client.rest import WatchEvent

log = logging.getLogger(__name__)

DEFAULT_PAGE_SIZE = 500
MIN_WATCH_TIMEOUT = 300  # seconds; each watch asks for a random timeout in [min, 2*min) as upstream


class ListWatchClient(Protocol):
    """The part of `RESTClient` a reflector uses."""

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def watch(self, path: str, *, resource_version: str = "", params: Mapping[str, str] | None = None,
              timeout_seconds: int | None = None, allow_bookmarks: bool = True,
              stop: threading.Event | None = None) -> Iterator[WatchEvent]: ...


class EventHandler(Protocol):
    """What hears about changes (upstream ResourceEventHandler). Objects passed are shared: read only."""

    def on_add(self, obj: dict[str, Any]) -> None: ...

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None: ...

    def on_delete(self, obj: dict[str, Any]) -> None: ...


class ChangeType(enum.Enum):
    ADDED = "added"
    UPDATED = "updated"
    DELETED = "deleted"


@dataclass(frozen=True)
class Change:
    """One decided change to the store: `old` is what the store held (None for an add), `new` what it
    will hold (for a delete, the object to hand to `on_delete`: the final state if known, else `old`)."""

    type: ChangeType
    key: str
    old: dict[str, Any] | None
    new: dict[str, Any]


@dataclass(frozen=True)
class Backoff:
    """Delays between failed lists: initial, doubled each failure, capped (upstream 800 ms → 30 s)."""

    initial: float = 0.8
    factor: float = 2.0
    cap: float = 30.0

    def next(self, delay: float) -> float:
        return self.initial if delay <= 0 else min(delay * self.factor, self.cap)


DEFAULT_BACKOFF = Backoff()  # frozen: one shared default is safe

def resource_version_of(obj: Mapping[str, Any]) -> str:
    return TypedObject(obj).metadata.resource_version


def _changed(old: Mapping[str, Any], new: Mapping[str, Any]) -> bool:
    old_rv, new_rv = resource_version_of(old), resource_version_of(new)
    return old_rv != new_rv if old_rv and new_rv else old != new


def relist_changes(known: Mapping[str, dict[str, Any]], listed: Mapping[str, dict[str, Any]]) -> list[Change]:
    """What turns the store `known` into `listed` (both key → object): adds and updates in list order,
    then deletes (with the last known state) in key order. Unchanged objects produce nothing."""
    changes: list[Change] = []
    for key, new in listed.items():
        old = known.get(key)
        if old is None:
            changes.append(Change(ChangeType.ADDED, key, None, new))
        elif _changed(old, new):
            changes.append(Change(ChangeType.UPDATED, key, old, new))
    for key in sorted(known.keys() - listed.keys()):
        changes.append(Change(ChangeType.DELETED, key, known[key], known[key]))
    return changes


def watch_change(event_type: str, key: str, known: dict[str, Any] | None, obj: dict[str, Any]) -> Change | None:
    """The store change one watch event makes. An ADDED for a key already held is an update and a
    MODIFIED for an unknown key an add (what upstream's processDeltas does); a DELETED for a key the store
    never held is dropped, since no handler was ever told of that object."""
    if event_type in ("ADDED", "MODIFIED"):
        if known is None:
            return Change(ChangeType.ADDED, key, None, obj)
        return Change(ChangeType.UPDATED, key, known, obj)
    if event_type == "DELETED" and known is not None:
        return Change(ChangeType.DELETED, key, known, obj)
    return None


class Reflector:
    """List, then watch, one collection into `store`, telling `handler` each change."""

    def __init__(self, client: ListWatchClient, path: str, *, store: Store, handler: EventHandler,
                 params: Mapping[str, str] | None = None, page_size: int = DEFAULT_PAGE_SIZE,
                 resync_period: float = 0.0, backoff: Backoff = DEFAULT_BACKOFF,
                 watch_timeout_seconds: int | None = None, lock: threading.Lock | threading.RLock | None = None,
                 on_listed: Callable[[], None] | None = None, name: str | None = None) -> None:
        self._client = client
        self._path = path
        self._store = store
        self._handler = handler
        self._params = dict(params or {})
        self._page_size = page_size
        self._resync_period = resync_period
        self._backoff = backoff
        self._watch_timeout_seconds = watch_timeout_seconds
        self._lock = lock or threading.Lock()
        self._on_listed = on_listed
        self.name = name or path
        self._resource_version = ""
        self._synced = threading.Event()

    @property
    def last_sync_resource_version(self) -> str:
        """The resourceVersion of the last list, event or bookmark seen ("" before the first list)."""
        return self._resource_version

    def has_synced(self) -> bool:
        """Whether the first list has been applied to the store."""
        return self._synced.is_set()

    def run(self, stop: threading.Event) -> None:
        """List and watch until `stop` is set; never raises for API or connection errors."""
        resync = None
        if self._resync_period > 0:
            resync = threading.Thread(target=self._resync_loop, args=(stop,), name=f"resync {self.name}",
                                      daemon=True)
            resync.start()
        delay = 0.0
        while not stop.is_set():
            if delay and stop.wait(delay):
                break
            try:
                self._list()
            except Exception as error:  # noqa: BLE001 - any list failure (API, connection, decoding) is retried with backoff
                delay = self._backoff.next(delay)
                log.warning("%s: list failed (%s); retrying in %.1fs", self.name, error, delay)
                continue
            delay = 0.0
            if not self._watch(stop):
                delay = self._backoff.initial  # a broken watch: wait a little before relisting
        if resync is not None:
            resync.join()

    # -- list ---------------------------------------------------------------------------------------

    def _list(self) -> None:
        params = dict(self._params)
        if self._page_size:
            params["limit"] = str(self._page_size)
        result = self._client.list(self._path, params=params)
        listed = {key_of(obj): obj for obj in result.get("items") or ()}
        resource_version = List(result).metadata.resource_version
        with self._lock:
            for change in relist_changes(self._store.items(), listed):
                self._apply(change)
            self._resource_version = resource_version
        first = not self._synced.is_set()
        self._synced.set()
        log.debug("%s: listed %d objects at resourceVersion %s", self.name, len(listed), resource_version)
        if first and self._on_listed is not None:
            self._on_listed()

    # -- watch --------------------------------------------------------------------------------------

    def _watch(self, stop: threading.Event) -> bool:
        """Watch (re-opening after each server-side timeout) until `stop` (True) or until a relist is
        needed (False after an error, True after 410 Gone: relist at once, nothing is broken)."""
        while not stop.is_set():
            timeout = self._watch_timeout_seconds or random.randint(MIN_WATCH_TIMEOUT, 2 * MIN_WATCH_TIMEOUT - 1)
            try:
                for event in self._client.watch(self._path, resource_version=self._resource_version,
                                                params=self._params, timeout_seconds=timeout,
                                                allow_bookmarks=True, stop=stop):
                    self._handle(event)
            except Gone as error:
                log.info("%s: watch from resourceVersion %s is gone (%s); relisting", self.name,
                         self._resource_version, error)
                return True
            except Exception as error:  # noqa: BLE001 - the REST client already retried the connection
                log.warning("%s: watch failed (%s); relisting", self.name, error)
                return False
        return True

    def _handle(self, event: WatchEvent) -> None:
        obj = event.object
        if event.type == "BOOKMARK":
            self._resource_version = resource_version_of(obj) or self._resource_version
            return
        if event.type not in ("ADDED", "MODIFIED", "DELETED"):
            log.warning("%s: ignoring watch event of type %r", self.name, event.type)
            return
        key = key_of(obj)
        with self._lock:
            change = watch_change(event.type, key, self._store.get_by_key(key), obj)
            if change is not None:
                self._apply(change)
            self._resource_version = resource_version_of(obj) or self._resource_version

    # -- delivery (caller holds the lock) ----------------------------------------------------------

    def _apply(self, change: Change) -> None:
        if change.type is ChangeType.DELETED:
            self._store.delete_by_key(change.key)
            self._deliver(self._handler.on_delete, change.new)
        elif change.type is ChangeType.ADDED:
            self._store.update(change.new)
            self._deliver(self._handler.on_add, change.new)
        else:
            self._store.update(change.new)
            assert change.old is not None  # an update always has what the store held
            self._deliver(self._handler.on_update, change.old, change.new)

    def _deliver(self, method: Callable[..., None], *args: dict[str, Any]) -> None:
        try:
            method(*args)
        except Exception:  # a handler's bug must not stop the reflector (the store is already right)
            log.exception("%s: event handler failed", self.name)

    def _resync_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self._resync_period):
            if not self._synced.is_set():
                continue
            with self._lock:
                for obj in self._store.list():
                    self._deliver(self._handler.on_update, obj, obj)
