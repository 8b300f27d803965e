"""The TTL-after-finished controller: delete a finished Job `ttlSecondsAfterFinished` seconds after it
finished, with its pods.

Upstream: pkg/controller/ttlafterfinished/ttlafterfinished_controller.go (`processJob`: skip a Job that
is unfinished, has no TTL or is being deleted; `processTTL` → `timeLeft` from the finish time, which is
the Complete/Failed condition's lastTransitionTime (`jobFinishTime`); when expired, read the Job again
uncached and check once more — its TTL may have been changed — then delete it with propagationPolicy
Foreground and a UID precondition; otherwise enqueue it after the time left). Its name in
`--controllers` is "ttl-after-finished".
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.api.typed import Job
from control.apimachinery.meta import split_key, timestamp_or_none
from control.client.errors import NotFound
from control.client.informer import InformerFactory
from control.client.paths import resource_path
from control.client.workqueue import RateLimitingQueue
from control.controllers.shared.base import APIClient, Controller
from control.controllers.shared.helpers import job_finished_condition
from control.util.clock import Clock, RealClock

log = logging.getLogger(__name__)

DEFAULT_WORKERS = 5  # upstream --concurrent-ttl-after-finished-syncs


def finish_time(job: Mapping[str, Any]) -> datetime | None:
    """jobFinishTime: when the Complete or Failed condition became True; None while unfinished."""
    condition = job_finished_condition(job)
    return None if condition is None else timestamp_or_none(condition.get("lastTransitionTime"))


def time_left(job: Mapping[str, Any], now: datetime) -> float | None:
    """Seconds until the Job expires (<= 0: delete it now); None when it never expires (yet): no TTL,
    unfinished, or being deleted (needsCleanup)."""
    ttl = Job(job).spec.ttl_seconds_after_finished
    if ttl is None or Job(job).metadata.deletion_timestamp:
        return None
    finished = finish_time(job)
    if finished is None:
        return None
    return int(ttl) - (now - finished).total_seconds()


class TTLAfterFinishedController(Controller):
    name = "ttl-after-finished"

    def __init__(self, client: APIClient, informers: InformerFactory, *, workers: int = DEFAULT_WORKERS,
                 queue: RateLimitingQueue[str] | None = None, clock: Clock | None = None) -> None:
        super().__init__(client, informers, workers=workers, queue=queue, clock=clock)
        self.clock: Clock = clock or RealClock()
        jobs = informers.informer("batch/v1", "jobs")
        self.jobs = jobs.lister()
        jobs.add_event_handler(on_add=self.enqueue, on_update=self.enqueue_update)

    def sync(self, key: str) -> None:
        namespace, name = split_key(key)
        job = self.jobs.get(namespace, name)
        if job is None or (left := time_left(job, self.clock.now())) is None:
            return
        if left > 0:
            self.queue.add_after(key, left)
            return
        path = resource_path("batch/v1", "jobs", namespace=namespace, name=name)
        try:
            fresh = self.client.get(path)  # the TTL may have changed since the cache saw it
        except NotFound:
            return
        if (left := time_left(fresh, self.clock.now())) is None:
            return
        if left > 0:
            self.queue.add_after(key, left)
            return
        log.info("cleaning up job %s: its TTL expired", key)
        try:
            self.client.delete(path, propagation_policy="Foreground",
                               preconditions={"uid": Job(fresh).metadata.uid})
        except NotFound:
            return
