"""A StatefulSet's pods and claims, and what one sync does with them: pure functions over the set, its
pods and its revisions, carried out by control/controllers/statefulset/controller.py.

Upstream: pkg/controller/statefulset/stateful_set_utils.go (`getParentNameAndOrdinal`, `identityMatches`,
`storageMatches`, `updateIdentity` — hostname = pod name, subdomain = serviceName, the labels
`statefulset.kubernetes.io/pod-name` and `apps.kubernetes.io/pod-index` —, `getPersistentVolumeClaimName`
`<template>-<set>-<ordinal>`, `newVersionedStatefulSetPod`, `getPatch`/`ApplyRevision`,
`isRunningAndReady`, `isHealthy`, `completeRollingUpdate`, the claims' ownerReferences per
persistentVolumeClaimRetentionPolicy in `updateClaimOwnerRefForSetAndPod`) and stateful_set_control.go
(`updateStatefulSet` + `updateStatefulSetAfterInvariantEstablished`), whose one round `plan_round` returns
as a list of steps.

One round, in upstream's order (`monotonic` is OrderedReady; Parallel does not wait):
1. the replicas [start, start+replicas) and the condemned (other ordinals, highest first);
2. each replica in ordinal order: a Failed or Succeeded pod is deleted (recreated next round); a missing
   one is created — with its claims first — from the current revision below the partition, else the update
   revision; monotonic: stop after a create, at a terminating pod, or at a pod not Running and Ready;
   a pod whose identity or storage drifted is updated;
3. the condemned, highest ordinal first: monotonic waits for a terminating one and for an unhealthy one
   that is not the first unhealthy pod, and deletes one per round;
4. RollingUpdate (OnDelete updates nothing): counting unhealthy replicas as unavailable, delete up to
   maxUnavailable − unavailable pods not of the update revision, from the highest ordinal down to the
   partition; none while a replica is unavailable beyond the budget.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from control.api.disruption import is_pod_ready
from control.api.typed import ControllerRevision, PersistentVolumeClaim, Pod, PodTemplateSpec, StatefulSet
from control.apimachinery.meta import deep_copy, new_controller_ref
from control.controllers.shared.controller_utils import is_pod_available

Obj = Mapping[str, Any]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
REVISION_LABEL = "controller-revision-hash"
_ORDINAL = re.compile(r"^(.*)-([0-9]+)$")
API_VERSION, KIND = "apps/v1", "StatefulSet"


def _meta(obj: Obj) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _spec(obj: Obj) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def parent_and_ordinal(pod: Obj) -> tuple[str, int]:
    """getParentNameAndOrdinal: (`web`, 2) for `web-2`; ("", -1) for a name of another shape."""
    match = _ORDINAL.match(str(_meta(pod).get("name") or ""))
    return (match.group(1), int(match.group(2))) if match else ("", -1)


def ordinal_of(pod: Obj) -> int:
    return parent_and_ordinal(pod)[1]


def start_ordinal(sts: Obj) -> int:
    ordinals = _spec(sts).get("ordinals") or {}
    start = ordinals.get("start")
    return start if isinstance(start, int) and start >= 0 else 0


def replicas_of(sts: Obj) -> int:
    value = _spec(sts).get("replicas")
    return value if isinstance(value, int) else 1


def pod_name(sts: Obj, ordinal: int) -> str:
    return f"{_meta(sts).get('name', '')}-{ordinal}"


def claim_name(template: Obj, sts: Obj, ordinal: int) -> str:
    """getPersistentVolumeClaimName: `<template>-<set>-<ordinal>`."""
    return f"{_meta(template).get('name', '')}-{_meta(sts).get('name', '')}-{ordinal}"


def claim_templates(sts: Obj) -> list[Obj]:
    return [t for t in _spec(sts).get("volumeClaimTemplates") or [] if isinstance(t, Mapping)]


def is_member(sts: Obj, pod: Obj) -> bool:
    parent, ordinal = parent_and_ordinal(pod)
    return ordinal >= 0 and parent == _meta(sts).get("name")


def identity_matches(sts: Obj, pod: Obj) -> bool:
    """identityMatches: the name of its ordinal, the set's namespace, and the pod-name label."""
    ordinal = ordinal_of(pod)
    meta = _meta(pod)
    return (ordinal >= 0 and meta.get("name") == pod_name(sts, ordinal)
            and meta.get("namespace") == _meta(sts).get("namespace")
            and Pod(pod).metadata.labels.get(POD_NAME_LABEL) == meta.get("name"))


