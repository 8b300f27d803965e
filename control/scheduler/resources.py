"""A pod's resource requests as the scheduler counts them.

Upstream: pkg/scheduler/framework/types.go (`Resource`, `calculateResource`) and
k8s.io/component-helpers/resource (`PodRequests`): per resource, the larger of the sum over the app
containers and the largest init container (init containers run one at a time before the app
containers; control/api/podresources.py, shared with ResourceQuota), plus `spec.overhead`; `NonZero`
requests (pkg/scheduler/util/pod_resources.go) count a container that requests no cpu as 100m and no
memory as 200 MiB, so scoring spreads pods that request nothing instead of piling them on one node.

Departure: restartable init containers (sidecars) are counted as plain init containers.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from control.api.podresources import containers, pod_total
from control.api.typed.core import Container
from control.apimachinery.quantity import cpu_to_millicores, to_bytes

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"
DEFAULT_MILLI_CPU_REQUEST = 100  # upstream schedutil.DefaultMilliCPURequest
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024  # upstream schedutil.DefaultMemoryRequest


@dataclass
class Resource:
    """Amounts of cpu (millicores), memory and ephemeral storage (bytes), pods, and extended ("scalar")
    resources by name (upstream framework.Resource). Mutable: NodeInfo sums into it."""

    milli_cpu: int = 0
    memory: int = 0
    ephemeral_storage: int = 0
    allowed_pod_number: int = 0
    scalar: dict[str, int] = field(default_factory=dict)

    def get(self, name: str) -> int:
        match name:
            case "cpu":
                return self.milli_cpu
            case "memory":
                return self.memory
            case "ephemeral-storage":
                return self.ephemeral_storage
            case "pods":
                return self.allowed_pod_number
        return self.scalar.get(name, 0)

    def add(self, other: Resource, sign: int = 1) -> None:
        self.milli_cpu += sign * other.milli_cpu
        self.memory += sign * other.memory
        self.ephemeral_storage += sign * other.ephemeral_storage
        for name, amount in other.scalar.items():
            self.scalar[name] = self.scalar.get(name, 0) + sign * amount

    def set_max(self, other: Resource) -> None:
        self.milli_cpu = max(self.milli_cpu, other.milli_cpu)
        self.memory = max(self.memory, other.memory)
        self.ephemeral_storage = max(self.ephemeral_storage, other.ephemeral_storage)
        for name, amount in other.scalar.items():
            self.scalar[name] = max(self.scalar.get(name, 0), amount)

    def copy(self) -> Resource:
        return Resource(self.milli_cpu, self.memory, self.ephemeral_storage, self.allowed_pod_number,
                        dict(self.scalar))


def resource_from_list(amounts: Mapping[str, Any] | None) -> Resource:
    """A ResourceList (`{"cpu": "500m", "memory": "1Gi", "example.com/gpu": "2"}`) as a Resource."""
    result = Resource()
    for name, amount in (amounts or {}).items():
        if name == CPU:
            result.milli_cpu = cpu_to_millicores(str(amount))
        elif name == MEMORY:
            result.memory = to_bytes(str(amount))
        elif name == EPHEMERAL_STORAGE:
            result.ephemeral_storage = to_bytes(str(amount))
        elif name == PODS:
            result.allowed_pod_number = to_bytes(str(amount))
        elif is_scalar_resource(name):
            result.scalar[name] = to_bytes(str(amount))
    return result


def is_scalar_resource(name: str) -> bool:
    """Extended resources (`vendor/name`, not `kubernetes.io/...`), hugepages and attachable volumes
    (upstream schedutil.IsScalarResourceName, simplified to "a name with a domain, or hugepages-")."""
    return name.startswith("hugepages-") or ("/" in name and not name.startswith("kubernetes.io/"))


def _container_requests(container: Mapping[str, Any], *, non_zero: bool) -> Resource:
    requests = Container(container).resources.requests
    result = resource_from_list(requests)
    if non_zero:
        if CPU not in requests:
            result.milli_cpu = DEFAULT_MILLI_CPU_REQUEST
        if MEMORY not in requests:
            result.memory = DEFAULT_MEMORY_REQUEST
    return result


def _summed(total: Resource, more: Resource) -> Resource:
    total.add(more)
    return total


def _larger(total: Resource, other: Resource) -> Resource:
    total.set_max(other)
    return total


def pod_requests(pod: Mapping[str, Any], *, non_zero: bool = False) -> Resource:
    """max(sum of the containers, each init container) (control/api/podresources.py) + overhead."""
    spec = pod.get("spec") or {}
    total = pod_total(spec, lambda container: _container_requests(container, non_zero=non_zero), zero=Resource(),
                      add=_summed, larger=_larger)
    total.add(resource_from_list(spec.get("overhead")))
    return total


def host_ports(pod: Mapping[str, Any]) -> list[tuple[str, str, int]]:
    """(hostIP, protocol, hostPort) of every container port that asks for a host port (upstream
    `NodeInfo.UsedPorts` keys; hostIP "" or absent is 0.0.0.0)."""
    ports = []
    spec = pod.get("spec") or {}
    for container in containers(spec, "containers") + containers(spec, "initContainers"):
        for port in container.get("ports") or []:
            if port.get("hostPort"):
                ports.append((port.get("hostIP") or "0.0.0.0", port.get("protocol") or "TCP", int(port["hostPort"])))
    return ports
