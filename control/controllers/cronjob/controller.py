"""The CronJob controller: start a Job from a CronJob's template at each scheduled time, keep the status
(active, lastScheduleTime, lastSuccessfulTime) and the history limits.

Upstream: pkg/controller/cronjob/cronjob_controllerv2.go (`ControllerV2`: a CronJob informer and a Job
informer whose handlers enqueue the controlling CronJob; `sync` → `syncCronJob` → status update →
`AddAfter(key, next schedule)`; `cleanupFinishedJobs`). The decisions are schedule.py (pure, with
the clock passed in, so unit tests run whole schedules on a fake clock).

sync(key): read the CronJob and the Jobs it controls (by controller reference, as upstream v2: no
adoption), plan, delete the Jobs Replace replaces (Background propagation), create the due Job (an
AlreadyExists is that time already started, not an error) and add it to `status.active`, prune finished
Jobs past successfulJobsHistoryLimit / failedJobsHistoryLimit, write the status if it changed, record the
plan's events, and come back at the next scheduled time (+0.1 s). Events: SuccessfulCreate "Created job
NAME", FailedCreate, SuccessfulDelete "Deleted job NAME", SawCompletedJob, MissSchedule,
TooManyMissedTimes, JobAlreadyActive, UnparseableSchedule (upstream's reasons).

Departure: a running Job of ours with the scheduled-timestamp annotation missing from `status.active`
(a status write lost after the create) is put back in the list, where upstream only records UnexpectedJob.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from control.api.typed import CronJob, Job
from control.apimachinery.meta import controller_ref, key_of, new_controller_ref, split_key
from control.client.errors import ApiError, Conflict, NotFound
from control.client.events import EventRecorder
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.cronjob.schedule import plan_sync
from control.controllers.shared.base import APIClient, Controller
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-cron-job-syncs


class CronJobController(Controller):
    name = "cronjob"

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, recorder: EventRecorder | None = None,
                 clock: Clock | None = None) -> None:
        recorder = recorder or EventRecorder(client, component="cronjob-controller", clock=clock)
        super().__init__(client, informers, workers=workers, queue=queue, recorder=recorder, clock=clock)
        self.clock: Clock = clock or RealClock()
        cronjobs, jobs = informers.informer("batch/v1", "cronjobs"), informers.informer("batch/v1", "jobs")
        self.cronjobs, self.jobs = cronjobs.lister(), jobs.lister()
        cronjobs.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update, on_delete=self.enqueue)
        jobs.add_event_handler(on_add=self.on_job, on_update=lambda old, new: self.on_job(new), on_delete=self.on_job)

    def on_job(self, job: Mapping[str, Any]) -> None:
        ref = controller_ref(job)
        if ref is not None and ref.get("kind") == "CronJob":
            self.queue.add(f"{Job(job).metadata.namespace}/{ref.get('name')}")

    @staticmethod
    def _path(namespace: str, plural: str, name: str | None = None, subresource: str | None = None) -> str:
        return resource_path("batch/v1", plural, namespace=namespace, name=name, subresource=subresource)

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        cronjob = self.cronjobs.get(namespace, name)
        if cronjob is None:
            return
        uid = CronJob(cronjob).metadata.uid
        jobs = [j for j in self.jobs.list(namespace)
                if (ref := Job(j).metadata.controller_ref) is not None and ref.uid == uid]
        typed = {**cronjob, "apiVersion": "batch/v1", "kind": "CronJob"}
        reference = new_controller_ref(cronjob, api_version="batch/v1", kind="CronJob")
        plan = plan_sync(cronjob, jobs, self.clock.now(), controller_ref=reference)
        status = plan.status
        for job in plan.delete:
            self._delete_job(typed, job)
        if plan.create is not None:
            try:
                made = self.client.create(self._path(namespace, "jobs"), plan.create)
            except Conflict as exc:
                if exc.reason != "AlreadyExists":
                    raise
                made = None  # this time was started already (by us before a restart, or by someone else)
            except ApiError as exc:
                self.recorder.eventf(typed, "Warning", "FailedCreate", "Error creating job: %s", exc.message)
                raise
            if made is not None:
                self.recorder.eventf(typed, "Normal", "SuccessfulCreate", "Created job %s", made["metadata"]["name"])
                meta = made["metadata"]
                status["active"] = [*status.get("active", ()), {
                    "kind": "Job", "namespace": namespace, "name": meta["name"], "uid": meta["uid"],
                    "apiVersion": "batch/v1", "resourceVersion": meta.get("resourceVersion")}]
        for job in plan.prune:
            self._delete_job(typed, job)
        for event_type, reason, message in plan.events:
            self.recorder.event(typed, event_type, reason, message)
        if status != CronJob(cronjob).status.raw:
            self.client.update(self._path(namespace, "cronjobs", name, "status"), {**typed, "status": status})
        if plan.requeue is not None:
            self.queue.add_after(key, max(plan.requeue, 0.0))

    def _delete_job(self, typed: Mapping[str, Any], job: Mapping[str, Any]) -> None:
        """deleteJob: Background propagation (the Job's pods go too), event SuccessfulDelete."""
        name = Job(job).metadata.name
        try:
            self.client.delete(self._path(str(job["metadata"]["namespace"]), "jobs", name),
                               propagation_policy="Background")
        except NotFound:
            return
        except ApiError as exc:
            self.recorder.eventf(typed, "Warning", "FailedDelete", "Deleted job: %s", exc.message)
            raise
        self.recorder.eventf(typed, "Normal", "SuccessfulDelete", "Deleted job %s", name)
        log.debug("deleted job %s of %s", name, key_of(typed))
