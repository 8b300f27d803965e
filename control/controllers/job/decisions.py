"""What the Job controller decides, as pure functions: which pods finished and how they count, whether the
job has failed or succeeded, how many pods (and which completion indexes) to create or delete, how long a
failed pod's replacement waits, and what a Job's pod looks like.

Upstream: pkg/controller/job/job_controller.go (`syncJob`, `manageJob`, `getNewFinishedPods`,
`isPodFailed`, `pastActiveDeadline`, `pastBackoffLimitOnFailure`, `getPodsForJob` …), indexed_job_utils.go
(`calculateSucceededIndexes`, `firstPendingIndexes`, `appendDuplicatedIndexPodsForRemoval`,
`addCompletionIndexEnvVariables`, `addCompletionIndexAnnotation`, the interval string of
`status.completedIndexes`), pod_failure_policy.go (`matchPodFailurePolicy`), backoff_utils.go
(`backoffRecord`, `getRemainingTime`).

No clock is read here: callers pass `now`. Times of pods come from their status.

The rules kept from upstream:
- A pod counts once: a finished pod that still carries the `batch.kubernetes.io/job-tracking` finalizer is
  recorded in `status.uncountedTerminatedPods`, then its finalizer is removed, then it moves to
  `succeeded`/`failed` (controller.py does the writes in that order).
- A pod is failed when its phase is Failed; with podReplacementPolicy TerminatingOrFailed also as soon as
  it is being deleted without having succeeded (`isPodFailed`).
- Failure: a FailJob rule of the pod failure policy matched, more failed pods than `backoffLimit`
  (restartPolicy Never), container restarts of active pods reaching it (OnFailure), or
  `activeDeadlineSeconds` passed since `startTime`.
- Success: `succeeded >= completions`; a work queue (no completions) succeeds once some pod succeeded and
  none is active.
- Wanted active pods: `min(completions - succeeded, parallelism)`; a work queue keeps `parallelism` until
  the first success, then creates no more. Indexed jobs create the lowest pending indexes first and
  delete pods of duplicated or out-of-range indexes.
- Back-off of failed pods: `base * 2^(failures after the last success - 1)` capped at `cap`, counted from
  the last failure (`getRemainingTime`); upstream's base is 10 s.

Departures: no FailIndex/backoffLimitPerIndex, no successPolicy, no managedBy (all alpha/beta upstream).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from control.api.batch import (
    JOB_COMPLETION_INDEX_ANNOTATION,
    JOB_COMPLETION_INDEX_ENV,
    JOB_TRACKING_FINALIZER,
)
from control.api.typed import ContainerStatus, Job, Pod
from control.apimachinery.meta import deep_copy, timestamp_or_none
from control.controllers.shared.helpers import has_finalizer, job_finished_condition

Obj = Mapping[str, Any]

DEFAULT_BACKOFF_BASE = 10.0  # upstream DefaultJobPodFailureBackOff
DEFAULT_BACKOFF_CAP = 360.0  # six minutes, as the Job documentation states for the pod failure back-off


def _int(value: Any, default: int) -> int:
    return int(value) if value is not None else default


# -- reading a job ---------------------------------------------------------------------------------------

def spec_of(job: Obj) -> Mapping[str, Any]:
    return job.get("spec") or {}


def is_finished(job: Obj) -> bool:
    """Complete or Failed (IsJobFinished): the controller touches nothing of a finished job but finalizers."""
    return job_finished_condition(job) is not None


def is_indexed(job: Obj) -> bool:
    return spec_of(job).get("completionMode") == "Indexed"


def replace_only_failed(job: Obj) -> bool:
    """podReplacementPolicy Failed: a pod being deleted is replaced only once it has failed."""
    return spec_of(job).get("podReplacementPolicy") == "Failed"


# -- reading a pod ---------------------------------------------------------------------------------------

def uid_of(pod: Obj) -> str:
    return Pod(pod).metadata.uid


def phase_of(pod: Obj) -> str:
    return Pod(pod).status.phase


def has_tracking_finalizer(pod: Obj) -> bool:
    return has_finalizer(pod, JOB_TRACKING_FINALIZER)


def is_terminating(pod: Obj) -> bool:
    """Being deleted and not finished yet (upstream's `terminating` count)."""
    return bool(Pod(pod).metadata.deletion_timestamp) and phase_of(pod) not in ("Succeeded",
                                                                                               "Failed")


def is_active(pod: Obj) -> bool:
    """Not finished, not being deleted (controller.IsPodActive)."""
    return phase_of(pod) not in ("Succeeded", "Failed") and not Pod(pod).metadata.deletion_timestamp


def is_pod_failed(pod: Obj, *, only_failed: bool) -> bool:
    """isPodFailed: phase Failed, or (policy TerminatingOrFailed) being deleted without having succeeded."""
    if phase_of(pod) == "Failed":
        return True
    if only_failed:
        return False
    return bool(Pod(pod).metadata.deletion_timestamp) and phase_of(pod) != "Succeeded"


def completion_index(pod: Obj) -> int | None:
    """The pod's completion index from its annotation (or label); None when absent or not a number."""
    metadata = Pod(pod).metadata
    text = metadata.annotations.get(JOB_COMPLETION_INDEX_ANNOTATION)
    if text is None:
        text = metadata.labels.get(JOB_COMPLETION_INDEX_ANNOTATION)
    try:
        index = int(str(text))
    except ValueError:
        return None
    return index if index >= 0 and str(index) == str(text) else None


def _container_statuses(pod: Obj) -> list[ContainerStatus]:
    status = Pod(pod).status
    return [*status.init_container_statuses, *status.container_statuses]


def finish_time(pod: Obj, now: datetime) -> datetime:
    """When the pod finished: its latest container termination, else its deletion time, else `now`."""
    times = [timestamp_or_none(terminated.finished_at) for s in _container_statuses(pod)
             if (terminated := s.state.terminated) is not None]
    known = [t for t in times if t is not None]
    if known:
        return max(known)
    return timestamp_or_none(Pod(pod).metadata.deletion_timestamp) or now


def restart_count(pods: Iterable[Obj]) -> int:
    """The summed restarts of the pods' containers (pastBackoffLimitOnFailure's count)."""
    return sum(s.restart_count for pod in pods for s in _container_statuses(pod))


# -- the pod failure policy ------------------------------------------------------------------------------

class FailureAction(enum.Enum):
    FAIL_JOB = "FailJob"
    IGNORE = "Ignore"
    COUNT = "Count"
    FAIL_INDEX = "FailIndex"


def _exit_code_matches(requirement: Mapping[str, Any], pod: Obj) -> str | None:
    """The name and code of the first terminated container (non-zero exit) the requirement matches."""
    name_filter = requirement.get("containerName")
    values = set(requirement.get("values") or ())
    for status in _container_statuses(pod):
        terminated = status.state.terminated
        code = terminated.exit_code if terminated is not None else 0
        if code == 0:
            continue
        if name_filter and status.name != name_filter:
            continue
        inside = code in values
        if inside == (requirement.get("operator") == "In"):
            return f"Container {status.name} for pod {_pod_key(pod)} failed with exit code {code}"
    return None


def _condition_matches(patterns: Sequence[Mapping[str, Any]], pod: Obj) -> str | None:
    for pattern in patterns:
        wanted = pattern.get("status") or "True"
        for condition in Pod(pod).status.conditions:
            if condition.type == pattern.get("type") and condition.status == wanted:
                return f"Pod {_pod_key(pod)} has condition {pattern.get('type')}"
    return None


def _pod_key(pod: Obj) -> str:
    metadata = pod.get("metadata") or {}
    return f"{metadata.get('namespace', '')}/{metadata.get('name', '')}"


def match_pod_failure_policy(policy: Mapping[str, Any] | None, pod: Obj) -> tuple[FailureAction | None, str]:
    """matchPodFailurePolicy: the action of the first rule matching a failed pod, with upstream's message
    ("... matching FailJob rule at index 0"); (None, "") when no rule matches (the failure counts)."""
    for index, rule in enumerate((policy or {}).get("rules") or ()):
        try:
            action = FailureAction(rule.get("action"))
        except ValueError:
            continue
        if rule.get("onExitCodes") is not None:
            found = _exit_code_matches(rule["onExitCodes"], pod)
        else:
            found = _condition_matches(rule.get("onPodConditions") or (), pod)
        if found is not None:
            return action, f"{found} matching {action.value} rule at index {index}"
    return None, ""


# -- counting finished pods ------------------------------------------------------------------------------

@dataclass(frozen=True)
class FinishedPods:
    """The finished pods of this sync not counted yet (getNewFinishedPods with the failure policy)."""

    succeeded: tuple[Obj, ...] = ()
    failed: tuple[Obj, ...] = ()  # count towards backoffLimit
    ignored: tuple[Obj, ...] = ()  # finalizer removed, counted nowhere (policy Ignore, or deleted by suspend)
    fail_job_message: str = ""  # a FailJob rule matched


def new_finished_pods(job: Obj, pods: Iterable[Obj], *, counted: frozenset[str], removed: frozenset[str],
                      succeeded_indexes: frozenset[int] = frozenset()) -> FinishedPods:
    """Finished pods that still carry the finalizer and are neither in `counted` (the uids already in
    uncountedTerminatedPods) nor in `removed` (uids whose finalizer this controller already removed)."""
    only_failed = replace_only_failed(job)
    policy = spec_of(job).get("podFailurePolicy")
    suspended = bool(spec_of(job).get("suspend"))
    completions = spec_of(job).get("completions")
    succeeded: list[Obj] = []
    failed: list[Obj] = []
    ignored: list[Obj] = []
    message = ""
    for pod in pods:
        uid = uid_of(pod)
        if not has_tracking_finalizer(pod) or uid in counted or uid in removed:
            continue
        if phase_of(pod) == "Succeeded":
            index = completion_index(pod)
            if is_indexed(job) and (index is None or completions is None or index >= int(completions)
                                    or index in succeeded_indexes):
                ignored.append(pod)  # a duplicate or out-of-range index: its success adds nothing
            else:
                succeeded.append(pod)
        elif is_pod_failed(pod, only_failed=only_failed):
            if phase_of(pod) != "Failed" and suspended:
                ignored.append(pod)  # deleted because the job was suspended: not a failure
                continue
            action, text = match_pod_failure_policy(policy, pod) if phase_of(pod) == "Failed" else (None, "")
            if action is FailureAction.IGNORE:
                ignored.append(pod)
                continue
            if action is FailureAction.FAIL_JOB and not message:
                message = text
            failed.append(pod)
    return FinishedPods(tuple(succeeded), tuple(failed), tuple(ignored), message)


# -- failure and success ---------------------------------------------------------------------------------

BACKOFF_LIMIT_EXCEEDED = ("BackoffLimitExceeded", "Job has reached the specified backoff limit")
DEADLINE_EXCEEDED = ("DeadlineExceeded", "Job was active longer than specified deadline")
POD_FAILURE_POLICY = "PodFailurePolicy"
COMPLETIONS_REACHED = ("CompletionsReached", "Reached expected number of succeeded pods")


def deadline_remaining(job: Obj, now: datetime) -> float | None:
    """Seconds until activeDeadlineSeconds passes (<= 0: passed); None without a deadline or start time."""
    deadline = spec_of(job).get("activeDeadlineSeconds")
    started = timestamp_or_none(Job(job).status.start_time)
    if deadline is None or started is None:
        return None
    return (started + timedelta(seconds=int(deadline)) - now).total_seconds()


def failure(job: Obj, *, failed: int, active: Sequence[Obj], fail_job_message: str,
            now: datetime) -> tuple[str, str] | None:
    """(reason, message) of the job's failure, or None; the first cause wins as upstream checks them."""
    if fail_job_message:
        return POD_FAILURE_POLICY, fail_job_message
    spec = spec_of(job)
    limit = _int(spec.get("backoffLimit"), 6)
    if failed > limit:
        return BACKOFF_LIMIT_EXCEEDED
    restart_policy = Job(job).spec.template.spec.restart_policy
    if restart_policy == "OnFailure":
        restarts = restart_count(active)
        if (restarts > 0) if limit == 0 else (restarts >= limit):
            return BACKOFF_LIMIT_EXCEEDED
    remaining = deadline_remaining(job, now)
    if remaining is not None and remaining <= 0:
        return DEADLINE_EXCEEDED
    return None


def succeeded_criteria(job: Obj, *, succeeded: int, active: int) -> bool:
    completions = spec_of(job).get("completions")
    if completions is None:
        return succeeded > 0 and active == 0
    return succeeded >= int(completions)


# -- back-off --------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BackoffRecord:
    """backoffRecord: failures since the last success and when the last of them happened."""

    failures_after_last_success: int = 0
    last_failure: datetime | None = None


def update_backoff(record: BackoffRecord, *, succeeded: Iterable[datetime],
                   failed: Iterable[datetime]) -> BackoffRecord:
    """newBackoffRecord: the record after these newly finished pods (their finish times)."""
    successes, failures = sorted(succeeded), sorted(failed)
    if not failures:
        return BackoffRecord() if successes else record
    last_failure = max(failures[-1], record.last_failure) if record.last_failure else failures[-1]
    if successes:
        after = [t for t in failures if t > successes[-1]]
        return BackoffRecord(len(after), last_failure if after else None)
    return BackoffRecord(record.failures_after_last_success + len(failures), last_failure)


def backoff_remaining(record: BackoffRecord, now: datetime, *, base: float = DEFAULT_BACKOFF_BASE,
                      cap: float = DEFAULT_BACKOFF_CAP) -> float:
    """getRemainingTime: seconds before a replacement may be created (0: now)."""
    if record.failures_after_last_success == 0 or record.last_failure is None:
        return 0.0
    delay = min(cap, base * 2.0 ** (record.failures_after_last_success - 1))
    return max(0.0, delay - (now - record.last_failure).total_seconds())


# -- how many pods -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Manage:
    """What manageJob does this round: create `create` pods (Indexed: exactly these indexes) and delete
    `delete`."""

    create: int = 0
    indexes: tuple[int, ...] = ()
    delete: tuple[Obj, ...] = ()


def wanted_active(job: Obj, *, succeeded: int, active: int) -> int:
    spec = spec_of(job)
    parallelism = _int(spec.get("parallelism"), 1)
    completions = spec.get("completions")
    if completions is None:
        return parallelism if succeeded == 0 else active
    return max(0, min(int(completions) - succeeded, parallelism))


def manage_non_indexed(job: Obj, active: Sequence[Obj], *, succeeded: int, terminating: int) -> Manage:
    """manageJob for NonIndexed jobs. `active` comes ordered so the pods to delete first come first."""
    want = wanted_active(job, succeeded=succeeded, active=len(active))
    if len(active) > want:
        return Manage(delete=tuple(active[:len(active) - want]))
    budget = want - len(active) - (terminating if replace_only_failed(job) else 0)
    return Manage(create=max(0, budget))


def manage_indexed(job: Obj, active: Sequence[Obj], *, succeeded_indexes: frozenset[int],
                   terminating: int) -> Manage:
    """manageJob for Indexed jobs: pods of succeeded, duplicated or out-of-range indexes go first, then (too
    many) the highest indexes; the lowest pending indexes are created."""
    completions = int(spec_of(job).get("completions") or 0)
    delete: list[Obj] = []
    keep: dict[int, Obj] = {}
    for pod in active:
        index = completion_index(pod)
        if index is None or index >= completions or index in succeeded_indexes or index in keep:
            delete.append(pod)
        else:
            keep[index] = pod
    want = wanted_active(job, succeeded=len(succeeded_indexes), active=len(keep))
    if len(keep) > want:
        for index in sorted(keep, reverse=True)[:len(keep) - want]:
            delete.append(keep.pop(index))
    budget = want - len(keep) - (terminating if replace_only_failed(job) else 0)
    pending = [i for i in range(completions) if i not in succeeded_indexes and i not in keep]
    chosen = tuple(pending[:max(0, budget)])
    return Manage(create=len(chosen), indexes=chosen, delete=tuple(delete))


# -- completed indexes ("1,3-5") ---------------------------------------------------------------------------

def parse_indexes(text: str | None, completions: int | None = None) -> frozenset[int]:
    """The indexes of an interval list; entries beyond `completions` are dropped, garbage ignored."""
    found: set[int] = set()
    for part in (text or "").split(","):
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high) if high else int(low)
        except ValueError:
            continue
        found.update(range(first, last + 1))
    if completions is not None:
        found = {i for i in found if 0 <= i < completions}
    return frozenset(found)


