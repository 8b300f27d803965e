"""What every controller shares: informer handlers that only enqueue keys, one rate-limited work queue,
`sync(key)` run by workers, one cache-sync wait, and an event recorder.

Upstream: pkg/controller/replicaset/replica_set.go (`Run`: `WaitForNamedCacheSync`, then `workers`
goroutines of `worker` → `processNextWorkItem` → `syncHandler(key)` → `handleErr`: nil forgets the key's
failures, an error re-adds it with `AddRateLimited`, and after maxRetries the key is dropped),
the shape every upstream controller shares (informers fill local stores, handlers push only keys, N
workers take them, a key is never synced by two workers at once).

How a controller is written (control/controllers/endpoints/controller.py is the first):
- `__init__`: call `super().__init__(client, informers, ...)`, ask `self.informers` for the informers it
  reads (they are shared with every other controller through the InformerFactory) and register handlers
  on them. A handler only maps the change to the keys to sync and calls `enqueue` / `queue.add`: no API
  calls, no decisions, so a burst of changes to one object is one sync.
- `sync(key)`: read from listers, decide, write through `self.client`; raise to be retried with backoff
  (control/client/workqueue.py `run_workers` does processNextWorkItem and handleErr), return to have the
  key's failures forgotten. A key is `control.apimachinery.meta.key_of`: `namespace/name`, or `name` for
  a cluster-scoped object (`split_key` takes it apart).
- `on_synced()`: what to do once, after the caches are full and before the workers start (the endpoints
  controller enqueues leftover Endpoints there).
- Events about the objects it manages go through `self.recorder` (component `<name>-controller`, as
  upstream's `v1.EventSource{Component: "replicaset-controller"}`).

`run(stop)` (what the controller manager runs on a thread): wait until every informer of the factory has
listed (the factory's own wait, as proxy/app.py does; rechecked every SYNC_WAIT_SECONDS only to notice
`stop`), `on_synced()`, then `run_workers(workers, stop)` until `stop`; the queue is shut down and the
recorder flushed on the way out.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from control.apimachinery.meta import key_of
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.workqueue import RateLimitingQueue, run_workers
from control.util.clock import Clock

log = logging.getLogger(__name__)

SYNC_WAIT_SECONDS = 0.5  # how often the cache-sync wait looks at `stop`
RECORDER_SHUTDOWN_SECONDS = 5.0


class APIClient(Protocol):
    """The verbs a controller writes with (RESTClient has them; so does tests/support/fake_apiserver.py)."""

    def get(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def list(self, path: str, *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def create(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def update(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def patch(self, path: str, patch: dict[str, Any] | builtins.list[Any], *,
              patch_type: str = "merge") -> dict[str, Any]: ...

    def delete(self, path: str, *, grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               preconditions: dict[str, Any] | None = None) -> dict[str, Any]: ...


class Controller:
    """The base of every controller (module notes). Subclasses set `name` and implement `sync`."""

    name = "controller"  # upstream's controller name: the manager's table key, the queue's and events' name
    max_retries: int | None = None  # retries of one key before it is dropped until its next change

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        self.client = client
        self.informers = informers
        self.workers = workers
        self.queue: RateLimitingQueue[str] = queue or RateLimitingQueue(name=self.name, clock=clock)
        self.recorder = recorder or EventRecorder(client, component=f"{self.name}-controller", clock=clock)

    def enqueue(self, obj: Mapping[str, Any]) -> None:
        """The handler for a change to the object the controller syncs: queue its key."""
        self.queue.add(key_of(obj))

    def enqueue_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.enqueue(new)

    def sync(self, key: str) -> None:
        """Bring the object named `key` in line; raise to be retried with backoff."""
        raise NotImplementedError

    def on_synced(self) -> None:
        """Runs once, after the caches have synced and before the workers start."""

    def wait_for_cache_sync(self, stop: threading.Event) -> bool:
        """Wait until every informer has listed; False if `stop` was set first."""
        while not self.informers.wait_for_sync(SYNC_WAIT_SECONDS):
            if stop.is_set():
                return False
        return not stop.is_set()

    def run_workers(self, workers: int, stop: threading.Event) -> None:
        """`workers` threads of sync(key) with upstream's handleErr until `stop`, then the queue is shut down."""
        run_workers(self.queue, self.sync, workers=workers, stop=stop, max_retries=self.max_retries,
                    name=self.name)

    def run(self, stop: threading.Event) -> None:
        log.info("starting %s controller", self.name)
        try:
            if not self.wait_for_cache_sync(stop):
                self.queue.shut_down()
                return
            self.on_synced()
            self.run_workers(self.workers, stop)
        finally:
            self.recorder.shutdown(RECORDER_SHUTDOWN_SECONDS)
            log.info("%s controller stopped", self.name)
