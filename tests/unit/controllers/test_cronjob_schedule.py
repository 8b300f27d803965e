"""The CronJob controller's pure decisions (control/controllers/cronjob/schedule.py): next times of cron
expressions and macros in time zones, missed schedules as upstream's mostRecentScheduleTime, the
starting deadline, concurrency policies, history limits, job names and the scheduled-timestamp annotation."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from control.api.batch import CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION
from control.controllers.cronjob.schedule import (
    Finished,
    job_name,
    jobs_to_prune,
    most_recent_schedule_time,
    next_requeue,
    parse_schedule,
    plan_sync,
)

REF = {"apiVersion": "batch/v1", "kind": "CronJob", "name": "cj", "uid": "cj-uid", "controller": True,
       "blockOwnerDeletion": True}


def stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def cronjob(schedule: str = "*/5 * * * *", *, created: datetime, last: datetime | None = None,
            active: list[dict] | None = None, **spec: Any) -> dict[str, Any]:
    status: dict[str, Any] = {}
    if last is not None:
        status["lastScheduleTime"] = stamp(last)
    if active:
        status["active"] = active
    return {"metadata": {"name": "cj", "namespace": "ns", "uid": "cj-uid", "creationTimestamp": stamp(created)},
            "spec": {"schedule": schedule, "concurrencyPolicy": "Allow", "suspend": False,
                     "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                     "jobTemplate": {"metadata": {"labels": {"app": "cron"}}, "spec": {"template": {}}}, **spec},
            "status": status}


def at(hour: int, minute: int, second: int = 0, day: int = 1) -> datetime:
    return datetime(2024, 3, day, hour, minute, second, tzinfo=UTC)


@pytest.mark.parametrize(("schedule", "zone", "after", "expected"), [
    pytest.param("*/15 * * * *", None, at(10, 7), at(10, 15), id="every-15"),
    pytest.param("@hourly", None, at(10, 0), at(11, 0), id="hourly-strictly-after"),
    pytest.param("@daily", None, at(10, 0), at(0, 0, day=2), id="daily"),
    pytest.param("0 9 * * *", "Europe/Berlin", at(7, 0), at(8, 0), id="berlin-9-is-8-utc"),
    pytest.param("0 9 * * mon-fri", None, at(10, 0), at(9, 0, day=4), id="weekdays-skip-weekend"),
    pytest.param("0 9 * * *", "America/New_York", datetime(2024, 3, 9, 15, tzinfo=UTC),
                 datetime(2024, 3, 10, 13, tzinfo=UTC), id="new-york-across-dst"),
])
def test_next_times(schedule, zone, after, expected):
    parsed = parse_schedule(cronjob(schedule, created=at(0, 0), **({"timeZone": zone} if zone else {})))
    assert parsed.next(after) == expected


@pytest.mark.parametrize(("last", "now", "deadline", "recent", "missed"), [
    pytest.param(at(10, 0), at(10, 3), None, None, 0, id="nothing-due"),
    pytest.param(at(10, 0), at(10, 5), None, at(10, 5), 1, id="exactly-due"),
    pytest.param(at(10, 0), at(10, 7), None, at(10, 5), 1, id="one-due"),
    pytest.param(at(10, 0), at(10, 31), None, at(10, 30), 6, id="six-missed-most-recent-only"),
    pytest.param(at(0, 0), at(10, 31), None, at(10, 30), 126, id="more-than-100"),
    pytest.param(at(0, 0), at(10, 31), 200, at(10, 30), 1, id="deadline-bounds-the-count"),
])
def test_most_recent_schedule_time(last, now, deadline, recent, missed):
    extra = {"startingDeadlineSeconds": deadline} if deadline is not None else {}
    cj = cronjob(created=at(0, 0), last=last, **extra)
    _, found, count = most_recent_schedule_time(cj, now, parse_schedule(cj), include_deadline=True)
    assert (found, count) == (recent, missed)


def test_irregular_schedule_most_recent_is_exact():
    cj = cronjob("30 6-16/4 * * 1-5", created=at(0, 0, day=1))
    _, found, _ = most_recent_schedule_time(cj, at(15, 0, day=5), parse_schedule(cj), include_deadline=True)
    assert found == at(14, 30, day=5)


def test_requeue_at_next_time():
    cj = cronjob(created=at(10, 0), last=at(10, 5))
    assert next_requeue(cj, at(10, 7, 30), parse_schedule(cj)) == pytest.approx(150.1)


def test_due_time_creates_named_annotated_job_and_sets_last_schedule_time():
    plan = plan_sync(cronjob(created=at(10, 0), last=at(10, 0)), [], at(10, 6), controller_ref=REF)
    assert plan.create is not None
    assert plan.create["metadata"]["name"] == f"cj-{int(at(10, 5).timestamp()) // 60}" == job_name(
        {"metadata": {"name": "cj"}}, at(10, 5))
    assert plan.create["metadata"]["annotations"] == {CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: "2024-03-01T10:05:00Z"}
    assert plan.create["metadata"]["labels"] == {"app": "cron"}
    assert plan.create["metadata"]["ownerReferences"] == [REF]
    assert plan.status["lastScheduleTime"] == "2024-03-01T10:05:00Z"
    assert plan.requeue == pytest.approx(240.1)


def test_annotation_in_the_time_zone():
    cj = cronjob("0 9 * * *", created=at(0, 0), timeZone="Europe/Berlin")
    plan = plan_sync(cj, [], at(8, 0, 30), controller_ref=REF)
    assert plan.create["metadata"]["annotations"][CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION] == "2024-03-01T09:00:00+01:00"


def test_too_many_missed_starts_only_the_latest_with_event():
    plan = plan_sync(cronjob(created=at(0, 0)), [], at(10, 31), controller_ref=REF)
    assert plan.create is not None and plan.create["metadata"]["name"] == job_name(
        {"metadata": {"name": "cj"}}, at(10, 30))
    assert ("Warning", "TooManyMissedTimes", "too many missed start times: 126. Set or decrease "
            ".spec.startingDeadlineSeconds or check clock skew") in plan.events


@pytest.mark.parametrize(("deadline", "started"), [
    pytest.param(60, None, id="10:05-older-than-the-deadline-is-skipped"),
    pytest.param(180, at(10, 5), id="10:05-within-the-deadline-starts"),
])
def test_starting_deadline(deadline, started):
    plan = plan_sync(cronjob(created=at(10, 0), last=at(10, 0), startingDeadlineSeconds=deadline), [], at(10, 7),
                     controller_ref=REF)
    assert (plan.create and plan.status["lastScheduleTime"]) == (started and stamp(started))
    assert plan.events == []


def running(name: str, uid: str, **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid,
                         "annotations": {CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION: "x"}}, "status": status}


def finished(name: str, kind: str, started: datetime, done: datetime | None = None) -> dict[str, Any]:
    job = running(name, f"uid-{name}", startTime=stamp(started),
                  conditions=[{"type": kind, "status": "True"}])
    if done:
        job["status"]["completionTime"] = stamp(done)
    return job


@pytest.mark.parametrize(("policy", "create", "delete", "event"), [
    pytest.param("Allow", True, [], None, id="allow"),
    pytest.param("Forbid", False, [], "JobAlreadyActive", id="forbid"),
    pytest.param("Replace", True, ["old"], None, id="replace"),
])
def test_concurrency_policy(policy, create, delete, event):
    ref = {"kind": "Job", "name": "old", "uid": "uid-old", "namespace": "ns"}
    cj = cronjob(created=at(10, 0), last=at(10, 0), active=[ref], concurrencyPolicy=policy)
    plan = plan_sync(cj, [running("old", "uid-old")], at(10, 6), controller_ref=REF)
    assert (plan.create is not None) is create
    assert [j["metadata"]["name"] for j in plan.delete] == delete
    assert [e[1] for e in plan.events] == ([event] if event else [])


def test_finished_jobs_leave_active_and_set_last_successful_time():
    ref = {"kind": "Job", "name": "a", "uid": "uid-a", "namespace": "ns"}
    gone = {"kind": "Job", "name": "gone", "uid": "uid-gone", "namespace": "ns"}
    cj = cronjob(created=at(10, 0), last=at(10, 5), active=[ref, gone])
    plan = plan_sync(cj, [finished("a", "Complete", at(10, 5), at(10, 6))], at(10, 7), controller_ref=REF)
    assert "active" not in plan.status and plan.status["lastSuccessfulTime"] == "2024-03-01T10:06:00Z"
    assert ("Normal", "SawCompletedJob", "Saw completed job: a, condition: Complete") in plan.events


def test_history_limits_prune_the_oldest():
    jobs = [finished(f"ok{i}", "Complete", at(10, i)) for i in range(5)] + [
        finished(f"bad{i}", "Failed", at(11, i)) for i in range(3)]
    assert [j["metadata"]["name"] for j in jobs_to_prune(jobs, 3, Finished.COMPLETE)] == ["ok0", "ok1"]
    assert [j["metadata"]["name"] for j in jobs_to_prune(jobs, 1, Finished.FAILED)] == ["bad0", "bad1"]
    assert jobs_to_prune(jobs, None, Finished.FAILED) == []
    plan = plan_sync(cronjob(created=at(10, 0), last=at(10, 0), successfulJobsHistoryLimit=0), jobs, at(10, 1),
                     controller_ref=REF)
    assert sorted(j["metadata"]["name"] for j in plan.prune) == ["bad0", "bad1", "ok0", "ok1", "ok2", "ok3", "ok4"]


def test_suspended_starts_nothing():
    plan = plan_sync(cronjob(created=at(10, 0), suspend=True), [], at(10, 6), controller_ref=REF)
    assert plan.create is None and plan.requeue is None


def test_already_started_time_is_not_started_again():
    plan = plan_sync(cronjob(created=at(10, 0), last=at(10, 5)), [], at(10, 6), controller_ref=REF)
    assert plan.create is None


def test_requeue_is_within_the_interval_after_creation_time():
    cj = cronjob("* * * * *", created=at(10, 0, 30))
    assert 0 < next_requeue(cj, at(10, 0, 31), parse_schedule(cj)) <= 29.2
    assert timedelta(seconds=next_requeue(cj, at(10, 0, 31), parse_schedule(cj))) > timedelta(0)
