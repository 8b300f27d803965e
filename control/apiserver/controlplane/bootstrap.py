"""What the API server ensures before it serves (upstream: the bootstrap controllers of
pkg/controlplane/controller — systemnamespaces, kubernetesservice —, the allocator repair of
pkg/registry/core/service/ipallocator/controller/repair.go and portallocator/controller/repair.go, and
pkg/registry/scheduling/rest/storage_scheduling.go's post-start hook `AddSystemPriorityClasses`).

Run once at start-up, through the generic store like any client write: the system namespaces, the
system PriorityClasses (system-node-critical, system-cluster-critical), the default `local-path`
StorageClass of the built-in provisioner (k3s deploys the same class from its manifests at every start; a
class an operator changed is left alone, a deleted one comes back), the `kubernetes` Service on the
first service IP, and allocator reservations matching the Services actually stored (a crash between
reservation and write leaks one; repair drops it), and an APIService per local group-version
(autoregister.py).

Also the `kube-system/kube-dns` Service on the service CIDR's tenth address (k3s and kubeadm: 10.96.0.10,
what kubelets' `clusterDNS` names), ports 53/UDP `dns`, 53/TCP `dns-tcp`, 9153/TCP `metrics` and the labels
of upstream's CoreDNS manifest. Departure: it has no selector and `internalTrafficPolicy: Local`, because the
DNS servers are not pods but run beside each node's kubelet and each writes its own EndpointSlice
(clusterdns/registration.py). Made only when missing and the address is free (a Service from before may
hold it; then it says so in the log and the cluster has no DNS Service until that one goes).
"""

from __future__ import annotations

import copy
import ipaddress
import logging
from typing import Any

from control.api.priority import SYSTEM_PRIORITY_CLASSES
from control.api.volumes import LOCAL_PATH_CLASS_NAME, local_path_class
from control.apimachinery.meta import format_timestamp
from control.apiserver.controlplane import autoregister
from control.apiserver.endpoints import discovery
from control.apiserver.registry.store import Registry
from control.apiserver.registry.strategies.services import ServiceStrategy
from control.apiserver.resources import Resource, by_path
from control.apiserver.status import APIError

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
NAMESPACES = by_path("", "v1", "namespaces")
SERVICES = by_path("", "v1", "services")
PRIORITY_CLASSES = by_path("scheduling.k8s.io", "v1", "priorityclasses")
STORAGE_CLASSES = by_path("storage.k8s.io", "v1", "storageclasses")


def _create_unless_exists(registry: Registry, resource: Resource, namespace: str, obj: dict[str, Any]) -> None:
    """Another API server on the same storage may have created it meanwhile (409): that is as good."""
    try:
        registry.create(resource, namespace, obj)
    except APIError as exc:
        if exc.code != 409:
            raise


def cluster_dns_ip(service_cidr: str) -> str:
    """The service CIDR's tenth address: the cluster DNS Service's (10.96.0.10 for 10.96.0.0/12)."""
    return str(ipaddress.ip_network(service_cidr, strict=True).network_address + 10)


def kube_dns_service(cluster_ip: str) -> dict[str, Any]:
    return {
        "metadata": {"name": "kube-dns", "namespace": "kube-system",
                     "labels": {"k8s-app": "kube-dns", "kubernetes.io/cluster-service": "true",
                                "kubernetes.io/name": "CoreDNS"},
                     "annotations": {"prometheus.io/port": "9153", "prometheus.io/scrape": "true"}},
        "spec": {"clusterIP": cluster_ip, "type": "ClusterIP", "sessionAffinity": "None",
                 "internalTrafficPolicy": "Local",
                 "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "targetPort": 53},
                           {"name": "dns-tcp", "port": 53, "protocol": "TCP", "targetPort": 53},
                           {"name": "metrics", "port": 9153, "protocol": "TCP", "targetPort": 9153}]},
    }


def bootstrap(registry: Registry, *, api_port: int) -> None:
    assert NAMESPACES is not None and SERVICES is not None and PRIORITY_CLASSES is not None
    for name in SYSTEM_NAMESPACES:
        if registry.get(NAMESPACES, "", name) is None:
            _create_unless_exists(registry, NAMESPACES, "", {"metadata": {"name": name}})
    for priority_class in SYSTEM_PRIORITY_CLASSES:
        if registry.get(PRIORITY_CLASSES, "", priority_class["metadata"]["name"]) is None:
            _create_unless_exists(registry, PRIORITY_CLASSES, "", copy.deepcopy(priority_class))
    assert STORAGE_CLASSES is not None
    if registry.get(STORAGE_CLASSES, "", LOCAL_PATH_CLASS_NAME) is None:
        _create_unless_exists(registry, STORAGE_CLASSES, "", local_path_class())
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
    if registry.get(SERVICES, "kube-system", "kube-dns") is None:
        dns_ip = cluster_dns_ip(str(services.allocations.ips.network))
        try:
            registry.create(SERVICES, "kube-system", kube_dns_service(dns_ip))
        except APIError as exc:
            if exc.code != 409:
                log.warning("no kube-system/kube-dns Service on %s: %s", dns_ip, exc)
    autoregister.register(registry, discovery.group_versions(registry.resources),
                          now=format_timestamp(registry.clock()))
