"""Shared informers: one list/watch and one cache per collection per process, many event handlers.

Upstream: client-go tools/cache/shared_informer.go (`sharedIndexInformer`: one reflector feeding one
indexer; `AddEventHandler` after start replays the indexer's current contents to the new handler as adds;
`processorListener` buffers notifications without bound so a slow handler never blocks the watch;
`HasSynced` after the first list has been processed) and informers/factory.go (`SharedInformerFactory`:
one informer per type, `Start(stopCh)` starts those not yet started, `WaitForCacheSync`). As in the
controllers' pod and service "controllers" (informers) fill podStore/serviceStore from the API server and
push keys into the work queue; everything else reads the local cache.

Threads: the reflector thread updates the store and queues each change (under `_lock`); one dispatch
thread per informer calls the handlers, in order, one change at a time. Upstream runs one goroutine per
handler; one thread per informer keeps the thread count low (Python threads are not cheap) at the price
that a slow handler delays the other handlers of the same informer, never the watch or other informers.
A handler that raises is logged and the next change is delivered as usual.

The store is updated before the handlers hear of a change, so a handler that reads the cache sees the
change (or a later one). Objects handed to handlers and returned by the store are shared: read only.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from control.client.paths import resource_path
from control.client.reflector import (
    DEFAULT_BACKOFF,
    DEFAULT_PAGE_SIZE,
    Backoff,
    EventHandler,
    ListWatchClient,
    Reflector,
)
from control.client.store import NAMESPACE_INDEX, IndexFunc, Lister, Store, index_by_namespace

log = logging.getLogger(__name__)

Callback = Callable[..., None]


@dataclass(frozen=True)
class HandlerFuncs:
    """An `EventHandler` from plain functions, any of them optional (upstream ResourceEventHandlerFuncs)."""

    add: Callable[[dict[str, Any]], None] | None = None
    update: Callable[[dict[str, Any], dict[str, Any]], None] | None = None
    delete: Callable[[dict[str, Any]], None] | None = None

    def on_add(self, obj: dict[str, Any]) -> None:
        if self.add is not None:
            self.add(obj)

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self.update is not None:
            self.update(old, new)

    def on_delete(self, obj: dict[str, Any]) -> None:
        if self.delete is not None:
            self.delete(obj)


_STOP = object()  # ends the dispatch thread once everything queued before it has been delivered


class _Broadcast:
    """The reflector's handler: queues each change for the handlers registered at that moment (a handler
    registered later has already been given the store's contents, which include the change)."""

    def __init__(self, events: queue.SimpleQueue[Any]) -> None:
        self.events = events
        self.handlers: tuple[EventHandler, ...] = ()

    def on_add(self, obj: dict[str, Any]) -> None:
        if self.handlers:
            self.events.put((self.handlers, "on_add", (obj,)))

    def on_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if self.handlers:
            self.events.put((self.handlers, "on_update", (old, new)))

    def on_delete(self, obj: dict[str, Any]) -> None:
        if self.handlers:
            self.events.put((self.handlers, "on_delete", (obj,)))


