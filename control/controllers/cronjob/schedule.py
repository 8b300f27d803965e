"""What the CronJob controller decides, as pure functions over (cronjob, its jobs, now): which scheduled
time is due, whether it is too late or blocked by the concurrency policy, which Jobs to create and delete,
what the status becomes, which events to record and when to look again.

Upstream: pkg/controller/cronjob/cronjob_controllerv2.go (`syncCronJob`, `cleanupFinishedJobs`,
`removeOldestJobs`, `getJobName`) and utils.go (`mostRecentScheduleTime`, `nextScheduleTime`,
`nextScheduleTimeDuration`, `getJobFromTemplate2`, `getTimeHashInMinutes`, `inActiveList`,
`getFinishedStatus`).

The schedule is standard cron (five fields) or a macro (@hourly, @daily, …), evaluated by croniter in
`spec.timeZone` (zoneinfo), UTC without one (upstream: the controller manager's local zone; slimkube's is
UTC). The API server refuses what robfig/cron refuses, and `TZ=`/`CRON_TZ=` in the schedule
(control/api/validation/batch.py).

Missed schedules as upstream: from the last schedule time (or the creation time; no earlier than
`now - startingDeadlineSeconds` when set), only the most recent missed time is started, never one per
missed time; more than 100 missed ones add the event "TooManyMissedTimes" (no storm of Jobs). A time later
than `startingDeadlineSeconds` ago is skipped with "MissSchedule". Job names are `<cronjob>-<scheduled
time in unix minutes>`, so a time is started at most once even across restarts.
"""

from __future__ import annotations

import enum
import zoneinfo
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from croniter import croniter

from control.api.batch import CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION
from control.api.typed import CronJob, Job
from control.apimachinery.meta import deep_copy, format_timestamp, timestamp_or_none
from control.controllers.shared.helpers import job_finished_condition

Obj = Mapping[str, Any]

MAX_MISSED = 100  # upstream: more missed start times than this is a warning event
NEXT_SCHEDULE_DELTA = 0.1  # upstream nextScheduleDelta: wake a little after the time, never before


class ScheduleError(ValueError):
    """An unparseable schedule or unknown time zone (the API server refuses them; old objects may not)."""


@dataclass(frozen=True)
class Schedule:
    """A parsed cron schedule in one time zone."""

    expression: str
    zone: tzinfo

    def next(self, after: datetime) -> datetime:
        """The first scheduled time strictly after `after` (robfig's Schedule.Next), timezone-aware."""
        start = after.astimezone(self.zone)
        result: datetime = croniter(self.expression, start).get_next(datetime)
        return result


def parse_schedule(cronjob: Obj) -> Schedule:
    spec = cronjob.get("spec") or {}
    expression = str(spec.get("schedule") or "")
    zone_name = spec.get("timeZone")
    try:
        zone: tzinfo = zoneinfo.ZoneInfo(zone_name) if zone_name else UTC
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        raise ScheduleError(f"invalid timeZone: {zone_name!r}: {exc}") from None
    if "TZ" in expression or not croniter.is_valid(expression):
        raise ScheduleError(f"unparseable schedule: {expression!r}")
    return Schedule(expression, zone)


def _times(cronjob: Obj) -> tuple[datetime | None, datetime | None]:
    status = cronjob.get("status") or {}
    return (timestamp_or_none(status.get("lastScheduleTime")),
            timestamp_or_none(CronJob(cronjob).metadata.creation_timestamp))


def most_recent_schedule_time(cronjob: Obj, now: datetime, schedule: Schedule, *,
                              include_deadline: bool) -> tuple[datetime, datetime | None, int]:
    """mostRecentScheduleTime: (earliest time considered, the latest scheduled time <= now or None, the
    approximate number of missed times)."""
    last, created = _times(cronjob)
    earliest = last or created or now
    deadline = CronJob(cronjob).spec.starting_deadline_seconds
    if include_deadline and deadline is not None:
        scheduling_deadline = now - timedelta(seconds=int(deadline))
        if scheduling_deadline > earliest:
            earliest = scheduling_deadline
    t1 = schedule.next(earliest)
    t2 = schedule.next(t1)
    if now < t1:
        return earliest, None, 0
    if now < t2:
        return earliest, t1, 1
    between = round((t2 - t1).total_seconds())
    if between < 1:
        raise ScheduleError("time difference between two schedules is less than 1 second")
    elapsed = int((now - t1).total_seconds())
    missed = elapsed // between + 1
    # Back to a little before the estimate, then walk: exact for irregular schedules (30 6-16/4 * * 1-5).
    potential = t1 + timedelta(seconds=(missed - 2) * between)
    recent = None
    t = schedule.next(potential)
    while t <= now:
        recent = t
        t = schedule.next(t)
    return earliest, recent, missed


