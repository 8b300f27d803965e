"""An APIService per local group-version, as upstream's autoregister controller keeps them
(cmd/kube-apiserver/app/aggregator.go `apiServicesToRegister`, `makeAPIService` and `apiVersionPriorities`;
k8s.io/kube-aggregator/pkg/controllers/autoregister; the status its availability controller writes for
local services).

Run at start-up, after the other bootstrap objects: every group-version discovery serves gets an
APIService named `{version}.{group}` (`v1.` for the core group), with no `service` (served locally), the
label `kube-aggregator.kubernetes.io/automanaged: onstart`, upstream's group and version priorities, and
the status `Available: True` (reason `Local`). A spec someone changed is put back; APIServices of other
group-versions are left alone (nothing else registers any yet). Upstream has a priority only for the
groups it ships; a group-version missing from the table gets `DEFAULT_PRIORITY`, below all of them.
metrics.k8s.io is served locally here (registry/metricsapi.py), so it is Local, with the priorities of
metrics-server's own manifest.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from control.api.typed import TypedObject
from control.apimachinery.meta import deep_copy
from control.apiserver.registry.store import DeleteOptions, Registry
from control.apiserver.resources import by_path
from control.apiserver.status import APIError

API_SERVICES = by_path("apiregistration.k8s.io", "v1", "apiservices")
AUTOMANAGED_LABEL = "kube-aggregator.kubernetes.io/automanaged"
ON_START = "onstart"
SYNCED = "true"  # upstream AutoRegisterManagedLabelValue: kept while wanted, deleted after (CRD groups)
CRD_PRIORITY = (1000, 100)  # upstream crdregistration_controller: "CRDs should have relatively low priority"
# (group, version) → (groupPriorityMinimum, versionPriority)
PRIORITIES: dict[tuple[str, str], tuple[int, int]] = {
    ("", "v1"): (18000, 1),
    ("apiregistration.k8s.io", "v1"): (18000, 15),
    ("apps", "v1"): (17800, 15),
    ("events.k8s.io", "v1"): (17750, 15),
    ("authentication.k8s.io", "v1"): (17700, 15),
    ("authorization.k8s.io", "v1"): (17600, 15),
    ("autoscaling", "v1"): (17500, 15),
    ("autoscaling", "v2"): (17500, 30),
    ("batch", "v1"): (17400, 15),
    ("certificates.k8s.io", "v1"): (17300, 15),
    ("networking.k8s.io", "v1"): (17200, 15),
    ("policy", "v1"): (17100, 15),
    ("rbac.authorization.k8s.io", "v1"): (17000, 15),
    ("storage.k8s.io", "v1"): (16800, 15),
    ("admissionregistration.k8s.io", "v1"): (16700, 15),
    ("apiextensions.k8s.io", "v1"): (16700, 15),
    ("scheduling.k8s.io", "v1"): (16600, 15),
    ("coordination.k8s.io", "v1"): (16500, 15),
    ("node.k8s.io", "v1"): (16300, 15),
    ("discovery.k8s.io", "v1"): (16200, 15),
    ("flowcontrol.apiserver.k8s.io", "v1"): (16100, 21),
    ("metrics.k8s.io", "v1beta1"): (100, 100),
}
DEFAULT_PRIORITY = (1000, 15)
LOCAL_AVAILABLE = {"type": "Available", "status": "True", "reason": "Local",
                   "message": "Local APIServices are always available"}


def api_service(group: str, version: str, *, managed: str = ON_START,
                priority: tuple[int, int] | None = None) -> dict[str, Any]:
    """upstream makeAPIService: the desired object (without status) for one local group-version."""
    group_priority, version_priority = priority or PRIORITIES.get((group, version), DEFAULT_PRIORITY)
    return {
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": f"{version}.{group}", "labels": {AUTOMANAGED_LABEL: managed}},
        "spec": {"group": group, "version": version, "groupPriorityMinimum": group_priority,
                 "versionPriority": version_priority},
    }


def _available(obj: dict[str, Any]) -> bool:
    conditions = (obj.get("status") or {}).get("conditions") or []
    return any(c.get("type") == "Available" and c.get("status") == "True" and c.get("reason") == "Local"
               for c in conditions if isinstance(c, dict))


def register(registry: Registry, group_versions: Iterable[tuple[str, str]], *, now: str, managed: str = ON_START,
             priority: tuple[int, int] | None = None) -> None:
    """Create or repair the APIService of each local group-version; `now` stamps a new Available condition.
    `managed`/`priority`: SYNCED and CRD_PRIORITY for the group-versions of CRDs (crd/controller.py)."""
    assert API_SERVICES is not None
    for group, version in group_versions:
        wanted = api_service(group, version, managed=managed, priority=priority)
        name = wanted["metadata"]["name"]
        current = registry.get(API_SERVICES, "", name)
        try:
            if current is None:
                current = registry.create(API_SERVICES, "", wanted)
            elif current.get("spec") != wanted["spec"] or \
                    TypedObject(current).metadata.labels.get(AUTOMANAGED_LABEL) != managed:
                fixed = deep_copy(current)
                fixed["spec"] = wanted["spec"]
                fixed["metadata"].setdefault("labels", {})[AUTOMANAGED_LABEL] = managed
                current, _ = registry.update(API_SERVICES, "", name, fixed)
            if not _available(current):
                with_status = deep_copy(current)
                with_status["status"] = {"conditions": [{**LOCAL_AVAILABLE, "lastTransitionTime": now}]}
                registry.update(API_SERVICES, "", name, with_status, subresource="status")
        except APIError as exc:
            if exc.code != 409:  # another API server on the same store got there first: as good
                raise


def unregister_synced(registry: Registry, keep: Iterable[tuple[str, str]]) -> None:
    """Delete the SYNCED APIServices of group-versions no longer served (a CRD version or CRD gone)."""
    assert API_SERVICES is not None
    kept = {f"{version}.{group}" for group, version in keep}
    for obj in registry.list_all(API_SERVICES, ""):
        name = obj["metadata"]["name"]
        if TypedObject(obj).metadata.labels.get(AUTOMANAGED_LABEL) == SYNCED and name not in kept:
            try:
                registry.delete(API_SERVICES, "", name, DeleteOptions())
            except APIError as exc:
                if exc.code != 404:
                    raise
