"""The disruption controller: keeps every PodDisruptionBudget's status true — how many of its pods are
expected, must stay healthy and are healthy, how many may be disrupted now, which evictions the API
server approved that have not happened yet — so the eviction subresource (control/apiserver/registry/eviction.py)
can answer "may this pod go?" from the PDB alone.

Upstream: pkg/controller/disruption/disruption.go (sync → trySync → getPodsForPdb, getExpectedPodCount,
buildDisruptedPodMap, countHealthyPods, updatePdbStatus; failSafe on any other error; the recheck queue
for disruptedPods deadlines; the finders of a pod's controller and its scale). The arithmetic is
control/api/disruption.py's (pure, shared with the eviction handler); this module does the I/O.

Shape (control/controllers/shared/base.py): informers on PDBs and pods; a PDB is enqueued when it changes and
when a pod its selector selects (before or after the change) is added, updated or deleted; a PDB with
approved evictions pending is enqueued again when the earliest of them expires (2 minutes).

The expected count, for `maxUnavailable` and percentage `minAvailable`, is the sum of the scales of the
pods' controllers, each counted once: a ReplicaSet owned by a Deployment counts as the Deployment, and
ReplicaSets, ReplicationControllers, Deployments and StatefulSets are read through their `/scale`
subresource (upstream reads the first four from listers and any other kind through /scale: here every
kind goes through /scale, one GET per controller and sync). Pods without a controller are reported with
the `UnmanagedPods` warning and left out of the count, as upstream; an integer `minAvailable` needs no
controller at all (expected = the pods found).

Not done: the DisruptionTarget pod condition cleanup (stalePodDisruption), which belongs with
pod-deleting controllers that set it (none here yet).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from control.api import disruption
from control.api.typed import Pod, PodDisruptionBudget, TypedObject
from control.apimachinery.meta import key_of, split_key
from control.client.errors import ApiError, Conflict, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 1  # upstream runs one worker for PDBs
# A controller kind → where its /scale is (upstream finders: RC, Deployment, ReplicaSet, StatefulSet).
SCALABLE: Mapping[tuple[str, str], tuple[str, str]] = {
    ("", "ReplicationController"): ("v1", "replicationcontrollers"),
    ("apps", "ReplicaSet"): ("apps/v1", "replicasets"),
    ("apps", "Deployment"): ("apps/v1", "deployments"),
    ("apps", "StatefulSet"): ("apps/v1", "statefulsets"),
}


class NoController(Exception):
    """A pod's controller is of no kind with a scale (upstream: `found no controllers for pod`)."""


