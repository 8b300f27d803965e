"""The taint eviction controller: pods on a node with a NoExecute taint they do not tolerate are deleted at
once; pods that tolerate it for tolerationSeconds are deleted once that time has passed.

Upstream: pkg/controller/tainteviction/taint_eviction.go (the NoExecuteTaintManager, its own controller
"taint-eviction-controller" since 1.29): `processPodOnNode` — no NoExecute taint: nothing; a taint no
toleration matches: delete now; else the smallest tolerationSeconds of the matching tolerations (none:
tolerated forever; ≤ 0: now) — and the event `TaintManagerEviction` "Marking for deletion Pod ns/name".
The old node controller never deleted pods managed by a DaemonSet. As upstream since the
DaemonSet controller gives its pods tolerations, that is not a special case here: a daemon pod tolerates
not-ready and unreachable NoExecute with no tolerationSeconds (control/controllers/daemonset/decisions.py),
so `eviction_time` never comes for it; a NoExecute taint it does not tolerate evicts it like any pod (and
the DaemonSet controller, for which that node is no longer eligible, does not put it back).

Departure: upstream starts the toleration clock when its worker first sees the pod on the tainted node, so
a controller restart starts it again; here each taint's own `timeAdded` (which the node lifecycle
controller sets) is the start, and only a taint without one counts from when this controller first saw
the pod under it. The pod is deleted at the earliest (timeAdded + tolerationSeconds) over its taints.
Not done: the "Cancelling deletion" event when a taint goes before its time.

Shape (shared/base.py): informers on pods and nodes; a pod change enqueues the pod, a node whose NoExecute taints
change enqueues the pods on it (the pods informer's spec.nodeName index); `sync(pod)` decides with
`eviction_time` (pure) and either deletes, re-adds the key for when it is due, or does nothing.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from control.api.taints import NO_EXECUTE, matching_toleration, taints_of, tolerations_of
from control.api.typed import Pod
from control.apimachinery.meta import key_of, parse_timestamp, split_key
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.store import NODE_NAME_INDEX, index_by_node_name
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 8  # upstream UpdateWorkerSize


def no_execute_taints(node: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [taint for taint in taints_of(node) if taint.get("effect") == NO_EXECUTE]


def eviction_time(tolerations: Sequence[Mapping[str, Any]], taints: Sequence[Mapping[str, Any]], *,
                  now: datetime, first_seen: datetime) -> datetime | None:
    """When a pod with `tolerations` must go from a node with NoExecute `taints`: None never, `now` for a
    taint it does not tolerate, else the earliest (taint's timeAdded, or `first_seen` without one) +
    tolerationSeconds (≤ 0: at timeAdded) over the taints whose toleration has a limit."""
    due: datetime | None = None
    for taint in taints:
        toleration = matching_toleration(tolerations, taint)
        if toleration is None:
            return now
        seconds = toleration.get("tolerationSeconds")
        if seconds is None:
            continue
        added = parse_timestamp(taint["timeAdded"]) if taint.get("timeAdded") else first_seen
        at = added + timedelta(seconds=max(0, seconds))
        due = at if due is None else min(due, at)
    return due


class TaintEvictionController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs pods until `stop` is set."""

    name = "taint-eviction-controller"  # upstream's controller name (--controllers)

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        pods, nodes = informers.informer("v1", "pods"), informers.informer("v1", "nodes")
        try:
            pods.add_indexers({NODE_NAME_INDEX: index_by_node_name})
        except ValueError:  # another controller of the shared informer registered the same standard index
            pass
        self.pod_store = pods.store
        self.pods, self.nodes = pods.lister(), nodes.lister()
        self._lock = threading.Lock()
        self._first_seen: dict[str, datetime] = {}  # pod key → when first seen on a NoExecute-tainted node
        pods.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        nodes.add_event_handler(on_add=self.on_node, on_update=self.on_node_update)

    def on_node(self, node: Mapping[str, Any]) -> None:
        for pod in self.pod_store.by_index(NODE_NAME_INDEX, node["metadata"]["name"]):
            self.queue.add(key_of(pod))

    def on_node_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if no_execute_taints(old) != no_execute_taints(new):
            self.on_node(new)

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        pod = self.pods.get(namespace, name)
        node_name = Pod(pod).spec.node_name if pod is not None else None
        node = self.nodes.get(None, node_name) if node_name else None
        taints = no_execute_taints(node) if node is not None else []
        if pod is None or not taints or pod["metadata"].get("deletionTimestamp"):
            with self._lock:
                self._first_seen.pop(key, None)
            return
        now = self.clock.now()
        with self._lock:
            first_seen = self._first_seen.setdefault(key, now)
        due = eviction_time(tolerations_of(pod), taints, now=now, first_seen=first_seen)
        if due is None:
            return
        if due > now:
            self.queue.add_after(key, (due - now).total_seconds())
            return
        self.recorder.eventf(pod, "Normal", "TaintManagerEviction", "Marking for deletion Pod %s", key)
        uid = pod["metadata"].get("uid")
        try:
            self.client.delete(resource_path("v1", "pods", namespace=namespace, name=name),
                               preconditions={"uid": uid} if uid else None)
        except NotFound:
            pass
        log.info("evicted pod %s from node %s (NoExecute taints %s)", key, node_name,
                 [t.get("key") for t in taints])
        with self._lock:
            self._first_seen.pop(key, None)
