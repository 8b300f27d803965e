"""What the server itself sets or keeps on each write, per resource (upstream: each registry's
`strategy.go` — PrepareForCreate, PrepareForUpdate, the status strategies — and the graceful-deletion
rules of pkg/registry/core/pod/strategy.go and k8s.io/apiserver/pkg/registry/rest/delete.go).

Everything here is pure: the caller passes `now` and a fresh uid, so the rules are tested without a
server. The registry applies them in this order: defaults → `prepare_for_create`/`prepare_for_update`
→ validation → admission → storage.

Rules kept from upstream because clients rely on them:
- `uid`, `creationTimestamp`, `deletionTimestamp`, `generation` are the server's: a client's values are
  overwritten on create and ignored on update.
- For resources with a `/status` subresource, the main resource ignores `status` on update and the
  status subresource ignores everything but `status` (and metadata labels/annotations), so a controller
  writing status never undoes a user's spec change and the other way round.
- `metadata.generation` starts at 1 and grows when `spec` changes, for the kinds whose controllers
  report `status.observedGeneration` (`kubectl rollout status` compares the two).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from control.api.qos import qos_class
from control.apimachinery.meta import deep_copy, format_timestamp
from control.apiserver.resources import Resource

# Kinds whose spec changes bump metadata.generation (upstream: their strategies' PrepareForUpdate).
GENERATION_TRACKED = frozenset({
    "deployments", "replicasets", "daemonsets", "statefulsets", "jobs", "cronjobs", "replicationcontrollers",
})

# Kinds whose create drops a client-sent status (upstream PrepareForCreate: `obj.Status = {}`);
# nodes keep theirs because the kubelet registers a node with its status filled in.
STATUS_RESET_ON_CREATE = frozenset({
    "services", "deployments", "replicasets", "daemonsets", "statefulsets", "jobs", "cronjobs",
    "replicationcontrollers", "resourcequotas",
})

# Metadata only the server writes; on update the stored values win.
_SERVER_OWNED_METADATA = ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
                          "generation", "name", "namespace")


def has_status(resource: Resource) -> bool:
    return "status" in resource.subresources


def _spec_of(obj: Mapping[str, Any]) -> Any:
    """What counts as the object's desired state for `generation`; for kinds without `spec`, everything
    that is neither metadata nor status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def prepare_for_create(resource: Resource, obj: dict[str, Any], *, now: datetime, uid: str) -> None:
    """Set what the server owns on a new object (in place)."""
    metadata = obj.setdefault("metadata", {})
    metadata["uid"] = uid
    metadata["creationTimestamp"] = format_timestamp(now)
    for key in ("deletionTimestamp", "deletionGracePeriodSeconds", "resourceVersion", "selfLink"):
        metadata.pop(key, None)
    if resource.plural in GENERATION_TRACKED:
        metadata["generation"] = 1
    if resource.plural in STATUS_RESET_ON_CREATE:
        obj["status"] = {}
    if resource.plural == "pods":
        spec = obj.get("spec") if isinstance(obj.get("spec"), Mapping) else {}
        obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
    elif resource.plural == "namespaces":
        obj["status"] = {"phase": "Active"}


def _keep_server_metadata(new: dict[str, Any], old: Mapping[str, Any]) -> None:
    metadata = new.setdefault("metadata", {})
    old_metadata = old.get("metadata") or {}
    for key in _SERVER_OWNED_METADATA:
        if key in old_metadata:
            metadata[key] = deep_copy(old_metadata[key])
        else:
            metadata.pop(key, None)


def prepare_for_update(resource: Resource, new: dict[str, Any], old: Mapping[str, Any]) -> None:
    """An update of the main resource: server-owned metadata and (with a status subresource) status
    come from the stored object; generation grows when the spec changed."""
    _keep_server_metadata(new, old)
    if has_status(resource):
        if "status" in old:
            new["status"] = deep_copy(old["status"])
        else:
            new.pop("status", None)
    if resource.plural in GENERATION_TRACKED and _spec_of(new) != _spec_of(old):
        new["metadata"]["generation"] = int((old.get("metadata") or {}).get("generation") or 0) + 1


def prepare_for_status_update(new: dict[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """An update through `/status`: everything but status (and labels/annotations, which upstream lets a
    status writer change) comes from the stored object."""
    result = deep_copy(dict(old))
    result["status"] = deep_copy(new.get("status") or {})
    new_metadata = new.get("metadata") or {}
    for key in ("labels", "annotations"):
        if key in new_metadata:
            result["metadata"][key] = deep_copy(new_metadata[key])
    return result


def graceful_pod_seconds(pod: Mapping[str, Any], requested: int | None) -> int:
    """The grace period a pod delete gets (upstream pod strategy CheckGracefulDelete): the request's,
    else the pod's `terminationGracePeriodSeconds` (30); 0 — delete now — for a pod no node has taken
    or one that has already finished, since no kubelet will confirm it."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), Mapping) else {}
    phase = (pod.get("status") or {}).get("phase")
    if not spec.get("nodeName") or phase in ("Succeeded", "Failed"):
        return 0
    if requested is not None:
        return max(0, requested)
    grace = spec.get("terminationGracePeriodSeconds")
    return grace if isinstance(grace, int) and grace >= 0 else 30


def mark_deleting(obj: dict[str, Any], *, now: datetime, grace_seconds: int) -> bool:
    """Set deletionTimestamp = now + grace (in place); a second delete may only shorten the grace.
    Returns whether the object changed."""
    metadata = obj.setdefault("metadata", {})
    current = metadata.get("deletionGracePeriodSeconds")
    if metadata.get("deletionTimestamp") and current is not None and current <= grace_seconds:
        return False
    try:
        deadline = now + timedelta(seconds=grace_seconds)
    except OverflowError:  # a grace period of centuries (int64 allows it): the latest time there is
        deadline = datetime.max.replace(tzinfo=now.tzinfo) if grace_seconds > 0 else now
    metadata["deletionTimestamp"] = format_timestamp(deadline)
    metadata["deletionGracePeriodSeconds"] = grace_seconds
    return True


def ready_to_remove(obj: Mapping[str, Any]) -> bool:
    """A deleted object goes once its finalizers are gone and its grace period was confirmed as 0
    (upstream: deletionTimestamp set, no finalizers, deletionGracePeriodSeconds 0)."""
    metadata = obj.get("metadata") or {}
    return (bool(metadata.get("deletionTimestamp")) and not metadata.get("finalizers")
            and not metadata.get("deletionGracePeriodSeconds"))
