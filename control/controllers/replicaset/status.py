"""A ReplicaSet's (or ReplicationController's) status from the pods it owns, as a pure function.

Upstream: pkg/controller/replicaset/replica_set_utils.go (`calculateStatus`, `updateReplicaSetStatus`'s
"nothing changed" test, `NewReplicaSetCondition`, `SetCondition`, `RemoveCondition`).

- replicas: the active pods it owns; fullyLabeledReplicas: those whose labels include every label of the
  pod template; readyReplicas: those Ready; availableReplicas: those Ready for minReadySeconds.
- The `ReplicaFailure` condition (status True, reason FailedCreate or FailedDelete by the sign of
  owned − wanted, message the error's) is added when creating or deleting pods failed and there is none
  yet, and removed once a sync manages its pods without error.
- `replicas` is always written (no omitempty in ReplicaSetStatus); the other counts are left out at zero,
  as Go serialises them.
- observedGeneration is set to metadata.generation when the status is written; a status that is the same
  in every count, conditions and observedGeneration is not written at all.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.typed import ReplicaSet
from control.apimachinery.labels import selector_from_set
from control.apimachinery.meta import deep_copy, format_timestamp, labels_of
from control.controllers.shared.controller_utils import is_pod_available

Obj = Mapping[str, Any]

REPLICA_FAILURE = "ReplicaFailure"
COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")


def wanted_replicas(obj: Obj) -> int:
    """spec.replicas, 1 when unset (the API server defaults it; a controller must not read None as 0)."""
    value = ReplicaSet(obj).spec.replicas
    return 1 if value is None else int(value)


def min_ready_seconds(obj: Obj) -> int:
    return ReplicaSet(obj).spec.min_ready_seconds


def calculate_status(obj: Obj, pods: Sequence[Obj], *, manage_error: str | None, now: datetime) -> dict[str, Any]:
    """The new status of `obj` owning the active `pods`; `manage_error` is the message of a failed
    create/delete round, None when it went well (or did not run)."""
    status: dict[str, Any] = deep_copy(dict(ReplicaSet(obj).status.raw))
    template = selector_from_set(ReplicaSet(obj).spec.template.metadata.labels)
    min_ready = min_ready_seconds(obj)
    fully_labeled = sum(1 for pod in pods if template.matches(labels_of(pod)))
    ready = [pod for pod in pods if is_pod_ready(pod)]
    available = sum(1 for pod in ready if is_pod_available(pod, min_ready, now))
    conditions = [c for c in status.get("conditions") or () if isinstance(c, Mapping)]
    failure = next((c for c in conditions if c.get("type") == REPLICA_FAILURE), None)
    if manage_error is not None and failure is None:
        diff = len(pods) - wanted_replicas(obj)
        reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
        conditions.append({"type": REPLICA_FAILURE, "status": "True", "lastTransitionTime": format_timestamp(now),
                           "reason": reason, "message": manage_error})
    elif manage_error is None and failure is not None:
        conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
    if conditions:
        status["conditions"] = conditions
    else:
        status.pop("conditions", None)
    status["replicas"] = len(pods)
    for key, count in (("fullyLabeledReplicas", fully_labeled), ("readyReplicas", len(ready)),
                       ("availableReplicas", available)):
        if count:
            status[key] = count
        else:  # omitempty upstream: a zero count is not serialised
            status.pop(key, None)
    return status


def status_unchanged(obj: Obj, status: Mapping[str, Any]) -> bool:
    """updateReplicaSetStatus's steady state: same counts and conditions, and the generation observed."""
    current = obj.get("status") or {}
    generation = ReplicaSet(obj).metadata.raw.get("generation")  # None when unset: nothing observed
    return (all(int(current.get(k) or 0) == int(status.get(k) or 0) for k in COUNTS)
            and current.get("observedGeneration") == generation
            and (current.get("conditions") or []) == (status.get("conditions") or []))


def with_observed_generation(obj: Obj, status: Mapping[str, Any]) -> dict[str, Any]:
    """The status to write: `status` stamped with the generation it was computed from."""
    generation = ReplicaSet(obj).metadata.raw.get("generation")
    written = dict(status)
    if generation is not None:
        written["observedGeneration"] = generation
    return written
