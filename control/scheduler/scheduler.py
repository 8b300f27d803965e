"""The scheduler loop: informers feed the cache and the queue; one scheduling cycle at a time takes the
next pod, decides on a snapshot (algorithm.py), assumes the pod on the chosen node and binds it through
the API in the background, so the next cycle starts at once.

Upstream: pkg/scheduler/scheduler.go (`Run`), schedule_one.go (`ScheduleOne`: skip pods being deleted or
already assumed; `schedulingCycle` → assume → `bindingCycle` in a goroutine; `handleSchedulingFailure`:
a FailedScheduling event, the pod back to the queue — unschedulable, or backoff after an error — and its
PodScheduled condition False with reason Unschedulable (SchedulerError for errors) through pods/status;
a failed binding forgets the assumed pod and requeues it with backoff), eventhandlers.go (which informer
changes go where: a bound pod to the cache, a pending pod of this scheduler's names to the queue; node
changes and deleted or finished bound pods move unschedulable pods back; an assigned pod added or
changed and a node deleted move back the pods PodTopologySpread or InterPodAffinity rejected, the plugins
upstream registers for those events, InterPodAffinity's only when its queueing hint says the pod may fit
now) and DefaultBinder (POST
pods/{name}/binding). Events: "Scheduled" ("Successfully assigned ns/pod to node") and
"FailedScheduling" with FitError's message, reported by the pod's profile (component = its schedulerName,
as upstream gives each profile its own recorder). The queue's backoff is the configuration's
podInitialBackoffSeconds/podMaxBackoffSeconds (control/scheduler/config.py checks the file).

Preemption (upstream preemption.go prepareCandidate / PreemptPod, schedule_one.go handleSchedulingFailure
with its NominatingInfo, and the nominator the queue keeps): when DefaultPreemption picked a node, each
victim gets the DisruptionTarget condition (reason PreemptionByScheduler) and is deleted gracefully, with
a "Preempted" event ("Preempted by pod <uid> on node <node>"); lower-priority pods nominated to that node
lose their nomination; the preemptor is nominated there (in the nominator at once, in
`status.nominatedNodeName` with its PodScheduled=False write) and goes back to the queue, to be retried
when the victims are gone. A nomination ends when the pod is assumed, bound or deleted.

Which pods: `spec.schedulerName` one of the profiles' names ("default-scheduler" when unset, as the API
server's defaulting does) and no `spec.nodeName`; pods in phase Succeeded or Failed are ignored, as
upstream's field selector on its pod informer does.

The plugins' `Listers` (framework.py) are the caches of Service, ReplicationController, ReplicaSet,
StatefulSet, PersistentVolumeClaim, PersistentVolume and StorageClass informers the scheduler starts beside
those of pods and nodes. Before the binding, VolumeBinding's PreBind step runs: the pod's unbound
WaitForFirstConsumer claims get the `volume.kubernetes.io/selected-node` annotation (a failure requeues the
pod like a failed binding).

Threads: informer handler threads (cache, queue), the loop (`run`), a small pool for bindings and failure
status updates. The cache and queue are thread-safe; `_next_start_index` and `_snapshot` are only touched
by the loop.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Protocol

from control.api.typed.core import Node, Pod
from control.api.volumes import ANN_SELECTED_NODE
from control.apimachinery.meta import get_condition, name_of, namespace_of, set_condition
from control.client.errors import ApiError, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.scheduler.algorithm import SchedulingError, schedule_one
from control.scheduler.cache import SchedulerCache, Snapshot
from control.scheduler.framework import Listers, PostFilterResult
from control.scheduler.metrics import ERROR, SCHEDULED, UNSCHEDULABLE_RESULT, SchedulerMetrics
from control.scheduler.nominator import Nominator
from control.scheduler.plugins.defaultpreemption import DISRUPTION_TARGET, PREEMPTION_BY_SCHEDULER
from control.scheduler.plugins.interpodaffinity import NAME as INTER_POD_AFFINITY
from control.scheduler.plugins.interpodaffinity import pod_may_fit_after_pod_change
from control.scheduler.plugins.volumebinding import NAME as VOLUME_BINDING
from control.scheduler.plugins.volumebinding import claims_to_annotate
from control.scheduler.profile import DEFAULT_SCHEDULER_NAME, Profile, build_profiles
from control.scheduler.queue import INITIAL_BACKOFF_SECONDS, MAX_BACKOFF_SECONDS, QueuedPodInfo, SchedulingQueue
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

SYNC_WAIT_SECONDS = 0.5
POP_TIMEOUT_SECONDS = 1.0  # how often the loop looks at `stop` while the queue is empty
BIND_WORKERS = 4
RECORDER_SHUTDOWN_SECONDS = 5.0
TERMINAL_PHASES = ("Succeeded", "Failed")
# The plugins that registered for an assigned pod's add/update and a node's deletion (upstream
# EventsToRegister of PodTopologySpread and InterPodAffinity): only the pods they rejected move back then.
POD_TOPOLOGY_PLUGINS = frozenset({"PodTopologySpread", "InterPodAffinity"})
VOLUME_PLUGINS = frozenset({VOLUME_BINDING})


class SchedulerClient(Protocol):
    """The verbs the scheduler writes with (RESTClient and tests/support/fake_apiserver.py have them)."""

    def create(self, path: str, body: dict[str, Any], *, params: Mapping[str, str] | None = None) -> dict[str, Any]: ...

    def patch(self, path: str, patch: dict[str, Any] | list[Any], *, patch_type: str = "merge") -> dict[str, Any]: ...

    def delete(self, path: str, *, grace_period_seconds: int | None = None, propagation_policy: str | None = None,
               preconditions: dict[str, Any] | None = None) -> dict[str, Any]: ...


def scheduler_name(pod: Mapping[str, Any]) -> str:
    return Pod(pod).spec.scheduler_name or DEFAULT_SCHEDULER_NAME


def _assigned(pod: Mapping[str, Any]) -> bool:
    return bool(Pod(pod).spec.node_name)


def _terminal(pod: Mapping[str, Any]) -> bool:
    return Pod(pod).status.phase in TERMINAL_PHASES


def _pod_labels(pod: Mapping[str, Any]) -> Mapping[str, str]:
    return Pod(pod).metadata.labels


def _node_scheduling_properties(node: Mapping[str, Any]) -> tuple[Any, ...]:
    """What of a Node a filter or score reads (upstream nodeSchedulingPropertiesChange)."""
    spec, status = node.get("spec") or {}, node.get("status") or {}
    return (spec.get("unschedulable"), spec.get("taints"), status.get("allocatable"),
            Node(node).metadata.labels, status.get("conditions") and
            [(c.get("type"), c.get("status")) for c in status["conditions"]])


class Scheduler:
    def __init__(self, client: SchedulerClient, informers: InformerFactory, *,
                 config: Mapping[str, Any] | None = None, clock: Clock | None = None,
                 rng: random.Random | None = None, recorder: EventRecorder | None = None,
                 bind_workers: int = BIND_WORKERS, metrics: SchedulerMetrics | None = None) -> None:
        self.client = client
        self.informers = informers
        self.profiles: dict[str, Profile] = build_profiles(config)
        self.clock: Clock = clock or RealClock()
        self.rng = rng or random.Random()
        self.cache = SchedulerCache()
        self.queue = SchedulingQueue(
            clock=self.clock,
            initial_backoff=float((config or {}).get("podInitialBackoffSeconds") or INITIAL_BACKOFF_SECONDS),
            max_backoff=float((config or {}).get("podMaxBackoffSeconds") or MAX_BACKOFF_SECONDS))
        self.nominator = Nominator()
        self.metrics = metrics or SchedulerMetrics()
        self.metrics.watch_queue(self.queue)
        # One recorder per profile, reporting as the profile's schedulerName (upstream's recorder factory).
        self.recorders = {name: recorder or EventRecorder(client, component=name, clock=clock)
                          for name in self.profiles}
        self.recorder = self.recorders.get(DEFAULT_SCHEDULER_NAME) or next(iter(self.recorders.values()))
        self._binder = ThreadPoolExecutor(bind_workers, thread_name_prefix="scheduler-bind")
        self._snapshot = Snapshot()
        self._next_start_index = 0
        informers.informer("v1", "pods").add_event_handler(
            on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)
        informers.informer("v1", "nodes").add_event_handler(
            on_add=self._node_added, on_update=self._node_updated, on_delete=self._node_deleted)
        self.listers = Listers(
            services=informers.informer("v1", "services").lister(),
            replication_controllers=informers.informer("v1", "replicationcontrollers").lister(),
            replica_sets=informers.informer("apps/v1", "replicasets").lister(),
            stateful_sets=informers.informer("apps/v1", "statefulsets").lister(),
            namespaces=informers.informer("v1", "namespaces").lister(),
            pod_disruption_budgets=informers.informer("policy/v1", "poddisruptionbudgets").lister(),
            persistent_volume_claims=informers.informer("v1", "persistentvolumeclaims").lister(),
            persistent_volumes=informers.informer("v1", "persistentvolumes").lister(),
            storage_classes=informers.informer("storage.k8s.io/v1", "storageclasses").lister())
        # Upstream VolumeBinding's EventsToRegister: a claim, volume or class that came or changed may let
        # the pods it rejected in.
        for api_version, plural, event in (("v1", "persistentvolumeclaims", "PersistentVolumeClaimChange"),
                                           ("v1", "persistentvolumes", "PersistentVolumeChange"),
                                           ("storage.k8s.io/v1", "storageclasses", "StorageClassChange")):
            informers.informer(api_version, plural).add_event_handler(
                on_add=lambda obj, event=event: self._volume_changed(event),
                on_update=lambda old, new, event=event: self._volume_changed(event),
                on_delete=lambda obj: None)

    # -- informer handlers (upstream eventhandlers.go) ------------------------------------------------------

    def _responsible(self, pod: Mapping[str, Any]) -> bool:
        return scheduler_name(pod) in self.profiles

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if _terminal(pod):
            return
        if _assigned(pod):
            self.cache.add_pod(pod)
            self._assigned_pod_changed("AssignedPodAdd", None, pod)
        elif self._responsible(pod):
            self.queue.add(pod)
            self.nominator.add(pod)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if _assigned(new):
            if not _assigned(old):
                self.queue.delete(new)
                self.nominator.delete(new)
            if _terminal(new):
                self.cache.remove_pod(new)
                self.queue.move_all_to_active_or_backoff("AssignedPodDelete")
            else:
                self.cache.update_pod(new)
                if not _assigned(old):
                    self._assigned_pod_changed("AssignedPodAdd", None, new)
                elif _pod_labels(old) != _pod_labels(new):
                    self._assigned_pod_changed("AssignedPodUpdate", old, new)
        elif self._responsible(new) and not _terminal(new) and not self.cache.is_assumed(new):
            self.queue.update(old, new)
            self.nominator.update(old, new)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        if _assigned(pod):
            self.cache.remove_pod(pod)
            self.queue.move_all_to_active_or_backoff("AssignedPodDelete")
        else:
            self.queue.delete(pod)
            self.nominator.delete(pod)

    def _assigned_pod_changed(self, event: str, old: dict[str, Any] | None, new: dict[str, Any]) -> None:
        """A bound pod came or changed its labels: retry the pods PodTopologySpread rejected, and those
        InterPodAffinity rejected if its hint says this pod may let them in (upstream AssignedPodAdd /
        AssignedPodUpdate)."""
        self.queue.move_all_to_active_or_backoff(event, plugins=POD_TOPOLOGY_PLUGINS, hints={
            INTER_POD_AFFINITY: lambda pending: pod_may_fit_after_pod_change(pending, old, new)})

    def _node_added(self, node: dict[str, Any]) -> None:
        self.cache.add_node(node)
        self.queue.move_all_to_active_or_backoff("NodeAdd")

    def _node_deleted(self, node: dict[str, Any]) -> None:
        self.cache.remove_node(node)
        self.queue.move_all_to_active_or_backoff("NodeDelete", plugins=POD_TOPOLOGY_PLUGINS)

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.cache.update_node(new)
        if _node_scheduling_properties(old) != _node_scheduling_properties(new):
            self.queue.move_all_to_active_or_backoff("NodeUpdate")

    def _volume_changed(self, event: str) -> None:
        self.queue.move_all_to_active_or_backoff(event, plugins=VOLUME_PLUGINS)

    def _recorder_for(self, pod: Mapping[str, Any]) -> EventRecorder:
        return self.recorders.get(scheduler_name(pod), self.recorder)

    # -- the loop ----------------------------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """Wait for the informers' first lists, then schedule until `stop`; then stop binding and events."""
        log.info("starting the scheduler (profiles: %s)", ", ".join(self.profiles))
        try:
            while not self.informers.wait_for_sync(SYNC_WAIT_SECONDS):
                if stop.is_set():
                    return
            while not stop.is_set():
                info = self.queue.pop(timeout=POP_TIMEOUT_SECONDS)
                if info is not None:
                    self.schedule_cycle(info)
        finally:
            self.queue.close()
            self._binder.shutdown(wait=True, cancel_futures=False)
            for recorder in set(self.recorders.values()):
                recorder.shutdown(RECORDER_SHUTDOWN_SECONDS)
            log.info("scheduler stopped")

    def schedule_cycle(self, info: QueuedPodInfo) -> None:
        """One scheduling cycle for a popped pod (upstream ScheduleOne)."""
        pod = info.pod
        cycle = self.queue.scheduling_cycle
        if Pod(pod).metadata.deletion_timestamp or self.cache.is_assumed(pod):
            self.queue.done(info.key)
            return
        profile = self.profiles[scheduler_name(pod)]
        started = self.clock.monotonic()
        self._snapshot = self.cache.snapshot(self._snapshot)
        try:
            result = schedule_one(pod, self._snapshot, profile, self.rng, start_index=self._next_start_index,
                                  nominated=self.nominator.snapshot(), listers=self.listers)
        except SchedulingError as exc:
            self.metrics.attempt(ERROR, profile.scheduler_name, self.clock.monotonic() - started)
            self._failed(info, cycle, str(exc), unschedulable=False)
            return
        if self._snapshot.node_list:
            self._next_start_index = (self._next_start_index + result.evaluated_nodes) % len(self._snapshot.node_list)
        if result.node is None:
            assert result.fit_error is not None
            nominated = None
            if result.post_filter_result is not None:
                nominated = result.post_filter_result.nominated_node_name
                if nominated:
                    try:
                        self._preempt(pod, nominated, result.post_filter_result)
                    except ApiError as exc:
                        self.metrics.attempt(ERROR, profile.scheduler_name, self.clock.monotonic() - started)
                        self._failed(info, cycle, str(exc), unschedulable=False)
                        return
            self.metrics.attempt(UNSCHEDULABLE_RESULT, profile.scheduler_name, self.clock.monotonic() - started)
            self._failed(info, cycle, result.fit_error.message(), unschedulable=True,
                         reasons=result.fit_error.reasons, plugins=result.fit_error.plugins,
                         nominated_node=nominated)
            return
        try:
            self.cache.assume_pod(pod, result.node)
        except ValueError as exc:
            self._failed(info, cycle, str(exc), unschedulable=False)
            return
        self.nominator.delete(pod)
        self._binder.submit(self._bind, info, cycle, result.node, profile.scheduler_name, started)

    def _bind(self, info: QueuedPodInfo, cycle: int, node: str, profile: str, started: float) -> None:
        """The binding cycle (upstream bindingCycle + DefaultBinder)."""
        pod = info.pod
        namespace, name = namespace_of(pod), name_of(pod)
        body = {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name, "namespace": namespace,
                                                                     "uid": Pod(pod).metadata.uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": node}}
        try:
            for claim in claims_to_annotate(pod, self.listers, node):  # VolumeBinding's PreBind
                self.client.patch(resource_path("v1", "persistentvolumeclaims", namespace=namespace,
                                                name=name_of(claim)),
                                  {"metadata": {"annotations": {ANN_SELECTED_NODE: node}}})
            self.client.create(resource_path("v1", "pods", namespace=namespace, name=name, subresource="binding"),
                               body)
        except Exception as exc:  # noqa: BLE001 - any failure (API answer or connection) requeues the pod
            self.cache.forget_pod(pod)
            self.metrics.attempt(ERROR, profile, self.clock.monotonic() - started)
            self.queue.move_all_to_active_or_backoff("AssignedPodDelete")
            self._failed(info, cycle, f'running Bind plugin "DefaultBinder": {exc}', unschedulable=False,
                         nominated_node="")
            return
        self.metrics.attempt(SCHEDULED, profile, self.clock.monotonic() - started)
        self.queue.done(info.key)
        self._recorder_for(pod).event(pod, "Normal", "Scheduled",
                                      f"Successfully assigned {namespace}/{name} to {node}")

    def _preempt(self, preemptor: Mapping[str, Any], node: str, result: PostFilterResult) -> None:
        """Carry out DefaultPreemption's decision (upstream prepareCandidate): evict the victims, drop the
        nominations of lower-priority pods nominated to `node`. An ApiError fails the cycle (retried)."""
        uid = Pod(preemptor).metadata.uid
        condition = {"type": DISRUPTION_TARGET, "status": "True", "reason": PREEMPTION_BY_SCHEDULER,
                     "message": f"{scheduler_name(preemptor)}: preempting to accommodate a higher priority pod"}
        for victim in result.victims:
            if Pod(victim).metadata.deletion_timestamp:
                continue  # its graceful deletion has started already
            path = resource_path("v1", "pods", namespace=namespace_of(victim), name=name_of(victim))
            try:
                conditions = [dict(c.raw) for c in Pod(victim).status.conditions if c.type == DISRUPTION_TARGET]
                if set_condition(conditions, condition, now=self.clock.now()):
                    self.client.patch(f"{path}/status", {"status": {"conditions": conditions}},
                                      patch_type="strategic")
                self.client.delete(path)
            except NotFound:
                continue  # gone meanwhile
            log.info("preempted %s/%s on %s for %s/%s", namespace_of(victim), name_of(victim), node,
                     namespace_of(preemptor), name_of(preemptor))
            self._recorder_for(preemptor).event(victim, "Normal", "Preempted",
                                                f"Preempted by pod {uid} on node {node}")
        for pod in result.clear_nominations:
            self.nominator.delete(pod)
            self._binder.submit(self._update_status, pod, None, "")

    def _failed(self, info: QueuedPodInfo, cycle: int, message: str, *, unschedulable: bool,
                reasons: frozenset[str] = frozenset(), plugins: frozenset[str] = frozenset(),
                nominated_node: str | None = None) -> None:
        """upstream handleSchedulingFailure: event, nomination (None: unchanged, "": none), back to the
        queue, PodScheduled=False (with the nomination)."""
        pod = info.pod
        log.info("unable to schedule %s/%s: %s", namespace_of(pod), name_of(pod), message)
        self._recorder_for(pod).event(pod, "Warning", "FailedScheduling", message)
        if nominated_node is not None:
            self.nominator.add(pod, nominated_node)
        self.queue.add_unschedulable_if_not_present(info, cycle, unschedulable=unschedulable, reasons=reasons,
                                                    plugins=plugins)
        condition = {"type": "PodScheduled", "status": "False", "lastProbeTime": None,
                     "reason": "Unschedulable" if unschedulable else "SchedulerError", "message": message}
        self._binder.submit(self._update_status, pod, condition, nominated_node)

    def _update_status(self, pod: Mapping[str, Any], condition: dict[str, Any] | None,
                       nominated_node: str | None) -> None:
        """Upstream updatePod: write the PodScheduled condition and `status.nominatedNodeName` (None: leave
        it, "": remove it) through pods/status, unless neither changes."""
        status: dict[str, Any] = {}
        if condition is not None:
            existing = get_condition(pod, "PodScheduled")
            conditions = [dict(existing)] if existing else []
            if set_condition(conditions, condition, now=self.clock.now()):
                status["conditions"] = conditions
        current = Pod(pod).status.nominated_node_name
        if nominated_node is not None and nominated_node != current:
            status["nominatedNodeName"] = nominated_node or None
        if not status:
            return
        path = resource_path("v1", "pods", namespace=namespace_of(pod), name=name_of(pod), subresource="status")
        try:
            self.client.patch(path, {"status": status}, patch_type="strategic")
        except NotFound:
            pass  # deleted meanwhile
        except ApiError as exc:
            log.warning("updating the PodScheduled condition of %s/%s: %s", namespace_of(pod), name_of(pod), exc)