def next_requeue(cronjob: Obj, now: datetime, schedule: Schedule) -> float:
    """nextScheduleTimeDuration: seconds until the next scheduled time after the most recent one, +0.1 s."""
    earliest, recent, _ = most_recent_schedule_time(cronjob, now, schedule, include_deadline=False)
    following = schedule.next(recent or earliest)
    return (following - now).total_seconds() + NEXT_SCHEDULE_DELTA


def job_name(cronjob: Obj, scheduled: datetime) -> str:
    """getJobName: `<cronjob>-<unix minutes>`."""
    return f"{CronJob(cronjob).metadata.name}-{int(scheduled.timestamp()) // 60}"


def job_from_template(cronjob: Obj, scheduled: datetime, *, controller_ref: Mapping[str, Any],
                      zone: tzinfo) -> dict[str, Any]:
    """getJobFromTemplate2: the template's labels, annotations and spec, the scheduled-timestamp annotation
    (RFC 3339 in the CronJob's zone), the controller reference."""
    template = CronJob(cronjob).spec.job_template
    annotations = dict(template.metadata.annotations)
    stamp = scheduled.astimezone(zone).isoformat(timespec="seconds")
    annotations[CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] = stamp[:-6] + "Z" if stamp.endswith("+00:00") else stamp
    metadata: dict[str, Any] = {"name": job_name(cronjob, scheduled), "annotations": annotations,
                                "ownerReferences": [dict(controller_ref)]}
    if template.metadata.labels:
        metadata["labels"] = dict(template.metadata.labels)
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": metadata, "spec": deep_copy(dict(template.spec.raw))}


# -- finished jobs ---------------------------------------------------------------------------------------

class Finished(enum.Enum):
    COMPLETE = "Complete"
    FAILED = "Failed"


def finished_status(job: Obj) -> Finished | None:
    """getFinishedStatus: the Job's Complete or Failed condition, when True."""
    condition = job_finished_condition(job)
    return None if condition is None else Finished(condition["type"])


def _start_key(job: Obj) -> tuple[int, datetime, str]:
    """byJobStartTime: jobs without a start time first, then by start time, then by name."""
    started = timestamp_or_none(Job(job).status.start_time)
    name = Job(job).metadata.name
    return (0, datetime.min.replace(tzinfo=UTC), name) if started is None else (1, started, name)


def jobs_to_prune(jobs: Iterable[Obj], limit: int | None, kind: Finished) -> list[Obj]:
    """removeOldestJobs: the oldest finished Jobs of `kind` beyond `limit` (None: keep all)."""
    if limit is None:
        return []
    finished = sorted((j for j in jobs if finished_status(j) is kind and
                       not Job(j).metadata.deletion_timestamp), key=_start_key)
    return finished[:max(0, len(finished) - limit)]


# -- one sync --------------------------------------------------------------------------------------------

@dataclass
class Plan:
    """What syncCronJob does: status to write, Job to create, Jobs to delete (Replace) and prune, events
    (type, reason, message), when to look again (seconds, None: only on a change)."""

    status: dict[str, Any]
    create: dict[str, Any] | None = None
    delete: list[Obj] = field(default_factory=list)
    prune: list[Obj] = field(default_factory=list)
    events: list[tuple[str, str, str]] = field(default_factory=list)
    requeue: float | None = None


def _reference(job: Obj) -> dict[str, Any]:
    metadata = job.get("metadata") or {}
    return {"kind": "Job", "namespace": metadata.get("namespace"), "name": metadata.get("name"),
            "uid": metadata.get("uid"), "apiVersion": "batch/v1", "resourceVersion": metadata.get("resourceVersion")}