def storage_matches(sts: Obj, pod: Obj) -> bool:
    """storageMatches: each claim template's volume names the ordinal's claim."""
    ordinal = ordinal_of(pod)
    if ordinal < 0:
        return False
    volumes = {volume.name: volume for volume in Pod(pod).spec.volumes}
    for template in claim_templates(sts):
        volume = volumes.get(PersistentVolumeClaim(template).metadata.name)
        source = volume.persistent_volume_claim if volume is not None else None
        if source is None or source.get("claimName") != claim_name(template, sts, ordinal):
            return False
    return True


def update_identity(sts: Obj, pod: dict[str, Any]) -> None:
    """updateIdentity (in place): name, namespace, pod-name and pod-index labels, hostname, subdomain."""
    ordinal = ordinal_of(pod)
    meta = pod.setdefault("metadata", {})
    meta["namespace"] = _meta(sts).get("namespace")
    labels = meta.setdefault("labels", {})
    labels[POD_NAME_LABEL] = meta.get("name")
    labels[POD_INDEX_LABEL] = str(ordinal)
    spec = pod.setdefault("spec", {})
    spec["hostname"] = meta.get("name")
    if _spec(sts).get("serviceName"):
        spec["subdomain"] = _spec(sts)["serviceName"]


def update_storage(sts: Obj, pod: dict[str, Any]) -> None:
    """updateStorage (in place): a `persistentVolumeClaim` volume per template, replacing a template volume of
    the same name."""
    ordinal = ordinal_of(pod)
    spec = pod.setdefault("spec", {})
    templates = {_meta(t).get("name"): t for t in claim_templates(sts)}
    volumes = [v for v in spec.get("volumes") or [] if v.get("name") not in templates]
    for name, template in templates.items():
        volumes.append({"name": name, "persistentVolumeClaim": {"claimName": claim_name(template, sts, ordinal)}})
    if volumes:
        spec["volumes"] = volumes


def revision_data(sts: Obj) -> dict[str, Any]:
    """getPatch: what a ControllerRevision of a StatefulSet holds, `spec.template` with `$patch: replace`."""
    template = deep_copy(dict(StatefulSet(sts).spec.template.raw))
    template["$patch"] = "replace"
    return {"spec": {"template": template}}


def template_of_revision(revision: Obj) -> dict[str, Any]:
    """ApplyRevision, for the one field a revision carries: the pod template."""
    spec = ControllerRevision(revision).data.get("spec") or {}
    template = deep_copy(dict(spec.get("template") or {}))
    template.pop("$patch", None)
    return template


def new_pod(sts: Obj, template: Obj, revision_name: str, ordinal: int) -> dict[str, Any]:
    """newVersionedStatefulSetPod: the template's pod named for `ordinal`, with identity, storage, the
    revision label and the set's controller reference."""
    template_meta = _meta(template)
    metadata: dict[str, Any] = {"name": pod_name(sts, ordinal), "namespace": _meta(sts).get("namespace"),
                                "labels": {**PodTemplateSpec(template).metadata.labels, REVISION_LABEL: revision_name},
                                "ownerReferences": [new_controller_ref(sts, api_version=API_VERSION, kind=KIND)]}
    for key in ("annotations", "finalizers"):
        if template_meta.get(key):
            metadata[key] = deep_copy(template_meta[key])
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod", "metadata": metadata,
                           "spec": deep_copy(dict(PodTemplateSpec(template).spec.raw))}
    update_identity(sts, pod)
    update_storage(sts, pod)
    return pod


