"""Typed views of batch/v1: Job and CronJob.

Upstream: k8s.io/api/batch/v1/types.go. Pointer fields (`parallelism`, `completions`, `backoffLimit`,
`suspend`, the history limits, …) read as None when absent, as Go's nil, so code can tell "unset" from 0.
"""

from __future__ import annotations

from control.api.typed.base import (
    View,
    integer,
    nested,
    nested_list,
    optional_bool,
    optional_int,
    optional_mapping,
    optional_string,
    pointer,
    string,
)
from control.api.typed.core import ObjectReference, PodTemplateSpec
from control.api.typed.meta import Condition, LabelSelector, ObjectMeta, TypedObject


class JobSpec(View):
    __slots__ = ()
    parallelism = optional_int("parallelism")
    completions = optional_int("completions")
    active_deadline_seconds = optional_int("activeDeadlineSeconds")
    backoff_limit = optional_int("backoffLimit")
    backoff_limit_per_index = optional_int("backoffLimitPerIndex")
    max_failed_indexes = optional_int("maxFailedIndexes")
    selector = pointer("selector", LabelSelector)
    manual_selector = optional_bool("manualSelector")
    template = nested("template", PodTemplateSpec)
    ttl_seconds_after_finished = optional_int("ttlSecondsAfterFinished")
    completion_mode = optional_string("completionMode")
    suspend = optional_bool("suspend")
    pod_failure_policy = optional_mapping("podFailurePolicy")
    pod_replacement_policy = optional_string("podReplacementPolicy")


class JobStatus(View):
    __slots__ = ()
    conditions = nested_list("conditions", Condition)
    start_time = optional_string("startTime")
    completion_time = optional_string("completionTime")
    active = integer("active")
    succeeded = integer("succeeded")
    failed = integer("failed")
    terminating = optional_int("terminating")
    completed_indexes = string("completedIndexes")
    failed_indexes = optional_string("failedIndexes")
    uncounted_terminated_pods = optional_mapping("uncountedTerminatedPods")
    ready = optional_int("ready")


class Job(TypedObject):
    __slots__ = ()
    spec = nested("spec", JobSpec)
    status = nested("status", JobStatus)


class JobTemplateSpec(View):
    __slots__ = ()
    metadata = nested("metadata", ObjectMeta)
    spec = nested("spec", JobSpec)


class CronJobSpec(View):
    __slots__ = ()
    schedule = string("schedule")
    time_zone = optional_string("timeZone")
    starting_deadline_seconds = optional_int("startingDeadlineSeconds")
    concurrency_policy = string("concurrencyPolicy")
    suspend = optional_bool("suspend")
    job_template = nested("jobTemplate", JobTemplateSpec)
    successful_jobs_history_limit = optional_int("successfulJobsHistoryLimit")
    failed_jobs_history_limit = optional_int("failedJobsHistoryLimit")


class CronJobStatus(View):
    __slots__ = ()
    active = nested_list("active", ObjectReference)
    last_schedule_time = optional_string("lastScheduleTime")
    last_successful_time = optional_string("lastSuccessfulTime")


class CronJob(TypedObject):
    __slots__ = ()
    spec = nested("spec", CronJobSpec)
    status = nested("status", CronJobStatus)
