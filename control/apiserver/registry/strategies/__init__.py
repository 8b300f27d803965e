"""One strategy per served resource (upstream: pkg/registry/<group>/<kind>/strategy.go, each wired into the
kind's REST storage): what differs per kind — defaults, validation, what the server sets on create and
keeps on update, status and generation handling, allocations, deletion rules — lives here, and the
generic store (registry/store.py) only calls it.

`KINDS` maps a resource of the table in resources.py (by plural, unique across the served groups) to its
strategy's class; a resource not named there is a plain kind and gets the base `Strategy`. Services are
the one kind whose strategy needs collaborators (the ClusterIP and NodePort allocators over storage), so
`build` makes the whole set for one store.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType

from control.apiserver.registry.allocators import ClusterIPAllocator, NodePortAllocator
from control.apiserver.registry.strategies.admissionregistration import (
    ValidatingAdmissionPolicyStrategy,
    WebhookConfigurationStrategy,
)
from control.apiserver.registry.strategies.base import (
    CreateOnUpdateStrategy,
    DaemonSetStrategy,
    HorizontalPodAutoscalerStrategy,
    JobStrategy,
    PodDisruptionBudgetStrategy,
    ReplicasWorkloadStrategy,
    ReplicationControllerStrategy,
    ResetStatusStrategy,
    StatefulSetStrategy,
    Strategy,
    WorkloadStrategy,
)
from control.apiserver.registry.strategies.certificates import CertificateSigningRequestStrategy
from control.apiserver.registry.strategies.customresourcedefinitions import CustomResourceDefinitionStrategy
from control.apiserver.registry.strategies.endpointslices import EndpointSliceStrategy
from control.apiserver.registry.strategies.namespaces import NamespaceStrategy
from control.apiserver.registry.strategies.networking import (
    IngressClassStrategy,
    IngressStrategy,
    NetworkPolicyStrategy,
)
from control.apiserver.registry.strategies.pods import BindingStrategy, PodStrategy
from control.apiserver.registry.strategies.priorityclasses import PriorityClassStrategy
from control.apiserver.registry.strategies.rbac import RBACStrategy
from control.apiserver.registry.strategies.secrets import SecretStrategy
from control.apiserver.registry.strategies.services import ServiceAllocations, ServiceStrategy
from control.apiserver.registry.strategies.storage_csi import VolumeAttachmentStrategy
from control.apiserver.registry.strategies.volumes import PersistentVolumeClaimStrategy, PersistentVolumeStrategy
from control.apiserver.resources import RESOURCES, Resource
from control.storage.interface import Storage

_SERVICES = "services"  # its strategy is made by `build`, with the allocators
_RBAC = ("roles", "clusterroles", "rolebindings", "clusterrolebindings")  # `build` gives them the store's policy

KINDS: Mapping[str, Callable[[Resource], Strategy]] = MappingProxyType({
    "namespaces": NamespaceStrategy,
    "pods": PodStrategy,
    "bindings": BindingStrategy,
    "endpoints": CreateOnUpdateStrategy,
    "events": CreateOnUpdateStrategy,
    "leases": CreateOnUpdateStrategy,
    "resourcequotas": ResetStatusStrategy,
    "secrets": SecretStrategy,
    "replicationcontrollers": ReplicationControllerStrategy,
    "deployments": WorkloadStrategy,
    "replicasets": ReplicasWorkloadStrategy,
    "daemonsets": DaemonSetStrategy,
    "statefulsets": StatefulSetStrategy,
    "jobs": JobStrategy,
    "cronjobs": WorkloadStrategy,
    "priorityclasses": PriorityClassStrategy,
    "poddisruptionbudgets": PodDisruptionBudgetStrategy,
    "endpointslices": EndpointSliceStrategy,
    "horizontalpodautoscalers": HorizontalPodAutoscalerStrategy,
    "persistentvolumes": PersistentVolumeStrategy,
    "persistentvolumeclaims": PersistentVolumeClaimStrategy,
    "certificatesigningrequests": CertificateSigningRequestStrategy,
    "ingresses": IngressStrategy,
    "ingressclasses": IngressClassStrategy,
    "networkpolicies": NetworkPolicyStrategy,
    "volumeattachments": VolumeAttachmentStrategy,
    "mutatingwebhookconfigurations": WebhookConfigurationStrategy,
    "validatingwebhookconfigurations": WebhookConfigurationStrategy,
    "validatingadmissionpolicies": ValidatingAdmissionPolicyStrategy,
    "validatingadmissionpolicybindings": WebhookConfigurationStrategy,
    # upstream apiServiceStrategy: the status (Available) is the aggregator's, dropped on create
    "apiservices": ResetStatusStrategy,
    "customresourcedefinitions": CustomResourceDefinitionStrategy,
})


def strategy_for(resource: Resource) -> Strategy:
    """The strategy of a kind that needs no collaborators (every kind but services and the RBAC kinds)."""
    if resource.plural == _SERVICES or resource.plural in _RBAC:
        raise ValueError(f"the {resource.plural} strategy needs collaborators: use build()")
    return KINDS.get(resource.plural, Strategy)(resource)


def build(storage: Storage, *, service_cidr: str, node_port_range: tuple[int, int]) -> dict[str, Strategy]:
    """Every served resource's strategy, by plural, for one store over `storage`."""
    allocations = ServiceAllocations(ClusterIPAllocator(storage, service_cidr),
                                     NodePortAllocator(storage, node_port_range))
    def make(resource: Resource) -> Strategy:
        if resource.plural == _SERVICES:
            return ServiceStrategy(resource, allocations)
        if resource.plural in _RBAC:
            return RBACStrategy(resource, storage)
        return strategy_for(resource)

    return {resource.plural: make(resource) for resource in RESOURCES if not resource.storage_version}