def retention(sts: Obj) -> tuple[str, str]:
    """(whenDeleted, whenScaled), Retain by default."""
    policy = _spec(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    return policy.get("whenDeleted") or "Retain", policy.get("whenScaled") or "Retain"


def _reference(owner: Obj, api_version: str, kind: str) -> dict[str, Any]:
    meta = _meta(owner)
    return {"apiVersion": api_version, "kind": kind, "name": meta.get("name", ""), "uid": meta.get("uid", "")}


def claim_owner_refs(sts: Obj, claim: Obj, pod: Obj | None, ordinal: int) -> list[dict[str, Any]]:
    """The claim's ownerReferences after updateClaimOwnerRefForSetAndPod: the set's when whenDeleted is
    Delete (and the ordinal is not condemned while whenScaled is Delete), the pod's when whenScaled is Delete
    and the ordinal is condemned; references to other owners are kept."""
    when_deleted, when_scaled = retention(sts)
    start = start_ordinal(sts)
    condemned = not start <= ordinal < start + replicas_of(sts)
    uids = {_meta(sts).get("uid")} | ({_meta(pod).get("uid")} if pod is not None else set())
    refs = [dict(r) for r in _meta(claim).get("ownerReferences") or [] if r.get("uid") not in uids]
    if when_deleted == "Delete" and not (when_scaled == "Delete" and condemned):
        refs.append(_reference(sts, API_VERSION, KIND))
    if when_scaled == "Delete" and condemned and pod is not None:
        refs.append(_reference(pod, "v1", "Pod"))
    return refs


def new_claim(sts: Obj, template: Obj, ordinal: int, pod: Obj | None = None) -> dict[str, Any]:
    """getPersistentVolumeClaims: the template's claim for `ordinal`, labelled with the set's matchLabels."""
    template_meta = _meta(template)
    labels = {**PersistentVolumeClaim(template).metadata.labels, **StatefulSet(sts).spec.selector.match_labels}
    metadata: dict[str, Any] = {"name": claim_name(template, sts, ordinal), "namespace": _meta(sts).get("namespace"),
                                "labels": labels}
    if template_meta.get("annotations"):
        metadata["annotations"] = deep_copy(template_meta["annotations"])
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": metadata,
             "spec": deep_copy(dict(PersistentVolumeClaim(template).spec.raw))}
    refs = claim_owner_refs(sts, claim, pod, ordinal)
    if refs:
        metadata["ownerReferences"] = refs
    return claim


# --- pod states ----------------------------------------------------------------------------------------------

def _phase(pod: Obj) -> str:
    return Pod(pod).status.phase


def is_created(pod: Obj) -> bool:
    return _phase(pod) != ""


def is_failed(pod: Obj) -> bool:
    return _phase(pod) == "Failed"


def is_succeeded(pod: Obj) -> bool:
    return _phase(pod) == "Succeeded"


def is_terminating(pod: Obj) -> bool:
    return bool(_meta(pod).get("deletionTimestamp"))


def is_running_and_ready(pod: Obj) -> bool:
    return _phase(pod) == "Running" and is_pod_ready(pod)


def is_healthy(pod: Obj) -> bool:
    return is_running_and_ready(pod) and not is_terminating(pod)


def is_running_and_available(pod: Obj, min_ready_seconds: int, now: datetime) -> bool:
    return _phase(pod) == "Running" and is_pod_available(pod, min_ready_seconds, now)


def revision_of(pod: Obj) -> str:
    return str(Pod(pod).metadata.labels.get(REVISION_LABEL) or "")


# --- one round ------------------------------------------------------------------------------------------------

class Step(enum.Enum):
    CREATE = "Create"  # the pod (and its missing claims)
    DELETE = "Delete"
    UPDATE = "Update"  # identity or storage restored


@dataclass(frozen=True)
class Action:
    step: Step
    ordinal: int
    pod: Obj  # the pod to create (new) or the existing one to delete/update


@dataclass(frozen=True)
class Round:
    actions: tuple[Action, ...] = ()
    replicas: tuple[Obj | None, ...] = field(default=())  # by ordinal - start, after this round's creates


def _max_unavailable(sts: Obj, replicas: int) -> int:
    rolling = StatefulSet(sts).spec.update_strategy.rolling_update or {}
    value = rolling.get("maxUnavailable", 1)
    if isinstance(value, str) and value.endswith("%"):
        value = int(value[:-1]) * replicas // 100  # rounded down, as upstream
    return max(1, value if isinstance(value, int) else 1)


def _partition(sts: Obj) -> int:
    rolling = StatefulSet(sts).spec.update_strategy.rolling_update
    partition = rolling.get("partition") if rolling is not None else None
    return partition if isinstance(partition, int) else 0