def format_indexes(indexes: Iterable[int]) -> str:
    """Sorted intervals, "0,2-4" (succeededIndexes.String)."""
    parts: list[str] = []
    ordered = sorted(set(indexes))
    start = previous = None
    for index in [*ordered, None]:
        if index is not None and previous is not None and index == previous + 1:
            previous = index
            continue
        if start is not None:
            parts.append(str(start) if start == previous else f"{start}-{previous}")
        start = previous = index
    return ",".join(parts)


# -- the pods of a job -------------------------------------------------------------------------------------

def job_pod(job: Obj, *, controller_ref: Mapping[str, Any], index: int | None) -> dict[str, Any]:
    """The pod a Job creates (GetPodFromTemplate plus the tracking finalizer; Indexed: generateName
    `<job>-<index>-`, the completion index annotation and label, JOB_COMPLETION_INDEX from the annotation
    through the downward API in every container, hostname `<job>-<index>`)."""
    name = Job(job).metadata.name
    template = Job(job).spec.template.raw
    template_meta = template.get("metadata") or {}
    metadata: dict[str, Any] = {"generateName": f"{name}-", "ownerReferences": [dict(controller_ref)],
                                "finalizers": [*(template_meta.get("finalizers") or ()), JOB_TRACKING_FINALIZER]}
    for key in ("labels", "annotations"):
        if template_meta.get(key):
            metadata[key] = deep_copy(template_meta[key])
    spec = deep_copy(dict(Job(job).spec.template.spec.raw))
    if index is not None:
        metadata["generateName"] = f"{name}-{index}-"
        metadata.setdefault("annotations", {})[JOB_COMPLETION_INDEX_ANNOTATION] = str(index)
        metadata.setdefault("labels", {})[JOB_COMPLETION_INDEX_ANNOTATION] = str(index)
        env_var = {"name": JOB_COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
            "fieldPath": f"metadata.annotations['{JOB_COMPLETION_INDEX_ANNOTATION}']"}}}
        for key in ("initContainers", "containers"):
            for container in spec.get(key) or ():
                env = container.setdefault("env", [])
                if not any(e.get("name") == JOB_COMPLETION_INDEX_ENV for e in env):
                    env.append(dict(env_var))
        spec.setdefault("hostname", f"{name}-{index}")
    if len(metadata["generateName"]) > 58:
        metadata["generateName"] = metadata["generateName"][:58]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}