class SharedInformer:
    """A cache of one collection (resource path + selectors) kept current by a reflector, with handlers."""

    def __init__(self, client: ListWatchClient, api_version: str, plural: str, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None,
                 resync_period: float = 0.0, indexers: Mapping[str, IndexFunc] | None = None,
                 page_size: int = DEFAULT_PAGE_SIZE, backoff: Backoff = DEFAULT_BACKOFF) -> None:
        self.path = resource_path(api_version, plural, namespace=namespace)
        params = {}
        if label_selector:
            params["labelSelector"] = label_selector
        if field_selector:
            params["fieldSelector"] = field_selector
        self.store = Store(indexers={NAMESPACE_INDEX: index_by_namespace, **(indexers or {})})
        self._lock = threading.RLock()  # held by the reflector while it changes the store and queues
        self._events: queue.SimpleQueue[Any] = queue.SimpleQueue()  # changes, sync markers and the stop
        self._broadcast = _Broadcast(self._events)
        self._synced = threading.Event()
        self._started = False
        self.reflector = Reflector(client, self.path, store=self.store, handler=self._broadcast, params=params,
                                   page_size=page_size, resync_period=resync_period, backoff=backoff,
                                   lock=self._lock, on_listed=self._queue_synced_marker,
                                   name=self.path + "".join(f" {k}={v}" for k, v in params.items()))

    # -- handlers -----------------------------------------------------------------------------------

    def add_event_handler(self, handler: EventHandler | None = None, *, on_add: Callback | None = None,
                          on_update: Callback | None = None, on_delete: Callback | None = None) -> EventHandler:
        """Register a handler (an object, or functions). If the informer already holds objects, the new
        handler is first told of each as an add. Returns the handler (for `remove_event_handler`)."""
        if handler is None:
            handler = HandlerFuncs(add=on_add, update=on_update, delete=on_delete)
        with self._lock:  # atomic with the reflector's changes: none is missed, none seen twice
            self._broadcast.handlers = (*self._broadcast.handlers, handler)
            for obj in self.store.list():
                self._events.put(((handler,), "on_add", (obj,)))
        return handler

    def remove_event_handler(self, handler: EventHandler) -> None:
        with self._lock:
            self._broadcast.handlers = tuple(h for h in self._broadcast.handlers if h is not handler)

    def add_indexers(self, indexers: Mapping[str, IndexFunc]) -> None:
        self.store.add_indexers(indexers)

    def lister(self) -> Lister:
        return Lister(self.store)

    # -- lifecycle ----------------------------------------------------------------------------------

    def start(self, stop: threading.Event) -> None:
        """Run in background threads until `stop` is set; a second call does nothing."""
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._run, args=(stop,), name=f"informer {self.path}", daemon=True).start()

    def _run(self, stop: threading.Event) -> None:
        dispatcher = threading.Thread(target=self._dispatch, name=f"dispatch {self.path}", daemon=True)
        dispatcher.start()
        try:
            self.reflector.run(stop)
        finally:
            self._events.put(_STOP)
            dispatcher.join()

    def _queue_synced_marker(self) -> None:
        self._events.put(self._synced.set)

    def _dispatch(self) -> None:
        while True:
            item = self._events.get()
            if item is _STOP:
                return
            if callable(item):  # the synced marker: every add of the first list is delivered
                item()
                continue
            handlers, method, args = item
            for handler in handlers:
                try:
                    getattr(handler, method)(*args)
                except Exception:
                    log.exception("%s: %s handler %r failed", self.path, method, handler)

    def has_synced(self) -> bool:
        """True once the first list is in the store and its adds have been delivered to the handlers."""
        return self._synced.is_set()

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        return self._synced.wait(timeout)

    @property
    def last_sync_resource_version(self) -> str:
        return self.reflector.last_sync_resource_version


class InformerFactory:
    """One `SharedInformer` per (resource path, label selector, field selector) for the whole process, so
    every controller that needs pods shares one watch and one cache (upstream SharedInformerFactory)."""

    def __init__(self, client: ListWatchClient, *, resync_period: float = 0.0) -> None:
        self._client = client
        self._resync_period = resync_period
        self._lock = threading.Lock()
        self._informers: dict[tuple[str, str, str], SharedInformer] = {}

    def informer(self, api_version: str, plural: str, *, namespace: str | None = None,
                 label_selector: str | None = None, field_selector: str | None = None) -> SharedInformer:
        key = (resource_path(api_version, plural, namespace=namespace), label_selector or "", field_selector or "")
        with self._lock:
            informer = self._informers.get(key)
            if informer is None:
                informer = SharedInformer(self._client, api_version, plural, namespace=namespace,
                                          label_selector=label_selector, field_selector=field_selector,
                                          resync_period=self._resync_period)
                self._informers[key] = informer
            return informer

    def start(self, stop: threading.Event) -> None:
        """Start every informer asked for so far that is not running yet (call again after asking for more)."""
        with self._lock:
            informers = list(self._informers.values())
        for informer in informers:
            informer.start(stop)

    def wait_for_sync(self, timeout: float | None = None) -> bool:
        """Whether every informer synced within `timeout` seconds in all (None: wait as long as it takes)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            informers = list(self._informers.values())
        for informer in informers:
            remaining = None if deadline is None else max(0.0, deadline - time.monotonic())
            if not informer.wait_for_sync(remaining):
                return False
        return True
