"""ResourceQuota admission, the pure part (upstream: pkg/quota/v1/evaluator/core/pods.go, services.go and
persistent_volume_claims.go for what an object counts, plugin/pkg/admission/resourcequota/controller.go
for the check and its message).

The API server lists the namespace's quotas and objects, and asks here: does a quota constrain the new
object at all (`counts`: only those creates are serialised), what does it add (`usage`), what do the
existing ones use (`used_in`), does a quota apply (`matches_scope`), and would the sum exceed
`spec.hard` (`check`). The resource quota controller (control/controllers/resourcequota/controller.py) asks which
objects a hard limit counts (`counted_by`) and what the quota's `status.used` is (`status_used`), so
admission and the status `kubectl describe quota` shows count one way. Keeping I/O out makes the
counting rules testable as tables.

Counting as upstream:
- A pod's request of a resource is the larger of the sum over its app containers and the largest init
  container (init containers run one at a time, before the app containers): control/api/podresources.py,
  the rule the scheduler counts by too. A limit without a request
  counts as the request too (the API server's defaulting copies it).
- Pods that finished (Succeeded/Failed) or are being deleted count nothing: they hold no node resources.
- Bare `cpu`/`memory` in `spec.hard` mean requests.
- When a quota constrains a compute resource, every container must say it (`must specify ...`), or the
  quota could never be enforced.
- A PersistentVolumeClaim counts `persistentvolumeclaims` and `requests.storage` (its
  `spec.resources.requests.storage`, or `status.allocatedResources.storage` when larger, rounded up to a
  whole byte), and both again per StorageClass as `<class>.storageclass.storage.k8s.io/persistentvolumeclaims`
  and `<class>.storageclass.storage.k8s.io/requests.storage`; the class is the beta annotation
  `volume.beta.kubernetes.io/storage-class` if present, else `spec.storageClassName` (none: no per-class
  charge). Admission counts a claim after the default StorageClass was filled in, so admission and the
  controller see the same class.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

from control.api.podresources import containers, pod_total
from control.apimachinery.quantity import Quantity, QuantityError, add_resource_lists

_COMPUTE = ("requests.cpu", "requests.memory", "limits.cpu", "limits.memory", "cpu", "memory")
_LEGACY_COUNTS = {"configmaps", "secrets", "persistentvolumeclaims", "replicationcontrollers", "resourcequotas",
                  "services"}
_ZERO = Quantity("0")
_PVCS, _REQUESTS_STORAGE = "persistentvolumeclaims", "requests.storage"
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"  # upstream storageClassSuffix
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"  # v1.BetaStorageClassAnnotation


def _field(obj: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """`obj[key]` when it is a JSON object, else empty: a wrong type is validation's 422, not a crash here."""
    value = obj.get(key)
    return value if isinstance(value, Mapping) else {}


def _quantity(value: Any) -> Quantity | None:
    try:
        return Quantity(str(value))
    except (QuantityError, ValueError):
        return None


def _container_amount(container: Mapping[str, Any], kind: str, resource: str) -> Quantity | None:
    resources = _field(container, "resources")
    amount = _field(resources, kind).get(resource)
    if amount is None and kind == "requests":
        amount = _field(resources, "limits").get(resource)
    return _quantity(amount) if amount is not None else None


def _pod_amount(spec: Mapping[str, Any], kind: str, resource: str) -> Quantity:
    return pod_total(spec, lambda container: _container_amount(container, kind, resource) or _ZERO, zero=_ZERO,
                     add=operator.add, larger=max)


def _terminal(pod: Mapping[str, Any]) -> bool:
    return (_field(pod, "status").get("phase") in ("Succeeded", "Failed")
            or bool(_field(pod, "metadata").get("deletionTimestamp")))


def claim_class(claim: Mapping[str, Any]) -> str:
    """GetPersistentVolumeClaimClass: the beta annotation if present, else spec.storageClassName ("": none)."""
    annotations = _field(claim, "metadata").get("annotations")
    if isinstance(annotations, Mapping) and ANN_BETA_STORAGE_CLASS in annotations:
        return str(annotations[ANN_BETA_STORAGE_CLASS] or "")
    return str(_field(claim, "spec").get("storageClassName") or "")


