"""Admission the API server applies to a write before it reaches storage (upstream: plugin/pkg/admission/
namespace/lifecycle, plugin/pkg/admission/resourcequota and plugin/pkg/admission/priority). What is
particular to one kind (service allocations, namespace finalizers, ...) is in that kind's strategy
(strategies/), not here.

Each check reads what it needs through the narrow `Reader` the registry passes in, so the rules are
tested with a dict-backed reader.

- Namespace lifecycle: a namespaced object can only be created in a namespace that exists and is not
  Terminating (404 / 403 `NamespaceTerminating`), as upstream, so a namespace being deleted cannot gain
  content its controller would never remove.
- Immortal namespaces: `default`, `kube-system` and `kube-public` may not be deleted (403, upstream's
  NamespaceLifecycle message), since the namespace controller really empties a deleted namespace.
- ResourceQuota: on create, usage of the namespace plus the new object must fit every matching quota's
  `spec.hard`, else 403 with upstream's `exceeded quota:` message. Usage is computed from the stored
  objects (the quota controller that keeps `status.used` current comes with the controller manager);
  `QuotaAdmission` serialises, per namespace, only the creates a quota there counts, so two racing
  creates cannot both take the last unit and every other create runs unhindered.
- Priority: `mutate` (upstream's Admit, before the strategy validates) fills a created pod's
  spec.priority, priorityClassName and preemptionPolicy from its PriorityClass or the globalDefault one
  (403 for an unknown class or a priority that disagrees with it), and keeps them on a pod update that
  leaves them out; `validate` (upstream's Validate, after) allows at most one globalDefault class.
  The decisions are control.api.priority's; here the classes are read and the answer raised.
- DefaultStorageClass (upstream plugin/pkg/admission/storage/storageclass/setdefault): a created
  PersistentVolumeClaim that names no class at all (`storageClassName` absent or null, and no beta
  class annotation; `""` means "no class" and is kept) gets the default StorageClass's name, the newest
  one if several carry `storageclass.kubernetes.io/is-default-class: "true"`; none: left as it is.
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Protocol

from control.api import priority, quota
from control.api.volumes import ANN_BETA_CLASS, default_class
from control.apiserver import status
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError

NAMESPACES = by_path("", "v1", "namespaces")
RESOURCE_QUOTAS = by_path("", "v1", "resourcequotas")
PRIORITY_CLASSES = by_path("scheduling.k8s.io", "v1", "priorityclasses")
STORAGE_CLASSES = by_path("storage.k8s.io", "v1", "storageclasses")


class Reader(Protocol):
    def get(self, resource: Resource, namespace: str, name: str) -> dict[str, Any] | None: ...

    def list_all(self, resource: Resource, namespace: str) -> list[dict[str, Any]]: ...


def forbidden(resource: Resource, name: str, why: str, *, reason_cause: str | None = None) -> APIError:
    qualified = f"{resource.plural}.{resource.group}" if resource.group else resource.plural
    details: dict[str, Any] = {"name": name, "kind": resource.plural}
    if resource.group:
        details["group"] = resource.group
    if reason_cause:
        details["causes"] = [{"reason": reason_cause, "message": why, "field": "metadata.namespace"}]
    return APIError(403, "Forbidden", f'{qualified} "{name}" is forbidden: {why}', details=details)


IMMORTAL_NAMESPACES = frozenset({"default", "kube-system", "kube-public"})  # upstream NamespaceLifecycle


def check_delete(resource: Resource, name: str) -> None:
    """Upstream NamespaceLifecycle on DELETE: the immortal namespaces stay."""
    if resource is NAMESPACES and name in IMMORTAL_NAMESPACES:
        raise forbidden(resource, name, "this namespace may not be deleted")


def check_namespace(reader: Reader, resource: Resource, namespace: str, name: str) -> None:
    """Creation of namespaced content needs a live namespace."""
    assert NAMESPACES is not None
    found = reader.get(NAMESPACES, "", namespace)
    if found is None:
        raise status.not_found("namespaces", namespace)
    if (found.get("status") or {}).get("phase") == "Terminating" or (found.get("metadata") or {}).get(
            "deletionTimestamp"):
        raise forbidden(resource, name, f"unable to create new content in namespace {namespace} because "
                        "it is being terminated", reason_cause="NamespaceTerminating")


def counting_quotas(reader: Reader, resource: Resource, namespace: str,
                    obj: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ResourceQuotas of `namespace` that count `obj` (see quota.counts)."""
    assert RESOURCE_QUOTAS is not None
    return [q for q in reader.list_all(RESOURCE_QUOTAS, namespace)
            if quota.counts(q, resource.plural, obj, group=resource.group)]


