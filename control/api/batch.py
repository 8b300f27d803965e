"""batch/v1 names shared by the API server (the Job strategy) and the Job and CronJob controllers.

Upstream: staging/src/k8s.io/api/batch/v1/types.go (the label, annotation and finalizer names) and
pkg/registry/batch/job/strategy.go (`generateSelector`: unless `spec.manualSelector` is true, the server
labels the template with the job's name and uid, the legacy unprefixed keys too, and selects the
`batch.kubernetes.io/controller-uid` label, which alone makes the selector unique to this Job).
"""

from __future__ import annotations

from typing import Any

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
JOB_COMPLETION_INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"  # also the pod's label
JOB_COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
CRONJOB_SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"


def generate_job_selector(job: dict[str, Any], uid: str) -> None:
    """Upstream generateSelector, in place: labels a user set on the template are kept (validation then
    refuses a selector that does not select them); the selector gets the controller-uid label."""
    spec = job.get("spec")
    if not isinstance(spec, dict) or spec.get("manualSelector") is True:
        return
    template = spec.setdefault("template", {})
    if not isinstance(template, dict):
        return
    metadata = template.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return
    labels = metadata.get("labels")
    if not isinstance(labels, dict):
        labels = metadata["labels"] = {}
    name = str((job.get("metadata") or {}).get("name") or "")
    for key in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
        labels.setdefault(key, name)
    for key in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
        labels.setdefault(key, uid)
    selector = spec.get("selector")
    if not isinstance(selector, dict):
        selector = spec["selector"] = {}
    match_labels = selector.get("matchLabels")
    if not isinstance(match_labels, dict):
        match_labels = selector["matchLabels"] = {}
    match_labels.setdefault(CONTROLLER_UID_LABEL, uid)