def _whole(amount: Quantity) -> Quantity:
    """Rounded up to a whole unit (upstream RoundUp(0): storage is counted in whole bytes)."""
    return amount if amount.as_fraction().denominator == 1 else Quantity.from_int(amount.value(), amount.format)


def claim_storage(claim: Mapping[str, Any]) -> Quantity | None:
    """The storage a claim counts (pvcEvaluator getStorageUsage): its request, or what was allocated when
    that is more (an expansion in progress); None when it requests none."""
    requested = _field(_field(_field(claim, "spec"), "resources"), "requests").get("storage")
    allocated = _field(_field(claim, "status"), "allocatedResources").get("storage")
    result = _quantity(requested) if requested is not None else None
    larger = _quantity(allocated) if allocated is not None else None
    if larger is not None and (result is None or larger > result):
        result = larger
    return None if result is None else _whole(result)


def _claim_usage(claim: Mapping[str, Any], one: Quantity) -> dict[str, Quantity]:
    result = {_PVCS: one, f"count/{_PVCS}": one}
    storage_class = claim_class(claim)
    if storage_class:
        result[storage_class + STORAGE_CLASS_SUFFIX + _PVCS] = one
    storage = claim_storage(claim)
    if storage is not None:
        result[_REQUESTS_STORAGE] = storage
        if storage_class:
            result[storage_class + STORAGE_CLASS_SUFFIX + _REQUESTS_STORAGE] = storage
    return result


def usage(plural: str, obj: Mapping[str, Any], *, group: str = "") -> dict[str, Quantity]:
    """What one object counts against a quota."""
    counted = f"count/{plural}.{group}" if group else f"count/{plural}"
    one = Quantity("1")
    if plural == _PVCS and not group:
        return _claim_usage(obj, one)
    if plural == "pods":
        if _terminal(obj):
            return {}
        spec = _field(obj, "spec")
        result = {"pods": one, counted: one}
        for resource in ("cpu", "memory"):
            request = _pod_amount(spec, "requests", resource)
            result[f"requests.{resource}"] = result[resource] = request
            result[f"limits.{resource}"] = _pod_amount(spec, "limits", resource)
        return result
    result = {counted: one}
    if not group and plural in _LEGACY_COUNTS:
        result[plural] = one
    if plural == "services":
        spec = _field(obj, "spec")
        kind = spec.get("type")
        ports = spec.get("ports")
        nodeports = len(ports) if isinstance(ports, list) and kind in ("NodePort", "LoadBalancer") else 0
        result["services.nodeports"] = Quantity(str(nodeports))
        result["services.loadbalancers"] = Quantity("1" if kind == "LoadBalancer" else "0")
    return result


def used_in(plural: str, objects: Iterable[Mapping[str, Any]], *, group: str = "") -> dict[str, Quantity]:
    return add_resource_lists(*(usage(plural, obj, group=group) for obj in objects))


def counted_by(resource_name: str) -> tuple[str, str] | None:
    """(API group, plural) of the objects a `spec.hard` resource name counts; None for a name no object
    counts (upstream: no evaluator matches it)."""
    if resource_name == "pods" or resource_name in _COMPUTE:
        return ("", "pods")
    if resource_name in ("services.nodeports", "services.loadbalancers") or resource_name in _LEGACY_COUNTS:
        return ("", resource_name.partition(".")[0])
    if resource_name == _REQUESTS_STORAGE or resource_name.endswith(
            (STORAGE_CLASS_SUFFIX + _PVCS, STORAGE_CLASS_SUFFIX + _REQUESTS_STORAGE)):
        return ("", _PVCS)
    if resource_name.startswith("count/"):
        plural, _, group = resource_name[len("count/"):].partition(".")
        return (group, plural) if plural else None
    return None


