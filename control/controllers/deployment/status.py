"""A Deployment's status from its ReplicaSets, and its Progressing and Available conditions, decided
without I/O (`now` is passed in).

Upstream: pkg/controller/deployment/sync.go (calculateStatus, checkPausedConditions),
progress.go (syncRolloutStatus, getReplicaFailures, requeueStuckDeployment) and
util/deployment_util.go (NewDeploymentCondition, SetDeploymentCondition, DeploymentComplete,
DeploymentProgressing, DeploymentTimedOut, the reasons and messages below). `kubectl rollout status`
reads these: observedGeneration ≥ generation, updatedReplicas, availableReplicas, and a Progressing
condition with reason ProgressDeadlineExceeded ends it with an error.

Departure: upstream also counts status.terminatingReplicas behind an alpha feature gate; not here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from control.api.typed import Deployment, ReplicaSet
from control.apimachinery.meta import deep_copy, format_timestamp, parse_timestamp
from control.controllers.deployment.util import (
    actual_replica_count,
    available_replica_count,
    has_progress_deadline,
    max_unavailable,
    ready_replica_count,
    replica_count,
    spec_replicas,
    status_int,
)
from control.controllers.shared.helpers import status_condition

PROGRESSING = "Progressing"
AVAILABLE = "Available"
REPLICA_FAILURE = "ReplicaFailure"

# Reasons (deployment_util.go).
NEW_RS_NEW_REPLICAS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
REPLICA_SET_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_DEPLOY_REASON = "DeploymentPaused"
RESUMED_DEPLOY_REASON = "DeploymentResumed"
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"
MINIMUM_REPLICAS_AVAILABLE = "MinimumReplicasAvailable"
MINIMUM_REPLICAS_UNAVAILABLE = "MinimumReplicasUnavailable"

Obj = Mapping[str, Any]


def new_condition(condition_type: str, status: str, reason: str, message: str, now: datetime) -> dict[str, Any]:
    stamp = format_timestamp(now)
    return {"type": condition_type, "status": status, "lastUpdateTime": stamp, "lastTransitionTime": stamp,
            "reason": reason, "message": message}


def set_condition(status: dict[str, Any], condition: dict[str, Any]) -> None:
    """SetDeploymentCondition, in place: nothing when status and reason are unchanged (lastUpdateTime
    stays too); lastTransitionTime kept when only the reason changes; the condition goes last."""
    current = status_condition(status, condition["type"])
    if current is not None and current.get("status") == condition["status"] \
            and current.get("reason") == condition["reason"]:
        return
    if current is not None and current.get("status") == condition["status"]:
        condition = {**condition, "lastTransitionTime": current.get("lastTransitionTime")}
    remove_condition(status, condition["type"])
    status.setdefault("conditions", []).append(condition)


def remove_condition(status: dict[str, Any], condition_type: str) -> None:
    if "conditions" in status:
        status["conditions"] = [c for c in status["conditions"] or () if c.get("type") != condition_type]


def calculate_status(deployment: Obj, all_rss: Sequence[Obj | None], new_rs: Obj | None,
                     now: datetime) -> dict[str, Any]:
    """calculateStatus: the counts summed over the ReplicaSets (updated ones are the new set's), the
    observedGeneration, the collisionCount carried over, and Available from minimum availability."""
    old = deployment.get("status") or {}
    available = available_replica_count(all_rss)
    status: dict[str, Any] = {
        "observedGeneration": Deployment(deployment).metadata.generation,
        "replicas": actual_replica_count(all_rss),
        "updatedReplicas": actual_replica_count([new_rs]),
        "readyReplicas": ready_replica_count(all_rss),
        "availableReplicas": available,
        "unavailableReplicas": max(replica_count(all_rss) - available, 0),
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    status["conditions"] = deep_copy(list(old.get("conditions") or []))
    if available >= spec_replicas(deployment) - max_unavailable(deployment):
        set_condition(status, new_condition(AVAILABLE, "True", MINIMUM_REPLICAS_AVAILABLE,
                                            "Deployment has minimum availability.", now))
    else:
        set_condition(status, new_condition(AVAILABLE, "False", MINIMUM_REPLICAS_UNAVAILABLE,
                                            "Deployment does not have minimum availability.", now))
    return status


def deployment_complete(deployment: Obj, status: Obj) -> bool:
    """Every replica updated and available, none old, this generation observed (DeploymentComplete)."""
    replicas = spec_replicas(deployment)
    generation = Deployment(deployment).metadata.generation
    return (int(status.get("updatedReplicas") or 0) == replicas and int(status.get("replicas") or 0) == replicas
            and int(status.get("availableReplicas") or 0) == replicas
            and int(status.get("observedGeneration") or 0) >= generation)


def deployment_progressing(deployment: Obj, new_status: Obj) -> bool:
    """More updated, fewer old, more ready or more available replicas than the last status
    (DeploymentProgressing)."""
    def count(status: Obj, field: str) -> int:
        return int(status.get(field) or 0)
    old = deployment.get("status") or {}
    old_old = count(old, "replicas") - count(old, "updatedReplicas")
    new_old = count(new_status, "replicas") - count(new_status, "updatedReplicas")
    return (count(new_status, "updatedReplicas") > count(old, "updatedReplicas") or new_old < old_old
            or count(new_status, "readyReplicas") > count(old, "readyReplicas")
            or count(new_status, "availableReplicas") > count(old, "availableReplicas"))


def _deadline(deployment: Obj, condition: Obj) -> datetime:
    seconds = int(deployment["spec"]["progressDeadlineSeconds"])
    return parse_timestamp(str(condition.get("lastUpdateTime"))) + timedelta(seconds=seconds)


def deployment_timed_out(deployment: Obj, status: Obj, now: datetime) -> bool:
    """No progress for progressDeadlineSeconds since the Progressing condition was last updated
    (DeploymentTimedOut); a complete rollout never times out."""
    if not has_progress_deadline(deployment):
        return False
    condition = status_condition(status, PROGRESSING)
    if condition is None or condition.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if condition.get("reason") == TIMED_OUT_REASON:
        return True
    return _deadline(deployment, condition) < now


def replica_failures(all_rss: Sequence[Obj | None], new_rs: Obj | None) -> list[dict[str, Any]]:
    """The ReplicaFailure conditions of the new ReplicaSet, else of any (getReplicaFailures), as
    Deployment conditions (ReplicaSetToDeploymentCondition)."""
    def failures(rs: Obj) -> list[dict[str, Any]]:
        return [{"type": c.get("type"), "status": c.get("status"), "lastUpdateTime": c.get("lastTransitionTime"),
                 "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason"),
                 "message": c.get("message")}
                for c in (condition.raw for condition in ReplicaSet(rs).status.conditions)
                if c.get("type") == REPLICA_FAILURE]
    if new_rs is not None and (found := failures(new_rs)):
        return found
    return [c for rs in all_rss if rs is not None for c in failures(rs)]


def rollout_status(deployment: Obj, all_rss: Sequence[Obj | None], new_rs: Obj | None,
                   now: datetime) -> dict[str, Any]:
    """syncRolloutStatus's new status: calculate_status plus the Progressing condition (complete:
    NewReplicaSetAvailable; progress made: ReplicaSetUpdated with a fresh lastUpdateTime; no progress past
    the deadline: ProgressDeadlineExceeded) and the ReplicaFailure condition moved up from the sets."""
    status = calculate_status(deployment, all_rss, new_rs, now)
    if not has_progress_deadline(deployment):
        remove_condition(status, PROGRESSING)
    current = status_condition(deployment.get("status") or {}, PROGRESSING)
    complete_before = (status["replicas"] == status["updatedReplicas"] and current is not None
                       and current.get("reason") == NEW_RS_AVAILABLE_REASON)
    name = Deployment(deployment).metadata.name
    subject = f'ReplicaSet "{new_rs["metadata"]["name"]}"' if new_rs is not None else f'Deployment "{name}"'
    if has_progress_deadline(deployment) and not complete_before:
        if deployment_complete(deployment, status):
            set_condition(status, new_condition(PROGRESSING, "True", NEW_RS_AVAILABLE_REASON,
                                                f"{subject} has successfully progressed.", now))
        elif deployment_progressing(deployment, status):
            condition = new_condition(PROGRESSING, "True", REPLICA_SET_UPDATED_REASON, f"{subject} is progressing.",
                                      now)
            if current is not None:
                if current.get("status") == "True":
                    condition["lastTransitionTime"] = current.get("lastTransitionTime")
                remove_condition(status, PROGRESSING)
            set_condition(status, condition)
        elif deployment_timed_out(deployment, status, now):
            set_condition(status, new_condition(PROGRESSING, "False", TIMED_OUT_REASON,
                                                f"{subject} has timed out progressing.", now))
    failures = replica_failures(all_rss, new_rs)
    if failures:
        set_condition(status, failures[0])
    else:
        remove_condition(status, REPLICA_FAILURE)
    return status


def requeue_after(deployment: Obj, new_status: Obj, now: datetime) -> float | None:
    """When to look again at a rollout that made no progress, so its deadline is noticed without a
    resync (requeueStuckDeployment): seconds until lastUpdateTime + progressDeadlineSeconds (0: now,
    rate-limited), None when there is no deadline to watch."""
    current = status_condition(deployment.get("status") or {}, PROGRESSING)
    if not has_progress_deadline(deployment) or current is None:
        return None
    if deployment_complete(deployment, new_status) or current.get("reason") == TIMED_OUT_REASON:
        return None
    after = (_deadline(deployment, current) - now).total_seconds()
    return 0.0 if after < 1.0 else after


def paused_condition(deployment: Obj, now: datetime) -> dict[str, Any] | None:
    """checkPausedConditions: the status with Progressing Unknown/DeploymentPaused when paused, or
    DeploymentResumed when resumed from a pause; None when nothing changes (or the rollout already timed
    out, which a pause does not hide)."""
    if not has_progress_deadline(deployment):
        return None
    status = deep_copy(dict(Deployment(deployment).status.raw))
    current = status_condition(status, PROGRESSING)
    if current is not None and current.get("reason") == TIMED_OUT_REASON:
        return None
    paused_before = current is not None and current.get("reason") == PAUSED_DEPLOY_REASON
    paused = Deployment(deployment).spec.paused
    if paused and not paused_before:
        set_condition(status, new_condition(PROGRESSING, "Unknown", PAUSED_DEPLOY_REASON, "Deployment is paused", now))
    elif not paused and paused_before:
        set_condition(status, new_condition(PROGRESSING, "Unknown", RESUMED_DEPLOY_REASON, "Deployment is resumed",
                                            now))
    else:
        return None
    return status


def status_counts_equal(old: Obj, new: Obj) -> bool:
    """reflect.DeepEqual of two statuses, absent counts read as Go's zero."""
    fields = ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
              "unavailableReplicas")
    return (all(status_int({"status": old}, f) == status_int({"status": new}, f) for f in fields)
            and old.get("collisionCount") == new.get("collisionCount")
            and list(old.get("conditions") or []) == list(new.get("conditions") or []))
