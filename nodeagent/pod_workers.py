"""One worker per pod uid: upstream pkg/kubelet/pod_workers.go (UpdatePod, managePodLoop), simplified.

Each pod gets a thread that runs the kubelet's sync function for it, one sync at a time, so two syncs of
one pod never race (two sandboxes, two copies of a container). What wakes a worker:
- `update(uid, pod)`: a new spec from a pod source (latest wins: updates that arrive while a sync runs
  collapse into one more sync with the newest spec, as upstream's pending update slot);
- `gone(uid)`: the pod left every source (deleted from the API, a static file removed, or a container
  set with no pod at all: an orphan); the worker keeps the last spec it saw, for preStop hooks and the
  grace period;
- `wake(uid)`: a PLEG event for the pod;
- its own timer: every `resync_period` (upstream syncFrequency), or sooner when the last sync asked to
  be retried (a back-off that ends, a kill still in progress).
When a sync reports the pod finished for good (`WorkResult.done`) and nothing new arrived meanwhile, the
worker ends and forgets the pod. The sync function never raises into the worker (an exception is logged
and retried after `error_retry`), so one bad pod cannot stop the others.

`since` passed to the sync function is the monotonic time the previous sync of this pod ended: the
kubelet waits for the pod cache to be newer than that before deciding (upstream's GetNewerThan with
lastSyncTime), so a sync never acts on a runtime view older than its own last action. (A relist that
merely started after the previous sync began could still miss the containers that sync created.)
A sync that started containers says so (`WorkResult.relist`); the worker then calls `request_relist`
(the PLEG's) right after taking that time, so the PLEG events and the fresh status that the next sync
waits for come within one relist instead of up to a relist period later (a slimkube addition; see
nodeagent/pleg.py).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_ERROR_RETRY = 2.0


@dataclass(frozen=True)
class WorkResult:
    done: bool = False  # the pod is finished and cleaned up: the worker may end
    retry_after: float | None = None  # sync again within this many seconds
    relist: bool = False  # the sync started containers: ask the PLEG for a relist now


@dataclass(frozen=True)
class WorkItem:
    uid: str
    pod: Mapping[str, Any] | None  # the latest spec seen (None: an orphan never seen in a source)
    gone: bool  # the pod left its sources: kill it and clean up
    since: float  # when the previous sync ended (-inf for the first)


SyncFn = Callable[[WorkItem], WorkResult]


class _Worker:
    def __init__(self, owner: PodWorkers, uid: str) -> None:
        self.owner = owner
        self.uid = uid
        self.pod: Mapping[str, Any] | None = None
        self.gone = False
        self.dirty = True  # a sync is due now
        self.due = float("inf")
        self.cond = threading.Condition(owner._lock)
        self.thread = threading.Thread(target=self._loop, name=f"pod-worker-{uid[:8]}", daemon=True)

    def _loop(self) -> None:
        owner = self.owner
        since = float("-inf")
        while True:
            with self.cond:
                while not (self.dirty or owner._stopped or owner.clock() >= self.due):
                    self.cond.wait(max(0.0, min(self.due - owner.clock(), owner.resync_period)))
                if owner._stopped:
                    return
                self.dirty = False
                item = WorkItem(self.uid, self.pod, self.gone, since)
            try:
                result = owner.sync_fn(item)
            except Exception:  # never let one pod's failure end its worker
                log.exception("sync of pod %s failed", self.uid)
                result = WorkResult(retry_after=owner.error_retry)
            since = owner.clock()  # after the sync, as upstream's lastSyncTime: its own actions must show
            if result.relist and owner.request_relist is not None:
                owner.request_relist()  # after `since`: the relist it causes starts later than that
            with self.cond:
                if result.done and not self.dirty:
                    owner._workers.pop(self.uid, None)
                    return
                wait = owner.resync_period if result.retry_after is None else min(result.retry_after,
                                                                                   owner.resync_period)
                self.due = owner.clock() + max(wait, 0.0)


class PodWorkers:
    def __init__(self, sync_fn: SyncFn, *, resync_period: float, error_retry: float = DEFAULT_ERROR_RETRY,
                 clock: Callable[[], float] = time.monotonic,
                 request_relist: Callable[[], None] | None = None) -> None:
        self.sync_fn = sync_fn
        self.request_relist = request_relist
        self.resync_period = resync_period
        self.error_retry = error_retry
        self.clock = clock
        self._lock = threading.Lock()
        self._workers: dict[str, _Worker] = {}
        self._stopped = False

    def _worker(self, uid: str) -> _Worker | None:
        """The pod's worker, started if needed (caller holds the lock)."""
        if self._stopped:
            return None
        worker = self._workers.get(uid)
        if worker is None:
            worker = self._workers[uid] = _Worker(self, uid)
            worker.thread.start()
        return worker

    def update(self, uid: str, pod: Mapping[str, Any]) -> None:
        with self._lock:
            worker = self._worker(uid)
            if worker is not None:
                worker.pod, worker.gone, worker.dirty = pod, False, True
                worker.cond.notify()

    def gone(self, uid: str) -> None:
        with self._lock:
            worker = self._worker(uid)
            if worker is not None:
                worker.gone, worker.dirty = True, True
                worker.cond.notify()

    def wake(self, uid: str) -> bool:
        """Sync the pod now if it has a worker; False when it has none."""
        with self._lock:
            worker = self._workers.get(uid)
            if worker is None:
                return False
            worker.dirty = True
            worker.cond.notify()
            return True

    def uids(self) -> set[str]:
        with self._lock:
            return set(self._workers)

    def pods(self) -> list[Mapping[str, Any]]:
        """The latest spec of every pod with a worker that is not gone (the kubelet's /pods)."""
        with self._lock:
            return [w.pod for w in self._workers.values() if w.pod is not None and not w.gone]

    def stop(self, timeout: float = 10.0) -> None:
        """End every worker after its current sync (a kill in progress finishes first, up to `timeout`)."""
        with self._lock:
            self._stopped = True
            workers = list(self._workers.values())
            for worker in workers:
                worker.cond.notify()
        deadline = time.monotonic() + timeout
        for worker in workers:
            worker.thread.join(max(0.0, deadline - time.monotonic()))