def plan_round(sts: Obj, pods: Sequence[Obj], *, current: tuple[str, Obj], update: tuple[str, Obj],
               current_replicas: int, now: datetime) -> Round:
    """One sync's actions (module notes). `current` and `update` are (revision name, pod template);
    `current_replicas` the status' count of pods at the current revision."""
    start, count = start_ordinal(sts), replicas_of(sts)
    monotonic = _spec(sts).get("podManagementPolicy") != "Parallel"
    min_ready = _spec(sts).get("minReadySeconds") or 0
    strategy = StatefulSet(sts).spec.update_strategy.type or "RollingUpdate"
    replicas: list[Obj | None] = [None] * count
    condemned: list[Obj] = []
    for member in pods:
        ordinal = ordinal_of(member)
        if start <= ordinal < start + count:
            replicas[ordinal - start] = member
        elif ordinal >= 0:
            condemned.append(member)
    condemned.sort(key=ordinal_of, reverse=True)
    partition = _partition(sts)
    actions: list[Action] = []

    def fresh(ordinal: int) -> dict[str, Any]:
        below = (ordinal < start + partition) if strategy == "RollingUpdate" else (ordinal < start + current_replicas)
        name, template = current if below else update
        return new_pod(sts, template, name, ordinal)

    first_unhealthy: Obj | None = None
    for existing in [*[p for p in replicas if p is not None], *condemned]:
        if not is_healthy(existing):
            first_unhealthy = existing
            break
    if _meta(sts).get("deletionTimestamp"):
        return Round((), tuple(replicas))
    for index in range(count):
        ordinal = start + index
        pod = replicas[index]
        if pod is not None and (is_failed(pod) or is_succeeded(pod)) and not is_terminating(pod):
            actions.append(Action(Step.DELETE, ordinal, pod))
            replicas[index] = None
            if monotonic:
                return Round(tuple(actions), tuple(replicas))
            continue
        if pod is None:
            pod = replicas[index] = fresh(ordinal)
            actions.append(Action(Step.CREATE, ordinal, pod))
            if monotonic:
                return Round(tuple(actions), tuple(replicas))
            continue
        if is_terminating(pod):
            if monotonic:
                return Round(tuple(actions), tuple(replicas))
            continue
        ready = is_running_and_available(pod, min_ready, now) if min_ready else is_running_and_ready(pod)
        if not ready and monotonic:
            return Round(tuple(actions), tuple(replicas))
        if not identity_matches(sts, pod) or not storage_matches(sts, pod):
            actions.append(Action(Step.UPDATE, ordinal, pod))
    for doomed in condemned:
        if is_terminating(doomed):
            if monotonic:
                return Round(tuple(actions), tuple(replicas))
            continue
        if monotonic and not is_healthy(doomed) and doomed is not first_unhealthy:
            return Round(tuple(actions), tuple(replicas))
        actions.append(Action(Step.DELETE, ordinal_of(doomed), doomed))
        if monotonic:
            return Round(tuple(actions), tuple(replicas))
    if strategy != "RollingUpdate":
        return Round(tuple(actions), tuple(replicas))
    update_name = update[0]
    budget = _max_unavailable(sts, count) - sum(1 for p in replicas if p is None or not is_healthy(p))
    for index in range(count - 1, max(partition, 0) - 1, -1):
        if budget <= 0:
            break
        replica = replicas[index]
        if replica is not None and revision_of(replica) != update_name and not is_terminating(replica):
            actions.append(Action(Step.DELETE, start + index, replica))
            budget -= 1
    return Round(tuple(actions), tuple(replicas))


def statefulset_status(sts: Obj, pods: Iterable[Obj], *, current_revision: str, update_revision: str,
                       collision_count: int, now: datetime) -> dict[str, Any]:
    """The status a sync writes (upstream updateStatefulSet's counts, then completeRollingUpdate)."""
    min_ready = _spec(sts).get("minReadySeconds") or 0
    counts = {"replicas": 0, "readyReplicas": 0, "availableReplicas": 0, "currentReplicas": 0, "updatedReplicas": 0}
    for pod in pods:
        if not is_created(pod):
            continue
        counts["replicas"] += 1
        if is_running_and_ready(pod):
            counts["readyReplicas"] += 1
            if is_running_and_available(pod, min_ready, now):
                counts["availableReplicas"] += 1
        if not is_terminating(pod):
            revision = revision_of(pod)
            counts["currentReplicas"] += revision == current_revision
            counts["updatedReplicas"] += revision == update_revision
    status: dict[str, Any] = {**StatefulSet(sts).status.raw, **counts,
                              "observedGeneration": _meta(sts).get("generation", 0),
                              "currentRevision": current_revision, "updateRevision": update_revision,
                              "collisionCount": collision_count}
    strategy = StatefulSet(sts).spec.update_strategy.type or "RollingUpdate"
    if (strategy == "RollingUpdate" and status["updatedReplicas"] == status["replicas"]
            and status["readyReplicas"] == status["replicas"]):
        status["currentReplicas"] = status["updatedReplicas"]
        status["currentRevision"] = update_revision
    return status
