"""The DaemonSet controller: one daemon pod on every node that should run one, rolled out revision by
revision, with its history as ControllerRevisions.

Upstream: pkg/controller/daemon/daemon_controller.go (`syncDaemonSet`, `manage`, `syncNodes`, the pod,
node and history handlers, `getDaemonPods` claiming, `getNodesToDaemonPods`, the failed-pods back-off)
and daemon/update.go (`constructHistory`, `snapshot`, `dedupCurHistories`, `cleanupHistory`,
`rollingUpdate`). The decisions are decisions.py's (pure); shared/history.py does the revision I/O.

sync(key), in upstream's order:
1. Gone → forget its expectations. Selecting everything → event SelectingAll, nothing else. Being deleted
   → nothing (its pods and revisions go with the garbage collector).
2. Claim pods (adopt/release, shared/controller_ref_manager.py) and ControllerRevisions; construct the history:
   the revision whose data is this template's patch is current (a duplicate is deleted, a lower revision
   number raised to max + 1), or a new snapshot `<name>-<hash>` is created (a name taken by another
   template bumps status.collisionCount and retries). Its hash is the pods' `controller-revision-hash`.
3. Expectations not satisfied → write the status only (observedGeneration unchanged).
4. manage: per node `plan_node` (create on a node that should run a pod and has none, delete pods of
   nodes that should not keep them, extras, and failed pods through a per-node back-off 1 s … 15 min with
   a FailedDaemonPod event); unscheduled pods pinned to a node that no longer exists are deleted.
5. If the expectations allow, the RollingUpdate step (OnDelete: nothing; old pods are replaced only when
   a user deletes them), then old history beyond revisionHistoryLimit is truncated.
6. Status (counts from daemonset_decisions.calculate_status, observedGeneration); with minReadySeconds,
   a resync after it so availability is noticed.

Creating is in slow-start batches with the pods pinned to their node by node affinity (the scheduler
binds them); deleting is concurrent; both through the shared pod control (shared/pod_control.py: the
events SuccessfulCreate, FailedCreate, SuccessfulDelete, FailedDelete, one expectations record per round).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.typed import ControllerRevision, DaemonSet, Pod, TypedObject
from control.apimachinery.labels import Selector, SelectorError, selector_from_label_selector
from control.apimachinery.meta import controller_ref, key_of, labels_of, new_controller_ref, split_key
from control.client.errors import Conflict
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.daemonset import decisions as decide
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.controller_ref_manager import ControllerRefManager, resolve_controller_ref
from control.controllers.shared.controller_utils import pod_from_template
from control.controllers.shared.expectations import ControllerExpectations
from control.controllers.shared.helpers import compute_hash
from control.controllers.shared.history import (
    CONTROLLER_REVISION_HASH_LABEL,
    History,
    max_revision,
    revision_number,
    revision_path,
    revisions_to_truncate,
    sort_revisions,
)
from control.controllers.shared.pod_control import PodControl
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

API_VERSION = "apps/v1"
KIND = "DaemonSet"
DEFAULT_WORKERS = 2  # upstream --concurrent-daemonset-syncs
BURST_REPLICAS = 250  # upstream BurstReplicas
BACKOFF_INITIAL, BACKOFF_MAX = 1.0, 15 * 60.0  # upstream failedPodsBackoff


class FailedPodsBackoff:
    """flowcontrol.Backoff per (DaemonSet uid, node): how long to leave a failed pod before deleting it
    again, doubling from 1 s to 15 min; an entry idle for twice the maximum starts over."""

    def __init__(self, clock: Clock) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._entries: dict[str, tuple[float, float]] = {}  # key → (delay, monotonic time of the last step)

    def in_backoff(self, key: str) -> float:
        """Seconds left of the back-off of `key` (0: free to act)."""
        with self._lock:
            entry = self._entries.get(key)
        if entry is None:
            return 0.0
        left = entry[0] - (self._clock.monotonic() - entry[1])
        return max(0.0, left)

    def next(self, key: str) -> None:
        now = self._clock.monotonic()
        with self._lock:
            entry = self._entries.get(key)
            if entry is None or now - entry[1] > 2 * BACKOFF_MAX:
                self._entries[key] = (BACKOFF_INITIAL, now)
            else:
                self._entries[key] = (min(entry[0] * 2, BACKOFF_MAX), now)


class DaemonSetController(Controller):
    """Registers its handlers on construction; `run(stop)` (the base's) syncs until `stop` is set."""

    name = "daemonset"  # upstream's controller name (--controllers)

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 burst_replicas: int = BURST_REPLICAS, queue: RateLimitingQueue[str] | None = None,
                 recorder: EventRecorder | None = None, clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        self.burst_replicas = burst_replicas
        self.expectations = ControllerExpectations(clock=self.clock)
        self.pod_control = PodControl(client, self.recorder, self.expectations, name=self.name)
        self.backoff = FailedPodsBackoff(self.clock)
        daemonsets = informers.informer(API_VERSION, "daemonsets")
        pods, nodes = informers.informer("v1", "pods"), informers.informer("v1", "nodes")
        revisions = informers.informer(API_VERSION, "controllerrevisions")
        self.daemonsets, self.pods, self.nodes = daemonsets.lister(), pods.lister(), nodes.lister()
        self.history = History(client, revisions.lister())
        daemonsets.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.on_ds_delete)
        pods.add_event_handler(on_add=self.on_pod_add, on_update=self.on_pod_update, on_delete=self.on_pod_delete)
        nodes.add_event_handler(on_add=self.on_node_add, on_update=self.on_node_update)
        revisions.add_event_handler(on_add=self.on_revision, on_update=lambda old, new: self.on_revision(new),
                                    on_delete=self.on_revision)

    # -- handlers -----------------------------------------------------------------------------------

    def on_ds_delete(self, obj: Mapping[str, Any]) -> None:
        key = key_of(obj)
        self.expectations.delete_expectations(key)
        self.queue.add(key)

    def _resolve(self, namespace: str, ref: Mapping[str, Any] | None) -> dict[str, Any] | None:
        return resolve_controller_ref(self.daemonsets, namespace, ref, KIND)

    def _selecting(self, obj: Mapping[str, Any]) -> list[dict[str, Any]]:
        """The DaemonSets whose selector selects `obj` (an orphan pod or revision they may adopt)."""
        namespace = TypedObject(obj).metadata.namespace
        found = []
        for ds in self.daemonsets.list(namespace) if namespace else ():
            try:
                selector = selector_from_label_selector(DaemonSet(ds).spec.raw.get("selector"))
            except SelectorError:
                continue
            if not selector.empty and selector.matches(labels_of(obj)):
                found.append(ds)
        return found

    def on_pod_add(self, pod: Mapping[str, Any]) -> None:
        if Pod(pod).metadata.deletion_timestamp:
            self.on_pod_delete(pod)
            return
        ds = self._resolve(Pod(pod).metadata.namespace or "", controller_ref(pod))
        if ds is not None:
            self.expectations.creation_observed(key_of(ds))
            self.queue.add(key_of(ds))
        elif controller_ref(pod) is None:
            for candidate in self._selecting(pod):
                self.queue.add(key_of(candidate))

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        old_meta, new_meta = old.get("metadata") or {}, new.get("metadata") or {}
        if old_meta.get("resourceVersion") == new_meta.get("resourceVersion"):
            return
        if new_meta.get("deletionTimestamp"):
            self.on_pod_delete(new)
            return
        namespace = new_meta.get("namespace") or ""
        old_ref, new_ref = controller_ref(old), controller_ref(new)
        if old_ref != new_ref and (previous := self._resolve(namespace, old_ref)) is not None:
            self.queue.add(key_of(previous))
        if new_ref is not None:
            ds = self._resolve(namespace, new_ref)
            if ds is not None:
                self.queue.add(key_of(ds))
                seconds = decide.min_ready_seconds(ds)
                if seconds > 0 and is_pod_ready(new) and not is_pod_ready(old):
                    self.queue.add_after(key_of(ds), seconds + 1.0)
            return
        if old_meta.get("labels") != new_meta.get("labels") or old_ref != new_ref:
            for candidate in self._selecting(new):
                self.queue.add(key_of(candidate))

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None:
        ds = self._resolve(Pod(pod).metadata.namespace or "", controller_ref(pod))
        if ds is None:
            return
        self.expectations.deletion_observed(key_of(ds))
        self.queue.add(key_of(ds))

    def on_node_add(self, node: Mapping[str, Any]) -> None:
        for ds in self.daemonsets.list():
            if decide.node_should_run(node, ds)[0]:
                self.queue.add(key_of(ds))

    def on_node_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        """Only the DaemonSets for which the node's eligibility changed (upstream updateNode)."""
        for ds in self.daemonsets.list():
            if decide.node_should_run(old, ds) != decide.node_should_run(new, ds):
                self.queue.add(key_of(ds))

    def on_revision(self, revision: Mapping[str, Any]) -> None:
        ds = self._resolve(ControllerRevision(revision).metadata.namespace or "", controller_ref(revision))
        if ds is not None:
            self.queue.add(key_of(ds))
        elif controller_ref(revision) is None:
            for candidate in self._selecting(revision):
                self.queue.add(key_of(candidate))

    # -- sync -------------------------------------------------------------------------------------------

    def _path(self, ds: Mapping[str, Any], subresource: str | None = None) -> str:
        metadata = ds.get("metadata") or {}
        return resource_path(API_VERSION, "daemonsets", namespace=metadata.get("namespace"),
                             name=metadata.get("name"), subresource=subresource)

    def _typed(self, ds: Mapping[str, Any]) -> dict[str, Any]:
        return {**ds, "apiVersion": API_VERSION, "kind": KIND}

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        ds = self.daemonsets.get(namespace, name)
        if ds is None:
            self.expectations.delete_expectations(key)
            return
        selector_spec = DaemonSet(ds).spec.raw.get("selector")
        try:
            selector = selector_from_label_selector(selector_spec)
        except SelectorError as exc:
            log.error("DaemonSet %s has an invalid selector: %s", key, exc)
            return
        if selector.empty:
            self.recorder.eventf(self._typed(ds), "Warning", "SelectingAll",
                                 "This daemon set is selecting all pods. A non-empty selector is required.")
            return
        if DaemonSet(ds).metadata.deletion_timestamp:
            return
        nodes = sorted(self.nodes.list(), key=decide.name_of)
        current, old = self._construct_history(ds, selector)
        hash_ = str(DaemonSet(current).metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL) or "")
        pods = self._claim_pods(ds, selector)
        if not self.expectations.satisfied_expectations(key):
            self._update_status(ds, nodes, pods, hash_, observed=False)
            return
        error: Exception | None = None
        try:
            self._manage(key, ds, nodes, pods, hash_)
            if self.expectations.satisfied_expectations(key) and decide.strategy_type(ds) == decide.ROLLING_UPDATE:
                step = decide.rolling_update(ds, nodes, decide.group_by_node(self._live(pods)), hash_,
                                             self.clock.now())
                if step.delete or step.create_on:
                    by_name = {decide.name_of(pod): pod for pod in pods}
                    self._sync_nodes(key, ds, list(step.create_on),
                                     [by_name[name] for name in step.delete if name in by_name], hash_)
            self._cleanup_history(ds, pods, old)
        except Exception as exc:  # noqa: BLE001 — the status is still written, then the error retried
            error = exc
        self._update_status(ds, nodes, pods, hash_, observed=True)
        if error is not None:
            raise error

    @staticmethod
    def _live(pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """getNodesToDaemonPods without deleted terminal pods (they are on their way out)."""
        return [pod for pod in pods if not (decide.is_deleting(pod) and Pod(pod).status.phase
                                            in ("Succeeded", "Failed"))]

    def _claim_pods(self, ds: Mapping[str, Any], selector: Selector) -> list[dict[str, Any]]:
        def can_adopt() -> None:
            fresh = self.client.get(self._path(ds))
            if DaemonSet(fresh).metadata.uid != DaemonSet(ds).metadata.uid:
                raise ValueError(f"original DaemonSet {key_of(ds)} is gone")
            if DaemonSet(fresh).metadata.deletion_timestamp:
                raise ValueError(f"{key_of(ds)} has just been deleted")

        reference = new_controller_ref(ds, api_version=API_VERSION, kind=KIND)
        manager = ControllerRefManager(self.client, owner=ds, reference=reference, selector=selector,
                                       child_api_version="v1", child_plural="pods", can_adopt=can_adopt)
        return [dict(pod) for pod in manager.claim(self.pods.list(ds["metadata"]["namespace"]))]

    # -- history ----------------------------------------------------------------------------------------

    def _construct_history(self, ds: Mapping[str, Any],
                           selector: Selector) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        """constructHistory: (current revision, old revisions); see the module notes."""
        revisions = []
        for revision in self.history.list_controller_revisions(ds, selector):
            if controller_ref(revision) is None:  # an orphan matching our selector: adopt it
                revision = self.history.adopt_controller_revision(ds, api_version=API_VERSION, kind=KIND,
                                                                  revision=revision)
            revisions.append(revision)
        current_ones: list[dict[str, Any]] = []
        old: list[dict[str, Any]] = []
        for revision in revisions:
            if CONTROLLER_REVISION_HASH_LABEL not in ControllerRevision(revision).metadata.labels:
                revision = self.client.patch(revision_path(ds["metadata"]["namespace"], revision["metadata"]["name"]),
                                             {"metadata": {"labels": {CONTROLLER_REVISION_HASH_LABEL:
                                                                      revision["metadata"]["name"]}}})
            (current_ones if decide.matches_history(ds, revision) else old).append(revision)
        next_number = max_revision(old) + 1
        if not current_ones:
            return self._snapshot(ds, next_number), old
        ordered = sort_revisions(current_ones)
        current = dict(ordered[-1])  # dedupCurHistories: keep the newest, delete the duplicates
        for duplicate in ordered[:-1]:
            self.history.delete_controller_revision(duplicate)
        if revision_number(current) < next_number:
            current = self.history.update_revision_number(current, next_number)
        return current, old

    def _snapshot(self, ds: Mapping[str, Any], number: int) -> dict[str, Any]:
        """snapshot: a revision named `<ds>-<hash of the template>`; a name taken by another template means a
        hash collision: status.collisionCount + 1 and an error, so the next sync uses a new name."""
        status = ds.get("status") or {}
        collision_count = status.get("collisionCount")
        hash_ = compute_hash(DaemonSet(ds).spec.template.raw, collision_count)
        metadata = ds.get("metadata") or {}
        template_labels = DaemonSet(ds).spec.template.metadata.labels
        revision: dict[str, Any] = {
            "apiVersion": API_VERSION, "kind": "ControllerRevision",
            "metadata": {"name": f"{metadata['name']}-{hash_}", "namespace": metadata["namespace"],
                         "labels": {**template_labels, CONTROLLER_REVISION_HASH_LABEL: hash_},
                         "ownerReferences": [new_controller_ref(ds, api_version=API_VERSION, kind=KIND)]},
            "data": decide.history_patch(ds),
            "revision": number,
        }
        if metadata.get("annotations"):
            revision["metadata"]["annotations"] = dict(metadata["annotations"])
        try:
            return self.client.create(revision_path(metadata["namespace"]), revision)
        except Conflict as exc:
            if exc.reason != "AlreadyExists":
                raise
        existing = self.client.get(revision_path(metadata["namespace"], revision["metadata"]["name"]))
        if decide.matches_history(ds, existing):
            return existing
        fresh = self.client.get(self._path(ds))
        if DaemonSet(fresh).status.collision_count != collision_count:
            raise RuntimeError(f"found a stale collision count of DaemonSet {key_of(ds)}; will retry")
        fresh_status = dict(DaemonSet(fresh).status.raw)
        fresh_status["collisionCount"] = int(collision_count or 0) + 1
        self.client.update(self._path(ds, "status"), {**self._typed(fresh), "status": fresh_status})
        raise RuntimeError(f"hash collision on ControllerRevision {revision['metadata']['name']}; will retry")

    def _cleanup_history(self, ds: Mapping[str, Any], pods: list[dict[str, Any]], old: list[dict[str, Any]]) -> None:
        """cleanupHistory: of the old revisions no pod still runs, delete the oldest beyond the limit
        (upstream counts every old revision, live ones included, toward revisionHistoryLimit)."""
        live_hashes = {decide.pod_hash(pod) for pod in pods} - {""}
        live = {revision["metadata"]["name"] for revision in old
                if ControllerRevision(revision).metadata.labels.get(CONTROLLER_REVISION_HASH_LABEL)
                in live_hashes}
        excess = len(old) - decide.revision_history_limit(ds)
        if excess <= 0:
            return
        doomed = revisions_to_truncate(old, live=live, limit=0)[:excess]
        for revision in doomed:
            self.history.delete_controller_revision(revision)

    # -- manage -----------------------------------------------------------------------------------------

    def _manage(self, key: str, ds: Mapping[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                hash_: str) -> None:
        by_node = decide.group_by_node(self._live(pods))
        now = self.clock.now()
        create_on: list[str] = []
        delete: list[Mapping[str, Any]] = []
        uid = DaemonSet(ds).metadata.uid
        for node in nodes:
            node_name = decide.name_of(node)
            plan = decide.plan_node(node, by_node.get(node_name), ds, hash_, now)
            if plan.create:
                create_on.append(node_name)
            delete.extend(plan.delete)
            for pod in plan.failed:
                backoff_key = f"{uid}/{node_name}"
                if (left := self.backoff.in_backoff(backoff_key)) > 0:
                    self.queue.add_after(key, left)
                    continue
                self.backoff.next(backoff_key)
                message = (f"Found failed daemon pod {pod['metadata']['namespace']}/{pod['metadata']['name']} "
                           f"on node {node_name}, will try to kill it")
                self.recorder.eventf(self._typed(ds), "Warning", "FailedDaemonPod", "%s", message)
                delete.append(pod)
        known = {decide.name_of(node) for node in nodes}
        for pod in pods:  # getUnscheduledPodsWithoutNode
            target = decide.target_node_name(pod)
            if not Pod(pod).spec.node_name and target not in known and not decide.is_deleting(pod):
                delete.append(pod)
        self._sync_nodes(key, ds, create_on, delete, hash_)

    def _sync_nodes(self, key: str, ds: Mapping[str, Any], create_on: list[str],
                    delete: list[Mapping[str, Any]], hash_: str) -> None:
        """syncNodes: create on `create_on` (slow start), delete `delete`, both within the burst limit and
        under expectations set before the writes."""
        create_on = create_on[:self.burst_replicas]
        unique = {decide.name_of(pod): pod for pod in delete}
        delete = list(unique.values())[:self.burst_replicas]
        if not create_on and not delete:
            return
        template = decide.pod_template(ds, hash_)
        reference = new_controller_ref(ds, api_version=API_VERSION, kind=KIND)
        create = [pod_from_template(decide.pod_for_node(template, node_name), controller_name=ds["metadata"]["name"],
                                    controller_ref=reference) for node_name in create_on]
        if create_on:
            log.info("DaemonSet %s: creating %d pods on %s", key, len(create_on), ", ".join(create_on))
        if delete:
            log.info("DaemonSet %s: deleting %d pods", key, len(delete))
        error = self.pod_control.sync_pods(key, self._typed(ds), create=create, delete=delete).error
        if error is not None:
            raise error

    # -- status -----------------------------------------------------------------------------------------

    def _update_status(self, ds: Mapping[str, Any], nodes: list[dict[str, Any]], pods: list[dict[str, Any]],
                       hash_: str, *, observed: bool) -> None:
        """updateDaemonSetStatus / storeDaemonSetStatus: one retry with a fresh read on a conflict."""
        counts = decide.calculate_status(ds, nodes, decide.group_by_node(self._live(pods)), hash_, self.clock.now())
        current: Mapping[str, Any] = ds
        for attempt in range(2):
            status = dict(DaemonSet(current).status.raw)
            for key in ("updatedNumberScheduled", "numberAvailable", "numberUnavailable"):
                status.pop(key, None)
            status.update(counts)
            if observed:
                status["observedGeneration"] = DaemonSet(ds).metadata.generation
            if status == DaemonSet(current).status.raw:
                break
            try:
                self.client.update(self._path(current, "status"), {**self._typed(current), "status": status})
                break
            except Conflict:
                if attempt:
                    raise
                current = self.client.get(self._path(ds))
        seconds = decide.min_ready_seconds(ds)
        if seconds > 0 and counts["numberReady"] != counts.get("numberAvailable", 0):
            self.queue.add_after(key_of(ds), float(seconds))