def check_quota(reader: Reader, resource: Resource, namespace: str, obj: Mapping[str, Any]) -> None:
    """403 when creating `obj` would exceed a ResourceQuota of its namespace."""
    quotas = counting_quotas(reader, resource, namespace, obj)
    if not quotas:
        return
    delta = quota.usage(resource.plural, obj, group=resource.group)
    existing = reader.list_all(resource, namespace)
    for one in quotas:
        scoped = [o for o in existing if quota.matches_scope(one, resource.plural, o)]
        used = quota.used_in(resource.plural, scoped, group=resource.group)
        message = quota.check(one, used, delta, obj=obj)
        if message:
            raise forbidden(resource, (obj.get("metadata") or {}).get("name", ""), message)


class QuotaAdmission:
    """Quota admission of creates, serialised per namespace and only where a quota counts.

    Usage is counted from the stored objects, so the check and the storage write of two creates a quota
    counts must not interleave, or both could take the last unit. `admit` holds the namespace's lock from
    the check until the caller's write is done; a create no quota of its namespace counts (most creates,
    and every create in a namespace without quotas) takes no lock at all and runs in parallel.
    """

    def __init__(self, reader: Reader) -> None:
        self._reader = reader
        self._guard = threading.Lock()
        # Dropped when no create holds it any more, so namespaces that come and go leave nothing behind.
        self._locks: weakref.WeakValueDictionary[str, threading.Lock] = weakref.WeakValueDictionary()

    def _lock(self, namespace: str) -> threading.Lock:
        with self._guard:
            lock = self._locks.get(namespace)
            if lock is None:
                lock = self._locks[namespace] = threading.Lock()
            return lock

    @contextmanager
    def admit(self, resource: Resource, namespace: str, obj: Mapping[str, Any]) -> Iterator[None]:
        """403 if `obj` exceeds a quota; else the body of the `with` (the write) runs admitted."""
        if not counting_quotas(self._reader, resource, namespace, obj):
            yield
            return
        with self._lock(namespace):
            check_quota(self._reader, resource, namespace, obj)  # again, now that no counted create runs
            yield


def _priority_classes(reader: Reader) -> list[dict[str, Any]]:
    assert PRIORITY_CLASSES is not None
    return reader.list_all(PRIORITY_CLASSES, "")


def mutate(reader: Reader, resource: Resource, obj: dict[str, Any], old: Mapping[str, Any] | None, *,
           name: str) -> None:
    """Mutating admission of a create (old None) or an update of the main resource, in place. `name` is what
    a Forbidden answer names (the generateName prefix for a generated name, as upstream)."""
    spec = obj.get("spec")
    if resource.plural == "persistentvolumeclaims" and isinstance(spec, dict) and old is None:
        set_default_storage_class(reader, obj, spec)
        return
    if resource.plural != "pods" or not isinstance(spec, dict):
        return
    if old is not None:
        old_spec = old.get("spec")
        if isinstance(old_spec, Mapping):
            priority.keep_on_update(spec, old_spec)
        return
    why = priority.admit_pod(spec, _priority_classes(reader))
    if why is not None:
        raise forbidden(resource, name, why)


def set_default_storage_class(reader: Reader, claim: Mapping[str, Any], spec: dict[str, Any]) -> None:
    """Upstream DefaultStorageClass admission (module notes), in place."""
    annotations = (claim.get("metadata") or {}).get("annotations") or {}
    if spec.get("storageClassName") is not None or ANN_BETA_CLASS in annotations:
        return
    assert STORAGE_CLASSES is not None
    found = default_class(reader.list_all(STORAGE_CLASSES, ""))
    if found is not None:
        spec["storageClassName"] = (found.get("metadata") or {}).get("name", "")


def validate(reader: Reader, resource: Resource, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    """Validating admission of a create (old None) or an update of the main resource."""
    if resource.plural != "priorityclasses":
        return
    why = priority.check_global_default(obj, _priority_classes(reader), update=old is not None)
    if why is not None:
        raise forbidden(resource, (obj.get("metadata") or {}).get("name", ""), why)