def status_used(quota: Mapping[str, Any], objects: Mapping[tuple[str, str], Iterable[Mapping[str, Any]]]
                ) -> dict[str, str]:
    """`status.used` of `quota`: for every hard resource whose objects are in `objects` (by
    `counted_by`), the usage of those the quota's scopes select, "0" included (upstream masks the usage
    with the hard resource names)."""
    hard = _field(_field(quota, "spec"), "hard")
    totals: dict[tuple[str, str], dict[str, Quantity]] = {}
    used: dict[str, str] = {}
    for name in hard:
        source = counted_by(name)
        if source is None or source not in objects:
            continue
        if source not in totals:
            group, plural = source
            totals[source] = used_in(plural, [o for o in objects[source] if matches_scope(quota, plural, o)],
                                     group=group)
        used[name] = str(totals[source].get(name, _ZERO))
    return used


def matches_scope(quota: Mapping[str, Any], plural: str, obj: Mapping[str, Any]) -> bool:
    """Whether `quota` (its spec.scopes) applies to `obj`; non-pods only match unscoped quotas."""
    scopes = _field(quota, "spec").get("scopes")
    if not scopes or not isinstance(scopes, list):
        return True
    if plural != "pods":
        return False
    pod_spec = _field(obj, "spec")
    terminating = pod_spec.get("activeDeadlineSeconds") is not None
    best_effort = not any(
        _field(c, "resources").get(kind) for key in ("containers", "initContainers")
        for c in containers(pod_spec, key) for kind in ("requests", "limits"))
    answers = {"Terminating": terminating, "NotTerminating": not terminating, "BestEffort": best_effort,
               "NotBestEffort": not best_effort}
    return all(answers.get(scope, True) for scope in scopes)


def counts(quota: Mapping[str, Any], plural: str, obj: Mapping[str, Any], *, group: str = "") -> bool:
    """Whether creating `obj` is checked against `quota`: the quota applies to it (scopes) and limits
    something the object counts (for a pod that includes every compute resource, which the pod must then
    specify). ResourceQuotas themselves are never checked (upstream counts them as `resourcequotas`)."""
    if plural == "resourcequotas" or not matches_scope(quota, plural, obj):
        return False
    delta = usage(plural, obj, group=group)
    return any(resource in delta for resource in _field(_field(quota, "spec"), "hard"))


def _missing_compute(constrained: list[str], obj: Mapping[str, Any]) -> str | None:
    """Upstream's `must specify limits.memory for: app` when a constrained compute resource is unset."""
    spec = _field(obj, "spec")
    missing_resources: list[str] = []
    missing_containers: list[str] = []
    for name in constrained:
        kind, _, resource = name.rpartition(".")
        kind = kind or "requests"
        for container in containers(spec, "containers") + containers(spec, "initContainers"):
            if _container_amount(container, kind, resource) is None:
                if name not in missing_resources:
                    missing_resources.append(name)
                if container.get("name") not in missing_containers:
                    missing_containers.append(str(container.get("name")))
    if not missing_resources:
        return None
    return f"must specify {','.join(sorted(missing_resources))} for: {','.join(sorted(missing_containers))}"


def check(quota: Mapping[str, Any], used: Mapping[str, Quantity], delta: Mapping[str, Quantity],
          *, obj: Mapping[str, Any] | None = None) -> str | None:
    """None if `used + delta` fits every hard limit that `delta` touches; else upstream's message."""
    hard = _field(_field(quota, "spec"), "hard")
    name = _field(quota, "metadata").get("name", "")
    if obj is not None and "pods" in delta:
        missing = _missing_compute([r for r in hard if r in _COMPUTE], obj)
        if missing:
            return missing
    exceeded = []
    for resource in sorted(hard):
        limit = _quantity(hard[resource])
        amount = delta.get(resource)
        if limit is None or amount is None or amount == _ZERO:
            continue
        if used.get(resource, _ZERO) + amount > limit:
            exceeded.append(resource)
    if not exceeded:
        return None

    def listed(values: Mapping[str, Any]) -> str:
        return ",".join(f"{r}={values.get(r, _ZERO)}" for r in exceeded)

    return (f"exceeded quota: {name}, requested: {listed(delta)}, used: {listed(used)}, "
            f"limited: {listed({r: _quantity(hard[r]) for r in exceeded})}")