def _rfc1123z(moment: datetime) -> str:
    return moment.strftime("%a, %d %b %Y %H:%M:%S %z")


def plan_sync(cronjob: Obj, jobs: Sequence[Obj], now: datetime, *, controller_ref: Mapping[str, Any]) -> Plan:
    """syncCronJob and cleanupFinishedJobs for one CronJob and the Jobs it controls (module notes)."""
    status = deep_copy(dict(CronJob(cronjob).status.raw))
    plan = Plan(status=status)
    by_uid = {Job(j).metadata.uid: j for j in jobs}
    # 1. The active list: drop Jobs that are gone or finished; note the last success.
    active = []
    for ref in status.get("active") or ():
        job = by_uid.get(str(ref.get("uid")))
        if job is None:
            continue
        outcome = finished_status(job)
        if outcome is None:
            active.append(ref)
            continue
        plan.events.append(("Normal", "SawCompletedJob",
                            f"Saw completed job: {job['metadata']['name']}, condition: {outcome.value}"))
        if outcome is Finished.COMPLETE:
            done = timestamp_or_none(Job(job).status.completion_time)
            last = timestamp_or_none(status.get("lastSuccessfulTime"))
            if done is not None and (last is None or done > last):
                status["lastSuccessfulTime"] = format_timestamp(done)
    listed = {str(r.get("uid")) for r in active}
    for job in jobs:  # a running Job of ours missing from the list (a lost status write): track it again
        uid = Job(job).metadata.uid
        metadata = Job(job).metadata
        if uid not in listed and finished_status(job) is None and not metadata.deletion_timestamp and (
                metadata.annotations.get(CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION)):
            active.append(_reference(job))
    if active:
        status["active"] = active
    else:
        status.pop("active", None)
    spec = cronjob.get("spec") or {}
    # 2. History limits, then: deleted, suspended or unparseable CronJobs start nothing.
    plan.prune = (jobs_to_prune(jobs, spec.get("successfulJobsHistoryLimit"), Finished.COMPLETE)
                  + jobs_to_prune(jobs, spec.get("failedJobsHistoryLimit"), Finished.FAILED))
    if CronJob(cronjob).metadata.deletion_timestamp or spec.get("suspend"):
        return plan
    try:
        schedule = parse_schedule(cronjob)
        _, scheduled, missed = most_recent_schedule_time(cronjob, now, schedule, include_deadline=True)
    except ScheduleError as exc:
        plan.events.append(("Warning", "UnparseableSchedule", str(exc)))
        return plan
    if missed > MAX_MISSED:
        plan.events.append(("Warning", "TooManyMissedTimes", f"too many missed start times: {missed}. Set or "
                            "decrease .spec.startingDeadlineSeconds or check clock skew"))
    plan.requeue = next_requeue({**cronjob, "status": status}, now, schedule)
    if scheduled is None:
        return plan
    deadline = spec.get("startingDeadlineSeconds")
    if deadline is not None and scheduled + timedelta(seconds=int(deadline)) < now:
        plan.events.append(("Warning", "MissSchedule",
                            f"Missed scheduled time to start a job: {_rfc1123z(scheduled)}"))
        return plan
    name = job_name(cronjob, scheduled)
    if any(r.get("name") == name for r in active) or timestamp_or_none(status.get("lastScheduleTime")) == scheduled:
        return plan
    policy = spec.get("concurrencyPolicy") or "Allow"
    if policy == "Forbid" and active:
        plan.events.append(("Normal", "JobAlreadyActive",
                            "Not starting job because prior execution is running and concurrency policy is Forbid"))
        return plan
    if policy == "Replace" and active:
        plan.delete = [by_uid[str(r.get("uid"))] for r in active if str(r.get("uid")) in by_uid]
        active = []
        status.pop("active", None)
    plan.create = job_from_template(cronjob, scheduled, controller_ref=controller_ref, zone=schedule.zone)
    status["lastScheduleTime"] = format_timestamp(scheduled)
    return plan
