"""The Job controller: run pods of a Job's template to completion, count every finished pod exactly once,
and finish the Job (Complete or Failed) as upstream does.

Upstream: pkg/controller/job/job_controller.go (`syncJob`, `manageJob`, `trackJobStatusAndRemoveFinalizers`,
`flushUncountedAndRemoveFinalizers`, `removeTrackingFinalizerFromPods`, the pod handlers with expectations,
`orphanQueue` for pods whose Job is gone). The decisions are decisions.py (pure), the
status shapes status.py.

sync(key), in upstream's order:
1. The Job is gone → forget its records. Our own last status write not yet in the cache → wait for its
   event (else a stale status could count a pod twice or create one pod too many).
2. Claim the pods (shared/controller_ref_manager.py), terminal ones included: they are counted here.
3. A finished Job: only remove leftover tracking finalizers.
4. Finished pods that still carry `batch.kubernetes.io/job-tracking` and are not yet recorded go into
   `status.uncountedTerminatedPods`; the failure (pod failure policy FailJob, backoffLimit,
   activeDeadlineSeconds) or success criteria set FailureTarget / SuccessCriteriaMet; suspend sets
   Suspended; `startTime` is set (again on resume). Written first (status write 1).
5. Act: a failing, succeeded or suspended Job's active pods are deleted; otherwise, once the expectations
   of the last round are met, manage: create (after the failed-pod back-off) or delete pods.
6. Remove the finalizer of every recorded pod, then move them to `succeeded`/`failed` (Indexed:
   `completedIndexes`), set active/ready/terminating, and once no pod is active or terminating turn
   FailureTarget into Failed or SuccessCriteriaMet into Complete (+ completionTime). Written second.
7. Sync again when the back-off or the active deadline ends.

Events (upstream's reasons and texts): the pod writes' (SuccessfulCreate, FailedCreate, SuccessfulDelete,
FailedDelete, through the shared pod control, shared/pod_control.py), Completed "Job completed", Warning
<reason> <message> when it fails (BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy), Suspended
"Job suspended", Resumed "Job resumed".

Departures: the failed-pod back-off records live in memory (as upstream's backoff store), so a restarted
controller forgets them; pods are listed by namespace and filtered here; no metrics.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from control.api.batch import JOB_TRACKING_FINALIZER
from control.api.disruption import is_pod_ready
from control.api.typed import Job, Pod, TypedObject
from control.apimachinery.labels import SelectorError, selector_from_label_selector
from control.apimachinery.meta import controller_ref, format_timestamp, key_of, new_controller_ref, split_key
from control.client.errors import ApiError, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.job.decisions import (
    COMPLETIONS_REACHED,
    DEFAULT_BACKOFF_BASE,
    DEFAULT_BACKOFF_CAP,
    BackoffRecord,
    Manage,
    backoff_remaining,
    completion_index,
    deadline_remaining,
    failure,
    finish_time,
    format_indexes,
    has_tracking_finalizer,
    is_active,
    is_finished,
    is_indexed,
    is_terminating,
    job_pod,
    manage_indexed,
    manage_non_indexed,
    new_finished_pods,
    parse_indexes,
    succeeded_criteria,
    uid_of,
    update_backoff,
)
from control.controllers.job.status import (
    RESUMED,
    SUSPENDED,
    copy_status,
    counts,
    ensure_condition,
    set_uncounted,
    status_changed,
    uncounted,
)
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.controller_ref_manager import ControllerRefManager, resolve_controller_ref
from control.controllers.shared.controller_utils import BURST_REPLICAS, deletion_order
from control.controllers.shared.expectations import ControllerExpectations, UIDTrackingControllerExpectations
from control.controllers.shared.helpers import condition_true, status_condition
from control.controllers.shared.pod_control import PodControl
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-job-syncs
ORPHAN_PREFIX = "orphan-pod:"  # queue keys of pods whose Job is gone (upstream's orphanQueue)
JOBS = ("batch/v1", "jobs")


def _rv(obj: Mapping[str, Any]) -> int:
    try:
        return int(TypedObject(obj).metadata.resource_version or 0)
    except ValueError:
        return 0


class JobController(Controller):
    name = "job"

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 backoff_base: float = DEFAULT_BACKOFF_BASE, backoff_cap: float = DEFAULT_BACKOFF_CAP,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        recorder = recorder or EventRecorder(client, component="job-controller", clock=clock)
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        self.backoff_base, self.backoff_cap = backoff_base, backoff_cap
        self.expectations = UIDTrackingControllerExpectations(ControllerExpectations(clock=self.clock))
        self.pod_control = PodControl(client, self.recorder, self.expectations, name=self.name)
        self._lock = threading.Lock()
        self._backoff: dict[str, BackoffRecord] = {}
        self._removed: dict[str, set[str]] = {}  # job key → uids whose finalizer we removed, not yet seen so
        self._written: dict[str, int] = {}  # job key → resourceVersion of our last status write
        jobs, pods = informers.informer(*JOBS), informers.informer("v1", "pods")
        self.jobs, self.pods = jobs.lister(), pods.lister()
        jobs.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.on_job_delete)
        pods.add_event_handler(on_add=self.on_pod_add, on_update=self.on_pod_update, on_delete=self.on_pod_delete)

    # -- handlers ---------------------------------------------------------------------------------------

    def on_job_delete(self, job: Mapping[str, Any]) -> None:
        self._forget(key_of(job))
        self.queue.add(key_of(job))

    def _forget(self, key: str) -> None:
        self.expectations.delete_expectations(key)
        with self._lock:
            self._backoff.pop(key, None)
            self._removed.pop(key, None)
            self._written.pop(key, None)

    def _job_of(self, pod: Mapping[str, Any]) -> dict[str, Any] | None:
        return resolve_controller_ref(self.jobs, Pod(pod).metadata.namespace or "",
                                      controller_ref(pod), "Job")

    def _observe(self, pod: Mapping[str, Any], *, gone: bool) -> None:
        job = self._job_of(pod)
        if job is None:
            ref = controller_ref(pod)
            if ref is not None and ref.get("kind") == "Job" and has_tracking_finalizer(pod) and not gone:
                self.queue.add(ORPHAN_PREFIX + key_of(pod))
            return
        key = key_of(job)
        if gone or not has_tracking_finalizer(pod):
            with self._lock:
                if key in self._removed:
                    self._removed[key].discard(uid_of(pod))
        self.queue.add(key)

    def on_pod_add(self, pod: Mapping[str, Any]) -> None:
        job = self._job_of(pod)
        if job is not None:
            self.expectations.creation_observed(key_of(job))
        if Pod(pod).metadata.deletion_timestamp and job is not None:
            self.expectations.deletion_observed(key_of(job), key_of(pod))
        self._observe(pod, gone=False)

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        if TypedObject(old).metadata.resource_version == TypedObject(new).metadata.resource_version:
            return
        if TypedObject(new).metadata.deletion_timestamp and (job := self._job_of(new)) is not None:
            self.expectations.deletion_observed(key_of(job), key_of(new))
        self._observe(new, gone=False)

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None:
        if (job := self._job_of(pod)) is not None:
            self.expectations.deletion_observed(key_of(job), key_of(pod))
        self._observe(pod, gone=True)

    # -- sync -------------------------------------------------------------------------------------------

    def _path(self, job: Mapping[str, Any], subresource: str | None = None) -> str:
        metadata = job.get("metadata") or {}
        return resource_path(*JOBS, namespace=metadata.get("namespace"), name=metadata.get("name"),
                             subresource=subresource)

    @staticmethod
    def _typed(job: Mapping[str, Any]) -> dict[str, Any]:
        return {**job, "apiVersion": "batch/v1", "kind": "Job"}

    def sync(self, key: str) -> None:
        if key.startswith(ORPHAN_PREFIX):
            self._release_orphan(key[len(ORPHAN_PREFIX):])
            return
        namespace, name = split_key(key)
        job = self.jobs.get(namespace, name)
        if job is None:
            self._forget(key)
            return
        with self._lock:
            written = self._written.get(key, 0)
        if _rv(job) < written:
            return  # the cache has not seen our last write yet; its event syncs this key again
        try:
            selector = selector_from_label_selector(Job(job).spec.raw.get("selector"))
        except SelectorError as exc:
            log.error("job %s has an invalid selector: %s", key, exc)
            return
        pods = self._claim(job, selector, self.pods.list(namespace))
        if is_finished(job):
            self._remove_finalizers(key, [p for p in pods if has_tracking_finalizer(p)])
            return
        self._sync_job(key, job, pods)

    def _claim(self, job: Mapping[str, Any], selector: Any, pods: list[Any]) -> list[Any]:
        def can_adopt() -> None:
            fresh = self.client.get(self._path(job))
            if Job(fresh).metadata.uid != Job(job).metadata.uid:
                raise ValueError(f"original Job {key_of(job)} is gone")
            if Job(fresh).metadata.deletion_timestamp:
                raise ValueError(f"{key_of(job)} has just been deleted")

        if selector.empty:
            return []
        reference = new_controller_ref(job, api_version="batch/v1", kind="Job")
        manager = ControllerRefManager(self.client, owner=job, reference=reference, selector=selector,
                                       child_api_version="v1", child_plural="pods", can_adopt=can_adopt)
        return manager.claim(pods)

    def _sync_job(self, key: str, job: dict[str, Any], pods: list[Any]) -> None:
        now = self.clock.now()
        spec = job.get("spec") or {}
        status = copy_status(job)
        typed = self._typed(job)
        with self._lock:
            removed = frozenset(self._removed.get(key, ()))
        completions = spec.get("completions")
        by_uid = {uid_of(p): p for p in pods}
        pending_succeeded, pending_failed = uncounted(status)
        completed = parse_indexes(status.get("completedIndexes"), completions) if is_indexed(job) else frozenset()
        succeeded_indexes = completed | {i for u in pending_succeeded if u in by_uid
                                         and (i := completion_index(by_uid[u])) is not None}
        finished = new_finished_pods(job, pods, counted=frozenset(pending_succeeded + pending_failed),
                                     removed=removed, succeeded_indexes=succeeded_indexes)
        pending_succeeded += [uid_of(p) for p in finished.succeeded]
        pending_failed += [uid_of(p) for p in finished.failed]
        succeeded_indexes |= {i for p in finished.succeeded if (i := completion_index(p)) is not None}
        done_succeeded, done_failed = counts(status)
        succeeded_total, failed_total = done_succeeded + len(pending_succeeded), done_failed + len(pending_failed)
        active = [p for p in pods if is_active(p)]
        terminating = [p for p in pods if is_terminating(p)]
        suspended = bool(spec.get("suspend"))

        # 4. Record what finished and what the job's fate is, before acting on pods.
        if not suspended and not status.get("startTime"):
            status["startTime"] = format_timestamp(now)
        events: list[tuple[str, str, str]] = []
        if not condition_true({"status": status}, "FailureTarget") and not condition_true({"status": status},
                                                                                          "SuccessCriteriaMet"):
            cause = failure({**job, "status": status}, failed=failed_total, active=active,
                            fail_job_message=finished.fail_job_message, now=now)
            if cause is not None:
                ensure_condition(status, "FailureTarget", "True", *cause, now)
            elif succeeded_criteria(job, succeeded=succeeded_total, active=len(active)):
                ensure_condition(status, "SuccessCriteriaMet", "True", *COMPLETIONS_REACHED, now)
        failing = condition_true({"status": status}, "FailureTarget")
        succeeding = condition_true({"status": status}, "SuccessCriteriaMet")
        if not failing and not succeeding:
            if suspended and ensure_condition(status, "Suspended", "True", *SUSPENDED, now):
                events.append(("Normal", "Suspended", SUSPENDED[1]))
            elif not suspended and ensure_condition(status, "Suspended", "False", *RESUMED, now):
                status["startTime"] = format_timestamp(now)  # upstream restarts the active deadline on resume
                events.append(("Normal", "Resumed", RESUMED[1]))
        set_uncounted(status, pending_succeeded, pending_failed)
        job = self._write_status(key, job, status)
        status = copy_status(job)
        for event_type, reason, message in events:
            self.recorder.event(typed, event_type, reason, message)
        if finished.succeeded or finished.failed:
            with self._lock:
                self._backoff[key] = update_backoff(self._backoff.get(key, BackoffRecord()),
                                                    succeeded=[finish_time(p, now) for p in finished.succeeded],
                                                    failed=[finish_time(p, now) for p in finished.failed])

        # 5. Act on pods.
        errors: list[Exception] = []
        created = deleted = 0
        requeue: list[float] = []
        if failing or succeeding or suspended:
            deleted, error = self._delete_pods(key, typed, active)
            errors += [error] if error else []
        elif self.expectations.satisfied_expectations(key):
            decision = self._decide(job, active, terminating, succeeded_total, succeeded_indexes)
            deleted, error = self._delete_pods(key, typed, list(decision.delete))
            errors += [error] if error else []
            if decision.create:
                with self._lock:
                    wait = backoff_remaining(self._backoff.get(key, BackoffRecord()), now, base=self.backoff_base,
                                             cap=self.backoff_cap)
                if wait > 0:
                    requeue.append(wait)
                else:
                    created, error = self._create_pods(key, job, decision)
                    errors += [error] if error else []

        # 6. Remove the finalizers of what was recorded, then count it.
        recorded = set(pending_succeeded) | set(pending_failed)
        # What this call removed counts even if the pod informer has meanwhile seen the removal and dropped the
        # uid from `_removed` again (upstream counts the uids removeTrackingFinalizerFromPods returns).
        to_release = [p for p in pods if uid_of(p) in recorded or p in finished.ignored]
        just_removed = self._remove_finalizers(key, to_release)
        with self._lock:
            removed = frozenset(self._removed.get(key, ())) | just_removed

        def countable(uid: str) -> bool:
            pod = by_uid.get(uid)
            return pod is None or not has_tracking_finalizer(pod) or uid in removed

        left_succeeded = [u for u in pending_succeeded if not countable(u)]
        left_failed = [u for u in pending_failed if not countable(u)]
        status["succeeded"] = done_succeeded + len(pending_succeeded) - len(left_succeeded)
        status["failed"] = done_failed + len(pending_failed) - len(left_failed)
        set_uncounted(status, left_succeeded, left_failed)
        if is_indexed(job):
            counted_indexes = completed | {i for u in pending_succeeded if countable(u) and u in by_uid
                                           and (i := completion_index(by_uid[u])) is not None}
            if counted_indexes or status.get("completedIndexes"):
                status["completedIndexes"] = format_indexes(counted_indexes)
        still_active = len(active) - deleted + created
        status["active"] = still_active
        status["ready"] = sum(1 for p in active if is_pod_ready(p))
        status["terminating"] = len(terminating) + deleted
        if still_active == 0 and status["terminating"] == 0 and not left_succeeded and not left_failed:
            self._finish(status, typed, failing=failing, succeeding=succeeding, now=now)
        self._write_status(key, job, status)

        # 7. Come back when the back-off or the deadline ends.
        if not (failing or succeeding or suspended) and (remaining := deadline_remaining(job, now)) is not None:
            requeue.append(max(remaining, 0.0) + 0.01)
        if requeue:
            self.queue.add_after(key, min(requeue))
        if errors:
            raise errors[0]

    def _finish(self, status: dict[str, Any], typed: Mapping[str, Any], *, failing: bool, succeeding: bool,
                now: datetime) -> None:
        """FailureTarget → Failed, SuccessCriteriaMet → Complete (+ completionTime), with their events."""
        if failing:
            target = status_condition(status, "FailureTarget") or {}
            reason, message = str(target.get("reason") or ""), str(target.get("message") or "")
            if ensure_condition(status, "Failed", "True", reason, message, now):
                self.recorder.event(typed, "Warning", reason, message)
        elif succeeding:
            if ensure_condition(status, "Complete", "True", *COMPLETIONS_REACHED, now):
                status["completionTime"] = format_timestamp(now)
                self.recorder.event(typed, "Normal", "Completed", "Job completed")

    def _decide(self, job: Mapping[str, Any], active: list[Any], terminating: list[Any], succeeded: int,
                succeeded_indexes: frozenset[int]) -> Manage:
        if is_indexed(job):
            return manage_indexed(job, active, succeeded_indexes=succeeded_indexes, terminating=len(terminating))
        ordered = deletion_order(active, [0] * len(active), now=self.clock.now())
        return manage_non_indexed(job, ordered, succeeded=succeeded, terminating=len(terminating))

    def _write_status(self, key: str, job: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        """Write `status` unless unchanged; a conflict is raised (the sync is retried on a fresh cache)."""
        if not status_changed(job, status):
            return job
        written = self.client.update(self._path(job, "status"), {**self._typed(job), "status": status})
        with self._lock:
            self._written[key] = _rv(written)
        return written

    # -- pod writes -------------------------------------------------------------------------------------

    def _create_pods(self, key: str, job: Mapping[str, Any], decision: Manage) -> tuple[int, Exception | None]:
        count = min(decision.create, BURST_REPLICAS)
        reference = new_controller_ref(job, api_version="batch/v1", kind="Job")
        indexes = iter(decision.indexes)
        pods = [job_pod(job, controller_ref=reference, index=next(indexes, None) if is_indexed(job) else None)
                for _ in range(count)]
        writes = self.pod_control.sync_pods(key, self._typed(job), create=pods)
        return writes.created, writes.error

    def _delete_pods(self, key: str, typed: Mapping[str, Any], pods: list[Any]) -> tuple[int, Exception | None]:
        writes = self.pod_control.sync_pods(key, typed, delete=pods)
        return writes.deleted, writes.error

    def _remove_finalizers(self, key: str, pods: Iterable[Any]) -> frozenset[str]:
        """removeTrackingFinalizerFromPods: a JSON patch per pod, guarded by a test of the entry; a pod gone
        counts as removed. Returns the uids this call removed; raises the first other failure after trying
        every pod."""
        first: Exception | None = None
        done: set[str] = set()
        for pod in pods:
            finalizers = list(Pod(pod).metadata.finalizers)
            uid = uid_of(pod)
            with self._lock:
                if uid in self._removed.get(key, ()):
                    continue
            if JOB_TRACKING_FINALIZER not in finalizers:
                continue
            index = finalizers.index(JOB_TRACKING_FINALIZER)
            patch = [{"op": "test", "path": "/metadata/uid", "value": uid},
                     {"op": "test", "path": f"/metadata/finalizers/{index}", "value": JOB_TRACKING_FINALIZER},
                     {"op": "remove", "path": f"/metadata/finalizers/{index}"}]
            path = resource_path("v1", "pods", namespace=pod["metadata"]["namespace"], name=pod["metadata"]["name"])
            try:
                self.client.patch(path, patch, patch_type="json")
            except NotFound:
                pass
            except ApiError as exc:
                first = first or exc
                continue
            with self._lock:
                self._removed.setdefault(key, set()).add(uid)
            done.add(uid)
        if first is not None:
            raise first
        return frozenset(done)

    def _release_orphan(self, pod_key: str) -> None:
        """A pod with the tracking finalizer whose Job is gone: drop the finalizer (upstream's orphanQueue)."""
        namespace, name = split_key(pod_key)
        pod = self.pods.get(namespace, name)
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = controller_ref(pod) or {}
        try:
            job = self.client.get(resource_path(*JOBS, namespace=namespace, name=str(ref.get("name") or "")))
        except NotFound:
            job = None
        if job is not None and Job(job).metadata.uid == ref.get("uid"):
            return  # the Job exists after all: its own sync handles the pod
        self._remove_finalizers(ORPHAN_PREFIX + pod_key, [pod])
        with self._lock:
            self._removed.pop(ORPHAN_PREFIX + pod_key, None)