def controller_of(obj: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """metav1.GetControllerOf: the ownerReference with controller=true."""
    return next((ref.raw for ref in TypedObject(obj).metadata.owner_references if ref.controller), None)


def _group(api_version: str) -> str:
    return api_version.rpartition("/")[0]


class DisruptionController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs PDBs until `stop` is set."""

    name = "disruption"

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        pdbs, pods = informers.informer("policy/v1", "poddisruptionbudgets"), informers.informer("v1", "pods")
        self.pdbs, self.pods = pdbs.lister(), pods.lister()
        pdbs.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        pods.add_event_handler(on_add=self.on_pod, on_update=self.on_pod_update, on_delete=self.on_pod)

    # -- handlers -----------------------------------------------------------------------------------------

    def on_pod(self, pod: Mapping[str, Any]) -> None:
        namespace = Pod(pod).metadata.namespace
        labels = Pod(pod).metadata.labels
        for pdb in self.pdbs.list(namespace) if namespace else ():
            selector = disruption.controller_selector(pdb)
            if selector is not None and selector.matches(labels):
                self.queue.add(key_of(pdb))

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if TypedObject(old).metadata.labels != TypedObject(new).metadata.labels:
            self.on_pod(old)
        self.on_pod(new)

    # -- sync -----------------------------------------------------------------------------------------------

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        pdb = self.pdbs.get(namespace, name)
        if pdb is None:
            return
        try:
            self._try_sync(pdb)
        except Conflict:
            raise  # a stale cache: retried with backoff, without the fail-safe
        except (ApiError, NoController, ValueError) as exc:  # upstream failSafe: once written, the sync ends
            log.warning("failed to sync PodDisruptionBudget %s: %s", key, exc)
            self._write_status(pdb, disruption.fail_safe_status(pdb, str(exc), self.clock.now()))

    def _try_sync(self, pdb: Mapping[str, Any]) -> None:
        namespace = pdb["metadata"]["namespace"]
        selector = disruption.controller_selector(pdb)
        pods = [p for p in self.pods.list(namespace) if selector is not None
                and selector.matches(Pod(p).metadata.labels)]
        if not pods:
            self.recorder.event(pdb, "Normal", "NoPods", "No matching pods found")
        try:
            expected = self._expected(pdb, pods)
        except (ApiError, NoController, ValueError) as exc:
            self.recorder.eventf(pdb, "Warning", "CalculateExpectedPodCountFailed",
                                 "Failed to calculate the number of expected pods: %s", exc)
            raise
        if expected.unmanaged:
            self.recorder.eventf(
                pdb, "Warning", "UnmanagedPods", "Pods selected by this PodDisruptionBudget (selector: %s) were "
                "found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which "
                "may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" "
                "field of the PDB to an integer value.", selector)
        now = self.clock.now()
        recorded = PodDisruptionBudget(pdb).status.disrupted_pods
        live = disruption.disrupted_pods(pods, recorded, now)
        for pod in pods:
            if pod["metadata"]["name"] in live.not_deleted:
                self.recorder.eventf(pod, "Warning", "NotDeleted", "Pod was expected by PDB %s/%s to be deleted "
                                     "but it wasn't", namespace, namespace)  # upstream prints the namespace twice
        healthy = disruption.count_healthy(pods, live.pods, now)
        status = disruption.desired_status(pdb, current_healthy=healthy, expected=expected, disrupted=live.pods,
                                           now=now)
        if status is not None:
            self._write_status(pdb, status)
        if live.recheck is not None:
            self.queue.add_after(key_of(pdb), max((live.recheck - now).total_seconds(), 0.0))

    def _expected(self, pdb: Mapping[str, Any], pods: list[dict[str, Any]]) -> disruption.Expected:
        if not disruption.needs_scale(pdb):
            return disruption.expected_pods(pdb, len(pods), 0)
        scales: dict[str, int] = {}
        unmanaged: list[str] = []
        for pod in pods:
            ref = controller_of(pod)
            if ref is None:
                unmanaged.append(pod["metadata"]["name"])
                continue
            if ref.get("uid") in scales:
                continue
            found = self._scale_of(ref, pod["metadata"]["namespace"])
            if found is None:
                raise NoController(f'found no controllers for pod "{pod["metadata"]["name"]}"')
            scales[found[0]] = found[1]
        return disruption.expected_pods(pdb, len(pods), sum(scales.values()), unmanaged)

    def _get(self, api_version: str, plural: str, namespace: str, name: str, subresource: str | None = None
             ) -> dict[str, Any] | None:
        try:
            return self.client.get(resource_path(api_version, plural, namespace=namespace, name=name,
                                                 subresource=subresource))
        except NotFound:
            return None

    def _scale_of(self, ref: Mapping[str, Any], namespace: str) -> tuple[str, int] | None:
        """(uid, spec.replicas) of the controller `ref` names, a Deployment for its ReplicaSets; None when
        it is of no scalable kind, gone, or another object of the same name (uid differs)."""
        where = SCALABLE.get((_group(str(ref.get("apiVersion") or "")), str(ref.get("kind"))))
        if where is None:
            return None
        api_version, plural = where
        if plural == "replicasets":
            rs = self._get(api_version, plural, namespace, str(ref.get("name")))
            if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
                return None
            owner = controller_of(rs)
            if owner is not None and owner.get("kind") == "Deployment":
                return self._scale_of(owner, namespace)
        scale = self._get(api_version, plural, namespace, str(ref.get("name")), "scale")
        if scale is None or TypedObject(scale).metadata.uid != ref.get("uid"):
            return None
        return str(ref.get("uid")), int((scale.get("spec") or {}).get("replicas") or 0)

    def _write_status(self, pdb: Mapping[str, Any], status: dict[str, Any]) -> None:
        metadata = pdb["metadata"]
        self.client.update(resource_path("policy/v1", "poddisruptionbudgets", namespace=metadata["namespace"],
                                         name=metadata["name"], subresource="status"), {**pdb, "status": status})

