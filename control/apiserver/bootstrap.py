"""What the API server ensures before it serves (upstream: the bootstrap controllers of
pkg/controlplane/controller — systemnamespaces, kubernetesservice —, the allocator repair of
pkg/registry/core/service/ipallocator/controller/repair.go and portallocator/controller/repair.go, and
pkg/registry/scheduling/rest/storage_scheduling.go's post-start hook `AddSystemPriorityClasses`).

Run once at start-up, through the generic store like any client write: the system namespaces, the
system PriorityClasses (system-node-critical, system-cluster-critical), the `kubernetes` Service on the
first service IP, and allocator reservations matching the Services actually stored (a crash between
reservation and write leaks one; repair drops it), and an APIService per local group-version
(autoregister.py).
"""

from __future__ import annotations

import copy
from typing import Any

from control.api.priority import SYSTEM_PRIORITY_CLASSES
from control.apimachinery.meta import format_timestamp
from control.apiserver import autoregister, discovery
from control.apiserver.registry import Registry
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError
from control.apiserver.strategies.services import ServiceStrategy

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES = by_path("", "v1", "namespaces")
SERVICES = by_path("", "v1", "services")
PRIORITY_CLASSES = by_path("scheduling.k8s.io", "v1", "priorityclasses")


def _create_unless_exists(registry: Registry, resource: Resource, namespace: str, obj: dict[str, Any]) -> None:
    """Another API server on the same storage may have created it meanwhile (409): that is as good."""
    try:
        registry.create(resource, namespace, obj)
    except APIError as exc:
        if exc.code != 409:
            raise


def bootstrap(registry: Registry, *, api_port: int) -> None:
    assert NAMESPACES is not None and SERVICES is not None and PRIORITY_CLASSES is not None
    for name in SYSTEM_NAMESPACES:
        if registry.get(NAMESPACES, "", name) is None:
            _create_unless_exists(registry, NAMESPACES, "", {"metadata": {"name": name}})
    for priority_class in SYSTEM_PRIORITY_CLASSES:
        if registry.get(PRIORITY_CLASSES, "", priority_class["metadata"]["name"]) is None:
            _create_unless_exists(registry, PRIORITY_CLASSES, "", copy.deepcopy(priority_class))
    services = registry.strategy(SERVICES)
    assert isinstance(services, ServiceStrategy)
    services.allocations.repair(registry.list_all(SERVICES, ""))
    if registry.get(SERVICES, "default", "kubernetes") is None:
        _create_unless_exists(registry, SERVICES, "default", {
            "metadata": {"name": "kubernetes", "namespace": "default",
                         "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {"clusterIP": services.allocations.ips.kubernetes_ip, "type": "ClusterIP",
                     "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": api_port}]},
        })
    autoregister.register(registry, discovery.group_versions(), now=format_timestamp(registry.clock()))
