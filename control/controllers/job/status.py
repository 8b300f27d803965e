"""The Job's status as the controller writes it: conditions with upstream's types, reasons and messages,
the counters, `uncountedTerminatedPods` and `completedIndexes`.

Upstream: pkg/controller/job/job_controller.go (`newCondition`, `ensureJobConditionStatus`,
`newFailedConditionsForFailureTarget`, `trackJobStatusAndRemoveFinalizers`, `flushUncountedAndRemoveFinalizers`,
`recordJobPodsCreationStatus`) and staging/src/k8s.io/api/batch/v1/types.go (JobConditionType: Complete,
Failed, Suspended, FailureTarget, SuccessCriteriaMet; JobStatus).

A job that succeeds gets SuccessCriteriaMet, then Complete (with `completionTime`) once no pod of it is
active or terminating; one that fails gets FailureTarget, then Failed the same way — the two steps of
upstream 1.31+, so a Job is finished only when none of its pods is still running. Both conditions of a
pair carry the same reason and message. Suspended is True "JobSuspended"/"Job suspended" while
`spec.suspend`, False "JobResumed"/"Job resumed" after.

No clock is read here: callers pass `now`.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from control.api.typed import Job
from control.apimachinery.meta import deep_copy, format_timestamp

Obj = Mapping[str, Any]

SUSPENDED = ("JobSuspended", "Job suspended")
RESUMED = ("JobResumed", "Job resumed")


def new_condition(kind: str, status: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    stamp = format_timestamp(now)
    return {"type": kind, "status": status, "lastProbeTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def ensure_condition(status: dict[str, Any], kind: str, value: str, reason: str, message: str,
                     now: datetime) -> bool:
    """ensureJobConditionStatus (in place): add the condition, or change its status, reason and message
    (with a new transition time) when its status differs; returns whether anything changed. A missing
    condition wanted False is not added (a job never suspended has no Suspended condition)."""
    conditions: list[dict[str, Any]] = status.setdefault("conditions", [])
    for index, condition in enumerate(conditions):
        if condition.get("type") != kind:
            continue
        if condition.get("status") == value:
            return False
        conditions[index] = new_condition(kind, value, reason, message, now)
        return True
    if value != "True":
        if not conditions:
            status.pop("conditions", None)
        return False
    conditions.append(new_condition(kind, value, reason, message, now))
    return True


def counts(status: Obj) -> tuple[int, int]:
    """(succeeded, failed) as counted so far."""
    return int(status.get("succeeded") or 0), int(status.get("failed") or 0)


def uncounted(status: Obj) -> tuple[list[str], list[str]]:
    """The uids of `uncountedTerminatedPods` (succeeded, failed)."""
    pending = status.get("uncountedTerminatedPods") or {}
    return list(pending.get("succeeded") or ()), list(pending.get("failed") or ())


def set_uncounted(status: dict[str, Any], succeeded: list[str], failed: list[str]) -> None:
    """Upstream writes `uncountedTerminatedPods: {}` when empty; lists omitted when empty."""
    pending: dict[str, Any] = {}
    if succeeded:
        pending["succeeded"] = sorted(set(succeeded))
    if failed:
        pending["failed"] = sorted(set(failed))
    status["uncountedTerminatedPods"] = pending


def copy_status(job: Obj) -> dict[str, Any]:
    return deep_copy(dict(Job(job).status.raw))


def status_changed(job: Obj, status: Obj) -> bool:
    return dict(Job(job).status.raw) != dict(status)
