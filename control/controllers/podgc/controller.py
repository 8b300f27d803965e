"""The pod garbage collector: every 20 s, force-delete terminated pods beyond the threshold (oldest
first), pods bound to nodes that no longer exist, pods being deleted that never got a node, and pods
being deleted on out-of-service nodes.

Upstream: pkg/controller/podgc/gc_controller.go (`gc` every gcCheckPeriod over the pod and node caches;
a node name pods point at but the cache lacks is quarantined for 40 s, then looked up live, and only a
404 makes it deleted; `markFailedAndDeletePodWithCondition`: a pod not yet Succeeded/Failed is first
patched to phase Failed (with DisruptionTarget=True, reason DeletionByPodGC, for orphaned pods), then
deleted with grace 0). Which pods go is selection.py's.

Not key-driven: `run` waits for the caches like every controller, then runs `gc` on its period.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from control.api.typed import Pod
from control.apimachinery.meta import deep_copy, format_timestamp
from control.client.errors import NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.podgc.selection import (
    GC_CHECK_PERIOD,
    QUARANTINE_SECONDS,
    TERMINATED_POD_GC_THRESHOLD,
    missing_nodes,
    select_orphaned,
    select_terminated,
    select_terminating_out_of_service,
    select_unscheduled_terminating,
)
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

ORPHANED_CONDITION = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                      "message": "PodGC: node no longer exists"}


class PodGCController(Controller):
    name = "podgc"  # upstream's controller name (--controllers alias of pod-garbage-collector-controller)

    def __init__(self, client: APIClient, informers: InformerFactory, *,
                 terminated_pod_gc_threshold: int = TERMINATED_POD_GC_THRESHOLD,
                 period: float = GC_CHECK_PERIOD, quarantine: float = QUARANTINE_SECONDS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=1, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        self.threshold = terminated_pod_gc_threshold
        self.period = period
        self.quarantine = quarantine
        self.pods = informers.informer("v1", "pods").lister()
        self.nodes = informers.informer("v1", "nodes").lister()
        self._missing_since: dict[str, float] = {}  # node name → when the cache first lacked it

    def run(self, stop: threading.Event) -> None:
        log.info("starting %s controller", self.name)
        try:
            if not self.wait_for_cache_sync(stop):
                return
            while not stop.is_set():
                try:
                    self.gc()
                except Exception:
                    log.exception("pod garbage collection failed; next pass in %.0fs", self.period)
                stop.wait(self.period)
        finally:
            self.queue.shut_down()
            log.info("%s controller stopped", self.name)

    def gc(self) -> None:
        """One pass (upstream gc): terminated, terminating on out-of-service nodes, orphaned, unscheduled."""
        pods, nodes = self.pods.list(), self.nodes.list()
        for pod in select_terminated(pods, threshold=self.threshold):
            self.delete(pod)
        for pod in select_terminating_out_of_service(pods, nodes):
            self.delete(pod)
        for pod in select_orphaned(pods, self.deleted_nodes(pods, {n["metadata"]["name"] for n in nodes})):
            self.delete(pod, condition=ORPHANED_CONDITION)
        for pod in select_unscheduled_terminating(pods):
            self.delete(pod)

    def deleted_nodes(self, pods: list[dict[str, Any]], existing: set[str]) -> set[str]:
        """Node names missing for the whole quarantine and not found by a live GET (upstream
        discoverDeletedNodes)."""
        now = self.clock.monotonic()
        missing = missing_nodes(pods, existing)
        self._missing_since = {name: self._missing_since.get(name, now) for name in missing}
        deleted = set()
        for name, since in self._missing_since.items():
            if now - since < self.quarantine:
                continue
            try:
                self.client.get(resource_path("v1", "nodes", name=name))
            except NotFound:
                deleted.add(name)
        return deleted

    def delete(self, pod: Mapping[str, Any], *, condition: Mapping[str, str] | None = None) -> None:
        """Upstream markFailedAndDeletePodWithCondition; a pod already gone is no error."""
        metadata = pod["metadata"]
        path = resource_path("v1", "pods", namespace=metadata["namespace"], name=metadata["name"])
        try:
            status = deep_copy(dict(Pod(pod).status.raw))
            if status.get("phase") not in ("Succeeded", "Failed"):
                status["phase"] = "Failed"
                if condition is not None:
                    conditions = [c for c in status.get("conditions") or [] if c.get("type") != condition["type"]]
                    status["conditions"] = [*conditions, {**condition,
                                                          "lastTransitionTime": format_timestamp(self.clock.now())}]
                self.client.patch(path + "/status", {"metadata": {"uid": metadata.get("uid")}, "status": status})
            self.client.delete(path, grace_period_seconds=0, preconditions={"uid": metadata.get("uid")})
            log.info("pod GC: deleted pod %s/%s", metadata["namespace"], metadata["name"])
        except NotFound:
            pass
