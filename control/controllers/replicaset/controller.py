"""The ReplicaSet and ReplicationController controllers: keep `spec.replicas` pods of the template running.

Upstream: pkg/controller/replicaset/replica_set.go (`syncReplicaSet`, `manageReplicas`, `claimPods`,
the pod handlers `addPod`/`updatePod`/`deletePod` with expectations, `getIndirectlyRelatedPods`,
`getPodReplicaSets`, `resolveControllerRef`), replica_set_utils.go (status, here status.py),
pkg/controller/replication (the ReplicationManager is this same controller over v1
ReplicationControllers, upstream by converting them: here by a `ReplicaKind` telling where they live and
how their selector reads), pkg/controller/controller_utils.go (`RealPodControl`: shared/pod_control.py).

sync(key), in upstream's order:
1. The object is gone → forget its expectations. Otherwise `needs_sync` = its expectations are satisfied
   (every create/delete of its last round seen by the pod informer, or the record expired).
2. Claim (shared/controller_ref_manager.py) among the namespace's active pods: adopt matching orphans, release
   owned pods that stopped matching.
3. If `needs_sync` and the object is not being deleted, manage replicas: too few → create
   min(missing, 500) pods in slow-start batches 1, 2, 4, … (a failed batch stops the rest; creates never
   tried are un-expected); too many → delete min(extra, 500) pods chosen by upstream's ranking
   (shared/controller_utils.py), concurrently, with expectations on exactly those pod keys.
4. Write the status (status.py) if it changed, one retry on a conflict with a fresh read; with
   minReadySeconds, sync again after it when every pod is ready but not all available yet.
5. Raise the manage error (if any) so the key is retried with backoff.

The writes, their events on the controller (SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete
with upstream's texts), the expectations around them and a namespace being terminated (no failure, no
event) are the shared pod control's (shared/pod_control.py).

Pods are made by pod_from_template: generateName `<name>-` (the API server adds upstream's 5 random
characters), the template's labels/annotations/finalizers and spec, ownerReference controller=true with
blockOwnerDeletion.

Departures: no periodic resync of the informers (upstream resyncs every 30 s as a safety net; the
expectations' 5-minute expiry is what un-sticks a key whose event was lost); no TerminatingReplicas
(alpha upstream); pods are listed by namespace and filtered here rather than through an index.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.typed import Pod, ReplicaSet
from control.apimachinery.labels import Selector, SelectorError, selector_from_label_selector, selector_from_set
from control.apimachinery.meta import controller_ref, key_of, labels_of, new_controller_ref, split_key
from control.client.errors import ApiError, Conflict
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.replicaset.status import (
    calculate_status,
    min_ready_seconds,
    status_unchanged,
    wanted_replicas,
    with_observed_generation,
)
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.controller_ref_manager import ControllerRefManager, resolve_controller_ref
from control.controllers.shared.controller_utils import (
    BURST_REPLICAS,
    filter_active_pods,
    is_pod_active,
    pod_from_template,
    pods_to_delete,
)
from control.controllers.shared.expectations import ControllerExpectations, UIDTrackingControllerExpectations
from control.controllers.shared.pod_control import PodControl
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-replicaset-syncs / --concurrent-rc-syncs
STATUS_UPDATE_RETRIES = 1  # upstream statusUpdateRetries


def _replica_set_selector(obj: Mapping[str, Any]) -> Selector:
    return selector_from_label_selector(ReplicaSet(obj).spec.raw.get("selector"))


def _replication_controller_selector(obj: Mapping[str, Any]) -> Selector:
    """An RC's selector is a plain map (the API server defaults it to the template's labels)."""
    return selector_from_set(ReplicaSet(obj).spec.raw.get("selector") or {})


@dataclass(frozen=True)
class ReplicaKind:
    """Which API object the controller drives (upstream passes the GroupVersionKind the same way)."""

    api_version: str
    plural: str
    kind: str
    controller_name: str  # upstream's controller name: the manager's key and the queue's name
    event_component: str  # the `source.component` of its events, as upstream's recorder names it
    selector: Callable[[Mapping[str, Any]], Selector]


REPLICA_SET = ReplicaKind("apps/v1", "replicasets", "ReplicaSet", "replicaset", "replicaset-controller",
                          _replica_set_selector)
REPLICATION_CONTROLLER = ReplicaKind("v1", "replicationcontrollers", "ReplicationController",
                                     "replicationcontroller", "replication-controller",
                                     _replication_controller_selector)


class ReplicaSetController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs until `stop` is set."""

    def __init__(self, client: APIClient, informers: InformerFactory, *, kind: ReplicaKind = REPLICA_SET,
                 workers: int = DEFAULT_WORKERS, burst_replicas: int = BURST_REPLICAS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        self.name = kind.controller_name
        recorder = recorder or EventRecorder(client, component=kind.event_component, clock=clock)
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.kind = kind
        self.burst_replicas = burst_replicas
        self.clock: Clock = clock or RealClock()
        self.expectations = UIDTrackingControllerExpectations(ControllerExpectations(clock=self.clock))
        self.pod_control = PodControl(client, self.recorder, self.expectations, name=self.name)
        owners, pods = informers.informer(kind.api_version, kind.plural), informers.informer("v1", "pods")
        self.owners, self.pods = owners.lister(), pods.lister()
        owners.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.on_owner_delete)
        pods.add_event_handler(on_add=self.on_pod_add, on_update=self.on_pod_update, on_delete=self.on_pod_delete)

    # -- handlers: map a change to keys (and observe expectations) --------------------------------------

    def on_owner_delete(self, obj: Mapping[str, Any]) -> None:
        key = key_of(obj)
        self.expectations.delete_expectations(key)
        self.queue.add(key)

    def _resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
        """The controller `ref` names, if it is of our kind and still the same object (by UID)."""
        return resolve_controller_ref(self.owners, namespace, ref, self.kind.kind)

    def _matching_owners(self, pod: Mapping[str, Any]) -> list[dict[str, Any]]:
        """getPodReplicaSets: the controllers of our kind whose (non-empty) selector selects the pod."""
        namespace = Pod(pod).metadata.namespace
        found = []
        for owner in self.owners.list(namespace) if namespace else ():
            try:
                selector = self.kind.selector(owner)
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels_of(pod)):
                found.append(owner)
        return found

    def on_pod_add(self, pod: Mapping[str, Any]) -> None:
        if Pod(pod).metadata.deletion_timestamp:
            self.on_pod_delete(pod)  # a restarted controller sees a pod pending deletion as an add
            return
        owner = self._resolve(Pod(pod).metadata.namespace or "", controller_ref(pod))
        if owner is not None:
            key = key_of(owner)
            self.expectations.creation_observed(key)
            self.queue.add(key)
            return
        if controller_ref(pod) is None:  # an orphan: whoever matches may adopt it
            for candidate in self._matching_owners(pod):
                self.queue.add(key_of(candidate))

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
        if old_meta.get("resourceVersion") == new_meta.get("resourceVersion"):
            return  # a resync: nothing changed
        namespace = new_meta.get("namespace") or ""
        labels_changed = old_meta.get("labels") != new_meta.get("labels")
        if new_meta.get("deletionTimestamp"):
            # Being deleted: count it as gone now, so a replacement is made without waiting for the kubelet.
            self.on_pod_delete(new)
            if labels_changed:
                self.on_pod_delete(old)
            return
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and old_ref is not None:
            previous = self._resolve(namespace, old_ref)
            if previous is not None:
                self.queue.add(key_of(previous))
        if new_ref is not None:
            owner = self._resolve(namespace, new_ref)
            if owner is None:
                return
            key = key_of(owner)
            self.queue.add(key)
            seconds = min_ready_seconds(owner)
            if seconds > 0 and not is_pod_ready(old) and is_pod_ready(new):
                self.queue.add_after(key, seconds + 1.0)  # +1 s against clock skew, as upstream
            return
        if labels_changed or old_ref != new_ref:
            for candidate in self._matching_owners(new):
                self.queue.add(key_of(candidate))

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None:
        owner = self._resolve(Pod(pod).metadata.namespace or "", controller_ref(pod))
        if owner is None:
            return  # no controller cares about an orphan going away
        key = key_of(owner)
        self.expectations.deletion_observed(key, key_of(pod))
        self.queue.add(key)

    # -- sync -------------------------------------------------------------------------------------------

    def _typed(self, obj: Mapping[str, Any]) -> dict[str, Any]:
        """The object with its apiVersion/kind (list items come without; events and writes need them)."""
        return {**obj, "apiVersion": self.kind.api_version, "kind": self.kind.kind}

    def _path(self, obj: Mapping[str, Any], subresource: str | None = None) -> str:
        metadata = obj.get("metadata") or {}
        return resource_path(self.kind.api_version, self.kind.plural, namespace=metadata.get("namespace"),
                             name=metadata.get("name"), subresource=subresource)

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        owner = self.owners.get(namespace, name)
        if owner is None:
            self.expectations.delete_expectations(key)
            return
        needs_sync = self.expectations.satisfied_expectations(key)
        try:
            selector = self.kind.selector(owner)
        except SelectorError as exc:
            log.error("%s %s has an invalid selector: %s", self.kind.kind, key, exc)
            return
        pods = self._claim(owner, selector, filter_active_pods(self.pods.list(namespace)))
        manage_error: Exception | None = None
        if needs_sync and not ReplicaSet(owner).metadata.deletion_timestamp:
            try:
                self._manage_replicas(key, owner, pods)
            except Exception as exc:  # noqa: BLE001 — reported in status, then raised for the retry below
                manage_error = exc
        message = None if manage_error is None else (
            manage_error.message if isinstance(manage_error, ApiError) else str(manage_error))
        status = calculate_status(owner, pods, manage_error=message, now=self.clock.now())
        written = self._update_status(owner, status)
        replicas = wanted_replicas(written)
        written_status = written.get("status") or {}
        if (manage_error is None and min_ready_seconds(written) > 0
                and int(written_status.get("readyReplicas") or 0) == replicas
                and int(written_status.get("availableReplicas") or 0) != replicas):
            self.queue.add_after(key, float(min_ready_seconds(written)))  # a last line against clock skew
        if manage_error is not None:
            raise manage_error

    def _claim(self, owner: Mapping[str, Any], selector: Selector, pods: list[Any]) -> list[Any]:
        def can_adopt() -> None:  # RecheckDeletionTimestamp over an uncached read
            fresh = self.client.get(self._path(owner))
            fresh_meta, meta = fresh.get("metadata") or {}, owner.get("metadata") or {}
            if fresh_meta.get("uid") != meta.get("uid"):
                raise ValueError(f"original {self.kind.kind} {key_of(owner)} is gone: got uid "
                                 f"{fresh_meta.get('uid')}, wanted {meta.get('uid')}")
            if fresh_meta.get("deletionTimestamp"):
                raise ValueError(f"{key_of(owner)} has just been deleted at {fresh_meta['deletionTimestamp']}")

        reference = new_controller_ref(owner, api_version=self.kind.api_version, kind=self.kind.kind)
        manager = ControllerRefManager(self.client, owner=owner, reference=reference, selector=selector,
                                       child_api_version="v1", child_plural="pods", can_adopt=can_adopt)
        return manager.claim(pods)

    def _manage_replicas(self, key: str, owner: Mapping[str, Any], pods: list[Any]) -> None:
        diff = len(pods) - wanted_replicas(owner)
        if diff < 0:
            self._create(key, owner, min(-diff, self.burst_replicas))
        elif diff > 0:
            self._delete(key, owner, pods, min(diff, self.burst_replicas))

    def _create(self, key: str, owner: Mapping[str, Any], count: int) -> None:
        template = ReplicaSet(owner).spec.template.raw
        reference = new_controller_ref(owner, api_version=self.kind.api_version, kind=self.kind.kind)
        log.info("too few replicas for %s %s, need %d, creating %d", self.kind.kind, key, wanted_replicas(owner),
                 count)
        pods = [pod_from_template(template, controller_name=owner["metadata"]["name"], controller_ref=reference)
                for _ in range(count)]
        error = self.pod_control.sync_pods(key, self._typed(owner), create=pods).error
        if error is not None:
            raise error

    def _delete(self, key: str, owner: Mapping[str, Any], pods: list[Any], count: int) -> None:
        log.info("too many replicas for %s %s, need %d, deleting %d", self.kind.kind, key, wanted_replicas(owner),
                 count)
        chosen = pods_to_delete(pods, self._related_pods(owner), count, now=self.clock.now())
        error = self.pod_control.sync_pods(key, self._typed(owner), delete=chosen).error
        if error is not None:
            raise error

    def _related_pods(self, owner: Mapping[str, Any]) -> list[Any]:
        """getIndirectlyRelatedPods: active pods selected by any controller of our kind that shares this
        one's own controller (a Deployment's ReplicaSets); none when it has no controller."""
        parent = controller_ref(owner)
        if parent is None:
            return []
        related: dict[str, Any] = {}
        for sibling in self.owners.list(owner["metadata"]["namespace"]):
            sibling_ref = controller_ref(sibling)
            if sibling_ref is None or sibling_ref.get("uid") != parent.get("uid"):
                continue
            try:
                selector = self.kind.selector(sibling)
            except SelectorError:
                continue
            for pod in self.pods.list(sibling["metadata"]["namespace"], selector):
                related.setdefault(str(pod["metadata"].get("uid") or key_of(pod)), pod)
        return [pod for pod in related.values() if is_pod_active(pod)]

    def _update_status(self, owner: Mapping[str, Any], status: dict[str, Any]) -> Mapping[str, Any]:
        """Write `status` unless unchanged (updateReplicaSetStatus), one retry with a fresh read."""
        if status_unchanged(owner, status):
            return owner
        current: Mapping[str, Any] = owner
        for attempt in range(STATUS_UPDATE_RETRIES + 1):
            body = {**self._typed(current), "status": with_observed_generation(owner, status)}
            try:
                return self.client.update(self._path(current, "status"), body)
            except Conflict:
                if attempt >= STATUS_UPDATE_RETRIES:
                    raise
                current = self.client.get(self._path(owner))
        return current  # not reached: the loop returns or raises
